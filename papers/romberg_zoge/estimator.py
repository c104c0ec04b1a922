"""Romberg-extrapolated zeroth-order gradient estimator (Romberg-ZOGE) and the kernel comparator.

Central difference along ``u`` at radius ``h`` (even powers of ``h`` only):

    D(h; u) = (f(x + h u) - f(x - h u)) / (2h) = u^T grad f(x) + sum_{j>=1} h^{2j}/(2j+1)! D^{2j+1} f(x)[u^(2j+1)].

Level ``R``: radii ``h_k = r / 2^k`` (k = 0..R) along ONE direction ``u`` and

    ghat_R(x; u, r) = (sum_k w_k D(h_k; u)) u,

with the weights of Richardson/Romberg extrapolation in ``h^2`` to ``h^2 = 0`` (Lagrange basis at 0 over the
nodes ``4^{-k}``): ``sum_k w_k = 1`` and ``sum_k w_k 4^{-ki} = 0`` for ``i = 1..R``. The first ``R`` even-order
terms cancel, so the pathwise residual is ``rho_R r^{2R+2}/(2R+3)! D^{2R+3} f[u^(2R+3)] u + O(r^{2R+4})`` with
``rho_R = sum_k w_k 4^{-k(R+1)}``. Level 0 is the two-point estimator. Reference: Dong, Pu, Zhao, Zhou, Yin,
"Romberg-Extrapolated Zeroth-Order Gradient Estimator", ICML 2026 (weights reconstructed from the abstract);
Romberg (1955); Richardson (1911).

Kernel comparator (Polyak and Tsybakov 1990; Bach and Perchet 2016; Akhavan, Pontil, Tsybakov 2020):
``ghat = d/(2r) [f(x + r zeta e) - f(x - r zeta e)] K(zeta) e`` with ``e`` uniform on the unit sphere,
``zeta ~ U[-1, 1]`` and ``K(zeta) = (15 zeta / 4)(5 - 7 zeta^2)``.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Callable

import numpy as np

from shared.oracles.zeroth_order import (_check_directions, _check_point, central_differences, check_radius,
                                         evaluate_batched, forward_differences)

__all__ = ["romberg_weights", "romberg_weights_exact", "noise_amplification", "residual_constant",
           "romberg_radii", "romberg_tableau", "romberg_directional", "romberg_zoge", "kernel_function",
           "kernel_zoge", "evaluations_per_direction", "gaussian_smoothing_fixed_point"]

SCHEMES = ("central", "forward")


def _check_level(level) -> int:
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 0:
        raise ValueError(f"level must be a non-negative int, got {level!r}")
    return int(level)


@lru_cache(maxsize=None)
def romberg_weights_exact(level: int) -> tuple[Fraction, ...]:
    """Exact weights ``w_k = prod_{j != k} 4^{-j} / (4^{-j} - 4^{-k})``, k = 0..level, as Fractions."""
    level = _check_level(level)
    nodes = [Fraction(1, 4 ** k) for k in range(level + 1)]
    weights = []
    for k, nk in enumerate(nodes):
        w = Fraction(1)
        for j, nj in enumerate(nodes):
            if j != k:
                w *= nj / (nj - nk)
        weights.append(w)
    return tuple(weights)


def romberg_weights(level: int) -> np.ndarray:
    """Extrapolation weights ``w_0..w_R`` (float64), built from exact fractions and converted once.

    ``w_k = prod_{j != k} 4^{-j} / (4^{-j} - 4^{-k})``: the value at ``h^2 = 0`` of the Lagrange polynomial
    through the nodes ``h_k^2 = r^2 4^{-k}``. Level 0: ``[1]``; level 1: ``[-1/3, 4/3]``; level 2:
    ``[1/45, -4/9, 64/45]``.
    """
    return np.array([float(w) for w in romberg_weights_exact(level)], dtype=np.float64)


def noise_amplification(level: int) -> float:
    """Noise-amplification factor ``kappa_R = sum_k w_k^2 4^k``.

    With independent additive noise of variance ``sigma^2`` on every evaluation, the noise part of the scalar
    ``sum_k w_k D(h_k)`` has variance ``sigma^2 kappa_R / (2 r^2)`` (``kappa_0 = 1``: the two-point value).
    """
    return float(sum(w * w * 4 ** k for k, w in enumerate(romberg_weights_exact(level))))


def residual_constant(level: int) -> float:
    """``rho_R = sum_k w_k 4^{-k(R+1)}``, the factor of the leading residual term ``r^{2R+2}``."""
    level = _check_level(level)
    return float(sum(w * Fraction(1, 4 ** (k * (level + 1)))
                     for k, w in enumerate(romberg_weights_exact(level))))


def romberg_radii(radius: float, level: int) -> np.ndarray:
    """Radii ``h_k = radius / 2^k``, k = 0..level."""
    return check_radius(radius) / 2.0 ** np.arange(_check_level(level) + 1)


def romberg_tableau(values) -> np.ndarray:
    """Romberg tableau ``T[k, j] = (4^j T[k, j-1] - T[k-1, j-1]) / (4^j - 1)``, ``T[k, 0] = values[k]``.

    ``values`` are ``D(h_k)`` for ``h_k = r/2^k``; ``T[R, R]`` equals ``sum_k w_k D(h_k)``. Returns the
    lower-triangular (R+1, R+1) array (NaN above the diagonal).
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {v.shape}")
    n = v.size
    T = np.full((n, n), np.nan)
    T[:, 0] = v
    for j in range(1, n):
        for k in range(j, n):
            T[k, j] = (4.0 ** j * T[k, j - 1] - T[k - 1, j - 1]) / (4.0 ** j - 1.0)
    return T


def evaluations_per_direction(level: int, scheme: str = "central") -> int:
    """Function evaluations per direction: ``2(R+1)`` (central) or ``R+1`` (forward, plus one shared f(x))."""
    level = _check_level(level)
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {list(SCHEMES)}, got {scheme!r}")
    return 2 * (level + 1) if scheme == "central" else level + 1


def romberg_directional(f: Callable, x, directions, radius: float, level: int, *,
                        scheme: str = "central") -> np.ndarray:
    """The extrapolated directional derivatives ``s_i = sum_k w_k D(h_k; u_i)``, shape (n_dirs,).

    All ``2(R+1) n`` points (central) or ``(R+1) n + 1`` points (forward, ``f(x)`` once) go to ``f`` in
    one batched call; the same direction is used at every radius.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {list(SCHEMES)}, got {scheme!r}")
    radii = romberg_radii(radius, level)
    diff = central_differences if scheme == "central" else forward_differences
    return diff(f, x, directions, radii) @ romberg_weights(level)


def romberg_zoge(f: Callable, x, directions, radius: float, level: int, *, scheme: str = "central",
                 average: bool = True) -> np.ndarray:
    """Romberg-ZOGE ``ghat_R(x; u_i, r) = (sum_k w_k D(r/2^k; u_i)) u_i`` for every row ``u_i``.

    Parameters
    ----------
    f : callable
        Batched objective, ``(n, d) -> (n,)``.
    x : array (d,)
    directions : array (n, d)
        One direction per estimate, shared by all radii (Gaussian ``N(0, I)`` in the paper's default).
    radius : float
        ``r > 0``, the largest radius.
    level : int
        ``R >= 0``; 0 is the two-point central estimator.
    scheme : {"central", "forward"}
        Forward differences (``f(x)`` once plus ``f(x + h_k u)``) are an ablation: the weights cancel the
        even-order terms only in expectation, through Gaussian smoothing.
    average : bool
        Return the mean over directions, shape (d,), or the per-direction estimates, shape (n, d).

    Raises
    ------
    ValueError
        ``level`` not a non-negative int; ``radius`` <= 0 or not finite; ``x`` not 1-D; ``directions`` not
        2-D or of the wrong width; unknown ``scheme``; ``f`` returning the wrong shape.
    FloatingPointError
        ``f`` returned NaN or Inf (the evaluation is named).
    """
    level = _check_level(level)
    check_radius(radius)
    x = _check_point(x)
    u = _check_directions(directions, x.size)
    s = romberg_directional(f, x, u, radius, level, scheme=scheme)
    per_direction = s[:, None] * u
    return per_direction.mean(axis=0) if average else per_direction


def kernel_function(zeta) -> np.ndarray:
    """``K(zeta) = (15 zeta / 4)(5 - 7 zeta^2)``: ``E[zeta K(zeta)] = 1``, ``E[zeta^3 K(zeta)] = 0`` on U[-1, 1]."""
    z = np.asarray(zeta, dtype=float)
    return 3.75 * z * (5.0 - 7.0 * z * z)


def kernel_zoge(f: Callable, x, directions, zetas, radius: float, *, average: bool = True) -> np.ndarray:
    """Kernel estimator ``ghat_i = d/(2r) [f(x + r zeta_i e_i) - f(x - r zeta_i e_i)] K(zeta_i) e_i``.

    ``directions`` are unit vectors ``e_i`` (n, d) (uniform on the unit sphere), ``zetas`` (n,) in [-1, 1].
    Bias ``O(r^2)`` with the kernel of order 3 (the bias order of Romberg level 1); its leading second
    moment carries the factor ``d E[zeta^2 K^2] = 6.25 d`` instead of ``d + 2``. ``2n`` evaluations, one
    batched call.

    Raises
    ------
    ValueError
        ``radius`` <= 0 or not finite; ``x`` not 1-D; ``directions`` not 2-D, of the wrong width or not of
        unit norm; ``zetas`` of the wrong length or outside [-1, 1].
    """
    r = check_radius(radius)
    x = _check_point(x)
    e = _check_directions(directions, x.size)
    norms = np.linalg.norm(e, axis=1)
    if not np.allclose(norms, 1.0, rtol=0, atol=1e-8):
        raise ValueError("directions must be unit vectors (rows of norm 1) for the kernel estimator")
    z = np.asarray(zetas, dtype=float)
    if z.shape != (e.shape[0],):
        raise ValueError(f"zetas must have shape (n,) = ({e.shape[0]},), got {z.shape}")
    if not np.all(np.isfinite(z)) or np.any(np.abs(z) > 1.0):
        raise ValueError("zetas must lie in [-1, 1]")
    steps = (r * z)[:, None] * e
    values = evaluate_batched(f, np.vstack([x + steps, x - steps]), what="f")
    n, d = e.shape
    scalars = d / (2.0 * r) * (values[:n] - values[n:]) * kernel_function(z)
    per_direction = scalars[:, None] * e
    return per_direction.mean(axis=0) if average else per_direction


def gaussian_smoothing_fixed_point(radius: float, level: int) -> float:
    """Expected ZO-SGD fixed point offset ``x_i - c_i = -log(sum_k w_k exp(h_k^2 / 2))`` on the separable
    exponential ``sum_i exp(x_i - c_i) - (x_i - c_i)`` with Gaussian directions (two-point: ``-r^2/2``)."""
    h = romberg_radii(radius, level)
    return -math.log(float(np.sum(romberg_weights(level) * np.exp(h ** 2 / 2.0))))

