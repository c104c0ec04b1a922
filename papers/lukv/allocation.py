"""Head budget allocation of LU-KV (spec steps 3-7, 9).

Per head n the decrements d_n(i) = I_{n, sigma_n(i)} (importance of the i-th token in scorer order) define the
retained utility R_n(b) = sum_{i<=b} d_n(i). The global problem is

    max_b  sum_n R_n(b_n)   s.t.  sum_n b_n = B,  0 <= b_n <= T,  b integer.

R_n is not concave in general; its least concave majorant R_breve_n(b) = sum_{i<=b} d_breve_n(i) uses the
antitonic (PAVA) fit d_breve_n of d_n. The marginal-utility greedy on the hull gains is optimal for the relaxed
problem, so  relaxed(greedy) >= OPT >= true(greedy)  (Tang et al., ICML 2026, "convex-hull relaxation").

The official profiling code (step 2) states the same relaxation from the eviction side: with the removal costs
v_n(k) = d_n(T + 1 - k) (the lowest-ranked token first) and the cumulative loss C_n(k) = sum_{i<=k} v_n(i), it
replaces C_n by its lower convex hull (:func:`lower_convex_hull`, :func:`hull_costs`) and evicts one token at a
time from the head whose next smoothed removal cost is the smallest, with a heap, in 99 nested steps
(:func:`heap_greedy_keep_counts`). The lower convex hull of C_n is R_n(T) - R_breve_n(T - k), so both views give
the same smoothed gains (hull_costs(d[::-1])[::-1] == antitonic_regression(d)).
"""
from __future__ import annotations

import heapq

from dataclasses import dataclass

import numpy as np

__all__ = ["Allocation", "antitonic_regression", "allocate_budget", "round_keep_counts", "METHODS",
           "lower_convex_hull", "hull_costs", "heap_greedy_keep_counts", "step_targets"]

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


def lower_convex_hull(values) -> np.ndarray:
    """Indices of the vertices of the lower convex hull of the points (i, y_i), i = 0..n-1 (Andrew's monotone
    chain; a point on or above the chord of its neighbours is dropped, so collinear points are not vertices).

    The hull is the greatest convex function h <= y on {0..n-1}; it interpolates y at the returned indices and
    is linear in between. Example: y = [0, 3, 4, 8] -> [0, 2, 3] (the chord from (0, 0) to (2, 4) passes below
    (1, 3)).
    """
    y = np.asarray(values, dtype=np.float64)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("values must be finite (no NaN or Inf)")
    stack = [0]
    for i in range(1, y.size):
        while len(stack) >= 2:
            a, b = stack[-2], stack[-1]
            # cross product of (b - a, y_b - y_a) and (i - a, y_i - y_a) <= 0: b is not strictly below the chord
            if (b - a) * (y[i] - y[a]) - (i - a) * (y[b] - y[a]) <= 0:
                stack.pop()
            else:
                break
        stack.append(i)
    return np.array(stack, dtype=np.int64)


def hull_costs(removal_costs) -> np.ndarray:
    """Smoothed removal costs of one head (official step 2): with C(k) = sum_{i<=k} v_i (C(0) = 0) the
    cumulative loss of evicting the first k tokens of ``removal_costs`` v (lowest-ranked token first), returns
    v_breve_i = C_hull(i) - C_hull(i - 1), the slopes of the lower convex hull of (k, C(k)), k = 0..M.

    v_breve is non-decreasing and has the same total as v; it is the non-decreasing least-squares fit of v
    (so hull_costs(d[::-1])[::-1] equals :func:`antitonic_regression` (d)). Example: [1, 3, 1, 5] -> [1, 2, 2, 5].
    """
    v = np.asarray(removal_costs, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"removal_costs must be a non-empty 1-D array, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("removal_costs must be finite (no NaN or Inf)")
    cum = np.concatenate(([0.0], np.cumsum(v)))
    idx = lower_convex_hull(cum)
    out = np.empty(v.size)
    for a, b in zip(idx[:-1], idx[1:]):
        out[a:b] = (cum[b] - cum[a]) / (b - a)
    return out


def step_targets(n_units: int, n_steps: int = 99) -> np.ndarray:
    """Number of evicted tokens after step i of the official profiler: D_i = round(i / (n_steps + 1) * n_units),
    i = 1..n_steps (the compression ratios 0.01..0.99 for 99 steps)."""
    if isinstance(n_units, bool) or int(n_units) != n_units or n_units < 1:
        raise ValueError(f"n_units must be an integer >= 1, got {n_units!r}")
    if isinstance(n_steps, bool) or int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}")
    return np.array([int(round(i / (n_steps + 1) * n_units)) for i in range(1, int(n_steps) + 1)], dtype=np.int64)


def heap_greedy_keep_counts(decrements, seq_len: int, targets, *, min_keep: int = 0) -> np.ndarray:
    """Heap-greedy eviction of the official profiler (step 2) on N heads.

    ``decrements`` (N, M): d_n(i), the oracle importance of head n's i-th compressible token in scorer order
    (highest-ranked first; sink and window tokens are not in it). Every head starts with all ``seq_len`` = T
    tokens (the T - M protected ones included). With the smoothed costs c_n = hull_costs(d_n[::-1]) (removal
    order, non-decreasing), each eviction pops the head with the smallest next cost c_n(k_n + 1) from a heap
    (ties: lower head index, as the official tuples), evicts its lowest-ranked kept token unless the head is at
    ``min_keep`` (then the head leaves the heap), until D evictions in all; one pass serves every target D of
    ``targets`` (non-decreasing), so the allocations are nested. Returns keep counts (len(targets), N), int64,
    with sum_n keep_n = N T - D for every reachable D (raises ``ValueError`` if D exceeds what min_keep allows).

    Because each c_n is non-decreasing, evicting by smallest next cost maximises sum_n R_breve_n(keep_n - (T - M))
    at every D (the marginal-utility greedy run backwards); on concave R_n (d_n non-increasing) it is the
    exact optimum of the true problem (see the exact DP of :func:`allocate_budget`).
    """
    d = _check_decrements(decrements)
    n_heads, m = d.shape
    if isinstance(seq_len, bool) or int(seq_len) != seq_len or seq_len < m:
        raise ValueError(f"seq_len must be an integer >= the {m} compressible tokens, got {seq_len!r}")
    seq_len = int(seq_len)
    if isinstance(min_keep, bool) or int(min_keep) != min_keep or not 0 <= min_keep <= seq_len:
        raise ValueError(f"min_keep must be an integer in [0, T={seq_len}], got {min_keep!r}")
    t = np.asarray(targets)
    if t.ndim != 1 or t.size == 0 or not np.all(t == np.round(t)) or np.any(np.diff(t) < 0) or np.any(t < 0):
        raise ValueError("targets must be a non-empty, non-decreasing 1-D array of non-negative integers")
    floor = max(int(min_keep), seq_len - m)
    if int(t[-1]) > n_heads * (seq_len - floor):
        raise ValueError(f"target {int(t[-1])} evictions exceeds the N * (T - max(min_keep, T - M)) = "
                         f"{n_heads * (seq_len - floor)} evictable tokens")
    costs = np.stack([hull_costs(row[::-1]) for row in d])   # costs[n, k]: cost of the (k+1)-th eviction
    keep = np.full(n_heads, seq_len, dtype=np.int64)
    evicted = np.zeros(n_heads, dtype=np.int64)
    heap = [(float(costs[n, 0]), n) for n in range(n_heads) if m > 0]
    heapq.heapify(heap)
    done, out = 0, np.empty((t.size, n_heads), dtype=np.int64)
    for i, target in enumerate(t.astype(np.int64)):
        while done < target:
            _, n = heapq.heappop(heap)
            if keep[n] <= min_keep:
                continue                       # the head is at its floor: it leaves the heap
            keep[n] -= 1
            evicted[n] += 1
            done += 1
            if evicted[n] < m:
                heapq.heappush(heap, (float(costs[n, evicted[n]]), n))
        out[i] = keep
    return out
