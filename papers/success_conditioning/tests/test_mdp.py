"""Finite-horizon MDPs, baselines and the gridworld: brute-force enumeration and hand-computed answers."""
import itertools

import numpy as np
import pytest

from papers.success_conditioning import baselines as bl
from papers.success_conditioning import gridworld as gw
from papers.success_conditioning.core import chi2_divergence, chi2_trust_region, influence_terms, success_condition
from papers.success_conditioning.mdp import (evaluate_policy, pdl_sum, pooled_success_condition, random_mdp,
                                             rollout_estimate)


def small_mdp(seed=3, S=3, A=2, H=3):
    rng = np.random.default_rng(seed)
    return {"P": rng.dirichlet(0.5 * np.ones(S), size=(H, S, A)), "rho": rng.random(S) ** 3,
            "mu0": rng.dirichlet(np.ones(S)), "pi": rng.dirichlet(np.ones(A), size=(H, S))}


def brute_force(P, rho, mu0, pi):
    """J, d_h(s) and P(s_h = s, a_h = a, S = 1) by enumerating every trajectory."""
    H, S, A, _ = P.shape
    J, d = 0.0, np.zeros((H, S))
    joint_success = np.zeros((H, S, A))
    for traj in itertools.product(range(S), *[range(A), range(S)] * H):
        states, actions = traj[0::2], traj[1::2]
        prob = mu0[states[0]]
        for h in range(H):
            prob *= pi[h, states[h], actions[h]] * P[h, states[h], actions[h], states[h + 1]]
        ps = prob * rho[states[H]]
        J += ps
        for h in range(H):
            d[h, states[h]] += prob
            joint_success[h, states[h], actions[h]] += ps
    return J, d, joint_success


def test_hand_computed_one_step():
    P = np.zeros((1, 2, 2, 2))
    P[0, 0, 0] = [1, 0]
    P[0, 0, 1] = [0, 1]
    P[0, 1, :] = [0.5, 0.5]
    ev = evaluate_policy(P, np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.full((1, 2, 2), 0.5))
    np.testing.assert_allclose(ev["Q"][0], [[1.0, 0.0], [0.5, 0.5]])
    assert ev["J"] == 0.5
    np.testing.assert_allclose(ev["d"], [[1.0, 0.0]])
    np.testing.assert_allclose(ev["d_plus"], [[1.0, 0.0]])


def test_evaluation_and_sc_match_enumeration():
    m = small_mdp()
    ev = evaluate_policy(**m)
    J, d, joint = brute_force(**m)
    assert ev["J"] == pytest.approx(J, abs=1e-14)
    np.testing.assert_allclose(ev["d"], d, atol=1e-14)
    # success-conditioned occupancy and Bayes: pi+_h(a|s) = P(a_h = a | s_h = s, S = 1)
    np.testing.assert_allclose(ev["d_plus"], joint.sum(-1) / J, atol=1e-13)
    pi_plus = success_condition(m["pi"], ev["Q"])
    np.testing.assert_allclose(pi_plus, joint / joint.sum(-1, keepdims=True), atol=1e-13)


def test_pdl_monotone_and_identity():
    rng = np.random.default_rng(7)
    for _ in range(20):
        m = random_mdp(rng)
        ev = evaluate_policy(**m)
        pi_plus = success_condition(m["pi"], ev["Q"])
        ev_plus = evaluate_policy(m["P"], m["rho"], m["mu0"], pi_plus)
        infl = influence_terms(m["pi"], ev["Q"])["action_influence"]
        gain = ev_plus["J"] - ev["J"]
        assert gain >= -1e-15
        assert gain == pytest.approx(pdl_sum(ev_plus["d"], ev["V"], infl), abs=1e-14)


def test_global_trust_region_needs_d_plus_weighting():
    m = small_mdp(seed=11)
    ev = evaluate_policy(**m)
    A = m["pi"].shape[-1]
    pi, Q = m["pi"].reshape(-1, A), ev["Q"].reshape(-1, A)
    d, d_plus = ev["d"].ravel(), ev["d_plus"].ravel()
    delta = bl.sc_budget(pi, Q, d_plus)
    pi_plus = success_condition(pi, Q)
    p = chi2_trust_region(pi, Q, delta, obj_weights=d, budget_weights=d_plus)
    np.testing.assert_allclose(p, pi_plus, atol=1e-14)
    assert bl.budget(pi_plus, pi, d_plus) == pytest.approx(delta, rel=1e-12)
    p_occ, _, ok = bl.matched_occupancy_tr(pi, Q, d, d_plus, delta)
    assert ok and np.abs(p_occ - pi_plus).max() > 1e-3
    assert bl.budget(p_occ, pi, d_plus) == pytest.approx(delta, rel=1e-9)
    # SC is the maximiser at its budget: matched baselines have a smaller surrogate
    p_pg, _, _ = bl.matched_pg(pi, Q, d, d_plus, delta)
    L = bl.surrogate(pi_plus, pi, Q, d)
    assert L >= bl.surrogate(p_pg, pi, Q, d) and L >= bl.surrogate(p_occ, pi, Q, d)


def test_pooled_exact_for_one_step_not_for_two():
    m1 = small_mdp(seed=5, H=1)
    ev = evaluate_policy(**m1)
    np.testing.assert_allclose(pooled_success_condition(m1["pi"], ev), success_condition(m1["pi"], ev["Q"]),
                               atol=1e-15)
    m2 = small_mdp(seed=5, H=3)
    pi = np.broadcast_to(m2["pi"][:1], m2["pi"].shape).copy()
    ev = evaluate_policy(m2["P"], m2["rho"], m2["mu0"], pi)
    assert np.abs(pooled_success_condition(pi, ev) - success_condition(pi, ev["Q"])).max() > 1e-3


def test_clipped_rows_solve_the_trust_region():
    pi = np.array([[0.25, 0.25, 0.5]])
    q = np.array([[0.8, 0.4, 0.2]])
    # unclipped: p = pi (1 + t (q - V)); at t = 1/V this is SC
    np.testing.assert_allclose(bl.clipped_trust_region_rows(pi, q, np.array([2.5])), [[0.5, 0.25, 0.25]],
                               atol=1e-15)
    # large t: clipped; must equal the SLSQP maximiser at its own radius
    p = bl.clipped_trust_region_rows(pi, q, np.array([20.0]))
    assert p[0, 2] == 0.0
    delta = chi2_divergence(p[0], pi[0])
    np.testing.assert_allclose(chi2_trust_region(pi[0], q[0], delta, solver="numeric"), p[0], atol=1e-6)


def test_match_step_bisection():
    x, value, ok = bl.match_step(lambda t: t ** 2, 2.0)
    assert ok and value <= 2.0 and x == pytest.approx(np.sqrt(2.0), rel=1e-9)


def test_rollout_plugin_identity_and_determinism():
    m = small_mdp(seed=2, H=2)
    est = rollout_estimate(**m, n_rollouts=3000, seed=1)
    again = rollout_estimate(**m, n_rollouts=3000, seed=1)
    np.testing.assert_array_equal(est["n"], again["n"])
    np.testing.assert_array_equal(est["n"].sum(axis=(1, 2)), [3000, 3000])
    ok = est["n"] > 0
    rows = est["n_success"].sum(-1) > 0
    bayes = est["pi_hat"] * np.where(ok, est["q_hat"], 0.0) / est["v_hat"][..., None]
    np.testing.assert_allclose(est["pi_plus_hat"][rows], bayes[rows], atol=1e-15)


@pytest.mark.parametrize("n", [0, 2.5, -3, True])
def test_rollout_bad_n(n):
    m = small_mdp()
    with pytest.raises(ValueError, match="n_rollouts"):
        rollout_estimate(**m, n_rollouts=n, seed=0)


def test_mdp_bad_input():
    m = small_mdp()
    with pytest.raises(ValueError, match="P: expected shape"):
        evaluate_policy(m["P"][0], m["rho"], m["mu0"], m["pi"])
    bad = m["P"].copy()
    bad[0, 0, 0, 0] += 0.1
    with pytest.raises(ValueError, match="P: rows"):
        evaluate_policy(bad, m["rho"], m["mu0"], m["pi"])
    with pytest.raises(ValueError, match="pi: expected shape"):
        evaluate_policy(m["P"], m["rho"], m["mu0"], m["pi"][:, :, :1])
    with pytest.raises(ValueError, match="rho"):
        evaluate_policy(m["P"], m["rho"] + 1.0, m["mu0"], m["pi"])
    with pytest.raises(ValueError, match="rho: expected shape"):
        evaluate_policy(m["P"], m["rho"][:2], m["mu0"], m["pi"])
    with pytest.raises(ValueError, match="mu0"):
        evaluate_policy(m["P"], m["rho"], m["mu0"] * 2, m["pi"])
    with pytest.raises(ValueError, match="mu0: expected shape"):
        evaluate_policy(m["P"], m["rho"], np.ones(2) / 2, m["pi"])


# ---------------------------------------------------------------------------------------------- gridworld
def test_gridworld_evaluation_matches_value_iteration():
    grid = gw.make_gridworld(4, np.random.default_rng(0))
    T = grid.transitions()
    np.testing.assert_allclose(T.sum(-1), 1.0)
    # intended move 0.8 + 0.2/4, each other direction 0.05 (moving off the grid = stay)
    assert T[0, 1, grid.move[0, 1]] == pytest.approx(0.85)
    pi = np.random.default_rng(1).dirichlet(np.ones(4), size=len(grid.transient))
    ev = gw.evaluate(grid, pi, T=T)
    value = np.zeros(grid.size ** 2)
    value[grid.goal] = 1.0
    for _ in range(3000):
        new = np.zeros_like(value)
        new[grid.goal] = 1.0
        Qfull = (1 - grid.kappa) * (T[grid.transient] @ value)
        new[grid.transient] = np.sum(pi * Qfull, axis=1)
        value = new
    np.testing.assert_allclose(ev["V"], value[grid.transient], atol=1e-12)
    # SC is monotone here too, and the d+-weighted trust region returns it
    pi_plus = success_condition(pi, ev["Q"], on_zero_value="keep")
    assert gw.evaluate(grid, pi_plus, T=T)["J"] >= ev["J"]
    delta = bl.sc_budget(pi, ev["Q"], ev["d_plus"])
    p = chi2_trust_region(pi, ev["Q"], delta, obj_weights=ev["d"], budget_weights=ev["d_plus"])
    np.testing.assert_allclose(p, pi_plus, atol=1e-12)


def test_softmax_linear_sft_recovers_counts_with_tabular_features():
    counts = np.array([[30.0, 10.0, 0.0, 60.0], [5.0, 5.0, 5.0, 5.0]])
    phi = np.eye(2)
    W = gw.fit_softmax_linear(counts, phi, np.zeros((4, 2)), l2=1e-9)
    pol = gw.softmax_linear_policy(W, phi)
    np.testing.assert_allclose(pol, counts / counts.sum(1, keepdims=True), atol=2e-3)


def test_gridworld_rollouts_estimate_sc():
    grid = gw.make_gridworld(3, np.random.default_rng(4))
    pi = np.full((len(grid.transient), 4), 0.25)
    ev = gw.evaluate(grid, pi)
    res = gw.rollout_counts(grid, pi, 20000, np.random.default_rng(5))
    n = 20000
    assert abs(res["successes"] / n - ev["J"]) < 5 * np.sqrt(ev["J"] * (1 - ev["J"]) / n)
    ns = res["n_success"]
    est = ns[grid.start_index] / ns[grid.start_index].sum()
    exact = success_condition(pi, ev["Q"])[grid.start_index]
    assert np.abs(est - exact).max() < 0.03


def test_gridworld_sparse_solver_path_matches_dense():
    grid = gw.make_gridworld(23, np.random.default_rng(2))
    assert len(grid.transient) > 400  # sparse LU branch
    T = grid.transitions()
    pi = np.full((len(grid.transient), 4), 0.25)
    ev = gw.evaluate(grid, pi, T=T)
    tr = grid.transient
    M = (1 - grid.kappa) * np.einsum("sa,sat->st", pi, T[tr][:, :, tr])
    sigma = (1 - grid.kappa) * np.sum(pi * T[tr, :, grid.goal], axis=1)
    np.testing.assert_allclose(ev["V"], np.linalg.solve(np.eye(len(tr)) - M, sigma), atol=1e-12)
