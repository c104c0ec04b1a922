"""Rates and envelopes of last-iterate residuals h_k = ||F(z_k)||^2 (spec "Claims")."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["H_FLOOR", "loglog_slope", "rate_envelope", "first_reach", "jackknife_se"]

H_FLOOR = 1e-300  # h_k is floored here before taking logs (an exact zero would give -inf)


def loglog_slope(values, k_lo: int, k_hi: int | None = None) -> float:
    """Least-squares slope of log h_k against log k over every integer k in [k_lo, k_hi].

    ``values[k]`` is h_k (index = iteration); ``k_hi`` defaults to the last index. h_k is floored at 1e-300.
    A fit on every integer k (not a log-spaced grid) is the rule of the spec: it weights late iterations more.

    Raises ValueError when k_lo < 1, the range holds fewer than two points or lies outside ``values``, or the
    values in the range are not finite (a diverged run has no rate).
    """
    h = np.asarray(values, dtype=float)
    if h.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {h.shape}")
    k_hi = h.size - 1 if k_hi is None else k_hi
    if isinstance(k_lo, bool) or int(k_lo) != k_lo or k_lo < 1:
        raise ValueError(f"k_lo must be an integer >= 1, got {k_lo!r}")
    if isinstance(k_hi, bool) or int(k_hi) != k_hi or k_hi > h.size - 1 or k_hi <= k_lo:
        raise ValueError(f"k_hi must be an integer in ({k_lo}, {h.size - 1}], got {k_hi!r}")
    seg = h[int(k_lo):int(k_hi) + 1]
    if not np.all(np.isfinite(seg)):
        raise ValueError("values must be finite over [k_lo, k_hi] (the run diverged?)")
    x = np.log(np.arange(int(k_lo), int(k_hi) + 1, dtype=float))
    y = np.log(np.maximum(seg, H_FLOOR))
    x = x - x.mean()
    return float(np.dot(x, y - y.mean()) / np.dot(x, x))


def rate_envelope(grad_norm_sq, L: float, dist0_sq: float) -> float:
    """E = max_{k >= 1} k^2 h_k / (L^2 ||z_0 - z*||^2), the constant of an O(1/k^2) bound that holds for
    every k. FEG's bound (Lee & Kim 2021) gives E <= 4; EAG-C's (Yoon & Ryu 2021), stated with (k+1)^2 and
    alpha = 1/(8L), gives E <= 256. Non-finite h_k (a diverged run) give inf."""
    if isinstance(L, bool) or not math.isfinite(float(L)) or float(L) <= 0:
        raise ValueError(f"L must be positive and finite, got {L!r}")
    if not math.isfinite(float(dist0_sq)) or float(dist0_sq) <= 0:
        raise ValueError(f"dist0_sq must be positive and finite, got {dist0_sq!r}")
    h = np.asarray(grad_norm_sq, dtype=float)
    if h.ndim != 1 or h.size < 2:
        raise ValueError("grad_norm_sq must be 1-D with at least two entries (k = 0 and k = 1)")
    k = np.arange(1, h.size, dtype=float)
    return float(np.max(k * k * h[1:]) / (float(L) ** 2 * float(dist0_sq)))


def first_reach(grad_norm_sq, eps: float) -> int | None:
    """Smallest k with h_k <= eps h_0, or None when it is never reached."""
    h = np.asarray(grad_norm_sq, dtype=float)
    hits = np.flatnonzero(h <= eps * h[0])
    return int(hits[0]) if hits.size else None


def jackknife_se(runs, statistic) -> float:
    """Leave-one-out jackknife standard error of ``statistic(mean over runs)``; ``runs`` has one row per run:
    se^2 = (S-1)/S sum_i (theta_{-i} - mean theta)^2, with theta_{-i} the statistic without run i."""
    runs = np.asarray(runs, dtype=float)
    S = runs.shape[0]
    if S < 2:
        return 0.0
    total = runs.sum(axis=0)
    thetas = np.array([statistic((total - runs[i]) / (S - 1)) for i in range(S)])
    return float(math.sqrt((S - 1) / S * np.sum((thetas - thetas.mean()) ** 2)))
