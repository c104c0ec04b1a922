"""Linear / mixed-integer formulations and three solver back-ends (HiGHS via scipy, CBC via pulp, gurobipy).

A :class:`Formulation` is

    min or max  c^T x + c_0
    s.t.        a_k^T x  (<= | >= | ==)  b_k,   k = 1..m
                lb_j <= x_j <= ub_j,  x_j integer for j in I.

It is the gold model of a generated problem (``papers.sacopt.problems``) and of the project's ComplexOR
reference formulations, solved in process (never model-written code, which runs only in the sandbox).
Example: max 3x + 5y s.t. x <= 4, 2y <= 12, 3x + 2y <= 18, x, y >= 0 has optimum 36 at (2, 6).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Variable", "Constraint", "Formulation", "SolveResult", "SolverError", "solve_formulation",
           "validate_formulation", "BACKENDS", "OPS", "SENSES"]

OPS = ("<=", ">=", "==")
SENSES = ("min", "max")
BACKENDS = ("highs", "cbc", "gurobi")


class SolverError(RuntimeError):
    """A back-end failed or returned a status other than optimal/infeasible/unbounded."""


@dataclass
class Variable:
    """Decision variable ``lb <= x <= ub`` (``ub=None``: no upper bound), integer when ``integer``."""

    name: str
    lb: float = 0.0
    ub: float | None = None
    integer: bool = False


@dataclass
class Constraint:
    """Linear constraint ``sum_j coeffs[j] x_j  op  rhs`` with ``op`` in {"<=", ">=", "=="}."""

    coeffs: dict[str, float]
    op: str
    rhs: float
    name: str = ""


@dataclass
class Formulation:
    """``sense`` (min|max) of ``sum_j objective[j] x_j + objective_constant`` subject to ``constraints``."""

    variables: list[Variable]
    objective: dict[str, float]
    sense: str
    constraints: list[Constraint] = field(default_factory=list)
    objective_constant: float = 0.0


@dataclass
class SolveResult:
    """``status`` in {"optimal", "infeasible", "unbounded"}; ``objective`` (None unless optimal); ``x``."""

    status: str
    objective: float | None
    x: dict[str, float]
    backend: str


def _finite(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return float(value)


def validate_formulation(f: Formulation) -> None:
    """Raise ``ValueError`` naming the offending part of a malformed formulation."""
    if not isinstance(f, Formulation):
        raise ValueError(f"f must be a Formulation, got {type(f).__name__}")
    if not f.variables:
        raise ValueError("variables must be a non-empty list")
    names = set()
    for v in f.variables:
        if not isinstance(v, Variable) or not isinstance(v.name, str) or not v.name:
            raise ValueError(f"variables: every entry must be a Variable with a non-empty name, got {v!r}")
        if v.name in names:
            raise ValueError(f"variables: duplicate variable name {v.name!r}")
        names.add(v.name)
        lb = _finite(v.lb, f"variables[{v.name!r}].lb") if not (isinstance(v.lb, float) and v.lb == -math.inf) else -math.inf
        if v.ub is not None:
            ub = _finite(v.ub, f"variables[{v.name!r}].ub")
            if lb > ub:
                raise ValueError(f"variables[{v.name!r}]: lb {lb} > ub {ub}")
    if f.sense not in SENSES:
        raise ValueError(f"sense must be one of {SENSES}, got {f.sense!r}")
    _finite(f.objective_constant, "objective_constant")
    _check_coeffs(f.objective, names, "objective")
    for k, c in enumerate(f.constraints):
        if not isinstance(c, Constraint):
            raise ValueError(f"constraints[{k}] must be a Constraint, got {type(c).__name__}")
        if c.op not in OPS:
            raise ValueError(f"constraints[{k}].op must be one of {OPS}, got {c.op!r}")
        _finite(c.rhs, f"constraints[{k}].rhs")
        _check_coeffs(c.coeffs, names, f"constraints[{k}].coeffs")


def _check_coeffs(coeffs, names, what):
    if not isinstance(coeffs, dict):
        raise ValueError(f"{what} must be a dict name -> coefficient, got {type(coeffs).__name__}")
    for name, value in coeffs.items():
        if name not in names:
            raise ValueError(f"{what}: unknown variable name {name!r}")
        _finite(value, f"{what}[{name!r}]")


def _matrices(f: Formulation):
    idx = {v.name: j for j, v in enumerate(f.variables)}
    n = len(idx)
    c = np.zeros(n)
    for name, value in f.objective.items():
        c[idx[name]] = value
    A = np.zeros((len(f.constraints), n))
    lo, hi = np.full(len(f.constraints), -np.inf), np.full(len(f.constraints), np.inf)
    for k, con in enumerate(f.constraints):
        for name, value in con.coeffs.items():
            A[k, idx[name]] += value
        if con.op in ("<=", "=="):
            hi[k] = con.rhs
        if con.op in (">=", "=="):
            lo[k] = con.rhs
    return c, A, lo, hi


def _solve_highs(f: Formulation) -> SolveResult:
    from scipy.optimize import Bounds, LinearConstraint, milp

    c, A, lo, hi = _matrices(f)
    sign = -1.0 if f.sense == "max" else 1.0
    lb = np.array([v.lb for v in f.variables], dtype=float)
    ub = np.array([np.inf if v.ub is None else v.ub for v in f.variables], dtype=float)
    integrality = np.array([1 if v.integer else 0 for v in f.variables])
    cons = [LinearConstraint(A, lo, hi)] if len(f.constraints) else []
    res = milp(sign * c, constraints=cons, bounds=Bounds(lb, ub), integrality=integrality)
    if res.status == 0:
        x = {v.name: float(res.x[j]) for j, v in enumerate(f.variables)}
        return SolveResult("optimal", float(c @ res.x) + f.objective_constant, x, "highs")
    if res.status == 2:
        return SolveResult("infeasible", None, {}, "highs")
    if res.status == 3:
        return SolveResult("unbounded", None, {}, "highs")
    raise SolverError(f"backend highs returned status {res.status} ({res.message})")


def _solve_cbc(f: Formulation) -> SolveResult:
    import pulp

    prob = pulp.LpProblem("f", pulp.LpMaximize if f.sense == "max" else pulp.LpMinimize)
    xs = {v.name: pulp.LpVariable(f"x{j}", lowBound=v.lb if math.isfinite(v.lb) else None, upBound=v.ub,
                                  cat="Integer" if v.integer else "Continuous")
          for j, v in enumerate(f.variables)}
    prob += pulp.lpSum(value * xs[name] for name, value in f.objective.items()) + f.objective_constant
    for con in f.constraints:
        expr = pulp.lpSum(value * xs[name] for name, value in con.coeffs.items())
        prob += (expr <= con.rhs) if con.op == "<=" else (expr >= con.rhs) if con.op == ">=" else (expr == con.rhs)
    prob.solve(pulp.PULP_CBC_CMD(msg=0))
    status = pulp.LpStatus[prob.status]
    if status == "Optimal":
        x = {name: float(var.value() or 0.0) for name, var in xs.items()}
        obj = sum(value * x[name] for name, value in f.objective.items()) + f.objective_constant
        return SolveResult("optimal", float(obj), x, "cbc")
    if status == "Infeasible":
        return SolveResult("infeasible", None, {}, "cbc")
    if status == "Unbounded":
        return SolveResult("unbounded", None, {}, "cbc")
    raise SolverError(f"backend cbc returned status {status!r}")


def _solve_gurobi(f: Formulation) -> SolveResult:
    try:
        import gurobipy as gp
    except ImportError as exc:
        raise SolverError(f"backend gurobi is not available ({exc}); use 'highs' or 'cbc'") from None
    m = gp.Model()
    m.Params.OutputFlag = 0
    xs = {v.name: m.addVar(lb=v.lb, ub=gp.GRB.INFINITY if v.ub is None else v.ub,
                           vtype=gp.GRB.INTEGER if v.integer else gp.GRB.CONTINUOUS) for v in f.variables}
    m.setObjective(gp.quicksum(value * xs[n] for n, value in f.objective.items()) + f.objective_constant,
                   gp.GRB.MAXIMIZE if f.sense == "max" else gp.GRB.MINIMIZE)
    for con in f.constraints:
        expr = gp.quicksum(value * xs[n] for n, value in con.coeffs.items())
        m.addConstr(expr <= con.rhs if con.op == "<=" else expr >= con.rhs if con.op == ">=" else expr == con.rhs)
    m.Params.DualReductions = 0
    m.optimize()
    if m.Status == gp.GRB.OPTIMAL:
        return SolveResult("optimal", float(m.ObjVal), {n: float(v.X) for n, v in xs.items()}, "gurobi")
    if m.Status == gp.GRB.INFEASIBLE:
        return SolveResult("infeasible", None, {}, "gurobi")
    if m.Status == gp.GRB.UNBOUNDED:
        return SolveResult("unbounded", None, {}, "gurobi")
    raise SolverError(f"backend gurobi returned status {m.Status}")


def solve_formulation(f: Formulation, *, backend: str = "highs") -> SolveResult:
    """Solve ``f`` with ``backend`` in {"highs" (scipy.optimize.milp), "cbc" (pulp), "gurobi" (gurobipy)}.

    Returns a :class:`SolveResult`; raises ``ValueError`` for a malformed model or an unknown backend and
    :class:`SolverError` (naming backend and status) when the back-end fails.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    validate_formulation(f)
    return {"highs": _solve_highs, "cbc": _solve_cbc, "gurobi": _solve_gurobi}[backend](f)
