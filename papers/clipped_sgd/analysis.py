"""Noise moments, the stationary error of SGD, the clipped fixed point and log-log slopes (spec: Method).

* sigma_N^2(x) = (1/N) sum_i ||grad f(x, xi_i)||^2 and M_p(x) = (1/N) sum_i ||grad f(x, xi_i)||^p.
  If ||grad f(x*, xi)|| has tail index alpha in (1, 2), sigma_N^2(x*) grows like N^{2/alpha - 1} in
  probability, while M_p(x*) -> E||grad f||^p stays bounded for p < alpha.
* Stationary SGD error with constant step gamma (standard analysis):
  mean estimation: E||x - xbar||^2 = gamma sigma_N^2(xbar) / (2 - gamma), exact for gamma in (0, 2);
  least squares, first order in gamma: E||x - x_S||^2 = (gamma/2) tr(Sigma^{-1} C), with
  Sigma = (1/N) sum a_i a_i^T, C = (1/N) sum r_i^2 a_i a_i^T, r_i = b_i - a_i^T x_S.
* The clipped fixed point x_lam of 1-D mean estimation: the root of sum_i clip(x - xi_i, lam) = 0, the Huber
  M-estimator with threshold lam and fixed scale.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from papers.clipped_sgd.problems import FiniteSumProblem

__all__ = ["noise_moments", "predicted_sgd_error", "clipped_fixed_point", "loglog_slope"]


def noise_moments(grads, p: float) -> dict:
    """sigma2 = (1/N) sum_i ||g_i||^2 and moment_p = (1/N) sum_i ||g_i||^p.

    Parameters
    ----------
    grads : array_like, shape (N, d) or (N,)
        Per-sample gradients, or signed scalars (then ||g_i|| = |g_i|).
    p : float
        The moment order, p > 0.
    """
    p = float(p)
    if not (math.isfinite(p) and p > 0):
        raise ValueError(f"p must be finite and > 0, got {p!r}")
    g = np.asarray(grads, dtype=float)
    if g.ndim == 1:
        norm_sq = g * g
    elif g.ndim == 2:
        norm_sq = np.einsum("ij,ij->i", g, g)
    else:
        raise ValueError(f"grads must have shape (N, d) or (N,), got {g.shape}")
    if g.shape[0] == 0:
        raise ValueError("grads must hold at least one gradient")
    moment = np.abs(g) ** p if g.ndim == 1 else norm_sq ** (p / 2.0)
    return {"sigma2": float(norm_sq.mean()), "moment_p": float(moment.mean())}


def _lyapunov_trace(sigma, C, fourth, gamma):
    """tr P for the exact stationary covariance: Sigma P + P Sigma - gamma E[a a^T P a a^T] = gamma C."""
    d = sigma.shape[0]
    eye = np.eye(d)
    op = np.kron(sigma, eye) + np.kron(eye, sigma) - gamma * fourth
    P = np.linalg.solve(op, gamma * C.reshape(-1)).reshape(d, d)
    return float(np.trace(P))


def predicted_sgd_error(problem: FiniteSumProblem, step_size: float, *, order: str = "first") -> float:
    """Stationary E||x - x_erm||^2 of SGD with constant step ``step_size`` on ``problem``.

    Mean estimation (exact for gamma in (0, 2)): gamma sigma_N^2(xbar) / (2 - gamma), from
    e+ = (1 - gamma) e + gamma (xi_i - xbar).

    Least squares, ``order="first"`` (first order in gamma): (gamma/2) tr(Sigma^{-1} C); the stationary
    covariance P solves Sigma P + P Sigma = gamma C to first order. ``order="exact"`` solves the exact second-moment
    equation Sigma P + P Sigma - gamma (1/N) sum_i (a_i^T P a_i) a_i a_i^T = gamma C and returns tr P.
    """
    gamma = float(step_size)
    if not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"step_size must be finite and > 0, got {step_size!r}")
    if order not in ("first", "exact"):
        raise ValueError(f"order must be 'first' or 'exact', got {order!r}")
    if problem.kind == "mean":
        if gamma >= 2:
            raise ValueError(f"step_size must be < 2 for mean estimation (stationary regime), got {gamma}")
        dev = problem.targets - problem.x_erm
        return float(gamma * np.mean(np.einsum("ij,ij->i", dev, dev)) / (2.0 - gamma))
    A, n = problem.features, problem.n_samples
    r = problem.targets - A @ problem.x_erm
    sigma = A.T @ A / n
    C = (A * (r * r)[:, None]).T @ A / n
    if order == "first":
        return float(0.5 * gamma * np.trace(np.linalg.solve(sigma, C)))
    outer = np.einsum("ni,nj->nij", A, A).reshape(n, -1)
    fourth = outer.T @ outer / n      # vec(P) -> vec((1/N) sum (a^T P a) a a^T)
    return _lyapunov_trace(sigma, C, fourth, gamma)


def clipped_fixed_point(samples, clip_level: float) -> float:
    """The 1-D clipped fixed point x_lam: the root of sum_i clip(x - xi_i, lam) = 0.

    clip(t, lam) = max(-lam, min(lam, t)), so x_lam is the Huber M-estimator of location with threshold lam and
    fixed scale. The sum is non-decreasing in x and changes sign on [min xi, max xi], so brentq on that bracket
    (xtol 1e-14) finds the root.
    """
    xi = np.asarray(samples, dtype=float)
    if xi.ndim != 1:
        raise ValueError(f"samples must be 1-D, got shape {xi.shape}")
    if xi.size == 0 or not np.all(np.isfinite(xi)):
        raise ValueError("samples must be non-empty and finite")
    lam = float(clip_level)
    if not lam > 0:
        raise ValueError(f"clip_level must be > 0, got {clip_level!r}")
    lo, hi = float(xi.min()), float(xi.max())
    if lo == hi:
        return lo

    def total(x):
        return float(np.clip(x - xi, -lam, lam).sum())

    if total(lo) == 0.0:
        return lo
    if total(hi) == 0.0:
        return hi
    return float(brentq(total, lo, hi, xtol=1e-14))


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y against log x (all entries must be positive)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"x and y must be 1-D of equal length >= 2, got shapes {x.shape} and {y.shape}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("x and y must be positive for a log-log slope")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
