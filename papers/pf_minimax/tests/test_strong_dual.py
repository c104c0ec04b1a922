"""The matrix game with a strongly concave dual: gradients, closed forms and gap identities from the definitions."""
import numpy as np
import pytest

from papers.pf_minimax.methods import run_method
from papers.pf_minimax.problems import MatrixGame, RegularizedMatrixGame


def _game(mu_y=0.3, seed=0, n=4, m=3):
    return RegularizedMatrixGame(np.random.default_rng(seed).uniform(-1, 1, (n, m)), mu_y)


def test_constants_and_regime():
    g = _game(0.3)
    assert g.regime == "cc" and g.mu_y == 0.3 and g.L_yy == 0.3 and g.L_xx == 0.0
    assert g.L_xy == pytest.approx(np.linalg.norm(g.A, 2))
    np.testing.assert_allclose(g.ybar, np.full(3, 1 / 3))


def test_grad_y_matches_central_differences():
    g, rng = _game(), np.random.default_rng(1)
    x, y = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(3))
    h = 1e-6
    fd = [(g.value(x, y + h * e) - g.value(x, y - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(g.grad_y(x, y), fd, atol=1e-8)
    fdx = [(g.value(x + h * e, y) - g.value(x - h * e, y)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(g.grad_x(x, y), fdx, atol=1e-8)


def test_smoothed_max_is_the_maximum_over_a_simplex_grid():
    """m = 2: Phi(x) = max over y = (t, 1-t) of f, checked on a fine grid of t."""
    A = np.array([[1.0, -0.5], [0.2, 0.4], [-1.0, 0.3]])
    g = RegularizedMatrixGame(A, 0.7)
    x = np.array([0.5, 0.3, 0.2])
    ts = np.linspace(0, 1, 200001)
    vals = [g.value(x, np.array([t, 1 - t])) for t in ts]
    phi, ystar = g.smoothed_max(x)
    assert phi == pytest.approx(max(vals), abs=1e-9)
    assert ystar[0] == pytest.approx(ts[int(np.argmax(vals))], abs=1e-5)
    # extra smoothing mu adds to the curvature: mu_y + mu
    phi2, _ = g.smoothed_max(x, 0.5)
    vals2 = [v - 0.25 * ((t - 0.5) ** 2 + (0.5 - t) ** 2) for v, t in zip(vals, ts)]
    assert phi2 == pytest.approx(max(vals2), abs=1e-9)


def test_gap_is_zero_at_the_saddle_of_the_symmetric_game():
    """Identity game: by symmetry (x, y) = (1/n, 1/n) is the saddle point, and Gap = 0 there exactly."""
    g = RegularizedMatrixGame(np.eye(3), 0.5)
    c = np.full(3, 1 / 3)
    assert g.duality_gap(c, c) == pytest.approx(0.0, abs=1e-15)
    # away from the saddle the gap is positive and equals Phi(x) - min_x' f(x', y) by definition
    x, y = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.2, 0.6])
    phi = g.smoothed_max(x)[0]
    direct = phi - min(g.value(e, y) for e in np.eye(3))
    assert g.duality_gap(x, y) == pytest.approx(direct, abs=1e-14)
    assert direct > 0


def test_zero_matrix_game_has_value_zero_and_y_at_the_centre():
    g = RegularizedMatrixGame(np.zeros((3, 4)), 1.0)
    phi, ystar = g.smoothed_max(np.array([0.2, 0.3, 0.5]))
    assert phi == 0.0
    np.testing.assert_allclose(ystar, np.full(4, 0.25))


def test_gap_upper_bounds_the_primal_gap():
    """Gap(x, y) >= Phi(x) - Phi(x*) for every y; Phi(x*) from a long projected run."""
    g = _game(0.2, seed=3)
    ref = run_method("proj", g, 20000, mu0=0.0)
    phi_star = g.smoothed_max(ref.x)[0]
    assert ref.measure[-1] < 1e-8
    rng = np.random.default_rng(2)
    for _ in range(20):
        x, y = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(3))
        assert g.duality_gap(x, y) >= g.smoothed_max(x)[0] - phi_star - 1e-10


def test_algorithms_converge_and_frozen_dual_does_not():
    g = _game(0.2, seed=4, n=8, m=6)
    for method in ("v_x", "v_y", "v_xy"):
        tr = run_method(method, g, 3000, mu0=0.0, record_every=100)
        assert tr.measure[-1] < 0.1 * tr.measure[1]
        frozen = run_method(method, g, 3000, mu0=0.0, freeze_y=True, record_every=100)
        assert frozen.measure[-1] > 10 * tr.measure[-1]


def test_bad_mu_y_is_refused():
    A = np.eye(2)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="mu_y"):
            RegularizedMatrixGame(A, bad)
    assert isinstance(RegularizedMatrixGame(A, 1.0), MatrixGame)
