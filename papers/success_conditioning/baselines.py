r"""Baselines compared with success conditioning at a matched d+-weighted chi-square budget.

All functions work on flattened tabular policies: rows n = (h, s) (finite horizon) or transient states
(gridworld); ``pi`` (N, A), ``Q`` (N, A) under pi, occupancy ``d`` (N,) and success-conditioned occupancy
``d_plus`` (N,). The first-order surrogate of :math:`J(\pi') - J(\pi)` (CPI/TRPO) is

.. math:: L(\pi') = \sum_n d_n \sum_a \pi'_n(a) A_n(a), \qquad A_n = Q_n - V_n,

and the budget :math:`B(\pi') = \sum_n d^+_n \chi^2(\pi'_n \| \pi_n)`. Success conditioning attains
:math:`B = \delta_{SC} = \sum_n d^+_n I_n`. "Matched" baselines tune their step so that their B equals
:math:`\delta_{SC}` (bisection to 1e-10 relative, ending on the side B <= delta).
"""
from __future__ import annotations

import numpy as np

from .core import chi2_divergence

__all__ = [
    "surrogate", "budget", "sc_budget", "softmax_pg_step", "clipped_trust_region_rows",
    "occupancy_trust_region_step", "match_step", "matched_pg", "matched_occupancy_tr",
]

BISECTION_RTOL = 1e-10


def surrogate(p, pi, Q, d) -> float:
    r""":math:`L(p) = \sum_n d_n \sum_a p_n(a) (Q_n(a) - V_n)` with :math:`V_n = \sum_a \pi_n(a) Q_n(a)`."""
    V = np.sum(pi * Q, axis=1)
    return float(np.sum(d * (np.sum(p * Q, axis=1) - V)))


def budget(p, pi, d_plus) -> float:
    r""":math:`B(p) = \sum_n d^+_n \chi^2(p_n \| \pi_n)` (rows with d+ = 0 contribute 0)."""
    chi2 = np.asarray(chi2_divergence(p, pi), dtype=float)
    return float(np.sum(np.where(d_plus > 0, d_plus * chi2, 0.0)))


def sc_budget(pi, Q, d_plus) -> float:
    r"""The data-chosen radius :math:`\delta = \sum_n d^+_n I_n`, :math:`I_n = \operatorname{Var}_{\pi_n}(Q_n)/V_n^2`."""
    V = np.sum(pi * Q, axis=1)
    var = np.sum(pi * (Q - V[:, None]) ** 2, axis=1)
    mask = (d_plus > 0) & (V > 0)
    return float(np.sum(np.where(mask, d_plus * var / np.where(mask, V, 1.0) ** 2, 0.0)))


def softmax_pg_step(pi, Q, d, alpha) -> np.ndarray:
    r"""Exact softmax tabular policy-gradient step: :math:`\theta = \log\pi`,
    :math:`\partial J/\partial\theta_{n,a} = d_n \pi_n(a) A_n(a)`, :math:`\theta \leftarrow \theta + \alpha\nabla`."""
    V = np.sum(pi * Q, axis=1, keepdims=True)
    grad = d[:, None] * pi * (Q - V)
    with np.errstate(divide="ignore"):
        logits = np.log(pi) + alpha * grad
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def clipped_trust_region_rows(pi, Q, t) -> np.ndarray:
    r"""Exact maximiser, row by row, of :math:`\sum_a p(a)Q(a)` over the simplex on the chi-square path:
    KKT with non-negativity gives :math:`p(a) = \pi(a)\max(0, 1 + t (Q(a) - m))` with m set by
    :math:`\sum_a p(a) = 1` (found exactly by sorting Q). ``t`` (N,) >= 0 is the row's multiplier ratio
    (:math:`t = \kappa w_n / c_n`); while no entry clips, m = V and this is the closed form.
    """
    pi = np.asarray(pi, dtype=float)
    Q = np.asarray(Q, dtype=float)
    t = np.broadcast_to(np.asarray(t, dtype=float), (pi.shape[0],))
    order = np.argsort(-Q, axis=1, kind="stable")
    qs = np.take_along_axis(Q, order, axis=1)
    ps = np.take_along_axis(pi, order, axis=1)
    cum_p = np.cumsum(ps, axis=1)
    cum_pq = np.cumsum(ps * qs, axis=1)
    tt = t[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        m = (cum_p + tt * cum_pq - 1.0) / (tt * cum_p)
        valid = (cum_p > 0) & (1.0 + tt * (qs - m) > 0)
    last = pi.shape[1] - 1 - np.argmax(valid[:, ::-1], axis=1)
    m_row = m[np.arange(pi.shape[0]), last]
    p = pi * np.maximum(0.0, 1.0 + tt * (Q - m_row[:, None]))
    p = np.where(tt > 0, p, pi)
    return p / p.sum(axis=1, keepdims=True)


def occupancy_trust_region_step(pi, Q, d, kappa) -> np.ndarray:
    r"""Normalised-occupancy chi-square trust region (TRPO-style): objective weights d, budget weights
    :math:`d/\sum d`, so :math:`w_n/c_n = \sum d` on visited rows; exact solution for multiplier kappa
    (:func:`clipped_trust_region_rows`), its own radius being :math:`\sum_n c_n\chi^2` of the result."""
    t = np.where(d > 0, kappa * d.sum(), 0.0)
    return clipped_trust_region_rows(pi, Q, t)


def match_step(step_fn, target, *, rtol: float = BISECTION_RTOL, max_doublings: int = 200):
    r"""Bisection on a step parameter x >= 0 so that ``step_fn(x)`` (a budget, increasing in x) equals
    ``target``. Returns ``(x, value, matched)``; ends on the side value <= target, with the bracket's relative
    width below ``rtol``; ``matched`` is False when the budget saturates below the target."""
    if target <= 0:
        return 0.0, step_fn(0.0), True
    lo, hi = 0.0, 1.0
    for _ in range(max_doublings):
        if step_fn(hi) >= target:
            break
        lo, hi = hi, 2.0 * hi
    else:
        return lo, step_fn(lo), False
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if step_fn(mid) >= target:
            hi = mid
        else:
            lo = mid
    return lo, step_fn(lo), True


def matched_pg(pi, Q, d, d_plus, target):
    """Policy-gradient step with d+-weighted chi2 budget equal to ``target``; returns (policy, alpha, matched)."""
    alpha, _, ok = match_step(lambda a: budget(softmax_pg_step(pi, Q, d, a), pi, d_plus), target)
    return softmax_pg_step(pi, Q, d, alpha), alpha, ok


def matched_occupancy_tr(pi, Q, d, d_plus, target):
    """Normalised-occupancy trust-region step matched to ``target``; returns (policy, kappa, matched)."""
    kappa, _, ok = match_step(lambda k: budget(occupancy_trust_region_step(pi, Q, d, k), pi, d_plus), target)
    return occupancy_trust_region_step(pi, Q, d, kappa), kappa, ok
