"""Data-driven radius of the Wasserstein ambiguity set (the release's simulation rule)."""
from __future__ import annotations

import numpy as np

from papers.dro_varclust.data import normalize_design

__all__ = ["radius_weights", "radius_statistic", "dro_radius"]

_CHUNK_ELEMENTS = 4_000_000  # normal draws held at once (32 MB), so p = 500 never needs a (1000, p, p) array


def radius_weights(S: np.ndarray) -> np.ndarray:
    r"""Weights w with :math:`T = \tfrac14 \sum_{i \ge j} w_{ij} \xi_{ij}^2` for the mirrored draw.

    With d = diag(S), :math:`\Upsilon_{ij} = d_i d_j + S_{ij}^2` and the symmetric Z built from the lower
    triangle (:math:`Z_{ij} = Z_{ji} = \sqrt{\Upsilon_{ij}}\,\xi_{ij}` for i >= j),
    :math:`T = \tfrac14\sum_{i,j} Z_{ij}^2/d_i` gives :math:`w_{ii} = \Upsilon_{ii}/d_i` and
    :math:`w_{ij} = \Upsilon_{ij}(1/d_i + 1/d_j)` for i > j (zero above the diagonal).
    """
    d = np.diag(S)
    ups = np.outer(d, d) + S ** 2
    inv = 1.0 / d
    w = np.tril(ups * (inv[:, None] + inv[None, :]), k=-1)
    w[np.diag_indices_from(w)] = np.diag(ups) * inv
    return w


def radius_statistic(xi: np.ndarray, S: np.ndarray) -> np.ndarray:
    r"""The statistic T of each draw, computed literally: :math:`Z = \sqrt{\Upsilon}\circ\xi`, keep the lower
    triangle (diagonal included) and mirror it, :math:`T = \tfrac14 \operatorname{tr}(Z^\top D^{-1} Z)`.

    ``xi`` has shape (p, p) or (draws, p, p). Reference for :func:`dro_radius` (which uses
    :func:`radius_weights`, the same number without building Z).
    """
    xi = np.asarray(xi, dtype=float)
    d = np.diag(S)
    Z = np.sqrt(np.outer(d, d) + S ** 2) * xi
    low = np.tril(Z)
    Z = low + np.swapaxes(np.tril(Z, k=-1), -1, -2)
    return 0.25 * np.sum(Z ** 2 / d[:, None], axis=(-2, -1))


def dro_radius(X, *, alpha: float = 0.05, n_sim: int = 1000, seed: int = 0) -> float:
    r"""Data-driven radius :math:`s = \sqrt{\delta}` of the DRO nodewise regression.

    On the normalised X (:func:`normalize_design`), S = ``np.cov(X.T)`` (denominator n - 1), and

    .. math:: s = \sqrt{ q_{1-\alpha}(T) / n },\qquad T = \tfrac14 \sum_{i,j} Z_{ij}^2 / S_{ii},

    with :math:`Z_{ij} = \sqrt{S_{ii}S_{jj} + S_{ij}^2}\,\xi_{ij}`, :math:`\xi_{ij}` iid N(0, 1) mirrored from the
    lower triangle, ``n_sim`` draws, and numpy's default (linear) quantile. Draws come from
    ``default_rng(SeedSequence(seed))`` in chunks. Reference: Wang, Xu & Zhou (ICML 2026), the authors' release.
    """
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if isinstance(n_sim, bool) or int(n_sim) != n_sim or n_sim < 1:
        raise ValueError(f"n_sim must be a positive integer, got {n_sim!r}")
    X = normalize_design(X)
    n, p = X.shape
    S = np.cov(X.T)
    w = radius_weights(S)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    chunk = max(1, _CHUNK_ELEMENTS // (p * p))
    T = np.empty(int(n_sim))
    for start in range(0, int(n_sim), chunk):
        size = min(chunk, int(n_sim) - start)
        xi = rng.standard_normal((size, p, p))
        T[start:start + size] = 0.25 * np.einsum("kij,ij->k", xi * xi, w)
    return float(np.sqrt(np.quantile(T, 1.0 - alpha) / n))
