"""Attractor and optimiser ablation of the relaxation (the paper's Fig. 2).

The relaxation is :math:`H(x) = -\\tfrac12 x^\\top J x + \\sum_i f(x_i)` on :math:`[-\\lambda, \\lambda]^n`, so
:math:`\\nabla H(x) = -J x + f'(x)` with one of three attractors (spec, "Method"):

* ``f1`` :math:`f(x) = -\\theta x^2`, :math:`f'(x) = -2\\theta x` (admissible iff :math:`\\theta < \\gamma/2`);
* ``f2`` the quartic of MiP-CRIM, :math:`f(x) = \\tfrac{\\beta}{4}x^4 - \\tfrac{\\alpha}{2}x^2`,
  :math:`f'(x) = \\beta x^3 - \\alpha x`
  (admissible iff :math:`3\\beta\\lambda^2 < \\alpha < \\beta\\lambda^2 + \\gamma`);
* ``f3`` :math:`f(x) = \\tfrac1\\beta\\int_0^x \\operatorname{atanh}(t/\\lambda)\\,dt - \\tfrac{\\alpha}{2}x^2`,
  :math:`f'(x) = \\operatorname{atanh}(x/\\lambda)/\\beta - \\alpha x` (never admissible: :math:`f'` diverges at the
  box faces, so iterates stay in the open box ``|x| <= lam (1 - F3_MARGIN)``).

and one of three projected optimisers run for a fixed number of steps from given starts (one column per start):
``gd`` :math:`x \\leftarrow P(x - \\eta g)`; ``heavy_ball`` :math:`x_{k+1} = P(x_k - \\eta g_k + \\mu (x_k - x_{k-1}))`
(:math:`\\mu = 0.9`); ``adam`` with MiP-CRIM's constants (:math:`\\beta_1 = 0.09`, :math:`\\beta_2 = 0.999`,
:math:`\\epsilon = 10^{-8}`). The endpoint is rounded with sign(0) = +1.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .solver import check_coupling

__all__ = ["ATTRACTORS", "OPTIMIZERS", "F3_MARGIN", "attractor_derivative", "relaxed_descent"]

ATTRACTORS = {"f1": ("theta",), "f2": ("alpha", "beta"), "f3": ("alpha", "beta")}
OPTIMIZERS = ("gd", "heavy_ball", "adam")
F3_MARGIN = 1e-9


def _check_params(attractor: str, params: dict) -> dict:
    if attractor not in ATTRACTORS:
        raise ValueError(f"attractor must be one of {tuple(ATTRACTORS)}, got {attractor!r}")
    out = {}
    for k in ATTRACTORS[attractor]:
        if k not in params:
            raise ValueError(f"params must contain {k!r} for attractor {attractor!r}")
        v = float(params[k])
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"params[{k!r}] must be finite and > 0, got {params[k]!r}")
        out[k] = v
    return out


def attractor_derivative(x, attractor: str, params: dict, lam: float) -> np.ndarray:
    """:math:`f'(x)` of attractor ``f1``, ``f2`` or ``f3`` (elementwise; ``f3`` needs :math:`|x| < \\lambda`)."""
    p = _check_params(attractor, params)
    x = np.asarray(x, dtype=np.float64)
    if attractor == "f1":
        return -2.0 * p["theta"] * x
    if attractor == "f2":
        return p["beta"] * x ** 3 - p["alpha"] * x
    if np.any(np.abs(x) >= lam):
        raise ValueError("x must lie in the open box |x| < lam for attractor 'f3'")
    return np.arctanh(x / lam) / p["beta"] - p["alpha"] * x


def relaxed_descent(J, X0, *, attractor: str, params: dict, lam: float, optimizer: str, lr: float, steps: int,
                    epochs: int = 1, sigma: float = 1e-3, seeds=None, momentum: float = 0.9,
                    adam_beta1: float = 0.09, adam_beta2: float = 0.999,
                    adam_eps: float = 1e-8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run ``epochs`` epochs of ``steps`` projected steps of ``optimizer`` on :math:`H` with ``attractor`` from the
    columns of ``X0``; after each epoch the iterate is rounded to :math:`s` and restarted from
    :math:`N(\lambda s, \sigma I)` (Algorithm 1's restart with the attractor and optimiser swapped; optimiser state
    is reset every epoch). Column ``c`` draws its restarts from ``default_rng(seeds[c])`` (needed if epochs > 1).

    ``J`` symmetric with zero diagonal (dense or sparse), ``X0`` (n, R) starts (clipped into the box).
    Returns ``(X, spins, energies)``: the last endpoints (n, R), the lowest-energy rounded spins seen per column
    (int8 (n, R)) and their energies :math:`-\tfrac12 s^\top J s` (R,). With ``epochs = 1`` the spins are the
    rounded endpoint.
    """
    J = check_coupling(J)
    n = J.shape[0]
    X = np.array(X0, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"X0 must have shape (n, R) = ({n}, R), got {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X0 contains NaN or Inf")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    for nm, v in (("lam", lam), ("lr", lr)):
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"{nm} must be finite and > 0, got {v!r}")
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    p = _check_params(attractor, params)
    hi = lam * (1.0 - F3_MARGIN) if attractor == "f3" else lam
    np.clip(X, -hi, hi, out=X)
    Jd = J if sp.issparse(J) else np.asarray(J)

    def grad(X):
        return attractor_derivative(X, attractor, p, lam) - np.asarray(Jd @ X)

    if isinstance(epochs, bool) or int(epochs) != epochs or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
    if not np.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be finite and >= 0 (a variance), got {sigma!r}")
    R = X.shape[1]
    if epochs > 1:
        if seeds is None or len(seeds) != R:
            raise ValueError(f"seeds must give one seed per column ({R}) when epochs > 1")
        rngs = [np.random.default_rng(s) for s in seeds]
    best_E = np.full(R, np.inf)
    best_S = np.ones((n, R), dtype=np.int8)
    sd = np.sqrt(sigma)
    for k in range(int(epochs)):
        X_prev = X.copy()
        m = np.zeros_like(X)
        v = np.zeros_like(X)
        for t in range(1, int(steps) + 1):
            g = grad(X)
            if optimizer == "gd":
                Xn = X - lr * g
            elif optimizer == "heavy_ball":
                Xn = X - lr * g + momentum * (X - X_prev)
            else:
                m = adam_beta1 * m + (1.0 - adam_beta1) * g
                v = adam_beta2 * v + (1.0 - adam_beta2) * g * g
                Xn = X - lr * (m / (1.0 - adam_beta1 ** t)) / (np.sqrt(v / (1.0 - adam_beta2 ** t)) + adam_eps)
            X_prev = X
            X = np.clip(Xn, -hi, hi)
        S = np.where(X >= 0, 1.0, -1.0)
        E = -0.5 * np.sum(S * np.asarray(Jd @ S), axis=0)
        better = E < best_E
        best_E = np.where(better, E, best_E)
        best_S[:, better] = S[:, better].astype(np.int8)
        if k + 1 < epochs:
            Y = lam * S
            X = np.empty_like(Y)
            for c, r in enumerate(rngs):
                X[:, c] = r.normal(Y[:, c], sd)
            np.clip(X, -hi, hi, out=X)
    return X, best_S, best_E
