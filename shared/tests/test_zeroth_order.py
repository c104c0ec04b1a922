"""Tests of shared.oracles.zeroth_order: exact identities of the differences and the direction rules."""
import math

import numpy as np
import pytest

from shared.oracles.zeroth_order import (as_batched, central_differences, estimate_from_directional,
                                         evaluate_batched, forward_differences, perturbation_directions,
                                         two_point_estimate, with_additive_noise)


def quadratic(points):
    """f(x) = sum_i (i + 1) x_i^2 / 2, gradient (i + 1) x_i."""
    points = np.atleast_2d(points)
    return 0.5 * (points ** 2 * np.arange(1, points.shape[1] + 1)).sum(axis=1)


def cubic(points):
    return (points ** 3).sum(axis=1)


def test_directions_rebuilt_from_seeds():
    u = perturbation_directions([3, 7], 5)
    assert u.shape == (2, 5) and u.dtype == np.float64
    np.testing.assert_array_equal(u[1], np.random.default_rng(7).standard_normal(5))
    np.testing.assert_array_equal(perturbation_directions(7, 5)[0], u[1])
    np.testing.assert_array_equal(perturbation_directions(np.array([7], dtype=np.uint64), 5)[0], u[1])


def test_sphere_directions_have_norm_sqrt_dim_and_same_direction():
    g = perturbation_directions([1, 2, 3], 8)
    s = perturbation_directions([1, 2, 3], 8, kind="sphere")
    np.testing.assert_allclose(np.linalg.norm(s, axis=1), math.sqrt(8), rtol=1e-14)
    np.testing.assert_allclose(s / np.linalg.norm(s, axis=1, keepdims=True),
                               g / np.linalg.norm(g, axis=1, keepdims=True), rtol=1e-14)


def test_directions_dtype_is_cast_at_the_end():
    u32 = perturbation_directions([5], 4, dtype=np.float32)
    assert u32.dtype == np.float32
    np.testing.assert_array_equal(u32, perturbation_directions([5], 4).astype(np.float32))


@pytest.mark.parametrize("seeds, match", [([1, 1], "distinct"), ([-1], "non-negative"), ([1.5], "integers"),
                                          ([], "at least one")])
def test_bad_seeds(seeds, match):
    with pytest.raises(ValueError, match=match):
        perturbation_directions(seeds, 3)


def test_bad_dim_and_kind():
    with pytest.raises(ValueError, match="dim"):
        perturbation_directions([1], 0)
    with pytest.raises(ValueError, match="kind"):
        perturbation_directions([1], 3, kind="rademacher")


def test_central_differences_exact_on_quadratic():
    x = np.array([1.0, -2.0, 0.5])
    u = np.array([[1.0, 0.0, 0.0], [0.3, -1.2, 2.0]])
    D = central_differences(quadratic, x, u, [1.0, 0.1, 3.0])
    grad = np.arange(1, 4) * x
    np.testing.assert_allclose(D, np.repeat((u @ grad)[:, None], 3, axis=1), rtol=1e-13)


def test_central_differences_cubic_closed_form():
    # ((x + h u)^3 - (x - h u)^3) / (2h) = 3 x^2 u + h^2 u^3, summed over coordinates
    x, u, h = np.array([0.7, -1.1]), np.array([[2.0, 0.5]]), 0.3
    D = central_differences(cubic, x, u, [h])
    assert D[0, 0] == pytest.approx((3 * x ** 2 * u[0] + h ** 2 * u[0] ** 3).sum(), rel=1e-13)


def test_forward_differences_closed_form_and_one_call():
    calls = []

    def f(points):
        calls.append(points.shape[0])
        return quadratic(points)

    x, u = np.array([1.0, 2.0]), np.array([[1.0, 1.0], [0.0, 2.0]])
    D = forward_differences(f, x, u, [0.5, 0.25])
    # (f(x + h u) - f(x)) / h = u^T grad + h/2 sum_i (i + 1) u_i^2
    curv = (u ** 2 * np.array([1.0, 2.0])).sum(axis=1)
    expected = (u @ (np.array([1.0, 2.0]) * x))[:, None] + 0.5 * np.array([0.5, 0.25])[None, :] * curv[:, None]
    np.testing.assert_allclose(D, expected, rtol=1e-13)
    assert calls == [5]
    D2 = forward_differences(f, x, u, [0.5, 0.25], f_x=float(quadratic(x[None])[0]))
    np.testing.assert_allclose(D2, D, rtol=1e-14)
    assert calls == [5, 4]


def test_estimate_from_directional_is_mean():
    u = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(estimate_from_directional(np.array([2.0, -1.0]), u), [(-1.0) / 2, 5.0 / 2])
    u32 = u.astype(np.float32)
    assert estimate_from_directional(np.array([1.0, 1.0], dtype=np.float32), u32).dtype == np.float32
    with pytest.raises(ValueError, match="directional"):
        estimate_from_directional(np.ones(3), u)
    with pytest.raises(ValueError, match="directions"):
        estimate_from_directional(np.ones(2), np.ones(2))


def test_two_point_estimate_on_linear_function_is_projection():
    g = np.array([1.0, -2.0, 3.0])
    f = lambda X: X @ g  # noqa: E731
    u = perturbation_directions([0, 1, 2, 3], 3)
    expected = ((u @ g)[:, None] * u).mean(axis=0)
    for scheme in ("central", "forward"):
        np.testing.assert_allclose(two_point_estimate(f, np.zeros(3), u, 0.7, scheme=scheme), expected,
                                   rtol=1e-12)


def test_gaussian_two_point_is_unbiased_on_quadratic():
    u = np.random.default_rng(0).standard_normal((200000, 3))
    x = np.array([1.0, -1.0, 0.5])
    est = two_point_estimate(quadratic, x, u, 0.1)
    np.testing.assert_allclose(est, np.arange(1, 4) * x, atol=0.05)


def test_bad_inputs():
    u = np.ones((2, 3))
    with pytest.raises(ValueError, match="x must be a 1-D"):
        central_differences(quadratic, np.ones((3, 1)), u, [0.1])
    with pytest.raises(ValueError, match="width"):
        central_differences(quadratic, np.ones(4), u, [0.1])
    with pytest.raises(ValueError, match="2-D"):
        central_differences(quadratic, np.ones(3), np.ones(3), [0.1])
    with pytest.raises(ValueError, match="radii"):
        central_differences(quadratic, np.ones(3), u, [0.0])
    with pytest.raises(ValueError, match="radius"):
        two_point_estimate(quadratic, np.ones(3), u, -1.0)
    with pytest.raises(ValueError, match="radius"):
        two_point_estimate(quadratic, np.ones(3), u, float("nan"))
    with pytest.raises(ValueError, match="scheme"):
        two_point_estimate(quadratic, np.ones(3), u, 0.1, scheme="backward")


def test_wrong_shape_and_nonfinite_values_are_named():
    with pytest.raises(ValueError, match=r"shape \(n,\)"):
        central_differences(lambda X: X, np.ones(2), np.ones((1, 2)), [0.1])
    bad = lambda X: np.where(X[:, 0] > 1.0, np.nan, 0.0)  # noqa: E731
    with pytest.raises(FloatingPointError, match="evaluation 0 of 2"):
        central_differences(bad, np.ones(2), np.ones((1, 2)), [0.1])
    with pytest.raises(FloatingPointError):
        evaluate_batched(lambda X: np.full(X.shape[0], np.inf), np.ones((3, 2)))


def test_as_batched_and_additive_noise():
    f = as_batched(lambda z: float(z @ z))
    np.testing.assert_allclose(f(np.array([[1.0, 2.0], [0.0, 3.0]])), [5.0, 9.0])
    noisy = with_additive_noise(f, 0.5, np.random.default_rng(3))
    pts = np.zeros((4, 2))
    np.testing.assert_allclose(noisy(pts), 0.5 * np.random.default_rng(3).standard_normal(4))
    with pytest.raises(ValueError, match="sigma"):
        with_additive_noise(f, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        with_additive_noise(f, 1.0, 3)
