"""Attractor/optimiser ablation (Fig. 2): derivatives, first steps by hand, theory, bad inputs."""
import math

import numpy as np
import pytest

from papers.mipcrim.ablation import F3_MARGIN, attractor_derivative, relaxed_descent
from papers.mipcrim.landscape import one_flip_minima
from papers.mipcrim.problems import maxcut_coupling, sk_instance

C4 = np.array([[0, 1, 1], [1, 2, 1], [2, 3, 1], [0, 3, 1]], dtype=float)


def test_attractor_derivatives():
    x = np.array([-0.5, 0.0, 0.25])
    np.testing.assert_allclose(attractor_derivative(x, "f1", {"theta": 0.3}, 1.0), -0.6 * x)
    np.testing.assert_allclose(attractor_derivative(x, "f2", {"alpha": 2.0, "beta": 4.0}, 1.0), 4 * x ** 3 - 2 * x)
    # f3'(x) = atanh(x/lam)/beta - alpha x; atanh(1/2) = ln(3)/2
    d = attractor_derivative(np.array([0.5, 0.0]), "f3", {"alpha": 0.2, "beta": 2.0}, 1.0)
    assert math.isclose(d[0], math.log(3) / 4 - 0.1, rel_tol=1e-14) and d[1] == 0.0
    with pytest.raises(ValueError, match="open box"):
        attractor_derivative(np.array([1.0]), "f3", {"alpha": 0.2, "beta": 2.0}, 1.0)


def test_first_steps_by_hand():
    J = sk_instance(8, 5)
    lam, lr = 0.2, 0.05
    X0 = np.random.default_rng(0).uniform(-lam, lam, size=(8, 3))
    p = {"alpha": 0.01, "beta": 1.0}
    g0 = p["beta"] * X0 ** 3 - p["alpha"] * X0 - J @ X0
    # GD, one step
    X, S, E = relaxed_descent(J, X0, attractor="f2", params=p, lam=lam, optimizer="gd", lr=lr, steps=1)
    X1 = np.clip(X0 - lr * g0, -lam, lam)
    np.testing.assert_allclose(X, X1, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(S, np.where(X1 >= 0, 1, -1))
    np.testing.assert_allclose(E, -0.5 * np.sum(S * (J @ S), axis=0), rtol=1e-13)
    # Adam, one step: m_hat = g, sqrt(v_hat) = |g|, so a signed step lr g / (|g| + eps)
    X, _, _ = relaxed_descent(J, X0, attractor="f2", params=p, lam=lam, optimizer="adam", lr=lr, steps=1)
    np.testing.assert_allclose(X, np.clip(X0 - lr * g0 / (np.abs(g0) + 1e-8), -lam, lam), rtol=0, atol=1e-15)
    # heavy ball, two steps: x2 = P(x1 - lr g(x1) + 0.9 (x1 - x0))
    X, _, _ = relaxed_descent(J, X0, attractor="f2", params=p, lam=lam, optimizer="heavy_ball", lr=lr, steps=2)
    g1 = p["beta"] * X1 ** 3 - p["alpha"] * X1 - J @ X1
    np.testing.assert_allclose(X, np.clip(X1 - lr * g1 + 0.9 * (X1 - X0), -lam, lam), rtol=0, atol=1e-15)


def test_f3_stays_in_open_box():
    J = sk_instance(10, 1)
    X0 = np.full((10, 2), 0.5)
    X, _, _ = relaxed_descent(J, X0, attractor="f3", params={"alpha": 1e-5, "beta": 100.0}, lam=0.1,
                              optimizer="adam", lr=1.0, steps=5)
    assert np.all(np.abs(X) <= 0.1 * (1 - F3_MARGIN))


def test_admissible_f1_descent_ends_at_one_flip_minima():
    """4-cycle: gamma = 2, so f1 = -theta x^2 with theta = 0.5 < gamma/2 is admissible (Thm 3.13): projected GD
    ends at corners lam*s with s one of the six one-flip minima."""
    J = maxcut_coupling(4, C4).toarray()
    lam = 1.0
    X0 = np.random.default_rng(3).uniform(-lam, lam, size=(4, 200))
    X, S, _ = relaxed_descent(J, X0, attractor="f1", params={"theta": 0.5}, lam=lam, optimizer="gd", lr=0.1,
                              steps=500)
    assert np.all(np.abs(X) == lam)
    minima = {tuple(r) for r in one_flip_minima(J)}
    assert len(minima) == 6 and {tuple(c) for c in S.T} <= minima


def test_restarts_reproducible_and_best_seen():
    J = sk_instance(12, 2)
    X0 = np.random.default_rng(1).uniform(-0.07, 0.07, size=(12, 4))
    kw = dict(attractor="f2", params={"alpha": 1.5e-5, "beta": 1e-3}, lam=0.07, optimizer="adam", lr=0.1,
              steps=5, sigma=1e-3)
    _, S1, E1 = relaxed_descent(J, X0, epochs=1, **kw)
    _, S5, E5 = relaxed_descent(J, X0, epochs=5, seeds=range(4), **kw)
    _, S5b, E5b = relaxed_descent(J, X0, epochs=5, seeds=range(4), **kw)
    np.testing.assert_array_equal(S5, S5b)
    assert np.all(E5 <= E1)                   # the first epoch is shared, later epochs can only lower the best
    np.testing.assert_allclose(E5, -0.5 * np.sum(S5 * (J @ S5), axis=0), rtol=1e-13)


def test_bad_inputs_ablation():
    J = sk_instance(6, 0)
    X0 = np.zeros((6, 2))
    ok = dict(attractor="f2", params={"alpha": 1.0, "beta": 1.0}, lam=0.1, optimizer="gd", lr=0.1, steps=2)
    cases = [({"attractor": "f4"}, "attractor"), ({"optimizer": "sgd"}, "optimizer"),
             ({"params": {"alpha": 1.0}}, "beta"), ({"params": {"alpha": -1.0, "beta": 1.0}}, "alpha"),
             ({"lam": 0.0}, "lam"), ({"lr": -0.1}, "lr"), ({"steps": 0}, "steps"), ({"epochs": 0}, "epochs"),
             ({"epochs": 2}, "seeds"), ({"epochs": 2, "seeds": [0]}, "seeds"), ({"sigma": -1.0}, "sigma"),
             ({"momentum": 1.0}, "momentum")]
    for bad, word in cases:
        with pytest.raises(ValueError, match=word):
            relaxed_descent(J, X0, **{**ok, **bad})
    with pytest.raises(ValueError, match="X0"):
        relaxed_descent(J, np.zeros((5, 2)), **ok)
    with pytest.raises(ValueError, match="X0"):
        relaxed_descent(J, np.full((6, 2), np.nan), **ok)
    with pytest.raises(ValueError, match="symmetric"):
        relaxed_descent(np.triu(J), X0, **ok)
