r"""Lasserre moment / Putinar SOS hierarchy for ex-ante optimal behavioural strategies.

For one player with utility polynomial :math:`U` in the free variables :math:`x \in \mathbb{R}^n` and the
strategy polytope described by the linear set :math:`L = \{x_{I,a} \ge 0,\ 1 - \sum_{a<\mathrm{last}}
x_{I,a} \ge 0\}` plus the pairwise products :math:`g g' \ge 0` (:math:`g \ne g' \in L`), level :math:`r`
of the moment hierarchy (Lasserre 2001) is

.. math::
    \rho_r = \max_y L_y(U) \quad \text{s.t.}\quad y_0 = 1,\ M_r(y) \succeq 0,\
    M_{r - \lceil \deg g / 2 \rceil}(g\, y) \succeq 0 \ \ (g \in L \cup L\cdot L),

with :math:`M_r(y)_{\alpha,\beta} = y_{\alpha+\beta}` over monomials of degree :math:`\le r` in graded
lexicographic order and :math:`M_d(g y)_{\alpha,\beta} = \sum_\gamma g_\gamma y_{\alpha+\beta+\gamma}`.
:math:`\rho_r \ge \rho_{r+1} \ge U^*`. Flat truncation (Curto-Fialkow; Henrion-Lasserre 2005): if
:math:`\operatorname{rank} M_t = \operatorname{rank} M_{t-1}` for some :math:`1 \le t \le r` and the rank
is 1, the first moments are a global maximiser; the bound is certified exact when
:math:`U(x^*) \ge \rho_r - 10^{-6}\max(1, |\rho_r|)`.

Every block is built as ``reshape(A_g @ y, (s, s)) >> 0`` from one sparse coefficient matrix ``A_g``, and
every SDP goes through ``shared.solvers.solve`` (MOSEK if licensed, else Clarabel, SCS as fallback).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from . import poly as P

__all__ = ["BoundResult", "MomentSolution", "moment_relaxation", "strategy_constraints", "moment_bound",
           "single_player_bound", "sparse_single_player_bound", "pure_optimum", "min_level", "flat_rank",
           "correlative_cliques", "running_intersection_violation"]

RANK_TOL = 1e-6
CERT_TOL = 1e-6


@dataclass
class BoundResult:
    """Result of one level of the single-player hierarchy.

    ``bound`` (:math:`\\rho_r`, None when the SDP is infeasible), ``strategy`` (dict, when flat with rank 1),
    ``flat``, ``rank`` (rank of the flat truncation, else of :math:`M_r`), ``status`` (solver status),
    ``solver`` (backend), ``seconds`` (build + solve + extraction), ``moment_size`` (side of :math:`M_r`),
    ``level``, ``certified`` (flat rank 1 and :math:`U(x^*) \\ge \\rho_r - 10^{-6}\\max(1,|\\rho_r|)`),
    ``value_at_strategy`` (:math:`U(x^*)`), ``point`` (free-variable vector of the strategy).
    """

    bound: float | None
    strategy: dict | None
    flat: bool
    rank: int | None
    status: str
    solver: str
    seconds: float
    moment_size: int
    level: int = 0
    certified: bool = False
    value_at_strategy: float | None = None
    point: np.ndarray | None = None
    solve_seconds: float = 0.0


@dataclass
class MomentSolution:
    """Raw output of :func:`moment_relaxation`: status, objective ``value``, moments ``y`` (dict exponent ->
    value), ``ranks`` of :math:`M_0..M_r`, ``flat``, ``flat_rank``, ``first_moments``, backend, times."""

    status: str
    value: float | None
    y: dict | None
    ranks: list = field(default_factory=list)
    flat: bool = False
    flat_rank: int | None = None
    first_moments: np.ndarray | None = None
    backend: str = ""
    solve_seconds: float = 0.0
    build_seconds: float = 0.0
    moment_size: int = 0


#: tighter SCS tolerances than cvxpy's defaults (flat-truncation ranks need ~1e-7 accurate moments)
SCS_OPTIONS = {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 100000}


def _solve(problem, solver, scs_eps=None, scs_max_iters=None):
    """Solve through ``shared.solvers.solve``.

    Interior-point answers at exact levels are degenerate (rank-1 moment matrices, no strict
    complementarity) and Clarabel often ends "optimal_inaccurate" (AlmostSolved, about 1e-7 off) there, while
    SCS needs 10^4 iterations for the same accuracy. So the first backend of the automatic chain (MOSEK when
    licensed, else Clarabel) is tried with ``accept_inaccurate=True`` (the status is kept in the result and
    extraction is certified separately); when it fails outright, the remaining backends (SCS) are tried.
    With an explicit ``solver`` only that backend is used (inaccurate answers accepted and flagged).
    """
    import warnings

    from shared.solvers import solve

    scs = dict(SCS_OPTIONS) if scs_eps is None else {**SCS_OPTIONS, "eps_abs": scs_eps, "eps_rel": scs_eps}
    if scs_max_iters is not None:
        scs["max_iters"] = int(scs_max_iters)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return solve(problem, solver=solver, accept_inaccurate=True, options_by_backend={"SCS": scs})


def min_level(polys) -> int:
    r"""Smallest admissible level :math:`\max(1, \lceil \deg / 2 \rceil)` over the given polynomials."""
    return max([1] + [math.ceil(P.degree(p) / 2) for p in polys])


def strategy_polytope(groups, n: int) -> list:
    r"""The linear set :math:`L = \{x_i \ge 0\} \cup \{1 - \sum_{i \in I} x_i \ge 0\}` describing the strategy
    polytope (each infoset's simplex with its last coordinate eliminated), as polynomials :math:`g \ge 0`.

    ``groups``: for each information set, the indices of its free variables (one group per infoset).
    """
    lin = []
    for idx in groups:
        for i in idx:
            lin.append(P.var(i, n))
        last = P.const(1.0, n)
        for i in idx:
            last = P.add(last, P.scale(P.var(i, n), -1.0))
        lin.append(last)
    return lin


def strategy_constraints(groups, n: int) -> tuple[list, list]:
    r"""The linear set :math:`L` of :func:`strategy_polytope` and the pairwise products
    :math:`\{g g' : g \ne g' \in L\}`."""
    lin = strategy_polytope(groups, n)
    prods = [P.mul(lin[a], lin[b]) for a in range(len(lin)) for b in range(a + 1, len(lin))]
    return lin, prods


def _localizing_matrix(g: dict, basis, index: dict, n_moments: int) -> sp.csr_matrix:
    s = len(basis)
    rows, cols, vals = [], [], []
    for p, a in enumerate(basis):
        for q, b in enumerate(basis):
            ab = tuple(i + j for i, j in zip(a, b))
            for c, coef in g.items():
                rows.append(p * s + q)
                cols.append(index[tuple(i + j for i, j in zip(ab, c))])
                vals.append(coef)
    return sp.csr_matrix((vals, (rows, cols)), shape=(s * s, n_moments))


def flat_rank(moment_matrix: np.ndarray, sizes: list[int]) -> tuple[list[int], bool, int | None]:
    """Numerical ranks of the leading blocks ``M_t`` (eigenvalues > 1e-6 * the largest) and flatness."""
    ranks = []
    for s in sizes:
        ev = np.linalg.eigvalsh((moment_matrix[:s, :s] + moment_matrix[:s, :s].T) / 2)
        top = max(ev.max(), 0.0)
        ranks.append(int(np.sum(ev > RANK_TOL * top)) if top > 0 else 0)
    for t in range(1, len(sizes)):
        if ranks[t] == ranks[t - 1]:
            return ranks, True, ranks[t]
    return ranks, False, None


def moment_relaxation(n: int, level: int, objective: dict, *, sense: str = "max", ineqs=(), eqs=(),
                      solver: str | None = None, scs_eps: float | None = None,
                      scs_max_iters: int | None = None) -> MomentSolution:
    r"""Level-``level`` Lasserre relaxation of :math:`\max/\min f(x)` s.t. :math:`g(x) \ge 0`, :math:`h(x) = 0`.

    Equalities are imposed as :math:`L_y(h\, x^\alpha) = 0` for :math:`|\alpha| \le 2r - \deg h`;
    inequalities through :math:`M_{r - \lceil \deg g/2 \rceil}(g y) \succeq 0` (a scalar when the order is 0).
    """
    import cvxpy as cp

    if sense not in ("max", "min"):
        raise ValueError(f"sense must be 'max' or 'min', got {sense!r}")
    start = time.perf_counter()
    need = min_level([objective, *ineqs, *eqs])
    if level < need:
        raise ValueError(f"level must be >= {need} (max(1, ceil(deg/2)) of the objective and constraints), "
                         f"got {level}")
    full = P.monomials(n, 2 * level)
    index = {a: k for k, a in enumerate(full)}
    N = len(full)
    y = cp.Variable(N)
    cons = [y[0] == 1]
    sizes = [len(P.monomials(n, t)) for t in range(level + 1)]
    A_M = _localizing_matrix(P.const(1.0, n) or {(0,) * n: 1.0}, P.monomials(n, level), index, N)
    s = sizes[-1]
    cons.append(cp.reshape(A_M @ y, (s, s), order="C") >> 0)
    scalars = []
    for g in ineqs:
        if not g:
            continue
        d = level - math.ceil(P.degree(g) / 2)
        basis = P.monomials(n, d)
        A = _localizing_matrix(g, basis, index, N)
        if len(basis) == 1:
            scalars.append(A)
        else:
            cons.append(cp.reshape(A @ y, (len(basis), len(basis)), order="C") >> 0)
    if scalars:
        cons.append(sp.vstack(scalars).tocsr() @ y >= 0)
    eq_rows = []
    for h in eqs:
        if not h:
            continue
        for alpha in P.monomials(n, 2 * level - P.degree(h)):
            row = {}
            for c, coef in h.items():
                k = index[tuple(i + j for i, j in zip(alpha, c))]
                row[k] = row.get(k, 0.0) + coef
            eq_rows.append(row)
    if eq_rows:
        r_, c_, v_ = [], [], []
        for i, row in enumerate(eq_rows):
            for k, v in row.items():
                r_.append(i)
                c_.append(k)
                v_.append(v)
        cons.append(sp.csr_matrix((v_, (r_, c_)), shape=(len(eq_rows), N)) @ y == 0)
    cvec = np.zeros(N)
    for a, coef in objective.items():
        cvec[index[a]] += coef
    obj = cp.Maximize(cvec @ y) if sense == "max" else cp.Minimize(cvec @ y)
    problem = cp.Problem(obj, cons)
    build = time.perf_counter() - start
    res = _solve(problem, solver, scs_eps, scs_max_iters)
    out = MomentSolution(status=res.status, value=res.value, y=None, backend=res.backend,
                         solve_seconds=res.solve_time, build_seconds=build, moment_size=s)
    if res.status not in ("optimal", "optimal_inaccurate") or y.value is None:
        return out
    yv = np.asarray(y.value, dtype=float)
    out.y = {a: float(yv[k]) for k, a in enumerate(full)}
    M = np.asarray(A_M @ yv).reshape(s, s)
    out.ranks, out.flat, out.flat_rank = flat_rank(M, sizes)
    out.first_moments = yv[1:n + 1].copy()
    return out


def _check_level(level, need):
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
        raise ValueError(f"level must be an integer, got {level!r}")
    if level < need:
        raise ValueError(f"level must be >= max(1, ceil(deg/2)) = {need}, got {level}")


def single_player_bound(U: dict, n: int, groups, level: int, *, solver: str | None = None,
                        clip=None, scs_eps: float | None = None) -> BoundResult:
    r"""Level-``level`` bound :math:`\rho_r` for :math:`\max U` over the product of simplices ``groups``."""
    start = time.perf_counter()
    _check_level(level, min_level([U]))
    lin, prods = strategy_constraints(groups, n)
    sol = moment_relaxation(n, level, U, sense="max", ineqs=lin + prods, solver=solver, scs_eps=scs_eps)
    res = BoundResult(bound=sol.value, strategy=None, flat=sol.flat,
                      rank=sol.flat_rank if sol.flat else (sol.ranks[-1] if sol.ranks else None),
                      status=sol.status, solver=sol.backend, seconds=0.0, moment_size=sol.moment_size,
                      level=int(level), solve_seconds=sol.solve_seconds)
    if sol.y is not None and sol.flat and sol.flat_rank == 1:
        x = sol.first_moments
        if clip is not None:
            x = clip(x)
        res.point = x
        res.value_at_strategy = P.evaluate(U, x)
        res.certified = res.value_at_strategy >= sol.value - CERT_TOL * max(1.0, abs(sol.value))
    res.seconds = time.perf_counter() - start
    return res


def _single_player(game, player):
    player = game.check_player(player)
    if len(game.players) > 1:
        raise ValueError(f"player: the game has other strategic players {[p for p in game.players if p != player]}; "
                         "the single-player hierarchy needs a one-player decision problem")
    return player


def moment_bound(game, level: int, *, player: int = 1, solver: str | None = None,
                 scs_eps: float | None = None) -> BoundResult:
    r"""Level-``level`` moment bound :math:`\rho_r \ge \max_x U(x)` of a single-player game, with flat-truncation
    extraction of the strategy (see the module docstring). ValueError when ``level < max(1, ceil(deg U/2))``
    or ``player`` is not (the only) player of ``game``. ``scs_eps`` overrides SCS's tolerances (default 1e-9)."""
    player = _single_player(game, player)
    U = game.polynomial(player)
    groups = [game.infoset_variables(k) for k in range(len(game.infosets))]
    res = single_player_bound(U, game.n_variables, groups, level, solver=solver, clip=game.clip_to_polytope,
                              scs_eps=scs_eps)
    if res.point is not None:
        res.strategy = game.vector_to_profile(res.point)
    return res


def pure_optimum(game, player: int = 1) -> tuple[float, dict]:
    """Best pure strategy by enumeration (exact for non-absentminded single-player games, where U is affine in
    each infoset's block). ValueError for absentminded games or games with other strategic players."""
    player = _single_player(game, player)
    if game.is_absentminded:
        raise ValueError("pure_optimum: the game is absentminded; pure strategies can be strictly suboptimal")
    U = game.polynomial(player)
    E, c = P.to_arrays(U, game.n_variables)
    X = np.array(list(game.pure_strategies(player))).reshape(-1, game.n_variables)
    vals = P.eval_batch(E, c, X)
    k = int(np.argmax(vals))
    return float(vals[k]), game.vector_to_profile(X[k])


def _support(p: dict) -> frozenset:
    return frozenset(j for a in p for j, k in enumerate(a) if k)


def _clique_monomials(clique, n: int, d: int) -> list:
    """Global exponents of the monomials of degree <= d in the variables of ``clique`` (graded lex order)."""
    out = []
    for b in P.monomials(len(clique), d):
        a = [0] * n
        for j, k in zip(clique, b):
            a[j] = k
        out.append(tuple(a))
    return out


def running_intersection_violation(cliques) -> int | None:
    r"""Index of the first clique that breaks the running intersection property (RIP) in the given order, or
    None when it holds: for every :math:`k \ge 1` some :math:`s < k` has
    :math:`I_k \cap \bigcup_{j < k} I_j \subseteq I_s` (Waki, Kim, Kojima, Muramatsu 2006, eq. (6); Lasserre
    2006). Under RIP the correlative-sparse hierarchy converges to the optimum; without it the sparse bound is
    still valid but may stall above the optimum."""
    sets = [frozenset(int(j) for j in c) for c in cliques]
    seen: set = set()
    for k, c in enumerate(sets):
        if k and not any((c & seen) <= sets[s] for s in range(k)):
            return k
        seen |= c
    return None


def correlative_cliques(polys, groups, n: int) -> list[list[int]]:
    r"""Cliques for the correlative-sparse relaxation, ordered so that they satisfy the running intersection
    property.

    The correlative graph has the variables as nodes and an edge between two variables that appear together in
    a monomial of one of ``polys`` or in one infoset group (the group's simplex constraint couples them). Its
    chordal extension (``networkx.complete_to_chordal_graph``, MCS-M: a minimal triangulation) has maximal
    cliques (``networkx.chordal_graph_cliques``); a maximum-weight spanning tree of the clique-intersection graph
    (weights :math:`|I_a \cap I_b|`) is a clique tree of a chordal graph, and its breadth-first order satisfies
    RIP (Blair & Peyton 1993), which is checked before returning."""
    import networkx as nx

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    G = nx.Graph()
    G.add_nodes_from(range(n))
    for members in [list(g) for g in groups] + [sorted(_support({a: 1.0})) for p in polys for a in p]:
        if any(j < 0 or j >= n for j in members):
            raise ValueError(f"a group or monomial refers to a variable outside [0, {n}): {members}")
        G.add_edges_from((a, b) for i, a in enumerate(members) for b in members[i + 1:])
    H, _ = nx.complete_to_chordal_graph(G)
    cliques = [sorted(int(j) for j in c) for c in nx.chordal_graph_cliques(H)]
    cliques.sort(key=lambda c: (-len(c), c))
    T = nx.Graph()
    T.add_nodes_from(range(len(cliques)))
    for a in range(len(cliques)):
        for b in range(a + 1, len(cliques)):
            w = len(set(cliques[a]) & set(cliques[b]))
            if w:
                T.add_edge(a, b, weight=w)
    order = []
    for comp in sorted(nx.connected_components(T), key=min):
        tree = nx.maximum_spanning_tree(T.subgraph(comp))
        order += list(nx.bfs_tree(tree, min(comp)))
    ordered = [cliques[k] for k in order]
    bad = running_intersection_violation(ordered)
    if bad is not None:       # cannot happen for the cliques of a chordal graph in clique-tree order
        raise RuntimeError(f"correlative_cliques: clique {ordered[bad]} breaks the running intersection property")
    return ordered


def sparse_single_player_bound(U: dict, n: int, groups, level: int, cliques, *, solver: str | None = None,
                               require_rip: bool = True) -> BoundResult:
    r"""Correlative-sparse level-``level`` bound for :math:`\max U` over the product of simplices ``groups``
    (Waki, Kim, Kojima, Muramatsu 2006; Lasserre 2006).

    ``cliques``: variable index sets covering every infoset group and every monomial of U (use
    :func:`correlative_cliques`: the maximal cliques of a chordal extension of the correlative graph, in an
    order with the running intersection property, under which the sparse hierarchy still converges; with
    ``require_rip`` a ValueError names the first clique that breaks it). One moment matrix :math:`M_r(y, I_k)` per
    clique over the monomials in :math:`I_k`; localizing matrices for the linear constraints of each group and
    for the pairwise products of constraints that live in one clique. The bound is :math:`\ge` the dense
    :math:`\rho_r` and :math:`\ge U^*`. ``flat`` and ``rank`` refer to the first clique's moment matrix.
    """
    import cvxpy as cp

    start = time.perf_counter()
    _check_level(level, min_level([U]))
    cliques = [sorted(set(int(j) for j in c)) for c in cliques]
    sets = [frozenset(c) for c in cliques]
    if any(not c for c in cliques) or any(j < 0 or j >= n for c in cliques for j in c):
        raise ValueError(f"cliques must be non-empty sets of variable indices in [0, {n})")
    for g in groups:
        if not any(set(g) <= s for s in sets):
            raise ValueError(f"cliques: the infoset group {list(g)} is not inside one clique")
    for a in U:
        sup = frozenset(j for j, k in enumerate(a) if k)
        if not any(sup <= s for s in sets):
            raise ValueError(f"cliques: the monomial {a} of U is not inside one clique")
    bad = running_intersection_violation(cliques)
    if require_rip and bad is not None:
        raise ValueError(f"cliques: clique {cliques[bad]} (position {bad}) breaks the running intersection property "
                         "(its intersection with the earlier cliques lies in no single earlier clique); order them "
                         "as correlative_cliques does, or pass require_rip=False")
    lin, _ = strategy_constraints(groups, n)
    cons_by_clique = [[] for _ in cliques]
    for g in lin:
        k = next(i for i, s in enumerate(sets) if _support(g) <= s)
        cons_by_clique[k].append(g)
    monos = sorted({a for c in cliques for a in _clique_monomials(c, n, 2 * level)}, key=lambda a: (sum(a), a))
    index = {a: k for k, a in enumerate(monos)}
    N = len(monos)
    y = cp.Variable(N)
    zero = (0,) * n
    cons = [y[index[zero]] == 1]
    scalars = []
    mats = []
    for ci, c in enumerate(cliques):
        basis = _clique_monomials(c, n, level)
        A = _localizing_matrix({zero: 1.0}, basis, index, N)
        cons.append(cp.reshape(A @ y, (len(basis), len(basis)), order="C") >> 0)
        mats.append((A, len(basis), [len(_clique_monomials(c, n, t)) for t in range(level + 1)]))
        local = [g for i, s in enumerate(sets) for g in lin if _support(g) <= sets[ci]]
        local = list({tuple(sorted(g.items())): g for g in local}.values())
        prods = [P.mul(local[a], local[b]) for a in range(len(local)) for b in range(a + 1, len(local))]
        for g in (cons_by_clique[ci] + prods):
            d = level - math.ceil(P.degree(g) / 2)
            if d < 0:
                continue
            gb = _clique_monomials(c, n, d)
            Ag = _localizing_matrix(g, gb, index, N)
            if len(gb) == 1:
                scalars.append(Ag)
            else:
                cons.append(cp.reshape(Ag @ y, (len(gb), len(gb)), order="C") >> 0)
    if scalars:
        cons.append(sp.vstack(scalars).tocsr() @ y >= 0)
    cvec = np.zeros(N)
    for a, coef in U.items():
        cvec[index[a]] += coef
    problem = cp.Problem(cp.Maximize(cvec @ y), cons)
    res = _solve(problem, solver)
    out = BoundResult(bound=res.value, strategy=None, flat=False, rank=None, status=res.status, solver=res.backend,
                      seconds=0.0, moment_size=max(m[1] for m in mats), level=int(level),
                      solve_seconds=res.solve_time)
    if res.status in ("optimal", "optimal_inaccurate") and y.value is not None:
        yv = np.asarray(y.value, dtype=float)
        A, s, sizes = mats[0]
        _, out.flat, out.rank = flat_rank(np.asarray(A @ yv).reshape(s, s), sizes)
        x = np.array([yv[index[tuple(1 if i == j else 0 for i in range(n))]] for j in range(n)])
        out.point = x
        out.value_at_strategy = P.evaluate(U, x)
    out.seconds = time.perf_counter() - start
    return out
