"""The weight QP: hand-checked answers, identities of the correction matrices, a cvxpy cross-check, bad input."""
import numpy as np
import pytest

from papers.dream.aggregation import dream_weights, pcgrad_correction, project_simplex, solve_simplex_qp


def test_hand_check_two_tasks():
    lam, d = dream_weights(np.array([[3.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_allclose(lam, [0.1, 0.9], atol=1e-15)
    np.testing.assert_allclose(d, [0.3, 0.9], atol=1e-15)


def test_min_norm_equalises_inner_products_on_the_support():
    rng = np.random.default_rng(1)
    G = rng.standard_normal((4, 9))
    lam, d = dream_weights(G)
    assert abs(lam.sum() - 1) < 1e-12 and lam.min() >= 0
    ip = G @ d
    sup = lam > 1e-9
    assert np.ptp(ip[sup]) < 1e-9 * np.abs(ip).max()
    assert np.all(ip[~sup] >= ip[sup].min() - 1e-9)       # KKT: off-support tasks have larger <d, g_m>


def test_single_task_and_equal_gradients():
    g = np.array([[1.0, -2.0, 0.5]])
    lam, d = dream_weights(g)
    assert lam.tolist() == [1.0]
    np.testing.assert_array_equal(d, g[0])
    lam, d = dream_weights(np.array([[1.0, 2.0], [1.0, 2.0]]))
    assert lam.tolist() == [0.5, 0.5]


def test_regulariser_pulls_weights_to_uniform():
    G = np.array([[3.0, 0.0], [0.0, 1.0]])
    lam0, _ = dream_weights(G, rho=0.0)
    lam1, _ = dream_weights(G, rho=1.0)
    lam2, _ = dream_weights(G, rho=1e6)
    # closed form: lam_1 = (1 + rho) / (10 + 2 rho)
    np.testing.assert_allclose(lam1[0], 2.0 / 12.0, rtol=1e-14)
    assert abs(lam0[0] - 0.5) > abs(lam1[0] - 0.5) > abs(lam2[0] - 0.5)
    assert abs(lam2[0] - 0.5) < 1e-5


def test_preference_correction_is_linear_scalarisation():
    rng = np.random.default_rng(2)
    for M in (2, 3):
        G = rng.standard_normal((M, 5))
        w = rng.dirichlet(np.ones(M))
        _, d = dream_weights(G, correction=np.outer(w, np.ones(M)))
        np.testing.assert_allclose(d, w @ G, atol=1e-12)


def test_priority_correction_is_mgda_on_scaled_gradients():
    rng = np.random.default_rng(3)
    G = rng.standard_normal((3, 6))
    pi = np.array([1.0, 0.5, 2.0])
    _, d = dream_weights(G, correction=np.diag(pi))
    _, d_ref = dream_weights(pi[:, None] * G)
    np.testing.assert_allclose(d, d_ref, atol=1e-9)


def test_pcgrad_columns_are_pcgrad_projections():
    G = np.array([[1.0, 0.0], [-1.0, 1.0]])
    A = pcgrad_correction(G)
    np.testing.assert_allclose(G.T @ A[:, 0], [0.5, 0.5])     # g1 - <g1,g2>/||g2||^2 g2
    np.testing.assert_allclose(G.T @ A[:, 1], [0.0, 1.0])     # g2 - <g2,g1>/||g1||^2 g1
    assert (G.T @ A[:, 0]) @ G[1] == pytest.approx(0.0)
    # no conflict -> identity; zero gradient guarded
    np.testing.assert_array_equal(pcgrad_correction(np.array([[1.0, 0.0], [1.0, 1.0]])), np.eye(2))
    np.testing.assert_array_equal(pcgrad_correction(np.array([[0.0, 0.0], [1.0, 1.0]])), np.eye(2))
    lam, d = dream_weights(G, correction="pcgrad")
    np.testing.assert_allclose(d, (G.T @ A) @ lam)


def test_project_simplex_known_answers():
    np.testing.assert_allclose(project_simplex(np.array([2.0, 0.0])), [1.0, 0.0])
    np.testing.assert_allclose(project_simplex(np.array([0.3, 0.7])), [0.3, 0.7])
    np.testing.assert_allclose(project_simplex(np.array([1.0, 1.0, 1.0])), [1 / 3] * 3)
    np.testing.assert_allclose(project_simplex(np.array([0.5, 0.5, -3.0])), [0.5, 0.5, 0.0])


@pytest.mark.parametrize("M,d,rho", [(3, 8, 0.0), (5, 4, 0.3), (4, 50, 0.0)])
def test_cross_check_with_cvxpy(M, d, rho):
    cp = pytest.importorskip("cvxpy")
    from shared.solvers import solve

    rng = np.random.default_rng(M * 100 + d)
    G = rng.standard_normal((M, d))
    lam_v = cp.Variable(M)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(G.T @ lam_v) + 0.5 * rho * cp.sum_squares(lam_v)),
                      [lam_v >= 0, cp.sum(lam_v) == 1])
    res = solve(prob, solver="CLARABEL")
    assert res.status == "optimal"
    lam, d_own = dream_weights(G, rho=rho)
    np.testing.assert_allclose(d_own, G.T @ lam_v.value, atol=1e-6)
    if rho > 0 or M <= d:   # unique weights
        np.testing.assert_allclose(lam, lam_v.value, atol=1e-6)
    prob.solve(solver="OSQP", eps_abs=1e-10, eps_rel=1e-10, polish=True, max_iter=200000)
    np.testing.assert_allclose(d_own, G.T @ lam_v.value, atol=1e-6)


def test_fista_matches_closed_form_for_two_tasks():
    rng = np.random.default_rng(4)
    G = rng.standard_normal((2, 5))
    lam_cf, _ = dream_weights(G, rho=0.2)
    lam_it = solve_simplex_qp(G @ G.T + 0.2 * np.eye(2))
    np.testing.assert_allclose(lam_it, lam_cf, atol=1e-10)


def test_bad_input():
    with pytest.raises(ValueError, match="task_gradients"):
        dream_weights(np.ones(3))
    with pytest.raises(ValueError, match="task_gradients"):
        dream_weights(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="correction"):
        dream_weights(np.ones((2, 3)), correction=np.eye(3))
    with pytest.raises(ValueError, match="correction"):
        dream_weights(np.ones((2, 3)), correction="mgda")
    with pytest.raises(ValueError, match="rho"):
        dream_weights(np.ones((2, 3)), rho=-0.1)
