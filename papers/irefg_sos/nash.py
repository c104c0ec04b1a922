r"""Nash equilibria in behavioural strategies via moment relaxations (Nie & Tang style, reconstructed).

1. KKT set :math:`K`. With :math:`D_{I,a} = \partial U_i / \partial x_{I,a}` in full coordinates,
   :math:`\nu_I = \sum_a x_{I,a} D_{I,a}` and :math:`\mu_{I,a} = \nu_I - D_{I,a}`:
   :math:`\mu_{I,a} \ge 0` and :math:`x_{I,a}\mu_{I,a} = 0` for every action of every infoset of every
   player, then rewritten in the free variables; plus the strategy constraints. Every NE lies in :math:`K`
   (the constraints are linear, so KKT multipliers exist).
2. Minimise the generic form :math:`[1; x]^\top \Theta [1; x]`, :math:`\Theta = R^\top R`,
   :math:`R \sim N(0,1)^{(k+1)\times(k+1)}` (``default_rng(theta_seed)``), over :math:`K` and the cuts so far
   with the level-``r`` moment relaxation. Infeasible: no NE exists. Not flat: raise the level (up to
   ``max_level``, then "undecided"). Flat rank 1: candidate :math:`u` = first moments.
3. For each player :math:`\delta_i = \max_{x_i} U_i(x_i, u_{-i}) - U_i(u)` with the single-player hierarchy
   in the player's own variables (level raised until certified). If :math:`\max_i \delta_i \le` ``tol``: an
   NE. Otherwise add the valid cut :math:`U_i(x) - U_i(v_i, x_{-i}) \ge 0` (:math:`v_i` the maximiser) for
   every :math:`i` with :math:`\delta_i >` ``tol``, and repeat.

Reference: J. Nie, X. Tang, "Nash equilibrium problems of polynomials", Math. Oper. Res. 2024.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import poly as P
from .hierarchy import min_level, moment_relaxation, single_player_bound, strategy_constraints, strategy_polytope

__all__ = ["NashResult", "sos_nash", "nash_conv", "kkt_constraints", "best_response", "nash_conv_lipschitz",
           "no_ne_grid_certificate", "no_ne_exact_certificate"]


@dataclass
class NashResult:
    """``status`` ("ne" | "no_ne" | "undecided"), ``profile`` (dict or None), ``nash_conv`` (sum of the
    certified deviation gains at the profile, or None), ``iterations``, ``cuts``, ``levels`` (level of each
    relaxation solved), ``solvers`` (backend of each), ``seconds``, ``candidate_gaps`` (for every flat candidate in
    order, the sum over players of its certified best-response gain; a positive entry before the last is a
    candidate the cut loop rejected)."""

    status: str
    profile: dict | None
    nash_conv: float | None
    iterations: int
    cuts: int
    levels: list = field(default_factory=list)
    solvers: list = field(default_factory=list)
    seconds: float = 0.0
    candidate_gaps: list = field(default_factory=list)


def kkt_constraints(game) -> tuple[list, list]:
    """Inequalities :math:`\\mu_{I,a} \\ge 0` and equalities :math:`x_{I,a}\\mu_{I,a} = 0` in free variables."""
    fv = game.full_variables
    ineqs, eqs = [], []
    off = {}
    o = 0
    for k, I in enumerate(game.infosets):
        off[k] = o
        o += len(I.actions)
    for player in game.players:
        Uf = game.full_polynomial(player)
        m = len(fv)
        for k in game.player_infosets(player):
            I = game.infosets[k]
            cols = [off[k] + j for j in range(len(I.actions))]
            D = [P.derivative(Uf, c) for c in cols]
            nu = P.add(*[P.mul(P.var(c, m), d) for c, d in zip(cols, D)])
            for c, d in zip(cols, D):
                mu = P.add(nu, P.scale(d, -1.0))
                ineqs.append(game.eliminate(mu))
                eqs.append(game.eliminate(P.mul(P.var(c, m), mu)))
    return [g for g in ineqs if g], [h for h in eqs if h]


def _own_poly(game, player, x):
    """U_i(x_i, x_-i) as a polynomial in player i's own free variables, the others fixed at ``x``."""
    own = game.player_variables(player)
    fixed = {j: float(x[j]) for j in range(game.n_variables) if j not in own}
    return P.restrict(game.polynomial(player), fixed, own), own


def _own_groups(game, player, own):
    pos = {j: t for t, j in enumerate(own)}
    return [[pos[j] for j in game.infoset_variables(k)] for k in game.player_infosets(player)]


def _clip_groups(groups):
    def clip(z):
        z = np.clip(np.asarray(z, dtype=float), 0.0, 1.0)
        for g in groups:
            s = z[g].sum()
            if s > 1:
                z[g] = z[g] / s
        return z
    return clip


def _enumerate_best(game, player, Ui, own):
    E, c = P.to_arrays(Ui, len(own))
    X = np.array(list(game.pure_strategies(player))).reshape(-1, len(own))
    vals = P.eval_batch(E, c, X)
    k = int(np.argmax(vals))
    return float(vals[k]), X[k]


def _polish_best(Ui, groups, n_own, seed=0):
    """Grid (<= 3 variables) or multistart SLSQP maximum of a polynomial over a product of simplices."""
    from .baselines import maximise_polynomial

    return maximise_polynomial(Ui, n_own, groups, seed=seed)


def best_response(game, player: int, x, *, start_level: int | None = None, max_level: int = 4,
                  solver: str | None = None, tol: float = 1e-6) -> dict:
    r"""Best response of ``player`` to the free-variable profile ``x``.

    Returns ``{"value", "point" (own variables), "bound", "certified", "level", "method"}``: the
    single-player hierarchy is raised from ``max(1, ceil(deg/2))`` until the bound is certified (flat rank 1
    and attained) or until the bound is within ``tol`` of the current payoff (then no deviation gains more
    than ``tol``). Uncertified maximisers fall back to pure-strategy enumeration (non-absentminded player)
    or a grid / multistart local search.
    """
    Ui, own = _own_poly(game, player, x)
    groups = _own_groups(game, player, own)
    current = P.evaluate(game.polynomial(player), x)
    r = max(start_level or 1, min_level([Ui]))
    last = None
    while r <= max(max_level, min_level([Ui])):
        res = single_player_bound(Ui, len(own), groups, r, solver=solver, clip=_clip_groups(groups))
        last = res
        if res.certified:
            return {"value": res.value_at_strategy, "point": res.point, "bound": res.bound, "certified": True,
                    "level": r, "method": "sos", "solver": res.solver}
        if res.bound is not None and res.bound - current <= tol:
            return {"value": current, "point": np.asarray(x)[own], "bound": res.bound, "certified": True,
                    "level": r, "method": "sos-bound", "solver": res.solver}
        r += 1
    if not game.player_is_absentminded(player):
        val, pt = _enumerate_best(game, player, Ui, own)
        method, cert = "enumeration", True
    else:
        val, pt = _polish_best(Ui, groups, len(own))
        method, cert = "local", False
    return {"value": val, "point": pt, "bound": None if last is None else last.bound, "certified": cert,
            "level": r - 1, "method": method, "solver": "" if last is None else last.solver}


def _theta_objective(k: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((k + 1, k + 1))
    T = R.T @ R
    obj: dict = {}
    for a in range(k + 1):
        for b in range(k + 1):
            alpha = [0] * k
            if a:
                alpha[a - 1] += 1
            if b:
                alpha[b - 1] += 1
            alpha = tuple(alpha)
            obj[alpha] = obj.get(alpha, 0.0) + T[a, b]
    return P.clean(obj)


def _cut(game, player, v_own):
    """Valid inequality U_i(x) - U_i(v_i, x_-i) >= 0 (every NE satisfies it)."""
    n = game.n_variables
    own = game.player_variables(player)
    forms = [P.const(float(v_own[own.index(j)]), n) if j in own else P.var(j, n) for j in range(n)]
    dev = P.substitute_affine(game.polynomial(player), forms, n)
    return P.add(game.polynomial(player), P.scale(dev, -1.0))


def sos_nash(game, *, level: int = 2, max_level: int = 4, theta_seed: int = 0, max_iter: int = 30,
             tol: float = 1e-6, solver: str | None = None, scs_eps: float | None = None,
             scs_max_iters: int | None = None) -> NashResult:
    """Decide whether ``game`` has a Nash equilibrium in behavioural strategies and find one (see module doc).

    ValueError when ``level < max(1, ceil(deg/2))`` (deg: the largest utility degree), ``max_level < level``
    or ``max_iter < 1``. ``scs_eps`` and ``scs_max_iters`` override SCS's tolerances (default 1e-9) and
    iteration cap (default 100000) in the KKT relaxations.
    """
    start = time.perf_counter()
    deg = game.degree()
    need = max(1, math.ceil(deg / 2))
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < need:
        raise ValueError(f"level must be an integer >= max(1, ceil(deg/2)) = {need}, got {level!r}")
    if isinstance(max_level, bool) or not isinstance(max_level, (int, np.integer)) or max_level < level:
        raise ValueError(f"max_level must be an integer >= level ({level}), got {max_level!r}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
    n = game.n_variables
    groups = [game.infoset_variables(k) for k in range(len(game.infosets))]
    lin, prods = strategy_constraints(groups, n)
    kkt_in, kkt_eq = kkt_constraints(game)
    objective = _theta_objective(n, theta_seed)
    cuts: list = []
    levels, solvers, gaps = [], [], []
    r = max(level, min_level(kkt_in + kkt_eq))
    if r > max_level:
        raise ValueError(f"max_level must be >= {r} (the KKT constraints have degree {2 * r} or so)")
    it = 0
    while it < max_iter:
        it += 1
        sol = moment_relaxation(n, r, objective, sense="min", ineqs=lin + prods + kkt_in + cuts, eqs=kkt_eq,
                                solver=solver, scs_eps=scs_eps, scs_max_iters=scs_max_iters)
        levels.append(int(r))
        solvers.append(sol.backend)
        if sol.status == "infeasible":
            return NashResult("no_ne", None, None, it, len(cuts), levels, solvers, time.perf_counter() - start, gaps)
        if sol.y is None or not sol.flat or sol.flat_rank != 1:
            r += 1
            if r > max_level:
                break
            continue
        u = game.clip_to_polytope(sol.first_moments)
        deltas, new_cuts = [], []
        for player in game.players:
            br = best_response(game, player, u, max_level=max_level, solver=solver, tol=tol)
            delta = br["value"] - P.evaluate(game.polynomial(player), u)
            deltas.append(max(delta, 0.0))
            if delta > tol:
                new_cuts.append(_cut(game, player, br["point"]))
        gaps.append(float(sum(deltas)))
        if max(deltas) <= tol:
            return NashResult("ne", game.vector_to_profile(u), float(sum(deltas)), it, len(cuts), levels, solvers,
                              time.perf_counter() - start, gaps)
        cuts.extend(new_cuts)
    return NashResult("undecided", None, None, it, len(cuts), levels, solvers, time.perf_counter() - start, gaps)


def nash_conv(game, profile) -> float:
    r"""NashConv :math:`\sum_i [\max_{x_i} U_i(x_i, \pi_{-i}) - U_i(\pi)]` of a behavioural profile.

    The inner max is exact: pure-strategy enumeration for a non-absentminded player (:math:`U_i` is affine in
    each of the player's infosets), the certified single-player hierarchy otherwise.
    """
    x = game.profile_to_vector(profile)
    total = 0.0
    for player in game.players:
        Ui, own = _own_poly(game, player, x)
        cur = P.evaluate(game.polynomial(player), x)
        if not game.player_is_absentminded(player):
            best, _ = _enumerate_best(game, player, Ui, own)
        else:
            best = best_response(game, player, x, tol=0.0)["value"]
        total += max(best - cur, 0.0)
    return float(total)


def nash_conv_grid(game, grid: np.ndarray) -> np.ndarray:
    """NashConv at every row of ``grid`` (free-variable profiles), for games without absentminded players."""
    if any(game.player_is_absentminded(p) for p in game.players):
        raise ValueError("nash_conv_grid needs players without absentmindedness (pure best responses)")
    grid = np.asarray(grid, dtype=float)
    total = np.zeros(grid.shape[0])
    for player in game.players:
        E, c = P.to_arrays(game.polynomial(player), game.n_variables)
        cur = P.eval_batch(E, c, grid)
        own = game.player_variables(player)
        best = np.full(grid.shape[0], -np.inf)
        for pure in game.pure_strategies(player):
            X = grid.copy()
            X[:, own] = pure
            best = np.maximum(best, P.eval_batch(E, c, X))
        total += np.maximum(best - cur, 0.0)
    return total


def coordinate_derivative_bounds(p: dict, n: int) -> np.ndarray:
    """S_j >= sup over the box [0, 1]^n of |dp/dx_j|, for j = 0..n-1.

    For a multilinear p (every exponent <= 1) dp/dx_j is multilinear, so its extreme values over the box are at
    vertices and S_j is exact (vertex enumeration, n <= 16); otherwise S_j = sum_alpha |c_alpha| alpha_j, since
    |d x^alpha / dx_j| <= alpha_j on the box."""
    multilinear = all(max(a, default=0) <= 1 for a in p)
    out = np.zeros(n)
    if multilinear and n <= 16:
        V = np.array(list(itertools.product((0.0, 1.0), repeat=n)))
        for j in range(n):
            d = P.derivative(p, j)
            if d:
                E, c = P.to_arrays(d, n)
                out[j] = float(np.max(np.abs(P.eval_batch(E, c, V))))
        return out
    for a, c in p.items():
        out += abs(c) * np.asarray(a, dtype=float)
    return out


def nash_conv_lipschitz(game) -> float:
    r"""A Lipschitz constant of NashConv in the sup-norm over the box :math:`[0, 1]^n` of free variables:
    :math:`\sum_i (\sum_{j \notin \mathrm{own}_i} S_{ij} + \sum_j S_{ij})`, :math:`S_{ij} \ge \sup |\partial_j
    U_i|` (:func:`coordinate_derivative_bounds`). The best-response value :math:`\max_p U_i(p, x_{-i})` depends
    on the others' variables only, each restriction with sup-norm constant at most
    :math:`\sum_{j \notin \mathrm{own}_i} S_{ij}`; :math:`U_i` itself has :math:`\sum_j S_{ij}`."""
    n = game.n_variables
    total = 0.0
    for p in game.players:
        S = coordinate_derivative_bounds(game.polynomial(p), n)
        own = set(game.player_variables(p))
        total += float(sum(S[j] for j in range(n) if j not in own) + S.sum())
    return total


def no_ne_grid_certificate(game, k: int) -> dict:
    r"""Certificate that ``game`` has no Nash equilibrium, independent of any SDP: with the grid
    :math:`\{0, h, \dots, 1\}^n` (:math:`h = 1/(k-1)`), every profile lies within :math:`h/2` (sup-norm) of a
    grid point, so :math:`\mathrm{NashConv}(x) \ge \min_{\mathrm{grid}} \mathrm{NashConv} - L h / 2`.
    ``margin`` :math:`= \min_{\mathrm{grid}} - L h/2 - 10^{-9}` (floating-point slack); ``margin > 0`` proves
    NashConv > 0 everywhere, i.e. no NE. Players must not be absentminded (pure best responses)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k!r}")
    g = np.linspace(0.0, 1.0, int(k))
    n = game.n_variables
    grid = np.stack([a.ravel() for a in np.meshgrid(*([g] * n), indexing="ij")], axis=1)
    nc = nash_conv_grid(game, grid)
    lip = nash_conv_lipschitz(game)
    h = 1.0 / (k - 1)
    min_nc = float(nc.min())
    return {"min_grid_nashconv": min_nc, "lipschitz": lip, "h": h, "margin": min_nc - lip * h / 2 - 1e-9,
            "argmin": grid[int(np.argmin(nc))]}


def _z3_poly(p: dict, xs):
    """The polynomial ``p`` (exponent tuple -> float coefficient) as a z3 real term in ``xs``; every coefficient
    is converted exactly (``Fraction(c)``: the float's own binary value, no rounding)."""
    import z3
    from fractions import Fraction

    terms = []
    for a, c in p.items():
        t = z3.RealVal(str(Fraction(float(c))))
        for j, k in enumerate(a):
            for _ in range(int(k)):
                t = t * xs[j]
        terms.append(t)
    return z3.Sum(terms) if terms else z3.RealVal(0)


def _z3_polytope(xs, groups):
    """The strategy polytope of :func:`~papers.irefg_sos.hierarchy.strategy_polytope` (:math:`x \ge 0` and
    :math:`\sum_{j \in I} x_j \le 1` for every infoset group) as z3 constraints on ``xs``."""
    return [_z3_poly(g, xs) >= 0 for g in strategy_polytope(groups, len(xs))]


def no_ne_exact_certificate(game, *, timeout_s: float = 60.0) -> dict:
    r"""Exact decision, without any SDP or floating-point step, of whether ``game`` has a Nash equilibrium in
    behavioural strategies: z3's complete procedure for nonlinear real arithmetic (nlsat) on

    .. math::
        \exists x \in \Delta:\ \forall i\ \forall x_i' \in \Delta_i:\ U_i(x_i', x_{-i}) \le U_i(x).

    For a player without absentmindedness :math:`U_i` is affine in each of its infosets' blocks, so the inner
    maximum is attained at a pure strategy and the quantifier becomes the finite list
    :math:`U_i(p_i, x_{-i}) \le U_i(x)` over pure :math:`p_i`; for an absentminded player the universal
    quantifier over its own polytope is kept (z3 eliminates it). ``"unsat"`` proves that no NE exists (for the
    utilities with coefficients equal to the floats' exact binary values); ``"sat"`` returns an NE (``witness``,
    free variables, decimal approximations of z3's exact model); ``"unknown"`` when z3 gives up or times out.
    """
    import z3

    if not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool) or not timeout_s > 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    n = game.n_variables
    xs = [z3.Real(f"x{j}") for j in range(n)]
    solver = z3.Solver()
    solver.set("timeout", int(1000 * timeout_s))
    groups = [game.infoset_variables(k) for k in range(len(game.infosets))]
    solver.add(*_z3_polytope(xs, groups))
    n_deviations, quantified = 0, []
    for player in game.players:
        U = game.polynomial(player)
        own = game.player_variables(player)
        value = _z3_poly(U, xs)
        if not game.player_is_absentminded(player):
            for pure in game.pure_strategies(player):
                ys = list(xs)
                for j, v in zip(own, pure):
                    ys[j] = z3.RealVal(int(round(float(v))))
                solver.add(_z3_poly(U, ys) <= value)
                n_deviations += 1
        else:
            zs = [z3.Real(f"z{player}_{j}") for j in own]
            ys = list(xs)
            for j, zj in zip(own, zs):
                ys[j] = zj
            pos = {j: t for t, j in enumerate(own)}
            dom = _z3_polytope(zs, [[pos[j] for j in game.infoset_variables(k)]
                                    for k in game.player_infosets(player)])
            solver.add(z3.ForAll(zs, z3.Implies(z3.And(*dom), _z3_poly(U, ys) <= value)))
            quantified.append(int(player))
    answer = solver.check()
    status = "unsat" if answer == z3.unsat else ("sat" if answer == z3.sat else "unknown")
    witness = None
    if status == "sat":
        model = solver.model()
        witness = []
        for x in xs:
            val = model.eval(x, model_completion=True)
            witness.append(float(val.as_fraction()) if z3.is_rational_value(val)
                           else float(val.approx(12).as_fraction()))
    return {"z3": status, "witness": witness, "pure_deviations": n_deviations, "quantified_players": quantified,
            "reason": solver.reason_unknown() if status == "unknown" else ""}
