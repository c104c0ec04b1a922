"""The contaminated single-index model of Das, Chatterjee & Batra (ICML 2026).

Clean model: x_i ~ N(0, I_d), ||beta*||_2 = 1, y_i = f(x_i^T beta*) + zeta_i with zeta_i independent of x_i,
mean 0, variance sigma^2 and heavy (Student-t) tails. Strong contamination: after the n clean pairs are drawn,
an adversary who sees them replaces floor(eps n) pairs (x and y). The adversaries below are reconstructed
(the paper's own are not known).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ._validate import check_eps, check_int, check_positive
from .links import get_link

__all__ = ["SIMData", "ADVERSARIES", "make_sim_data", "draw_noise"]

ADVERSARIES = ("none", "A1", "A2", "A3", "A4", "A5", "A6")


@dataclass
class SIMData:
    """A draw of the model: ``X`` (n, d), ``y`` (n,), unit ``beta_star`` (d,), ``corrupted`` (n,) bool mask
    (diagnostics only: estimators never see it)."""

    X: np.ndarray
    y: np.ndarray
    beta_star: np.ndarray
    corrupted: np.ndarray


def draw_noise(rng: np.random.Generator, size: int, sigma: float, noise_df: float) -> np.ndarray:
    """Noise of mean 0 and variance sigma^2: N(0, sigma^2) for noise_df = inf, otherwise
    sigma sqrt((nu - 2)/nu) t_nu with nu = noise_df > 2."""
    if math.isinf(noise_df):
        return sigma * rng.standard_normal(size)
    return sigma * math.sqrt((noise_df - 2.0) / noise_df) * rng.standard_t(noise_df, size)


def _orthogonal_unit(rng: np.random.Generator, beta: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to the unit ``beta`` (Gram-Schmidt of a fresh Gaussian)."""
    g = rng.standard_normal(beta.shape[0])
    g = g - (g @ beta) * beta
    return g / np.linalg.norm(g)


def make_sim_data(n: int, d: int, *, link: str, sigma: float, eps: float = 0.0, adversary: str = "none",
                  noise_df: float = 5.0, seed: int = 0) -> SIMData:
    """Draw (X, y) from the single-index model and let ``adversary`` replace floor(eps n) pairs.

    One generator seeded by ``SeedSequence(seed)`` draws, in this order: beta* = g/||g|| (g ~ N(0, I_d)); X;
    the noise; the corrupted rows (floor(eps n), uniformly without replacement); the adversary's randomness
    (first v, a unit vector orthogonal to beta*). Adversaries (corrupted rows only):

    - ``A1`` orthogonal spike: x' = 0.5 g + 3 s v (g ~ N(0, I_d), s = +-1), y' = f(x'^T v) + 2;
    - ``A2`` planted model: beta_alt = (beta* + v)/||beta* + v||, x unchanged, y' = f(x^T beta_alt) + zeta' + sigma;
    - ``A3`` response flip: y' = -5 y, x unchanged;
    - ``A4`` leverage: x' = 10 v, y' = 0;
    - ``A5`` filter-aware spike (knows the threshold t of the stability filter of
      :func:`papers.robust_sim.method.robust_spectral_init`): m = (beta* + v)/sqrt(2), x' = 3 s m (s = +-1),
      y' = sqrt(0.999 t) / 3, so every corrupted score (m^T u')^2 sits just below t and survives the filter
      while tilting the top eigenvector towards m as much as the filter allows;
    - ``A6`` gross plus hidden: the first half of the corrupted rows (in index order) as in A1, the other half
      keeps x and shifts the response by sigma / sqrt(eps), y' = y + sigma / sqrt(eps), a shift of the gradient
      mean of order sigma sqrt(eps) that stays within the noise (the case that makes O(sigma sqrt(eps)) tight);
    - ``none``: no corruption (only with eps = 0).
    """
    n = check_int(n, "n", 2)
    d = check_int(d, "d", 2)
    f = get_link(link).f
    sigma = check_positive(sigma, "sigma", allow_zero=True)
    eps = check_eps(eps)
    if (isinstance(noise_df, bool) or not isinstance(noise_df, numbers.Real) or math.isnan(noise_df)
            or not noise_df > 2):
        raise ValueError(f"noise_df must exceed 2 (inf allowed), got {noise_df!r}")
    noise_df = float(noise_df)
    if adversary not in ADVERSARIES:
        raise ValueError(f"adversary must be one of {list(ADVERSARIES)}, got {adversary!r}")
    if adversary == "none" and eps > 0:
        raise ValueError(f"adversary 'none' requires eps = 0, got eps={eps}; choose one of {list(ADVERSARIES[1:])}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")

    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    g = rng.standard_normal(d)
    beta = g / np.linalg.norm(g)
    X = rng.standard_normal((n, d))
    y = f(X @ beta) + draw_noise(rng, n, sigma, noise_df)
    k = int(math.floor(eps * n))
    idx = np.sort(rng.choice(n, size=k, replace=False))
    corrupted = np.zeros(n, dtype=bool)
    corrupted[idx] = True
    if k > 0:
        v = _orthogonal_unit(rng, beta)
        if adversary == "A1":
            s = np.where(rng.random(k) < 0.5, -1.0, 1.0)
            Xc = 0.5 * rng.standard_normal((k, d)) + 3.0 * s[:, None] * v[None, :]
            X[idx] = Xc
            y[idx] = f(Xc @ v) + 2.0
        elif adversary == "A2":
            beta_alt = (beta + v) / np.linalg.norm(beta + v)
            y[idx] = f(X[idx] @ beta_alt) + draw_noise(rng, k, sigma, noise_df) + sigma
        elif adversary == "A3":
            y[idx] = -5.0 * y[idx]
        elif adversary == "A4":
            X[idx] = 10.0 * v[None, :]
            y[idx] = 0.0
        elif adversary == "A5":
            from .method import clean_score_threshold  # the adversary knows the filter

            t = clean_score_threshold(link, sigma, eps, noise_df)
            m = (beta + v) / math.sqrt(2.0)
            s = np.where(rng.random(k) < 0.5, -1.0, 1.0)
            X[idx] = 3.0 * s[:, None] * m[None, :]
            y[idx] = math.sqrt(0.999 * t) / 3.0
        elif adversary == "A6":
            gross, hidden = idx[: (k + 1) // 2], idx[(k + 1) // 2:]
            s = np.where(rng.random(len(gross)) < 0.5, -1.0, 1.0)
            Xc = 0.5 * rng.standard_normal((len(gross), d)) + 3.0 * s[:, None] * v[None, :]
            X[gross] = Xc
            y[gross] = f(Xc @ v) + 2.0
            y[hidden] = y[hidden] + sigma / math.sqrt(eps)
    return SIMData(X=X, y=y, beta_star=beta, corrupted=corrupted)
