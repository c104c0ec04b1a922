"""Head budget allocation of LU-KV (spec steps 3-7, 9).

Per head n the decrements d_n(i) = I_{n, sigma_n(i)} (importance of the i-th token in scorer order) define the
retained utility R_n(b) = sum_{i<=b} d_n(i). The global problem is

    max_b  sum_n R_n(b_n)   s.t.  sum_n b_n = B,  0 <= b_n <= T,  b integer.

R_n is not concave in general; its least concave majorant R_breve_n(b) = sum_{i<=b} d_breve_n(i) uses the
antitonic (PAVA) fit d_breve_n of d_n. The marginal-utility greedy on the hull gains is optimal for the relaxed
problem, so  relaxed(greedy) >= OPT >= true(greedy)  (Tang et al., ICML 2026, "convex-hull relaxation").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Allocation", "antitonic_regression", "allocate_budget", "round_keep_counts", "METHODS"]

METHODS = ("greedy", "dp", "dp_relaxed")


def antitonic_regression(values: np.ndarray) -> np.ndarray:
    """Non-increasing least-squares fit with unit weights (pool-adjacent-violators algorithm).

    Returns y minimising sum_i (y_i - x_i)^2 subject to y_1 >= y_2 >= ... >= y_T. Each block of pooled
    entries takes its mean, so block sums are preserved and sum_i y_i = sum_i x_i; prefix sums of y give the
    least concave majorant of the prefix sums of x. Example: [4, 1, 3, 2] -> [4, 2, 2, 2].
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {x.shape}")
    if x.size == 0:
        raise ValueError("values must not be empty")
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite (no NaN or Inf)")
    sums, counts = [], []
    for v in x:
        s, c = float(v), 1
        # pool while the previous block mean is smaller than the current one (violates non-increasing)
        while sums and sums[-1] * c < s * counts[-1]:
            s += sums.pop()
            c += counts.pop()
        sums.append(s)
        counts.append(c)
    return np.repeat(np.array(sums) / np.array(counts), counts)


@dataclass(frozen=True)
class Allocation:
    """Budgets per head (int64, sums to the total budget), their true value sum_n R_n(b_n), their relaxed
    value sum_n R_breve_n(b_n), and the method that produced them."""

    budgets: np.ndarray
    value: float
    relaxed_value: float
    method: str


def _check_decrements(decrements) -> np.ndarray:
    d = np.asarray(decrements, dtype=np.float64)
    if d.ndim != 2:
        raise ValueError(f"decrements must be 2-D (heads, tokens), got shape {d.shape}")
    if d.shape[0] < 1 or d.shape[1] < 1:
        raise ValueError(f"decrements must be non-empty, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("decrements must be finite (no NaN or Inf)")
    if np.any(d < 0):
        raise ValueError("decrements must be non-negative (they are oracle importances)")
    return d


def _check_budget(total_budget, n_heads: int, seq_len: int) -> int:
    if isinstance(total_budget, bool) or int(total_budget) != total_budget:
        raise ValueError(f"total_budget must be an integer, got {total_budget!r}")
    if not 0 <= int(total_budget) <= n_heads * seq_len:
        raise ValueError(f"total_budget must lie in [0, N*T] = [0, {n_heads * seq_len}], got {total_budget}")
    return int(total_budget)


def hull_decrements(decrements: np.ndarray) -> np.ndarray:
    """Row-wise antitonic fit d_breve of a (N, T) decrement array."""
    d = _check_decrements(decrements)
    return np.stack([antitonic_regression(row) for row in d])


def greedy_order(hull: np.ndarray) -> np.ndarray:
    """Head index of each budget unit in greedy order: one stable sort of all N*T hull gains, descending,
    ties by head ascending then position ascending. The first B entries give the budgets for budget B."""
    n_heads, seq_len = hull.shape
    heads = np.repeat(np.arange(n_heads), seq_len)
    pos = np.tile(np.arange(seq_len), n_heads)
    order = np.lexsort((pos, heads, -hull.ravel()))
    return heads[order]


def _values(d: np.ndarray, hull: np.ndarray, budgets: np.ndarray) -> tuple[float, float]:
    zero = np.zeros((d.shape[0], 1))
    R = np.hstack([zero, np.cumsum(d, axis=1)])
    Rb = np.hstack([zero, np.cumsum(hull, axis=1)])
    rows = np.arange(d.shape[0])
    return float(R[rows, budgets].sum()), float(Rb[rows, budgets].sum())


def _dp(curves: np.ndarray, budget: int) -> np.ndarray:
    """Exact DP f_n(c) = max_{0<=t<=min(T,c)} f_{n-1}(c-t) + R_n(t); O(N*B*T) time, (N, B+1) argmax table.
    Ties go to the smallest t."""
    n_heads, tp1 = curves.shape
    seq_len = tp1 - 1
    f = np.full(budget + 1, -np.inf)
    f[0] = 0.0
    arg = np.zeros((n_heads, budget + 1), dtype=np.int32)
    for n in range(n_heads):
        best = f + curves[n, 0]
        choice = np.zeros(budget + 1, dtype=np.int32)
        for t in range(1, min(seq_len, budget) + 1):
            cand = np.full(budget + 1, -np.inf)
            cand[t:] = f[:-t] + curves[n, t]
            better = cand > best
            best = np.where(better, cand, best)
            choice[better] = t
        f, arg[n] = best, choice
    budgets = np.zeros(n_heads, dtype=np.int64)
    c = budget
    for n in range(n_heads - 1, -1, -1):
        budgets[n] = arg[n, c]
        c -= budgets[n]
    return budgets


def allocate_budget(decrements: np.ndarray, total_budget: int, *, method: str = "greedy") -> Allocation:
    """Split ``total_budget`` kept tokens over N heads given decrements of shape (N, T) (row n = d_n(1..T) in
    scorer order, all >= 0).

    ``method="greedy"``: marginal-utility greedy on the hull gains d_breve (one global sort, see
    :func:`greedy_order`), optimal for max sum_n R_breve_n(b_n). ``"dp"``: exact dynamic programme on the true
    R_n. ``"dp_relaxed"``: the same DP on R_breve_n (equals the greedy's relaxed value).
    Example: rows [0, 9] and [5, 1], budget 2: greedy -> budgets (1, 1), relaxed 9.5, value 5; dp -> value 9.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    d = _check_decrements(decrements)
    n_heads, seq_len = d.shape
    budget = _check_budget(total_budget, n_heads, seq_len)
    hull = np.stack([antitonic_regression(row) for row in d])
    if method == "greedy":
        budgets = np.bincount(greedy_order(hull)[:budget], minlength=n_heads).astype(np.int64)
    else:
        source = d if method == "dp" else hull
        curves = np.hstack([np.zeros((n_heads, 1)), np.cumsum(source, axis=1)])
        budgets = _dp(curves, budget)
    value, relaxed = _values(d, hull, budgets)
    return Allocation(budgets=budgets, value=value, relaxed_value=relaxed, method=method)


def round_keep_counts(keep_rates: np.ndarray, seq_len: int) -> np.ndarray:
    """Per-layer rounding of ``kvpress.LUKVPress`` (spec step 9) for one layer with G KV heads.

    ideal k_g = rate_g * T (float32, as kvpress); target = round(sum_g k_g) clipped to [G, G*T]; start from
    floor(k_g) and give the remainder one each to the heads with the largest fractional parts (ties: lower
    head index first); clamp to [1, T]. Example: T = 8, rates (0.30, 0.45, 0.55) -> (2, 4, 4).
    """
    if isinstance(seq_len, bool) or int(seq_len) != seq_len or seq_len < 1:
        raise ValueError(f"seq_len must be an integer >= 1, got {seq_len!r}")
    rates = np.asarray(keep_rates, dtype=np.float32)
    if rates.ndim != 1 or rates.size == 0:
        raise ValueError(f"keep_rates must be a non-empty 1-D array, got shape {rates.shape}")
    if np.any(np.isnan(rates)) or np.any(rates < 0) or np.any(rates > 1):
        raise ValueError("keep_rates must lie in [0, 1] (no NaN)")
    seq_len = int(seq_len)
    n = rates.size
    ideal = rates * np.float32(seq_len)
    target = int(np.round(ideal.sum(dtype=np.float32)))
    target = max(n, min(n * seq_len, target))
    base = np.floor(ideal).astype(np.int64)
    remainder = target - int(base.sum())
    if remainder > 0:
        frac = ideal - base.astype(np.float32)
        top = np.argsort(-frac, kind="stable")[: min(remainder, n)]
        base[top] += 1
    return np.clip(base, 1, seq_len)
