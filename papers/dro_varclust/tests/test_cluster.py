"""Spectral step, the full pipeline on separable data, the scores, and bad inputs."""
import numpy as np
import pytest

from papers.dro_varclust.cluster import (affinity_from_coefficients, clustering_scores, fit_dro_varclust,
                                         spectral_labels)


def _separable(n=30, sizes=(6, 7, 8), dim=2, noise=1e-3, seed=0):
    """Clusters spanning their own random `dim`-dimensional subspaces of R^n (nearly orthogonal for n >> dim K)."""
    rng = np.random.default_rng(seed)
    cols, labels = [], []
    for k, size in enumerate(sizes):
        basis = rng.normal(size=(n, dim))
        cols.append(basis @ rng.normal(size=(dim, size)))
        labels += [k] * size
    X = np.hstack(cols)
    return X + noise * rng.normal(size=X.shape), np.array(labels)


def test_scores_known_answers():
    assert clustering_scores([0, 0, 1, 1], [1, 1, 0, 0]) == {"accuracy": 1.0, "ami": 1.0}
    assert clustering_scores([0, 0, 1, 1], [0, 1, 1, 1])["accuracy"] == 0.75
    # more predicted than true clusters: the confusion matrix is square, unmatched clusters count as errors
    assert clustering_scores([0, 0, 0, 0], [0, 0, 1, 2])["accuracy"] == 0.5


@pytest.mark.parametrize("t, q, match", [([0, 1], [0, 1, 1], "differ in length"), ([], [], "non-empty"),
                                         ([0, 1], [0, -1], "non-negative")])
def test_scores_bad_input(t, q, match):
    with pytest.raises(ValueError, match=match):
        clustering_scores(t, q)


def test_spectral_labels_recover_blocks():
    y = np.repeat([0, 1, 2], [4, 5, 6])
    W = (y[:, None] == y[None, :]).astype(float) + 1e-3
    np.fill_diagonal(W, 0.0)
    assert clustering_scores(y, spectral_labels(W, 3))["accuracy"] == 1.0


def test_spectral_zero_degree_names_the_variable():
    W = np.ones((4, 4))
    W[2, :] = W[:, 2] = 0.0
    with pytest.raises(ValueError, match=r"variable\(s\) \[2\] have zero affinity degree"):
        spectral_labels(W, 2)


@pytest.mark.parametrize("B, match", [(np.ones((2, 3)), "square"), (np.full((2, 2), np.nan), "NaN")])
def test_affinity_bad_input(B, match):
    with pytest.raises(ValueError, match=match):
        affinity_from_coefficients(B)


def test_affinity_is_symmetric_abs():
    B = np.array([[0.0, -2.0], [1.0, 0.0]])
    np.testing.assert_array_equal(affinity_from_coefficients(B), [[0, 3], [3, 0]])


def test_pipeline_recovers_separable_subspaces():
    X, y = _separable()
    res = fit_dro_varclust(X, 3, n_sim=200)
    assert clustering_scores(y, res.labels)["accuracy"] == 1.0
    assert np.all(np.diag(res.B) == 0.0) and res.sqrt_delta > 0


@pytest.mark.parametrize("kwargs, match", [({"K": 0}, "K must lie"), ({"K": 22}, "K must lie"),
                                           ({"alpha": 1.5}, "alpha"), ({"n_sim": 0}, "n_sim"),
                                           ({"method": "newton"}, "method")])
def test_pipeline_bad_input(kwargs, match):
    X, _ = _separable()
    args = {"K": 3, "n_sim": 50, **kwargs}
    with pytest.raises(ValueError, match=match):
        fit_dro_varclust(X, args.pop("K"), **args)
