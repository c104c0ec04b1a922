"""Exact identities of Romberg-ZOGE and the kernel comparator, and their bad inputs."""
from fractions import Fraction

import numpy as np
import pytest

from papers.romberg_zoge.estimator import (gaussian_smoothing_fixed_point, kernel_function, kernel_zoge,
                                           noise_amplification, residual_constant, romberg_directional,
                                           romberg_tableau, romberg_weights, romberg_weights_exact, romberg_zoge)
from papers.romberg_zoge.problems import LogisticTest, power_sum, power_sum_gradient


def test_weights_known_values():
    np.testing.assert_array_equal(romberg_weights(0), [1.0])
    assert romberg_weights_exact(1) == (Fraction(-1, 3), Fraction(4, 3))
    assert romberg_weights_exact(2) == (Fraction(1, 45), Fraction(-4, 9), Fraction(64, 45))
    assert romberg_weights(3).dtype == np.float64


@pytest.mark.parametrize("R", [0, 1, 2, 3, 4])
def test_weights_cancel_even_orders_exactly(R):
    w = romberg_weights_exact(R)
    assert sum(w) == 1
    for i in range(1, R + 1):
        assert sum(wk * Fraction(1, 4 ** (k * i)) for k, wk in enumerate(w)) == 0
    assert residual_constant(R) == pytest.approx(float(sum(wk * Fraction(1, 4 ** (k * (R + 1)))
                                                           for k, wk in enumerate(w))))


def test_kappa_and_rho_closed_forms():
    assert noise_amplification(0) == 1.0
    assert noise_amplification(1) == pytest.approx(1 / 9 + 16 / 9 * 4)   # 65/9
    assert residual_constant(1) == pytest.approx(-0.25)
    assert residual_constant(2) == pytest.approx(1 / 64)


def test_tableau_equals_weighted_sum():
    values = np.array([1.3, -0.2, 0.77, 2.1])
    T = romberg_tableau(values)
    for R in range(4):
        assert T[R, R] == pytest.approx(float(romberg_weights(R) @ values[:R + 1]), rel=1e-13)


def test_level_zero_is_two_point():
    f = LogisticTest()
    U = np.random.default_rng(0).standard_normal((3, f.dim))
    h = 0.1
    D = (f(f.x0 + h * U) - f(f.x0 - h * U)) / (2 * h)
    np.testing.assert_allclose(romberg_zoge(f, f.x0, U, h, 0, average=False), D[:, None] * U, rtol=1e-12)
    np.testing.assert_allclose(romberg_zoge(f, f.x0, U, h, 0), (D[:, None] * U).mean(axis=0), rtol=1e-12)


@pytest.mark.parametrize("R, p", [(1, 4), (2, 6), (3, 8)])
def test_polynomials_of_degree_2R_plus_2_are_exact(R, p):
    rng = np.random.default_rng(p)
    x, U = rng.standard_normal(4), rng.standard_normal((5, 4))
    est = romberg_zoge(power_sum(p), x, U, 0.7, R, average=False)
    target = (U @ power_sum_gradient(x, p))[:, None] * U
    np.testing.assert_allclose(est, target, rtol=0, atol=1e-9 * np.abs(target).max())


def test_quartic_two_point_residual_closed_form():
    # ((x + h u)^4 - (x - h u)^4) / (2h) = 4 x^3 u + 4 x u^3 h^2
    x, u, r = np.array([0.5, -1.2, 2.0]), np.array([[1.1, 0.3, -0.7]]), 0.4
    resid = romberg_zoge(power_sum(4), x, u, r, 0) - (u[0] @ (4 * x ** 3)) * u[0]
    np.testing.assert_allclose(resid, 4 * r ** 2 * np.sum(x * u[0] ** 3) * u[0], rtol=1e-10)


def test_sextic_level_one_residual_closed_form():
    # rho_1 * 6 r^4 sum x u^5 = -1.5 r^4 sum x u^5
    x, u, r = np.array([0.5, -1.2, 2.0]), np.array([[1.1, 0.3, -0.7]]), 0.3
    resid = romberg_zoge(power_sum(6), x, u, r, 1) - (u[0] @ (6 * x ** 5)) * u[0]
    np.testing.assert_allclose(resid, -1.5 * r ** 4 * np.sum(x * u[0] ** 5) * u[0], rtol=1e-8)


def test_same_direction_for_every_radius_in_one_call():
    calls = []

    def f(X):
        calls.append(X.copy())
        return (X ** 4).sum(axis=1)

    x, u = np.array([1.0, 2.0]), np.array([[1.0, -1.0]])
    romberg_directional(f, x, u, 0.5, 2)
    assert len(calls) == 1 and calls[0].shape == (6, 2)
    steps = calls[0] - x
    assert np.allclose(steps[:3] / np.linalg.norm(steps[:3], axis=1, keepdims=True), u / np.sqrt(2))
    np.testing.assert_allclose(np.linalg.norm(steps[:3], axis=1), np.sqrt(2) * np.array([0.5, 0.25, 0.125]))


def test_forward_scheme_uses_R_plus_2_evaluations_and_is_exact_on_linear():
    calls = []
    g = np.array([1.0, -2.0, 0.5])

    def f(X):
        calls.append(X.shape[0])
        return X @ g

    u = np.array([[1.0, 2.0, 3.0]])
    est = romberg_zoge(f, np.zeros(3), u, 0.3, 1, scheme="forward")
    assert calls == [3]
    np.testing.assert_allclose(est, (u[0] @ g) * u[0])


def test_kernel_moments_and_linear_exactness():
    z = np.linspace(-1, 1, 200001)
    zk = z * kernel_function(z)
    assert np.trapezoid(zk, z) / 2 == pytest.approx(1.0, abs=1e-8)
    assert np.trapezoid(z ** 2 * zk, z) / 2 == pytest.approx(0.0, abs=1e-8)
    assert np.trapezoid(zk ** 2, z) / 2 == pytest.approx(6.25, abs=1e-6)
    g = np.array([1.0, 2.0])
    e, zeta, r = np.array([[0.6, 0.8]]), np.array([0.5]), 0.1
    est = kernel_zoge(lambda X: X @ g, np.zeros(2), e, zeta, r)
    # d/(2r) * 2 r zeta (e.g) K(zeta) e = d zeta K(zeta) (e.g) e
    np.testing.assert_allclose(est, 2 * 0.5 * kernel_function(0.5) * (e[0] @ g) * e[0], rtol=1e-12)


def test_smoothing_fixed_point_formula():
    assert gaussian_smoothing_fixed_point(0.4, 0) == pytest.approx(-0.08)
    w = [-1 / 3, 4 / 3]
    assert gaussian_smoothing_fixed_point(0.4, 1) == pytest.approx(
        -np.log(w[0] * np.exp(0.08) + w[1] * np.exp(0.02)))


# ------------------------------------------------------------------------------------------------ bad input
quad = power_sum(2)


@pytest.mark.parametrize("level", [-1, 1.5, True, "1"])
def test_bad_level(level):
    with pytest.raises(ValueError, match="level"):
        romberg_weights(level)
    with pytest.raises(ValueError, match="level"):
        romberg_zoge(quad, np.ones(2), np.ones((1, 2)), 0.1, level)


@pytest.mark.parametrize("radius", [0.0, -0.1, float("inf"), float("nan")])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        romberg_zoge(quad, np.ones(2), np.ones((1, 2)), radius, 1)
    with pytest.raises(ValueError, match="radius"):
        kernel_zoge(quad, np.ones(2), np.array([[1.0, 0.0]]), np.array([0.5]), radius)


def test_bad_shapes_and_scheme():
    with pytest.raises(ValueError, match="x must be a 1-D"):
        romberg_zoge(quad, np.ones((2, 2)), np.ones((1, 2)), 0.1, 1)
    with pytest.raises(ValueError, match="2-D"):
        romberg_zoge(quad, np.ones(2), np.ones(2), 0.1, 1)
    with pytest.raises(ValueError, match="width"):
        romberg_zoge(quad, np.ones(2), np.ones((1, 3)), 0.1, 1)
    with pytest.raises(ValueError, match="scheme"):
        romberg_zoge(quad, np.ones(2), np.ones((1, 2)), 0.1, 1, scheme="backward")


def test_bad_zetas_and_kernel_directions():
    e = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="zetas"):
        kernel_zoge(quad, np.ones(2), e, np.array([0.5, 1.5]), 0.1)
    with pytest.raises(ValueError, match="zetas"):
        kernel_zoge(quad, np.ones(2), e, np.array([0.5]), 0.1)
    with pytest.raises(ValueError, match="unit"):
        kernel_zoge(quad, np.ones(2), 2 * e, np.array([0.5, 0.5]), 0.1)


def test_bad_oracle_output():
    with pytest.raises(ValueError, match="shape"):
        romberg_zoge(lambda X: X, np.ones(2), np.ones((1, 2)), 0.1, 1)
    with pytest.raises(FloatingPointError, match="evaluation"):
        romberg_zoge(lambda X: np.full(X.shape[0], np.nan), np.ones(2), np.ones((1, 2)), 0.1, 1)
