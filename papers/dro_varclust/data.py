"""Preprocessing, the multi-factor block model of the release, and the exploratory digits variables."""
from __future__ import annotations

import numpy as np

__all__ = ["check_design", "normalize_design", "make_block_factor_data", "load_digits_variables"]


def check_design(X, *, name: str = "X", min_rows: int = 3, min_cols: int = 2) -> np.ndarray:
    """``X`` as a float64 array after checking it is 2-D, finite, with at least ``min_rows`` rows and
    ``min_cols`` columns; ValueError naming ``name`` otherwise."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n observations x p variables), got {X.ndim} dimension(s)")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or Inf")
    n, p = X.shape
    if n < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows (observations), got n = {n}")
    if p < min_cols:
        raise ValueError(f"{name} needs at least {min_cols} columns (variables), got p = {p}")
    return X


def normalize_design(X) -> np.ndarray:
    r"""Centre every column and scale it to unit Euclidean norm.

    .. math:: \tilde x_j = (x_j - \bar x_j \mathbf 1) / \|x_j - \bar x_j \mathbf 1\|_2

    (unit column norms, not unit variance; the release's preprocessing). Idempotent. A column that is
    constant (zero norm after centring) raises ValueError naming the columns.
    """
    X = check_design(X)
    Xc = X - X.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(Xc, axis=0)
    scale = np.abs(X).max(axis=0)
    constant = np.flatnonzero(norms <= 1e-12 * np.sqrt(X.shape[0]) * np.maximum(scale, np.finfo(float).tiny))
    if constant.size:
        raise ValueError(f"X has constant column(s) {constant[:10].tolist()}"
                         f"{' ...' if constant.size > 10 else ''} (zero norm after centring)")
    return Xc / norms


def _check_range(name: str, rng, lo_bound: float, hi_bound: float | None) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in rng)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high), got {rng!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{name} must be finite, got {rng!r}")
    if lo > hi:
        raise ValueError(f"{name} has low > high: {rng!r}")
    if lo < lo_bound or (hi_bound is not None and hi > hi_bound):
        where = f"[{lo_bound}, {hi_bound}]" if hi_bound is not None else f">= {lo_bound}"
        raise ValueError(f"{name} must lie in {where}, got {rng!r}")
    return lo, hi


def _unit_columns(A: np.ndarray) -> np.ndarray:
    return A / np.linalg.norm(A, axis=0)


def make_block_factor_data(n: int, p: int, K: int, *, rho_range=(0.0, 0.5), noise_range=(0.0, 0.5),
                           seed: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Multi-factor block model of the release (numpy legacy ``RandomState``, same draw order).

    .. math:: X_j = \sqrt{\rho_j}\, g + F\, L_j^\top + \sqrt{\nu_j}\, e_j,\qquad
              L_{j,\mathrm{idx}_k} = \sqrt{1-\rho_j}\, \ell_j,\ \|\ell_j\| = \|g\| = \|F_{:,i}\| = \|e_j\| = 1,

    with a shared pool of m = min(n, p) factors F, each cluster k using r_k ~ U{1, ..., min(size_k, n) - 1}
    of them, rho_j ~ U(rho_range), nu_j ~ U(noise_range). Cluster sizes are Multinomial(p, 1/K) from their
    own ``RandomState(seed)``; the rest from a fresh ``RandomState(seed)`` in the order: F, g, rho, per
    cluster (r_k, idx_k, loadings in variable order), nu, E. Degenerate ranges still consume their draws.

    Returns ``(normalize_design(X), labels)`` with contiguous labels ``repeat(arange(K), sizes)``.
    """
    for name, v in (("n", n), ("p", p), ("K", K)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    n, p, K = int(n), int(p), int(K)
    if n < 3:
        raise ValueError(f"n must be at least 3, got {n}")
    if K > p:
        raise ValueError(f"K = {K} clusters exceed p = {p} variables")
    rho_lo, rho_hi = _check_range("rho_range", rho_range, 0.0, 1.0)
    nz_lo, nz_hi = _check_range("noise_range", noise_range, 0.0, None)
    sizes = np.random.RandomState(seed).multinomial(p, np.ones(K) / K)
    if np.any(sizes == 1):
        raise ValueError(f"seed {seed} gives a cluster of size 1 (sizes {sizes.tolist()}); the model needs "
                         "sizes >= 2: change seed, p or K")
    rs = np.random.RandomState(seed)
    m = min(n, p)
    factors = _unit_columns(rs.randn(n, m))
    g = rs.randn(n)
    g /= np.linalg.norm(g)
    rho = rs.uniform(rho_lo, rho_hi, size=p)
    loadings = np.zeros((p, m))
    start = 0
    for size in sizes:
        if size == 0:
            continue
        r_k = rs.randint(1, min(size, n))
        idx = rs.choice(np.arange(m), size=r_k, replace=False)
        for j in range(start, start + size):
            ell = rs.randn(r_k)
            loadings[j, idx] = np.sqrt(1.0 - rho[j]) * ell / np.linalg.norm(ell)
        start += size
    noise_level = rs.uniform(nz_lo, nz_hi, size=p)
    E = _unit_columns(rs.randn(n, p)) * np.sqrt(noise_level)[None, :]
    X = g[:, None] * np.sqrt(rho)[None, :] + factors @ loadings.T + E
    return normalize_design(X), np.repeat(np.arange(K), sizes)


def load_digits_variables(per_class: int = 30, digits=(0, 1, 2, 3, 4)) -> tuple[np.ndarray, np.ndarray]:
    """Exploratory set [ours]: variables = the first ``per_class`` images of each digit in ``digits``
    (scikit-learn's bundled ``load_digits``), observations = the 64 pixels, constant pixels dropped.

    Returns ``(normalize_design(X), labels)``; X has shape (pixels kept, per_class * len(digits)).
    """
    from sklearn.datasets import load_digits

    data = load_digits()
    cols, labels = [], []
    for k, digit in enumerate(digits):
        idx = np.flatnonzero(data.target == digit)[:per_class]
        if idx.size < per_class:
            raise ValueError(f"per_class = {per_class} exceeds the {idx.size} images of digit {digit}")
        cols.append(data.data[idx].T)
        labels.append(np.full(per_class, k))
    X = np.hstack(cols)
    X = X[X.std(axis=1) > 0]
    return normalize_design(X), np.concatenate(labels)
