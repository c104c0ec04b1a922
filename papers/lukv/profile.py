"""Offline profiling of LU-KV budget curves (spec step 8; official protocol of the December 2026 addendum).

For each profiling sample q_i and each rho of the grid, solve the global allocation with that sample's oracle
importance I and scorer order, keep r*_{l,g}(q_i; rho) = 1 - b_{l,g}/T and average:
Phi(rho)_{l,g} = (1/M) sum_i r*_{l,g}(q_i; rho); stored float32 with shape (len(grid), L, G).

``protocol="official"`` (the default, the official step 2): the sink and window tokens are left out of the
utility curves and always kept; the compressible tokens j in [sink, T - window) of each head are ordered by the
scorer, their removal costs are smoothed by the lower convex hull of the cumulative eviction loss and a heap-greedy
evicts D(rho) = round(rho N T) tokens in all (99 nested steps, every head keeps at least
max(round(0.01 T), sink + window) tokens); where D(rho) exceeds what that floor allows (rho > 1 - floor / T) the
curve stays at the largest feasible compression, as in the official code.
``protocol="sorted"``: the earlier reconstruction - the hull (PAVA) of all T tokens in protected-score order and one
global sort of the hull gains, B(rho) = round((1 - rho) N T) kept tokens, no per-head floor.
Either way every feasible row averages to rho up to 1/(N T).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from papers.lukv.allocation import greedy_order, heap_greedy_keep_counts, hull_decrements

PROTOCOLS = ("official", "sorted")

__all__ = ["DEFAULT_GRID", "protect_scores", "scorer_order", "decrements", "build_budget_curve", "kept_per_head",
           "press_ratio", "integer_budgets", "curve_at_budget", "shuffle_heads",
           "total_budget", "save_curve", "check_curve", "PROTOCOLS", "min_keep", "feasible_rows", "reverse_heads"]

DEFAULT_GRID = np.round(np.arange(1, 100) / 100.0, 2)


def total_budget(rho: float, n_heads: int, seq_len: int) -> int:
    """B(rho) = round((1 - rho) * N * T)."""
    return int(round((1.0 - float(rho)) * n_heads * seq_len))


def protect_scores(scores: np.ndarray, *, sink: int = 4, window: int = 1) -> np.ndarray:
    """Sink/window protection of ``LUKVPress``: pi := max(pi) + 1 for j < sink and j >= T - window (max over
    the whole array of one layer, as kvpress does; the order is all that matters)."""
    s = np.array(scores, dtype=np.float64)
    seq_len = s.shape[-1]
    if sink < 0 or window < 0:
        raise ValueError(f"sink and window must be >= 0, got sink={sink}, window={window}")
    if sink + window >= seq_len:
        raise ValueError(f"sink + window = {sink + window} must be smaller than T = {seq_len}")
    top = s.max() + 1
    if sink:
        s[..., :sink] = top
    if window:
        s[..., seq_len - window:] = top
    return s


def scorer_order(scores: np.ndarray) -> np.ndarray:
    """sigma: positions by score descending, ties by position ascending (stable), along the last axis."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), axis=-1, kind="stable")


def decrements(importance: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """d(i) = I_{sigma(i)} per head, for arrays (..., T)."""
    return np.take_along_axis(np.asarray(importance, dtype=np.float64), scorer_order(scores), axis=-1)


def _check_pair(I, S, k):
    I = np.asarray(I, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    if I.ndim != 3 or S.shape != I.shape:
        raise ValueError(f"sample {k}: importance and scores must both have shape (L, G, T), got {I.shape} "
                         f"and {S.shape}")
    if not np.all(np.isfinite(I)) or np.any(I < 0):
        raise ValueError(f"sample {k}: importance must be finite and non-negative")
    if not np.all(np.isfinite(S)):
        raise ValueError(f"sample {k}: scores must be finite")
    return I, S


def min_keep(seq_len: int, sink: int, window: int) -> int:
    """Per-head floor of the official profiler: max(round(0.01 T), sink + window)."""
    return max(int(round(0.01 * int(seq_len))), int(sink) + int(window))


def feasible_rows(rho_grid, seq_len: int, sink: int, window: int) -> np.ndarray:
    """Rows of the grid the official profiler can reach exactly: rho <= 1 - floor / T (:func:`min_keep`)."""
    grid = np.asarray(rho_grid, dtype=np.float64)
    return grid <= 1.0 - min_keep(seq_len, sink, window) / int(seq_len) + 1e-12


def _official_keep(I, S, grid, sink, window):
    """Keep counts (len(grid), L*G) of one sample under the official step 2 (see the module docstring)."""
    n_layers, n_kv, seq_len = I.shape
    n_heads = n_layers * n_kv
    mid = slice(sink, seq_len - window)
    d = decrements(I[..., mid], S[..., mid]).reshape(n_heads, -1)
    floor = min_keep(seq_len, sink, window)
    cap = n_heads * (seq_len - floor)
    targets = np.minimum([int(round(float(r) * n_heads * seq_len)) for r in grid], cap)
    return heap_greedy_keep_counts(d, seq_len, np.maximum.accumulate(targets), min_keep=floor)


def build_budget_curve(importances: list, scores: list, *, rho_grid: np.ndarray | None = None,
                       sink: int = 4, window: int = 1, protocol: str = "official") -> np.ndarray:
    """Average per-sample optimal prune ratios: returns float32 (len(grid), L, G) (default grid
    0.01..0.99). One (L, G, T) importance and one (L, G, T) score array per sample (T may vary between
    samples). ``protocol``: "official" (heap-greedy on the hull of the compressible tokens, sink and window
    kept) or "sorted" (scores protected by :func:`protect_scores`, PAVA of all tokens, one global sort); see the
    module docstring."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    if len(importances) == 0:
        raise ValueError("importances must not be empty")
    if len(importances) != len(scores):
        raise ValueError(f"importances and scores must have the same length, got {len(importances)} and "
                         f"{len(scores)}")
    grid = DEFAULT_GRID if rho_grid is None else np.asarray(rho_grid, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or np.any(~np.isfinite(grid)) or np.any(grid <= 0) or np.any(grid >= 1):
        raise ValueError("rho_grid must be a non-empty 1-D array with values in (0, 1)")
    shape = None
    total = None
    for k, (I, S) in enumerate(zip(importances, scores)):
        I, S = _check_pair(I, S, k)
        if shape is None:
            shape = I.shape[:2]
            total = np.zeros((grid.size,) + shape)
        elif I.shape[:2] != shape:
            raise ValueError(f"sample {k}: (L, G) = {I.shape[:2]} differs from sample 0's {shape}")
        n_layers, n_kv, seq_len = I.shape
        n_heads = n_layers * n_kv
        if protocol == "official":
            if sink < 0 or window < 0 or sink + window >= seq_len:
                raise ValueError(f"sample {k}: need sink, window >= 0 and sink + window < T = {seq_len}, got "
                                 f"sink={sink}, window={window}")
            keep = _official_keep(I, S, grid, sink, window)
            total += (1.0 - keep / seq_len).reshape(grid.size, n_layers, n_kv)
            continue
        pi = np.stack([protect_scores(S[l], sink=sink, window=window) for l in range(n_layers)])
        d = decrements(I, pi).reshape(n_heads, seq_len)
        order = greedy_order(hull_decrements(d))
        for r, rho in enumerate(grid):
            b = np.bincount(order[:total_budget(rho, n_heads, seq_len)], minlength=n_heads)
            total[r] += (1.0 - b / seq_len).reshape(n_layers, n_kv)
    return (total / len(importances)).astype(np.float32)


def check_curve(curve, n_layers: int, n_kv_heads: int) -> np.ndarray:
    """Validate a budget curve for a model with L layers and G KV heads: shape (99, L, G), values in [0, 1]."""
    c = np.asarray(curve)
    if c.shape != (99, n_layers, n_kv_heads):
        raise ValueError(f"budget curve must have shape (99, {n_layers}, {n_kv_heads}), got {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0) or np.any(c > 1):
        raise ValueError("budget curve values must lie in [0, 1]")
    return c.astype(np.float32)


def save_curve(curve: np.ndarray, path: str | Path, **meta) -> dict:
    """Write ``path`` (.npy, float32) and a JSON sidecar ``path.json`` with ``meta`` and the SHA-256 of the
    array bytes; returns the sidecar dict."""
    from shared.results import atomic_path

    arr = np.ascontiguousarray(curve, dtype=np.float32)
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, arr, allow_pickle=False)
    side = dict(meta, shape=list(arr.shape), dtype="float32", sha256=hashlib.sha256(arr.tobytes()).hexdigest())
    from shared.results import atomic_write_text
    atomic_write_text(path.with_suffix(".json"), json.dumps(side, indent=2, sort_keys=True) + "\n")
    return side


def kept_per_head(rho: float, seq_len: int) -> int:
    """The number of context tokens every head keeps on average at compression ``rho``: (1 - rho) T.

    Every press of a comparison keeps exactly this many tokens per head on average (in total N times it), so
    (1 - rho) T must be an integer: raises ``ValueError`` otherwise (choose T so that it is, e.g. T = 40 for
    rho in {0.5, 0.8}), instead of letting one press floor and another round.
    """
    keep = (1.0 - float(rho)) * int(seq_len)
    if abs(keep - round(keep)) > 1e-6 or round(keep) < 1:
        raise ValueError(f"(1 - rho) * T = {keep:.6g} must be a positive integer (rho={rho}, T={seq_len}) so that "
                         "every press keeps exactly the same number of tokens")
    return int(round(keep))


def press_ratio(rho: float, seq_len: int) -> float:
    """The compression ratio handed to a kvpress press that floors ``int(T (1 - ratio))`` (ScorerPress, AdaKV,
    CriticalKV, StreamingLLM) or rounds it (PyramidKV), so that it keeps exactly :func:`kept_per_head` tokens:
    1 - (keep + 1/4) / T (without the quarter, 1 - 0.8 = 0.19999999999999996 floors 8 tokens of T = 40 to 7)."""
    keep = kept_per_head(rho, seq_len)
    return 1.0 - (keep + 0.25) / int(seq_len)


def integer_budgets(prune_ratios: np.ndarray, total: int, seq_len: int) -> np.ndarray:
    """Integer per-head budgets b (same shape as ``prune_ratios``) with sum b = ``total`` and 1 <= b <= T:
    the ideal b* = (1 - Phi) T, floored, plus one to the heads with the largest fractional parts (ties: lower
    flat index first); a final pass moves single units from the largest to the smallest heads only if the
    clamp to [1, T] broke the total."""
    ideal = np.clip(1.0 - np.asarray(prune_ratios, dtype=np.float64), 0.0, 1.0) * int(seq_len)
    flat = ideal.ravel()
    n = flat.size
    if not (n <= total <= n * int(seq_len)):
        raise ValueError(f"total budget {total} must lie in [{n}, {n * int(seq_len)}]")
    base = np.clip(np.floor(flat + 1e-9).astype(np.int64), 1, int(seq_len))
    frac = flat - base
    order = np.argsort(-frac, kind="stable")
    i = 0
    while base.sum() < total:
        j = order[i % n]
        if base[j] < seq_len:
            base[j] += 1
        i += 1
    while base.sum() > total:
        j = int(np.argmax(base - 1e-9 * np.arange(n)))
        base[j] -= 1
    return base.reshape(ideal.shape)


def curve_at_budget(curve: np.ndarray, rho: float, seq_len: int) -> np.ndarray:
    """A copy of ``curve`` whose row read at ``rho`` (kvpress: round(100 rho) - 1) holds integer budgets
    (:func:`integer_budgets`) that keep exactly N * (1 - rho) T tokens in all; kvpress's per-layer rounding then
    reproduces them exactly, so LU-KV keeps the same number of tokens as every other press."""
    c = np.array(curve, dtype=np.float32)
    idx = min(98, max(0, int(round(rho * 100)) - 1))
    n_heads = c.shape[1] * c.shape[2]
    b = integer_budgets(c[idx], n_heads * kept_per_head(rho, seq_len), seq_len)
    c[idx] = (1.0 - b / float(seq_len)).astype(np.float32)
    return c


def shuffle_heads(curve: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The control curve: the same per-head ratios at every rho, assigned to a random permutation of the heads
    (one permutation for all rows), so the allocation no longer matches the heads it was profiled on."""
    c = np.asarray(curve)
    perm = rng.permutation(c.shape[1] * c.shape[2])
    flat = c.reshape(c.shape[0], -1)[:, perm]
    return flat.reshape(c.shape).astype(c.dtype)


def reverse_heads(curve: np.ndarray) -> np.ndarray:
    """The adversarial control curve: in every row, the same set of per-head ratios handed out in reverse order
    of the profiled ones (the head the profile prunes most is pruned least, ties by head index), so every row
    keeps its mean (the same global budget) while the allocation runs against the profile."""
    c = np.asarray(curve)
    if c.ndim != 3:
        raise ValueError(f"curve must have shape (rows, L, G), got {c.shape}")
    flat = c.reshape(c.shape[0], -1)
    order = np.argsort(flat, axis=1, kind="stable")               # ascending ratio
    out = np.empty_like(flat)
    np.put_along_axis(out, order, np.take_along_axis(flat, order[:, ::-1], axis=1), axis=1)
    return out.reshape(c.shape).astype(c.dtype)
