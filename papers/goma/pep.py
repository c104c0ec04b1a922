"""Worst-case bounds by performance estimation (PEP) with PEPit (Goujaud et al., 2024).

``worst_case(method, N)`` solves  tau(N) = max ||F(z_N)||^2  over monotone 1-Lipschitz operators F (PEPit's
``LipschitzStronglyMonotoneOperatorCheap`` with mu = 0) and starting points with ||z_0 - z*||^2 <= 1, where
z_N is produced by exactly the iterate generator that :mod:`papers.goma.methods` runs on numpy arrays. The
interpolation conditions of that class are necessary but not sufficient, so tau(N) is a valid upper bound,
not necessarily tight. Harness check: FEG with step 1/L has the tight bound tau(N) = 4/N^2 (Lee & Kim 2021).
"""
from __future__ import annotations

import warnings

from papers.goma.methods import VARIANTS, _check_n_iter, iterates, resolve_steps, variant_kwargs

__all__ = ["worst_case", "worst_case_with_status", "ACCEPTED_STATUSES"]

ACCEPTED_STATUSES = ("optimal", "optimal_inaccurate")


def _import_pepit():
    try:
        import cvxpy  # noqa: F401
    except ImportError as exc:  # pragma: no cover - cvxpy is a base pin
        raise ImportError("papers.goma.pep needs the package 'cvxpy' (pip install cvxpy)") from exc
    try:
        from PEPit import PEP
        from PEPit.operators import LipschitzStronglyMonotoneOperatorCheap
    except ImportError as exc:  # pragma: no cover - PEPit is a base pin
        raise ImportError("papers.goma.pep needs the package 'PEPit' (pip install pepit==0.5.1)") from exc
    return PEP, LipschitzStronglyMonotoneOperatorCheap


def worst_case_with_status(method: str, n_iter: int, *, gamma=None, eta=None, step=None,
                           solver: str = "CLARABEL") -> tuple[float, str]:
    """``(tau(N), solver status)``; see :func:`worst_case`. "optimal_inaccurate" is returned with a warning."""
    n_iter = _check_n_iter(n_iter)
    if n_iter < 1:
        raise ValueError(f"n_iter must be >= 1 for a worst case, got {n_iter}")
    if not isinstance(solver, str) or not solver:
        raise ValueError(f"solver must be a cvxpy solver name, got {solver!r}")
    if method in VARIANTS and method not in ("goma",) and VARIANTS[method][0] != method:
        if any(v is not None for v in (gamma, eta, step)):
            raise ValueError(f"variant {method!r} fixes its steps; do not pass gamma, eta or step")
        method, kwargs = variant_kwargs(method, 1.0)
        params = resolve_steps(method, 1.0, allow_eta_gt_gamma=True, **kwargs)
    else:
        params = resolve_steps(method, 1.0, gamma=gamma, eta=eta, step=step)
    PEP, Operator = _import_pepit()
    problem = PEP()
    F = problem.declare_function(Operator, mu=0.0, L=1.0)
    z_star = F.stationary_point()
    z0 = problem.set_initial_point()
    problem.set_initial_condition((z0 - z_star) ** 2 <= 1)
    z = z0
    for z in iterates(method, F.gradient, z0, n_iter, params):
        pass
    problem.set_performance_metric(F.gradient(z) ** 2)
    try:
        tau = problem.solve(wrapper="cvxpy", solver=solver.upper(), verbose=0)
    except Exception as exc:  # solver errors come in many types; name the solver and keep the cause
        raise RuntimeError(f"PEP of {method} (N={n_iter}): solver {solver} failed: {exc}") from exc
    wrapper = getattr(problem, "wrapper", None)
    status = str(getattr(getattr(wrapper, "prob", None), "status", "unknown"))
    if status not in ACCEPTED_STATUSES or tau is None:
        raise RuntimeError(f"PEP of {method} (N={n_iter}): solver {solver} returned status {status!r}")
    if status != "optimal":
        warnings.warn(f"PEP of {method} (N={n_iter}): solver {solver} returned status {status!r}; accepted",
                      RuntimeWarning, stacklevel=2)
    return float(tau), status


def worst_case(method: str, n_iter: int, *, gamma=None, eta=None, step=None, solver: str = "CLARABEL") -> float:
    """PEPit bound tau(N) on ||F(z_N)||^2 over monotone 1-Lipschitz F with ||z_0 - z*||^2 <= 1.

    ``method`` is a deterministic method name of :mod:`papers.goma.methods` with its steps (defaults in units
    of 1/L with L = 1), or a named variant of ``methods.VARIANTS`` (e.g. ``goma_t1``, Theorem 1's schedule). The solver is passed to cvxpy explicitly (default Clarabel; PEPit's own default is
    SCS/MOSEK). Raises ImportError naming PEPit or cvxpy when absent, and RuntimeError naming the solver and
    its status when the solve fails or ends "infeasible", "unbounded" or in an error status.
    """
    return worst_case_with_status(method, n_iter, gamma=gamma, eta=eta, step=step, solver=solver)[0]
