"""Helpers of the experiments module."""
import pytest

from papers.romberg_zoge.experiments import _bc_equal_weights_control, _keep_last, loglog_slope


def test_loglog_slope_of_power_law():
    assert abs(loglog_slope([0.1, 0.05, 0.025], [3 * r ** 4 for r in (0.1, 0.05, 0.025)]) - 4.0) < 1e-12


def test_keep_last_stores_every_call_output():
    store, calls = {}, iter([1, 2, 3])
    call = _keep_last(store, "run", lambda: next(calls))
    assert call() is None and store["run"] == 1
    call()
    assert store["run"] == 2


def test_equal_weights_control_rejects_a_wrong_number_of_weights():
    bp = {"methods": [{"name": "two_point_Q4", "method": "two_point", "Q": 4},
                      {"name": "romberg_R1_Q4", "method": "romberg", "level": 1, "Q": 4}],
          "ratio_pair": ["two_point_Q4", "romberg_R1_Q4"], "control_weights": [1.0]}
    with pytest.raises(ValueError, match="2 weights"):
        _bc_equal_weights_control(None, None, bp, None, [])
    bp["ratio_pair"] = ["romberg_R1_Q4", "two_point_Q4"]
    bp["control_weights"] = [0.5, 0.5]
    with pytest.raises(ValueError, match="Romberg method"):
        _bc_equal_weights_control(None, None, bp, None, [])
