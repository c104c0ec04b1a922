r"""Independent cross-check of the moment bounds with ``ncpol2sdpa`` (Wittek 2015).

ncpol2sdpa builds the level-``r`` Lasserre relaxation of :math:`\min -U(x)` s.t. :math:`g(x) \ge 0` from
sympy expressions (its own monomial basis, moment and localizing matrices); the same semialgebraic
description as :mod:`papers.irefg_sos.hierarchy` is passed (the linear set and its pairwise products), the
relaxation is converted to cvxpy by ncpol2sdpa and solved through ``shared.solvers.solve``. Both codes then
bound the same optimum with the same relaxation, so the values must agree up to solver tolerance.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

from .hierarchy import _check_level, min_level, strategy_constraints

__all__ = ["NcpolBound", "ncpol_bound", "ncpol_available"]


@dataclass
class NcpolBound:
    """``bound`` (max U at the level; None when not solved), ``status``, ``solver``, ``seconds``."""

    bound: float | None
    status: str
    solver: str
    seconds: float


def ncpol_available() -> bool:
    """True when ``ncpol2sdpa`` imports."""
    try:
        import ncpol2sdpa  # noqa: F401
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


def _to_sympy(p: dict, x) -> object:
    import sympy

    return sympy.Add(*[sympy.Float(c) * sympy.Mul(*[xi ** k for xi, k in zip(x, a) if k]) for a, c in p.items()])


def ncpol_bound(game, level: int, *, player: int = 1, solver: str | None = None) -> NcpolBound:
    """Level-``level`` moment bound of ``max U`` for a single-player game, built by ncpol2sdpa.

    ValueError when ``level < max(1, ceil(deg U / 2))``, ``player`` is not (the only) player, or
    ncpol2sdpa is not installed.
    """
    from .hierarchy import _single_player

    player = _single_player(game, player)
    U = game.polynomial(player)
    _check_level(level, min_level([U]))
    if not ncpol_available():
        raise ValueError("ncpol_bound needs the package ncpol2sdpa (pip install ncpol2sdpa)")
    from ncpol2sdpa import SdpRelaxation, generate_variables
    from ncpol2sdpa.cvxpy_utils import convert_to_cvxpy

    from shared.solvers import solve

    start = time.perf_counter()
    n = game.n_variables
    x = generate_variables("x", n, commutative=True)
    groups = [game.infoset_variables(k) for k in range(len(game.infosets))]
    lin, prods = strategy_constraints(groups, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdp = SdpRelaxation(x, verbose=0)
        sdp.get_relaxation(int(level), objective=-_to_sympy(U, x), inequalities=[_to_sympy(g, x) for g in lin + prods])
        problem = convert_to_cvxpy(sdp)
        res = solve(problem, solver=solver, accept_inaccurate=True)
    bound = None if res.value is None or res.status not in ("optimal", "optimal_inaccurate") \
        else -(float(res.value) + float(sdp.constant_term))
    return NcpolBound(bound, res.status, res.backend, time.perf_counter() - start)
