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
from shared.results import write_metrics
from shared.timing import alternating_least_cpu

from papers.clipped_sgd.analysis import clipped_fixed_point, loglog_slope, noise_moments, predicted_sgd_error
from papers.clipped_sgd.methods import run_sgd, run_sgd_batch
from papers.clipped_sgd.problems import draw_noise, make_problem
from papers.clipped_sgd.quadratic import quadratic_runs, sgd_expected_error, step_schedule

__all__ = ["EXPERIMENTS", "moment_scaling", "sgd_vs_clip", "sgd_prediction", "schedules", "generalization",
           "performance", "section4", "real_features", "alpha_key", "n_key", "cell_seeds", "block_slices",
           "paired_log_ratios"]


def alpha_key(alpha: float) -> str:
    """Metric key of a tail index without a dot: 1.5 -> ``alpha_1p5``."""
    return "alpha_" + f"{float(alpha):g}".replace(".", "p")


def n_key(n: int) -> str:
    """Metric key of a sample size: powers of ten as ``n1e4``, others as ``n31623``."""
    n = int(n)
    j = round(math.log10(n))
    return f"n1e{j}" if 10 ** j == n else f"n{n}"


def cell_seeds(ctx: RunContext, n_cells: int, n_datasets: int, *stream: str) -> list:
    """``[cell][dataset] -> (data SeedSequence, index SeedSequence)``, spawned in a fixed order from the
    experiment's root stream, or from its sub-stream ``stream`` (controls and extra seed blocks use their own)."""
    root = seeding.seed_sequence(ctx.seed, ctx.name, *stream)
    out = []
    for cell in root.spawn(n_cells):
        out.append([tuple(child.spawn(2)) for child in cell.spawn(n_datasets)])
    return out


def _median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def block_slices(n_datasets: int, n_blocks: int) -> list:
    """Split the datasets 0..n_datasets-1 of a cell into ``n_blocks`` consecutive blocks of equal size.

    A block is one replicate of the whole experiment on fresh datasets: a statistic (median over the block's
    datasets, then a slope or a ratio) computed per block gives the per-seed samples that the audit's
    confidence interval decides on.
    """
    n_datasets, n_blocks = int(n_datasets), int(n_blocks)
    if n_blocks < 1 or n_datasets % n_blocks:
        raise ValueError(f"n_blocks = {n_blocks} must be >= 1 and divide n_datasets = {n_datasets}")
    size = n_datasets // n_blocks
    return [slice(b * size, (b + 1) * size) for b in range(n_blocks)]


def paired_log_ratios(num, den) -> list:
    """log(num_i / den_i) for paired positive values (same dataset index): per-dataset samples of a ratio on the
    log scale, whose mean is the log of the geometric-mean ratio (robust to the heavy-tailed errors)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if num.shape != den.shape or np.any(num <= 0) or np.any(den <= 0):
        raise ValueError("paired ratios need two positive arrays of the same shape")
    return [float(v) for v in np.log(num / den)]


def _median_se(values, rng: np.random.Generator, n_boot: int = 2000) -> float:
    """Robust bootstrap standard error of the median of ``values``: half the distance between the 16% and 84%
    quantiles of the medians of ``n_boot`` resamples of the datasets (the standard deviation would be dominated
    by the rare resamples that pick up one extreme dataset)."""
    values = np.asarray(values, dtype=float)
    draws = rng.integers(0, values.size, (n_boot, values.size))
    lo, hi = np.quantile(np.median(values[draws], axis=1), [0.16, 0.84])
    return float(0.5 * (hi - lo))


def _ls_problems(seeds, n, alpha, dim, design="gaussian", noise="student_t"):
    """Least-squares datasets of one cell: Gaussian features (the spec's synthetic problem) or the real diabetes
    features (``design="diabetes"``, dim 10), with Student-t or Gaussian label noise."""
    if design == "diabetes":
        return [make_problem("least_squares_diabetes", n_samples=n, tail_index=alpha, seed=data_ss, noise=noise)
                for data_ss, _ in seeds]
    return [make_problem("least_squares_synthetic", n_samples=n, tail_index=alpha, dim=dim, seed=data_ss,
                         noise=noise) for data_ss, _ in seeds]


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
    blocks = block_slices(n_datasets, int(params.get("n_blocks", 1)))
    seeds = cell_seeds(ctx, len(alphas) * len(ns), n_datasets)
    theory = {alpha_key(a): 2.0 / a - 1.0 for a in alphas}
    rows, med = [], {"sigma2": {}, "mp": {}}
    raw = {"sigma2": {}, "mp": {}}     # [ak][n] -> per-dataset values
    cell = 0
    for alpha in alphas:
        ak = alpha_key(alpha)
        med["sigma2"][ak], med["mp"][ak] = {}, {}
        raw["sigma2"][ak], raw["mp"][ak] = [], []
        for n in ns:
            s2, mp = _moments_at_xstar(seeds[cell], n, alpha, dim, p, "student_t")
            for ds in range(n_datasets):
                rows.append({"method": "sigma2", "seed": ds, "step": n, "metric": "sigma2",
                             "value": s2[ds], "alpha": alpha})
                rows.append({"method": "moment_p", "seed": ds, "step": n, "metric": f"moment_{p:g}",
                             "value": mp[ds], "alpha": alpha})
            med["sigma2"][ak][n_key(n)], med["mp"][ak][n_key(n)] = _median(s2), _median(mp)
            raw["sigma2"][ak].append(s2)
            raw["mp"][ak].append(mp)
            cell += 1
        ctx.log(f"alpha={alpha}: N in {ns}, {n_datasets} datasets each")
    slopes = {ak: loglog_slope(ns, list(v.values())) for ak, v in med["sigma2"].items()}
    abs_dev = {ak: abs(slopes[ak] - theory[ak]) for ak in slopes}
    block_s2 = {ak: _block_slopes(ns, v, blocks) for ak, v in raw["sigma2"].items()}
    block_mp = {ak: _block_slopes(ns, v, blocks) for ak, v in raw["mp"].items()}
    metrics = {
        "p": p, "n_datasets": n_datasets, "n_samples": ns, "alphas": alphas, "n_blocks": len(blocks),
        "sigma2": {"median": med["sigma2"], "slope": slopes, "theory": theory, "abs_dev": abs_dev,
                   "max_abs_dev": max(abs_dev.values())},
        "mp": {"median": med["mp"]},
        "mp_slope": {ak: loglog_slope(ns, list(v.values())) for ak, v in med["mp"].items()},
        "blocks": {"sigma2_slope": block_s2, "mp_slope": block_mp,
                   "sigma2_max_abs_dev": [max(abs(block_s2[ak][b] - theory[ak]) for ak in block_s2)
                                          for b in range(len(blocks))]},
    }
    ctrl = params.get("control_gaussian")
    if ctrl:   # light-tailed control: Gaussian eps in place of Student-t, same recipe otherwise
        n_ctrl = int(ctrl["n_datasets"])
        cblocks = block_slices(n_ctrl, int(ctrl.get("n_blocks", 1)))
        cseeds = cell_seeds(ctx, len(ns), n_ctrl, "control_gaussian")
        vals = [_moments_at_xstar(cseeds[c], n, 2.0, dim, p, "gaussian") for c, n in enumerate(ns)]
        s2_slopes = _block_slopes(ns, [v[0] for v in vals], cblocks)
        metrics["control"] = {"gaussian": {
            "sigma2_slope": s2_slopes,
            "sigma2_max_abs_dev": [max(abs(sl - th) for th in theory.values()) for sl in s2_slopes]}}
    return rows, metrics


def _moments_at_xstar(seeds, n, alpha, dim, p, noise):
    """sigma_N^2(x*) and M_p(x*) of least squares for each dataset seed: ||grad f(x*, xi_i)||^2 = eps_i^2 q_i with
    eps the data noise and q = ||a||^2 ~ chi^2_d, drawn in that order from the dataset's generator."""
    s2, mp = [], []
    for data_ss, _ in seeds:
        rng = np.random.default_rng(data_ss)
        eps = draw_noise(rng, n, noise, alpha)
        q = rng.chisquare(dim, n)
        moments = noise_moments(eps * np.sqrt(q), p)
        s2.append(moments["sigma2"])
        mp.append(moments["moment_p"])
    return s2, mp


def _block_slopes(ns, per_n_values, blocks) -> list:
    """Per block: the log-log slope over N of the block's median (per_n_values[j] holds the datasets at ns[j])."""
    arr = np.asarray(per_n_values, dtype=float)        # (len(ns), n_datasets)
    return [loglog_slope(ns, np.median(arr[:, sl], axis=1)) for sl in blocks]


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
    design = params.get("design", "gaussian")
    seeds = cell_seeds(ctx, len(ns), n_datasets)
    rows, per_n, rel, rel_exact, paired = [], {}, {}, {}, {}
    errs = {"sgd": [], "clip": []}
    for cell, n in enumerate(ns):
        problems = _ls_problems(seeds[cell], n, alpha, dim, design)
        idx = [index_ss for _, index_ss in seeds[cell]]
        K = _horizon(n, params)
        res = run_sgd_batch(problems + problems, K, step_size=gamma, clip_level=lam,
                            clipped=[False] * n_datasets + [True] * n_datasets, seeds=idx + idx)
        sgd = [r.err_avg for r in res[:n_datasets]]
        clip = [r.err_avg for r in res[n_datasets:]]
        errs["sgd"].append(sgd)
        errs["clip"].append(clip)
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
    samples = {"clip_log_growth": paired_log_ratios(errs["clip"][-1], errs["clip"][0]),
               "sgd_log_growth": paired_log_ratios(errs["sgd"][-1], errs["sgd"][0]),
               "log_clip_over_sgd": paired_log_ratios(errs["clip"][-1], errs["sgd"][-1])}
    control = {}
    ctrl = params.get("control_gaussian")
    if ctrl:   # light-tailed control: Gaussian label noise, one N, the same runs
        n_c, d_c = int(ctrl["n_samples"]), int(ctrl["n_datasets"])
        cseeds = cell_seeds(ctx, 1, d_c, "control_gaussian")[0]
        cprob = _ls_problems(cseeds, n_c, alpha, dim, design, noise="gaussian")
        cidx = [index_ss for _, index_ss in cseeds]
        cres = run_sgd_batch(cprob + cprob, _horizon(n_c, params), step_size=gamma, clip_level=lam,
                             clipped=[False] * d_c + [True] * d_c, seeds=cidx + cidx)
        control["gaussian"] = {"n_samples": n_c, "log_clip_over_sgd": paired_log_ratios(
            [r.err_avg for r in cres[d_c:]], [r.err_avg for r in cres[:d_c]])}
        ctx.log(f"control (Gaussian noise, N={n_c}): median clip/SGD "
                f"{math.exp(_median(control['gaussian']['log_clip_over_sgd'])):.3g}")
    cpred = params.get("control_pred")
    if cpred:   # clipping off, without runs: SGD's first-order stationary error on many fresh dataset pairs
        n_p = int(cpred["n_datasets"])
        pseeds = cell_seeds(ctx, 2, n_p, "control_pred")
        pred = [[predicted_sgd_error(p, gamma) for p in _ls_problems(pseeds[c], n, alpha, dim, design)]
                for c, n in enumerate((ns[0], ns[-1]))]
        control["pred"] = {"n_datasets": n_p, "log_growth": paired_log_ratios(pred[1], pred[0])}
        ctx.log(f"control (SGD's predicted error, {n_p} pairs): mean log growth "
                f"{np.mean(control['pred']['log_growth']):.3g}")
    metrics = {"n_samples": ns, "step_size": gamma, "clip_level": lam, "tail_index": alpha, "by_n": per_n,
               "samples": samples, "control": control,
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
    rows, med, preds = [], {}, []
    for cell, n in enumerate(ns):
        pred = [predicted_sgd_error(p, gamma) for p in _ls_problems(seeds[cell], n, alpha, dim)]
        rows += [{"method": "sgd_predicted", "seed": ds, "step": 0, "metric": "err_pred", "value": v,
                  "n_samples": n} for ds, v in enumerate(pred)]
        med[n_key(n)] = _median(pred)
        preds.append(pred)
    metrics = {"pred": {"median": med}, "pred_ratio": med[n_key(ns[-1])] / med[n_key(ns[0])],
               "n_samples": ns, "n_datasets": n_datasets,
               "samples": {"log_pred_growth": paired_log_ratios(preds[-1], preds[0])}}
    ctrl = params.get("control_gaussian")
    if ctrl:   # light-tailed control: Gaussian label noise
        n_c = int(ctrl["n_datasets"])
        cseeds = cell_seeds(ctx, len(ns), n_c, "control_gaussian")
        cpred = [[predicted_sgd_error(make_problem("least_squares_synthetic", n_samples=n, tail_index=alpha, dim=dim,
                                                   seed=data_ss, noise="gaussian"), gamma)
                  for data_ss, _ in cseeds[c]] for c, n in enumerate(ns)]
        metrics["control"] = {"gaussian": {"log_pred_growth": paired_log_ratios(cpred[-1], cpred[0])}}
    return rows, metrics


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
    all_errs = {}
    rows, metrics = [], {"n_samples": ns, "n_steps": K, "record_at": record, "clip_ratio": {},
                         "clip_over_sgd": {}, "clip_over_sgd_se": {}, "theory_slope": {}, "theory_slope_sgd": {}}
    by_name = params["schedules"]
    for name, sched in ctx.progress(by_name.items(), total=len(by_name), what="step-size and clipping schedules"):
        res = run_sgd_batch(problems, K, step_size=sched["step_size"], clip_level=sched["clip_level"],
                            clipped=clipped, seeds=idx, burn_in=burn_in, record_at=record)
        errs = all_errs.setdefault(name, {})
        for r, (n, ds), is_clip in zip(res, cells, clipped):
            method = "clip_sgd" if is_clip else "sgd"
            errs.setdefault((method, n), []).append(r.err_avg)
            rows.append({"method": method, "seed": ds, "step": K, "metric": "err_tail", "value": r.err_avg,
                         "n_samples": n, "schedule": name})
            for k, v in r.err_at.items():
                rows.append({"method": method, "seed": ds, "step": k, "metric": "err_at", "value": v,
                             "n_samples": n, "schedule": name})
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
        samples = metrics.setdefault("samples", {})
        for method, key in (("clip_sgd", "clip"), ("sgd", "sgd")):
            samples.setdefault(f"{key}_log_growth", {})[name] = paired_log_ratios(errs[(method, ns[-1])],
                                                                                  errs[(method, ns[0])])
            samples.setdefault(f"{key}_slope_in_k", {})[name] = [loglog_slope(record, curve)
                                                                 for curve in errs[(method, ns[-1], "at")]]
        ctx.log(f"schedule {name}: K={K}, {len(problems)} runs; clip ratio {metrics['clip_ratio'][name]:.3g}")
    if {"const", "decay"} <= set(metrics["clip_ratio"]):
        metrics["clip_ratio"]["max_const_decay"] = max(metrics["clip_ratio"]["const"], metrics["clip_ratio"]["decay"])
        for key in ("clip_log_growth", "sgd_log_growth"):
            g = metrics["samples"][key]
            g["max_const_decay"] = [max(a, b) for a, b in zip(g["const"], g["decay"])]
    extra = params.get("extra_blocks")
    if extra:
        metrics["blocks"] = {"clip_over_sgd": {}, "clip_log_growth": {}, "sgd_log_growth": {}}
        for name in extra["schedules"]:
            main_block = {(m, n): all_errs[name][(m, n)] for m in ("sgd", "clip_sgd") for n in ns}
            blocks = [main_block] + _extra_blocks(ctx, params["schedules"][name], name, ns, int(extra["n_blocks"]),
                                                  params, rows)
            hi, lo = ns[-1], ns[0]
            metrics["blocks"]["clip_over_sgd"][name] = [
                _median(np.asarray(b[("clip_sgd", hi)]) / np.asarray(b[("sgd", hi)])) for b in blocks]
            for m, key in (("clip_sgd", "clip_log_growth"), ("sgd", "sgd_log_growth")):
                metrics["blocks"][key][name] = [math.log(_median(b[(m, hi)]) / _median(b[(m, lo)])) for b in blocks]
            ctx.log(f"schedule {name}: median clip/SGD ratio at N={hi} in {len(blocks)} blocks of {n_datasets} "
                    "datasets: " + ", ".join(f"{v:.3g}" for v in metrics["blocks"]["clip_over_sgd"][name]))
        for key in ("clip_log_growth", "sgd_log_growth"):
            g = metrics["blocks"][key]
            if {"const", "decay"} <= set(g):
                g["max_const_decay"] = [max(a, b) for a, b in zip(g["const"], g["decay"])]
    return rows, metrics


def _extra_blocks(ctx, sched, name, ns, n_blocks, params, rows) -> list:
    """``n_blocks`` further replicates of one schedule's cells (every N, SGD and Clip-SGD on the same fresh
    datasets and index sequences), from their own seed stream so that the main cells stay as they are.

    Returns, per block, ``{(method, N): [error per dataset]}``; the tidy rows get metric ``err_tail_block``.
    """
    alpha, K = float(params["tail_index"]), int(params["n_steps"])
    n_datasets, dim = int(params["n_datasets"]), int(params.get("dim", 10))
    burn_in = K - int(round(float(params.get("tail_fraction", 0.1)) * K))
    seeds = cell_seeds(ctx, n_blocks * len(ns), n_datasets, "extra_blocks", name)
    problems, idx, keys = [], [], []
    for b in range(n_blocks):
        for j, n in enumerate(ns):
            cell = seeds[b * len(ns) + j]
            ps = _ls_problems(cell, n, alpha, dim)
            ix = [index_ss for _, index_ss in cell]
            problems += ps + ps
            idx += ix + ix
            keys += [(b, "sgd", n, ds) for ds in range(n_datasets)] + [(b, "clip_sgd", n, ds)
                                                                        for ds in range(n_datasets)]
    clipped = [k[1] == "clip_sgd" for k in keys]
    res = run_sgd_batch(problems, K, step_size=sched["step_size"], clip_level=sched["clip_level"], clipped=clipped,
                        seeds=idx, burn_in=burn_in)
    out = [{} for _ in range(n_blocks)]
    for (b, method, n, ds), r in zip(keys, res):
        out[b].setdefault((method, n), []).append(r.err_avg)
        rows.append({"method": method, "seed": (b + 1) * n_datasets + ds, "step": K, "metric": "err_tail_block",
                     "value": r.err_avg, "n_samples": n, "schedule": name})
    return out


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
    blocks = block_slices(n_datasets, int(params.get("n_blocks", 1)))
    rows, med = [], {"erm": {}, "clipped": {}, "ls": {}, "huber": {}}
    raw = {"erm": [], "clipped": []}
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
        raw["erm"].append(vals["erm"])
        raw["clipped"].append(vals["clipped"])
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
    metrics["blocks"] = {"slope_erm": _block_slopes(ns, raw["erm"], blocks),
                         "slope_clipped": _block_slopes(ns, raw["clipped"], blocks)}
    ctrl = params.get("control_gaussian")
    if ctrl:   # light-tailed control: Gaussian samples, where the sample mean has the parametric rate N^{-1}
        n_c = int(ctrl["n_datasets"])
        cseeds = cell_seeds(ctx, len(ns), n_c, "control_gaussian")
        cerm = [[float(make_problem("mean_synthetic", n_samples=n, tail_index=alpha, seed=data_ss,
                                    noise="gaussian").x_erm[0]) ** 2 for data_ss, _ in cseeds[c]]
                for c, n in enumerate(ns)]
        metrics["control"] = {"gaussian": {"slope_erm": _block_slopes(
            ns, cerm, block_slices(n_c, int(ctrl.get("n_blocks", 1))))}}
    return rows, metrics


# -------------------------------------------------------------------------------------------- performance
def performance(params: dict, ctx: RunContext):
    """CPU time per 1e4 steps of Clip-SGD on one least-squares dataset and index sequence, BLAS and torch on one
    thread: the numpy loop on one dataset (``n_steps`` steps), the numpy loop vectorised over ``n_vectorised`` runs
    (per run-step), ``torch.optim.SGD`` + ``clip_grad_norm_`` (float64, batch 1, ``torch_steps`` steps; the
    strongest fair comparator: the one library routine that computes the same iterates) and one epoch of sklearn's
    ``SGDRegressor`` (N steps of plain SGD without clipping, a reference only).

    Timing: ``shared.timing.alternating_least_cpu`` with ``rounds`` rounds that call the four in turn, the least
    process-CPU time per call of each (load only ever adds time), scaled to 1e4 steps; ratios to torch.

    Equivalence (deterministic, in metrics.json): relative difference of the numpy and torch iterates after
    ``equivalence_steps`` steps with clip eps = 1e-6 (``rel_diff_torch.eps_torch``) and eps = 0
    (``rel_diff_torch.eps_zero``); gradient evaluations per step counted by ``shared.oracles.CallCounter``.
    CPU times go to ``timings.json`` and provenance.json.
    """
    import torch

    from papers.clipped_sgd.baselines import run_torch_sgd, sgd_regressor_epoch

    torch.set_num_threads(1)
    n, alpha = int(params["n_samples"]), float(params["tail_index"])
    gamma, lam = float(params["step_size"]), float(params["clip_level"])
    n_steps, n_eq = int(params["n_steps"]), int(params["equivalence_steps"])
    n_torch = int(params.get("torch_steps", n_eq))
    n_vec, rounds = int(params.get("n_vectorised", 64)), int(params.get("rounds", 5))
    if min(n_steps, n_eq, n_torch, n_vec, rounds) < 1:
        raise ValueError("n_steps, equivalence_steps, torch_steps, n_vectorised and rounds must be >= 1")
    (data_ss, index_ss), = cell_seeds(ctx, 1, 1)[0]
    problem = make_problem("least_squares_synthetic", n_samples=n, tail_index=alpha, dim=int(params.get("dim", 10)),
                           seed=data_ss)
    vec_seeds = [index_ss] + list(index_ss.spawn(n_vec - 1))

    single = run_sgd(problem, n_steps, step_size=gamma, clip_level=lam, seed=index_ss)
    vec = run_sgd_batch([problem] * n_vec, n_steps, step_size=gamma, clip_level=lam, seeds=vec_seeds)
    if not np.array_equal(vec[0].x_final, single.x_final):
        raise RuntimeError("the vectorised run 0 differs from the single run on the same index sequence")
    x_torch, torch_calls = run_torch_sgd(problem, n_eq, step_size=gamma, clip_level=lam, seed=index_ss)
    x_np_eps = run_sgd(problem, n_eq, step_size=gamma, clip_level=lam, seed=index_ss, clip_eps=1e-6).x_final
    x_np_zero = run_sgd(problem, n_eq, step_size=gamma, clip_level=lam, seed=index_ss).x_final
    scale = float(np.linalg.norm(x_torch))
    rel = {"eps_torch": float(np.linalg.norm(x_np_eps - x_torch)) / scale,
           "eps_zero": float(np.linalg.norm(x_np_zero - x_torch)) / scale}

    fns = {"numpy_single": lambda: run_sgd(problem, n_steps, step_size=gamma, clip_level=lam, seed=index_ss),
           "numpy_vectorised": lambda: run_sgd_batch([problem] * n_vec, n_steps, step_size=gamma, clip_level=lam,
                                                     seeds=vec_seeds),
           "torch": lambda: run_torch_sgd(problem, n_torch, step_size=gamma, clip_level=lam, seed=index_ss),
           "sklearn": lambda: sgd_regressor_epoch(problem, step_size=gamma)}
    timed = alternating_least_cpu(fns, rounds)
    sec = timed["seconds"]
    t = {"numpy_single": sec["numpy_single"] * 1e4 / n_steps,
         "numpy_vectorised_per_run": sec["numpy_vectorised"] * 1e4 / (n_steps * n_vec),
         "torch": sec["torch"] * 1e4 / n_torch, "sklearn_sgdregressor_epoch": sec["sklearn"] * 1e4 / n}
    timings = {"per_1e4_steps_s": t, "calls_per_measurement": timed["number"], "rounds": timed["rounds"],
               "ratio": {"numpy_over_torch": t["numpy_single"] / t["torch"],
                         "numpy_vectorised_over_torch": t["numpy_vectorised_per_run"] / t["torch"],
                         "sklearn_over_torch": t["sklearn_sgdregressor_epoch"] / t["torch"]}}
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(timings=timings)
    ctx.log(f"per 1e4 steps (least CPU of {rounds} alternating rounds): numpy {t['numpy_single']:.3g} s, vectorised "
            f"{t['numpy_vectorised_per_run']:.3g} s/run, torch {t['torch']:.3g} s; rel. diff to torch "
            f"{rel['eps_torch']:.2g} (eps 1e-6), {rel['eps_zero']:.2g} (eps 0)")
    rows = [{"method": "numpy_vs_torch", "seed": 0, "step": n_eq, "metric": f"rel_diff_{k}", "value": v}
            for k, v in rel.items()]
    metrics = {"n_samples": n, "n_steps": n_steps, "equivalence_steps": n_eq, "torch_steps": n_torch,
               "n_vectorised": n_vec, "rounds": rounds, "rel_diff_torch": rel,
               "grad_evals_per_step": {"numpy": single.grad_evals / n_steps, "torch": torch_calls / n_eq},
               "clipped_fraction": single.n_clipped / n_steps}
    return rows, metrics


# -------------------------------------------------------------------------------- section4 (paper, Section 4)
def _quadratic_cell(seeds, n, alpha, scale, noise, T, n_runs, etas, x0):
    """Datasets xi = scale * noise (N,) for each (data, index) seed pair, their runs (quadratic_runs), their
    sigma_N^2(x*) = mean xi_i^2 (grad f(0, xi) = xi) and SGD's exact expected error with the paper's step
    (``sgd_expected_error``, eta = 1/4: clipping off, expectation over the algorithm in closed form)."""
    data = [draw_noise(np.random.default_rng(data_ss), n, noise, alpha, scale) for data_ss, _ in seeds]
    runs = quadratic_runs(data, [index_ss for _, index_ss in seeds], T, alpha, n_runs=n_runs, etas=etas, x0=x0)
    gam = step_schedule(T, alpha, 0.25)
    exact = [sgd_expected_error(xi, gam, x0) for xi in data]
    return runs, [float(np.mean(xi * xi)) for xi in data], exact


def _tuned_eta(ctx, alpha, n, cell, params, etas, noise) -> dict:
    """The step multiplier of SGD and of averaged SGD with the smallest median (over the tuning datasets) of the
    mean error over runs; tuning datasets come from their own seed stream, never the evaluation datasets."""
    n_tune = int(params["n_tune_datasets"])
    seeds = cell_seeds(ctx, cell + 1, n_tune, "tune", noise)[cell]
    runs, _, _ = _quadratic_cell(seeds, n, alpha, float(params["noise_scale"]), noise, int(params["n_steps"]),
                              int(params["n_runs"]), etas, float(params["x0"]))
    best = {}
    for kind in ("sgd", "avg"):
        score = [_median(runs.opt[f"{kind}_eta{j}"].mean(axis=1)) for j in range(len(etas))]
        best[kind] = int(np.argmin(score))
    return best


def section4(params: dict, ctx: RunContext):
    """The paper's Section 4 experiment (spec addendum): f(x, xi) = x^2/2 + xi x, xi = c Student-t(alpha), c = 10,
    T steps, ``n_runs`` runs per fixed dataset, gamma_t = t^{-1/alpha}/4 and lambda_t = t^{1/alpha}, N on a log grid.

    Per (alpha, N, dataset): the mean over runs of ||x_T - x_S||^2 for SGD, Clip-SGD, averaged SGD (eta = 1/4)
    and SGD / averaged SGD with the step multiplier tuned on separate datasets (``eta_grid``). A "seed" is one
    dataset index: at every N it draws a fresh dataset, so each seed gives one curve over N.

    ``sgd_exact`` is SGD's exact expected error (eta = 1/4) in closed form (:func:`sgd_expected_error`), the
    clipping-off control without the Monte Carlo error of 100 runs.

    Metrics: ``median.<method>.<alpha>.<N>`` (over datasets); ``samples.slope.<method>.<alpha>`` (per seed, slope
    of log error against log N over N >= ``slope_from``); ``samples.log_clip_over.<method>.<alpha>`` (per seed,
    log(Clip-SGD / method) at the largest N and, under ``small_n``, at the smallest N);
    ``samples.sigma2_slope.<alpha>`` (per seed, slope of sigma_N^2(x*) against N, theory 2/alpha - 1);
    ``tuned_eta``; ``control.gaussian`` the same for Gaussian noise of the same scale.
    """
    alphas = [float(a) for a in params["alphas"]]
    ns = [int(n) for n in params["n_samples"]]
    T, n_runs, n_datasets = int(params["n_steps"]), int(params["n_runs"]), int(params["n_datasets"])
    scale, etas = float(params["noise_scale"]), [float(e) for e in params["eta_grid"]]
    if etas[0] != 0.25:
        raise ValueError(f"eta_grid must start with the paper's multiplier 0.25, got {etas[0]}")
    fit = [j for j, n in enumerate(ns) if n >= int(params.get("slope_from", ns[0]))]
    seeds = cell_seeds(ctx, len(alphas) * len(ns), n_datasets)
    rows, metrics = [], {"alphas": alphas, "n_samples": ns, "n_steps": T, "n_runs": n_runs, "noise_scale": scale,
                         "x0": float(params["x0"]),
                         "eta_grid": etas, "slope_n": [ns[j] for j in fit], "tuned_eta": {}}
    main = _section4_block(ctx, alphas, ns, fit, seeds, "student_t", params, etas, rows, tune=True)
    metrics.update(main)
    ctrl = params.get("control_gaussian")
    if ctrl:
        c_alphas = [float(a) for a in ctrl["alphas"]]
        cseeds = cell_seeds(ctx, len(c_alphas) * len(ns), n_datasets, "control_gaussian")
        metrics["control"] = {"gaussian": _section4_block(ctx, c_alphas, ns, fit, cseeds, "gaussian", params, etas,
                                                          None, tune=True)}
    return rows, metrics


_S4_METHODS = ("sgd", "clip", "avg", "sgd_tuned", "avg_tuned")


def _section4_block(ctx, alphas, ns, fit, seeds, noise, params, etas, rows, *, tune: bool) -> dict:
    T, n_runs = int(params["n_steps"]), int(params["n_runs"])
    scale = float(params["noise_scale"])
    out = {"median": {m: {} for m in _S4_METHODS + ("sgd_exact",)}, "tuned_eta": {},
           "samples": {"slope": {m: {} for m in _S4_METHODS + ("sgd_exact",)}, "log_clip_over": {},
                       "log_clip_over_small_n": {},
                       "sigma2_slope": {}}}
    cell = 0
    for alpha in alphas:
        ak = alpha_key(alpha)
        errs = {m: [] for m in _S4_METHODS + ("sgd_exact",)}   # [N index] -> per-dataset mean error over runs
        sigma2 = []
        out["tuned_eta"][ak] = {}
        for n in ns:
            best = _tuned_eta(ctx, alpha, n, cell, params, etas, noise) if tune else {"sgd": 0, "avg": 0}
            runs, s2, exact = _quadratic_cell(seeds[cell], n, alpha, scale, noise, T, n_runs, etas,
                                              float(params["x0"]))
            errs["sgd_exact"].append(np.asarray(exact))
            out["median"]["sgd_exact"].setdefault(ak, {})[n_key(n)] = _median(exact)
            per = {"sgd": runs.opt["sgd_eta0"], "clip": runs.opt["clip"], "avg": runs.opt["avg_eta0"],
                   "sgd_tuned": runs.opt[f"sgd_eta{best['sgd']}"], "avg_tuned": runs.opt[f"avg_eta{best['avg']}"]}
            for m, e in per.items():
                mean = e.mean(axis=1)
                errs[m].append(mean)
                out["median"][m].setdefault(ak, {})[n_key(n)] = _median(mean)
                if rows is not None:
                    rows += [{"method": m, "seed": d, "step": T, "metric": "opt_error", "value": float(v),
                              "n_samples": n, "alpha": alpha} for d, v in enumerate(mean)]
            sigma2.append(s2)
            out["tuned_eta"][ak][n_key(n)] = {k: etas[j] for k, j in best.items()}
            cell += 1
        logn = [ns[j] for j in fit]
        for m in _S4_METHODS + ("sgd_exact",):
            arr = np.asarray(errs[m])                # (len(ns), D)
            out["samples"]["slope"][m][ak] = [loglog_slope(logn, arr[fit, d]) for d in range(arr.shape[1])]
        errs["best_sgd"] = [np.minimum(a, b) for a, b in zip(errs["sgd_tuned"], errs["avg_tuned"])]
        for m in ("sgd", "avg", "sgd_tuned", "avg_tuned", "best_sgd"):
            out["samples"]["log_clip_over"].setdefault(m, {})[ak] = paired_log_ratios(errs["clip"][-1], errs[m][-1])
            out["samples"]["log_clip_over_small_n"].setdefault(m, {})[ak] = paired_log_ratios(errs["clip"][0],
                                                                                              errs[m][0])
        s2 = np.asarray(sigma2)
        out["samples"]["sigma2_slope"][ak] = [loglog_slope(logn, s2[fit, d]) for d in range(s2.shape[1])]
        ctx.log(f"{noise} alpha={alpha}: median error at N={ns[-1]}: " + ", ".join(
            f"{m} {out['median'][m][ak][n_key(ns[-1])]:.3g}" for m in _S4_METHODS))
    return out


def real_features(params: dict, ctx: RunContext):
    """E2 on real features: the constant-step SGD / Clip-SGD comparison of :func:`sgd_vs_clip` with the rows of
    scikit-learn's bundled diabetes design (standardised, resampled to N rows) and injected Student-t(alpha) label
    noise around the coefficients fitted on the real target (``design: diabetes``); the same metrics and the same
    Gaussian-noise control. ``control_pred: {n_datasets}`` adds the clipping-off control without runs: SGD's
    first-order stationary error (gamma/2) tr(Sigma^{-1} C) at the smallest and the largest N on that many fresh
    dataset pairs (``control.pred.log_growth``)."""
    return sgd_vs_clip(dict(params, design="diabetes"), ctx)


EXPERIMENTS = {"moment_scaling": moment_scaling, "sgd_vs_clip": sgd_vs_clip, "sgd_prediction": sgd_prediction,
               "schedules": schedules, "generalization": generalization, "performance": performance,
               "section4": section4, "real_features": real_features}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
