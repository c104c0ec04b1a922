"""Metrics: exact slopes and envelopes of known sequences, the jackknife identity, bad inputs."""
import math

import numpy as np
import pytest

from papers.goma.metrics import first_reach, jackknife_se, loglog_slope, rate_envelope


def test_slope_of_power_law_is_exact():
    k = np.arange(1001, dtype=float)
    h = np.empty_like(k)
    h[0], h[1:] = 1.0, 3.0 * k[1:] ** -2.0
    assert loglog_slope(h, 100) == pytest.approx(-2.0, abs=1e-12)
    assert loglog_slope(h, 10, 500) == pytest.approx(-2.0, abs=1e-12)
    h[1:] = 0.5 * k[1:] ** -0.5
    assert loglog_slope(h, 100) == pytest.approx(-0.5, abs=1e-12)


def test_slope_floor_at_zero():
    h = np.zeros(50)
    assert loglog_slope(h, 1) == pytest.approx(0.0, abs=1e-12)  # floored at 1e-300: constant


def test_slope_uses_every_integer():
    # A two-regime sequence: weights follow the integer grid, so the fit is pulled to the late regime.
    k = np.arange(1, 10001, dtype=float)
    h = np.concatenate([[1.0], np.where(k < 1000, k ** -1.0, 1e-3 * (k / 1000) ** -2.0)])
    assert loglog_slope(h, 1) < -1.5


@pytest.mark.parametrize("args, word", [
    ((np.ones(10), 0), "k_lo"),
    ((np.ones(10), 5, 12), "k_hi"),
    ((np.ones(10), 5, 5), "k_hi"),
    ((np.ones((3, 3)), 1), "1-D"),
    ((np.array([1.0, 1.0, np.inf, 1.0]), 1), "finite"),
])
def test_slope_bad_inputs(args, word):
    with pytest.raises(ValueError, match=word):
        loglog_slope(*args)


def test_envelope_of_known_sequence():
    k = np.arange(101, dtype=float)
    h = np.concatenate([[5.0], 2.0 / k[1:] ** 2])
    assert rate_envelope(h, L=2.0, dist0_sq=0.5) == pytest.approx(2.0 / (4 * 0.5))
    h[10] = 1.0  # a bump at k = 10 sets the envelope: 100 / 2
    assert rate_envelope(h, L=2.0, dist0_sq=0.5) == pytest.approx(50.0)


@pytest.mark.parametrize("L, d0, word", [(0.0, 1.0, "L must"), (float("inf"), 1.0, "L must"),
                                         (-1.0, 1.0, "L must"), (1.0, 0.0, "dist0_sq")])
def test_envelope_bad_inputs(L, d0, word):
    with pytest.raises(ValueError, match=word):
        rate_envelope(np.ones(5), L, d0)


def test_first_reach():
    h = np.array([1.0, 0.5, 0.2, 1e-5, 1e-7])
    assert first_reach(h, 1e-4) == 3
    assert first_reach(h, 1e-8) is None


def test_jackknife_of_mean_is_standard_error():
    runs = np.random.default_rng(0).standard_normal((12, 3))
    se = jackknife_se(runs, lambda mean: mean[0])
    assert se == pytest.approx(runs[:, 0].std(ddof=1) / math.sqrt(12), rel=1e-12)
