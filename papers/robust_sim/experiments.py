"""Experiments of robust_sim (see the spec and config.yaml); each returns (tidy rows, metrics).

Run one: ``python -m papers.robust_sim.experiments NAME --config papers/robust_sim/config.yaml --scale quick
--out results/quick/robust_sim/NAME``. Data seeds: seed index s gives the same (X, y) draw in every experiment
(derived from the root seed through ``shared.seeding``), so settings shared by two experiments share their data.
"""
from __future__ import annotations

import math
import time

import numpy as np
from threadpoolctl import threadpool_limits

from shared import seeding
from shared.experiment import RunContext, main
from shared.results import mean_and_se
from shared.timing import alternating_least_cpu, time_calls

from .basin import basin_radius
from .baselines import fit_huber, fit_itlm, pairwise_filter_mean, random_unit, stein_init
from .data import make_sim_data
from .links import LINK_NAMES, get_link, link_constants
from .method import (estimation_error, fit_robust_sim, gradient_matrix, robust_mean, robust_spectral_init,
                     sin_angle)

__all__ = ["EXPERIMENTS", "data_seed", "key", "size_exponents"]


def key(value) -> str:
    """A metrics-key fragment for a number: 0.1 -> '0p1', inf -> 'inf' (dots would split dotted keys)."""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return str(value).replace(".", "p").replace("-", "m")


def data_seed(root: int, s: int) -> int:
    """Integer seed of data draw number ``s`` under the root seed (same in every experiment)."""
    return int(seeding.seed_sequence(root, "data", f"seed{s}").generate_state(1)[0])


def _eta(params: dict, link: str) -> float:
    eta = params.get("eta", 0.5)
    return float(eta[link]) if isinstance(eta, dict) else float(eta)


def _noise_df(params: dict) -> float:
    return float(params.get("noise_df", 5.0))


class _Rows:
    """Collects tidy rows with the fixed columns plus the setting of the current problem."""

    def __init__(self):
        self.rows = []

    def add(self, method, seed, step, metric, value, **setting):
        self.rows.append({"method": method, "seed": seed, "step": step, "metric": metric, "value": float(value),
                          **setting})


def _pipeline_fit(D, link, eps, params, **kw):
    """fit_robust_sim with the experiment's step size, iterations, sigma and noise law."""
    return fit_robust_sim(D.X, D.y, link, eps, eta=_eta(params, link), n_iter=int(params["n_iter"]),
                          sigma=float(params["sigma"]), noise_df=_noise_df(params), **kw)


def _scores(fit_beta, w0, D, even) -> dict:
    return {"err": estimation_error(fit_beta, D.beta_star, even=even),
            "init_err": estimation_error(w0, D.beta_star, even=even),
            "init_sin": sin_angle(w0, D.beta_star), "sin": sin_angle(fit_beta, D.beta_star)}


def _fit_methods(methods, D, link, eps, params, ctx, tag) -> dict:
    """Fit every method of ``methods`` on one data set; returns {method: {"err": .., "init_err": .., ...}}.

    Methods: ``robust`` (stability-filter init + robust GD), ``robust_budget`` (the fixed-budget init filter +
    robust GD), ``robust_init_plain_gd`` (robust init, then plain-mean GD: the gradient filter removed),
    ``robust_mirror_init`` (robust GD from the mirrored robust init -w_0, a start outside the basin),
    ``nonrobust`` (eps = 0 throughout), ``huber``/``huber_l2`` (scipy least_squares soft-L1/Huber from the plain
    spectral start), ``huber_robust_start`` (scipy Huber from the robust spectral start), ``itlm``, ``stein``,
    ``random`` (robust GD from a random unit vector)."""
    lk = get_link(link)
    eta = _eta(params, link)
    sigma, nu = float(params["sigma"]), _noise_df(params)
    out = {}
    for m in methods:
        if m in ("robust", "nonrobust", "robust_budget"):
            fit = _pipeline_fit(D, link, 0.0 if m == "nonrobust" else eps, params,
                                init_filter="budget" if m == "robust_budget" else "threshold")
            out[m] = _scores(fit.beta, fit.beta_init, D, lk.even)
        elif m == "robust_mirror_init":
            w0 = -robust_spectral_init(D.X, D.y, eps, link=link, sigma=sigma, noise_df=nu)
            fit = _pipeline_fit(D, link, eps, params, init=w0)
            out[m] = _scores(fit.beta, w0, D, lk.even)
        elif m == "robust_init_plain_gd":
            w0 = robust_spectral_init(D.X, D.y, eps, link=link, sigma=sigma, noise_df=nu)
            fit = _pipeline_fit(D, link, 0.0, params, init=w0)
            out[m] = _scores(fit.beta, w0, D, lk.even)
        elif m in ("huber", "huber_l2"):
            beta = fit_huber(D.X, D.y, link, loss="soft_l1" if m == "huber" else "huber")
            out[m] = {"err": estimation_error(beta, D.beta_star, even=lk.even)}
        elif m == "huber_robust_start":
            w0 = robust_spectral_init(D.X, D.y, eps, link=link, sigma=sigma, noise_df=nu)
            beta = fit_huber(D.X, D.y, link, loss="huber", init=w0)
            out[m] = {"err": estimation_error(beta, D.beta_star, even=lk.even)}
        elif m == "itlm":
            beta = fit_itlm(D.X, D.y, link, eps, eta=eta)
            out[m] = {"err": estimation_error(beta, D.beta_star, even=lk.even)}
        elif m == "stein":
            if abs(link_constants(link)["E_df"]) < 1e-8:
                continue  # E f'(Z) = 0: the first-order Stein estimate is undefined for even links
            w0 = stein_init(D.X, D.y, link, eps)
            fit = _pipeline_fit(D, link, eps, params, init=w0)
            out[m] = _scores(fit.beta, w0, D, lk.even)
        elif m == "random":
            w0 = random_unit(D.X.shape[1], ctx.generator("random_init", *tag))
            fit = _pipeline_fit(D, link, eps, params, init=w0)
            out[m] = _scores(fit.beta, w0, D, lk.even)
        else:
            raise ValueError(f"unknown method {m!r} in params 'methods'")
    return out


def _summarise(per_seed: list[dict]) -> dict:
    """Means, standard errors and per-seed lists of every (method, metric), plus per-seed ratios:
    ``ratio_to_nonrobust_per_seed[m]`` = err_m / err_nonrobust and ``ratio_final_to_init_per_seed[m]``."""
    res = {}
    methods = per_seed[0].keys()
    for m in methods:
        for metric in per_seed[0][m]:
            vals = [s[m][metric] for s in per_seed]
            mean, se = mean_and_se(vals)
            res.setdefault(metric, {})[m] = mean
            res.setdefault(f"{metric}_se", {})[m] = se
            res.setdefault(f"{metric}_per_seed", {})[m] = [float(v) for v in vals]
    if "nonrobust" in methods:
        for m in methods:
            res.setdefault("ratio_to_nonrobust_per_seed", {})[m] = [s[m]["err"] / s["nonrobust"]["err"]
                                                                    for s in per_seed]
    for m in methods:
        if "init_err" in per_seed[0][m]:
            res.setdefault("ratio_final_to_init_per_seed", {})[m] = [s[m]["err"] / s[m]["init_err"]
                                                                     for s in per_seed]
    return res


def _contaminated_grid(params, ctx, eps_values, rows: _Rows, label: str) -> dict:
    """Fit ``params['methods']`` for every adversary x link x eps x seed; metrics[adv][link][eps_key].
    ``methods`` is a list, or a mapping adversary -> list with a ``default`` entry."""
    n, d, sigma = int(params["n"]), int(params["d"]), float(params["sigma"])
    metrics = {}
    clean_cache = {}  # eps = 0: the data do not depend on the adversary, and robust == non-robust
    settings = [(adv, link) for adv in params["adversaries"] for link in params["links"]]
    for adv, link in ctx.progress(settings, total=len(settings), what=f"{label}: adversary x link"):
        for eps in eps_values:
            per_seed = []
            for s in range(int(params["seeds"])):
                if eps == 0 and (link, s) in clean_cache:
                    res = clean_cache[(link, s)]
                else:
                    D = make_sim_data(n, d, link=link, sigma=sigma, eps=eps,
                                      adversary=adv if eps > 0 else "none", noise_df=_noise_df(params),
                                      seed=data_seed(ctx.seed, s))
                    methods = params["methods"]
                    methods = list(methods.get(adv, methods["default"]) if isinstance(methods, dict) else methods)
                    res = _fit_methods(methods, D, link, eps, params, ctx,
                                       (adv, link, key(eps), str(s)))
                    if eps == 0:
                        clean_cache[(link, s)] = res
                per_seed.append(res)
                for m, vals in res.items():
                    for metric, v in vals.items():
                        rows.add(m, s, 0 if metric.startswith("init") else int(params["n_iter"]), metric, v,
                                 adversary=adv, link=link, eps=eps, sigma=sigma, n=n, d=d)
            ctx.log(f"{label}: {adv} {link} eps={eps} done")
            metrics.setdefault(adv, {}).setdefault(link, {})[f"eps_{key(eps)}"] = _summarise(per_seed)
    return metrics


def run_robustness(params: dict, ctx: RunContext):
    """A1/A2 x links at eps (and the extra eps values): robust vs non-robust vs Huber, init and final errors.

    metrics[adv][link] holds the summary at the main ``eps``; metrics[adv][link]['eps_<e>'] every eps run."""
    rows = _Rows()
    eps_main = float(params["eps"])
    eps_values = sorted({eps_main, *map(float, params.get("eps_extra", []))})
    with threadpool_limits(1):
        grid = _contaminated_grid(params, ctx, eps_values, rows, "robustness")
    metrics = {"eps": eps_main}
    for adv, by_link in grid.items():
        for link, by_eps in by_link.items():
            metrics.setdefault(adv, {})[link] = {**by_eps[f"eps_{key(eps_main)}"], **by_eps}
    return rows.rows, metrics


def run_eps_sweep(params: dict, ctx: RunContext):
    """Error vs eps for every adversary, link and method (full scale; tiny at smoke)."""
    rows = _Rows()
    with threadpool_limits(1):
        metrics = _contaminated_grid(params, ctx, [float(e) for e in params["eps_list"]], rows, "eps_sweep")
    return rows.rows, metrics


def run_esc_init(params: dict, ctx: RunContext):
    """|cos| of the top and bottom eigenvectors of (1/n) sum y_i^2 x_i x_i^T with beta* (eps = 0), per link.

    n = ``n_per_d`` d, or ``n_per_d_by_link[link]`` d for the links listed there (the weak-ESC links). Summaries
    ``min_top_abs_cos_<group>`` are the per-seed minimum over the links of ``esc_positive_links`` (group
    ``positive_esc``) and of ``esc_weak_links`` (group ``weak_esc``)."""
    rows = _Rows()
    d = int(params["d"])
    by_link = {str(k): int(v) for k, v in (params.get("n_per_d_by_link") or {}).items()}
    metrics = {}
    with threadpool_limits(1):
        for link in params["links"]:
            n = by_link.get(link, int(params["n_per_d"])) * d
            tops, bottoms = [], []
            for s in range(int(params["seeds"])):
                D = make_sim_data(n, d, link=link, sigma=float(params["sigma"]), noise_df=_noise_df(params),
                                  seed=data_seed(ctx.seed, s))
                M = (D.X * np.square(D.y)[:, None]).T @ D.X / n
                _, vecs = np.linalg.eigh(M)
                top, bottom = abs(vecs[:, -1] @ D.beta_star), abs(vecs[:, 0] @ D.beta_star)
                tops.append(top)
                bottoms.append(bottom)
                rows.add("spectral_top", s, 0, "abs_cos", top, link=link, n=n, d=d)
                rows.add("spectral_bottom", s, 0, "abs_cos", bottom, link=link, n=n, d=d)
            c = link_constants(link)
            (mt, st), (mb, sb) = mean_and_se(tops), mean_and_se(bottoms)
            metrics[link] = {"top_abs_cos": mt, "top_abs_cos_se": st, "bottom_abs_cos": mb, "bottom_abs_cos_se": sb,
                             "top_abs_cos_per_seed": [float(v) for v in tops],
                             "bottom_abs_cos_per_seed": [float(v) for v in bottoms],
                             "esc": c["esc"], "E_d2f": c["E_d2f"], "E_f_sq": c["E_f_sq"], "n": n}
    metrics["constants"] = {lk: link_constants(lk) for lk in LINK_NAMES}  # Gaussian constants of every link
    groups = (("positive_esc", params.get("esc_positive_links", ["gelu", "swish", "tanh"]), "min_top_abs_cos_link"),
              ("weak_esc", params.get("esc_weak_links", []), "min_top_abs_cos_weak_link"))
    for group, links, link_key in groups:
        links = [lk for lk in links if lk in metrics]
        if not links:
            continue
        worst = min(links, key=lambda lk: metrics[lk]["top_abs_cos"])
        metrics[f"min_top_abs_cos_{group}"] = metrics[worst]["top_abs_cos"]
        metrics[f"min_top_abs_cos_{group}_se"] = metrics[worst]["top_abs_cos_se"]
        metrics[link_key] = worst
        metrics[f"min_top_abs_cos_{group}_per_seed"] = [
            float(min(metrics[lk]["top_abs_cos_per_seed"][s] for lk in links)) for s in range(int(params["seeds"]))]
    return rows.rows, metrics


def _slope(ns, errs) -> float:
    """Least-squares slope of log err against log n."""
    return float(np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(errs, float)), 1)[0])


def run_rate(params: dict, ctx: RunContext):
    """Final error at eps = 0 against n = (n/d) d; slope of log err vs log n (theory: -1/2).

    Control (``control_link``): the same fits with a wrong link, whose bias does not vanish with n."""
    rows = _Rows()
    link, sigma = params["link"], float(params["sigma"])
    wrong = params.get("control_link")
    metrics = {}
    with threadpool_limits(1):
        for d in params["d_list"]:
            d = int(d)
            ns = [int(r) * d for r in params["n_per_d"]]
            fits = [("fit", link)] + ([("control", wrong)] if wrong else [])
            errs = {name: np.zeros((int(params["seeds"]), len(ns))) for name, _ in fits}
            for j, n in enumerate(ns):
                for s in range(int(params["seeds"])):
                    D = make_sim_data(n, d, link=link, sigma=sigma, noise_df=_noise_df(params),
                                      seed=data_seed(ctx.seed, s))
                    for name, lk in fits:
                        fit = fit_robust_sim(D.X, D.y, lk, 0.0, eta=_eta(params, lk), n_iter=int(params["n_iter"]))
                        errs[name][s, j] = estimation_error(fit.beta, D.beta_star)
                        rows.add("nonrobust" if name == "fit" else f"wrong_link_{lk}", s, int(params["n_iter"]),
                                 "err", errs[name][s, j], link=link, n=n, d=d, sigma=sigma)
            ctx.log(f"rate: d={d} done")
            e = errs["fit"]
            per_seed = [_slope(ns, e[s]) for s in range(e.shape[0])]
            block = {"slope": _slope(ns, e.mean(axis=0)), "slope_se": mean_and_se(per_seed)[1],
                     "slope_per_seed": per_seed, "err": {f"n_{n}": float(e[:, j].mean()) for j, n in enumerate(ns)}}
            if wrong:
                block["control"] = {"link": wrong,
                                    "slope_per_seed": [_slope(ns, errs["control"][s]) for s in range(e.shape[0])]}
            metrics[f"d_{d}"] = block
    first = f"d_{int(params['d_list'][0])}"
    metrics["slope"], metrics["slope_se"] = metrics[first]["slope"], metrics[first]["slope_se"]
    metrics["slope_per_seed"] = metrics[first]["slope_per_seed"]  # the first d (the claim's, at every scale)
    if wrong:
        metrics["control"] = metrics[first]["control"]
    return rows.rows, metrics


def _loglog_slope(x, y) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def run_init_scaling(params: dict, ctx: RunContext):
    """sin angle of the initial estimate vs eps, per adversary and initialiser (Theorem 4.2, O(eps^{1/4})).

    Initialisers: ``robust`` (the stability filter), ``budget`` (the fixed-budget filter), ``plain`` (no filter).
    Per seed, the worst case over the adversaries at each eps is fitted as sin = C eps^alpha:
    ``alpha_per_seed[init]`` and ``ratio_to_quarter_per_seed[init]`` = max over eps of sin / eps^{1/4}."""
    rows = _Rows()
    link, sigma, nu = params["link"], float(params["sigma"]), _noise_df(params)
    n, d = int(params["n"]), int(params["d"])
    eps_list = [float(e) for e in params["eps_list"]]
    advs, seeds = list(params["adversaries"]), int(params["seeds"])
    inits = ("robust", "budget", "plain")
    sin = np.zeros((len(inits), len(advs), len(eps_list), seeds))
    with threadpool_limits(1):
        for a, adv in enumerate(advs):
            for e, eps in enumerate(eps_list):
                for s in range(seeds):
                    D = make_sim_data(n, d, link=link, sigma=sigma, eps=eps, adversary=adv, noise_df=nu,
                                      seed=data_seed(ctx.seed, s))
                    ws = {"robust": robust_spectral_init(D.X, D.y, eps, link=link, sigma=sigma, noise_df=nu),
                          "budget": robust_spectral_init(D.X, D.y, eps, link=link, init_filter="budget"),
                          "plain": robust_spectral_init(D.X, D.y, 0.0, link=link)}
                    for i, m in enumerate(inits):
                        sin[i, a, e, s] = sin_angle(ws[m], D.beta_star)
                        rows.add(m, s, 0, "init_sin", sin[i, a, e, s], adversary=adv, link=link, eps=eps, n=n, d=d)
            ctx.log(f"init_scaling: {adv} done")
    worst = sin.max(axis=1)  # (init, eps, seed)
    quarter = np.asarray(eps_list) ** 0.25
    metrics = {"eps_list": eps_list, "adversaries": advs}
    for i, m in enumerate(inits):
        metrics.setdefault("alpha_per_seed", {})[m] = [_loglog_slope(eps_list, worst[i, :, s]) for s in range(seeds)]
        metrics.setdefault("ratio_to_quarter_per_seed", {})[m] = [float(np.max(worst[i, :, s] / quarter))
                                                                  for s in range(seeds)]
        metrics.setdefault("worst_sin_mean", {})[m] = {f"eps_{key(eps)}": float(worst[i, e].mean())
                                                       for e, eps in enumerate(eps_list)}
        for a, adv in enumerate(advs):
            metrics.setdefault("sin_mean", {}).setdefault(m, {})[adv] = {
                f"eps_{key(eps)}": float(sin[i, a, e].mean()) for e, eps in enumerate(eps_list)}
        metrics.setdefault("worst_adversary", {})[m] = {
            f"eps_{key(eps)}": advs[int(np.argmax(sin[i, :, e].mean(axis=1)))] for e, eps in enumerate(eps_list)}
    return rows.rows, metrics


def run_final_rate(params: dict, ctx: RunContext):
    """Final error of the robust pipeline vs eps at several sigma under one adversary (Theorem 4.1,
    O(sigma sqrt(eps))), with the non-robust pipeline as the control.

    Per seed and method: ``alpha_eps_per_seed`` = mean over sigma of the log-log slope of err against eps;
    ``alpha_sigma_per_seed`` = mean over eps of the log-log slope of err against sigma."""
    rows = _Rows()
    link, adv, nu = params["link"], params["adversary"], _noise_df(params)
    n, d, seeds = int(params["n"]), int(params["d"]), int(params["seeds"])
    eps_list = [float(e) for e in params["eps_list"]]
    sigmas = [float(v) for v in params["sigmas"]]
    methods = list(params["methods"])
    err = np.zeros((len(methods), len(sigmas), len(eps_list), seeds))
    with threadpool_limits(1):
        for j, sigma in enumerate(sigmas):
            p = {**params, "sigma": sigma}
            for e, eps in enumerate(eps_list):
                for s in range(seeds):
                    D = make_sim_data(n, d, link=link, sigma=sigma, eps=eps, adversary=adv, noise_df=nu,
                                      seed=data_seed(ctx.seed, s))
                    res = _fit_methods(methods, D, link, eps, p, ctx, (adv, key(sigma), key(eps), str(s)))
                    for i, m in enumerate(methods):
                        err[i, j, e, s] = res[m]["err"]
                        rows.add(m, s, int(params["n_iter"]), "err", err[i, j, e, s], adversary=adv, link=link,
                                 eps=eps, sigma=sigma, n=n, d=d)
                ctx.log(f"final_rate: sigma={sigma} eps={eps} done")
    metrics = {"eps_list": eps_list, "sigmas": sigmas}
    for i, m in enumerate(methods):
        metrics.setdefault("alpha_eps_per_seed", {})[m] = [
            float(np.mean([_loglog_slope(eps_list, err[i, j, :, s]) for j in range(len(sigmas))]))
            for s in range(seeds)]
        metrics.setdefault("alpha_sigma_per_seed", {})[m] = [
            float(np.mean([_loglog_slope(sigmas, err[i, :, e, s]) for e in range(len(eps_list))]))
            for s in range(seeds)]
        metrics.setdefault("alpha_sigma_by_eps", {})[m] = {
            f"eps_{key(eps)}": float(np.mean([_loglog_slope(sigmas, err[i, :, e, s]) for s in range(seeds)]))
            for e, eps in enumerate(eps_list)}
        metrics.setdefault("err_over_sigma_sqrt_eps", {})[m] = {
            f"sigma_{key(sg)}": {f"eps_{key(eps)}": float(err[i, j, e].mean() / (sg * math.sqrt(eps)))
                                 for e, eps in enumerate(eps_list)} for j, sg in enumerate(sigmas)}
        metrics.setdefault("err_mean", {})[m] = {
            f"sigma_{key(sg)}": {f"eps_{key(eps)}": float(err[i, j, e].mean()) for e, eps in enumerate(eps_list)}
            for j, sg in enumerate(sigmas)}
    return rows.rows, metrics


def _least_cpu_fits(calls: dict, rounds: int, *, min_seconds: float = 0.5, cpu_clock=time.process_time,
                    wall_clock=time.perf_counter) -> dict:
    """Least CPU seconds per call of each fit in ``calls`` ({name: fn}), measured in alternation.

    :func:`shared.timing.alternating_least_cpu`: one warm-up call of each fit fixes how many calls one
    measurement batches (at least ``min_seconds`` of CPU time, so that a short comparator is timed over a span
    closer to that of a long fit), then ``rounds`` rounds time every fit in turn, so that load from other
    processes reaches all alike, and the least measurement per call is kept. Returns {name: {"cpu_s": least CPU
    s per call, "wall_s": least wall s of one call, "number": calls per measurement, "out": last output}}.
    """
    out, wall = {}, {name: math.inf for name in calls}

    def keep(name, fn):
        def call():
            w0 = wall_clock()
            out[name] = fn()
            wall[name] = min(wall[name], wall_clock() - w0)
        return call

    t = alternating_least_cpu({name: keep(name, fn) for name, fn in calls.items()}, rounds,
                              min_seconds=min_seconds, cpu_clock=cpu_clock)
    return {name: {"cpu_s": t["seconds"][name], "wall_s": float(wall[name]), "number": t["number"][name],
                   "out": out[name]} for name in calls}


def _median_time(fn, repeats: int, warmup: bool = True) -> tuple[float, float, object]:
    """Median CPU and wall seconds of ``repeats`` calls of fn() (after one warm-up call), and the last result."""
    t = time_calls(fn, repeats, warmup=warmup)
    return t.cpu_median, t.wall_median, t.output


def _time_design(points, make_call, repeats: int, *, cpu_clock=time.process_time) -> np.ndarray:
    """CPU seconds of one call per design point and repeat, shape (repeats, len(points)).

    ``make_call(n, d)`` builds the call for the point (n, d) (data drawn outside the timed region). Every call
    gets one untimed warm-up; then each repeat times every point once, in turn, so that bursts of load from
    other processes reach all points of a repeat alike."""
    calls = [make_call(int(n), int(d)) for n, d in points]
    for call in calls:
        call()
    t = np.zeros((int(repeats), len(calls)))
    for r in range(int(repeats)):
        for j, call in enumerate(calls):
            t0 = cpu_clock()
            call()
            t[r, j] = cpu_clock() - t0
    return t


def size_exponents(points, seconds) -> dict:
    """Exponents of time in the input size from one repeat of a design: least squares of
    log t = c + a log n + b log d over the points (n, d) (needs at least two n and two d values).

    Returns ``alpha_n`` = a, ``alpha_d`` = b, ``alpha_max`` = max(a, b) (time near-linear in n d means
    a <= 1 and b <= 1 up to log factors: an O(n^2 d) method has a = 2) and ``alpha_nd``, the slope of log t
    against log(n d) alone."""
    P = np.asarray(points, dtype=float)
    if P.ndim != 2 or P.shape[1] != 2 or len(set(P[:, 0])) < 2 or len(set(P[:, 1])) < 2:
        raise ValueError(f"points must be (n, d) pairs with at least two distinct n and two distinct d, got {points!r}")
    t = np.asarray(seconds, dtype=float)
    if t.shape != (P.shape[0],) or not np.all(t > 0):
        raise ValueError(f"seconds must be {P.shape[0]} positive times, got {seconds!r}")
    A = np.column_stack([np.ones(len(P)), np.log(P[:, 0]), np.log(P[:, 1])])
    _, a, b = np.linalg.lstsq(A, np.log(t), rcond=None)[0]
    return {"alpha_n": float(a), "alpha_d": float(b), "alpha_max": float(max(a, b)),
            "alpha_nd": _loglog_slope(P[:, 0] * P[:, 1], t)}


def _design_block(points, t: np.ndarray) -> dict:
    """Per-repeat exponents (:func:`size_exponents`) and median times of a timed design."""
    per = [size_exponents(points, t[r]) for r in range(t.shape[0])]
    block = {"points": [[int(n), int(d)] for n, d in points],
             "cpu_s_median": {f"n_{n}.d_{d}": float(np.median(t[:, j])) for j, (n, d) in enumerate(points)},
             "cpu_s_per_repeat": t.tolist()}
    for k in ("alpha_n", "alpha_d", "alpha_max", "alpha_nd"):
        block[f"{k}_per_repeat"] = [p[k] for p in per]
    return block


def _n_slice(design: dict, d: int) -> dict:
    """The design's median times at dimension ``d`` as an n sweep: cpu_s per n and the largest/smallest ratio."""
    ns = sorted(n for n, dd in design["points"] if dd == d)
    if len(ns) < 2:
        return {}
    cpu = {f"n_{n}": design["cpu_s_median"][f"n_{n}.d_{d}"] for n in ns}
    return {"cpu_s": cpu, "ratio": cpu[f"n_{ns[-1]}"] / cpu[f"n_{ns[0]}"], "n_ratio": ns[-1] / ns[0], "d": d}


def run_timing(params: dict, ctx: RunContext):
    """CPU time against the input size n d (abstract: near-linear time in n d).

    - ``robust_mean``: one robust_mean call on the gradient matrix at beta*, for each n of ``n_list`` at d
      (median of repeats);
    - ``fit_nd``: whole robust fits (stability-filter init, ``fit_n_iter`` robust gradient steps) under the
      filter-aware ``fit_adversary`` at every (n, d) of ``fit_points``, timed in alternation per repeat
      (:func:`_time_design`), with the exponents of time in n and in d per repeat (:func:`size_exponents`);
    - ``control_nd``: the same design for the O(n^2 d) pairwise-pruning mean at ``control_points`` (the
      quadratic-time control).
    ``fit`` and ``control`` are the n sweeps at d of the two designs (medians).

    Times are run-dependent: they are written to provenance.json (key ``timing``), not to metrics.json."""
    rows = _Rows()
    link, eps, d, adv = params["link"], float(params["eps"]), int(params["d"]), params["adversary"]
    sigma, nu, reps = float(params["sigma"]), _noise_df(params), int(params["repeats"])
    fadv, T = params.get("fit_adversary", adv), int(params["fit_n_iter"])
    timing = {}

    def data(n, dd, adversary):
        return make_sim_data(n, dd, link=link, sigma=sigma, eps=eps, adversary=adversary, noise_df=nu,
                             seed=data_seed(ctx.seed, 0))

    def grad(D):
        return gradient_matrix(D.X, D.y, D.beta_star, link)

    def mean_call(n, dd):
        G = grad(data(n, dd, adv))
        return lambda: robust_mean(G, eps)

    def pairwise_call(n, dd):
        G = grad(data(n, dd, adv))
        return lambda: pairwise_filter_mean(G, eps)

    def fit_call(n, dd):
        D = data(n, dd, fadv)
        return lambda: fit_robust_sim(D.X, D.y, link, eps, eta=_eta(params, link), n_iter=T, sigma=sigma,
                                      noise_df=nu)

    ns = [int(v) for v in params["n_list"]]
    with threadpool_limits(1):
        for n in ns:
            cpu, wall, _ = _median_time(mean_call(n, d), reps)
            timing.setdefault("cpu_s", {})[f"n_{n}"] = cpu
            timing.setdefault("wall_s", {})[f"n_{n}"] = wall
            rows.add("robust_mean", 0, 0, "cpu_s", cpu, n=n, d=d)
        timing["ratio"] = timing["cpu_s"][f"n_{ns[-1]}"] / timing["cpu_s"][f"n_{ns[0]}"]
        timing["n_ratio"] = ns[-1] / ns[0]
        for key_, name, pts, make in (("fit_nd", "robust_fit", params["fit_points"], fit_call),
                                      ("control_nd", "pairwise_filter_mean", params["control_points"],
                                       pairwise_call)):
            pts = [(int(n), int(dd)) for n, dd in pts]
            t = _time_design(pts, make, reps)
            timing[key_] = _design_block(pts, t)
            for r in range(reps):
                for j, (n, dd) in enumerate(pts):
                    rows.add(name, r, 0, "cpu_s", t[r, j], n=n, d=dd)
            ctx.log(f"timing: {name} design done")
        timing["fit_nd"]["adversary"], timing["fit_nd"]["n_iter"] = fadv, T
        timing["fit"] = {**_n_slice(timing["fit_nd"], d), "adversary": fadv, "n_iter": T}
        timing["control"] = _n_slice(timing["control_nd"], d)
    # times change from run to run: they go to provenance.json (the claim reads them there); metrics.json keeps
    # only what is reproducible byte for byte
    ctx.record(timing=timing)
    return rows.rows, {"n_list": ns, "n_ratio": ns[-1] / ns[0], "repeats": reps,
                       "fit_points": timing["fit_nd"]["points"], "control_points": timing["control_nd"]["points"],
                       "times_in": "provenance.json (key timing)"}


def run_performance(params: dict, ctx: RunContext):
    """Side by side on the same (X, y): robust GD (ours) vs scipy ``least_squares`` soft-L1 from the plain
    spectral estimate (the spec's comparator) and vs scipy Huber M-estimation from the robust spectral start
    (a robust comparator that does the same job); the errors, and the CPU time of each fit (``time.process_time``,
    single-threaded BLAS): least per call over ``repeats`` rounds that time the three fits in alternation, after
    one warm-up call each (:func:`_least_cpu_fits`). The times are run-dependent and go to provenance.json (key
    ``performance``); metrics.json holds the errors."""
    rows = _Rows()
    link, eps, d, adv = params["link"], float(params["eps"]), int(params["d"]), params["adversary"]
    sigma, nu = float(params["sigma"]), _noise_df(params)
    lk = get_link(link)
    reps = int(params["repeats"])
    metrics = {}
    with threadpool_limits(1):
        for n in [int(v) for v in params["n_list"]]:
            D = make_sim_data(n, d, link=link, sigma=sigma, eps=eps, adversary=adv, noise_df=nu,
                              seed=data_seed(ctx.seed, 0))
            calls = {
                "ours": lambda: fit_robust_sim(D.X, D.y, link, eps, eta=_eta(params, link),
                                               n_iter=int(params["n_iter"]), sigma=sigma, noise_df=nu).beta,
                "scipy_soft_l1": lambda: fit_huber(D.X, D.y, link, loss="soft_l1"),
                "scipy_huber_robust_start": lambda: fit_huber(
                    D.X, D.y, link, loss="huber",
                    init=robust_spectral_init(D.X, D.y, eps, link=link, sigma=sigma, noise_df=nu)),
            }
            block = {}
            for name, t in _least_cpu_fits(calls, reps).items():
                err = estimation_error(t["out"], D.beta_star, even=lk.even)
                block[name] = {"cpu_s": t["cpu_s"], "wall_s": t["wall_s"], "number": t["number"], "err": err}
                rows.add(name, 0, 0, "cpu_s", t["cpu_s"], n=n, d=d)
                rows.add(name, 0, 0, "err", err, n=n, d=d)
            for name in ("scipy_soft_l1", "scipy_huber_robust_start"):
                block[name]["time_ratio_ours_to_it"] = block["ours"]["cpu_s"] / block[name]["cpu_s"]
                block[name]["err_ratio_ours_to_it"] = block["ours"]["err"] / block[name]["err"]
            metrics[f"n_{n}"] = block
            ctx.log(f"performance: n={n} " + ", ".join(f"{k} {v['cpu_s']:.2f}s" for k, v in block.items()))
    metrics["repeats"] = reps
    ctx.record(performance=metrics)  # run-dependent times: provenance.json; metrics.json keeps the errors
    stable = {k: {name: {"err": b["err"]} for name, b in v.items()} for k, v in metrics.items() if k.startswith("n_")}
    return rows.rows, {**stable, "repeats": reps, "times_in": "provenance.json (key performance)"}


def run_basin(params: dict, ctx: RunContext):
    """Population convexity radius R per link (:func:`papers.robust_sim.basin.basin_radius`; Theorem 3.1) and
    for the control link outside the theorem's class (``control.step_link``, :data:`basin.STEP_LINK`), and
    how far the spectral initialisation lands from beta*: per seed, the largest ||w_0 - beta*|| over
    ``adversaries`` at ``eps`` (``init_link``, n x d data as in init_scaling) for the stability-filter init
    (``robust``) and the plain spectral init (``plain``, the control), and its ratio to R of ``init_link``."""
    rows = _Rows()
    metrics = {"radius": {}}
    with threadpool_limits(1):
        for link in params["links"]:
            out = basin_radius(link, n_dirs=int(params["n_dirs"]), step=float(params["step"]),
                               n_bisect=int(params["n_bisect"]), n_nodes=int(params["n_nodes"]))
            metrics["radius"][link] = out
            rows.add("population", 0, 0, "basin_radius", out["radius"], link=link)
            ctx.log(f"basin: {link} R = {out['radius']:.3f}")
        metrics["min_radius"] = min(v["radius"] for v in metrics["radius"].values())
        from .basin import STEP_LINK

        control = basin_radius(STEP_LINK, n_dirs=int(params["n_dirs"]), step=float(params["step"]),
                               n_bisect=int(params["n_bisect"]), n_nodes=int(params["n_nodes"]))
        metrics["control"] = {"step_link": control}
        ctx.log(f"basin control: step link (f' = 0 almost everywhere) R = {control['radius']:.3f}")
        link, sigma, nu, eps = params["init_link"], float(params["sigma"]), _noise_df(params), float(params["eps"])
        n, d, seeds = int(params["n"]), int(params["d"]), int(params["seeds"])
        dist = {"robust": np.zeros(seeds), "plain": np.zeros(seeds)}
        for s in range(seeds):
            for adv in params["adversaries"]:
                D = make_sim_data(n, d, link=link, sigma=sigma, eps=eps, adversary=adv, noise_df=nu,
                                  seed=data_seed(ctx.seed, s))
                ws = {"robust": robust_spectral_init(D.X, D.y, eps, link=link, sigma=sigma, noise_df=nu),
                      "plain": robust_spectral_init(D.X, D.y, 0.0, link=link)}
                for m, w0 in ws.items():
                    e = estimation_error(w0, D.beta_star)
                    dist[m][s] = max(dist[m][s], e)
                    rows.add(m, s, 0, "init_dist", e, adversary=adv, link=link, eps=eps, n=n, d=d)
    R = metrics["radius"][link]["radius"]
    metrics["init_link"] = link
    metrics["init_dist_per_seed"] = {m: v.tolist() for m, v in dist.items()}
    metrics["init_dist_over_radius_per_seed"] = {m: (v / R).tolist() for m, v in dist.items()}
    return rows.rows, metrics


def run_grid(params: dict, ctx: RunContext):
    """Robust and non-robust error over d x n/d x sigma x noise_df at one eps (full scale; tiny at smoke)."""
    rows = _Rows()
    eps = float(params["eps"])
    metrics = {}
    with threadpool_limits(1):
        for adv in params["adversaries"]:
            for link in params["links"]:
                for d in map(int, params["d_list"]):
                    for r in map(int, params["n_per_d"]):
                        for sigma in map(float, params["sigmas"]):
                            for nu in map(float, params["noise_dfs"]):
                                per_seed = []
                                for s in range(int(params["seeds"])):
                                    D = make_sim_data(r * d, d, link=link, sigma=sigma, eps=eps, adversary=adv,
                                                      noise_df=nu, seed=data_seed(ctx.seed, s))
                                    res = _fit_methods(["robust", "nonrobust"], D, link, eps,
                                                       {**params, "sigma": sigma, "noise_df": nu}, ctx, ())
                                    per_seed.append(res)
                                    for m, vals in res.items():
                                        rows.add(m, s, int(params["n_iter"]), "err", vals["err"], adversary=adv,
                                                 link=link, eps=eps, sigma=sigma, n=r * d, d=d, noise_df=nu)
                                summ = _summarise(per_seed)
                                cell = f"d_{d}.n_per_d_{r}.sigma_{key(sigma)}.nu_{key(nu)}"
                                node = metrics.setdefault(adv, {}).setdefault(link, {})
                                for part in cell.split(".")[:-1]:
                                    node = node.setdefault(part, {})
                                node[cell.split(".")[-1]] = {
                                    "err": summ["err"],
                                    "ratio_robust_to_nonrobust": summ["err"]["robust"] / summ["err"]["nonrobust"]}
                ctx.log(f"grid: {adv} {link} done")
    return rows.rows, metrics


EXPERIMENTS = {
    "robustness": run_robustness,
    "robustness_probit": run_robustness,  # the same experiment for the probit link (config.yaml)
    "esc_init": run_esc_init,
    "rate": run_rate,
    "init_scaling": run_init_scaling,
    "final_rate": run_final_rate,
    "timing": run_timing,
    "performance": run_performance,
    "eps_sweep": run_eps_sweep,
    "grid": run_grid,
    "basin": run_basin,
}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
