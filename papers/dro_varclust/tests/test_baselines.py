"""Baselines: closed-form identities (ridge, Lasso scaling, CORD) and recovery of obvious clusters."""
import numpy as np
import pytest
from sklearn.linear_model import Lasso

from papers.dro_varclust import baselines as BL
from papers.dro_varclust.cluster import clustering_scores
from papers.dro_varclust.data import normalize_design


def _blocks(seed=0, n=40, sizes=(5, 5, 5)):
    rng = np.random.default_rng(seed)
    cols, y = [], []
    for k, size in enumerate(sizes):
        f = rng.normal(size=n)
        cols.append(f[:, None] + 0.2 * rng.normal(size=(n, size)))
        y += [k] * size
    return normalize_design(np.hstack(cols)), np.array(y)


def test_ridge_matches_per_node_formula():
    X, _ = _blocks()
    B = BL.ridge_coefficients(X, 0.1)
    p = X.shape[1]
    for j in (0, 7, p - 1):
        others = np.arange(p) != j
        Xo = X[:, others]
        b = np.linalg.solve(Xo.T @ Xo + 0.1 * np.eye(p - 1), Xo.T @ X[:, j])
        np.testing.assert_allclose(B[others, j], b, atol=1e-12)
        assert B[j, j] == 0.0


def test_lasso_path_matches_sklearn_lasso_scaling():
    # min ||x_j - X b||^2 + lam ||b||_1  <=>  sklearn Lasso with alpha = lam / (2 n)
    X, _ = _blocks()
    n = X.shape[0]
    B = BL.lasso_coefficients(X, [0.05, 0.5])
    for i, lam in enumerate([0.05, 0.5]):
        ref = Lasso(alpha=lam / (2 * n), fit_intercept=False, tol=1e-10, max_iter=100000).fit(X[:, 1:], X[:, 0])
        np.testing.assert_allclose(B[i, 1:, 0], ref.coef_, atol=2e-3)  # path tol 1e-4
        assert B[i, 0, 0] == 0.0
    assert np.all(BL.lasso_coefficients(X, [1e3]) == 0.0)  # lam above max |X^T x_j| * 2 kills every coefficient


def test_cord_matches_direct_definition():
    R = np.corrcoef(np.random.default_rng(1).normal(size=(20, 6)), rowvar=False)
    D = BL.cord_matrix(R)
    for i in range(6):
        for j in range(6):
            if i != j:
                ks = [k for k in range(6) if k not in (i, j)]
                assert D[i, j] == pytest.approx(max(abs(R[i, k] - R[j, k]) for k in ks), abs=1e-15)


@pytest.mark.parametrize("name", ["kmeans", "corr_spectral", "ridge", "lasso_cv", "cord", "mfc", "ssc_admm", "lrr"])
def test_baselines_recover_obvious_clusters(name):
    X, y = _blocks()
    labels = BL.BASELINES[name](X, 3)
    assert labels.shape == y.shape
    assert clustering_scores(y, labels)["accuracy"] == 1.0


def test_kmedoids_is_optional():
    X, y = _blocks()
    labels = BL.kmedoids_corr(X, 3)
    assert labels is None or clustering_scores(y, labels)["accuracy"] == 1.0


def test_baseline_bad_K():
    X, _ = _blocks()
    with pytest.raises(ValueError, match="K must lie"):
        BL.kmeans_variables(X, 16)


def test_ssc_omp_recovers_an_exact_two_column_combination():
    from papers.dro_varclust.baselines import ssc_omp_coefficients
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 6))
    X[:, 0] = 0.6 * X[:, 1] - 0.8 * X[:, 2]
    C = ssc_omp_coefficients(X, k_max=2)
    assert np.all(np.diag(C) == 0)
    np.testing.assert_allclose(C[:, 0], [0, 0.6, -0.8, 0, 0, 0], atol=1e-10)


def test_ensc_column_minimises_its_elastic_net_objective():
    from papers.dro_varclust.baselines import ensc_coefficients
    from papers.dro_varclust.data import make_block_factor_data
    X, _ = make_block_factor_data(20, 12, 2, seed=4)
    lam, gamma = 0.9, 50.0
    C = ensc_coefficients(X, lam, gamma)
    assert np.all(np.diag(C) == 0)
    others = np.arange(1, 12)

    def f(c):
        return lam * np.abs(c).sum() + (1 - lam) / 2 * c @ c + gamma / 2 * np.sum((X[:, 0] - X[:, others] @ c) ** 2)

    c = C[others, 0]
    rng = np.random.default_rng(1)
    assert all(f(c) <= f(c + 1e-3 * rng.normal(size=c.size)) + 1e-9 for _ in range(30))
