"""Robust dictionary learning: gradients against finite differences, LMO optimality, known objective values."""
import math

import numpy as np
import pytest

from papers.pf_minimax.dictionary import (DictionaryLearning, atom_recovery, make_dictionary_problem,
                                          planted_data, project_l1_columns)
from papers.pf_minimax.methods import run_method
from papers.pf_minimax.sets import L1Ball


def _prob(**kw):
    return make_dictionary_problem(5, 3, 7, 2, 0.1, seed=3, **kw)


def _feasible(prob, rng):
    """A random point of X: a random matrix scaled into the nuclear ball, codes scaled into the l1 balls."""
    X = prob.X
    D = rng.standard_normal((X.p, X.r))
    D *= rng.uniform(0.1, 1.0) * X.delta / np.linalg.svd(D, compute_uv=False).sum()
    Z = rng.standard_normal((X.r, X.n))
    Z *= rng.uniform(0.1, 1.0, X.n) * X.tau / np.abs(Z).sum(axis=0)
    return X.join(D, Z)


def test_gradients_match_central_differences():
    prob, rng = _prob(), np.random.default_rng(0)
    for _ in range(5):
        x, y = _feasible(prob, rng), rng.dirichlet(np.ones(prob.X.n))
        g = prob.grad_x(x, y)
        h = 1e-6
        for _ in range(10):
            u = rng.standard_normal(x.size)
            fd = (prob.value(x + h * u, y) - prob.value(x - h * u, y)) / (2 * h)
            assert abs(fd - g @ u) <= 1e-6 * max(1.0, np.linalg.norm(g) * np.linalg.norm(u))
        # f is linear in y: grad_y f = (l_i)_i, and f(x, y) = <y, l(x)>
        assert np.allclose(prob.grad_y(x, y), prob.losses(x))
        assert math.isclose(prob.value(x, y), y @ prob.losses(x))


def test_objective_at_known_points():
    A, D_star, Z_star, _, _ = planted_data(6, 4, 9, 2, 0.0, seed=1)
    prob = DictionaryLearning(A, np.zeros((6, 4)), 4.0, 1.0, 4)
    x_star = prob.X.join(D_star, Z_star)
    assert np.allclose(prob.losses(x_star), 0.0, atol=1e-24)          # noiseless planted point
    assert prob.objective(x_star) <= 1e-24
    x_zero = prob.X.join(np.zeros((6, 4)), np.zeros((4, 9)))
    assert np.allclose(prob.losses(x_zero), 0.5 * np.sum(A * A, axis=0))   # l_i(0) = ||a_i||^2 / 2
    assert np.allclose(prob.grad_x(x_zero, np.full(9, 1 / 9)), 0.0)       # x = 0 is stationary
    # the planted pair is feasible: ||D*||_* <= sqrt(r) ||D*||_F = r and ||z*_i||_1 <= 1
    assert np.linalg.svd(D_star, compute_uv=False).sum() <= 4.0 + 1e-12
    assert np.abs(Z_star).sum(axis=0).max() <= 1.0 + 1e-12
    assert np.allclose(np.linalg.norm(D_star, axis=0), 1.0)
    assert np.all((Z_star != 0).sum(axis=0) == 2)


def test_noisy_planted_objective_is_half_the_worst_noise():
    A, D_star, Z_star, _, _ = planted_data(6, 4, 9, 2, 0.3, seed=2)
    prob = DictionaryLearning(A, np.zeros((6, 4)), 4.0, 1.0, 4)
    noise = A - D_star @ Z_star
    assert math.isclose(prob.objective(prob.X.join(D_star, Z_star)), 0.5 * np.max(np.sum(noise ** 2, axis=0)))


def test_lmo_closed_form_and_optimality():
    prob, rng = _prob(), np.random.default_rng(1)
    X = prob.X
    for _ in range(5):
        g = rng.standard_normal(X.dim)
        s = X.lmo(g)
        gD, gZ = X.split(g)
        # min over the product = -delta sigma_max(g_D) - tau sum_i ||g_{z_i}||_inf
        closed = -X.delta * np.linalg.svd(gD, compute_uv=False)[0] - X.tau * np.abs(gZ).max(axis=0).sum()
        assert math.isclose(g @ s, closed, rel_tol=1e-10)
        sD, sZ = X.split(s)
        assert np.linalg.svd(sD, compute_uv=False).sum() <= X.delta * (1 + 1e-12)
        assert np.allclose(np.abs(sZ).sum(axis=0), X.tau)
        for _ in range(50):                                      # no feasible point does better
            assert g @ s <= g @ _feasible(prob, rng) + 1e-12


def test_lmo_ties_break_to_smallest_index():
    prob = _prob()
    g = np.zeros(prob.X.dim)
    _, sZ = prob.X.split(prob.X.lmo(g))
    assert np.all(sZ[0] == -prob.X.tau) and np.all(sZ[1:] == 0)   # argmax of |0| is row 0, sign(0) = +1


def test_project_l1_columns_matches_the_l1_ball_projection():
    rng = np.random.default_rng(2)
    V = rng.standard_normal((6, 40)) * rng.uniform(0.05, 2.0, 40)
    P = project_l1_columns(V, 1.5)
    ball = L1Ball(6, 1.5)
    for i in range(V.shape[1]):
        assert np.allclose(P[:, i], ball.project(V[:, i]), atol=1e-12)
    assert np.all(np.abs(P).sum(axis=0) <= 1.5 + 1e-12)
    assert np.allclose(project_l1_columns(P, 1.5), P)                 # idempotent


def test_projection_keeps_points_of_the_set_and_lands_in_it():
    prob, rng = _prob(), np.random.default_rng(3)
    x = _feasible(prob, rng)
    assert np.allclose(prob.X.project(x), x)
    v = 5 * rng.standard_normal(prob.X.dim)
    D, Z = prob.X.split(prob.X.project(v))
    assert np.linalg.svd(D, compute_uv=False).sum() <= prob.X.delta * (1 + 1e-9)
    assert np.all(np.abs(Z).sum(axis=0) <= prob.X.tau * (1 + 1e-9))


def test_smoothed_max_danskin_and_fw_gap():
    prob, rng = _prob(), np.random.default_rng(4)
    for mu in (1.0, 0.1):
        x = _feasible(prob, rng)
        value, y = prob.smoothed_max(x, mu)
        d = y - prob.ybar
        assert math.isclose(value, prob.value(x, y) - 0.5 * mu * (d @ d))
        g = prob.grad_x(x, y)
        u = rng.standard_normal(x.size)
        u /= np.linalg.norm(u)
        h = 1e-6
        fd = (prob.smoothed_max(x + h * u, mu)[0] - prob.smoothed_max(x - h * u, mu)[0]) / (2 * h)
        assert abs(fd - g @ u) <= 1e-5 * max(1.0, np.linalg.norm(g))
        gD, gZ = prob.X.split(g)
        closed = g @ x + prob.X.delta * np.linalg.svd(gD, compute_uv=False)[0] + prob.X.tau * np.abs(gZ).max(axis=0).sum()
        assert math.isclose(prob.fw_gap(x, mu), closed, rel_tol=1e-10)
        assert prob.fw_gap(x, mu) >= 0
    # mu = 0: the vertex of the largest loss
    x = _feasible(prob, rng)
    value, y = prob.smoothed_max(x, 0.0)
    assert value == prob.objective(x) and y[np.argmax(prob.losses(x))] == 1.0


def test_measure_mu_fixes_the_recorded_measure():
    prob = _prob(measure_mu=0.05)
    x = prob.X.center()
    assert prob._fw_gap(x, 0.7) == prob.fw_gap(x, 0.05) != prob.fw_gap(x, 0.7)


def test_lipschitz_bounds_hold():
    prob, rng = _prob(), np.random.default_rng(5)
    for _ in range(30):
        x1, x2 = _feasible(prob, rng), _feasible(prob, rng)
        y1, y2 = rng.dirichlet(np.ones(prob.X.n)), rng.dirichlet(np.ones(prob.X.n))
        dx = np.linalg.norm(x1 - x2)
        assert np.linalg.norm(prob.grad_x(x1, y1) - prob.grad_x(x2, y1)) <= prob.L_xx * dx
        assert np.linalg.norm(prob.grad_x(x1, y1) - prob.grad_x(x1, y2)) <= prob.L_xy * np.linalg.norm(y1 - y2)
        assert np.linalg.norm(prob.grad_y(x1, y1) - prob.grad_y(x2, y1)) <= prob.L_xy * dx
    scaled = _prob(lipschitz_scale=0.25)
    assert math.isclose(scaled.L_xx, 0.25 * prob.L_xx) and math.isclose(scaled.L_xy, 0.25 * prob.L_xy)


def test_start_point_and_determinism():
    a, b = _prob(), _prob()
    assert np.array_equal(a.A, b.A) and np.array_equal(a.X.center(), b.X.center())
    D0, Z0 = a.X.split(a.X.center())
    assert math.isclose(np.linalg.svd(D0, compute_uv=False).sum(), 0.5 * a.X.delta)
    assert np.allclose(np.abs(Z0).sum(axis=0), 0.5 * a.X.tau)
    t1 = run_method("v_xy", a, 30, record_every=10)
    t2 = run_method("v_xy", b, 30, record_every=10)
    assert np.array_equal(t1.measure, t2.measure) and np.array_equal(t1.x, t2.x)
    assert a.regime == "ncc" and a.mu_y == 0.0


def test_atom_recovery():
    _, D_star, _, _, _ = planted_data(8, 4, 5, 1, 0.0, seed=0)
    assert atom_recovery(D_star, D_star) == 1.0
    assert atom_recovery(-2.0 * D_star[:, ::-1], D_star) == 1.0     # sign, scale and order do not matter
    assert atom_recovery(np.zeros((8, 4)), D_star) == 0.0


@pytest.mark.parametrize("kwargs, match", [
    ({"s": 5}, "s must be <= r"), ({"noise": -1.0}, "noise"), ({"p": 0}, "p must be")])
def test_bad_data_inputs(kwargs, match):
    args = {"p": 4, "r": 3, "n": 5, "s": 2, "noise": 0.1, **kwargs}
    with pytest.raises(ValueError, match=match):
        planted_data(args["p"], args["r"], args["n"], args["s"], args["noise"])


def test_bad_problem_inputs():
    with pytest.raises(ValueError, match="start must lie in the set"):
        DictionaryLearning(np.ones((3, 4)), 10 * np.ones((3, 2)), 1.0, 1.0, 2)
    with pytest.raises(ValueError, match="lipschitz_scale"):
        _prob(lipschitz_scale=0.0)
    with pytest.raises(ValueError, match="A must be"):
        DictionaryLearning(np.array([[np.nan]]), np.zeros((1, 1)), 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="shape"):
        _prob().X.lmo(np.zeros(3))


def test_tune_seed_must_differ_from_evaluation_seeds():
    from papers.pf_minimax.dictionary_experiment import run_dictionary_learning

    params = {"p": 4, "r": 2, "n": 5, "s": 1, "noise": 0.1, "K": 10, "record_every": 5, "seeds": [0, 1],
              "tune_seed": 1, "lscale_grid": [0.1], "baseline_steps": [0.5], "baseline_lscale_grid": [0.1]}
    with pytest.raises(ValueError, match="tune_seed"):
        run_dictionary_learning(params, None)
