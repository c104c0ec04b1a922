"""The data-driven radius: the mirrored statistic, a closed-form case, determinism and bad inputs."""
import numpy as np
import pytest
from scipy.stats import chi2

from papers.dro_varclust import radius as R
from papers.dro_varclust.radius import dro_radius, radius_statistic, radius_weights


def _cov():
    X = np.random.default_rng(3).normal(size=(9, 5))
    X = (X - X.mean(0)) / np.linalg.norm(X - X.mean(0), axis=0)
    return X, np.cov(X.T)


def test_weights_reproduce_the_mirrored_statistic():
    _, S = _cov()
    xi = np.random.default_rng(1).normal(size=(6, 5, 5))
    np.testing.assert_allclose(radius_statistic(xi, S), 0.25 * np.einsum("kij,ij->k", xi ** 2, radius_weights(S)),
                               rtol=1e-13)


def test_statistic_of_unit_draws_is_the_upsilon_sum():
    # xi = 1 everywhere: Z = sqrt(Upsilon) (already symmetric) and T = (1/4) sum_ij Upsilon_ij / d_i.
    _, S = _cov()
    d = np.diag(S)
    ups = np.outer(d, d) + S ** 2
    assert radius_statistic(np.ones((5, 5)), S) == pytest.approx(0.25 * np.sum(ups / d[:, None]), rel=1e-13)


def test_mirroring_keeps_the_lower_triangle():
    # Upper-triangle draws are ignored: changing them leaves T unchanged.
    _, S = _cov()
    xi = np.random.default_rng(2).normal(size=(5, 5))
    xi2 = xi.copy()
    xi2[np.triu_indices(5, 1)] = 100.0
    assert radius_statistic(xi, S) == pytest.approx(radius_statistic(xi2, S), rel=1e-14)


def test_uncorrelated_pair_gives_a_chi_square_quantile():
    # Two orthogonal centred columns, n = 4: d = 1/3, S_12 = 0, so T = (d/2) chi2_3 and
    # s = sqrt((d/2) q_{1-alpha}(chi2_3) / n).
    X = np.array([[1.0, 1], [-1, 1], [1, -1], [-1, -1]])
    s = dro_radius(X, alpha=0.1, n_sim=200_000, seed=5)
    expected = np.sqrt((1 / 3) / 2 * chi2.ppf(0.9, 3) / 4)
    assert s == pytest.approx(expected, rel=0.01)


def test_radius_is_scale_invariant_deterministic_and_chunk_independent(monkeypatch):
    X, _ = _cov()
    s = dro_radius(X, n_sim=300, seed=4)
    assert dro_radius(7.0 * X + 3.0, n_sim=300, seed=4) == pytest.approx(s, rel=1e-12)
    assert dro_radius(X, n_sim=300, seed=4) == s
    monkeypatch.setattr(R, "_CHUNK_ELEMENTS", 60)  # 2 draws per chunk: same stream, same numbers
    assert dro_radius(X, n_sim=300, seed=4) == pytest.approx(s, rel=1e-14)
    assert dro_radius(X, alpha=0.01, n_sim=300, seed=4) > s > dro_radius(X, alpha=0.5, n_sim=300, seed=4)


@pytest.mark.parametrize("kwargs, match", [({"alpha": 0.0}, "alpha"), ({"alpha": 1.0}, "alpha"),
                                           ({"n_sim": 0}, "n_sim"), ({"n_sim": 2.5}, "n_sim")])
def test_radius_bad_input(kwargs, match):
    X, _ = _cov()
    with pytest.raises(ValueError, match=match):
        dro_radius(X, **kwargs)


def test_radius_rejects_bad_X():
    with pytest.raises(ValueError, match="2-D"):
        dro_radius(np.ones(4))
