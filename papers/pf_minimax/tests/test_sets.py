"""Sets: LMOs and projections against hand-computed answers and optimality conditions."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from papers.pf_minimax.sets import L1Ball, NuclearBall, Simplex, project_simplex


def test_simplex_lmo_breaks_ties_to_smallest_index():
    S = Simplex(3)
    assert np.array_equal(S.lmo([1.0, 0.0, 0.0]), [0.0, 1.0, 0.0])
    assert np.array_equal(S.lmo([0.0, 0.0, 0.0]), [1.0, 0.0, 0.0])


@pytest.mark.parametrize("v, expected", [
    ([0.5, 0.5], [0.5, 0.5]),
    ([2.0, 0.0], [1.0, 0.0]),
    ([1.0, 1.0, 1.0], [1 / 3, 1 / 3, 1 / 3]),
    ([0.6, 0.2, -1.0], [0.7, 0.3, 0.0]),   # theta = -0.1
])
def test_simplex_projection_known_answers(v, expected):
    assert np.allclose(Simplex(len(v)).project(v), expected, atol=1e-15)


def test_simplex_projection_variational_inequality():
    # P(v) is the projection iff <v - P(v), s - P(v)> <= 0 for every s in the set (enough: every vertex).
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=7) * 3
        p = Simplex(7).project(v)
        assert abs(p.sum() - 1) < 1e-12 and p.min() >= 0
        assert np.max((v - p) @ (np.eye(7) - p).T) <= 1e-12


def test_scaled_simplex_projection_sums_to_radius():
    p = project_simplex(np.array([3.0, 1.0]), 2.0)
    assert np.allclose(p, [2.0, 0.0])


def test_simplex_center_and_diameter():
    S = Simplex(5)
    c = S.center()
    assert np.allclose(c, 0.2)
    assert math.isclose(S.max_dist_sq(), np.sum((np.eye(5)[0] - c) ** 2))


def test_l1_lmo_sign_and_ties():
    B = L1Ball(3, 2.0)
    assert np.array_equal(B.lmo([0.0, -3.0, 3.0]), [0.0, 2.0, 0.0])   # first of the tied |g|, -r sign(-3)
    assert np.array_equal(B.lmo([0.0, 0.0, 0.0]), [-2.0, 0.0, 0.0])   # sign(0) = +1
    g = np.array([0.3, -1.0, 0.5])
    assert math.isclose(g @ B.lmo(g), -2.0 * np.max(np.abs(g)))       # min <g, s> = -r ||g||_inf


def test_l1_projection_known_answers():
    B = L1Ball(2, 1.0)
    assert np.allclose(B.project([0.2, -0.3]), [0.2, -0.3])
    assert np.allclose(B.project([3.0, -1.0]), [1.0, 0.0])
    assert np.allclose(B.project([1.0, -1.0]), [0.5, -0.5])
    assert B.center().tolist() == [0.0, 0.0] and B.max_dist_sq() == 1.0


def test_nuclear_lmo_and_dual_norm_identity():
    N = NuclearBall((2, 2), 3.0)
    assert np.allclose(N.lmo(np.diag([3.0, 1.0])), [[-3.0, 0.0], [0.0, 0.0]])
    rng = np.random.default_rng(1)
    G = rng.normal(size=(6, 4))
    N = NuclearBall((6, 4), 2.5)   # q < p: the start vector has length min(p, q)
    S = N.lmo(G)
    assert math.isclose(np.sum(G * S), -2.5 * np.linalg.svd(G, compute_uv=False)[0], rel_tol=1e-10)
    assert math.isclose(np.linalg.svd(S, compute_uv=False).sum(), 2.5, rel_tol=1e-10)
    assert np.allclose(N.lmo(sp.csr_matrix(G)), S)
    assert np.array_equal(N.lmo(G), S)  # deterministic


def test_nuclear_projection_known_answer():
    N = NuclearBall((2, 2), 2.0)
    assert np.allclose(N.project(np.diag([3.0, 1.0])), np.diag([2.0, 0.0]))   # [3, 1] -> [2, 0]
    inside = np.array([[0.5, 0.0], [0.0, -0.5]])
    assert np.allclose(N.project(inside), inside)
    assert N.max_dist_sq() == 4.0 and not N.center().any()


@pytest.mark.parametrize("make", [lambda: Simplex(0), lambda: Simplex(2.5), lambda: L1Ball(0, 1.0),
                                  lambda: NuclearBall((0, 3), 1.0)])
def test_bad_dimensions(make):
    with pytest.raises(ValueError, match="dim|shape"):
        make()


@pytest.mark.parametrize("radius", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        L1Ball(3, radius)
    with pytest.raises(ValueError, match="radius"):
        NuclearBall((3, 3), radius)


@pytest.mark.parametrize("S", [Simplex(3), L1Ball(3, 1.0)])
def test_bad_oracle_inputs(S):
    with pytest.raises(ValueError, match="g must have shape"):
        S.lmo(np.zeros(4))
    with pytest.raises(ValueError, match="g contains NaN"):
        S.lmo([0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="v must have shape"):
        S.project(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="v contains NaN or Inf"):
        S.project([0.0, np.inf, 1.0])


def test_bad_nuclear_inputs():
    N = NuclearBall((3, 3), 1.0)
    with pytest.raises(ValueError, match="g must have shape"):
        N.lmo(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="g contains NaN"):
        N.lmo(sp.csr_matrix(np.full((3, 3), np.nan)))
    with pytest.raises(ValueError, match="v contains NaN"):
        N.project(np.full((3, 3), np.nan))


def test_top_pair_of_a_matrix_whose_rows_sum_to_zero():
    """The constant start vector would lie in the null space of G^T G; the fixed non-constant one does not."""
    import scipy.sparse as sp
    from papers.pf_minimax.sets import top_singular_pair
    rng = np.random.default_rng(0)
    G = rng.standard_normal((40, 30))
    G -= G.mean(axis=1, keepdims=True)
    u, s, v = top_singular_pair(sp.csr_matrix(G))
    assert s == pytest.approx(np.linalg.svd(G, compute_uv=False)[0], rel=1e-8)
    u2, s2, v2 = top_singular_pair(G[:, :5])  # dense and thin: a dense SVD
    assert s2 == pytest.approx(np.linalg.svd(G[:, :5], compute_uv=False)[0], rel=1e-12)
    np.testing.assert_allclose(abs(u2 @ G[:, :5] @ v2), s2, rtol=1e-12)


def test_nuclear_projection_falls_back_to_gesvd_when_gesdd_fails(monkeypatch):
    """Projection of diag(3, 1, 0) onto the nuclear ball of radius 2: the singular values (3, 1, 0) go to their
    projection onto {s >= 0, sum s = 2}, i.e. (2, 0, 0); the same answer when numpy's gesdd refuses to converge."""
    import papers.pf_minimax.sets as sets_mod

    v = np.diag([3.0, 1.0, 0.0])
    expected = np.diag([2.0, 0.0, 0.0])
    ball = sets_mod.NuclearBall((3, 3), 2.0)
    np.testing.assert_allclose(ball.project(v), expected, atol=1e-12)

    def failing_svd(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(sets_mod.np.linalg, "svd", failing_svd)
    np.testing.assert_allclose(ball.project(v), expected, atol=1e-12)
    U, s, Vt = sets_mod.thin_svd(v)
    np.testing.assert_allclose(s, [3.0, 1.0, 0.0], atol=1e-12)


def test_thin_svd_names_non_finite_input():
    from papers.pf_minimax.sets import thin_svd

    with pytest.raises(FloatingPointError, match="3 x 2 matrix has non-finite"):
        thin_svd(np.array([[1.0, 0.0], [np.nan, 1.0], [0.0, 0.0]]))
