r"""Alternative placements of the ambiguity set (the paper's placement is not known to us).

A world of M customer segments with MNL weights :math:`v^{(m)}` (equal shares, the empirical "context"
distribution :math:`\hat P`) and common revenues :math:`r`. Nominal revenue :math:`E_{\hat P}\mathrm{Rev}(S; v^{(m)})`.

- **choice**: a KL ball (radius :math:`\rho`) on each segment's choice distribution :math:`P_S^{(m)}`, the
  placement of :mod:`robust`: :math:`E_{\hat P} R_\rho(S; v^{(m)})`;
- **weights**: a multiplicative box on each segment's preference weights,
  :math:`v'_i \in [v_i e^{-\delta}, v_i e^{\delta}]` (the robust MNL of Rusmevichientong & Topaloglu 2012):
  :math:`E_{\hat P} \min_{v'} \mathrm{Rev}(S; v')`;
- **context**: a KL ball on the segment distribution itself:
  :math:`\inf\{E_Q \mathrm{Rev}(S; v^{(m)}) : KL(Q\|\hat P) \le \rho\}`.

Box worst case of one set (exact): :math:`\min_{v'}\mathrm{Rev}(S; v') = z` with :math:`z` the root of the
strictly decreasing :math:`f(z) = \sum_{i\in S}\min(l_i(r_i-z), u_i(r_i-z)) - z` (the minimiser takes the
lower weight on items with :math:`r_i > z`, the upper one on the others). With a single segment the box
problem is solved exactly by the same bisection over :math:`z` (:func:`solve_weight_box`, revenue ordered
without capacity). With several segments every placement is optimised by enumeration of all subsets
(:func:`solve_placement`).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from ._checks import check_assortment, check_capacity, check_rho, check_vr
from .mnl import Assortment, best_assortment
from .robust import robust_revenue

__all__ = ["PLACEMENTS", "weight_box_revenue", "solve_weight_box", "kl_robust_mean", "placement_values",
           "solve_placement", "MAX_ENUM_ITEMS"]

PLACEMENTS = ("choice", "weights", "context")
MAX_ENUM_ITEMS = 14
LAMBDA_GRID = 200          # log-spaced dual grid of the vectorised screening (exact refinement follows)
REFINE = 8                 # sets re-evaluated exactly after the screening


def _check_delta(delta) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta) or delta < 0:
        raise ValueError(f"delta (half-width of the log-weight box) must be a finite number >= 0, got {delta!r}")
    return float(delta)


def _box_root(v, r, delta) -> float:
    lo_w, hi_w = v * math.exp(-delta), v * math.exp(delta)

    def f(z):
        return float(np.minimum(lo_w * (r - z), hi_w * (r - z)).sum()) - z

    if v.size == 0 or f(0.0) <= 0.0:
        return 0.0
    return brentq(f, 0.0, float(r.max()), xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)


def weight_box_revenue(v, r, S, delta: float) -> float:
    r""":math:`\min\{\mathrm{Rev}(S; v') : v_i e^{-\delta} \le v'_i \le v_i e^{\delta}\}` (exact root of
    :math:`f`, see the module docstring)."""
    v, r = check_vr(v, r)
    idx = check_assortment(S, v.size)
    delta = _check_delta(delta)
    return _box_root(v[idx], r[idx], delta)


def solve_weight_box(v, r, delta: float, capacity: int | None = None) -> Assortment:
    r"""Exact :math:`\max_{|S|\le C}\min_{v'\in\text{box}}\mathrm{Rev}(S; v')` for one segment.

    :math:`\max_S R(S) \ge z` iff the (at most C) largest positive :math:`g_i(z) = \min(l_i(r_i-z), u_i(r_i-z))`
    sum to at least :math:`z`; that sum minus :math:`z` is strictly decreasing, so its root :math:`z^*` is the
    optimum and the items with the largest positive :math:`g_i(z^*)` attain it (taken at a point slightly
    below :math:`z^*`, where the optimal set is the only one with :math:`\sum g > z`).
    """
    v, r = check_vr(v, r)
    delta = _check_delta(delta)
    capacity = check_capacity(capacity)
    cap = v.size if capacity is None else min(capacity, v.size)
    lo_w, hi_w = v * math.exp(-delta), v * math.exp(delta)

    def top(z):
        g = np.minimum(lo_w * (r - z), hi_w * (r - z))
        pos = np.flatnonzero(g > 0)
        keep = pos[np.lexsort((pos, -g[pos]))[:cap]]
        return keep, float(g[keep].sum())

    def h(z):
        return top(z)[1] - z

    if cap == 0 or h(0.0) <= 0.0:
        return Assortment((), 0.0)
    z_star = brentq(h, 0.0, float(r.max()), xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    cands = {tuple(sorted(int(i) for i in top(z_star * (1.0 - eps))[0])) for eps in (1e-9, 1e-7, 1e-5)}
    return best_assortment({S: _box_root(v[list(S)], r[list(S)], delta) for S in cands})


def kl_robust_mean(values, rho: float, weights=None) -> float:
    r""":math:`\inf\{E_Q X : KL(Q\|P) \le \rho\}` for a finite distribution ``P`` (``weights``, uniform by
    default) on ``values``: :math:`\min X + \sup_{\lambda>0} -\lambda\log E_P e^{-(X-\min X)/\lambda}-\lambda\rho`,
    and :math:`\min X` once the point mass on the minimisers is feasible (:math:`\rho\ge-\log P(X=\min X)`)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("values must be a non-empty 1-D array of finite numbers")
    p = np.full(x.size, 1.0 / x.size) if weights is None else np.asarray(weights, dtype=float)
    if p.shape != x.shape or np.any(p <= 0) or not math.isclose(float(p.sum()), 1.0, rel_tol=1e-9):
        raise ValueError("weights must be positive, of the same length as values, and sum to 1")
    rho = check_rho(rho, "kl")
    m = float(x.min())
    y = x - m
    if rho == 0.0:
        return float(p @ x)
    if y.max() == 0.0 or rho >= -math.log(float(p[y == 0.0].sum()) or 1e-300):
        return m
    logp, ymax = np.log(p), float(y.max())

    def g(u):
        lam = math.exp(u)
        a = logp - y / lam
        top = a.max()
        return -lam * (top + math.log(np.exp(a - top).sum())) - lam * rho

    grid = np.linspace(math.log(1e-6 * ymax), math.log(1e6 * ymax), 64)
    vals = [g(u) for u in grid]
    k = int(np.argmax(vals))
    res = minimize_scalar(lambda u: -g(u), bounds=(grid[max(k - 1, 0)], grid[min(k + 1, 63)]), method="bounded",
                          options={"xatol": 1e-12, "maxiter": 500})
    return m + max(float(-res.fun), vals[k], 0.0)


def _subsets(n: int, cap: int) -> list[tuple[int, ...]]:
    return [S for k in range(cap + 1) for S in itertools.combinations(range(n), k)]


def placement_values(V, r, sets, placement: str, radius: float) -> np.ndarray:
    """Exact robust value of every set in ``sets`` under one placement (``V``: M x N segment weights)."""
    V, r = np.atleast_2d(np.asarray(V, dtype=float)), np.asarray(r, dtype=float)
    out = np.empty(len(sets))
    for j, S in enumerate(sets):
        idx = list(S)
        if placement == "nominal":
            out[j] = np.mean([(Vm[idx] @ r[idx]) / (1.0 + Vm[idx].sum()) for Vm in V])
        elif placement == "choice":
            out[j] = np.mean([robust_revenue(Vm, r, idx, radius, "kl") for Vm in V]) if idx else 0.0
        elif placement == "weights":
            out[j] = np.mean([_box_root(Vm[idx], r[idx], radius) for Vm in V]) if idx else 0.0
        elif placement == "context":
            revs = [(Vm[idx] @ r[idx]) / (1.0 + Vm[idx].sum()) for Vm in V]
            out[j] = kl_robust_mean(revs, radius)
        else:
            raise ValueError(f"placement must be one of {('nominal',) + PLACEMENTS}, got {placement!r}")
    return out


def _screen(V, r, B, placement: str, radius: float) -> np.ndarray:
    """Vectorised lower bounds (a dual grid; exact for nominal and weights) of every subset's value."""
    M = V.shape[0]
    denom = 1.0 + B @ V.T                                              # (sets, M)
    rev = (B @ (V * r).T) / denom
    if placement == "nominal":
        return rev.mean(axis=1)
    rmax = float(r.max())
    lams = np.exp(np.linspace(math.log(1e-3 * rmax), math.log(1e3 * rmax), LAMBDA_GRID))
    if placement == "choice":
        best = np.zeros_like(rev)
        for lam in lams:
            e = (1.0 + B @ (V * np.exp(-r / lam)).T) / denom              # E_P exp(-r/lam), per set and segment
            best = np.maximum(best, -lam * np.log(e) - lam * radius)
        return best.mean(axis=1)
    if placement == "weights":
        lo_w, hi_w = V * math.exp(-radius), V * math.exp(radius)       # bisection on z for every (set, segment)
        a, b = np.zeros_like(rev), np.full_like(rev, rmax)
        for _ in range(60):
            z = 0.5 * (a + b)
            d = r[None, None, :] - z[:, :, None]
            f = (B[:, None, :] * np.minimum(lo_w[None] * d, hi_w[None] * d)).sum(axis=2) - z
            a, b = np.where(f > 0, z, a), np.where(f > 0, b, z)
        return a.mean(axis=1)
    if placement == "context":
        lo = rev.min(axis=1, keepdims=True)
        y = rev - lo
        best = np.zeros(rev.shape[0])
        for lam in np.exp(np.linspace(math.log(1e-6 * rmax), math.log(1e3 * rmax), LAMBDA_GRID)):
            best = np.maximum(best, -lam * np.log(np.mean(np.exp(-y / lam), axis=1)) - lam * radius)
        return lo[:, 0] + best
    raise ValueError(f"placement must be one of {('nominal',) + PLACEMENTS}, got {placement!r}")


def solve_placement(V, r, placement: str, radius: float, capacity: int | None = None) -> Assortment:
    """Optimum over all subsets (at most ``capacity`` items) under one placement (or ``"nominal"``).

    Every subset is screened by a vectorised lower bound (dual grid), the best ``REFINE`` (and all within
    1e-6 relative of the best) are re-evaluated exactly by :func:`placement_values`. Refused above
    ``MAX_ENUM_ITEMS`` items.
    """
    V = np.atleast_2d(np.asarray(V, dtype=float))
    if V.ndim != 2 or V.shape[1] == 0:
        raise ValueError(f"V must be an M x N array of segment weights, got shape {V.shape}")
    for Vm in V:
        check_vr(Vm, r)
    r = np.asarray(r, dtype=float)
    if placement not in ("nominal",) + PLACEMENTS:
        raise ValueError(f"placement must be one of {('nominal',) + PLACEMENTS}, got {placement!r}")
    if placement == "weights":
        radius = _check_delta(radius)
    elif placement != "nominal":
        radius = check_rho(radius, "kl")
    capacity = check_capacity(capacity)
    n = V.shape[1]
    if n > MAX_ENUM_ITEMS:
        raise ValueError(f"solve_placement enumerates all subsets; refused for N = {n} > {MAX_ENUM_ITEMS}")
    sets = _subsets(n, n if capacity is None else min(capacity, n))
    B = np.zeros((len(sets), n))
    for j, S in enumerate(sets):
        B[j, list(S)] = 1.0
    screen = _screen(V, r, B, placement, radius)
    order = np.argsort(-screen, kind="stable")
    keep = set(order[:REFINE].tolist()) | set(np.flatnonzero(screen >= screen.max() - 1e-6 * abs(screen.max())))
    chosen = [sets[j] for j in sorted(keep)]
    exact = placement_values(V, r, chosen, placement, radius)
    return best_assortment(dict(zip(chosen, exact.tolist())))
