"""Sparse real polynomials as ``dict[exponent tuple, coefficient]``.

A polynomial in ``n`` variables is ``{alpha: c_alpha}`` with ``alpha`` a tuple of ``n`` non-negative ints,
meaning ``sum_alpha c_alpha x^alpha``. Zero coefficients are dropped. Helpers for products, substitution of
affine forms, partial derivatives, restriction (fixing some variables), vectorised evaluation, and the
graded lexicographic monomial order used by the moment matrices.
"""
from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import numpy as np

Poly = dict  # dict[tuple[int, ...], float]

__all__ = ["Poly", "const", "var", "add", "scale", "mul", "power", "degree", "derivative", "evaluate",
           "substitute_affine", "restrict", "monomials", "to_arrays", "eval_batch", "grad_batch", "clean"]

_TOL = 1e-14


def clean(p: Mapping, tol: float = _TOL) -> Poly:
    """Drop coefficients with absolute value <= ``tol``."""
    return {a: float(c) for a, c in p.items() if abs(c) > tol}


def const(c: float, n: int) -> Poly:
    """The constant polynomial ``c`` in ``n`` variables."""
    return clean({(0,) * n: float(c)})


def var(i: int, n: int) -> Poly:
    """The monomial ``x_i`` in ``n`` variables."""
    alpha = [0] * n
    alpha[i] = 1
    return {tuple(alpha): 1.0}


def add(*polys: Mapping) -> Poly:
    """Sum of polynomials."""
    out: dict = {}
    for p in polys:
        for a, c in p.items():
            out[a] = out.get(a, 0.0) + c
    return clean(out)


def scale(p: Mapping, s: float) -> Poly:
    """``s * p``."""
    return clean({a: s * c for a, c in p.items()})


def mul(p: Mapping, q: Mapping) -> Poly:
    """Product ``p * q``."""
    out: dict = {}
    for a, c in p.items():
        for b, d in q.items():
            k = tuple(i + j for i, j in zip(a, b))
            out[k] = out.get(k, 0.0) + c * d
    return clean(out)


def power(p: Mapping, k: int, n: int) -> Poly:
    """``p ** k`` (``k >= 0``)."""
    out = const(1.0, n)
    for _ in range(k):
        out = mul(out, p)
    return out


def degree(p: Mapping) -> int:
    """Total degree (0 for the zero polynomial)."""
    return max((sum(a) for a in p), default=0)


def derivative(p: Mapping, i: int) -> Poly:
    """Partial derivative ``d p / d x_i``."""
    out: dict = {}
    for a, c in p.items():
        if a[i] > 0:
            b = list(a)
            b[i] -= 1
            b = tuple(b)
            out[b] = out.get(b, 0.0) + c * a[i]
    return clean(out)


def evaluate(p: Mapping, x: Sequence[float]) -> float:
    """``p(x)``."""
    x = np.asarray(x, dtype=float)
    return float(sum(c * np.prod(x ** np.asarray(a)) for a, c in p.items()))


def substitute_affine(p: Mapping, forms: Sequence[Mapping], n_new: int) -> Poly:
    """``p(f_1(z), ..., f_n(z))`` for affine (or polynomial) forms ``f_i`` in ``n_new`` variables ``z``."""
    cache: dict = {}

    def pw(i, k):
        if (i, k) not in cache:
            cache[(i, k)] = power(forms[i], k, n_new)
        return cache[(i, k)]

    out: dict = {}
    for a, c in p.items():
        term = const(c, n_new)
        for i, k in enumerate(a):
            if k:
                term = mul(term, pw(i, k))
        for b, d in term.items():
            out[b] = out.get(b, 0.0) + d
    return clean(out)


def restrict(p: Mapping, fixed: Mapping[int, float], keep: Sequence[int]) -> Poly:
    """Fix ``x_j = fixed[j]`` and return the polynomial in the variables ``keep`` (in that order)."""
    out: dict = {}
    for a, c in p.items():
        v = c
        for j, val in fixed.items():
            if a[j]:
                v *= val ** a[j]
        b = tuple(a[j] for j in keep)
        out[b] = out.get(b, 0.0) + v
    return clean(out)


@lru_cache(maxsize=None)
def monomials(n: int, d: int) -> tuple[tuple[int, ...], ...]:
    """Exponents of all monomials of degree <= ``d`` in ``n`` variables, graded lexicographic order.

    Degree first; within a degree, lexicographically descending exponents (``x_1 > x_2 > ...``), so that
    for ``n = 2, d = 2``: ``1, x1, x2, x1^2, x1 x2, x2^2``.
    """
    out = []
    for deg in range(d + 1):
        out.extend(sorted((a for a in _compositions(n, deg)), reverse=True))
    return tuple(out)


def _compositions(n: int, deg: int) -> Iterable[tuple[int, ...]]:
    if n == 0:
        if deg == 0:
            yield ()
        return
    for cut in itertools.combinations(range(deg + n - 1), n - 1):
        parts, prev = [], -1
        for c in cut:
            parts.append(c - prev - 1)
            prev = c
        parts.append(deg + n - 1 - prev - 1)
        yield tuple(parts)


def to_arrays(p: Mapping, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(E, c)``: exponent matrix (m, n) and coefficients (m,) of ``p`` (for vectorised evaluation)."""
    if not p:
        return np.zeros((0, n), dtype=int), np.zeros(0)
    items = sorted(p.items())
    return np.array([a for a, _ in items], dtype=int).reshape(len(items), n), np.array([c for _, c in items])


def eval_batch(E: np.ndarray, c: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Values of the polynomial ``(E, c)`` at the rows of ``X`` (shape (B, n)) -> (B,)."""
    if E.shape[0] == 0:
        return np.zeros(X.shape[0])
    mons = np.ones((X.shape[0], E.shape[0]))
    for j in range(E.shape[1]):
        col = E[:, j]
        if col.any():
            mons *= X[:, [j]] ** col[None, :]
    return mons @ c


def grad_batch(grads: Sequence[tuple[np.ndarray, np.ndarray]], X: np.ndarray) -> np.ndarray:
    """Gradient rows ``(B, n)`` from the per-variable derivative polynomials ``grads[i] = (E_i, c_i)``."""
    return np.stack([eval_batch(E, c, X) for E, c in grads], axis=1)
