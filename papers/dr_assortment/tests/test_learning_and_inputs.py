"""MLE known answers and every bad input of the spec."""
import math

import numpy as np
import pytest

from papers.dr_assortment import learning
from papers.dr_assortment.learning import (fit_mnl_mle, make_contextual_data, mnl_negative_log_likelihood,
                                           simulate_choices)
from papers.dr_assortment.mnl import choice_probabilities, mnl_revenue, solve_mnl_assortment, solve_mnl_lp
from papers.dr_assortment.robust import robust_revenue, solve_drao, worst_case_distribution


# ------------------------------------------------------------------ MLE
def test_mle_single_item_is_log_odds():
    # one item, feature 1, always offered, chosen k times out of n: theta_hat = log(k / (n - k))
    n, k = 40, 30
    features = np.ones((n, 1, 1))
    offered = np.ones((n, 1), dtype=bool)
    choices = np.array([0] * k + [-1] * (n - k))
    assert fit_mnl_mle(features, offered, choices)[0] == pytest.approx(math.log(k / (n - k)), abs=1e-7)


def test_mle_ridge_stationarity():
    # with ridge: mean(sigmoid(theta) - y) + l2 theta = 0
    n, k, l2 = 40, 30, 0.5
    features = np.ones((n, 1, 1))
    offered = np.ones((n, 1), dtype=bool)
    choices = np.array([0] * k + [-1] * (n - k))
    th = fit_mnl_mle(features, offered, choices, l2=l2)[0]
    assert 1 / (1 + math.exp(-th)) - k / n + l2 * th == pytest.approx(0.0, abs=1e-8)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    theta = np.array([0.3, -0.5, 0.8])
    feats, offered, choices = make_contextual_data(rng, 30, 5, 3, 2, theta)
    x = rng.standard_normal(3)
    f, g = mnl_negative_log_likelihood(x, feats, offered, choices, 0.2)
    h = 1e-6
    fd = [(mnl_negative_log_likelihood(x + h * e, feats, offered, choices, 0.2)[0]
           - mnl_negative_log_likelihood(x - h * e, feats, offered, choices, 0.2)[0]) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, atol=1e-7)


def test_simulated_choices_follow_mnl():
    rng = np.random.default_rng(1)
    n = 20000
    feats = np.zeros((n, 3, 1))
    feats[:, :, 0] = [0.0, 1.0, -1.0]
    offered = np.tile([True, True, False], (n, 1))
    c = simulate_choices(np.array([1.0]), feats, offered, rng)
    w = np.array([1.0, 1.0, math.e])                      # outside, item 0, item 1
    freq = [np.mean(c == -1), np.mean(c == 0), np.mean(c == 1)]
    np.testing.assert_allclose(freq, w / w.sum(), atol=0.015)
    assert not np.any(c == 2)


def test_mle_recovers_parameter():
    rng = np.random.default_rng(2)
    theta = np.array([0.6, -0.8])
    feats, offered, choices = make_contextual_data(rng, 6000, 6, 2, 3, theta)
    assert np.linalg.norm(fit_mnl_mle(feats, offered, choices) - theta) < 0.1


def test_mle_not_converged_raises_runtime_error(monkeypatch):
    class Fake:
        success, x, jac, message = False, np.zeros(1), np.ones(1), "ABNORMAL: fake"

    monkeypatch.setattr(learning, "minimize", lambda *a, **k: Fake())
    with pytest.raises(RuntimeError, match="ABNORMAL: fake"):
        fit_mnl_mle(np.ones((2, 1, 1)), np.ones((2, 1), bool), np.array([0, -1]))


# ------------------------------------------------------------------ bad inputs
V, R = [1.0, 2.0, 0.5], [3.0, 4.0, 5.0]


@pytest.mark.parametrize("v, r, match", [
    ([1.0, 2.0], [1.0, 2.0, 3.0], "same length"),
    ([[1.0, 2.0]], [[1.0, 2.0]], "v must be 1-D"),
    ([1.0, 2.0], [[1.0, 2.0]], "r must be 1-D"),
    ([1.0, 0.0], [1.0, 2.0], "v must be positive"),
    ([1.0, -1.0], [1.0, 2.0], "v must be positive"),
    ([1.0, 2.0], [1.0, -2.0], "r must be non-negative"),
    ([1.0, np.nan], [1.0, 2.0], "v must be finite"),
    ([1.0, 2.0], [np.inf, 2.0], "r must be finite"),
    ([], [], "at least one item"),
])
def test_bad_v_r(v, r, match):
    for call in (lambda: mnl_revenue(v, r, [0]), lambda: robust_revenue(v, r, [0], 0.1, "kl"),
                 lambda: solve_drao(v, r, 0.1, "kl"), lambda: solve_mnl_assortment(v, r)):
        with pytest.raises(ValueError, match=match):
            call()


@pytest.mark.parametrize("S, match", [
    ([0, 0], "duplicate"), ([3], "outside"), ([-1], "outside"), ([1.0], "integer"), (["a"], "integer"),
    ([True], "integer"), (5, "iterable"),
])
def test_bad_assortment(S, match):
    for call in (lambda: mnl_revenue(V, R, S), lambda: robust_revenue(V, R, S, 0.1, "tv"),
                 lambda: worst_case_distribution(V, R, S, 0.1, "chi2"), lambda: choice_probabilities(V, S)):
        with pytest.raises(ValueError, match=match):
            call()


@pytest.mark.parametrize("rho, div, match", [
    (-0.1, "kl", "rho must be finite and non-negative"), (np.nan, "chi2", "rho must be finite"),
    (np.inf, "kl", "rho must be finite"), (1.5, "tv", "at most 1"), ("0.1", "kl", "rho must be a real"),
])
def test_bad_rho(rho, div, match):
    with pytest.raises(ValueError, match=match):
        robust_revenue(V, R, [0], rho, div)
    with pytest.raises(ValueError, match=match):
        solve_drao(V, R, rho, div)


def test_bad_divergence_method_capacity():
    with pytest.raises(ValueError, match="divergence must be one of"):
        robust_revenue(V, R, [0], 0.1, "wasserstein")
    with pytest.raises(ValueError, match="divergence must be one of"):
        solve_drao(V, R, 0.1, "KL")
    with pytest.raises(ValueError, match="method must be one of"):
        solve_drao(V, R, 0.1, "kl", method="exact")
    for cap in (0, -2, 2.5, True, "3"):
        with pytest.raises(ValueError, match="capacity must be a positive int"):
            solve_drao(V, R, 0.1, "kl", capacity=cap)
        with pytest.raises(ValueError, match="capacity must be a positive int"):
            solve_mnl_assortment(V, R, capacity=cap)
        with pytest.raises(ValueError, match="capacity must be a positive int"):
            solve_mnl_lp(V, R, capacity=cap)


def test_brute_force_refuses_large_instances():
    with pytest.raises(ValueError, match="refused for N = 21"):
        solve_drao(np.ones(21), np.ones(21), 0.1, "kl", method="brute")


def _data():
    feats = np.zeros((3, 4, 2))
    offered = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]], dtype=bool)
    return feats, offered, np.array([0, -1, 3])


@pytest.mark.parametrize("mutate, match", [
    (lambda f, o, c: (f[0], o, c), "features must be 3-D"),
    (lambda f, o, c: (f, o[:, :3], c), "offered must have shape"),
    (lambda f, o, c: (f, o, c[:2]), "choices must have shape"),
    (lambda f, o, c: (f, o, np.array([2, -1, 3])), "not in its offered set"),
    (lambda f, o, c: (f, o, np.array([0, -2, 3])), "outside"),
    (lambda f, o, c: (f, o, np.array([0, 4, 3])), "outside"),
    (lambda f, o, c: (f, np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 1]], bool), np.array([0, -1, 3])),
     "offers nothing"),
    (lambda f, o, c: (f * np.nan, o, c), "features must be finite"),
    (lambda f, o, c: (f, o * 2, c), "offered must be boolean"),
])
def test_bad_learning_data(mutate, match):
    with pytest.raises(ValueError, match=match):
        fit_mnl_mle(*mutate(*_data()))


def test_bad_l2():
    with pytest.raises(ValueError, match="l2 must be"):
        fit_mnl_mle(*_data(), l2=-1.0)
