"""Experiments of the lukv reproduction (spec "Experiments by scale").

``python -m papers.lukv.experiments NAME --config papers/lukv/config.yaml --scale quick --out DIR`` with NAME
one of ``instances`` (random allocation instances: greedy vs exact DP), ``train_tiny`` (tiny model on the
KV-recall task), ``profile`` (budget curves A and B), ``evaluate`` (held-out oracle loss and downstream
recall/KL for every method), ``replicates`` (the LU-KV claims at rho = 0.8 over independently trained models)
and ``perf`` (allocation and eviction timings, side by side).
``profile`` and ``evaluate`` read the tiny model written by ``train_tiny`` (``model_from``); ``evaluate``
reads the curves written by ``profile`` (``profile_from``). When those files are missing they are rebuilt
in-process with the same seeds (same result, more time).
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import numpy as np

from shared import seeding
from shared.experiment import RunContext, main
from shared.results import write_arrays
from shared.timing import alternating_least_cpu

from papers.lukv.allocation import allocate_budget, round_keep_counts
from papers.lukv.profile import (build_budget_curve, curve_at_budget, decrements, feasible_rows, kept_per_head,
                                 protect_scores, reverse_heads, save_curve, scorer_order, shuffle_heads,
                                 total_budget)
from papers.lukv.task import VOCAB_SIZE, make_batch, make_induction_batch, value_positions

__all__ = ["EXPERIMENTS", "random_instance", "instances", "train_tiny", "profile", "evaluate", "replicates",
           "perf", "oracle_keep_loss"]


# ------------------------------------------------------------------------------------------- instances
def random_instance(rng: np.random.Generator, n_heads: int, seq_len: int):
    """I_{n,j} = a_n exp(s_n Z), a_n ~ LogNormal(0,1), s_n ~ U(0.5, 2.5); pi = log I + N(0,1).
    Returns the (N, T) decrements in scorer order."""
    a = rng.lognormal(0.0, 1.0, size=(n_heads, 1))
    s = rng.uniform(0.5, 2.5, size=(n_heads, 1))
    imp = a * np.exp(s * rng.standard_normal((n_heads, seq_len)))
    pi = np.log(imp) + rng.standard_normal((n_heads, seq_len))
    return decrements(imp, pi)


def instances(params: dict, ctx: RunContext):
    """Greedy (hull) vs exact DP vs DP on the hull on random instances (claims sandwich, near-optimal)."""
    n_heads, seq_len, count = int(params["N"]), int(params["T"]), int(params["n_instances"])
    frac = float(params.get("budget_fraction", 0.2))
    budget = int(round(frac * n_heads * seq_len))
    rngs = seeding.spawn(ctx.seed, count, "instances")
    rows, rel, dp, tru, dpr, t_greedy, t_dp, uni = [], [], [], [], [], [], [], []
    for i, rng in enumerate(rngs):
        d = random_instance(rng, n_heads, seq_len)
        uni.append(uniform_allocation_value(d, budget))
        t0 = time.perf_counter()
        g = allocate_budget(d, budget, method="greedy")
        t1 = time.perf_counter()
        e = allocate_budget(d, budget, method="dp")
        t2 = time.perf_counter()
        r = allocate_budget(d, budget, method="dp_relaxed")
        rel.append(g.relaxed_value); dp.append(e.value); tru.append(g.value); dpr.append(r.relaxed_value)
        t_greedy.append(t1 - t0); t_dp.append(t2 - t1)
        for metric, value in (("relaxed_greedy", g.relaxed_value), ("dp", e.value), ("true_greedy", g.value),
                              ("dp_relaxed", r.relaxed_value)):
            rows.append({"method": metric, "seed": i, "step": 0, "metric": "value", "value": value})
    rel, dp, tru, dpr = map(np.array, (rel, dp, tru, dpr))
    tol = 1e-9 * np.maximum(1.0, np.abs(dpr))
    hull_equal = np.abs(rel - dpr) <= tol
    ordered = (rel >= dp - tol) & (dp >= tru - tol)
    gaps = (dp - tru) / dp
    uniform_gaps = (dp - np.array(uni)) / dp
    write_arrays(ctx.out_dir / "instances.npz", relaxed=rel, dp=dp, true_greedy=tru, dp_relaxed=dpr)
    write_arrays(ctx.out_dir / "timings.npz", greedy_s=np.array(t_greedy), dp_s=np.array(t_dp))
    ctx.record(greedy_time_s=float(np.sum(t_greedy)), dp_time_s=float(np.sum(t_dp)))
    metrics = {"N": n_heads, "T": seq_len, "B": budget, "n_instances": count,
               "sandwich": {"all_hold": bool(np.all(hull_equal & ordered)),
                            "n_hold": int(np.sum(hull_equal & ordered)),
                            "max_abs_greedy_minus_dp_relaxed": float(np.max(np.abs(rel - dpr)))},
               "gap": {"mean": float(gaps.mean()), "max": float(gaps.max()),
                       "se": float(gaps.std(ddof=1) / np.sqrt(count)) if count > 1 else 0.0,
                       "per_instance": [float(g) for g in gaps]},
               # control: the uniform split of the same budget (no allocation at all) on the same instances
               "control": {"uniform": {"gap_per_instance": [float(g) for g in uniform_gaps],
                                       "gap_max": float(uniform_gaps.max())}}}
    return rows, metrics


def uniform_allocation_value(d: np.ndarray, budget: int) -> float:
    """True retained utility sum_n R_n(b_n) of the uniform split b_n = floor(B/N) (+1 for the first B mod N
    heads): the control of the near-optimality claims (an allocation that ignores the curves)."""
    n_heads = d.shape[0]
    b = np.full(n_heads, budget // n_heads)
    b[: budget % n_heads] += 1
    R = np.hstack([np.zeros((n_heads, 1)), np.cumsum(d, axis=1)])
    return float(R[np.arange(n_heads), b].sum())


# ------------------------------------------------------------------------------------------- tiny model
def _task_kwargs(params: dict) -> dict:
    t = params["task"]
    return {"context_len": int(t["context_len"]), "n_pairs": int(t["n_pairs"]), "n_queries": int(t["n_queries"])}


def _build_model(params: dict, seed: int):
    from shared.lm import tiny_llama

    m = params["model"]
    return tiny_llama(VOCAB_SIZE, num_layers=int(m["layers"]), hidden_size=int(m["hidden"]),
                      num_heads=int(m["heads"]), num_kv_heads=int(m["kv_heads"]),
                      intermediate_size=int(m["mlp"]), rope_theta=float(m.get("rope_theta", 1e4)),
                      seed=seed, attn_implementation="sdpa")


def _tensors(ctx_np, fut_np):
    import torch

    return torch.tensor(ctx_np), torch.tensor(fut_np)


def recall_accuracy(logits, future_ids, n_queries: int) -> float:
    """Fraction of value tokens predicted (argmax) from the logits of the future window."""
    vp = value_positions(n_queries)
    pred = logits[:, vp - 1].argmax(-1)
    return float((pred == future_ids[:, vp]).float().mean())


def _train(params: dict, ctx: RunContext):
    import torch

    from shared.lm import train_lm

    seeding.seed_torch(ctx.seed % (2 ** 31))
    kw = _task_kwargs(params)
    tr = params["train"]
    model = _build_model(params, seed=int(tr.get("init_seed", 0)))
    root = seeding.seed_sequence(ctx.seed, "train_tiny", "batches").entropy
    n_q, T = kw["n_queries"], kw["context_len"]
    induction_steps = int(tr["induction_steps"])

    def batch_fn(step):
        rng = np.random.default_rng([root, step])
        if step < induction_steps:  # warm-up on repeated segments (task.make_induction_batch)
            x, mask = make_induction_batch(rng, int(tr["batch"]), T + 3 * n_q)
            return torch.tensor(x), torch.tensor(mask)
        c, f = make_batch(rng, int(tr["batch"]), **kw)
        x = torch.tensor(np.hstack([c, f]))
        mask = torch.zeros_like(x)
        mask[:, T + value_positions(n_q)] = 1
        return x, mask

    ce, fe = _tensors(*make_batch(seeding.generator(ctx.seed, "train_tiny", "val"), int(tr["n_val"]), **kw))
    x_val = torch.cat([ce, fe], 1)

    def eval_fn(model):
        return recall_accuracy(model(input_ids=x_val).logits[:, T:], fe, n_q)

    log = train_lm(model, batch_fn, steps=int(tr["steps"]), lr=float(tr["lr"]),
                   weight_decay=float(tr["weight_decay"]), max_seconds=float(tr["max_seconds"]),
                   eval_fn=eval_fn, eval_every=int(tr["eval_every"]), target=float(tr["target"]),
                   progress=lambda s, v: ctx.log(f"step {s} loss {v:.3f}") if s % 100 == 0 else None)
    return model, log


def train_tiny(params: dict, ctx: RunContext):
    """Train the tiny model (AdamW; the first ``train.induction_steps`` steps on the induction warm-up of
    :func:`papers.lukv.task.make_induction_batch`, then the recall task; early stop at the target held-out
    recall, step cap; a wall-time cap is a safety net recorded in provenance) and save its weights to
    ``tiny_model.pt``."""
    import torch

    model, log = _train(params, ctx)
    torch.save(model.state_dict(), ctx.out_dir / "tiny_model.pt")
    ctx.record(train_wall_s=round(log.wall_s, 2), stopped=log.stopped)
    rows = [{"method": "tiny", "seed": 0, "step": s, "metric": "val_recall", "value": v} for s, v in log.evals]
    rows += [{"method": "tiny", "seed": 0, "step": i + 1, "metric": "loss", "value": v}
             for i, v in enumerate(log.losses)]
    metrics = {"steps": log.steps, "val_recall": log.evals[-1][1] if log.evals else None,
               "stopped": log.stopped, "final_loss": log.losses[-1]}
    return rows, metrics


def _load_model(params: dict, ctx: RunContext):
    import torch

    seeding.seed_torch(ctx.seed % (2 ** 31))
    path = Path(params.get("model_from", "")) / "tiny_model.pt"
    if params.get("model_from") and path.exists():
        model = _build_model(params, seed=int(params["train"].get("init_seed", 0)))
        model.load_state_dict(torch.load(path, weights_only=True))
        return model.eval()
    ctx.log(f"{path} not found: training the tiny model in-process")
    sub = RunContext(name="train_tiny", scale=ctx.scale, seed=ctx.seed, out_dir=ctx.out_dir)
    return _train(params, sub)[0]


@contextlib.contextmanager
def attention(model, impl: str):
    """Switch ``config._attn_implementation`` for one phase (eager for oracle extraction, sdpa for presses)."""
    old = model.config._attn_implementation
    model.config._attn_implementation = impl
    try:
        assert model.config._attn_implementation == impl
        yield model
    finally:
        model.config._attn_implementation = old


def _profiling(params: dict) -> dict:
    """The profiling protocol of ``params['profiling']`` (defaults: the official one, no decode steps)."""
    p = params.get("profiling") or {}
    return {"protocol": str(p.get("protocol", "official")), "decode_steps": int(p.get("decode_steps", 0)),
            "normalize_value_norms": bool(p.get("normalize_value_norms", True))}


def _oracle_and_scores(model, params, rng, n, scorer_specs, task_kwargs=None, *, profiling: bool = False):
    """Samples, their oracle importance (n, L, G, T) and scores per scorer (``task_kwargs`` overrides the task).
    ``profiling``: the oracle of the profiling protocol (:func:`_profiling`: decode steps, normalised value
    norms); otherwise the evaluation oracle (the future window, raw value norms) that every loss is measured in."""
    from papers.lukv.online import make_scorer, record_scores
    from papers.lukv.oracle import extract_oracle

    c, f = _tensors(*make_batch(rng, n, **(task_kwargs or _task_kwargs(params))))
    prof = _profiling(params) if profiling else {"decode_steps": 0, "normalize_value_norms": False}
    with attention(model, "eager"):
        imp = extract_oracle(model, c, f, decode_steps=prof["decode_steps"],
                             normalize_value_norms=prof["normalize_value_norms"])
    scores = {}
    with attention(model, "sdpa"):
        for name, spec in scorer_specs.items():
            scores[name] = record_scores(model, make_scorer(spec["press"], spec.get("params")), c)
    return c, f, imp, scores


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(np.ravel(a), np.ravel(b)).statistic)


def _profile_set(params: dict, model, rng, scorers: dict, task_kwargs=None) -> dict:
    """One profiling set (``n_profile`` samples from ``rng``): its curve per scorer under the profiling protocol."""
    grid = np.round(np.arange(1, 100) / 100, 2)
    sink, window = int(params.get("sink", 4)), int(params.get("window", 1))
    _, _, imp, scores = _oracle_and_scores(model, params, rng, int(params["n_profile"]), scorers, task_kwargs,
                                           profiling=True)
    return {name: build_budget_curve(list(imp), list(scores[name]), rho_grid=grid, sink=sink, window=window,
                                     protocol=_profiling(params)["protocol"]) for name in scorers}


def _profile_curves(params: dict, ctx: RunContext, model):
    """Curves {(scorer, part, split): (99, L, G)} from ``n_splits`` independent pairs of disjoint profiling
    sets A and B (``n_profile`` samples each, every set drawn from its own seed)."""
    scorers = params["scorers"]
    n_splits = int(params.get("n_splits", 1))
    curves = {}
    for split in ctx.progress(range(n_splits), total=n_splits, what="profiling splits"):
        for part in ("A", "B"):
            rng = seeding.generator(ctx.seed, "profile", part, f"split{split}")
            for name, curve in _profile_set(params, model, rng, scorers).items():
                curves[(name, part, split)] = curve
    return curves


def profile(params: dict, ctx: RunContext):
    """Budget curves A and B for ``n_splits`` independent pairs of disjoint profiling sets, every scorer;
    the budget invariant; the stability of the per-head ratios Phi(0.8) between A and B (Spearman over heads,
    one value per split) and its control (B's heads permuted). Writes ``curves.npz`` (every curve) and
    ``curve_<scorer>_<A|B>.npy`` (split 0, with a JSON sidecar)."""
    model = _load_model(params, ctx)
    curves = _profile_curves(params, ctx, model)
    L, G = curves[next(iter(curves))].shape[1:]
    T = _task_kwargs(params)["context_len"]
    grid = np.round(np.arange(1, 100) / 100, 2)
    n_splits = int(params.get("n_splits", 1))
    sink, window = int(params.get("sink", 4)), int(params.get("window", 1))
    prof = _profiling(params)
    feasible = (feasible_rows(grid, T, sink, window) if prof["protocol"] == "official"
                else np.ones(grid.size, dtype=bool))
    metrics = {"N": int(L * G), "T": T, "n_splits": n_splits, "bound": 1.0 / (L * G * T) + 1e-6,
               "profiling": prof, "max_feasible_rho": float(grid[feasible].max()),
               "curve_mean_err": {}, "spearman_ab": {}, "spearman_ab_per_split": {},
               "control": {"shuffled_heads": {"spearman_ab_per_split": {}}}}
    rows = []
    for (name, part, split), curve in curves.items():
        if split == 0:
            save_curve(curve, ctx.out_dir / f"curve_{name}_{part}.npy", model="tiny_llama", scorer=name,
                       scorer_params=params["scorers"][name].get("params", {}), sink=int(params.get("sink", 4)),
                       window=int(params.get("window", 1)), T=T, M=int(params["n_profile"]),
                       K=3 * _task_kwargs(params)["n_queries"] + prof["decode_steps"], seed=ctx.seed, part=part,
                       protocol=prof["protocol"], normalize_value_norms=prof["normalize_value_norms"])
            for r, rho in enumerate(grid):
                rows.append({"method": f"{name}_{part}", "seed": 0, "step": r + 1, "metric": "mean_ratio",
                             "value": float(curve[r].mean())})
        err = np.abs(curve.astype(np.float64).mean(axis=(1, 2)) - grid)[feasible]
        metrics["curve_mean_err"][f"{name}_{part}{split}"] = float(err.max())
    write_arrays(ctx.out_dir / "curves.npz",
                 **{f"{name}_{part}_{split}": c for (name, part, split), c in curves.items()})
    metrics["curve_mean_err_max"] = max(metrics["curve_mean_err"].values())
    for name in params["scorers"]:
        per = [_spearman(curves[(name, "A", s)][79], curves[(name, "B", s)][79]) for s in range(n_splits)]
        shuffled = [_spearman(curves[(name, "A", s)][79],
                              shuffle_heads(curves[(name, "B", s)],
                                            seeding.generator(ctx.seed, "shuffle", f"split{s}"))[79])
                    for s in range(n_splits)]
        metrics["spearman_ab"][name] = per[0]
        metrics["spearman_ab_per_split"][name] = per
        metrics["control"]["shuffled_heads"]["spearman_ab_per_split"][name] = shuffled
        for s, (v, w) in enumerate(zip(per, shuffled)):
            rows.append({"method": name, "seed": s, "step": 80, "metric": "spearman_ab", "value": v})
            rows.append({"method": f"{name}_shuffled", "seed": s, "step": 80, "metric": "spearman_ab", "value": w})
    return rows, metrics


# ------------------------------------------------------------------------------------------- evaluate
def oracle_keep_loss(imp: np.ndarray, keep: np.ndarray) -> float:
    """Oracle loss of a keep mask: sum_j I_j - sum_{j kept} I_j."""
    return float(imp.sum() - imp[keep].sum())


def _keep_from_counts(pi: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Keep mask (L, G, T): the top counts[l, g] tokens of each head by pi (stable order)."""
    order = scorer_order(pi)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(pi.shape[-1])[None, None, :].repeat(pi.shape[0], 0).repeat(
        pi.shape[1], 1), axis=-1)
    return rank < counts[..., None]


def _curve_counts(curve: np.ndarray, rho: float, seq_len: int) -> np.ndarray:
    """Per-head keep counts (L, G) that ``LUKVPress`` reads from ``curve`` at ``rho``, after the row is rounded
    to integer budgets keeping N (1 - rho) T tokens in all (:func:`papers.lukv.profile.curve_at_budget`)."""
    c = curve_at_budget(curve, rho, seq_len)
    idx = min(98, max(0, int(round(rho * 100)) - 1))
    return np.stack([round_keep_counts(np.clip(1 - c[idx, l], 0, 1), seq_len) for l in range(c.shape[1])])


def _adakv_keep(scores: np.ndarray, rho: float, alpha: float = 0.2) -> np.ndarray:
    """AdaKV rule per layer: each head protects its top max(1, int(alpha*n_kept)) tokens, then the
    G*(T - n_kept) lowest remaining scores of the layer are evicted jointly; n_kept = (1 - rho) T exactly
    (:func:`papers.lukv.profile.kept_per_head`), the same budget as every other method."""
    L, G, T = scores.shape
    n_kept = kept_per_head(rho, T)
    n_safe = max(1, int(alpha * n_kept))
    keep = np.ones((L, G, T), dtype=bool)
    for l in range(L):
        s = scores[l].copy()
        top = scorer_order(s)[:, :n_safe]
        np.put_along_axis(s, top, np.inf, axis=-1)
        flat = np.argsort(s.ravel(), kind="stable")[: G * (T - n_kept)]
        keep[l].ravel()[flat] = False
    return keep


def oracle_losses(imp, scores, counts: dict, rho, sink, window):
    """Oracle loss of AdaKV, of the per-sample optimum and of every curve-based method in ``counts``
    (method -> (L, G) keep counts from :func:`_curve_counts`: uniform, LU-KV, the shuffled control) for one
    sample (L, G, T). Every method keeps exactly N (1 - rho) T tokens: raises ``AssertionError`` otherwise."""
    L, G, T = imp.shape
    pi = np.stack([protect_scores(scores[l], sink=sink, window=window) for l in range(L)])
    masks = {m: _keep_from_counts(pi, c) for m, c in counts.items()}
    masks["adakv"] = _adakv_keep(scores, rho)
    target = L * G * kept_per_head(rho, T)
    for m, keep in masks.items():
        assert int(keep.sum()) == target, f"{m} keeps {int(keep.sum())} tokens, not {target}"
    out = {m: oracle_keep_loss(imp, keep) for m, keep in masks.items()}
    d = decrements(imp, pi).reshape(L * G, T)
    best = allocate_budget(d, total_budget(rho, L * G, T), method="dp")
    assert int(best.budgets.sum()) == target
    out["oracle"] = float(imp.sum() - best.value)
    return out


def _kl(full_logits, logits) -> float:
    import torch

    p = torch.log_softmax(full_logits.double(), -1)
    q = torch.log_softmax(logits.double(), -1)
    return float((p.exp() * (p - q)).sum(-1).mean())


def _load_curves(params: dict, ctx: RunContext, model) -> dict:
    """Profile-A curves {(scorer, split): curve} from ``profile_from/curves.npz``, else profiled in-process."""
    n_splits = int(params.get("n_splits", 1))
    path = Path(params.get("profile_from", "")) / "curves.npz"
    if params.get("profile_from") and path.exists():
        from shared.results import read_arrays

        arr = read_arrays(path)
        keys = {(name, s): f"{name}_A_{s}" for name in params["scorers"] for s in range(n_splits)}
        if all(k in arr for k in keys.values()):
            return {k: np.asarray(arr[v]) for k, v in keys.items()}
    ctx.log("profile curves not found: profiling in-process")
    all_curves = _profile_curves(params, ctx, model)
    return {(name, s): all_curves[(name, "A", s)] for name in params["scorers"] for s in range(n_splits)}


def _transfer_tasks(params: dict) -> dict:
    """Target tasks of the transfer test: {name: task kwargs} (``params['transfer']['tasks']``)."""
    tr = params["transfer"]
    base = _task_kwargs(params)
    return {name: dict(base, n_pairs=int(t["n_pairs"]), n_queries=int(t.get("n_queries", base["n_queries"])))
            for name, t in tr["tasks"].items()}


def _transfer(params, ctx, model, split_curves, shuffled, sink, window) -> dict:
    """Task-agnostic use of one profile (the official protocol profiles once and reuses the curve on every task).
    For every target task of ``params['transfer']['tasks']`` (other numbers of key/value pairs or queries) and
    every profiling split s, at rho = 0.8 on held-out samples of that task: the oracle loss of the curve profiled
    on the training task (split s, set A, applied unchanged), of a per-task curve profiled the same way on
    ``n_profile`` samples of the target task itself (split s's own seed), of the uniform split and of the
    head-shuffled transferred curve. Per split, ratios are averaged over the target tasks:
    transferred / uniform, transferred / per-task, and the controls."""
    from papers.lukv.online import uniform_curve

    primary = params["primary_scorer"]
    spec = {primary: params["scorers"][primary]}
    L, G = model.config.num_hidden_layers, model.config.num_key_value_heads
    n_splits = int(params.get("n_splits", 1))
    rho = 0.8
    out = {"rho": rho, "tasks": {}}
    for tname, kw in _transfer_tasks(params).items():
        T = kw["context_len"]
        _, _, imp, scores = _oracle_and_scores(
            model, params, seeding.generator(ctx.seed, "evaluate", "transfer", tname),
            int(params["transfer"]["n_eval"]), spec, task_kwargs=kw)
        counts = {"uniform": _curve_counts(uniform_curve(L, G), rho, T)}
        for s in range(n_splits):
            own = _profile_set(params, model, seeding.generator(ctx.seed, "profile", "task", tname, f"split{s}"),
                               spec, task_kwargs=kw)[primary]
            counts[f"lukv_{s}"] = _curve_counts(split_curves[(primary, s)], rho, T)
            counts[f"pertask_{s}"] = _curve_counts(own, rho, T)
            counts[f"lukv_shuffled_{s}"] = _curve_counts(shuffled[(primary, s)], rho, T)
        sums = {}
        for i in range(imp.shape[0]):
            for m, v in oracle_losses(imp[i], scores[primary][i], counts, rho, sink, window).items():
                sums[m] = sums.get(m, 0.0) + v
        u = sums["uniform"]
        out["tasks"][tname] = {
            "task": kw, "oracle_loss": {"uniform": u, "adakv": sums["adakv"], "oracle": sums["oracle"]},
            "lukv_uniform": [sums[f"lukv_{s}"] / u for s in range(n_splits)],
            "pertask_uniform": [sums[f"pertask_{s}"] / u for s in range(n_splits)],
            "lukv_pertask": [sums[f"lukv_{s}"] / sums[f"pertask_{s}"] for s in range(n_splits)],
            "uniform_pertask": [u / sums[f"pertask_{s}"] for s in range(n_splits)],
            "shuffled_uniform": [sums[f"lukv_shuffled_{s}"] / u for s in range(n_splits)],
            "shuffled_pertask": [sums[f"lukv_shuffled_{s}"] / sums[f"pertask_{s}"] for s in range(n_splits)]}

    def mean_over_tasks(key):
        return [float(np.mean([t[key][s] for t in out["tasks"].values()])) for s in range(n_splits)]

    out["oracle_ratio_lukv_uniform_per_split"] = mean_over_tasks("lukv_uniform")
    out["oracle_ratio_pertask_uniform_per_split"] = mean_over_tasks("pertask_uniform")
    out["oracle_ratio_lukv_pertask_per_split"] = mean_over_tasks("lukv_pertask")
    out["control"] = {"shuffled_heads": {"oracle_ratio_lukv_uniform_per_split": mean_over_tasks("shuffled_uniform"),
                                         "oracle_ratio_lukv_pertask_per_split": mean_over_tasks("shuffled_pertask")},
                      "uniform": {"oracle_ratio_lukv_pertask_per_split": mean_over_tasks("uniform_pertask")}}
    return out


def evaluate(params: dict, ctx: RunContext):
    """Held-out oracle loss (numpy allocations) for the curve of every profiling split, and downstream
    recall / KL (kvpress presses, split 0's curve for every method and scorer; for the primary scorer, LU-KV and
    its shuffled and reversed controls also with every other split's curve, one value per split as the oracle
    claims). Every method keeps exactly the same number of tokens
    (asserted); the controls are LU-KV with its curve's heads permuted (``lukv_shuffled``) and, in the oracle
    domain, with every row's ratios handed out in reverse order (``lukv_reversed``,
    :func:`papers.lukv.profile.reverse_heads`)."""
    from papers.lukv.online import make_press, make_scorer, run_compressed, uniform_curve

    model = _load_model(params, ctx)
    kw = _task_kwargs(params)
    T, n_q = kw["context_len"], kw["n_queries"]
    L, G = model.config.num_hidden_layers, model.config.num_key_value_heads
    sink, window = int(params.get("sink", 4)), int(params.get("window", 1))
    n_splits = int(params.get("n_splits", 1))
    split_curves = _load_curves(params, ctx, model)
    shuffled = {k: shuffle_heads(c, seeding.generator(ctx.seed, "shuffle", f"split{k[1]}"))
                for k, c in split_curves.items()}
    curves = {name: split_curves[(name, 0)] for name in params["scorers"]}
    c, f, imp, scores = _oracle_and_scores(model, params, seeding.generator(ctx.seed, "evaluate", "heldout"),
                                           int(params["n_eval"]), params["scorers"])
    rows, metrics = [], {"T": T, "N": L * G, "n_splits": n_splits, "oracle_loss": {}, "oracle_loss_per_split": {},
                         "downstream": {}}
    primary = params["primary_scorer"]
    for rho in params["rhos"]:
        key = f"rho{int(round(rho * 100))}"
        counts = {"uniform": _curve_counts(uniform_curve(L, G), rho, T)}
        for s in range(n_splits):
            counts[f"lukv_{s}"] = _curve_counts(split_curves[(primary, s)], rho, T)
            counts[f"lukv_shuffled_{s}"] = _curve_counts(shuffled[(primary, s)], rho, T)
            counts[f"lukv_reversed_{s}"] = _curve_counts(reverse_heads(split_curves[(primary, s)]), rho, T)
        sums = {}
        for i in range(imp.shape[0]):
            for m, v in oracle_losses(imp[i], scores[primary][i], counts, rho, sink, window).items():
                sums[m] = sums.get(m, 0.0) + v
        metrics["oracle_loss_per_split"][key] = {
            m: [sums[f"{m}_{s}"] for s in range(n_splits)] for m in ("lukv", "lukv_shuffled", "lukv_reversed")}
        metrics["oracle_loss"][key] = {"uniform": sums["uniform"], "adakv": sums["adakv"], "lukv": sums["lukv_0"],
                                       "lukv_shuffled": sums["lukv_shuffled_0"], "oracle": sums["oracle"]}
        for m, v in metrics["oracle_loss"][key].items():
            rows.append({"method": m, "seed": 0, "step": int(round(rho * 100)), "metric": "oracle_loss",
                         "value": v})
    if params.get("transfer"):
        metrics["transfer"] = _transfer(params, ctx, model, split_curves, shuffled, sink, window)
    target_kept = {f"rho{int(round(rho * 100))}": kept_per_head(rho, T) / T for rho in params["rhos"]}
    kept_errors = []   # |kept - target| of every press run below, the maximum recorded under "budget"

    def press_downstream(method, spec, rho, curve) -> dict:
        """Recall, KL to the full cache and kept fraction of one press on the held-out items (budget asserted
        and its error recorded)."""
        press = make_press("lukv" if method in ("lukv_shuffled", "lukv_reversed") else method,
                           make_scorer(spec["press"], spec.get("params")), rho, seq_len=T, curve=curve,
                           n_layers=L, n_kv_heads=G, sink=sink, window=window,
                           pyramid_window=int(params.get("pyramid_window", 8)))
        logits, kept = run_compressed(model, press, c, f)
        target = target_kept[f"rho{int(round(rho * 100))}"]
        kept_errors.append(abs(kept - target))
        if kept_errors[-1] > 1e-12:
            raise AssertionError(f"{method} ({spec['press']}, rho={rho}) keeps a fraction {kept} of the context "
                                 f"keys, not {target}: the budgets are not matched")
        return {"recall": recall_accuracy(logits, f, n_q), "kl": _kl(full_logits, logits), "kept": kept}

    with attention(model, "sdpa"):
        full_logits, _ = run_compressed(model, None, c, f)
        metrics["recall_full"] = recall_accuracy(full_logits, f, n_q)
        for name, spec in params["scorers"].items():
            for rho in params["rhos"]:
                key = f"rho{int(round(rho * 100))}"
                methods = [m for m in params["methods"] if m != "full"]
                if name == primary:
                    methods.append("lukv_shuffled")
                for method in methods:
                    if method == "pyramidkv" and name != primary:
                        continue   # PyramidKV has its own (SnapKV) scorer: run it once, listed under primary
                    control = method == "lukv_shuffled"   # the same permutation as split 0's oracle control
                    res = press_downstream(method, spec, rho, shuffled[(name, 0)] if control else curves[name])
                    metrics["downstream"].setdefault(name, {}).setdefault(key, {})[method] = res
                    for metric, value in res.items():
                        rows.append({"method": method, "seed": 0, "step": int(round(rho * 100)),
                                     "metric": metric, "value": value, "scorer": name})
            if name == primary:  # LU-KV and its control with the curve of every split (split 0: the run above)
                per_split = metrics.setdefault("downstream_per_split", {}).setdefault(name, {})
                for rho in params["rhos"]:
                    key = f"rho{int(round(rho * 100))}"
                    first = metrics["downstream"][name][key]
                    per_split[key] = {m: [first[m]] + [press_downstream(m, spec, rho, table[(name, s)])
                                                       for s in range(1, n_splits)]
                                      for m, table in (("lukv", split_curves), ("lukv_shuffled", shuffled))}
                    per_split[key]["lukv_reversed"] = [
                        press_downstream("lukv_reversed", spec, rho, reverse_heads(split_curves[(name, s)]))
                        for s in range(n_splits)]
    metrics["budget"] = {"target_kept_fraction": target_kept, "max_abs_kept_error": max(kept_errors),
                         "n_press_runs": len(kept_errors)}
    ol = metrics["oracle_loss"]["rho80"]
    per = metrics["oracle_loss_per_split"]["rho80"]
    ds = metrics["downstream"][primary]["rho80"]
    ds_split = metrics["downstream_per_split"][primary]["rho80"]
    metrics["claims"] = {
        "oracle_ratio_lukv_uniform_per_split": [v / ol["uniform"] for v in per["lukv"]],
        "oracle_ratio_lukv_adakv_per_split": [v / ol["adakv"] for v in per["lukv"]],
        "recall_gain_lukv_uniform_per_split": [r["recall"] - ds["uniform"]["recall"] for r in ds_split["lukv"]],
        "kl_ratio_lukv_uniform_per_split": [r["kl"] / ds["uniform"]["kl"] for r in ds_split["lukv"]],
    }
    metrics["control"] = {"reversed_heads": {
        "oracle_ratio_lukv_uniform_per_split": [v / ol["uniform"] for v in per["lukv_reversed"]],
        "oracle_ratio_lukv_adakv_per_split": [v / ol["adakv"] for v in per["lukv_reversed"]],
        "recall_gain_lukv_uniform_per_split": [r["recall"] - ds["uniform"]["recall"]
                                               for r in ds_split["lukv_reversed"]],
        "kl_ratio_lukv_uniform_per_split": [r["kl"] / ds["uniform"]["kl"] for r in ds_split["lukv_reversed"]]},
        "shuffled_heads": {
        "oracle_ratio_lukv_uniform_per_split": [v / ol["uniform"] for v in per["lukv_shuffled"]],
        "oracle_ratio_lukv_adakv_per_split": [v / ol["adakv"] for v in per["lukv_shuffled"]],
        "recall_gain_lukv_uniform_per_split": [r["recall"] - ds["uniform"]["recall"]
                                               for r in ds_split["lukv_shuffled"]],
        "kl_ratio_lukv_uniform_per_split": [r["kl"] / ds["uniform"]["kl"] for r in ds_split["lukv_shuffled"]]}}
    return rows, metrics


# ------------------------------------------------------------------------------------------- replicates
REPLICATE_KEYS = ("oracle_ratio_lukv_uniform", "oracle_ratio_lukv_adakv", "recall_gain_lukv_uniform",
                  "kl_ratio_lukv_uniform", "transfer_oracle_ratio_lukv_uniform", "transfer_oracle_ratio_lukv_pertask")
REPLICATE_CONTROLS = ("reversed_heads", "shuffled_heads", "uniform")


def _model_means(table: dict) -> dict:
    """The mean over profiling splits of every per-split claim quantity of one model: ``<key>_per_split``
    (a list) -> ``{<key>: mean}`` for the keys of :data:`REPLICATE_KEYS` that ``table`` holds."""
    return {k: float(np.mean(table[f"{k}_per_split"])) for k in REPLICATE_KEYS if f"{k}_per_split" in table}


def _per_model(tables: list) -> dict:
    """``{<key>_per_model: [mean of model 0, mean of model 1, ...]}`` for the keys every model's table holds."""
    means = [_model_means(t) for t in tables]
    return {f"{k}_per_model": [m[k] for m in means] for k in REPLICATE_KEYS if all(k in m for m in means)}


def _claim_tables(claims: dict, control: dict, transfer: dict) -> dict:
    """One model's per-split claim quantities in the layout of :func:`replicates`: the keys of ``claims`` /
    ``control`` (evaluate's layout) and those of the transfer test (:func:`_transfer`) prefixed ``transfer_``."""
    def prefixed(table):
        return {f"transfer_{k}": v for k, v in table.items() if k.endswith("_per_split")}

    out = {"claims": {**claims, **prefixed(transfer)}, "control": {}}
    for name in REPLICATE_CONTROLS:
        out["control"][name] = {**control.get(name, {}), **prefixed(transfer["control"].get(name, {}))}
    return out


def _replicate_claims(params: dict, ctx: RunContext, model) -> dict:
    """The per-split claim quantities of :func:`evaluate` at rho = 0.8 (primary scorer) for one more model, in
    the layout of :func:`_claim_tables`: profile-A curves of ``n_splits`` splits, a held-out set of ``n_eval``
    items and the transfer test, all drawn from ``ctx``'s own seed. The controls are the reversed allocation
    (oracle loss and downstream) and the shuffled one (oracle loss), as in evaluate."""
    from papers.lukv.online import make_press, make_scorer, run_compressed, uniform_curve

    primary, rho = params["primary_scorer"], 0.8
    spec = {primary: params["scorers"][primary]}
    kw = _task_kwargs(params)
    T, n_q = kw["context_len"], kw["n_queries"]
    L, G = model.config.num_hidden_layers, model.config.num_key_value_heads
    sink, window = int(params.get("sink", 4)), int(params.get("window", 1))
    splits = range(int(params.get("n_splits", 1)))
    curves = {s: _profile_set(params, model, seeding.generator(ctx.seed, "profile", "A", f"split{s}"),
                              spec)[primary] for s in splits}
    variants = {"lukv": curves,
                "reversed": {s: reverse_heads(c) for s, c in curves.items()},
                "shuffled": {s: shuffle_heads(c, seeding.generator(ctx.seed, "shuffle", f"split{s}"))
                             for s, c in curves.items()}}
    c, f, imp, scores = _oracle_and_scores(model, params, seeding.generator(ctx.seed, "evaluate", "heldout"),
                                           int(params["n_eval"]), spec)
    counts = {"uniform": _curve_counts(uniform_curve(L, G), rho, T)}
    counts.update({f"{v}_{s}": _curve_counts(table[s], rho, T) for v, table in variants.items() for s in splits})
    loss = {}
    for i in range(imp.shape[0]):
        for m, value in oracle_losses(imp[i], scores[primary][i], counts, rho, sink, window).items():
            loss[m] = loss.get(m, 0.0) + value

    def downstream(method, curve):
        press = make_press(method, make_scorer(spec[primary]["press"], spec[primary].get("params")), rho,
                           seq_len=T, curve=curve, n_layers=L, n_kv_heads=G, sink=sink, window=window)
        logits, _ = run_compressed(model, press, c, f)
        return recall_accuracy(logits, f, n_q), _kl(full_logits, logits)

    tables = {}
    with attention(model, "sdpa"):
        full_logits, _ = run_compressed(model, None, c, f)
        base_recall, base_kl = downstream("uniform", None)
        for v, table in variants.items():
            tables[v] = {"oracle_ratio_lukv_uniform_per_split": [loss[f"{v}_{s}"] / loss["uniform"] for s in splits],
                         "oracle_ratio_lukv_adakv_per_split": [loss[f"{v}_{s}"] / loss["adakv"] for s in splits]}
            if v != "shuffled":
                runs = [downstream("lukv", table[s]) for s in splits]
                tables[v]["recall_gain_lukv_uniform_per_split"] = [r - base_recall for r, _ in runs]
                tables[v]["kl_ratio_lukv_uniform_per_split"] = [k / base_kl for _, k in runs]
    transfer = _transfer(params, ctx, model, {(primary, s): curves[s] for s in splits},
                         {(primary, s): variants["shuffled"][s] for s in splits}, sink, window)
    out = _claim_tables(tables["lukv"], {"reversed_heads": tables["reversed"],
                                         "shuffled_heads": tables["shuffled"]}, transfer)
    out["recall_full"] = recall_accuracy(full_logits, f, n_q)
    return out


def replicates(params: dict, ctx: RunContext):
    """The LU-KV claims at rho = 0.8 over independently trained models. Model 0 is the one of ``train_tiny``,
    its values read from ``evaluate``'s metrics (``evaluate_from``); every init seed s of ``replicate_seeds``
    trains one more model exactly as ``train_tiny`` does under the root seed derived from stream
    ("replicates", "model<s>") with initial weights of seed s, and profiles and evaluates it as evaluate does
    under that root seed (:func:`_replicate_claims`: its own profiling sets, held-out items and transfer
    samples). Each model gives one value per claim key, the mean over its profiling splits
    (``claims.<key>_per_model``; controls under ``control``), so the interval over models includes the
    variation of training, profiling and held-out sampling; ``recall_full_min`` is the lowest full-cache recall
    of the models (the precondition of the claims)."""
    import json

    evaluated = json.loads((Path(params["evaluate_from"]) / "metrics.json").read_text())
    per_model = [{**_claim_tables(evaluated["claims"], evaluated["control"], evaluated["transfer"]),
                  "recall_full": evaluated["recall_full"]}]
    seeds = [int(s) for s in params["replicate_seeds"]]
    for s in ctx.progress(seeds, total=len(seeds), what="replicate models"):
        sub = RunContext(name=ctx.name, scale=ctx.scale, out_dir=ctx.out_dir,
                         seed=int(seeding.seed_sequence(ctx.seed, "replicates", f"model{s}").generate_state(1)[0]))
        model, log = _train({**params, "train": {**params["train"], "init_seed": s}}, sub)
        if log.stopped != "target":
            ctx.log(f"replicate model {s} stopped at {log.steps} steps ({log.stopped}) below the target recall")
        per_model.append({**_replicate_claims(params, sub, model.eval()), "steps": log.steps,
                          "stopped": log.stopped})
    metrics = {"init_seeds": [int(params["train"].get("init_seed", 0))] + seeds,
               "train_steps": [m.get("steps") for m in per_model], "stopped": [m.get("stopped") for m in per_model],
               "recall_full_per_model": [m["recall_full"] for m in per_model],
               "recall_full_min": min(m["recall_full"] for m in per_model),
               "per_model": per_model,
               "claims": _per_model([m["claims"] for m in per_model]),
               "control": {c: _per_model([m["control"][c] for m in per_model]) for c in REPLICATE_CONTROLS}}
    rows = [{"method": "lukv", "seed": i, "step": 80, "metric": k[:-len("_per_model")], "value": v}
            for k, values in metrics["claims"].items() for i, v in enumerate(values)]
    return rows, metrics


# ------------------------------------------------------------------------------------------- perf
def perf(params: dict, ctx: RunContext):
    """(1) Allocation at rho = 0.8: sort-based greedy vs exact DP on one random instance; (2) prefill +
    compression + decode of every item with no press, ScorerPress, AdaKVPress, LUKVPress (warm model).

    Both comparisons are timed with :func:`shared.timing.alternating_least_cpu`: CPU seconds of this process
    (one thread), calls batched to at least 50 ms, the compared sides measured in turn in each of ``rounds``
    rounds so that load from other processes reaches them alike, and the least measurement per side kept.
    ``eviction.median_s`` holds, per method, that least CPU time of one pass over all items divided by the
    number of items. Times are run-dependent: they are metrics no claim compares exactly."""
    import torch

    from papers.lukv.online import make_press, make_scorer

    rounds = int(params["rounds"])
    a = params["allocation"]
    d = random_instance(seeding.generator(ctx.seed, "perf", "alloc"), int(a["N"]), int(a["T"]))
    budget = total_budget(0.8, int(a["N"]), int(a["T"]))
    alloc = {}

    def allocator(method):
        def call():
            alloc[method] = allocate_budget(d, budget, method=method)
        return call

    at = alternating_least_cpu({"greedy": allocator("greedy"), "dp": allocator("dp")}, rounds)
    g, e = alloc["greedy"], alloc["dp"]
    t_greedy, t_dp = at["seconds"]["greedy"], at["seconds"]["dp"]
    metrics = {"allocation": {"N": int(a["N"]), "T": int(a["T"]), "B": budget, "greedy_s": t_greedy,
                              "dp_s": t_dp, "time_ratio_dp_over_greedy": t_dp / t_greedy,
                              "rel_value_gap": (e.value - g.value) / e.value}}
    seeding.seed_torch(ctx.seed % (2 ** 31))
    model = _build_model(params, seed=0)
    L, G = model.config.num_hidden_layers, model.config.num_key_value_heads
    e2e = params["eviction"]
    rng = seeding.generator(ctx.seed, "perf", "items")
    items = [torch.tensor(make_batch(rng, 1, **_task_kwargs(params))[0]) for _ in range(int(e2e["items"]))]
    from papers.lukv.online import uniform_curve
    from transformers import DynamicCache

    def run(press, ids):
        cache = DynamicCache()
        with torch.no_grad():
            if press is None:
                out = model(input_ids=ids, past_key_values=cache, use_cache=True)
            else:
                with press(model):
                    out = model(input_ids=ids, past_key_values=cache, use_cache=True)
            tok = out.logits[:, -1:].argmax(-1)
            pos = ids.shape[1]
            for _ in range(int(e2e["decode_tokens"])):
                out = model(input_ids=tok, past_key_values=cache, position_ids=torch.tensor([[pos]]),
                            use_cache=True)
                tok, pos = out.logits[:, -1:].argmax(-1), pos + 1
        for layer in model.model.layers:
            layer.self_attn.masked_key_indices = None

    rho = float(e2e["rho"])

    def press_for(method):
        if method == "none":
            return None
        scorer = make_scorer("expected_attention", {"epsilon": 0.02})
        return make_press(method, scorer, rho, seq_len=int(items[0].shape[1]),
                          curve=uniform_curve(L, G) * 0 + rho, n_layers=L, n_kv_heads=G)

    def all_items(method):
        def call():
            for ids in items:
                run(press_for(method), ids)
        return call

    methods = ("none", "scorer", "adakv", "lukv")
    et = alternating_least_cpu({m: all_items(m) for m in methods}, rounds)
    times = {m: et["seconds"][m] / len(items) for m in methods}
    metrics["eviction"] = {"median_s": times,
                           "ratio_to_no_press": {m: times[m] / times["none"] for m in times}}
    rows = [{"method": m, "seed": 0, "step": 0, "metric": "ratio_to_no_press", "value": times[m] / times["none"]}
            for m in times]
    return rows, metrics


def smollm2(params: dict, ctx: RunContext):
    """SmolLM2-135M-Instruct: LU-KV profile and the press comparison on RULER-like tasks (``smollm2.py``)."""
    from papers.lukv.smollm2 import smollm2 as run

    return run(params, ctx)


EXPERIMENTS = {"instances": instances, "train_tiny": train_tiny, "profile": profile, "evaluate": evaluate,
               "replicates": replicates, "perf": perf, "smollm2": smollm2}

if __name__ == "__main__":
    main(EXPERIMENTS)
