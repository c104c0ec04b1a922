"""Problems: the spec's data recipe, exact minimisers, gradients, and every bad input."""
import numpy as np
import pytest

from papers.clipped_sgd.problems import make_problem


def test_least_squares_synthetic_follows_the_recipe():
    p = make_problem("least_squares_synthetic", n_samples=50, tail_index=1.5, dim=3, seed=7)
    rng = np.random.default_rng(7)
    A = rng.standard_normal((50, 3))
    eps = rng.standard_t(1.5, 50)
    np.testing.assert_array_equal(p.features, A)
    np.testing.assert_array_equal(p.targets, A @ np.ones(3) + eps)
    np.testing.assert_array_equal(p.x_pop, np.ones(3))
    # grad f(x*, xi) = -eps a
    np.testing.assert_allclose(p.per_sample_grads(np.ones(3)), -eps[:, None] * A, rtol=1e-12, atol=1e-12)
    assert (p.n_samples, p.dim) == (50, 3)


def test_least_squares_minimiser_and_constants():
    A = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    b = np.array([1.0, 2.0, 4.0])
    p = make_problem("least_squares", features=A, targets=b)
    # normal equations: A^T A x = A^T b
    np.testing.assert_allclose(A.T @ A @ p.x_erm, A.T @ b, atol=1e-12)
    assert abs(p.per_sample_grads(p.x_erm).sum(axis=0)).max() < 1e-12
    eig = np.linalg.eigvalsh(A.T @ A / 3)
    assert p.mu == pytest.approx(eig[0]) and p.L == pytest.approx(eig[1])
    assert p.L_max == pytest.approx(4.0)
    # grad(x, idx) = (a_i^T x - b_i) a_i
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(p.grad(x, [2, 0]), [[(-0.5 - 4) * 1, (-0.5 - 4) * 1], [(0.5 - 1) * 1, 0.0]])
    assert p.x_pop is None


def test_mean_problems():
    p = make_problem("mean", samples=[1.0, 2.0, 6.0])
    assert p.dim == 1 and p.x_erm[0] == pytest.approx(3.0)
    assert (p.mu, p.L, p.L_max) == (1.0, 1.0, 1.0)
    np.testing.assert_allclose(p.per_sample_grads([3.0])[:, 0], [2.0, 1.0, -3.0])
    q = make_problem("mean_synthetic", n_samples=40, tail_index=1.5, seed=3)
    np.testing.assert_array_equal(q.targets[:, 0], np.random.default_rng(3).standard_t(1.5, 40))
    assert q.x_pop[0] == 0.0
    r = make_problem("mean_synthetic", n_samples=40, tail_index=1.5, dim=2, seed=3)
    np.testing.assert_array_equal(r.targets, np.random.default_rng(3).standard_t(1.5, (40, 2)))
    np.testing.assert_allclose(r.x_erm, r.targets.mean(axis=0))


def test_same_seed_same_data_and_seedsequence_accepted():
    ss = np.random.SeedSequence(11)
    a = make_problem("least_squares_synthetic", n_samples=20, tail_index=1.8, seed=ss)
    b = make_problem("least_squares_synthetic", n_samples=20, tail_index=1.8, seed=ss)
    np.testing.assert_array_equal(a.targets, b.targets)
    assert a.dim == 10


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_samples=10, tail_index=1.0, seed=0), "tail_index"),
    (dict(n_samples=10, tail_index=0.5, seed=0), "tail_index"),
    (dict(n_samples=10, tail_index=float("nan"), seed=0), "tail_index"),
    (dict(n_samples=1, tail_index=1.5, seed=0), "n_samples"),
    (dict(n_samples=10, tail_index=1.5, dim=0, seed=0), "dim"),
    (dict(n_samples=10, tail_index=1.5), "seed"),
    (dict(n_samples=10, tail_index=1.5, seed=0, foo=1), "unknown parameters"),
])
def test_synthetic_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_problem("least_squares_synthetic", **kwargs)
    if "dim" not in kwargs or kwargs["dim"] != 0:
        with pytest.raises(ValueError, match=match):
            make_problem("mean_synthetic", **kwargs)


def test_user_data_bad_inputs():
    A = np.random.default_rng(0).standard_normal((5, 2))
    with pytest.raises(ValueError, match="same length"):
        make_problem("least_squares", features=A, targets=np.ones(4))
    bad = A.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="features"):
        make_problem("least_squares", features=bad, targets=np.ones(5))
    with pytest.raises(ValueError, match="targets"):
        make_problem("least_squares", features=A, targets=[1, 2, np.inf, 4, 5])
    with pytest.raises(ValueError, match="rank"):
        make_problem("least_squares", features=np.c_[A[:, 0], 2 * A[:, 0]], targets=np.ones(5))
    with pytest.raises(ValueError, match="n_samples"):
        make_problem("least_squares", features=A[:1], targets=np.ones(1))
    with pytest.raises(ValueError, match="samples"):
        make_problem("mean", samples=[1.0, np.nan])
    with pytest.raises(ValueError, match="n_samples"):
        make_problem("mean", samples=[1.0])
    with pytest.raises(ValueError, match="kind"):
        make_problem("logistic", features=A, targets=np.ones(5))
    p = make_problem("least_squares", features=A, targets=np.ones(5))
    with pytest.raises(ValueError, match="x must have shape"):
        p.grad(np.ones(3), [0])
    with pytest.raises(ValueError, match="idx"):
        p.grad(np.ones(2), [5])
