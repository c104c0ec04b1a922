"""Zeroth-order (function-value) gradient primitives shared by the zeroth-order papers.

Batched-oracle convention: an objective ``f`` maps an ``(n, d)`` array of points to an ``(n,)`` array of
values, so that all the evaluations of one estimate go through one call. Every function here evaluates
``f`` exactly once per call.

For a direction ``u`` and a radius ``h`` the directional differences are

* central: ``D_c(h; u) = (f(x + h u) - f(x - h u)) / (2 h) = u^T grad f(x) + O(h^2)`` (even powers only),
* forward: ``D_f(h; u) = (f(x + h u) - f(x)) / h = u^T grad f(x) + O(h)``,

and a gradient estimate from ``P`` directions is ``ghat = (1/P) sum_p D_p u_p``. With ``u ~ N(0, I_d)``,
``E[(u^T g) u] = g`` (Nesterov and Spokoiny 2017, "Random gradient-free minimization of convex functions").

Used by ``papers/romberg_zoge`` (Romberg extrapolation over radii) and ``papers/hosfl`` (seed-shared
perturbations: a direction is rebuilt from its seed by :func:`perturbation_directions`).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from shared.oracles import sample_noise

__all__ = [
    "DIRECTION_KINDS", "SCHEMES", "check_radius", "perturbation_directions", "evaluate_batched", "check_values",
    "central_differences", "forward_differences", "estimate_from_directional", "two_point_estimate", "as_batched",
    "with_additive_noise",
]

DIRECTION_KINDS = ("gaussian", "sphere")
SCHEMES = ("central", "forward")


# ------------------------------------------------------------------------------------------- validation
def _check_point(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"x must be a 1-D array, got shape {x.shape}")
    if x.size == 0:
        raise ValueError("x must not be empty")
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite")
    return x


def _check_directions(directions, dim: int) -> np.ndarray:
    u = np.asarray(directions, dtype=float)
    if u.ndim != 2:
        raise ValueError(f"directions must be a 2-D array (n_dirs, d), got shape {u.shape}")
    if u.shape[1] != dim:
        raise ValueError(f"directions must have width d = {dim} (the length of x), got shape {u.shape}")
    if u.shape[0] == 0:
        raise ValueError("directions must hold at least one row")
    if not np.all(np.isfinite(u)):
        raise ValueError("directions must be finite")
    return u


def _check_radii(radii) -> np.ndarray:
    h = np.atleast_1d(np.asarray(radii, dtype=float))
    if h.ndim != 1 or h.size == 0:
        raise ValueError(f"radii must be a non-empty 1-D array, got shape {np.shape(radii)}")
    if not np.all(np.isfinite(h)) or np.any(h <= 0):
        raise ValueError(f"radii must be finite and > 0, got {h.tolist()}")
    return h


def check_radius(radius) -> float:
    """Return ``radius`` as a float; ValueError naming it when it is not finite and > 0."""
    if isinstance(radius, bool):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
    try:
        r = float(radius)
    except (TypeError, ValueError):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}") from None
    if not math.isfinite(r) or r <= 0:
        raise ValueError(f"radius must be finite and > 0, got {radius!r}")
    return r


# ------------------------------------------------------------------------------------------- directions
def perturbation_directions(seeds: Sequence[int], dim: int, kind: str = "gaussian",
                            dtype=np.float64) -> np.ndarray:
    """Directions rebuilt from seeds: row ``p`` is ``numpy.random.default_rng(seeds[p]).standard_normal(dim)``.

    ``kind="gaussian"``: ``u_p ~ N(0, I_d)``, so ``E[u u^T] = I``. ``kind="sphere"``: the same row rescaled
    to norm ``sqrt(dim)`` (uniform on the sphere of radius ``sqrt(d)``, again ``E[u u^T] = I``). Rows are
    drawn in float64 and cast to ``dtype`` at the end, so a seed gives the same direction in every dtype up
    to rounding.

    Raises
    ------
    ValueError
        ``seeds`` empty, not integers, negative or duplicated; ``dim`` not an integer >= 1; unknown ``kind``.
    """
    if kind not in DIRECTION_KINDS:
        raise ValueError(f"kind must be one of {list(DIRECTION_KINDS)}, got {kind!r}")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be an integer >= 1, got {dim!r}")
    seeds = [seeds] if np.ndim(seeds) == 0 else list(np.asarray(seeds, dtype=object).ravel())
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    clean = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise ValueError(f"seeds must be non-negative integers, got {s!r}")
        if s < 0:
            raise ValueError(f"seeds must be non-negative integers, got {s}")
        clean.append(int(s))
    if len(set(clean)) != len(clean):
        dup = sorted({s for s in clean if clean.count(s) > 1})
        raise ValueError(f"seeds must be distinct (a repeated seed repeats its direction), duplicated: {dup}")
    rows = np.empty((len(clean), int(dim)), dtype=np.float64)
    for p, s in enumerate(clean):
        rows[p] = np.random.default_rng(s).standard_normal(int(dim))
    if kind == "sphere":
        rows *= math.sqrt(dim) / np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(dtype, copy=False)


# ------------------------------------------------------------------------------------------- evaluation
def evaluate_batched(f: Callable, points: np.ndarray, *, what: str = "f") -> np.ndarray:
    """``f(points)`` as a float64 ``(n,)`` array, checked.

    Raises ValueError when ``f`` returns another shape, and FloatingPointError naming the first
    evaluation (row of ``points``) whose value is NaN or Inf.
    """
    return check_values(f(points), points, what=what)


def check_values(values, points: np.ndarray, *, what: str = "f") -> np.ndarray:
    """The values a batched ``f`` returned on ``points``, as float64 ``(n,)``; the checks of
    :func:`evaluate_batched` (shape, then NaN/Inf naming the first bad evaluation)."""
    values = np.asarray(values, dtype=np.float64)
    n = points.shape[0]
    if values.shape != (n,):
        raise ValueError(f"{what} must map an (n, d) array to shape (n,) = ({n},), got shape {values.shape}")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise FloatingPointError(f"{what} returned {values[bad[0]]} at evaluation {int(bad[0])} of {n} "
                                 f"(point {points[bad[0]][:4].tolist()}{'...' if points.shape[1] > 4 else ''})")
    return values


def central_differences(f: Callable, x, directions, radii) -> np.ndarray:
    """Central differences ``D[i, k] = (f(x + h_k u_i) - f(x - h_k u_i)) / (2 h_k)``, shape (n_dirs, n_radii).

    ``h_k = radii[k]``, ``u_i = directions[i]``. All ``2 n_dirs n_radii`` points go to ``f`` in one call,
    ordered as the array ``[+/-, i, k]`` flattened row-major. Taylor: ``D = u^T grad f(x) +
    sum_{j>=1} h^{2j}/(2j+1)! D^{2j+1} f(x)[u, ..., u]``.
    """
    x = _check_point(x)
    u = _check_directions(directions, x.size)
    h = _check_radii(radii)
    steps = h[None, :, None] * u[:, None, :]                       # (n, K, d)
    points = np.stack([x + steps, x - steps]).reshape(-1, x.size)   # (2 n K, d)
    values = evaluate_batched(f, points, what="f").reshape(2, u.shape[0], h.size)
    return (values[0] - values[1]) / (2.0 * h)


def forward_differences(f: Callable, x, directions, radii, f_x: float | None = None) -> np.ndarray:
    """Forward differences ``D[i, k] = (f(x + h_k u_i) - f(x)) / h_k``, shape (n_dirs, n_radii).

    ``f(x)`` is evaluated once, as the first row of the same batched call, unless given as ``f_x``
    (then ``n_dirs n_radii`` evaluations, otherwise one more).
    """
    x = _check_point(x)
    u = _check_directions(directions, x.size)
    h = _check_radii(radii)
    points = (x + h[None, :, None] * u[:, None, :]).reshape(-1, x.size)
    if f_x is None:
        values = evaluate_batched(f, np.vstack([x[None, :], points]), what="f")
        f_x, values = values[0], values[1:]
    else:
        f_x = float(f_x)
        if not math.isfinite(f_x):
            raise ValueError(f"f_x must be finite, got {f_x}")
        values = evaluate_batched(f, points, what="f")
    return (values.reshape(u.shape[0], h.size) - f_x) / h


def estimate_from_directional(directional, directions) -> np.ndarray:
    """Gradient estimate ``(1/P) sum_p directional_p u_p`` from ``P`` scalar directional derivatives.

    ``directional`` has shape (P,) and ``directions`` shape (P, d); returns (d,). The dtype follows numpy's
    promotion of the two inputs (float32 directions with float32 scalars stay float32).
    """
    u = np.asarray(directions)
    if u.ndim != 2 or u.shape[0] == 0:
        raise ValueError(f"directions must be a non-empty 2-D array (P, d), got shape {u.shape}")
    s = np.asarray(directional)
    if s.ndim == 0:
        s = s.reshape(1)
    if s.shape != (u.shape[0],):
        raise ValueError(f"directional must have shape (P,) = ({u.shape[0]},) to match directions, got {s.shape}")
    return (s @ u) / u.shape[0]


def two_point_estimate(f: Callable, x, directions, radius: float, scheme: str = "central") -> np.ndarray:
    """Two-point estimate ``(1/P) sum_p D(radius; u_p) u_p`` with central or forward differences.

    Central: ``2 P`` evaluations, bias ``O(radius^2)`` under Gaussian smoothing. Forward: ``P + 1``
    evaluations (``f(x)`` once), bias ``O(radius^2)`` in expectation (Gaussian ``u``), ``O(radius)`` pathwise.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {list(SCHEMES)}, got {scheme!r}")
    r = check_radius(radius)
    diff = central_differences if scheme == "central" else forward_differences
    return estimate_from_directional(diff(f, x, directions, [r])[:, 0], np.asarray(directions, dtype=float))


# ------------------------------------------------------------------------------------------- wrappers
def as_batched(f: Callable) -> Callable:
    """Wrap a single-point function ``(d,) -> float`` into the batched convention ``(n, d) -> (n,)``."""
    if not callable(f):
        raise ValueError(f"f must be callable, got {type(f).__name__}")

    def batched(points):
        points = np.asarray(points, dtype=float)
        if points.ndim != 2:
            raise ValueError(f"points must be a 2-D array (n, d), got shape {points.shape}")
        return np.array([float(f(p)) for p in points], dtype=np.float64)

    batched.__name__ = f"batched_{getattr(f, '__name__', 'f')}"
    batched.__wrapped__ = f
    return batched


def with_additive_noise(f: Callable, sigma: float, rng: np.random.Generator) -> Callable:
    """Noisy oracle ``f(X) + sigma * xi``, ``xi ~ N(0, I_n)`` independent on every evaluation.

    The noise of a call on ``n`` points is drawn with one call to
    ``shared.oracles.sample_noise(rng, n, "gaussian", scale=sigma)``.
    """
    if not callable(f):
        raise ValueError(f"f must be callable, got {type(f).__name__}")
    sigma = float(sigma)
    if not math.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be finite and >= 0, got {sigma!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")

    def noisy(points):
        values = np.asarray(f(points), dtype=np.float64)
        return values + sample_noise(rng, values.shape[0], "gaussian", scale=sigma)

    noisy.__name__ = f"noisy_{getattr(f, '__name__', 'f')}"
    return noisy
