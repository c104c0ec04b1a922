import cvxpy as cp
import numpy as np
import pytest

from shared import solvers
from shared.solvers import SolverError, solve, solve_lp, solve_qp


def test_lp_known_answer():
    # min -x - y  s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0  ->  x = 8/5, y = 6/5, value -14/5
    x, res = solve_lp([-1, -1], A_ub=[[1, 2], [3, 1]], b_ub=[4, 6])
    assert res.status == "optimal"
    np.testing.assert_allclose(x, [1.6, 1.2], atol=1e-6)
    assert res.value == pytest.approx(-2.8, abs=1e-6)
    assert res.backend in solvers.available_backends()


def test_qp_known_answer():
    # min 1/2 ||x||^2 - [1, 2].x  subject to x1 + x2 = 1  ->  x = (0, 1)
    x, res = solve_qp(np.eye(2), [-1.0, -2.0], A_eq=[[1.0, 1.0]], b_eq=[1.0])
    assert res.status == "optimal"
    np.testing.assert_allclose(x, [0.0, 1.0], atol=1e-6)


def test_infeasible_and_unbounded_are_answers():
    x, res = solve_lp([1.0], A_ub=[[1.0], [-1.0]], b_ub=[-1.0, -1.0], bounds=None)  # x <= -1 and x >= 1
    assert res.status == "infeasible" and x is None and res.value is None
    x, res = solve_lp([-1.0], bounds=(0.0, None))
    assert res.status == "unbounded" and x is None


def test_sdp_known_answer():
    # max <J, X> over X psd with diag(X) = 1 in 2x2: X = all-ones, value 4 (equals n^2 for n=2)
    X = cp.Variable((2, 2), PSD=True)
    problem = cp.Problem(cp.Maximize(cp.sum(X)), [cp.diag(X) == 1])
    res = solve(problem)
    assert res.status == "optimal" and res.value == pytest.approx(4.0, abs=1e-5)


def test_fallback_to_scs_when_clarabel_fails(monkeypatch):
    real = solvers._attempt

    def broken_clarabel(problem, backend, opts):
        if backend == "CLARABEL":
            return "error: SolverError: simulated failure", 0.0
        return real(problem, backend, opts)

    monkeypatch.setattr(solvers, "_attempt", broken_clarabel)
    monkeypatch.setattr(solvers, "available_backends", lambda: ["CLARABEL", "SCS"])
    x, res = solve_lp([-1, -1], A_ub=[[1, 2], [3, 1]], b_ub=[4, 6])
    assert res.backend == "SCS" and res.status == "optimal"
    assert res.attempts[0] == ("CLARABEL", "error: SolverError: simulated failure")
    np.testing.assert_allclose(x, [1.6, 1.2], atol=1e-3)


def test_inaccurate_everywhere_raises_naming_solvers(monkeypatch):
    monkeypatch.setattr(solvers, "_attempt", lambda problem, backend, opts: ("optimal_inaccurate", 0.0))
    monkeypatch.setattr(solvers, "available_backends", lambda: ["CLARABEL", "SCS"])
    with pytest.raises(SolverError, match="CLARABEL: optimal_inaccurate; SCS: optimal_inaccurate"):
        solve_lp([1.0])
    assert issubclass(SolverError, RuntimeError)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="A_ub has 3 columns"):
        solve_lp([1.0, 1.0], A_ub=[[1.0, 1.0, 1.0]], b_ub=[1.0])
    with pytest.raises(ValueError, match="positive semidefinite"):
        solve_qp(-np.eye(2), [0.0, 0.0])
    with pytest.raises(ValueError, match="symmetric"):
        solve_qp([[1.0, 1.0], [0.0, 1.0]], [0.0, 0.0])


def test_mosek_only_when_licensed():
    chain = solvers.available_backends()
    assert ("MOSEK" in chain) == solvers.mosek_licensed()


def test_accept_inaccurate_returns_the_first_inaccurate_answer(monkeypatch):
    calls = []

    def inaccurate(problem, backend, opts):
        calls.append(backend)
        return "optimal_inaccurate", 0.0

    monkeypatch.setattr(solvers, "_attempt", inaccurate)
    monkeypatch.setattr(solvers, "available_backends", lambda: ["CLARABEL", "SCS"])
    x = cp.Variable()
    problem = cp.Problem(cp.Minimize(x), [x >= 1])
    problem.solve(solver="CLARABEL")  # gives problem.value a number, as a real inaccurate solve would
    with pytest.warns(RuntimeWarning, match="inaccurate solution from CLARABEL"):
        res = solve(problem, accept_inaccurate=True)
    assert res.status == "optimal_inaccurate" and res.backend == "CLARABEL" and calls == ["CLARABEL"]
