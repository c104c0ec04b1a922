"""Experiments of the success-conditioning reproduction (one function per experiment of the spec).

``python -m papers.success_conditioning.experiments NAME --config papers/success_conditioning/config.yaml
--scale quick --out results/quick/success_conditioning/NAME``

Random bandits and MDPs come from the streams "bandits" and "mdps" of the root seed, so the experiments
identity, improvement, trust_region, monte_carlo and perf see the same instances (prefixes of one list).
"""
from __future__ import annotations

import time

import numpy as np

from shared.experiment import RunContext, main
from shared.results import write_arrays
from shared.seeding import generator, spawn
from shared.timing import alternating_least_cpu, time_calls

from . import baselines as bl
from . import gridworld as gw
from .core import (beta_tail, chi2_divergence, chi2_trust_region, chi2_trust_region_cvxpy, failure_condition,
                   influence_terms, success_condition, threshold_bandit, threshold_decomposition)
from .mdp import (evaluate_policy, pdl_sum, pooled_success_condition, random_bandit, random_mdp,
                  rollout_estimate)


# ------------------------------------------------------------------------------------------------ helpers
def _bandits(seed: int, n: int):
    return [random_bandit(g) for g in spawn(seed, n, "bandits")]


def _mdps(seed: int, n: int, params: dict):
    kw = {"s_max": params.get("s_max", 6), "a_max": params.get("a_max", 5), "h_max": params.get("h_max", 5)}
    return [random_mdp(g, **kw) for g in spawn(seed, n, "mdps")]


def _row(method, seed, step, metric, value):
    return {"method": method, "seed": int(seed), "step": int(step), "metric": metric, "value": float(value)}


def _identity_gap(rel, chi2, infl) -> float:
    return float(np.max(np.maximum(np.abs(rel - chi2), np.abs(rel - infl))))


# ----------------------------------------------------------------------------------------------- identity
def run_identity(params: dict, ctx: RunContext):
    """relative improvement = chi2(pi+||pi) = action-influence at every (instance, h, s); pooled control."""
    rows, pts, pooled_pts = [], [], []
    gaps_b = []
    for i, (pi, q) in enumerate(_bandits(ctx.seed, params["n_bandits"])):
        t = influence_terms(pi, q)
        gap = _identity_gap(t["relative_improvement"], t["chi2"], t["action_influence"])
        gaps_b.append(gap)
        pts.append((t["action_influence"], t["relative_improvement"], t["chi2"]))
        rows.append(_row("bandit", i, 0, "identity_gap", gap))
    gaps_m, pooled_h2, pooled_h1 = [], [], []
    for i, m in enumerate(_mdps(ctx.seed, params["n_mdps"], params)):
        ev = evaluate_policy(m["P"], m["rho"], m["mu0"], m["pi"])
        t = influence_terms(m["pi"], ev["Q"], on_zero_value="keep")
        gap = _identity_gap(t["relative_improvement"], t["chi2"], t["action_influence"])
        gaps_m.append(gap)
        pts.extend(zip(t["action_influence"].ravel(), t["relative_improvement"].ravel(), t["chi2"].ravel()))
        rows.append(_row("mdp_sc", i, 0, "identity_gap", gap))
        # negative control: stationary pi, time-pooled SC policy evaluated against the per-step quantities
        pi_stat = np.broadcast_to(m["pi"][:1], m["pi"].shape).copy()
        ev_s = evaluate_policy(m["P"], m["rho"], m["mu0"], pi_stat)
        pooled = pooled_success_condition(pi_stat, ev_s)
        t_s = influence_terms(pi_stat, ev_s["Q"], on_zero_value="keep")
        V = ev_s["V"]
        rel = (np.sum(pooled * ev_s["Q"], axis=-1) - V) / V
        chi2 = np.asarray(chi2_divergence(pooled, pi_stat))
        gap_p = _identity_gap(rel, chi2, t_s["action_influence"])
        (pooled_h2 if m["pi"].shape[0] >= 2 else pooled_h1).append(gap_p)
        rows.append(_row("mdp_pooled", i, 0, "identity_gap", gap_p))
        if m["pi"].shape[0] >= 2:
            pooled_pts.extend(zip(t_s["action_influence"].ravel(), rel.ravel(), chi2.ravel()))
    pts, pooled_pts = np.array(pts), np.array(pooled_pts).reshape(-1, 3)
    write_arrays(ctx.out_dir / "identity_points.npz", sc=pts, pooled=pooled_pts)
    metrics = {
        "max_gap": max(max(gaps_b), max(gaps_m)), "max_gap_bandits": max(gaps_b), "max_gap_mdps": max(gaps_m),
        "pooled_max_gap": max(pooled_h2) if pooled_h2 else 0.0,
        "pooled_median_gap": float(np.median(pooled_h2)) if pooled_h2 else 0.0,
        "pooled_max_gap_h1": max(pooled_h1) if pooled_h1 else 0.0,
        "n_bandits": len(gaps_b), "n_mdps": len(gaps_m), "n_mdps_h2": len(pooled_h2), "n_points": len(pts),
    }
    return rows, metrics


# -------------------------------------------------------------------------------------------- improvement
def run_improvement(params: dict, ctx: RunContext):
    """J(pi+) - J(pi) >= 0 and equals the PDL sum; degenerate states do not move; bandit iterates."""
    rows, dj_all, pdl_all, fail_dj, pdl_wrong = [], [], [], [], []
    iter_err, iter_step = 0.0, np.inf
    k_iter = params.get("bandit_iterations", 20)
    for i, (pi, q) in enumerate(_bandits(ctx.seed, params["n_bandits"])):
        t = influence_terms(pi, q)
        dj = t["value_after"] - t["value"]
        pdl = t["value"] * t["action_influence"]  # d = 1, V I
        dj_all.append(dj)
        pdl_all.append(pdl)
        fail_dj.append(float(failure_condition(pi, q) @ q) - t["value"])
        pdl_wrong.append(pdl)  # one state: the behaviour occupancy and the new one coincide (d = 1)
        rows.append(_row("bandit", i, 0, "delta_J", dj))
        # iteration pi_k ~ pi_0 q^k, J_k = E[q^(k+1)] / E[q^k]
        p = pi.copy()
        J_prev = float(p @ q)
        for k in range(1, k_iter + 1):
            p = success_condition(p, q)
            J_k = float(p @ q)
            exact = float(pi @ q ** (k + 1)) / float(pi @ q ** k)
            iter_err = max(iter_err, abs(J_k - exact) / exact)
            iter_step = min(iter_step, J_k - J_prev)
            J_prev = J_k
    degenerate_chi2, degenerate_rel, pooled_dj = [], [], []
    for i, m in enumerate(_mdps(ctx.seed, params["n_mdps"], params)):
        P, rho, mu0, pi = m["P"], m["rho"], m["mu0"], m["pi"]
        ev = evaluate_policy(P, rho, mu0, pi)
        pi_plus = success_condition(pi, ev["Q"], on_zero_value="keep")
        ev_plus = evaluate_policy(P, rho, mu0, pi_plus)
        t = influence_terms(pi, ev["Q"], on_zero_value="keep")
        dj = ev_plus["J"] - ev["J"]
        pdl = pdl_sum(ev_plus["d"], ev["V"], t["action_influence"])
        dj_all.append(dj)
        pdl_all.append(pdl)
        fail_dj.append(evaluate_policy(P, rho, mu0, failure_condition(pi, ev["Q"], on_zero_value="keep"))["J"]
                       - ev["J"])
        pdl_wrong.append(pdl_sum(ev["d"], ev["V"], t["action_influence"]))  # control: behaviour occupancy
        rows.append(_row("mdp_sc", i, 0, "delta_J", dj))
        rows.append(_row("mdp_sc", i, 0, "pdl_sum", pdl))
        # degenerate state: P_h(.|s,a) identical across a, so Q_h(s,.) is constant
        H = P.shape[0]
        h, s = H // 2, 0
        P_deg = P.copy()
        P_deg[h, s, :, :] = P[h, s, 0, :]
        ev_d = evaluate_policy(P_deg, rho, mu0, pi)
        pi_plus_d = success_condition(pi, ev_d["Q"], on_zero_value="keep")
        degenerate_chi2.append(float(chi2_divergence(pi_plus_d[h, s], pi[h, s])))
        degenerate_rel.append(abs(float(pi_plus_d[h, s] @ ev_d["Q"][h, s]) / ev_d["V"][h, s] - 1.0))
        # pooled SC (not exact in finite horizon): can it lose performance?
        pi_stat = np.broadcast_to(pi[:1], pi.shape).copy()
        ev_s = evaluate_policy(P, rho, mu0, pi_stat)
        pooled = pooled_success_condition(pi_stat, ev_s)
        pooled_dj.append(evaluate_policy(P, rho, mu0, pooled)["J"] - ev_s["J"])
    dj_all, pdl_all = np.array(dj_all), np.array(pdl_all)
    write_arrays(ctx.out_dir / "improvement_points.npz", delta_J=dj_all, pdl=pdl_all)
    metrics = {
        "min_delta_J": float(dj_all.min()), "max_pdl_gap": float(np.max(np.abs(dj_all - pdl_all))),
        "degenerate_max_chi2": max(degenerate_chi2), "degenerate_max_relative_improvement": max(degenerate_rel),
        "bandit_iterate_max_rel_err": iter_err, "bandit_iterate_min_step": float(iter_step),
        "pooled_min_delta_J": float(min(pooled_dj)), "pooled_frac_decrease": float(np.mean(np.array(pooled_dj) < 0)),
        "n_instances": int(dj_all.size),
        "control": {"failure_conditioning": {"min_delta_J": float(min(fail_dj))},
                    "behaviour_occupancy": {"max_pdl_gap": float(np.max(np.abs(dj_all - np.array(pdl_wrong))))}},
    }
    return rows, metrics


# ------------------------------------------------------------------------------------------- trust region
def _global_problem(m):
    ev = evaluate_policy(m["P"], m["rho"], m["mu0"], m["pi"])
    A = m["pi"].shape[-1]
    pi, Q = m["pi"].reshape(-1, A), ev["Q"].reshape(-1, A)
    d, d_plus = ev["d"].ravel(), ev["d_plus"].ravel()
    return pi, Q, d, d_plus, bl.sc_budget(pi, Q, d_plus)


def run_trust_region(params: dict, ctx: RunContext):
    """SC = argmax of the chi2 trust region: local (per state, delta = I) and global (d+-weighted budget)."""
    rows = []
    local_err, local_cf_err, half_err, half_dist, half_num_dist = [], [], [], [], []
    bandits = _bandits(ctx.seed, params["n_bandits"])
    for i, (pi, q) in enumerate(bandits):
        infl = influence_terms(pi, q)["action_influence"]
        pi_plus = success_condition(pi, q)
        p_num = chi2_trust_region(pi, q, infl, solver="numeric")
        p_cf = chi2_trust_region(pi, q, infl)
        p_half = chi2_trust_region(pi, q, infl / 2)
        p_half_num = chi2_trust_region(pi, q, infl / 2, solver="numeric")
        local_err.append(np.abs(p_num - pi_plus).max())
        local_cf_err.append(np.abs(p_cf - pi_plus).max())
        half_err.append(np.abs(p_half_num - p_half).max())
        if infl >= params["min_influence"]:
            half_dist.append(np.abs(p_half - pi_plus).max())
            half_num_dist.append(np.abs(p_half_num - pi_plus).max())
        rows.append(_row("slsqp_local", i, 0, "sup_err_vs_sc", local_err[-1]))
        rows.append(_row("half_radius", i, 0, "sup_dist_to_sc", np.abs(p_half - pi_plus).max()))
    # path of trust-region maximisers for the figure: p(t) = pi max(0, 1 + t (q - m)), SC at t = 1/V
    chosen = [b for b in bandits if len(b[0]) >= 3][: params.get("n_path", 3)]
    n_pts = params.get("path_points", 60)
    path_delta, path_value, sc_point = [], [], []
    for pi, q in chosen:
        V = float(pi @ q)
        ts = np.linspace(0.0, 3.0 / V, n_pts)
        ps = np.vstack([bl.clipped_trust_region_rows(pi[None], q[None], np.array([t]))[0] for t in ts])
        path_delta.append(chi2_divergence(ps, np.broadcast_to(pi, ps.shape)))
        path_value.append(ps @ q)
        t_sc = influence_terms(pi, q)
        sc_point.append((t_sc["action_influence"], t_sc["value_after"], V))
    global_err, global_cf_err, global_cvx_err, global_half, unweighted = [], [], [], [], []
    backends, cvx_backends = set(), []
    for i, m in enumerate(_mdps(ctx.seed, params["n_mdps"], params)):
        pi, Q, d, d_plus, delta = _global_problem(m)
        pi_plus = success_condition(pi, Q, on_zero_value="keep")
        kw = {"obj_weights": d, "budget_weights": d_plus}
        p_cf = chi2_trust_region(pi, Q, delta, **kw)
        p_num = chi2_trust_region(pi, Q, delta, solver="numeric", **kw)
        global_cf_err.append(np.abs(p_cf - pi_plus).max())
        global_err.append(np.abs(p_num - pi_plus).max())
        global_half.append(np.abs(chi2_trust_region(pi, Q, delta / 2, **kw) - pi_plus).max())
        if params.get("cvxpy", False):
            p_cvx, backend = chi2_trust_region_cvxpy(pi, Q, delta, d, d_plus)
            backends.add(backend)
            cvx_backends.append(backend)
            global_cvx_err.append(np.abs(p_cvx - pi_plus).max())
        p_tr, _, _ = bl.matched_occupancy_tr(pi, Q, d, d_plus, delta)
        unweighted.append(np.abs(p_tr - pi_plus).max())
        rows.append(_row("slsqp_global", i, 0, "sup_err_vs_sc", global_err[-1]))
        rows.append(_row("occupancy_tr_matched", i, 0, "sup_dist_to_sc", unweighted[-1]))
    write_arrays(ctx.out_dir / "trust_region_path.npz", path_delta=np.array(path_delta),
                 path_value=np.array(path_value), sc_point=np.array(sc_point))
    if backends:
        ctx.record(solver=",".join(sorted(backends)))
    metrics = {
        "local_max_err": max(local_err), "local_closed_form_max_err": max(local_cf_err),
        "local_half_numeric_max_err": max(half_err),
        "half_radius_min_dist": min(half_dist), "n_half_radius": len(half_dist),
        "global_max_err": max(global_err), "global_closed_form_max_err": max(global_cf_err),
        "global_half_radius_min_dist": min(global_half),
        "unweighted_median_dist": float(np.median(unweighted)), "unweighted_min_dist": min(unweighted),
        "n_bandits": len(bandits), "n_mdps": len(global_err),
        "control": {"half_radius": {"local_max_err": max(half_num_dist)},
                    "occupancy_weighting": {"global_max_err": max(unweighted)}},
    }
    if global_cvx_err:
        metrics["global_cvxpy_max_err"] = max(global_cvx_err)
        metrics["global_cvxpy_median_err"] = float(np.median(global_cvx_err))
        metrics["global_cvxpy_n_above_1e-6"] = int(np.sum(np.array(global_cvx_err) > 1e-6))
        metrics["global_cvxpy_n_relaxed"] = int(sum(not b.endswith("+nonneg") for b in cvx_backends))
    return rows, metrics


# -------------------------------------------------------------------------------------------- monte carlo
def run_monte_carlo(params: dict, ctx: RunContext):
    """Count-based SFT on successful rollouts estimates pi+ (CLT z-scores); plug-in identity is exact."""
    sizes = params["n_rollouts"] if isinstance(params["n_rollouts"], list) else [params["n_rollouts"]]
    mdps = _mdps(ctx.seed, params["n_mdps"], params)
    rows, zs, z_wrong, plugin_gap, err_by_n = [], [], [], 0.0, {}
    for j, n_roll in enumerate(sizes):
        gens = spawn(ctx.seed, len(mdps), "monte_carlo", str(n_roll))
        errs = []
        for i, (m, g) in enumerate(zip(mdps, gens)):
            ev = evaluate_policy(m["P"], m["rho"], m["mu0"], m["pi"])
            pi_plus = success_condition(m["pi"], ev["Q"], on_zero_value="keep")
            est = rollout_estimate(m["P"], m["rho"], m["mu0"], m["pi"], int(n_roll), g)
            n_s = est["n_success"].sum(axis=-1, keepdims=True)
            mask = (n_s >= params["min_state"]) & (n_s * pi_plus >= params["min_cell"]) & \
                   (n_s * (1 - pi_plus) >= params["min_cell"])
            se = np.sqrt(pi_plus * (1 - pi_plus) / np.maximum(n_s, 1))
            z = np.abs(est["pi_plus_hat"] - pi_plus)[mask] / se[mask]
            zs.extend(z.tolist())
            z_wrong.extend((np.abs(est["pi_plus_hat"] - m["pi"])[mask] / se[mask]).tolist())
            seen = np.broadcast_to(n_s > 0, pi_plus.shape)
            errs.extend(np.abs(est["pi_plus_hat"] - pi_plus)[seen].tolist())
            # plug-in identity on rows with at least one success
            rows_ok = n_s[..., 0] > 0
            pi_hat = est["pi_hat"][rows_ok]
            q_hat = np.where(est["n"][rows_ok] > 0, est["q_hat"][rows_ok], 0.0)
            t = influence_terms(pi_hat, q_hat)
            sft_vs_bayes = np.abs(est["pi_plus_hat"][rows_ok] - pi_hat * q_hat / est["v_hat"][rows_ok][:, None])
            gap = max(_identity_gap(t["relative_improvement"], t["chi2"], t["action_influence"]),
                      float(sft_vs_bayes.max()))
            plugin_gap = max(plugin_gap, gap)
            rows.append(_row("count_sft", i, n_roll, "max_z", z.max() if z.size else 0.0))
            rows.append(_row("count_sft", i, n_roll, "plugin_gap", gap))
        err_by_n[str(n_roll)] = float(np.sqrt(np.mean(np.square(errs))))
    n_cells = len(zs)
    zs = np.array(zs) if zs else np.zeros(1)  # no cell passes the mask (tiny smoke runs)
    write_arrays(ctx.out_dir / "mc_points.npz", z=zs, sizes=np.array(sizes, dtype=float),
                 rmse=np.array([err_by_n[str(n)] for n in sizes]))
    metrics = {"max_z": float(zs.max()), "mean_z": float(zs.mean()), "n_cells": n_cells,
               "plugin_max_gap": plugin_gap, "rmse_by_n": err_by_n,
               "control": {"unconditioned_target": {"max_z": float(max(z_wrong)) if z_wrong else 0.0}}}
    return rows, metrics


# ------------------------------------------------------------------------------------------- thresholding
PUBLIC_ARMS = ([[1.0], [0.0, 2.0], [8.0, 0.0]], [[1.0], [0.5, 0.5], [0.1, 0.9]])


def run_thresholding(params: dict, ctx: RunContext):
    """Return thresholding on the public bandit over a tau grid, and on random threshold bandits."""
    rows, infl, proxy_gain = [], [], []
    pi = np.full(3, 1 / 3)
    taus = params["taus"]
    out = []
    for k, tau in enumerate(taus):
        r = threshold_bandit(pi, *PUBLIC_ARMS, float(tau))
        out.append(r)
        infl.append(r["action_influence"])
        proxy_gain.append(r["success_after"] - r["success_before"])
        for key in ("success_before", "success_after", "mean_before", "mean_after", "action_influence", "chi2"):
            rows.append(_row("public", 0, k, key, r[key]))
        rows.append(_row("public", 0, k, "tau", tau))
    # control of thr-misalign: faithful conditioning, success ~ Bernoulli(R / 8) (P(S=1|a) = E[R_a]/8), for
    # which the identities hold for E[R] itself, so E[R] rises at every "threshold" (no misalignment)
    arm_means = np.array([np.dot(v, p_) for v, p_ in zip(*PUBLIC_ARMS)])
    faithful_gain = float(success_condition(pi, arm_means / 8.0) @ arm_means - pi @ arm_means)
    mean_gain_low = out[0]["mean_after"] - out[0]["mean_before"]
    mean_gain_high = out[-1]["mean_after"] - out[-1]["mean_before"]
    amplify = int(np.all(np.diff(infl) >= -1e-12))
    # random threshold bandits: A ~ U{2..5}, pi ~ Dir(1), arm a has K ~ U{1..4} rewards U(0, 10) with Dir(1)
    monotone, misaligned, rand_gain, rand_true_gain = [], [], [], []
    for g in spawn(ctx.seed, params["n_random"], "thresholding", "random"):
        A = int(g.integers(2, 6))
        p = g.dirichlet(np.ones(A))
        rewards, probs = [], []
        for _ in range(A):
            K = int(g.integers(1, 5))
            rewards.append(g.uniform(0, 10, K).tolist())
            probs.append(g.dirichlet(np.ones(K)).tolist())
        grid = np.unique(np.concatenate([np.asarray(r) for r in rewards]))
        res = [threshold_bandit(p, rewards, probs, float(t)) for t in grid]
        i_tau = np.array([r["action_influence"] for r in res])
        monotone.append(bool(np.all(np.diff(i_tau) >= -1e-12)))
        misaligned.append(res[-1]["mean_after"] < res[-1]["mean_before"])
        rand_gain.append(min(r["success_after"] - r["success_before"] for r in res))
        rand_true_gain.append(min(r["mean_after"] - r["mean_before"] for r in res))
    metrics = {
        "amplify_monotone": amplify, "mean_gain_low": mean_gain_low, "mean_gain_high": mean_gain_high,
        "misalign_margin": min(mean_gain_low, -mean_gain_high),
        "min_proxy_gain": min(min(proxy_gain), min(rand_gain)), "min_proxy_gain_public": min(proxy_gain),
        "influence_by_tau": {str(t): v for t, v in zip(taus, infl)},
        "mean_after_by_tau": {str(t): r["mean_after"] for t, r in zip(taus, out)},
        "mean_before": out[0]["mean_before"],
        "random_frac_influence_monotone": float(np.mean(monotone)),
        "random_frac_mean_decrease_at_top_tau": float(np.mean(misaligned)),
        "n_random": len(monotone),
        "control": {
            "true_objective": {"min_proxy_gain": float(min(min(o["mean_after"] - o["mean_before"] for o in out),
                                                           min(rand_true_gain)))},
            "random_bandits": {"amplify_monotone": int(all(monotone))},
            "faithful_success": {"misalign_margin": min(faithful_gain, -faithful_gain)},
        },
    }
    return rows, metrics


# ------------------------------------------------------------------------------- Beta bandit (Section 7.3)
def beta_bandit_arms(rng: np.random.Generator, n_arms: int, a_range, good_arm) -> tuple[np.ndarray, np.ndarray]:
    """Arm laws of the 100-arm example: ``n_arms - 1`` symmetric Beta(a, a) arms (mean 1/2, a ~ U(a_range):
    wide, U-shaped rewards) and one concentrated Beta(good_arm) arm with a higher mean (0.9 for (18, 2))."""
    a = rng.uniform(a_range[0], a_range[1], n_arms - 1)
    return np.r_[a, float(good_arm[0])], np.r_[a, float(good_arm[1])]


def _beta_sweep(pi, r, tails):
    """Proposition 7.1 terms over the threshold grid (rows of ``tails``: q_tau for every arm)."""
    return [threshold_decomposition(pi, r, q) for q in tails]


def run_beta_bandit(params: dict, ctx: RunContext):
    """Section 7.3: faithful (Bernoulli) success conditioning vs threshold-proxy conditioning on a 100-arm
    Beta bandit, exact tails P(R >= tau) (scipy.special.betainc), uniform behaviour policy, over seeds.

    Per seed: the best excess of a threshold over faithful conditioning, max_tau dJ_tau / dJ_1 - 1, and the
    relative true-objective change at the most severe threshold, dJ_tau_max / dJ_1. Control: the same arm
    means with Bernoulli rewards, for which {R >= tau} = {R = 1} for every tau in (0, 1], so the proxy IS the
    faithful event (no amplification, no misalignment)."""
    taus = np.round(np.arange(params["tau_min"], params["tau_max"] + 1e-9, params["tau_step"]), 6)
    n_arms, severe = int(params["n_arms"]), float(taus[-1])
    pi = np.full(n_arms, 1.0 / n_arms)
    rows, excess, severe_rel, best_tau, residual, amp_best, align_severe = [], [], [], [], 0.0, [], []
    ctrl_excess, ctrl_severe, curves = [], [], []
    for seed, g in enumerate(spawn(ctx.seed, params["n_seeds"], "beta_bandit")):
        a, b = beta_bandit_arms(g, n_arms, params["a_range"], params["good_arm"])
        r = a / (a + b)
        out = _beta_sweep(pi, r, beta_tail(a[None], b[None], taus[:, None]))
        g1 = out[0]["gain_faithful"]
        ratio = np.array([o["gain"] for o in out]) / g1
        k = int(np.argmax(ratio))
        excess.append(float(ratio[k] - 1.0))
        best_tau.append(float(taus[k]))
        amp_best.append(out[k]["amplification"])
        severe_rel.append(float(ratio[-1]))
        align_severe.append(out[-1]["alignment"])
        residual = max(residual, max(abs(o["gain"] - o["identity_gain"]) / g1 for o in out))
        curves.append(np.array([[o["gain"] / g1, o["alignment"], o["amplification"]] for o in out]))
        for t, o in zip(taus, out):
            rows.append(_row("threshold", seed, int(round(t * 1000)), "gain_over_faithful", o["gain"] / g1))
        # control: Bernoulli rewards with the same means, P(R >= tau) = r for every tau in (0, 1]
        ctrl = _beta_sweep(pi, r, np.broadcast_to(r, (len(taus), n_arms)))
        c_ratio = np.array([o["gain"] for o in ctrl]) / ctrl[0]["gain_faithful"]
        ctrl_excess.append(float(c_ratio.max() - 1.0))
        ctrl_severe.append(float(c_ratio[-1]))
    curves = np.array(curves)
    write_arrays(ctx.out_dir / "beta_bandit_curves.npz", taus=taus, gain_ratio=curves[..., 0],
                 alignment=curves[..., 1], amplification=curves[..., 2])
    metrics = {
        "excess_over_faithful": excess, "severe_gain_ratio": severe_rel, "best_tau": best_tau,
        "amplification_at_best": amp_best, "alignment_at_severe": align_severe,
        "severe_tau": severe, "n_taus": len(taus), "n_seeds": len(excess),
        "prop71_max_rel_residual": residual,
        "control": {"bernoulli_rewards": {"excess_over_faithful": ctrl_excess, "severe_gain_ratio": ctrl_severe}},
    }
    return rows, metrics


# ---------------------------------------------------------------------------------------------- gridworld
def _occupancy_budget(p, pi, d) -> float:
    r"""Normalised-occupancy chi-square :math:`\sum_n (d_n/\sum d) \chi^2(p_n \| \pi_n)` (TRPO-style weighting)."""
    return bl.budget(p, pi, d / d.sum())


def _sc_and_baselines(pi, ev):
    """SC step and the matched PG / occupancy-TR steps from pi; returns policies, surrogate margin, matched
    flag and the control margin: SC against the occupancy-TR step matched in the *normalised-occupancy*
    chi2 instead of the d+-weighted one (where SC is not the maximiser, so the margin must turn negative)."""
    Q, d, d_plus = ev["Q"], ev["d"], ev["d_plus"]
    pi_plus = success_condition(pi, Q, on_zero_value="keep")
    delta = bl.sc_budget(pi, Q, d_plus)
    p_pg, _, ok_pg = bl.matched_pg(pi, Q, d, d_plus, delta)
    p_tr, _, ok_tr = bl.matched_occupancy_tr(pi, Q, d, d_plus, delta)
    L_sc = bl.surrogate(pi_plus, pi, Q, d)
    L_best = max(bl.surrogate(p_pg, pi, Q, d), bl.surrogate(p_tr, pi, Q, d))
    margin = (L_sc - L_best) / abs(L_sc) if L_sc != 0 else 0.0
    kappa, _, _ = bl.match_step(lambda k: _occupancy_budget(bl.occupancy_trust_region_step(pi, Q, d, k), pi, d),
                                _occupancy_budget(pi_plus, pi, d))
    L_occ = bl.surrogate(bl.occupancy_trust_region_step(pi, Q, d, kappa), pi, Q, d)
    control_margin = (L_sc - L_occ) / abs(L_sc) if L_sc != 0 else 0.0
    return {"sc": pi_plus, "pg": p_pg, "tr": p_tr, "margin": margin, "ok": ok_pg and ok_tr,
            "control_margin": control_margin, "delta": delta}


def _reinforce_step(pol, n_success, n_roll, ev, target):
    """REINFORCE on the tabular softmax: theta += alpha * (1/N) sum over successful pairs of grad log pi,
    i.e. grad_{s,a} = (n_S(s,a) - n_S(s) pi(a|s)) / N; alpha matched to the exact SC budget ``target``."""
    grad = (n_success - n_success.sum(axis=1, keepdims=True) * pol) / n_roll

    def step(alpha):
        logits = np.log(pol) + alpha * grad
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    alpha, _, _ = bl.match_step(lambda a: bl.budget(step(a), pol, ev["d_plus"]), target)
    return step(alpha)


EXACT_METHODS = {"exact_sc": "sc", "pg_matched": "pg", "tr_matched": "tr"}


def _exact_curves(grid, T, k_exact):
    """Exact SC, matched PG and matched occupancy-TR, each iterated k_exact rounds from the uniform policy.

    At every iterate of every curve the three steps from that policy are compared (surrogate margin and its
    occupancy-budget control), the failure-conditioned step is evaluated (negative control of monotonicity),
    and the true one-step gains of SC and PG from that same policy are recorded."""
    n_states = len(grid.transient)
    pi0 = np.full((n_states, gw.N_ACTIONS), 1.0 / gw.N_ACTIONS)
    out = {"margins": [], "control_margins": [], "failure_steps": [], "all_matched": True}
    for method, key in EXACT_METHODS.items():
        pi, J, deltas, onestep = pi0.copy(), [], [], []
        for k in range(k_exact + 1):
            ev = gw.evaluate(grid, pi, T=T)
            J.append(ev["J"])
            if k == k_exact:
                break
            step = _sc_and_baselines(pi, ev)
            out["margins"].append(step["margin"])
            out["control_margins"].append(step["control_margin"])
            out["all_matched"] &= step["ok"]
            deltas.append(step["delta"])
            out["failure_steps"].append(
                gw.evaluate(grid, failure_condition(pi, ev["Q"], on_zero_value="keep"), T=T)["J"] - ev["J"])
            onestep.append(gw.evaluate(grid, step["sc"], T=T)["J"] - gw.evaluate(grid, step["pg"], T=T)["J"])
            pi = step[key]
        out[method] = np.array(J)
        out[f"{method}_delta"] = np.array(deltas)
        out[f"{method}_onestep_sc_minus_pg"] = np.array(onestep)
    return out


def _crossing(sc: np.ndarray, pg: np.ndarray) -> int:
    """First round k >= 1 with J_PG(k) > J_SC(k) (len(sc) when PG never leads)."""
    ahead = np.nonzero(pg[1:] > sc[1:])[0]
    return int(ahead[0] + 1) if ahead.size else len(sc)


def _gridworld_one(size, params, ctx):
    kappa = params.get("kappa", 0.02)
    grids = [gw.make_gridworld(size, generator(ctx.seed, "gridworld", "grid", str(size), *([str(g)] if g else [])),
                               pit_prob=params.get("pit_prob", 0.1), kappa=kappa)
             for g in range(params.get("n_grids", 1))]
    grid = grids[0]
    T = grid.transitions()
    n_states = len(grid.transient)
    pi0 = np.full((n_states, gw.N_ACTIONS), 1.0 / gw.N_ACTIONS)
    rows, margins, control_margins, failure_steps, all_matched = [], [], [], [], True
    k_exact = params["k_exact"]
    crossing, pg_minus_sc, sc_lead_1, radius_ratio, onestep_min, sc_steps = [], [], [], [], [], []
    for g, gr in enumerate(grids):
        ex = _exact_curves(gr, T if g == 0 else gr.transitions(), k_exact)
        margins += ex["margins"]
        control_margins += ex["control_margins"]
        failure_steps += ex["failure_steps"]
        all_matched &= ex["all_matched"]
        for method in EXACT_METHODS:
            for k, v in enumerate(ex[method]):
                rows.append(_row(method, g, k, f"J_N{size}", v))
        sc, pg = ex["exact_sc"], ex["pg_matched"]
        sc_steps.extend(np.diff(sc).tolist())
        crossing.append(_crossing(sc, pg))
        pg_minus_sc.append(float(pg[-1] - sc[-1]))
        sc_lead_1.append(float(sc[1] - pg[1]))
        k_cmp = min(3, k_exact - 1)
        radius_ratio.append(float(ex["pg_matched_delta"][k_cmp] / ex["exact_sc_delta"][k_cmp]))
        onestep_min.append(float(ex["pg_matched_onestep_sc_minus_pg"].min()))
        if g == 0:
            curves = {m: ex[m] for m in EXACT_METHODS}
            curves.update({f"{m}_delta": ex[f"{m}_delta"] for m in ("exact_sc", "pg_matched")})
    # sample-based SC (and REINFORCE when asked), several rollout seeds
    phi = gw.features(grid)
    n_roll, max_steps = int(params["n_rollouts"]), params.get("max_steps", 400)
    methods = ("count_sc", "param_sc") + (("reinforce",) if params.get("reinforce", False) else ())
    sample = {m: [] for m in methods}
    capped, zs = 0, []
    for seed in range(params["n_seeds"]):
        rng = generator(ctx.seed, "gridworld", "rollouts", str(size), str(seed))
        W = np.zeros((gw.N_ACTIONS, phi.shape[1]))
        for method in methods:
            pol = gw.softmax_linear_policy(W, phi) if method == "param_sc" else pi0.copy()
            J = [gw.evaluate(grid, pol, T=T)["J"]]
            for k in range(params["k_sample"]):
                res = gw.rollout_counts(grid, pol, n_roll, rng, max_steps=max_steps)
                capped += res["capped"]
                zs.append(abs(res["successes"] / n_roll - J[-1]) / np.sqrt(J[-1] * (1 - J[-1]) / n_roll))
                ns = res["n_success"]
                tot = ns.sum(axis=1, keepdims=True)
                if method == "count_sc":
                    pol = np.where(tot > 0, ns / np.maximum(tot, 1.0), pol)
                elif method == "param_sc":
                    W = gw.fit_softmax_linear(ns, phi, W, l2=params.get("l2", 1e-4))
                    pol = gw.softmax_linear_policy(W, phi)
                else:
                    ev = gw.evaluate(grid, pol, T=T)
                    pol = _reinforce_step(pol, ns, n_roll, ev, bl.sc_budget(pol, ev["Q"], ev["d_plus"]))
                J.append(gw.evaluate(grid, pol, T=T)["J"])
            for k, v in enumerate(J):
                rows.append(_row(method, seed, k, f"J_N{size}", v))
            sample[method].append(J)
    count, param = np.array(sample["count_sc"]), np.array(sample["param_sc"])
    param_gain = param[:, -1] - param[:, 0]
    metrics = {
        "J0": curves["exact_sc"][0], "exact_final_J": curves["exact_sc"][-1],
        "exact_min_step_gain": float(min(sc_steps)), "n_grids": len(grids),
        "pg_final_J": curves["pg_matched"][-1], "tr_final_J": curves["tr_matched"][-1],
        "surrogate_margin_min": float(min(margins)), "all_matched": int(all_matched),
        "count_final_gain_min": float(np.min(count[:, -1] - count[:, 0])),
        "count_final_J_mean": float(count[:, -1].mean()),
        "param_final_gain": param_gain.tolist(),
        "param_final_gain_min": float(param_gain.min()), "param_final_gain_mean": float(param_gain.mean()),
        "param_final_gain_se": float(param_gain.std(ddof=1) / np.sqrt(len(param_gain))) if len(param_gain) > 1
        else 0.0,
        "param_min_step_gain": float(np.diff(param, axis=1).min()),
        "param_final_J_mean": float(param[:, -1].mean()),
        "cap_bound": (1 - kappa) ** max_steps, "capped_episodes": capped,
        "rollout_J_max_z": float(max(zs)), "n_transient": n_states, "n_pits": int(grid.pits.sum()),
        "pg_overtake": {"pg_minus_sc_final_J": pg_minus_sc, "sc_minus_pg_round1_J": sc_lead_1,
                        "overtake_round": crossing, "radius_ratio_pg_over_sc_round3": radius_ratio,
                        "onestep_sc_minus_pg_on_pg_path_min": onestep_min},
        "control": {"failure_conditioning": {"exact_min_step_gain": float(min(failure_steps))},
                    "occupancy_budget": {"surrogate_margin_min": float(min(control_margins))}},
    }
    if "reinforce" in sample:
        metrics["reinforce_final_J_mean"] = float(np.array(sample["reinforce"])[:, -1].mean())
    arrays = {**curves, "pits": grid.pits.reshape(size, size),
              **{m: np.array(v) for m, v in sample.items()}}
    write_arrays(ctx.out_dir / f"gridworld_curves_N{size}.npz", **arrays)
    return rows, metrics


MIN_KEYS = ("exact_min_step_gain", "surrogate_margin_min", "param_final_gain_min", "param_min_step_gain",
            "count_final_gain_min", "all_matched")


def run_gridworld(params: dict, ctx: RunContext):
    """Exact SC iterates, matched PG / TR baselines, and sample-based SC (tabular counts, softmax-linear SFT).

    ``size`` is one grid side or a list; with a list the scalar claim keys and the controls hold the minimum
    over sizes (the largest standard error for ``param_final_gain_se``), the per-seed and per-grid lists are
    those of the first size, and ``by_size`` holds every size's metrics."""
    sizes = params["size"] if isinstance(params["size"], list) else [params["size"]]
    rows, per = [], {}
    for size in sizes:
        r, m = _gridworld_one(int(size), params, ctx)
        rows.extend(r)
        per[str(size)] = m
    if len(sizes) == 1:
        metrics = dict(per[str(sizes[0])])
    else:
        metrics = dict(per[str(sizes[0])])
        metrics.update({k: min(m[k] for m in per.values()) for k in MIN_KEYS})
        metrics["control"] = {name: {k: min(m["control"][name][k] for m in per.values()) for k in ctrl}
                              for name, ctrl in metrics["control"].items()}
        metrics["param_final_gain_se"] = max(m["param_final_gain_se"] for m in per.values())
        metrics["by_size"] = per
    metrics["sizes"] = [int(s) for s in sizes]
    return rows, metrics


# ---------------------------------------------------------------------------------------------------- perf
TRUST_REGION_METHODS = ("closed_form", "slsqp", "cvxpy")


def _timed(fn, repeats=1):
    """(last output, median wall seconds) of ``repeats`` calls."""
    t = time_calls(fn, repeats)
    return t.output, t.wall_median


def _solve_trust_region(method: str, problem):
    """Maximiser of one perf trust region ``(kind, pi, Q, delta, d, d_plus)`` by ``method`` (cvxpy: ``(p,
    backend)``)."""
    _, pi, Q, delta, d, d_plus = problem
    if method == "cvxpy":
        w = np.ones(len(pi)) if d is None else d
        c = np.ones(len(pi)) if d_plus is None else d_plus
        return chi2_trust_region_cvxpy(pi, Q, delta, w, c)
    solver = {"closed_form": "closed_form", "slsqp": "numeric"}[method]
    return chi2_trust_region(pi, Q, delta, obj_weights=d, budget_weights=d_plus, solver=solver)


def _time_trust_regions(problems, methods, rounds: int, *, min_seconds: float = 0.05,
                        cpu_clock=time.process_time):
    """CPU seconds per instance of each method solving every one of ``problems``, and the solutions.

    One call of a method solves the whole list, so the cheapest (the closed form, tens of microseconds per
    instance) is batched like the others; :func:`shared.timing.alternating_least_cpu` repeats these calls
    until a measurement lasts ``min_seconds``, alternates the methods in each of ``rounds`` rounds and keeps
    the least measurement, which is divided by ``len(problems)``. Returns ``(seconds, solutions, number)``:
    per-instance seconds and the list of outputs of the last call, both by method, and the calls batched per
    measurement.
    """
    solutions = {}

    def solve_all(method):
        def call():
            solutions[method] = [_solve_trust_region(method, prob) for prob in problems]
        return call

    t = alternating_least_cpu({m: solve_all(m) for m in methods}, rounds, min_seconds=min_seconds,
                              cpu_clock=cpu_clock)
    return {m: s / len(problems) for m, s in t["seconds"].items()}, solutions, t["number"]


def run_perf(params: dict, ctx: RunContext):
    """Closed-form SC step vs SLSQP vs cvxpy on the same trust regions; count SFT vs LogisticRegression.

    Every trust region is solved once by each method for the differences to the closed form. The times are
    those of the first ``n_timed_bandits`` bandits and the first ``n_timed_mdps`` MDPs: process CPU seconds
    per instance, least over ``timing_rounds`` alternating rounds of batched calls (:func:`_time_trust_regions`),
    so that the ratios do not depend on other load of the machine. The SFT fits keep the median wall time.
    """
    from sklearn.linear_model import LogisticRegression

    problems = []
    for pi, q in _bandits(ctx.seed, params["n_bandits"]):
        problems.append(("bandit", pi[None], q[None], influence_terms(pi, q)["action_influence"], None, None))
    for m in _mdps(ctx.seed, params["n_mdps"], params):
        pi, Q, d, d_plus, delta = _global_problem(m)
        problems.append(("mdp", pi, Q, delta, d, d_plus))
    use_cvxpy = params.get("cvxpy", True)
    methods = TRUST_REGION_METHODS if use_cvxpy else TRUST_REGION_METHODS[:2]
    rounds = int(params["timing_rounds"])
    timing, solved = {}, {}
    for kind in ("bandit", "mdp"):
        timed = [i for i, prob in enumerate(problems) if prob[0] == kind][: int(params[f"n_timed_{kind}s"])]
        seconds, solutions, number = _time_trust_regions([problems[i] for i in timed], methods, rounds)
        for m in methods:
            timing[f"{kind}_cpu_s_{m}"] = seconds[m]
            timing[f"{kind}_calls_per_measurement_{m}"] = number[m]
            if m != "closed_form":
                timing[f"{kind}_ratio_{m}_over_closed_form"] = seconds[m] / seconds["closed_form"]
            for i, out in zip(timed, solutions[m]):
                solved[i, m] = out
        timing[f"{kind}_timed_instances"] = len(timed)
    timing["timing_rounds"] = rounds
    err = {(kind, m): 0.0 for kind in ("bandit", "mdp") for m in methods[1:]}
    backends, rows = set(), []
    for i, prob in enumerate(problems):
        kind = prob[0]
        p = {m: solved[i, m] if (i, m) in solved else _solve_trust_region(m, prob) for m in methods}
        if use_cvxpy:
            p["cvxpy"], backend = p["cvxpy"]
            backends.add(backend)
        for m in methods[1:]:
            err[kind, m] = max(err[kind, m], float(np.abs(p[m] - p["closed_form"]).max()))
        rows.append(_row("slsqp", i, 0, "sup_err_vs_closed_form", np.abs(p["slsqp"] - p["closed_form"]).max()))
    # finite data: count estimator vs LogisticRegression SFT on the same successful rollouts
    sft_diff, t_count, t_lr = [], [], []
    for i, (m, g) in enumerate(zip(_mdps(ctx.seed, params["n_sft_mdps"], params),
                                   spawn(ctx.seed, params["n_sft_mdps"], "perf", "sft"))):
        est = rollout_estimate(m["P"], m["rho"], m["mu0"], m["pi"], int(params["n_rollouts"]), g)
        n_s = est["n_success"]
        H, S, A = n_s.shape

        def count_sft():
            tot = n_s.sum(axis=-1, keepdims=True)
            return np.divide(n_s, tot, out=np.full_like(n_s, np.nan), where=tot > 0)

        p_count, tc = _timed(count_sft, repeats=params.get("repeats", 5))
        hs, a = np.nonzero(n_s.reshape(H * S, A))
        weights = n_s.reshape(H * S, A)[hs, a]
        X = np.eye(H * S)[hs]

        def lr_sft():
            model = LogisticRegression(C=1e6, max_iter=10000, tol=1e-10)
            model.fit(X, a, sample_weight=weights)
            out = np.zeros((H * S, A))
            out[:, model.classes_] = model.predict_proba(np.eye(H * S))
            return out

        p_lr, tl = _timed(lr_sft)
        rows_ok = n_s.reshape(H * S, A).sum(axis=1) > 0
        sft_diff.append(float(np.abs(p_lr[rows_ok] - p_count.reshape(H * S, A)[rows_ok]).max()))
        t_count.append(tc)
        t_lr.append(tl)
    timing["median_s_count_sft"] = float(np.median(t_count))
    timing["median_s_logreg_sft"] = float(np.median(t_lr))
    timing["ratio_logreg_over_count"] = timing["median_s_logreg_sft"] / timing["median_s_count_sft"]
    ctx.record(timing=timing, solver=",".join(sorted(backends)) if backends else "none")
    metrics = {"n_trust_region_instances": len(problems), "sft_logreg_max_abs_diff": max(sft_diff),
               "n_sft_mdps": len(sft_diff)}
    for (kind, m), v in err.items():
        metrics[f"{kind}_{m}_max_abs_diff"] = v
    return rows, metrics


EXPERIMENTS = {
    "identity": run_identity,
    "trust_region": run_trust_region,
    "improvement": run_improvement,
    "monte_carlo": run_monte_carlo,
    "thresholding": run_thresholding,
    "beta_bandit": run_beta_bandit,
    "gridworld": run_gridworld,
    "perf": run_perf,
}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
