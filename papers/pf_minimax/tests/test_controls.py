"""Known answers for the controls and statistics added in the audit of issue 28 (late-window slope, the tuned
projected comparator's grid)."""
import numpy as np
import pytest

from papers.pf_minimax.experiments import _projected_candidates, loglog_slope


def test_late_window_slope_reads_the_last_decade_only():
    """A trace k^-0.1 up to k = 1000 and 1000^0.4 k^-0.5 after it (continuous at 1000): the slope over
    k in [1000, 10000] is the late exponent -0.5 exactly; over [100, 10000] it lies between the two."""
    k = np.arange(1, 10001)
    values = np.where(k < 1000, k ** -0.1, 1000.0 ** 0.4 * k ** -0.5)
    assert loglog_slope(k, values, k_min=1000) == pytest.approx(-0.5, abs=1e-12)
    assert -0.5 < loglog_slope(k, values) < -0.1


def test_projected_candidates_match_projections():
    """PROJ runs K_proj updates per mu0; PEG K_proj // 2 (two nuclear-ball projections per update)."""
    cands = _projected_candidates({"K_proj": 31, "proj_mu0_grid": [1.0, 4.0], "peg_steps": [0.5]})
    assert [(c[0], c[1], c[3]) for c in cands] == [("proj_mu0_1", "proj", 31), ("proj_mu0_4", "proj", 31),
                                                   ("peg_0.5", "peg", 15)]
    assert cands[1][2] == {"mu0": 4.0} and cands[2][2] == {"peg_step": 0.5}


def test_projected_candidates_need_a_grid():
    with pytest.raises(ValueError, match="proj_mu0_grid or peg_steps"):
        _projected_candidates({"K_proj": 10})
