r"""Contextual MNL: maximum-likelihood estimation from offline data and the plug-in robust decision.

Model: item :math:`i` in context :math:`x` has weight :math:`v_i(x) = \exp(\theta^\top\phi_i(x))`. From logged
data :math:`(\phi_t, S_t, c_t)_{t=1}^n` (features :math:`\phi_t\in\mathbb R^{N\times d}`, offered set
:math:`S_t`, choice :math:`c_t\in S_t` or :math:`-1` for the outside option) the MLE minimises the convex

.. math:: \ell_n(\theta) = \frac1n\sum_t\Big[\log\Big(1+\sum_{j\in S_t}e^{\theta^\top\phi_{tj}}\Big)
          - 1\{c_t\ne-1\}\,\theta^\top\phi_{t,c_t}\Big] + \frac{\ell_2}{2}\|\theta\|^2 .

The plug-in decision is :math:`\hat S(x) = \mathrm{DRAO}(e^{\hat\theta^\top\phi(x)})` and its decision gap at
:math:`x` is :math:`R_\rho(S^*(x);\theta^*) - R_\rho(\hat S(x);\theta^*) \ge 0`.
"""
from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.optimize import minimize

__all__ = ["fit_mnl_mle", "mnl_negative_log_likelihood", "simulate_choices", "make_contextual_data"]


def _check_data(features, offered, choices):
    features = np.asarray(features, dtype=float)
    if features.ndim != 3:
        raise ValueError(f"features must be 3-D (n, N, d), got shape {features.shape}")
    n, N, d = features.shape
    if n == 0 or N == 0 or d == 0:
        raise ValueError(f"features must have n, N, d >= 1, got shape {features.shape}")
    if not np.all(np.isfinite(features)):
        raise ValueError("features must be finite (no NaN or Inf)")
    offered = np.asarray(offered)
    if offered.shape != (n, N):
        raise ValueError(f"offered must have shape (n, N) = {(n, N)}, got {offered.shape}")
    if offered.dtype != bool:
        if not np.all((offered == 0) | (offered == 1)):
            raise ValueError("offered must be boolean (or 0/1)")
        offered = offered.astype(bool)
    empty = np.flatnonzero(~offered.any(axis=1))
    if empty.size:
        raise ValueError(f"offered row {int(empty[0])} offers nothing; every row needs at least one item")
    choices = np.asarray(choices)
    if choices.shape != (n,):
        raise ValueError(f"choices must have shape (n,) = {(n,)}, got {choices.shape}")
    if not np.issubdtype(choices.dtype, np.integer):
        if not (np.all(np.isfinite(choices.astype(float))) and np.all(choices == np.round(choices))):
            raise ValueError("choices must be integers in {-1, 0..N-1}")
        choices = choices.astype(int)
    bad = np.flatnonzero((choices < -1) | (choices >= N))
    if bad.size:
        raise ValueError(f"choices[{int(bad[0])}] = {int(choices[bad[0]])} is outside {{-1, 0..{N - 1}}}")
    rows = np.flatnonzero(choices >= 0)
    not_offered = rows[~offered[rows, choices[rows]]]
    if not_offered.size:
        t = int(not_offered[0])
        raise ValueError(f"choices[{t}] = {int(choices[t])} is not in its offered set (row {t} of offered)")
    return features, offered, choices.astype(int)


def mnl_negative_log_likelihood(theta, features, offered, choices, l2: float = 0.0):
    r"""``(loss, gradient)`` of :math:`\ell_n(\theta)` (module docstring); gradient
    :math:`\frac1n\sum_t[\sum_{j\in S_t}\pi_{tj}\phi_{tj} - 1\{c_t\ne-1\}\phi_{t,c_t}] + \ell_2\theta` with
    :math:`\pi_{tj} = e^{u_{tj}}/(1+\sum_{k\in S_t}e^{u_{tk}})`. Inputs are assumed validated.
    """
    n = features.shape[0]
    u = features @ theta                                            # (n, N)
    u_off = np.where(offered, u, -np.inf)
    m = np.maximum(u_off.max(axis=1), 0.0)                          # the outside option has utility 0
    e = np.exp(u_off - m[:, None])                                  # 0 where not offered
    denom = np.exp(-m) + e.sum(axis=1)
    log_norm = m + np.log(denom)
    chosen = choices >= 0
    rows = np.flatnonzero(chosen)
    loss = (log_norm.sum() - u[rows, choices[rows]].sum()) / n + 0.5 * l2 * float(theta @ theta)
    probs = e / denom[:, None]
    grad = np.einsum("tj,tjk->k", probs, features)
    grad -= features[rows, choices[rows]].sum(axis=0)
    return float(loss), grad / n + l2 * theta


def fit_mnl_mle(features, offered, choices, *, l2: float = 0.0) -> np.ndarray:
    r"""MLE :math:`\hat\theta = \arg\min_\theta \ell_n(\theta)` of a contextual MNL model.

    Parameters
    ----------
    features : array_like, shape (n, N, d)
        :math:`\phi_{tj}`.
    offered : array_like of bool, shape (n, N)
        Offered sets :math:`S_t` (each row non-empty).
    choices : array_like of int, shape (n,)
        :math:`c_t \in S_t` or -1 (outside option).
    l2 : float, optional
        Ridge weight (>= 0), adds :math:`\tfrac{\ell_2}{2}\|\theta\|^2`.

    L-BFGS-B from :math:`\theta = 0` with the analytic gradient (gtol 1e-10). Raises ``RuntimeError`` with the
    optimiser's message when it does not converge (the MLE need not exist, e.g. for separable data).
    """
    features, offered, choices = _check_data(features, offered, choices)
    if isinstance(l2, bool) or not isinstance(l2, (numbers.Real, np.floating)) or not math.isfinite(l2) or l2 < 0:
        raise ValueError(f"l2 must be a finite non-negative number, got {l2!r}")
    d = features.shape[2]
    res = minimize(mnl_negative_log_likelihood, np.zeros(d), args=(features, offered, choices, float(l2)),
                   jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 2000})
    grad_norm = float(np.abs(res.jac).max())
    # L-BFGS-B may stop with a line-search message at machine precision; accept a vanishing gradient then.
    if not (res.success or grad_norm <= 1e-7) or not np.all(np.isfinite(res.x)):
        raise RuntimeError(f"MNL maximum likelihood did not converge: {res.message} "
                           f"(max |gradient| = {grad_norm:.3g})")
    return np.asarray(res.x, dtype=float)


def fit_mnl_mle_omitting(features, offered, choices, omit: int) -> np.ndarray:
    r"""MLE of a misspecified contextual MNL model that leaves feature ``omit`` out (its coefficient fixed at 0).

    The negative control of the rate claim: the fit converges to the pseudo-true parameter of the smaller
    model, whose coordinate ``omit`` is 0, so :math:`\|\hat\theta - \theta^*\| \ge |\theta^*_{omit}|` at
    every n and the error cannot decay like :math:`n^{-1/2}`. Returns a (d,) vector with 0 at ``omit``.
    """
    features = np.asarray(features, dtype=float)
    if features.ndim != 3:
        raise ValueError(f"features must be 3-D (n, N, d), got shape {features.shape}")
    d = features.shape[2]
    if isinstance(omit, bool) or not isinstance(omit, (numbers.Integral, np.integer)) or not 0 <= omit < d or d < 2:
        raise ValueError(f"omit must be a feature index in 0..{d - 1} (d >= 2), got {omit!r}")
    keep = [j for j in range(d) if j != int(omit)]
    theta = np.zeros(d)
    theta[keep] = fit_mnl_mle(features[:, :, keep], offered, choices)
    return theta


def simulate_choices(theta, features, offered, rng: np.random.Generator) -> np.ndarray:
    """Draw one MNL choice per row (-1 = outside option) with weights exp(theta . phi) on the offered items."""
    u = np.asarray(features) @ np.asarray(theta)
    w = np.where(offered, np.exp(u), 0.0)
    probs = np.concatenate([np.ones((w.shape[0], 1)), w], axis=1)
    probs /= probs.sum(axis=1, keepdims=True)
    cum = np.cumsum(probs, axis=1)
    draw = rng.random(w.shape[0])[:, None]
    idx = np.minimum((draw > cum).sum(axis=1), w.shape[1])
    return idx - 1


def make_contextual_data(rng: np.random.Generator, n: int, n_items: int, dim: int, offer_size: int,
                         theta: np.ndarray):
    """Logged data of the spec's generator: phi ~ N(0, I_d) iid, uniform random offered sets of size
    ``offer_size``, choices from the true MNL with parameter ``theta``. Returns (features, offered, choices)."""
    features = rng.standard_normal((n, n_items, dim))
    keys = rng.random((n, n_items))
    ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
    offered = ranks < offer_size
    choices = simulate_choices(theta, features, offered, rng)
    return features, offered, choices
