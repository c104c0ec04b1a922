"""Romberg-ZOGE against the two-point estimator where the radius is not small: the estimator's error against r
at a fixed evaluation budget, and ZO-SGD with the radius and the step tuned per method.

* ``radius_map``: on the logistic test function at x0 (d = 20), for every r of a grid and every seed (its own
  directions), the per-direction error second moments m_R = E||ghat_R(u) - grad f||^2 (R = 0: two-point; the
  same directions for every level, so m_1/m_0 is a paired ratio) and the error at a budget of Q = 4 evaluations:
  two-point averages two directions, Romberg R = 1 uses one. As r -> 0 every level has the two-point leading
  variance (d+1)||grad f||^2; at finite r the higher-order terms of each D(h_k; u) enter the second moment.
* ``tuned``: ZO-SGD at Q = 4 evaluations per step on a problem; for each method the pair (radius, lr) with the
  best mean score over the tuning seeds is chosen from a grid, and the methods are compared on separate
  evaluation seeds (per seed, paired by seed). Controls repeat the tuning and the evaluation on a problem without
  smoothing bias.
  CMA-ES runs on the evaluation seeds at the same evaluation budget.
"""
from __future__ import annotations

import math

import numpy as np

from shared import seeding
from shared.experiment import RunContext
from shared.oracles.zeroth_order import with_additive_noise

from papers.romberg_zoge.estimator import kernel_zoge, romberg_zoge
from papers.romberg_zoge.optim import zo_sgd
from papers.romberg_zoge.problems import ExponentialSeparable, LogisticTest, QuadraticSeparable, RISProblem

__all__ = ["radius_map", "tuned", "radius_key", "select_best"]


def radius_key(r: float) -> str:
    """Metric key of a radius without a dot: 0.5 -> ``r0p5``."""
    return "r" + f"{float(r):g}".replace(".", "p")


def _second_moments(f, x0, g, U, V, r):
    """Per-direction m_0, m_1, m_2 on directions U and the budget-4 errors (two-point on U and V, R = 1 on U)."""
    e = {R: romberg_zoge(f, x0, U, r, R, average=False) for R in (0, 1, 2)}
    e0v = romberg_zoge(f, x0, V, r, 0, average=False)
    sq = lambda est: float(np.mean(np.sum((est - g) ** 2, axis=1)))  # noqa: E731
    return {"m0": sq(e[0]), "m1": sq(e[1]), "m2": sq(e[2]), "budget_two_point": sq(0.5 * (e[0] + e0v)),
            "budget_romberg_R1": sq(e[1])}


def radius_map(params: dict, ctx: RunContext):
    """Error of the estimators against r (logistic test function, d = 20, at x0), per seed.

    Metrics (lists over seeds): ``samples.ratio_R1_over_R0.<r>`` = m_1/m_0; ``samples.level_dev.<r>`` =
    max(|m_1/m_0 - 1|, |m_2/m_0 - 1|); ``samples.budget_log_ratio.<r>`` = log(error of R = 1 at Q = 4 / error of
    two-point at Q = 4); ``samples.best_budget_log_ratio`` = the same with each method at its best r of the grid
    (per seed); at ``kernel_radius``: ``samples.kernel_ratio`` = m_kernel / ((d+1)||g||^2), ``samples.R1_ratio``
    = m_1 / ((d+1)||g||^2) and ``samples.kernel_dev`` = |m_kernel/m_0 - 1|. Means over seeds in ``mean``.
    """
    f = LogisticTest()
    g, x0, d = f.gradient(f.x0), f.x0, f.dim
    radii = [float(r) for r in params["radii"]]
    seeds, n = list(params["seeds"]), int(params["n_directions"])
    kr = float(params["kernel_radius"])
    norm = (d + 1) * float(g @ g)
    rows, samples = [], {"ratio_R1_over_R0": {}, "level_dev": {}, "budget_log_ratio": {}, "best_budget_log_ratio": [],
                         "kernel_ratio": [], "R1_ratio": [], "kernel_dev": []}
    for s in seeds:
        rng = seeding.generator(ctx.seed, "radius_map", str(s))
        U, V = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        zetas = rng.uniform(-1.0, 1.0, n)
        best = {"budget_two_point": math.inf, "budget_romberg_R1": math.inf}
        for r in radii:
            m = _second_moments(f, x0, g, U, V, r)
            k = radius_key(r)
            samples["ratio_R1_over_R0"].setdefault(k, []).append(m["m1"] / m["m0"])
            samples["level_dev"].setdefault(k, []).append(max(abs(m["m1"] / m["m0"] - 1), abs(m["m2"] / m["m0"] - 1)))
            samples["budget_log_ratio"].setdefault(k, []).append(math.log(m["budget_romberg_R1"] /
                                                                          m["budget_two_point"]))
            for key in best:
                best[key] = min(best[key], m[key])
            for name, v in (("R0", m["m0"]), ("R1", m["m1"]), ("R2", m["m2"])):
                rows.append({"method": name, "seed": s, "step": 0, "metric": "mse_per_direction",
                             "value": v / norm, "radius": r})
            for name in ("two_point", "romberg_R1"):
                rows.append({"method": name, "seed": s, "step": 0, "metric": "mse_budget_Q4",
                             "value": m[f"budget_{name}"] / norm, "radius": r})
        samples["best_budget_log_ratio"].append(math.log(best["budget_romberg_R1"] / best["budget_two_point"]))
        unit = U / np.linalg.norm(U, axis=1, keepdims=True)
        mk = float(np.mean(np.sum((kernel_zoge(f, x0, unit, zetas, kr, average=False) - g) ** 2, axis=1)))
        m = _second_moments(f, x0, g, U, V, kr)
        samples["kernel_ratio"].append(mk / norm)
        samples["R1_ratio"].append(m["m1"] / norm)
        samples["kernel_dev"].append(abs(mk / m["m0"] - 1))
    mean = {key: ({k: float(np.mean(v)) for k, v in val.items()} if isinstance(val, dict) else float(np.mean(val)))
            for key, val in samples.items()}
    ctx.log("m1/m0 by radius: " + ", ".join(f"{k} {v:.3f}" for k, v in mean["ratio_R1_over_R0"].items()))
    return rows, {"radii": radii, "n_directions": n, "seeds": seeds, "kernel_radius": kr, "samples": samples,
                  "mean": mean}


# ------------------------------------------------------------------------------------------------ tuned ZO-SGD
def select_best(scores: dict):
    """The key with the smallest finite score (ties: the first in order); ValueError when none is finite."""
    finite = {k: v for k, v in scores.items() if math.isfinite(v)}
    if not finite:
        raise ValueError("every configuration diverged during tuning")
    return min(finite, key=finite.get)


def _exponential_case(spec, control: bool):
    """(objective, x0, score of a run's output) for the exponential problem (control: the quadratic, whose
    central differences are exact). With ``noise_sigma`` every evaluation gets independent Gaussian noise, from a
    stream of the seed (the same for every configuration run on that seed). Score: log ||xbar - c||^2."""
    f = (QuadraticSeparable if control else ExponentialSeparable)(int(spec["dim"]))
    sigma = float(spec.get("noise_sigma", 0.0))

    def make(s):
        obj = with_additive_noise(f, sigma, seeding.generator(s, "evaluation_noise")) if sigma else f
        return obj, np.zeros(f.dim), lambda out: math.log(float(np.sum((out["x_avg"] - f.c) ** 2)))
    return make


def _ris_case(spec, control: bool):
    """(objective, theta0, score) for RIS channel ``offset + s`` (control: the ideal phase model, whose smoothed
    objective has the exact maximiser at every radius); score = relative rate gap of the last iterate."""
    n, pilots = int(spec["n_elements"]), int(spec.get("pilots", 0))
    model = "ideal" if control else spec["phase_model"]
    cache = {}

    def make(s):
        if s not in cache:
            base = RISProblem.from_seed(n, int(spec["channel_seed_offset"]) + s, phase_model=model)
            ref = base.reference_optimum(starts=int(spec["reference_starts"]))[1]
            P = RISProblem(base.h_direct, base.cascaded, phase_model=model, pilots=pilots)
            g_theta, _, g_noise = seeding.spawn(s, 3)
            theta0 = g_theta.uniform(0.0, 2 * math.pi, n)
            f = (lambda X, P=P, g=g_noise: P.objective(X, rng=g)) if pilots else P.objective
            cache[s] = (f, theta0, lambda out, P=P, ref=ref: (ref - P.rate(out["x_last"])) / ref, P, ref)
        return cache[s][:3]

    make.cache = cache
    return make


_CASES = {"exponential": _exponential_case, "ris": _ris_case}


def _run(case, s, method, level, r, lr, spec, tag):
    f, x0, score = case(s)
    try:
        out = zo_sgd(f, x0, method=method, level=level, radius=r, evals_per_step=int(spec["Q"]),
                     iterations=int(spec["iterations"]), lr=lr, lr_t0=float(spec["lr_t0"]),
                     lr_power=float(spec["lr_power"]), seed=seeding.generator(s, tag, method, str(level)))
    except FloatingPointError:
        return math.inf
    return score(out)


def _tune_and_evaluate(case, spec, ctx, label):
    """For each method: the (radius, lr) of the grid with the best mean score over the tuning seeds (a
    configuration that diverges on a tuning seed is excluded), then its scores on the evaluation seeds."""
    grid = [(float(r), float(lr)) for r in spec["radii"] for lr in spec["lr_grid"]]
    tune, evals = list(spec["tune_seeds"]), list(spec["eval_seeds"])
    out = {"chosen": {}, "eval": {}, "tune_score": {}}
    for m in spec["methods"]:
        method, level = m["method"], int(m.get("level", 0))
        scores = {}
        for r, lr in grid:
            vals = [_run(case, s, method, level, r, lr, spec, "tune") for s in tune]
            scores[(r, lr)] = float(np.mean(vals)) if all(math.isfinite(v) for v in vals) else math.inf
        r, lr = select_best(scores)
        out["chosen"][m["name"]] = {"radius": r, "lr": lr, "at_grid_edge": r in (min(grid)[0], max(grid)[0])}
        out["tune_score"][m["name"]] = {f"{radius_key(a)}_lr{b:g}".replace(".", "p"): v for (a, b), v in scores.items()
                                        if math.isfinite(v)}
        out["eval"][m["name"]] = [_run(case, s, method, level, r, lr, spec, "eval") for s in evals]
        ctx.log(f"{label} {m['name']}: tuned r = {r:g}, lr = {lr:g}; eval mean score "
                f"{np.mean(out['eval'][m['name']]):.4g}")
    return out


def _tuned_problem(name, spec, ctx):
    case = _CASES[spec["kind"]](spec, control=False)
    out = _tune_and_evaluate(case, spec, ctx, name)
    out["control"] = _tune_and_evaluate(_CASES[spec["kind"]](spec, control=True), spec, ctx, f"{name} (control)")
    return case, out


def _paired(a, b):
    """Per-seed score of a minus score of b: a log ratio for exponential (its scores are logs of squared
    distances), a difference of relative gaps for RIS (gaps can be 0 or below, so no log)."""
    return [float(x - y) for x, y in zip(a, b)]


def _cma_scores(case, spec, ctx):
    from papers.romberg_zoge.experiments import _cma_run

    budget = int(spec["Q"]) * int(spec["iterations"])
    scores = []
    for s in spec["eval_seeds"]:
        case(s)
        f, theta0, _, P, ref = case.cache[s]
        x, _ = _cma_run(f, theta0, float(spec["cma_sigma0"]), budget, 7919 + int(s))
        scores.append(float((ref - P.rate(x)) / ref))
    return scores


def tuned(params: dict, ctx: RunContext):
    """ZO-SGD with (radius, lr) tuned per method on tuning seeds, compared on evaluation seeds.

    For each problem p: ``<p>.chosen.<method>``; ``<p>.eval.<method>`` (scores per evaluation seed: log squared
    distance of the iterate average to the minimiser for ``exponential``, relative rate gap of the last iterate
    for ``ris``); ``<p>.samples.romberg_minus_two_point`` (per seed, Romberg's score minus two-point's: a log
    ratio for exponential, a gap difference for RIS); ``<p>.control`` (the same tuning and evaluation on the
    control problem: the quadratic, or the ideal RIS phase model) with ``samples.romberg_minus_two_point``; for RIS with ``cma_sigma0``: ``<p>.samples.cma_minus_romberg`` and
    ``cma_minus_two_point`` (CMA-ES at the same budget).
    """
    rows, metrics = [], {}
    problems = params["problems"]
    for name, spec in ctx.progress(problems.items(), total=len(problems), what="problems"):
        case, out = _tuned_problem(name, spec, ctx)
        a, b = out["eval"]["romberg_R1"], out["eval"]["two_point"]
        out["samples"] = {"romberg_minus_two_point": _paired(a, b)}
        out["control"]["samples"] = {"romberg_minus_two_point": _paired(out["control"]["eval"]["romberg_R1"],
                                                                        out["control"]["eval"]["two_point"])}
        if spec["kind"] == "ris" and "cma_sigma0" in spec:
            cma = _cma_scores(case, spec, ctx)
            out["eval"]["cma"] = cma
            out["samples"]["cma_minus_romberg"] = [x - y for x, y in zip(cma, a)]
            out["samples"]["cma_minus_two_point"] = [x - y for x, y in zip(cma, b)]
        for method, vals in out["eval"].items():
            rows += [{"method": method, "seed": s, "step": int(spec["iterations"]), "metric": f"{name}_score",
                      "value": float(v), "problem": name} for s, v in zip(spec["eval_seeds"], vals)]
        metrics[name] = out
    return rows, metrics
