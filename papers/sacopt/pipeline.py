"""SAC-Opt pipeline (forward anchors -> per-constraint code -> backward correction -> execute and debug),
the forward-only and standard-prompting baselines, and the scripted stand-ins.

Backward-guided correction (MAX_ITER = 5). With a_i the anchor of constraint i and c_i^t its code at round t,

    F_t = { i not frozen : J(a_i, BT(c_i^t)) = NO },
    c_i^{t+1} = Regen(a_i, c_i^t, BT(c_i^t))  for i in F_t,   c_i^{t+1} = c_i^t otherwise,

and a YES freezes i for good. J is the LLM judge (coverage "prompt") or cos(e(a_i), e(b_i)) >= 0.75 with
e = all-MiniLM-L6-v2 mean-pooled, L2-normalised embeddings (coverage "math"). The loop stops when F_t is
empty. Then the program is assembled and executed in the sandbox; on an error the code and error text go to
the debugger, at most ``max_debug`` tries. Forward-only is the same with ``max_iter = 0`` (Zhang et al.,
ICML 2026, arXiv 2510.05115; OptiMUS-style solver-driven reference).

The scripted stand-ins (:class:`ScriptedModeller`) are *not an LLM*: they read the gold anchors of generated
problems, write the gold fragment or, with probability q, a silent fault; back-translate with the canonical
template of the code's own structure; judge by exact equality of canonical forms; regenerate correctly with
probability p; fix crash faults with probability p_debug.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

import numpy as np

from shared import seeding
from shared.lm.backends import Backend, ScriptedBackend
from papers.sacopt import problems as G
from papers.sacopt.execution import run_model_program
from papers.sacopt.formulation import solve_formulation
from papers.sacopt.problems import GeneratedProblem

__all__ = ["ModelingRun", "run_sacopt", "judge_flags", "run_forward_only", "run_standard", "ScriptedModeller",
           "COVERAGES", "COSINE_THRESHOLD", "MAX_ITER", "FAULT_KINDS", "OBJECTIVE_FAULT_KINDS", "Evaluation"]

COVERAGES = ("prompt", "math")
COSINE_THRESHOLD = 0.75
MAX_ITER = 5
FAULT_KINDS = ("flip", "scale", "drop", "swap_rhs")
OBJECTIVE_FAULT_KINDS = ("sense", "scale", "drop")
SYSTEM = "You are an expert in operations research and in writing optimisation models with pulp."


@dataclass
class ModelingRun:
    """Outcome of one pipeline on one problem."""

    problem_id: str
    pipeline: str
    answer: float | str | None
    status: str
    rounds: int
    flagged: list[list[str]]
    hashes: list[dict]
    fragments: list[dict]
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    backend: str
    debug_attempts: int = 0
    program: str = ""
    program_before_debug: str = ""
    cosines: list[dict] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ prompts
def _msg(task: str, problem, body: str, **tags) -> list[dict]:
    head = [f"TASK: {task}", f"PROBLEM-ID: {problem.id}"] + [f"{k.upper().replace('_', '-')}: {v}" for k, v in tags.items()]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(head) + "\n\n" + body}]


_CONTRACT = ("The program reads data.json from its working directory into `data`, defines `prob` (pulp.LpProblem) "
             "and a dict `x` of pulp variables keyed by symbol, imports only pulp, json, math, numpy, scipy, "
             "itertools, collections.")


def _extract_prompt(p):
    return _msg("extract", p, "Problem:\n" + p.text + "\n\nReturn only JSON with keys parameters [{symbol, "
                "definition, shape, value}], variables [{symbol, definition, shape, type in continuous|integer|"
                "binary}], objective {description, sense in min|max}, constraints [natural-language description, "
                "one per constraint]. Check each item against the problem before answering.")


def _prelude_prompt(p, anchors):
    return _msg("variables", p, f"{_CONTRACT}\nAnchors: {json.dumps(anchors)}\nWrite the program header: imports, "
                "data loading, `prob` with the right sense and every variable in `x`. Code only.")


def _objective_prompt(p, anchors):
    return _msg("objective", p, f"{_CONTRACT}\nAnchors: {json.dumps(anchors)}\nWrite one line `prob += ...` that "
                "sets the objective, using data[...] for parameter values. Code only.")


def _constraint_prompt(p, anchors, cid, desc):
    return _msg("constraint", p, f"{_CONTRACT}\nAnchors: {json.dumps(anchors)}\nConstraint: {desc}\nWrite only the "
                f"`prob += ..., \"{cid}\"` line(s) for this constraint, using data[...]. Code only.", constraint_id=cid)


def _bt_prompt(p, cid, code, desc, t):
    return _msg("back-translate", p, "Describe in one sentence what this code enforces, derived only from the code, "
                f"in the same structure and about the same length as this example sentence: {desc!r}\nCode:\n{code}",
                constraint_id=cid, round=t)


def _judge_prompt(p, cid, desc, bt, t):
    return _msg("judge", p, f"Original constraint: {desc}\nDescription of the code: {bt}\nDo they state the same "
                "constraint (same terms, coefficients, direction and right-hand side)? Answer YES or NO.",
                constraint_id=cid, round=t)


def _regen_prompt(p, anchors, cid, desc, code, bt, t):
    return _msg("regenerate", p, f"{_CONTRACT}\nAnchors: {json.dumps(anchors)}\nConstraint: {desc}\nPrevious code:\n"
                f"{code}\nWhat that code actually says: {bt}\nThe code does not match the constraint. Write corrected "
                f"`prob += ..., \"{cid}\"` line(s). Code only.", constraint_id=cid, round=t)


def _debug_prompt(p, program, error, attempt):
    return _msg("debug", p, f"The program below failed.\nError:\n{error[-2000:]}\nProgram:\n{program}\nReturn the "
                "complete corrected program. Code only.", attempt=attempt)


def _standard_prompt(p):
    return _msg("standard", p, f"{_CONTRACT}\nProblem:\n{p.text}\nWrite a complete program that builds and solves "
                "the model and ends by printing `OBJECTIVE: <value>` or `STATUS: infeasible|unbounded`. Code only.")


_FENCE = re.compile(r"```(?:python)?\n(.*?)```", re.S)


def _code(text: str) -> str:
    m = _FENCE.search(text)
    return (m.group(1) if m else text).strip()


def _json(text: str) -> dict:
    m = _FENCE.search(text.replace("```json", "```"))
    try:
        return json.loads(m.group(1) if m else text)
    except json.JSONDecodeError:
        return {}


# --------------------------------------------------------------------------------------------- pipeline
def _check(problem, backend, max_debug, max_iter=0, coverage="prompt"):
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    if coverage not in COVERAGES:
        raise ValueError(f"coverage must be one of {COVERAGES}, got {coverage!r}")
    if isinstance(max_debug, bool) or not isinstance(max_debug, int) or max_debug < 0:
        raise ValueError(f"max_debug must be a non-negative integer, got {max_debug!r}")
    if not isinstance(backend, Backend):
        raise ValueError(f"backend must be a shared.lm.backends.Backend, got {type(backend).__name__}")
    if not backend.is_llm and not isinstance(problem, GeneratedProblem):
        raise ValueError("a scripted backend needs the gold anchors of a generated problem; refusing to run it on "
                         f"dataset problem {getattr(problem, 'id', problem)!r}")


def _data_of(problem) -> dict:
    if isinstance(problem, GeneratedProblem):
        return problem.data
    return dict(problem.meta.get("sample_input") or {})


def _execute_and_debug(problem, backend, program, max_debug, executor):
    data = _data_of(problem)
    res = executor(program, data)
    attempts = 0
    while res.status in ("error", "timeout", "memory", "forbidden") and attempts < max_debug:
        attempts += 1
        program = _code(backend.complete(_debug_prompt(problem, program, res.stderr or res.stdout, attempts))[0])
        res = executor(program, data)
    answer = res.objective if res.status == "ok" else res.status if res.status in ("infeasible", "unbounded") else None
    return program, res, answer, attempts


def _default_executor(code, data):
    return run_model_program(code, data=data)


def _run(problem, backend, *, pipeline, max_iter, coverage, max_debug, executor, embed):
    start = time.perf_counter()
    n0 = len(backend.calls)
    anchors = _json(backend.complete(_extract_prompt(problem))[0])
    descs = [str(d) for d in anchors.get("constraints", [])]
    ids = [f"c{i}" for i in range(len(descs))]
    prelude = _code(backend.complete(_prelude_prompt(problem, anchors))[0])
    objective = _code(backend.complete(_objective_prompt(problem, anchors))[0])
    code = {cid: _code(backend.complete(_constraint_prompt(problem, anchors, cid, d))[0]) for cid, d in zip(ids, descs)}
    frozen: set[str] = set()
    flagged_rounds, hashes, fragments, cosines = [], [{k: G.code_hash(v) for k, v in code.items()}], [dict(code)], []
    rounds = 0
    for t in range(1, max_iter + 1):
        todo = [cid for cid in ids if cid not in frozen]
        bts = {cid: backend.complete(_bt_prompt(problem, cid, code[cid], descs[ids.index(cid)], t))[0].strip()
               for cid in todo}
        if coverage == "prompt":
            ok = {cid: backend.complete(_judge_prompt(problem, cid, descs[ids.index(cid)], bts[cid], t))[0]
                  .strip().upper().startswith("YES") for cid in todo}
        else:
            vecs = embed([descs[ids.index(c)] for c in todo] + [bts[c] for c in todo]) if todo else np.zeros((0, 1))
            cos = {cid: float(vecs[k] @ vecs[len(todo) + k]) for k, cid in enumerate(todo)}
            cosines.append(cos)
            ok = {cid: cos[cid] >= COSINE_THRESHOLD for cid in todo}
        flagged = [cid for cid in todo if not ok[cid]]
        frozen.update(cid for cid in todo if ok[cid])
        rounds = t
        flagged_rounds.append(flagged)
        if not flagged:
            break
        for cid in flagged:
            code[cid] = _code(backend.complete(_regen_prompt(problem, anchors, cid, descs[ids.index(cid)], code[cid],
                                                             bts[cid], t))[0])
        hashes.append({k: G.code_hash(v) for k, v in code.items()})
        fragments.append(dict(code))
    program = G.assemble_program(prelude, objective, [code[c] for c in ids])
    final, res, answer, attempts = _execute_and_debug(problem, backend, program, max_debug, executor)
    calls = backend.calls[n0:]
    return ModelingRun(problem.id, pipeline, answer, res.status, rounds, flagged_rounds, hashes, fragments,
                       len(calls), sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls),
                       time.perf_counter() - start, backend.label, attempts, final, program, cosines)


def judge_flags(problem, backend: Backend, cid: str, description: str, code: str, *, t: int = 1) -> bool:
    """One step of the backward loop on one constraint: back-translate ``code`` and ask the judge (coverage
    "prompt") whether it states ``description``; True when it is flagged (the judge does not answer YES)."""
    bt = backend.complete(_bt_prompt(problem, cid, code, description, t))[0].strip()
    return not backend.complete(_judge_prompt(problem, cid, description, bt, t))[0].strip().upper().startswith("YES")


def _minilm_embed(texts):
    from shared.lm.pretrained import encode_sentences

    return encode_sentences(list(texts))


def run_sacopt(problem, backend: Backend, *, max_iter: int = MAX_ITER, coverage: str = "prompt",
               max_debug: int = 3, executor=None, embed=None) -> ModelingRun:
    """SAC-Opt on one problem: anchors, per-constraint code, backward correction (``max_iter`` rounds,
    ``coverage`` "prompt" = LLM judge or "math" = MiniLM cosine >= 0.75), execute and debug (``max_debug``).

    ``executor(code, data) -> ExecutionResult`` defaults to the sandbox; ``embed(texts) -> unit vectors``
    defaults to all-MiniLM-L6-v2. Raises ``ValueError`` for max_iter < 0, an unknown coverage, or a scripted
    backend on a dataset problem.
    """
    _check(problem, backend, max_debug, max_iter, coverage)
    return _run(problem, backend, pipeline=f"sacopt-{coverage}", max_iter=max_iter, coverage=coverage,
                max_debug=max_debug, executor=executor or _default_executor, embed=embed or _minilm_embed)


def run_forward_only(problem, backend: Backend, *, max_debug: int = 3, executor=None) -> ModelingRun:
    """Forward-only baseline: the SAC-Opt pipeline with ``max_iter = 0`` (solver-driven, OptiMUS-style)."""
    _check(problem, backend, max_debug)
    return _run(problem, backend, pipeline="forward-only", max_iter=0, coverage="prompt", max_debug=max_debug,
                executor=executor or _default_executor, embed=None)


def run_standard(problem, backend: Backend, *, max_debug: int = 3, executor=None) -> ModelingRun:
    """Standard prompting: one prompt writes the whole program, then execute and debug (``max_debug``)."""
    _check(problem, backend, max_debug)
    start, n0 = time.perf_counter(), len(backend.calls)
    program = _code(backend.complete(_standard_prompt(problem))[0])
    final, res, answer, attempts = _execute_and_debug(problem, backend, program, max_debug,
                                                      executor or _default_executor)
    calls = backend.calls[n0:]
    return ModelingRun(problem.id, "standard", answer, res.status, 0, [], [], [], len(calls),
                       sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls),
                       time.perf_counter() - start, backend.label, attempts, final, program)


# ------------------------------------------------------------------------------------------ scripted stand-in
@dataclass
class Evaluation:
    """Outcome of :meth:`ScriptedModeller.evaluate` (the fields the pipeline reads from an ExecutionResult)."""

    status: str
    objective: float | None
    stderr: str = ""
    stdout: str = ""

_TAG = re.compile(r"^([A-Z-]+): (.*)$", re.M)


class ScriptedModeller:
    """Deterministic scripted stand-in for every LLM role (NOT an LLM; generated problems only).

    Parameters: ``problems`` (the generated problems it may serve), ``q`` (silent-fault rate of a written
    constraint), ``q_crash`` (crash-fault rate), ``p`` (regeneration is correct), ``p_debug`` (debugger fixes
    crashes), ``seed``. Every random draw comes from a stream named by (problem, role, constraint, round),
    so the forward code of a problem is the same in every pipeline. Silent faults (flip <=/>=, scale one
    coefficient by 1 +/- U(0.2, 0.5) rounded to 2 decimals, drop one term, swap the rhs for another entry of
    the same parameter) are redrawn up to 10 times until the model still solves and differs from the gold one.
    ``registry`` maps code it wrote to (spec, crash), i.e. the structure a back-translator reads from code.
    ``q_obj`` (default 0) is the rate of a silent objective fault (flip the sense min/max, scale one coefficient
    by 1 +/- U(0.2, 0.5), drop one term; redrawn up to 10 times until the model still solves and the objective
    differs from the gold one); the objective is outside the backward loop, so nothing repairs it.
    """

    def __init__(self, problems, *, q: float, q_crash: float = 0.0, p: float = 1.0, p_debug: float = 1.0,
                 seed: int = 0, q_obj: float = 0.0):
        for name, v in (("q", q), ("q_crash", q_crash), ("p", p), ("p_debug", p_debug), ("q_obj", q_obj)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
        self.problems = {pr.id: pr for pr in problems}
        self.q, self.q_crash, self.p, self.p_debug, self.seed = q, q_crash, p, p_debug, seeding.check_seed(seed)
        self.q_obj = q_obj
        self.obj_registry: dict[str, dict] = {}
        self.registry: dict[str, tuple[dict, bool]] = {}
        self.texts: dict[str, tuple] = {}
        self.standard_specs: dict[str, list] = {}

    def backend(self, model: str = "sacopt-scripted-modeller") -> ScriptedBackend:
        """A :class:`ScriptedBackend` (label "SCRIPTED STAND-IN (not an LLM)") around this stand-in."""
        return ScriptedBackend(self, model=model)

    # -- helpers
    def _rng(self, *names):
        return seeding.generator(self.seed, "scripted", *[str(n) for n in names])

    def _write(self, spec, crash=False) -> str:
        code = G.fragment_code(spec, crash=crash)
        self.registry[code] = (spec, crash)
        return code

    def _solves(self, pr, specs) -> bool:
        f = G.build_formulation(pr.var_specs, pr.objective_spec, specs, pr.data)
        return solve_formulation(f, backend="highs").status == "optimal"

    def _fault(self, pr, idx, current, rng) -> dict:
        gold = pr.specs[idx]
        gold_c = G.canonical(gold, pr.data)
        spec = None
        for _ in range(10):
            spec = json.loads(json.dumps(gold))
            kinds = ["flip", "scale"] + (["drop"] if len(gold["terms"]) > 1 else []) + (
                ["swap_rhs"] if self._swaps(gold, pr.data) else [])
            kind = kinds[int(rng.integers(len(kinds)))]
            if kind == "flip":
                spec["op"] = {"<=": ">=", ">=": "<="}.get(gold["op"]) or ("<=" if rng.random() < 0.5 else ">=")
            elif kind == "scale":
                k = int(rng.integers(len(spec["terms"])))
                factor = 1 + (1 if rng.random() < 0.5 else -1) * rng.uniform(0.2, 0.5)
                spec["terms"][k]["mult"] = round(float(factor), 2)
            elif kind == "drop":
                spec["terms"].pop(int(rng.integers(len(spec["terms"]))))
            else:
                options = self._swaps(gold, pr.data)
                spec["rhs"] = options[int(rng.integers(len(options)))]
            if G.canonical(spec, pr.data) == gold_c:
                continue
            trial = [s if i != idx else spec for i, s in enumerate(current)]
            if self._solves(pr, trial):
                break
        return spec

    def _objective(self, pr) -> str:
        gold = {"sense": pr.objective_spec["sense"], "terms": pr.objective_spec["terms"]}
        spec = gold
        if self.q_obj > 0:
            rng = self._rng(pr.id, "objective")
            if rng.random() < self.q_obj:
                spec = self._objective_fault(pr, gold, rng)
        if spec is gold:
            code = pr.objective_code
        else:
            code = f'prob += pulp.lpSum([{", ".join(G._term_code(t) for t in spec["terms"])}])'
            if spec["sense"] != gold["sense"]:
                code = f'prob.sense = pulp.{"LpMaximize" if spec["sense"] == "max" else "LpMinimize"}\n' + code
        self.obj_registry[code] = spec
        return code

    def _objective_form(self, pr, spec) -> tuple:
        return (spec["sense"], G.canonical({"terms": spec["terms"], "op": "==", "rhs": 0}, pr.data)[0])

    def _objective_fault(self, pr, gold, rng) -> dict:
        gold_c = self._objective_form(pr, gold)
        spec = gold
        for _ in range(10):
            spec = json.loads(json.dumps(gold))
            kinds = ["sense", "scale"] + (["drop"] if len(gold["terms"]) > 1 else [])
            kind = kinds[int(rng.integers(len(kinds)))]
            if kind == "sense":
                spec["sense"] = "min" if gold["sense"] == "max" else "max"
            elif kind == "scale":
                k = int(rng.integers(len(spec["terms"])))
                factor = 1 + (1 if rng.random() < 0.5 else -1) * rng.uniform(0.2, 0.5)
                spec["terms"][k]["mult"] = round(float(factor), 2)
            else:
                spec["terms"].pop(int(rng.integers(len(spec["terms"]))))
            if self._objective_form(pr, spec) == gold_c:
                continue
            f = G.build_formulation(pr.var_specs, spec, pr.specs, pr.data)
            if solve_formulation(f, backend="highs").status == "optimal":
                break
        return spec

    def objective_faulty(self, problem: GeneratedProblem, program: str) -> bool:
        """True when the objective of ``program`` (written by this stand-in) differs from the gold objective."""
        gold = {"sense": problem.objective_spec["sense"], "terms": problem.objective_spec["terms"]}
        spec = self._program_objective(program)
        return spec is not None and self._objective_form(problem, spec) != self._objective_form(problem, gold)

    def _program_objective(self, program: str):
        if "# objective\n" not in program or "\n\n# constraints" not in program:
            return None
        code = program.split("# objective\n", 1)[1].split("\n\n# constraints", 1)[0]
        return self.obj_registry.get(code)

    def evaluate(self, problem: GeneratedProblem, program: str) -> "Evaluation":
        """In-process outcome of a program this stand-in wrote, from the structure it registered (no code is
        executed): the model of its objective and constraint lines solved by HiGHS; a crash fault or an
        unknown line gives status "error". Equals the sandbox outcome of the same program (harness-gold)."""
        spec_obj = self._program_objective(program)
        specs = []
        for line in program.split("\n"):
            if line.startswith("prob += pulp.lpSum(") and line.endswith('"'):
                if line not in self.registry or self.registry[line][1]:
                    return Evaluation("error", None, "scripted structure: crash fault or unknown line")
                specs.append(self.registry[line][0])
        if spec_obj is None:
            return Evaluation("error", None, "scripted structure: unknown objective")
        res = solve_formulation(G.build_formulation(problem.var_specs, spec_obj, specs, problem.data), backend="highs")
        return Evaluation("ok" if res.status == "optimal" else res.status, res.objective, "")

    def executor(self):
        """``executor(code, data)`` for the pipelines that uses :meth:`evaluate` (generated problems only)."""
        by_data = {json.dumps(pr.data, sort_keys=True): pr for pr in self.problems.values()}

        def run(code, data):
            return self.evaluate(by_data[json.dumps(data, sort_keys=True)], code)
        return run

    @staticmethod
    def _swaps(spec, data):
        ref = spec["rhs"]
        if not isinstance(ref, list) or len(ref) != 2:
            return []
        return [[ref[0], j] for j in range(len(data[ref[0]])) if j != ref[1] and data[ref[0]][j] != data[ref[0]][ref[1]]]

    # -- the stand-in
    def __call__(self, messages, *, n=1, temperature=0.0, max_tokens=None, seed=None):
        text = messages[-1]["content"]
        tags = dict(_TAG.findall(text.split("\n\n", 1)[0]))
        pr = self.problems.get(tags.get("PROBLEM-ID"))
        if pr is None:
            raise ValueError(f"scripted stand-in: unknown problem {tags.get('PROBLEM-ID')!r} (it serves only "
                             "generated problems with gold anchors)")
        task = tags["TASK"]
        if task == "extract":
            return [json.dumps(pr.anchors)]
        if task == "variables":
            return [pr.prelude]
        if task == "objective":
            return [self._objective(pr)]
        if task in ("constraint", "regenerate"):
            cid = tags["CONSTRAINT-ID"]
            idx = int(cid[1:])
            t = tags.get("ROUND", "0")
            rng = self._rng(pr.id, task, cid, t)
            wrong = rng.random() < (self.q if task == "constraint" else 1 - self.p)
            crash = task == "constraint" and rng.random() < self.q_crash
            spec = self._fault(pr, idx, pr.specs, rng) if wrong else pr.specs[idx]
            return [self._write(spec, crash)]
        if task == "back-translate":
            code = _code(text.split("Code:\n", 1)[1])
            spec, _ = self.registry[code]
            bt = G.describe(spec, pr.data, pr.meta["labels"], style="bt")
            self.texts[bt] = G.canonical(spec, pr.data)
            return [bt]
        if task == "judge":
            orig = re.search(r"Original constraint: (.*)\n", text).group(1)
            bt = re.search(r"Description of the code: (.*)\n", text).group(1)
            idx = pr.anchors["constraints"].index(orig)
            same = self.texts.get(bt) == G.canonical(pr.specs[idx], pr.data)
            return ["YES" if same else "NO"]
        if task == "debug":
            program = text.split("Program:\n", 1)[1].split("\nReturn the complete corrected program.")[0]
            rng = self._rng(pr.id, "debug", tags.get("ATTEMPT", "0"), G.code_hash(program))
            if rng.random() < self.p_debug:
                lines = []
                for line in program.split("\n"):
                    if line in self.registry and self.registry[line][1]:
                        line = self._write(self.registry[line][0], False)
                    lines.append(line)
                program = "\n".join(lines)
            return [program]
        if task == "standard":
            frags = []
            for i, spec in enumerate(pr.specs):
                rng = self._rng(pr.id, "standard", i)
                wrong = rng.random() < self.q
                crash = rng.random() < self.q_crash
                frags.append(self._write(self._fault(pr, i, pr.specs, rng) if wrong else spec, crash))
            return [G.assemble_program(pr.prelude, pr.objective_code, frags)]
        raise ValueError(f"scripted stand-in: unknown task {task!r}")

    def is_faulty(self, problem: GeneratedProblem, cid: str, code: str) -> bool:
        """True when ``code`` (written by this stand-in) differs semantically from the gold constraint."""
        spec, _ = self.registry[code]
        return G.canonical(spec, problem.data) != G.canonical(problem.specs[int(cid[1:])], problem.data)

    def semantic_form(self, problem: GeneratedProblem, program: str) -> tuple:
        """Canonical forms of every constraint line of ``program`` (crash or not): its semantics."""
        return tuple(G.canonical(self.registry[line][0], problem.data) for line in program.split("\n")
                     if line in self.registry)
