"""Breast-cancer logistic regression, Styblinski-Tang, the float16 forward pass and the nevergrad harness:
closed forms, exact identities and bad inputs."""
import math

import numpy as np
import pytest

from papers.romberg_zoge.estimator import romberg_weights, romberg_zoge
from papers.romberg_zoge.experiments import _nevergrad_run, benchmarks
from papers.romberg_zoge.problems import BreastCancerLogistic, StyblinskiTang


@pytest.fixture(scope="module")
def bc():
    return BreastCancerLogistic(l2=0.05)


def test_breast_cancer_data_and_gradient(bc):
    assert bc.dim == 30 and bc.BA.shape == (569, 30)
    assert np.allclose(np.abs(bc.BA).mean(axis=0) > 0, True)
    # standardised features: every column of (b_i a_i)^2 has mean 1
    assert np.allclose((bc.BA ** 2).mean(axis=0), 1.0)
    # at x = 0 every loss term is log 2
    assert bc(np.zeros(30))[0] == pytest.approx(math.log(2.0), abs=1e-15)
    x = np.random.default_rng(0).normal(0, 0.3, 30)
    e = 1e-6 * np.eye(30)
    fd = (bc(x + e) - bc(x - e)) / 2e-6
    assert np.max(np.abs(fd - bc.gradient(x))) < 1e-8


def test_breast_cancer_smoothing_identities(bc):
    x = np.random.default_rng(1).normal(0, 0.3, 30)
    assert bc.smoothed_value(x, [0.0]) == pytest.approx(bc(x)[0], rel=1e-13)
    # the l2 part alone: E ||x + h u||^2 = ||x||^2 + h^2 d, so weights summing to 1 give ||x||^2 exactly
    h = 0.7
    e = 1e-6 * np.eye(30)
    fd = np.array([(bc.smoothed_value(x + e[i], [h]) - bc.smoothed_value(x - e[i], [h])) / 2e-6 for i in range(30)])
    assert np.max(np.abs(fd - bc.smoothed_gradient(x, [h]))) < 1e-8
    # Monte Carlo check of f_h(x) = E f(x + h u)
    U = np.random.default_rng(2).standard_normal((20000, 30))
    vals = bc(x + h * U)
    assert abs(vals.mean() - bc.smoothed_value(x, [h])) < 4 * vals.std() / math.sqrt(vals.size)
    # combined weights are linear
    w = romberg_weights(1)
    combo = bc.smoothed_value(x, [h, h / 2], w)
    assert combo == pytest.approx(w[0] * bc.smoothed_value(x, [h]) + w[1] * bc.smoothed_value(x, [h / 2]), rel=1e-13)


def test_breast_cancer_minimiser_is_stationary(bc):
    x_star = bc.smoothed_minimiser([0.0])
    assert np.max(np.abs(bc.gradient(x_star))) < 1e-7


def test_breast_cancer_bad_input():
    with pytest.raises(ValueError, match="l2"):
        BreastCancerLogistic(l2=0.0)
    b = BreastCancerLogistic()
    with pytest.raises(ValueError, match="radii"):
        b.smoothed_value(np.zeros(30), [0.1, 0.2], [1.0])
    with pytest.raises(ValueError, match="radii"):
        b.smoothed_gradient(np.zeros(30), [-0.1])
    with pytest.raises(ValueError, match="x must have shape"):
        b.smoothed_gradient(np.zeros(29), [0.1])


def test_styblinski_tang_values_and_fixed_points():
    st = StyblinskiTang(20)
    x_star = st.fixed_point(0.0, 0)
    assert x_star == pytest.approx(-2.903534, abs=1e-6)          # known minimiser per coordinate
    assert st(np.full(20, x_star))[0] == pytest.approx(20 * -39.16617, rel=1e-6)   # known minimum -39.16617 d
    assert st.fixed_point(0.5, 1) == x_star and st.fixed_point(0.5, 3) == x_star
    # two-point: a root of the Gaussian-smoothed derivative E f'(x + h z), by Gauss-Hermite quadrature
    h = 0.5
    x2 = st.fixed_point(h, 0)
    t, w = np.polynomial.hermite.hermgauss(20)
    smoothed = np.sum(w / math.sqrt(math.pi) * 0.5 * (4 * (x2 + h * math.sqrt(2) * t) ** 3
                                                      - 32 * (x2 + h * math.sqrt(2) * t) + 5))
    assert abs(smoothed) < 1e-10 and x2 > x_star
    g = st.gradient(np.full(20, x_star))
    assert np.max(np.abs(g)) < 1e-12


def test_styblinski_tang_romberg_is_exact_two_point_is_not():
    st = StyblinskiTang(6)
    rng = np.random.default_rng(3)
    x, U = rng.standard_normal(6), rng.standard_normal((5, 6))
    target = (U @ st.gradient(x))[:, None] * U
    for R in (1, 2):
        err = romberg_zoge(st, x, U, 0.8, R, average=False) - target
        assert np.max(np.abs(err)) < 1e-10 * np.max(np.abs(target))
    # two-point residual of 0.5 x^4: 0.5 * 4 r^2 (sum x_i u_i^3) u
    r = 0.8
    pred = (2 * r ** 2 * (U ** 3 @ x))[:, None] * U
    assert np.allclose(romberg_zoge(st, x, U, r, 0, average=False) - target, pred, rtol=1e-9, atol=1e-11)


def test_styblinski_tang_bad_input():
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="dim"):
            StyblinskiTang(bad)
    with pytest.raises(ValueError, match="radius"):
        StyblinskiTang.fixed_point(-0.1, 0)
    with pytest.raises(ValueError, match="level"):
        StyblinskiTang.fixed_point(0.1, -1)


def test_benchmarks_rejects_unknown_method():
    params = {"record_every": 1, "breast_cancer": {"l2": 0.05, "radius": 1.0, "iterations": 2, "seeds": [0],
              "lr": 0.02, "lr_t0": 500, "lr_power": 0.6, "ratio_pair": ["a", "b"],
              "methods": [{"name": "a", "method": "kernel", "Q": 4}]}}

    class Ctx:
        seed = 0

    with pytest.raises(ValueError, match="method"):
        benchmarks(params, Ctx())


def test_nevergrad_uses_the_budget_and_is_deterministic():
    pytest.importorskip("nevergrad")
    calls = []

    def sphere(X):
        calls.append(len(X))
        return ((X - 1.0) ** 2).sum(axis=1)

    x1, used = _nevergrad_run(sphere, np.zeros(3), 40, 7, 4)
    assert used == 40 and sum(calls) == 40 and max(calls) <= 4
    x2, _ = _nevergrad_run(sphere, np.zeros(3), 40, 7, 4)
    assert np.array_equal(x1, x2)
    assert sphere(x1[None])[0] < 3.0                                # improves on the start (value 3)
