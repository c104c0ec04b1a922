"""Experiments of the sacopt reproduction (spec "Experiments by scale").

``python -m papers.sacopt.experiments NAME --config papers/sacopt/config.yaml --scale quick --out DIR`` with
NAME in ``data``, ``harness``, ``mechanism``, ``embedding``, ``llm``, ``perf``, ``objective``, ``sweep``. Every number from the scripted
stand-ins is labelled ``llm_backend = "SCRIPTED STAND-IN (not an LLM)"``; LLM-only metrics are JSON null
unless an LLM backend (endpoint or replay) is configured through ``REPRO_LLM_*``.
"""
from __future__ import annotations

import functools
import json
import os
import platform
import resource
import statistics
import time

import numpy as np

from shared import seeding
from shared.experiment import RunContext, main
from shared.sandbox import isolation_summary, reset_isolation_summary
from shared.lm.backends import (DEFAULT_MAX_TOKENS, SCRIPTED_LABEL, Backend, ReplayBackend, ReplayMissError,
                                ScriptedBackend, cache_key, get_backend)
from shared.results import write_arrays
from shared.timing import alternating_least_cpu

from papers.sacopt import problems as G
from papers.sacopt.complexor import audit as complexor_audit
from papers.sacopt.datasets import DATASETS, load_dataset
from papers.sacopt.execution import run_in_sandbox, run_model_program, sandbox_pid
from papers.sacopt.formulation import solve_formulation
from papers.sacopt.pipeline import (COSINE_THRESHOLD, ScriptedModeller, judge_flags, run_forward_only, run_sacopt,
                                    run_standard)
from papers.sacopt.scoring import answers_match, asks_rounding

__all__ = ["EXPERIMENTS", "benchmarks", "harness", "mechanism", "embedding", "llm", "perf", "objective", "sweep"]

PIPELINES = ("forward-only", "standard", "sacopt-prompt", "sacopt-math")


def _rel_close(a, b, tol):
    return a is not None and b is not None and abs(a - b) <= tol * max(1.0, abs(b))


class CachedExecutor:
    """Sandbox executor memoised on (code, data): the same program on the same data gives the same outcome."""

    def __init__(self):
        self.cache, self.runs, self.hits, self.wall = {}, 0, 0, 0.0

    def __call__(self, code, data):
        key = G.code_hash(code + "\0" + json.dumps(data, sort_keys=True))
        if key in self.cache:
            self.hits += 1
            return self.cache[key]
        res = run_model_program(code, data=data)
        self.runs += 1
        self.wall += res.wall_s
        self.cache[key] = res
        return res


# ---------------------------------------------------------------------------------------------------- data
def benchmarks(params: dict, ctx: RunContext):
    """Loaders and answer statistics of the mirrored benchmarks (``limit`` items each at smoke); ``source:
    synthetic`` reads the generated stand-ins of :mod:`papers.sacopt.synthetic` instead (smoke: no network)."""
    limit = params.get("limit")
    source = params.get("source", "public")
    rows, metrics, sizes = [], {"datasets": {}}, {}
    for name in DATASETS:
        try:
            items = load_dataset(name, source=source)
        except Exception as exc:  # a missing mirror is a visible skip at smoke, an error otherwise
            if not params.get("allow_missing", False):
                raise
            metrics["datasets"][name] = {"skipped": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        total = len(items)
        items = items[:limit] if limit else items
        numeric = [p.answer for p in items if p.answer is not None]
        stats = {"n_items": total, "n_loaded": len(items), "n_no_best": sum(p.answer is None for p in items),
                 "n_integer_answer": sum(float(a).is_integer() for a in numeric),
                 "n_asks_rounding": sum(asks_rounding(p.text) is not None for p in items),
                 "n_asks_integer": sum(asks_rounding(p.text) == 0 for p in items),
                 "n_negative": sum(a < 0 for a in numeric),
                 "gold_self_match": _gold_self_match(items)}
        metrics["datasets"][name] = stats
        sizes[name] = total
        for k, v in stats.items():
            rows.append({"method": name, "seed": 0, "step": 0, "metric": k, "value": v})
    loaded = [stats for stats in metrics["datasets"].values() if "skipped" not in stats]
    metrics["gold_self_match_min"] = min((st["gold_self_match"] for st in loaded), default=None)
    metrics["dataset_sizes"] = {"min_items": min(sizes.values(), default=None),
                                "max_items": max(sizes.values(), default=None)}
    # ComplexOR audit: the project's reference formulations (papers/sacopt/complexor.py, written from each
    # gt_model.txt) solved on the sample input vs the recorded output (rel 1e-6); every problem, also at smoke
    try:
        cor = load_dataset("complexor", source=source)
    except Exception as exc:
        if not params.get("allow_missing", False):
            raise
        metrics["complexor_audit"] = {"n_reproduced": None, "n_with_gt_model": None,
                                      "skipped": f"{type(exc).__name__}: {exc}"[:300]}
        return rows, metrics
    aud = complexor_audit(cor, rel_tol=1e-6)
    metrics["complexor_audit"] = aud
    for r in aud["rows"]:
        rows.append({"method": "complexor-reference", "seed": 0, "step": 0, "metric": "match",
                     "value": float(r["match"]), "problem": r["problem"], "status": r["status"],
                     "reference": r["reference"], "recorded": r["recorded"]})
    return rows, metrics


def _gold_self_match(items) -> float:
    """Share of items whose gold answer, submitted as the prediction, scores as correct under the question's
    rounding ("No Best Solution" submitted as "infeasible"); 1.0 unless the scorer is wrong."""
    ok = [answers_match("infeasible" if p.answer is None else p.answer, p.answer, rounding=asks_rounding(p.text))
          for p in items]
    return float(np.mean(ok)) if ok else 1.0


# ------------------------------------------------------------------------------------------------- harness
_OUTCOME_PROGRAMS = {
    "ok": ("print('OBJECTIVE: 1.5')", "ok"),
    "infeasible": (None, "infeasible"),
    "crash": ("import json\ndata = json.load(open('data.json'))\nprint(undefined_name)", "error"),
    "timeout": ("while True:\n    pass", "timeout"),
    "forbidden_import": ("import subprocess\nprint('OBJECTIVE: 1')", "forbidden"),
    "network": ("import socket\ns = socket.create_connection(('93.184.216.34', 80), timeout=1)\nprint('OBJECTIVE: 1')",
                "forbidden"),
    "write_outside": ("open('/tmp/sacopt_escape.txt', 'w').write('x')\nprint('OBJECTIVE: 1')", "forbidden"),
    "no_final_line": ("print('done')", "error"),
}


def _infeasible_program():
    return G.assemble_program(
        'import json\nimport pulp\ndata = json.load(open("data.json"))\nprob = pulp.LpProblem("m", pulp.LpMinimize)\n'
        'x = {"a": pulp.LpVariable("a", lowBound=0)}', 'prob += pulp.lpSum([x["a"]])',
        ['prob += pulp.lpSum([x["a"]]) <= -1, "c0"'])


def harness(params: dict, ctx: RunContext):
    """Gold programs of generated problems run in the sandbox vs HiGHS on the gold Formulation (rel 1e-6);
    one program per outcome type must get its status."""
    probs = G.generate_problems(int(params["n_problems"]), seed=ctx.seed, verify=True)
    rows, matches, per_family = [], [], {}
    for pr in probs:
        res = run_model_program(G.assemble_program(pr.prelude, pr.objective_code, pr.fragments), data=pr.data)
        ok = res.status == "ok" and _rel_close(res.objective, pr.answer, 1e-6)
        matches.append(ok)
        per_family.setdefault(pr.family, []).append(ok)
        rows.append({"method": "gold-program", "seed": 0, "step": 0, "metric": "match", "value": float(ok),
                     "problem": pr.id})
    outcomes = {}
    for name, (code, expected) in _OUTCOME_PROGRAMS.items():
        res = run_model_program(code if code is not None else _infeasible_program(), data={}, timeout_s=
                                float(params.get("timeout_s", 2.0)))
        outcomes[name] = {"status": res.status, "expected": expected, "ok": res.status == expected}
    metrics = {"n_problems": len(probs), "gold_match_rate": float(np.mean(matches)),
               "gold_match_rate_by_family": {k: float(np.mean(v)) for k, v in sorted(per_family.items())},
               "outcomes": outcomes, "outcomes_all_ok": all(o["ok"] for o in outcomes.values())}
    return rows, metrics


# ----------------------------------------------------------------------------------------------- mechanism
def _embedder():
    from shared.lm.pretrained import encode_sentences
    cache = {}

    def embed(texts):
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            for t, v in zip(todo, encode_sentences(todo)):
                cache[t] = v
        return np.stack([cache[t] for t in texts])
    return embed


def _classify(run, pr):
    if run.status in ("infeasible", "unbounded"):
        kind = "infeasible"
    elif run.status != "ok":
        kind = "crash"
    else:
        kind = "ok"
    correct = answers_match(run.answer, pr.answer, rel_tol=1e-4) if run.answer is not None else False
    return kind, correct


def _residual_law(params, seed_base, ctx):
    """Scripted SAC-Opt (exact judge, q_crash = 0): faulty-constraint fraction after t rounds, t = 0..max_iter."""
    max_iter = int(params.get("max_iter", 5))
    counts = np.zeros(max_iter + 1)
    total = 0
    null_exec = lambda code, data: type("R", (), {"status": "ok", "objective": 0.0, "stderr": "", "stdout": ""})()
    for s in params["law_seeds"]:
        probs = G.generate_problems(int(params["law_n_problems"]), seed=seed_base + 1000 * int(s), verify=False)
        sm = ScriptedModeller(probs, q=params["q"], q_crash=0.0, p=params["p"], p_debug=params["p_debug"],
                              seed=seed_base + int(s))
        be = sm.backend()
        for pr in probs:
            run = run_sacopt(pr, be, max_iter=max_iter, coverage="prompt", executor=null_exec)
            frags = run.fragments + [run.fragments[-1]] * (max_iter + 1 - len(run.fragments))
            for t in range(max_iter + 1):
                counts[t] += sum(sm.is_faulty(pr, cid, code) for cid, code in frags[t].items())
            total += len(pr.specs)
    measured = counts / total
    theory = np.array([params["q"] * (1 - params["p"]) ** t for t in range(max_iter + 1)])
    return measured, theory, total


def mechanism(params: dict, ctx: RunContext):
    """Scripted stand-ins (NOT an LLM): forward-only, standard prompting, SAC-Opt "prompt" and "math" on the
    same generated problems; silent-fault visibility, selectivity, the residual law, per-problem cost."""
    probs = G.generate_problems(int(params["n_problems"]), seed=ctx.seed, verify=False)
    sm = ScriptedModeller(probs, q=params["q"], q_crash=params["q_crash"], p=params["p"], p_debug=params["p_debug"],
                          seed=ctx.seed)
    be = sm.backend()
    executor, embed = CachedExecutor(), _embedder()
    runners = {"forward-only": lambda pr: run_forward_only(pr, be, executor=executor),
               "standard": lambda pr: run_standard(pr, be, executor=executor),
               "sacopt-prompt": lambda pr: run_sacopt(pr, be, coverage="prompt", executor=executor),
               "sacopt-math": lambda pr: run_sacopt(pr, be, coverage="math", executor=executor, embed=embed)}
    rows, stats = [], {k: {"wrong": [], "infeasible": [], "crash": [], "calls": [], "tokens": [], "rounds": []}
                       for k in runners}
    silent_programs = silent_changed = frozen_violations = 0
    max_rounds = 0
    for pr in ctx.progress(probs, total=len(probs), what="problems"):
        for name, fn in runners.items():
            run = fn(pr)
            kind, correct = _classify(run, pr)
            st = stats[name]
            st["wrong"].append(not correct)
            st["infeasible"].append(kind == "infeasible")
            st["crash"].append(kind == "crash")
            st["calls"].append(run.llm_calls)
            st["tokens"].append(run.prompt_tokens + run.completion_tokens)
            st["rounds"].append(run.rounds)
            rows.append({"method": name, "seed": 0, "step": run.rounds, "metric": "correct", "value": float(correct),
                         "problem": pr.id, "outcome": kind, "llm_backend": SCRIPTED_LABEL, "llm_model": be.model})
            if name.startswith("sacopt"):
                max_rounds = max(max_rounds, run.rounds)
                frozen = {}
                for t, flagged in enumerate(run.flagged):
                    todo = [c for c in run.hashes[0] if c not in frozen]
                    for c in todo:
                        if c not in flagged:
                            frozen[c] = (t, run.hashes[t][c])
                frozen_violations += sum(h[c] != v for c, (t0, v) in frozen.items() for h in run.hashes[t0:])
                frozen_violations += sum(G.code_hash(run.fragments[-1][c]) != v for c, (t0, v) in frozen.items())
            if name == "forward-only":
                before = sm.semantic_form(pr, run.program_before_debug)
                gold = tuple(G.canonical(s, pr.data) for s in pr.specs)
                if before != gold:
                    silent_programs += 1
                    silent_changed += sm.semantic_form(pr, run.program) != before
    rate = {k: {m: float(np.mean(v[m])) for m in ("wrong", "infeasible", "crash")} for k, v in stats.items()}
    cost = {k: {"calls_per_problem": float(np.mean(v["calls"])), "tokens_per_problem": float(np.mean(v["tokens"])),
                "mean_rounds": float(np.mean(v["rounds"]))} for k, v in stats.items()}
    fw = rate["forward-only"]["wrong"]
    measured, theory, n_cons = _residual_law(params, ctx.seed, ctx)
    write_arrays(ctx.out_dir / "residual.npz", measured=measured, theory=theory)
    for t, (m, th) in enumerate(zip(measured, theory)):
        rows.append({"method": "sacopt-prompt", "seed": -1, "step": t, "metric": "faulty_fraction", "value": float(m),
                     "theory": float(th), "llm_backend": SCRIPTED_LABEL, "llm_model": be.model})
    metrics = {
        "llm_backend": SCRIPTED_LABEL, "llm_model": be.model, "n_problems": len(probs),
        "q": params["q"], "q_crash": params["q_crash"], "p": params["p"], "p_debug": params["p_debug"],
        "rates": rate, "cost": cost,
        "anchor_ratio": rate["sacopt-prompt"]["wrong"] / fw if fw > 0 else None,
        "math_minus_prompt": rate["sacopt-math"]["wrong"] - rate["sacopt-prompt"]["wrong"],
        "silent": {"n_programs": silent_programs, "changed_fraction": silent_changed / max(silent_programs, 1)},
        "selective": {"frozen_hash_changes": int(frozen_violations), "max_rounds": int(max_rounds),
                      "ok": bool(frozen_violations == 0 and max_rounds <= 5)},
        "residual": {"measured": [float(v) for v in measured], "theory": [float(v) for v in theory],
                     "max_abs_diff": float(np.max(np.abs(measured - theory))), "n_constraints": int(n_cons),
                     "n_seeds": len(params["law_seeds"])},
    }
    ctx.record(sandbox_runs=executor.runs, sandbox_cache_hits=executor.hits, sandbox_wall_s=round(executor.wall, 3))
    return rows, metrics


# ----------------------------------------------------------------------------------------------- embedding
def embedding(params: dict, ctx: RunContext):
    """MiniLM cosine of (anchor, back-translation) for consistent pairs and for silent-fault pairs."""
    from shared.lm.pretrained import encode_sentences

    probs = G.generate_problems(int(params["n_problems"]), seed=ctx.seed + 7, verify=False)
    sm = ScriptedModeller(probs, q=1.0, seed=ctx.seed)
    rng = ctx.generator("pairs")
    anchors, faulty, consistent, kinds = [], [], [], []
    for k in range(int(params["n_pairs"])):
        pr = probs[int(rng.integers(len(probs)))]
        i = int(rng.integers(len(pr.specs)))
        spec = sm._fault(pr, i, pr.specs, rng)
        labels = pr.meta["labels"]
        anchors.append(pr.anchors["constraints"][i])
        faulty.append(G.describe(spec, pr.data, labels, style="bt"))
        consistent.append(G.describe(pr.specs[i], pr.data, labels, style="bt"))
        gold = pr.specs[i]
        kinds.append("flip" if spec["op"] != gold["op"] else "drop" if len(spec["terms"]) < len(gold["terms"])
                     else "swap_rhs" if spec["rhs"] != gold["rhs"] else "scale")
    unique = sorted(dict.fromkeys(anchors + faulty + consistent), key=len)  # sorted: less padding per batch
    vec = dict(zip(unique, encode_sentences(unique, batch_size=16)))
    e_a, e_f, e_c = (np.stack([vec[t] for t in x]) for x in (anchors, faulty, consistent))
    cos_f, cos_c = np.sum(e_a * e_f, axis=1), np.sum(e_a * e_c, axis=1)
    write_arrays(ctx.out_dir / "cosines.npz", fault=cos_f, consistent=cos_c)
    rows = [{"method": kind, "seed": 0, "step": k, "metric": "cosine_fault", "value": float(c)}
            for k, (kind, c) in enumerate(zip(kinds, cos_f))]
    by_kind = {kd: float(np.mean([c >= COSINE_THRESHOLD for c, k2 in zip(cos_f, kinds) if k2 == kd]))
               for kd in sorted(set(kinds))}
    share = float(np.mean(cos_f >= COSINE_THRESHOLD))
    metrics = {"n_pairs": len(kinds), "threshold": COSINE_THRESHOLD, "fault_share_above": share,
               "fault_share_above_by_kind": by_kind, "consistent_share_above": float(np.mean(cos_c >= COSINE_THRESHOLD)),
               "fault_cosine_mean": float(np.mean(cos_f)), "consistent_cosine_mean": float(np.mean(cos_c)),
               "blindspot_confirmed": bool(share >= 0.5),
               "fault_above_per_pair": [float(c >= COSINE_THRESHOLD) for c in cos_f]}
    return rows, metrics


# ----------------------------------------------------------------------------------------------------- llm
def _replay_roundtrip(ctx, n):
    """Record the scripted stand-in's answers on ``n`` problems in a replay cache, replay them, compare."""
    probs = G.generate_problems(n, seed=ctx.seed + 11, verify=False)
    sm = ScriptedModeller(probs, q=0.5, q_crash=0.0, p=0.8, p_debug=1.0, seed=ctx.seed)
    transcript = []

    def recorded(messages, **kw):
        out = sm(messages, **kw)
        transcript.append((messages, out))
        return out
    be = ScriptedBackend(recorded, model="sacopt-scripted-modeller")
    path = ctx.out_dir / "replay_roundtrip.jsonl"
    path.unlink(missing_ok=True)
    first = [run_sacopt(pr, be, coverage="prompt") for pr in probs]
    with open(path, "w", encoding="utf-8") as fh:
        seen = set()
        for call_messages, texts in transcript:
            request = {"model": be.model, "messages": call_messages, "n": 1, "temperature": 0.0,
                       "max_tokens": DEFAULT_MAX_TOKENS, "seed": None}
            if cache_key(**request) in seen:
                continue
            seen.add(cache_key(**request))
            fh.write(json.dumps({"key": cache_key(**request), "request": request, "responses": texts}) + "\n")
    replay = ReplayBackend(path)
    second = [run_sacopt(pr, replay, coverage="prompt") for pr in probs]
    same = all(a.answer == b.answer and a.hashes == b.hashes for a, b in zip(first, second))
    try:
        run_sacopt(G.generate_problems(1, seed=ctx.seed + 12, verify=False)[0], replay)
        miss = False
    except ReplayMissError:
        miss = True
    path.unlink(missing_ok=True)
    return same, miss


class SharedCalls(Backend):
    """A backend that answers a request it has already seen in this run from memory (temperature 0).

    The pipelines of one item then share their identical calls (the forward stage of forward-only and SAC-Opt,
    the whole of SAC-Opt with MAX_ITER = 0), so a paired difference measures the backward loop alone and the
    control "backward loop off" is exactly forward-only even on an endpoint that is not bit-reproducible.
    """

    def __init__(self, inner: Backend, *, max_tokens: int | None = None):
        super().__init__(inner.model)
        self.inner, self.name, self.is_llm, self.memo = inner, inner.name, inner.is_llm, {}
        self.max_tokens = max_tokens  # a cap on new tokens per call (the local model on CPU), None = no cap

    def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
        if key in self.memo:
            texts, prompt_tokens, completion_tokens = self.memo[key]
            return list(texts), prompt_tokens, completion_tokens, True
        if self.max_tokens is not None:
            max_tokens = min(max_tokens, self.max_tokens)
        texts = self.inner.complete(messages, n=n, temperature=temperature, max_tokens=max_tokens, seed=seed)
        rec = self.inner.calls[-1]
        self.memo[key] = (list(texts), rec.prompt_tokens, rec.completion_tokens)
        return texts, rec.prompt_tokens, rec.completion_tokens, rec.cached


def backend_info(backend) -> dict:
    """Which backend produced the llm metrics; ``is_real_llm`` is 1 only for a language model (endpoint, replay
    of an endpoint recording, local transformers model), 0 for none or a scripted stand-in (a number, so that a
    claim's precondition can check it)."""
    if backend is None:
        return {"name": "none", "model": None, "label": "none (no LLM backend configured)", "is_real_llm": 0}
    real = bool(backend.is_llm) and "scripted" not in backend.model.lower()
    return {"name": backend.name, "model": backend.model, "label": backend.label, "is_real_llm": int(real)}


def _points(a: list[bool], b: list[bool]) -> list[float]:
    """Per-item paired difference in accuracy points: 100 (a_i - b_i), each in {-100, 0, 100}."""
    return [100.0 * (int(x) - int(y)) for x, y in zip(a, b)]


LLM_ARMS = {  # name -> runner(problem, backend): the four pipelines and the ablation / control variants
    "forward-only": lambda pr, be: run_forward_only(pr, be),
    "standard": lambda pr, be: run_standard(pr, be),
    "sacopt-prompt": lambda pr, be: run_sacopt(pr, be, coverage="prompt"),
    "sacopt-math": lambda pr, be: run_sacopt(pr, be, coverage="math"),
    "sacopt-no-loop": lambda pr, be: run_sacopt(pr, be, coverage="prompt", max_iter=0),      # control
    "sacopt-no-debug": lambda pr, be: run_sacopt(pr, be, coverage="prompt", max_debug=0),    # ablation (Table 2)
    "sacopt-no-loop-no-debug": lambda pr, be: run_sacopt(pr, be, coverage="prompt", max_iter=0, max_debug=0),
}
ABLATION_DATASET = "nl4opt"  # the paper's Table 2


def _null_llm_metrics(datasets) -> dict:
    return {"accuracy": {n: {p: None for p in PIPELINES} for n in datasets}, "diff": {n: None for n in datasets},
            "paired_diff": {n: None for n in datasets}, "per_dataset_diffs": None, "diff_complexlp": None,
            "diff_average": None, "forward_mean_accuracy": None,
            "ablation": {"no_debug_minus_no_semantic": None, "accuracy": None},
            "judge": {"n_pairs": None, "detection_rate": None, "false_alarm_rate": None,
                      "detect_minus_false_alarm": None},
            "control": {"backward_off": {"paired_diff": {n: None for n in datasets}, "per_dataset_diffs": None},
                        "semantic_off": {"no_debug_minus_no_semantic": None},
                        "no_fault": {"detect_minus_false_alarm": None}}}


def llm(params: dict, ctx: RunContext):
    """Forward-only, standard prompting and SAC-Opt (both coverages) on the benchmarks with an LLM backend
    (endpoint, replay or local); without one every accuracy is null ("not evaluated").

    Recorded per dataset: accuracies, the per-item paired difference SAC-Opt - forward-only in points (the samples
    of the accuracy claims) and the same for the control "backward loop off" (SAC-Opt with MAX_ITER = 0, which
    must show no gain); on NL4Opt the ablation of the paper's Table 2: SAC-Opt without debugging minus SAC-Opt
    without semantic correction (= forward-only), and its control with the loop off in both arms.
    ``backend.is_real_llm`` says whether a language model produced them. With the local SmolLM2 backend only
    ``local_limit`` items per dataset (and judge pairs) run, at most ``local_max_tokens`` new tokens per call: it
    cannot pass the claims' floor, so the run only shows that the path works and the claims read "not evaluated".
    """
    backend = None
    choice = os.environ.get("REPRO_LLM_BACKEND", "scripted").strip().lower()
    if choice not in ("", "scripted"):
        inner = get_backend()
        if inner.name == "local":  # SmolLM2 on CPU: a few items per dataset, short replies (it is below the floor)
            params = {**params, "limit": min(int(params.get("limit") or 10 ** 9), int(params.get("local_limit", 2))),
                      "judge_pairs": min(int(params.get("judge_pairs", 0)), int(params.get("local_limit", 2)))}
            backend = SharedCalls(inner, max_tokens=int(params.get("local_max_tokens", 256)))
        else:
            backend = SharedCalls(inner)
    rt_same, rt_miss = _replay_roundtrip_safe(ctx, int(params.get("replay_problems", 2)))
    info = backend_info(backend.inner if backend else None)
    metrics = {"llm_backend": info["label"] if backend else "none", "backend": info,
               "replay_roundtrip_identical": rt_same, "replay_miss_raises": rt_miss}
    metrics.update(_null_llm_metrics(params["datasets"]))
    # the same fault injection with the scripted stand-in (SCRIPTED, exact judge): a check of the harness
    n_judge = int(params.get("judge_pairs", 0))
    harness_judge = _scripted_judge_harness(n_judge, ctx.seed)
    metrics["judge_harness"] = {"llm_backend": SCRIPTED_LABEL, "detection_rate": harness_judge["detection_rate"],
                                "false_alarm_rate": harness_judge["false_alarm_rate"],
                                "exact": bool(harness_judge["detection_rate"] == 1.0
                                              and harness_judge["false_alarm_rate"] == 0.0)}
    rows = []
    if backend is not None:
        _llm_accuracies(params, backend, metrics, rows)
        _judge_audit(n_judge, backend, ctx.seed, metrics)
    metrics["plumbing"], plumb_rows = _smollm2_plumbing(params, ctx)
    rows += plumb_rows
    if not rows:
        rows = [{"method": "none", "seed": 0, "step": 0, "metric": "evaluated", "value": 0.0}]
    return rows, metrics


def _llm_accuracies(params, backend, metrics, rows):
    diffs, control_diffs, forward = [], [], []
    for name in params["datasets"]:
        items = load_dataset(name, source=params.get("source", "public"))[: params.get("limit")]
        arms = list(LLM_ARMS) if name == ABLATION_DATASET else [*PIPELINES, "sacopt-no-loop"]
        oks = {arm: [answers_match(LLM_ARMS[arm](pr, backend).answer, pr.answer, rounding=asks_rounding(pr.text))
                     for pr in items] for arm in arms}
        acc = {arm: float(np.mean(v)) for arm, v in oks.items()}
        for arm, value in acc.items():
            rows.append({"method": arm, "seed": 0, "step": 0, "metric": f"accuracy_{name}", "value": value,
                         "llm_backend": backend.label, "llm_model": backend.model})
        metrics["accuracy"][name] = acc
        metrics["paired_diff"][name] = _points(oks["sacopt-prompt"], oks["forward-only"])
        metrics["control"]["backward_off"]["paired_diff"][name] = _points(oks["sacopt-no-loop"], oks["forward-only"])
        metrics["diff"][name] = 100 * (acc["sacopt-prompt"] - acc["forward-only"])
        diffs.append(metrics["diff"][name])
        control_diffs.append(100 * (acc["sacopt-no-loop"] - acc["forward-only"]))
        forward.append(acc["forward-only"])
        if name == ABLATION_DATASET:
            metrics["ablation"] = {
                "no_debug_minus_no_semantic": _points(oks["sacopt-no-debug"], oks["forward-only"]),
                "accuracy": {"full": acc["sacopt-prompt"], "no_semantic": acc["forward-only"],
                             "no_debug": acc["sacopt-no-debug"]}}
            metrics["control"]["semantic_off"]["no_debug_minus_no_semantic"] = _points(
                oks["sacopt-no-loop-no-debug"], oks["forward-only"])
        if name == "complexor":  # also on the problems whose recorded output the reference formulation reproduces
            keep = {r["problem"] for r in complexor_audit(items)["rows"] if r["match"]}
            mask = [pr.id in keep for pr in items]
            metrics["complexor_reproducible"] = {
                pipe: float(np.mean([o for o, m in zip(oks[pipe], mask) if m])) if any(mask) else None
                for pipe in PIPELINES}
    metrics["diff_complexlp"] = metrics["diff"].get("complexlp")
    metrics["per_dataset_diffs"] = diffs
    metrics["diff_average"] = float(np.mean(diffs)) if diffs else None
    metrics["forward_mean_accuracy"] = float(np.mean(forward)) if forward else None
    metrics["control"]["backward_off"]["per_dataset_diffs"] = control_diffs


def judge_audit(n_pairs, backend, seed, modeller=None) -> tuple[dict, list[float]]:
    """Fault injection for a judge: per pair, one constraint of a generated problem written correctly (its gold
    fragment) and with one silent fault (the stand-in's fault law), each back-translated and judged with SAC-Opt's
    own prompts. Detection = the faulty code is flagged, false alarm = the gold code is flagged; the per-pair
    difference (points) is the sample list. Returns (metrics, control): the control "no fault" judges the gold code
    in both arms (its per-pair differences must be 0). ``modeller``: the :class:`ScriptedModeller` that writes the
    faults (the backend's own when it is the scripted stand-in, whose judge reads the code it wrote)."""
    probs = G.generate_problems(max(1, n_pairs // 2), seed=seed + 51, verify=False)
    sm = modeller or ScriptedModeller(probs, q=1.0, seed=seed)
    rng = seeding.generator(seed, "judge-pairs")
    fault, gold, same = [], [], []
    for _ in range(n_pairs):
        pr = probs[int(rng.integers(len(probs)))]
        i = int(rng.integers(len(pr.specs)))
        desc, cid = pr.anchors["constraints"][i], f"c{i}"
        faulty_code, gold_code = sm._write(sm._fault(pr, i, pr.specs, rng)), sm._write(pr.specs[i])
        fault.append(judge_flags(pr, backend, cid, desc, faulty_code))
        gold.append(judge_flags(pr, backend, cid, desc, gold_code))
        same.append(judge_flags(pr, backend, cid, desc, gold_code))
    out = {"n_pairs": n_pairs, "detection_rate": float(np.mean(fault)), "false_alarm_rate": float(np.mean(gold)),
           "detect_minus_false_alarm": _points(fault, gold)}
    return out, _points(same, gold)


def _scripted_judge_harness(n_pairs, seed) -> dict:
    """:func:`judge_audit` with the scripted stand-in, whose exact judge must detect every injected fault and
    flag no gold fragment (it checks that every injected fault changes the constraint's canonical form)."""
    if n_pairs <= 0:
        return {"detection_rate": None, "false_alarm_rate": None}
    probs = G.generate_problems(max(1, n_pairs // 2), seed=seed + 51, verify=False)
    sm = ScriptedModeller(probs, q=0.0, seed=seed)
    return judge_audit(n_pairs, sm.backend(), seed, modeller=sm)[0]


def _judge_audit(n_pairs, backend, seed, metrics):
    if n_pairs > 0:
        metrics["judge"], metrics["control"]["no_fault"]["detect_minus_false_alarm"] = judge_audit(
            n_pairs, backend, seed)


def _smollm2_plumbing(params, ctx):
    """PLUMBING CHECK, not an accuracy result: the local SmolLM2-135M-Instruct backend (shared.lm, CPU, greedy)
    runs forward-only and SAC-Opt ("prompt") on ``smollm2_problems`` generated problems, programs in the sandbox;
    generation is capped at ``smollm2_max_tokens`` new tokens per call. Expect about 0% accuracy."""
    n = int(params.get("smollm2_problems", 0))
    if n <= 0:
        return {"skipped": "smollm2_problems = 0 at this scale (full only: CPU generation is too slow for the "
                           "quick budget)"}, []
    from shared.lm.backends import LocalBackend

    cap = int(params.get("smollm2_max_tokens", 256))

    class CappedLocal(LocalBackend):
        def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
            return super()._complete(messages, n=n, temperature=temperature, max_tokens=min(max_tokens, cap),
                                     seed=seed, key=key)
    be = CappedLocal()
    probs = G.generate_problems(n, seed=ctx.seed + 41, verify=False)
    out, rows = {"backend": be.label, "n_problems": n, "max_new_tokens": cap, "label": "plumbing check"}, []
    for name, fn in (("forward-only", lambda pr: run_forward_only(pr, be)),
                     ("sacopt-prompt", lambda pr: run_sacopt(pr, be, coverage="prompt"))):
        runs = [fn(pr) for pr in probs]
        ok = [r.answer is not None and answers_match(r.answer, pr.answer) for r, pr in zip(runs, probs)]
        statuses = [r.status for r in runs]
        out[name] = {"accuracy": float(np.mean(ok)), "calls_per_problem": float(np.mean([r.llm_calls for r in runs])),
                     "tokens_per_problem": float(np.mean([r.prompt_tokens + r.completion_tokens for r in runs])),
                     "status_counts": {k: statuses.count(k) for k in sorted(set(statuses))}}
        rows.append({"method": f"plumbing-{name}", "seed": 0, "step": 0, "metric": "accuracy_generated",
                     "value": out[name]["accuracy"], "llm_backend": be.label, "llm_model": be.model})
    return out, rows


def _replay_roundtrip_safe(ctx, n):
    return _replay_roundtrip(ctx, n) if n > 0 else (None, None)


# ---------------------------------------------------------------------------------------------------- perf
def _cpu_with_children() -> float:
    """CPU seconds of this process (``time.process_time``) plus those (user + system) of its children that have
    been waited for.

    pulp runs CBC as a child process, which ``time.process_time`` does not see; the child's time is added to
    ``RUSAGE_CHILDREN`` when pulp waits for it, i.e. before ``solve_formulation`` returns."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _schedstat_files(pid: int) -> list:
    """``/proc/<pid>/task/<tid>/schedstat`` of every thread of ``pid`` and of its descendants (empty when
    ``/proc`` cannot tell)."""
    try:
        files, tids = [], os.listdir(f"/proc/{pid}/task")
        for tid in tids:
            files.append(f"/proc/{pid}/task/{tid}/schedstat")
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                for child in handle.read().split():
                    files += _schedstat_files(int(child))
        return files
    except (OSError, ValueError):
        return []


def _run_seconds(files) -> float | None:
    """Sum of the run times (first field, ns) of the ``schedstat`` files, in seconds; None when one is gone."""
    total = 0
    try:
        for path in files:
            with open(path) as handle:
                total += int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


class _WorkClock:
    """CPU seconds of every process that works on a solve or on a sandboxed run of a model program.

    ``clock()`` is :func:`_cpu_with_children` (this process and its waited-for children: pulp's CBC) plus
    ``sandbox_s``, the CPU seconds that :meth:`run` calls spent outside this process: the sandbox's own
    processes (the zygote forks the run, writes its files and cleans up; their run time is read from
    ``/proc/<pid>/task/<tid>/schedstat`` around the call, none where ``/proc`` cannot tell) and the program
    with the children it waited for (its CBC; the sandbox result's ``cpu_s``, :func:`run_in_sandbox`). On an idle machine the sum matches the
    wall time of the run (the processes work one after the other); unlike wall time it leaves out the waits for
    a core while other jobs hold the cores, which grow with each hand-over between processes.
    """

    def __init__(self):
        self.sandbox_s = 0.0
        self._files = (None, [])  # (sandbox pid, its schedstat files)

    def clock(self) -> float:
        return _cpu_with_children() + self.sandbox_s

    def run(self, program: str, data: dict):
        pid = sandbox_pid()
        if self._files[0] != pid:
            self._files = (pid, _schedstat_files(pid))
        files = self._files[1]
        before = _run_seconds(files)
        res = run_in_sandbox(program, data)
        after = _run_seconds(files)
        zygote = after - before if before is not None and after is not None else 0.0
        self.sandbox_s += max(0.0, zygote) + res.cpu_s
        return res


def _medians(per_problem: list) -> dict:
    """Median over problems of each name's seconds, from a list of ``{name: seconds}`` (one per problem)."""
    return {name: float(statistics.median(t[name] for t in per_problem)) for name in per_problem[0]}


def _solve_timings(probs, rounds: int) -> list:
    """Per-problem least CPU seconds of solving the gold model with HiGHS, CBC (and gurobipy) in process and of
    running its program in the sandbox.

    One :func:`shared.timing.alternating_least_cpu` over every (problem, way) pair: after one untimed call of
    each, every round calls the ways of the first problem in turn, then those of the next, and so on, so that
    the ways of a problem are measured next to each other and each pair's ``rounds`` measurements are spread
    over the whole timing (a burst of load from other jobs reaches one round, not every round of some problems);
    each pair keeps its least time per call. The clock is that of :class:`_WorkClock`, so that CBC's child
    process and the sandbox's processes count. A call lasts a millisecond or more, far above the clocks'
    resolution (ns, µs), so calls are not batched.
    Returns one ``{"highs": s, "cbc": s, ["gurobi": s,] "sandbox": s}`` per problem.
    """
    ways = ["highs", "cbc"]
    try:
        import gurobipy  # noqa: F401
        ways.append("gurobi")
    except ImportError:
        pass
    work, fns = _WorkClock(), {}
    for i, pr in enumerate(probs):
        for b in ways:
            fns[f"{i}:{b}"] = functools.partial(solve_formulation, pr.formulation, backend=b)
        program = G.assemble_program(pr.prelude, pr.objective_code, pr.fragments)
        fns[f"{i}:sandbox"] = functools.partial(work.run, program, pr.data)
    seconds = alternating_least_cpu(fns, rounds, min_seconds=0.0, cpu_clock=work.clock)["seconds"]
    return [{w: seconds[f"{i}:{w}"] for w in ways + ["sandbox"]} for i in range(len(probs))]


def perf(params: dict, ctx: RunContext):
    """Side by side: per-problem LLM calls, tokens and wall time of forward-only vs SAC-Opt (scripted), and
    the gold models of the first ``timed_problems`` problems solved by HiGHS vs CBC (vs gurobipy) in process
    and run in the sandbox (:func:`_solve_timings`).

    ``solve_median_s``: median over problems of each one's least CPU seconds per call (all processes involved:
    CBC's child, the sandbox's zygote and program); ``cbc_over_highs`` and ``sandbox_over_inprocess_cbc`` are
    ratios of these medians (CBC over HiGHS, sandbox over in-process CBC)."""
    probs = G.generate_problems(int(params["n_problems"]), seed=ctx.seed + 3, verify=False)
    sm = ScriptedModeller(probs, q=params["q"], q_crash=0.0, p=params["p"], p_debug=1.0, seed=ctx.seed)
    be = sm.backend()
    cost = {"forward-only": [], "sacopt-prompt": []}
    run_model_program("print('OBJECTIVE: 0')")  # start the zygote outside the timings
    for pr in probs:
        for name, fn in (("forward-only", lambda: run_forward_only(pr, be)),
                         ("sacopt-prompt", lambda: run_sacopt(pr, be, coverage="prompt"))):
            r = fn()
            cost[name].append((r.llm_calls, r.prompt_tokens + r.completion_tokens, r.wall_s))
    c = {k: np.array(v, dtype=float).mean(axis=0) for k, v in cost.items()}
    timed = _solve_timings(probs[:int(params["timed_problems"])], int(params["rounds"]))
    med = _medians(timed)
    metrics = {
        "llm_backend": SCRIPTED_LABEL, "n_problems": len(probs), "hardware": f"{platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} logical CPUs, {platform.system()}",
        "calls_per_problem": {k: float(v[0]) for k, v in c.items()},
        "tokens_per_problem": {k: float(v[1]) for k, v in c.items()},
        "wall_s_per_problem": {k: float(v[2]) for k, v in c.items()},
        "calls_ratio": float(c["sacopt-prompt"][0] / c["forward-only"][0]),
        "tokens_ratio": float(c["sacopt-prompt"][1] / c["forward-only"][1]),
        "wall_ratio": float(c["sacopt-prompt"][2] / c["forward-only"][2]),
        "timed_problems": len(timed), "timing_rounds": int(params["rounds"]),
        "solve_median_s": med, "cbc_over_highs": med["cbc"] / med["highs"],
        "sandbox_over_inprocess_cbc": med["sandbox"] / med["cbc"],
        "gurobi_available": "gurobi" in med,
    }
    rows = [{"method": k, "seed": 0, "step": 0, "metric": "median_solve_cpu_s", "value": v} for k, v in med.items()]
    return rows, metrics


# ------------------------------------------------------------------------------------- objective faults
def _wrong(run, pr) -> bool:
    return not (run.answer is not None and answers_match(run.answer, pr.answer, rel_tol=1e-4))


def objective(params: dict, ctx: RunContext):
    """Scripted stand-ins (NOT an LLM) with silent objective faults at rate ``q_obj`` (outside the backward loop,
    as in the official code), reported apart from the main claims (which keep q_obj = 0). Programs are evaluated
    in process from the stand-in's registered structure (:meth:`ScriptedModeller.evaluate`), not executed."""
    probs = G.generate_problems(int(params["n_problems"]), seed=ctx.seed + 21, verify=False)
    sm = ScriptedModeller(probs, q=params["q"], q_crash=0.0, p=params["p"], p_debug=1.0, seed=ctx.seed,
                          q_obj=params["q_obj"])
    be, ex = sm.backend(), sm.executor()
    rows, wrong = [], {"forward-only": [], "sacopt-prompt": []}
    obj_faulty, persisted = [], []
    for pr in probs:
        fw = run_forward_only(pr, be, executor=ex)
        sa = run_sacopt(pr, be, coverage="prompt", executor=ex)
        faulty = sm.objective_faulty(pr, fw.program_before_debug)
        obj_faulty.append(faulty)
        if faulty:
            persisted.append(sm.objective_faulty(pr, sa.program))
        for name, run in (("forward-only", fw), ("sacopt-prompt", sa)):
            wrong[name].append(_wrong(run, pr))
            rows.append({"method": name, "seed": 0, "step": run.rounds, "metric": "wrong", "value": float(wrong[name][-1]),
                         "problem": pr.id, "objective_fault": bool(faulty), "llm_backend": SCRIPTED_LABEL,
                         "llm_model": be.model})
    of = np.array(obj_faulty, dtype=bool)

    def rate(name, mask):
        v = np.array(wrong[name], dtype=bool)[mask]
        return float(v.mean()) if v.size else None
    metrics = {
        "llm_backend": SCRIPTED_LABEL, "llm_model": be.model, "n_problems": len(probs), "q": params["q"],
        "p": params["p"], "q_obj": params["q_obj"], "n_objective_faulty": int(of.sum()),
        "objective_fault_share": float(of.mean()),
        "persist_fraction": float(np.mean(persisted)) if persisted else None,
        "wrong_rate": {name: {"all": rate(name, np.ones_like(of)), "objective_faulty": rate(name, of),
                              "objective_gold": rate(name, ~of)} for name in wrong},
    }
    return rows, metrics


# ------------------------------------------------------------------------------------------------- sweep
def sweep(params: dict, ctx: RunContext):
    """Scripted stand-ins (NOT an LLM), q_crash = 0: SAC-Opt ("prompt") / forward-only wrong-answer ratio over
    the (q, p) grid on the same generated problems; programs evaluated in process (registered structure)."""
    probs = G.generate_problems(int(params["n_problems"]), seed=ctx.seed + 31, verify=False)
    qs, ps = [float(v) for v in params["qs"]], [float(v) for v in params["ps"]]
    ratio = np.full((len(qs), len(ps)), np.nan)
    wf, ws = np.zeros_like(ratio), np.zeros_like(ratio)
    rows = []
    for a, q in enumerate(qs):
        for b, p in enumerate(ps):
            sm = ScriptedModeller(probs, q=q, q_crash=0.0, p=p, p_debug=1.0, seed=ctx.seed)
            be, ex = sm.backend(), sm.executor()
            fw = [_wrong(run_forward_only(pr, be, executor=ex), pr) for pr in probs]
            sa = [_wrong(run_sacopt(pr, be, coverage="prompt", executor=ex), pr) for pr in probs]
            wf[a, b], ws[a, b] = np.mean(fw), np.mean(sa)
            ratio[a, b] = ws[a, b] / wf[a, b] if wf[a, b] > 0 else np.nan
            for name, v in (("forward-only", wf[a, b]), ("sacopt-prompt", ws[a, b])):
                rows.append({"method": name, "seed": 0, "step": 0, "metric": "wrong_rate", "value": float(v), "q": q,
                             "p": p, "llm_backend": SCRIPTED_LABEL, "llm_model": be.model})
    write_arrays(ctx.out_dir / "sweep.npz", q=np.array(qs), p=np.array(ps), ratio=ratio, wrong_forward=wf,
                 wrong_sacopt=ws)
    finite = ratio[np.isfinite(ratio)]
    metrics = {"llm_backend": SCRIPTED_LABEL, "n_problems": len(probs), "qs": qs, "ps": ps,
               "ratio": [[None if not np.isfinite(v) else float(v) for v in r] for r in ratio],
               "wrong_forward": wf.tolist(), "wrong_sacopt": ws.tolist(),
               "max_ratio": float(finite.max()) if finite.size else None}
    return rows, metrics


def _reporting_isolation(fn):
    """``fn`` whose metrics gain ``sandbox`` (:func:`shared.sandbox.isolation_summary`) when it ran any
    program, so that the report shows a run under the unsafe opt-out (claim ``sandbox-confined``)."""

    @functools.wraps(fn)
    def run(params: dict, ctx: RunContext):
        reset_isolation_summary()
        rows, metrics = fn(params, ctx)
        summary = isolation_summary()
        return rows, ({**metrics, "sandbox": summary} if summary["runs"] else metrics)

    return run


EXPERIMENTS = {name: _reporting_isolation(fn) for name, fn in
               {"benchmarks": benchmarks, "harness": harness, "mechanism": mechanism, "embedding": embedding,
                "llm": llm, "perf": perf, "objective": objective, "sweep": sweep}.items()}

if __name__ == "__main__":
    main(EXPERIMENTS)
