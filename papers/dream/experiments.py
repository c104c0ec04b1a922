"""Experiments of the dream reproduction (spec "Experiments by scale").

``python -m papers.dream.experiments NAME --config papers/dream/config.yaml --scale quick --out DIR`` with NAME
one of ``quadratic`` (D1, D2, D4), ``quadratic_grid`` (M in {3, 5}, d in {20, 100}), ``speedup`` (D3), ``rate_joint`` (D3: the joint
fit of the rate in N and T at the step c sqrt(N/T) on a stochastic non-convex task), ``rho_sweep`` (D5), ``multidigits`` (D6, D6b, round
cost), ``qp_timing`` (the weight QP against cvxpy/quadprog), and at full scale (tiny at smoke) ``ablation``
and ``pareto_front``. Whole traces for the figures go to
``traces.npz``; wall times go to ``timings.json`` and provenance.json, never to metrics.json.
"""
from __future__ import annotations

import time

import numpy as np

from shared.experiment import RunContext, main
from shared.results import mean_and_se, write_arrays, write_metrics
from shared.timing import alternating_least_cpu

from papers.dream.aggregation import dream_weights
from papers.dream.algorithms import rate_step, run_dream_batched, run_quadratic
from papers.dream.problems import LogQuadraticFederation, QuadraticFederation

__all__ = ["EXPERIMENTS", "quadratic", "quadratic_grid", "speedup", "rate_joint", "rho_sweep", "multidigits", "qp_timing",
           "ablation", "pareto_front", "resolve_correction", "hypervolume_2d", "torchjd_direction", "fit_rate_exponents",
           "fit_product_exponent", "momentum_noise_factor", "theory_step_constant"]


def resolve_correction(spec, M: int):
    """Correction from a config entry: None, "pcgrad", {"preference": w} (A = w 1^T), {"priority": pi}
    (A = diag(pi)) or a nested list (M x M)."""
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, dict):
        if "preference" in spec:
            return np.outer(np.asarray(spec["preference"], dtype=float), np.ones(M))
        if "priority" in spec:
            return np.diag(np.asarray(spec["priority"], dtype=float))
        raise ValueError(f"unknown correction spec {spec!r}")
    return np.asarray(spec, dtype=float)


def _run_kwargs(run: dict, M: int) -> dict:
    kw = {k: v for k, v in run.items() if k not in ("method",)}
    if "correction" in kw:
        kw["correction"] = resolve_correction(kw["correction"], M)
    return kw


def _instances(params: dict, **overrides):
    base = dict(n_clients=params["n_clients"], n_tasks=params["n_tasks"], dim=params["dim"])
    base.update(overrides)
    for s in params["instance_seeds"]:
        yield int(s), QuadraticFederation.random(seed=int(s), **base)


def _trace_rows(rows, method, seed, values, metric, every=1, **extra):
    for t in range(0, len(values), every):
        rows.append({"method": method, "seed": seed, "step": t, "metric": metric, "value": float(values[t]), **extra})


# ----------------------------------------------------------------------------------------------- quadratic
def quadratic(params: dict, ctx: RunContext):
    """Setup (a): deterministic heterogeneous quadratics; every configured run on every instance.

    Metrics: ``d1.{dream_max, fmgda_min, nocv_min}`` (sqrt S(x_T), max over instances for the run "dream",
    min for "fmgda" and "dream_no_cv"); ``d2.rate`` (worst exp(q) with q the slope of log sqrt S(x_t) on
    the fit window, run "dream") and ``d2.rate_by_instance``; ``d4.ca.<run>`` (mean relative CA distance over
    rounds 0..ca_rounds-1, averaged over instances) and ``d4.ratio`` = dream / min(dream_no_cv, fmgda);
    ``final_sqrt_s.<run>`` (mean over instances); ``bytes_up_per_round.<run>``. With a run "fedcmoo":
    ``d1.fedcmoo_min`` and ``d4.ratio_fedcmoo`` = dream / fedcmoo.
    """
    runs = params["runs"]
    lo, hi = params.get("fit_window", [20, 120])
    ca_rounds = int(params.get("ca_rounds", 50))
    M = int(params["n_tasks"])
    rows, arrays = [], {}
    final, rate, ca, bytes_up = {}, {}, {}, {}
    for seed, problem in _instances(params):
        for name, run in runs.items():
            kw = _run_kwargs(run, M)
            kw.setdefault("rounds", int(params["rounds"]))
            res = run_quadratic(problem, run["method"], seed=seed, **kw)
            sq = np.sqrt(res["stationarity"])
            final.setdefault(name, []).append(float(sq[-1]))
            if sq.size > hi:
                t = np.arange(lo, hi + 1)
                q = np.polyfit(t, np.log(np.maximum(sq[lo:hi + 1], 1e-300)), 1)[0]
                rate.setdefault(name, {})[f"i{seed}"] = float(np.exp(q))
            ca.setdefault(name, []).append(float(np.nanmean(res["ca_distance"][:ca_rounds]))
                                           if np.any(np.isfinite(res["ca_distance"][:ca_rounds])) else 0.0)
            bytes_up[name] = float(res["bytes_up"].mean())
            arrays[f"{name}__i{seed}__sqrt_s"] = sq
            arrays[f"{name}__i{seed}__ca"] = res["ca_distance"]
            _trace_rows(rows, name, seed, sq, "sqrt_stationarity", every=int(params.get("csv_every", 1)))
        ctx.log(f"instance {seed}: {len(runs)} runs")
    metrics = {"final_sqrt_s": {k: float(np.mean(v)) for k, v in final.items()},
               "d4": {"ca": {k: float(np.mean(v)) for k, v in ca.items()}},
               "bytes_up_per_round": bytes_up, "rounds": int(params["rounds"])}
    metrics["d1"] = {"dream_max": max(final["dream"]), "fmgda_min": min(final["fmgda"]),
                     "nocv_min": min(final["dream_no_cv"])}
    if "fedcmoo" in final:
        metrics["d1"]["fedcmoo_min"] = min(final["fedcmoo"])
    if "dream" in rate:
        metrics["d2"] = {"rate": max(rate["dream"].values()), "rate_by_instance": rate["dream"],
                         "fit_window": [int(lo), int(hi)]}
        if "dream_no_cv" in rate:   # control: the same loop without drift correction stalls (exp(q) near 1)
            metrics["d2"]["rate_no_cv"] = max(rate["dream_no_cv"].values())
    c4 = metrics["d4"]["ca"]
    metrics["d4"]["ratio"] = c4["dream"] / min(c4["dream_no_cv"], c4["fmgda"])
    if "fedcmoo" in c4:
        metrics["d4"]["ratio_fedcmoo"] = c4["dream"] / c4["fedcmoo"]
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, metrics


# ------------------------------------------------------------------------------------------------- speedup
def speedup(params: dict, ctx: RunContext):
    """Setup (b): IID noisy quadratics (noise_std), DREAM with momentum; time-averaged S over t > T/2 for each
    number of clients N, averaged over the instance seeds (the run seed equals the instance seed).

    Metrics: ``avg_s.N<N>``, ``slope`` (least squares of log avg_s on log N), ``slope_by_seed`` (the same
    fit per seed), ``slope_per_seed`` (their list) and ``slope_se`` (their standard error). ``controls``
    ({name: {method: ..., run options}}) repeat the sweep for another method under ``control.<name>``. At a
    constant step the time-averaged S is a variance floor proportional to eta/N for any unbiased averaged
    method, so slope -1 is expected of FedAvg as well; the abstract's O(1/sqrt(NT)) rate corresponds to -1/2 on
    the rate with a step tuned to sqrt(N/T).
    """
    T = int(params["rounds"])
    Ns = [int(n) for n in params["n_clients_list"]]
    run = params.get("run", {})
    rows, metrics = _speedup_for(params, "dream", run, T, Ns, ctx)
    for name, ctrl in params.get("controls", {}).items():   # e.g. FedAvg on the uniform scalarisation
        ctrl = dict(ctrl)
        method = ctrl.pop("method")
        crows, cmet = _speedup_for(params, method, ctrl, T, Ns, ctx)
        rows += crows
        metrics.setdefault("control", {})[name] = cmet
    return rows, metrics


def _speedup_for(params, method, run, T, Ns, ctx):
    """Time-averaged S over t > T/2 per N for one method; the log-log slope on N (mean and per seed)."""
    rows, avg, per_seed = [], {}, {}
    for N in Ns:
        vals = []
        for s in params["instance_seeds"]:
            problem = QuadraticFederation.random(N, int(params["n_tasks"]), int(params["dim"]), iid=True,
                                                 noise_std=float(params["noise_std"]), seed=int(s))
            res = run_quadratic(problem, method, rounds=T, seed=int(s), **run)
            v = float(res["stationarity"][T // 2 + 1:].mean())
            vals.append(v)
            per_seed.setdefault(int(s), []).append(v)
            rows.append({"method": method, "seed": int(s), "step": N, "metric": "time_avg_stationarity", "value": v})
        avg[f"N{N}"] = float(np.mean(vals))
        ctx.log(f"{method} N={N}: {avg[f'N{N}']:.4g}")
    slope = float(np.polyfit(np.log(Ns), np.log([avg[f"N{N}"] for N in Ns]), 1)[0])
    by_seed = {f"s{s}": float(np.polyfit(np.log(Ns), np.log(v), 1)[0]) for s, v in per_seed.items()}
    _, se = mean_and_se(list(by_seed.values()))
    return rows, {"avg_s": avg, "slope": slope, "slope_by_seed": by_seed, "slope_se": se, "n_clients": Ns,
                  "rounds": T, "slope_per_seed": list(by_seed.values()), "method": method}


# ---------------------------------------------------------------------------------------------- rate_joint
def fit_rate_exponents(n_clients, rounds, values):
    """Least squares of log S = a + b log N + c log T over the points (N_j, T_j, S_j); returns (a, b, c)."""
    N, T, S = (np.asarray(v, dtype=float).ravel() for v in (n_clients, rounds, values))
    if not (N.size == T.size == S.size) or N.size < 3:
        raise ValueError("n_clients, rounds and values need the same size, at least 3")
    if np.any(S <= 0) or np.any(N <= 0) or np.any(T <= 0):
        raise ValueError("n_clients, rounds and values must be > 0")
    X = np.column_stack([np.ones_like(N), np.log(N), np.log(T)])
    if np.linalg.matrix_rank(X) < 3:
        raise ValueError("the (N, T) design must vary both N and T")
    coef = np.linalg.lstsq(X, np.log(S), rcond=None)[0]
    return float(coef[0]), float(coef[1]), float(coef[2])


def fit_product_exponent(n_clients, rounds, values):
    """Least squares of log S = a + e log(N T); returns (a, e)."""
    N, T, S = (np.asarray(v, dtype=float).ravel() for v in (n_clients, rounds, values))
    e, a = np.polyfit(np.log(N * T), np.log(S), 1)
    return float(a), float(e)


def momentum_noise_factor(local_steps: int, momentum: float) -> float:
    """nu = sum_k w_k^2 / K^2 with w_k the weight of the k-th local stochastic gradient in y^K - x^t (in
    units of eta_l; the w_k sum to K): DREAM-R's EMA momentum, reset every round. The variance of one
    client's round displacement is nu eta^2 sigma^2 for eta = K eta_l; nu = 1/K without momentum."""
    K, beta = int(local_steps), float(momentum)
    w = np.zeros(K)
    for j in range(K):            # v^{j+1} = sum_k coef_k g^k
        coef = np.zeros(K)
        coef[0] = beta ** j if j > 0 else 1.0
        for k in range(1, j + 1):
            coef[k] = (1.0 - beta) * beta ** (j - k)
        w += coef
    return float(np.sum(w ** 2) / K ** 2)


def theory_step_constant(delta: float, smoothness: float, sigma2: float, nu: float) -> float:
    """c minimising the non-convex SGD bound 2 Delta / (eta T) + L eta nu sigma^2 / N over eta = c sqrt(N/T):
    c* = sqrt(2 Delta / (L nu sigma^2)); both terms then equal sqrt(2 Delta L nu sigma^2) / sqrt(N T)."""
    return float(np.sqrt(2.0 * delta / (smoothness * nu * sigma2)))


def rate_joint(params: dict, ctx: RunContext):
    """D3 as the abstract states it: the O(1/sqrt(NT)) rate at the step eta = c sqrt(N/T), fitted jointly in
    N and T on a stochastic non-convex task.

    Task: :class:`LogQuadraticFederation` (f_m = log(1 + q_m), two tasks, IID clients, ``noise_std`` N(0, I)
    gradient noise per call), blocks drawn by ``QuadraticFederation.random(..., iid=True,
    seed=instance_seed)``, start x0_j = x0_scale (-1)^j. DREAM-R (K = ``local_steps``, momentum, A = I,
    rho = 0, full participation) with eta_g = 1 and eta_l = eta / K. For every N in ``n_clients_list`` and
    T in ``rounds_list``, ``n_seeds`` independent runs; the measure is the mean of S(x_t) over t = 0..T-1
    (exact gradients), i.e. E S at a uniformly random iterate, as the non-convex rate bounds it.

    c: ``step_constant`` when given, else min(c*, c_stab) with c* = :func:`theory_step_constant` (Delta =
    max_m F_m(x0) - inf F_m, inf F_m = 0; L = max lambda_max(H); sigma^2 = noise_std^2 d / M, the variance
    of the uniformly weighted noise; nu = :func:`momentum_noise_factor`) and c_stab = 1 / (L sqrt(N_max /
    T_min)) (largest step of the sweep at most 1/L). Computed before any run.

    Metrics: per variant (DREAM-R at the top level, ``control.<name>`` for each entry of ``controls``):
    ``n_exponent_per_seed``, ``t_exponent_per_seed`` (joint least squares per seed), ``nt_exponent_per_seed``
    (exponent of N T as the single regressor), their means and standard errors, ``avg_s.N<N>_T<T>`` (mean over
    seeds) and ``fit_mean`` (the fits on the seed-mean of log S). Controls: ``{server: one_client}`` (the
    server moves to one client's update, no averaging) and ``{fixed_step: true}`` (eta = c sqrt(N_max /
    T_min) for every N and T, the sweep's largest step held constant).
    """
    Ns = [int(n) for n in params["n_clients_list"]]
    Ts = [int(t) for t in params["rounds_list"]]
    B = int(params["n_seeds"])
    M, d = int(params.get("n_tasks", 2)), int(params["dim"])
    K, beta = int(params["local_steps"]), float(params.get("momentum", 0.0))
    noise = float(params["noise_std"])
    make = dict(eig_range=tuple(params.get("eig_range", (0.5, 2.0))),
                center_offset=float(params.get("center_offset", 0.5)),
                heterogeneity=float(params.get("heterogeneity", 0.5)), iid=True, noise_std=noise,
                seed=int(params.get("instance_seed", 0)))
    x0 = float(params.get("x0_scale", 1.0)) * (-1.0) ** np.arange(d)
    ref = LogQuadraticFederation.random(1, M, d, **make)
    delta = float(ref.task_values(x0).max())
    L = ref.smoothness()
    sigma2 = noise ** 2 * d / M
    nu = momentum_noise_factor(K, beta)
    c_theory = theory_step_constant(delta, L, sigma2, nu)
    c_stab = 1.0 / (L * np.sqrt(max(Ns) / min(Ts)))
    c = float(params["step_constant"]) if "step_constant" in params else min(c_theory, c_stab)
    eta_max = float(rate_step(c, max(Ns), min(Ts)))
    ctx.log(f"c = {c:.4g} (theory {c_theory:.4g}, stability cap {c_stab:.4g}); Delta {delta:.4g}, L {L:.4g}, "
            f"sigma^2 {sigma2:.4g}, nu {nu:.4g}; largest step {eta_max:.4g}")
    variants = {"dream": {}, **params.get("controls", {})}
    rows, out, arrays = [], {}, {}
    for name, var in variants.items():
        server = var.get("server", "mean")
        fixed = bool(var.get("fixed_step", False))
        avg = np.empty((len(Ns), len(Ts), B))
        for i, N in enumerate(Ns):
            problem = LogQuadraticFederation.random(N, M, d, **make)
            for j, T in enumerate(Ts):
                eta = eta_max if fixed else float(rate_step(c, N, T))
                res = run_dream_batched(problem, rounds=T, lr_local=eta / K, n_replicas=B, local_steps=K,
                                        momentum=beta, server=server, x0=x0,
                                        seed=ctx.generator("rate_joint", name, f"N{N}", f"T{T}"))
                avg[i, j] = res["stationarity"][:T].mean(axis=0)
                for b in range(B):
                    rows.append({"method": name, "seed": b, "step": T, "metric": "avg_stationarity",
                                 "value": float(avg[i, j, b]), "n_clients": N, "rounds": T, "eta": eta})
        NN, TT = np.meshgrid(Ns, Ts, indexing="ij")
        fits = [fit_rate_exponents(NN, TT, avg[:, :, b]) for b in range(B)]
        prods = [fit_product_exponent(NN, TT, avg[:, :, b]) for b in range(B)]
        mean_log = np.exp(np.log(avg).mean(axis=2))
        fa, fb, fc = fit_rate_exponents(NN, TT, mean_log)
        pa, pe = fit_product_exponent(NN, TT, mean_log)
        met = {"server": server, "fixed_step": fixed,
               "n_exponent_per_seed": [f[1] for f in fits], "t_exponent_per_seed": [f[2] for f in fits],
               "nt_exponent_per_seed": [p[1] for p in prods],
               "avg_s": {f"N{N}_T{T}": float(avg[i, j].mean()) for i, N in enumerate(Ns) for j, T in enumerate(Ts)},
               "fit_mean": {"intercept": fa, "n_exponent": fb, "t_exponent": fc, "nt_intercept": pa,
                            "nt_exponent": pe}}
        for key in ("n_exponent", "t_exponent", "nt_exponent"):
            met[key], met[key + "_se"] = mean_and_se(met[key + "_per_seed"])
        out[name] = met
        arrays[f"{name}__avg_s"] = avg
        ctx.log(f"{name}: N exponent {met['n_exponent']:.3f} +- {met['n_exponent_se']:.3f}, T exponent "
                f"{met['t_exponent']:.3f} +- {met['t_exponent_se']:.3f}, NT exponent {met['nt_exponent']:.3f}")
    arrays["n_clients"], arrays["rounds"] = np.asarray(Ns, dtype=float), np.asarray(Ts, dtype=float)
    write_arrays(ctx.out_dir / "rate.npz", **arrays)
    metrics = {**out.pop("dream"), "control": out,
               "measure": "mean of S(x_t) over t = 0..T-1 (exact gradients): E S at a uniformly random iterate",
               "c": c, "c_theory": c_theory, "c_stability": float(c_stab), "step_max": eta_max,
               "constants": {"delta": delta, "smoothness": L, "sigma2": sigma2, "momentum_noise_factor": nu,
                             "local_steps": K, "momentum": beta},
               "n_clients": Ns, "rounds": Ts, "n_seeds": B, "dim": d}
    return rows, metrics


# ----------------------------------------------------------------------------------------------- rho_sweep
def rho_sweep(params: dict, ctx: RunContext):
    """Setup (c): DREAM for each rho on the instances of (a). Metrics per rho (key ``r<index>``):
    ``lam_dev`` = mean over instances of |lam_{1,T} - 1/2|, ``dist_ls`` = mean ||x_T - x_LS||;
    ``max_increase`` = largest increase of either series between consecutive rho (<= 0 when both are
    non-increasing); ``dist_ls_last`` at the largest rho."""
    rhos = [float(r) for r in params["rhos"]]
    T = int(params["rounds"])
    run = params.get("run", {})
    rows, lam_dev, dist = [], {}, {}
    for k, rho in enumerate(rhos):
        ld, dl = [], []
        for seed, problem in _instances(params):
            res = run_quadratic(problem, "dream", rounds=T, rho=rho, seed=seed, **run)
            ld.append(abs(res["weights"][-1, 0] - 0.5))
            dl.append(float(np.linalg.norm(res["x"][-1] - problem.scalarized_minimizer())))
            rows.append({"method": "dream", "seed": seed, "step": k, "metric": "lam_dev", "value": ld[-1], "rho": rho})
            rows.append({"method": "dream", "seed": seed, "step": k, "metric": "dist_ls", "value": dl[-1], "rho": rho})
        lam_dev[f"r{k}"], dist[f"r{k}"] = float(np.mean(ld)), float(np.mean(dl))
    seq_l = [lam_dev[f"r{k}"] for k in range(len(rhos))]
    seq_d = [dist[f"r{k}"] for k in range(len(rhos))]
    inc = max([b - a for a, b in zip(seq_l[:-1], seq_l[1:])] + [b - a for a, b in zip(seq_d[:-1], seq_d[1:])])
    return rows, {"rhos": rhos, "lam_dev": lam_dev, "dist_ls": dist, "max_increase": float(inc),
                  "dist_ls_last": seq_d[-1], "rounds": T}


# ------------------------------------------------------------------------------------------- quadratic_grid
def quadratic_grid(params: dict, ctx: RunContext):
    """More objectives and dimensions: heterogeneous quadratics for every (M, d) in ``grid`` (N =
    ``n_clients``, T = ``rounds``), every configured run on every instance seed.

    Metrics: ``final_sqrt_s.<M>x<d>.<run>`` = max over instances of sqrt S(x_T) for the DREAM runs (method
    "dream"), min over instances for the others (a floor); ``dream_max`` = the max of the DREAM runs over the
    grid; ``baseline_min`` = the min of the other runs over the grid (mgda_central excluded: it is exact);
    ``ca.<M>x<d>.<run>`` = mean relative CA distance over rounds 0..ca_rounds-1, mean over instances;
    ``ca_ratio.<M>x<d>`` = the run "dream" over the smallest baseline (needs runs named "dream" and at least
    one baseline) and ``ca_ratio_max`` its max over the grid.
    """
    T = int(params["rounds"])
    runs = params["runs"]
    ca_rounds = int(params.get("ca_rounds", 50))
    rows, final, arrays, ca, ca_ratio = [], {}, {}, {}, {}
    dream_vals, base_vals = [], []
    for M, d in params["grid"]:
        key = f"{int(M)}x{int(d)}"
        vals, cas = {}, {}
        for seed in params["instance_seeds"]:
            problem = QuadraticFederation.random(int(params["n_clients"]), int(M), int(d), seed=int(seed))
            for name, run in runs.items():
                kw = _run_kwargs(run, int(M))
                kw.setdefault("rounds", T)
                res = run_quadratic(problem, run["method"], seed=int(seed), **kw)
                sq = np.sqrt(res["stationarity"])
                vals.setdefault(name, []).append(float(sq[-1]))
                ca_t = res["ca_distance"][:ca_rounds]
                cas.setdefault(name, []).append(float(np.nanmean(ca_t)) if np.any(np.isfinite(ca_t)) else 0.0)
                arrays[f"{name}__{key}__i{seed}__sqrt_s"] = sq
                _trace_rows(rows, name, int(seed), sq, "sqrt_stationarity", every=int(params.get("csv_every", 1)),
                            n_tasks=int(M), dim=int(d))
        final[key] = {}
        ca[key] = {name: float(np.mean(v)) for name, v in cas.items()}
        base_ca = [v for n, v in ca[key].items() if runs[n]["method"] not in ("dream", "mgda_central")]
        ca_ratio[key] = ca[key]["dream"] / min(base_ca)
        for name, v in vals.items():
            method = runs[name]["method"]
            final[key][name] = max(v) if method == "dream" else min(v)
            if method == "dream":
                dream_vals.append(final[key][name])
            elif method != "mgda_central":
                base_vals.append(final[key][name])
        ctx.log(f"M x d = {key}: " + ", ".join(f"{k} {v:.3g}" for k, v in final[key].items()))
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    return rows, {"final_sqrt_s": final, "dream_max": max(dream_vals), "baseline_min": min(base_vals),
                  "ca": ca, "ca_ratio": ca_ratio, "ca_ratio_max": max(ca_ratio.values()),
                  "grid": [[int(M), int(d)] for M, d in params["grid"]], "rounds": T,
                  "runs": {k: v["method"] for k, v in runs.items()}}


# --------------------------------------------------------------------------------------------- multidigits
def _torch_setup():
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


def _md_kwargs(params: dict, drop=()) -> dict:
    kw = {k: v for k, v in params.items()
          if k not in ("methods", "last_evals", "method_overrides", "seeds", "dirichlet_alphas", "variants",
                       "preferences", "hv_reference", *drop)}
    if "correction" in kw:
        kw["correction"] = resolve_correction(kw["correction"], int(kw.get("n_tasks", 2)))
    return kw


def _alpha(value) -> float:
    return float("inf") if value in ("inf", ".inf", None) else float(value)


def _alpha_key(value) -> str:
    a = _alpha(value)
    return "inf" if np.isinf(a) else f"{a:g}".replace(".", "p")


def multidigits(params: dict, ctx: RunContext):
    """Setup (d): MultiDigits, Dirichlet(alpha_D) clients; every method with the same data, model and K,
    for every seed in ``seeds`` (default [seed]) and every alpha_D in ``dirichlet_alphas`` (default
    [dirichlet_alpha]; "inf" = IID).

    Metrics (first alpha_D): ``acc.<method>`` (mean over tasks of the test accuracy, mean of the last
    ``last_evals`` evaluations, in percent, mean over seeds) with ``acc_se.<method>``, ``acc_by_task.<method>``,
    paired margins ``margin.dream_minus_<m>`` with ``margin_se``; every alpha: ``acc_by_alpha.<a>.<method>``;
    ``bytes_per_client_round.<method>.<category>``. Wall time per round: timings.json.
    """
    _torch_setup()
    from papers.dream.training import run_multidigits

    methods = params["methods"]
    last = int(params.get("last_evals", 3))
    seeds = [int(s) for s in params.get("seeds", [params.get("seed", 0)])]
    alphas = params.get("dirichlet_alphas", [params.get("dirichlet_alpha", 0.1)])
    kw = _md_kwargs(params, drop=("seed", "dirichlet_alpha"))
    rows, bpcr, timings, arrays = [], {}, {}, {}
    acc_runs = {}   # (alpha key, method) -> list over seeds of (mean acc, per-task acc)
    settings = [(a_val, seed, m) for a_val in alphas for seed in seeds for m in methods]
    for a_val, seed, m in ctx.progress(settings, total=len(settings), what="alpha x seed x method"):
        ak = _alpha_key(a_val)
        extra = dict(params.get("method_overrides", {}).get(m, {}))
        algo = extra.pop("method", m)   # a named variant, e.g. {dream_beta0: {method: dream, momentum: 0}}
        start = time.perf_counter()
        res = run_multidigits(algo, dirichlet_alpha=_alpha(a_val), seed=seed, **{**kw, **extra})
        wall = time.perf_counter() - start
        a = res["test_accuracy"]
        acc_runs.setdefault((ak, m), []).append((float(a[-last:].mean()), a[-last:].mean(axis=0)))
        bpcr[m] = res["bytes_per_client_round"]
        timings.setdefault(m, []).append(res["train_seconds"] / int(kw["rounds"]))
        if a_val == alphas[0] and seed == seeds[0]:
            arrays[f"{m}__round"] = res["round"]
            arrays[f"{m}__acc"] = a
            arrays[f"{m}__loss"] = res["test_loss"]
            arrays[f"{m}__weights"] = res["weights"]
        for r, row in zip(res["round"], a):
            rows.append({"method": m, "seed": seed, "step": int(r), "metric": "test_accuracy_mean",
                         "value": float(row.mean()), "dirichlet_alpha": ak})
        ctx.log(f"alpha {ak} seed {seed} {m}: acc {acc_runs[(ak, m)][-1][0]:.2f} in {wall:.1f} s")
    a0 = _alpha_key(alphas[0])
    acc, acc_se, acc_task = {}, {}, {}
    for m in methods:
        vals = [v for v, _ in acc_runs[(a0, m)]]
        acc[m], acc_se[m] = mean_and_se(vals)
        acc_task[m] = [float(v) for v in np.mean([t for _, t in acc_runs[(a0, m)]], axis=0)]
    margins, margins_se = {}, {}
    if "dream" in methods:
        for m in methods:
            if m == "dream":
                continue
            diffs = [d - o for (d, _), (o, _) in zip(acc_runs[(a0, "dream")], acc_runs[(a0, m)])]
            margins[f"dream_minus_{m}"], margins_se[f"dream_minus_{m}"] = mean_and_se(diffs)
    paired = {f"{a}_minus_{b}": [x - y for (x, _), (y, _) in zip(acc_runs[(a0, a)], acc_runs[(a0, b)])]
              for a in methods for b in methods if a != b}
    by_alpha = {_alpha_key(a): {m: float(np.mean([v for v, _ in acc_runs[(_alpha_key(a), m)]])) for m in methods}
                for a in alphas}
    tim = {m: {"train_s_per_round": float(np.median(v))} for m, v in timings.items()}
    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    write_metrics(tim, ctx.out_dir / "timings.json")
    ctx.record(timings=tim)
    return rows, {"acc": acc, "acc_se": acc_se, "acc_by_task": acc_task, "margin": margins, "margin_se": margins_se,
                  "paired": paired, "paired_mean": {k: float(np.mean(v)) for k, v in paired.items()},
                  "acc_per_seed": {m: [v for v, _ in acc_runs[(a0, m)]] for m in methods},
                  "acc_by_alpha": by_alpha, "bytes_per_client_round": bpcr, "rounds": int(kw["rounds"]),
                  "seeds": seeds}


def ablation(params: dict, ctx: RunContext):
    """MultiDigits ablations of DREAM-R: each entry of ``variants`` (method + overrides, e.g. momentum 0,
    no control variates, rho, correction, clients_per_round, n_tasks) over ``seeds``.

    Metrics: ``acc.<variant>`` (mean-task test accuracy, last ``last_evals`` evaluations, mean over seeds) and
    ``acc_se.<variant>``.
    """
    _torch_setup()
    from papers.dream.training import run_multidigits

    last = int(params.get("last_evals", 3))
    seeds = [int(s) for s in params.get("seeds", [0])]
    base = _md_kwargs(params, drop=("seed",))
    if "dirichlet_alpha" in base:
        base["dirichlet_alpha"] = _alpha(base["dirichlet_alpha"])
    rows, acc, acc_se = [], {}, {}
    for name, variant in params["variants"].items():
        variant = dict(variant)
        method = variant.pop("method", "dream")
        M = int(variant.get("n_tasks", base.get("n_tasks", 2)))
        if "correction" in variant:
            variant["correction"] = resolve_correction(variant["correction"], M)
        vals = []
        for seed in seeds:
            res = run_multidigits(method, seed=seed, **{**base, **variant})
            vals.append(float(res["test_accuracy"][-last:].mean()))
            rows.append({"method": name, "seed": seed, "step": int(res["round"][-1]), "metric": "test_accuracy_mean",
                         "value": vals[-1]})
        acc[name], acc_se[name] = mean_and_se(vals)
        ctx.log(f"{name}: {acc[name]:.2f}")
    return rows, {"acc": acc, "acc_se": acc_se, "seeds": seeds, "variants": list(params["variants"])}


def hypervolume_2d(points, reference) -> float:
    """Area dominated by a set of 2-D loss points (minimisation) and bounded by ``reference``."""
    pts = sorted((float(a), float(b)) for a, b in points if a < reference[0] and b < reference[1])
    hv, best_b = 0.0, float(reference[1])
    for a, b in pts:
        if b < best_b:
            hv += (reference[0] - a) * (best_b - b)
            best_b = b
    return hv


def pareto_front(params: dict, ctx: RunContext):
    """DREAM-R with A = w 1^T (linear scalarisation) for each preference w = (k/10, 1 - k/10) on MultiDigits.

    Metrics: ``loss.<k>`` = [task-1, task-2] final test loss, ``hypervolume`` against ``hv_reference``.
    """
    _torch_setup()
    from papers.dream.training import run_multidigits

    base = _md_kwargs(params)
    if "dirichlet_alpha" in base:
        base["dirichlet_alpha"] = _alpha(base["dirichlet_alpha"])
    ref = [float(v) for v in params.get("hv_reference", [2.5, 2.5])]
    rows, losses, arrays = [], {}, {}
    for k, w in enumerate(params["preferences"]):
        w = np.asarray(w, dtype=float)
        res = run_multidigits("dream", correction=np.outer(w, np.ones(2)), **base)
        losses[f"p{k}"] = [float(v) for v in res["test_loss"][-1]]
        rows.append({"method": "dream", "seed": int(base.get("seed", 0)), "step": k, "metric": "loss_task1",
                     "value": losses[f"p{k}"][0]})
        rows.append({"method": "dream", "seed": int(base.get("seed", 0)), "step": k, "metric": "loss_task2",
                     "value": losses[f"p{k}"][1]})
    arrays["preferences"] = np.asarray(params["preferences"], dtype=float)
    arrays["losses"] = np.array(list(losses.values()))
    write_arrays(ctx.out_dir / "front.npz", **arrays)
    return rows, {"loss": losses, "hypervolume": hypervolume_2d(losses.values(), ref), "hv_reference": ref}


# ----------------------------------------------------------------------------------------------- qp_timing
def _torchjd_mgda(C: np.ndarray, settings: dict):
    """torchjd's MGDA weighting (Frank-Wolfe, Sener & Koltun 2018, Algorithm 2) on the Gramian C C^T in
    float64, as a callable returning the weights; None when torchjd is not installed."""
    try:
        import torch
        from torchjd.aggregation import MGDAWeighting
    except ImportError:
        return None
    weighting = MGDAWeighting(epsilon=float(settings["epsilon"]), max_iters=int(settings["max_iters"]))
    J = torch.from_numpy(np.ascontiguousarray(C, dtype=np.float64))

    def f():
        return weighting(J @ J.T).numpy()
    return f


def torchjd_direction(C: np.ndarray, epsilon: float, max_iters: int):
    """Direction of ``torchjd.aggregation.MGDA(epsilon, max_iters)`` on the Jacobian C (M x d), float64;
    None when torchjd is not installed."""
    try:
        import torch
        from torchjd.aggregation import MGDA
    except ImportError:
        return None
    return MGDA(epsilon=float(epsilon), max_iters=int(max_iters))(torch.from_numpy(
        np.ascontiguousarray(C, dtype=np.float64))).numpy()


def _qp_solvers(C: np.ndarray, rho: float, params_torchjd=None):
    """Callables (name -> f() returning weights) for the same QP: own code, cvxpy (Clarabel, OSQP), torchjd's
    MGDA weighting (rho = 0 only, when ``params_torchjd`` is given and torchjd is installed) and quadprog
    when installed. Each one starts from C (M x d), so every timing includes forming the QP. A cvxpy backend
    whose status is not "optimal" returns None (no solution)."""
    import cvxpy as cp

    from shared.solvers import solve

    M = C.shape[0]
    lam = cp.Variable(M)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(C.T @ lam) + 0.5 * rho * cp.sum_squares(lam)),
                      [lam >= 0, cp.sum(lam) == 1])

    def by_cvxpy(backend, **opts):
        def f():   # None when the backend reports no optimal solution (e.g. OSQP declaring the QP infeasible)
            result = solve(prob, solver=backend, **opts)
            return np.asarray(lam.value, dtype=float) if result.status == "optimal" and lam.value is not None else None
        return f

    out = {"own": lambda: dream_weights(C, rho=rho)[0],
           "cvxpy_clarabel": by_cvxpy("CLARABEL"),
           "cvxpy_osqp": by_cvxpy("OSQP", eps_abs=1e-10, eps_rel=1e-10, polish=True, max_iter=200000)}
    tj = _torchjd_mgda(C, params_torchjd) if params_torchjd is not None else None
    if tj is not None:
        out["torchjd_mgda"] = tj
    try:
        import quadprog

        def qp():
            Q = C @ C.T + (rho + 1e-12) * np.eye(M)   # quadprog needs a strictly PD matrix
            Cm = np.hstack([np.ones((M, 1)), np.eye(M)])
            return quadprog.solve_qp(Q, np.zeros(M), Cm, np.r_[1.0, np.zeros(M)], meq=1)[0]
        out["quadprog"] = qp
    except ImportError:
        pass
    return out


def qp_timing(params: dict, ctx: RunContext):
    """Weight QP for each (M, d): the same random C (rows N(0, I_d)) for every solver. The solvers of one size
    are timed together by :func:`shared.timing.alternating_least_cpu` in process CPU time (BLAS on one thread):
    each measurement batches ``number`` calls so that it lasts at least ``min_seconds`` (single calls of the own
    solver and quadprog take microseconds), every round measures each solver once, in turn, so that load from
    other processes reaches all of them alike, and the least of ``rounds`` measurements per call is kept.
    With ``torchjd: {epsilon, max_iters}``, torchjd's MGDA (Frank-Wolfe) joins the solvers and its
    aggregated direction is compared with ours: ``torchjd.max_rel_direction_diff`` = max over sizes of
    ||d_torchjd - d_own|| / ||d_own||, ``torchjd.max_weight_diff``, and the same direction difference at
    torchjd's default settings (epsilon 1e-3, 100 iterations) for reference (null metrics when torchjd is
    not installed).

    Metrics (deterministic): ``max_weight_diff.<M>x<d>.<solver>`` = max |lam_solver - lam_own| (null when the
    solver returned no solution, listed in ``solver_failures``) and ``max_weight_diff_all`` (max over the
    library solvers' solutions). Microseconds per call (``us_per_call.<M>x<d>.<solver>`` and
    ``ratio_own_over_clarabel``), ``rounds``, ``min_seconds`` and the calls per measurement (``number``) go to
    timings.json.
    """
    rho = float(params.get("rho", 0.0))
    rounds, min_seconds = int(params.get("rounds", 5)), float(params.get("min_seconds", 0.05))
    tj_set = params.get("torchjd")
    if tj_set is not None and rho != 0.0:
        raise ValueError("torchjd's MGDA has no regulariser: set rho = 0 or drop the torchjd entry")
    rng = ctx.generator("C")
    diffs, timings, number, rows, tj_dir, tj_dir_default, failures = {}, {}, {}, [], {}, {}, []
    for M, d in params["sizes"]:
        C = rng.standard_normal((int(M), int(d)))
        key = f"{M}x{d}"
        solvers = _qp_solvers(C, rho, tj_set)
        ref, ref_dir = dream_weights(C, rho=rho)
        diffs[key], timings[key] = {}, {}
        if "torchjd_mgda" in solvers:
            for store, (eps, it) in ((tj_dir, (tj_set["epsilon"], tj_set["max_iters"])), (tj_dir_default, (1e-3, 100))):
                v = torchjd_direction(C, eps, it)
                store[key] = float(np.linalg.norm(v - ref_dir) / np.linalg.norm(ref_dir))
        for name, f in solvers.items():
            lam = f()
            if name != "own":
                solved = lam is not None and bool(np.all(np.isfinite(lam)))
                diffs[key][name] = float(np.abs(lam - ref).max()) if solved else None
                if not solved:
                    failures.append({"size": key, "solver": name})
                    ctx.log(f"{key}: {name} returned no solution (its time to give up is still timed)")
            if diffs[key].get(name, 0.0) is not None:
                rows.append({"method": name, "seed": 0, "step": int(M), "metric": f"max_weight_diff_d{d}",
                             "value": diffs[key].get(name, 0.0)})
        timed = alternating_least_cpu(solvers, rounds, min_seconds=min_seconds)
        timings[key].update({name: 1e6 * sec for name, sec in timed["seconds"].items()})
        number[key] = timed["number"]
        timings[key]["ratio_own_over_clarabel"] = timings[key]["own"] / timings[key]["cvxpy_clarabel"]
        ctx.log(f"{key}: " + ", ".join(f"{k} {v:.4g}" for k, v in timings[key].items()))
    write_metrics({"us_per_call": timings, "rounds": rounds, "min_seconds": min_seconds, "number": number},
                  ctx.out_dir / "timings.json")
    ctx.record(qp_us_per_call=timings)
    tj = None
    if tj_dir:
        tj = {"rel_direction_diff": tj_dir, "max_rel_direction_diff": max(tj_dir.values()),
              "max_weight_diff": max(diffs[k]["torchjd_mgda"] for k in tj_dir
                                     if diffs[k]["torchjd_mgda"] is not None),
              "rel_direction_diff_default_settings": tj_dir_default,
              "epsilon": float(tj_set["epsilon"]), "max_iters": int(tj_set["max_iters"])}
    elif tj_set is not None:
        tj = {"max_rel_direction_diff": None, "max_weight_diff": None}   # torchjd not installed
    return rows, {"max_weight_diff": diffs,
                  "max_weight_diff_all": max(v for dd in diffs.values() for k, v in dd.items()
                                             if k != "torchjd_mgda" and v is not None),
                  "solvers": sorted({k for dd in diffs.values() for k in dd}), "torchjd": tj,
                  "solver_failures": failures}


def conflict_digits(params: dict, ctx: RunContext):
    """ConflictDigits: tasks that compete for a narrow shared trunk, Delta-m%, hypervolume and gradient conflict;
    DREAM-R against FedAvg-LS, SCAFFOLD-LS, FSMGDA, FedCMOO and FedMGDA+ (see :mod:`papers.dream.conflict`)."""
    import papers.dream.conflict as conflict_module

    return conflict_module.conflict_digits(params, ctx)


EXPERIMENTS = {"quadratic": quadratic, "quadratic_grid": quadratic_grid, "speedup": speedup, "rate_joint": rate_joint,
               "rho_sweep": rho_sweep,
               "multidigits": multidigits,
               "qp_timing": qp_timing, "ablation": ablation, "pareto_front": pareto_front,
               "conflict_digits": conflict_digits}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
