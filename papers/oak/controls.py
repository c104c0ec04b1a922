"""Negative controls of the oak claims that need their own model (the others live in :func:`testbed.compare`).

``linear_pixel_control``: the digits discrepancy claims with the pretraining switched off. A linear model on the
raw pixels, f(x) = <w, x> with w_0 = 0, fine-tuned by full-batch Adam, and its OAK-E1 prediction (kernel
X diag(P_T0) X^T, v_hat from T0 real Adam steps). A rotation by 90 degrees of an 8x8 image is a permutation of its
pixels, Adam acts coordinate-wise and a linear model has no features of its own, so the alignment of the pixel
kernel and the OAK-E1 error are the same for the rotated and the upright task: without pretrained features the
rotation is no discrepancy. Every sum over pixels is taken in a canonical (sorted) order, so that the invariance
holds exactly in floating point and not only up to rounding (a strict "<" between two equal numbers must not be
decided by the order of a sum).
"""
from __future__ import annotations

import numpy as np

from papers.oak.dynamics import dynamics_multi_lr
from papers.oak.metrics import kernel_alignment

__all__ = ["canonical_rowdot", "canonical_kernel", "canonical_coldot", "linear_pixel_control"]


def _sorted_sum(A) -> np.ndarray:
    """Sum over the last axis in sorted order, on a C-contiguous copy (numpy's reduction order depends on the
    memory layout, so equal rows must also be laid out alike to give equal sums)."""
    return np.ascontiguousarray(np.sort(A, axis=-1)).sum(axis=-1)


def canonical_rowdot(A, w) -> np.ndarray:
    """sum_k A_ik w_k per row, the products summed in sorted order (invariant under a joint permutation of k)."""
    A, w = np.asarray(A, dtype=np.float64), np.asarray(w, dtype=np.float64).reshape(-1)
    if A.ndim != 2 or A.shape[1] != w.size:
        raise ValueError(f"A must be (n, {w.size}), got shape {A.shape}")
    return _sorted_sum(A * w)


def canonical_coldot(A, r) -> np.ndarray:
    """sum_i A_ik r_i per column k, summed in sorted order (the same arithmetic for every column)."""
    A, r = np.asarray(A, dtype=np.float64), np.asarray(r, dtype=np.float64).reshape(-1)
    if A.ndim != 2 or A.shape[0] != r.size:
        raise ValueError(f"A must be ({r.size}, p), got shape {A.shape}")
    return _sorted_sum((A * r[:, None]).T)


def canonical_kernel(X1, X2, precond=None) -> np.ndarray:
    """K_ij = sum_k X1_ik P_k X2_jk with the products summed in sorted order (P = 1 when ``precond`` is None)."""
    X1, X2 = np.asarray(X1, dtype=np.float64), np.asarray(X2, dtype=np.float64)
    if X1.ndim != 2 or X2.ndim != 2 or X1.shape[1] != X2.shape[1]:
        raise ValueError(f"X1 and X2 must be (n1, p) and (n2, p), got {X1.shape} and {X2.shape}")
    P = np.ones(X1.shape[1]) if precond is None else np.asarray(precond, dtype=np.float64).reshape(-1)
    if P.size != X1.shape[1]:
        raise ValueError(f"precond must have length p = {X1.shape[1]}, got {P.size}")
    return _sorted_sum(X1[:, None, :] * (X2 * P)[None, :, :])


def linear_pixel_control(x, y_train, n_train: int, lr: float, T_max: int, T0: int, betas=(0.9, 0.999),
                         eps: float = 1e-8) -> dict:
    """Alignment of the pixel kernel and OAK-E1's relative test error at T_max for a linear model on pixels.

    ``x`` (n, p): training rows first (``n_train``), then test rows; the loss is (f - y)^2 / 2 averaged over the
    training rows, w_0 = 0. Returns {"alignment", "relerr_e1"}; relerr_e1 = ||f_FT - f_E1|| / ||f_FT - f_0|| on the
    test rows at T_max (inf when the model did not move).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y_train, dtype=np.float64).reshape(-1)
    n = int(n_train)
    if x.ndim != 2 or not 1 <= n < x.shape[0] or y.size != n:
        raise ValueError(f"need x (n, p) with 1 <= n_train < n and y of length n_train; got {x.shape}, {n}, {y.size}")
    if not 1 <= int(T0) <= int(T_max):
        raise ValueError(f"need 1 <= T0 <= T_max, got T0 = {T0}, T_max = {T_max}")
    X_tr, X_te = x[:n], x[n:]
    b1, b2 = betas
    w, m, v = np.zeros(x.shape[1]), np.zeros(x.shape[1]), np.zeros(x.shape[1])
    v_T0 = None
    for t in range(1, int(T_max) + 1):
        g = canonical_coldot(X_tr, canonical_rowdot(X_tr, w) - y) / n
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        if t == int(T0):
            v_T0 = v / (1 - b2 ** t)
    f_ft = canonical_rowdot(X_te, w)
    P = 1.0 / (np.sqrt(v_T0) + eps)
    K = canonical_kernel(x, X_tr, P)
    _, _, ev = dynamics_multi_lr(K[:n], K[n:], np.zeros(n), np.zeros(len(X_te)), y, [lr], int(T_max),
                                 checkpoints=[int(T_max)])
    den = np.linalg.norm(f_ft)
    err = float(np.linalg.norm(f_ft - ev[-1][:, 0]) / den) if den > 0 else float("inf")
    return {"alignment": kernel_alignment(canonical_kernel(X_tr, X_tr), y), "relerr_e1": err}
