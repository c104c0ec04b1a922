"""Experiments of the dro_varclust reproduction (spec "Experiments by scale").

``python -m papers.dro_varclust.experiments NAME --config papers/dro_varclust/config.yaml --scale quick --out DIR``
with NAME one of ``synthetic_main``, ``alpha_ablation``, ``k_misspecified``, ``solver_check``, ``performance``,
and at full (tiny versions at smoke) ``rho_init_ablation``, ``scenario_sweeps``, ``digits``. Each function takes
the params of its config block and returns (tidy rows, metrics). Wall times go to ``timings.json`` and
provenance.json, never to metrics.json.
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from shared.experiment import RunContext, main
from shared.results import mean_and_se, read_arrays, write_arrays, write_metrics

from papers.dro_varclust.baselines import BASELINES
from papers.dro_varclust.cluster import affinity_from_coefficients, clustering_scores, spectral_labels
from papers.dro_varclust.data import load_digits_variables, make_block_factor_data
from papers.dro_varclust.radius import dro_radius
from papers.dro_varclust.solver import solve_dro_nodewise

__all__ = ["EXPERIMENTS", "PUBLISHED", "synthetic_main", "alpha_ablation", "k_misspecified", "solver_check",
           "performance", "rho_init_ablation", "scenario_sweeps", "digits"]

# Release result tables (main config, seeds 2021-2030; admm_paper solver). Anchors, not targets.
PUBLISHED = {
    "dro_acc_by_seed": dict(zip(range(2021, 2031), (0.878, 0.858, 0.910, 0.970, 0.802, 0.856, 0.878, 0.860,
                                                     0.852, 0.928))),
    "dro_mean_acc": 0.879, "dro_mean_ami": 0.9205,
    "alpha": {0.001: 0.876, 0.01: 0.870, 0.05: 0.879, 0.1: 0.881, 0.2: 0.882},
    "rho_init": {0.01: 0.865, 0.1: 0.861, 0.5: 0.874, 1: 0.879, 2: 0.868, 5: 0.879, 10: 0.877},
    "K": {10: 0.420, 15: 0.616, 20: 0.780, 23: 0.842, 25: 0.879, 27: 0.871, 30: 0.863, 35: 0.808, 40: 0.759},
}


def key_of(value) -> str:
    """Metric key of a grid value without dots: 0.05 -> '0p05', 1 -> '1'."""
    return format(float(value), "g").replace(".", "p").replace("-", "m")


def _data(params: dict, seed: int, **overrides):
    kw = {"rho_range": tuple(params.get("rho_range", (0.0, 0.5))),
          "noise_range": tuple(params.get("noise_range", (0.0, 0.5)))}
    kw.update(overrides)
    return make_block_factor_data(int(params["n"]), int(params["p"]), int(params["K"]), seed=int(seed), **kw)


def _tol(params: dict) -> dict:
    return {"abs_tol": float(params.get("abs_tol", 1e-7)), "rel_tol": float(params.get("rel_tol", 1e-6))}


def _summary(values) -> dict:
    mean, se = mean_and_se(list(values))
    return {"mean": mean, "se": se}


def _score_rows(rows, method, seed, scores, **extra):
    for metric in ("accuracy", "ami"):
        rows.append({"method": method, "seed": int(seed), "step": 0, "metric": metric, "value": scores[metric],
                     **extra})


def _method_block(acc: dict, ami: dict) -> dict:
    a, m = _summary(acc.values()), _summary(ami.values())
    return {"mean_acc": a["mean"], "se_acc": a["se"], "mean_ami": m["mean"], "se_ami": m["se"],
            "acc_by_seed": {str(s): v for s, v in acc.items()}}


def _paired_difference(a: dict, b: dict) -> dict:
    d = [a[s] - b[s] for s in a]
    return _summary(d)


def _fit_dro(X, K, s, method, tol, warm=None, rho_init=1.0):
    sol = solve_dro_nodewise(X, s, method=method, warm_start=warm, rho_init=rho_init, **tol)
    return sol, spectral_labels(affinity_from_coefficients(sol.B), K)


# ------------------------------------------------------------------------------------------ synthetic_main
def synthetic_main(params: dict, ctx: RunContext):
    """DRO (alpha = ``alpha``) and the baselines on the block-factor model, one run per seed.

    Metrics: ``<method>.{mean_acc, se_acc, mean_ami, se_ami, acc_by_seed}`` for ``dro`` (and ``dro_admm_paper``
    when ``dro_methods`` lists it) and each baseline; ``diff.dro_minus_<baseline>.{mean, se}`` (paired over
    seeds); ``dro.mean_sqrt_delta``, ``dro.mean_objective``. Saves ``coefficients.npz`` (B and s per seed, reused
    by alpha_ablation and k_misspecified) and ``affinity_example.npz`` (first seed).
    """
    seeds = [int(s) for s in params["seeds"]]
    K, alpha, n_sim = int(params["K"]), float(params.get("alpha", 0.05)), int(params.get("n_sim", 1000))
    tol = _tol(params)
    dro_methods = list(params.get("dro_methods", ["admm"]))
    baselines = list(params.get("methods", ["lasso_cv", "ridge", "corr_spectral", "kmeans"]))
    names = {"admm": "dro", "admm_paper": "dro_admm_paper"}
    acc, ami, rows, arrays, skipped = {}, {}, [], {}, []
    cpu = {m: 0.0 for m in [names[d] for d in dro_methods] + baselines}
    extra = {"sqrt_delta": {}, "objective": {}, "n_iter": {}}
    for seed in seeds:
        X, y = _data(params, seed)
        s = dro_radius(X, alpha=alpha, n_sim=n_sim, seed=seed)
        arrays[f"s_{seed}"] = np.array(s)
        for dm in dro_methods:
            name = names[dm]
            start = time.process_time()
            sol, labels = _fit_dro(X, K, s, dm, tol)
            cpu[name] += time.process_time() - start
            sc = clustering_scores(y, labels)
            acc.setdefault(name, {})[seed], ami.setdefault(name, {})[seed] = sc["accuracy"], sc["ami"]
            extra["objective"].setdefault(name, {})[str(seed)] = sol.objective
            extra["n_iter"].setdefault(name, {})[str(seed)] = sol.n_iter
            _score_rows(rows, name, seed, sc)
            if dm == "admm":
                arrays[f"B_{seed}"] = sol.B
                if seed == seeds[0]:
                    write_arrays(ctx.out_dir / "affinity_example.npz", W=affinity_from_coefficients(sol.B), labels=y,
                                 pred=labels, seed=np.array(seed))
        extra["sqrt_delta"][str(seed)] = s
        for b in baselines:
            start = time.process_time()
            labels = BASELINES[b](X, K)
            cpu[b] += time.process_time() - start
            if labels is None:
                skipped.append(b)
                continue
            sc = clustering_scores(y, labels)
            acc.setdefault(b, {})[seed], ami.setdefault(b, {})[seed] = sc["accuracy"], sc["ami"]
            _score_rows(rows, b, seed, sc)
        ctx.log(f"seed {seed}: " + ", ".join(f"{m} {acc[m][seed]:.3f}" for m in acc if seed in acc[m]))
    arrays["seeds"] = np.array(seeds)
    arrays["config"] = np.array([params["n"], params["p"], K, alpha, n_sim], dtype=float)
    write_arrays(ctx.out_dir / "coefficients.npz", **arrays)
    metrics = {m: _method_block(acc[m], ami[m]) for m in acc}
    metrics["dro"]["mean_sqrt_delta"] = float(np.mean(list(extra["sqrt_delta"].values())))
    metrics["diff"] = {f"dro_minus_{m}": _paired_difference(acc["dro"], acc[m]) for m in acc if m != "dro"}
    metrics["solver"] = {"objective": extra["objective"], "n_iter": extra["n_iter"], **tol}
    if "dro_admm_paper" in acc:
        gaps = [(extra["objective"]["dro_admm_paper"][k] - v) / v for k, v in extra["objective"]["dro"].items()]
        metrics["solver"]["admm_paper_mean_rel_obj_gap"] = float(np.mean(gaps))
    metrics["skipped"] = sorted(set(skipped))
    metrics["config"] = {"n": int(params["n"]), "p": int(params["p"]), "K": K, "alpha": alpha, "n_sim": n_sim,
                         "seeds": seeds}
    per_seed = {m: round(v / len(seeds), 3) for m, v in cpu.items()}
    write_metrics({"cpu_s_per_seed": per_seed}, ctx.out_dir / "timings.json")
    ctx.record(cpu_s_per_seed=per_seed)
    return rows, metrics


# ------------------------------------------------------------------------------- reference B (alpha = 0.05)
def _reference(params: dict, ctx: RunContext) -> dict:
    """B and s at the reference alpha for every seed: read from synthetic_main's coefficients.npz when it was
    made with the same (n, p, K, alpha, n_sim) and seeds, else recomputed (same numbers, more time)."""
    seeds = [int(s) for s in params["seeds"]]
    alpha, n_sim = float(params.get("alpha", 0.05)), int(params.get("n_sim", 1000))
    config = np.array([params["n"], params["p"], params["K"], alpha, n_sim], dtype=float)
    path = Path(params.get("reference_dir", ctx.out_dir.parent / "synthetic_main")) / "coefficients.npz"
    if path.exists():
        saved = read_arrays(path)
        if np.array_equal(saved["config"], config) and set(seeds) <= set(saved["seeds"].tolist()):
            ctx.log(f"reusing the alpha = {alpha} coefficients of {path.parent.name}")
            return {s: (float(saved[f"s_{s}"]), saved[f"B_{s}"]) for s in seeds}
    ctx.log(f"computing the alpha = {alpha} coefficients")
    out = {}
    for seed in seeds:
        X, _ = _data(params, seed)
        s = dro_radius(X, alpha=alpha, n_sim=n_sim, seed=seed)
        out[seed] = (s, solve_dro_nodewise(X, s, **_tol(params)).B)
    return out


def alpha_ablation(params: dict, ctx: RunContext):
    """Mean accuracy of DRO for each alpha in ``alphas`` (each solve warm-started from the reference B).

    Metrics: ``by_alpha.<key>.{mean_acc, se_acc, mean_ami, mean_sqrt_delta}`` (key: 0.05 -> '0p05'),
    ``acc_range`` = max - min of the mean accuracies.
    """
    ref = _reference(params, ctx)
    alphas = [float(a) for a in params["alphas"]]
    K, n_sim, tol = int(params["K"]), int(params.get("n_sim", 1000)), _tol(params)
    ref_alpha = float(params.get("alpha", 0.05))
    rows, by_alpha = [], {}
    for a in alphas:
        acc, ami, radii = {}, {}, []
        for seed, (s_ref, B_ref) in ref.items():
            X, y = _data(params, seed)
            if a == ref_alpha:
                s, labels = s_ref, spectral_labels(affinity_from_coefficients(B_ref), K)
            else:
                s = dro_radius(X, alpha=a, n_sim=n_sim, seed=seed)
                _, labels = _fit_dro(X, K, s, "admm", tol, warm=B_ref)
            sc = clustering_scores(y, labels)
            acc[seed], ami[seed] = sc["accuracy"], sc["ami"]
            radii.append(s)
            _score_rows(rows, "dro", seed, sc, alpha=a)
        block = _method_block(acc, ami)
        block["mean_sqrt_delta"] = float(np.mean(radii))
        by_alpha[key_of(a)] = block
        ctx.log(f"alpha {a}: mean accuracy {block['mean_acc']:.3f}")
    means = [b["mean_acc"] for b in by_alpha.values()]
    return rows, {"by_alpha": by_alpha, "alphas": alphas, "acc_range": float(max(means) - min(means))}


def k_misspecified(params: dict, ctx: RunContext):
    """Spectral step with K_test clusters on the reference B (true K = ``K``).

    Metrics: ``by_K.<K>.{mean_acc, se_acc, mean_ami}``, ``argmax_K``, ``peak_ratio`` = argmax_K / K_true,
    ``drop`` = mean acc(K_true) - mean acc(round(0.4 K_true)) (with its paired ``drop_se``).
    """
    ref = _reference(params, ctx)
    K_true = int(params["K"])
    K_tests = [int(k) for k in params["K_test"]]
    rows, by_K, acc_all = [], {}, {}
    for k in K_tests:
        acc, ami = {}, {}
        for seed, (_, B) in ref.items():
            _, y = _data(params, seed)
            sc = clustering_scores(y, spectral_labels(affinity_from_coefficients(B), k))
            acc[seed], ami[seed] = sc["accuracy"], sc["ami"]
            _score_rows(rows, "dro", seed, sc, K_test=k)
        by_K[str(k)] = _method_block(acc, ami)
        acc_all[k] = acc
    means = {k: by_K[str(k)]["mean_acc"] for k in K_tests}
    argmax = max(means, key=lambda k: (means[k], -abs(k - K_true)))
    metrics = {"by_K": by_K, "K_true": K_true, "K_test": K_tests, "argmax_K": int(argmax),
               "peak_ratio": argmax / K_true}
    low = int(round(0.4 * K_true))
    if K_true in acc_all and low in acc_all:
        d = _paired_difference(acc_all[K_true], acc_all[low])
        metrics.update(drop=d["mean"], drop_se=d["se"], drop_K_low=low)
    return rows, metrics


# ------------------------------------------------------------------------------------------- solver_check
def solver_check(params: dict, ctx: RunContext):
    """Objective of every solver on small instances, against the cvxpy reference (s from dro_radius).

    Metrics: ``max_rel_obj_gap`` = max over instances of |f_admm - f_cvxpy| / f_cvxpy; ``max_abs_diag`` over
    all solvers' B; per instance ``instances.<id>.{objective.<method>, n_iter.<method>}``;
    ``admm_paper_max_rel_obj_gap`` when admm_paper runs. Wall times go to timings.json.
    """
    methods = list(params.get("methods", ["admm", "cvxpy"]))
    tol = _tol(params)
    rows, inst_metrics, timings, gaps, paper_gaps, diag = [], {}, {}, [], [], 0.0
    backends = set()
    for spec in params["instances"]:
        X, _ = make_block_factor_data(int(spec["n"]), int(spec["p"]), int(spec["K"]), seed=int(spec["seed"]))
        s = dro_radius(X, alpha=float(params.get("alpha", 0.05)), n_sim=int(params.get("n_sim", 1000)),
                       seed=int(spec["seed"]))
        iid = f"n{spec['n']}_p{spec['p']}_s{spec['seed']}"
        objective, iters, timings[iid] = {}, {}, {}
        for m in methods:
            start = time.perf_counter()
            sol = solve_dro_nodewise(X, s, method=m, **tol)
            timings[iid][m] = time.perf_counter() - start
            objective[m], iters[m] = sol.objective, sol.n_iter
            diag = max(diag, float(np.max(np.abs(np.diag(sol.B)))))
            if sol.backend:
                backends.add(sol.backend)
            rows.append({"method": m, "seed": int(spec["seed"]), "step": sol.n_iter, "metric": "objective",
                         "value": sol.objective, "instance": iid})
        ref = objective["cvxpy"]
        gaps.append(abs(objective["admm"] - ref) / ref)
        if "admm_paper" in objective:
            paper_gaps.append((objective["admm_paper"] - ref) / ref)
        inst_metrics[iid] = {"objective": objective, "n_iter": iters, "sqrt_delta": s}
        ctx.log(f"{iid}: " + ", ".join(f"{m} {v:.8g}" for m, v in objective.items()))
    metrics = {"max_rel_obj_gap": float(max(gaps)), "max_abs_diag": diag, "instances": inst_metrics,
               "methods": methods, "cvxpy_backends": sorted(backends), **tol}
    if paper_gaps:
        metrics["admm_paper_max_rel_obj_gap"] = float(max(paper_gaps))
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(solver=",".join(sorted(backends)), timings=timings)
    return rows, metrics


# -------------------------------------------------------------------------------------------- performance
def performance(params: dict, ctx: RunContext):
    """``solve_dro_nodewise`` with method="admm" against method="cvxpy" on the same X and s, one process,
    BLAS on one thread: median wall time over ``repeats`` (cvxpy: ``cvxpy_repeats``), time ratio, and the
    relative objective gap. Metrics hold only the gaps and sizes; times go to timings.json and provenance."""
    repeats, cvx_repeats = int(params.get("repeats", 3)), int(params.get("cvxpy_repeats", 1))
    rows, gaps, timings, backends = [], {}, {}, {}
    for spec in params["instances"]:
        X, _ = make_block_factor_data(int(spec["n"]), int(spec["p"]), int(spec.get("K", 3)), seed=int(spec["seed"]))
        s = dro_radius(X, seed=int(spec["seed"]))
        iid = f"n{spec['n']}_p{spec['p']}"
        times, sols = {}, {}
        for m, reps in (("admm", repeats), ("cvxpy", cvx_repeats)):
            t = []
            for _ in range(reps):
                start = time.perf_counter()
                sols[m] = solve_dro_nodewise(X, s, method=m)
                t.append(time.perf_counter() - start)
            times[m] = statistics.median(t)
        backends[iid] = sols["cvxpy"].backend
        gaps[iid] = (sols["admm"].objective - sols["cvxpy"].objective) / sols["cvxpy"].objective
        timings[iid] = {"admm_s": times["admm"], "cvxpy_s": times["cvxpy"],
                        "ratio_cvxpy_over_admm": times["cvxpy"] / times["admm"], "admm_iters": sols["admm"].n_iter}
        rows.append({"method": "admm", "seed": int(spec["seed"]), "step": 0, "metric": "rel_obj_gap_vs_cvxpy",
                     "value": gaps[iid], "instance": iid})
        ctx.log(f"{iid}: admm {times['admm']:.3f} s, cvxpy ({backends[iid]}) {times['cvxpy']:.3f} s")
    write_metrics({"timings": timings, "backends": backends, "repeats": repeats, "cvxpy_repeats": cvx_repeats},
                  ctx.out_dir / "timings.json")
    ctx.record(solver=",".join(sorted(set(backends.values()))), timings=timings)
    return rows, {"rel_obj_gap": gaps, "backends": backends, "instances": list(gaps)}


# ----------------------------------------------------------------------------------- full-scale experiments
def rho_init_ablation(params: dict, ctx: RunContext):
    """Mean accuracy of DRO solved by ``method`` (admm_paper) for each rho_init; ``acc_range`` over the grid."""
    seeds, K = [int(s) for s in params["seeds"]], int(params["K"])
    method, tol = params.get("method", "admm_paper"), _tol(params)
    rows, by_rho = [], {}
    data = {}
    for seed in seeds:
        X, y = _data(params, seed)
        data[seed] = (X, y, dro_radius(X, alpha=float(params.get("alpha", 0.05)),
                                       n_sim=int(params.get("n_sim", 1000)), seed=seed))
    for r in params["rho_inits"]:
        acc, ami = {}, {}
        for seed, (X, y, s) in data.items():
            _, labels = _fit_dro(X, K, s, method, tol, rho_init=float(r))
            sc = clustering_scores(y, labels)
            acc[seed], ami[seed] = sc["accuracy"], sc["ami"]
            _score_rows(rows, f"dro_{method}", seed, sc, rho_init=float(r))
        by_rho[key_of(r)] = _method_block(acc, ami)
        ctx.log(f"rho_init {r}: mean accuracy {by_rho[key_of(r)]['mean_acc']:.3f}")
    means = [b["mean_acc"] for b in by_rho.values()]
    return rows, {"by_rho_init": by_rho, "rho_inits": [float(r) for r in params["rho_inits"]],
                  "acc_range": float(max(means) - min(means)), "method": method}


def scenario_sweeps(params: dict, ctx: RunContext):
    """Accuracy against the common-factor strength (rho = noise-free level, noise (1, 1)), the noise level
    (rho (0, 0)), and without a global factor (noise (0.1, 0.1)), for DRO and ``methods``.

    Metrics: ``<scenario>.<level key>.<method>.mean_acc`` (and se), with the levels in ``<scenario>.levels``.
    """
    seeds, K = [int(s) for s in params["seeds"]], int(params["K"])
    methods = list(params.get("methods", ["lasso_cv", "corr_spectral", "kmeans"]))
    tol, n_sim = _tol(params), int(params.get("n_sim", 1000))
    scenarios = {
        "common_factor": [((v, v), (1.0, 1.0), v) for v in params["rho_levels"]],
        "noise": [((0.0, 0.0), (v, v), v) for v in params["noise_levels"]],
        "no_global": [((0.0, 0.0), (0.1, 0.1), 0.1)],
    }
    rows, metrics = [], {}
    for name, settings in scenarios.items():
        metrics[name] = {"levels": [float(lv) for *_, lv in settings]}
        for rho_r, noise_r, level in settings:
            acc = {m: {} for m in ["dro", *methods]}
            for seed in seeds:
                X, y = _data(params, seed, rho_range=rho_r, noise_range=noise_r)
                s = dro_radius(X, n_sim=n_sim, seed=seed)
                _, labels = _fit_dro(X, K, s, "admm", tol)
                acc["dro"][seed] = clustering_scores(y, labels)["accuracy"]
                for m in methods:
                    acc[m][seed] = clustering_scores(y, BASELINES[m](X, K))["accuracy"]
                for m in acc:
                    rows.append({"method": m, "seed": seed, "step": 0, "metric": "accuracy", "value": acc[m][seed],
                                 "scenario": name, "level": float(level)})
            metrics[name][key_of(level)] = {m: {"mean_acc": _summary(v.values())["mean"],
                                                "se_acc": _summary(v.values())["se"]} for m, v in acc.items()}
            ctx.log(f"{name} {level}: dro {metrics[name][key_of(level)]['dro']['mean_acc']:.3f}")
    return rows, metrics


def digits(params: dict, ctx: RunContext):
    """Exploratory [ours, no claim]: the digits variables (first ``per_class`` images of digits 0-4 as
    variables, pixels as observations), DRO and the baselines; accuracy and AMI of each."""
    X, y = load_digits_variables(per_class=int(params.get("per_class", 30)))
    K = int(y.max()) + 1
    s = dro_radius(X, n_sim=int(params.get("n_sim", 1000)), seed=int(params.get("seed", 0)))
    _, labels = _fit_dro(X, K, s, "admm", _tol(params))
    scores = {"dro": clustering_scores(y, labels)}
    for m in params.get("methods", ["lasso_cv", "ridge", "corr_spectral", "kmeans"]):
        lab = BASELINES[m](X, K)
        if lab is not None:
            scores[m] = clustering_scores(y, lab)
    rows = []
    for m, sc in scores.items():
        _score_rows(rows, m, 0, sc)
    return rows, {"scores": scores, "n": int(X.shape[0]), "p": int(X.shape[1]), "K": K, "sqrt_delta": s}


EXPERIMENTS = {"synthetic_main": synthetic_main, "alpha_ablation": alpha_ablation, "k_misspecified": k_misspecified,
               "solver_check": solver_check, "performance": performance, "rho_init_ablation": rho_init_ablation,
               "scenario_sweeps": scenario_sweeps, "digits": digits}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
