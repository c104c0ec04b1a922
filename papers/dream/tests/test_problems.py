"""QuadraticFederation: the documented draw order, exact identities of the global tasks, bad input."""
import numpy as np
import pytest

from papers.dream.problems import QuadraticFederation


def test_random_follows_the_documented_draw_order():
    p = QuadraticFederation.random(2, 2, 3, eig_range=(0.5, 5.0), center_offset=3.0, heterogeneity=2.0, seed=5)
    rng = np.random.default_rng(5)
    for i in range(2):
        for m in range(2):
            Q, R = np.linalg.qr(rng.standard_normal((3, 3)))
            Q = Q * np.sign(np.diag(R))
            e = np.exp(rng.uniform(np.log(0.5), np.log(5.0), 3))
            np.testing.assert_allclose(p.hessians[i, m], Q @ np.diag(e) @ Q.T, atol=1e-13)
            np.testing.assert_allclose(p.centers[i, m], 3.0 * (-1) ** m + 2.0 * rng.standard_normal(3), atol=1e-15)
            np.testing.assert_allclose(np.linalg.eigvalsh(p.hessians[i, m]), np.sort(e), rtol=1e-12)


def test_iid_instance_does_not_depend_on_n_clients():
    a = QuadraticFederation.random(2, 2, 3, iid=True, seed=1)
    b = QuadraticFederation.random(5, 2, 3, iid=True, seed=1)
    np.testing.assert_array_equal(a.hessians[0], b.hessians[4])
    np.testing.assert_array_equal(a.centers[1], b.centers[3])


def test_global_gradients_and_scalarised_minimiser():
    p = QuadraticFederation.random(3, 2, 4, seed=0)
    x = np.linspace(-1, 1, 4)
    g_clients = p.client_gradients(np.tile(x, (3, 1)), np.arange(3))
    np.testing.assert_allclose(p.task_gradients(x), g_clients.mean(axis=0), atol=1e-12)
    w = np.array([0.3, 0.7])
    xs = p.scalarized_minimizer(w)
    np.testing.assert_allclose(w @ p.task_gradients(xs), 0.0, atol=1e-12)
    # the uniform-scalarisation point is Pareto stationary: S = 0
    assert p.pareto_stationarity(p.scalarized_minimizer()) < 1e-24


def test_stationarity_single_task_is_squared_gradient_norm():
    p = QuadraticFederation.random(2, 1, 3, seed=2)
    x = np.ones(3)
    g = p.task_gradients(x)[0]
    assert p.pareto_stationarity(x) == pytest.approx(g @ g, rel=1e-14)


def test_noise_is_added_only_with_a_generator():
    p = QuadraticFederation.random(2, 2, 3, noise_std=0.5, seed=0)
    y = np.zeros((2, 3))
    exact = p.client_gradients(y, np.arange(2))
    noisy = p.client_gradients(y, np.arange(2), np.random.default_rng(0))
    np.testing.assert_allclose(noisy - exact, 0.5 * np.random.default_rng(0).standard_normal((2, 2, 3)))


def test_bad_input():
    H = np.tile(np.eye(2), (2, 1, 1, 1))        # (2, 1, 2, 2)
    a = np.zeros((2, 1, 2))
    QuadraticFederation(H, a)
    with pytest.raises(ValueError, match="centers"):
        QuadraticFederation(H, np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match="hessians"):
        QuadraticFederation(np.zeros((2, 0, 2, 2)), np.zeros((2, 0, 2)))
    bad = H.copy()
    bad[0, 0, 0, 1] = 0.5
    with pytest.raises(ValueError, match="symmetric"):
        QuadraticFederation(bad, a)
    with pytest.raises(ValueError, match="positive definite"):
        QuadraticFederation(-H, a)
    nan = H.copy()
    nan[1, 0, 1, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        QuadraticFederation(nan, a)
    a_inf = a.copy()
    a_inf[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="centers"):
        QuadraticFederation(H, a_inf)
    with pytest.raises(ValueError, match="noise_std"):
        QuadraticFederation(H, a, noise_std=-1.0)
    with pytest.raises(ValueError, match="n_tasks"):
        QuadraticFederation.random(2, 0, 3)
    with pytest.raises(ValueError, match="dim"):
        QuadraticFederation.random(2, 2, 0)
