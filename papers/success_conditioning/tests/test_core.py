"""Exact identities and small known answers for the bandit-level operators (values derived by hand)."""
import math

import numpy as np
import pytest

from papers.success_conditioning import core
from papers.success_conditioning.core import (chi2_divergence, chi2_trust_region, chi2_trust_region_cvxpy,
                                              influence_terms, success_condition, threshold_bandit)

PI = np.array([0.25, 0.25, 0.5])
Q = np.array([0.8, 0.4, 0.2])


def test_spec_bandit_example():
    # V = 0.2 + 0.1 + 0.1 = 0.4; pi+ = pi q / V = (0.5, 0.25, 0.25); sum pi+ q = 0.4 + 0.1 + 0.05 = 0.55
    np.testing.assert_allclose(success_condition(PI, Q), [0.5, 0.25, 0.25], atol=1e-15)
    t = influence_terms(PI, Q)
    assert isinstance(t["chi2"], float)
    assert t["value"] == pytest.approx(0.4, abs=1e-15)
    assert t["value_after"] == pytest.approx(0.55, abs=1e-15)
    for key in ("relative_improvement", "chi2", "action_influence"):
        assert t[key] == pytest.approx(0.375, abs=1e-14)


def test_identity_on_random_rows_any_leading_shape():
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(4), size=(3, 5))
    q = rng.random((3, 5, 4)) ** 3
    t = influence_terms(pi, q)
    assert t["chi2"].shape == (3, 5)
    np.testing.assert_allclose(t["relative_improvement"], t["chi2"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(t["action_influence"], t["chi2"], rtol=1e-12, atol=1e-14)
    pi_plus = success_condition(pi, q)
    np.testing.assert_allclose(pi_plus.sum(-1), 1.0, atol=1e-14)


def test_chi2_divides_by_reference_policy():
    # (0.25^2 / 0.25) + (0.25^2 / 0.75) = 1/3; the swapped version would give 0.25
    assert chi2_divergence([0.5, 0.5], [0.25, 0.75]) == pytest.approx(1 / 3, abs=1e-15)
    assert chi2_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf


def test_zero_value_rows():
    pi = np.array([[0.5, 0.5], [0.3, 0.7]])
    q = np.array([[0.0, 0.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="null event"):
        success_condition(pi, q)
    kept = success_condition(pi, q, on_zero_value="keep")
    np.testing.assert_array_equal(kept[0], pi[0])
    np.testing.assert_allclose(kept[1], [1.0, 0.0])
    t = influence_terms(pi, q, on_zero_value="keep")
    assert t["chi2"][0] == 0 and t["action_influence"][0] == 0
    with pytest.raises(ValueError, match="on_zero_value"):
        success_condition(pi, q, on_zero_value="drop")


def test_constant_q_does_not_move():
    pi = np.array([0.1, 0.6, 0.3])
    q = np.full(3, 0.37)
    np.testing.assert_allclose(success_condition(pi, q), pi, atol=1e-16)
    assert influence_terms(pi, q)["chi2"] < 1e-30


def test_bandit_iteration_closed_form():
    # pi_k ~ pi_0 q^k, J_k = E[q^(k+1)] / E[q^k]
    p = PI.copy()
    for k in range(1, 6):
        p = success_condition(p, Q)
        assert p @ Q == pytest.approx((PI @ Q ** (k + 1)) / (PI @ Q ** k), rel=1e-13)


# ------------------------------------------------------------------------------------------- trust region
def test_local_trust_region_returns_sc_at_delta_I():
    infl = influence_terms(PI, Q)["action_influence"]
    np.testing.assert_allclose(chi2_trust_region(PI, Q, infl), [0.5, 0.25, 0.25], atol=1e-14)
    np.testing.assert_allclose(chi2_trust_region(PI, Q, infl, solver="numeric"), [0.5, 0.25, 0.25], atol=1e-6)


def test_local_trust_region_value_formula_and_half_radius():
    # optimal value V + sqrt(delta) sd_pi(q); sd = V sqrt(I) = 0.4 sqrt(0.375)
    delta = 0.375 / 2
    p = chi2_trust_region(PI, Q, delta)
    sd = 0.4 * math.sqrt(0.375)
    assert p @ Q == pytest.approx(0.4 + math.sqrt(delta) * sd, abs=1e-14)
    assert chi2_divergence(p, PI) == pytest.approx(delta, abs=1e-14)
    assert np.abs(p - np.array([0.5, 0.25, 0.25])).max() > 1e-2
    np.testing.assert_allclose(chi2_trust_region(PI, Q, delta, solver="numeric"), p, atol=1e-6)


def test_closed_form_validity_limit():
    # p stays >= 0 while delta <= (sd / (V - min q))^2 = (0.4 sqrt(0.375) / 0.2)^2 = 1.5
    chi2_trust_region(PI, Q, 1.49)
    with pytest.raises(ValueError, match="delta"):
        chi2_trust_region(PI, Q, 1.6)
    p = chi2_trust_region(PI, Q, 1.6, solver="numeric")
    assert p.min() >= 0 and chi2_divergence(p, PI) <= 1.6 * (1 + 1e-6)


def test_cvxpy_trust_region_agrees():
    pytest.importorskip("cvxpy")
    p = chi2_trust_region(PI, Q, 0.375, solver="cvxpy")
    np.testing.assert_allclose(p, [0.5, 0.25, 0.25], atol=1e-9)


def test_cvxpy_relaxation_falls_back_to_nonneg():
    # pi = (1/2, 1/2), q = (1, 0): chi2(p || pi) = 4 (p_1 - 1/2)^2. With delta = 4 the relaxation without
    # p >= 0 would return (1.5, -0.5); the constrained maximiser is the vertex (1, 0).
    pytest.importorskip("cvxpy")
    pi, q = np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]])
    p, backend = chi2_trust_region_cvxpy(pi, q, 4.0, np.ones(1), np.ones(1))
    assert backend.endswith("+nonneg")
    np.testing.assert_allclose(p, [[1.0, 0.0]], atol=1e-6)
    # delta = 1/4: the maximiser (3/4, 1/4) is interior, so the relaxation answers
    p, backend = chi2_trust_region_cvxpy(pi, q, 0.25, np.ones(1), np.ones(1))
    assert not backend.endswith("+nonneg")
    np.testing.assert_allclose(p, [[0.75, 0.25]], atol=1e-9)


def test_weighted_closed_form_kappa():
    # two rows, w = (1, 2), c = (1, 1): p_n = pi_n (1 + kappa w_n (q_n - V_n)), kappa^2 sum c w^2 Var = delta
    pi = np.array([[0.5, 0.5], [0.5, 0.5]])
    q = np.array([[0.6, 0.4], [0.9, 0.1]])
    var = np.array([0.01, 0.16])
    delta = 0.05
    kappa = math.sqrt(delta / (1 * var[0] + 4 * var[1]))
    p = chi2_trust_region(pi, q, delta, obj_weights=[1, 2], budget_weights=[1, 1])
    np.testing.assert_allclose(p[0], [0.5 * (1 + kappa * 0.1), 0.5 * (1 - kappa * 0.1)], atol=1e-15)
    np.testing.assert_allclose(p[1], [0.5 * (1 + 2 * kappa * 0.4), 0.5 * (1 - 2 * kappa * 0.4)], atol=1e-15)
    budget = chi2_divergence(p[0], pi[0]) + chi2_divergence(p[1], pi[1])
    assert budget == pytest.approx(delta, rel=1e-12)


def test_zero_delta_returns_pi():
    np.testing.assert_array_equal(chi2_trust_region(PI, Q, 0.0), PI)


# ------------------------------------------------------------------------------------------- thresholding
ARMS = ([[1.0], [0.0, 2.0], [8.0, 0.0]], [[1.0], [0.5, 0.5], [0.1, 0.9]])


@pytest.mark.parametrize("tau,pi_plus,infl,mean_after", [
    (0.5, [0.625, 0.3125, 0.0625], 0.4765625, 0.9875),
    (1.0, [0.625, 0.3125, 0.0625], 0.4765625, 0.9875),
    (1.5, [0.0, 5 / 6, 1 / 6], 7 / 6, 0.9666666666666667),
    (2.0, [0.0, 5 / 6, 1 / 6], 7 / 6, 0.9666666666666667),
    (4.0, [0.0, 0.0, 1.0], 2.0, 0.8),
    (8.0, [0.0, 0.0, 1.0], 2.0, 0.8),
])
def test_public_threshold_bandit(tau, pi_plus, infl, mean_after):
    r = threshold_bandit(np.full(3, 1 / 3), *ARMS, tau)
    np.testing.assert_allclose(r["pi_plus"], pi_plus, atol=1e-14)
    assert r["action_influence"] == pytest.approx(infl, abs=1e-13)
    assert r["chi2"] == pytest.approx(infl, abs=1e-13)
    assert r["mean_before"] == pytest.approx(14 / 15, abs=1e-14)
    assert r["mean_after"] == pytest.approx(mean_after, abs=1e-14)
    assert r["success_after"] >= r["success_before"]


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("pi,q,match", [
    ([0.5, 0.5], [0.1, 0.2, 0.3], "shape"),
    ([0.5, -0.5, 1.0], [0.1, 0.2, 0.3], "negative"),
    ([0.5, np.nan], [0.1, 0.2], "NaN"),
    ([0.5, 0.4], [0.1, 0.2], "sum to 1"),
    ([0.5, 0.5], [0.1, 1.2], r"\[0, 1\]"),
    ([0.5, 0.5], [0.1, np.inf], "NaN or Inf"),
])
def test_success_condition_bad_input(pi, q, match):
    with pytest.raises(ValueError, match=match):
        success_condition(pi, q)


@pytest.mark.parametrize("kwargs,match", [
    ({"delta": -0.1}, "delta"),
    ({"delta": np.inf}, "delta"),
    ({"delta": np.nan}, "delta"),
    ({"delta": 0.1, "solver": "newton"}, "solver"),
    ({"delta": 0.1, "obj_weights": [-1.0]}, "obj_weights"),
    ({"delta": 0.1, "budget_weights": [1.0, 2.0]}, "budget_weights"),
])
def test_trust_region_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        chi2_trust_region(PI, Q, **kwargs)


def test_trust_region_zero_entries_in_pi():
    with pytest.raises(ValueError, match="pi: has zero entries"):
        chi2_trust_region([0.0, 1.0], [0.2, 0.3], 0.1)


def test_numeric_solver_failure_raises_runtime_error(monkeypatch):
    class Failed:
        success, status, message, x = False, 9, "Iteration limit reached", PI.copy()

    monkeypatch.setattr(core, "minimize", lambda *a, **k: Failed())
    with pytest.raises(RuntimeError, match="SLSQP.*status 9"):
        chi2_trust_region(PI, Q, 0.2, solver="numeric")


def test_threshold_bad_input():
    pi = np.full(3, 1 / 3)
    with pytest.raises(ValueError, match="arm_probs\\[1\\]"):
        threshold_bandit(pi, [[1.0], [0.0, 2.0], [8.0]], [[1.0], [1.0], [1.0]], 1.0)
    with pytest.raises(ValueError, match="arm_rewards"):
        threshold_bandit(pi, [[1.0], [2.0]], [[1.0], [1.0]], 1.0)
    with pytest.raises(ValueError, match="tau"):
        threshold_bandit(pi, *ARMS, math.inf)
    with pytest.raises(ValueError, match="arm_probs\\[2\\]"):
        threshold_bandit(pi, [[1.0], [2.0], [3.0, 4.0]], [[1.0], [1.0], [0.5, 0.6]], 1.0)
    with pytest.raises(ValueError, match="tau"):
        threshold_bandit(pi, *ARMS, 9.0)


# ------------------------------------------------------------------ Beta tails and Proposition 7.1 (Section 7)
def test_beta_tail_known_values():
    # Beta(1, 1) is uniform: P(R >= t) = 1 - t; Beta(1/2, 1/2) is the arcsine law: 1 - (2/pi) asin(sqrt(t))
    assert core.beta_tail(1.0, 1.0, 0.3) == pytest.approx(0.7, abs=1e-15)
    assert core.beta_tail(0.5, 0.5, 0.8) == pytest.approx(1 - 2 / math.pi * math.asin(math.sqrt(0.8)), abs=1e-14)
    # Beta(18, 2): P(R >= t) = 1 - (19 t^18 - 18 t^19)
    t = 0.99
    assert core.beta_tail(18.0, 2.0, t) == pytest.approx(1 - (19 * t ** 18 - 18 * t ** 19), rel=1e-12)


def test_beta_tail_bad_inputs():
    with pytest.raises(ValueError, match="Beta parameters"):
        core.beta_tail(0.0, 1.0, 0.5)
    with pytest.raises(ValueError, match="tau"):
        core.beta_tail(1.0, 1.0, 1.5)


def test_prop71_identity_and_faithful_case():
    rng = np.random.default_rng(3)
    pi = rng.dirichlet(np.ones(6))
    a, b = rng.uniform(0.3, 3, 6), rng.uniform(0.3, 3, 6)
    r = a / (a + b)
    for tau in (0.1, 0.5, 0.9):
        out = core.threshold_decomposition(pi, r, core.beta_tail(a, b, tau))
        assert out["gain"] == pytest.approx(out["identity_gain"], rel=1e-12, abs=1e-15)
    # faithful conditioning is the proxy q = r: alignment 1, amplification 1, gain = J * I_1 = Var(r) / J
    same = core.threshold_decomposition(pi, r, r)
    J = float(pi @ r)
    assert same["alignment"] == pytest.approx(1.0, abs=1e-12)
    assert same["amplification"] == pytest.approx(1.0, abs=1e-12)
    assert same["gain"] == pytest.approx(float(pi @ (r - J) ** 2) / J, rel=1e-12)


def test_prop71_anti_aligned_proxy_harms():
    # two arms: a sure 0.9 and a 50/50 coin; a proxy that favours the coin lowers the true mean
    pi, r, q = np.array([0.5, 0.5]), np.array([0.9, 0.5]), np.array([0.0, 0.5])
    out = core.threshold_decomposition(pi, r, q)
    assert out["alignment"] == pytest.approx(-1.0, abs=1e-12)
    assert out["gain"] == pytest.approx(0.5 - 0.7, abs=1e-15)


def test_threshold_decomposition_bad_inputs():
    with pytest.raises(ValueError, match="same mean reward"):
        core.threshold_decomposition([0.5, 0.5], [0.4, 0.4], [0.2, 0.3])
    with pytest.raises(ValueError, match="one length"):
        core.threshold_decomposition([0.5, 0.5], [0.4, 0.6], [0.2, 0.3, 0.1])


def test_failure_conditioning_never_helps_a_bandit():
    p = core.failure_condition(PI, Q)
    np.testing.assert_allclose(p, PI * (1 - Q) / (1 - 0.4), atol=1e-15)
    assert float(p @ Q) < 0.4


def test_numeric_trust_region_at_a_tiny_radius():
    """A nearly deterministic policy with nearly equal arms has I ~ 2.6e-8; in p itself SLSQP stopped at an
    infeasible point there (full scale, 1000 bandits). In the scaled variable it returns pi q / V."""
    pi = np.array([6.16970554e-04, 1.0 - 6.16970554e-04])
    q = np.array([0.13849886, 0.13759745])
    value = float(pi @ q)
    infl = float(pi @ (q - value) ** 2) / value ** 2  # I = Var_pi(q) / V^2
    assert 1e-8 < infl < 1e-7
    p = chi2_trust_region(pi, q, infl, solver="numeric")
    np.testing.assert_allclose(p, pi * q / (pi @ q), atol=1e-12, rtol=0)
