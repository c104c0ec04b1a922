"""Input checks shared by the modules of this paper (ValueError messages name the argument)."""
from __future__ import annotations

import math
import numbers

import numpy as np


def check_matrix(X, name: str = "X", *, min_rows: int = 2, min_cols: int = 2) -> np.ndarray:
    """``X`` as a finite 2-D float64 array with at least ``min_rows`` rows and ``min_cols`` columns."""
    arr = np.asarray(X, dtype=float)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} rows (n >= {min_rows}), got {arr.shape[0]}")
    if arr.shape[1] < min_cols:
        raise ValueError(f"{name} must have at least {min_cols} columns (d >= {min_cols}), got {arr.shape[1]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or Inf")
    return arr


def check_xy(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Finite ``X`` (n, d) and ``y`` (n,) with n >= 2 and d >= 2."""
    X = check_matrix(X, "X")
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array, got shape {y.shape}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y has length {y.shape[0]} but X has {X.shape[0]} rows")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or Inf")
    return X, y


def check_eps(eps) -> float:
    """Contamination fraction ``eps`` in [0, 0.5)."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (0.0 <= float(eps) < 0.5):
        raise ValueError(f"eps must be a number in [0, 0.5), got {eps!r}")
    return float(eps)


def check_int(value, name: str, minimum: int) -> int:
    """``value`` as an int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_positive(value, name: str, *, allow_zero: bool = False) -> float:
    """``value`` as a finite float > 0 (>= 0 with ``allow_zero``)."""
    ok = (not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(float(value))
          and (float(value) >= 0.0 if allow_zero else float(value) > 0.0))
    if not ok:
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return float(value)
