"""Input validation shared by the modules of this paper (ValueError messages name the argument)."""
from __future__ import annotations

import math
import numbers

import numpy as np

DIVERGENCES = ("tv", "kl", "chi2")
METHODS = ("fast", "brute")


def check_vr(v, r) -> tuple[np.ndarray, np.ndarray]:
    """Preference weights ``v > 0`` and revenues ``r >= 0`` as finite 1-D float arrays of equal length."""
    v = np.asarray(v, dtype=float)
    r = np.asarray(r, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"v must be 1-D, got shape {v.shape}")
    if r.ndim != 1:
        raise ValueError(f"r must be 1-D, got shape {r.shape}")
    if v.size == 0:
        raise ValueError("v must hold at least one item")
    if v.shape != r.shape:
        raise ValueError(f"v and r must have the same length, got {v.size} and {r.size}")
    if not np.all(np.isfinite(v)):
        raise ValueError("v must be finite (no NaN or Inf)")
    if not np.all(np.isfinite(r)):
        raise ValueError("r must be finite (no NaN or Inf)")
    if np.any(v <= 0):
        raise ValueError("v must be positive (preference weights v_i > 0)")
    if np.any(r < 0):
        raise ValueError("r must be non-negative (revenues r_i >= 0)")
    return v, r


def check_assortment(S, n_items: int) -> np.ndarray:
    """``S`` as a sorted int array of distinct indices in ``0..n_items-1``."""
    if isinstance(S, (str, bytes)) or not hasattr(S, "__iter__"):
        raise ValueError(f"S must be an iterable of item indices, got {S!r}")
    items = list(S.tolist() if isinstance(S, np.ndarray) else S)
    for i in items:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (numbers.Integral, np.integer)):
            raise ValueError(f"S must hold integer item indices, got {i!r}")
        if not 0 <= int(i) < n_items:
            raise ValueError(f"S holds index {int(i)} outside 0..{n_items - 1}")
    if len(set(int(i) for i in items)) != len(items):
        raise ValueError(f"S must not hold duplicate indices, got {sorted(int(i) for i in items)}")
    return np.array(sorted(int(i) for i in items), dtype=int)


def check_divergence(divergence) -> str:
    if divergence not in DIVERGENCES:
        raise ValueError(f"divergence must be one of {list(DIVERGENCES)}, got {divergence!r}")
    return divergence


def check_rho(rho, divergence: str) -> float:
    """Radius ``rho >= 0`` (finite); for TV also ``rho <= 1``."""
    if isinstance(rho, (bool, np.bool_)) or not isinstance(rho, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"rho must be a real number, got {rho!r}")
    rho = float(rho)
    if math.isnan(rho) or math.isinf(rho) or rho < 0:
        raise ValueError(f"rho must be finite and non-negative, got {rho}")
    if divergence == "tv" and rho > 1:
        raise ValueError(f"rho must be at most 1 for the TV ball (TV distance is at most 1), got {rho}")
    return rho


def check_capacity(capacity) -> int | None:
    """``None`` (no capacity) or a positive int."""
    if capacity is None:
        return None
    if isinstance(capacity, (bool, np.bool_)) or not isinstance(capacity, (numbers.Integral, np.integer)):
        raise ValueError(f"capacity must be a positive int or None, got {capacity!r}")
    if capacity < 1:
        raise ValueError(f"capacity must be a positive int or None, got {capacity}")
    return int(capacity)


def check_method(method) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    return method
