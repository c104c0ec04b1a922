"""Baselines standing in for the paper's (D-Wave, FEM, PI-GNN, SIA, NeuroSA are not reproduced; IAMP is in
:mod:`papers.mipcrim.iamp`).

- Greedy one-flip local search (steepest descent on :math:`E(s) = -\\tfrac12 s^\\top J s`): flip
  :math:`\\arg\\min_i s_i (Js)_i` while it is negative, updating the field :math:`f \\leftarrow f + 2 s_i' J_{:,i}`.
- Simulated annealing: ``dwave.samplers.SimulatedAnnealingSampler`` (Ocean), with :math:`h_{dw} = -h` and
  :math:`J_{dw}(i,j) = -J_{ij}` for :math:`i < j`.
- Ballistic simulated bifurcation (Goto et al., Sci. Adv. 2021):
  :math:`y \\mathrel{+}= (-(a_0 - a(t)) x + c_0 J x)\\,dt`, :math:`x \\mathrel{+}= a_0 y\\, dt`, inelastic walls at
  :math:`|x_i| = 1`; :math:`c_0 = 0.5 / (\\sqrt n \\sqrt{\\sum_{ij} J_{ij}^2 / (n(n-1))})`. The step is lowered below
  the stability limit of this symplectic Euler update (:func:`bsb_time_step`) when Goto's dt = 1.25 exceeds it, as
  it does on every MAX-CUT graph with many edges per vertex.
- Goemans-Williamson: :math:`\\max \\sum_{i<j} W_{ij}(1 - X_{ij})/2` s.t. :math:`X \\succeq 0`, diag X = 1, and
  Gaussian hyperplane rounding of :math:`V` with :math:`X = V V^\\top` (Goemans & Williamson, JACM 1995).
- Number partitioning: Karmarkar-Karp largest differencing (Karmarkar & Karp 1982) with the partition recovered by
  2-colouring the differencing tree, and greedy LPT (largest first, to the lighter side, ties to side +1).
"""
from __future__ import annotations

import heapq
import time

import numpy as np
import scipy.sparse as sp

from shared.solvers import SolverError, solve

from .problems import check_npp_numbers, check_spins
from .solver import check_coupling

__all__ = ["one_flip_local_search", "greedy_restarts", "simulated_annealing", "bsb_c0", "bsb_time_step",
           "ballistic_sb", "gw_maxcut",
           "karmarkar_karp", "greedy_partition"]


def one_flip_local_search(J, spins) -> np.ndarray:
    """Steepest one-flip descent from ``spins`` ((n,) or (n, R) for R independent starts) to a one-flip minimum.

    Each step flips :math:`i^\\star = \\arg\\min_i s_i (Js)_i` (the largest energy decrease
    :math:`-2 s_i (Js)_i`) while it is < 0. Returns int8 spins of the input's shape.
    """
    J = check_coupling(J)
    if not (isinstance(J, np.ndarray) or sp.issparse(J)):
        raise ValueError("J must be a dense array or a scipy sparse matrix")
    s0 = np.asarray(spins)
    single = s0.ndim == 1
    S = s0.reshape(-1, 1) if single else s0
    if S.ndim != 2:
        raise ValueError(f"spins must have shape (n,) or (n, R), got {s0.shape}")
    for c in range(S.shape[1]):
        check_spins(S[:, c], J.shape[0])
    S = S.astype(np.float64).copy()
    D = S * np.asarray(J @ S)                   # D_i = s_i (Js)_i; flipping i changes E by 2 D_i
    cols = np.arange(S.shape[1])
    while True:
        i = np.argmin(D, axis=0)
        act = D[i, cols] < 0
        if not act.any():
            break
        a_cols, a_i = cols[act], i[act]
        S[a_i, a_cols] *= -1.0
        D[a_i, a_cols] *= -1.0                  # (Js)_i is unchanged (J_ii = 0), s_i flips
        # neighbours j: (Js)_j += 2 s_i' J_ji, so D_j += 2 s_i' s_j J_ji
        if sp.issparse(J):
            start, stop = J.indptr[a_i], J.indptr[a_i + 1]
            lens = stop - start
            idx = np.repeat(start - np.cumsum(lens) + lens, lens) + np.arange(lens.sum())
            rows, cc = J.indices[idx], np.repeat(a_cols, lens)
            D[rows, cc] += 2.0 * np.repeat(S[a_i, a_cols], lens) * S[rows, cc] * J.data[idx]
        else:
            D[:, a_cols] += 2.0 * S[a_i, a_cols][None, :] * S[:, a_cols] * J[:, a_i]
    out = S.astype(np.int8)
    return out[:, 0] if single else out


def greedy_restarts(J, restarts: int, seed: int):
    """``restarts`` greedy descents from uniform random spins (``default_rng(seed)``); returns (spins (n, R),
    energies (R,))."""
    J = check_coupling(J)
    if restarts < 1:
        raise ValueError(f"restarts must be >= 1, got {restarts!r}")
    rng = np.random.default_rng(seed)
    S0 = rng.choice(np.array([-1, 1], dtype=np.int8), size=(J.shape[0], int(restarts)))
    S = one_flip_local_search(J, S0).astype(np.float64)
    E = -0.5 * np.sum(S * np.asarray(J @ S), axis=0)
    return S.astype(np.int8), E


def _upper_items(J):
    if sp.issparse(J):
        U = sp.triu(J, k=1).tocoo()
        return U.row, U.col, U.data
    r, c = np.triu_indices(J.shape[0], k=1)
    v = J[r, c]
    nz = v != 0
    return r[nz], c[nz], v[nz]


def simulated_annealing(J, *, num_reads: int, num_sweeps: int = 1000, seed: int = 0, h=None):
    """D-Wave's simulated annealing on :math:`E = -\\tfrac12 s^\\top J s - h^\\top s`; returns (spins (n, R) int8,
    energies (R,), seconds). D-Wave minimises :math:`\\sum h_{dw} s + \\sum_{i<j} J_{dw} s s`, so
    :math:`h_{dw} = -h`, :math:`J_{dw} = -J_{ij}`."""
    from dwave.samplers import SimulatedAnnealingSampler

    J = check_coupling(J)
    n = J.shape[0]
    hv = np.zeros(n) if h is None else np.asarray(h, dtype=np.float64)
    r, c, v = _upper_items(J)
    h_dw = {i: float(-hv[i]) for i in range(n)}
    J_dw = {(int(a), int(b)): float(-w) for a, b, w in zip(r, c, v)}
    t0 = time.perf_counter()
    ss = SimulatedAnnealingSampler().sample_ising(h_dw, J_dw, num_reads=int(num_reads), num_sweeps=int(num_sweeps),
                                                  seed=int(seed))
    sec = time.perf_counter() - t0
    labels = list(ss.variables)
    order = np.argsort(np.asarray(labels))
    S = ss.record.sample[:, order].T.astype(np.int8)
    Sf = S.astype(np.float64)
    E = -0.5 * np.sum(Sf * np.asarray(J @ Sf), axis=0) - hv @ Sf
    return S, E, sec


def bsb_c0(J) -> float:
    """Goto's coupling scale :math:`c_0 = 0.5 / (\\sqrt n\\, \\sigma_J)`,
    :math:`\\sigma_J^2 = \\sum_{ij} J_{ij}^2 / (n(n-1))` (Goto et al., Sci. Adv. 2021). ValueError when J is zero."""
    J = check_coupling(J)
    n = J.shape[0]
    sq = float((J.multiply(J)).sum()) if sp.issparse(J) else float(np.sum(J * J))
    if sq == 0:
        raise ValueError("J must not be zero")
    return 0.5 / (np.sqrt(n) * np.sqrt(sq / (n * (n - 1))))


def bsb_time_step(J, *, dt: float = 1.25, a0: float = 1.0, safety: float = 0.9) -> float:
    r"""The largest step, at most ``dt``, at which ballistic SB's update is stable on ``J``.

    Between the walls the update is symplectic Euler for :math:`\ddot x = a_0(-(a_0 - a) x + c_0 J x)`; an
    eigenvector of J with eigenvalue :math:`\mu` oscillates with stiffness :math:`k = a_0 (a_0 - a - c_0 \mu)`
    where :math:`k > 0`, and symplectic Euler is stable iff :math:`k\, dt^2 < 4`. The stiffest mode is the
    smallest eigenvalue at :math:`a = 0`, so the step is
    :math:`\min(dt,\ \mathrm{safety} \cdot 2 / \sqrt{a_0 (a_0 - c_0 \mu_{\min})})`. Goto's dt = 1.25 assumes the
    semicircle spectrum of a dense zero-mean J (:math:`c_0 |\mu_{\min}| \approx 1`, limit 1.41); for MAX-CUT
    (J = -W) :math:`\mu_{\min}` is minus about the mean degree, and at dt = 1.25 the uniform mode grows every step
    until every spin hits the same wall (a cut near zero).
    """
    import scipy.sparse.linalg as sla

    for v, nm in ((dt, "dt"), (a0, "a0")):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{nm} must be positive and finite, got {v!r}")
    if not 0 < safety <= 1:
        raise ValueError(f"safety must lie in (0, 1], got {safety!r}")
    J = check_coupling(J)
    c0 = bsb_c0(J)
    if J.shape[0] <= 64:
        mu = float(np.linalg.eigvalsh(J.toarray() if sp.issparse(J) else J)[0])
    else:
        op = sp.csr_matrix(J, dtype=np.float64) if sp.issparse(J) else np.asarray(J, dtype=np.float64)
        mu = float(sla.eigsh(op, k=1, which="SA", return_eigenvectors=False, v0=np.ones(J.shape[0]))[0])
    stiffness = a0 * (a0 - c0 * min(mu, 0.0))
    return float(min(dt, safety * 2.0 / np.sqrt(stiffness)))


def ballistic_sb(J, *, steps: int = 2000, dt: float = 1.25, a0: float = 1.0, reads: int = 1, seed: int = 0,
                 stable_step: bool = True):
    """Ballistic simulated bifurcation with ``reads`` columns (``default_rng(seed)``: x0, y0 ~ U(-0.1, 0.1)).

    The pump a(t) rises linearly from 0 to a0 over ``steps`` x ``dt`` time units. With ``stable_step`` (the
    default) the step is :func:`bsb_time_step` and the number of steps grows so that the ramp keeps that length;
    ``stable_step=False`` integrates at ``dt`` as given (Goto's 1.25, unstable on MAX-CUT graphs: the control).
    Returns (spins (n, R) int8 with sign(0) = +1, energies (R,))."""
    J = check_coupling(J)
    n = J.shape[0]
    c0 = bsb_c0(J)
    h = bsb_time_step(J, dt=dt, a0=a0) if stable_step else float(dt)
    n_steps = int(np.ceil(int(steps) * dt / h - 1e-9))
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.1, 0.1, size=(n, reads))
    y = rng.uniform(-0.1, 0.1, size=(n, reads))
    for a in np.linspace(0.0, a0, n_steps):
        y += (-(a0 - a) * x + c0 * np.asarray(J @ x)) * h
        x += a0 * y * h
        wall = np.abs(x) > 1
        x[wall] = np.sign(x[wall])
        y[wall] = 0.0
    S = np.where(x >= 0, 1.0, -1.0)
    E = -0.5 * np.sum(S * np.asarray(J @ S), axis=0)
    return S.astype(np.int8), E


def gw_maxcut(W, *, roundings: int = 1000, seed: int = 0, solver: str = "SCS"):
    """Goemans-Williamson on a symmetric weight matrix ``W`` (zero diagonal).

    Solves :math:`\\max \\tfrac14 (\\sum W - \\langle W, X\\rangle)` s.t. :math:`X \\succeq 0`, diag X = 1 through
    ``shared.solvers.solve`` (SCS requested first, then the automatic chain), factors :math:`X = V V^\\top` by ``eigh`` with
    clipped eigenvalues, and keeps the best of ``roundings`` hyperplanes :math:`s = \\mathrm{sign}(V r)`,
    :math:`r \\sim N(0, I)`. Returns dict with ``cut``, ``spins``, ``sdp_bound``, ``backend``, ``seconds``.
    """
    import cvxpy as cp

    W = np.asarray(W, dtype=np.float64)
    check_coupling(W, name="W")
    n = W.shape[0]
    X = cp.Variable((n, n), PSD=True)
    prob = cp.Problem(cp.Maximize(0.25 * (W.sum() - cp.sum(cp.multiply(W, X)))), [cp.diag(X) == 1])
    t0 = time.perf_counter()
    try:                                          # SCS first (Clarabel is ~100x slower here), then the auto chain
        res = solve(prob, solver=solver)
    except SolverError:
        res = solve(prob)
    if res.status != "optimal":
        raise SolverError(f"GW-SDP: backend {res.backend} returned status {res.status}")
    backend, bound = res.backend, float(res.value)
    Xv = np.asarray(X.value)
    Xv = (Xv + Xv.T) / 2
    lam, U = np.linalg.eigh(Xv)
    V = U * np.sqrt(np.clip(lam, 0, None))
    rng = np.random.default_rng(seed)
    Rm = rng.standard_normal((n, int(roundings)))
    S = np.where(V @ Rm >= 0, 1.0, -1.0)
    cuts = 0.25 * (W.sum() - np.sum(S * (W @ S), axis=0))
    k = int(np.argmax(cuts))
    return {"cut": float(cuts[k]), "spins": S[:, k].astype(np.int8), "sdp_bound": bound, "backend": backend,
            "seconds": time.perf_counter() - t0}


def karmarkar_karp(a) -> np.ndarray:
    """Karmarkar-Karp largest differencing: repeatedly replace the two largest numbers by their difference (the
    two go to opposite sides); the sides are recovered by 2-colouring the differencing tree. Returns int8 spins.
    Ties in the heap are broken by creation order (deterministic)."""
    a = check_npp_numbers(a)
    n = a.size
    heap = [(-float(v), i) for i, v in enumerate(a)]
    heapq.heapify(heap)
    records = []
    nxt = n
    while len(heap) > 1:
        va, ia = heapq.heappop(heap)
        vb, ib = heapq.heappop(heap)
        records.append((nxt, ia, ib))
        heapq.heappush(heap, (va - vb, nxt))        # -(|va| - |vb|)
        nxt += 1
    sign = np.zeros(nxt, dtype=np.int8)
    sign[heap[0][1]] = 1
    for c, ia, ib in reversed(records):
        sign[ia] = sign[c]
        sign[ib] = -sign[c]
    return sign[:n].copy()


def greedy_partition(a) -> np.ndarray:
    """Greedy LPT: numbers in decreasing order (stable), each to the currently lighter side (ties to +1)."""
    a = check_npp_numbers(a)
    s = np.empty(a.size, dtype=np.int8)
    tot = [0.0, 0.0]
    for i in np.argsort(-a, kind="stable"):
        side = 0 if tot[0] <= tot[1] else 1
        tot[side] += a[i]
        s[i] = 1 if side == 0 else -1
    return s
