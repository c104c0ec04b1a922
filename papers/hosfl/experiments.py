"""Experiments of the hosfl reproduction (spec "Experiments by scale").

``python -m papers.hosfl.experiments NAME --config papers/hosfl/config.yaml --scale quick --out DIR`` with NAME
one of ``estimator`` (H1, H2); the training runs ``iid``, ``dirichlet``, ``pca`` (H3, H4, H5, H8), ``adamw``
(the AdamW variant), ``synthetic`` (the make_classification benchmark) and ``straggler_rate`` (30% of the
clients absent each round, with replay); ``straggler`` (H6), ``memory`` (H7), ``performance``, ``p_sweep``
(P), ``width_sweep`` (cut_dim, hidden_dim), ``memory_measured``, ``pretrained`` (a pretrained CNN client) and
``minilm_split`` (a pretrained MiniLM text client: accuracy, bytes and measured client memory). Curves for the
figures are written next to the metrics as ``curves.npz``.
"""
from __future__ import annotations

import itertools
import time

import numpy as np
import torch
from scipy.special import gammaln

from shared import seeding
from shared.experiment import RunContext, main
from shared.fed import draw_batch
from shared.oracles.zeroth_order import estimate_from_directional, perturbation_directions
from shared.provenance import hardware
from shared.results import mean_and_se, write_arrays

from papers.hosfl import hybrid as H
from papers.hosfl.data import load_dataset
from papers.hosfl.memory_probe import STEP_METHODS, client_step, deep_client, peak_cuda_growth, peak_rss_growth
from papers.hosfl.minilm_split import (measure_memory_in_fresh_process, memory_summary, minilm_task_and_split,
                                      run_text_split)
from papers.hosfl.model import SplitMLP
from papers.hosfl.pretrained import pretrained_client, run_pretrained_split
from papers.hosfl.training import CATEGORIES, DEFAULT_CLIENT_LR, Setup, make_stepper, run_split_training

__all__ = ["EXPERIMENTS", "estimator", "training", "straggler", "memory", "performance", "p_sweep",
           "width_sweep", "memory_measured", "pretrained", "minilm_split", "saved_bytes", "finite_p_alignment_factor",
           "select_lr", "tune_client_lrs"]


def _torch_setup():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


def finite_p_alignment_factor(P: int) -> float:
    """E||U g|| / (sqrt(P) ||g||) for U with P i.i.d. N(0, I) rows: E[chi_P] / sqrt(P) =
    sqrt(2) Gamma((P+1)/2) / (Gamma(P/2) sqrt(P)). For d_c >> P, cos(ghat, g) is this factor times
    sqrt(P/(d_c + P + 1)) (0.798 at P = 1, 0.952 at P = 5, 0.988 at P = 20)."""
    P = int(P)
    if P < 1:
        raise ValueError(f"P must be >= 1, got {P}")
    return float(np.sqrt(2.0) * np.exp(gammaln((P + 1) / 2) - gammaln(P / 2)) / np.sqrt(P))


def _points(a, b):
    """100 (a - b) in accuracy points. Test accuracies are multiples of 1 / (evaluations x test images), so a
    difference can be exactly a threshold in exact arithmetic; the claims engine reads a value within rounding of
    a threshold as a tie with it (``shared.claims.stats.snap_to_threshold``)."""
    return 100 * (float(a) - float(b))


def _censored(r, rounds, eval_every):
    """rounds_to_90 with "never" counted as one evaluation past the horizon (a lower bound)."""
    return int(rounds + eval_every) if r is None else int(r)


# ------------------------------------------------------------------------------------------- H1 / H2
def _tiny_model(activation="identity", seed=0):
    return SplitMLP(5, 4, 8, 3, client_activation=activation, dtype="float64", seed=seed)


def _true_client_gradient(model, x, lam):
    th = torch.from_numpy(model.client_vector()).requires_grad_(True)
    xt = torch.as_tensor(x, dtype=torch.float64)
    (g,) = torch.autograd.grad(torch.sum(torch.as_tensor(lam) * H.client_apply(model, xt, th)), [th])
    return g.numpy()


def estimator(params: dict, ctx: RunContext):
    """H1: ghat from the HO-SFL pipeline equals (1/P) sum_p (u_p . g) u_p for an identity (linear) client, for
    every mu; the O(mu) gap of a tanh client for comparison. H2: E||ghat - g||^2 / ||g||^2 against
    (d_c + 1)/P over ``draws`` draws per P (float64)."""
    _torch_setup()
    rng = ctx.generator("estimator")
    B, P = int(params["batch"]), int(params["P"])
    model = _tiny_model("identity")
    x = rng.standard_normal((B, 5))
    y = rng.integers(0, 3, B)
    _, z, lam = H.cut_layer_multiplier(model, x, y)
    g = _true_client_gradient(model, x, lam)
    h1 = {}
    for mu in params["mus"]:
        for trial in range(int(params.get("trials", 3))):
            seeds = [int(s) for s in rng.choice(H.SEED_BOUND, size=P, replace=False)]
            v = H.client_directional_scalars(model, x, lam, seeds, mu, z=z)
            ghat = H.client_gradient_estimate(v, seeds, mu, model.client_dim)
            U = perturbation_directions(seeds, model.client_dim)
            ref = estimate_from_directional(U @ g, U)
            err = float(np.linalg.norm(ghat - ref) / np.linalg.norm(ref))
            h1[f"mu={mu:g}"] = max(err, h1.get(f"mu={mu:g}", 0.0))
    nl = _tiny_model("tanh")
    _, znl, lamnl = H.cut_layer_multiplier(nl, x, y)
    gnl = _true_client_gradient(nl, x, lamnl)
    seeds = [int(s) for s in rng.choice(H.SEED_BOUND, size=P, replace=False)]
    U = perturbation_directions(seeds, nl.client_dim)
    tanh_gap = {}
    for mu in params["mus"]:
        v = H.client_directional_scalars(nl, x, lamnl, seeds, mu, z=znl)
        tanh_gap[f"mu={mu:g}"] = float(np.max(np.abs(v / mu - U @ gnl)) / np.max(np.abs(U @ gnl)))
    # H2: the estimator's relative squared error; directions drawn from one stream (same law as seed-rebuilt)
    d = model.client_dim
    gn = float(g @ g)
    draws = int(params["draws"])
    rel, rel_se = {}, {}
    for Pk in params["P_list"]:
        U = rng.standard_normal((draws, int(Pk), d))
        ghat = np.einsum("np,npd->nd", U @ g, U) / Pk
        e = np.sum((ghat - g) ** 2, axis=1) / gn
        rel[str(Pk)], rel_se[str(Pk)] = mean_and_se(e)
    theory = {str(Pk): (d + 1) / Pk for Pk in params["P_list"]}
    metrics = {
        "d_c": d, "P": P,
        "h1": {"rel_error": h1, "max_rel_error": max(h1.values()), "tanh_rel_gap": tanh_gap},
        "h2": {"rel_sq_error": rel, "rel_sq_error_se": rel_se, "theory": theory, "draws": draws,
               "ratio_to_theory_P5": rel["5"] / theory["5"], "ratio_P1_P5": rel["1"] / rel["5"]},
    }
    rows = [{"method": "hosfl", "seed": 0, "step": int(Pk), "metric": "rel_sq_error", "value": rel[str(Pk)]}
            for Pk in params["P_list"]]
    return rows, metrics


# ------------------------------------------------------------------------------------------- lr grids
def select_lr(grid, run, seeds, *, score, mode, skip_diverged=True, log=None, what="lr grid"):
    """The lr-grid rule of every experiment with an ``lr_grid``: call ``run(lr, seed)`` for every lr of ``grid``
    and every seed of ``seeds`` (only those seeds: the caller passes tuning seeds, never its evaluation seeds)
    and keep the lr whose mean ``score(out)`` over ``seeds`` is best (``mode`` "min" or "max"; on a tie the
    first in grid order). With ``skip_diverged`` an lr under which a run raises ``FloatingPointError``
    (non-finite parameters or loss) is dropped and listed; without it the error propagates.

    Returns {"lr", "score" (str(lr) -> mean score), "per_seed" (str(lr) -> scores in seed order),
    "diverged" (lrs dropped), "outputs" (the chosen lr's outputs in seed order)}."""
    if mode not in ("min", "max"):
        raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
    grid, seeds = list(grid), list(seeds)
    if not grid or not seeds:
        raise ValueError(f"{what}: grid and seeds must be non-empty, got {grid!r} and {seeds!r}")
    best, scores, per_seed, diverged = None, {}, {}, []
    for lr in grid:
        outs = []
        try:
            for seed in seeds:
                outs.append(run(lr, seed))
        except FloatingPointError as exc:
            if not skip_diverged:
                raise
            if log is not None:
                log(f"lr {lr}: diverged ({exc})")
            diverged.append(lr)
            continue
        vals = [float(score(o)) for o in outs]
        key = str(lr)
        scores[key], per_seed[key] = float(np.mean(vals)), vals
        better = best is None or (scores[key] < best[1] if mode == "min" else scores[key] > best[1])
        if better:
            best = (lr, scores[key], outs)
    if best is None:
        raise FloatingPointError(f"{what}: every lr of {grid} diverged")
    return {"lr": best[0], "score": scores, "per_seed": per_seed, "diverged": diverged, "outputs": best[2]}


def tune_client_lrs(runs: dict, *, tuning_seeds, seeds, holdout, train, log):
    """Learning rates of ``runs`` (name -> method options) chosen on tuning seeds, by one rule for every method.

    A run with an ``lr_grid`` (client lrs) and/or a ``server_lr_grid`` has them replaced by the ``client_lr`` and
    ``server_lr`` that :func:`select_lr` keeps among the grids' product (client lr outer, server lr inner): every
    candidate runs as ``train(method, seed=tuning seed, holdout=holdout, client_lr=.., server_lr=.., **other
    options)`` on every seed of ``tuning_seeds`` (disjoint from the evaluation ``seeds``), which trains on the
    training rows less the ``holdout`` fraction and returns a dict whose "final_acc" is the accuracy on the
    held-out rows; the candidate with the best mean is kept (ties: first in grid order). Runs without a grid keep
    their options. Returns (options per run, tuning record per tuned run); with a client grid alone the record's
    per-candidate keys are the lrs (``str(lr)``), with a server grid they read "client_lr=..,server_lr=..".
    """
    tuning_seeds, seeds = [int(s) for s in tuning_seeds], [int(s) for s in seeds]
    if set(tuning_seeds) & set(seeds):
        raise ValueError(f"tuning_seeds {tuning_seeds} must be disjoint from the evaluation seeds {seeds}")
    run_opts, tuning = {}, {}
    for name, opts in runs.items():   # tuning on the tuning seeds (validation rows, never the test set)
        opts = dict(opts)
        grids = {option: [float(v) for v in opts.pop(key)]
                 for key, option in (("lr_grid", "client_lr"), ("server_lr_grid", "server_lr")) if key in opts}
        if grids:
            if not tuning_seeds:
                raise ValueError(f"run {name!r} has an lr grid but params give no tuning_seeds")
            chosen, record = _tune_one_run(name, opts, grids, tuning_seeds=tuning_seeds, holdout=holdout,
                                           train=train, log=log)
            opts.update(chosen)
            tuning[name] = record
        run_opts[name] = opts
    return run_opts, tuning


def _tune_one_run(name, opts, grids, *, tuning_seeds, holdout, train, log):
    """(chosen options, tuning record) of one run of :func:`tune_client_lrs`; ``grids`` maps "client_lr" and/or
    "server_lr" to its grid."""
    keys = list(grids)
    candidates = [dict(zip(keys, values)) for values in itertools.product(*grids.values())]
    # a candidate's name: the lr itself for a client grid alone (the records of earlier runs), else "k=v,k=v"
    by_label = {(str(c["client_lr"]) if keys == ["client_lr"] else ",".join(f"{k}={c[k]!r}" for k in keys)): c
                for c in candidates}
    labels = list(by_label)

    def run_one(label, seed):
        t0 = time.process_time()
        kw = {k: v for k, v in opts.items() if k != "method"}
        out = train(opts["method"], seed=seed, holdout=holdout, **{**kw, **by_label[label]})
        log(f"tuning {name} {label} seed {seed}: validation final_acc {out['final_acc']:.4f} "
            f"({time.process_time() - t0:.1f} s cpu)")
        return {"final_acc": out["final_acc"]}

    sel = select_lr(labels, run_one, tuning_seeds, score=lambda out: out["final_acc"], mode="max",
                    log=lambda msg: log(f"tuning {name} {msg}"), what=f"run {name!r}")
    chosen = by_label[sel["lr"]]
    record = {"tuning_seeds": tuning_seeds, "validation_fraction": float(holdout),
              "score": "mean final validation accuracy", "tuning_final_acc": sel["score"],
              "tuning_final_acc_per_seed": sel["per_seed"], "lr_diverged": sel["diverged"]}
    if "client_lr" in grids:
        record.update(lr_grid=grids["client_lr"], client_lr=chosen["client_lr"])
    if "server_lr" in grids:
        record.update(server_lr_grid=grids["server_lr"], server_lr=chosen["server_lr"])
    log(f"{name}: " + ", ".join(f"{k} {v:g}" for k, v in chosen.items()) + " chosen from "
        + " x ".join(f"{k} {grids[k]}" for k in keys) + f" (validation final_acc {sel['score']})")
    return chosen, record


# ------------------------------------------------------------------------------------------- training runs
def training(params: dict, ctx: RunContext):
    """The training runs of one (partition, init) panel. ``runs`` maps a run name to its method options; a
    run with ``lr_grid`` is repeated for every lr and the one with the lowest mean training loss over the
    last 10% of rounds is kept (never the test set). Metrics per run and seed: final_acc, rounds_to_90,
    bytes per client per round by category, and for hosfl the mean alignment cos(ghat, g). ``paired`` holds
    per-seed lists over the seeds two runs share: accuracy differences in points and ratios of the censored
    rounds to 90%."""
    _torch_setup()
    common = dict(params.get("common", {}))
    seeds = [int(s) for s in params.get("seeds", [0])]
    runs = params["runs"]
    rounds, eval_every = int(common["rounds"]), int(common.get("eval_every", 10))
    metrics = {"runs": {}, "common": {k: v for k, v in common.items() if not isinstance(v, dict)}}
    rows, arrays, diverged = [], {}, {}
    per_run_seeds, per_run_r90 = {}, {}
    for name, opts in ctx.progress(runs.items(), total=len(runs), what="runs"):
        opts = dict(opts)
        grid = opts.pop("lr_grid", None)
        run_seeds = [int(s) for s in opts.pop("seeds", seeds)]
        per_seed = []
        k_tail = max(1, int(np.ceil(0.1 * rounds)))
        for seed in run_seeds:
            root = int(seeding.generator(ctx.seed, "run", str(seed)).integers(2 ** 31))

            def one_run(lr, _seed, _root=root):
                t0 = time.process_time()
                out = run_split_training(**{**common, **opts, "client_lr": lr, "seed": _root})
                ctx.log(f"{name} seed {_seed} lr {lr}: final_acc {out['final_acc']:.4f} "
                        f"({time.process_time() - t0:.1f} s cpu)")
                return out

            # the lr grid here is chosen per seed on that seed's own training loss (never the test set)
            sel = select_lr(grid or [opts.get("client_lr")], one_run, [seed],
                            score=lambda out: float(np.mean(out["train_loss"][-k_tail:])), mode="min",
                            skip_diverged=bool(grid), log=lambda msg: ctx.log(f"{name} seed {seed} {msg}"),
                            what=f"run {name!r}")
            diverged.setdefault(name, []).extend(sel["diverged"])
            per_seed.append((seed, sel["lr"], sel["outputs"][0], sel["score"] if grid else None))
        m = {}
        accs = [o["final_acc"] for _, _, o, _ in per_seed]
        m["final_acc"], m["final_acc_se"] = mean_and_se(accs)
        m["seeds"] = list(run_seeds)
        m["final_acc_per_seed"] = [float(a) for a in accs]
        per_run_seeds[name] = dict(zip(run_seeds, accs))
        r90 = [o["rounds_to_90"] for _, _, o, _ in per_seed]
        r90_censored = [_censored(r, rounds, eval_every) for r in r90]
        m["rounds_to_90"] = None if any(r is None for r in r90) else float(np.mean(r90))
        m["rounds_to_90_censored"] = float(np.mean(r90_censored))
        m["rounds_to_90_censored_per_seed"] = r90_censored
        per_run_r90[name] = dict(zip(run_seeds, r90_censored))
        seed0, lr0, out0, grid_losses = per_seed[0]
        method = out0["method"]
        m["method"] = method
        m["client_lr"] = float(DEFAULT_CLIENT_LR[method] if lr0 is None else lr0)
        if grid:
            m["lr_grid"] = [float(v) for v in grid]
            m["lr_diverged"] = sorted(set(diverged.get(name, [])))
            m["grid_tail_loss"] = grid_losses
        K = out0["n_clients"]
        m["bytes_per_client_round"] = {c: float(out0["bytes"][c].sum()) / (rounds * K) for c in CATEGORIES}
        m["client_dim"] = int(out0["client_dim"])
        if "client_rounds_missed" in out0:
            m["client_rounds_missed"] = int(out0["client_rounds_missed"])
        if "replay_error" in out0:
            m["replay_error"] = max(float(o["replay_error"]) for _, _, o, _ in per_seed)
            m["n_rejoins"] = int(out0["n_rejoins"])
            m["rounds_replayed"] = int(out0["rounds_replayed"])
            P = int(common.get("n_perturbations", opts.get("n_perturbations", 5)))
            m["catchup_bytes_per_replayed_round"] = out0["catchup_bytes"] / max(1, out0["rounds_replayed"])
            m["catchup_over_8P"] = m["catchup_bytes_per_replayed_round"] / (8 * P)
            m["model_download_bytes"] = 4 * int(out0["client_dim"])
        if method == "hosfl" and len(out0["alignment"]):
            al = [float(np.mean(o["alignment"])) for _, _, o, _ in per_seed]
            m["alignment_mean"] = float(np.mean(al))
            P = int(common.get("n_perturbations", opts.get("n_perturbations", 5)))
            m["alignment_theory"] = float(np.sqrt(P / (out0["client_dim"] + P + 1)))
            m["alignment_ratio"] = m["alignment_mean"] / m["alignment_theory"]
            m["alignment_finite_p_factor"] = finite_p_alignment_factor(P)
        metrics["runs"][name] = m
        for seed, _, o, _ in per_seed:
            for r, a in zip(o["round"], o["test_accuracy"]):
                rows.append({"method": name, "seed": seed, "step": int(r), "metric": "test_accuracy", "value": float(a)})
            arrays[f"{name}__s{seed}__round"] = o["round"]
            arrays[f"{name}__s{seed}__acc"] = o["test_accuracy"]
            arrays[f"{name}__s{seed}__loss"] = o["train_loss"]
            if method == "hosfl" and len(o["alignment"]):
                arrays[f"{name}__s{seed}__alignment"] = o["alignment"]
    metrics["batch_size"] = int(common.get("batch_size", 32))
    metrics["n_clients"] = int(common.get("n_clients", 10))
    _comparisons(metrics)
    metrics["paired"] = {**_paired_differences(per_run_seeds), **_paired_r90_ratios(per_run_r90)}
    write_arrays(ctx.out_dir / "curves.npz", **arrays)
    return rows, metrics


PAIRED_BASES = ("sfl_fo_tau1", "sfl_fo_tau10", "frozen", "hosfl", "sfl_zo")


def _paired_differences(per_run_seeds):
    """Per-seed differences in accuracy points, ``<run>_minus_<base>_points``: a list over the seeds both runs
    share (same partition, batches and init per seed), for every run against each base in ``PAIRED_BASES``."""
    out = {}
    for name, accs in per_run_seeds.items():
        for base in PAIRED_BASES:
            if base == name or base not in per_run_seeds:
                continue
            common = [s for s in accs if s in per_run_seeds[base]]
            out[f"{name}_minus_{base}_points"] = [100 * (accs[s] - per_run_seeds[base][s]) for s in common]
    return out


R90_BASES = ("sfl_fo_tau1", "hosfl")


def _paired_r90_ratios(per_run_r90):
    """Per-seed ratios of the censored rounds to 90% test accuracy, ``r90_ratio_<run>_<base>``: for every run
    against each base in ``R90_BASES``, the list over the seeds both ran of r90(run, s) / r90(base, s). A run that
    never reaches 90% counts as one evaluation past the horizon (``_censored``), so its ratios are bounds."""
    out = {}
    for name, r90 in per_run_r90.items():
        for base in R90_BASES:
            if base == name or base not in per_run_r90:
                continue
            shared = [s for s in r90 if s in per_run_r90[base]]
            out[f"r90_ratio_{name}_{base}"] = [r90[s] / per_run_r90[base][s] for s in shared]
    return out


def _comparisons(metrics):
    """Derived numbers the claims compare (differences in accuracy points, ratios of rounds)."""
    r = metrics["runs"]
    c = {}
    if "hosfl" in r:
        for base in ("sfl_fo_tau1", "sfl_fo_tau10", "frozen"):
            if base in r:
                c[f"hosfl_minus_{base}_points"] = 100 * (r["hosfl"]["final_acc"] - r[base]["final_acc"])
        if "sfl_fo_tau1" in r:
            c["r90_ratio_hosfl_sfl_fo"] = r["hosfl"]["rounds_to_90_censored"] / r["sfl_fo_tau1"]["rounds_to_90_censored"]
            b_h, b_f = r["hosfl"]["bytes_per_client_round"], r["sfl_fo_tau1"]["bytes_per_client_round"]
            c["weights_up_ratio_sfl_hosfl"] = b_f["weights.up"] / b_h["weights.up"]
            c["cut_bytes_equal"] = all(b_f[k] == b_h[k] for k in b_f if k.startswith("cut."))
            c["hosfl_weights_up_bytes"] = b_h["weights.up"]
            c["sfl_fo_weights_up_bytes"] = b_f["weights.up"]
            P = int(metrics["common"].get("n_perturbations", 5))
            c["hosfl_weights_up_over_4P"] = b_h["weights.up"] / (4 * P)
            c["sfl_fo_weights_up_over_4dc"] = b_f["weights.up"] / (4 * r["hosfl"]["client_dim"])
            c["d_c_over_P"] = r["hosfl"]["client_dim"] / P
        for zo in ("sfl_zo", "mu_splitfed"):
            if zo in r:
                c[f"hosfl_minus_{zo}_points"] = 100 * (r["hosfl"]["final_acc"] - r[zo]["final_acc"])
                c[f"r90_ratio_{zo}_hosfl"] = r[zo]["rounds_to_90_censored"] / r["hosfl"]["rounds_to_90_censored"]
                c[f"{zo}_never_90"] = r[zo]["rounds_to_90"] is None
    for name in r:   # every run against the bases (means over each run's seeds)
        for base in PAIRED_BASES:
            if base != name and base in r:
                c.setdefault(f"{name}_minus_{base}_points", 100 * (r[name]["final_acc"] - r[base]["final_acc"]))
    if "sfl_fo_tau1" in r:   # rounds to 90% against first-order SFL (controls of the speed claims)
        for name in ("hosfl", "sfl_zo", "mu_splitfed"):
            if name in r:
                c[f"r90_ratio_{name}_sfl_fo"] = (r[name]["rounds_to_90_censored"]
                                                 / r["sfl_fo_tau1"]["rounds_to_90_censored"])
        if "hosfl" in r:
            c["r90_ratio_sfl_fo_tau1_hosfl"] = (r["sfl_fo_tau1"]["rounds_to_90_censored"]
                                                / r["hosfl"]["rounds_to_90_censored"])
    for name, m in r.items():   # straggler-rate runs (replay, or the no-catch-up control) against full participation
        if name != "hosfl" and "hosfl" in r and ("replay_error" in m or m.get("method") == "hosfl_no_catchup"):
            c[f"{name}_minus_hosfl_points"] = 100 * (m["final_acc"] - r["hosfl"]["final_acc"])
            c[f"{name}_r90_ratio"] = m["rounds_to_90_censored"] / r["hosfl"]["rounds_to_90_censored"]
    metrics["compare"] = c


# ------------------------------------------------------------------------------------------- H6
def straggler(params: dict, ctx: RunContext):
    """H6: HO-SFL with one client absent for a span of rounds; on return it replays the logged
    (seeds, vbar, mu) and the gap to the live client vector is recorded, for each momentum in ``momenta``."""
    _torch_setup()
    root = int(seeding.generator(ctx.seed, "straggler").integers(2 ** 31))
    metrics, rows = {"replay_error": {}}, []
    spans = {int(k): tuple(v) for k, v in params["stragglers"].items()}
    for mom in params["momenta"]:
        out = run_split_training("hosfl", rounds=int(params["rounds"]), n_clients=int(params["n_clients"]),
                                 batch_size=int(params["batch_size"]), momentum=float(mom), stragglers=spans,
                                 eval_every=int(params["rounds"]), seed=root)
        metrics["replay_error"][f"momentum={mom:g}"] = out["replay_error"]
        rows.append({"method": "hosfl", "seed": 0, "step": int(params["rounds"]), "metric": f"replay_error_m{mom:g}",
                     "value": out["replay_error"]})
    metrics["max_replay_error"] = max(metrics["replay_error"].values())
    metrics["spans"] = {str(k): list(v) for k, v in spans.items()}
    return rows, metrics


# ------------------------------------------------------------------------------------------- H7
def saved_bytes(fn) -> int:
    """Bytes of the tensors autograd saves for backward while ``fn()`` runs
    (``torch.autograd.graph.saved_tensors_hooks``)."""
    total = [0]

    def pack(t):
        total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return int(total[0])


def memory(params: dict, ctx: RunContext):
    """H7: saved-for-backward bytes of one client step per method (client side only)."""
    _torch_setup()
    B, P, mu = int(params["batch_size"]), int(params["P"]), 1e-3
    rng = ctx.generator("memory")
    model = SplitMLP(seed=0)
    x = torch.as_tensor(rng.random((B, 64)), dtype=torch.float32)
    y = torch.as_tensor(rng.integers(0, 10, B))
    theta = torch.from_numpy(model.client_vector())
    _, z, lam = H.cut_layer_multiplier(model, x, y)
    lam_t = torch.from_numpy(lam)
    seeds = [int(s) for s in rng.choice(H.SEED_BOUND, size=P, replace=False)]

    def hosfl():
        with torch.no_grad():
            zz = H.client_apply(model, x, theta)
        H._scalars_from_directions(model, x, lam_t, zz,
                                   theta, torch.from_numpy(perturbation_directions(seeds, theta.numel())).float(), mu)

    def sfl_fo():
        th = theta.clone().requires_grad_(True)
        zz = H.client_apply(model, x, th)
        torch.autograd.grad(zz, [th], grad_outputs=lam_t)

    def zo_client():  # sfl_zo / mu_splitfed clients: perturbed forwards only
        with torch.no_grad():
            u = torch.from_numpy(perturbation_directions(seeds[:1], theta.numel())).float()[0]
            H.client_apply(model, x, theta + mu * u), H.client_apply(model, x, theta - mu * u)

    res = {"hosfl": saved_bytes(hosfl), "sfl_fo": saved_bytes(sfl_fo), "sfl_zo": saved_bytes(zo_client),
           "mu_splitfed": saved_bytes(zo_client), "frozen": 0}
    metrics = {"saved_bytes": res, "batch_size": B, "cut_dim": model.cut_dim,
               "activation_bytes": 4 * B * model.cut_dim,
               "sfl_fo_over_activation": res["sfl_fo"] / (4 * B * model.cut_dim)}
    rows = [{"method": k, "seed": 0, "step": 0, "metric": "saved_bytes", "value": v} for k, v in res.items()]
    return rows, metrics


def memory_measured(params: dict, ctx: RunContext):
    """Official claim 3, measured: the peak memory of one client step of HO-SFL (forward passes only, under
    no_grad), first-order SFL (forward with autograd and backward) and the control HO-SFL step with gradients
    enabled, plus a no-grad forward (inference only), on a deep client (``depth`` blocks Linear ->
    LayerNorm -> GELU of ``width``) and a batch of ``batch_size`` Digits images. On the CPU each step runs
    in its own forked child and the growth of its peak RSS is recorded (:func:`peak_rss_growth`); on a
    CUDA ``device`` the growth of ``torch.cuda.max_memory_allocated``. ``repeats`` rounds of all methods."""
    _torch_setup()
    B, width, depth = int(params["batch_size"]), int(params["width"]), int(params["depth"])
    P, repeats = int(params["P"]), int(params["repeats"])
    device = str(params.get("device", "cpu"))
    if device != "cpu" and not (device.startswith("cuda") and torch.cuda.is_available()):
        raise ValueError(f"device must be 'cpu' or an available CUDA device, got {device!r}")
    rng = ctx.generator("memory_measured")
    client = deep_client(64, width, depth, seed=int(rng.integers(2 ** 31))).to(device)
    x_train = load_dataset("digits")[0]
    x = torch.from_numpy(x_train[rng.integers(0, x_train.shape[0], B)]).float().to(device)
    lam = torch.from_numpy(rng.standard_normal((B, width)) / B).float().to(device)   # a multiplier's shape
    seeds = [int(s) for s in rng.choice(H.SEED_BOUND, size=P, replace=False)]
    peaks = {m: [] for m in STEP_METHODS}
    for _ in range(repeats):   # plain loop: no progress thread is alive when the probe forks
        for m in STEP_METHODS:
            def fn(m=m):
                client_step(m, client, x, lam, seeds=seeds)
            peaks[m].append(peak_rss_growth(fn) if device == "cpu" else peak_cuda_growth(fn, device))
    mb = {m: [v / 2 ** 20 for v in vals] for m, vals in peaks.items()}
    ratio = {f"{m}_over_sfl_fo": [a / b for a, b in zip(peaks[m], peaks["sfl_fo"])]
             for m in STEP_METHODS if m != "sfl_fo"}
    ctx.log("peak growth (MiB, mean): " + ", ".join(f"{m} {np.mean(v):.1f}" for m, v in mb.items()))
    metrics = {"measurement": "peak RSS growth of a forked child per step" if device == "cpu"
               else "torch.cuda.max_memory_allocated growth", "device": device,
               "d_c": int(sum(p.numel() for p in client.parameters())), "batch_size": B, "width": width,
               "depth": depth, "P": P, "repeats": repeats, "activation_mib": B * width * 4 / 2 ** 20,
               "peak_mib": mb, "peak_mib_mean": {m: float(np.mean(v)) for m, v in mb.items()},
               "ratio": ratio, "ratio_mean": {k: float(np.mean(v)) for k, v in ratio.items()}}
    rows = [{"method": m, "seed": r, "step": 0, "metric": "peak_mib", "value": v}
            for m, vals in mb.items() for r, v in enumerate(vals)]
    return rows, metrics


# ------------------------------------------------------------------------------------------- performance
def performance(params: dict, ctx: RunContext):
    """Wall time per round and client-side time per round of HO-SFL, SFL-FO (tau=1) and SFL-ZO on the same
    model, batches and machine (``time.perf_counter``), with the bytes per client per round and the H7
    saved-for-backward numbers. Timings vary between runs (no claim compares them exactly)."""
    _torch_setup()
    R, warm, repeats = int(params["rounds"]), int(params.get("warmup", 5)), int(params.get("repeats", 3))
    N, B = int(params["n_clients"]), int(params["batch_size"])
    root = int(seeding.generator(ctx.seed, "performance").integers(2 ** 31))
    base = Setup(n_clients=N, partition="iid", dirichlet_alpha=0.1, init="random", seed=root)
    brng = seeding.generator(root, "batches")
    batches = []
    for _ in range(R + warm):
        idx = np.stack([draw_batch(base.parts[k], B, brng) for k in range(N)])
        batches.append((base.x_train[idx], base.y_train[idx]))
    res = {}
    for method in params["methods"]:
        best_round, best_client = np.inf, np.inf
        for _ in range(repeats):
            s = Setup(n_clients=N, partition="iid", dirichlet_alpha=0.1, init="random", seed=root)
            st = make_stepper(method, s, n_clients=N, rng=seeding.generator(root, "perturb"), ledger=None,
                              track_alignment=False)
            for t in range(warm):
                st.step(t, list(range(N)), *batches[t])
            st.client_time = 0.0
            t0 = time.perf_counter()
            for t in range(warm, warm + R):
                st.step(t, list(range(N)), *batches[t])
            wall = time.perf_counter() - t0
            best_round = min(best_round, wall / R)
            best_client = min(best_client, st.client_time / R)
        res[method] = {"round_s": best_round, "client_s": best_client}
        ctx.log(f"{method}: {1e3 * best_round:.3f} ms/round, client {1e3 * best_client:.3f} ms/round")
    hw = hardware()
    ctx.record(cpu=hw["cpu"])
    metrics = {"timing": res, "rounds_timed": R, "repeats": repeats, "cpu": hw["cpu"],
               "ratio_round_hosfl_sfl_fo": res["hosfl"]["round_s"] / res["sfl_fo"]["round_s"],
               "ratio_client_hosfl_sfl_fo": res["hosfl"]["client_s"] / res["sfl_fo"]["client_s"]}
    if "sfl_zo" in res:
        metrics["ratio_round_hosfl_sfl_zo"] = res["hosfl"]["round_s"] / res["sfl_zo"]["round_s"]
    rows = [{"method": m, "seed": 0, "step": 0, "metric": k, "value": v} for m, d in res.items() for k, v in d.items()]
    return rows, metrics


# ------------------------------------------------------------------------------------------- pretrained CNN client
def _bytes_to_target(out, target):
    """Bytes per client up to the first evaluation with test accuracy >= ``target``; a run that never gets
    there counts its bytes at the horizon plus one evaluation interval more (a lower bound)."""
    acc, b = out["test_accuracy"], out["bytes_per_client_at_eval"]
    hit = np.flatnonzero(acc >= target)
    if hit.size:
        return float(b[hit[0]]), True
    step = float(b[-1] - (b[-2] if b.size > 1 else 0.0))
    return float(b[-1] + step), False


def pretrained(params: dict, ctx: RunContext):
    """Official claim 2 in miniature: a CNN client (d_c = 103140) pre-trained here on Digits classes 0..4 is
    fine-tuned on all ten classes by HO-SFL, first-order SFL (tau = 1), FSL-SAGE (reconstructed) and the frozen
    client, same partition, batches and server init per seed. Per seed: final_acc, the bytes per client of the
    whole run and up to the first evaluation at ``target_accuracy``; paired differences and ratios.

    A run with an ``lr_grid`` has its client lr chosen first, by the same rule for every method
    (:func:`select_lr`): each lr of the grid runs on every ``tuning_seeds`` seed (disjoint from ``seeds``) with
    ``validation_fraction`` of the training rows held out, and the lr with the best mean final accuracy on the
    held-out rows is kept; the evaluation seeds then run once, with that lr, on the full training set and the
    test set. The metrics record the grid, the tuning seeds, the per-lr scores and the chosen lr."""
    _torch_setup()
    pre = dict(params["pretrain"])
    client, theta0, facts = pretrained_client(seed=int(seeding.generator(ctx.seed, "pretrain").integers(2 ** 31)),
                                              **pre)
    ctx.log(f"pretrained client: d_c = {theta0.size}, {facts}")
    common, target = dict(params["common"]), float(params["target_accuracy"])
    seeds = [int(s) for s in params["seeds"]]
    tuning_seeds = [int(s) for s in params.get("tuning_seeds", [])]
    holdout = float(params.get("validation_fraction", 0.2))

    def root_of(seed):
        return int(seeding.generator(ctx.seed, "run", str(seed)).integers(2 ** 31))

    def train(method, *, seed, **kw):
        return run_pretrained_split(method, client, theta0, seed=root_of(seed), **{**common, **kw})

    run_opts, tuning = tune_client_lrs(params["runs"], tuning_seeds=tuning_seeds, seeds=seeds, holdout=holdout,
                                       train=train, log=ctx.log)
    per = {name: {} for name in params["runs"]}
    arrays, rows = {}, []
    for seed in seeds:
        root = root_of(seed)
        for name, opts in run_opts.items():
            opts = dict(opts)
            method = opts.pop("method")
            t0 = time.process_time()
            out = run_pretrained_split(method, client, theta0, seed=root, **{**common, **opts})
            btt, reached = _bytes_to_target(out, target)
            per[name][seed] = {"acc": out["final_acc"], "bytes_total": float(out["bytes_per_client_at_eval"][-1]),
                               "bytes_to_target": btt, "reached": reached,
                               "bytes_per_round": {c: float(v.sum()) / (out["n_clients"] * len(out["train_loss"]))
                                                   for c, v in out["bytes"].items()}}
            arrays[f"{name}__s{seed}__round"] = out["round"]
            arrays[f"{name}__s{seed}__acc"] = out["test_accuracy"]
            arrays[f"{name}__s{seed}__bytes"] = out["bytes_per_client_at_eval"]
            rows += [{"method": name, "seed": seed, "step": int(r), "metric": "test_accuracy", "value": float(a)}
                     for r, a in zip(out["round"], out["test_accuracy"])]
            ctx.log(f"{name} seed {seed}: final_acc {out['final_acc']:.4f}, bytes/client "
                    f"{per[name][seed]['bytes_total']:.3g}, to {target:g}: {btt:.3g} "
                    f"({time.process_time() - t0:.1f} s cpu)")
    runs = {}
    for name, d in per.items():
        accs = [d[s]["acc"] for s in seeds]
        mean, se = mean_and_se(accs)
        runs[name] = {"final_acc": mean, "final_acc_se": se, "final_acc_per_seed": accs,
                      "bytes_total_per_client": d[seeds[0]]["bytes_total"],
                      "bytes_per_client_round": d[seeds[0]]["bytes_per_round"],
                      "bytes_to_target_per_seed": [d[s]["bytes_to_target"] for s in seeds],
                      "reached_target": [d[s]["reached"] for s in seeds]}
        if "client_lr" in run_opts[name]:
            runs[name]["client_lr"] = float(run_opts[name]["client_lr"])
        if name in tuning:
            runs[name]["tuning"] = tuning[name]
    paired, compare = {}, {}
    for a in per:
        for b in per:
            if a != b:
                paired[f"{a}_minus_{b}_points"] = [100 * (per[a][s]["acc"] - per[b][s]["acc"]) for s in seeds]
                paired[f"bytes_to_target_ratio_{a}_{b}"] = [per[a][s]["bytes_to_target"] / per[b][s]["bytes_to_target"]
                                                            for s in seeds]
                compare[f"bytes_total_ratio_{a}_{b}"] = runs[a]["bytes_total_per_client"] / runs[b]["bytes_total_per_client"]
    if {"hosfl", "fsl_sage", "sfl_fo"} <= set(runs):
        tot = {k: runs[k]["bytes_total_per_client"] for k in ("hosfl", "fsl_sage", "sfl_fo")}
        compare["comm_order_hosfl_fsl_sage_sfl_fo"] = bool(tot["hosfl"] < tot["fsl_sage"] < tot["sfl_fo"])
    metrics = {"client_dim": int(theta0.size), "pretrain": {**pre, **facts}, "common": common, "seeds": seeds,
               "tuning_seeds": tuning_seeds, "chosen_client_lr": {n: t["client_lr"] for n, t in tuning.items()},
               "target_accuracy": target, "runs": runs, "paired": paired, "compare": compare,
               "n_clients": int(common.get("n_clients", 10)), "batch_size": int(common.get("batch_size", 32))}
    write_arrays(ctx.out_dir / "curves.npz", **arrays)
    return rows, metrics


# ------------------------------------------------------------------------------------------- pretrained MiniLM client
def minilm_split(params: dict, ctx: RunContext):
    """Official claims 3 and 5 in miniature on a real pretrained text client: all-MiniLM-L6-v2 (``shared.lm``) cut
    after ``split.client_layers`` layers (client: frozen embeddings + those layers, d_c = 1,774,464 per layer;
    server: the next ``split.server_layers`` layers, mean pooling and a Linear(384, 2) head), on the VADER-lexicon
    sentence task (:mod:`papers.hosfl.text_task`). See :mod:`papers.hosfl.minilm_split`.

    Memory first: one client step per method of ``MEMORY_METHODS`` on ``memory.batch_size`` training sentences
    (the multiplier lambda from the server at the pretrained point), measured as the growth of the peak RSS of a
    forked child (:func:`papers.hosfl.minilm_split.minilm_memory_probe`), ``memory.repeats`` rounds of all methods
    in each of ``memory.processes`` freshly spawned processes (:func:`measure_memory_in_fresh_process`); the
    claims' samples are the per-process values, so their interval covers run-to-run variation. The child starts
    with the model, tokens and lambda resident, so the growth is the step's own working memory (activations, saved
    tensors, gradients, directions), the part the methods differ in. Then training: a run with an ``lr_grid``
    and/or a ``server_lr_grid`` has its lrs chosen on ``tuning_seeds`` with ``validation_fraction`` of the
    training rows held out (:func:`tune_client_lrs`, the rule of :func:`pretrained`); every run of ``runs`` then
    runs on every seed of ``seeds`` (same partition, batches and server init per seed) on the full training rows:
    final test accuracy, paired differences in points and bytes per client and round."""
    _torch_setup()
    task, sp, common = dict(params["task"]), dict(params["split"]), dict(params["common"])
    mem = dict(params["memory"])
    seeds = [int(s) for s in params["seeds"]]
    task_seed = int(seeding.generator(ctx.seed, "minilm_task").integers(2 ** 31))

    # --- measured client memory: each of memory.processes fresh processes builds the same setup and forks a child
    # per (repeat, method); the interval of the claims is over the processes (run-to-run), not over forks
    probe = {"task": task, "split": sp, "task_seed": task_seed, "batch_size": int(mem["batch_size"]),
             "server_seed": int(seeding.generator(ctx.seed, "minilm_memory").integers(2 ** 31)),
             "step_seeds": [int(s) for s in ctx.generator("minilm_memory_seeds").choice(
                 H.SEED_BOUND, size=int(mem["P"]), replace=False)],
             "mu": float(common.get("mu", 1e-3)), "lr": float(mem["lr"]), "repeats": int(mem["repeats"])}
    n_proc = int(mem["processes"])
    per_process = []
    for i in range(n_proc):
        t0 = time.time()
        per_process.append(measure_memory_in_fresh_process(probe))
        ctx.log(f"memory process {i + 1}/{n_proc}: " + ", ".join(
            f"{m} {np.mean(v) / 2 ** 20:.1f}" for m, v in per_process[-1]["peak_bytes"].items())
            + f" MiB ({time.time() - t0:.1f} s wall)")
    memory_metrics = memory_summary(per_process)
    ctx.log("client step peak growth (MiB, mean over processes): "
            + ", ".join(f"{m} {v:.1f}" for m, v in memory_metrics["peak_mib_mean"].items()))

    from shared.lm.pretrained import load_minilm
    tokenizer, bert = load_minilm()
    words, data, split = minilm_task_and_split(tokenizer, bert, task, sp, task_seed)
    del bert
    ctx.log(f"task: {len(words)} lexicon words, {int(task['n_train'])} train / {int(task['n_test'])} test "
            f"sentences, {int(data['train'][0].shape[1])} tokens; d_c = {split.client_dim}")

    # --- training runs: client lrs from their grids on the tuning seeds first (held-out training rows)
    def root_of(seed):
        return int(seeding.generator(ctx.seed, "run", str(seed)).integers(2 ** 31))

    holdout = float(params.get("validation_fraction", 0.2))

    def train(method, *, seed, **kw):
        return run_text_split(method, split, data, seed=root_of(seed), **{**common, **kw})

    run_opts, tuning = tune_client_lrs(params["runs"], tuning_seeds=params.get("tuning_seeds", []), seeds=seeds,
                                       holdout=holdout, train=train, log=ctx.log)
    per, arrays, rows, runs = {}, {}, [], {}
    for name, opts in run_opts.items():
        opts = dict(opts)
        method = opts.pop("method")
        per[name] = {}
        for seed in seeds:
            t0 = time.process_time()
            out = run_text_split(method, split, data, seed=root_of(seed), **{**common, **opts})
            per[name][seed] = out
            arrays[f"{name}__s{seed}__round"] = out["round"]
            arrays[f"{name}__s{seed}__acc"] = out["test_accuracy"]
            arrays[f"{name}__s{seed}__loss"] = out["train_loss"]
            rows += [{"method": name, "seed": seed, "step": int(r), "metric": "test_accuracy", "value": float(a)}
                     for r, a in zip(out["round"], out["test_accuracy"])]
            ctx.log(f"{name} seed {seed}: final_acc {out['final_acc']:.4f} ({time.process_time() - t0:.1f} s cpu)")
        accs = [per[name][s]["final_acc"] for s in seeds]
        mean, se = mean_and_se(accs)
        b = per[name][seeds[0]]["bytes_per_client_round"]
        runs[name] = {"method": method, "final_acc": mean, "final_acc_se": se, "final_acc_per_seed": accs,
                      "bytes_per_client_round": {k: float(v) for k, v in b.items()},
                      "bytes_per_client_round_total": float(sum(b.values()))}
        if method != "frozen":
            runs[name]["client_lr"] = float(opts["client_lr"])
        runs[name]["server_lr"] = float(opts.get("server_lr", common["server_lr"]))
        if name in tuning:
            runs[name]["tuning"] = tuning[name]
    paired = {f"{a}_minus_{b}_points": [_points(per[a][s]["final_acc"], per[b][s]["final_acc"]) for s in seeds]
              for a in per for b in per if a != b}
    compare = {}
    if {"hosfl", "sfl_fo"} <= set(runs):
        compare["bytes_per_round_ratio_hosfl_sfl_fo"] = (runs["hosfl"]["bytes_per_client_round_total"]
                                                         / runs["sfl_fo"]["bytes_per_client_round_total"])
        compare["weights_up_ratio_sfl_fo_hosfl"] = (runs["sfl_fo"]["bytes_per_client_round"]["weights.up"]
                                                    / runs["hosfl"]["bytes_per_client_round"]["weights.up"])
        compare["d_c_over_P"] = split.client_dim / int(common.get("P", 5))
    metrics = {"model": "all-MiniLM-L6-v2", "client_layers": split.client_layers,
               "server_layers": split.server_layers, "client_dim": split.client_dim,
               "task": {**task, "n_words": len(words), "seq_len": int(data["train"][0].shape[1])},
               "common": common, "seeds": seeds, "runs": runs, "paired": paired, "compare": compare,
               "tuning_seeds": [int(s) for s in params.get("tuning_seeds", [])],
               "chosen_client_lr": {n: t["client_lr"] for n, t in tuning.items() if "client_lr" in t},
               "chosen_server_lr": {n: t["server_lr"] for n, t in tuning.items() if "server_lr" in t},
               "memory": memory_metrics,
               "n_clients": int(common.get("n_clients", 4)),
               "batch_size": int(common.get("batch_size", 4))}
    write_arrays(ctx.out_dir / "curves.npz", **arrays)
    return rows, metrics


# ------------------------------------------------------------------------------------------- sweeps
def p_sweep(params: dict, ctx: RunContext):
    """HO-SFL against the number of perturbations P (IID, random init, the same client lr for every P):
    rounds to 90% test accuracy ("never" counted as one evaluation past the horizon), final_acc and the
    in-training alignment cos(ghat, g) against sqrt(P/(d_c + P + 1)), mean over ``seeds``. Each method in
    ``controls`` (e.g. hosfl_decoupled, whose client step does not use the P projections) runs at the smallest
    and the largest P only, with the same seeds; its final_acc difference is
    ``compare.<method>_acc_Pmax_minus_Pmin_points``.

    Paired per seed (same partition, batches and initial model for every P of one seed; Corollary 4.5's rate
    O(sqrt(d_c/(P T))) predicts a gain from P): ``paired.acc_Pmax_minus_Pmin_points`` lists
    100 (final_acc(P_max) - final_acc(P_min)) per seed, ``paired.<method>_acc_Pmax_minus_Pmin_points`` the same
    for each control, and ``paired.r90_Pmin_minus_Pmax_rounds`` the censored rounds to 90% of P_min minus
    P_max per seed."""
    _torch_setup()
    common = dict(params["common"])
    rounds, eval_every = int(common["rounds"]), int(common.get("eval_every", 10))
    P_list = [int(p) for p in params["P_list"]]
    seeds = [int(s) for s in params.get("seeds", [0])]
    r90, acc, acc_se, align, arrays, rows = {}, {}, {}, {}, {}, []
    acc_seed, r90_seed = {}, {}
    for P in P_list:
        vals, accs, als = [], [], []
        for seed in seeds:
            root = int(seeding.generator(ctx.seed, "run", str(seed)).integers(2 ** 31))
            r = run_split_training("hosfl", n_perturbations=P, seed=root, **common)
            vals.append(_censored(r["rounds_to_90"], rounds, eval_every))
            accs.append(r["final_acc"])
            als.append(float(np.mean(r["alignment"])) / float(np.sqrt(P / (r["client_dim"] + P + 1))))
            arrays[f"P{P}__s{seed}__round"] = r["round"]
            arrays[f"P{P}__s{seed}__acc"] = r["test_accuracy"]
            ctx.log(f"P={P} seed {seed}: final_acc {r['final_acc']:.4f}, rounds_to_90 {r['rounds_to_90']}")
        r90[str(P)] = float(np.mean(vals))
        acc[str(P)], acc_se[str(P)] = mean_and_se(accs)
        acc_seed[str(P)], r90_seed[str(P)] = [float(a) for a in accs], [int(v) for v in vals]
        align[str(P)] = float(np.mean(als))
        rows += [{"method": "hosfl", "seed": 0, "step": P, "metric": "rounds_to_90_censored", "value": r90[str(P)]},
                 {"method": "hosfl", "seed": 0, "step": P, "metric": "final_acc", "value": acc[str(P)]}]
    lo, hi = str(P_list[0]), str(P_list[-1])
    paired = {"seeds": seeds,
              "acc_Pmax_minus_Pmin_points": [_points(a, b) for a, b in zip(acc_seed[hi], acc_seed[lo])],
              "r90_Pmin_minus_Pmax_rounds": [float(a - b) for a, b in zip(r90_seed[lo], r90_seed[hi])]}
    controls = {}
    for method in params.get("controls", []):   # negative controls, run at the smallest and the largest P only
        cacc, cseed = {}, {}
        for P in sorted({P_list[0], P_list[-1]}):
            accs = []
            for seed in seeds:
                root = int(seeding.generator(ctx.seed, "run", str(seed)).integers(2 ** 31))
                r = run_split_training(method, n_perturbations=P, seed=root, **{**common, "track_alignment": False})
                accs.append(r["final_acc"])
                arrays[f"{method}_P{P}__s{seed}__round"] = r["round"]
                arrays[f"{method}_P{P}__s{seed}__acc"] = r["test_accuracy"]
                ctx.log(f"control {method} P={P} seed {seed}: final_acc {r['final_acc']:.4f}")
            cacc[str(P)], cseed[str(P)] = float(np.mean(accs)), [float(a) for a in accs]
        controls[method] = {"final_acc": cacc, "final_acc_per_seed": cseed,
                            "acc_Pmax_minus_Pmin_points": _points(cacc[hi], cacc[lo])}
        paired[f"{method}_acc_Pmax_minus_Pmin_points"] = [_points(a, b) for a, b in zip(cseed[hi], cseed[lo])]
    metrics = {"P_list": P_list, "rounds": rounds, "seeds": seeds, "rounds_to_90_censored": r90, "final_acc": acc,
               "final_acc_se": acc_se, "final_acc_per_seed": acc_seed, "rounds_to_90_censored_per_seed": r90_seed,
               "alignment_ratio": align,
               "alignment_finite_p_factor": {str(P): finite_p_alignment_factor(P) for P in P_list},
               "compare": {"r90_ratio_Pmin_Pmax": r90[lo] / r90[hi],
                           "acc_Pmax_minus_Pmin_points": _points(acc[hi], acc[lo]),
                           "alignment_ratio_min": min(align.values()), "alignment_ratio_max": max(align.values())},
               "control": controls, "paired": paired}
    for method, c in controls.items():
        metrics["compare"][f"{method}_acc_Pmax_minus_Pmin_points"] = c["acc_Pmax_minus_Pmin_points"]
    write_arrays(ctx.out_dir / "curves.npz", **arrays)
    return rows, metrics


BLOW_UP_FACTOR = 2.0   # width_sweep: a tail training loss above this multiple of the first round's is a blow-up


def width_sweep(params: dict, ctx: RunContext):
    """final_acc of HO-SFL and pure ZO (SFL-ZO) as the client width (cut_dim) and the server width (hidden_dim)
    grow. Pure ZO perturbs d_c + d_s coordinates, HO-SFL only d_c. SFL-ZO's lr is chosen at every width and seed
    from ``sfl_zo_lr_grid`` by the lowest mean training loss over the last 10% of rounds (the rule of
    :func:`training`, never the test set). Each method in ``controls`` (e.g. frozen: HO-SFL's first-order server
    with the client never updated) runs at every width too. A run whose parameters become non-finite, or whose
    final training loss exceeds ``BLOW_UP_FACTOR`` times its first round's (a finite blow-up), is recorded as
    diverged (final_acc null, chance level in the comparisons).

    Every statistic is computed per seed of ``seeds`` (same partition, batches and initial model for every method
    of one seed) and listed under ``paired`` (one value per seed): ``hosfl_minus_sfl_zo_min_points`` (HO-SFL's
    smallest margin over pure ZO across the widths), ``<control>_minus_sfl_zo_min_points``,
    ``hosfl_hidden_change_points`` and ``sfl_zo_hidden_change_points`` (accuracy at the largest minus the
    smallest hidden_dim), ``gap_growth_hidden_points`` (growth of HO-SFL's gap to pure ZO from the smallest to the
    largest hidden_dim) and ``control_gap_growth_hidden_points.<control>`` (the same growth with the control in
    pure ZO's place; its perturbed dimension does not grow with the server). ``compare`` holds their means over
    seeds and ``final_acc`` the mean accuracy over the seeds that did not diverge (null when all did)."""
    _torch_setup()
    common = {"track_alignment": False, **dict(params["common"])}
    seeds = [int(s) for s in params.get("seeds", [0])]
    zo_grid = [float(v) for v in params["sfl_zo_lr_grid"]]
    k_tail = max(1, int(np.ceil(0.1 * int(common["rounds"]))))
    controls = [str(c) for c in params.get("controls", [])]   # e.g. frozen: the first-order server alone
    axes = (("cut_dim", params["cut_dims"]), ("hidden_dim", params["hidden_dims"]))
    dims = {"cut_dim": {}, "hidden_dim": {}}
    for key, values in axes:
        for v in values:
            mk = {"cut_dim": 32, "hidden_dim": 64, key: int(v)}
            m = SplitMLP(cut_dim=mk["cut_dim"], hidden_dim=mk["hidden_dim"])
            dims[key][str(v)] = {"d_c": int(m.client_dim), "d_s": int(m.server_vector().size)}
    per = {}
    for seed in seeds:
        root = int(seeding.generator(ctx.seed, "run", str(seed)).integers(2 ** 31))
        per[seed] = _width_seed(axes, controls, zo_grid, common, root, k_tail, ctx, seed)
    res = {key: {str(v): {} for v in values} for key, values in axes}
    per_seed_acc = {key: {str(v): {} for v in values} for key, values in axes}
    for key, values in axes:
        for v in values:
            for method in per[seeds[0]]["final_acc"][key][str(v)]:
                accs = [per[s]["final_acc"][key][str(v)][method] for s in seeds]
                ok = [a for a in accs if a is not None]
                res[key][str(v)][method] = float(np.mean(ok)) if ok else None
                per_seed_acc[key][str(v)][method] = accs
    paired = {"seeds": seeds}
    for stat in per[seeds[0]]["compare"]:
        first = per[seeds[0]]["compare"][stat]
        if isinstance(first, dict):
            paired[stat] = {k: [per[s]["compare"][stat][k] for s in seeds] for k in first}
        else:
            paired[stat] = [per[s]["compare"][stat] for s in seeds]
    compare = {stat: ({k: float(np.mean(x)) for k, x in vals.items()} if isinstance(vals, dict)
                      else float(np.mean(vals))) for stat, vals in paired.items() if stat != "seeds"}
    diverged = [f"seed {s}: {d}" for s in seeds for d in per[s]["diverged"]]
    rows = [{"method": m, "seed": s, "step": int(v), "metric": f"final_acc_{key}", "value": a}
            for key, d in per_seed_acc.items() for v, dd in d.items() for m, accs in dd.items()
            for s, a in zip(seeds, accs) if a is not None]
    return rows, {"seeds": seeds, "final_acc": res, "final_acc_per_seed": per_seed_acc, "dims": dims,
                  "diverged": diverged, "sfl_zo_lr": {str(s): per[s]["sfl_zo_lr"] for s in seeds},
                  "sfl_zo_lr_grid": zo_grid,
                  "sfl_zo_grid_tail_loss": {str(s): per[s]["sfl_zo_grid_tail_loss"] for s in seeds},
                  "rounds": int(common["rounds"]), "compare": compare, "paired": paired}


def _width_seed(axes, controls, zo_grid, common, root, k_tail, ctx, seed) -> dict:
    """One seed of :func:`width_sweep` (every method at every width, from the run root ``root``): its
    final accuracies, SFL-ZO lr choices, diverged runs and the comparisons of that seed (see width_sweep)."""
    res, diverged, cache = {"cut_dim": {}, "hidden_dim": {}}, [], {}
    zo_lr, zo_grid_loss = {"cut_dim": {}, "hidden_dim": {}}, {"cut_dim": {}, "hidden_dim": {}}
    for key, values in axes:
        for v in values:
            mk = {"cut_dim": 32, "hidden_dim": 64, key: int(v)}
            res[key][str(v)] = {}
            for method in ("hosfl", "sfl_zo", *controls):
                ck = (method, mk["cut_dim"], mk["hidden_dim"])
                if ck not in cache:   # the (cut 32, hidden 64) model is on both axes: run once
                    cache[ck] = _width_run(method, zo_grid if method == "sfl_zo" else [None], mk, common, root,
                                           k_tail, ctx)
                    ctx.log(f"seed {seed} {method} {mk}: final_acc {cache[ck]['final_acc']}")
                    if cache[ck]["diverged"]:
                        diverged.append(f"{method} cut_dim={mk['cut_dim']} hidden_dim={mk['hidden_dim']}")
                out = cache[ck]
                res[key][str(v)][method] = out["final_acc"]
                if method == "sfl_zo":
                    zo_lr[key][str(v)], zo_grid_loss[key][str(v)] = out["lr"], out["grid_tail_loss"]

    def acc(key, v, method):
        a = res[key][str(v)][method]
        return 0.1 if a is None else a   # a diverged run counts as chance level in the comparisons

    hidden = [v for key, values in axes if key == "hidden_dim" for v in values]
    h_lo, h_hi = hidden[0], hidden[-1]
    gap = {str(v): _points(acc("hidden_dim", v, "hosfl"), acc("hidden_dim", v, "sfl_zo")) for v in hidden}
    compare = {"hosfl_hidden_change_points": _points(acc("hidden_dim", h_hi, "hosfl"), acc("hidden_dim", h_lo, "hosfl")),
               "sfl_zo_hidden_change_points": _points(acc("hidden_dim", h_hi, "sfl_zo"), acc("hidden_dim", h_lo, "sfl_zo")),
               "hosfl_minus_sfl_zo_points_by_hidden": gap,
               "gap_growth_hidden_points": gap[str(h_hi)] - gap[str(h_lo)],
               "hosfl_minus_sfl_zo_min_points": min(_points(acc(k, v, "hosfl"), acc(k, v, "sfl_zo"))
                                                    for k in res for v in res[k])}
    for c in controls:   # the control in HO-SFL's place against pure ZO, at every width
        compare[f"{c}_minus_sfl_zo_min_points"] = min(_points(acc(k, v, c), acc(k, v, "sfl_zo"))
                                                      for k in res for v in res[k])
    # the control in pure ZO's place: HO-SFL's gap to a contender whose perturbed dimension does not grow
    compare["control_gap_growth_hidden_points"] = {
        c: (_points(acc("hidden_dim", h_hi, "hosfl"), acc("hidden_dim", h_hi, c))
            - _points(acc("hidden_dim", h_lo, "hosfl"), acc("hidden_dim", h_lo, c))) for c in controls}
    return {"final_acc": res, "diverged": diverged, "sfl_zo_lr": zo_lr, "sfl_zo_grid_tail_loss": zo_grid_loss,
            "compare": compare}


def _width_run(method, grid, model_kwargs, common, root, k_tail, ctx) -> dict:
    """One run of :func:`width_sweep`: ``method`` at the lr of ``grid`` with the lowest mean training loss over
    the last ``k_tail`` rounds (``[None]``: the method's default lr). Returns {"final_acc" (None when diverged),
    "lr", "grid_tail_loss" (str(lr) -> tail loss, null for a non-finite run), "diverged"}; diverged is a
    non-finite run at every lr, or a chosen run whose tail loss exceeds ``BLOW_UP_FACTOR`` times its first
    round's loss (training noise over a few rounds stays well below that; a blown-up run ends far above)."""
    def one_run(lr, _seed):
        return run_split_training(method, client_lr=lr, seed=root, model_kwargs=model_kwargs, **common)

    try:
        sel = select_lr(grid, one_run, [0], score=lambda out: float(np.mean(out["train_loss"][-k_tail:])),
                        mode="min", log=lambda msg: ctx.log(f"{method} {model_kwargs} {msg}"),
                        what=f"{method} {model_kwargs}")
    except FloatingPointError as exc:
        ctx.log(f"{method} {model_kwargs}: diverged ({exc})")
        return {"final_acc": None, "lr": None, "grid_tail_loss": {str(lr): None for lr in grid}, "diverged": True}
    out = sel["outputs"][0]
    blown_up = sel["score"][str(sel["lr"])] > BLOW_UP_FACTOR * float(out["train_loss"][0])
    if blown_up:
        ctx.log(f"{method} {model_kwargs}: training loss ends above {BLOW_UP_FACTOR:g} times its first round's "
                f"at lr {sel['lr']} (diverged)")
    tail = {**{str(lr): None for lr in sel["diverged"]}, **sel["score"]}
    return {"final_acc": None if blown_up else out["final_acc"], "lr": sel["lr"],
            "grid_tail_loss": {str(lr): tail[str(lr)] for lr in grid}, "diverged": blown_up}


EXPERIMENTS = {"estimator": estimator, "iid": training, "dirichlet": training, "pca": training,
               "adamw": training, "synthetic": training, "straggler_rate": training,
               "straggler": straggler, "memory": memory, "memory_measured": memory_measured, "performance": performance, "p_sweep": p_sweep,
               "width_sweep": width_sweep, "pretrained": pretrained, "minilm_split": minilm_split}

if __name__ == "__main__":
    main(EXPERIMENTS)
