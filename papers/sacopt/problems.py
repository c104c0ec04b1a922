"""Seeded generated optimisation-modelling problems with gold anchors, gold formulation and gold fragments.

Six families (spec "Generated problems"): production mix (max profit, resources <=), diet (min cost,
nutrients >=), transportation (min cost, supply <=, demand >=), assignment (binary, tasks == 1, workers <= 1),
knapsack (binary, weight and volume <=), blending (min cost, quality >=, share <=, total == 1). Every
constraint is a *spec*: terms sum_j mult_j * coef_j * x_j, an operator and a right-hand side, where coef_j
and the rhs are references into the instance's ``data`` (the JSON file the program reads) or constants.
Each spec has one canonical English template (:func:`describe`), rendered with the numbers, and a pulp code
fragment (:func:`fragment_code`). Every instance is checked feasible and bounded by HiGHS and re-solved by CBC.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

from shared import seeding
from papers.sacopt.formulation import Constraint, Formulation, Variable, solve_formulation

__all__ = ["GeneratedProblem", "FAMILIES", "generate_problems", "describe", "fragment_code", "canonical",
           "resolve", "spec_to_constraint", "build_formulation", "assemble_program", "program_footer", "code_hash"]

FAMILIES = ("production", "diet", "transportation", "assignment", "knapsack", "blending")
_OP_WORDS = {"<=": "must not exceed", ">=": "must be at least", "==": "must equal"}
_OP_BT = {"<=": "is at most", ">=": "is at least", "==": "is exactly"}


@dataclass
class GeneratedProblem:
    """A generated instance: ``text`` (what a modeller reads), ``data`` (data.json), gold ``anchors``,
    gold ``formulation``, the gold ``prelude`` (variables) / ``objective_code`` / ``fragments`` (one per
    constraint spec in ``specs``), ``answer`` (optimal objective) and ``family``."""

    id: str
    family: str
    text: str
    data: dict
    anchors: dict
    formulation: Formulation
    specs: list[dict]
    objective_spec: dict
    var_specs: list[dict]
    prelude: str
    objective_code: str
    fragments: list[str]
    answer: float
    meta: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------- spec helpers
def resolve(ref, data: dict) -> float:
    """Numeric value of a data reference: None -> 1, a number -> itself, [name, i, j] -> data[name][i][j]."""
    if ref is None:
        return 1.0
    if isinstance(ref, (int, float)):
        return float(ref)
    value = data[ref[0]]
    for k in ref[1:]:
        value = value[k]
    return float(value)


def _ref_code(ref) -> str:
    if isinstance(ref, (int, float)):
        return repr(ref)
    return "data" + "".join(f"[{json.dumps(k)}]" for k in ref)


def _term_code(term: dict) -> str:
    parts = []
    if term.get("mult", 1.0) != 1.0:
        parts.append(repr(float(term["mult"])))
    if term.get("coef") is not None:
        parts.append(_ref_code(term["coef"]))
    parts.append(f'x[{json.dumps(term["var"])}]')
    return " * ".join(parts)


def fragment_code(spec: dict, *, crash: bool = False) -> str:
    """One-line pulp fragment of a constraint spec; ``crash`` uses an undefined name (``dat``)."""
    terms = ", ".join(_term_code(t) for t in spec["terms"])
    rhs = _ref_code(spec["rhs"])
    if crash:
        rhs = rhs.replace("data[", "dat[", 1) if rhs.startswith("data[") else f"dat_const + {rhs}"
    return f'prob += pulp.lpSum([{terms}]) {spec["op"]} {rhs}, {json.dumps(spec["id"])}'


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _terms_text(spec: dict, data: dict, labels: dict) -> str:
    parts = []
    for t in spec["terms"]:
        c = resolve(t.get("coef"), data) * t.get("mult", 1.0)
        parts.append(f"{_fmt(c)} per unit of {labels[t['var']]}" if c != 1.0 else f"the amount of {labels[t['var']]}")
    return " plus ".join(parts)


def _rhs_text(spec: dict, data: dict) -> str:
    value = _fmt(resolve(spec["rhs"], data))
    return f"the {spec['rhs_label']} of {value}" if spec.get("rhs_label") else value


def describe(spec: dict, data: dict, labels: dict, *, style: str = "anchor") -> str:
    """Canonical English description of a constraint spec with its numbers.

    ``style="anchor"``: "The total {label}, {terms}, {must not exceed|must be at least|must equal} {rhs}.";
    ``style="bt"`` (back-translation, same structure and length): "Constraint on {label}: the sum of {terms}
    {is at most|is at least|is exactly} {rhs}."
    """
    terms, rhs = _terms_text(spec, data, labels), _rhs_text(spec, data)
    if style == "anchor":
        return f"The total {spec['label']}, {terms}, {_OP_WORDS[spec['op']]} {rhs}."
    if style == "bt":
        return f"Constraint on {spec['label']}: the sum of {terms} {_OP_BT[spec['op']]} {rhs}."
    raise ValueError(f"style must be 'anchor' or 'bt', got {style!r}")


def canonical(spec: dict, data: dict) -> tuple:
    """Canonical form (sorted (variable, coefficient) pairs, operator, rhs) used by the exact judge."""
    coeffs: dict[str, float] = {}
    for t in spec["terms"]:
        coeffs[t["var"]] = coeffs.get(t["var"], 0.0) + resolve(t.get("coef"), data) * t.get("mult", 1.0)
    return (tuple(sorted((k, round(v, 9)) for k, v in coeffs.items())), spec["op"],
            round(resolve(spec["rhs"], data), 9))


def spec_to_constraint(spec: dict, data: dict) -> Constraint:
    """The :class:`Constraint` a spec denotes."""
    coeffs, op, rhs = canonical(spec, data)
    return Constraint(dict(coeffs), op, rhs, spec["id"])


def build_formulation(var_specs, objective_spec, specs, data) -> Formulation:
    """The :class:`Formulation` of variables, objective and constraint specs."""
    variables = [Variable(v["name"], 0.0, 1.0 if v["type"] == "binary" else None, v["type"] != "continuous")
                 for v in var_specs]
    obj = dict(canonical({"terms": objective_spec["terms"], "op": "==", "rhs": 0}, data)[0])
    return Formulation(variables, obj, objective_spec["sense"], [spec_to_constraint(s, data) for s in specs])


def _prelude(var_specs, sense) -> str:
    lines = ["import json", "import pulp", "", 'data = json.load(open("data.json"))',
             f'prob = pulp.LpProblem("model", pulp.{"LpMaximize" if sense == "max" else "LpMinimize"})', "x = {}"]
    for v in var_specs:
        cat = {"continuous": "Continuous", "integer": "Integer", "binary": "Binary"}[v["type"]]
        lines.append(f'x[{json.dumps(v["name"])}] = pulp.LpVariable({json.dumps(v["name"])}, lowBound=0, cat="{cat}")')
    return "\n".join(lines)


def _objective_code(objective_spec) -> str:
    return f'prob += pulp.lpSum([{", ".join(_term_code(t) for t in objective_spec["terms"])}])'


def program_footer() -> str:
    """Solve with pulp's bundled CBC and print the contract's final line."""
    return "\n".join([
        "prob.solve(pulp.PULP_CBC_CMD(msg=0))",
        "_status = pulp.LpStatus[prob.status]",
        'if _status == "Optimal":',
        '    print(f"OBJECTIVE: {pulp.value(prob.objective)}")',
        'elif _status == "Infeasible":',
        '    print("STATUS: infeasible")',
        'elif _status == "Unbounded":',
        '    print("STATUS: unbounded")',
        "else:",
        '    print("solver status " + _status)'])


def assemble_program(prelude: str, objective_code: str, fragments) -> str:
    """One program: variables, objective, every constraint fragment, solve and report."""
    return "\n".join([prelude, "", "# objective", objective_code, "", "# constraints", *fragments, "",
                      program_footer(), ""])


def code_hash(code: str) -> str:
    """SHA-256 (first 16 hex digits) of a code fragment."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ families
def _ints(rng, lo, hi, shape):
    return rng.integers(lo, hi + 1, size=shape).tolist()


def _production(rng):
    P, R = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    resources = ["machine hours", "labour hours", "raw material"][:R]
    data = {"profit": _ints(rng, 5, 30, P), "use": _ints(rng, 1, 9, (R, P)), "cap": _ints(rng, 50, 200, R)}
    labels = {f"make_{j}": f"Product {j + 1}" for j in range(P)}
    var_specs = [{"name": f"make_{j}", "type": "continuous", "definition": f"units of Product {j + 1} made"}
                 for j in range(P)]
    obj = {"sense": "max", "terms": [{"var": f"make_{j}", "coef": ["profit", j]} for j in range(P)],
           "description": "Maximise the total profit of all products."}
    specs = [{"id": f"c{r}", "label": f"{resources[r]} used", "op": "<=", "rhs": ["cap", r],
              "rhs_label": f"available {resources[r]}",
              "terms": [{"var": f"make_{j}", "coef": ["use", r, j]} for j in range(P)]} for r in range(R)]
    intro = f"A factory makes {P} products using {R} resources and wants to maximise profit."
    return data, labels, var_specs, obj, specs, intro


def _diet(rng):
    F, N = int(rng.integers(3, 5)), int(rng.integers(2, 4))
    nutrients = ["protein", "fibre", "vitamin C"][:N]
    content = np.array(_ints(rng, 0, 9, (N, F)))
    content[:, 0] = np.maximum(content[:, 0], 1)
    data = {"cost": _ints(rng, 1, 10, F), "content": content.tolist(), "req": _ints(rng, 10, 50, N)}
    labels = {f"eat_{f}": f"Food {f + 1}" for f in range(F)}
    var_specs = [{"name": f"eat_{f}", "type": "continuous", "definition": f"servings of Food {f + 1}"}
                 for f in range(F)]
    obj = {"sense": "min", "terms": [{"var": f"eat_{f}", "coef": ["cost", f]} for f in range(F)],
           "description": "Minimise the total cost of the diet."}
    specs = [{"id": f"c{n}", "label": f"{nutrients[n]} supplied", "op": ">=", "rhs": ["req", n],
              "rhs_label": f"daily requirement of {nutrients[n]}",
              "terms": [{"var": f"eat_{f}", "coef": ["content", n, f]} for f in range(F)]} for n in range(N)]
    intro = f"A dietitian chooses servings of {F} foods to meet {N} nutrient requirements at minimum cost."
    return data, labels, var_specs, obj, specs, intro


def _transportation(rng):
    S, T = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    while True:
        supply, demand = _ints(rng, 20, 60, S), _ints(rng, 10, 40, T)
        if sum(demand) <= sum(supply):
            break
    data = {"supply": supply, "demand": demand, "cost": _ints(rng, 1, 15, (S, T))}
    labels = {f"ship_{i}_{j}": f"the route from Source {i + 1} to Sink {j + 1}" for i in range(S) for j in range(T)}
    var_specs = [{"name": f"ship_{i}_{j}", "type": "continuous",
                  "definition": f"units shipped from Source {i + 1} to Sink {j + 1}"} for i in range(S) for j in range(T)]
    obj = {"sense": "min", "terms": [{"var": f"ship_{i}_{j}", "coef": ["cost", i, j]} for i in range(S) for j in range(T)],
           "description": "Minimise the total shipping cost."}
    specs = [{"id": f"c{i}", "label": f"shipment out of Source {i + 1}", "op": "<=", "rhs": ["supply", i],
              "rhs_label": f"supply of Source {i + 1}", "terms": [{"var": f"ship_{i}_{j}"} for j in range(T)]}
             for i in range(S)]
    specs += [{"id": f"c{S + j}", "label": f"shipment into Sink {j + 1}", "op": ">=", "rhs": ["demand", j],
               "rhs_label": f"demand of Sink {j + 1}", "terms": [{"var": f"ship_{i}_{j}"} for i in range(S)]}
              for j in range(T)]
    intro = f"A company ships goods from {S} sources to {T} sinks at minimum cost."
    return data, labels, var_specs, obj, specs, intro


def _assignment(rng):
    T = int(rng.integers(3, 5))
    W = int(rng.integers(T, 6))
    data = {"cost": _ints(rng, 1, 20, (T, W))}
    labels = {f"assign_{t}_{w}": f"Worker {w + 1} on Task {t + 1}" for t in range(T) for w in range(W)}
    var_specs = [{"name": f"assign_{t}_{w}", "type": "binary",
                  "definition": f"1 if Worker {w + 1} does Task {t + 1}"} for t in range(T) for w in range(W)]
    obj = {"sense": "min", "terms": [{"var": f"assign_{t}_{w}", "coef": ["cost", t, w]} for t in range(T) for w in range(W)],
           "description": "Minimise the total assignment cost."}
    specs = [{"id": f"c{t}", "label": f"number of workers on Task {t + 1}", "op": "==", "rhs": 1, "rhs_label": "",
              "terms": [{"var": f"assign_{t}_{w}"} for w in range(W)]} for t in range(T)]
    specs += [{"id": f"c{T + w}", "label": f"number of tasks of Worker {w + 1}", "op": "<=", "rhs": 1,
               "rhs_label": "", "terms": [{"var": f"assign_{t}_{w}"} for t in range(T)]} for w in range(W)]
    intro = f"A manager assigns {T} tasks to {W} workers, one worker per task and at most one task per worker."
    return data, labels, var_specs, obj, specs, intro


def _knapsack(rng):
    n = int(rng.integers(4, 7))
    weight, volume = _ints(rng, 1, 15, n), _ints(rng, 1, 15, n)
    data = {"value": _ints(rng, 5, 40, n), "weight": weight, "volume": volume,
            "limit": [max(1, sum(weight) // 2), max(1, sum(volume) // 2)]}
    labels = {f"take_{i}": f"Item {i + 1}" for i in range(n)}
    var_specs = [{"name": f"take_{i}", "type": "binary", "definition": f"1 if Item {i + 1} is packed"}
                 for i in range(n)]
    obj = {"sense": "max", "terms": [{"var": f"take_{i}", "coef": ["value", i]} for i in range(n)],
           "description": "Maximise the total value packed."}
    specs = [{"id": f"c{k}", "label": f"{what} packed", "op": "<=", "rhs": ["limit", k], "rhs_label": f"{what} limit",
              "terms": [{"var": f"take_{i}", "coef": [what, i]} for i in range(n)]}
             for k, what in enumerate(["weight", "volume"])]
    intro = f"A hiker packs a subset of {n} items under a weight and a volume limit, maximising value."
    return data, labels, var_specs, obj, specs, intro


def _blending(rng):
    K, Q = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    qualities = ["protein percentage", "fat percentage"][:Q]
    quality = np.array(_ints(rng, 0, 100, (Q, K)))
    minimum = [int(rng.integers(quality[q].min(), int((quality[q].min() + quality[q].max()) / 2) + 1)) for q in range(Q)]
    data = {"cost": _ints(rng, 1, 20, K), "quality": quality.tolist(), "min_quality": minimum,
            "max_share": [round(float(rng.integers(3, 9)) / 10, 1)]}
    labels = {f"frac_{k}": f"Ingredient {k + 1}" for k in range(K)}
    var_specs = [{"name": f"frac_{k}", "type": "continuous", "definition": f"fraction of Ingredient {k + 1} in the blend"}
                 for k in range(K)]
    obj = {"sense": "min", "terms": [{"var": f"frac_{k}", "coef": ["cost", k]} for k in range(K)],
           "description": "Minimise the cost per unit of blend."}
    specs = [{"id": "c0", "label": "fraction of all ingredients", "op": "==", "rhs": 1, "rhs_label": "",
              "terms": [{"var": f"frac_{k}"} for k in range(K)]}]
    specs += [{"id": f"c{1 + q}", "label": f"{qualities[q]} of the blend", "op": ">=", "rhs": ["min_quality", q],
               "rhs_label": f"minimum {qualities[q]}",
               "terms": [{"var": f"frac_{k}", "coef": ["quality", q, k]} for k in range(K)]} for q in range(Q)]
    specs.append({"id": f"c{1 + Q}", "label": "share of Ingredient 1", "op": "<=", "rhs": ["max_share", 0],
                  "rhs_label": "maximum share", "terms": [{"var": "frac_0"}]})
    intro = f"A mill blends {K} ingredients into one unit of feed with quality targets at minimum cost."
    return data, labels, var_specs, obj, specs, intro


_BUILDERS = {"production": _production, "diet": _diet, "transportation": _transportation,
             "assignment": _assignment, "knapsack": _knapsack, "blending": _blending}


def _anchors(data, labels, var_specs, obj, specs):
    params = [{"symbol": k, "definition": k.replace("_", " "), "shape": list(np.shape(v)), "value": v}
              for k, v in data.items()]
    variables = [{"symbol": v["name"], "definition": v["definition"], "shape": [], "type": v["type"]}
                 for v in var_specs]
    return {"parameters": params, "variables": variables,
            "objective": {"description": obj["description"], "sense": obj["sense"]},
            "constraints": [describe(s, data, labels) for s in specs]}


def _text(intro, anchors) -> str:
    lines = [intro, "Data (also in data.json):"]
    lines += [f"- {p['symbol']} ({p['definition']}): {json.dumps(p['value'])}" for p in anchors["parameters"]]
    lines.append("Decisions: " + "; ".join(f"{v['symbol']} = {v['definition']} ({v['type']})"
                                             for v in anchors["variables"]) + ".")
    lines.append(anchors["objective"]["description"])
    lines += anchors["constraints"]
    return "\n".join(lines)


def generate_problems(n: int, *, seed: int, families: list[str] | None = None,
                      verify: bool = True) -> list[GeneratedProblem]:
    """``n`` instances cycling through ``families`` (default all six), each from its own seeded stream.

    Each instance is solved by HiGHS (must be optimal: feasible and bounded) and, with ``verify``, re-solved
    by CBC (relative agreement 1e-6), else redrawn. Raises ``ValueError`` for bad ``n`` or family names.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    families = list(FAMILIES) if families is None else list(families)
    if not families or any(f not in FAMILIES for f in families):
        raise ValueError(f"families must be a non-empty subset of {FAMILIES}, got {families!r}")
    out = []
    for i in range(int(n)):
        family = families[i % len(families)]
        rng = seeding.generator(seeding.check_seed(seed), "sacopt-problem", family, str(i))
        for _ in range(50):
            data, labels, var_specs, obj, specs, intro = _BUILDERS[family](rng)
            f = build_formulation(var_specs, obj, specs, data)
            res = solve_formulation(f, backend="highs")
            if res.status != "optimal":
                continue
            if verify:
                res2 = solve_formulation(f, backend="cbc")
                if res2.status != "optimal" or abs(res2.objective - res.objective) > 1e-6 * max(1, abs(res.objective)):
                    continue
            break
        else:  # pragma: no cover - the families are feasible by construction
            raise RuntimeError(f"could not draw a solvable {family} instance")
        anchors = _anchors(data, labels, var_specs, obj, specs)
        out.append(GeneratedProblem(
            id=f"gen-{family}-{i}", family=family, text=_text(intro, anchors), data=data, anchors=anchors,
            formulation=f, specs=specs, objective_spec=obj, var_specs=var_specs,
            prelude=_prelude(var_specs, obj["sense"]), objective_code=_objective_code(obj),
            fragments=[fragment_code(s) for s in specs], answer=float(res.objective), meta={"labels": labels}))
    return out
