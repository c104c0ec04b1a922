"""SSC-ADMM and LRR: known answers from their papers' theory, block-diagonal affinities on a union of
subspaces, and bad inputs."""
import warnings

import numpy as np
import pytest
from sklearn.cluster import SpectralClustering

from papers.dro_varclust import baselines as BL
from papers.dro_varclust.cluster import affinity_from_coefficients, clustering_scores, spectral_labels


def _union_of_subspaces(orthogonal: bool, n=30, dims=(3, 3, 3), per=8, seed=0):
    """Noise-free points on K subspaces of R^n: orthogonal ones (blocks of one orthonormal basis) or
    independent ones (random bases whose sum is direct)."""
    rng = np.random.default_rng(seed)
    total = sum(dims)
    basis = np.linalg.qr(rng.normal(size=(n, total)))[0] if orthogonal else rng.normal(size=(n, total))
    cols, y, start = [], [], 0
    for k, d in enumerate(dims):
        pts = basis[:, start:start + d] @ rng.normal(size=(d, per))
        cols.append(pts / np.linalg.norm(pts, axis=0))
        y += [k] * per
        start += d
    return np.hstack(cols), np.array(y)


def _off_block_max(C, y):
    return float(np.max(np.abs(C[y[:, None] != y[None, :]])))


def _clusters_perfectly(W, y):
    """Both our spectral step and sklearn's SpectralClustering (precomputed affinity) recover y exactly."""
    K = int(y.max()) + 1
    ours = spectral_labels(W, K)
    with warnings.catch_warnings():  # an exactly block-diagonal affinity is a disconnected graph, as intended
        warnings.filterwarnings("ignore", message="Graph is not fully connected")
        sk = SpectralClustering(n_clusters=K, affinity="precomputed", random_state=0).fit_predict(W)
    return clustering_scores(y, ours)["accuracy"] == 1.0 and clustering_scores(y, sk)["accuracy"] == 1.0


def _duplicates():
    # columns e1, e1, e2, e2 of R^3: every column's only non-orthogonal partner is its duplicate
    X = np.zeros((3, 4))
    X[0, :2] = 1.0
    X[1, 2:] = 1.0
    return X


def test_ssc_lambda_z_and_the_scalar_lasso_answer():
    # mu_z = 1, lambda_z = alpha; column 0 solves min |c| + alpha/2 (1 - c)^2, so c = 1 - 1/alpha on its duplicate
    X = _duplicates()
    assert BL.ssc_lambda_z(X, 20.0) == 20.0
    C = BL.ssc_admm_coefficients(X, alpha=20.0, tol=1e-12, max_iter=20000)
    expected = np.array([[0, 0.95, 0, 0], [0.95, 0, 0, 0], [0, 0, 0, 0.95], [0, 0, 0.95, 0]])
    np.testing.assert_allclose(C, expected, atol=1e-9)


def test_ssc_lambda_at_its_threshold_gives_zero():
    # Elhamifar & Vidal, Prop. 1: lambda_z <= 1 / mu_z (alpha <= 1) gives C = 0
    C = BL.ssc_admm_coefficients(_duplicates(), alpha=1.0, tol=1e-12, max_iter=20000)
    assert np.max(np.abs(C)) <= 1e-9


def test_ssc_admm_is_block_diagonal_on_orthogonal_subspaces():
    # the Lasso's residual splits over orthogonal subspaces, so any off-subspace coefficient only costs: C is
    # exactly block-diagonal (subspace preserving)
    X, y = _union_of_subspaces(orthogonal=True)
    C = BL.ssc_admm_coefficients(X, alpha=20.0, tol=1e-10, max_iter=20000)
    assert np.all(np.diag(C) == 0)
    assert _off_block_max(C, y) <= 1e-8
    assert _clusters_perfectly(affinity_from_coefficients(C), y)


def test_lrr_known_answer_is_the_shape_interaction_matrix():
    # Liu et al. (2013), Thm 3.1: without noise the minimiser of ||Z||_* s.t. X = XZ is V V^T (skinny SVD
    # X = U S V^T); a large lam forces E = 0
    X = _duplicates()
    Z, E = BL.lrr_coefficients(X, lam=100.0, return_noise=True)
    np.testing.assert_allclose(Z, np.kron(np.eye(2), np.full((2, 2), 0.5)), atol=1e-6)
    assert np.max(np.abs(E)) <= 1e-6


def test_lrr_is_block_diagonal_on_independent_subspaces():
    X, y = _union_of_subspaces(orthogonal=False)
    Z = BL.lrr_coefficients(X, lam=100.0)
    _, sigma, Vt = np.linalg.svd(X, full_matrices=False)
    V = Vt[sigma > 1e-10 * sigma[0]].T
    np.testing.assert_allclose(Z, V @ V.T, atol=1e-5)
    assert _off_block_max(Z, y) <= 1e-5
    assert _clusters_perfectly(affinity_from_coefficients(Z), y)


@pytest.mark.parametrize("kwargs, match", [({"alpha": 0.0}, "alpha"), ({"alpha": np.nan}, "alpha"),
                                           ({"tol": -1.0}, "tol"), ({"max_iter": 0}, "max_iter"),
                                           ({"max_iter": True}, "max_iter")])
def test_ssc_admm_bad_inputs(kwargs, match):
    X, _ = _union_of_subspaces(orthogonal=True)
    with pytest.raises(ValueError, match=match):
        BL.ssc_admm_coefficients(X, **kwargs)


def test_ssc_admm_bad_data():
    X, _ = _union_of_subspaces(orthogonal=True)
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        BL.ssc_admm_coefficients(X)
    lonely = np.zeros((3, 3))
    lonely[0, 0] = lonely[1, 1] = lonely[2, 2] = 1.0
    with pytest.raises(ValueError, match="orthogonal to every other column"):
        BL.ssc_lambda_z(lonely, 20.0)


@pytest.mark.parametrize("kwargs, match", [({"lam": 0.0}, "lam"), ({"tol": 0.0}, "tol"), ({"mu": -1.0}, "mu"),
                                           ({"max_iter": 1.5}, "max_iter"), ({"growth": 0.5}, "growth")])
def test_lrr_bad_inputs(kwargs, match):
    X, _ = _union_of_subspaces(orthogonal=False)
    with pytest.raises(ValueError, match=match):
        BL.lrr_coefficients(X, **kwargs)


def test_lrr_not_converged_raises():
    X, _ = _union_of_subspaces(orthogonal=False)
    with pytest.raises(RuntimeError, match="did not converge in 3 iterations"):
        BL.lrr_coefficients(X, max_iter=3)


def test_bad_K_is_named():
    X, _ = _union_of_subspaces(orthogonal=True)
    with pytest.raises(ValueError, match="K must lie"):
        BL.ssc_admm(X, 0)
    with pytest.raises(ValueError, match="K must lie"):
        BL.lrr(X, 100)
