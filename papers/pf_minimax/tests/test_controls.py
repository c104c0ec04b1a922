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


def test_no_smoothing_lmo_lmo_is_spfw_with_the_dual_update_first():
    """mu0 = 1e-12 switches the smoothing off: LMO-LMO's iterates equal the alternating Frank-Wolfe loop
    y <- y + 2/(k+2) (LMO_Y(-grad_y f(x, y)) - y), then x <- x + 2/(k+2) (LMO_X(grad_x f(x, y_new)) - x)."""
    from papers.pf_minimax.methods import run_method
    from papers.pf_minimax.problems import make_problem

    game = make_problem("uniform_game", n=7, m=5, seed=3)
    x, y = game.X.center(), game.Y.center()
    for k in range(40):
        g = 2.0 / (k + 2.0)
        y = y + g * (game.Y._lmo(-game.grad_y(x, y)) - y)
        x = x + g * (game.X._lmo(game.grad_x(x, y)) - x)
    tr = run_method("v_xy", game, 40, mu0=1e-12)
    np.testing.assert_allclose(tr.x, x, atol=1e-12)
    np.testing.assert_allclose(tr.y, y, atol=1e-12)
