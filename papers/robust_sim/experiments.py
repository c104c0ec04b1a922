"""Experiments of robust_sim (see the spec and config.yaml); each returns (tidy rows, metrics).

Run one: ``python -m papers.robust_sim.experiments NAME --config papers/robust_sim/config.yaml --scale quick
--out results/quick/robust_sim/NAME``. Data seeds: seed index s gives the same (X, y) draw in every experiment
(derived from the root seed through ``shared.seeding``), so settings shared by two experiments share their data.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from shared import seeding
from shared.experiment import RunContext, main
from shared.results import mean_and_se, read_metrics
from shared.timing import time_calls

from .baselines import fit_huber, fit_itlm, random_unit, stein_init
from .data import make_sim_data
from .links import LINK_NAMES, get_link, link_constants
from .method import (estimation_error, fit_robust_sim, gradient_matrix, robust_mean, robust_spectral_init,
                     sin_angle)

__all__ = ["EXPERIMENTS", "data_seed", "key"]


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


def _fit_methods(methods, D, link, eps, params, ctx, tag) -> dict:
    """Fit every method of ``methods`` on one data set; returns {method: {"err": .., "init_err": .., ...}}."""
    lk = get_link(link)
    T = int(params["n_iter"])
    eta = _eta(params, link)
    out = {}
    for m in methods:
        if m == "robust" or m == "nonrobust":
            fit = fit_robust_sim(D.X, D.y, link, eps if m == "robust" else 0.0, eta=eta, n_iter=T)
            out[m] = {"err": estimation_error(fit.beta, D.beta_star, even=lk.even),
                      "init_err": estimation_error(fit.beta_init, D.beta_star, even=lk.even),
                      "init_sin": sin_angle(fit.beta_init, D.beta_star),
                      "sin": sin_angle(fit.beta, D.beta_star)}
        elif m in ("huber", "huber_l2"):
            beta = fit_huber(D.X, D.y, link, loss="soft_l1" if m == "huber" else "huber")
            out[m] = {"err": estimation_error(beta, D.beta_star, even=lk.even)}
        elif m == "itlm":
            beta = fit_itlm(D.X, D.y, link, eps, eta=eta)
            out[m] = {"err": estimation_error(beta, D.beta_star, even=lk.even)}
        elif m == "stein":
            if abs(link_constants(link)["E_df"]) < 1e-8:
                continue  # E f'(Z) = 0: the first-order Stein estimate is undefined for even links
            w0 = stein_init(D.X, D.y, link, eps)
            fit = fit_robust_sim(D.X, D.y, link, eps, eta=eta, n_iter=T, init=w0)
            out[m] = {"err": estimation_error(fit.beta, D.beta_star, even=lk.even),
                      "init_err": estimation_error(w0, D.beta_star, even=lk.even),
                      "init_sin": sin_angle(w0, D.beta_star)}
        elif m == "random":
            w0 = random_unit(D.X.shape[1], ctx.generator("random_init", *tag))
            fit = fit_robust_sim(D.X, D.y, link, eps, eta=eta, n_iter=T, init=w0)
            out[m] = {"err": estimation_error(fit.beta, D.beta_star, even=lk.even),
                      "init_err": estimation_error(w0, D.beta_star, even=lk.even),
                      "init_sin": sin_angle(w0, D.beta_star)}
        else:
            raise ValueError(f"unknown method {m!r} in params 'methods'")
    return out


def _summarise(per_seed: list[dict]) -> dict:
    """Means and standard errors over seeds of every (method, metric), plus robust/non-robust ratios."""
    res = {}
    methods = per_seed[0].keys()
    for m in methods:
        for metric in per_seed[0][m]:
            vals = [s[m][metric] for s in per_seed]
            mean, se = mean_and_se(vals)
            res.setdefault(metric, {})[m] = mean
            res.setdefault(f"{metric}_se", {})[m] = se
    if "robust" in methods and "nonrobust" in methods:
        ratios = [s["robust"]["err"] / s["nonrobust"]["err"] for s in per_seed]
        res["ratio_robust_to_nonrobust"] = res["err"]["robust"] / res["err"]["nonrobust"]
        res["ratio_robust_to_nonrobust_se"] = mean_and_se(ratios)[1]
    if "robust" in methods:
        ratios = [s["robust"]["err"] / s["robust"]["init_err"] for s in per_seed]
        res["ratio_final_to_init"] = res["err"]["robust"] / res["init_err"]["robust"]
        res["ratio_final_to_init_se"] = mean_and_se(ratios)[1]
    return res


def _contaminated_grid(params, ctx, eps_values, rows: _Rows, label: str) -> dict:
    """Fit ``params['methods']`` for every adversary x link x eps x seed; metrics[adv][link][eps_key]."""
    n, d, sigma = int(params["n"]), int(params["d"]), float(params["sigma"])
    metrics = {}
    clean_cache = {}  # eps = 0: the data do not depend on the adversary, and robust == non-robust
    for adv in params["adversaries"]:
        for link in params["links"]:
            for eps in eps_values:
                per_seed = []
                for s in range(int(params["seeds"])):
                    if eps == 0 and (link, s) in clean_cache:
                        res = clean_cache[(link, s)]
                    else:
                        D = make_sim_data(n, d, link=link, sigma=sigma, eps=eps,
                                          adversary=adv if eps > 0 else "none", noise_df=_noise_df(params),
                                          seed=data_seed(ctx.seed, s))
                        methods = list(params["methods"])
                        if eps == 0 and "robust" in methods and "nonrobust" in methods:
                            methods.remove("nonrobust")  # identical computation at eps = 0
                        res = _fit_methods(methods, D, link, eps, params, ctx, (adv, link, key(eps), str(s)))
                        if eps == 0 and "robust" in res and "nonrobust" in params["methods"]:
                            res = {"robust": res["robust"], "nonrobust": dict(res["robust"]),
                                   **{m: v for m, v in res.items() if m != "robust"}}
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
    """|cos| of the top and bottom eigenvectors of (1/n) sum y_i^2 x_i x_i^T with beta* (eps = 0), per link."""
    rows = _Rows()
    d = int(params["d"])
    n = int(params["n_per_d"]) * d
    metrics = {}
    with threadpool_limits(1):
        for link in params["links"]:
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
                             "esc": c["esc"], "E_d2f": c["E_d2f"], "E_f_sq": c["E_f_sq"]}
    metrics["constants"] = {lk: link_constants(lk) for lk in LINK_NAMES}  # Gaussian constants of every link
    positive = [lk for lk in params.get("esc_positive_links", ["gelu", "swish", "tanh"]) if lk in metrics]
    if positive:
        worst = min(positive, key=lambda lk: metrics[lk]["top_abs_cos"])
        metrics["min_top_abs_cos_positive_esc"] = metrics[worst]["top_abs_cos"]
        metrics["min_top_abs_cos_positive_esc_se"] = metrics[worst]["top_abs_cos_se"]
        metrics["min_top_abs_cos_link"] = worst
    return rows.rows, metrics


def _slope(ns, errs) -> float:
    """Least-squares slope of log err against log n."""
    return float(np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(errs, float)), 1)[0])


def run_rate(params: dict, ctx: RunContext):
    """Final error at eps = 0 against n = (n/d) d; slope of log err vs log n (theory: -1/2)."""
    rows = _Rows()
    link, sigma = params["link"], float(params["sigma"])
    metrics = {}
    with threadpool_limits(1):
        for d in params["d_list"]:
            d = int(d)
            ns = [int(r) * d for r in params["n_per_d"]]
            errs = np.zeros((int(params["seeds"]), len(ns)))
            for j, n in enumerate(ns):
                for s in range(errs.shape[0]):
                    D = make_sim_data(n, d, link=link, sigma=sigma, noise_df=_noise_df(params),
                                      seed=data_seed(ctx.seed, s))
                    fit = fit_robust_sim(D.X, D.y, link, 0.0, eta=_eta(params, link), n_iter=int(params["n_iter"]))
                    errs[s, j] = estimation_error(fit.beta, D.beta_star)
                    rows.add("nonrobust", s, int(params["n_iter"]), "err", errs[s, j], link=link, n=n, d=d,
                             sigma=sigma)
            ctx.log(f"rate: d={d} done")
            per_seed = [_slope(ns, errs[s]) for s in range(errs.shape[0])]
            block = {"slope": _slope(ns, errs.mean(axis=0)), "slope_se": mean_and_se(per_seed)[1],
                     "err": {f"n_{n}": float(errs[:, j].mean()) for j, n in enumerate(ns)}}
            metrics[f"d_{d}"] = block
    first = f"d_{int(params['d_list'][0])}"
    metrics["slope"], metrics["slope_se"] = metrics[first]["slope"], metrics[first]["slope_se"]
    return rows.rows, metrics


def _errors_from_robustness(params: dict, ctx: RunContext, eps: float, sigma: float):
    """Robust errors per seed of the same setting from ``../robustness`` when it ran with the same root seed,
    sizes, step size and iterations (the data seeds are shared, so the numbers are the ones this experiment
    would compute); None otherwise."""
    src = ctx.out_dir.parent / "robustness"
    if not ((src / "metrics.json").exists() and (src / "provenance.json").exists()):
        return None
    prov = read_metrics(src / "provenance.json")
    rp, link, adv = prov.get("params", {}), params["link"], params["adversary"]
    same = (prov.get("seed") == ctx.seed and adv in rp.get("adversaries", []) and link in rp.get("links", [])
            and "robust" in rp.get("methods", []) and float(rp.get("sigma", -1)) == sigma
            and eps in {float(rp.get("eps", -1)), *map(float, rp.get("eps_extra", []))}
            and int(rp.get("n", -1)) == int(params["n"]) and int(rp.get("d", -1)) == int(params["d"])
            and int(rp.get("n_iter", -1)) == int(params["n_iter"]) and _eta(rp, link) == _eta(params, link)
            and _noise_df(rp) == _noise_df(params) and int(rp.get("seeds", 0)) >= int(params["seeds"]))
    if not same:
        return None
    df = pd.read_csv(src / "results.csv", float_precision="round_trip")  # exact floats, as written
    sel = df[(df["method"] == "robust") & (df["metric"] == "err") & (df["adversary"] == adv) & (df["link"] == link)
             & (df["eps"] == eps)].sort_values("seed")
    vals = sel["value"].to_numpy()[: int(params["seeds"])]
    if len(vals) < int(params["seeds"]):
        return None
    ctx.log(f"sigma_scaling: eps={eps} sigma={sigma} taken from ../robustness (same data and settings)")
    ctx.record(reused_from_robustness=True)
    return vals


def run_sigma_scaling(params: dict, ctx: RunContext):
    """Robust error vs sigma under one adversary; ratio err(sigma_max)/err(sigma_min) (theory: linear)."""
    rows = _Rows()
    link, adv = params["link"], params["adversary"]
    n, d = int(params["n"]), int(params["d"])
    sigmas = [float(s) for s in params["sigmas"]]
    metrics = {}
    with threadpool_limits(1):
        for eps in [float(e) for e in params["eps_list"]]:
            block = {"err": {}, "err_se": {}}
            errs = np.zeros((int(params["seeds"]), len(sigmas)))
            for j, sigma in enumerate(sigmas):
                shared_errs = _errors_from_robustness(params, ctx, eps, sigma)
                for s in range(errs.shape[0]):
                    if shared_errs is not None:
                        errs[s, j] = shared_errs[s]
                        rows.add("robust", s, int(params["n_iter"]), "err", errs[s, j], adversary=adv, link=link,
                                 eps=eps, sigma=sigma, n=n, d=d)
                        continue
                    D = make_sim_data(n, d, link=link, sigma=sigma, eps=eps, adversary=adv,
                                      noise_df=_noise_df(params), seed=data_seed(ctx.seed, s))
                    fit = fit_robust_sim(D.X, D.y, link, eps, eta=_eta(params, link), n_iter=int(params["n_iter"]))
                    errs[s, j] = estimation_error(fit.beta, D.beta_star)
                    rows.add("robust", s, int(params["n_iter"]), "err", errs[s, j], adversary=adv, link=link,
                             eps=eps, sigma=sigma, n=n, d=d)
                mean, se = mean_and_se(errs[:, j])
                block["err"][f"sigma_{key(sigma)}"], block["err_se"][f"sigma_{key(sigma)}"] = mean, se
                ctx.log(f"sigma_scaling: eps={eps} sigma={sigma} done")
            block["ratio"] = float(errs[:, -1].mean() / errs[:, 0].mean())
            block["ratio_se"] = mean_and_se(errs[:, -1] / errs[:, 0])[1]
            block["sigma_ratio"] = sigmas[-1] / sigmas[0]
            metrics[f"eps_{key(eps)}"] = block
    main_eps = f"eps_{key(float(params['eps_main']))}"
    metrics["ratio"], metrics["ratio_se"] = metrics[main_eps]["ratio"], metrics[main_eps]["ratio_se"]
    return rows.rows, metrics


def run_init_quality(params: dict, ctx: RunContext):
    """sin angle of the initial estimates (robust spectral, truncated robust spectral, plain spectral,
    first-order Stein) at one eps, per adversary."""
    rows = _Rows()
    link, eps = params["link"], float(params["eps"])
    n, d, sigma = int(params["n"]), int(params["d"]), float(params["sigma"])
    q = params.get("truncate_quantile")
    metrics = {}
    with threadpool_limits(1):
        for adv in params["adversaries"]:
            vals = {}
            for s in range(int(params["seeds"])):
                D = make_sim_data(n, d, link=link, sigma=sigma, eps=eps, adversary=adv, noise_df=_noise_df(params),
                                  seed=data_seed(ctx.seed, s))
                inits = {"robust": robust_spectral_init(D.X, D.y, eps, link=link),
                         "plain": robust_spectral_init(D.X, D.y, 0.0, link=link),
                         "stein": stein_init(D.X, D.y, link, eps)}
                if q is not None:
                    inits["robust_truncated"] = robust_spectral_init(D.X, D.y, eps, link=link, truncate_quantile=q)
                for m, w in inits.items():
                    v = sin_angle(w, D.beta_star)
                    vals.setdefault(m, []).append(v)
                    rows.add(m, s, 0, "init_sin", v, adversary=adv, link=link, eps=eps, n=n, d=d)
            metrics[adv] = {"sin": {m: mean_and_se(v)[0] for m, v in vals.items()},
                            "sin_se": {m: mean_and_se(v)[1] for m, v in vals.items()}}
    worst = max(params["adversaries"], key=lambda a: metrics[a]["sin"]["robust"])
    metrics["max_mean_sin_robust"] = metrics[worst]["sin"]["robust"]
    metrics["max_mean_sin_robust_se"] = metrics[worst]["sin_se"]["robust"]
    metrics["worst_adversary"] = worst
    metrics["eps"] = eps
    return rows.rows, metrics


def _median_time(fn, repeats: int, warmup: bool = True) -> tuple[float, float, object]:
    """Median CPU and wall seconds of ``repeats`` calls of fn() (after one warm-up call), and the last result."""
    t = time_calls(fn, repeats, warmup=warmup)
    return t.cpu_median, t.wall_median, t.output


def run_timing(params: dict, ctx: RunContext):
    """CPU time of one robust_mean call on the gradient matrix at beta*, for each n (median of repeats).

    Times are run-dependent: they are written to provenance.json (key ``timing``), not to metrics.json."""
    rows = _Rows()
    link, eps, d, adv = params["link"], float(params["eps"]), int(params["d"]), params["adversary"]
    metrics = {"cpu_s": {}, "wall_s": {}}
    with threadpool_limits(1):
        for n in [int(v) for v in params["n_list"]]:
            D = make_sim_data(n, d, link=link, sigma=float(params["sigma"]), eps=eps, adversary=adv,
                              noise_df=_noise_df(params), seed=data_seed(ctx.seed, 0))
            G = gradient_matrix(D.X, D.y, D.beta_star, link)
            cpu, wall, _ = _median_time(lambda: robust_mean(G, eps), int(params["repeats"]))
            metrics["cpu_s"][f"n_{n}"], metrics["wall_s"][f"n_{n}"] = cpu, wall
            rows.add("robust_mean", 0, 0, "cpu_s", cpu, n=n, d=d)
            rows.add("robust_mean", 0, 0, "wall_s", wall, n=n, d=d)
    ns = [int(v) for v in params["n_list"]]
    metrics["ratio"] = metrics["cpu_s"][f"n_{ns[-1]}"] / metrics["cpu_s"][f"n_{ns[0]}"]
    metrics["n_ratio"] = ns[-1] / ns[0]
    # times change from run to run: they go to provenance.json (the claim reads them there); metrics.json keeps
    # only what is reproducible byte for byte
    ctx.record(timing=metrics)
    return rows.rows, {"n_list": ns, "n_ratio": ns[-1] / ns[0], "repeats": int(params["repeats"]),
                       "times_in": "provenance.json (key timing)"}


def run_performance(params: dict, ctx: RunContext):
    """Side by side on the same (X, y): robust GD (ours) vs scipy least_squares soft-L1 from the plain
    spectral estimate; median CPU time over repeats and the errors. The times are run-dependent and go to
    provenance.json (key ``performance``); metrics.json holds the errors."""
    rows = _Rows()
    link, eps, d, adv = params["link"], float(params["eps"]), int(params["d"]), params["adversary"]
    lk = get_link(link)
    reps = int(params["repeats"])
    metrics = {}
    with threadpool_limits(1):
        for n in [int(v) for v in params["n_list"]]:
            D = make_sim_data(n, d, link=link, sigma=float(params["sigma"]), eps=eps, adversary=adv,
                              noise_df=_noise_df(params), seed=data_seed(ctx.seed, 0))
            t_ours, w_ours, fit = _median_time(
                lambda: fit_robust_sim(D.X, D.y, link, eps, eta=_eta(params, link), n_iter=int(params["n_iter"])),
                reps, warmup=False)
            t_scipy, w_scipy, beta_scipy = _median_time(lambda: fit_huber(D.X, D.y, link, loss="soft_l1"), reps,
                                                        warmup=False)
            e_ours = estimation_error(fit.beta, D.beta_star, even=lk.even)
            e_scipy = estimation_error(beta_scipy, D.beta_star, even=lk.even)
            metrics[f"n_{n}"] = {"cpu_s_ours": t_ours, "cpu_s_scipy": t_scipy, "wall_s_ours": w_ours,
                                 "wall_s_scipy": w_scipy, "time_ratio": t_ours / t_scipy, "err_ours": e_ours,
                                 "err_scipy": e_scipy, "err_ratio": e_ours / e_scipy}
            for m, t, e in (("robust_gd", t_ours, e_ours), ("scipy_soft_l1", t_scipy, e_scipy)):
                rows.add(m, 0, 0, "cpu_s", t, n=n, d=d)
                rows.add(m, 0, 0, "err", e, n=n, d=d)
            ctx.log(f"performance: n={n} ours {t_ours:.2f}s scipy {t_scipy:.2f}s")
    metrics["repeats"] = reps
    ctx.record(performance=metrics)  # run-dependent times: provenance.json; metrics.json keeps the errors
    stable = {k: {e: v[e] for e in ("err_ours", "err_scipy", "err_ratio")} for k, v in metrics.items()
              if k.startswith("n_")}
    return rows.rows, {**stable, "repeats": reps, "times_in": "provenance.json (key performance)"}


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
                                    res = _fit_methods(["robust", "nonrobust"], D, link, eps, params, ctx, ())
                                    per_seed.append(res)
                                    for m, vals in res.items():
                                        rows.add(m, s, int(params["n_iter"]), "err", vals["err"], adversary=adv,
                                                 link=link, eps=eps, sigma=sigma, n=r * d, d=d, noise_df=nu)
                                summ = _summarise(per_seed)
                                cell = f"d_{d}.n_per_d_{r}.sigma_{key(sigma)}.nu_{key(nu)}"
                                node = metrics.setdefault(adv, {}).setdefault(link, {})
                                for part in cell.split(".")[:-1]:
                                    node = node.setdefault(part, {})
                                node[cell.split(".")[-1]] = {"err": summ["err"],
                                                             "ratio_robust_to_nonrobust":
                                                                 summ["ratio_robust_to_nonrobust"]}
                ctx.log(f"grid: {adv} {link} done")
    return rows.rows, metrics


EXPERIMENTS = {
    "robustness": run_robustness,
    "esc_init": run_esc_init,
    "rate": run_rate,
    "sigma_scaling": run_sigma_scaling,
    "init_quality": run_init_quality,
    "timing": run_timing,
    "performance": run_performance,
    "eps_sweep": run_eps_sweep,
    "grid": run_grid,
}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
