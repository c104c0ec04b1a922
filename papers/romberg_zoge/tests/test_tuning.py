"""The radius map and the tuned comparison: keys, selection, the second moments at small and large r, controls."""
import math
from pathlib import Path

import numpy as np
import pytest

from shared.experiment import RunContext

from papers.romberg_zoge.problems import ExponentialSeparable, QuadraticSeparable
from papers.romberg_zoge.tuning import _exponential_case, _paired, radius_key, radius_map, select_best


def _ctx():
    return RunContext(name="t", scale="smoke", seed=5, out_dir=Path("."))


def test_radius_key_and_selection():
    assert radius_key(0.5) == "r0p5" and radius_key(1.0) == "r1" and radius_key(0.0125) == "r0p0125"
    assert select_best({(0.1, 0.2): 3.0, (0.2, 0.2): 1.0, (0.4, 0.2): math.inf}) == (0.2, 0.2)
    assert select_best({"a": 1.0, "b": 1.0}) == "a"
    with pytest.raises(ValueError, match="diverged"):
        select_best({"a": math.inf})
    assert _paired([1.0, -2.0], [0.5, 1.0]) == [0.5, -3.0]


def test_radius_map_levels_coincide_at_small_r_and_differ_at_large_r():
    rows, m = radius_map({"radii": [0.001, 1.0], "seeds": [0, 1], "n_directions": 300, "kernel_radius": 0.01},
                         _ctx())
    small, large = m["samples"]["ratio_R1_over_R0"]["r0p001"], m["samples"]["ratio_R1_over_R0"]["r1"]
    np.testing.assert_allclose(small, 1.0, atol=1e-4)          # every level has the two-point leading term
    assert min(large) > 1.05                                    # higher-order terms raise R = 1's second moment
    # the kernel estimator inflates the normalised second moment towards (6.25 d - 1)/(d + 1), about 5.9 at d = 20
    assert min(m["samples"]["kernel_ratio"]) > 3 and max(m["samples"]["R1_ratio"]) < 1.5
    # at a fixed budget two-point averages two directions: about half the error at small r
    assert all(0.4 < v < 1.0 for v in m["samples"]["budget_log_ratio"]["r0p001"])
    assert len(rows) == 2 * 2 * (3 + 2)


def test_control_quadratic_has_exact_central_differences():
    q, e = QuadraticSeparable(5), ExponentialSeparable(5)
    np.testing.assert_array_equal(q.c, e.c)
    x, u, h = np.linspace(0, 1, 5), np.ones(5) / 5, 0.7
    central = (q(x + h * u) - q(x - h * u)) / (2 * h)
    assert central[0] == pytest.approx(q.gradient(x) @ u, rel=1e-12)
    make = _exponential_case({"dim": 5, "noise_sigma": 0.1}, control=True)
    f1, x0, score = make(3)
    f2, _, _ = make(3)
    np.testing.assert_array_equal(f1(np.zeros((2, 5))), f2(np.zeros((2, 5))))    # same noise stream per seed
    assert score({"x_avg": q.c + 1.0}) == pytest.approx(math.log(5.0))
