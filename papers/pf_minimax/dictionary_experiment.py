"""The ``dictionary_learning`` experiment: the paper's nonconvex-concave experiment (Section 5) on our robust
dictionary-learning formulation (:mod:`papers.pf_minimax.dictionary`).

Methods: the three algorithms (LMO-PO = ``v_x``, PO-LMO = ``v_y``, LMO-LMO = ``v_xy``), the projection-free
baselines R-PDCG and CG-RPGA of Boroun et al. (horizon T = K), and PROJ (both steps projected) as a reference.

Step tuning, as elsewhere in this package but for every method: on a separate instance (``tune_seed``, not among
the evaluation ``seeds``) each method runs for K iterations at every value of its grid and keeps the value with
the smallest final best-so-far measure; that value is then used on every evaluation instance. The grids:
- the three algorithms and PROJ: ``lipschitz_scale`` (``lscale_grid``), the factor applied to the bound-based
  constants L_xx and L_xy, i.e. to the inverse step sizes of the x-step (1/L_k) and the projected y-step;
- R-PDCG: its Frank-Wolfe step constant ``step_c`` (step ``step_c/sqrt(T)``, ``baseline_steps``);
- CG-RPGA: ``step_c`` x ``lipschitz_scale`` (``baseline_lscale_grid``), since its projected y-step uses L_xy.
``tuning.<method>.at_edge`` records whether a choice lies on an edge of its grid.

Measure (the same for all methods): the Frank-Wolfe gap of ``Phi_nu`` with the fixed ``nu = mu_K = 1/sqrt(K+1)``,
the smoothing weight our schedule (mu0 = 1, omega = 1/2) reaches at K, i.e. the measure ``ncc_dro`` records at its
last step; best-so-far, every ``record_every`` iterations. Fixing ``nu`` puts every method on one function
(the baselines keep their own fixed regulariser ``mu = T^(-1/6)`` or ``T^(-1/4)`` and our algorithms their
decaying ``mu_k``).

Controls: LMO-PO and LMO-LMO with a fixed smoothing weight (``control_omega`` = 1e-9, so mu_k = mu0 = 1: no
dynamic smoothing), with their tuned ``lipschitz_scale``.
"""
from __future__ import annotations

import math

import numpy as np

from shared.experiment import RunContext

from .dictionary import atom_recovery, make_dictionary_problem, planted_data
from .methods import run_method

OURS = ("v_x", "v_y", "v_xy", "proj")
BASELINES = ("r_pdcg", "cg_rpga")
FLOOR = 1e-15


def _instance(params: dict, seed: int, lscale: float, nu: float):
    return make_dictionary_problem(int(params["p"]), int(params["r"]), int(params["n"]), int(params["s"]),
                                   float(params["noise"]), seed=int(seed), tau=float(params.get("tau", 1.0)),
                                   lipschitz_scale=float(lscale), measure_mu=nu)


def _run(params: dict, method: str, seed: int, setting: dict, nu: float, **extra):
    K, every = int(params["K"]), int(params["record_every"])
    prob = _instance(params, seed, setting.get("lscale", 1.0), nu)
    kwargs = {"step_c": float(setting["step_c"])} if "step_c" in setting else {}
    return prob, run_method(method, prob, K, record_every=every, **kwargs, **extra)


def _grid(method: str, params: dict) -> list[dict]:
    if method in OURS:
        return [{"lscale": float(c)} for c in params["lscale_grid"]]
    if method == "r_pdcg":
        return [{"step_c": float(c)} for c in params["baseline_steps"]]
    return [{"step_c": float(c), "lscale": float(l)} for c in params["baseline_steps"]
            for l in params["baseline_lscale_grid"]]


def _label(setting: dict) -> str:
    return ",".join(f"{k}={v:g}" for k, v in sorted(setting.items()))


def _at_edge(method: str, params: dict, setting: dict) -> bool:
    """Whether ``setting`` lies on an edge of ``method``'s grid (in any of its coordinates)."""
    axes = {"lscale": params["lscale_grid"] if method in OURS else params.get("baseline_lscale_grid", []),
            "step_c": params["baseline_steps"]}
    return any(float(v) in (float(min(axes[k])), float(max(axes[k]))) for k, v in setting.items())


def tune(params: dict, nu: float, ctx: RunContext) -> dict:
    """Per method, the grid setting with the smallest final measure on the tuning instance (ties: first)."""
    out = {}
    for method in (*OURS, *BASELINES):
        grid = _grid(method, params)
        finals = [float(_run(params, method, int(params["tune_seed"]), g, nu)[1].measure[-1]) for g in grid]
        best = grid[int(np.argmin(finals))]
        out[method] = {"grid": {_label(g): f for g, f in zip(grid, finals)}, "choice": best,
                       "at_edge": _at_edge(method, params, best)}
        ctx.log(f"tuned {method}: {_label(best)} (final measure {min(finals):.3g})")
    return out


def run_dictionary_learning(params: dict, ctx: RunContext):
    """All methods on ``seeds`` after tuning on ``tune_seed``; per-seed lists of the final best measure, the
    objective Phi = max_i l_i, atom recovery, and the two paired log ratios of the claims:
    ``dl.per_seed.log_ratio_vx_best_other`` = ln(measure LMO-PO / min(PO-LMO, LMO-LMO)) and
    ``dl.per_seed.log_ratio_vxy_best_pf`` = ln(measure LMO-LMO / min(R-PDCG, CG-RPGA)), with the same ratios for the
    fixed-smoothing controls under ``dl.control.fixed_smoothing``."""
    K = int(params["K"])
    seeds = [int(s) for s in params["seeds"]]
    if int(params["tune_seed"]) in seeds:
        raise ValueError(f"tune_seed {params['tune_seed']} must not be one of the evaluation seeds {seeds}")
    nu = 1.0 / math.sqrt(K + 1.0)
    tuning = tune(params, nu, ctx)
    methods = (*OURS, *BASELINES)
    control_omega = float(params.get("control_omega", 1e-9))
    best = {m: [] for m in methods}
    phi = {m: [] for m in methods}
    recovery = {m: [] for m in methods}
    fixed = {m: [] for m in ("v_x", "v_xy")}
    rows = []
    for seed in seeds:
        _, D_star, _, _, _ = planted_data(int(params["p"]), int(params["r"]), int(params["n"]), int(params["s"]),
                                          float(params["noise"]), seed=seed)
        for method in methods:
            prob, tr = _run(params, method, seed, tuning[method]["choice"], nu)
            best[method].append(float(tr.measure[-1]))
            phi[method].append(float(tr.objective[-1]))
            recovery[method].append(atom_recovery(prob.X.split(tr.x)[0], D_star))
            _trace_rows(rows, method, seed, tr)
        for method in fixed:
            _, tr = _run(params, method, seed, tuning[method]["choice"], nu, omega=control_omega)
            fixed[method].append(float(tr.measure[-1]))
            _trace_rows(rows, f"{method}_fixed", seed, tr)
        ctx.log(f"seed {seed}: " + ", ".join(f"{m}={best[m][-1]:.3g}" for m in methods))
    n = len(seeds)

    def log_ratio(num, den):
        return [math.log(max(num[i], FLOOR) / max(den[i], FLOOR)) for i in range(n)]

    other = [min(best["v_y"][i], best["v_xy"][i]) for i in range(n)]
    best_pf = [min(best[m][i] for m in BASELINES) for i in range(n)]
    per_seed = {"best_final": best, "phi_final": phi, "atom_recovery": recovery,
                "log_ratio_vx_best_other": log_ratio(best["v_x"], other),
                "log_ratio_vxy_best_pf": log_ratio(best["v_xy"], best_pf),
                "log_ratio_vy_best_other": log_ratio(best["v_y"], [min(best["v_x"][i], best["v_xy"][i])
                                                                   for i in range(n)]),
                "log_ratio_vy_proj": log_ratio(best["v_y"], best["proj"])}
    control = {"fixed_smoothing": {"omega": control_omega, "best_final": fixed,
                                   "log_ratio_vx_best_other": log_ratio(fixed["v_x"], other),
                                   "log_ratio_vxy_best_pf": log_ratio(fixed["v_xy"], best_pf)}}
    tuning_summary = {m: {"grid": t["grid"], "choice": _label(t["choice"]), "at_edge": t["at_edge"]}
                      for m, t in tuning.items()}
    metrics = {"dl": {"per_seed": per_seed, "control": control, "tuning": tuning_summary,
                      "tuning_at_edge": int(sum(t["at_edge"] for t in tuning.values())),
                      "measure_mu": nu, "K": K, "seeds": seeds, "tune_seed": int(params["tune_seed"]),
                      "shape": {k: params[k] for k in ("p", "r", "n", "s", "noise")}}}
    return rows, metrics


def _trace_rows(rows: list, method: str, seed: int, trace) -> None:
    for i in range(trace.steps.size):
        for metric, val in (("fw_gap_best", trace.measure[i]), ("objective", trace.objective[i])):
            rows.append({"method": method, "seed": seed, "step": int(trace.steps[i]), "metric": metric,
                         "value": float(val), "problem": f"dl_s{seed}"})
