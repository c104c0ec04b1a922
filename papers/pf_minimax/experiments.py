"""Experiments of pf_minimax (see the spec's "Experiments by scale").

``python -m papers.pf_minimax.experiments NAME --config papers/pf_minimax/config.yaml --scale quick --out DIR``

Every experiment returns tidy rows (``method, seed, step, metric, value`` plus a ``problem`` column) and a
deterministic metrics dict. Wall-clock numbers (the ``nuclear`` and ``performance`` experiments) go to
``DIR/timing.json`` and ``provenance.json``, never to ``metrics.json``, so that ``metrics.json`` is byte-identical
across reruns.
"""
from __future__ import annotations

import numpy as np

from shared.experiment import RunContext, main
from shared.results import mean_and_se, write_metrics
from shared.timing import alternating_least_cpu, time_calls

from .dictionary_experiment import run_dictionary_learning
from .methods import HORIZON_BASELINES, run_method
from .problems import RegularizedMatrixGame, game_value, make_problem
from .sets import top_singular_pair

LMO_VARIANTS = ("v_x", "v_y", "v_xy")
SMOOTHING_METHODS = ("v_x", "v_y", "v_xy", "proj")
CC_METHODS = ("v_x", "v_y", "v_xy", "proj", "sp_fw", "peg")
FLOOR = 1e-15


def loglog_slope(steps, values, k_min: int = 100) -> float:
    """Least-squares slope of ``log(max(values, 1e-15))`` against ``log k`` over the recorded ``k in [k_min, K]``."""
    steps = np.asarray(steps, dtype=float)
    mask = steps >= k_min
    if mask.sum() < 2:
        mask = steps >= 1
    xs = np.log(steps[mask])
    ys = np.log(np.maximum(np.asarray(values, dtype=float)[mask], FLOOR))
    return float(np.polyfit(xs, ys, 1)[0])


def _log_grid(steps: np.ndarray, n_points: int = 200) -> np.ndarray:
    """Indices of ``steps`` closest to a log-spaced grid (always including the first and last)."""
    if steps.size <= n_points:
        return np.arange(steps.size)
    targets = np.unique(np.round(np.geomspace(1, steps[-1], n_points)).astype(int))
    idx = np.unique(np.clip(np.searchsorted(steps, targets), 0, steps.size - 1))
    return np.unique(np.concatenate([[0], idx, [steps.size - 1]]))


def _trace_rows(rows: list, problem: str, method: str, seed, trace, metric: str, values=None, *, thin=True):
    values = trace.measure if values is None else values
    idx = _log_grid(trace.steps) if thin else np.arange(trace.steps.size)
    for i in idx:
        rows.append({"method": method, "seed": seed, "step": int(trace.steps[i]), "metric": metric,
                     "value": float(values[i]), "problem": problem})


BOROUN_BASELINES = tuple(HORIZON_BASELINES)   # R-PDCG and CG-RPGA (methods.py)


def tune_horizon_baselines(prob, K: int, grid, record_every: int = 1) -> dict:
    """For R-PDCG and CG-RPGA, the constant ``step_c`` (FW step ``step_c/sqrt(K)``) from ``grid`` with the smallest
    final duality gap on ``prob`` after ``K`` iterations (ties: the first in the grid). Returns per baseline the
    chosen constant and the final gap of every grid point."""
    if not grid:
        raise ValueError("baseline_steps must list at least one step constant")
    out = {}
    for method in BOROUN_BASELINES:
        finals = {f"{c:g}": float(run_method(method, prob, K, record_every=record_every, step_c=float(c)).measure[-1])
                  for c in grid}
        best = min(grid, key=lambda c: finals[f"{c:g}"])
        out[method] = {"best_step_c": float(best), "gap_final": finals}
    return out


def tune_baselines_apart(make_instance, tune_seed: int, seeds, K: int, grid, record_every: int = 1) -> dict:
    """:func:`tune_horizon_baselines` on a separate instance ``make_instance(tune_seed)``, refusing a ``tune_seed``
    among the evaluation ``seeds``; each baseline's entry also says whether its choice lies on an edge of ``grid``
    (``at_edge``: the best constant could lie outside it)."""
    if int(tune_seed) in [int(s) for s in seeds]:
        raise ValueError(f"tune_seed {tune_seed} must not be one of the evaluation seeds {list(seeds)}")
    tuning = tune_horizon_baselines(make_instance(int(tune_seed)), K, grid, record_every=record_every)
    for result in tuning.values():
        result["at_edge"] = result["best_step_c"] in (min(grid), max(grid))
    return tuning


def _write_timing(ctx: RunContext, timing: dict) -> None:
    write_metrics(timing, ctx.out_dir / "timing.json")
    ctx.record(timing=timing)


# --------------------------------------------------------------------------------------------------- C-C games
def _cc_games(params: dict) -> list[tuple[str, object, int | None]]:
    n, m = params["uniform_shape"]
    games = [(f"uniform_s{s}", make_problem("uniform_game", n=n, m=m, seed=s), s) for s in params["uniform_seeds"]]
    if params.get("identity_n"):
        games.append((f"identity_{params['identity_n']}", make_problem("identity_game", n=params["identity_n"]),
                      None))
    if params.get("rps"):
        games.append(("rps", make_problem("rps"), None))
    return games


def run_cc_games(params: dict, ctx: RunContext):
    """Six methods on the matrix games; last-iterate duality gap at every k, LP values by HiGHS.

    R-PDCG and CG-RPGA run with the step constant tuned over ``baseline_steps`` on a separate uniform game (seed
    ``tune_seed``, not evaluated; :func:`tune_baselines_apart`).
    On the uniform games the three LMO variants also run with a frozen smoothing weight (``control_omega``,
    e.g. 0.01: mu_k barely decreases), the negative control of "dual dynamic smoothing". Per-seed lists:
    ``cc.per_seed.worst_lmo_slope`` (the largest gap slope over the three variants, per uniform game),
    ``cc.per_seed.ratio_vxy_spfw`` and the same under ``cc.control.frozen_smoothing``.
    """
    K = int(params["K"])
    control_omega = params.get("control_omega")
    rows, gap_final, slopes, values = [], {}, {}, {}
    frozen = {"gap_final": {}, "slope": {}}
    games = _cc_games(params)
    n, m = params["uniform_shape"]
    tuning = tune_baselines_apart(lambda seed: make_problem("uniform_game", n=n, m=m, seed=seed),
                                  params["tune_seed"], params["uniform_seeds"], K,
                                  [float(c) for c in params["baseline_steps"]])
    steps_c = {m: tuning[m]["best_step_c"] for m in BOROUN_BASELINES}
    for label, game, seed in games:
        value, _, _ = game_value(game.A)
        values[label] = {"lp": value + 0.0}
        if label.startswith("identity"):
            values[label]["closed_form"] = 1.0 / game.A.shape[0]
        elif label == "rps":
            values[label]["closed_form"] = 0.0
        gap_final[label], slopes[label] = {}, {}
        for method in CC_METHODS:
            trace = run_method(method, game, K)
            gap_final[label][method] = float(trace.measure[-1])
            if label.startswith("uniform"):
                slopes[label][method] = loglog_slope(trace.steps, trace.measure)
            _trace_rows(rows, label, method, seed if seed is not None else 0, trace, "gap")
        if label.startswith("uniform"):
            for method in BOROUN_BASELINES:
                trace = run_method(method, game, K, step_c=steps_c[method])
                gap_final[label][method] = float(trace.measure[-1])
                _trace_rows(rows, label, method, seed, trace, "gap")
        if control_omega is not None and label.startswith("uniform"):
            frozen["gap_final"][label], frozen["slope"][label] = {}, {}
            for method in LMO_VARIANTS:
                trace = run_method(method, game, K, omega=float(control_omega))
                frozen["gap_final"][label][method] = float(trace.measure[-1])
                frozen["slope"][label][method] = loglog_slope(trace.steps, trace.measure)
                _trace_rows(rows, label, f"{method}_frozen", seed, trace, "gap")
        ctx.log(f"{label}: " + ", ".join(f"{m}={gap_final[label][m]:.2e}" for m in CC_METHODS))
    uniform = [lab for lab in gap_final if lab.startswith("uniform")]
    gap_final["max_lmo"] = max(gap_final[lab][m] for lab in uniform for m in LMO_VARIANTS)
    slopes["max_lmo"] = max(slopes[lab][m] for lab in uniform for m in LMO_VARIANTS)
    ratios = [gap_final[lab]["v_xy"] / max(gap_final[lab]["sp_fw"], FLOOR) for lab in uniform]
    best_pf = {lab: min(gap_final[lab][m] for m in BOROUN_BASELINES) for lab in uniform}
    per_seed = {"worst_lmo_slope": [max(slopes[lab][m] for m in LMO_VARIANTS) for lab in uniform],
                "ratio_vxy_spfw": ratios,
                "ratio_vxy_best_pf": [gap_final[lab]["v_xy"] / max(best_pf[lab], FLOOR) for lab in uniform],
                "slope": {m: [slopes[lab][m] for lab in uniform] for m in CC_METHODS}}
    metrics = {"cc": {"gap_final": gap_final, "slope": {k: v for k, v in slopes.items() if v != {}},
                      "ratio_vxy_spfw": max(ratios), "ratio_vxy_spfw_se": mean_and_se(ratios)[1],
                      "per_seed": per_seed, "values": values, "K": K, "baseline_tuning": tuning,
                      "tune_seed": int(params["tune_seed"])}}
    if control_omega is not None:
        metrics["cc"]["control"] = {"frozen_smoothing": {
            "omega": float(control_omega), **frozen,
            "worst_lmo_slope": [max(frozen["slope"][lab][m] for m in LMO_VARIANTS) for lab in uniform],
            "ratio_vxy_spfw": [frozen["gap_final"][lab]["v_xy"] / max(gap_final[lab]["sp_fw"], FLOOR)
                               for lab in uniform],
            "ratio_vxy_best_pf": [frozen["gap_final"][lab]["v_xy"] / max(best_pf[lab], FLOOR)
                                  for lab in uniform]}}
    return rows, metrics


def run_cc_controls(params: dict, ctx: RunContext):
    """The controls of ``cc-rate`` and ``cc-beats-spfw`` on the uniform games of ``cc_games`` (same shape, seeds
    and K), with the gap recorded every ``record_every`` steps.

    Per uniform game: the three LMO variants as in ``cc_games`` and with a fixed smoothing weight
    (``control_omega`` = 1e-9: ``mu_k = mu0 / (k+1)^omega`` equals ``mu0`` within 1e-8 up to k = 1e5, no decay),
    each with its log-log gap slope on the last decade ``k in [late_fraction K, K]``; LMO-LMO with the smoothing
    switched off (``nosmooth_mu0`` = 1e-12: the dual regulariser is negligible and the open-loop Frank-Wolfe
    x-step does not use ``L_k``, so it is SP-FW with the y-update made first) and SP-FW, for the gap ratio.
    Per-seed lists: ``cc_controls.per_seed.worst_lmo_slope_late`` (largest late slope over the three variants),
    ``cc_controls.fixed_smoothing.worst_lmo_slope_late``, ``cc_controls.no_smoothing.ratio_vxy_spfw``. With
    ``grid_below``, R-PDCG and CG-RPGA also run on the first game for each step constant listed (horizon K, gap
    at the end only), to see whether ``cc_games``' tuning grid has its best value at its lower edge.
    """
    K, every = int(params["K"]), int(params.get("record_every", 10))
    k_late = max(int(float(params.get("late_fraction", 0.1)) * K), 1)
    omega, mu0_off = float(params["control_omega"]), float(params["nosmooth_mu0"])
    games = _cc_games({**params, "identity_n": 0, "rps": False})
    rows, late, fixed, ratio = [], {}, {}, []
    for label, game, seed in games:
        late[label], fixed[label] = {}, {}
        for method in LMO_VARIANTS:
            for store, kwargs, tag in ((late, {}, method), (fixed, {"omega": omega}, f"{method}_fixed")):
                tr = run_method(method, game, K, record_every=every, **kwargs)
                store[label][method] = loglog_slope(tr.steps, tr.measure, k_min=k_late)
                _trace_rows(rows, label, tag, seed, tr, "gap")
        off = run_method("v_xy", game, K, record_every=every, mu0=mu0_off)
        spfw = run_method("sp_fw", game, K, record_every=every)
        ratio.append(float(off.measure[-1]) / max(float(spfw.measure[-1]), FLOOR))
        _trace_rows(rows, label, "v_xy_nosmooth", seed, off, "gap")
        ctx.log(f"{label}: late slopes {late[label]}, fixed {fixed[label]}, no-smoothing / SP-FW {ratio[-1]:.3g}")
    labels = [g[0] for g in games]
    out = {"K": K, "k_late": k_late, "omega": omega, "nosmooth_mu0": mu0_off, "slope_late": late,
           "per_seed": {"worst_lmo_slope_late": [max(late[lab].values()) for lab in labels]},
           "fixed_smoothing": {"slope_late": fixed,
                               "worst_lmo_slope_late": [max(fixed[lab].values()) for lab in labels]},
           "no_smoothing": {"ratio_vxy_spfw": ratio}}
    if params.get("grid_below"):
        out["grid_below"] = {m: {f"{c:g}": float(run_method(m, games[0][1], K, record_every=K,
                                                              step_c=float(c)).measure[-1])
                                 for c in params["grid_below"]} for m in BOROUN_BASELINES}
    return rows, {"cc_controls": out}


# --------------------------------------------------------------------------------------------------- anytime
def run_anytime(params: dict, ctx: RunContext):
    """V-x on the uniform game (seed 0) for K and 2K iterations: the K-run must be a prefix of the 2K-run."""
    K = int(params["K"])
    n, m = params["uniform_shape"]
    game = make_problem("uniform_game", n=n, m=m, seed=int(params.get("seed", 0)))
    short, long = run_method("v_x", game, K), run_method("v_x", game, 2 * K)
    identical = bool(np.array_equal(short.steps, long.steps[:K + 1])
                     and np.array_equal(short.measure, long.measure[:K + 1]))
    rows = []
    _trace_rows(rows, "uniform_s0", "v_x_K", 0, short, "gap")
    _trace_rows(rows, "uniform_s0", "v_x_2K", 0, long, "gap")
    metrics = {"anytime": {"prefix_identical": int(identical), "gap_K_short": float(short.measure[-1]),
                           "gap_K_long": float(long.measure[K]), "gap_2K": float(long.measure[-1]), "K": K}}
    return rows, metrics


# --------------------------------------------------------------------------------------------------- nuclear
def _equal_time_ratio(cum_s, gap, budget_s: float, ref_gap: float) -> tuple[float, bool]:
    """(gap of a trace at the last record whose cumulative update time is within ``budget_s``, over ``ref_gap``;
    whether the trace ran out of records before the budget)."""
    cum_s, gap = np.asarray(cum_s), np.asarray(gap)
    within = np.flatnonzero(cum_s <= budget_s)
    return float(gap[within[-1]] / max(ref_gap, FLOOR)), bool(within[-1] == cum_s.size - 1)


def run_nuclear(params: dict, ctx: RunContext):
    """V-x against PROJ on the nuclear-ball game: gap every ``record_every`` steps, time of each update.

    ``gap_ratio_equal_time`` (timing.json): V-x's gap at the last record within PROJ's total update time over
    PROJ's final gap. ``gap_ratio_equal_iter`` (metrics.json, deterministic): V-x's gap at the last record at or
    before PROJ's K over PROJ's final gap, the per-iteration part of the comparison. With ``K_vx_full_svd`` the
    negative control of ``lmo-wallclock`` also runs: V-x with its LMO computed from a full SVD
    (``full_svd_lmo=True``, the factorisation a projection needs), timed the same way, its equal-time ratio under
    ``nuclear.control.full_svd_lmo`` in timing.json.
    """
    rows, metrics, timing = [], {"nuclear": {}}, {"nuclear": {"by_p": {}}}
    every = int(params["record_every"])
    for p in params["ps"]:
        game = make_problem("nuclear_game", p=int(p), J=int(params.get("J", 50)), s=int(params.get("s", 200)),
                            delta=float(params.get("delta", 10.0)), seed=int(params.get("seed", 0)))
        res_p, time_p = {}, {}
        for method, K in (("v_x", int(params["K_vx"])), ("proj", int(params["K_proj"]))):
            run_method(method, game, 1, time_iterations=True)  # warm-up (ARPACK / LAPACK workspaces)
            trace = run_method(method, game, K, record_every=every, time_iterations=True)
            cum = np.concatenate([[0.0], np.cumsum(trace.iter_seconds)])[trace.steps]
            res_p[method] = {"gap_final": float(trace.measure[-1]), "K": K}
            time_p[method] = {"median_iter_s": float(np.median(trace.iter_seconds)),
                              "total_s": float(trace.iter_seconds.sum()), "cum_s": cum.tolist(),
                              "gap": trace.measure.tolist()}
            for i, step in enumerate(trace.steps):
                for metric, val in (("gap", trace.measure[i]), ("cum_seconds", cum[i])):
                    rows.append({"method": method, "seed": int(params.get("seed", 0)), "step": int(step),
                                 "metric": metric, "value": float(val), "problem": f"nuclear_p{p}"})
            ctx.log(f"p={p} {method}: gap {trace.measure[-1]:.3e}, median iter "
                    f"{time_p[method]['median_iter_s'] * 1e3:.2f} ms")
        proj_total, proj_gap = time_p["proj"]["total_s"], res_p["proj"]["gap_final"]
        time_p["time_ratio"] = time_p["v_x"]["median_iter_s"] / time_p["proj"]["median_iter_s"]
        time_p["gap_ratio_equal_time"], time_p["vx_budget_exhausted"] = _equal_time_ratio(
            time_p["v_x"]["cum_s"], time_p["v_x"]["gap"], proj_total, proj_gap)
        vx_steps = np.asarray([r["step"] for r in rows if r["method"] == "v_x" and r["metric"] == "gap"
                               and r["problem"] == f"nuclear_p{p}"])
        at_k = np.flatnonzero(vx_steps <= res_p["proj"]["K"])[-1]
        res_p["gap_ratio_equal_iter"] = float(time_p["v_x"]["gap"][at_k] / max(proj_gap, FLOOR))
        if params.get("K_vx_full_svd"):  # the negative control of lmo-wallclock
            run_method("v_x", game, 1, time_iterations=True, full_svd_lmo=True)  # warm-up
            trace = run_method("v_x", game, int(params["K_vx_full_svd"]), record_every=every, time_iterations=True,
                               full_svd_lmo=True)
            cum = np.concatenate([[0.0], np.cumsum(trace.iter_seconds)])[trace.steps]
            ratio, exhausted = _equal_time_ratio(cum, trace.measure, proj_total, proj_gap)
            time_p["control_full_svd_lmo"] = {"median_iter_s": float(np.median(trace.iter_seconds)),
                                              "total_s": float(trace.iter_seconds.sum()), "cum_s": cum.tolist(),
                                              "gap": trace.measure.tolist(), "gap_ratio_equal_time": ratio,
                                              "budget_exhausted": exhausted}
            res_p["v_x_full_svd"] = {"gap_final": float(trace.measure[-1]), "K": int(params["K_vx_full_svd"])}
            for i, step in enumerate(trace.steps):
                for metric, val in (("gap", trace.measure[i]), ("cum_seconds", cum[i])):
                    rows.append({"method": "v_x_full_svd", "seed": int(params.get("seed", 0)), "step": int(step),
                                 "metric": metric, "value": float(val), "problem": f"nuclear_p{p}"})
            ctx.log(f"p={p} v_x with a full-SVD LMO: gap at PROJ's time / PROJ's gap {ratio:.3g}")
        metrics["nuclear"][f"p{p}"] = res_p
        timing["nuclear"]["by_p"][f"p{p}"] = {k: v for k, v in time_p.items()}
    ref = f"p{params['ref_p']}"
    if params.get("proj_mu0_grid") or params.get("peg_steps"):
        metrics["nuclear"]["tuned"], timing["nuclear"]["tuned"] = _tuned_comparison(
            params, ctx, timing["nuclear"]["by_p"][ref], rows)
    timing["nuclear"]["time_ratio"] = timing["nuclear"]["by_p"][ref]["time_ratio"]
    timing["nuclear"]["gap_ratio_equal_time"] = timing["nuclear"]["by_p"][ref]["gap_ratio_equal_time"]
    timing["nuclear"]["ref_p"] = int(params["ref_p"])
    if "control_full_svd_lmo" in timing["nuclear"]["by_p"][ref]:
        ctl = timing["nuclear"]["by_p"][ref]["control_full_svd_lmo"]
        timing["nuclear"]["control"] = {"full_svd_lmo": {
            "gap_ratio_equal_time": ctl["gap_ratio_equal_time"], "budget_exhausted": ctl["budget_exhausted"],
            "time_ratio": ctl["median_iter_s"] / timing["nuclear"]["by_p"][ref]["proj"]["median_iter_s"]}}
    _write_timing(ctx, timing)
    return rows, metrics


def _nuclear_instance(params: dict, p: int, seed: int):
    return make_problem("nuclear_game", p=int(p), J=int(params.get("J", 50)), s=int(params.get("s", 200)),
                        delta=float(params.get("delta", 10.0)), seed=int(seed))


def _projected_candidates(params: dict) -> list[tuple[str, str, dict, int]]:
    """(label, method, kwargs, iterations) of the projected comparators on the tuning grid: PROJ with ``mu0`` in
    ``proj_mu0_grid`` (its x-step is ``1/L_k = mu_k / L_xy^2`` on this bilinear game, so ``mu0`` scales the step)
    for ``K_proj`` updates, and projected extragradient with ``peg_step`` in ``peg_steps`` (units of 1/L_xy) for
    ``K_proj // 2`` updates (two nuclear-ball projections per update: the same number of projections)."""
    K = int(params["K_proj"])
    out = [(f"proj_mu0_{c:g}", "proj", {"mu0": float(c)}, K) for c in params.get("proj_mu0_grid", [])]
    out += [(f"peg_{c:g}", "peg", {"peg_step": float(c)}, max(K // 2, 1)) for c in params.get("peg_steps", [])]
    if not out:
        raise ValueError("the tuned comparison needs proj_mu0_grid or peg_steps")
    return out


def _tuned_comparison(params: dict, ctx: RunContext, ref_timing: dict, rows: list) -> tuple[dict, dict]:
    """``lmo-wallclock`` against the strongest projected comparator we have: every candidate of
    :func:`_projected_candidates` runs on a separate instance (seed ``tune_seed``, p = ``ref_p``) and the one with
    the smallest final duality gap is chosen (gaps only, never times); it then runs, timed, on the evaluation
    instance. Returns (deterministic part: the grid's gaps, the choice, its final gap; timing part: its total
    update time, V-x's and the full-SVD control's gap at that time over its final gap)."""
    p, every = int(params["ref_p"]), int(params["record_every"])
    tune = _nuclear_instance(params, p, int(params.get("tune_seed", int(params.get("seed", 0)) + 1)))
    cands = _projected_candidates(params)
    grid = {label: float(run_method(m, tune, K, record_every=every, **kw).measure[-1]) for label, m, kw, K in cands}
    label, method, kwargs, K = min(cands, key=lambda c: grid[c[0]])
    ctx.log(f"tuned projected comparator on the tuning instance: {label} (grid {grid})")
    game = _nuclear_instance(params, p, int(params.get("seed", 0)))
    run_method(method, game, 1, time_iterations=True, **kwargs)  # warm-up
    trace = run_method(method, game, K, record_every=every, time_iterations=True, **kwargs)
    cum = np.concatenate([[0.0], np.cumsum(trace.iter_seconds)])[trace.steps]
    total, gap = float(trace.iter_seconds.sum()), float(trace.measure[-1])
    for i, step in enumerate(trace.steps):
        for metric, val in (("gap", trace.measure[i]), ("cum_seconds", cum[i])):
            rows.append({"method": f"tuned_{label}", "seed": int(params.get("seed", 0)), "step": int(step),
                         "metric": metric, "value": float(val), "problem": f"nuclear_p{p}"})
    vx = ref_timing["v_x"]
    ratio, exhausted = _equal_time_ratio(vx["cum_s"], vx["gap"], total, gap)
    tim = {"choice": label, "total_s": total, "median_iter_s": float(np.median(trace.iter_seconds)),
           "gap_ratio_equal_time": ratio, "vx_budget_exhausted": exhausted}
    if "control_full_svd_lmo" in ref_timing:
        ctl = ref_timing["control_full_svd_lmo"]
        c_ratio, c_exhausted = _equal_time_ratio(ctl["cum_s"], ctl["gap"], total, gap)
        tim["control"] = {"full_svd_lmo": {"gap_ratio_equal_time": c_ratio, "budget_exhausted": c_exhausted}}
    ctx.log(f"p={p} tuned {label}: gap {gap:.3e}; V-x at its time / its gap {ratio:.3g}")
    return {"grid_gap_final": grid, "choice": label, "K": K, "gap_final": gap}, tim


# --------------------------------------------------------------------------------------------------- robust multiclass
RMC_METHODS = ("v_x", "v_y", "v_xy", "proj", "sp_fw")


def run_robust_multiclass(params: dict, ctx: RunContext):
    """The paper's convex-concave experiment (Section 5) on generated text-like data: robust multiclass
    classification with a nuclear-norm ball on W (d x C); the three algorithms, PROJ, SP-FW and the projection-free
    baselines R-PDCG and CG-RPGA, plus two LMO-LMO variants: frozen smoothing (omega = ``control_omega``) and the
    dual step removed (the control). The baselines' step constant is tuned over ``baseline_steps`` on a separate
    instance (seed ``tune_seed``, not an evaluation seed) and used on every seed; ``rmc.baseline_tuning`` records
    the grid's final gaps, the choice and whether it lies on an edge of the grid (``at_edge``).

    Per-seed lists: ``rmc.per_seed.gap_final.<m>``, ``rmc.per_seed.ratio_vx_best_other`` = gap(LMO-PO) /
    min(gap(PO-LMO), gap(LMO-LMO)) at K, ``rmc.per_seed.ratio_vxy_best_pf`` = gap(LMO-LMO) / min(gap(R-PDCG),
    gap(CG-RPGA)), ``rmc.per_seed.ratio_vxy_spfw``, and the same ratios under ``rmc.control.*``. Update times go to
    timing.json.
    """
    K, every = int(params["K"]), int(params.get("record_every", 10))
    shape = {k: params[k] for k in ("N", "d", "C", "s", "delta") if k in params}
    seeds, tune_seed = [int(s) for s in params["seeds"]], int(params["tune_seed"])
    tuning = tune_baselines_apart(lambda seed: make_problem("robust_multiclass", seed=seed, **shape), tune_seed,
                                  seeds, K, [float(c) for c in params["baseline_steps"]], record_every=every)
    methods = (*RMC_METHODS, *BOROUN_BASELINES)
    rows, gaps, timing = [], {m: [] for m in methods}, {m: [] for m in methods}
    controls = {"frozen_smoothing": [], "freeze_y": []}
    steps_c = {m: tuning[m]["best_step_c"] for m in BOROUN_BASELINES}
    ctx.log(f"tuned on seed {tune_seed}: " + ", ".join(f"{m} c={c:g}" for m, c in steps_c.items()))
    for seed in seeds:
        prob = make_problem("robust_multiclass", seed=seed, **shape)
        for method in methods:
            tr = run_method(method, prob, K, record_every=every, time_iterations=True, step_c=steps_c.get(method, 1.0))
            gaps[method].append(float(tr.measure[-1]))
            timing[method].append(float(tr.iter_seconds.sum()))
            _trace_rows(rows, f"rmc_s{seed}", method, int(seed), tr, "gap", thin=False)
        for name, kwargs in (("frozen_smoothing", {"omega": float(params.get("control_omega", 0.01))}),
                             ("freeze_y", {"freeze_y": True})):
            tr = run_method("v_xy", prob, K, record_every=every, **kwargs)
            controls[name].append(float(tr.measure[-1]))
            _trace_rows(rows, f"rmc_s{seed}", f"v_xy_{name}", int(seed), tr, "gap", thin=False)
        ctx.log(f"robust multiclass seed {seed}: " + ", ".join(f"{m}={gaps[m][-1]:.3g}" for m in methods))
    n = len(seeds)
    best_pf = [min(gaps[m][i] for m in BOROUN_BASELINES) for i in range(n)]
    per_seed = {"gap_final": gaps,
                "ratio_vx_best_other": [gaps["v_x"][i] / max(min(gaps["v_y"][i], gaps["v_xy"][i]), FLOOR)
                                        for i in range(n)],
                "ratio_vxy_spfw": [gaps["v_xy"][i] / max(gaps["sp_fw"][i], FLOOR) for i in range(n)],
                "ratio_vxy_best_pf": [gaps["v_xy"][i] / max(best_pf[i], FLOOR) for i in range(n)]}
    control = {name: {"gap_final": vals,
                      "ratio_vxy_spfw": [vals[i] / max(gaps["sp_fw"][i], FLOOR) for i in range(n)],
                      "ratio_vxy_best_pf": [vals[i] / max(best_pf[i], FLOOR) for i in range(n)]}
               for name, vals in controls.items()}
    _write_timing(ctx, {"rmc": {"update_seconds": timing}})
    return rows, {"rmc": {"per_seed": per_seed, "control": control, "K": K, "shape": shape,
                          "baseline_tuning": tuning, "tune_seed": tune_seed}}


# --------------------------------------------------------------------------------------------------- NC DRO
def _dro_problems(params: dict, grouping: str, lam: float):
    probs = [(f"synthetic_s{s}", make_problem("dro_synthetic", N=int(params["N"]), d=int(params["d"]), lam=lam,
                                              grouping=grouping, radius=float(params.get("radius", 10.0)), seed=s),
              s) for s in params["seeds"]]
    if params.get("digits"):
        probs.append(("digits", make_problem("dro_digits", lam=lam, grouping=grouping,
                                             radius=float(params.get("radius", 10.0))), -1))
    return probs


def _first_reach(trace, target: float):
    idx = np.flatnonzero(trace.measure <= target)
    return int(trace.steps[idx[0]]) if idx.size else None


def _run_nc(params: dict, ctx: RunContext, *, regime: str):
    K, every = int(params["K"]), int(params["record_every"])
    lam = float(params["lam"]) if regime == "ncsc" else 0.0
    grouping = "example" if regime == "ncsc" else "block"
    rows, out = [], {"best_final": {}, "slope": {}, "phi_final": {}, "phi_drop": {}, "reach_iter": {}}
    target = float(params.get("target", 1e-3))
    for label, prob, seed in _dro_problems(params, grouping, lam):
        for key in out:
            out[key][label] = {}
        for method in SMOOTHING_METHODS:
            tr = run_method(method, prob, K, record_every=every)
            out["best_final"][label][method] = float(tr.measure[-1])
            out["slope"][label][method] = loglog_slope(tr.steps, tr.measure)
            out["phi_final"][label][method] = float(tr.objective[-1])
            out["phi_drop"][label][method] = float(tr.objective[0] - tr.objective[-1])
            reach = _first_reach(tr, target)
            out["reach_iter"][label][method] = -1 if reach is None else reach
            _trace_rows(rows, label, method, seed, tr, "fw_gap_best")
            _trace_rows(rows, label, method, seed, tr, "objective", tr.objective)
        ctx.log(f"{regime} {label}: " + ", ".join(f"{m}={out['best_final'][label][m]:.2e}"
                                                     for m in SMOOTHING_METHODS))
    labels = list(out["best_final"])
    out["slope"]["max_lmo"] = max(out["slope"][lab][m] for lab in labels for m in LMO_VARIANTS)
    out["phi_drop"]["min_lmo"] = min(out["phi_drop"][lab][m] for lab in labels for m in LMO_VARIANTS)
    out["best_ratio"] = {m: max(out["best_final"][lab][m] / max(out["best_final"][lab]["proj"], FLOOR)
                                for lab in labels) for m in LMO_VARIANTS}
    out["best_ratio"]["max_vx_vxy"] = max(out["best_ratio"]["v_x"], out["best_ratio"]["v_xy"])
    # spreads: standard error over seeds of the per-seed values behind the max / min above
    per_seed = {m: [out["best_final"][lab][m] / max(out["best_final"][lab]["proj"], FLOOR) for lab in labels]
                for m in LMO_VARIANTS}
    out["best_ratio_se"] = {m: mean_and_se(v)[1] for m, v in per_seed.items()}
    out["best_ratio_se"]["max_vx_vxy"] = max(out["best_ratio_se"]["v_x"], out["best_ratio_se"]["v_xy"])
    out["phi_drop_se"] = {m: mean_and_se([out["phi_drop"][lab][m] for lab in labels])[1] for m in LMO_VARIANTS}
    # iterations to reach the target FW gap, relative to PROJ; an unreached target counts as K + record_every
    # (a lower bound on the true ratio), flagged in iter_ratio_reached.
    ratio, reached = {}, {}
    for m in LMO_VARIANTS:
        per_seed, ok = [], True
        for lab in labels:
            proj_it, it = out["reach_iter"][lab]["proj"], out["reach_iter"][lab][m]
            proj_it = max(proj_it if proj_it >= 0 else K + every, 1)
            ok &= it >= 0
            per_seed.append((it if it >= 0 else K + every) / proj_it)
        ratio[m], reached[m] = float(max(per_seed)), bool(ok)
    ratio["min_lmo"] = min(ratio[m] for m in LMO_VARIANTS)
    out["iter_ratio"], out["iter_ratio_reached"] = ratio, reached
    out["K"], out["target"] = K, target
    if params.get("control_freeze_y"):
        out["control"] = {"freeze_y": _freeze_y_control(params, ctx, regime, grouping, lam, rows)}
    return rows, {regime: out}


def _freeze_y_control(params: dict, ctx: RunContext, regime: str, grouping: str, lam: float, rows: list) -> dict:
    """The negative control: the three LMO variants with the dual step removed (y stays at ybar), on the first
    ``control_seeds`` instances. Returns the largest slope of the best FW gap, the smallest drop of Phi, and the
    best-FW-gap ratio to PROJ (run normally) per variant."""
    K, every = int(params["K"]), int(params["record_every"])
    probs = _dro_problems({**params, "digits": False}, grouping, lam)[:int(params.get("control_seeds", 1))]
    slopes, drops, ratio = [], [], {m: [] for m in LMO_VARIANTS}
    for label, prob, seed in probs:
        proj_best = run_method("proj", prob, K, record_every=every).measure[-1]
        for method in LMO_VARIANTS:
            tr = run_method(method, prob, K, record_every=every, freeze_y=True)
            slopes.append(loglog_slope(tr.steps, tr.measure))
            drops.append(float(tr.objective[0] - tr.objective[-1]))
            ratio[method].append(float(tr.measure[-1] / max(proj_best, FLOOR)))
            _trace_rows(rows, label, f"{method}_freeze_y", seed, tr, "fw_gap_best")
        ctx.log(f"{regime} {label}: freeze_y control done")
    return {"slope_max_lmo": max(slopes), "phi_drop_min_lmo": min(drops),
            "best_ratio": {m: max(v) for m, v in ratio.items()}}


def run_ncsc_dro(params: dict, ctx: RunContext):
    """NC-SC chi-square DRO (one group per example, lam > 0): best-so-far FW gap of Phi every 10 iterations."""
    return _run_nc(params, ctx, regime="ncsc")


def run_ncc_dro(params: dict, ctx: RunContext):
    """NC-C group DRO (lam = 0): best-so-far FW gap of Phi_{mu_k} and Phi = max_j L_j every 10 iterations."""
    return _run_nc(params, ctx, regime="ncc")


# --------------------------------------------------------------------------------------------------- smoothing
def _random_points(prob, n: int, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet(1) points on a simplex X, or uniform points in an l1 ball X."""
    dim = prob.X.dim
    if hasattr(prob.X, "radius"):  # l1 ball: radius * U^(1/d) * random signs * Dirichlet(1)
        w = rng.dirichlet(np.ones(dim), size=n)
        signs = rng.choice([-1.0, 1.0], size=(n, dim))
        scale = prob.X.radius * rng.uniform(size=(n, 1)) ** (1.0 / dim)
        return scale * signs * w
    return rng.dirichlet(np.ones(dim), size=n)


def run_smoothing_check(params: dict, ctx: RunContext):
    """Sandwich ``0 <= Phi - Phi_mu <= mu D^2/2`` and Danskin ``grad Phi_mu = grad_x f(x, y*_mu)`` (central FD)."""
    n_x, h = int(params["n_x"]), float(params.get("h", 1e-6))
    n, m = params["uniform_shape"]
    probs = [("uniform_s0", make_problem("uniform_game", n=n, m=m, seed=0)),
             ("dro_ncsc_s0", make_problem("dro_synthetic", N=int(params["N"]), d=int(params["d"]),
                                          lam=float(params["lam"]), grouping="example", seed=0)),
             ("dro_ncc_s0", make_problem("dro_synthetic", N=int(params["N"]), d=int(params["d"]), lam=0.0,
                                         grouping="block", seed=0))]
    rows, per = [], {}
    violations = trials = 0
    for label, prob in probs:
        rng = ctx.generator(label)
        xs = _random_points(prob, n_x, rng)
        us = rng.standard_normal((n_x, prob.X.dim))
        us /= np.linalg.norm(us, axis=1, keepdims=True)
        D2 = prob.Y.max_dist_sq()
        worst_gap_excess, worst_fd = -np.inf, 0.0
        fails = 0
        for mu in params["mus"]:
            for i in range(n_x):
                x, u = xs[i], us[i]
                phi0, _ = prob.smoothed_max(x, 0.0)
                phimu, ystar = prob.smoothed_max(x, mu)
                diff = phi0 - phimu
                sandwich_ok = -1e-12 <= diff <= 0.5 * mu * D2 + 1e-12
                g = prob.grad_x(x, ystar)
                fd = (prob.smoothed_max(x + h * u, mu)[0] - prob.smoothed_max(x - h * u, mu)[0]) / (2 * h)
                scale = max(1.0, float(np.linalg.norm(g)))
                fd_err = abs(fd - float(g @ u)) / scale
                fd_ok = fd_err <= 1e-5
                worst_gap_excess = max(worst_gap_excess, diff - 0.5 * mu * D2, -diff)
                worst_fd = max(worst_fd, fd_err)
                ok = sandwich_ok and fd_ok
                fails += not ok
                trials += 1
                rows.append({"method": "smoothing", "seed": i, "step": 0, "metric": "fd_rel_err", "value": fd_err,
                             "problem": label, "mu": mu})
                rows.append({"method": "smoothing", "seed": i, "step": 0, "metric": "phi_minus_phimu",
                             "value": diff, "problem": label, "mu": mu})
        violations += fails
        per[label] = {"violations": fails, "max_fd_rel_err": worst_fd, "max_sandwich_excess": worst_gap_excess}
    return rows, {"smoothing": {"violations": violations, "trials": trials, "by_problem": per}}


# --------------------------------------------------------------------------------------------------- performance
def _to_target_call(game, method: str, n_iter: int, kwargs: dict):
    """A call that runs ``method`` for ``n_iter`` iterations on ``game`` with the gap evaluated only at the start and
    at the end: the work of reaching the target gap once the iteration count that reaches it is known."""
    n_iter = max(int(n_iter), 1)
    return lambda: run_method(method, game, n_iter, record_every=n_iter, **kwargs)


def run_performance(params: dict, ctx: RunContext):
    """Side-by-side timings: HiGHS LP vs V-x / V-y / V-xy, PEG (default and tuned step) and the tuned R-PDCG /
    CG-RPGA to a duality gap of 1e-3 (the horizon baselines run with T = K_games); svds(k=1) vs full SVD.

    The iteration count that reaches the target comes from a deterministic run of ``K_games`` iterations. The
    methods that reach it are then timed in process CPU seconds together with the LP solve by
    :func:`shared.timing.alternating_least_cpu`: ``repeats`` rounds that each run the LP solve and every such
    method's run to the target once, in turn (calls under 0.05 s batched), keeping the least per-call time of
    each, so that load from other processes reaches both sides of ``ratio_to_lp`` alike. A method that does not
    reach the target within ``K_games`` is timed once: the CPU seconds of a run of its ``K_games`` updates (a lower
    bound on its time to target). The step tuning uses iteration counts and final gaps only, never times. The
    nuclear-ball LMO (svds, k = 1) and the full SVD with projection are timed the same way, in turn.
    """
    repeats, target = int(params.get("repeats", 5)), float(params.get("target", 1e-3))
    n, m = params["uniform_shape"]
    game = make_problem("uniform_game", n=n, m=m, seed=0)
    rows, det, timing = [], {"games": {}, "nuclear": {}}, {"games": {}, "nuclear": {}}
    det["games"]["lp_value"] = game_value(game.A)[0]
    peg_grid = [float(c) for c in params.get("peg_steps", [0.5])]
    tuned = _tune_peg(game, int(params["K_games"]), target, peg_grid)
    det["games"]["peg_tuning"] = tuned
    pf_grid = [float(c) for c in params["baseline_steps"]]
    pf_tuning = tune_horizon_baselines(game, int(params["K_games"]), pf_grid)
    det["games"]["baseline_tuning"] = pf_tuning
    runs = [("v_x", {}), ("v_y", {}), ("v_xy", {}), ("peg", {}), ("peg_tuned", {"peg_step": tuned["best_step"]})]
    runs += [(m, {"step_c": pf_tuning[m]["best_step_c"]}) for m in BOROUN_BASELINES]
    reached, secs, steps = {"lp": lambda: game_value(game.A)}, {}, {}
    for method, kwargs in runs:
        base = "peg" if method == "peg_tuned" else method
        trace = run_method(base, game, int(params["K_games"]), **kwargs)
        reach = _first_reach(trace, target)
        det["games"][method] = {"reached": reach is not None, "iterations": reach if reach else -1,
                                "gap_final": float(trace.measure[-1])}
        steps[method] = reach or int(trace.steps[-1])
        if reach is None:   # CPU seconds of one run of K_games updates (the gap only at its start and end)
            secs[method] = time_calls(_to_target_call(game, base, int(params["K_games"]), kwargs), 1).cpu_min
        else:
            reached[method] = _to_target_call(game, base, reach, kwargs)
    least = alternating_least_cpu(reached, rounds=repeats)
    lp_s = least["seconds"].pop("lp")
    secs.update(least["seconds"])
    timing["games"]["lp_s"] = lp_s
    timing["games"]["least_cpu"] = {"number": least["number"], "rounds": least["rounds"]}
    for method, _ in runs:
        timing["games"][method] = {"seconds": secs[method], "ratio_to_lp": secs[method] / lp_s,
                                   "reached": det["games"][method]["reached"]}
        rows.append({"method": method, "seed": 0, "step": steps[method], "metric": "seconds_to_target",
                     "value": secs[method], "problem": "uniform_s0"})
    for p in params["ps"]:
        prob = make_problem("nuclear_game", p=int(p), seed=0)
        G = prob.adjoint(prob.Y.center())
        dense = G.toarray()
        dense *= 5.0 * prob.delta / np.linalg.svd(dense, compute_uv=False).sum()  # projection is active
        least_n = alternating_least_cpu({"svds": lambda: top_singular_pair(G), "svd": lambda: prob.X._project(dense)},
                                        rounds=repeats)
        svds_s, svd_s = least_n["seconds"]["svds"], least_n["seconds"]["svd"]
        timing["nuclear"][f"p{p}"] = {"svds_s": svds_s, "svd_project_s": svd_s, "ratio": svds_s / svd_s}
        det["nuclear"][f"p{p}"] = {"nnz_adjoint": int(G.nnz)}
        for metric, val in (("svds_seconds", svds_s), ("svd_project_seconds", svd_s)):
            rows.append({"method": "oracle", "seed": 0, "step": 0, "metric": metric, "value": val,
                         "problem": f"nuclear_p{p}"})
        ctx.log(f"p={p}: svds {svds_s * 1e3:.2f} ms, svd+projection {svd_s * 1e3:.2f} ms")
    if params.get("cvxpy_p"):
        det["cvxpy"], timing["cvxpy"] = _cvxpy_nuclear_check(int(params["cvxpy_p"]), int(params["K_cvxpy"]), ctx)
    _write_timing(ctx, timing)
    return rows, {"performance": det}


def _tune_peg(game, K: int, target: float, grid: list[float]) -> dict:
    """PEG's step (in units of 1/L) from ``grid`` that reaches the target gap in the fewest iterations (a step
    that never reaches it ranks by its final gap); iteration counts are deterministic, so the choice is too."""
    results = {}
    for c in grid:
        tr = run_method("peg", game, K, peg_step=c)
        reach = _first_reach(tr, target)
        results[f"{c:g}"] = {"iterations": -1 if reach is None else reach, "gap_final": float(tr.measure[-1])}
    key = lambda c: (results[f"{c:g}"]["iterations"] < 0, results[f"{c:g}"]["iterations"],  # noqa: E731
                     results[f"{c:g}"]["gap_final"])
    best = min(grid, key=key)
    return {"grid": results, "best_step": best}


def _cvxpy_nuclear_check(p: int, K: int, ctx: RunContext):
    """(full) Saddle value of the nuclear game by cvxpy (normNuc) against V-x's gap bracket after K steps."""
    import cvxpy as cp

    from shared.solvers import solve

    prob = make_problem("nuclear_game", p=p, seed=0)
    W, t = cp.Variable((p, p)), cp.Variable()
    constraints = [prob.M @ cp.vec(W, order="C") - prob.c <= t, cp.normNuc(W) <= prob.delta]
    res = solve(cp.Problem(cp.Minimize(t), constraints))
    ctx.record(solver=res.backend)
    trace = run_method("v_x", prob, K)
    upper = float(np.max(prob.M @ trace.x.ravel() - prob.c))
    lower = upper - float(trace.measure[-1])
    det = {"value": float(res.value), "vx_upper": upper, "vx_lower": lower, "solver": res.backend,
           "inside": bool(lower - 1e-6 <= res.value <= upper + 1e-6)}
    return det, {"solve_s": float(res.solve_time)}


def _strong_dual_runs(game, K: int, record_every: int, **kwargs) -> dict:
    """Final gap and gap slope of the three algorithms on ``game``."""
    out = {}
    for method in LMO_VARIANTS:
        trace = run_method(method, game, K, record_every=record_every, **kwargs)
        out[method] = {"gap_final": float(trace.measure[-1]),
                       "slope": loglog_slope(trace.steps, trace.measure, k_min=max(K // 10, 1)),
                       "steps": trace.steps, "gap": trace.measure}
    return out


def run_cc_strong_dual(params: dict, ctx: RunContext):
    r"""The ``cc_strong_dual`` experiment: the convex-concave rate with a strongly concave dual (Theorem 2.2, second
    half of official claim 3: primal gap O~(T^(-1/3)) in place of the general O(T^(-1/5))).

    Problem: the uniform matrix games of ``cc_games`` (``A ~ U(-1, 1)^{n x m}``, same shapes and seeds) with the dual
    regularised, ``f(x, y) = x^T A y - (mu_y/2) ||y - ybar||^2``
    (:class:`~papers.pf_minimax.problems.RegularizedMatrixGame`). Measure: the last-iterate duality gap, an upper bound
    of the primal gap ``Phi(x_k) - min Phi``.

    Runs per game, K iterations each, from the centre of both simplices:
    - ``sc``: the three algorithms (LMO-PO ``v_x``, PO-LMO ``v_y``, LMO-LMO ``v_xy``) on the regularised game, with no
      added smoothing (``mu0 = 0``: the dual is already strongly concave, as in ``ncsc_dro``) and the open-loop x-step;
    - ``c``: the same three on the unregularised game (``mu_y = 0``) with the dynamic smoothing of ``cc_games``
      (``mu0 = 1``, ``omega = 1/2``), i.e. the general convex-concave case;
    - ``frozen``: control, the three on the regularised game with the dual step removed (``freeze_y``: y stays at
      ``ybar`` and x descends ``f(., ybar)``), so the gap cannot go to 0.

    Per game the statistic is the worst (largest) log-log slope of the gap over the three algorithms on the last
    decade of the run, k in [K/10, K] (as ``cc_controls`` measures the general rate of ``cc-rate``). Metrics:
    ``cc_sc.per_seed.worst_slope_sc`` / ``worst_slope_c`` / ``worst_slope_frozen`` and the paired differences
    ``sc_minus_c`` and ``frozen_minus_c``.
    """
    n, m = params["uniform_shape"]
    K, every, mu_y = int(params["K"]), int(params.get("record_every", 1)), float(params["mu_y"])
    rows, per_game = [], {}
    per_seed = {"worst_slope_sc": [], "worst_slope_c": [], "worst_slope_frozen": []}
    for seed in params["seeds"]:
        plain = make_problem("uniform_game", n=n, m=m, seed=seed)
        regular = RegularizedMatrixGame(plain.A, mu_y, name=f"regularized_game({n}x{m}, seed={seed})")
        runs = {"sc": _strong_dual_runs(regular, K, every, mu0=0.0),
                "c": _strong_dual_runs(plain, K, every, mu0=1.0),
                "frozen": _strong_dual_runs(regular, K, every, mu0=0.0, freeze_y=True)}
        per_game[f"seed{seed}"] = {arm: {meth: {"gap_final": r["gap_final"], "slope": r["slope"]}
                                         for meth, r in res.items()} for arm, res in runs.items()}
        for arm, res in runs.items():
            per_seed[f"worst_slope_{arm}"].append(max(r["slope"] for r in res.values()))
            for meth, r in res.items():
                rows += [{"problem": f"uniform_s{seed}", "method": f"{meth}_{arm}", "seed": seed, "step": int(k),
                          "metric": "gap", "value": float(v)} for k, v in zip(r["steps"], r["gap"])]
        ctx.log(f"seed {seed}: worst slopes sc={per_seed['worst_slope_sc'][-1]:.3f} "
                f"c={per_seed['worst_slope_c'][-1]:.3f} frozen={per_seed['worst_slope_frozen'][-1]:.3f}")
    c = np.array(per_seed["worst_slope_c"])
    per_seed["sc_minus_c"] = (np.array(per_seed["worst_slope_sc"]) - c).tolist()
    per_seed["frozen_minus_c"] = (np.array(per_seed["worst_slope_frozen"]) - c).tolist()
    metrics = {"cc_sc": {"mu_y": mu_y, "K": K, "shape": [int(n), int(m)], "per_seed": per_seed,
                         "per_game": per_game}}
    return rows, metrics


EXPERIMENTS = {
    "cc_games": run_cc_games,
    "cc_controls": run_cc_controls,
    "anytime": run_anytime,
    "nuclear": run_nuclear,
    "robust_multiclass": run_robust_multiclass,
    "ncsc_dro": run_ncsc_dro,
    "ncc_dro": run_ncc_dro,
    "smoothing_check": run_smoothing_check,
    "performance": run_performance,
    "dictionary_learning": run_dictionary_learning,
    "cc_strong_dual": run_cc_strong_dual,
}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
