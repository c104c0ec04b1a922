r"""Coarsest equitable partition of an OT problem (colour refinement on the cost matrix).

An *equitable partition* of a problem :math:`(\mathbf a, \mathbf b, \mathbf C)`, with
:math:`\mathbf C \in \mathbb R^{m \times n}`, is a pair of partitions :math:`R_1..R_p` of the rows and
:math:`S_1..S_q` of the columns such that

.. math::
    a_i = a_{i'} \ (i, i' \in R_r), \qquad b_j = b_{j'} \ (j, j' \in S_s),

    \{C_{ij} : j \in S_s\} \text{ is the same multiset for all } i \in R_r, \qquad
    \{C_{ij} : i \in R_r\} \text{ is the same multiset for all } j \in S_s .

The orbits of any finite group :math:`G` with :math:`C_{gi,gj} = C_{ij}`, :math:`a_{gi} = a_i`,
:math:`b_{gj} = b_j` form an equitable partition; the coarsest equitable partition refining the marginal
classes is found without knowing :math:`G` by colour refinement (1-dimensional Weisfeiler-Leman on the
bipartite row/column graph whose edge colours are the cost values).

Equality of costs is decided on integer keys :math:`Q_{ij} = \mathrm{rint}(C_{ij} 10^d / \max|C|)`, so that
rounding noise of order :math:`10^{-16}` does not split orbits; the same keys are used for refinement,
equitability checks and the argmin sets of the lifted plan (:mod:`papers.symmetric_ot.reduce`).

References: Takeda et al., "Optimal Transport with Cyclic Symmetry", AAAI 2024; Moameni, "Invariance
properties of the Monge-Kantorovich problem", 2016; Grohe et al., "Dimension reduction via colour refinement",
ESA 2014.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

__all__ = ["Partition", "equitable_partition", "is_equitable", "quantize", "marginal_keys",
           "check_partition", "equitability_violation"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@dataclass(frozen=True)
class Partition:
    """Row and column cells of an equitable partition.

    Attributes
    ----------
    row_labels : int64 array (m,), cell index of each row (labels 0..p-1, numbered by first occurrence)
    col_labels : int64 array (n,), cell index of each column (0..q-1)
    n_row_cells, n_col_cells : p and q
    rounds : refinement rounds used (0 when the partition was given)
    seconds : wall time of the refinement
    """

    row_labels: np.ndarray
    col_labels: np.ndarray
    n_row_cells: int
    n_col_cells: int
    rounds: int = 0
    seconds: float = 0.0


# ----------------------------------------------------------------------------------------------- validation
def _check_decimals(decimals) -> int:
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)) or not 1 <= decimals <= 15:
        raise ValueError(f"decimals must be an integer in [1, 15], got {decimals!r}")
    return int(decimals)


def _check_cost(C) -> np.ndarray:
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2:
        raise ValueError(f"C must be a 2-D cost matrix, got an array with {C.ndim} dimension(s)")
    if C.size == 0:
        raise ValueError(f"C must be non-empty, got shape {C.shape}")
    if not np.all(np.isfinite(C)):
        raise ValueError("C contains NaN or Inf")
    return C


def _check_marginal(x, length: int, name: str, *, tol: float = 1e-9) -> np.ndarray | None:
    if x is None:
        return None
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.shape[0] != length:
        raise ValueError(f"{name} must be a 1-D array of length {length} to match C, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or Inf")
    if np.any(x < 0):
        raise ValueError(f"{name} has negative masses (min {x.min():.3g})")
    total = float(x.sum())
    if abs(total - 1.0) > tol:
        raise ValueError(f"{name} must sum to 1 within {tol:g}, got {total!r}")
    return x


def check_problem(a, b, C):
    """Validate ``(a, b, C)``: C 2-D finite, a in the simplex of size m, b in that of size n.

    Returns the three float64 arrays; ``a`` or ``b`` may be None (uniform). Raises ValueError naming the
    argument at fault.
    """
    C = _check_cost(C)
    m, n = C.shape
    return _check_marginal(a, m, "a"), _check_marginal(b, n, "b"), C


# ---------------------------------------------------------------------------------------------- integer keys
def quantize(C, decimals: int = 9) -> np.ndarray:
    r"""Integer keys :math:`Q_{ij} = \mathrm{rint}(C_{ij}\, 10^{d} / \max|C|)` (int64; all zero if C = 0)."""
    decimals = _check_decimals(decimals)
    C = np.asarray(C, dtype=np.float64)
    scale = float(np.max(np.abs(C))) if C.size else 0.0
    if scale == 0.0:
        return np.zeros(C.shape, dtype=np.int64)
    return np.rint(C * (10.0 ** decimals / scale)).astype(np.int64)


def marginal_keys(x, length: int, decimals: int = 9) -> np.ndarray:
    """Integer keys ``rint(x 10^d / max x)`` of a marginal (all zero for None, i.e. uniform)."""
    if x is None:
        return np.zeros(length, dtype=np.int64)
    return quantize(np.asarray(x, dtype=np.float64), decimals)


def _first_occurrence(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """Renumber labels 0..k-1 in order of first occurrence."""
    uniq, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq), dtype=np.int64)
    return rank[inverse.ravel()], len(uniq)


def _dense_rank_pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, int]:
    """Labels of the distinct pairs (first_i, second_i), numbered by first occurrence."""
    order = np.lexsort((second, first))
    f, s = first[order], second[order]
    new_group = np.ones(len(order), dtype=bool)
    new_group[1:] = (f[1:] != f[:-1]) | (s[1:] != s[:-1])
    ranks_sorted = np.cumsum(new_group) - 1
    labels = np.empty(len(order), dtype=np.int64)
    labels[order] = ranks_sorted
    return _first_occurrence(labels)


# ------------------------------------------------------------------------------------------------ hashing
def _splitmix64_inplace(z: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser applied elementwise in place (uint64 wrap-around arithmetic)."""
    z += _GOLDEN
    np.right_shift(z, np.uint64(30), out=tmp)
    z ^= tmp
    z *= _MIX1
    np.right_shift(z, np.uint64(27), out=tmp)
    z ^= tmp
    z *= _MIX2
    np.right_shift(z, np.uint64(31), out=tmp)
    z ^= tmp
    return z


def _splitmix64(x: np.ndarray) -> np.ndarray:
    z = np.array(x, dtype=np.uint64, copy=True)
    return _splitmix64_inplace(z, np.empty_like(z))


def _mix_keys(x: np.ndarray) -> np.ndarray:
    """A cheap bijective 64-bit mix of the keys (multiply, xor-shift, multiply), computed once per
    refinement; its quality only affects how often the exact verification must split a collision."""
    h = np.multiply(x, _MIX1)
    h ^= h >> np.uint64(32)
    h *= _MIX2
    return h


def _signature_hashes(HQ: np.ndarray, colours: np.ndarray, axis: int, work: np.ndarray,
                      tmp: np.ndarray) -> np.ndarray:
    r"""Multiset hash :math:`\sum_j h(Q_{ij})\, g(c_j) \bmod 2^{64}` per row (axis=1) or column (axis=0).

    ``HQ`` holds the mixed keys :math:`h(Q)` (:func:`_mix_keys`), computed once per refinement; :math:`g(c)` is
    splitmix64 of the colour made odd. One multiply and one sum per entry and round (instead of a full
    splitmix64 per entry and round); a collision is harmless because the result is verified exactly.
    ``tmp`` is unused (kept for the signature of the refinement loop).
    """
    g = _splitmix64(colours.astype(np.uint64)) | np.uint64(1)
    if axis == 1:
        np.multiply(HQ, g[None, :], out=work)
    else:
        np.multiply(HQ, g[:, None], out=work)
    return work.sum(axis=axis, dtype=np.uint64)


# --------------------------------------------------------------------------------------- exact verification
def _sorted_signatures(Q: np.ndarray, other_colours: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact signatures: for every row (axis=1) or column (axis=0), its keys sorted within each cell of the
    other side, the cells laid out in one fixed order. Two rows (columns) have equal signatures exactly when
    they see the same multiset of keys in every cell of the other side.

    Returns ``(sig, colour_of_position)``. Sorting within cells (grouped by cell size, one batched sort per
    size) costs O(mn log(cell size)) instead of O(mn log n) for whole rows; keys are int32 when they fit.
    """
    Q = np.asarray(Q)
    small = Q.size and -2 ** 31 < int(Q.min()) and int(Q.max()) < 2 ** 31
    X = np.ascontiguousarray(Q if axis == 1 else Q.T, dtype=np.int32 if small else Q.dtype)
    other_colours = np.asarray(other_colours, dtype=np.int64)
    order = np.argsort(other_colours, kind="stable")
    sizes = np.bincount(other_colours)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    parts, colour_pos = [], []
    for size in np.unique(sizes[sizes > 0]):
        cells = np.flatnonzero(sizes == size)
        cols = order[(starts[cells][:, None] + np.arange(size)[None, :]).ravel()]
        block = X[:, cols].reshape(X.shape[0], len(cells), int(size))
        block.sort(axis=2)
        parts.append(block.reshape(X.shape[0], -1))
        colour_pos.append(np.repeat(cells, size))
    sig = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    return sig, np.concatenate(colour_pos)


def _rows_equal_within_cells(X: np.ndarray, row_sizes: np.ndarray, col_sizes: np.ndarray) -> bool:
    """True when, in X with rows and columns already grouped by cell (contiguous), every row of a row cell
    has the same sorted keys as the cell's first row within every column cell (sorts a copy of X)."""
    S = X.copy()
    if np.all(col_sizes == col_sizes[0]):
        S.reshape(S.shape[0], len(col_sizes), int(col_sizes[0])).sort(axis=2)
    else:
        start = 0
        for size in col_sizes:
            S[:, start:start + size].sort(axis=1)
            start += size
    if np.all(row_sizes == row_sizes[0]):
        blocks = S.reshape(len(row_sizes), int(row_sizes[0]), S.shape[1])
        return bool(np.all(blocks == blocks[:, :1]))
    firsts = np.repeat(np.concatenate([[0], np.cumsum(row_sizes)[:-1]]), row_sizes)
    return bool(np.all(S == S[firsts]))


def _is_equitable_fast(Q: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> bool:
    """Exact equitability test of (rows, cols) on the keys Q (marginals are constant on cells by
    construction of the refinement): Q is permuted into cell order once, then each side's rows are
    sorted within cells and compared with their cell's first row (no per-row gathers)."""
    ro, co = np.argsort(rows, kind="stable"), np.argsort(cols, kind="stable")
    small = Q.size and -2 ** 31 < int(Q.min()) and int(Q.max()) < 2 ** 31
    X = np.take(np.take(Q.astype(np.int32) if small else Q, ro, axis=0), co, axis=1)
    rsz, csz = np.bincount(rows), np.bincount(cols)
    return _rows_equal_within_cells(X, rsz, csz) and _rows_equal_within_cells(np.ascontiguousarray(X.T), csz, rsz)


def _first_bad(sig: np.ndarray, labels: np.ndarray) -> tuple[int, int, int] | None:
    """(cell, representative, offending member) of the first cell whose members' signatures differ."""
    _, first = np.unique(labels, return_index=True)
    reps = first[labels]
    bad = np.flatnonzero(np.any(sig != sig[reps], axis=1))
    if bad.size == 0:
        return None
    i = int(bad[0])
    return int(labels[i]), int(reps[i]), i


def equitability_violation(Q, row_labels, col_labels, akey=None, bkey=None) -> str | None:
    """None when (row_labels, col_labels) is equitable for the integer keys, else a message naming the block.

    ``Q`` are the cost keys (m, n); ``akey``, ``bkey`` the marginal keys (None: uniform).
    """
    Q = np.asarray(Q)
    row_labels = np.asarray(row_labels)
    col_labels = np.asarray(col_labels)
    for keys, labels, side in ((akey, row_labels, "row"), (bkey, col_labels, "column")):
        if keys is None:
            continue
        keys = np.asarray(keys)
        p = int(labels.max()) + 1
        lo = np.full(p, np.iinfo(np.int64).max)
        hi = np.full(p, np.iinfo(np.int64).min)
        np.minimum.at(lo, labels, keys)
        np.maximum.at(hi, labels, keys)
        bad = np.flatnonzero(lo != hi)
        if bad.size:
            marg = "a" if side == "row" else "b"
            return f"{side} cell {int(bad[0])}: marginal {marg} is not constant on the cell"
    for axis, labels, other, side, other_side in ((1, row_labels, col_labels, "row", "column"),
                                                  (0, col_labels, row_labels, "column", "row")):
        sig, colour_of_position = _sorted_signatures(Q, other, axis)
        found = _first_bad(sig, labels)
        if found is None:
            continue
        cell, rep, i = found
        pos = int(np.flatnonzero(sig[i] != sig[rep])[0])
        other_cell = int(colour_of_position[pos])
        r, s = (cell, other_cell) if side == "row" else (other_cell, cell)
        return (f"block (row cell {r}, column cell {s}) is not equitable: {side}s {rep} and {i} of "
                f"{side} cell {cell} see different multisets of costs in {other_side} cell {other_cell}")
    return None


def check_partition(partition: Partition, m: int, n: int) -> Partition:
    """Validate the label arrays of a partition (lengths m and n, labels exactly 0..p-1 and 0..q-1)."""
    if not isinstance(partition, Partition):
        raise ValueError(f"partition must be a Partition, got {type(partition).__name__}")
    for labels, length, count, name in ((partition.row_labels, m, partition.n_row_cells, "row_labels"),
                                        (partition.col_labels, n, partition.n_col_cells, "col_labels")):
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != length:
            raise ValueError(f"partition.{name} must have length {length}, got shape {labels.shape}")
        if not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"partition.{name} must hold integers, got dtype {labels.dtype}")
        present = np.unique(labels)
        if present[0] != 0 or present[-1] != len(present) - 1 or len(present) != count:
            raise ValueError(f"partition.{name} must use the contiguous labels 0..{count - 1} "
                             f"(n_{'row' if name == 'row_labels' else 'col'}_cells = {count}), "
                             f"got {len(present)} distinct labels in [{present[0]}, {present[-1]}]")
    return partition


# -------------------------------------------------------------------------------------------- refinement
def equitable_partition(C, a=None, b=None, *, decimals: int = 9, max_rounds: int = 100) -> Partition:
    r"""Coarsest equitable partition of :math:`(\mathbf a, \mathbf b, \mathbf C)` by colour refinement.

    1. Keys :math:`Q = \mathrm{rint}(C 10^d/\max|C|)`; initial row (column) colours are the dense ranks of
       the marginal keys (None means uniform: one colour).
    2. A round recolours every row :math:`i` by (old colour, :math:`\{(c_j, Q_{ij})\}_j`) and then every
       column by (old colour, :math:`\{(r_i, Q_{ij})\}_i`) with the new row colours; rounds stop when
       neither number of colours changes (at most ``max_rounds``).
    3. Multisets are compared through the O(mn) hash
       :math:`\sum_j h(Q_{ij})\, g(c_j) \bmod 2^{64}` (:math:`h` a 64-bit mix of the keys computed once,
       :math:`g` splitmix64 of the colour made odd); the result is then verified exactly by sorting the keys
       within cells after one permutation into cell order; a hash collision found there is split with the
       exact sorted signatures and refinement continues.

    Labels are numbered by first occurrence, so the output is deterministic.

    Parameters
    ----------
    C : (m, n) array, cost matrix
    a, b : (m,) and (n,) marginals in the simplex, or None for uniform
    decimals : int in [1, 15], relative precision of the cost and marginal keys
    max_rounds : int >= 1, cap on the refinement rounds

    Returns
    -------
    Partition
    """
    start = time.perf_counter()
    a, b, C = check_problem(a, b, C)
    decimals = _check_decimals(decimals)
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, (int, np.integer)) or max_rounds < 1:
        raise ValueError(f"max_rounds must be a positive integer, got {max_rounds!r}")
    m, n = C.shape
    Q = quantize(C, decimals)
    akey, bkey = marginal_keys(a, m, decimals), marginal_keys(b, n, decimals)
    rows, cols, p, q, rounds = _refine(Q, akey, bkey, max_rounds)
    return Partition(row_labels=rows, col_labels=cols, n_row_cells=int(p), n_col_cells=int(q),
                     rounds=rounds, seconds=time.perf_counter() - start)


def _refine(Q: np.ndarray, akey: np.ndarray, bkey: np.ndarray, max_rounds: int):
    """Colour refinement on integer keys (steps 1-3 of :func:`equitable_partition`); returns
    ``(row_labels, col_labels, p, q, rounds)``."""
    rows, p = _first_occurrence(akey)
    cols, q = _first_occurrence(bkey)
    HQ = _mix_keys(Q.view(np.uint64))
    work = np.empty_like(HQ)
    tmp = None
    rounds = 0
    while True:
        while rounds < max_rounds:
            rounds += 1
            rows, p_new = _dense_rank_pairs(rows, _signature_hashes(HQ, cols, 1, work, tmp))
            cols, q_new = _dense_rank_pairs(cols, _signature_hashes(HQ, rows, 0, work, tmp))
            changed = (p_new != p) or (q_new != q)
            p, q = p_new, q_new
            if not changed:
                break
        # exact verification (sorting); split on a collision and refine again
        if _is_equitable_fast(Q, rows, cols):
            break
        split = False
        for axis in (1, 0):
            labels, other = (rows, cols) if axis == 1 else (cols, rows)
            sig, _ = _sorted_signatures(Q, other, axis)
            if _first_bad(sig, labels) is None:
                continue
            _, inverse = np.unique(np.column_stack([labels, sig]), axis=0, return_inverse=True)
            new_labels, count = _first_occurrence(inverse.ravel())
            if axis == 1:
                rows, p = new_labels, count
            else:
                cols, q = new_labels, count
            split = True
            break
        if not split:
            break
        if rounds >= max_rounds:
            raise RuntimeError(f"colour refinement did not stabilise within max_rounds={max_rounds}")
    del work, HQ
    return rows, cols, p, q, rounds


def is_equitable(C, partition: Partition, a=None, b=None, *, decimals: int = 9) -> bool:
    """True when ``partition`` is equitable for ``(a, b, C)`` on the integer keys of ``decimals``.

    Raises ValueError for malformed inputs (shapes, NaN/Inf, masses, label arrays), never for a
    non-equitable but well-formed partition.
    """
    a, b, C = check_problem(a, b, C)
    decimals = _check_decimals(decimals)
    m, n = C.shape
    check_partition(partition, m, n)
    Q = quantize(C, decimals)
    akey = None if a is None else marginal_keys(a, m, decimals)
    bkey = None if b is None else marginal_keys(b, n, decimals)
    return equitability_violation(Q, np.asarray(partition.row_labels), np.asarray(partition.col_labels),
                                  akey, bkey) is None
