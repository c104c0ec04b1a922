"""Problems: zeros, monotonicity, Lipschitz constants, the noise model, and bad inputs."""
import math

import numpy as np
import pytest

from papers.goma.problems import MonotoneProblem, make_problem, skew_matrix


def _pairs(d, n=20, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal((n, d))


@pytest.mark.parametrize("name, params", [
    ("logspectrum_bilinear", {"n": 12}),
    ("random_bilinear", {"n": 7}),
    ("rank_deficient_quadratic", {"n": 8}),
    ("nonlinear_logspectrum", {"n": 6, "r": 3}),
    ("stochastic_logspectrum", {"n": 5}),
])
def test_zero_monotone_lipschitz(name, params):
    p = make_problem(name, seed=1, **params)
    F = p.operator
    assert np.linalg.norm(F(p.z_star)) <= 1e-9 * max(1.0, np.linalg.norm(p.z_star))
    U, V = _pairs(p.dim)
    FU, FV = F(U), F(V)  # batch evaluation equals row-wise evaluation
    np.testing.assert_allclose(FU[3], F(U[3]), rtol=1e-13, atol=1e-15)
    inner = np.einsum("ij,ij->i", FU - FV, U - V)
    assert np.all(inner >= -1e-12)
    ratio = np.linalg.norm(FU - FV, axis=1) / np.linalg.norm(U - V, axis=1)
    assert np.all(ratio <= p.L * (1 + 1e-12))


def test_p1_definition():
    p = make_problem("logspectrum_bilinear", n=4)
    s = np.logspace(-3, 0, 4)
    z = np.arange(1.0, 9.0)
    np.testing.assert_array_equal(p.operator(z), np.concatenate([s * z[4:], -s * z[:4]]))
    assert p.L == 1.0 and p.dim == 8
    assert np.linalg.norm(p.z0 - p.z_star) == pytest.approx(1.0, rel=1e-15)


def test_p2_draw_order_and_solution():
    n = 5
    rng = np.random.default_rng(3)
    A = rng.standard_normal((n, n)) / math.sqrt(n)
    b, c = rng.standard_normal(n), rng.standard_normal(n)
    p = make_problem("random_bilinear", seed=3, n=n)
    assert p.L == pytest.approx(np.linalg.norm(A, 2), rel=1e-14)
    x, y = p.z_star[:n], p.z_star[n:]
    np.testing.assert_allclose(A.T @ x, -c, atol=1e-10)
    np.testing.assert_allclose(A @ y, -b, atol=1e-10)
    np.testing.assert_array_equal(p.z0, np.zeros(2 * n))


def test_p3_not_strongly_monotone():
    n, r = 8, 2
    p = make_problem("rank_deficient_quadratic", seed=0, n=n)
    M = (p.operator(np.eye(2 * n)) - p.operator(np.zeros(2 * n))).T
    sym_eigs = np.linalg.eigvalsh((M + M.T) / 2)
    assert sym_eigs.min() > -1e-12 and np.sum(sym_eigs > 1e-10) == 2 * r
    assert abs(sym_eigs).min() < 1e-12  # monotone but not strongly monotone
    assert p.L == pytest.approx(np.linalg.norm(M, 2), rel=1e-12)


def test_bilinear_scalar_and_least_norm():
    p = make_problem("bilinear", A=[[0.7]], z0=[2.0, -1.0])
    np.testing.assert_allclose(p.operator(np.array([2.0, -1.0])), [-0.7, -1.4])
    assert p.L == pytest.approx(0.7)
    A = np.array([[1.0, 1.0], [0.0, 0.0]])  # rank 1: A y = -b has many solutions
    p = make_problem("bilinear", A=A, b=[-2.0, 0.0], c=[-1.0, -1.0])
    np.testing.assert_allclose(p.z_star, [1.0, 0.0, 1.0, 1.0], atol=1e-12)  # least-norm solutions
    assert np.linalg.norm(p.operator(p.z_star)) < 1e-12


def test_skew_matrix():
    A = np.array([[1.0, 2.0, 3.0]])
    K = skew_matrix(A)
    np.testing.assert_array_equal(K, -K.T)
    assert K.shape == (4, 4)


def test_s1_noise_unbiased_and_variance_formula():
    n = 5
    p = make_problem("stochastic_logspectrum", n=n, s_mult=0.5, sigma_a=0.1)
    z = np.linspace(-1.0, 2.0, 2 * n)
    S = 40_000
    samples = p.sample(np.tile(z, (S, 1)), np.random.default_rng(0))
    dev = samples - p.operator(z)
    expected = 0.25 * z @ z + 2 * n * 0.01  # s_mult^2 ||z||^2 + 2 n sigma_a^2
    assert p.noise_variance(z) == pytest.approx(expected, rel=1e-14)
    assert np.mean(np.sum(dev ** 2, axis=1)) == pytest.approx(expected, rel=0.03)
    assert np.max(np.abs(dev.mean(axis=0))) < 5 * math.sqrt(expected / S)


def test_s1_draw_order_and_skew_samples():
    n, S = 3, 4
    p = make_problem("stochastic_logspectrum", n=n, s_mult=0.5, sigma_a=0.1)
    Z = np.random.default_rng(1).standard_normal((S, 2 * n))
    got = p.sample(Z, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    G = rng.standard_normal((S, n, n)) * (0.5 / math.sqrt(n))  # G first ...
    eps = 0.1 * rng.standard_normal((S, 2 * n))                # ... then eps
    A = np.diag(np.logspace(-1, 0, n))
    for i in range(S):
        K = skew_matrix(A + G[i])                               # each sample is a skew (monotone) operator
        np.testing.assert_allclose(got[i], K @ Z[i] + eps[i], rtol=1e-12, atol=1e-14)


def test_s1_student_t_variance():
    p = make_problem("stochastic_logspectrum", n=4, s_mult=0.0, sigma_a=0.2, noise="student_t", tail_index=4.0)
    assert p.noise_variance(np.zeros(8)) == pytest.approx(8 * 0.04 * 2.0)  # Var(T_4) = 4/2
    q = make_problem("stochastic_logspectrum", n=4, sigma_a=0.2, noise="student_t_unit", tail_index=3.0)
    assert q.noise_variance(np.zeros(8)) == pytest.approx(8 * 0.04)


@pytest.mark.parametrize("name, params, word", [
    ("no_such_problem", {}, "name"),
    ("logspectrum_bilinear", {"m": 3}, "unknown parameter"),
    ("logspectrum_bilinear", {"n": 0}, "n must"),
    ("logspectrum_bilinear", {"z0": np.ones(3)}, "z0"),
    ("random_bilinear", {"n": 3, "z0": np.array([0, 0, 0, 0, 0, np.nan])}, "z0"),
    ("logspectrum_bilinear", {"n": 2, "z0": np.array([0, np.inf, 0, 0])}, "z0"),
    ("bilinear", {"A": np.ones(3)}, "A must"),
    ("bilinear", {}, "A is required"),
    ("bilinear", {"A": np.ones((2, 3)), "b": np.ones(3)}, "b must"),
    ("bilinear", {"A": np.ones((2, 3)), "c": np.ones(2)}, "c must"),
    ("bilinear", {"A": np.ones((2, 3)), "z0": np.ones(4)}, "z0"),
    ("stochastic_logspectrum", {"s_mult": -0.1}, "s_mult"),
    ("stochastic_logspectrum", {"sigma_a": -1.0}, "sigma_a"),
    ("stochastic_logspectrum", {"noise": "laplace"}, "noise"),
    ("stochastic_logspectrum", {"noise": "student_t"}, "tail_index"),
])
def test_bad_inputs(name, params, word):
    with pytest.raises(ValueError, match=word):
        make_problem(name, **params)


@pytest.mark.parametrize("L", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_L(L):
    with pytest.raises(ValueError, match="L must"):
        MonotoneProblem(name="x", dim=2, L=L, z0=np.zeros(2), z_star=np.zeros(2), operator=lambda z: z)
