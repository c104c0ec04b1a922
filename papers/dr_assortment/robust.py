r"""Distributionally robust revenue of an MNL assortment and the robust assortment problem (DRAO).

Robust revenue of an assortment :math:`S` under a divergence ball of radius :math:`\rho` around the MNL choice
distribution :math:`P = P_S` (support: the outside option, revenue 0, and the items of :math:`S`):

.. math:: R_\rho(S) = \inf\{ E_Q[r] : D(Q \,\|\, P) \le \rho \},

with :math:`TV = \tfrac12\sum|q-p|`, :math:`KL = \sum q\log(q/p)`, :math:`\chi^2 = \sum (q-p)^2/p`.
Strong duality (Shapiro 2017; Hu & Hong 2013 for KL; Duchi & Namkoong 2019 for chi-square) gives

- TV:   :math:`R = \max_{\eta \in \{0\}\cup\{r_i\}} E_P\min(r,\eta) - \rho\eta`,
- KL:   :math:`R = \sup_{\lambda>0} -\lambda \log E_P e^{-r/\lambda} - \lambda\rho`,
- chi2: :math:`R = \sup_{\eta\ge0} \eta - \sqrt{1+\rho}\,\sqrt{E_P(\eta-r)_+^2}`.

DRAO: :math:`\max_{|S|\le C} R_\rho(S)`. For a fixed dual variable the maximisation over :math:`S` is a nominal
MNL problem with pseudo-revenues that are non-decreasing in :math:`r` (TV: :math:`\min(r,\eta)`; KL:
:math:`1-e^{-r/\lambda}`; chi2: :math:`\eta^2-(\eta-r)_+^2`), so without capacity the robust optimum is
revenue ordered, and with capacity it is found among the Dinkelbach solutions along the dual path
(reconstruction, not taken from the paper).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from ._checks import (check_assortment, check_capacity, check_divergence, check_method, check_rho,
                      check_vr)
from .mnl import Assortment, best_assortment, dinkelbach, revenue_ordered_sets

__all__ = ["robust_revenue", "worst_case_distribution", "solve_drao", "dual_solution",
           "pseudo_revenues", "divergence_value", "primal_robust_revenue", "BRUTE_MAX_ITEMS"]

BRUTE_MAX_ITEMS = 20
GRID_1D = 64           # coarse grid of the 1-D dual maximisation, before bounded Brent
XATOL = 1e-12          # Brent tolerance (in log lambda for KL, in eta for chi2)
PATH_GRID = 400        # dual grid of the capacitated solver
BISECT_REL = 1e-9      # relative width at which the bisection refinement stops


# ----------------------------------------------------------------------------------------------------------
# 1-D duals on a support (outside option first: p[0] = P(outside), r[0] = 0)
# ----------------------------------------------------------------------------------------------------------
def _support(v: np.ndarray, r: np.ndarray, idx) -> tuple[np.ndarray, np.ndarray]:
    w = np.concatenate(([1.0], v[idx]))
    return w / w.sum(), np.concatenate(([0.0], r[idx]))


def _lse(a: np.ndarray, axis=None):
    m = np.max(a, axis=axis, keepdims=True)
    out = m + np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True))
    return np.squeeze(out, axis=axis) if axis is not None else float(out.squeeze())


def _maximise_1d(f_grid, f_scalar, slope, lo: float, hi: float) -> tuple[float, float]:
    """Max of a unimodal function on [lo, hi]: 64-point grid, then bounded Brent around the best point.

    Brent locates the maximiser only to about sqrt(machine eps) (the function is flat there), which is
    enough for the value but not for the worst-case distribution built from the maximiser; so the
    maximiser is then polished as the root of ``slope`` (a function with the sign of the derivative) by
    ``brentq`` when the derivative changes sign on the bracket. Returns (max value, maximiser).
    """
    grid = np.linspace(lo, hi, GRID_1D)
    vals = f_grid(grid)
    k = int(np.argmax(vals))
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, GRID_1D - 1)]
    res = minimize_scalar(lambda x: -f_scalar(x), bounds=(a, b), method="bounded",
                          options={"xatol": XATOL, "maxiter": 500})
    best_val, best_x = (float(-res.fun), float(res.x)) if -res.fun >= vals[k] else (float(vals[k]), float(grid[k]))
    sa, sb = slope(a), slope(b)
    if sa > 0 > sb:
        x = brentq(slope, a, b, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
        fx = f_scalar(x)
        if fx >= best_val - 1e-12 * max(1.0, abs(best_val)):
            return max(fx, best_val), float(x)
    return best_val, best_x


def _tv_dual(p, r, rho):
    etas = np.unique(r)                                  # contains 0 (outside option)
    vals = np.minimum(r[None, :], etas[:, None]) @ p - rho * etas
    k = int(np.argmax(vals))
    return float(max(vals[k], 0.0)), float(etas[k])


def _kl_dual(p, r, rho):
    """(value, lambda*); lambda* = 0 encodes the point mass on the outside option, inf the nominal P."""
    if rho == 0.0:
        return float(p @ r), math.inf
    rmax = float(r.max())
    if rmax == 0.0 or rho >= -math.log(p[0]):
        return 0.0, 0.0
    logp = np.log(p)

    def f_grid(u):
        lam = np.exp(u)
        return -lam * _lse(logp[None, :] - r[None, :] / lam[:, None], axis=1) - lam * rho

    def f_scalar(u):
        lam = math.exp(u)
        a = logp - r / lam
        m = a.max()
        return -lam * (m + math.log(np.exp(a - m).sum())) - lam * rho

    def slope(u):                                        # d/dlambda = KL(Q_lambda || P) - rho
        lam = math.exp(u)
        a = logp - r / lam
        lse = _lse(a)
        q = np.exp(a - lse)
        return float(-(q @ r) / lam - lse) - rho

    val, u = _maximise_1d(f_grid, f_scalar, slope, math.log(1e-6 * rmax), math.log(1e6 * rmax))
    return max(val, 0.0), math.exp(u)


def _chi2_dual(p, r, rho):
    """(value, eta*); eta* = 0 with value 0 encodes the point mass on the outside option."""
    if rho == 0.0:
        return float(p @ r), math.inf
    rmax = float(r.max())
    if rmax == 0.0 or rho >= (1.0 - p[0]) / p[0]:
        return 0.0, 0.0
    c = math.sqrt(1.0 + rho)

    def f_grid(eta):
        gap = np.maximum(eta[:, None] - r[None, :], 0.0)
        return eta - c * np.sqrt((gap * gap) @ p)

    def f_scalar(eta):
        gap = np.maximum(eta - r, 0.0)
        return eta - c * math.sqrt(float(p @ (gap * gap)))

    def slope(eta):                                      # sign of 1 - c E(eta-r)_+ / sqrt(E(eta-r)_+^2)
        gap = np.maximum(eta - r, 0.0)
        return math.sqrt(float(p @ (gap * gap))) - c * float(p @ gap)

    val, eta = _maximise_1d(f_grid, f_scalar, slope, 0.0, rmax * (1.0 + 4.0 / math.sqrt(rho)) + 1.0)
    return max(val, 0.0), eta


_DUALS = {"tv": _tv_dual, "kl": _kl_dual, "chi2": _chi2_dual}


def _value(v, r, idx, rho, divergence) -> float:
    if len(idx) == 0:
        return 0.0
    p, rr = _support(v, r, list(idx))
    return _DUALS[divergence](p, rr, rho)[0]


# ----------------------------------------------------------------------------------------------------------
# public: robust revenue, dual solution, worst case
# ----------------------------------------------------------------------------------------------------------
def _prepare(v, r, S, rho, divergence):
    v, r = check_vr(v, r)
    idx = check_assortment(S, v.size)
    divergence = check_divergence(divergence)
    rho = check_rho(rho, divergence)
    return v, r, idx, rho, divergence


def robust_revenue(v, r, S, rho: float, divergence: str) -> float:
    r"""Worst-case expected revenue :math:`R_\rho(S) = \inf_{D(Q\|P_S)\le\rho} E_Q[r]` by strong duality.

    Parameters
    ----------
    v, r : array_like, shape (N,)
        Preference weights (> 0) and revenues (>= 0) of the items; the outside option has weight 1, revenue 0.
    S : iterable of int
        Offered items (distinct 0-based indices).
    rho : float
        Radius (>= 0; at most 1 for TV).
    divergence : {"tv", "kl", "chi2"}

    Notes
    -----
    TV: :math:`\max_{\eta\in\{0\}\cup\{r_i\}} E_P\min(r,\eta)-\rho\eta` (exact enumeration of breakpoints).
    KL: :math:`\sup_{\lambda>0} -\lambda\log E_P e^{-r/\lambda} - \lambda\rho`, maximised over
    :math:`u = \log\lambda \in [\log(10^{-6}r_{max}), \log(10^{6}r_{max})]` (64-point grid, bounded Brent).
    chi2: :math:`\sup_{\eta\ge0} \eta-\sqrt{1+\rho}\sqrt{E_P(\eta-r)_+^2}` over
    :math:`[0, r_{max}(1+4/\sqrt\rho)+1]`. The value is 0 once the point mass on the outside option is
    feasible (TV: :math:`\rho\ge1-p_0`; KL: :math:`\rho\ge\log(1/p_0)`; chi2: :math:`\rho\ge(1-p_0)/p_0`),
    and the nominal revenue at :math:`\rho = 0`.
    """
    v, r, idx, rho, divergence = _prepare(v, r, S, rho, divergence)
    return _value(v, r, idx, rho, divergence)


def dual_solution(v, r, S, rho: float, divergence: str) -> tuple[float, float]:
    r"""``(R_rho(S), dual maximiser)``: :math:`\eta^*` (TV, chi2) or :math:`\lambda^*` (KL).

    Conventions: ``inf`` when :math:`\rho = 0` (nominal), ``0`` when the worst case is the point mass on the
    outside option or :math:`S` is empty.
    """
    v, r, idx, rho, divergence = _prepare(v, r, S, rho, divergence)
    if idx.size == 0:
        return 0.0, 0.0
    p, rr = _support(v, r, idx)
    return _DUALS[divergence](p, rr, rho)


def _tv_worst_case(p, r, rho):
    """Move mass rho from the highest revenues (ties: later support positions first) to the outside option."""
    q = p.copy()
    budget = rho
    for j in np.argsort(-r[1:], kind="stable") + 1:
        if budget <= 0:
            break
        take = min(q[j], budget)
        q[j] -= take
        q[0] += take
        budget -= take
    return q


def worst_case_distribution(v, r, S, rho: float, divergence: str) -> np.ndarray:
    r"""The minimising :math:`Q` of :math:`R_\rho(S)`: entry 0 the outside option, then ``S`` ascending.

    TV: mass :math:`\min(\rho, 1-p_0)` moved from the highest revenues to the outside option.
    KL: :math:`q \propto p\,e^{-r/\lambda^*}` (again MNL, with weights :math:`v_i e^{-r_i/\lambda^*}`).
    chi2: :math:`q_i = p_i(\eta^*-r_i)_+ / E_P(\eta^*-r)_+`; in the interior case this gives
    :math:`R = E_Pr - \sqrt{\rho\,\mathrm{Var}_P r}`.
    The point mass on the outside option once it is feasible; :math:`P` itself at :math:`\rho = 0`.
    """
    v, r, idx, rho, divergence = _prepare(v, r, S, rho, divergence)
    p, rr = _support(v, r, idx)
    if rho == 0.0 or idx.size == 0 or rr.max() == 0.0:
        return p
    if divergence == "tv":
        return _tv_worst_case(p, rr, rho)
    _, dual = _DUALS[divergence](p, rr, rho)
    point_mass = np.zeros_like(p)
    point_mass[0] = 1.0
    if dual == 0.0:
        return point_mass
    if divergence == "kl":
        a = np.log(p) - rr / dual
        return np.exp(a - _lse(a))
    gap = np.maximum(dual - rr, 0.0)
    return p * gap / float(p @ gap)


def divergence_value(q, p, divergence: str) -> float:
    r""":math:`D(Q\|P)` for TV, KL (with :math:`0\log0 = 0`) or chi-square, for probability vectors."""
    divergence = check_divergence(divergence)
    q = np.asarray(q, dtype=float)
    p = np.asarray(p, dtype=float)
    if divergence == "tv":
        return 0.5 * float(np.abs(q - p).sum())
    if divergence == "kl":
        pos = q > 0
        return float(np.sum(q[pos] * np.log(q[pos] / p[pos])))
    return float(np.sum((q - p) ** 2 / p))


def primal_robust_revenue(v, r, S, rho: float, divergence: str, *, solver: str | None = None):
    r"""Primal check of :math:`R_\rho(S)`: :math:`\min_{q\ge0,\ \sum q=1,\ D(q\|p)\le\rho} q^\top r` in cvxpy.

    Solved through :func:`shared.solvers.solve` (MOSEK when licensed, else Clarabel, SCS as fallback).
    Constraints: ``0.5*norm1(q-p) <= rho`` (TV), ``sum(kl_div(q, p)) <= rho`` (KL; ``kl_div`` adds
    :math:`-q+p`, which sums to 0), ``sum(square(q-p)/p) <= rho`` (chi2). Returns ``(value, backend)``.
    """
    import cvxpy as cp

    from shared.solvers import solve

    v, r, idx, rho, divergence = _prepare(v, r, S, rho, divergence)
    p, rr = _support(v, r, idx)
    q = cp.Variable(p.size, nonneg=True)
    if divergence == "tv":
        ball = 0.5 * cp.norm1(q - p) <= rho
    elif divergence == "kl":
        ball = cp.sum(cp.kl_div(q, p)) <= rho
    else:
        ball = cp.sum(cp.multiply(1.0 / p, cp.square(q - p))) <= rho
    problem = cp.Problem(cp.Minimize(rr @ q), [cp.sum(q) == 1, ball])
    res = solve(problem)
    if res.status != "optimal":
        raise RuntimeError(f"primal robust revenue: solver {res.backend} returned {res.status}")
    return float(res.value), res.backend


# ----------------------------------------------------------------------------------------------------------
# DRAO
# ----------------------------------------------------------------------------------------------------------
def pseudo_revenues(r, dual: float, divergence: str) -> np.ndarray:
    r"""Pseudo-revenues of the nominal problem at a fixed dual variable (non-decreasing in r).

    TV (:math:`\eta`): :math:`\min(r,\eta)`; KL (:math:`\lambda`): :math:`1-e^{-r/\lambda}`;
    chi2 (:math:`\eta`): :math:`\eta^2-(\eta-r)_+^2`. For fixed dual the robust dual objective of :math:`S` is
    an increasing affine function of the MNL revenue :math:`\sum_S v_i\tilde r_i/(1+\sum_S v_i)`
    (for KL, increasing after the monotone map :math:`x\mapsto-\lambda\log(1-x)`).
    """
    r = np.asarray(r, dtype=float)
    if divergence == "tv":
        return np.minimum(r, dual)
    if divergence == "kl":
        return -np.expm1(-r / dual)
    if divergence == "chi2":
        return dual * dual - np.maximum(dual - r, 0.0) ** 2
    raise ValueError(f"divergence must be one of ['tv', 'kl', 'chi2'], got {divergence!r}")


def _path_candidates(v, r, rho, divergence, capacity) -> set:
    """Inner Dinkelbach solutions along the dual path (grid, then bisection where they change)."""
    rmax = float(r.max())
    if divergence == "tv":                               # breakpoints: exact
        return {dinkelbach(v, np.minimum(r, eta), capacity) for eta in np.unique(np.concatenate(([0.0], r)))}
    if divergence == "kl":                               # parametrised by t = log(lambda)
        grid = np.linspace(math.log(1e-3 * rmax), math.log(1e3 * rmax), PATH_GRID)

        def inner(t):
            return dinkelbach(v, -np.expm1(-r / math.exp(t)), capacity)

        def small(a, b):
            return b - a <= BISECT_REL
    else:
        grid = np.linspace(0.0, rmax * (1.0 + 4.0 / math.sqrt(rho)) + 1.0, PATH_GRID)

        def inner(eta):
            return dinkelbach(v, eta * eta - np.maximum(eta - r, 0.0) ** 2, capacity)

        def small(a, b):
            return b - a <= BISECT_REL * max(abs(b), 1e-300)
    sols = [inner(t) for t in grid]
    found = set(sols)
    stack = [(grid[k], sols[k], grid[k + 1], sols[k + 1]) for k in range(PATH_GRID - 1) if sols[k] != sols[k + 1]]
    while stack:
        a, sa, b, sb = stack.pop()
        if small(a, b):
            continue
        m = 0.5 * (a + b)
        sm = inner(m)
        found.add(sm)
        if sm != sa:
            stack.append((a, sa, m, sm))
        if sm != sb:
            stack.append((m, sm, b, sb))
    return found


def solve_drao(v, r, rho: float, divergence: str, capacity: int | None = None,
               method: str = "fast") -> Assortment:
    r"""Robust assortment :math:`\max_{|S|\le C} R_\rho(S)`; returns ``Assortment(items, R_rho(items))``.

    ``method="fast"``: without capacity (or :math:`C \ge N`) the best of the N + 1 revenue-ordered sets, each
    evaluated exactly by duality (exact, since for every fixed dual variable the inner problem is a nominal
    MNL problem with pseudo-revenues non-decreasing in r). With capacity, candidate sets are the exact
    Dinkelbach solutions of the inner problem at: TV - the breakpoints :math:`\eta\in\{0\}\cup\{r_i\}` (exact);
    KL - 400 log-spaced :math:`\lambda\in[10^{-3},10^3]r_{max}`; chi2 - 400 evenly spaced :math:`\eta` in
    :math:`[0, r_{max}(1+4/\sqrt\rho)+1]`; then bisection (to relative width 1e-9) between grid points whose
    inner solutions differ; every distinct candidate is evaluated exactly.
    ``method="brute"``: every subset with at most C items (refused above 20 items).
    Ties (values within 1e-12 relative) go to the smaller, then lexicographically smaller set.
    """
    v, r = check_vr(v, r)
    divergence = check_divergence(divergence)
    rho = check_rho(rho, divergence)
    capacity = check_capacity(capacity)
    method = check_method(method)
    n = v.size
    cap = n if capacity is None else min(capacity, n)
    if method == "brute":
        if n > BRUTE_MAX_ITEMS:
            raise ValueError(f"method 'brute' enumerates 2^N subsets; refused for N = {n} > {BRUTE_MAX_ITEMS} "
                             f"items (use method='fast')")
        candidates = itertools.chain.from_iterable(itertools.combinations(range(n), k) for k in range(cap + 1))
    elif cap == n or rho == 0.0 or r.max() == 0.0:
        candidates = revenue_ordered_sets(r) if cap == n else [(), dinkelbach(v, r, cap)]
    else:
        candidates = _path_candidates(v, r, rho, divergence, cap) | {()}
    return best_assortment({S: _value(v, r, S, rho, divergence) for S in candidates})
