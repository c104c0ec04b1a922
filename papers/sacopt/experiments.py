"""Experiments of the sacopt reproduction (spec "Experiments by scale").

``python -m papers.sacopt.experiments NAME --config papers/sacopt/config.yaml --scale quick --out DIR`` with
NAME in ``data``, ``harness``, ``mechanism``, ``embedding``, ``llm``, ``perf``, ``objective``, ``sweep``. Every number from the scripted
stand-ins is labelled ``llm_backend = "SCRIPTED STAND-IN (not an LLM)"``; LLM-only metrics are JSON null
unless an LLM backend (endpoint or replay) is configured through ``REPRO_LLM_*``.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import time

import numpy as np

from shared.experiment import RunContext, main
from shared.lm.backends import (DEFAULT_MAX_TOKENS, SCRIPTED_LABEL, ReplayBackend, ReplayMissError, ScriptedBackend,
                                cache_key, get_backend)
from shared.results import write_arrays

from papers.sacopt import problems as G
from papers.sacopt.complexor import audit as complexor_audit
from papers.sacopt.datasets import DATASETS, load_dataset
from papers.sacopt.execution import run_model_program
from papers.sacopt.formulation import solve_formulation
from papers.sacopt.pipeline import (COSINE_THRESHOLD, ScriptedModeller, run_forward_only, run_sacopt,
                                    run_standard)
from papers.sacopt.scoring import answers_match, asks_rounding

__all__ = ["EXPERIMENTS", "data", "harness", "mechanism", "embedding", "llm", "perf", "objective", "sweep"]

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
def data(params: dict, ctx: RunContext):
    """Loaders and answer statistics of the mirrored benchmarks (``limit`` items each at smoke)."""
    limit = params.get("limit")
    rows, metrics = [], {"datasets": {}}
    for name in DATASETS:
        try:
            items = load_dataset(name)
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
                 "n_negative": sum(a < 0 for a in numeric)}
        metrics["datasets"][name] = stats
        for k, v in stats.items():
            rows.append({"method": name, "seed": 0, "step": 0, "metric": k, "value": v})
    # ComplexOR audit: the project's reference formulations (papers/sacopt/complexor.py, written from each
    # gt_model.txt) solved on the sample input vs the recorded output (rel 1e-6); every problem, also at smoke
    try:
        cor = load_dataset("complexor")
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
    for pr in probs:
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
               "blindspot_confirmed": bool(share >= 0.5)}
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


def llm(params: dict, ctx: RunContext):
    """Forward-only, standard prompting and SAC-Opt (both coverages) on the benchmarks with a real LLM backend
    (endpoint or replay); without one every accuracy is null ("not evaluated")."""
    backend = None
    if os.environ.get("REPRO_LLM_BACKEND", "scripted").strip().lower() not in ("", "scripted"):
        backend = get_backend()
    rt_same, rt_miss = _replay_roundtrip_safe(ctx, int(params.get("replay_problems", 2)))
    metrics = {"llm_backend": backend.label if backend else "none", "replay_roundtrip_identical": rt_same,
               "replay_miss_raises": rt_miss, "accuracy": {}, "diff": {}}
    rows = []
    diffs = []
    for name in params["datasets"]:
        if backend is None:
            metrics["accuracy"][name] = {p: None for p in PIPELINES}
            metrics["diff"][name] = None
            continue
        items = load_dataset(name)[: params.get("limit")]
        acc, oks = {}, {}
        for pipe in PIPELINES:
            fn = {"forward-only": lambda pr: run_forward_only(pr, backend),
                  "standard": lambda pr: run_standard(pr, backend),
                  "sacopt-prompt": lambda pr: run_sacopt(pr, backend, coverage="prompt"),
                  "sacopt-math": lambda pr: run_sacopt(pr, backend, coverage="math")}[pipe]
            ok = [answers_match(fn(pr).answer, pr.answer, rounding=asks_rounding(pr.text)) for pr in items]
            oks[pipe] = ok
            acc[pipe] = float(np.mean(ok))
            rows.append({"method": pipe, "seed": 0, "step": 0, "metric": f"accuracy_{name}", "value": acc[pipe],
                         "llm_backend": backend.label, "llm_model": backend.model})
        metrics["accuracy"][name] = acc
        metrics["diff"][name] = 100 * (acc["sacopt-prompt"] - acc["forward-only"])
        if name == "complexor":  # also on the problems whose recorded output the reference formulation reproduces
            keep = {r["problem"] for r in complexor_audit(items)["rows"] if r["match"]}
            mask = [pr.id in keep for pr in items]
            metrics["complexor_reproducible"] = {
                pipe: float(np.mean([o for o, m in zip(oks[pipe], mask) if m])) if any(mask) else None
                for pipe in PIPELINES}
        diffs.append(metrics["diff"][name])
    metrics["diff_complexlp"] = metrics["diff"].get("complexlp")
    metrics["diff_average"] = float(np.mean(diffs)) if diffs else None
    metrics["plumbing"], plumb_rows = _smollm2_plumbing(params, ctx)
    rows += plumb_rows
    if not rows:
        rows = [{"method": "none", "seed": 0, "step": 0, "metric": "evaluated", "value": 0.0}]
    return rows, metrics


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
def perf(params: dict, ctx: RunContext):
    """Side by side: per-problem LLM calls, tokens and wall time of forward-only vs SAC-Opt (scripted), and
    solve time HiGHS vs CBC (vs gurobipy) on the gold models, sandbox run vs in-process solve."""
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
    solve_t = {"highs": [], "cbc": [], "sandbox": []}
    try:
        import gurobipy  # noqa: F401
        solve_t["gurobi"] = []
    except ImportError:
        pass
    for pr in probs:
        for b in [k for k in solve_t if k != "sandbox"]:
            t0 = time.perf_counter()
            solve_formulation(pr.formulation, backend=b)
            solve_t[b].append(time.perf_counter() - t0)
        res = run_model_program(G.assemble_program(pr.prelude, pr.objective_code, pr.fragments), data=pr.data)
        solve_t["sandbox"].append(res.wall_s)
    med = {k: float(statistics.median(v)) for k, v in solve_t.items()}
    metrics = {
        "llm_backend": SCRIPTED_LABEL, "n_problems": len(probs), "hardware": f"{platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} logical CPUs, {platform.system()}",
        "calls_per_problem": {k: float(v[0]) for k, v in c.items()},
        "tokens_per_problem": {k: float(v[1]) for k, v in c.items()},
        "wall_s_per_problem": {k: float(v[2]) for k, v in c.items()},
        "calls_ratio": float(c["sacopt-prompt"][0] / c["forward-only"][0]),
        "tokens_ratio": float(c["sacopt-prompt"][1] / c["forward-only"][1]),
        "wall_ratio": float(c["sacopt-prompt"][2] / c["forward-only"][2]),
        "solve_median_s": med, "cbc_over_highs": med["cbc"] / med["highs"],
        "sandbox_over_inprocess_cbc": med["sandbox"] / med["cbc"],
        "gurobi_available": "gurobi" in solve_t,
    }
    rows = [{"method": k, "seed": 0, "step": 0, "metric": "median_solve_s", "value": v} for k, v in med.items()]
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


EXPERIMENTS = {"data": data, "harness": harness, "mechanism": mechanism, "embedding": embedding, "llm": llm,
               "perf": perf, "objective": objective, "sweep": sweep}

if __name__ == "__main__":
    main(EXPERIMENTS)
