"""Experiments of the romberg_zoge reproduction (spec "Experiments by scale").

``python -m papers.romberg_zoge.experiments NAME --config papers/romberg_zoge/config.yaml --scale quick --out DIR``
with NAME one of ``estimator`` (weights table, Z1-Z4), ``exponential`` (Z5), ``benchmarks`` (breast-cancer
logistic regression and Styblinski-Tang), ``ris`` (Z6), ``prompt`` (Z7, with the float16 pass),
``prompt_lm`` (BBT-style prompt tuning of SmolLM2-135M, :mod:`papers.romberg_zoge.prompt_lm`) and ``performance``. Each function takes the params of its config block and returns (tidy rows, metrics); traces
for the figures are written next to them as ``.npz`` files. Wall times go to ``timings.json`` and provenance.json
only, so that ``metrics.json`` is byte-identical across runs.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from shared import seeding
from shared.experiment import RunContext, main
from shared.oracles.zeroth_order import as_batched, perturbation_directions, with_additive_noise
from shared.provenance import hardware
from shared.results import mean_and_se, write_arrays, write_metrics

from papers.romberg_zoge.estimator import (gaussian_smoothing_fixed_point, kernel_zoge, noise_amplification,
                                           residual_constant, romberg_directional, romberg_weights,
                                           romberg_weights_exact, romberg_zoge)
from papers.romberg_zoge.optim import zo_sgd
from papers.romberg_zoge.problems import (BreastCancerLogistic, ExponentialSeparable, LogisticTest, MinibatchLoss,
                                          QuadraticSeparable,
                                          PromptTuning, RISProblem, StyblinskiTang, fit_frozen_model, load_frozen_model,
                                          power_sum, power_sum_gradient)

__all__ = ["EXPERIMENTS", "estimator", "exponential", "benchmarks", "ris", "prompt", "performance", "loglog_slope",
           "run_prompt_lm"]


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def _row(method, seed, step, metric, value, **extra):
    return {"method": method, "seed": seed, "step": step, "metric": metric, "value": float(value), **extra}


# ------------------------------------------------------------------------------------------------ estimator
def _weights_table(levels):
    out = {}
    for R in levels:
        w = romberg_weights(R)
        out[f"R{R}"] = {"weights": w.tolist(), "weights_exact": [str(v) for v in romberg_weights_exact(R)],
                        "sum_abs": float(np.abs(w).sum()), "kappa": noise_amplification(R),
                        "rho": residual_constant(R), "evaluations_per_direction": 2 * (R + 1)}
    return out


def _bias_orders(params, rows):
    """Z1: mean_u ||ghat_R - (u^T g) u|| on the logistic function at x0, 256 fixed directions."""
    f = LogisticTest()
    g = f.gradient(f.x0)
    U = np.random.default_rng(int(params["direction_seed"])).standard_normal((int(params["n_directions"]), f.dim))
    radii = [float(r) for r in params["radii"]]
    target = (U @ g)[:, None] * U
    residual, slopes = {}, {}
    for R in params["levels"]:
        res = []
        for r in radii:
            est = romberg_zoge(f, f.x0, U, r, R, average=False)
            res.append(float(np.linalg.norm(est - target, axis=1).mean()))
            rows.append(_row(f"R{R}", 0, 0, "bias_residual", res[-1], radius=r))
        residual[f"R{R}"] = res
        slopes[f"R{R}"] = loglog_slope(radii, res)
    margins = [slopes[f"R{R}"] - (2 * R + 2) for R in params["claim_levels"]]
    # control: the same radii r/2^k averaged with equal weights (no extrapolation), which keeps the O(r^2) term
    uniform = {}
    for R in params["claim_levels"]:
        res = []
        for r in radii:
            est = np.mean([romberg_zoge(f, f.x0, U, r / 2.0 ** k, 0, average=False) for k in range(R + 1)], axis=0)
            res.append(float(np.linalg.norm(est - target, axis=1).mean()))
        uniform[f"R{R}"] = loglog_slope(radii, res)
    return {"radii": radii, "residual": residual, "slope": slopes, "slope_margin_min": float(min(margins)),
            "control": {"uniform_weights": {"slope": uniform, "slope_margin_min": float(min(
                uniform[f"R{R}"] - (2 * R + 2) for R in params["claim_levels"]))}}}


def _difference_rounding_unit(f, x, u, r) -> float:
    """eps F ||u|| / r, F = max |f| over the points x +- h u (h = r, r/2) of a level-1 estimate: the size of the
    float64 rounding error of a central difference (f(x + h u) - f(x - h u)) / (2h) u, up to a factor of the
    order of the number of terms in f. Level 1 combines D(r/2) and D(r) with weights 4/3 and -1/3, so its rounding
    error is at most about 3 (d + 6) of these units on sum x^6 in d dimensions (each evaluation of x^6 summed
    over d coordinates rounds by about (d + 6) eps F, its argument x + h u included)."""
    pts = x[None, :] + np.array([[r], [-r], [r / 2], [-r / 2]]) * u
    return float(np.finfo(float).eps * np.abs(f(pts)).max() * np.linalg.norm(u) / r)


def _exactness(params):
    """Z2: pathwise cancellation on sum x^4 and sum x^6 (closed forms of the residual). For the sextic at level
    1 the residual is exactly -1.5 r^4 (sum x_i u_i^5) u in exact arithmetic, so what is left is float64 rounding:
    it is recorded relative to the predicted term and in units of :func:`_difference_rounding_unit`."""
    rng = np.random.default_rng(int(params["seed"]))
    n, d = int(params["n_draws"]), int(params["dim"])
    quartic, sextic = power_sum(4), power_sum(6)
    worst = {"quartic_R0_closed_form": 0.0, "quartic_R1plus": 0.0, "sextic_R1_closed_form": 0.0,
             "sextic_R1_rounding_units": 0.0, "sextic_R2": 0.0}
    for _ in range(n):
        x, u = rng.standard_normal(d), rng.standard_normal((1, d))
        r = float(rng.uniform(params["r_min"], 1.0))
        for p, f in ((4, quartic), (6, sextic)):
            g = power_sum_gradient(x, p)
            target = (u[0] @ g) * u[0]
            scale = float(np.linalg.norm(g) * (u[0] @ u[0]))
            for R in (0, 1, 2, 3):
                resid = romberg_zoge(f, x, u, r, R) - target
                if p == 4 and R == 0:
                    pred = 4 * r ** 2 * float(np.sum(x * u[0] ** 3)) * u[0]
                    err = np.linalg.norm(resid - pred) / np.linalg.norm(pred)
                    worst["quartic_R0_closed_form"] = max(worst["quartic_R0_closed_form"], float(err))
                elif p == 4:
                    worst["quartic_R1plus"] = max(worst["quartic_R1plus"], float(np.linalg.norm(resid) / scale))
                elif R == 1:
                    pred = -1.5 * r ** 4 * float(np.sum(x * u[0] ** 5)) * u[0]
                    miss = float(np.linalg.norm(resid - pred))
                    worst["sextic_R1_closed_form"] = max(worst["sextic_R1_closed_form"],
                                                         miss / float(np.linalg.norm(pred)))
                    worst["sextic_R1_rounding_units"] = max(worst["sextic_R1_rounding_units"],
                                                            miss / _difference_rounding_unit(f, x, u, r))
                elif R == 2:
                    worst["sextic_R2"] = max(worst["sextic_R2"], float(np.linalg.norm(resid) / scale))
    return worst


def _variance(params, rows):
    """Z3: E||ghat - g||^2 / ((d+1)||g||^2) at small r, Gaussian, sphere and kernel directions."""
    f = LogisticTest()
    g = f.gradient(f.x0)
    d, n, r = f.dim, int(params["n_directions"]), float(params["radius"])
    rng = np.random.default_rng(int(params["seed"]))
    G = rng.standard_normal((n, d))
    unit = G / np.linalg.norm(G, axis=1, keepdims=True)
    zetas = rng.uniform(-1.0, 1.0, n)
    norm = (d + 1) * float(g @ g)
    out = {"ratio": {}, "ratio_se": {}, "theory": {}}

    def record(key, est, theory):
        sq = ((est - g) ** 2).sum(axis=1) / norm
        m, se = mean_and_se(sq)
        out["ratio"][key], out["ratio_se"][key], out["theory"][key] = m, se, theory
        rows.append(_row(key, 0, 0, "variance_ratio", m))

    for R in params["levels"]:
        record(f"gaussian_R{R}", romberg_zoge(f, f.x0, G, r, R, average=False), 1.0)
        record(f"sphere_R{R}", romberg_zoge(f, f.x0, math.sqrt(d) * unit, r, R, average=False), (d - 1) / (d + 1))
    record("kernel", kernel_zoge(f, f.x0, unit, zetas, r, average=False), (6.25 * d - 1) / (d + 1))
    gaussian = [out["ratio"][f"gaussian_R{R}"] for R in params["claim_levels"]]
    out["gaussian_max_abs_dev"] = float(max(abs(v - 1.0) for v in gaussian))
    return out


def _noise(params, rows):
    """Z4: variance of the noise part of sum_k w_k D(h_k) against sigma^2 kappa_R / (2 r^2)."""
    f = LogisticTest()
    sigma, r, n = float(params["sigma"]), float(params["radius"]), int(params["n_draws"])
    u = perturbation_directions([int(params["direction_seed"])], f.dim)
    U = np.repeat(u, n, axis=0)  # one direction, n independent noisy estimates in one batched call
    out = {"empirical": {}, "predicted": {}, "ratio": {}}
    for R in params["levels"]:
        noisy = with_additive_noise(f, sigma, seeding.generator(int(params["seed"]), f"R{R}"))
        s = romberg_directional(noisy, f.x0, U, r, R)
        emp, pred = float(np.var(s, ddof=1)), sigma ** 2 * noise_amplification(R) / (2 * r ** 2)
        out["empirical"][f"R{R}"], out["predicted"][f"R{R}"] = emp, pred
        out["ratio"][f"R{R}"] = emp / pred
        rows.append(_row(f"R{R}", 0, 0, "noise_variance_ratio", emp / pred))
    out["max_rel_dev"] = float(max(abs(out["ratio"][f"R{R}"] - 1.0) for R in params["claim_levels"]))
    out["ratio_se"] = math.sqrt(2.0 / (n - 1))
    return out


def estimator(params: dict, ctx: RunContext):
    """Weights table (R = 0..3), Z1 bias orders, Z2 exactness, Z3 variance ratios, Z4 noise amplification."""
    rows = []
    metrics = {"weights": _weights_table(params["table_levels"])}
    metrics["bias"] = _bias_orders(params["bias"], rows)
    ctx.log(f"Z1 slopes {metrics['bias']['slope']}")
    metrics["exactness"] = _exactness(params["exactness"])
    metrics["variance"] = _variance(params["variance"], rows)
    ctx.log(f"Z3 ratios {metrics['variance']['ratio']}")
    metrics["noise"] = _noise(params["noise"], rows)
    ctx.log(f"Z4 ratios {metrics['noise']['ratio']}")
    return rows, metrics


# ---------------------------------------------------------------------------------------------- exponential
def exponential(params: dict, ctx: RunContext):
    """Z5: ZO-SGD on the separable exponential at fixed evaluation budgets; offsets xbar - c per method
    against the analytic fixed point -log(sum_k w_k exp(h_k^2/2)). A diverged run is recorded as such."""
    f = ExponentialSeparable(int(params["dim"]))
    T, r, every = int(params["iterations"]), float(params["radius"]), int(params["record_every"])
    seeds = list(params["seeds"])
    rows, metrics, arrays, per_seed_norms = [], {}, {}, {}
    for spec in params["methods"]:
        name, method, level, Q = spec["name"], spec["method"], int(spec.get("level", 0)), int(spec["Q"])
        offsets, norms, traces, diverged = [], [], [], None
        per_seed_norms[name] = norms
        for s in seeds:
            try:
                out = zo_sgd(f, np.zeros(f.dim), method=method, level=level, radius=r, evals_per_step=Q,
                             iterations=T, lr=float(params["lr"]), lr_t0=float(params["lr_t0"]),
                             lr_power=float(params["lr_power"]), seed=seeding.generator(ctx.seed, name, str(s)),
                             record_every=every)
            except FloatingPointError as exc:
                diverged = str(exc).split(":")[0]
                ctx.log(f"{name} seed {s} diverged: {diverged}")
                rows.append(_row(name, s, T, "offset_mean", np.nan))
                break
            off = out["x_avg"] - f.c
            offsets.append(float(off.mean()))
            norms.append(float(np.linalg.norm(off)))
            traces.append((out["iterates"] - f.c).mean(axis=1))
            rows.append(_row(name, s, T, "offset_mean", offsets[-1]))
            rows.append(_row(name, s, T, "offset_norm", norms[-1]))
        entry = {"method": method, "level": level, "Q": Q, "B": None}
        analytic = (gaussian_smoothing_fixed_point(r, 0 if method == "two_point" else level)
                    if method in ("two_point", "romberg") else None)
        if diverged:
            entry.update(diverged=True, diverged_at=diverged)
        else:
            m, se = mean_and_se(offsets)
            nm, nse = mean_and_se(norms)
            entry.update(diverged=False, offset_mean=m, offset_se=se, offset_norm=nm, offset_norm_se=nse)
            if analytic is not None:
                entry.update(analytic=analytic, error_vs_analytic=m - analytic)
            arrays[f"{name}__offset"] = np.mean(traces, axis=0)
            arrays[f"{name}__steps"] = out["record_steps"]
        entry["B"] = {"two_point": Q // 2, "kernel": Q // 2, "romberg": Q // (2 * (level + 1)),
                      "forward_romberg": (Q - 1) // (level + 1)}[method]
        if analytic is not None:
            entry["analytic"] = analytic
        metrics[name] = entry
        ctx.log(f"{name}: {entry.get('offset_mean', 'diverged')}")
    base, cmp_ = params["ratio_pair"]
    if not metrics[base].get("diverged") and not metrics[cmp_].get("diverged"):
        metrics["norm_ratio"] = metrics[cmp_]["offset_norm"] / metrics[base]["offset_norm"]
        metrics["samples"] = {"norm_ratio": [a / b for a, b in zip(per_seed_norms[cmp_], per_seed_norms[base])]}
    if params.get("control_quadratic"):
        # control: the quadratic with the same minimiser c, where central differences are exact (no bias to remove)
        q = QuadraticSeparable(int(params["dim"]))
        norms_q = {}
        for name in (base, cmp_):
            spec = next(m for m in params["methods"] if m["name"] == name)
            norms_q[name] = [float(np.linalg.norm(zo_sgd(
                q, np.zeros(q.dim), method=spec["method"], level=int(spec.get("level", 0)), radius=r,
                evals_per_step=int(spec["Q"]), iterations=T, lr=float(params["lr"]), lr_t0=float(params["lr_t0"]),
                lr_power=float(params["lr_power"]), seed=seeding.generator(ctx.seed, "quadratic", name, str(s)))["x_avg"]
                - q.c)) for s in seeds]
        metrics["control"] = {"quadratic": {"norm_ratio": [a / b for a, b in zip(norms_q[cmp_], norms_q[base])]}}
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, {"z5": metrics}


# ------------------------------------------------------------------------------------------------ benchmarks
def _method_fixed_points(spec):
    name, method, level, Q = spec["name"], spec["method"], int(spec.get("level", 0)), int(spec["Q"])
    if method not in ("two_point", "romberg"):
        raise ValueError(f"benchmarks: method must be 'two_point' or 'romberg', got {method!r}")
    return name, method, (0 if method == "two_point" else level), Q


def _run_seeds(f, x0, spec, params, ctx, tag, record_every, weights=None):
    """ZO-SGD of one method spec on every seed of ``params``; ``weights`` (Romberg only) replaces the
    extrapolation weights (the equal-weight control)."""
    name, method, level, Q = _method_fixed_points(spec)
    outs = []
    for s in params["seeds"]:
        outs.append(zo_sgd(f, x0, method=method, level=level, radius=float(params["radius"]), evals_per_step=Q,
                           iterations=int(params["iterations"]), lr=float(params["lr"]),
                           lr_t0=float(params["lr_t0"]), lr_power=float(params["lr_power"]),
                           seed=seeding.generator(ctx.seed, tag, name, str(s)), record_every=record_every,
                           weights=weights))
    return outs


def _bc_equal_weights_control(bc, x_star, bp, ctx, two_point_dists):
    """Control of ``bc-romberg-removes-bias``: the compared Romberg method with its extrapolation weights
    w = (-1/3, 4/3) replaced by ``bp["control_weights"]`` (equal weights 1/2, 1/2 on the radii r and r/2: the same
    evaluations and directions per step, but the r^2 term of the smoothing bias is not cancelled, so its fixed
    point, the minimiser of sum_k w_k f_{h_k}, stays at a distance of the order of the two-point one).
    Per seed: ||xbar_ctrl - x*|| / ||xbar_2pt - x*||, with the two-point runs of the main comparison."""
    cmp_spec = next(s for s in bp["methods"] if s["name"] == bp["ratio_pair"][1])
    name, method, level, _ = _method_fixed_points(cmp_spec)
    weights = np.asarray(bp["control_weights"], dtype=float)
    if method != "romberg" or weights.shape != (level + 1,):
        raise ValueError(f"benchmarks: control_weights needs a Romberg method with {level + 1} weights to compare, "
                         f"got method {method!r} and weights {bp['control_weights']!r}")
    runs = _run_seeds(bc, np.zeros(bc.dim), cmp_spec, bp, ctx, "breast_cancer_equal_weights", 0, weights=weights)
    dists = [float(np.linalg.norm(o["x_avg"] - x_star)) for o in runs]
    r = float(bp["radius"])
    x_fp = bc.smoothed_minimiser(r / 2.0 ** np.arange(level + 1), weights, x0=x_star)
    x_fp_2pt = bc.smoothed_minimiser([r], [1.0], x0=x_star)
    return {"weights": weights.tolist(), "ratio_to_optimum": [a / b for a, b in zip(dists, two_point_dists)],
            "fixed_point_ratio": float(np.linalg.norm(x_fp - x_star) / np.linalg.norm(x_fp_2pt - x_star))}


def benchmarks(params: dict, ctx: RunContext):
    """ZO-SGD at a fixed evaluation budget on the spec's two extra problems, against the analytic expected
    fixed points (the minimiser of sum_k w_k f_{h_k}, f_h the Gaussian smoothing):
    logistic regression on the standardised breast-cancer data (d = 30; smoothed minimisers by Gauss-Hermite
    quadrature and L-BFGS-B) and Styblinski-Tang (d = 20; closed-form fixed points, exact for R >= 1)."""
    rows, metrics, arrays, per_seed = [], {}, {}, {}
    every = int(params["record_every"])

    bp = params["breast_cancer"]
    bc = BreastCancerLogistic(l2=float(bp["l2"]))
    x_star = bc.smoothed_minimiser([0.0])
    r = float(bp["radius"])
    out = {"dim": bc.dim, "radius": r, "l2": bc.l2, "f_star": float(bc(x_star)[0]), "methods": {}}
    for spec in bp["methods"]:
        name, method, level, Q = _method_fixed_points(spec)
        radii = r / 2.0 ** np.arange(level + 1)
        x_fp = bc.smoothed_minimiser(radii, romberg_weights(level), x0=x_star)
        runs = _run_seeds(bc, np.zeros(bc.dim), spec, bp, ctx, "breast_cancer", every)
        to_star = [float(np.linalg.norm(o["x_avg"] - x_star)) for o in runs]
        per_seed.setdefault("bc", {})[name] = to_star
        to_fp = [float(np.linalg.norm(o["x_avg"] - x_fp)) for o in runs]
        for s, a, b in zip(bp["seeds"], to_star, to_fp):
            rows.append(_row(name, s, int(bp["iterations"]), "dist_to_optimum", a, problem="breast_cancer"))
            rows.append(_row(name, s, int(bp["iterations"]), "dist_to_fixed_point", b, problem="breast_cancer"))
        m, se = mean_and_se(to_star)
        mf, sef = mean_and_se(to_fp)
        out["methods"][name] = {"method": method, "level": level, "Q": Q, "dist_to_optimum": m,
                                "dist_to_optimum_se": se, "dist_to_fixed_point": mf, "dist_to_fixed_point_se": sef,
                                "fixed_point_dist_to_optimum": float(np.linalg.norm(x_fp - x_star)),
                                "gap": float(np.mean([bc(o["x_avg"])[0] for o in runs]) - out["f_star"])}
        arrays[f"breast_cancer__{name}__dist"] = np.mean(
            [np.linalg.norm(o["iterates"] - x_star, axis=1) for o in runs], axis=0)
        arrays["breast_cancer__steps"] = runs[0]["record_steps"]
        ctx.log(f"breast cancer {name}: |xbar - x*| {m:.4f}, |xbar - x_fp| {mf:.4f}")
    base, cmp_ = bp["ratio_pair"]
    ms = out["methods"]
    out["samples"] = {"ratio_to_optimum": [a / b for a, b in zip(per_seed["bc"][cmp_], per_seed["bc"][base])]}
    if "control_radius" in bp:   # control: a radius so small that the smoothing bias is negligible
        ctrl = {}
        for spec in bp["methods"]:
            cp = dict(bp, radius=float(bp["control_radius"]))
            ctrl[spec["name"]] = [float(np.linalg.norm(o["x_avg"] - x_star))
                                  for o in _run_seeds(bc, np.zeros(bc.dim), spec, cp, ctx, "breast_cancer_control", 0)]
        out["control"] = {"small_radius": {"radius": float(bp["control_radius"]), "ratio_to_optimum": [
            a / b for a, b in zip(ctrl[cmp_], ctrl[base])]}}
    if "control_weights" in bp:  # control: the extrapolation switched off (equal weights on the same radii)
        out.setdefault("control", {})["equal_weights"] = _bc_equal_weights_control(bc, x_star, bp, ctx,
                                                                                   per_seed["bc"][base])
        ctx.log(f"breast cancer equal-weight control: fixed-point ratio "
                f"{out['control']['equal_weights']['fixed_point_ratio']:.3f}")
    out["ratio_to_optimum"] = ms[cmp_]["dist_to_optimum"] / ms[base]["dist_to_optimum"]
    out["fixed_point_ratio"] = ms[cmp_]["fixed_point_dist_to_optimum"] / ms[base]["fixed_point_dist_to_optimum"]
    out["max_rel_dist_to_fixed_point"] = max(v["dist_to_fixed_point"] for v in ms.values()) / \
        ms[base]["fixed_point_dist_to_optimum"]
    metrics["breast_cancer"] = out

    sp = params["styblinski_tang"]
    st = StyblinskiTang(int(sp["dim"]))
    r = float(sp["radius"])
    x_star = st.fixed_point(0.0, 0)
    out = {"dim": st.dim, "radius": r, "x_star": x_star, "x0": float(sp["x0"]), "methods": {}}
    for spec in sp["methods"]:
        name, method, level, Q = _method_fixed_points(spec)
        analytic = st.fixed_point(r, level)
        runs = _run_seeds(st, np.full(st.dim, float(sp["x0"])), spec, sp, ctx, "styblinski_tang", every)
        offsets = [_basin_offset(o["x_avg"], x_star) for o in runs]
        per_seed.setdefault("st", {})[name] = offsets
        for s, v in zip(sp["seeds"], offsets):
            rows.append(_row(name, s, int(sp["iterations"]), "offset_mean", v, problem="styblinski_tang"))
        m, se = mean_and_se(offsets)
        out["methods"][name] = {"method": method, "level": level, "Q": Q, "offset_mean": m, "offset_se": se,
                                "analytic_offset": analytic - x_star, "error_vs_analytic": m - (analytic - x_star),
                                "coordinates_in_other_basin": int(sum(int(np.sum(o["x_avg"] > 0.157)) for o in runs))}
        arrays[f"styblinski_tang__{name}__offset"] = np.mean([(o["iterates"] - x_star).mean(axis=1) for o in runs],
                                                             axis=0)
        arrays["styblinski_tang__steps"] = runs[0]["record_steps"]
        ctx.log(f"styblinski-tang {name}: offset {m:.5f} (analytic {analytic - x_star:.5f})")
    base, cmp_ = sp["ratio_pair"]
    ms = out["methods"]
    out["offset_ratio"] = abs(ms[cmp_]["offset_mean"]) / abs(ms[base]["offset_mean"])
    out["samples"] = {"offset_ratio": [abs(a) / abs(b) for a, b in zip(per_seed["st"][cmp_], per_seed["st"][base])]}
    if "control_radius" in sp:
        ctrl = {}
        for spec in sp["methods"]:
            cp = dict(sp, radius=float(sp["control_radius"]))
            ctrl[spec["name"]] = [_basin_offset(o["x_avg"], x_star) for o in _run_seeds(
                st, np.full(st.dim, float(sp["x0"])), spec, cp, ctx, "styblinski_tang_control", 0)]
        out["control"] = {"small_radius": {"radius": float(sp["control_radius"]), "offset_ratio": [
            abs(a) / abs(b) for a, b in zip(ctrl[cmp_], ctrl[base])]}}
    out["max_abs_error_vs_analytic"] = max(abs(v["error_vs_analytic"]) for v in ms.values())
    metrics["styblinski_tang"] = out
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, metrics


def _basin_offset(x, x_star, boundary: float = 0.157) -> float:
    """Mean offset x_i - x* over the coordinates that stayed in the start's basin (x_i below the local maximum
    of the Styblinski-Tang coordinate function at about 0.157): the fixed points are those of that basin, and a
    coordinate that crossed to the other minimum (counted in ``coordinates_in_other_basin``) is left out."""
    x = np.asarray(x, dtype=float)
    kept = x[x < boundary]
    return float(np.mean(kept - x_star)) if kept.size else float("nan")


# ------------------------------------------------------------------------------------------------------ RIS
def _quartiles(values):
    q = np.percentile(values, [25, 50, 75])
    return {"q25": float(q[0]), "median": float(q[1]), "q75": float(q[2])}


def ris(params: dict, ctx: RunContext):
    """Z6: ZO-SGD on the practical RIS model, exact and noisy-pilot oracles; relative rate gap
    (rate* - rate(theta_T))/rate* with rate* from 5-start L-BFGS-B. Channel seed offset + s, run seed s."""
    n, T, Q, lr = int(params["n_elements"]), int(params["iterations"]), int(params["Q"]), float(params["lr"])
    seeds, radii = list(params["seeds"]), [float(r) for r in params["radii"]]
    problems, refs = {}, {}
    for s in seeds:
        problems[s] = RISProblem.from_seed(n, int(params["channel_seed_offset"]) + s, phase_model=params["phase_model"])
        refs[s] = problems[s].reference_optimum(starts=int(params["reference_starts"]))[1]
    ctx.log(f"reference optima for {len(seeds)} channels")
    rows, gaps, per_seed = [], {}, {}
    for oracle, pilots in params["oracles"].items():
        for spec in params["methods"]:
            name, method, level = spec["name"], spec["method"], int(spec.get("level", 0))
            for r in radii:
                last, avg = [], []
                for s in seeds:
                    P = RISProblem(problems[s].h_direct, problems[s].cascaded, phase_model=params["phase_model"],
                                   pilots=int(pilots))
                    g_theta, g_dir, g_noise = seeding.spawn(s, 3)
                    theta0 = g_theta.uniform(0.0, 2 * math.pi, n)
                    f = (lambda X, P=P, g=g_noise: P.objective(X, rng=g)) if pilots else P.objective
                    out = zo_sgd(f, theta0, method=method, level=level, radius=r, evals_per_step=Q, iterations=T,
                                 lr=lr, lr_t0=float(params["lr_t0"]), lr_power=float(params["lr_power"]), seed=g_dir)
                    last.append((refs[s] - P.rate(out["x_last"])) / refs[s])
                    avg.append((refs[s] - P.rate(out["x_avg"])) / refs[s])
                    rows.append(_row(name, s, T, "rel_gap_last", last[-1], oracle=oracle, radius=r))
                    rows.append(_row(name, s, T, "rel_gap_avg", avg[-1], oracle=oracle, radius=r))
                key = f"r{r:g}"
                gaps.setdefault(oracle, {}).setdefault(name, {})[key] = {
                    "last": _quartiles(last), "avg": _quartiles(avg)}
                per_seed[(oracle, name, r)] = last
            by_r = gaps[oracle][name]
            best = min(by_r, key=lambda k: by_r[k]["last"]["median"])
            by_r["best"] = {"radius": best, "median": by_r[best]["last"]["median"]}
            ctx.log(f"{oracle} {name}: best {best} median gap {by_r[best]['last']['median']:.4%}")
    summary = {}
    for oracle in gaps:
        b2, bR = gaps[oracle]["two_point"]["best"]["median"], gaps[oracle]["romberg_R1"]["best"]["median"]
        summary[oracle] = {"best_ratio_R1_over_2pt": bR / b2}
        large = f"r{max(radii):g}"
        summary[oracle]["largest_r_ratio_R1_over_2pt"] = (gaps[oracle]["romberg_R1"][large]["last"]["median"]
                                                          / gaps[oracle]["two_point"][large]["last"]["median"])
    rmax = max(radii)
    samples = {oracle: {"log_ratio_largest_r": _log_ratios(per_seed[(oracle, "romberg_R1", rmax)],
                                                           per_seed[(oracle, "two_point", rmax)])}
               for oracle in params["oracles"]}
    metrics = {"gap": gaps, "summary": summary, "reference_rate": {str(s): refs[s] for s in seeds},
               "radii": radii, "samples": samples}
    if params.get("control_ideal"):
        metrics["control"] = {"ideal_phase": {"log_ratio_largest_r": _ris_ideal_control(params, rmax)}}
    return rows, metrics


def _log_ratios(num, den, floor: float = 1e-9) -> list:
    """Per-seed log(num / den) of relative gaps, each floored at ``floor`` (a gap can reach 0 or just below)."""
    return [math.log(max(a, floor) / max(b, floor)) for a, b in zip(num, den)]


def _ris_ideal_control(params, r) -> list:
    """Control of the large-radius RIS claim: the ideal phase model (beta = 1), exact oracle, radius r. Gaussian
    smoothing multiplies every reflected term by the same factor, so the smoothed objective has the exact
    maximiser and bias reduction has nothing to remove. Per seed, log(gap of Romberg R = 1 / gap of two-point)."""
    n, T, Q, lr = int(params["n_elements"]), int(params["iterations"]), int(params["Q"]), float(params["lr"])
    problems = {s: RISProblem.from_seed(n, int(params["channel_seed_offset"]) + s, phase_model="ideal")
                for s in params["seeds"]}
    refs = {s: P.reference_optimum(starts=int(params["reference_starts"]))[1] for s, P in problems.items()}
    gaps = {}
    for spec in params["methods"]:
        name, method, level = spec["name"], spec["method"], int(spec.get("level", 0))
        for s, P in problems.items():
            g_theta, g_dir, _ = seeding.spawn(s, 3)
            out = zo_sgd(P.objective, g_theta.uniform(0.0, 2 * math.pi, n), method=method, level=level, radius=r,
                         evals_per_step=Q, iterations=T, lr=lr, lr_t0=float(params["lr_t0"]),
                         lr_power=float(params["lr_power"]), seed=g_dir)
            gaps.setdefault(name, []).append((refs[s] - P.rate(out["x_last"])) / refs[s])
    return _log_ratios(gaps["romberg_R1"], gaps["two_point"])


# --------------------------------------------------------------------------------------------------- prompt
def _frozen_weights(params, ctx):
    path = Path(params.get("frozen_model", ""))
    if path.is_file():
        return load_frozen_model(path)
    ctx.log(f"{path} not found: fitting the frozen model in this run")
    return fit_frozen_model(int(params.get("frozen_max_iter", 120)))


def _float16_pass(params: dict, weights: dict, base: dict, ctx: RunContext):
    """The spec's float16 forward pass of the prompt task. (1) Rounding error of the directional estimate:
    on one fixed minibatch at z = 0, ``sum_k w_k D(h_k)`` in float16 minus the same in float32 (the truncation
    part is identical, so the difference is rounding), its standard deviation over directions for R = 0, 1 and
    the ratio against sqrt(kappa_1) (independent rounding errors of variance sigma^2 on every evaluation).
    (2) ZO-SGD in float16 against float32 with the same seeds, minibatches and directions."""
    p16 = PromptTuning(weights, prompt_dim=int(base["prompt_dim"]), dtype=np.float16)
    p32 = PromptTuning(weights, prompt_dim=int(base["prompt_dim"]), dtype=np.float32)
    z0 = np.zeros(p16.dim)
    rp = params["rounding"]
    idx = np.random.default_rng(int(rp["batch_seed"])).choice(p16.y_train.size, int(base["batch_size"]), replace=False)
    U = np.random.default_rng(int(rp["direction_seed"])).standard_normal((int(rp["n_directions"]), p16.dim))
    rounding = {}
    for r in rp["radii"]:
        std = {}
        for R in (0, 1):
            a = romberg_directional(lambda Z: p16.loss(Z, idx), z0, U, float(r), R)
            b = romberg_directional(lambda Z: p32.loss(Z, idx), z0, U, float(r), R)
            std[R] = float(np.std(a - b, ddof=1))
        rounding[f"r{float(r):g}"] = {"std_R0": std[0], "std_R1": std[1], "ratio_R1_over_R0": std[1] / std[0],
                                      "ratio_over_sqrt_kappa1": std[1] / std[0] / math.sqrt(noise_amplification(1))}
    claim_key = f"r{float(rp['claim_radius']):g}"
    out = {"rounding": rounding, "rounding_claim_dev": abs(rounding[claim_key]["ratio_over_sqrt_kappa1"] - 1.0),
           "sqrt_kappa1": math.sqrt(noise_amplification(1)), "zo_sgd": {}}
    rows, diffs = [], []
    T, Q = int(params["iterations"]), int(base["Q"])
    for spec in base["methods"]:
        name, method, level = spec["name"], spec["method"], int(spec.get("level", 0))
        for r in params["radii"]:
            acc = {}
            for dtype, problem in (("float16", p16), ("float32", p32)):
                vals = []
                for s in params["seeds"]:
                    g_batch, g_dir = seeding.spawn(s, 2)
                    res = zo_sgd(MinibatchLoss(problem, int(base["batch_size"]), g_batch), z0, method=method,
                                 level=level, radius=float(r), evals_per_step=Q, iterations=T, lr=float(base["lr"]),
                                 lr_t0=float(base["lr_t0"]), lr_power=float(base["lr_power"]), seed=g_dir)
                    vals.append(100 * float(p32.accuracy(res["x_last"])[0]))
                    rows.append(_row(name, s, T, f"test_accuracy_last_{dtype}", vals[-1], radius=float(r)))
                acc[dtype] = float(np.mean(vals))
            acc["diff"] = acc["float16"] - acc["float32"]
            diffs.append(abs(acc["diff"]))
            out["zo_sgd"].setdefault(name, {})[f"r{float(r):g}"] = acc
            ctx.log(f"float16 {name} r={float(r):g}: {acc['float16']:.1f} vs float32 {acc['float32']:.1f}")
    out["max_abs_accuracy_diff"] = float(max(diffs))
    out["iterations"], out["seeds"] = T, list(params["seeds"])
    return rows, out


def prompt(params: dict, ctx: RunContext):
    """Z7: prompt tuning of the frozen digits MLP (CRN minibatches), two-point vs Romberg R = 1 per radius;
    target-test accuracy of theta_T (and of the iterate average) and accuracy against evaluations. With a
    ``float16`` block: the float16 forward pass (``_float16_pass``)."""
    weights = _frozen_weights(params, ctx)
    problem = PromptTuning(weights, prompt_dim=int(params["prompt_dim"]),
                           dtype=np.dtype(params.get("dtype", "float32")))
    T, Q, every = int(params["iterations"]), int(params["Q"]), int(params["record_every"])
    seeds, radii = list(params["seeds"]), [float(r) for r in params["radii"]]
    z0 = np.zeros(problem.dim)
    rows, acc, arrays, per_seed = [], {}, {}, {}
    base_acc = float(problem.accuracy(z0)[0])
    for spec in ctx.progress(params["methods"], total=len(params["methods"]), what="methods"):
        name, method, level = spec["name"], spec["method"], int(spec.get("level", 0))
        for r in radii:
            last, avg, curves = [], [], []
            for s in seeds:
                g_batch, g_dir = seeding.spawn(s, 2)
                f = MinibatchLoss(problem, int(params["batch_size"]), g_batch)
                out = zo_sgd(f, z0, method=method, level=level, radius=r, evals_per_step=Q, iterations=T,
                             lr=float(params["lr"]), lr_t0=float(params["lr_t0"]), lr_power=float(params["lr_power"]),
                             seed=g_dir, record_every=every)
                curves.append(problem.accuracy(out["iterates"]))
                last.append(100 * float(problem.accuracy(out["x_last"])[0]))
                avg.append(100 * float(problem.accuracy(out["x_avg"])[0]))
                rows.append(_row(name, s, T, "test_accuracy_last", last[-1], radius=r))
                rows.append(_row(name, s, T, "test_accuracy_avg", avg[-1], radius=r))
            key = f"r{r:g}"
            per_seed[(name, r)] = last
            m, se = mean_and_se(last)
            ma, sea = mean_and_se(avg)
            acc.setdefault(name, {})[key] = {"last": m, "last_se": se, "avg": ma, "avg_se": sea}
            arrays[f"{name}__{key}__accuracy"] = 100 * np.mean(curves, axis=0)
            arrays["evaluations"] = out["record_steps"] * Q
            ctx.log(f"{name} r={r:g}: test accuracy {m:.1f} (avg iterate {ma:.1f})")
        best = max((k for k in acc[name]), key=lambda k: acc[name][k]["last"])
        acc[name]["best"] = {"radius": best, "accuracy": acc[name][best]["last"]}
    large = f"r{max(radii):g}"
    summary = {"largest_r_diff_R1_minus_2pt": acc["romberg_R1"][large]["last"] - acc["two_point"][large]["last"],
               "largest_r_diff_se": math.hypot(acc["romberg_R1"][large]["last_se"], acc["two_point"][large]["last_se"]),
               "best_diff_R1_minus_2pt": acc["romberg_R1"]["best"]["accuracy"] - acc["two_point"]["best"]["accuracy"]}
    summary["diff_R1_minus_2pt_per_seed"] = {
        "r" + f"{r:g}".replace(".", "p"): [a - b for a, b in zip(per_seed[("romberg_R1", r)],
                                                                  per_seed[("two_point", r)])] for r in radii}
    write_arrays(ctx.out_dir / "curves.npz", **arrays)
    metrics = {"accuracy": acc, "summary": summary, "baseline_accuracy_z0": 100 * base_acc,
               "train_size": int(problem.y_train.size), "test_size": int(problem.y_test.size)}
    if params.get("float16"):
        f16_rows, metrics["float16"] = _float16_pass(params["float16"], weights, params, ctx)
        rows += f16_rows
    return rows, metrics


# ---------------------------------------------------------------------------------------------- performance
def _cma_run(objective, x0, sigma0, budget, seed, popsize=None):
    """CMA-ES (package ``cma``) with ``budget`` evaluations; the population goes to ``objective`` in one
    batched call per generation. Returns (best x, evaluations used)."""
    import cma

    opts = {"seed": int(seed), "maxfevals": int(budget), "verbose": -9, "verb_log": 0, "verb_disp": 0}
    if popsize:
        opts["popsize"] = int(popsize)
    es = cma.CMAEvolutionStrategy(np.asarray(x0, float), float(sigma0), opts)
    used = 0
    while not es.stop() and used < budget:
        pop = es.ask()
        k = min(len(pop), budget - used)
        values = objective(np.array(pop[:k]))
        used += k
        if k < len(pop):
            break
        es.tell(pop, values.tolist())
    return np.asarray(es.result.xbest if es.result.xbest is not None else es.mean), used


def _nevergrad_run(objective, x0, budget, seed, batch, optimizer="TwoPointsDE"):
    """Nevergrad (``optimizer``, default TwoPointsDE) with ``budget`` evaluations, asked in batches of ``batch``
    points (``num_workers = batch``) that go to ``objective`` in one batched call. Returns (recommended x,
    evaluations used). NGOpt is not the default: for small dimensions and budgets it selects a metamodel
    optimizer that raises a TypeError under numpy 2.4 (nevergrad 1.0.12) and then blocks on a worker thread."""
    import nevergrad as ng

    param = ng.p.Array(init=np.asarray(x0, float))
    param.random_state = np.random.RandomState(int(seed))
    opt = ng.optimizers.registry[optimizer](parametrization=param, budget=int(budget), num_workers=int(batch))
    used = 0
    while used < budget:
        cands = [opt.ask() for _ in range(min(int(batch), budget - used))]
        values = objective(np.array([c.value for c in cands]))
        for c, v in zip(cands, values):
            opt.tell(c, float(v))
        used += len(cands)
    return np.asarray(opt.provide_recommendation().value, float), used


def _keep_last(store: dict, key: str, fn):
    """``fn`` wrapped so that every call stores its output in ``store[key]`` (the timed calls of
    :func:`shared.timing.alternating_least_cpu` return nothing; the runs are deterministic, so the last output is
    every call's output)."""
    def call():
        store[key] = fn()
    return call


def _gradient_comparison(params: dict, ctx: RunContext):
    """Gradient of the logistic test function (d = 20) at x0 by numdifftools.Gradient (Richardson extrapolation
    of central differences), scipy's approx_fprime (forward differences, d + 1 evaluations) and Romberg-ZOGE at
    each library's evaluation count (``2 (R + 1)`` evaluations per direction, as many directions as fit); plus
    Romberg-ZOGE with one Python call per point. Returns (metrics, per-call CPU seconds, timing record)."""
    import numdifftools as nd
    from scipy.optimize import approx_fprime

    from shared.timing import alternating_least_cpu

    f = LogisticTest()
    g = f.gradient(f.x0)
    count = {"n": 0}

    def counted(x):
        count["n"] += 1
        return f.single(x)

    rel = lambda est: float(np.linalg.norm(est - g) / np.linalg.norm(g))  # noqa: E731
    est_nd = nd.Gradient(counted)(f.x0)
    evals_nd, count["n"] = count["n"], 0
    est_af = approx_fprime(f.x0, counted, math.sqrt(np.finfo(float).eps))
    evals_af = count["n"]
    level, r = int(params["level"]), float(params["radius"])
    per_dir = 2 * (level + 1)
    gen = lambda n: np.random.default_rng(int(params["direction_seed"])).standard_normal((n, f.dim))  # noqa: E731
    U, U_af = gen(max(1, evals_nd // per_dir)), gen(max(1, evals_af // per_dir))
    rom = f"romberg_R{level}"
    metrics = {
        "numdifftools": {"evaluations": evals_nd, "rel_error": rel(est_nd)},
        "approx_fprime": {"evaluations": evals_af, "rel_error": rel(est_af)},
        rom: {"evaluations": per_dir * len(U), "directions": len(U), "rel_error": rel(romberg_zoge(f, f.x0, U, r, level)),
              "rel_error_theory": math.sqrt((f.dim + 1) / len(U))},
        f"{rom}_at_approx_fprime_evals": {"evaluations": per_dir * len(U_af), "directions": len(U_af),
                                          "rel_error": rel(romberg_zoge(f, f.x0, U_af, r, level))},
        "two_point": {"evaluations": 2 * (evals_nd // 2), "directions": evals_nd // 2,
                      "rel_error": rel(romberg_zoge(f, f.x0, gen(evals_nd // 2), r, 0))}}
    grad_nd, looped, eps = nd.Gradient(f.single), as_batched(f.single), math.sqrt(np.finfo(float).eps)
    fns = {"numdifftools": lambda: grad_nd(f.x0), rom: lambda: romberg_zoge(f, f.x0, U, r, level),
           "approx_fprime": lambda: approx_fprime(f.x0, f.single, eps),
           f"{rom}_at_approx_fprime_evals": lambda: romberg_zoge(f, f.x0, U_af, r, level),
           f"{rom}_looped": lambda: romberg_zoge(looped, f.x0, U, r, level)}
    timed = alternating_least_cpu(fns, rounds=int(params["rounds"]), min_seconds=float(params["min_seconds"]))
    ctx.log(f"gradient: {metrics}; CPU s per call {timed['seconds']}")
    return metrics, timed["seconds"], {"number": timed["number"], "rounds": timed["rounds"]}


def _budget_comparison(task, x0, budget: int, zo_run, cma_sigma0: float, seed: int, ng_batch: int, rounds: int):
    """ZO-SGD (``zo_run()``, Romberg R = 1), CMA-ES and nevergrad TwoPointsDE from ``x0`` at the same
    evaluation budget on ``task(tag)``, a fresh objective per call (so that each timed call is the same
    deterministic run). Returns ({name: final point}, {name: CPU seconds per run}, timing record)."""
    from shared.timing import alternating_least_cpu

    out = {}
    fns = {"romberg_R1": _keep_last(out, "romberg_R1", zo_run),
           "cma": _keep_last(out, "cma", lambda: _cma_run(task("cma"), x0, cma_sigma0, budget, seed + 1)),
           "nevergrad": _keep_last(out, "nevergrad", lambda: _nevergrad_run(task("nevergrad"), x0, budget, seed + 2,
                                                                             ng_batch))}
    timed = alternating_least_cpu(fns, rounds=rounds, min_seconds=0.0)
    return out, timed["seconds"], {"number": timed["number"], "rounds": timed["rounds"]}


def performance(params: dict, ctx: RunContext):
    """Side by side, in this one process: the gradient of the logistic function (d = 20) by numdifftools.Gradient,
    scipy approx_fprime and Romberg-ZOGE at each library's evaluation count, batched against looped evaluation
    of Romberg-ZOGE (:func:`_gradient_comparison`); CMA-ES and nevergrad (TwoPointsDE) against ZO-SGD at equal
    budgets on RIS and prompt tuning (:func:`_budget_comparison`). Every time is the least process-CPU time per
    call over ``rounds`` rounds that call the compared functions in turn (:func:`shared.timing.alternating_least_cpu`:
    load from other processes reaches all of them alike and only ever adds time). Deterministic numbers go to
    metrics.json, times to timings.json."""
    import cma  # noqa: F401  (imported here so that import times are not counted in the CMA-ES/nevergrad timings)
    import nevergrad  # noqa: F401

    rounds = int(params["rounds"])
    level = int(params["level"])
    rom = f"romberg_R{level}"
    grad_metrics, tg, grad_record = _gradient_comparison(params, ctx)
    metrics = {"gradient": grad_metrics}
    timings = {"hardware": hardware(), "clock": "process CPU time, least over alternating rounds",
               "gradient": tg, "gradient_calls": grad_record}
    timings["ratios"] = {"numdifftools_over_romberg": tg["numdifftools"] / tg[rom],
                         "approx_fprime_over_romberg": tg["approx_fprime"] / tg[f"{rom}_at_approx_fprime_evals"],
                         "approx_fprime_over_romberg_at_numdifftools_evals": tg["approx_fprime"] / tg[rom],
                         "looped_over_batched": tg[f"{rom}_looped"] / tg[rom]}

    ris_p = params["ris"]
    P = RISProblem.from_seed(int(ris_p["n_elements"]), int(ris_p["channel_seed"]), phase_model="practical")
    rate_ref = P.reference_optimum()[1]
    theta0 = np.random.default_rng(int(ris_p["seed"])).uniform(0, 2 * math.pi, P.n)
    budget = int(ris_p["Q"]) * int(ris_p["iterations"])
    zo = lambda: zo_sgd(P.objective, theta0, method="romberg", level=1, radius=float(ris_p["radius"]),  # noqa: E731
                        evals_per_step=int(ris_p["Q"]), iterations=int(ris_p["iterations"]), lr=float(ris_p["lr"]),
                        seed=int(ris_p["seed"]))["x_last"]
    pts, t, rec = _budget_comparison(lambda tag: P.objective, theta0, budget, zo, float(ris_p["cma_sigma0"]),
                                     int(ris_p["seed"]), int(ris_p["ng_batch"]), rounds)
    gap = lambda x: float((rate_ref - P.rate(x)) / rate_ref)  # noqa: E731
    metrics["ris"] = {"budget": budget, "romberg_R1_rel_gap": gap(pts["romberg_R1"]),
                      "cma_rel_gap": gap(pts["cma"][0]), "cma_evaluations": pts["cma"][1],
                      "nevergrad_rel_gap": gap(pts["nevergrad"][0]), "nevergrad_evaluations": pts["nevergrad"][1]}
    timings["ris"] = {**t, "cma_over_romberg": t["cma"] / t["romberg_R1"],
                      "nevergrad_over_romberg": t["nevergrad"] / t["romberg_R1"], "calls": rec}

    pr = params["prompt"]
    problem = PromptTuning(_frozen_weights(pr, ctx), prompt_dim=int(pr["prompt_dim"]))
    budget = int(pr["Q"]) * int(pr["iterations"])
    z0 = np.zeros(problem.dim)
    seed, batch = int(pr["seed"]), int(pr["batch_size"])
    # one minibatch stream per method, drawn afresh for every timed run (seeding.spawn is deterministic)
    stream = {"romberg_R1": 0, "cma": 2, "nevergrad": 3}
    task = lambda tag: MinibatchLoss(problem, batch, seeding.spawn(seed, 4)[stream[tag]])  # noqa: E731
    zo = lambda: zo_sgd(task("romberg_R1"), z0, method="romberg", level=1, radius=float(pr["radius"]),  # noqa: E731
                        evals_per_step=int(pr["Q"]), iterations=int(pr["iterations"]), lr=float(pr["lr"]),
                        seed=seeding.spawn(seed, 2)[1])["x_last"]
    pts, t, rec = _budget_comparison(task, z0, budget, zo, float(pr["cma_sigma0"]), seed, int(pr["ng_batch"]), rounds)
    acc = lambda x: 100 * float(problem.accuracy(x)[0])  # noqa: E731
    metrics["prompt"] = {"budget": budget, "romberg_R1_accuracy": acc(pts["romberg_R1"]),
                         "cma_accuracy": acc(pts["cma"][0]), "cma_evaluations": pts["cma"][1],
                         "nevergrad_accuracy": acc(pts["nevergrad"][0]), "nevergrad_evaluations": pts["nevergrad"][1]}
    timings["prompt"] = {**t, "cma_over_romberg": t["cma"] / t["romberg_R1"],
                         "nevergrad_over_romberg": t["nevergrad"] / t["romberg_R1"], "calls": rec}
    metrics["rounds"] = rounds
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(timings=timings)
    rows = [_row(m, 0, 0, "rel_error", v["rel_error"]) for m, v in metrics["gradient"].items()]
    return rows, {"performance": metrics}


from papers.romberg_zoge.tuning import radius_map, tuned  # noqa: E402  (they reuse _cma_run above)
from papers.romberg_zoge.prompt_lm import run_prompt_lm  # noqa: E402  (BBT on SmolLM2; reuses _cma_run)

EXPERIMENTS = {"estimator": estimator, "exponential": exponential, "benchmarks": benchmarks, "ris": ris,
               "prompt": prompt, "radius_map": radius_map, "tuned": tuned, "performance": performance,
               "prompt_lm": run_prompt_lm}

if __name__ == "__main__":
    main(EXPERIMENTS)
