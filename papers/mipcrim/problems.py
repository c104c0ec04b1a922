"""Ising problems: couplings, energies and instance generators.

Generalised Ising energy (Banerjee et al. 2026, eq. 1) of spins :math:`s \\in \\{-1,+1\\}^n`:

.. math::  E(s) = -\\tfrac12 s^\\top J s - h^\\top s,

with :math:`J` symmetric. Flipping spin :math:`i` changes :math:`E` by :math:`2 s_i ((Js)_i + h_i)` (zero diagonal),
so :math:`s` is a *one-flip local minimum* iff :math:`s \\odot (Js + h) \\ge 0` (Lemma 3.3; ties count).

- MAX-CUT with weights :math:`W`: :math:`J = -W` (as the reference code; the paper's text writes :math:`-W/2`), and
  :math:`\\mathrm{cut}(s) = \\sum_{(i,j)} w_{ij} (1 - s_i s_j)/2 = \\tfrac12 \\sum w - E(s)/2`.
- Number partitioning of :math:`a`: :math:`J = -(a a^\\top - \\mathrm{Diag}(a \\odot a))`, discrepancy
  :math:`|a^\\top s|`.
- SK (reference ``benchmark_SK.py``): :math:`J = (G + G^\\top)/2` with :math:`G_{ij} \\sim N(0,1)`, zero diagonal,
  rounded to 5 decimals (off-diagonal variance 1/2).
- GOE: :math:`J = \\mathrm{triu}(G/\\sqrt n, 1) + \\text{transpose} + \\mathrm{Diag}(2 g/\\sqrt n)`, rounded to
  5 decimals (diagonal variance 4/n).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

__all__ = ["maxcut_coupling", "cut_value", "npp_coupling", "npp_operator", "npp_discrepancy", "sk_instance",
           "goe_instance", "kn_instance", "er_edges", "landscape_instance", "ising_energy", "local_field",
           "sync_score", "check_spins", "check_edges", "check_npp_numbers"]


def check_spins(spins, n: int, *, name: str = "spins") -> np.ndarray:
    """Return ``spins`` as a float64 vector after checking length ``n`` and values in {-1, +1}."""
    s = np.asarray(spins)
    if s.ndim != 1 or s.shape[0] != n:
        raise ValueError(f"{name} must be a vector of length {n}, got shape {s.shape}")
    s = s.astype(np.float64)
    if not np.all((s == 1.0) | (s == -1.0)):
        raise ValueError(f"{name} must contain only -1 and +1")
    return s


def check_edges(n: int, edges) -> np.ndarray:
    """Validate an edge array (m, 3) of ``i, j, w`` (0-based) for an ``n``-vertex graph; returns float64."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 2 or e.shape[1] != 3:
        raise ValueError(f"edges must have shape (m, 3) with columns i, j, w; got {e.shape}")
    if not np.all(np.isfinite(e)):
        raise ValueError("edges must be finite (non-finite index or weight)")
    ij = e[:, :2]
    if np.any(ij != np.round(ij)) or np.any(ij < 0) or np.any(ij >= n):
        raise ValueError(f"edges: vertex indices must be integers in [0, {n})")
    if np.any(ij[:, 0] == ij[:, 1]):
        raise ValueError("edges: self-loops are not allowed")
    lo, hi = np.minimum(ij[:, 0], ij[:, 1]), np.maximum(ij[:, 0], ij[:, 1])
    key = lo * n + hi
    if np.unique(key).size != key.size:
        raise ValueError("edges: duplicate vertex pairs are not allowed")
    return e


def maxcut_coupling(n: int, edges) -> sp.csr_matrix:
    """Coupling :math:`J = -W` (CSR, symmetric, zero diagonal) of a weighted graph given as (m, 3) edges."""
    e = check_edges(n, edges)
    i, j, w = e[:, 0].astype(np.int64), e[:, 1].astype(np.int64), e[:, 2]
    W = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n))
    J = (-W).tocsr()
    J.sort_indices()
    return J


def cut_value(edges, spins) -> float:
    """Cut weight :math:`\\sum_{(i,j,w)} w (1 - s_i s_j)/2` of the partition given by ``spins``."""
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 2 or e.shape[1] != 3:
        raise ValueError(f"edges must have shape (m, 3) with columns i, j, w; got {e.shape}")
    s = np.asarray(spins)
    n = s.shape[0] if s.ndim == 1 else -1
    e = check_edges(max(n, 1), e)
    s = check_spins(spins, n)
    i, j = e[:, 0].astype(np.int64), e[:, 1].astype(np.int64)
    return float(math.fsum(e[:, 2] * (1.0 - s[i] * s[j]) / 2.0))


def check_npp_numbers(a) -> np.ndarray:
    """Validate NPP numbers: non-empty, finite and non-negative (float64 vector)."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"a must be a non-empty vector of numbers, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("a must be finite")
    if np.any(a < 0):
        raise ValueError("a must be non-negative")
    return a


def npp_coupling(a) -> np.ndarray:
    """Dense NPP coupling :math:`J = -(a a^\\top - \\mathrm{Diag}(a \\odot a))`, so :math:`E = (|a^\\top s|^2 -
    \\|a\\|^2)/2`."""
    a = check_npp_numbers(a)
    J = -np.outer(a, a)
    np.fill_diagonal(J, 0.0)
    return J


def npp_operator(a) -> LinearOperator:
    """Rank-one NPP coupling as a symmetric LinearOperator: :math:`Jx = -(a (a^\\top x) - a \\odot a \\odot x)`."""
    a = check_npp_numbers(a)
    a2 = a * a

    def mv(x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            return -(a * (a @ x) - a2 * x)
        return -(np.outer(a, a @ x) - a2[:, None] * x)

    return LinearOperator((a.size, a.size), matvec=mv, matmat=mv, rmatvec=mv, dtype=np.float64)


def npp_discrepancy(a, spins) -> float:
    """Discrepancy :math:`|a^\\top s|` computed with ``math.fsum`` (exactly rounded)."""
    a = check_npp_numbers(a)
    s = check_spins(spins, a.size)
    return abs(math.fsum(a * s))


def sk_instance(n: int, seed: int) -> np.ndarray:
    """SK instance of the reference code: ``W ~ N(0,1)^{n x n}``, ``J = (W + W^T)/2``, zero diagonal, 5 decimals."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((n, n))
    J = (W + W.T) / 2.0
    np.fill_diagonal(J, 0.0)
    return np.round(J, 5)


def goe_instance(n: int, seed: int) -> np.ndarray:
    """GOE instance with diagonal (variance 4/n), as the reference code; the solver gets it with zeroed diagonal."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((n, n)) / np.sqrt(n)
    J = np.triu(W, 1)
    J = J + J.T
    J += np.diag(2.0 * rng.standard_normal(n) / np.sqrt(n))
    return np.round(J, 5)


def kn_instance(n: int, seed: int) -> np.ndarray:
    """Complete graph with +-1 weights (the paper's K2000 recipe): ``W = sign(R + R^T)``, zero diagonal."""
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((n, n))
    W = np.sign(R + R.T)
    np.fill_diagonal(W, 0.0)
    return W


def er_edges(n: int, p: float, seed: int) -> np.ndarray:
    """Unweighted Erdos-Renyi graph ``networkx.gnp_random_graph(n, p, seed)`` as (m, 3) edges (i < j, w = 1)."""
    import networkx as nx

    g = nx.gnp_random_graph(n, p, seed=seed)
    e = np.array(sorted((min(u, v), max(u, v)) for u, v in g.edges()), dtype=np.float64).reshape(-1, 2)
    return np.column_stack([e, np.ones(len(e))])


def landscape_instance(t: int, n: int = 12) -> tuple[np.ndarray, float]:
    """Landscape test instance ``t``: ``(J, gamma0)``; even t: +-1 couplings (gamma0 = 1), odd t: N(0,1) rounded to
    3 decimals (gamma0 = 1e-3, the least significant bit)."""
    rng = np.random.default_rng(1000 + t)
    if t % 2 == 0:
        R, g0 = rng.choice([-1.0, 1.0], size=(n, n)), 1.0
    else:
        R, g0 = np.round(rng.standard_normal((n, n)), 3), 1e-3
    J = np.triu(R, 1)
    return J + J.T, g0


def _matvec(J, s):
    return J @ s if not isinstance(J, LinearOperator) else J.matvec(s)


def ising_energy(J, spins, h=None) -> float:
    """:math:`E(s) = -\\tfrac12 s^\\top J s - h^\\top s`, with ``J`` as given (a diagonal shifts E by
    :math:`-\\mathrm{tr} J / 2`)."""
    n = J.shape[0]
    s = check_spins(spins, n)
    e = -0.5 * float(s @ np.asarray(_matvec(J, s)).ravel())
    if h is not None:
        h = np.asarray(h, dtype=np.float64).ravel()
        if h.shape[0] != n:
            raise ValueError(f"h must have length {n}, got {h.shape[0]}")
        e -= float(h @ s)
    return e


def local_field(J, spins, h=None) -> np.ndarray:
    """Local field :math:`Js + h` (flipping spin i changes E by :math:`2 s_i (Js + h)_i` when diag J = 0)."""
    s = check_spins(spins, J.shape[0])
    f = np.asarray(_matvec(J, s), dtype=np.float64).ravel()
    if h is not None:
        h = np.asarray(h, dtype=np.float64).ravel()
        if h.shape[0] != s.shape[0]:
            raise ValueError(f"h must have length {s.shape[0]}, got {h.shape[0]}")
        f = f + h
    return f


def sync_score(J, spins, h=None) -> float:
    """Fraction of spins aligned with their local field: :math:`\\frac1n \\#\\{i: s_i (Js + h)_i \\ge 0\\}`.

    Equal to 1 exactly at one-flip local minima (Lemma 3.3).
    """
    s = check_spins(spins, J.shape[0])
    return float(np.mean(s * local_field(J, s, h) >= 0.0))
