"""Experiments of the adpo reproduction (spec "Experiments by scale").

``python -m papers.adpo.experiments NAME --config papers/adpo/config.yaml --scale quick --out DIR``, NAME one of
``identities`` (loss identities on random float64 batches and on a tiny float64 model), ``sft`` (the imperfect
SFT reference, saved as ``model.pt``), ``train`` (every preference method from the SFT weights, several seeds,
with held-out evaluation at the configured steps), ``perf`` (TRL's DPOTrainer against our trainer) and ``llm``
(SmolLM2-135M-Instruct + LoRA on the text tasks; full scale, or the spec's optional ``smollm2_quick`` flag).
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from shared.experiment import RunContext, main
from shared.results import atomic_path, atomic_write_text, mean_and_se
from shared.device import resolve_device
from shared.seeding import seed_sequence, seed_torch

from papers.adpo.losses import adpo_loss, adpo_pair_losses, dpo_pair_losses, unit_margins
from papers.adpo.tasks import heldout_prompts, make_preference_pairs, make_prompt, on_policy_pairs, solve
from papers.adpo.train import (build_model, encode_pairs, exact_match, greedy_responses, kl_per_token,
                               method_spec, preference_accuracy, response_logprobs, sample_responses,
                               train_preference, train_sft)

__all__ = ["EXPERIMENTS", "identities", "sft", "train", "perf", "llm", "load_sft", "sft_seed_value",
           "build_pairs", "response_length", "RunCache", "code_digest", "sft_weights_digest"]


# ---------------------------------------------------------------------------------------------- identities
def _random_batch(rng, max_b, max_t):
    B = int(rng.integers(1, max_b + 1))
    Tw, Tl = int(rng.integers(1, max_t + 1)), int(rng.integers(1, max_t + 1))
    lw, ll = rng.integers(1, Tw + 1, size=B), rng.integers(1, Tl + 1, size=B)
    mw = (np.arange(Tw)[None] < lw[:, None]).astype(float)
    ml = (np.arange(Tl)[None] < ll[:, None]).astype(float)
    rw, rl = rng.normal(0, 2, (B, Tw)) * mw, rng.normal(0, 2, (B, Tl)) * ml
    return rw, rl, mw, ml


def identities(params: dict, ctx: RunContext):
    """reduces-to-dpo, closed-form gradient, Jensen and initial value on random float64 batches; zero
    parameter gradient of shared-prefix units on a tiny float64 model.

    Metrics: ``reduces_to_dpo.max_abs_diff`` (per-pair losses, m = 1 and k >= T against DPO),
    ``gradient.max_rel_err`` (autograd vs -beta sigma(-z_i)), ``gradient.shared_unit_grad_ratio``,
    ``jensen.violations``, ``initial_value.random_max_abs_err``.
    """
    seed_torch(ctx.seed)
    rng = ctx.generator("batches")
    n, max_b, max_t = int(params["n_batches"]), int(params["max_batch"]), int(params["max_len"])
    beta = float(params.get("beta", 0.1))
    max_diff = max_rel = init_err = 0.0
    jensen_viol = jensen_n = 0
    for _ in range(n):
        rw, rl, mw, ml = _random_batch(rng, max_b, max_t)
        kw = dict(beta=beta, mask_chosen=mw, mask_rejected=ml)
        d = dpo_pair_losses(rw, rl, **kw)
        for other in (adpo_pair_losses(rw, rl, granularity="adaptive", m=1, **kw),
                      adpo_pair_losses(rw, rl, granularity="static", k=max(rw.shape[1], rl.shape[1]), **kw),
                      adpo_pair_losses(rw, rl, granularity="adaptive", m=1, reduction="mean", **kw)):
            max_diff = max(max_diff, float(np.abs(other - d).max()))
        tw = torch.tensor(rw, requires_grad=True)
        tl = torch.tensor(rl, requires_grad=True)
        loss = adpo_loss(tw, tl, beta=beta, mask_chosen=mw, mask_rejected=ml) * rw.shape[0]
        gw, gl = torch.autograd.grad(loss, (tw, tl))
        z, exists = unit_margins(rw, rl, beta=beta, mask_chosen=mw, mask_rejected=ml)
        s = torch.sigmoid(-z)
        Tw, Tl = rw.shape[1], rl.shape[1]
        ew = -beta * F.pad(s, (0, max(0, Tw - s.shape[1])))[:, :Tw] * torch.tensor(mw)
        el = beta * F.pad(s, (0, max(0, Tl - s.shape[1])))[:, :Tl] * torch.tensor(ml)
        for g, e in ((gw, ew), (gl, el)):
            rel = ((g - e).abs() / e.abs().clamp_min(1e-300))[e != 0]
            max_rel = max(max_rel, float(rel.max()) if rel.numel() else 0.0)
        for gran, kw2 in (("token", {}), ("static", {"k": 3}), ("adaptive", {"m": 4})):
            zz, ex = unit_margins(rw, rl, beta=beta, granularity=gran, mask_chosen=mw, mask_rejected=ml, **kw2)
            nn = ex.sum(1)
            lhs = (-F.logsigmoid(zz) * ex).sum(1) / nn
            rhs = -F.logsigmoid((zz * ex).sum(1) / nn)
            jensen_viol += int((lhs < rhs - 1e-12).sum())
            jensen_n += rw.shape[0]
            zero = adpo_loss(np.zeros_like(rw), np.zeros_like(rl), beta=beta, granularity=gran, mask_chosen=mw,
                             mask_rejected=ml, **kw2)
            init_err = max(init_err, abs(zero - float(ex.sum(1).mean()) * math.log(2)))
    shared_ratio = _shared_prefix_gradient(params, ctx.seed, beta)
    rows = [{"method": "adpo_token", "seed": 0, "step": 0, "metric": k, "value": v} for k, v in
            (("reduces_to_dpo_max_abs_diff", max_diff), ("gradient_max_rel_err", max_rel),
             ("shared_unit_grad_ratio", shared_ratio), ("jensen_violations", jensen_viol))]
    metrics = {"n_batches": n, "reduces_to_dpo": {"max_abs_diff": max_diff},
               "gradient": {"max_rel_err": max_rel, "shared_unit_grad_ratio": shared_ratio},
               "jensen": {"violations": jensen_viol, "pairs_checked": jensen_n},
               "initial_value": {"random_max_abs_err": init_err}}
    ctx.log(f"{n} random batches: reduce-to-DPO {max_diff:.2e}, grad rel err {max_rel:.2e}, "
            f"shared-unit gradient ratio {shared_ratio:.2e}")
    return rows, metrics


def _shared_prefix_gradient(params, seed, beta):
    """||grad_theta of the shared-prefix units' token-ADPO loss|| / ||grad_theta of the whole loss|| for a
    random float64 tiny policy against a different random reference, on T1 pairs."""
    arch = params["arch"]
    policy = build_model(arch, seed + 1).double()
    ref = build_model(arch, seed + 2).double()
    pairs = make_preference_pairs("sort", int(params.get("grad_pairs", 16)), seed=seed)
    data = encode_pairs(pairs, ref)
    policy.train()
    lw, _ = response_logprobs(policy, data.prompts, data.chosen)
    ll, _ = response_logprobs(policy, data.prompts, data.rejected)
    rho_w, rho_l = (lw - data.ref_w) * data.mask_w, (ll - data.ref_l) * data.mask_l
    z, exists = unit_margins(rho_w, rho_l, beta=beta, mask_chosen=data.mask_w, mask_rejected=data.mask_l)
    per_unit = -F.logsigmoid(z) * exists
    S = data.shared.shape[1]
    shared_loss = (per_unit[:, :S] * data.shared).sum()
    total_loss = per_unit.sum()
    params_ = [p for p in policy.parameters() if p.requires_grad]
    g_shared = torch.autograd.grad(shared_loss, params_, retain_graph=True, allow_unused=True)
    g_total = torch.autograd.grad(total_loss, params_, allow_unused=True)

    def norm(gs):
        return math.sqrt(sum(float((g ** 2).sum()) for g in gs if g is not None))

    return norm(g_shared) / norm(g_total)


# ------------------------------------------------------------------------------------------------- sft
def sft_seed_value(root: int, sft_seed) -> int:
    """The integer seed of SFT seed ``sft_seed`` (an int, or "calibration" for the seed that tunes the SFT and the
    preference lr): the stream ("sft", str(sft_seed)) of the root seed, so no SFT seed coincides with the
    data streams (root + 7, + 11, + 13)."""
    return int(seed_sequence(int(root), "sft", str(sft_seed)).generate_state(1)[0]) % 2 ** 31


def response_length(task: str, prompt) -> int:
    """Tokens to decode for ``task``: the correct response's length (+ 1 for sort_length's longer rejects)."""
    return len(solve(task, prompt)) + (1 if task == "sort_length" else 0)


def _sft_seeds(params) -> list:
    return [int(s) for s in params.get("sft_seeds", [0])]


def sft(params: dict, ctx: RunContext):
    """Train the imperfect SFT reference of every task in ``params['tasks']`` for every SFT seed of
    ``params['sft_seeds']`` (default [0]) and save it as ``model_<task>_sft<s>.pt``; stop when a reference is
    (nearly) perfect.

    With ``params['target_em']``, each SFT run stops at the first check (every ``eval_every`` steps, at most
    ``steps``) where the greedy exact match on ``n_val`` validation prompts (seed root + 17, apart from the
    held-out prompts) reaches the target, so that every SFT seed's reference lands in the band the claims need.
    Metrics: ``<task>.exact_match`` (mean over SFT seeds) and ``<task>.per_sft_seed.{exact_match, steps,
    final_loss}`` (held-out exact match, steps trained), ``<task>.max_steps``, ``<task>.target_em``.
    """
    seed_torch(ctx.seed)
    rows, metrics = [], {"sft_seeds": _sft_seeds(params)}
    target = params.get("target_em")
    for task in params["tasks"]:
        prompts = heldout_prompts(task, int(params["n_eval"]), seed=ctx.seed + 7)
        val = (heldout_prompts(task, int(params["n_val"]), seed=ctx.seed + 17, exclude={tuple(p) for p in prompts})
               if target is not None else None)
        ems, losses, steps_used = [], [], []
        for s in _sft_seeds(params):
            model, log = train_sft(params["arch"], task, steps=int(params["steps"]), batch=int(params["batch"]),
                                   lr=float(params["lr"]), seed=sft_seed_value(ctx.seed, s),
                                   p_correct=float(params.get("p_correct", 0.7)), val_prompts=val,
                                   target_em=target, eval_every=int(params.get("eval_every", 5)))
            em = exact_match(task, prompts, greedy_responses(model, prompts, response_length(task, prompts[0])))
            ctx.log(f"SFT {task} seed {s}: {log.steps} steps ({log.stopped}), loss {log.losses[-1]:.4f}, "
                    f"held-out exact match {em:.3f}")
            steps_used.append(log.steps)
            if em >= float(params.get("max_em", 0.98)):
                raise RuntimeError(f"the SFT reference of task {task!r} (SFT seed {s}) is (nearly) perfect (exact "
                                   f"match {em:.3f}): no preference method can improve on it and "
                                   "'localised-credit' would be meaningless; use fewer SFT steps")
            with atomic_path(ctx.out_dir / f"model_{task}_sft{s}.pt") as tmp:
                torch.save(model.state_dict(), tmp)
            ctx.record(**{f"sft_wall_s_{task}_sft{s}": round(log.wall_s, 3)})
            rows += [{"method": "sft", "seed": s, "step": i + 1, "metric": "loss", "value": v, "task": task}
                     for i, v in enumerate(log.losses)]
            rows.append({"method": "sft", "seed": s, "step": log.steps, "metric": "exact_match", "value": em,
                         "task": task})
            ems.append(em), losses.append(log.losses[-1])
        metrics[task] = {"exact_match": float(np.mean(ems)), "max_steps": int(params["steps"]), "target_em": target,
                         "per_sft_seed": {"exact_match": ems, "final_loss": losses, "steps": steps_used}}
    return rows, metrics


def load_sft(params: dict, task: str, seed: int, sft_seed: int = 0):
    """The SFT reference of ``task`` and SFT seed ``sft_seed`` saved by the ``sft`` experiment (directory
    ``params['sft_dir']``)."""
    path = Path(params["sft_dir"]) / f"model_{task}_sft{int(sft_seed)}.pt"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run the 'sft' experiment of this scale first (with SFT seed "
                                f"{sft_seed} in its sft_seeds)")
    model = build_model(params["arch"], seed)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


# ----------------------------------------------------------------------------------------------- train
def build_pairs(params, task, n, *, seed, ref, sample_seed, exclude=None):
    """Training or evaluation pairs of ``task`` in the mode ``params['pairs']``.

    ``offline`` (default): ``n`` pairs of the gold answer against a synthetic perturbation
    (``make_preference_pairs``). ``on_policy``: ``n`` prompts (drawn like the offline prompts, from ``seed``),
    ``params['k_samples']`` responses per prompt sampled from ``ref`` at ``params['temperature']`` (default 1)
    with the torch seed ``sample_seed``, turned into pairs by ``tasks.on_policy_pairs`` (chosen = correct,
    rejected = the first incorrect sample; prompts without a correct sample are dropped, or get the gold answer
    as chosen when ``params['no_correct']`` is "gold"). Returns (pairs, prompts used, stats)."""
    mode = params.get("pairs", "offline")
    if mode == "offline":
        pairs = make_preference_pairs(task, n, seed=seed, exclude=exclude)
        return pairs, [p.prompt for p in pairs], {"pairs": len(pairs)}
    if mode != "on_policy":
        raise ValueError(f"pairs must be 'offline' or 'on_policy', got {mode!r}")
    rng, exclude, prompts = np.random.default_rng(seed), exclude or set(), []
    while len(prompts) < n:
        p = make_prompt(task, rng)
        if tuple(p) not in exclude:
            prompts.append(p)
    samples = sample_responses(ref, prompts, response_length(task, prompts[0]), k=int(params["k_samples"]),
                               seed=sample_seed, temperature=float(params.get("temperature", 1.0)))
    pairs, stats = on_policy_pairs(task, prompts, samples, no_correct=params.get("no_correct", "drop"))
    if not pairs:
        raise RuntimeError(f"no on-policy pair for task {task!r}: {stats} (a reference that never or always "
                           "answers correctly; try no_correct: gold, or more samples)")
    return pairs, prompts, stats


def _data(params, task, seed, ref, sft_seed):
    """Training pairs, held-out prompts and held-out pairs of one SFT reference (the sampling seeds of the
    on-policy pairs depend on the SFT seed; the prompts do not)."""
    sample = lambda name: sft_seed_value(seed, f"{name}-{sft_seed}")  # noqa: E731
    train_pairs, train_prompts, stats = build_pairs(params, task, int(params["n_pairs"]), seed=seed + 11, ref=ref,
                                                    sample_seed=sample("on-policy-train"))
    seen = {tuple(p) for p in train_prompts}
    prompts = heldout_prompts(task, int(params["n_eval"]), seed=seed + 7, exclude=seen)
    eval_pairs, _, eval_stats = build_pairs(params, task, int(params["n_eval_pairs"]), seed=seed + 13, ref=ref,
                                            sample_seed=sample("on-policy-eval"), exclude=seen)
    w_other = float(params.get("w_other", 0.1))
    return (encode_pairs(train_pairs, ref, w_other=w_other), prompts, encode_pairs(eval_pairs, ref, w_other=w_other),
            {"train": stats, "eval": eval_stats})


# --------------------------------------------------------------------------------- resumable train runs
_CACHED_LOG_KEYS = ("loss", "grad_share", "evals", "init_err", "wall_s", "jensen_violations", "jensen_checked")


def code_digest() -> str:
    """SHA-256 over the source of every module of this package (``papers/adpo/*.py``, sorted by name): a cached
    run is reused only by the code that computed it."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def sft_weights_digest(params: dict, task: str, sft_seed: int) -> str:
    """SHA-256 over the tensors (names, dtypes, shapes and bytes, sorted by name) of a saved SFT reference."""
    path = Path(params["sft_dir"]) / f"model_{task}_sft{int(sft_seed)}.pt"
    state = torch.load(path, map_location="cpu", weights_only=True)
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode() + t.numpy().tobytes())
    return h.hexdigest()


class RunCache:
    """One JSON file per finished unit of the ``train`` experiment under ``params['resume_dir']``, so that a run
    of several CPU-hours that is stopped (a session ends, a job is killed) continues where it stopped instead of
    from the start. A unit is one preference run (task, SFT seed, method, seed) or the reference evaluation and
    pair counts of one (task, SFT seed). Each file records a key: the SHA-256 of the experiment's parameters
    (without ``resume_dir``), the unit (with the digest of its SFT reference's weights, :func:`sft_weights_digest`)
    and :func:`code_digest`; a file whose key differs is recomputed and
    overwritten, never reused. Every run is seeded by its own seed (``train_preference``) and its data by the
    task and SFT seed, so a resumed run gives the same metrics as an uninterrupted one. Without ``resume_dir``
    (smoke, quick) nothing is cached."""

    def __init__(self, params: dict):
        root = params.get("resume_dir")
        self.root = Path(root) if root else None
        base = {k: v for k, v in params.items() if k != "resume_dir"}
        self._base = json.dumps(base, sort_keys=True, default=str) + code_digest() if self.root else ""
        self.reused = 0

    def _key(self, unit: dict) -> str:
        return hashlib.sha256((self._base + json.dumps(unit, sort_keys=True)).encode()).hexdigest()

    def _path(self, unit: dict) -> Path:
        return self.root / ("_".join(f"{v}" for k, v in unit.items() if k != "weights") + ".json")

    def _load(self, unit: dict):
        if self.root is None or not self._path(unit).is_file():
            return None
        doc = json.loads(self._path(unit).read_text(encoding="utf-8"))
        return doc["value"] if doc.get("key") == self._key(unit) else None

    def has(self, unit: dict) -> bool:
        """Whether ``unit`` is cached under the current key."""
        return self._load(unit) is not None

    def get(self, unit: dict):
        """The cached value of ``unit``, or None (no cache, no file, or a file with another key)."""
        value = self._load(unit)
        self.reused += value is not None
        return value

    def put(self, unit: dict, value) -> None:
        """Store ``value`` (JSON-serialisable) for ``unit``, atomically."""
        if self.root is not None:
            # key order kept: the rows of a reused run come out in the order of a computed one
            atomic_write_text(self._path(unit), json.dumps({"key": self._key(unit), "unit": unit, "value": value}))


def _cacheable_log(log: dict) -> dict:
    """The parts of a ``train_preference`` log that :func:`_train_task` reads (eval steps as strings in JSON)."""
    out = {k: log[k] for k in _CACHED_LOG_KEYS}
    out["evals"] = {str(step): ev for step, ev in log["evals"].items()}
    return out


def _restored_log(doc: dict) -> dict:
    return {**doc, "evals": {int(step): ev for step, ev in doc["evals"].items()}}


def _train_task(params, ctx, task, rows, timing):
    """Every method, SFT seed and preference seed of one task. Per method: final metrics per run and per SFT
    seed (mean over the preference seeds); the reference per SFT seed."""
    device = resolve_device(params.get("device", "cpu"))
    beta, steps = float(params["beta"]), int(params["steps"])
    eval_steps = sorted(set(int(s) for s in params["eval_steps"]) | {steps})
    methods, sft_seeds, seeds = params["methods"], _sft_seeds(params), [int(s) for s in params["seeds"]]
    runs = {name: {"exact_match": [], "pref_acc": [], "kl": [], "init_err": [], "share": [], "wall": []}
            for name in methods}
    references, pair_stats, jensen_v, jensen_n = [], {}, 0, 0
    cache = RunCache(params)
    for s in sft_seeds:
        # a unit is reused only from the same SFT reference weights (their digest is part of its key)
        weights = sft_weights_digest(params, task, s) if cache.root else None
        ref_unit = {"task": task, "sft_seed": s, "unit": "reference", "weights": weights}
        run_unit = lambda name, seed: {"task": task, "sft_seed": s, "method": name, "seed": seed,  # noqa: E731
                                       "weights": weights}
        if cache.has(ref_unit) and all(cache.has(run_unit(n, sd)) for n in methods for sd in seeds):
            cached_ref = cache.get(ref_unit)   # every run of this SFT seed is cached: no sampling, no model
            reference, stats, data = cached_ref["reference"], cached_ref["stats"], None
        else:
            ref = load_sft(params, task, ctx.seed, s).to(device)
            data, prompts, eval_data, stats = _data(params, task, ctx.seed, ref, s)
            resp_len = response_length(task, prompts[0])
            ref_greedy = greedy_responses(ref, prompts, resp_len)

            def eval_fn(model):
                return {"exact_match": exact_match(task, prompts, greedy_responses(model, prompts, resp_len)),
                        "pref_acc": preference_accuracy(model, eval_data),
                        "kl": kl_per_token(model, ref, prompts, ref_greedy)}

            reference = eval_fn(ref)   # step 0 of every run: evaluated once per SFT seed
            cache.put(ref_unit, {"reference": reference, "stats": stats})
        pair_stats[str(s)] = stats
        references.append(reference)
        ctx.log(f"{task} SFT seed {s}: reference EM {reference['exact_match']:.3f}, pairs {stats['train']}")
        for name, mdict in ctx.progress(methods.items(), total=len(methods), what=f"{task} sft{s}: methods"):
            spec = method_spec(mdict)
            for seed in seeds:
                cached = cache.get(run_unit(name, seed))
                if cached is not None:
                    log = _restored_log(cached)
                else:
                    _, log = train_preference(ref, spec, data, steps=steps, batch=int(params["batch"]),
                                              lr=float(params["lr"]), beta=beta, seed=seed,
                                              eval_steps=[e for e in eval_steps if e > 0], eval_fn=eval_fn,
                                              jensen=spec.loss == "adpo")
                    cache.put(run_unit(name, seed), _cacheable_log(log))
                log["evals"] = {**({0: reference} if 0 in eval_steps else {}), **log["evals"]}
                extra = {"task": task, "sft_seed": s}
                for i, (loss, share) in enumerate(zip(log["loss"], log["grad_share"])):
                    rows.append({"method": name, "seed": seed, "step": i + 1, "metric": "loss", "value": loss, **extra})
                    rows.append({"method": name, "seed": seed, "step": i + 1, "metric": "grad_share", "value": share,
                                 **extra})
                for step, ev in log["evals"].items():
                    for k, v in ev.items():
                        rows.append({"method": name, "seed": seed, "step": step, "metric": k, "value": v, **extra})
                r = runs[name]
                for k in ("exact_match", "pref_acc", "kl"):
                    r[k].append((s, log["evals"][steps][k]))
                r["init_err"].append(log["init_err"])
                r["share"].append(float(np.mean(log["grad_share"][-10:])))
                r["wall"].append(log["wall_s"])
                jensen_v += log["jensen_violations"]
                jensen_n += log["jensen_checked"]
                ctx.log(f"{task} {name} sft {s} seed {seed}: EM {r['exact_match'][-1][1]:.3f}, "
                        f"KL {r['kl'][-1][1]:.4f}, {steps / log['wall_s']:.1f} steps/s")
    out = {}
    for name, r in runs.items():
        out[name] = {}
        for k in ("exact_match", "pref_acc", "kl"):
            per_run = [v for _, v in r[k]]
            per_sft = [float(np.mean([v for s2, v in r[k] if s2 == s])) for s in sft_seeds]
            mean, se = mean_and_se(per_sft)
            out[name][k] = {"mean": mean, "se": se, "per_sft_seed": per_sft, "per_run": per_run}
        out[name]["init_err_max"] = max(r["init_err"])
        out[name]["final_grad_share"] = float(np.mean(r["share"]))
        timing[f"{task}.{name}"] = round(steps * len(r["wall"]) / sum(r["wall"]), 3)
    ref_out = {}
    for k in ("exact_match", "pref_acc", "kl"):
        per_sft = [ref[k] for ref in references]
        ref_out[k] = float(np.mean(per_sft))
        ref_out.setdefault("per_sft_seed", {})[k] = per_sft
    ref_out["exact_match_se"] = mean_and_se(ref_out["per_sft_seed"]["exact_match"])[1]
    if cache.reused:
        ctx.log(f"{task}: {cache.reused} unit(s) reused from {cache.root}")
    return {"reference": ref_out, "methods": out, "pairs": pair_stats, "jensen_violations": jensen_v,
            "jensen_pairs": jensen_n}


def _adaptive_best(methods: dict, spec_of: dict):
    """1 when the best adaptive m >= 2 beats the best static k (exact match, mean over seeds), 0 when not,
    None when either family is absent."""
    adaptive = [v["exact_match"]["mean"] for n, v in methods.items()
                if spec_of[n].loss == "adpo" and spec_of[n].granularity == "adaptive" and (spec_of[n].m or 1) >= 2
                and spec_of[n].contrastive is None and spec_of[n].reduction == "sum"]
    static = [v["exact_match"]["mean"] for n, v in methods.items()
              if spec_of[n].loss == "adpo" and spec_of[n].granularity in ("static", "token")
              and spec_of[n].contrastive is None and spec_of[n].reduction == "sum"]
    if not adaptive or not static:
        return None
    return int(max(adaptive) > max(static))


def train(params: dict, ctx: RunContext):
    """Every method of ``params['methods']`` from the SFT weights of every SFT seed of ``params['sft_seeds']``,
    for every task and preference seed of ``params['seeds']``; held-out exact match, preference accuracy and KL
    per token at ``eval_steps``; error-token gradient share at every step. The pairs are built per SFT seed
    (``params['pairs']``: "offline" or "on_policy", see :func:`build_pairs`).

    ``params['device']`` (default "cpu"; "auto" picks CUDA when available) is where the policy and the reference
    run; losses and metrics are computed on the CPU. ``params['resume_dir']`` (optional; full scale) keeps every
    finished run there (:class:`RunCache`), so that a stopped run resumes.
    Metrics per task: ``<task>.methods.<m>.{exact_match, pref_acc, kl}.{mean, se, per_sft_seed, per_run}`` (mean
    and se over SFT seeds of the per-SFT-seed means over preference seeds), ``<task>.methods.<m>.init_err_max``,
    ``<task>.methods.<m>.final_grad_share``, ``<task>.reference`` (mean and ``per_sft_seed``), ``<task>.pairs``
    (pair counts per SFT seed); ``claims.*``: localised credit (token ADPO - DPO exact match in points, one value
    per SFT seed, on the tasks of ``params['credit_tasks']``, worst task by mean), the best method's gain over
    the reference per SFT seed, the reference's min and max exact match over SFT seeds, the KL ratio, the
    initial-value error, Jensen violations, the adaptive-best count (full only).
    """
    seed_torch(ctx.seed)
    rows, timing, metrics = [], {}, {"steps": int(params["steps"]), "beta": float(params["beta"]),
                                     "lr": float(params["lr"]), "seeds": list(params["seeds"]),
                                     "sft_seeds": _sft_seeds(params), "pairs": params.get("pairs", "offline")}
    spec_of = {n: method_spec(d) for n, d in params["methods"].items()}
    for task in params["tasks"]:
        metrics[task] = _train_task(params, ctx, task, rows, timing)
    ctx.record(steps_per_s=timing)
    tasks = params["tasks"]
    claims = {"init_err_max": max(m["init_err_max"] for t in tasks for m in metrics[t]["methods"].values()),
              "jensen_violations": sum(metrics[t]["jensen_violations"] for t in tasks),
              "jensen_pairs_checked": sum(metrics[t]["jensen_pairs"] for t in tasks)}
    cmp = params.get("compare", {"adpo": "adpo_token", "dpo": "dpo"})
    credit, per_seed, kl_ratio, control, ref_lo, ref_hi, gain, best_name = [], [], [], [], [], [], [], []
    for task in params.get("credit_tasks", tasks[:1]):
        out = metrics[task]["methods"]
        em = {n: np.array(v["exact_match"]["per_sft_seed"]) for n, v in out.items()}
        diffs = 100 * (em[cmp["adpo"]] - em[cmp["dpo"]])   # paired by SFT seed (same reference, pairs, order)
        credit.append(float(diffs.mean())), per_seed.append([float(d) for d in diffs])
        kl_ratio.append(out[cmp["adpo"]]["kl"]["mean"] / out[cmp["dpo"]]["kl"]["mean"])
        if cmp.get("control") in out:   # ADPO with one unit (= DPO): the claim's metric must not hold for it
            control.append([float(d) for d in 100 * (em[cmp["control"]] - em[cmp["dpo"]])])
        reference = np.array(metrics[task]["reference"]["per_sft_seed"]["exact_match"])
        ref_lo.append(float(reference.min())), ref_hi.append(float(reference.max()))
        # can the testbed separate methods at all: the best method (by mean exact match over SFT seeds) minus
        # the reference, in points, one value per SFT seed
        top = max(out, key=lambda n: out[n]["exact_match"]["mean"])
        best_name.append(top)
        gain.append([float(g) for g in 100 * (em[top] - reference)])
    worst = int(np.argmin(credit))
    claims["localised_credit_points"] = credit[worst]
    claims["localised_credit_per_seed"] = per_seed[worst]
    claims["localised_credit_task"] = params.get("credit_tasks", tasks[:1])[worst]
    claims["reference_em_min"], claims["reference_em_max"] = min(ref_lo), max(ref_hi)
    worst_gain = int(np.argmin([np.mean(g) for g in gain]))
    claims["best_gain_per_sft_seed"] = gain[worst_gain]
    claims["best_gain_over_reference_points"] = float(np.mean(gain[worst_gain]))
    claims["best_method"] = best_name[worst_gain]
    claims["kl_ratio"] = max(kl_ratio)
    claims["control"] = {"one_unit": {"localised_credit_per_seed": control[worst] if control else None}}
    best = [_adaptive_best(metrics[t]["methods"], spec_of) for t in tasks]
    claims["adaptive_best_tasks"] = None if any(b is None for b in best) or len(tasks) < 3 else sum(best)
    metrics["claims"] = claims
    return rows, metrics


# ------------------------------------------------------------------------------------------------ perf
def perf(params: dict, ctx: RunContext):
    """TRL's DPOTrainer (sigmoid, float32) against our trainer (DPO, token ADPO, adaptive m = 4), same model,
    data, order, batch, AdamW, lr and beta, ``steps`` steps each, ``repeats`` times.

    Metrics (deterministic): ``trl_agree.max_rel_diff`` (per-step losses of the first repeat, our DPO vs TRL;
    null when TRL is not importable), ``trl_agree.step1_grad_rel_diff`` (first-batch gradients against an exact
    float64 DPO gradient: ours in float32, TRL in float32, TRL with its default bf16 autocast). Speed goes to
    ``timings.json`` (run-dependent): per-step CPU seconds, median over steps 2..n of each repeat; the ratio
    TRL / ours per repeat and its median and range over the repeats.
    """
    from shared.results import write_metrics

    seed_torch(ctx.seed)
    task = params.get("task", "sort")
    ref = load_sft(params, task, ctx.seed, _sft_seeds(params)[0])
    steps, batch, lr, beta = int(params["steps"]), int(params["batch"]), float(params["lr"]), float(params["beta"])
    repeats = int(params.get("repeats", 1))
    pairs = make_preference_pairs(task, steps * batch, seed=ctx.seed + 11)
    data = encode_pairs(pairs, ref)
    order = np.arange(steps * batch)
    step_median = lambda s: float(np.median(s[1:] if len(s) > 1 else s))  # noqa: E731  (step 1 warms up)
    per_step, losses, rows, trl_error = {}, {}, [], None
    try:
        from papers.adpo.perf import run_trl_dpo, step1_gradients
    except ImportError as exc:  # TRL is optional: the comparison is then recorded as not evaluated
        trl_error = f"TRL not importable: {exc}"
        ctx.log(trl_error)
    for r in ctx.progress(range(repeats), total=repeats, what="repeats"):
        for name, mdict in params["methods"].items():
            _, log = train_preference(ref, method_spec(mdict), data, steps=steps, batch=batch, lr=lr, beta=beta,
                                      seed=0, order=order)
            per_step.setdefault(name, []).append(step_median(log["step_cpu_s"]))
            losses.setdefault(name, np.asarray(log["loss"]))
        if trl_error is None:
            trl_losses, trl_steps = run_trl_dpo(ref, pairs, steps=steps, batch=batch, lr=lr, beta=beta,
                                                seed=ctx.seed)
            per_step.setdefault("trl_dpo", []).append(step_median(trl_steps))
            losses.setdefault("trl_dpo", trl_losses)
    for name, values in losses.items():
        rows += [{"method": name, "seed": 0, "step": i + 1, "metric": "loss", "value": float(v)}
                 for i, v in enumerate(values)]
    agree, grads = None, None
    if "trl_dpo" in losses and "dpo" in losses:
        n = min(len(losses["trl_dpo"]), len(losses["dpo"]))
        agree = float(np.max(np.abs(losses["dpo"][:n] - losses["trl_dpo"][:n]) / np.abs(losses["trl_dpo"][:n])))
        ctx.log(f"per-step loss agreement with TRL over {n} steps: max rel diff {agree:.2e}")
        grads = step1_gradients(ref, pairs[:batch], beta=beta)
        ctx.log(f"step-1 gradient vs float64: {grads}")
    ratios = {}
    if "trl_dpo" in per_step:
        r = [t / o for t, o in zip(per_step["trl_dpo"], per_step["dpo"])]
        ratios["ours_dpo_over_trl"] = {"per_repeat": r, "median": float(np.median(r)), "min": float(min(r)),
                                       "max": float(max(r))}
    for name in per_step:
        if name not in ("dpo", "trl_dpo"):
            r = [o / t for t, o in zip(per_step[name], per_step["dpo"])]
            ratios[f"{name}_over_dpo"] = {"per_repeat": r, "median": float(np.median(r)), "min": float(min(r)),
                                          "max": float(max(r))}
    steps_per_s = {k: 1.0 / float(np.median(v)) for k, v in per_step.items()}
    write_metrics({"steps_per_s": steps_per_s, "step_cpu_s_per_repeat": per_step, "ratios": ratios,
                   "repeats": repeats}, ctx.out_dir / "timings.json")
    ctx.record(steps_per_s=steps_per_s, ratios={k: v["median"] for k, v in ratios.items()}, trl_error=trl_error)
    return rows, {"steps": steps, "batch": batch, "repeats": repeats,
                  "trl_agree": {"max_rel_diff": agree, "step1_grad_rel_diff": grads, "error": trl_error},
                  "final_loss": {k: float(v[-1]) for k, v in losses.items()}}


# ------------------------------------------------------------------------------------------------- llm
def _llm_task(params, ctx, task, ref, policy_init, tokenizer, rows):
    """Every method and seed of the text arm on one task; final held-out exact match per seed."""
    from papers.adpo.llm import greedy_text_responses, text_exact_match, text_heldout, text_pair

    int_pairs = make_preference_pairs(task, int(params["n_pairs"]), seed=ctx.seed + 11)
    pairs = [text_pair(task, p, tokenizer) for p in int_pairs]
    seen = {tuple(p.prompt) for p in int_pairs}
    prompts, targets = text_heldout(task, int(params["n_eval"]), tokenizer, seed=ctx.seed + 7, exclude=seen)
    data = encode_pairs(pairs, ref, batch=int(params["batch"]))
    eos, length = int(tokenizer.eos_token_id), max(len(t) for t in targets) + 2
    steps = int(params["steps"])

    def eval_fn(model):
        em = text_exact_match(greedy_text_responses(model, prompts, length, eos=eos), targets)
        return {"exact_match": em, "pref_acc": preference_accuracy(model, data)}

    reference = eval_fn(ref)
    out = {}
    for name, mdict in params["methods"].items():
        spec, finals = method_spec(mdict), {"exact_match": [], "pref_acc": []}
        for seed in params["seeds"]:
            _, log = train_preference(policy_init, spec, data, steps=steps, batch=int(params["batch"]),
                                      lr=float(params["lr"]), beta=float(params["beta"]), seed=int(seed),
                                      eval_steps=[steps], eval_fn=eval_fn)
            rows += [{"task": task, "method": name, "seed": seed, "step": i + 1, "metric": "loss", "value": v}
                     for i, v in enumerate(log["loss"])]
            for k in finals:
                finals[k].append(log["evals"][steps][k])
                rows.append({"task": task, "method": name, "seed": seed, "step": steps, "metric": k,
                             "value": log["evals"][steps][k]})
            ctx.log(f"llm {task} {name} seed {seed}: EM {finals['exact_match'][-1]:.3f} "
                    f"(reference {reference['exact_match']:.3f}), init err {log['init_err']:.2e}")
        out[name] = {k: {"mean": mean_and_se(v)[0], "se": mean_and_se(v)[1], "per_seed": v}
                     for k, v in finals.items()}
        out[name]["init_err_max"] = log["init_err"]
    return {"reference": reference, "methods": out, "n_pairs": len(pairs), "n_eval": len(prompts)}


def llm(params: dict, ctx: RunContext):
    """SmolLM2-135M-Instruct + LoRA (r, alpha on q_proj and v_proj) on the text tasks: every method of
    ``params['methods']`` from the pretrained weights (the reference), several seeds; held-out exact match of
    greedy answers and preference accuracy after ``steps`` steps.

    ``params['run']`` false (smoke and quick, the spec's ``smollm2_quick`` flag off) loads nothing and writes
    null metrics. The claim metric is also null when, on some task, every method and the reference have exact
    match 0 (no ordering to judge).
    Metrics: ``<task>.methods.<m>.exact_match.{mean, se, per_seed}``, ``<task>.reference``,
    ``claims.llm_scale_min_diff_points`` (min over tasks of the token-ADPO minus DPO exact match, points).
    """
    if not params.get("run", False):
        ctx.log("SmolLM2 + LoRA arm not run at this scale (params.run is false)")
        rows = [{"method": "smollm2_lora", "seed": 0, "step": 0, "metric": "run", "value": 0.0}]
        return rows, {"run": False, "claims": llm_claim_metrics(None, [], {})}
    from shared.lm import load_smollm2
    from papers.adpo.llm import add_lora

    seed_torch(ctx.seed)
    device = resolve_device(params.get("device", "auto"))
    ref, tokenizer = load_smollm2()
    ref = ref.to(device).eval()
    lora = params.get("lora", {})
    policy_init = add_lora(ref, r=lora.get("r", 8), alpha=lora.get("alpha", 16),
                               targets=tuple(lora.get("targets", ("q_proj", "v_proj"))))
    ctx.record(device=str(device), lora=lora)
    rows, metrics = [], {"run": True, "steps": int(params["steps"]), "seeds": list(params["seeds"])}
    for task in params["tasks"]:
        metrics[task] = _llm_task(params, ctx, task, ref, policy_init, tokenizer, rows)
    metrics["claims"] = llm_claim_metrics(metrics, params["tasks"],
                                          params.get("compare", {"adpo": "adpo_token", "dpo": "dpo"}))
    return rows, metrics


def llm_claim_metrics(metrics: dict | None, tasks: list, compare: dict) -> dict:
    """The claim metrics of :func:`llm` from its per-task results (``None``: the arm did not run, all null).

    ``llm_scale_min_diff_points`` = min over tasks of 100 (EM(compare["adpo"]) - EM(compare["dpo"])), the same with
    ``compare["control"]`` in ADPO's place (``control.one_unit``: the one-unit ADPO arm, equal to DPO, so its
    difference must not pass a positive threshold), and ``reference_em_min`` / ``reference_em_max`` over tasks
    (the claim's preconditions: a reference that can do the task). A task on which no method and not the
    reference answers any held-out prompt exactly says nothing about the ordering: the claim metrics are then
    null rather than a passed 0 >= 0."""
    if metrics is None:
        return {"llm_scale_min_diff_points": None, "reference_em_min": None, "reference_em_max": None,
                "control": {"one_unit": {"llm_scale_min_diff_points": None}}}

    def em(task, name):
        return metrics[task]["methods"][name]["exact_match"]["mean"]

    informative = all(max([metrics[t]["reference"]["exact_match"]]
                          + [m["exact_match"]["mean"] for m in metrics[t]["methods"].values()]) > 0
                      for t in tasks)
    diffs = [100 * (em(t, compare["adpo"]) - em(t, compare["dpo"])) for t in tasks]
    ctl = ([100 * (em(t, compare["control"]) - em(t, compare["dpo"])) for t in tasks]
           if compare.get("control") else None)
    refs = [metrics[t]["reference"]["exact_match"] for t in tasks]
    return {"llm_scale_min_diff_points": min(diffs) if informative else None,
            "diff_points_by_task": dict(zip(tasks, diffs)), "informative": informative,
            "reference_em_min": min(refs), "reference_em_max": max(refs),
            "control": {"one_unit": {"llm_scale_min_diff_points": min(ctl) if ctl and informative else None}}}


EXPERIMENTS = {"identities": identities, "sft": sft, "train": train, "perf": perf, "llm": llm}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
