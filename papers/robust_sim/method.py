"""Robust recovery of a single-index model: robust spectral initialisation, then robust gradient descent.

Reconstruction of the two-phase algorithm of Das, Chatterjee & Batra (ICML 2026, arXiv 2605.29497); the
filtering routines follow the spectral filter of Diakonikolas et al. (2017, 2019), robust gradient estimation of
Prasad et al. (2018) and robust gradient descent for phase retrieval of Buna & Rebeschini (AISTATS 2025).

Notation: X (n, d) with rows x_i, responses y (n,), u_i = y_i x_i, G (n, d) the per-sample gradients.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shared.results import NonFiniteError

from ._validate import check_eps, check_int, check_matrix, check_positive, check_xy
from numpy.polynomial.hermite_e import hermegauss

from .links import get_link

__all__ = ["SIMFit", "robust_mean", "robust_spectral_init", "fit_robust_sim", "trimmed_loss", "estimation_error",
           "sin_angle", "gradient_matrix", "clean_score_moments", "clean_score_threshold", "INIT_FILTERS"]

INIT_FILTERS = ("threshold", "budget")

_POWER_MAX_ITER = 30
_POWER_TOL = 1e-6


@dataclass
class SIMFit:
    """Result of :func:`fit_robust_sim`: final ``beta`` (d,), initial ``beta_init`` (d,) and ``grad_norms``
    (n_iter,), the norm of the (robust) gradient used at each step."""

    beta: np.ndarray
    beta_init: np.ndarray
    grad_norms: np.ndarray



def removal_budget(n: int, eps: float) -> int:
    """ceil(2 eps n): how many of n rows a filter may remove; ValueError when that leaves none."""
    budget = math.ceil(2.0 * eps * n)
    if budget >= n:
        raise ValueError(f"G has {n} rows, too few for the removal budget ceil(2 eps n) = {budget} (eps={eps})")
    return budget

def _drop_order(scores: np.ndarray, kept_idx: np.ndarray, count: int) -> np.ndarray:
    """Original indices of the ``count`` highest scores among the kept rows; ties drop the lower index first
    (a stable sort of -score over rows listed in increasing index order)."""
    order = np.argsort(-scores, kind="stable")[:count]
    return kept_idx[order]


def _robust_mean_mask(G: np.ndarray, eps: float) -> np.ndarray:
    """Kept-row mask of the spectral filter of :func:`robust_mean` (inputs already validated)."""
    n, d = G.shape
    keep = np.ones(n, dtype=bool)
    budget = math.ceil(2.0 * eps * n)
    if budget == 0:
        return keep
    batch = max(1, math.ceil(budget / 10))
    v = np.full(d, 1.0 / math.sqrt(d))
    removed = 0
    while removed < budget:
        kept_idx = np.flatnonzero(keep)
        C = G[kept_idx]
        C -= C.mean(axis=0)
        # power iteration on the kept covariance C^T C / |K| through implicit products: O(|K| d) per step
        for _ in range(_POWER_MAX_ITER):
            w = C.T @ (C @ v)
            norm = np.linalg.norm(w)
            if norm == 0.0:
                break
            w /= norm
            delta = np.linalg.norm(w - v)
            v = w
            if delta < _POWER_TOL:
                break
        scores = np.square(C @ v)
        count = min(batch, budget - removed)
        keep[_drop_order(scores, kept_idx, count)] = False
        removed += count
    return keep


def robust_mean(G: np.ndarray, eps: float) -> np.ndarray:
    """Filtered mean of the rows of ``G`` (n, d) when an ``eps`` fraction of them is adversarial.

    Spectral filter [reconstructed; Diakonikolas et al. 2017, Prasad et al. 2018]: removal budget
    m = ceil(2 eps n), batch b = max(1, ceil(m / 10)), kept set K = all rows. While fewer than m rows are removed:
    mu = mean_K g_i; v = top eigenvector of Sigma_K = (1/|K|) sum_K (g_i - mu)(g_i - mu)^T, by power iteration
    with implicit products C^T (C v) (at most 30 steps, stop when ||v_new - v|| < 1e-6, warm start from the
    previous v, first start the normalised all-ones vector); score s_i = ((g_i - mu)^T v)^2; drop the
    min(b, m - removed) highest-scoring kept rows (ties: lower row index first). Returns mean_K g_i.
    Cost O(n d) per power step. ``eps = 0`` returns exactly ``G.mean(axis=0)``.
    """
    G = check_matrix(G, "G", min_rows=2, min_cols=1)
    eps = check_eps(eps)
    n = G.shape[0]
    budget = removal_budget(n, eps)
    if budget == 0:
        return G.mean(axis=0)
    return G[_robust_mean_mask(G, eps)].mean(axis=0)


def trimmed_loss(X: np.ndarray, y: np.ndarray, w: np.ndarray, link: str, eps: float) -> float:
    """Sum of the ceil((1 - 2 eps) n) smallest squared residuals (y_i - f(x_i^T w))^2."""
    f = get_link(link).f
    r2 = np.square(y - f(X @ w))
    keep = math.ceil((1.0 - 2.0 * eps) * len(y))
    return float(np.sort(r2)[:keep].sum())


def _top_eigvec(M: np.ndarray) -> np.ndarray:
    """Unit top eigenvector of the symmetric ``M`` (eigh)."""
    _, vecs = np.linalg.eigh(M)
    return vecs[:, -1]


def clean_score_moments(link: str, sigma: float, noise_df: float = 5.0, *, n_theta: int = 91,
                        n_nodes: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of the clean score tau = (m^T u)^2, u = y x, for unit directions m at angle
    theta in [0, pi/2] from beta* (returned over ``n_theta`` equally spaced angles, theta = 0 first).

    With m = cos(theta) beta* + sin(theta) w (w a unit vector orthogonal to beta*), z = x^T beta*, g = x^T w
    independent N(0, 1) and y = f(z) + zeta:
      E tau   = cos^2 E[y^2 z^2] + sin^2 E[y^2]                         (= E y^2 + ESC cos^2),
      E tau^2 = E[y^4 (cos^4 z^4 + 6 cos^2 sin^2 z^2 + 3 sin^4)],
    E[y^4 | z] = f^4 + 6 f^2 sigma^2 + E zeta^4 with E zeta^4 = sigma^4 (3 + 6 / (nu - 4)) for the scaled
    Student-t noise (nu = ``noise_df`` > 4; 3 sigma^4 for Gaussian noise, nu = inf). Gauss-Hermite quadrature in z.
    """
    lk = get_link(link)
    sigma = check_positive(sigma, "sigma", allow_zero=True)
    if not (isinstance(noise_df, (int, float)) and not isinstance(noise_df, bool) and noise_df > 4):
        raise ValueError(f"noise_df must exceed 4 (finite fourth moment; inf allowed) for the score variance, "
                         f"got {noise_df!r}")
    z, wts = hermegauss(int(n_nodes))
    wts = wts / math.sqrt(2.0 * math.pi)
    f = lk.f(z)
    m4 = sigma ** 4 * (3.0 + (6.0 / (noise_df - 4.0) if math.isfinite(noise_df) else 0.0))
    ey2 = f * f + sigma ** 2
    ey4 = f ** 4 + 6.0 * f * f * sigma ** 2 + m4
    theta = np.linspace(0.0, math.pi / 2, int(n_theta))
    c2, s2 = np.cos(theta) ** 2, np.sin(theta) ** 2
    z2 = z * z
    mean = c2 * float(wts @ (ey2 * z2)) + s2 * float(wts @ ey2)
    second = (c2 * c2 * float(wts @ (ey4 * z2 * z2)) + 6.0 * c2 * s2 * float(wts @ (ey4 * z2))
              + 3.0 * s2 * s2 * float(wts @ ey4))
    return mean, np.sqrt(np.maximum(second - mean * mean, 0.0))


def clean_score_threshold(link: str, sigma: float, eps: float, noise_df: float = 5.0) -> float:
    """Score threshold of the stability filter: t = max_theta (E tau_theta + sd(tau_theta) / sqrt(eps)).

    By Cantelli's inequality a clean row exceeds t along any fixed direction with probability at most
    eps / (1 + eps), so the filter removes O(eps n) clean rows at most, while every surviving corrupted row adds
    at most t / n to the second moment along the top direction: eps t = O(eps + sqrt(eps)) in all. Then the
    kept second moment's top direction m has v^T M v >= (1 - O(sqrt eps)) lambda_1(M), and
    sin^2 angle(m, beta*) = O(sqrt(eps)) / ESC, i.e. the O(eps^{1/4}) error of the initialisation."""
    eps = check_eps(eps)
    if eps == 0:
        return math.inf
    mean, sd = clean_score_moments(link, sigma, noise_df)
    return float(np.max(mean + sd / math.sqrt(eps)))


def _threshold_filter_keep(U: np.ndarray, t: float) -> np.ndarray:
    """Kept-row mask of the stability filter: repeat {v = top eigenvector of the kept second moment
    (1/|K|) sum_K u_i u_i^T; drop every kept row with (v^T u_i)^2 > t} until no kept row exceeds t."""
    keep = np.ones(U.shape[0], dtype=bool)
    while True:
        Uk = U[keep]
        v = _top_eigvec(Uk.T @ Uk)
        bad = keep & (np.square(U @ v) > t)
        if not bad.any():
            return keep
        keep &= ~bad
        if keep.sum() < 2:
            raise ValueError("the stability filter removed all rows: sigma or noise_df is far below the data's")


def _budget_filter_keep(U: np.ndarray, budget: int) -> np.ndarray:
    """Kept-row mask of the fixed-budget filter: drop the highest (v^T u_i)^2 in batches of max(1, budget // 25)
    until ``budget`` rows are removed (v re-estimated after every batch)."""
    n = U.shape[0]
    S = U.T @ U  # unnormalised kept second moment, downdated as rows are removed
    keep = np.ones(n, dtype=bool)
    batch = max(1, budget // 25)
    removed = 0
    while removed < budget:
        v = _top_eigvec(S)
        kept_idx = np.flatnonzero(keep)
        scores = np.square(U[kept_idx] @ v)
        count = min(batch, budget - removed)
        drop = _drop_order(scores, kept_idx, count)
        keep[drop] = False
        S -= U[drop].T @ U[drop]
        removed += count
    return keep


def robust_spectral_init(X, y, eps: float, *, link: str | None = None, sigma: float | None = None,
                         noise_df: float = 5.0, init_filter: str = "threshold",
                         truncate_quantile: float | None = None) -> np.ndarray:
    """Robust spectral estimate of beta* (unit vector) from the second moment M = E[y^2 x x^T].

    By the second-order Stein identity M = (E f^2 + sigma^2) I + ESC beta* beta*^T, so beta* is the top
    eigenvector when ESC = E[f(Z)^2 (Z^2 - 1)] > 0. Rows u_i = y_i x_i (after the optional truncation
    y <- sign(y) min(|y|, tau), tau = quantile_q(|y|)). Filters (``init_filter``):

    - ``"threshold"`` (default; a stability filter with a data-driven stopping rule, after the robust-PCA
      filters of Diakonikolas et al. 2017/2023): repeat {v = top eigenvector of the kept second moment; remove
      every kept row with (v^T u_i)^2 > t} until no kept row exceeds t, with t = :func:`clean_score_threshold`
      (link, sigma, eps), derived from the clean mean and variance of the score. Needs ``link`` and ``sigma``.
      On clean data it removes only the rare rows beyond the clean tail bound, so the spike survives.
    - ``"budget"`` (the first reconstruction, kept as an ablation): remove m = ceil(1.2 eps n) rows with the
      largest (v^T u_i)^2 in batches of max(1, floor(m / 25)); on clean data these carry the ESC spike.

    Returns the top eigenvector of the final kept second moment. ``eps = 0`` means no filtering. Sign: for a
    non-even ``link`` the one of +v, -v with the smaller trimmed loss (the sum of the ceil((1 - 2 eps) n) smallest
    (y_i - f(x_i^T w))^2); otherwise v with its largest-magnitude entry positive (the sign is not identifiable).
    """
    X, y = check_xy(X, y)
    eps = check_eps(eps)
    if init_filter not in INIT_FILTERS:
        raise ValueError(f"init_filter must be one of {list(INIT_FILTERS)}, got {init_filter!r}")
    even = True
    if link is not None:
        even = get_link(link).even
    n = X.shape[0]
    y_used = y
    if truncate_quantile is not None:
        q = truncate_quantile
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not (0.0 < q <= 1.0):
            raise ValueError(f"truncate_quantile must be in (0, 1], got {q!r}")
        tau = np.quantile(np.abs(y), q)
        y_used = np.sign(y) * np.minimum(np.abs(y), tau)
    U = y_used[:, None] * X
    keep = None
    if eps > 0 and init_filter == "budget":
        budget = math.ceil(1.2 * eps * n)
        if budget > n - 2:
            raise ValueError(f"X has {n} rows, too few for the removal budget ceil(1.2 eps n) = {budget} "
                             f"(eps={eps})")
        keep = _budget_filter_keep(U, budget)
    elif eps > 0:
        if link is None or sigma is None:
            raise ValueError("the threshold filter needs the link and sigma (its threshold is derived from the "
                             "clean score variance); pass link= and sigma=, or init_filter='budget'")
        keep = _threshold_filter_keep(U, clean_score_threshold(link, sigma, eps, noise_df))
    Uk = U if keep is None else U[keep]
    v = _top_eigvec(Uk.T @ Uk)
    v = v / np.linalg.norm(v)
    if even:
        return v if v[np.argmax(np.abs(v))] >= 0 else -v
    return v if trimmed_loss(X, y, v, link, eps) <= trimmed_loss(X, y, -v, link, eps) else -v


def gradient_matrix(X: np.ndarray, y: np.ndarray, w: np.ndarray, link: str) -> np.ndarray:
    """Per-sample gradients of (f(x_i^T w) - y_i)^2 / 2: rows g_i = (f(z_i) - y_i) f'(z_i) x_i, z = X w."""
    lk = get_link(link)
    z = X @ w
    return ((lk.f(z) - y) * lk.df(z))[:, None] * X


def fit_robust_sim(X, y, link: str, eps: float, *, eta: float = 0.5, n_iter: int = 200,
                   init: np.ndarray | None = None, sigma: float | None = None, noise_df: float = 5.0,
                   init_filter: str = "threshold") -> SIMFit:
    """Robust gradient descent on the squared loss L(w) = (1/2n) sum (f(x_i^T w) - y_i)^2.

    w_0 = :func:`robust_spectral_init` (X, y, eps, link=link, sigma=sigma, noise_df=noise_df,
    init_filter=init_filter) unless ``init`` is given; then for t = 1..n_iter:
    w <- w - eta * robust_mean(G(w), eps), G(w) the per-sample gradients of :func:`gradient_matrix`.
    w is never renormalised (the link fixes the scale, so w converges to beta* itself). Near beta* the
    population Hessian is H* = E f'(Z)^2 (I - beta* beta*^T) + E f'(Z)^2 Z^2 beta* beta*^T, so eta < 2/lambda_max(H*)
    gives local linear convergence. ``eps = 0`` is plain gradient descent from the plain spectral estimate.
    A NaN or Inf during the iterations raises :class:`shared.results.NonFiniteError` naming the step.
    """
    X, y = check_xy(X, y)
    get_link(link)
    eps = check_eps(eps)
    eta = check_positive(eta, "eta")
    n_iter = check_int(n_iter, "n_iter", 0)
    n, d = X.shape
    if math.ceil(2.0 * eps * n) >= n:
        raise ValueError(f"X has {n} rows, too few for the removal budget ceil(2 eps n) (eps={eps})")
    if init is None:
        w = robust_spectral_init(X, y, eps, link=link, sigma=sigma, noise_df=noise_df, init_filter=init_filter)
    else:
        w = np.array(init, dtype=float)
        if w.shape != (d,):
            raise ValueError(f"init must have shape ({d},), got {w.shape}")
        if not np.all(np.isfinite(w)) or np.linalg.norm(w) == 0.0:
            raise ValueError("init must be finite with non-zero norm")
    w_init = w.copy()
    grad_norms = np.empty(n_iter)
    for t in range(n_iter):
        G = gradient_matrix(X, y, w, link)
        if not np.all(np.isfinite(G)):
            raise NonFiniteError(f"fit_robust_sim: non-finite gradient at step {t + 1} (link={link}, eta={eta})")
        g = G.mean(axis=0) if eps == 0 else G[_robust_mean_mask(G, eps)].mean(axis=0)
        grad_norms[t] = np.linalg.norm(g)
        w = w - eta * g
        if not np.all(np.isfinite(w)):
            raise NonFiniteError(f"fit_robust_sim: non-finite iterate at step {t + 1} (link={link}, eta={eta})")
    return SIMFit(beta=w, beta_init=w_init, grad_norms=grad_norms)


def estimation_error(beta_hat: np.ndarray, beta_star: np.ndarray, *, even: bool = False) -> float:
    """||beta_hat - beta*||_2, or min(||beta_hat - beta*||, ||beta_hat + beta*||) for an even link.
    beta_hat is not normalised: the link fixes the scale."""
    e = float(np.linalg.norm(beta_hat - beta_star))
    if even:
        e = min(e, float(np.linalg.norm(beta_hat + beta_star)))
    return e


def sin_angle(beta_hat: np.ndarray, beta_star: np.ndarray) -> float:
    """sin of the angle between beta_hat and unit beta*: sqrt(1 - cos^2), |cos| = |<beta_hat, beta*>| / ||beta_hat||."""
    c = min(1.0, abs(float(beta_hat @ beta_star)) / float(np.linalg.norm(beta_hat)))
    return math.sqrt(max(0.0, 1.0 - c * c))
