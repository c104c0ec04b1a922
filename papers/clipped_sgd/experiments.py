"""Experiments of the clipped_sgd reproduction (spec: Experiments by scale).

``python -m papers.clipped_sgd.experiments NAME --config papers/clipped_sgd/config.yaml --scale quick --out DIR``,
with NAME one of ``moment_scaling`` (E1), ``sgd_vs_clip`` (E2), ``sgd_prediction`` (E2b), ``schedules`` (E3),
``generalization`` (E4) and ``performance``. Each function takes the params of its config block and returns
(tidy rows, metrics).

Seeds: the experiment's root SeedSequence (``shared.seeding.seed_sequence(root, NAME)``) spawns one child per
cell ((alpha, N) or N) in the order of the config; a cell spawns one child per dataset, and a dataset's child
spawns two: the data seed and the algorithm's index seed. Data and indices never share a generator.
Statistics over datasets are medians (E sigma_N^2 is infinite for alpha < 2).
"""
from __future__ import annotations

import math

import numpy as np

from shared import seeding
from shared.experiment import RunContext, main
from shared.oracles import sample_noise
from shared.results import write_metrics
from shared.timing import time_calls

from papers.clipped_sgd.analysis import clipped_fixed_point, loglog_slope, noise_moments, predicted_sgd_error
from papers.clipped_sgd.methods import run_sgd, run_sgd_batch
from papers.clipped_sgd.problems import make_problem

__all__ = ["EXPERIMENTS", "moment_scaling", "sgd_vs_clip", "sgd_prediction", "schedules", "generalization",
           "performance", "alpha_key", "n_key", "cell_seeds"]


def alpha_key(alpha: float) -> str:
    """Metric key of a tail index without a dot: 1.5 -> ``alpha_1p5``."""
    return "alpha_" + f"{float(alpha):g}".replace(".", "p")


def n_key(n: int) -> str:
    """Metric key of a sample size: powers of ten as ``n1e4``, others as ``n31623``."""
    n = int(n)
    j = round(math.log10(n))
    return f"n1e{j}" if 10 ** j == n else f"n{n}"


def cell_seeds(ctx: RunContext, n_cells: int, n_datasets: int) -> list:
    """``[cell][dataset] -> (data SeedSequence, index SeedSequence)``, spawned in a fixed order."""
    root = seeding.seed_sequence(ctx.seed, ctx.name)
    out = []
    for cell in root.spawn(n_cells):
        out.append([tuple(child.spawn(2)) for child in cell.spawn(n_datasets)])
    return out


def _median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def _median_se(values, rng: np.random.Generator, n_boot: int = 2000) -> float:
    """Robust bootstrap standard error of the median of ``values``: half the distance between the 16% and 84%
    quantiles of the medians of ``n_boot`` resamples of the datasets (the standard deviation would be dominated
    by the rare resamples that pick up one extreme dataset)."""
    values = np.asarray(values, dtype=float)
    draws = rng.integers(0, values.size, (n_boot, values.size))
    lo, hi = np.quantile(np.median(values[draws], axis=1), [0.16, 0.84])
    return float(0.5 * (hi - lo))


def _ls_problems(seeds, n, alpha, dim):
    return [make_problem("least_squares_synthetic", n_samples=n, tail_index=alpha, dim=dim, seed=data_ss)
            for data_ss, _ in seeds]


# ------------------------------------------------------------------------------------------ E1 moment_scaling
def moment_scaling(params: dict, ctx: RunContext):
    """E1: median over datasets of sigma_N^2(x*) and M_p(x*) for least squares at x* = 1.

    ||grad f(x*, xi_i)||^2 = eps_i^2 ||a_i||^2, drawn directly: eps = Student-t(alpha) (N), then
    q = ||a||^2 = chi^2_d (N) from the dataset's generator. Metrics: ``sigma2.median.<alpha>.<N>``,
    ``sigma2.slope.<alpha>`` (log-log fit over N), ``sigma2.theory.<alpha>`` = 2/alpha - 1,
    ``sigma2.abs_dev.<alpha>``, ``sigma2.max_abs_dev``; ``mp.median.<alpha>.<N>``, ``mp_slope.<alpha>``.
    """
    alphas = [float(a) for a in params["alphas"]]
    ns = [int(n) for n in params["n_samples"]]
    n_datasets, p, dim = int(params["n_datasets"]), float(params.get("p", 1.2)), int(params.get("dim", 10))
    seeds = cell_seeds(ctx, len(alphas) * len(ns), n_datasets)
    rows, med = [], {"sigma2": {}, "mp": {}}
    cell = 0
    for alpha in alphas:
        ak = alpha_key(alpha)
        med["sigma2"][ak], med["mp"][ak] = {}, {}
        for n in ns:
            s2, mp = [], []
            for ds, (data_ss, _) in enumerate(seeds[cell]):
                rng = np.random.default_rng(data_ss)
                eps = sample_noise(rng, n, "student_t", tail_index=alpha)
                q = rng.chisquare(dim, n)
                moments = noise_moments(eps * np.sqrt(q), p)
                s2.append(moments["sigma2"])
                mp.append(moments["moment_p"])
                rows.append({"method": "sigma2", "seed": ds, "step": n, "metric": "sigma2",
                             "value": moments["sigma2"], "alpha": alpha})
                rows.append({"method": "moment_p", "seed": ds, "step": n, "metric": f"moment_{p:g}",
                             "value": moments["moment_p"], "alpha": alpha})
            med["sigma2"][ak][n_key(n)], med["mp"][ak][n_key(n)] = _median(s2), _median(mp)
            cell += 1
        ctx.log(f"alpha={alpha}: N in {ns}, {n_datasets} datasets each")
    slopes = {ak: loglog_slope(ns, list(v.values())) for ak, v in med["sigma2"].items()}
    theory = {alpha_key(a): 2.0 / a - 1.0 for a in alphas}
    abs_dev = {ak: abs(slopes[ak] - theory[ak]) for ak in slopes}
    metrics = {
        "p": p, "n_datasets": n_datasets, "n_samples": ns, "alphas": alphas,
        "sigma2": {"median": med["sigma2"], "slope": slopes, "theory": theory, "abs_dev": abs_dev,
                   "max_abs_dev": max(abs_dev.values())},
        "mp": {"median": med["mp"]},
        "mp_slope": {ak: loglog_slope(ns, list(v.values())) for ak, v in med["mp"].items()},
    }
    return rows, metrics


# --------------------------------------------------------------------------------------------- E2 sgd_vs_clip
def _horizon(n: int, params: dict) -> int:
    return max(int(params.get("k_factor", 20)) * n, int(params.get("k_min", 20000)))


def sgd_vs_clip(params: dict, ctx: RunContext):
    """E2: least squares, SGD and Clip-SGD with constant gamma and lambda, K = max(20 N, 2e4), x_0 = 0, error =
    mean of ||x_k - x_S||^2 over k = K/4+1..K; the SGD and Clip-SGD runs of a dataset share its index sequence.

    Metrics per N (``<N>``): ``sgd.median``, ``clip.median``, ``pred.median`` (first-order formula),
    ``sgd_rel_dev.<N>`` = median |measured/predicted - 1|; ``sgd_rel_dev`` (max over N), the same with the exact
    stationary formula (``sgd_rel_dev_exact``); ``clip_ratio`` = median clip error at the largest N / at the
    smallest; ``clip_over_sgd`` = median over datasets of clip/SGD at the largest N; ``sgd_ratio``.
    """
    ns = [int(n) for n in params["n_samples"]]
    alpha, gamma, lam = float(params["tail_index"]), float(params["step_size"]), float(params["clip_level"])
    n_datasets, dim = int(params["n_datasets"]), int(params.get("dim", 10))
    seeds = cell_seeds(ctx, len(ns), n_datasets)
    rows, per_n, rel, rel_exact, paired = [], {}, {}, {}, {}
    for cell, n in enumerate(ns):
        problems = _ls_problems(seeds[cell], n, alpha, dim)
        idx = [index_ss for _, index_ss in seeds[cell]]
        K = _horizon(n, params)
        res = run_sgd_batch(problems + problems, K, step_size=gamma, clip_level=lam,
                            clipped=[False] * n_datasets + [True] * n_datasets, seeds=idx + idx)
        sgd = [r.err_avg for r in res[:n_datasets]]
        clip = [r.err_avg for r in res[n_datasets:]]
        pred = [predicted_sgd_error(p, gamma) for p in problems]
        exact = [predicted_sgd_error(p, gamma, order="exact") for p in problems]
        for ds in range(n_datasets):
            for method, value in (("sgd", sgd[ds]), ("clip_sgd", clip[ds]), ("sgd_predicted", pred[ds]),
                                  ("sgd_predicted_exact", exact[ds])):
                rows.append({"method": method, "seed": ds, "step": K, "metric": "err_avg", "value": value,
                             "n_samples": n})
            rows.append({"method": "clip_sgd", "seed": ds, "step": K, "metric": "clipped_fraction",
                         "value": res[n_datasets + ds].n_clipped / K, "n_samples": n})
        nk = n_key(n)
        per_n[nk] = {"K": K, "sgd": {"median": _median(sgd)}, "clip": {"median": _median(clip)},
                     "pred": {"median": _median(pred)}, "pred_exact": {"median": _median(exact)},
                     "clipped_fraction": {"median": _median([r.n_clipped / K for r in res[n_datasets:]])}}
        rel[nk] = _median(np.abs(np.asarray(sgd) / np.asarray(pred) - 1.0))
        rel_exact[nk] = _median(np.abs(np.asarray(sgd) / np.asarray(exact) - 1.0))
        last_ratio = np.asarray(clip) / np.asarray(sgd)
        paired[nk] = _median(last_ratio)
        ctx.log(f"N={n}: K={K}, median SGD {per_n[nk]['sgd']['median']:.4g}, "
                f"Clip-SGD {per_n[nk]['clip']['median']:.4g}, predicted {per_n[nk]['pred']['median']:.4g}")
    lo, hi = n_key(ns[0]), n_key(ns[-1])
    metrics = {"n_samples": ns, "step_size": gamma, "clip_level": lam, "tail_index": alpha, "by_n": per_n,
               "sgd_rel_dev_by_n": rel, "sgd_rel_dev": max(rel.values()),
               "sgd_rel_dev_exact_by_n": rel_exact, "sgd_rel_dev_exact": max(rel_exact.values()),
               "clip_ratio": per_n[hi]["clip"]["median"] / per_n[lo]["clip"]["median"],
               "sgd_ratio": per_n[hi]["sgd"]["median"] / per_n[lo]["sgd"]["median"],
               "clip_over_sgd_by_n": paired, "clip_over_sgd": paired[hi],
               "clip_over_sgd_se": _median_se(last_ratio, ctx.generator("bootstrap"))}
    return rows, metrics


# ------------------------------------------------------------------------------------------ E2b sgd_prediction
def sgd_prediction(params: dict, ctx: RunContext):
    """E2b: the first-order stationary SGD error (gamma/2) tr(Sigma^{-1} C) on many datasets (no runs).

    Metrics: ``pred.median.<N>`` and ``pred_ratio`` = median at the largest N / median at the smallest.
    """
    ns = [int(n) for n in params["n_samples"]]
    alpha, gamma = float(params["tail_index"]), float(params["step_size"])
    n_datasets, dim = int(params["n_datasets"]), int(params.get("dim", 10))
    seeds = cell_seeds(ctx, len(ns), n_datasets)
    rows, med = [], {}
    for cell, n in enumerate(ns):
        pred = [predicted_sgd_error(p, gamma) for p in _ls_problems(seeds[cell], n, alpha, dim)]
        rows += [{"method": "sgd_predicted", "seed": ds, "step": 0, "metric": "err_pred", "value": v,
                  "n_samples": n} for ds, v in enumerate(pred)]
        med[n_key(n)] = _median(pred)
    return rows, {"pred": {"median": med}, "pred_ratio": med[n_key(ns[-1])] / med[n_key(ns[0])],
                  "n_samples": ns, "n_datasets": n_datasets}


# --------------------------------------------------------------------------------------------- E3 schedules
def _record_points(K: int, lo: int, count: int) -> list:
    lo = min(lo, K)
    return sorted({int(round(v)) for v in np.logspace(math.log10(lo), math.log10(K), count)})


def schedules(params: dict, ctx: RunContext):
    """E3: SGD and Clip-SGD under each schedule at every N, all with the same K; error = mean of
    ||x_k - x_S||^2 over the last ``tail_fraction`` of the steps. One batch per schedule holds every (N,
    dataset, method) run; the datasets and index sequences are the same for all schedules.

    Metrics per schedule s: ``<s>.sgd.median.<N>``, ``<s>.clip.median.<N>``; ``clip_ratio.<s>`` (largest N over
    smallest), ``clip_ratio.max_const_decay``; ``clip_over_sgd.<s>`` (median over datasets at the largest N) with
    its bootstrap standard error ``clip_over_sgd_se.<s>``;
    ``theory_slope.<N>`` (slope of the median ||x_k - x_S||^2 against k over the record points, theory
    schedule, Clip-SGD) and ``theory_slope_sgd.<N>``.
    """
    ns = [int(n) for n in params["n_samples"]]
    alpha, K = float(params["tail_index"]), int(params["n_steps"])
    n_datasets, dim = int(params["n_datasets"]), int(params.get("dim", 10))
    burn_in = K - int(round(float(params.get("tail_fraction", 0.1)) * K))
    record = _record_points(K, int(params.get("record_from", 1000)), int(params.get("record_count", 12)))
    seeds = cell_seeds(ctx, len(ns), n_datasets)
    problems, idx, clipped, cells = [], [], [], []
    for cell, n in enumerate(ns):
        ps = _ls_problems(seeds[cell], n, alpha, dim)
        ix = [index_ss for _, index_ss in seeds[cell]]
        problems += ps + ps
        idx += ix + ix
        clipped += [False] * n_datasets + [True] * n_datasets
        cells += [(n, ds) for ds in range(n_datasets)] * 2
    rows, metrics = [], {"n_samples": ns, "n_steps": K, "record_at": record, "clip_ratio": {},
                         "clip_over_sgd": {}, "clip_over_sgd_se": {}, "theory_slope": {}, "theory_slope_sgd": {}}
    for name, sched in params["schedules"].items():
        res = run_sgd_batch(problems, K, step_size=sched["step_size"], clip_level=sched["clip_level"],
                            clipped=clipped, seeds=idx, burn_in=burn_in, record_at=record)
        errs = {}
        for r, (n, ds), is_clip in zip(res, cells, clipped):
            method = "clip_sgd" if is_clip else "sgd"
            errs.setdefault((method, n), []).append(r.err_avg)
            rows.append({"method": method, "seed": ds, "step": K, "metric": "err_tail", "value": r.err_avg,
                         "n_samples": n, "schedule": name})
            for k, v in r.err_at.items():
                rows.append({"method": method, "seed": ds, "step": k, "metric": "err_at", "value": v,
                             "n_samples": n, "schedule": name})
            if name == "theory":
                errs.setdefault((method, n, "at"), []).append([r.err_at[k] for k in record])
        out = {"sgd": {"median": {}}, "clip": {"median": {}}}
        for n in ns:
            out["sgd"]["median"][n_key(n)] = _median(errs[("sgd", n)])
            out["clip"]["median"][n_key(n)] = _median(errs[("clip_sgd", n)])
        metrics[name] = out
        metrics["clip_ratio"][name] = out["clip"]["median"][n_key(ns[-1])] / out["clip"]["median"][n_key(ns[0])]
        ratio = np.asarray(errs[("clip_sgd", ns[-1])]) / np.asarray(errs[("sgd", ns[-1])])
        metrics["clip_over_sgd"][name] = _median(ratio)
        metrics["clip_over_sgd_se"][name] = _median_se(ratio, ctx.generator("bootstrap", name))
        if name == "theory":
            for n in ns:
                for method, key in (("clip_sgd", "theory_slope"), ("sgd", "theory_slope_sgd")):
                    curve = np.median(np.asarray(errs[(method, n, "at")]), axis=0)
                    metrics[key][n_key(n)] = loglog_slope(record, curve)
        ctx.log(f"schedule {name}: K={K}, {len(problems)} runs; clip ratio {metrics['clip_ratio'][name]:.3g}")
    if {"const", "decay"} <= set(metrics["clip_ratio"]):
        metrics["clip_ratio"]["max_const_decay"] = max(metrics["clip_ratio"]["const"], metrics["clip_ratio"]["decay"])
    return rows, metrics


# ---------------------------------------------------------------------------------------- E4 generalization
def generalization(params: dict, ctx: RunContext):
    """E4: 1-D mean estimation with Student-t(alpha) data: median over datasets of (xbar - x*)^2 (ERM) and
    (x_lam - x*)^2 (clipped fixed point, threshold lambda), x* = 0; log-log slopes against N (theory -2/3 for
    alpha = 1.5 and -1). Optional: ``least_squares`` (median ||x_S - x*||^2 for the d-dim least-squares problem)
    and ``huber`` (sklearn ``HuberRegressor`` location, for comparison).

    Metrics: ``erm.median.<N>``, ``clipped.median.<N>``, ``slope_erm``, ``slope_clipped``, ``theory_erm`` =
    2/alpha - 2; optional ``ls.median.<N>``, ``slope_ls``, ``huber.median.<N>``, ``slope_huber``.
    """
    from papers.clipped_sgd.baselines import huber_location

    ns = [int(n) for n in params["n_samples"]]
    alpha, lam, n_datasets = float(params["tail_index"]), float(params["clip_level"]), int(params["n_datasets"])
    use_ls, use_huber = bool(params.get("least_squares", False)), bool(params.get("huber", False))
    seeds = cell_seeds(ctx, len(ns), n_datasets)
    rows, med = [], {"erm": {}, "clipped": {}, "ls": {}, "huber": {}}
    for cell, n in enumerate(ns):
        vals = {"erm": [], "clipped": [], "ls": [], "huber": []}
        for ds, (data_ss, other_ss) in enumerate(seeds[cell]):
            problem = make_problem("mean_synthetic", n_samples=n, tail_index=alpha, seed=data_ss)
            xi = problem.targets[:, 0]
            vals["erm"].append(float(problem.x_erm[0]) ** 2)
            vals["clipped"].append(clipped_fixed_point(xi, lam) ** 2)
            if use_huber:
                vals["huber"].append(huber_location(xi) ** 2)
            if use_ls:   # its own data stream: the dataset's second child
                ls = make_problem("least_squares_synthetic", n_samples=n, tail_index=alpha,
                                  dim=int(params.get("dim", 10)), seed=other_ss)
                vals["ls"].append(float(np.sum((ls.x_erm - ls.x_pop) ** 2)))
        for key, values in vals.items():
            if not values:
                continue
            med[key][n_key(n)] = _median(values)
            rows += [{"method": key, "seed": ds, "step": n, "metric": "sq_error", "value": v, "n_samples": n}
                     for ds, v in enumerate(values)]
        ctx.log(f"N={n}: {n_datasets} datasets")
    metrics = {"n_samples": ns, "tail_index": alpha, "clip_level": lam, "theory_erm": 2.0 / alpha - 2.0,
               "theory_clipped": -1.0}
    for key, slope_key in (("erm", "slope_erm"), ("clipped", "slope_clipped"), ("ls", "slope_ls"),
                           ("huber", "slope_huber")):
        if med[key]:
            metrics[key] = {"median": med[key]}
            metrics[slope_key] = loglog_slope(ns, list(med[key].values()))
    return rows, metrics


# -------------------------------------------------------------------------------------------- performance
def _timed(fn, repeats: int):
    """Median CPU time of ``repeats`` calls (every timed loop is single-threaded, so CPU time is its compute
    time, and it is less disturbed than wall time by other jobs on a shared machine) and the last output."""
    t = time_calls(fn, repeats)
    return t.cpu_median, t.output


def performance(params: dict, ctx: RunContext):
    """Time per 1e4 steps of Clip-SGD: the numpy loop on one dataset, the numpy loop vectorised over
    ``n_vectorised`` runs (per run-step), ``torch.optim.SGD`` + ``clip_grad_norm_`` (float64, batch 1), and one
    epoch of sklearn's ``SGDRegressor`` (N steps, plain SGD, for reference), all on the same least-squares dataset
    and index sequence, BLAS and torch on one thread.

    Equivalence (deterministic, in metrics.json): relative difference of the numpy and torch iterates after
    ``equivalence_steps`` steps with clip eps = 1e-6 (``rel_diff_torch.eps_torch``) and eps = 0
    (``rel_diff_torch.eps_zero``); gradient evaluations per step counted by ``shared.oracles.CallCounter``.
    CPU times (single-threaded loops) go to ``timings.json`` and provenance.json.
    """
    import torch

    from papers.clipped_sgd.baselines import run_torch_sgd, sgd_regressor_epoch

    torch.set_num_threads(1)
    n, alpha = int(params["n_samples"]), float(params["tail_index"])
    gamma, lam = float(params["step_size"]), float(params["clip_level"])
    n_steps, n_eq = int(params["n_steps"]), int(params["equivalence_steps"])
    n_vec, repeats = int(params.get("n_vectorised", 64)), int(params.get("repeats", 3))
    (data_ss, index_ss), = cell_seeds(ctx, 1, 1)[0]
    problem = make_problem("least_squares_synthetic", n_samples=n, tail_index=alpha, dim=int(params.get("dim", 10)),
                           seed=data_ss)
    vec_seeds = [index_ss] + list(index_ss.spawn(n_vec - 1))
    per = 1e4 / n_steps

    run_sgd(problem, min(n_steps, 1000), step_size=gamma, clip_level=lam, seed=index_ss)   # warm-up
    t_single, single = _timed(lambda: run_sgd(problem, n_steps, step_size=gamma, clip_level=lam, seed=index_ss),
                              repeats)
    t_vec, vec = _timed(lambda: run_sgd_batch([problem] * n_vec, n_steps, step_size=gamma, clip_level=lam,
                                              seeds=vec_seeds), repeats)
    if not np.array_equal(vec[0].x_final, single.x_final):
        raise RuntimeError("the vectorised run 0 differs from the single run on the same index sequence")
    t_torch, (x_torch, torch_calls) = _timed(
        lambda: run_torch_sgd(problem, n_eq, step_size=gamma, clip_level=lam, seed=index_ss), 1)
    x_np_eps = run_sgd(problem, n_eq, step_size=gamma, clip_level=lam, seed=index_ss, clip_eps=1e-6).x_final
    x_np_zero = run_sgd(problem, n_eq, step_size=gamma, clip_level=lam, seed=index_ss).x_final
    scale = float(np.linalg.norm(x_torch))
    rel = {"eps_torch": float(np.linalg.norm(x_np_eps - x_torch)) / scale,
           "eps_zero": float(np.linalg.norm(x_np_zero - x_torch)) / scale}
    sgd_regressor_epoch(problem, step_size=gamma)   # warm-up (import)
    t_skl, _ = _timed(lambda: sgd_regressor_epoch(problem, step_size=gamma), repeats)
    timings = {
        "per_1e4_steps_s": {"numpy_single": t_single * per, "numpy_vectorised_per_run": t_vec * per / n_vec,
                            "torch": t_torch * 1e4 / n_eq, "sklearn_sgdregressor_epoch": t_skl * 1e4 / n},
    }
    t = timings["per_1e4_steps_s"]
    timings["ratio"] = {"numpy_over_torch": t["numpy_single"] / t["torch"],
                        "numpy_vectorised_over_torch": t["numpy_vectorised_per_run"] / t["torch"],
                        "sklearn_over_torch": t["sklearn_sgdregressor_epoch"] / t["torch"]}
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(timings=timings)
    ctx.log(f"per 1e4 steps: numpy {t['numpy_single']:.3g} s, vectorised {t['numpy_vectorised_per_run']:.3g} s/run, "
            f"torch {t['torch']:.3g} s; rel. diff to torch {rel['eps_torch']:.2g} (eps 1e-6), "
            f"{rel['eps_zero']:.2g} (eps 0)")
    rows = [{"method": "numpy_vs_torch", "seed": 0, "step": n_eq, "metric": f"rel_diff_{k}", "value": v}
            for k, v in rel.items()]
    metrics = {"n_samples": n, "n_steps": n_steps, "equivalence_steps": n_eq, "n_vectorised": n_vec,
               "repeats": repeats, "rel_diff_torch": rel,
               "grad_evals_per_step": {"numpy": single.grad_evals / n_steps, "torch": torch_calls / n_eq},
               "clipped_fraction": single.n_clipped / n_steps}
    return rows, metrics


EXPERIMENTS = {"moment_scaling": moment_scaling, "sgd_vs_clip": sgd_vs_clip, "sgd_prediction": sgd_prediction,
               "schedules": schedules, "generalization": generalization, "performance": performance}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
