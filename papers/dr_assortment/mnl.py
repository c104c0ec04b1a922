r"""Nominal multinomial-logit (MNL) choice model and assortment optimisation.

Items :math:`i = 0..N-1` have preference weights :math:`v_i > 0` and revenues :math:`r_i \ge 0`; the outside
option has weight 1 and revenue 0 and is always available. For an assortment :math:`S`

.. math::  P_S(i) = \frac{v_i}{1 + \sum_{j\in S} v_j}\ (i \in S), \qquad
           P_S(0) = \frac{1}{1 + \sum_{j\in S} v_j}, \qquad
           \mathrm{Rev}(S) = \frac{\sum_{i\in S} r_i v_i}{1 + \sum_{j\in S} v_j}.

References: Talluri & van Ryzin (2004) (revenue-ordered optimality without capacity); Rusmevichientong,
Shen & Shmoys (2010) (capacitated MNL); Davis, Gallego & Topaloglu (2013) (LP formulation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from ._checks import check_assortment, check_capacity, check_vr

__all__ = ["Assortment", "mnl_revenue", "choice_probabilities", "revenue_ordered_sets", "is_revenue_ordered",
           "dinkelbach",
           "solve_mnl_assortment", "solve_mnl_lp"]


@dataclass(frozen=True)
class Assortment:
    """An assortment ``items`` (sorted ascending, 0-based) and its (nominal or robust) ``value``."""

    items: tuple[int, ...]
    value: float

    def __len__(self) -> int:
        return len(self.items)


def _revenue(v: np.ndarray, r: np.ndarray) -> float:
    """Rev = sum v r / (1 + sum v) over the given (already restricted) arrays."""
    return float(np.dot(v, r) / (1.0 + v.sum())) if v.size else 0.0


def mnl_revenue(v, r, S) -> float:
    r"""Nominal expected revenue :math:`\mathrm{Rev}(S) = \sum_{i\in S} r_i v_i / (1 + \sum_{j\in S} v_j)`.

    >>> mnl_revenue([1.0, 1.0], [2.0, 4.0], [0, 1])
    2.0
    """
    v, r = check_vr(v, r)
    idx = check_assortment(S, v.size)
    return _revenue(v[idx], r[idx])


def choice_probabilities(v, S) -> np.ndarray:
    r"""MNL choice probabilities on the support (outside option, then ``S`` ascending).

    Entry 0 is :math:`1/(1+\sum_S v_j)`, entry ``k+1`` is :math:`v_{S_k}/(1+\sum_S v_j)`.
    """
    v, _ = check_vr(v, np.zeros(np.shape(v)))
    idx = check_assortment(S, v.size)
    w = np.concatenate(([1.0], v[idx]))
    return w / w.sum()


def revenue_ordered_sets(r) -> list[tuple[int, ...]]:
    r"""The N + 1 revenue-ordered sets :math:`\{\}, \{\pi_1\}, \{\pi_1,\pi_2\}, \dots` (sorted ascending).

    :math:`\pi` sorts items by decreasing revenue, ties by increasing index (stable). Without capacity the
    nominal MNL optimum is one of them (Talluri & van Ryzin 2004).
    """
    r = np.asarray(r, dtype=float)
    order = np.argsort(-r, kind="stable")
    return [tuple(sorted(int(i) for i in order[:k])) for k in range(r.size + 1)]


def is_revenue_ordered(S, r) -> bool:
    """Whether ``S`` is revenue ordered: every item outside ``S`` has revenue <= every item in ``S``.

    With ties in ``r`` any split of a tie group counts (all such sets have the same revenue profile).
    """
    _, r = check_vr(np.ones(np.size(r)), r)
    idx = check_assortment(S, r.size)
    if idx.size in (0, r.size):
        return True
    outside = np.setdiff1d(np.arange(r.size), idx)
    return bool(r[outside].max() <= r[idx].min())


def dinkelbach(v: np.ndarray, rt: np.ndarray, capacity: int | None) -> tuple[int, ...]:
    r"""Exact capacitated MNL optimum :math:`\max_{|S|\le C} \sum_S v_i \tilde r_i / (1 + \sum_S v_i)`.

    Dinkelbach's parametric method: start at :math:`z = 0`; repeat
    :math:`S \leftarrow` the (at most C) items with the largest :math:`v_i(\tilde r_i - z)` among those with
    :math:`v_i(\tilde r_i - z) > 0` (ties by index), :math:`z \leftarrow \mathrm{Rev}_{\tilde r}(S)`, until
    :math:`S` no longer changes. At the fixed point no set has :math:`\sum_S v_i(\tilde r_i - z) > z`, i.e. no
    set has revenue above :math:`z`, so the answer is exact; :math:`z` increases strictly before, so the loop
    is finite (a step without strict gain stops it and keeps the previous set, which guards against cycles
    between sets of equal revenue under rounding). Inputs are not validated (internal, called in loops).
    """
    n = v.size
    cap = n if capacity is None else min(capacity, n)
    z, prev = 0.0, np.empty(0, dtype=np.intp)           # z = Rev(prev); the empty set has revenue 0
    while True:
        score = v * (rt - z)
        pos = np.flatnonzero(score > 0)
        if pos.size > cap:
            # largest scores first, ties by smaller index (lexsort: last key is primary)
            keep = np.lexsort((pos, -score[pos]))[:cap]
            pos = np.sort(pos[keep])
        if np.array_equal(pos, prev):
            break
        vs = v[pos]
        z_new = float(vs @ rt[pos] / (1.0 + vs.sum()))
        if z_new <= z:          # no strict gain: prev is optimal (guards against rounding cycles)
            break
        prev, z = pos, z_new
    return tuple(prev.tolist())


def solve_mnl_assortment(v, r, capacity: int | None = None) -> "Assortment":
    r"""Nominal optimum :math:`\max_{|S| \le C} \mathrm{Rev}(S)` (``capacity=None``: no constraint).

    Uncapacitated: the best of the revenue-ordered sets (:func:`revenue_ordered_sets`). Capacitated:
    :func:`dinkelbach`. Ties (values within 1e-12 relative) go to the smaller, then lexicographically
    smaller set.
    """
    v, r = check_vr(v, r)
    capacity = check_capacity(capacity)
    if capacity is None or capacity >= v.size:
        candidates = revenue_ordered_sets(r)
    else:
        candidates = [dinkelbach(v, r, capacity)]
    return best_assortment({S: _revenue(v[list(S)], r[list(S)]) for S in candidates})


def best_assortment(values: dict) -> "Assortment":
    """The best of ``{items: value}``; values within 1e-12 relative tie, then fewer items, then lexicographic."""
    if not values:
        raise ValueError("values must hold at least one candidate assortment")
    top = max(values.values())
    tol = 1e-12 * max(1.0, abs(top))
    near = [S for S, val in values.items() if val >= top - tol]
    S = min(near, key=lambda s: (len(s), s))
    return Assortment(tuple(S), float(values[S]))


def solve_mnl_lp(v, r, capacity: int | None = None) -> "Assortment":
    r"""Nominal optimum from the Davis-Gallego-Topaloglu (2013) LP, solved by HiGHS dual simplex.

    .. math:: \max_{x \ge 0} \sum_i r_i x_i \ \text{s.t.}\ x_0 + \sum_i x_i = 1,\ x_i / v_i \le x_0,\
              \sum_i x_i / v_i \le C x_0,

    then :math:`S = \{i : x_i > 10^{-9}\}` (a vertex, since the method is simplex). Used as a cross-check of
    :func:`solve_mnl_assortment`; the returned value is :func:`mnl_revenue` of :math:`S`.
    """
    v, r = check_vr(v, r)
    capacity = check_capacity(capacity)
    n = v.size
    c = -np.concatenate(([0.0], r))                     # variables (x_0, x_1..x_N); linprog minimises
    A_eq = np.ones((1, n + 1))
    rows = np.zeros((n, n + 1))
    rows[:, 0] = -1.0
    rows[np.arange(n), np.arange(1, n + 1)] = 1.0 / v
    A_ub, b_ub = rows, np.zeros(n)
    if capacity is not None and capacity < n:
        cap_row = np.concatenate(([-float(capacity)], 1.0 / v))
        A_ub, b_ub = np.vstack([rows, cap_row]), np.zeros(n + 1)
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=(0, None), method="highs-ds")
    if res.status != 0:
        raise RuntimeError(f"linprog failed: {res.message}")
    S = tuple(int(i) for i in np.flatnonzero(res.x[1:] > 1e-9))
    return Assortment(S, _revenue(v[list(S)], r[list(S)]))
