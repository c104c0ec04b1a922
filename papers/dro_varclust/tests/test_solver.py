"""Operator-norm prox (closed forms, Moreau), the DRO solvers against cvxpy, exact diagonal, bad inputs."""
import numpy as np
import pytest

from papers.dro_varclust.data import make_block_factor_data
from papers.dro_varclust.solver import dro_objective, prox_operator_norm, prox_operator_norm_eigh, solve_dro_nodewise


def _rotate(d, seed=0):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.normal(size=(len(d), len(d))))[0]
    V = np.linalg.qr(rng.normal(size=(len(d), len(d))))[0]
    return U, V, U @ np.diag(d) @ V.T


@pytest.mark.parametrize("tau, expected", [(1.0, [2.0, 1.0]), (3.0, [0.5, 0.5]), (4.0, [0.0, 0.0]),
                                           (0.0, [3.0, 1.0])])
def test_prox_closed_forms(tau, expected):
    # sigma = (3, 1): sum (sigma - t)_+ = tau gives t = 3 - tau (tau <= 2) and t = (4 - tau)/2 (2 <= tau <= 4).
    U, V, M = _rotate([3.0, 1.0])
    np.testing.assert_allclose(prox_operator_norm(M, tau), U @ np.diag(expected) @ V.T, atol=1e-12)


def test_prox_moreau_and_optimality():
    rng = np.random.default_rng(1)
    M = rng.normal(size=(6, 4))
    tau = 1.3
    P = prox_operator_norm(M, tau)
    # M - prox is the projection on the nuclear ball of radius tau (tight since sum sigma > tau).
    assert np.linalg.norm(M - P, "nuc") == pytest.approx(tau, rel=1e-12)

    def f(Z):
        return 0.5 * np.sum((Z - M) ** 2) + tau * np.linalg.norm(Z, 2)

    for _ in range(50):
        assert f(P) <= f(P + 1e-3 * rng.normal(size=M.shape)) + 1e-12


@pytest.mark.parametrize("shape, tau", [((6, 6), 0.0), ((6, 6), 0.7), ((6, 6), 100.0), ((8, 5), 1.3),
                                        ((40, 40), 2.5)])
def test_prox_from_eigh_equals_prox_from_svd(shape, tau):
    # The eigh route (M^T M = V sigma^2 V^T, prox = M - M V_k diag(1 - t/sigma_k) V_k^T) is the same map.
    M = np.eye(*shape) + 0.3 * np.random.default_rng(2).normal(size=shape)
    np.testing.assert_allclose(prox_operator_norm_eigh(M, tau), prox_operator_norm(M, tau), atol=1e-10)


@pytest.mark.parametrize("M, tau, match", [(np.ones(3), 1.0, "2-D"), (np.eye(2), -1.0, "tau"),
                                           (np.array([[np.nan]]), 1.0, "NaN")])
def test_prox_bad_input(M, tau, match):
    with pytest.raises(ValueError, match=match):
        prox_operator_norm(M, tau)


@pytest.fixture(scope="module")
def small():
    X, _ = make_block_factor_data(12, 8, 2, seed=3)
    return X, 0.6


@pytest.fixture(scope="module")
def reference(small):
    X, s = small
    return solve_dro_nodewise(X, s, method="cvxpy")


def test_admm_matches_cvxpy_and_has_zero_diagonal(small, reference):
    X, s = small
    sol = solve_dro_nodewise(X, s)
    assert sol.method == "admm" and sol.n_iter > 0
    assert np.all(np.diag(sol.B) == 0.0) and np.all(np.diag(reference.B) == 0.0)
    assert sol.objective == pytest.approx(dro_objective(X, sol.B, s), rel=1e-15)
    assert abs(sol.objective - reference.objective) / reference.objective < 1e-5
    np.testing.assert_allclose(sol.B, reference.B, atol=1e-3)


def test_admm_paper_is_an_approximate_optimum(small, reference):
    X, s = small
    sol = solve_dro_nodewise(X, s, method="admm_paper")
    assert np.all(np.diag(sol.B) == 0.0)
    assert -1e-6 <= (sol.objective - reference.objective) / reference.objective < 1e-2


def test_large_radius_gives_zero_coefficients(small):
    # ||I - B||_op >= max_i |(I - B)_ii| = 1 with equality at B = 0, so for s large B = 0 is the minimiser.
    X, _ = small
    sol = solve_dro_nodewise(X, 50.0)
    assert np.max(np.abs(sol.B)) < 1e-5
    assert sol.objective == pytest.approx(np.linalg.norm(X) / np.sqrt(X.shape[0]) + 50.0, rel=1e-5)  # ADMM tolerance


def test_warm_start_from_the_solution_converges_fast(small):
    X, s = small
    cold = solve_dro_nodewise(X, s)
    warm = solve_dro_nodewise(X, s, warm_start=cold.B)
    assert warm.objective == pytest.approx(cold.objective, rel=1e-6)
    assert warm.n_iter <= cold.n_iter


@pytest.mark.parametrize("relax", [1.0, 1.5, 1.8])
def test_over_relaxation_reaches_the_same_optimum(small, reference, relax):
    X, s = small
    sol = solve_dro_nodewise(X, s, relax=relax)
    assert abs(sol.objective - reference.objective) / reference.objective < 1e-5


def test_early_stop_returns_an_unconverged_iterate(small, reference):
    # strict=False returns the iterate after max_iter steps (the solver check's negative control): far from optimal.
    X, s = small
    sol = solve_dro_nodewise(X, s, max_iter=3, strict=False)
    assert sol.n_iter == 3 and np.all(np.diag(sol.B) == 0.0)
    assert (sol.objective - reference.objective) / reference.objective > 1e-3


def test_non_convergence_raises(small):
    X, s = small
    with pytest.raises(RuntimeError, match=r"method='admm'.*1 iterations.*primal residual"):
        solve_dro_nodewise(X, s, max_iter=1)


@pytest.mark.parametrize("kwargs, match", [
    ({"penalty": 0.0}, "penalty"), ({"penalty": float("nan")}, "penalty"), ({"method": "sgd"}, "method"),
    ({"rho_init": 0.0}, "rho_init"), ({"relax": 2.0}, "relax"), ({"relax": 0.0}, "relax"),
    ({"warm_start": np.zeros((3, 3))}, "warm_start"),
    ({"X": np.ones(5)}, "2-D"), ({"X": np.full((4, 3), np.inf)}, "NaN or Inf"),
])
def test_solver_bad_input(small, kwargs, match):
    X, s = small
    args = {"X": X, "penalty": s, **kwargs}
    with pytest.raises(ValueError, match=match):
        solve_dro_nodewise(args.pop("X"), args.pop("penalty"), **args)


@pytest.fixture(scope="module")
def medium():
    from papers.dro_varclust.radius import dro_radius
    X, _ = make_block_factor_data(20, 30, 3, seed=1)
    return X, dro_radius(X, n_sim=200, seed=1)


def test_anderson_admm_equals_plain_admm(medium):
    # the same optimum: with tight tolerances the accelerated and the plain ADMM agree to 1e-7 in B
    X, s = medium
    tight = {"abs_tol": 1e-12, "rel_tol": 1e-11, "max_iter": 200000}
    plain = solve_dro_nodewise(X, s, anderson=0, **tight)
    fast = solve_dro_nodewise(X, s, anderson=5, **tight)
    np.testing.assert_allclose(fast.B, plain.B, atol=1e-7)
    assert abs(fast.objective - plain.objective) / plain.objective < 1e-10
    assert fast.n_iter < plain.n_iter


def test_default_solver_equals_the_former_default_to_1e7(medium):
    # former default: plain ADMM, abs_tol 1e-7, rel_tol 1e-6; the default now: Anderson (m = 5), tolerances / 100
    X, s = medium
    former = solve_dro_nodewise(X, s, anderson=0, abs_tol=1e-7, rel_tol=1e-6)
    now = solve_dro_nodewise(X, s)
    assert abs(now.objective - former.objective) / former.objective < 1e-7
    assert np.all(np.diag(now.B) == 0.0)


def test_anderson_state_warm_starts(medium):
    X, s = medium
    cold = solve_dro_nodewise(X, s)
    warm = solve_dro_nodewise(X, 1.1 * s, warm_state=cold.state)
    ref = solve_dro_nodewise(X, 1.1 * s, anderson=0)
    assert abs(warm.objective - ref.objective) / ref.objective < 1e-7


@pytest.mark.parametrize("anderson", [-1, 1.5, True])
def test_anderson_bad_input(small, anderson):
    X, s = small
    with pytest.raises(ValueError, match="anderson must be a non-negative integer"):
        solve_dro_nodewise(X, s, anderson=anderson)
