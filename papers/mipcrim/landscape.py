"""Brute-force landscape checks of the landscape equivalence theorem (Thm. 3.13) for small n (<= 20).

- One-flip minima of :math:`E(s) = -\\tfrac12 s^\\top J s`: :math:`s \\odot (Js) \\ge 0` (Lemma 3.3; ties count).
- Strict corner minima of the relaxation :math:`H(x) = -\\tfrac12 x^\\top J x + \\sum_i (\\beta x_i^4/4 -
  \\alpha x_i^2/2)` on :math:`[-\\lambda, \\lambda]^n`: corners :math:`y = \\lambda s` with
  :math:`y_i \\partial_i H(y) < 0` for all :math:`i` (Lemma B.3).
- Margin :math:`\\gamma(J) = \\min\\{|(Js)_i| : s \\in \\{\\pm1\\}^n, s_i (Js)_i < 0\\}` (Prop. 3.4).

Rows are returned sorted lexicographically with -1 before +1. Ties are decided with a tolerance
``tol = 1e-12 * n * max|J|`` so that rounding in ``Js`` (e.g. 0.1 + 0.2 - 0.3) does not turn a zero field into a
violation.
"""
from __future__ import annotations

import numpy as np

from .solver import check_coupling

__all__ = ["one_flip_minima", "relaxation_corner_minima", "margin_gamma", "all_spins", "MAX_BRUTE_FORCE_N"]

MAX_BRUTE_FORCE_N = 20
_CHUNK = 1 << 15


def _check_small(J) -> np.ndarray:
    J = check_coupling(J)
    if not isinstance(J, np.ndarray):
        J = J.toarray() if hasattr(J, "toarray") else None
        if J is None:
            raise ValueError("J must be a dense or sparse matrix for brute force")
    n = J.shape[0]
    if n > MAX_BRUTE_FORCE_N:
        raise ValueError(f"J has n = {n} spins; brute force is limited to n <= {MAX_BRUTE_FORCE_N}")
    if n < 1:
        raise ValueError("J must have at least one spin")
    return J


def all_spins(n: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Spin configurations ``start..stop-1`` of the 2^n in lexicographic order (-1 < +1), as an int8 array."""
    stop = (1 << n) if stop is None else stop
    idx = np.arange(start, stop, dtype=np.int64)
    bits = (idx[:, None] >> np.arange(n - 1, -1, -1, dtype=np.int64)[None, :]) & 1
    return (2 * bits - 1).astype(np.int8)


def _tol(J) -> float:
    return 1e-12 * J.shape[0] * float(np.abs(J).max(initial=0.0))


def _scan(J, keep):
    n = J.shape[0]
    out = []
    for start in range(0, 1 << n, _CHUNK):
        S = all_spins(n, start, min(1 << n, start + _CHUNK))
        F = S.astype(np.float64) @ J            # rows: (Js)^T, J symmetric
        mask = keep(S, F)
        out.append(S[mask])
    return np.concatenate(out, axis=0) if out else np.zeros((0, n), dtype=np.int8)


def one_flip_minima(J) -> np.ndarray:
    """All one-flip local minima :math:`s \\odot (Js) \\ge 0` of :math:`E` (brute force, n <= 20); (k, n) int8."""
    J = _check_small(J)
    tol = _tol(J)
    return _scan(J, lambda S, F: np.all(S * F >= -tol, axis=1))


def relaxation_corner_minima(J, *, alpha: float, beta: float, lam: float) -> np.ndarray:
    """Sign patterns of the corners :math:`\\lambda s` passing the strict test
    :math:`y_i(\\beta y_i^3 - (Jy)_i - \\alpha y_i) < 0` for all i (brute force, n <= 20); (k, n) int8."""
    for nm, v in (("alpha", alpha), ("beta", beta), ("lam", lam)):
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"{nm} must be finite and > 0, got {v!r}")
    J = _check_small(J)

    def keep(S, F):
        y = lam * S.astype(np.float64)
        g = beta * y ** 3 - lam * F - alpha * y
        return np.all(y * g < 0, axis=1)

    return _scan(J, keep)


def margin_gamma(J) -> float:
    """Margin :math:`\\gamma(J)`: the smallest :math:`|(Js)_i|` over violated pairs :math:`s_i (Js)_i < 0`
    (brute force, n <= 20); ``inf`` when no configuration violates (e.g. J = 0)."""
    J = _check_small(J)
    tol = _tol(J)
    n = J.shape[0]
    best = np.inf
    for start in range(0, 1 << n, _CHUNK):
        S = all_spins(n, start, min(1 << n, start + _CHUNK))
        F = S.astype(np.float64) @ J
        viol = S * F < -tol
        if viol.any():
            best = min(best, float(np.abs(F[viol]).min()))
    return best
