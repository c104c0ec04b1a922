"""Problems: closed-form game values, smoothing formulas, gaps and bad inputs."""
import math

import numpy as np
import pytest

from papers.pf_minimax import problems
from papers.pf_minimax.problems import RPS_MATRIX, game_value, make_problem


@pytest.mark.parametrize("n", [1, 3, 10])
def test_identity_game_value_closed_form(n):
    value, x, y = game_value(np.eye(n))
    assert abs(value - 1.0 / n) < 1e-9
    assert np.allclose(x, 1.0 / n, atol=1e-9) and np.allclose(y, 1.0 / n, atol=1e-9)


def test_rps_and_matching_pennies_values():
    value, x, y = game_value(RPS_MATRIX)
    assert abs(value) < 1e-9 and np.allclose(x, 1 / 3, atol=1e-9) and np.allclose(y, 1 / 3, atol=1e-9)
    value, x, _ = game_value([[1.0, -1.0], [-1.0, 1.0]])
    assert abs(value) < 1e-9 and np.allclose(x, 0.5, atol=1e-9)


def test_duality_gap_is_zero_at_equilibrium_and_nonnegative():
    game = make_problem("rps")
    assert game.duality_gap(np.full(3, 1 / 3), np.full(3, 1 / 3)) == 0.0
    # pure strategies (e_0, e_0): max_j (A^T e_0)_j = 1, min_i (A e_0)_i = -1
    assert game.duality_gap(np.eye(3)[0], np.eye(3)[0]) == 2.0
    g = make_problem("uniform_game", n=6, m=5, seed=3)
    value, x, y = game_value(g.A)
    assert abs(g.duality_gap(x, y)) < 1e-8
    assert math.isclose(g.L_xy, np.linalg.svd(g.A, compute_uv=False)[0])


def test_game_smoothed_max_closed_form():
    game = make_problem("matrix_game", A=np.array([[1.0, 0.0], [1.0, 0.0]]))
    x = np.array([0.5, 0.5])                    # A^T x = (1, 0)
    value, y = game.smoothed_max(x, 4.0)       # P(1/2 + (1, 0)/4) = P(0.75, 0.5) = (0.625, 0.375)
    assert np.allclose(y, [0.625, 0.375]) and math.isclose(value, 0.5625)
    value, y = game.smoothed_max(x, 0.0)       # mu_y + mu = 0: a vertex
    assert np.array_equal(y, [1.0, 0.0]) and value == 1.0


def test_nuclear_game_adjoint_and_gap_identity():
    g = make_problem("nuclear_game", p=6, J=4, s=5, delta=2.0, seed=1)
    y = np.array([0.1, 0.2, 0.3, 0.4])
    dense = g.adjoint(y).toarray()
    assert np.allclose(dense, (g.M.T @ y).reshape(6, 6))
    W = np.random.default_rng(0).normal(size=(6, 6))
    W = g.X.project(W)
    expected = (np.max(g.M @ W.ravel() - g.c) + 2.0 * np.linalg.svd(dense, compute_uv=False)[0] + g.c @ y)
    assert math.isclose(g.duality_gap(W, y), expected, rel_tol=1e-10)
    assert math.isclose(g.L_xy, np.linalg.svd(g.M.toarray(), compute_uv=False)[0], rel_tol=1e-10)


def _tiny_dro(lam):
    features = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    return make_problem("dro", features=features, labels=[1, -1, 1], groups=[0, 1, 1], lam=lam, radius=1.0)


def test_dro_at_zero_and_gradient_by_hand():
    p = _tiny_dro(0.0)
    assert p.regime == "ncc" and p.objective(np.zeros(2)) == 0.5        # every loss is 1/2 at x = 0
    # grad ell_i(0) = -l_i * 1/4 * a_i; group weights y_j / n_j with y = (1, 0): only example 0 counts
    assert np.allclose(p.grad_x(np.zeros(2), np.array([1.0, 0.0])), [-0.25, 0.0])
    # y = (0, 1): examples 1, 2 with weight 1/2: -(1/8)(-1)(0, 2) - (1/8)(1)(1, 1) = (-1/8, 1/8)
    assert np.allclose(p.grad_x(np.zeros(2), np.array([0.0, 1.0])), [-0.125, 0.125])
    assert math.isclose(p.L_xy, 0.25 * np.linalg.svd(p.A, compute_uv=False)[0] / 1.0)
    assert math.isclose(p.L_xx, 0.1 * 2.0 ** 2)


def test_dro_smoothed_max_closed_form():
    p = _tiny_dro(0.5)                          # mu_y = lam J = 1
    assert p.regime == "ncsc" and p.mu_y == 1.0
    x = np.array([0.3, -0.2])
    L = p.losses(x)
    value, y = p.smoothed_max(x, 1.0)           # y* = P(1/2 + L/2)
    assert np.allclose(y, problems.project_simplex(0.5 + L / 2.0))
    assert math.isclose(value, y @ L - 1.0 * np.sum((y - 0.5) ** 2))
    g = p.grad_x(x, y)
    assert math.isclose(p.fw_gap(x, 1.0), g @ x + 1.0 * np.max(np.abs(g)))


def test_regime_guards():
    with pytest.raises(ValueError, match="duality_gap"):
        _tiny_dro(0.1).duality_gap(np.zeros(2), np.full(2, 0.5))
    with pytest.raises(ValueError, match="fw_gap"):
        make_problem("rps").fw_gap(np.full(3, 1 / 3))


@pytest.mark.parametrize("A, msg", [(np.zeros(3), "2-D"), (np.zeros((0, 2)), "empty"),
                                    (np.array([[1.0, np.nan]]), "NaN")])
def test_bad_game_matrix(A, msg):
    with pytest.raises(ValueError, match=msg):
        make_problem("matrix_game", A=A)
    with pytest.raises(ValueError, match=msg):
        game_value(A)


def test_game_value_solver_failure(monkeypatch):
    class Failed:
        status, message = 4, "numerical difficulties"

    monkeypatch.setattr(problems, "linprog", lambda *a, **k: Failed())
    with pytest.raises(RuntimeError, match="HiGHS.*status 4"):
        game_value(np.eye(2))


@pytest.mark.parametrize("kwargs, msg", [
    (dict(labels=[1, 0, 1]), "labels"),
    (dict(groups=[0, 2, 2]), "groups"),
    (dict(groups=[0, -1, 1]), "groups"),
    (dict(lam=-0.1), "lam"),
    (dict(labels=[1, -1]), "labels has length"),
])
def test_bad_dro_inputs(kwargs, msg):
    base = dict(features=np.eye(3), labels=[1, -1, 1], groups=[0, 1, 1], lam=0.1, radius=1.0)
    base.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        make_problem("dro", **base)


def test_unknown_problem_and_synthetic_shapes():
    with pytest.raises(ValueError, match="name"):
        make_problem("nope")
    p = make_problem("dro_synthetic", N=40, d=10, lam=0.0, grouping="block", seed=0)
    assert p.J == 10 and p.A.shape == (40, 10) and p.counts.tolist() == [4] * 10
    with pytest.raises(ValueError, match="grouping"):
        make_problem("dro_synthetic", N=40, d=10, lam=0.0, grouping="digit")


def test_text_like_corpus_draws_and_bad_inputs():
    from papers.pf_minimax.problems import text_like_corpus
    words, labels, value = text_like_corpus(30, 40, 4, 7, topic_words=5, seed=3)
    assert words.shape == (30, 7) and labels.shape == (30,)
    assert words.min() >= 0 and words.max() < 40 and set(labels) <= set(range(4))
    assert value == pytest.approx(1 / np.sqrt(7))
    again = text_like_corpus(30, 40, 4, 7, topic_words=5, seed=3)
    np.testing.assert_array_equal(words, again[0])
    with pytest.raises(ValueError, match="C >= 2"):
        text_like_corpus(30, 40, 1, 7)
    with pytest.raises(ValueError, match="s must"):
        text_like_corpus(30, 40, 3, 0)


def test_robust_multiclass_is_a_margin_game():
    """f(W, y) = sum_j y_j (1 + <a_i, w_c - w_label>) over pairs (i, c != label); the dense adjoint equals the
    triplet-built one, the gap formula holds at a vertex pair, and ||M||_2 matches a dense computation."""
    from papers.pf_minimax.problems import NuclearGame
    g = make_problem("robust_multiclass", N=12, d=25, C=3, s=4, delta=2.0, seed=1)
    assert g.X.shape == (25, 3) and g.Y.dim == 12 * 2
    rng = np.random.default_rng(0)
    y = rng.dirichlet(np.ones(g.Y.dim))
    dense = g.adjoint(y)
    sparse = NuclearGame.adjoint(g, y).toarray()
    np.testing.assert_allclose(dense, sparse, atol=1e-14)
    np.testing.assert_allclose(dense.sum(axis=1), 0.0, atol=1e-14)  # each A_j moves weight between two classes
    W = rng.standard_normal((25, 3))
    W *= 1.0 / np.linalg.svd(W, compute_uv=False).sum()
    np.testing.assert_allclose(g.grad_y(W, y), g.M @ W.ravel() + 1.0)
    assert g.L_xy == pytest.approx(np.linalg.norm(g.M.toarray(), 2), rel=1e-8)
    sigma = np.linalg.svd(dense, compute_uv=False)[0]
    assert g.duality_gap(W, y) == pytest.approx(np.max(g.M @ W.ravel() + 1.0) + 2.0 * sigma - y.sum())
