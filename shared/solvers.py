"""LP / QP / SOCP / SDP solves over cvxpy with a recorded backend and an explicit fallback chain.

Backend order (``solver=None``): MOSEK when a licence is found, then Clarabel, then SCS. The next backend
is tried when one raises or ends inaccurate (Clarabel is fragile on some SDPs; SCS is first-order and
tolerant). Infeasible and unbounded are answers with their own status, not errors. Anything else (every
backend failed or ended inaccurate) raises :class:`SolverError` naming each backend and its status.
"""
from __future__ import annotations

import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np

__all__ = ["SolverError", "SolveResult", "solve", "solve_lp", "solve_qp", "mosek_licensed",
           "available_backends", "backend_counts"]

_OPTIMAL = "optimal"
_INACCURATE = "optimal_inaccurate"
_ANSWERS = {"infeasible": "infeasible", "unbounded": "unbounded"}
_USED: Counter = Counter()


class SolverError(RuntimeError):
    """A solve failed or ended inaccurate on every backend tried; the message names backends and statuses."""


@dataclass
class SolveResult:
    """Outcome of :func:`solve`.

    ``status`` is "optimal", "infeasible", "unbounded", or "optimal_inaccurate" (only with
    ``accept_inaccurate=True``); ``value`` the optimal objective (None unless optimal); ``backend`` the solver
    that produced the answer; ``attempts`` every (backend, raw status or error) tried, in order.
    """

    status: str
    value: float | None
    backend: str
    solve_time: float
    attempts: list = field(default_factory=list)


@lru_cache(maxsize=None)
def mosek_licensed() -> bool:
    """True when MOSEK is installed and a licence can be checked out."""
    try:
        import mosek

        with mosek.Env() as env:
            env.checkoutlicense(mosek.feature.pts)
        return True
    except Exception:  # noqa: BLE001 - any failure means "do not use MOSEK"
        return False


def available_backends() -> list[str]:
    """Backends of the automatic chain that are usable here, in order."""
    import cvxpy as cp

    installed = set(cp.installed_solvers())
    chain = [b for b in ("MOSEK", "CLARABEL", "SCS") if b in installed]
    if "MOSEK" in chain and not mosek_licensed():
        chain.remove("MOSEK")
    return chain


def backend_counts() -> dict[str, int]:
    """How many answers each backend gave in this process (recorded in provenance)."""
    return dict(_USED)


def _attempt(problem, backend: str, opts: dict):
    import cvxpy as cp

    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem.solve(solver=backend, **opts)
    except (cp.error.SolverError, ValueError, ArithmeticError) as exc:
        return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}", \
            time.perf_counter() - start
    return str(problem.status), time.perf_counter() - start


def solve(problem, *, solver: str | None = None, accept_inaccurate: bool = False,
          options_by_backend: Mapping[str, dict] | None = None, **solver_opts) -> SolveResult:
    """Solve a ``cvxpy.Problem``, falling back along MOSEK -> CLARABEL -> SCS.

    Parameters
    ----------
    problem : cvxpy.Problem
    solver : str, optional
        One backend to use, without fallback. Default: the automatic chain of :func:`available_backends`.
    accept_inaccurate : bool
        Return an "optimal_inaccurate" answer at once (with a warning) instead of trying the next backend
        (degenerate SDPs, where interior-point methods end slightly inaccurate and SCS would be far slower).
    options_by_backend : dict, optional
        Extra keyword options per backend name, e.g. ``{"SCS": {"eps": 1e-8}}``.
    **solver_opts
        Options passed to every backend tried.
    """
    chain = [solver.upper()] if solver else available_backends()
    if not chain:
        raise SolverError("no conic solver available (need CLARABEL or SCS in cvxpy.installed_solvers())")
    attempts = []
    for backend in chain:
        opts = {**solver_opts, **dict((options_by_backend or {}).get(backend, {}))}
        status, seconds = _attempt(problem, backend, opts)
        attempts.append((backend, status))
        if status == _INACCURATE and accept_inaccurate:
            warnings.warn(f"accepting an inaccurate solution from {backend}", RuntimeWarning, stacklevel=2)
        elif status != _OPTIMAL and status not in _ANSWERS:
            continue  # an error, or inaccurate without acceptance: try the next backend
        _USED[backend] += 1
        value = float(problem.value) if status in (_OPTIMAL, _INACCURATE) else None
        return SolveResult(_ANSWERS.get(status, status), value, backend, seconds, attempts)
    tried = "; ".join(f"{b}: {s}" for b, s in attempts)
    raise SolverError(f"solve failed on every backend tried ({tried})")


def _as_2d(name: str, A, n: int):
    if A is None:
        return None
    A = np.atleast_2d(np.asarray(A, dtype=float))
    if A.shape[1] != n:
        raise ValueError(f"{name} has {A.shape[1]} columns, expected {n} (the length of c or q)")
    return A


def _linear_constraints(x, n, A_ub, b_ub, A_eq, b_eq, bounds: Sequence | None):
    cons = []
    for name, A, b, sense in (("A_ub", A_ub, b_ub, "<="), ("A_eq", A_eq, b_eq, "==")):
        A = _as_2d(name, A, n)
        if A is None:
            continue
        b = np.asarray(b, dtype=float).ravel()
        if b.shape[0] != A.shape[0]:
            raise ValueError(f"b of {name} has length {b.shape[0]}, expected {A.shape[0]}")
        cons.append(A @ x <= b if sense == "<=" else A @ x == b)
    if bounds is not None:
        lo, hi = bounds
        if lo is not None:
            cons.append(x >= lo)
        if hi is not None:
            cons.append(x <= hi)
    return cons


def solve_lp(c, A_ub=None, b_ub=None, A_eq=None, b_eq=None, bounds=(0.0, None), **kwargs):
    r"""Linear program :math:`\min_x c^\top x` s.t. :math:`A_{ub} x \le b_{ub},\ A_{eq} x = b_{eq},\ lo \le x \le hi`.

    Returns ``(x, SolveResult)``; ``x`` is None unless the status is optimal. ``kwargs`` go to :func:`solve`.
    """
    import cvxpy as cp

    c = np.asarray(c, dtype=float).ravel()
    x = cp.Variable(c.size)
    problem = cp.Problem(cp.Minimize(c @ x), _linear_constraints(x, c.size, A_ub, b_ub, A_eq, b_eq, bounds))
    res = solve(problem, **kwargs)
    return (np.asarray(x.value) if res.status.startswith(_OPTIMAL) else None), res


def solve_qp(P, q, A_ub=None, b_ub=None, A_eq=None, b_eq=None, bounds=None, **kwargs):
    r"""Convex QP :math:`\min_x \tfrac12 x^\top P x + q^\top x` under the linear constraints of :func:`solve_lp`.

    ``P`` must be symmetric positive semidefinite (checked). Returns ``(x, SolveResult)``.
    """
    import cvxpy as cp

    q = np.asarray(q, dtype=float).ravel()
    P = np.asarray(P, dtype=float)
    if P.shape != (q.size, q.size):
        raise ValueError(f"P has shape {P.shape}, expected {(q.size, q.size)}")
    if not np.allclose(P, P.T, atol=1e-10):
        raise ValueError("P must be symmetric")
    if np.linalg.eigvalsh(P).min() < -1e-9 * max(1.0, np.abs(P).max()):
        raise ValueError("P must be positive semidefinite")
    x = cp.Variable(q.size)
    objective = cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(P)) + q @ x)
    problem = cp.Problem(objective, _linear_constraints(x, q.size, A_ub, b_ub, A_eq, b_eq, bounds))
    res = solve(problem, **kwargs)
    return (np.asarray(x.value) if res.status.startswith(_OPTIMAL) else None), res
