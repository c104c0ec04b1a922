"""Experiments of the goma reproduction (spec "Experiments by scale").

``python -m papers.goma.experiments NAME --config papers/goma/config.yaml --scale quick --out DIR``, with NAME
one of ``deterministic``, ``budget``, ``stochastic``, ``stochastic_p1``, ``pep``, ``performance``, ``stability``. Each function
takes the params of its config block and returns (tidy rows, metrics); whole traces for the figures are
written next to them as ``.npz`` files.
"""
from __future__ import annotations

import time

import numpy as np

from shared import seeding
from shared.experiment import RunContext, main
from shared.results import write_arrays, write_metrics
from shared.timing import alternating_least_cpu

from papers.goma import methods as M
from papers.goma.metrics import first_reach, loglog_slope, rate_envelope
from papers.goma.pep import worst_case_with_status
from papers.goma.problems import make_problem, with_state_dependent_noise

__all__ = ["EXPERIMENTS", "log_steps", "deterministic", "comonotone_block", "budget", "stochastic", "stochastic_p1", "pep",
           "performance", "stability"]


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
def theorem1_ratio(grad_norm_sq, L: float, dist0_sq: float) -> float:
    """max_k ||F(z_k)||^2 (k+6)^2 / (L^2 ||z_0 - z*||^2) over the finite entries; Theorem 1 bounds it by 264.
    A diverged run keeps its entries up to the divergence (they exceed 1e20 h_0), so its ratio is huge."""
    h = np.asarray(grad_norm_sq, dtype=float)
    k = np.arange(h.size, dtype=float)
    keep = np.isfinite(h)
    return float(np.max(h[keep] * (k[keep] + 6.0) ** 2) / (float(L) ** 2 * float(dist0_sq)))


def _instance_K(spec: dict, K: int) -> int:
    return int(spec.get("K", K))


def deterministic(params: dict, ctx: RunContext):
    """Deterministic variants (``methods.VARIANTS``) on every instance and seed; h_k at every k.

    Metrics: ``<instance>.slope.<v>`` (mean over seeds of the log-log slope on [k_lo, K]) with
    ``<instance>.slope_se.<v>``; ``p1.slope.min_eg_og``; ``envelope.max.<v>`` = max over runs of
    max_k k^2 h_k / (L^2 ||z_0 - z*||^2); ``theorem1.max.<v>`` = max over runs of max_k (k+6)^2 h_k / (L^2
    ||z_0 - z*||^2) (Theorem 1: <= 264 for goma_t1) and ``theorem1.runs.<instance>_s<seed>.<v>``;
    ``calls_per_iter.<v>`` (from the call counter). Diverged runs (listed in ``may_diverge``) have no slope.
    An optional ``comonotone`` block runs its ``methods`` on one nonmonotone, negatively comonotone instance
    (see :func:`comonotone_block`); it is kept out of every aggregate above.
    """
    K, k_lo = int(params["K"]), int(params.get("k_lo", 100))
    methods = params.get("methods", list(M.DETERMINISTIC_METHODS))
    may_diverge = params.get("may_diverge", [])
    rows, slopes, envelopes, thm1, calls_per_iter, arrays = [], {}, {}, {}, {}, {}
    for inst, name, pparams, seeds in _instances(params):
        Ki = _instance_K(params["instances"][inst], K)
        steps = log_steps(Ki)
        for seed in seeds:
            problem = make_problem(name, seed=seed, **pparams)
            dist0 = float(np.sum((problem.z0 - problem.z_star) ** 2))
            for method in methods:
                trace = M.run_variant(method, problem, Ki)
                _check_diverged(trace, method, inst, may_diverge, f" (seed {seed}, steps {trace.params})")
                h = trace.grad_norm_sq
                if trace.diverged_at is None:
                    slopes.setdefault(inst, {}).setdefault(method, []).append(loglog_slope(h, k_lo, Ki))
                    envelopes.setdefault(f"{inst}_s{seed}", {})[method] = rate_envelope(h, problem.L, dist0)
                thm1.setdefault(f"{inst}_s{seed}", {})[method] = theorem1_ratio(h, problem.L, dist0)
                if trace.diverged_at is None:
                    calls_per_iter.setdefault(method, set()).add(trace.calls_per_iter)
                _trace_rows(rows, method, seed, steps, inst, grad_norm_sq=np.where(np.isfinite(h), h, np.nan),
                            oracle_calls=trace.oracle_calls)
                if seed == seeds[0]:
                    arrays[f"{inst}__{method}__h"] = h
                    arrays[f"{inst}__{method}__calls"] = trace.oracle_calls
            ctx.log(f"{inst} seed {seed}: {len(methods)} methods, K={Ki}")
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
        "max": {m: max(run[m] for run in envelopes.values() if m in run)
                for m in methods if any(m in run for run in envelopes.values())},
        "runs": envelopes,
    }
    metrics["theorem1"] = {"max": {m: max(run[m] for run in thm1.values()) for m in methods}, "runs": thm1,
                           "constant": 264.0}
    for m, values in calls_per_iter.items():
        if len(values) != 1:
            raise RuntimeError(f"method {m!r} made a varying number of oracle calls per iteration: {values}")
    metrics["calls_per_iter"] = {m: values.pop() for m, values in calls_per_iter.items()}
    if "comonotone" in params:
        metrics["comonotone"] = comonotone_block(params["comonotone"], rows, k_lo)
        ctx.log(f"comonotone instance: {len(metrics['comonotone']['diverged'])} methods")
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, metrics


def comonotone_block(spec: dict, rows: list, k_lo: int) -> dict:
    """The named variants ``spec["methods"]`` for ``spec["K"]`` iterations on one instance that is not monotone
    (``problems.comonotone_linear``: rho-comonotone, rho < 0), where the monotone methods may diverge and
    RAIN++ (built for rho >= -1/(2L)) should not. Divergence here is an outcome, not an error.

    Returns ``rho``, ``K``, ``diverged.<v>`` (bool), ``diverged_at.<v>`` (-1 if not), ``ratio.<v>`` = h_K / h_0
    and ``slope.<v>`` (log-log, [k_lo, K]) for the runs that did not diverge; adds tidy rows (instance "co")."""
    K = int(spec["K"])
    pparams = dict(spec.get("params", {}))
    problem = make_problem(spec.get("problem", "comonotone_linear"), seed=int(spec.get("seed", 0)), **pparams)
    out = {"rho": float(pparams.get("rho", -1.0 / 3.0)), "K": K, "diverged": {}, "diverged_at": {}, "ratio": {},
           "slope": {}}
    steps = log_steps(K)
    for method in spec["methods"]:
        trace = M.run_variant(method, problem, K)
        h = trace.grad_norm_sq
        out["diverged"][method] = trace.diverged_at is not None
        out["diverged_at"][method] = -1 if trace.diverged_at is None else int(trace.diverged_at)
        if trace.diverged_at is None:
            out["ratio"][method] = float(h[-1] / h[0])
            out["slope"][method] = loglog_slope(h, k_lo, K)
        _trace_rows(rows, method, 0, steps, "co", grad_norm_sq=np.where(np.isfinite(h), h, np.nan),
                    oracle_calls=trace.oracle_calls)
    return out


# ------------------------------------------------------------------------------------------------- budget
def _iterations_for_budget(method: str, budget: int) -> int:
    """Iterations that use exactly ``budget`` oracle calls: B-1 for one-call methods (plus the initial
    call: GOMA, OG, anchored Popov, E-Halpern), B/2 for two-call methods (EG, EAG-C, FEG, RAIN, Nesterov-type EG,
    and RAIN++, whose iteration is one inner EG step)."""
    base = M.VARIANTS[method][0] if method in M.VARIANTS else method
    if base == "goma":
        base = "og"
    return budget - 1 if base in ("anchored_popov", "og", "e_halpern") else budget // 2


def budget(params: dict, ctx: RunContext):
    """Equal oracle budget B on one instance: h at B calls for every variant.

    Metrics: ``budget.h.<v>`` and the ratios ``budget.ratio.<v>_over_<w>`` for the pairs in ``ratios``.
    """
    B = int(params["B"])
    if B < 2 or B % 2:
        raise ValueError(f"B must be an even integer >= 2, got {B}")
    methods = params.get("methods", list(M.DETERMINISTIC_METHODS))
    problem = make_problem(params["problem"], seed=int(params.get("seed", 0)), **params.get("params", {}))
    rows, h_at_budget, arrays = [], {}, {}
    for method in methods:
        n_iter = _iterations_for_budget(method, B)
        trace = M.run_variant(method, problem, n_iter)
        _check_diverged(trace, method, params["problem"], params.get("may_diverge", []))
        if int(trace.oracle_calls[-1]) != B:
            raise RuntimeError(f"method {method!r} used {trace.oracle_calls[-1]} oracle calls, not B={B}")
        h_at_budget[method] = float(trace.grad_norm_sq[-1])
        _trace_rows(rows, method, 0, log_steps(n_iter), params["problem"], grad_norm_sq=trace.grad_norm_sq,
                    oracle_calls=trace.oracle_calls)
        arrays[f"{method}__h"], arrays[f"{method}__calls"] = trace.grad_norm_sq, trace.oracle_calls
    ratios = {f"{a}_over_{b}": h_at_budget[a] / h_at_budget[b] for a, b in params.get("ratios", [])}
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, {"budget": {"B": B, "h": h_at_budget, "ratio": ratios}}


# --------------------------------------------------------------------------------------------- stochastic
def _key(x: float) -> str:
    return f"{float(x):g}".replace(".", "p")


def _per_seed(runs: np.ndarray, seeds: int) -> np.ndarray:
    """(n_runs, K+1) per-trajectory values -> (seeds, K+1) means over each seed's group of trajectories."""
    n_runs = runs.shape[0]
    return runs.reshape(seeds, n_runs // seeds, -1).mean(axis=1)


def _theorem4_summary(trace, seeds: int, k_lo: int, K: int, L: float, kappa: float, sigma: float,
                      dist0: float) -> dict:
    """Per-seed statistics of one Theorem-4 run: slope of E h_k on [k_lo, K], E h_K, E h_K sqrt(K+1) / (the
    Theorem-4 constant), max_k E||x_k - x*||^2 / ||x_0 - x*||^2, the same at k = K, and E||x_K - x*||^2 /
    max_k E||x_k - x*||^2 (how far the iterates come back after the noise has pushed them out)."""
    h = _per_seed(trace.grad_norm_sq_runs, seeds)
    dist = _per_seed(trace.dist_sq_runs, seeds)
    bound = M.theorem4_bound(L, kappa, dist0, sigma)
    return {"slope_per_seed": [loglog_slope(row, k_lo, K) for row in h],
            "final_h_per_seed": [float(row[-1]) for row in h],
            "bound_ratio_per_seed": [float(row[-1] * np.sqrt(K + 1) / bound) for row in h],
            "max_dist_ratio_per_seed": [float(np.max(row) / dist0) for row in dist],
            "final_dist_ratio_per_seed": [float(row[-1] / dist0) for row in dist],
            "return_ratio_per_seed": [float(row[-1] / np.max(row)) for row in dist],
            "bound": bound}


def stochastic(params: dict, ctx: RunContext):
    """Theorem 4's single-call method under the state-dependent oracle, over a (kappa, sigma) sweep, with and
    without the anchor (the control), and with a linearly increasing minibatch, on the paper's games.

    ``seeds`` independent groups of ``S`` trajectories (an instance may set its own ``S``) run as one
    (seeds*S, d) array; each configuration has
    its own stream (experiment, instance, kappa, sigma, variant) of the root seed. Per-seed statistics are the
    means over a group. Metrics under ``t4.<instance>.k<kappa>.s<sigma>.<anchor|noanchor>[_minibatch]``:
    ``slope_per_seed``, ``final_h_per_seed``, ``bound_ratio_per_seed`` (E h_K sqrt(K+1) over Theorem 4's
    constant), ``max_dist_ratio_per_seed``, ``final_dist_ratio_per_seed``; and the summaries the claims read
    (``claims.*``, ``control.*``). ``baselines`` (SGDA, SEG, SOG, DSEG with their k^{-1/2}-type steps) run at
    the largest sigma and kappa = 1 for the figure.
    """
    K, S, n_seeds, k_lo = int(params["K"]), int(params["S"]), int(params["seeds"]), int(params["k_lo"])
    sigmas, kappas = [float(x) for x in params["sigmas"]], [float(x) for x in params["kappas"]]
    s_max, k_main = max(sigmas), kappas[0]
    minibatch_sigmas = [float(x) for x in params.get("minibatch_sigmas", [])]
    rows, arrays, out = [], {}, {}
    steps = log_steps(K)
    for inst, name, pparams, seeds in _instances(params):
        base = make_problem(name, seed=seeds[0], **pparams)
        dist0 = float(np.sum((base.z0 - base.z_star) ** 2))
        spec = params["instances"][inst]
        n_runs = n_seeds * int(spec.get("S", S))
        configs = [(kappa, sigma, anchor, "one") for kappa in spec.get("kappas", kappas)
                   for sigma in spec.get("sigmas", sigmas) for anchor in (True, False)]
        if inst == params.get("main", inst):
            configs += [(k_main, sigma, anchor, "linear") for sigma in minibatch_sigmas for anchor in (True, False)]
        res = out.setdefault(inst, {})
        for kappa, sigma, anchor, minibatch in ctx.progress(configs, total=len(configs),
                                                            what=f"{inst}: kappa x sigma x variant"):
            problem = with_state_dependent_noise(base, sigma=sigma, kappa=kappa)
            variant = ("anchor" if anchor else "noanchor") + ("_minibatch" if minibatch == "linear" else "")
            rng = seeding.generator(ctx.seed, ctx.name, inst, f"k{_key(kappa)}", f"s{_key(sigma)}", variant)
            trace = M.run_theorem4(problem, K, n_runs=n_runs, seed=rng, kappa=kappa, anchor=anchor,
                                   minibatch=minibatch)
            _check_diverged(trace, variant, inst, [])
            summary = _theorem4_summary(trace, n_seeds, k_lo, K, base.L, kappa, sigma, dist0)
            res.setdefault(f"k{_key(kappa)}", {}).setdefault(f"s{_key(sigma)}", {})[variant] = summary
            label = f"t4_{variant}_k{_key(kappa)}_s{_key(sigma)}"
            _trace_rows(rows, label, 0, steps, inst, mean_grad_norm_sq=trace.mean_grad_norm_sq,
                        mean_dist_sq=trace.mean_dist_sq)
            arrays[f"{inst}__{label}__h"], arrays[f"{inst}__{label}__dist"] = (trace.mean_grad_norm_sq,
                                                                              trace.mean_dist_sq)
            ctx.log(f"{inst} {variant} kappa={kappa:g} sigma={sigma:g}: slope "
                    f"{np.mean(summary['slope_per_seed']):.3f}, bound ratio {max(summary['bound_ratio_per_seed']):.3g}")
        if inst == params.get("main", inst):
            problem = with_state_dependent_noise(base, sigma=s_max, kappa=1.0)
            gens = seeding.spawn(ctx.seed, len(params.get("baselines", [])), ctx.name, inst, "baselines")
            for method, rng in zip(params.get("baselines", []), gens):
                trace = M.run_stochastic(method, problem, K, n_runs=n_runs, seed=rng, eta0=float(params.get(
                    "eta0", 0.5)))
                _check_diverged(trace, method, inst, params.get("may_diverge", []))
                h = trace.mean_grad_norm_sq
                res.setdefault("baselines", {})[method] = {"slope": loglog_slope(h, k_lo, K), "final_h": float(h[-1])}
                arrays[f"{inst}__{method}__h"], arrays[f"{inst}__{method}__dist"] = h, trace.mean_dist_sq
                _trace_rows(rows, method, 0, steps, inst, mean_grad_norm_sq=h, mean_dist_sq=trace.mean_dist_sq)
    main = params.get("main", next(iter(out)))
    top = out[main][f"k{_key(k_main)}"]
    sweep = [by_sigma[skey] for inst in out for kkey, by_sigma in out[inst].items() if kkey != "baselines"
             for skey in by_sigma]  # every (instance, kappa, sigma) configuration
    noise_ratio = {f"k{_key(k)}": float(np.mean(out[main][f"k{_key(k)}"][f"s{_key(s_max)}"]["anchor"]["final_h_per_seed"])
                                        / np.mean(out[main][f"k{_key(k)}"]["s0"]["anchor"]["final_h_per_seed"]))
                   for k in kappas} if 0.0 in sigmas else {}

    def sweep_max(variant):
        return [float(max(cfg[variant]["bound_ratio_per_seed"][i] for cfg in sweep if variant in cfg))
                for i in range(n_seeds)]

    claims = {"rate_per_seed": top[f"s{_key(s_max)}"]["anchor"]["slope_per_seed"],
              "rate_noise_off_per_seed": top["s0"]["anchor"]["slope_per_seed"] if 0.0 in sigmas else None,
              "bound_ratio_max_per_seed": sweep_max("anchor"),
              "noise_dominated_ratio": noise_ratio.get(f"k{_key(k_main)}"),
              "noise_dominated_ratio_by_kappa": noise_ratio,
              "return_ratio_per_seed": top[f"s{_key(s_max)}"]["anchor"]["return_ratio_per_seed"]}
    control = {"noanchor": {"rate_per_seed": top[f"s{_key(s_max)}"]["noanchor"]["slope_per_seed"],
                            "bound_ratio_max_per_seed": sweep_max("noanchor"),
                            "return_ratio_per_seed": top[f"s{_key(s_max)}"]["noanchor"]["return_ratio_per_seed"]}}
    if minibatch_sigmas:
        s_mb = max(minibatch_sigmas)
        claims["minibatch_rate_per_seed"] = top[f"s{_key(s_mb)}"]["anchor_minibatch"]["slope_per_seed"]
        control["noanchor"]["minibatch_rate_per_seed"] = top[f"s{_key(s_mb)}"]["noanchor_minibatch"]["slope_per_seed"]
    for inst in out:
        if inst != main:
            other = out[inst][f"k{_key(k_main)}"][f"s{_key(max(params['instances'][inst].get('sigmas', sigmas)))}"]
            claims[f"{inst}_rate_per_seed"] = other["anchor"]["slope_per_seed"]
            control["noanchor"][f"{inst}_rate_per_seed"] = other["noanchor"]["slope_per_seed"]
    metrics = {"K": K, "S": S, "seeds": n_seeds, "k_lo": k_lo, "sigmas": sigmas, "kappas": kappas,
               "main": main, "t4": out, "claims": claims, "control": control}
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, metrics


# ------------------------------------------------------------------------------------------ stochastic_p1
def _bound_ratio_sweep_max(out: dict, variant: str, instances, n_seeds: int) -> list:
    """Per seed, the largest Theorem-4 ratio E||F(x_N)||^2 sqrt(N+1) / (1570 L^2 kappa R^2 + 8 sigma^2/kappa) of
    ``variant`` over every (kappa, sigma) configuration of ``instances`` (Theorem 4: <= 1 for "anchor")."""
    cfgs = [by_sigma[skey] for inst in instances for kkey, by_sigma in out[inst].items() if kkey != "baselines"
            for skey in by_sigma if variant in by_sigma[skey]]
    if not cfgs:
        raise ValueError(f"no configuration of {variant!r} on the instances {list(instances)}")
    return [float(max(cfg[variant]["bound_ratio_per_seed"][i] for cfg in cfgs)) for i in range(n_seeds)]


def _theorem4_config(base, inst: str, kappa: float, sigma: float, anchor: bool, K: int, n_runs: int, n_seeds: int,
                     k_lo: int, dist0: float, ctx: RunContext):
    """One (kappa, sigma, anchor) run of Theorem 4's method on ``base`` with the state-dependent oracle: (variant,
    the per-seed summary of :func:`_theorem4_summary`, the trace). Its stream is (experiment, instance, kappa,
    sigma, variant) of the root seed."""
    problem = with_state_dependent_noise(base, sigma=sigma, kappa=kappa)
    variant = "anchor" if anchor else "noanchor"
    rng = seeding.generator(ctx.seed, ctx.name, inst, f"k{_key(kappa)}", f"s{_key(sigma)}", variant)
    trace = M.run_theorem4(problem, K, n_runs=n_runs, seed=rng, kappa=kappa, anchor=anchor)
    _check_diverged(trace, variant, inst, [])
    return variant, _theorem4_summary(trace, n_seeds, k_lo, K, base.L, kappa, sigma, dist0), trace


def stochastic_p1(params: dict, ctx: RunContext):
    """Theorem 4's method on our own instances (P1, the deterministic experiment's log-spectrum bilinear game),
    with and without the anchor, over each instance's (kappa, sigma) sweep: Theorem 4's bound
    E||F(x_N)||^2 sqrt(N+1) <= 1570 L^2 kappa R^2 + 8 sigma^2/kappa off the paper's games. The runs are those of
    :func:`stochastic` (same method, oracle and per-seed statistics; ``seeds`` groups of ``S`` trajectories);
    kept as a separate experiment so that the paper's games are not rerun.

    Metrics: ``t4.<instance>.k<kappa>.s<sigma>.<anchor|noanchor>`` as in :func:`stochastic`;
    ``claims.bound_ratio_max_per_seed_by_instance.<instance>`` (per seed, the largest ratio over the sweep),
    ``claims.<instance>_rate_per_seed`` (slope on [k_lo, K] at the instance's largest sigma and first kappa),
    and the same under ``control.noanchor``.
    """
    K, S, n_seeds, k_lo = int(params["K"]), int(params["S"]), int(params["seeds"]), int(params["k_lo"])
    if k_lo >= K:
        raise ValueError(f"k_lo ({k_lo}) must be below K ({K})")
    rows, arrays, out, claims, control = [], {}, {}, {}, {"noanchor": {}}
    steps = log_steps(K)
    for inst, name, pparams, seeds in _instances(params):
        spec = params["instances"][inst]
        sigmas, kappas = [float(x) for x in spec["sigmas"]], [float(x) for x in spec["kappas"]]
        base = make_problem(name, seed=seeds[0], **pparams)
        dist0 = float(np.sum((base.z0 - base.z_star) ** 2))
        configs = [(kappa, sigma, anchor) for kappa in kappas for sigma in sigmas for anchor in (True, False)]
        for kappa, sigma, anchor in ctx.progress(configs, total=len(configs), what=f"{inst}: kappa x sigma x variant"):
            variant, summary, trace = _theorem4_config(base, inst, kappa, sigma, anchor, K, n_seeds * int(spec.get(
                "S", S)), n_seeds, k_lo, dist0, ctx)
            out.setdefault(inst, {}).setdefault(f"k{_key(kappa)}", {}).setdefault(f"s{_key(sigma)}", {})[variant] = summary
            label = f"t4_{variant}_k{_key(kappa)}_s{_key(sigma)}"
            _trace_rows(rows, label, 0, steps, inst, mean_grad_norm_sq=trace.mean_grad_norm_sq,
                        mean_dist_sq=trace.mean_dist_sq)
            arrays[f"{inst}__{label}__h"], arrays[f"{inst}__{label}__dist"] = (trace.mean_grad_norm_sq,
                                                                              trace.mean_dist_sq)
            ctx.log(f"{inst} {variant} kappa={kappa:g} sigma={sigma:g}: slope "
                    f"{np.mean(summary['slope_per_seed']):.3f}, bound ratio {max(summary['bound_ratio_per_seed']):.3g}")
        top = out[inst][f"k{_key(kappas[0])}"][f"s{_key(max(sigmas))}"]
        for variant, where in (("anchor", claims), ("noanchor", control["noanchor"])):
            where.setdefault("bound_ratio_max_per_seed_by_instance", {})[inst] = _bound_ratio_sweep_max(
                out, variant, [inst], n_seeds)
            where[f"{inst}_rate_per_seed"] = top[variant]["slope_per_seed"]
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, {"K": K, "S": S, "seeds": n_seeds, "k_lo": k_lo, "t4": out, "claims": claims, "control": control}


# ---------------------------------------------------------------------------------------------------- pep
def _fit_slope(N, tau) -> float:
    x, y = np.log(np.asarray(N, dtype=float)), np.log(np.asarray(tau, dtype=float))
    return float(np.polyfit(x, y, 1)[0])


def pep(params: dict, ctx: RunContext):
    """PEPit worst case tau(N) of ||F(z_N)||^2 over monotone 1-Lipschitz F with ||z_0 - z*|| <= 1, for the
    variants and N of ``params["N"]`` (FEG as the harness check).

    Metrics: ``pep.tau.<m>.N<N>``, ``pep.status.<m>.N<N>``; ``pep.slope.<m>``, the least-squares slope of
    log tau(N) against log(N+6) over ``fit_N`` (Theorem 1's bound is 264/(N+6)^2) for the methods in
    ``fit``; ``pep.theorem1_ratio.<m>`` = max_N tau(N) (N+6)^2 (Theorem 1: <= 264);
    ``pep.theorem1_growth_last.<m>`` = (N+6)^2 tau(N) at the largest N over the same at the second largest (about 1
    once it has levelled off); ``pep.feg_rel_dev`` =
    max_N |N^2 tau_FEG(N)/4 - 1|; ``pep.solver``.
    """
    solver = params.get("solver", "CLARABEL")
    fit_N = [int(n) for n in params["fit_N"]]
    fit = params.get("fit", [m for m in params["N"] if m != "feg"])
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
    for method in fit:
        missing = [N for N in fit_N if f"N{N}" not in tau[method]]
        if missing:
            raise ValueError(f"fit_N {missing} not among the N of method {method!r}")
        slopes[method] = _fit_slope([N + 6 for N in fit_N], [tau[method][f"N{N}"] for N in fit_N])
    ratio = {m: max(v * (int(k[1:]) + 6) ** 2 for k, v in taus.items()) for m, taus in tau.items() if m != "feg"}
    growth = {}
    for m, taus in tau.items():
        Ns = sorted(int(k[1:]) for k in taus)
        if m != "feg" and len(Ns) >= 2:
            a, b = Ns[-2], Ns[-1]
            growth[m] = (taus[f"N{b}"] * (b + 6) ** 2) / (taus[f"N{a}"] * (a + 6) ** 2)
    metrics = {"pep": {"tau": tau, "status": status, "slope": slopes, "theorem1_ratio": ratio,
                       "theorem1_growth_last": growth, "solver": solver, "fit_N": fit_N}}
    if "feg" in tau:
        metrics["pep"]["feg_rel_dev"] = max(abs(int(k[1:]) ** 2 * v / 4.0 - 1.0) for k, v in tau["feg"].items())
    ctx.record(solver=solver)
    return rows, metrics


# -------------------------------------------------------------------------------------------- performance
def _resolved(variant: str, L: float) -> tuple[str, dict]:
    """(method, resolved parameters) of a named variant."""
    method, kwargs = M.variant_kwargs(variant, L)
    return method, M.resolve_steps(method, L, **kwargs)


def _bare_run(variant: str, problem, n_iter: int, resolved: tuple):
    """A callable that runs ``n_iter`` iterations of the bare method (no monitoring, no counter)."""
    method, params = resolved

    def run() -> None:
        for _z in M.iterates(method, problem.operator, problem.z0, n_iter, params):
            pass
    return run


def _linear_system(problem):
    """(M, q) of a linear operator F(z) = M z + q, read off the operator."""
    d = problem.dim
    q = problem.operator(np.zeros(d))
    return (problem.operator(np.eye(d)) - q).T.copy(), q


def _direct_solve(problem):
    """A callable that solves F(z) = 0 with ``np.linalg.solve``, or None for a nonlinear instance."""
    try:
        Mat, q = _linear_system(problem)
    except Exception:  # pragma: no cover - nonlinear instances have no direct solve
        return None
    rhs = -q
    return lambda: np.linalg.solve(Mat, rhs)


#: CPU seconds one measurement lasts at least (shorter calls are batched): long enough for the CPU clock, short
#: enough that batching the sub-millisecond direct solve and the millisecond runs to eps stays cheap.
MIN_MEASUREMENT_S = 0.02


def _timing_groups(goma: str, methods, reached: dict, per_calls: int) -> list:
    """Names of the timed functions of one instance, in the groups measured together by
    :func:`shared.timing.alternating_least_cpu`: GOMA's time to each eps next to the direct solve, the other
    methods' times to eps, and the time per ``per_calls`` oracle calls of GOMA and EG. ``reached`` maps each
    method to the eps keys it reaches."""
    head = ["direct_solve"] + [(goma, key) for key in reached.get(goma, [])]
    rest = [(m, key) for m in methods if m != goma for key in reached.get(m, [])]
    per = [f"time_per_{per_calls}_calls_{m}" for m in (goma, "eg")]
    return [group for group in (head, rest, per) if group]


def performance(params: dict, ctx: RunContext):
    """Oracle calls and time to reach h_k <= eps h_0, time per 1e4 calls (GOMA vs EG), and GOMA's time to
    each eps against ``np.linalg.solve`` for z*, all in this one run (BLAS pinned to one thread).
    Each method gets ``max_calls`` oracle calls (an instance may set its own ``max_calls``).

    Times are process CPU seconds of the bare method loop, measured by
    :func:`shared.timing.alternating_least_cpu` with ``repeats`` rounds: calls shorter than 20 ms are batched,
    the functions compared in a ratio are measured in turn in every round (GOMA's times to eps with the
    direct solve; GOMA with EG per 1e4 calls), and the least measurement of each is kept, so that other
    processes on the machine change the ratios little.

    metrics.json holds only the deterministic part (calls, ratios of calls); times go to ``timings.json`` and
    provenance.json, since they change from run to run.
    """
    max_calls, repeats = int(params["max_calls"]), int(params.get("repeats", 5))
    eps_list = [float(e) for e in params["eps"]]
    methods = params.get("methods", list(M.DETERMINISTIC_METHODS))
    per_calls = int(params.get("per_calls", 10000))
    goma = params.get("goma", "goma_t1")
    rows, calls_metrics, timings, batched = [], {}, {}, {}
    budgets = {}
    for inst, name, pparams, seeds in _instances(params):
        problem = make_problem(name, seed=seeds[0], **pparams)
        budgets[inst] = int(params["instances"][inst].get("max_calls", max_calls))
        calls_metrics[inst], timings[inst] = {}, {}
        fns, reached = {}, {}
        for method in methods:
            rparams = _resolved(method, problem.L)
            trace = M.run_variant(method, problem, _iterations_for_budget(method, budgets[inst]))
            calls_metrics[inst][method], timings[inst][method], reached[method] = {}, {}, []
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
                reached[method].append(key)
                fns[(method, key)] = _bare_run(method, problem, k, rparams)
        for method in (goma, "eg"):
            fns[f"time_per_{per_calls}_calls_{method}"] = _bare_run(
                method, problem, _iterations_for_budget(method, per_calls), _resolved(method, problem.L))
        solve = _direct_solve(problem)
        if solve is not None:
            fns["direct_solve"] = solve
        batched[inst] = {}
        for group in _timing_groups(goma, methods, reached, per_calls):
            group = [g for g in group if g in fns]
            if not group:
                continue
            result = alternating_least_cpu({g: fns[g] for g in group}, rounds=repeats,
                                           min_seconds=MIN_MEASUREMENT_S)
            for g in group:
                if isinstance(g, tuple):
                    timings[inst][g[0]][g[1]] = result["seconds"][g]
                    batched[inst][f"{g[0]}.{g[1]}"] = result["number"][g]
                else:
                    timings[inst][g] = result["seconds"][g]
                    batched[inst][g] = result["number"][g]
        ctx.log(f"{inst}: calls and CPU time to eps for {len(methods)} methods")
    ratios = {}
    for inst, by_method in calls_metrics.items():
        for other in ("eag_c", "feg"):
            for key, calls in by_method.get(goma, {}).items():
                theirs = by_method.get(other, {}).get(key)
                if isinstance(calls, int) and isinstance(theirs, int):
                    ratios.setdefault(inst, {})[f"calls_goma_over_{other}_{key}"] = calls / theirs
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(timings=timings, timing_method={"clock": "process CPU time", "statistic": "least over rounds",
                                               "rounds": repeats, "min_measurement_s": MIN_MEASUREMENT_S,
                                               "calls_per_measurement": batched})
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


EXPERIMENTS = {"deterministic": deterministic, "budget": budget, "stochastic": stochastic,
               "stochastic_p1": stochastic_p1, "pep": pep, "performance": performance, "stability": stability}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
