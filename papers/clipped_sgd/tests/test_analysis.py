"""Analysis: noise moments, stationary SGD error formulas, the clipped fixed point, slopes."""
import numpy as np
import pytest
from scipy.linalg import solve_continuous_lyapunov

from papers.clipped_sgd.analysis import clipped_fixed_point, loglog_slope, noise_moments, predicted_sgd_error
from papers.clipped_sgd.problems import make_problem


def test_noise_moments_known_answers():
    m = noise_moments([[3.0, 4.0], [0.0, 0.0]], 1.0)
    assert m == {"sigma2": 12.5, "moment_p": 2.5}
    m = noise_moments([-2.0, 1.0, 0.0, 1.0], 2.0)      # signed scalars: ||g|| = |g|
    assert m["sigma2"] == pytest.approx(1.5) and m["moment_p"] == pytest.approx(1.5)
    m = noise_moments([-8.0, 8.0], 1.0 / 3.0)
    assert m["moment_p"] == pytest.approx(2.0)


@pytest.mark.parametrize("p", [0.0, -1.0, float("nan")])
def test_noise_moments_bad_p(p):
    with pytest.raises(ValueError, match="p must"):
        noise_moments([1.0, 2.0], p)


def test_noise_moments_bad_shape():
    with pytest.raises(ValueError, match="grads"):
        noise_moments(np.ones((2, 2, 2)), 1.0)


def test_predicted_error_mean_estimation_exact_formula():
    xi = np.array([[0.0, 1.0], [2.0, -1.0], [4.0, 3.0]])
    p = make_problem("mean", samples=xi)
    sigma2 = np.mean(np.sum((xi - xi.mean(axis=0)) ** 2, axis=1))
    for gamma in (0.1, 1.0, 1.9):
        assert predicted_sgd_error(p, gamma) == pytest.approx(gamma * sigma2 / (2 - gamma))
    with pytest.raises(ValueError, match="step_size"):
        predicted_sgd_error(p, 2.0)


def test_predicted_error_least_squares_first_order_is_the_lyapunov_trace():
    p = make_problem("least_squares_synthetic", n_samples=40, tail_index=1.8, dim=3, seed=1)
    A, gamma = p.features, 0.01
    r = p.targets - A @ p.x_erm
    sigma = A.T @ A / 40
    C = (A * r[:, None] ** 2).T @ A / 40
    P = solve_continuous_lyapunov(sigma, gamma * C)       # Sigma P + P Sigma^T = gamma C
    assert predicted_sgd_error(p, gamma) == pytest.approx(np.trace(P), rel=1e-10)
    # the exact second-moment solution adds a positive O(gamma^2) term
    exact = predicted_sgd_error(p, gamma, order="exact")
    assert exact > np.trace(P) and exact / np.trace(P) - 1 < 20 * gamma * p.L_max


def test_predicted_error_exact_one_dimensional_least_squares():
    """d = 1: 2 Sigma P - gamma E[a^4] P = gamma C  =>  P = gamma C / (2 Sigma - gamma E[a^4])."""
    a = np.array([1.0, 2.0, -1.0, 0.5])
    b = np.array([0.3, 1.0, 2.0, -1.0])
    p = make_problem("least_squares", features=a[:, None], targets=b)
    x = np.sum(a * b) / np.sum(a * a)
    r = b - a * x
    S, C, F = np.mean(a ** 2), np.mean(r ** 2 * a ** 2), np.mean(a ** 4)
    gamma = 0.05
    assert predicted_sgd_error(p, gamma, order="exact") == pytest.approx(gamma * C / (2 * S - gamma * F))
    assert predicted_sgd_error(p, gamma) == pytest.approx(gamma * C / (2 * S))


def test_predicted_error_bad_inputs():
    p = make_problem("mean", samples=[1.0, 2.0])
    for gamma in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="step_size"):
            predicted_sgd_error(p, gamma)
    with pytest.raises(ValueError, match="order"):
        predicted_sgd_error(p, 0.1, order="second")


def test_clipped_fixed_point_known_answers():
    # xi = (0, 0, 10), lam = 1: on [0, 1], 2 x - 1 = 0  =>  x = 1/2
    assert clipped_fixed_point([0.0, 0.0, 10.0], 1.0) == pytest.approx(0.5, abs=1e-13)
    xi = np.random.default_rng(0).standard_normal(51)
    assert clipped_fixed_point(xi, 100.0) == pytest.approx(xi.mean(), abs=1e-12)       # no clipping: mean
    assert clipped_fixed_point(xi, 1e-9) == pytest.approx(np.median(xi), abs=1e-8)     # lam -> 0: median
    assert clipped_fixed_point(np.r_[xi, -xi], 0.7) == pytest.approx(0.0, abs=1e-12)    # symmetric data
    assert clipped_fixed_point([2.0, 2.0], 1.0) == 2.0


def test_clipped_fixed_point_bad_inputs():
    with pytest.raises(ValueError, match="1-D"):
        clipped_fixed_point(np.ones((3, 2)), 1.0)
    with pytest.raises(ValueError, match="clip_level"):
        clipped_fixed_point([1.0, 2.0], 0.0)
    with pytest.raises(ValueError, match="finite"):
        clipped_fixed_point([1.0, np.nan], 1.0)


def test_loglog_slope_exact_power_law():
    n = np.array([10.0, 100.0, 1000.0])
    assert loglog_slope(n, 3 * n ** (-2 / 3)) == pytest.approx(-2 / 3)
    with pytest.raises(ValueError, match="positive"):
        loglog_slope(n, [1.0, 0.0, 1.0])
