"""Baselines compared with robust gradient descent on the same (X, y).

- :func:`fit_huber`: Huber / soft-L1 M-estimation with ``scipy.optimize.least_squares`` from the plain spectral
  estimate (what a user would otherwise run).
- :func:`fit_itlm`: iterative trimmed least squares (ITLM; Shen & Sanghavi, ICML 2019).
- :func:`stein_init`: first-order Stein estimate E[y x] = E f'(Z) beta*, robustified with :func:`robust_mean`.
- :func:`random_unit`: a uniformly random unit vector (initialisation ablation).
- :func:`pairwise_filter_mean`: a robust mean by pairwise-distance pruning, O(n^2 d) (the quadratic-time
  control of the near-linear-time claim).
The non-robust pipeline is :func:`papers.robust_sim.method.fit_robust_sim` with eps = 0.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import least_squares
from scipy.spatial.distance import cdist

from ._validate import check_eps, check_int, check_matrix, check_positive, check_xy
from .links import get_link, link_constants
from .method import gradient_matrix, removal_budget, robust_mean, robust_spectral_init

__all__ = ["fit_huber", "fit_itlm", "stein_init", "random_unit", "mad", "pairwise_filter_mean"]


def mad(r: np.ndarray) -> float:
    """Median absolute deviation median(|r - median(r)|) (unscaled)."""
    r = np.asarray(r, dtype=float)
    return float(np.median(np.abs(r - np.median(r))))


def fit_huber(X, y, link: str, *, loss: str = "soft_l1", init: np.ndarray | None = None,
              max_nfev: int = 200) -> np.ndarray:
    """Robust M-estimation min_w sum_i rho((y_i - f(x_i^T w)) / c) by trust-region reflective least squares.

    ``scipy.optimize.least_squares(fun=lambda w: y - f(X w), x0, jac=-f'(X w) x_i^T, loss=loss,
    f_scale=c, method='trf', max_nfev=max_nfev)`` with x0 the plain spectral estimate (eps = 0) unless ``init`` is
    given, and c = 1.345 * 1.4826 * MAD(y - f(X x0)) (the Huber constant times a robust residual scale).
    """
    X, y = check_xy(X, y)
    lk = get_link(link)
    if loss not in ("soft_l1", "huber", "linear", "cauchy", "arctan"):
        raise ValueError(f"loss must be a scipy least_squares loss, got {loss!r}")
    max_nfev = check_int(max_nfev, "max_nfev", 1)
    x0 = robust_spectral_init(X, y, 0.0, link=link) if init is None else np.asarray(init, dtype=float)
    scale = 1.345 * 1.4826 * mad(y - lk.f(X @ x0))
    if not scale > 0:
        scale = 1.0

    def fun(w):
        return y - lk.f(X @ w)

    def jac(w):
        return -lk.df(X @ w)[:, None] * X

    res = least_squares(fun, x0, jac=jac, loss=loss, f_scale=scale, method="trf", max_nfev=max_nfev)
    return res.x


def fit_itlm(X, y, link: str, eps: float, *, eta: float = 0.5, n_rounds: int = 20, n_steps: int = 20,
             init: np.ndarray | None = None) -> np.ndarray:
    """Iterative trimmed least squares (Shen & Sanghavi 2019).

    From the plain spectral estimate (or ``init``), ``n_rounds`` rounds of: keep the ceil((1 - 1.2 eps) n) rows
    with the smallest squared residuals (y_i - f(x_i^T w))^2 (stable tie-break by index), then ``n_steps`` plain
    gradient steps w <- w - eta * mean_{kept} g_i(w) on them.
    """
    X, y = check_xy(X, y)
    lk = get_link(link)
    eps = check_eps(eps)
    eta = check_positive(eta, "eta")
    n_rounds = check_int(n_rounds, "n_rounds", 0)
    n_steps = check_int(n_steps, "n_steps", 0)
    w = robust_spectral_init(X, y, 0.0, link=link) if init is None else np.array(init, dtype=float)
    n_keep = math.ceil((1.0 - 1.2 * eps) * len(y))
    for _ in range(n_rounds):
        r2 = np.square(y - lk.f(X @ w))
        kept = np.sort(np.argsort(r2, kind="stable")[:n_keep])
        Xk, yk = X[kept], y[kept]
        for _ in range(n_steps):
            w = w - eta * gradient_matrix(Xk, yk, w, link).mean(axis=0)
    return w


def stein_init(X, y, link: str, eps: float) -> np.ndarray:
    """First-order Stein estimate w_0 = robust_mean({y_i x_i}, eps) / E f'(Z).

    E[y x] = E[f(x^T beta*) x] = E f'(Z) beta* (first-order Stein), so w_0 estimates beta* with its scale when
    E f'(Z) != 0 (1/2 for GeLU and Swish). ValueError for links with E f'(Z) = 0 (even links).
    """
    X, y = check_xy(X, y)
    c = link_constants(link)["E_df"]
    if abs(c) < 1e-8:
        raise ValueError(f"link {link!r} has E f'(Z) = 0: the first-order Stein estimate is uninformative")
    return robust_mean(y[:, None] * X, eps) / c


def random_unit(d: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random unit vector in R^d (normalised Gaussian)."""
    d = check_int(d, "d", 2)
    g = rng.standard_normal(d)
    return g / np.linalg.norm(g)


def pairwise_filter_mean(G: np.ndarray, eps: float, *, block: int = 512) -> np.ndarray:
    """Mean of the rows of ``G`` after dropping the ceil(2 eps n) rows with the largest median Euclidean
    distance to all rows (pairwise pruning; ties drop the lower index first). Cost O(n^2 d): every pairwise
    distance is computed (in row blocks of ``block`` to bound memory)."""
    G = check_matrix(G, "G", min_rows=2, min_cols=1)
    eps = check_eps(eps)
    n = G.shape[0]
    budget = removal_budget(n, eps)
    med = np.concatenate([np.median(cdist(G[i:i + block], G), axis=1) for i in range(0, n, block)])
    drop = np.argsort(-med, kind="stable")[:budget]
    keep = np.ones(n, dtype=bool)
    keep[drop] = False
    return G[keep].mean(axis=0)
