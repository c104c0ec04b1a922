"""Spectral clustering of the DRO nodewise coefficients, and the clustering scores."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from papers.dro_varclust.data import normalize_design
from papers.dro_varclust.radius import dro_radius
from papers.dro_varclust.solver import solve_dro_nodewise

__all__ = ["VarClustResult", "check_K", "affinity_from_coefficients", "spectral_labels", "fit_dro_varclust",
           "clustering_scores"]


@dataclass
class VarClustResult:
    """Output of :func:`fit_dro_varclust`: ``labels`` (p,), coefficients ``B`` (p, p), the radius
    ``sqrt_delta`` and the DRO ``objective`` at B."""

    labels: np.ndarray
    B: np.ndarray
    sqrt_delta: float
    objective: float


def check_K(K, p: int) -> int:
    """``K`` as an int in [1, p]; ValueError naming K otherwise."""
    if isinstance(K, bool) or int(K) != K:
        raise ValueError(f"K must be an integer, got {K!r}")
    if not 1 <= K <= p:
        raise ValueError(f"K must lie in [1, p] = [1, {p}], got {K}")
    return int(K)


def affinity_from_coefficients(B) -> np.ndarray:
    r"""Symmetric affinity :math:`W = |B| + |B|^\top` of a square, finite coefficient matrix (ValueError
    naming B otherwise)."""
    B = np.asarray(B, dtype=float)
    if B.ndim != 2 or B.shape[0] != B.shape[1]:
        raise ValueError(f"B must be a square matrix, got shape {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("B contains NaN or Inf")
    A = np.abs(B)
    return A + A.T


def spectral_labels(W, K: int) -> np.ndarray:
    r"""The release's spectral step on a symmetric affinity W (p, p).

    :math:`L = D^{-1/2} W D^{-1/2}` with degrees :math:`d_i = \sum_j W_{ij} > 0`; the top-K right singular
    vectors E of L (``TruncatedSVD(K, n_iter=10, random_state=0)``), columns centred, orthonormalised by QR
    and scaled by sqrt(p) (no effect on k-means); labels = ``KMeans(K, n_init=10, random_state=0)`` on the rows.
    A variable of zero degree raises ValueError naming it.
    """
    from sklearn.cluster import KMeans
    from sklearn.decomposition import TruncatedSVD

    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be a square matrix, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W contains NaN or Inf")
    p = W.shape[0]
    K = check_K(K, p)
    degrees = W.sum(axis=1)
    isolated = np.flatnonzero(degrees <= 0)
    if isolated.size:
        raise ValueError(f"variable(s) {isolated[:10].tolist()}{' ...' if isolated.size > 10 else ''} have zero "
                         "affinity degree; spectral clustering needs every degree > 0")
    if K == 1:
        return np.zeros(p, dtype=int)
    inv_sqrt = 1.0 / np.sqrt(degrees)
    L = inv_sqrt[:, None] * W * inv_sqrt[None, :]
    algorithm = "randomized" if K < p else "arpack"
    n_comp = K if K < p else p - 1
    E = TruncatedSVD(n_components=n_comp, n_iter=10, random_state=0, algorithm=algorithm).fit(L).components_.T
    E = E - E.mean(axis=0, keepdims=True)
    Q = np.linalg.qr(E)[0] * np.sqrt(p)
    return KMeans(n_clusters=K, n_init=10, random_state=0).fit_predict(Q).astype(int)


def fit_dro_varclust(X, K: int, *, alpha: float = 0.05, n_sim: int = 1000, seed: int = 0,
                     method: str = "admm", **solver_options) -> VarClustResult:
    r"""Variable clustering by DRO nodewise regression (Wang, Xu & Zhou, ICML 2026).

    1. X <- :func:`normalize_design` (centred, unit-norm columns);
    2. s = :func:`dro_radius` (X, alpha, n_sim, seed);
    3. B solves :math:`\min_{\operatorname{diag}B=0} \tfrac1{\sqrt n}\|X - XB\|_F + s\|I - B\|_{op}`
       (:func:`solve_dro_nodewise`, ``method``; extra keywords such as ``warm_start`` go to the solver);
    4. labels = :func:`spectral_labels` (|B| + |B|^T, K).
    """
    X = normalize_design(X)
    K = check_K(K, X.shape[1])
    s = dro_radius(X, alpha=alpha, n_sim=n_sim, seed=seed)
    sol = solve_dro_nodewise(X, s, method=method, **solver_options)
    labels = spectral_labels(affinity_from_coefficients(sol.B), K)
    return VarClustResult(labels=labels, B=sol.B, sqrt_delta=s, objective=sol.objective)


def _check_labels(name: str, labels) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of labels, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
            raise ValueError(f"{name} must hold integer labels")
        arr = arr.astype(int)
    if arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative integer labels")
    return arr


def clustering_scores(true_labels, pred_labels) -> dict:
    r"""Accuracy and adjusted mutual information of a predicted partition.

    accuracy = (1/p) max over one-to-one matchings of predicted to true labels of the matched counts
    (``linear_sum_assignment`` on the negated confusion matrix, square of size max label + 1, so more predicted
    than true clusters is allowed); AMI = ``adjusted_mutual_info_score(true, pred, average_method="max")``.
    """
    from scipy.optimize import linear_sum_assignment
    from sklearn.metrics import adjusted_mutual_info_score

    t = _check_labels("true_labels", true_labels)
    q = _check_labels("pred_labels", pred_labels)
    if t.size != q.size:
        raise ValueError(f"true_labels and pred_labels differ in length ({t.size} vs {q.size})")
    size = int(max(t.max(), q.max())) + 1
    confusion = np.zeros((size, size), dtype=np.int64)
    np.add.at(confusion, (q, t), 1)
    rows, cols = linear_sum_assignment(-confusion)
    accuracy = confusion[rows, cols].sum() / t.size
    ami = adjusted_mutual_info_score(t, q, average_method="max")
    return {"accuracy": float(accuracy), "ami": float(ami)}
