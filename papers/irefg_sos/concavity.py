r"""SOS-concavity certificate for a player's utility (after Leon, Sakos, Sim, Varvitsiotis, NeurIPS 2025,
"Certifying Concavity and Monotonicity in Games via Sum-of-Squares Hierarchies", arXiv 2512.10292).

:math:`U` is SOS-concave when :math:`q(x, w) = -w^\top \nabla^2 U(x)\, w` is a sum of squares in
:math:`(x, w)`: :math:`q = b^\top Q b` with :math:`Q \succeq 0` and the basis
:math:`b = \{w_j x^\alpha : j \le n,\ |\alpha| \le \lceil (\deg U - 2)/2 \rceil\}` (coefficients matched on
every monomial :math:`w_j w_k x^\gamma`). The Hessian is taken in the free (eliminated) variables; concavity
is invariant under that affine map. For an SOS-concave single-player game the level
:math:`r = \lceil \deg U / 2 \rceil` moment bound is exact and its first moments are a maximiser (Jensen;
Lasserre 2009): one SDP solves the game.

We solve :math:`\max t` s.t. :math:`Q - t I \succeq 0`, :math:`t \le 1`, coefficient matching; the game is
certified iff :math:`t^* \ge -10^{-7}` (``min_gram_eigenvalue`` = :math:`t^*`); an infeasible matching
system (no symmetric Gram matrix at all) means not certified.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import poly as P

__all__ = ["CertificateResult", "sos_concavity_certificate", "hessian_form", "sos_concave_poly",
           "pseudo_gradient_form", "sos_monotone_polys", "sos_monotonicity_certificate"]

CERT_TOL = 1e-7


@dataclass
class CertificateResult:
    """``certified``, ``status`` ("certified" | "not_certified" | solver status), ``min_gram_eigenvalue``
    (largest achievable smallest eigenvalue of a Gram matrix, None if no Gram matrix), ``solver``, ``seconds``."""

    certified: bool
    status: str
    min_gram_eigenvalue: float | None
    solver: str
    seconds: float
    gram_size: int = 0


def hessian_form(U: dict, n: int) -> dict:
    r""":math:`q(x, w) = -w^\top \nabla^2 U(x) w` as a dict ``(j, k, gamma) -> coefficient`` with ``j <= k``
    (the coefficient of :math:`w_j w_k x^\gamma`)."""
    out: dict = {}
    for j in range(n):
        dj = P.derivative(U, j)
        for k in range(j, n):
            hjk = P.derivative(dj, k)
            mult = 1.0 if j == k else 2.0
            for g, c in hjk.items():
                out[(j, k, g)] = out.get((j, k, g), 0.0) - mult * c
    return {key: v for key, v in out.items() if abs(v) > 1e-14}


def _gram_certificate(q: dict, n: int, d: int, solver, start: float) -> CertificateResult:
    r"""Is the form :math:`q(x, w) = \sum q_{jk\gamma} w_j w_k x^\gamma` SOS with the basis
    :math:`\{w_j x^\alpha : |\alpha| \le d\}`? Maximises the smallest Gram eigenvalue (capped at 1)."""
    import cvxpy as cp

    from shared.solvers import solve

    xs = P.monomials(n, d)
    basis = [(j, a) for j in range(n) for a in xs]
    s = len(basis)
    keys: dict = {}
    rows, cols = [], []
    for p, (j, a) in enumerate(basis):
        for r, (k, b) in enumerate(basis):
            key = (min(j, k), max(j, k), tuple(u + v for u, v in zip(a, b)))
            row = keys.setdefault(key, len(keys))
            rows.append(row)
            cols.append(p * s + r)
    missing = [key for key in q if key not in keys]
    if missing:  # the basis cannot reach these monomials: not SOS
        return CertificateResult(False, "not_certified", None, "", time.perf_counter() - start, s)
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(keys), s * s))
    rhs = np.zeros(len(keys))
    for key, v in q.items():
        rhs[keys[key]] = v
    Q = cp.Variable((s, s), symmetric=True)
    t = cp.Variable()
    problem = cp.Problem(cp.Maximize(t), [A @ cp.vec(Q, order="C") == rhs, Q - t * np.eye(s) >> 0, t <= 1])
    res = solve(problem, solver=solver)
    seconds = time.perf_counter() - start
    if res.status != "optimal":
        return CertificateResult(False, "not_certified", None, res.backend, seconds, s)
    tv = float(t.value)
    ok = tv >= -CERT_TOL
    return CertificateResult(ok, "certified" if ok else "not_certified", tv, res.backend, seconds, s)


def sos_concave_poly(U: dict, n: int, *, solver: str | None = None) -> CertificateResult:
    """SOS-concavity certificate of a polynomial ``U`` in ``n`` variables (see the module docstring)."""
    start = time.perf_counter()
    d = max(0, math.ceil((P.degree(U) - 2) / 2))
    return _gram_certificate(hessian_form(U, n), n, d, solver, start)


def pseudo_gradient_form(utilities, blocks, n: int) -> dict:
    r""":math:`q(x, w) = w^\top J_F(x)\, w` for the pseudo-gradient :math:`F = (-\nabla_{x_i} U_i)_i`.

    ``utilities[i]`` is player i's polynomial in all ``n`` variables and ``blocks[i]`` the indices of its own
    variables; :math:`J_{jk} = -\partial^2 U_{i(j)} / \partial x_j \partial x_k` (:math:`i(j)` the owner of
    :math:`x_j`). :math:`w^\top J w = w^\top \tfrac12 (J + J^\top) w`, so :math:`q` is SOS iff the
    symmetrised Jacobian is an SOS matrix. Returned as ``(j, k, gamma) -> coefficient`` with ``j <= k``.
    """
    if len(utilities) != len(blocks):
        raise ValueError(f"blocks must have one entry per utility ({len(utilities)}), got {len(blocks)}")
    seen = [j for b in blocks for j in b]
    if len(set(seen)) != len(seen) or any(not 0 <= j < n for j in seen):
        raise ValueError("blocks must be disjoint lists of variable indices in 0..n-1")
    out: dict = {}
    for U, own in zip(utilities, blocks):
        for j in own:
            dj = P.derivative(U, j)
            for k in range(n):
                for g, c in P.derivative(dj, k).items():
                    key = (min(j, k), max(j, k), g)
                    out[key] = out.get(key, 0.0) - c
    return {key: v for key, v in out.items() if abs(v) > 1e-14}


def sos_monotone_polys(utilities, blocks, n: int, *, solver: str | None = None) -> CertificateResult:
    """SOS-monotonicity certificate (Leon, Sakos, Sim, Varvitsiotis 2025): the symmetrised Jacobian of the
    pseudo-gradient :math:`(-\nabla_{x_i} U_i)_i` is an SOS matrix, i.e. :math:`w^\top J_F(x) w` is SOS in
    :math:`(x, w)`. Certified games are monotone (concave-like): the NE problem is a monotone VI."""
    start = time.perf_counter()
    q = pseudo_gradient_form(utilities, blocks, n)
    deg_x = max((sum(g) for (_, _, g) in q), default=0)
    return _gram_certificate(q, n, math.ceil(deg_x / 2), solver, start)


def sos_monotonicity_certificate(game, *, solver: str | None = None) -> CertificateResult:
    """SOS-monotonicity certificate of a game (all players, free variables; see :func:`sos_monotone_polys`)."""
    return sos_monotone_polys([game.polynomial(p) for p in game.players],
                              [game.player_variables(p) for p in game.players], game.n_variables, solver=solver)


def sos_concavity_certificate(game, *, player: int = 1, solver: str | None = None) -> CertificateResult:
    """Certify that ``player``'s utility (free variables of all players) is SOS-concave.

    ValueError when ``player`` is not a player of ``game``.
    """
    player = game.check_player(player)
    return sos_concave_poly(game.polynomial(player), game.n_variables, solver=solver)
