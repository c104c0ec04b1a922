"""Helpers of the experiments module."""
from papers.romberg_zoge.experiments import loglog_slope


def test_loglog_slope_of_power_law():
    assert abs(loglog_slope([0.1, 0.05, 0.025], [3 * r ** 4 for r in (0.1, 0.05, 0.025)]) - 4.0) < 1e-12
