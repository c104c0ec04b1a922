"""Reference formulations of the ComplexOR problems, written by the project from each ``gt_model.txt``.

ComplexOR (Chain-of-Experts) gives, per problem, a text statement of the ground-truth model (sets,
parameters, variables, objective, constraints) and one sample input with a recorded output. For the 17
problems with a ``gt_model.txt`` this module builds that model as a :class:`Formulation` from the sample
input, and :func:`audit` solves it (HiGHS, cross-checked with CBC) and compares with the recorded output
within rel 1e-6 (``|p - g| <= 1e-6 max(1, |g|)``). Nothing is tuned to the recorded outputs: each model
follows the statement as written, with the readings listed in :data:`READINGS` where the statement is
ambiguous, has a typo, or the sample's array layout has to be chosen. Variable types: integer/binary only
where the statement says binary or the variable is a 0/1 indicator (assignment, selection, order); every
other variable is continuous and non-negative (the statements declare no types).
"""
from __future__ import annotations

import math

import numpy as np

from papers.sacopt.formulation import Constraint, Formulation, Variable, solve_formulation

__all__ = ["REFERENCE", "READINGS", "reference_formulation", "audit", "audit_problem"]


def _arr(inp: dict, key: str, problem: str) -> np.ndarray:
    if key not in inp:
        raise ValueError(f"sample_input of {problem!r} lacks key {key!r}")
    return np.asarray(inp[key], dtype=float)


def _vars(names, *, integer=False, ub=None):
    return [Variable(n, 0.0, ub, integer) for n in names]


def _sum(pairs):
    out: dict[str, float] = {}
    for name, c in pairs:
        out[name] = out.get(name, 0.0) + float(c)
    return out


# --------------------------------------------------------------------------------------------- the models
def _aircraft_assignment(inp):
    av, dem = _arr(inp, "availability", "aircraft_assignment"), _arr(inp, "demand", "aircraft_assignment")
    cap, cost = _arr(inp, "capabilities", "aircraft_assignment"), _arr(inp, "costs", "aircraft_assignment")
    A, R = range(len(av)), range(len(dem))
    x = {(a, r): f"alloc_{a}_{r}" for a in A for r in R}
    cons = [Constraint({x[a, r]: 1.0 for r in R}, "<=", av[a], f"avail_{a}") for a in A]
    cons += [Constraint({x[a, r]: cap[a, r] for a in A}, "==", dem[r], f"demand_{r}") for r in R]
    return Formulation(_vars(x.values()), {x[a, r]: cost[a, r] for a in A for r in R}, "min", cons)


def _aircraft_landing(inp):
    p = "aircraft_landing"
    E, L, T = (_arr(inp, k, p) for k in ("EarliestLanding", "LatestLanding", "TargetLanding"))
    pa, pb, S = (_arr(inp, k, p) for k in ("PenaltyAfterTarget", "PenaltyBeforeTarget", "SeparationTime"))
    N = range(len(E))
    land = [f"land_{i}" for i in N]
    early, late = [f"early_{i}" for i in N], [f"late_{i}" for i in N]
    order = {(i, j): f"order_{i}_{j}" for i in N for j in N if i != j}
    variables = [Variable(land[i], E[i], L[i]) for i in N] + _vars(early) + _vars(late) + \
        _vars(order.values(), integer=True, ub=1.0)
    cons = []
    for i in N:
        for j in N:
            if i == j:
                continue
            if i < j:
                cons.append(Constraint({order[i, j]: 1.0, order[j, i]: 1.0}, "==", 1.0, f"order_{i}_{j}"))
            # land_j >= land_i + S_ij o_ij - (L_i - E_j) o_ji
            cons.append(Constraint(_sum([(land[j], 1.0), (land[i], -1.0), (order[i, j], -S[i, j]),
                                         (order[j, i], L[i] - E[j])]), ">=", 0.0, f"sep_{i}_{j}"))
        cons.append(Constraint({early[i]: 1.0, land[i]: 1.0}, ">=", T[i], f"early_{i}"))
        cons.append(Constraint({late[i]: 1.0, land[i]: -1.0}, ">=", -T[i], f"late_{i}"))
    obj = _sum([(early[i], pb[i]) for i in N] + [(late[i], pa[i]) for i in N])
    return Formulation(variables, obj, "min", cons)


def _blend_problem(inp):
    p = "blend_problem"
    comp, want, price = (_arr(inp, k, p) for k in ("composition_data", "desired_blend_percentage", "alloy_price"))
    A, El = range(len(price)), range(len(want))
    x = [f"buy_{a}" for a in A]
    cons = [Constraint({x[a]: comp[e, a] for a in A}, "==", want[e], f"elem_{e}") for e in El]
    cons.append(Constraint({x[a]: 1.0 for a in A}, "==", 1.0, "balance"))
    return Formulation(_vars(x), {x[a]: price[a] for a in A}, "min", cons)


def _car_selection(inp):
    poss = _arr(inp, "possible_assignments", "car_selection")
    P, C = range(poss.shape[0]), range(poss.shape[1])
    x = {(i, c): f"assign_{i}_{c}" for i in P for c in C}
    cons = [Constraint({x[i, c]: 1.0}, "<=", poss[i, c], f"possible_{i}_{c}") for i in P for c in C]
    cons += [Constraint({x[i, c]: 1.0 for c in C}, "<=", 1.0, f"part_{i}") for i in P]
    cons += [Constraint({x[i, c]: 1.0 for i in P}, "<=", 1.0, f"car_{c}") for c in C]
    return Formulation(_vars(x.values(), integer=True, ub=1.0), {v: 1.0 for v in x.values()}, "max", cons)


def _cell_tower(inp):
    p = "cell_tower"
    delta, cost, pop = (_arr(inp, k, p) for k in ("delta", "cost", "population"))
    budget = float(_arr(inp, "budget", p))
    Tw, Rg = range(len(cost)), range(len(pop))
    build, cov = [f"build_{i}" for i in Tw], [f"covered_{j}" for j in Rg]
    cons = [Constraint(_sum([(build[i], delta[i, j]) for i in Tw] + [(cov[j], -1.0)]), ">=", 0.0, f"cover_{j}")
            for j in Rg]
    cons.append(Constraint({build[i]: cost[i] for i in Tw}, "<=", budget, "budget"))
    return Formulation(_vars(build + cov, integer=True, ub=1.0), {cov[j]: pop[j] for j in Rg}, "max", cons)


def _cutting_stock(inp):
    p = "cutting_stock"
    widths, orders, rolls = (_arr(inp, k, p) for k in ("widths", "orders", "num_rolls_width"))
    roll_width = float(_arr(inp, "roll_width", p))
    J, W = range(rolls.shape[0]), range(len(widths))  # sample layout: rows = patterns, columns = widths
    cut = [f"cut_{j}" for j in J]
    cons = [Constraint({cut[j]: rolls[j, i] for j in J}, ">=", orders[i], f"orders_{i}") for i in W]
    # constraint 2 involves data only (sum_i width_i * rolls_ij <= RollWidth): a violated pattern makes the model
    # infeasible, represented by 0 <= -1
    for j in J:
        if float(np.dot(widths, rolls[j])) > roll_width + 1e-9:
            cons.append(Constraint({cut[j]: 0.0}, ">=", 1.0, f"pattern_width_{j}"))
    return Formulation(_vars(cut, integer=True), {c: 1.0 for c in cut}, "min", cons)


def _diet_problem(inp):
    p = "diet_problem"
    cost, lo, hi = (_arr(inp, k, p) for k in ("food_cost", "min_food_amount", "max_food_amount"))
    nmin, nmax, amt = (_arr(inp, k, p) for k in ("min_nutrient_amount", "max_nutrient_amount", "nutrient_amount"))
    F, Nu = range(len(cost)), range(len(nmin))
    buy = [f"buy_{j}" for j in F]
    variables = [Variable(buy[j], lo[j], hi[j]) for j in F]
    cons = [Constraint({buy[j]: amt[i, j] for j in F}, ">=", nmin[i], f"nmin_{i}") for i in Nu]
    cons += [Constraint({buy[j]: amt[i, j] for j in F}, "<=", nmax[i], f"nmax_{i}") for i in Nu]
    return Formulation(variables, {buy[j]: cost[j] for j in F}, "min", cons)


def _dietu_problem(inp):
    p = "dietu_problem"
    cost, lo, hi = (_arr(inp, k, p) for k in ("cost", "f_min", "f_max"))
    nmin, nmax, amt = (_arr(inp, k, p) for k in ("n_min", "n_max", "amt"))
    F = range(len(cost))
    buy = [f"buy_{j}" for j in F]
    variables = [Variable(buy[j], lo[j], hi[j]) for j in F]
    cons = [Constraint({buy[j]: amt[i, j] for j in F}, ">=", nmin[i], f"nmin_{i}") for i in range(len(nmin))]
    cons += [Constraint({buy[j]: amt[i, j] for j in F}, "<=", nmax[i], f"nmax_{i}") for i in range(len(nmax))]
    return Formulation(variables, {buy[j]: cost[j] for j in F}, "min", cons)


def _flowshop_scheduling(inp):
    pt = _arr(inp, "proces_time", "flowshop_scheduling")  # [job][machine]
    J, S, M = range(pt.shape[0]), range(pt.shape[0]), range(pt.shape[1])
    x = {(j, s): f"pos_{j}_{s}" for j in J for s in S}
    st = {(s, m): f"start_{s}_{m}" for s in S for m in M}
    cons = [Constraint({x[j, s]: 1.0 for j in J}, "==", 1.0, f"slot_{s}") for s in S]
    cons += [Constraint({x[j, s]: 1.0 for s in S}, "==", 1.0, f"job_{j}") for j in J]
    for s in S:
        for m in M:
            if m + 1 < len(M):  # start on m+1 after finishing on m
                cons.append(Constraint(_sum([(st[s, m + 1], 1.0), (st[s, m], -1.0)] +
                                            [(x[j, s], -pt[j, m]) for j in J]), ">=", 0.0, f"mach_{s}_{m}"))
            if s + 1 < len(S):  # position s+1 starts after position s finishes on m
                cons.append(Constraint(_sum([(st[s + 1, m], 1.0), (st[s, m], -1.0)] +
                                            [(x[j, s], -pt[j, m]) for j in J]), ">=", 0.0, f"seq_{s}_{m}"))
    last_s, last_m = len(S) - 1, len(M) - 1
    obj = _sum([(st[last_s, last_m], 1.0)] + [(x[j, last_s], pt[j, last_m]) for j in J])
    return Formulation(_vars(x.values(), integer=True, ub=1.0) + _vars(st.values()), obj, "min", cons)


def _knapsack_optimization(inp):
    p = "knapsack_optimization"
    val, wt = _arr(inp, "item_values", p), _arr(inp, "item_weights", p)
    cap = float(_arr(inp, "max_weight_knapsack", p))
    x = [f"take_{i}" for i in range(len(val))]
    return Formulation(_vars(x, integer=True, ub=1.0), {x[i]: val[i] for i in range(len(x))}, "max",
                       [Constraint({x[i]: wt[i] for i in range(len(x))}, "<=", cap, "weight")])


def _media_selection(inp):
    inc, cost = _arr(inp, "incidence_matrix", "media_selection"), _arr(inp, "media_costs", "media_selection")
    T, M = range(inc.shape[0]), range(len(cost))
    x = [f"sel_{m}" for m in M]
    cons = [Constraint({x[m]: inc[t, m] for m in M}, ">=", 1.0, f"cover_{t}") for t in T]
    return Formulation(_vars(x, integer=True, ub=1.0), {x[m]: cost[m] for m in M}, "min", cons)


def _multi(inp):
    sup, dem, lim, cost = (_arr(inp, k, "multi") for k in ("supply", "demand", "limit", "cost"))
    I, J, P = range(sup.shape[0]), range(dem.shape[0]), range(sup.shape[1])
    x = {(i, j, p): f"t_{i}_{j}_{p}" for i in I for j in J for p in P}
    cons = [Constraint({x[i, j, p]: 1.0 for j in J}, "==", sup[i, p], f"sup_{i}_{p}") for i in I for p in P]
    cons += [Constraint({x[i, j, p]: 1.0 for i in I}, "==", dem[j, p], f"dem_{j}_{p}") for j in J for p in P]
    # limit is laid out [destination][origin] in the sample (READINGS["multi"]): Limit_{i,j} = limit[j][i]
    cons += [Constraint({x[i, j, p]: 1.0 for p in P}, "<=", lim[j, i], f"lim_{i}_{j}") for i in I for j in J]
    return Formulation(_vars(x.values()), {x[k]: cost[k] for k in x}, "min", cons)


def _netasgn(inp):
    sup, dem, cost, lim = (_arr(inp, k, "netasgn") for k in ("supply", "demand", "cost", "limit"))
    I, J = range(len(sup)), range(len(dem))
    x = {(i, j): f"a_{i}_{j}" for i in I for j in J}
    cons = [Constraint({x[i, j]: 1.0 for j in J}, "==", sup[i], f"sup_{i}") for i in I]
    cons += [Constraint({x[i, j]: 1.0 for i in I}, "==", dem[j], f"dem_{j}") for j in J]
    cons += [Constraint({x[i, j]: 1.0}, "<=", lim[i, j], f"lim_{i}_{j}") for i in I for j in J]
    return Formulation(_vars(x.values()), {x[k]: cost[k] for k in x}, "min", cons)


def _netmcol(inp):
    p = "netmcol"
    for k in ("Cities", "Links", "Products"):
        if k not in inp:
            raise ValueError(f"sample_input of {p!r} lacks key {k!r}")
    cities, links, products = list(inp["Cities"]), [tuple(l) for l in inp["Links"]], list(inp["Products"])
    sup, dem = _arr(inp, "Supply", p), _arr(inp, "Demand", p)
    nL, nP = len(links), len(products)
    cost = _arr(inp, "ShipmentCost", p).reshape(nL, -1)[:, -nP:]  # per link, per product (sample: one row per link)
    cap = _arr(inp, "Capacity", p).reshape(nL, -1)[:, -nP:]
    joint = _arr(inp, "JointCapacity", p).reshape(nL, -1)[:, 0]
    x = {(l, q): f"ship_{l}_{q}" for l in range(nL) for q in range(nP)}
    cons = []
    for k, city in enumerate(cities):
        for q in range(nP):
            inflow = [(x[l, q], 1.0) for l, (a, b) in enumerate(links) if b == city]
            outflow = [(x[l, q], -1.0) for l, (a, b) in enumerate(links) if a == city]
            coeffs = _sum(inflow + outflow) or {x[0, q]: 0.0}
            cons.append(Constraint(coeffs, "==", dem[k, q] - sup[k, q], f"flow_{k}_{q}"))
    cons += [Constraint({x[l, q]: 1.0 for q in range(nP)}, "<=", joint[l], f"joint_{l}") for l in range(nL)]
    variables = [Variable(x[l, q], 0.0, float(cap[l, q])) for l in range(nL) for q in range(nP)]
    return Formulation(variables, {x[l, q]: cost[l, q] for l, q in x}, "min", cons)


def _nltrans(inp):
    sup, dem, rate, lim = (_arr(inp, k, "nltrans") for k in ("supply", "demand", "rate", "limit"))
    I, J = range(len(sup)), range(len(dem))
    x = {(i, j): f"s_{i}_{j}" for i in I for j in J}
    cons = [Constraint({x[i, j]: 1.0 for j in J}, "==", sup[i], f"sup_{i}") for i in I]
    cons += [Constraint({x[i, j]: 1.0 for i in I}, "==", dem[j], f"dem_{j}") for j in J]
    variables = [Variable(x[i, j], 0.0, float(lim[i, j])) for i in I for j in J]
    return Formulation(variables, {x[k]: rate[k] for k in x}, "min", cons)


def _revenue_maximization(inp):
    p = "revenue_maximization"
    seats, dem, rev, delta = (_arr(inp, k, p) for k in ("available_seats", "demand", "revenue", "delta"))
    P, R = range(len(dem)), range(len(seats))
    x = [f"sell_{q}" for q in P]
    cons = [Constraint({x[q]: 1.0}, "<=", dem[q], f"demand_{q}") for q in P]
    cons += [Constraint({x[q]: delta[q, r] for q in P}, "<=", seats[r], f"seats_{r}") for r in R]
    return Formulation(_vars(x), {x[q]: rev[q] for q in P}, "max", cons)


def _steel4(inp):
    rate, avail, profit, commit, market = (_arr(inp, k, "steel4") for k in ("rate", "avail", "profit", "commit",
                                                                             "market"))
    P, S = range(len(profit)), range(len(avail))
    x = [f"make_{q}" for q in P]
    cons = [Constraint({x[q]: 1.0 / rate[q, s] for q in P}, "<=", avail[s], f"stage_{s}") for s in S]
    cons += [Constraint({x[q]: 1.0}, ">=", commit[q], f"commit_{q}") for q in P]
    cons += [Constraint({x[q]: 1.0}, "<=", market[q], f"market_{q}") for q in P]
    return Formulation(_vars(x), {x[q]: profit[q] for q in P}, "max", cons)


REFERENCE = {
    "aircraft_assignment": _aircraft_assignment, "aircraft_landing": _aircraft_landing,
    "blend_problem": _blend_problem, "car_selection": _car_selection, "cell_tower": _cell_tower,
    "cutting_stock": _cutting_stock, "diet_problem": _diet_problem, "dietu_problem": _dietu_problem,
    "flowshop_scheduling": _flowshop_scheduling, "knapsack_optimization": _knapsack_optimization,
    "media_selection": _media_selection, "multi": _multi, "netasgn": _netasgn, "netmcol": _netmcol,
    "nltrans": _nltrans, "revenue_maximization": _revenue_maximization, "steel4": _steel4,
}

# Readings where gt_model.txt is ambiguous, has a typo, or the sample's array layout had to be chosen.
READINGS = {
    "aircraft_assignment": "Allocation continuous (no type stated); Capabilities/Costs as [aircraft][route].",
    "aircraft_landing": "AircraftsOrder binary; the order and separation constraints for i != j only (for i = j "
                        "constraint 1 would force 2 o_ii = 1); the time windows as variable bounds.",
    "blend_problem": "CompositionDataPercentage as [element][alloy] (the statement's index order).",
    "car_selection": "Assignments binary (an assignment indicator).",
    "cell_tower": "Delta as [tower][region] (the statement's index order); Build and Covered binary (stated).",
    "cutting_stock": "Cut integer (rolls); num_rolls_width rows are patterns (num_patterns rows), columns widths; "
                     "constraint 2 involves data only and is checked on the patterns.",
    "diet_problem": "MinAmount/MaxAmount (declared parameters) as bounds on Buy; nutrient_amount as "
                    "[nutrient][food].",
    "dietu_problem": "MinRequirements = MaxRequirements = all nutrients of the sample; f_min/f_max as bounds.",
    "flowshop_scheduling": "JobSchedule binary (stated 1/0), StartTime continuous; proces_time as [job][machine].",
    "knapsack_optimization": "KnapsackItems binary (an inclusion indicator).",
    "media_selection": "IsSelectedMIP binary (stated); incidence_matrix as [audience][media].",
    "multi": "supply [origin][product], demand [destination][product], cost [origin][destination][product]; "
             "limit [destination][origin]: read [origin][destination] (the statement's index order) the sample "
             "is infeasible (destination 0 needs 60 units in all, its two inbound limits sum to 55), and "
             "[destination][origin] is the only layout under which the sample has an optimum at all (reading "
             "demand as [product][destination] instead changes nothing on the sample).",
    "netasgn": "Constraints 1 and 2 sum over the other index only (the statement's double sum is a typo that "
               "would equate every person's supply with the total).",
    "netmcol": "Ship indexed by link (the sample's Links list) and product; flow balance supply + inflow = demand + "
               "outflow at each city; ShipmentCost/Capacity/JointCapacity read per link in the sample's order.",
    "nltrans": "Linear cost as stated (the AMPL original is nonlinear); the limit as a bound on Shipping.",
    "revenue_maximization": "Delta as [package][leg] (the statement's index order); Sell continuous.",
    "steel4": "rate as [product][stage] (the statement's index order); hours = Production / Rate.",
}


def reference_formulation(name: str, sample_input: dict) -> Formulation:
    """The project's reference :class:`Formulation` of ComplexOR problem ``name`` on ``sample_input``.

    Raises ``ValueError`` for a name without a reference (``prod`` has no gt_model.txt) or a sample input that
    lacks a required key.
    """
    if name not in REFERENCE:
        raise ValueError(f"name must be one of the {len(REFERENCE)} ComplexOR problems with a gt_model.txt "
                         f"({', '.join(sorted(REFERENCE))}), got {name!r}")
    if not isinstance(sample_input, dict):
        raise ValueError(f"sample_input must be a dict, got {type(sample_input).__name__}")
    return REFERENCE[name](sample_input)


def audit_problem(name: str, sample_input: dict, recorded: float | None, *, rel_tol: float = 1e-6) -> dict:
    """Solve the reference formulation of ``name`` with HiGHS and CBC; compare with ``recorded``."""
    if not (isinstance(rel_tol, (int, float)) and rel_tol >= 0 and math.isfinite(rel_tol)):
        raise ValueError(f"rel_tol must be a finite number >= 0, got {rel_tol!r}")
    f = reference_formulation(name, sample_input)
    highs, cbc = solve_formulation(f, backend="highs"), solve_formulation(f, backend="cbc")
    value = highs.objective
    agree = (highs.status == cbc.status and (value is None or
                                               abs(value - cbc.objective) <= 1e-6 * max(1.0, abs(value))))
    match = (recorded is not None and value is not None and abs(value - recorded) <= rel_tol * max(1.0, abs(recorded)))
    return {"problem": name, "status": highs.status, "reference": value, "recorded": recorded,
            "cbc": cbc.objective, "backends_agree": bool(agree), "match": bool(match),
            "n_variables": len(f.variables), "n_constraints": len(f.constraints),
            "n_integer": sum(v.integer for v in f.variables)}


def audit(problems, *, rel_tol: float = 1e-6) -> dict:
    """Audit every ComplexOR problem with a gt_model.txt in ``problems`` (``datasets.Problem`` items).

    Returns ``{"n_with_gt_model", "n_reproduced", "rows": [...], "mismatches": [...]}``.
    """
    rows = [audit_problem(p.id, p.meta["sample_input"], p.answer, rel_tol=rel_tol)
            for p in problems if p.meta.get("gt_model")]
    return {"n_with_gt_model": len(rows), "n_reproduced": sum(r["match"] for r in rows),
            "backends_agree": all(r["backends_agree"] for r in rows), "rel_tol": rel_tol, "rows": rows,
            "mismatches": [{"problem": r["problem"], "reference": r["reference"], "recorded": r["recorded"],
                            "status": r["status"]} for r in rows if not r["match"]]}
