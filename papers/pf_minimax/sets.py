"""Compact convex sets with a linear minimization oracle (LMO) and a Euclidean projection.

Every set ``S`` offers

* ``lmo(g)``      -- a point of ``argmin_{s in S} <g, s>`` (ties break to the smallest index);
* ``project(v)``  -- the Euclidean projection ``P_S(v) = argmin_{s in S} ||s - v||``;
* ``center()``    -- the centre used as start point and smoothing anchor ``ybar``;
* ``max_dist_sq()`` -- ``D^2 = max_{s in S} ||s - center||^2``.

The public methods validate their input (shape, finiteness) and raise ``ValueError`` naming the argument;
the underscored ``_lmo`` / ``_project`` skip the checks and are used inside the iteration loops.

References: Held, Wolfe & Crowder (1974) and Duchi, Shalev-Shwartz, Singer & Chandra (ICML 2008) for the
sort-based simplex projection; Jaggi (ICML 2013) for the LMOs of the l1 and nuclear-norm balls.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import svds

__all__ = ["Simplex", "L1Ball", "NuclearBall", "project_simplex", "thin_svd", "top_singular_pair"]


def _check_dim(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _check_radius(value, name: str) -> float:
    try:
        r = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}") from None
    if not math.isfinite(r) or r <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return r


def _check_array(v, shape: tuple, name: str, *, allow_sparse: bool = False):
    if allow_sparse and sp.issparse(v):
        if v.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {v.shape}")
        if not np.all(np.isfinite(v.data)):
            raise ValueError(f"{name} contains NaN or Inf")
        return v
    arr = np.asarray(v, dtype=float)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or Inf")
    return arr


_ARANGE: dict = {}


def project_simplex(v: np.ndarray, radius: float = 1.0) -> np.ndarray:
    r"""Euclidean projection onto the scaled simplex ``{s >= 0, sum(s) = radius}`` (sort-based).

    With ``u`` the entries of ``v`` sorted decreasingly and ``rho = max{j : u_j - (sum_{i<=j} u_i - radius)/j > 0}``,
    ``theta = (sum_{i<=rho} u_i - radius)/rho`` and ``P(v) = max(v - theta, 0)``
    (Held, Wolfe & Crowder 1974; Duchi et al. 2008, Fig. 1).
    """
    u = np.sort(v)[::-1]
    css = u.cumsum()
    css -= radius
    ind = _ARANGE.get(v.size)
    if ind is None:
        ind = _ARANGE.setdefault(v.size, np.arange(1.0, v.size + 1.0))
    rho = np.count_nonzero(u * ind > css)  # u_j - css_j / j > 0
    theta = css[rho - 1] / rho
    out = v - theta
    np.maximum(out, 0.0, out=out)
    return out


class Simplex:
    r"""The probability simplex ``Delta_n = {s in R^n : s >= 0, sum(s) = 1}``.

    LMO: ``e_i`` with ``i = argmin_j g_j`` (smallest index on ties). Centre ``1/n``; ``D^2 = 1 - 1/n``.
    """

    def __init__(self, dim: int):
        self.dim = _check_dim(dim, "dim")
        self.shape = (self.dim,)

    def _lmo(self, g: np.ndarray) -> np.ndarray:
        s = np.zeros(self.dim)
        s[int(np.argmin(g))] = 1.0
        return s

    def lmo(self, g) -> np.ndarray:
        """Vertex ``e_i``, ``i = argmin g`` (first index on ties)."""
        return self._lmo(_check_array(g, self.shape, "g"))

    def _project(self, v: np.ndarray) -> np.ndarray:
        return project_simplex(v, 1.0)

    def project(self, v) -> np.ndarray:
        """Sort-based Euclidean projection onto the simplex (see :func:`project_simplex`)."""
        return self._project(_check_array(v, self.shape, "v"))

    def center(self) -> np.ndarray:
        """The barycentre ``1/n``."""
        return np.full(self.dim, 1.0 / self.dim)

    def max_dist_sq(self) -> float:
        """``max_s ||s - 1/n||^2 = 1 - 1/n`` (attained at a vertex)."""
        return 1.0 - 1.0 / self.dim

    def __repr__(self) -> str:
        return f"Simplex({self.dim})"


class L1Ball:
    r"""The l1 ball ``{s in R^n : ||s||_1 <= r}``.

    LMO: ``-r sign(g_j) e_j`` with ``j = argmax_i |g_i|`` (first index on ties, ``sign(0) = +1``).
    Projection: ``v`` itself if ``||v||_1 <= r``, else ``sign(v) * r P_Delta(|v|/r)`` (Duchi et al. 2008).
    Centre 0; ``D^2 = r^2``.
    """

    def __init__(self, dim: int, radius: float):
        self.dim = _check_dim(dim, "dim")
        self.radius = _check_radius(radius, "radius")
        self.shape = (self.dim,)

    def _lmo(self, g: np.ndarray) -> np.ndarray:
        j = int(np.argmax(np.abs(g)))
        s = np.zeros(self.dim)
        s[j] = -self.radius if g[j] >= 0 else self.radius
        return s

    def lmo(self, g) -> np.ndarray:
        """``-r sign(g_j) e_j`` at ``j = argmax |g|``."""
        return self._lmo(_check_array(g, self.shape, "g"))

    def _project(self, v: np.ndarray) -> np.ndarray:
        a = np.abs(v)
        if a.sum() <= self.radius:
            return v.copy()
        return np.sign(v) * (self.radius * project_simplex(a / self.radius, 1.0))

    def project(self, v) -> np.ndarray:
        """Euclidean projection onto the l1 ball (via the simplex projection of ``|v|/r``)."""
        return self._project(_check_array(v, self.shape, "v"))

    def center(self) -> np.ndarray:
        """The origin."""
        return np.zeros(self.dim)

    def max_dist_sq(self) -> float:
        """``r^2`` (attained at ``+-r e_j``)."""
        return self.radius ** 2

    def __repr__(self) -> str:
        return f"L1Ball({self.dim}, radius={self.radius:g})"


DENSE_SVD_MAX = 20  # dense matrices with min(p, q) <= this get their top pair from a thin SVD


def thin_svd(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thin SVD ``a = U diag(s) Vt`` by LAPACK's divide-and-conquer driver (gesdd, numpy's default), falling back
    to the QR-iteration driver (gesvd) when gesdd reports non-convergence.

    gesdd can fail on finite matrices (it did on one 800 x 800 iterate of PROJ on the nuclear-ball game); gesvd
    is slower but converges on them. A matrix with NaN or inf entries raises ``FloatingPointError`` instead, since
    no driver can factor it and its cause is upstream (a diverged iterate)."""
    a = np.asarray(a, dtype=float)
    if not np.isfinite(a).all():
        raise FloatingPointError(f"thin_svd: the {a.shape[0]} x {a.shape[1]} matrix has non-finite entries")
    try:
        return np.linalg.svd(a, full_matrices=False)
    except np.linalg.LinAlgError:
        return scipy.linalg.svd(a, full_matrices=False, lapack_driver="gesvd")


def top_singular_pair(G) -> tuple[np.ndarray, float, np.ndarray]:
    """``(u1, sigma1, v1)`` of a dense or sparse matrix by ``svds(G, k=1, v0)``, n = min(p, q).

    The fixed ARPACK start vector linspace(1, 2, n)/norm makes the result deterministic; it is not constant,
    because a constant vector lies in the null space of a matrix whose rows sum to zero. For a matrix with a single row or column,
    where ARPACK cannot run, the pair is taken from the norm of that row/column.
    """
    p, q = G.shape
    if min(p, q) == 1:
        dense = G.toarray() if sp.issparse(G) else np.asarray(G)
        nrm = float(np.linalg.norm(dense))
        if nrm == 0.0:
            return np.eye(p, 1)[:, 0], 0.0, np.eye(q, 1)[:, 0]
        if p == 1:
            return np.ones(1), nrm, dense[0] / nrm
        return dense[:, 0] / nrm, nrm, np.ones(1)
    n = min(p, q)
    if sp.issparse(G) and G.nnz == 0 or (not sp.issparse(G) and not np.any(G)):
        return np.eye(p, 1)[:, 0], 0.0, np.eye(q, 1)[:, 0]
    if not sp.issparse(G) and n <= DENSE_SVD_MAX:  # a thin dense SVD is cheaper than ARPACK here
        U, sv, Vt = thin_svd(G)
        return U[:, 0], float(sv[0]), Vt[0]
    v0 = np.linspace(1.0, 2.0, n)  # not constant: a constant vector is in the null space of matrices whose
    u, s, vt = svds(G, k=1, v0=v0 / np.linalg.norm(v0))  # rows sum to zero (robust multiclass adjoints)
    return u[:, 0], float(s[0]), vt[0]


class NuclearBall:
    r"""The nuclear-norm ball ``{W in R^{p x q} : ||W||_* <= delta}``.

    LMO: ``-delta u1 v1^T`` with ``(u1, v1)`` the top singular pair of ``G`` (Jaggi 2013), computed by
    :func:`top_singular_pair` (ARPACK, fixed start vector; ``G`` may be dense or scipy.sparse).
    Projection: full SVD ``V = U diag(s) W^T``, then ``s`` is projected onto ``{s >= 0, sum(s) <= delta}``.
    Centre 0; ``D^2 = delta^2``.
    """

    def __init__(self, shape: tuple, radius: float):
        try:
            p, q = shape
        except (TypeError, ValueError):
            raise ValueError(f"shape must be a pair (p, q), got {shape!r}") from None
        self.shape = (_check_dim(p, "shape[0]"), _check_dim(q, "shape[1]"))
        self.radius = _check_radius(radius, "radius")

    def _lmo(self, g) -> np.ndarray:
        u, _, v = top_singular_pair(g)
        return -self.radius * np.outer(u, v)

    def lmo(self, g) -> np.ndarray:
        """``-delta u1 v1^T``; ``g`` dense or scipy.sparse of shape ``(p, q)``."""
        return self._lmo(_check_array(g, self.shape, "g", allow_sparse=True))

    def _lmo_full_svd(self, g) -> np.ndarray:
        """The same LMO ``-delta u1 v1^T``, but (u1, v1) taken from a full dense SVD of ``g`` (LAPACK), the
        factorisation a projection needs: the negative control of ``lmo-wallclock`` (an LMO that costs what a
        projection costs). ``u1 v1^T`` does not depend on the signs of the pair, so it equals :meth:`_lmo` up to
        rounding when sigma1 is simple."""
        dense = g.toarray() if sp.issparse(g) else np.asarray(g, dtype=float)
        U, _, Vt = thin_svd(dense)
        return -self.radius * np.outer(U[:, 0], Vt[0])

    def _project(self, v: np.ndarray) -> np.ndarray:
        U, s, Vt = thin_svd(v)
        if s.sum() <= self.radius:
            return np.asarray(v, dtype=float).copy()
        s_new = project_simplex(s, self.radius)
        return (U * s_new) @ Vt

    def project(self, v) -> np.ndarray:
        """Euclidean projection by a full SVD and a projection of the singular values."""
        return self._project(_check_array(v, self.shape, "v"))

    def center(self) -> np.ndarray:
        """The zero matrix."""
        return np.zeros(self.shape)

    def max_dist_sq(self) -> float:
        """``delta^2`` (attained at rank-one points ``delta u v^T``)."""
        return self.radius ** 2

    def __repr__(self) -> str:
        return f"NuclearBall({self.shape}, radius={self.radius:g})"
