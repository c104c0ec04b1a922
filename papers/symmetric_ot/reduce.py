r"""Linear and entropic OT solved on the cells of an equitable partition, and lifted back.

Notation: rows :math:`R_1..R_p`, columns :math:`S_1..S_q` of an equitable partition of
:math:`(\mathbf a, \mathbf b, \mathbf C)` (:mod:`papers.symmetric_ot.partition`), cell masses
:math:`A_r = \sum_{i \in R_r} a_i`, :math:`B_s = \sum_{j \in S_s} b_j`.

**Linear OT** (:func:`reduced_emd`). With :math:`\tilde C_{rs} = \min_{R_r \times S_s} C_{ij}`,

.. math::
    \mathrm{OT}(\mathbf a, \mathbf b, \mathbf C) = \min_{T \ge 0,\ T\mathbf 1 = A,\ T^\top \mathbf 1 = B}
    \langle \tilde C, T \rangle .

Aggregating a feasible plan gives a lower bound; equitability makes the uniform lift of :math:`T^*` onto the
argmin sets :math:`M_{rs}` feasible with the same cost (Takeda et al., AAAI 2024; Moameni 2016).

**Entropic OT** (:func:`reduced_sinkhorn`). With :math:`K = e^{-C/\varepsilon}` and block sums
:math:`\tilde K_{rs} = \sum_{R_r \times S_s} K_{ij}`, the Sinkhorn-Knopp iteration of POT,
:math:`v = b / K^\top u`, :math:`u = a / K v`, started at :math:`u = \mathbf 1/m`, :math:`v = \mathbf 1/n`,
keeps :math:`u, v` constant on cells, and its cell values follow

.. math::
    V \leftarrow B / \tilde K^\top U, \qquad U \leftarrow A / \tilde K V ,

exactly, iterate by iterate; the lifted plan is :math:`P_{ij} = U_{r(i)} K_{ij} V_{s(j)}`.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import ot
from scipy.special import logsumexp

from .partition import (Partition, _check_decimals, _refine, check_partition, check_problem, equitability_violation,
                        marginal_keys, quantize)

__all__ = ["OTResult", "reduced_emd", "reduced_sinkhorn", "symmetrize_marginals", "block_reduce"]


@dataclass
class OTResult:
    """Result of a reduced solve.

    Attributes
    ----------
    cost : float, <C, P> of the lifted plan (equal to the reduced optimum for the LP)
    plan : (m, n) lifted plan, or None when ``return_plan=False``
    reduced_plan : (p, q) plan on the cells (T* for the LP; U_r K~_rs V_s for Sinkhorn)
    reduced_cost : (p, q) cell cost (block minimum C~ for the LP; kernel-weighted block mean for Sinkhorn)
    partition : the Partition used
    timings : seconds for "refine", "aggregate", "solve", "lift"
    u, v : cell scalings U (p,), V (q,) (Sinkhorn; log-scalings when ``log_domain``), else None
    n_iter : Sinkhorn iterations performed, else None
    """

    cost: float
    plan: np.ndarray | None
    reduced_plan: np.ndarray
    reduced_cost: np.ndarray
    partition: Partition
    timings: dict = field(default_factory=dict)
    u: np.ndarray | None = None
    v: np.ndarray | None = None
    n_iter: int | None = None


# ------------------------------------------------------------------------------------------------ helpers
class _Blocks:
    """Sorted index bookkeeping for block reductions over (row cell, column cell)."""

    def __init__(self, partition: Partition):
        self.rows = np.asarray(partition.row_labels, dtype=np.int64)
        self.cols = np.asarray(partition.col_labels, dtype=np.int64)
        self.p, self.q = partition.n_row_cells, partition.n_col_cells
        self.row_order = np.argsort(self.rows, kind="stable")
        self.col_order = np.argsort(self.cols, kind="stable")
        self.row_sizes = np.bincount(self.rows, minlength=self.p)
        self.col_sizes = np.bincount(self.cols, minlength=self.q)
        self.row_starts = np.concatenate([[0], np.cumsum(self.row_sizes)[:-1]])
        self.col_starts = np.concatenate([[0], np.cumsum(self.col_sizes)[:-1]])

    def reduce(self, X: np.ndarray, ufunc) -> np.ndarray:
        """``ufunc.reduceat`` of X over every block (rows gathered once, then the small (p, n) array)."""
        partial = ufunc.reduceat(X[self.row_order], self.row_starts, axis=0)
        return ufunc.reduceat(partial[:, self.col_order], self.col_starts, axis=1)

    def expand(self, X: np.ndarray) -> np.ndarray:
        """The (m, n) array with entry X[r(i), s(j)]."""
        return X[self.rows][:, self.cols]


def _lift_plan(T, C_red, Q, blocks: "_Blocks", decimals: int, C) -> np.ndarray:
    r"""Uniform lift :math:`P_{ij} = T_{rs}/|M_{rs}|` on the argmin sets :math:`M_{rs}` of the keys.

    The block minima of the keys are the keys of the block minima of C (rint is monotone and both use the
    same scale), so no second block reduction is needed; :math:`|M_{rs}|` is a bincount over the argmin
    entries, and only those entries of the plan are written.
    """
    scale = float(np.max(np.abs(C)))
    Q_min = np.zeros(C_red.shape, dtype=np.int64) if scale == 0.0 else \
        np.rint(C_red * (10.0 ** decimals / scale)).astype(np.int64)
    ii, jj = np.nonzero(Q == blocks.expand(Q_min))
    cell = blocks.rows[ii] * blocks.q + blocks.cols[jj]
    count = np.bincount(cell, minlength=blocks.p * blocks.q)
    weight = T.ravel() / np.maximum(count, 1)
    plan = np.zeros(Q.shape)
    plan[ii, jj] = weight[cell]
    return plan


def block_reduce(X, partition: Partition, how: str = "sum") -> np.ndarray:
    """Block sums (``how="sum"``), minima ("min") or maxima ("max") of an (m, n) array over the cells."""
    ufuncs = {"sum": np.add, "min": np.minimum, "max": np.maximum}
    if how not in ufuncs:
        raise ValueError(f"how must be one of {sorted(ufuncs)}, got {how!r}")
    X = np.asarray(X)
    check_partition(partition, *X.shape)
    return _Blocks(partition).reduce(X, ufuncs[how])


def _prepare(a, b, C, partition, decimals):
    """Validate the problem, compute or check the partition; returns (a, b, C, Q, partition, refine_s)."""
    a, b, C = check_problem(a, b, C)
    if a is None or b is None:
        raise ValueError("a and b are required (got None)")
    decimals = _check_decimals(decimals)
    m, n = C.shape
    start = time.perf_counter()
    if partition is None:  # the refinement's keys are the lift's keys: quantise once
        Q = quantize(C, decimals)
        rows, cols, p, q, rounds = _refine(Q, marginal_keys(a, m, decimals), marginal_keys(b, n, decimals), 100)
        partition = Partition(row_labels=rows, col_labels=cols, n_row_cells=int(p), n_col_cells=int(q),
                              rounds=rounds, seconds=time.perf_counter() - start)
    else:
        check_partition(partition, m, n)
        Q = quantize(C, decimals)
        problem = equitability_violation(Q, np.asarray(partition.row_labels), np.asarray(partition.col_labels),
                                         marginal_keys(a, m, decimals), marginal_keys(b, n, decimals))
        if problem is not None:
            raise ValueError(f"partition is not equitable for (C, a, b): {problem}")
    return a, b, C, Q, partition, time.perf_counter() - start


def symmetrize_marginals(a, b, partition: Partition) -> tuple[np.ndarray, np.ndarray]:
    r"""Cell averages :math:`\bar a_i = A_{r(i)}/|R_{r(i)}|`, :math:`\bar b_j = B_{s(j)}/|S_{s(j)}|`.

    Used for approximately symmetric marginals: with a partition of C alone, :math:`(\bar a, \bar b, C)` is
    exactly reducible and, by LP duality with c-concave potentials,

    .. math::
        |\mathrm{OT}(a, b) - \mathrm{OT}(\bar a, \bar b)| \le \tfrac{\max C - \min C}{2}
        (\|a - \bar a\|_1 + \|b - \bar b\|_1).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"a and b must be 1-D, got shapes {a.shape} and {b.shape}")
    check_partition(partition, a.shape[0], b.shape[0])
    out = []
    for x, labels, count in ((a, partition.row_labels, partition.n_row_cells),
                             (b, partition.col_labels, partition.n_col_cells)):
        labels = np.asarray(labels)
        mass = np.bincount(labels, weights=x, minlength=count)
        size = np.bincount(labels, minlength=count)
        out.append((mass / size)[labels])
    return out[0], out[1]


# ---------------------------------------------------------------------------------------------- linear OT
def reduced_emd(a, b, C, *, partition: Partition | None = None, decimals: int = 9, num_itermax: int = 10 ** 7,
                return_plan: bool = True) -> OTResult:
    r"""Exact linear OT through the equitable-partition reduction.

    Solves :math:`\min \{\langle \tilde C, T\rangle : T \ge 0, T\mathbf 1 = A, T^\top \mathbf 1 = B\}` with
    ``ot.emd`` on the (p, q) cells, where :math:`\tilde C_{rs} = \min_{R_r \times S_s} C_{ij}`, and lifts
    :math:`P_{ij} = T^*_{rs} / |M_{rs}|` on :math:`M_{rs} = \{(i, j) \in R_r \times S_s :
    Q_{ij} = \min_{R_r \times S_s} Q\}` (integer keys, :func:`papers.symmetric_ot.partition.quantize`).
    Then :math:`\mathrm{OT}(a, b, C) = \langle \tilde C, T^* \rangle = \langle C, P \rangle` up to the key
    resolution :math:`10^{-d} \max|C|`.

    Parameters
    ----------
    a, b : marginals in the simplex; C : (m, n) cost
    partition : equitable Partition to use (checked; ValueError naming the block when not equitable), or
        None to compute the coarsest one with :func:`equitable_partition`
    decimals : key precision in [1, 15]; num_itermax : network-simplex iteration cap
    return_plan : build the (m, n) lifted plan
    """
    t0 = time.perf_counter()
    a, b, C, Q, partition, t_refine = _prepare(a, b, C, partition, decimals)
    if isinstance(num_itermax, bool) or not isinstance(num_itermax, (int, np.integer)) or num_itermax < 1:
        raise ValueError(f"num_itermax must be a positive integer, got {num_itermax!r}")
    t1 = time.perf_counter()
    blocks = _Blocks(partition)
    A = np.bincount(blocks.rows, weights=a, minlength=blocks.p)
    B = np.bincount(blocks.cols, weights=b, minlength=blocks.q)
    C_red = blocks.reduce(C, np.minimum)
    t2 = time.perf_counter()
    T, log = ot.emd(A, B, C_red, numItermax=int(num_itermax), log=True)
    if log.get("result_code", 1) != 1:
        raise RuntimeError(f"ot.emd on the reduced problem did not reach optimality: {log.get('warning')}")
    cost = float(np.sum(T * C_red))
    t3 = time.perf_counter()
    plan = None
    if return_plan:
        plan = _lift_plan(T, C_red, Q, blocks, decimals, C)
    t4 = time.perf_counter()
    timings = {"refine": t_refine, "aggregate": t2 - t1, "solve": t3 - t2, "lift": t4 - t3,
               "total": t4 - t0}
    return OTResult(cost=cost, plan=plan, reduced_plan=T, reduced_cost=C_red, partition=partition,
                    timings=timings)


# --------------------------------------------------------------------------------------------- entropic OT
def _check_sinkhorn_args(reg, num_iter, stop_thr):
    if isinstance(reg, bool) or not isinstance(reg, (int, float, np.integer, np.floating)) \
            or not np.isfinite(reg) or reg <= 0:
        raise ValueError(f"reg must be a positive finite number, got {reg!r}")
    if isinstance(num_iter, bool) or not isinstance(num_iter, (int, np.integer)) or num_iter < 1:
        raise ValueError(f"num_iter must be a positive integer, got {num_iter!r}")
    if isinstance(stop_thr, bool) or not np.isfinite(stop_thr) or stop_thr < 0:
        raise ValueError(f"stop_thr must be a non-negative finite number, got {stop_thr!r}")
    return float(reg), int(num_iter), float(stop_thr)


def _sinkhorn_cells(K_red, A, B, b, blocks, m, n, num_iter, stop_thr):
    """POT's ``sinkhorn_knopp`` on the cells (same initialisation, updates, stopping rule and checks)."""
    U = np.full(blocks.p, 1.0 / m)
    V = np.full(blocks.q, 1.0 / n)
    Kp = (1.0 / A)[:, None] * K_red
    n_iter = num_iter
    for ii in range(num_iter):
        U_prev, V_prev = U, V
        KtU = K_red.T @ U
        V = B / KtU
        U = 1.0 / (Kp @ V)
        if np.any(KtU == 0) or not (np.all(np.isfinite(U)) and np.all(np.isfinite(V))):
            warnings.warn(f"Warning: numerical errors at iteration {ii}")
            U, V = U_prev, V_prev
            n_iter = ii
            break
        if ii % 10 == 0:
            col = (V * (K_red.T @ U) / blocks.col_sizes)[blocks.cols]  # lifted column marginal
            if np.linalg.norm(col - b) < stop_thr:
                n_iter = ii + 1
                break
    return U, V, n_iter


def _sinkhorn_cells_log(logK_red, A, B, b, blocks, num_iter, stop_thr):
    """POT's ``sinkhorn_log`` on the cells (log-scalings start at 0)."""
    U = np.zeros(blocks.p)
    V = np.zeros(blocks.q)
    logA, logB = np.log(A), np.log(B)
    n_iter = num_iter
    for ii in range(num_iter):
        V = logB - logsumexp(logK_red + U[:, None], axis=0)
        U = logA - logsumexp(logK_red + V[None, :], axis=1)
        if ii % 10 == 0:
            col = (np.exp(V + logsumexp(logK_red + U[:, None], axis=0)) / blocks.col_sizes)[blocks.cols]
            if np.linalg.norm(col - b) < stop_thr:
                n_iter = ii + 1
                break
    return U, V, n_iter


def reduced_sinkhorn(a, b, C, reg, *, num_iter: int = 1000, stop_thr: float = 0.0,
                     partition: Partition | None = None, decimals: int = 9, log_domain: bool = False,
                     return_plan: bool = True) -> OTResult:
    r"""Entropic OT (Sinkhorn) on the cells, equal iterate by iterate to POT's ``ot.sinkhorn``.

    With :math:`K = e^{-C/\varepsilon}`, :math:`\tilde K_{rs} = \sum_{R_r \times S_s} K_{ij}`, start
    :math:`U = \mathbf 1/m`, :math:`V = \mathbf 1/n` and repeat ``num_iter`` times
    :math:`V \leftarrow B / \tilde K^\top U`, :math:`U \leftarrow A / \tilde K V`; the plan is
    :math:`P_{ij} = U_{r(i)} K_{ij} V_{s(j)}` and the cost
    :math:`\langle C, P\rangle = \sum_{rs} U_r V_s \sum_{R_r \times S_s} K_{ij} C_{ij}`.
    Stopping follows POT: every 10 iterations the 2-norm of the lifted column-marginal error is compared with
    ``stop_thr`` (``stop_thr=0`` runs exactly ``num_iter`` iterations).

    ``log_domain=True`` mirrors ``ot.sinkhorn(..., method="sinkhorn_log")`` with
    :math:`\log \tilde K_{rs} = \mathrm{logsumexp}_{R_r \times S_s}(-C_{ij}/\varepsilon)`,
    :math:`V \leftarrow \log B - \mathrm{lse}_r(U_r + \log\tilde K_{rs})`,
    :math:`U \leftarrow \log A - \mathrm{lse}_s(V_s + \log\tilde K_{rs})` (U, V are then log-scalings).

    Reference: Cuturi, "Sinkhorn distances", NeurIPS 2013; Takeda et al., AAAI 2024.
    """
    t0 = time.perf_counter()
    reg, num_iter, stop_thr = _check_sinkhorn_args(reg, num_iter, stop_thr)
    a, b, C, _, partition, t_refine = _prepare(a, b, C, partition, decimals)
    m, n = C.shape
    t1 = time.perf_counter()
    blocks = _Blocks(partition)
    A = np.bincount(blocks.rows, weights=a, minlength=blocks.p)
    B = np.bincount(blocks.cols, weights=b, minlength=blocks.q)
    if log_domain:
        Mr = C / (-reg)
        block_max = blocks.reduce(Mr, np.maximum)
        shifted = np.exp(Mr - blocks.expand(block_max))  # <= 1, no underflow of a whole block
        shifted_sum = blocks.reduce(shifted, np.add)
        logK_red = block_max + np.log(shifted_sum)
        reduced_cost = blocks.reduce(shifted * C, np.add) / shifted_sum
        del shifted
        t2 = time.perf_counter()
        U, V, n_iter = _sinkhorn_cells_log(logK_red, A, B, b, blocks, num_iter, stop_thr)
        t3 = time.perf_counter()
        logP = Mr + U[blocks.rows][:, None] + V[blocks.cols][None, :]
        P = np.exp(logP, out=logP)
        cost = float(np.sum(P * C))
        reduced_plan = np.exp(U[:, None] + logK_red + V[None, :])
    else:
        K = np.exp(C / (-reg))
        K_red = blocks.reduce(K, np.add)
        KC_red = blocks.reduce(K * C, np.add)
        t2 = time.perf_counter()
        U, V, n_iter = _sinkhorn_cells(K_red, A, B, b, blocks, m, n, num_iter, stop_thr)
        t3 = time.perf_counter()
        cost = float(U @ KC_red @ V)
        P = U[blocks.rows][:, None] * K * V[blocks.cols][None, :] if return_plan else None
        reduced_plan = U[:, None] * K_red * V[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            reduced_cost = np.where(K_red > 0, KC_red / K_red, 0.0)
    t4 = time.perf_counter()
    timings = {"refine": t_refine, "aggregate": t2 - t1, "solve": t3 - t2, "lift": t4 - t3, "total": t4 - t0}
    return OTResult(cost=cost, plan=P if return_plan else None, reduced_plan=reduced_plan,
                    reduced_cost=reduced_cost, partition=partition, timings=timings, u=U, v=V, n_iter=n_iter)
