"""Preprocessing and the block-factor generator: exact properties and bad inputs."""
import numpy as np
import pytest

from papers.dro_varclust.data import load_digits_variables, make_block_factor_data, normalize_design


def test_normalize_design_centres_scales_and_is_idempotent():
    X = np.random.default_rng(0).normal(size=(7, 4)) * [1, 10, 0.1, 3] + [5, -2, 0, 1]
    Z = normalize_design(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=0), 1, rtol=1e-14)
    np.testing.assert_allclose(normalize_design(Z), Z, atol=1e-15)


@pytest.mark.parametrize("X, match", [
    (np.ones(5), "2-D"),
    (np.array([[1.0, np.nan], [2, 3], [4, 5]]), "NaN"),
    (np.array([[1.0, 2], [3, 4]]), "at least 3 rows"),
    (np.array([[1.0], [2], [3]]), "at least 2 columns"),
    (np.array([[1.0, 2], [1, 3], [1, 5]]), r"constant column\(s\) \[0\]"),
])
def test_normalize_design_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        normalize_design(X)


def test_generator_sizes_labels_and_normalisation():
    X, y = make_block_factor_data(20, 30, 3, seed=2021)
    sizes = np.random.RandomState(2021).multinomial(30, np.ones(3) / 3)
    np.testing.assert_array_equal(y, np.repeat(np.arange(3), sizes))
    assert X.shape == (20, 30)
    np.testing.assert_allclose(np.linalg.norm(X, axis=0), 1, rtol=1e-13)
    X2, _ = make_block_factor_data(20, 30, 3, seed=2021)
    np.testing.assert_array_equal(X, X2)


def test_generator_pure_global_factor_gives_identical_columns():
    # rho = 1 and no noise: every X_j = g, so all normalised columns coincide.
    X, _ = make_block_factor_data(10, 12, 3, rho_range=(1, 1), noise_range=(0, 0), seed=2021)
    np.testing.assert_allclose(X, np.repeat(X[:, :1], 12, axis=1), atol=1e-12)


def test_generator_noise_free_clusters_lie_in_low_dimensional_subspaces():
    # rho = 0, no noise: cluster k spans r_k <= min(size_k, n) - 1 factors, so its block is rank deficient.
    n = 40
    X, y = make_block_factor_data(n, 30, 3, rho_range=(0, 0), noise_range=(0, 0), seed=2022)
    for k in range(3):
        block = X[:, y == k]
        assert np.linalg.matrix_rank(block, tol=1e-9) <= min(block.shape[1], n) - 1


def test_generator_degenerate_rho_range_consumes_its_draws():
    # With rho_range (r, r) and no noise, X_j = sqrt(r) g + sqrt(1 - r) F l_j where F, g and the l_j do not
    # depend on r (the p uniforms are drawn whatever the range). So the r = 0.5 column lies in the plane of the
    # r = 0 column (F l_j) and the r = 1 column (g), after centring.
    kw = {"n": 15, "p": 12, "K": 3, "noise_range": (0, 0), "seed": 11}
    X0, _ = make_block_factor_data(rho_range=(0, 0), **kw)
    X1, _ = make_block_factor_data(rho_range=(1, 1), **kw)
    Xh, _ = make_block_factor_data(rho_range=(0.5, 0.5), **kw)
    for j in range(12):
        basis = np.column_stack([X0[:, j], X1[:, 0]])
        coef = np.linalg.lstsq(basis, Xh[:, j], rcond=None)[0]
        np.testing.assert_allclose(basis @ coef, Xh[:, j], atol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"K": 31}, "exceed p"),
    ({"rho_range": (0.5, 0.1)}, "low > high"),
    ({"rho_range": (0.0, 1.5)}, r"rho_range must lie in \[0.0, 1.0\]"),
    ({"noise_range": (-0.1, 0.5)}, "noise_range must lie in"),
    ({"K": 0}, "K must be a positive integer"),
])
def test_generator_bad_input(kwargs, match):
    args = {"n": 20, "p": 30, "K": 3, "seed": 1, **kwargs}
    with pytest.raises(ValueError, match=match):
        make_block_factor_data(**args)


def test_generator_cluster_of_size_one_is_an_error():
    seed = next(s for s in range(1000) if 1 in np.random.RandomState(s).multinomial(6, np.ones(3) / 3))
    with pytest.raises(ValueError, match="cluster of size 1"):
        make_block_factor_data(10, 6, 3, seed=seed)


def test_digits_variables_shape():
    X, y = load_digits_variables(per_class=4)
    assert X.shape[1] == 20 and X.shape[0] <= 64
    np.testing.assert_array_equal(np.bincount(y), [4] * 5)
