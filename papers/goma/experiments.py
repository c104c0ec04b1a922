"""Experiments of the goma reproduction (spec "Experiments by scale").

``python -m papers.goma.experiments NAME --config papers/goma/config.yaml --scale quick --out DIR``, with NAME
one of ``deterministic``, ``budget``, ``stochastic``, ``pep``, ``performance``, ``stability``. Each function
takes the params of its config block and returns (tidy rows, metrics); whole traces for the figures are
written next to them as ``.npz`` files.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from shared import seeding
from shared.experiment import RunContext, main
from shared.results import write_arrays, write_metrics

from papers.goma import methods as M
from papers.goma.metrics import first_reach, jackknife_se, loglog_slope, rate_envelope
from papers.goma.pep import worst_case_with_status
from papers.goma.problems import make_problem

__all__ = ["EXPERIMENTS", "log_steps", "deterministic", "budget", "stochastic", "pep", "performance", "stability"]


class DivergenceError(RuntimeError):
    """A method diverged that the config does not list under ``may_diverge``."""


def log_steps(K: int, n: int = 200) -> np.ndarray:
    """About ``n`` log-spaced integer steps in [0, K] (0 and K included), for the tidy results."""
    if K <= 0:
        return np.array([0])
    return np.unique(np.concatenate([[0], np.round(np.logspace(0, np.log10(K), n)).astype(int), [K]]))


def _check_diverged(trace, method: str, instance: str, may_diverge, what: str = "") -> None:
    if trace.diverged_at is not None and method not in may_diverge:
        raise DivergenceError(f"method {method!r} diverged on instance {instance!r} at step {trace.diverged_at}"
                              f"{what}; list it under may_diverge if that is expected")


def _instances(params: dict):
    """(key, problem name, problem params, seeds) of every instance of a config block."""
    for key, spec in params["instances"].items():
        yield key, spec["problem"], dict(spec.get("params", {})), list(spec.get("seeds", [0]))


def _trace_rows(rows, method, seed, steps, instance, **series):
    for metric, values in series.items():
        for k in steps:
            rows.append({"method": method, "seed": seed, "step": int(k), "metric": metric,
                         "value": float(values[k]), "instance": instance})


# ------------------------------------------------------------------------------------------- deterministic
def deterministic(params: dict, ctx: RunContext):
    """All deterministic methods on every instance and seed; h_k at every k.

    Metrics: ``<instance>.slope.<method>`` (mean over seeds of the log-log slope on [k_lo, K]) with
    ``<instance>.slope_se.<method>``; ``p1.slope.min_eg_og``; ``envelope.max.<method>`` (max over all runs)
    and ``envelope.runs.<instance>_s<seed>.<method>``; ``calls_per_iter.<method>`` (from the call counter).
    """
    K, k_lo = int(params["K"]), int(params.get("k_lo", 100))
    methods = params.get("methods", list(M.DETERMINISTIC_METHODS))
    may_diverge = params.get("may_diverge", [])
    rows, slopes, envelopes, calls_per_iter, arrays = [], {}, {}, {}, {}
    steps = log_steps(K)
    for inst, name, pparams, seeds in _instances(params):
        for seed in seeds:
            problem = make_problem(name, seed=seed, **pparams)
            dist0 = float(np.sum((problem.z0 - problem.z_star) ** 2))
            for method in methods:
                trace = M.run_deterministic(method, problem, K)
                _check_diverged(trace, method, inst, may_diverge, f" (seed {seed}, steps {trace.params})")
                h = trace.grad_norm_sq
                if trace.diverged_at is None:
                    slopes.setdefault(inst, {}).setdefault(method, []).append(loglog_slope(h, k_lo, K))
                envelopes.setdefault(f"{inst}_s{seed}", {})[method] = rate_envelope(h, problem.L, dist0)
                calls_per_iter.setdefault(method, set()).add(trace.calls_per_iter)
                _trace_rows(rows, method, seed, steps, inst, grad_norm_sq=h, oracle_calls=trace.oracle_calls)
                if seed == seeds[0]:
                    arrays[f"{inst}__{method}__h"] = h
                    arrays[f"{inst}__{method}__calls"] = trace.oracle_calls
            ctx.log(f"{inst} seed {seed}: {len(methods)} methods, K={K}")
    metrics = {"K": K, "k_lo": k_lo}
    for inst, by_method in slopes.items():
        metrics[inst] = {"slope": {}, "slope_se": {}}
        for method, values in by_method.items():
            arr = np.asarray(values)
            metrics[inst]["slope"][method] = float(arr.mean())
            metrics[inst]["slope_se"][method] = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else 0.0
    if "p1" in metrics and {"eg", "og"} <= set(metrics["p1"]["slope"]):
        metrics["p1"]["slope"]["min_eg_og"] = min(metrics["p1"]["slope"]["eg"], metrics["p1"]["slope"]["og"])
    metrics["envelope"] = {
        "max": {m: max(run[m] for run in envelopes.values() if m in run) for m in methods},
        "runs": envelopes,
    }
    for m, values in calls_per_iter.items():
        if len(values) != 1:
            raise RuntimeError(f"method {m!r} made a varying number of oracle calls per iteration: {values}")
    metrics["calls_per_iter"] = {m: values.pop() for m, values in calls_per_iter.items()}
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, metrics


# ------------------------------------------------------------------------------------------------- budget
def _iterations_for_budget(method: str, budget: int) -> int:
    """Iterations that use exactly ``budget`` oracle calls: B-1 for one-call methods (plus the initial
    call), B/2 for two-call methods."""
    return budget - 1 if method in ("goma", "anchored_popov", "og") else budget // 2


def budget(params: dict, ctx: RunContext):
    """Equal oracle budget B on one instance: h at B calls for every method.

    Metrics: ``budget.h.<method>`` and the ratios ``budget.ratio_goma_eagc`` (= h_GOMA / h_EAG-C),
    ``budget.ratio_goma_feg``, ``budget.ratio_goma_eg``.
    """
    B = int(params["B"])
    if B < 2 or B % 2:
        raise ValueError(f"B must be an even integer >= 2, got {B}")
    methods = params.get("methods", list(M.DETERMINISTIC_METHODS))
    problem = make_problem(params["problem"], seed=int(params.get("seed", 0)), **params.get("params", {}))
    rows, h_at_budget, arrays = [], {}, {}
    for method in methods:
        n_iter = _iterations_for_budget(method, B)
        trace = M.run_deterministic(method, problem, n_iter)
        _check_diverged(trace, method, params["problem"], params.get("may_diverge", []))
        if int(trace.oracle_calls[-1]) != B:
            raise RuntimeError(f"method {method!r} used {trace.oracle_calls[-1]} oracle calls, not B={B}")
        h_at_budget[method] = float(trace.grad_norm_sq[-1])
        _trace_rows(rows, method, 0, log_steps(n_iter), params["problem"], grad_norm_sq=trace.grad_norm_sq,
                    oracle_calls=trace.oracle_calls)
        arrays[f"{method}__h"], arrays[f"{method}__calls"] = trace.grad_norm_sq, trace.oracle_calls
    ratios = {f"ratio_goma_{m.replace('_', '')}": h_at_budget["goma"] / h_at_budget[m]
              for m in ("eag_c", "feg", "eg") if m in h_at_budget and "goma" in h_at_budget}
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, {"budget": {"B": B, "h": h_at_budget, **ratios}}


# --------------------------------------------------------------------------------------------- stochastic
def stochastic(params: dict, ctx: RunContext):
    """The stochastic methods on every stochastic instance, S trajectories vectorised as an (S, 2n) array.

    Each method gets its own generator, spawned in the fixed method order from the stream (experiment,
    instance) of the root seed. Metrics per instance: ``slope.<m>`` of the mean h_k on [k_lo, K] with its
    jackknife standard error over trajectories ``slope_se.<m>``, ``slope.min_seg_sog``,
    ``max_dist_ratio.<m>`` = max_k mean ||z_k - z*||^2 / ||z_0 - z*||^2, ``final_mean_h.<m>``,
    ``calls_per_iter.<m>``.
    """
    K, S, k_lo = int(params["K"]), int(params["S"]), int(params.get("k_lo", 1000))
    eta0 = float(params.get("eta0", 0.5))
    methods = params.get("methods", list(M.STOCHASTIC_METHODS))
    may_diverge = params.get("may_diverge", [])
    rows, metrics, arrays = [], {"K": K, "S": S, "k_lo": k_lo}, {}
    steps = log_steps(K)
    for inst, name, pparams, seeds in _instances(params):
        problem = make_problem(name, seed=seeds[0], **pparams)
        dist0 = float(np.sum((problem.z0 - problem.z_star) ** 2))
        gens = seeding.spawn(ctx.seed, len(methods), ctx.name, inst)
        out = {k: {} for k in ("slope", "slope_se", "max_dist_ratio", "final_mean_h", "calls_per_iter")}
        for method, rng in zip(methods, gens):
            trace = M.run_stochastic(method, problem, K, n_runs=S, seed=rng, eta0=eta0)
            _check_diverged(trace, method, inst, may_diverge)
            h, dist = trace.mean_grad_norm_sq, trace.mean_dist_sq
            if trace.diverged_at is None:
                out["slope"][method] = loglog_slope(h, k_lo, K)
                out["slope_se"][method] = jackknife_se(trace.grad_norm_sq_runs,
                                                       lambda mean: loglog_slope(mean, k_lo, K))
                out["max_dist_ratio"][method] = float(np.max(dist) / dist0)
                out["final_mean_h"][method] = float(h[-1])
            out["calls_per_iter"][method] = float(trace.oracle_calls[-1] - trace.oracle_calls[0]) / max(K, 1)
            _trace_rows(rows, method, 0, steps, inst, mean_grad_norm_sq=h, mean_dist_sq=dist)
            arrays[f"{inst}__{method}__h"], arrays[f"{inst}__{method}__dist"] = h, dist
            ctx.log(f"{inst} {method}: S={S}, K={K}")
        if {"seg", "sog"} <= set(out["slope"]):
            out["slope"]["min_seg_sog"] = min(out["slope"]["seg"], out["slope"]["sog"])
        metrics[inst] = out
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, metrics


# ---------------------------------------------------------------------------------------------------- pep
def _fit_slope(N, tau) -> float:
    x, y = np.log(np.asarray(N, dtype=float)), np.log(np.asarray(tau, dtype=float))
    return float(np.polyfit(x, y, 1)[0])


def pep(params: dict, ctx: RunContext):
    """PEPit worst case tau(N) of ||F(z_N)||^2 for GOMA-D, OG (step 0.5, no anchor) and FEG (harness check).

    Metrics: ``pep.tau.<m>.N<N>``, ``pep.status.<m>.N<N>``, ``pep.slope.<m>`` (least squares of log tau
    against log N over ``fit_N``), ``pep.feg_rel_dev`` = max_N |N^2 tau_FEG(N)/4 - 1|, ``pep.solver``.
    """
    solver = params.get("solver", "CLARABEL")
    fit_N = [int(n) for n in params["fit_N"]]
    rows, tau, status = [], {}, {}
    for method, Ns in params["N"].items():
        tau[method], status[method] = {}, {}
        for N in Ns:
            start = time.perf_counter()
            value, stat = worst_case_with_status(method, int(N), solver=solver)
            tau[method][f"N{N}"], status[method][f"N{N}"] = value, stat
            rows.append({"method": method, "seed": 0, "step": int(N), "metric": "tau", "value": value})
            ctx.log(f"{method} N={N}: tau={value:.6g} ({stat}, {time.perf_counter() - start:.1f} s)")
    slopes = {}
    for method in tau:
        if method == "feg":
            continue
        missing = [N for N in fit_N if f"N{N}" not in tau[method]]
        if missing:
            raise ValueError(f"fit_N {missing} not among the N of method {method!r}")
        slopes[method] = _fit_slope(fit_N, [tau[method][f"N{N}"] for N in fit_N])
    metrics = {"pep": {"tau": tau, "status": status, "slope": slopes, "solver": solver, "fit_N": fit_N}}
    if "feg" in tau:
        metrics["pep"]["feg_rel_dev"] = max(abs(int(k[1:]) ** 2 * v / 4.0 - 1.0) for k, v in tau["feg"].items())
    ctx.record(solver=solver)
    return rows, metrics


# -------------------------------------------------------------------------------------------- performance
def _time_iterations(method: str, problem, n_iter: int, params: dict, repeats: int) -> float:
    """Median wall time of ``n_iter`` iterations of the bare method (no monitoring, no counter)."""
    for _z in M.iterates(method, problem.operator, problem.z0, min(n_iter, 50), params):  # warm-up
        pass
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _z in M.iterates(method, problem.operator, problem.z0, n_iter, params):
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _linear_system(problem):
    """(M, q) of a linear operator F(z) = M z + q, read off the operator."""
    d = problem.dim
    q = problem.operator(np.zeros(d))
    return (problem.operator(np.eye(d)) - q).T.copy(), q


def performance(params: dict, ctx: RunContext):
    """Oracle calls and wall time to reach h_k <= eps h_0, time per 1e4 calls (GOMA vs EG), and GOMA's time to
    the smallest eps against ``np.linalg.solve`` for z*, all in this one run (BLAS pinned to one thread).
    Each method gets ``max_calls`` oracle calls (an instance may set its own ``max_calls``).

    metrics.json holds only the deterministic part (calls, ratios of calls); wall times go to
    ``timings.json`` and provenance.json, since they change from run to run.
    """
    max_calls, repeats = int(params["max_calls"]), int(params.get("repeats", 5))
    eps_list = [float(e) for e in params["eps"]]
    methods = params.get("methods", list(M.DETERMINISTIC_METHODS))
    per_calls = int(params.get("per_calls", 10000))
    rows, calls_metrics, timings = [], {}, {}
    budgets = {}
    for inst, name, pparams, seeds in _instances(params):
        problem = make_problem(name, seed=seeds[0], **pparams)
        budgets[inst] = int(params["instances"][inst].get("max_calls", max_calls))
        calls_metrics[inst], timings[inst] = {}, {}
        for method in methods:
            rparams = M.resolve_steps(method, problem.L)
            trace = M.run_deterministic(method, problem, _iterations_for_budget(method, budgets[inst]))
            calls_metrics[inst][method], timings[inst][method] = {}, {}
            for eps in eps_list:
                key = f"eps{eps:.0e}".replace("-0", "-")
                k = first_reach(trace.grad_norm_sq, eps)
                calls = None if k is None else int(trace.oracle_calls[k])
                rows.append({"method": method, "seed": seeds[0], "step": len(trace.grad_norm_sq) - 1 if k is None
                             else k, "metric": f"calls_to_{key}", "value": np.nan if k is None else calls,
                             "instance": inst})
                if k is None:
                    calls_metrics[inst][method][key] = "not reached"
                    continue
                calls_metrics[inst][method][key] = calls
                timings[inst][method][key] = _time_iterations(method, problem, k, rparams, repeats)
        ctx.log(f"{inst}: calls and time to eps for {len(methods)} methods")
        for method in ("goma", "eg"):
            rparams = M.resolve_steps(method, problem.L)
            n_iter = _iterations_for_budget(method, per_calls)
            timings[inst][f"time_per_{per_calls}_calls_{method}"] = _time_iterations(method, problem, n_iter,
                                                                                   rparams, repeats)
        try:
            Mat, q = _linear_system(problem)
        except Exception:  # pragma: no cover - nonlinear instances have no direct solve
            continue
        reps = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(20):
                np.linalg.solve(Mat, -q)
            reps.append((time.perf_counter() - start) / 20)
        timings[inst]["direct_solve"] = statistics.median(reps)
    ratios = {}
    for inst, by_method in calls_metrics.items():
        for other in ("eag_c", "feg"):
            for key, calls in by_method.get("goma", {}).items():
                theirs = by_method.get(other, {}).get(key)
                if isinstance(calls, int) and isinstance(theirs, int):
                    ratios.setdefault(inst, {})[f"calls_goma_over_{other}_{key}"] = calls / theirs
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(timings=timings)
    metrics = {"performance": {"calls_to_eps": calls_metrics, "ratios": ratios, "max_calls": budgets,
                               "repeats": repeats, "per_calls": per_calls}}
    return rows, metrics


# ---------------------------------------------------------------------------------------------- stability
def _grid_key(x: float) -> str:
    return f"{int(round(100 * x)):03d}"


def stability(params: dict, ctx: RunContext):
    """Converged/diverged over a (gamma L, eta L) grid for GOMA on one instance, K iterations.

    A run counts as converged when it did not diverge and h_K <= h_0. Metrics:
    ``stability.converged.g<gL*100>_e<eL*100>`` and ``stability.largest_stable_eta.g<gL*100>`` (0 if none).
    """
    K = int(params["K"])
    inst = params["instance"]
    problem = make_problem(inst["problem"], seed=int(inst.get("seed", 0)), **inst.get("params", {}))
    converged, largest, rows = {}, {}, []
    for gL in params["gamma_L"]:
        largest[f"g{_grid_key(gL)}"] = 0.0
        for eL in params["eta_L"]:
            trace = M.run_deterministic("goma", problem, K, gamma=gL / problem.L, eta=eL / problem.L,
                                        allow_eta_gt_gamma=True)
            h = trace.grad_norm_sq
            ok = trace.diverged_at is None and bool(h[-1] <= h[0])
            converged[f"g{_grid_key(gL)}_e{_grid_key(eL)}"] = ok
            if ok:
                largest[f"g{_grid_key(gL)}"] = max(largest[f"g{_grid_key(gL)}"], float(eL))
            rows.append({"method": "goma", "seed": int(inst.get("seed", 0)), "step": K, "metric": "converged",
                         "value": float(ok), "gamma_L": gL, "eta_L": eL})
        ctx.log(f"gamma L = {gL}: largest stable eta L = {largest[f'g{_grid_key(gL)}']}")
    return rows, {"stability": {"converged": converged, "largest_stable_eta": largest, "K": K,
                                "gamma_L": list(params["gamma_L"]), "eta_L": list(params["eta_L"])}}


EXPERIMENTS = {"deterministic": deterministic, "budget": budget, "stochastic": stochastic, "pep": pep,
               "performance": performance, "stability": stability}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
