r"""Independent certificate of the capacitated robust optimum: an exact LP per dual level and a certified
one-dimensional branch and bound over the dual variable.

For a fixed dual variable the robust objective of every assortment is a monotone function of one nominal MNL
revenue with pseudo-revenues :math:`\tilde r` (see :func:`robust.pseudo_revenues`), so

.. math:: \max_{|S|\le C} R_\rho(S) = \sup_{\text{dual}}\ g\big(\text{dual},\ \mathrm{LP}(\text{dual})\big),\qquad
          \mathrm{LP}(\text{dual}) = \max_{|S|\le C} \frac{\sum_S v_i \tilde r_i}{1+\sum_S v_i},

and :math:`\mathrm{LP}` is solved exactly (no enumeration, no Dinkelbach) by the linear program of Davis,
Gallego & Topaloglu (2013) with HiGHS: :math:`\max \sum_i \tilde r_i x_i` s.t. :math:`x_0+\sum_i x_i = 1`,
:math:`0 \le x_i \le v_i x_0`, :math:`\sum_i x_i/v_i \le C x_0`, whose constraint structure makes every vertex
an assortment (Charnes-Cooper: :math:`x_i = v_i [i\in S] / (1 + \sum_S v_j)`).

- TV: the dual maximiser lies in :math:`\{0\}\cup\{r_i\}` (the objective is piecewise linear in :math:`\eta`),
  so the optimum is :math:`\max_\eta \mathrm{LP}(\eta) - \rho\eta` over these N + 1 levels: exact.
- KL: :math:`g = -\lambda\log(1-\mathrm{LP}(\lambda)) - \lambda\rho`. For a fixed set,
  :math:`-\lambda\log E_P e^{-r/\lambda}` is non-decreasing in :math:`\lambda` (its derivative is a KL
  divergence), hence on :math:`[a, b]` every set's objective is at most
  :math:`-b\log(1-\mathrm{LP}(b)) - a\rho`; :math:`\lambda\in(0, r_{max}/\rho]` (above, every objective is
  below :math:`r_{max}-\lambda\rho\le0`).
- chi2: :math:`g = \eta - \sqrt{1+\rho}\sqrt{\eta^2-\mathrm{LP}(\eta)}`. :math:`E_P(\eta-r)_+^2` is
  non-decreasing in :math:`\eta`, so on :math:`[a, b]` the bound is
  :math:`b - \sqrt{1+\rho}\sqrt{a^2-\mathrm{LP}(a)}`; :math:`\eta \in [0, c\,r_{max}/(c-1)]` with
  :math:`c = \sqrt{1+\rho}` (above, :math:`E_P(\eta-r)_+^2 \ge (\eta-E_Pr)^2` makes every objective negative).

The branch and bound keeps the best evaluated level (a lower bound on the optimum, attained by the LP's set)
and the largest interval bound (an upper bound on the optimum), and splits the interval of largest bound until
the two differ by at most ``tol``. The result brackets the true optimum whatever the robust solver does.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from ._checks import check_capacity, check_divergence, check_rho, check_vr
from .robust import robust_revenue

__all__ = ["Certificate", "DGTLinearProgram", "certify_drao"]


class DGTLinearProgram:
    r"""The Davis-Gallego-Topaloglu LP of :math:`\max_{|S|\le C}\sum_S v_i\tilde r_i/(1+\sum_S v_i)` for fixed
    ``v`` and ``capacity``; :meth:`solve` takes the pseudo-revenues (>= 0) and returns ``(value, items)``.

    One HiGHS model (``highspy``) is built per instance; each solve changes only the objective and restarts
    the simplex from the previous basis.
    """

    def __init__(self, v, capacity: int | None):
        import highspy
        from scipy import sparse

        v, _ = check_vr(v, np.zeros(np.shape(v)))
        capacity = check_capacity(capacity)
        n = v.size
        self.v, self.n = v, n
        rows = np.zeros((n, n + 1))
        rows[:, 0] = -v                                   # x_i - v_i x_0 <= 0
        rows[np.arange(n), np.arange(1, n + 1)] = 1.0
        if capacity is not None and capacity < n:         # sum_i x_i / v_i - C x_0 <= 0
            rows = np.vstack([rows, np.concatenate(([-float(capacity)], 1.0 / v))])
        A = sparse.csc_matrix(np.vstack([rows, np.ones((1, n + 1))]))   # last row: x_0 + sum_i x_i = 1
        inf = highspy.kHighsInf
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n + 1, A.shape[0]
        lp.col_cost_ = np.zeros(n + 1)
        lp.col_lower_, lp.col_upper_ = np.zeros(n + 1), np.full(n + 1, inf)
        lp.row_lower_ = np.concatenate((np.full(A.shape[0] - 1, -inf), [1.0]))
        lp.row_upper_ = np.concatenate((np.zeros(A.shape[0] - 1), [1.0]))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
        self._highs = highspy.Highs()
        self._highs.setOptionValue("output_flag", False)
        self._highs.setOptionValue("threads", 1)
        self._highs.passModel(lp)
        self._optimal = highspy.HighsModelStatus.kOptimal
        self._cols = np.arange(1, n + 1, dtype=np.int32)
        self.n_solves = 0
        self.max_fractionality = 0.0                      # max_i min(x_i, v_i x_0 - x_i) / (v_i x_0) seen

    def solve(self, rt) -> tuple[float, tuple[int, ...]]:
        rt = np.asarray(rt, dtype=float)
        if rt.shape != (self.n,):
            raise ValueError(f"pseudo-revenues must have shape ({self.n},), got {rt.shape}")
        if not np.all(np.isfinite(rt)) or np.any(rt < 0):
            raise ValueError("pseudo-revenues must be finite and >= 0")
        h = self._highs
        h.changeColsCost(self.n, self._cols, -rt)         # HiGHS minimises
        h.run()
        status = h.getModelStatus()
        if status != self._optimal:
            raise RuntimeError(f"DGT LP: HiGHS returned {h.modelStatusToString(status)}")
        self.n_solves += 1
        x = np.asarray(h.getSolution().col_value)
        x0 = x[0]
        share = x[1:] / (max(x0, 1e-300) * self.v)        # 1 on the offered items, 0 elsewhere at a vertex
        self.max_fractionality = max(self.max_fractionality, float(np.max(np.minimum(share, 1.0 - share),
                                                                             initial=0.0)))
        items = tuple(int(i) for i in np.flatnonzero(share > 1e-9))
        return float(-h.getInfo().objective_function_value), items


@dataclass(frozen=True)
class Certificate:
    """``lower <= max_{|S|<=C} R_rho(S) <= upper``; ``items`` is the LP's set at the best level (``lower`` is
    the dual objective of that level, a lower bound on that set's robust value); ``n_lp`` LPs were solved."""

    lower: float
    upper: float
    items: tuple[int, ...]
    best_dual: float
    n_lp: int
    max_fractionality: float = 0.0


def certify_drao(v, r, rho: float, divergence: str, capacity: int | None, *, tol: float = 1e-8,
                 max_lp: int = 5000) -> Certificate:
    """Bracket the capacitated robust optimum by LPs per dual level (see the module docstring).

    ``tol`` is the absolute width at which the branch and bound stops (TV is exact and ignores it); more than
    ``max_lp`` LP solves raise ``RuntimeError``.
    """
    v, r = check_vr(v, r)
    divergence = check_divergence(divergence)
    rho = check_rho(rho, divergence)
    capacity = check_capacity(capacity)
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    if rho == 0.0:
        raise ValueError("rho must be > 0 for a certificate (rho = 0 is the nominal problem: use solve_mnl_lp)")
    lp = DGTLinearProgram(v, capacity)
    rmax = float(r.max())
    if rmax == 0.0:
        return Certificate(0.0, 0.0, (), 0.0, 0)

    if divergence == "tv":
        best = (0.0, (), 0.0)                             # the empty set: value 0
        for eta in np.unique(r):
            val, items = lp.solve(np.minimum(r, eta))
            g = val - rho * eta
            if g > best[0]:
                best = (g, items, float(eta))
        return Certificate(best[0], best[0], best[1], best[2], lp.n_solves, lp.max_fractionality)

    if divergence == "kl":                               # pseudo-revenues decrease in lambda
        def pseudo(lam):
            return -np.expm1(-r / lam) if lam > 0 else (r > 0).astype(float)

        def evaluate(lam):                                # -> (g(lam), phi(lam) = max_S -lam log E e^{-r/lam}, set)
            if lam == 0.0:                                # the limit lambda -> 0: point mass on the outside option
                return 0.0, 0.0, ()
            val, items = lp.solve(pseudo(lam))
            phi = -lam * math.log1p(-min(val, 1.0 - 1e-300))
            return phi - lam * rho, phi, items

        def bound(a, b, eval_a, eval_b):                  # all sets on [a, b]: <= phi(b) - a rho
            return eval_b[1] - a * rho

        def rt_range(a, b):                               # (elementwise lower, upper) pseudo-revenues on [a, b]
            return pseudo(b), pseudo(a)

        lo, hi = 0.0, rmax / rho
    else:                                                 # pseudo-revenues increase in eta
        c = math.sqrt(1.0 + rho)

        def pseudo(eta):
            return np.maximum(eta * eta - np.maximum(eta - r, 0.0) ** 2, 0.0)

        def evaluate(eta):                                # -> (g(eta), sqrt(min_S E(eta-r)_+^2), set)
            val, items = lp.solve(pseudo(eta))
            root = math.sqrt(max(eta * eta - val, 0.0))
            return eta - c * root, root, items

        def bound(a, b, eval_a, eval_b):                  # all sets on [a, b]: <= b - c sqrt(min_S E(a-r)_+^2)
            return b - c * eval_a[1]

        def rt_range(a, b):
            return pseudo(a), pseudo(b)

        lo, hi = 0.0, c * rmax / (c - 1.0)

    cap = v.size if capacity is None else min(capacity, v.size)
    exact: dict = {}

    def robust_value(items):                              # exact R_rho of one set (dual formula, cached)
        if items not in exact:
            exact[items] = robust_revenue(v, r, items, rho, divergence) if items else 0.0
        return exact[items]

    def constant_piece(items, a, b) -> bool:
        """Whether ``items`` (= S) is the nominal optimum at every dual level of [a, b].

        A set T is no better than S at level t iff sum_{T-S} v (rt - z) - sum_{S-T} v (rt - z) <= 0 with
        z = Rev_t(S) (subtract S's own identity sum_S v (rt - z) = z). Over the interval rt lies between
        its values at the ends and z between S's revenues there, so each item's term is bounded on its own:
        adding i gains at most v_i (rt_hi_i - z_lo), removing j at most v_j (z_hi - rt_lo_j); the best
        exchange under |T| <= C (m removals, then up to C - |S| + m additions) must not gain.
        """
        rt_lo, rt_hi = rt_range(a, b)
        inside = np.zeros(v.size, dtype=bool)
        inside[list(items)] = True
        vs = v[inside]
        z_lo = float(vs @ rt_lo[inside] / (1.0 + vs.sum()))
        z_hi = float(vs @ rt_hi[inside] / (1.0 + vs.sum()))
        add = np.sort(v[~inside] * (rt_hi[~inside] - z_lo))[::-1]
        add = np.concatenate(([0.0], np.cumsum(add[add > 0])))
        rem = np.concatenate(([0.0], np.cumsum(np.sort(vs * (z_hi - rt_lo[inside]))[::-1])))
        size = int(inside.sum())
        k = np.minimum(cap - size + np.arange(rem.size), add.size - 1)
        gain = rem + np.where(k >= 0, add[np.maximum(k, 0)], -np.inf)
        return bool(gain.max() <= 1e-12 * max(z_lo, 1e-300))

    eval_lo, eval_hi = evaluate(lo), evaluate(hi)
    best = (0.0, (), 0.0)
    for t, e in ((lo, eval_lo), (hi, eval_hi)):
        best = max(best, (e[0], e[2], t), (robust_value(e[2]), e[2], t), key=lambda z: z[0])
    heap = [(-bound(lo, hi, eval_lo, eval_hi), lo, hi, eval_lo, eval_hi)]
    pruned = -math.inf                                    # largest bound of a closed interval
    upper = -math.inf
    while heap:
        neg_ub, a, b, ea, eb = heapq.heappop(heap)
        if -neg_ub <= best[0] + tol:                      # every open interval is within tol of the best
            upper = -neg_ub
            break
        if ea[2] == eb[2] and constant_piece(ea[2], a, b):
            val = robust_value(ea[2])                     # the exact maximum over this piece
            if val > best[0]:
                best = (val, ea[2], 0.5 * (a + b))
            pruned = max(pruned, min(-neg_ub, val))
            continue
        if lp.n_solves > max_lp:
            raise RuntimeError(f"certificate did not close within {max_lp} LP solves "
                               f"(bounds [{best[0]}, {-neg_ub}])")
        m = 0.5 * (a + b)
        em = evaluate(m)
        best = max(best, (em[0], em[2], m), (robust_value(em[2]), em[2], m), key=lambda z: z[0])
        for (x, ex, y, ey) in ((a, ea, m, em), (m, em, b, eb)):
            ub = bound(x, y, ex, ey)
            if ub > best[0] + tol:
                heapq.heappush(heap, (-ub, x, y, ex, ey))
            else:
                pruned = max(pruned, ub)
    upper = max(upper, pruned, best[0])
    return Certificate(float(best[0]), float(upper), tuple(best[1]), float(best[2]), lp.n_solves,
                       lp.max_fractionality)
