import math

import pytest

from papers.sacopt.formulation import (Constraint, Formulation, SolverError, Variable, solve_formulation)


def _example():
    v = [Variable("x"), Variable("y")]
    cons = [Constraint({"x": 1}, "<=", 4), Constraint({"y": 2}, "<=", 12), Constraint({"x": 3, "y": 2}, "<=", 18)]
    return Formulation(v, {"x": 3, "y": 5}, "max", cons)


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_textbook_lp(backend):
    res = solve_formulation(_example(), backend=backend)
    assert res.status == "optimal" and res.backend == backend
    assert res.objective == pytest.approx(36.0, abs=1e-6)
    assert res.x["x"] == pytest.approx(2.0, abs=1e-6) and res.x["y"] == pytest.approx(6.0, abs=1e-6)


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_knapsack_integer_and_constant(backend):
    # items (w, v) = (2, 3), (3, 4), (4, 5), (5, 6); capacity 5 -> take items 1 and 2, value 7 (+ constant 1)
    v = [Variable(f"t{i}", 0, 1, True) for i in range(4)]
    f = Formulation(v, {"t0": 3, "t1": 4, "t2": 5, "t3": 6}, "max",
                    [Constraint({"t0": 2, "t1": 3, "t2": 4, "t3": 5}, "<=", 5)], objective_constant=1.0)
    assert solve_formulation(f, backend=backend).objective == pytest.approx(8.0)


def test_infeasible_and_unbounded():
    f = Formulation([Variable("x")], {"x": 1}, "min", [Constraint({"x": 1}, "<=", -1)])
    assert solve_formulation(f).status == "infeasible"
    g = Formulation([Variable("x")], {"x": 1}, "max", [Constraint({"x": 1}, ">=", 1)])
    assert solve_formulation(g).status == "unbounded"
    h = Formulation([Variable("x")], {"x": 1}, "min", [Constraint({"x": 1}, "==", 2.5)])
    assert solve_formulation(h).objective == pytest.approx(2.5)


@pytest.mark.parametrize("mutate, match", [
    (lambda f: f.variables.append(Variable("x")), "duplicate"),
    (lambda f: f.constraints[0].coeffs.update(z=1.0), "unknown variable"),
    (lambda f: f.objective.update(z=1.0), "unknown variable"),
    (lambda f: setattr(f.variables[0], "ub", -1.0), "lb"),
    (lambda f: f.constraints[1].coeffs.update(y=math.nan), "finite"),
    (lambda f: setattr(f.constraints[2], "rhs", math.inf), "finite"),
    (lambda f: setattr(f.constraints[0], "op", "<"), "op"),
    (lambda f: setattr(f, "sense", "maximise"), "sense"),
    (lambda f: setattr(f, "variables", []), "variables"),
])
def test_malformed_models(mutate, match):
    f = _example()
    mutate(f)
    with pytest.raises(ValueError, match=match):
        solve_formulation(f)


def test_unknown_backend_and_missing_gurobi():
    with pytest.raises(ValueError, match="backend"):
        solve_formulation(_example(), backend="cplex")
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        with pytest.raises(SolverError, match="gurobi"):
            solve_formulation(_example(), backend="gurobi")
