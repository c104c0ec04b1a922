"""Function-space errors and kernel-regime diagnostics (alignment, drift)."""
from __future__ import annotations

import numpy as np

__all__ = ["function_space_error", "relerr_columns", "kernel_alignment", "kernel_drift", "spearman"]


def function_space_error(f_ft, f_kernel, f0) -> dict:
    """relerr = ||f_FT - f_K|| / ||f_FT - f_0||, agreement = mean(sign f_K == sign f_FT) on one set."""
    f_ft = np.asarray(f_ft, dtype=np.float64)
    f_kernel = np.asarray(f_kernel, dtype=np.float64)
    f0 = np.asarray(f0, dtype=np.float64)
    if not (f_ft.shape == f_kernel.shape == f0.shape):
        raise ValueError(f"f_ft, f_kernel and f0 must have the same shape, got {f_ft.shape}, {f_kernel.shape}, "
                         f"{f0.shape}")
    denom = np.linalg.norm(f_ft - f0)
    if denom == 0:
        raise ValueError("f_ft equals f0 everywhere: the relative error has a zero denominator")
    with np.errstate(over="ignore", invalid="ignore"):
        rel = float(np.linalg.norm(f_ft - f_kernel) / denom)
    if not np.isfinite(rel):
        rel = float("inf")
    return {"relerr": rel, "agreement": float(np.mean(np.sign(f_kernel) == np.sign(f_ft)))}


def relerr_columns(f_ft, F_kernel, f0) -> np.ndarray:
    """relerr of every column of F_kernel (m, L) against f_ft (m,); non-finite columns give inf."""
    denom = np.linalg.norm(np.asarray(f_ft) - np.asarray(f0))
    if denom == 0:
        raise ValueError("f_ft equals f0 everywhere: the relative error has a zero denominator")
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.linalg.norm(np.asarray(F_kernel) - np.asarray(f_ft)[:, None], axis=0) / denom
    return np.where(np.isfinite(err), err, np.inf)


def kernel_alignment(K, y) -> float:
    """Kernel-target alignment A(K, y) = y^T K y / (||K||_F ||y||^2) (Cristianini et al. 2002)."""
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if K.shape != (y.size, y.size):
        raise ValueError(f"K must be ({y.size}, {y.size}), got {K.shape}")
    return float(y @ K @ y / (np.linalg.norm(K) * (y @ y)))


def kernel_drift(K0, KT) -> float:
    """d(K_0, K_T) = 1 - <K_0, K_T>_F / (||K_0||_F ||K_T||_F)."""
    K0, KT = np.asarray(K0, dtype=np.float64), np.asarray(KT, dtype=np.float64)
    if K0.shape != KT.shape:
        raise ValueError(f"K0 and KT must have the same shape, got {K0.shape} and {KT.shape}")
    return float(1.0 - np.sum(K0 * KT) / (np.linalg.norm(K0) * np.linalg.norm(KT)))


def spearman(x, y) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)
