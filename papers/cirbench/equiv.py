"""Layered equivalence (refinement) checking of a candidate against a source function.

Formal layer (z3, QF_BV; see :func:`papers.cirbench._worker.formal`): for arguments x assumed well defined,
the candidate refines the source iff for all x

    UB_src(x) or ( not UB_tgt(x) and ( poison_src(x) or ( not poison_tgt(x) and r_src(x) = r_tgt(x) ) ) ).

The negation is given to z3: unsat -> EQ, sat -> NOT_EQ with the model as counterexample, timeout or a
function outside the fragment -> UNKNOWN. Loops (``unroll_bound`` k > 0): both functions are unrolled k times
(:meth:`papers.cirbench._worker._Encoder.encode_unrolled`); a counterexample within k back edges is NOT_EQ,
a proof when no run goes past k is EQ, a proof only for the runs within k is BOUNDED_EQ ("equivalent up to k
iterations", never full equivalence). Only an UNKNOWN or a BOUNDED_EQ falls through to the differential layer: both
functions are JIT-ed (llvmlite MCJIT, in the sandbox) and run on a seeded input set (boundary values per
integer argument, cartesian product capped at 256, plus ``n_random`` random vectors); inputs on which the
source fails are dropped, a candidate failure or mismatch on a kept input is NOT_EQ, fewer than 8 kept
inputs is UNKNOWN. (Replaces Alive2, which is not installable here; Lopes et al., PLDI 2021.)

Time limits never decide EQ or NOT_EQ. The formal layer stops at a z3 resource budget (deterministic, see
:mod:`papers.cirbench.limits`). A candidate's differential run is limited in CPU seconds
(:func:`run_limit`, derived from the source's run); one that runs past it is run once more alone with
:data:`RETRY_FACTOR` times the limit, and one that runs past that too gets its own verdict ``TIMEOUT`` (not EQ,
not NOT_EQ). A candidate that crashes on an input the source runs on is NOT_EQ.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from papers.cirbench.limits import FORMAL_WALL_FACTOR
from papers.cirbench.ir import IRError, sandbox_call, text_hash

__all__ = ["EquivResult", "check_equivalence", "check_batch", "make_inputs", "run_limit", "LAYERS", "VERDICTS",
           "BUF_LEN", "RETRY_FACTOR", "RUN_STATS"]

LAYERS = ("formal", "differential")
VERDICTS = ("EQ", "NOT_EQ", "UNKNOWN", "TIMEOUT", "BOUNDED_EQ")
BUF_LEN = 64
MIN_KEPT = 8
CALL_CPU_S = 1.0          # CPU seconds of one source call in the per-input fallback
RUN_FLOOR_S = 0.5         # least CPU seconds a candidate's differential run gets (JIT compile included)
RUN_SOURCE_FACTOR = 5     # ... or this many times the source's CPU time on the same inputs, if more
RETRY_FACTOR = 10         # a candidate that runs past its limit is run once more with this many times the limit
RUN_WALL_FACTOR = 3       # a run also ends after this many times its CPU limit in wall seconds (sleeps, blocks)
_SOURCE_RUNS: dict = {}
# run-dependent counts (provenance only, never metrics): first attempts that ran past their limit, retries
RUN_STATS = {"retried": 0, "timeout_after_retry": 0}


@dataclass
class EquivResult:
    """``verdict`` ("EQ", "NOT_EQ", "UNKNOWN", "TIMEOUT" or "BOUNDED_EQ"), ``layer`` ("formal", "differential" or None),
    ``counterexample`` (dict or None), ``detail``; ``times`` (seconds per layer); ``wall_guard``: the formal
    layer was stopped by its wall-clock guard rather than by its resource budget (a heavily loaded machine);
    ``formal_verdict``: the formal layer's own verdict (None when it did not run), BOUNDED_EQ included;
    ``bound``: the unroll bound k when the formal layer unrolled loops. The verdict BOUNDED_EQ ("equivalent up
    to k back edges") is returned only when no differential run follows; it never counts as equivalence."""

    verdict: str
    layer: str | None
    counterexample: dict | None
    detail: str
    times: dict = field(default_factory=dict)
    wall_guard: bool = False
    formal_verdict: str | None = None
    bound: int | None = None


def run_limit(src_cpu_s: float) -> float:
    """CPU seconds a candidate's differential run may use: ``max(RUN_FLOOR_S, RUN_SOURCE_FACTOR * src_cpu_s)``,
    where ``src_cpu_s`` is the CPU time of the source's run on the same inputs (parse and JIT included). CPU
    time, not wall clock, so that load does not end a run early; the retry gets RETRY_FACTOR times this.
    Raises ValueError for a negative or non-finite time."""
    if isinstance(src_cpu_s, bool) or not isinstance(src_cpu_s, (int, float)) or not np.isfinite(src_cpu_s) \
            or src_cpu_s < 0:
        raise ValueError(f"src_cpu_s must be a finite non-negative number, got {src_cpu_s!r}")
    return max(RUN_FLOOR_S, RUN_SOURCE_FACTOR * float(src_cpu_s))


def _limit(src_cpu_s: float, override: float | None) -> float:
    if override is None:
        return run_limit(src_cpu_s)
    if isinstance(override, bool) or not isinstance(override, (int, float)) or not override > 0 \
            or not np.isfinite(override):
        raise ValueError(f"run_limit_s must be a positive number of CPU seconds, got {override!r}")
    return float(override)


def _timed_out(res) -> bool:
    """Whether a sandbox child ended at a time limit (wall, RLIMIT_CPU, or the worker's SIGPROF/SIGALRM timer)
    rather than by a crash."""
    import signal

    return res.status == "timeout" or res.returncode in (-int(signal.SIGPROF), -int(signal.SIGALRM),
                                                          -int(signal.SIGXCPU))


def _parse_spec(spec: str, ty: str):
    """(kind, bits, lo, hi) of one argument from a sidecar spec ('i32', 'i32:lo:hi', 'ptr:i32', 'len:64')."""
    parts = spec.split(":")
    if parts[0] == "ptr":
        return "ptr", int(parts[1][1:]), None, None
    if parts[0] == "len":
        return "int", 32, 0, int(parts[1])
    bits = int(ty[1:]) if ty.startswith("i") else 32
    signed_min, signed_max = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if parts[0] == "u8":
        return "int", 8, signed_min, signed_max
    if len(parts) == 3:
        return "int", bits, int(parts[1]), int(parts[2])
    return "int", bits, signed_min, signed_max


def make_inputs(param_types: list[str], arg_specs: list[str] | None, *, n_random: int = 64, seed: int = 0):
    """Seeded differential inputs: (vectors, elem_bits).

    Every boundary value {0, 1, -1, 2, -2, MIN, MIN+1, MAX-1, MAX} of each integer argument (restricted to its
    sidecar range, plus the range ends), cartesian product capped at 256 vectors, then ``n_random`` random
    vectors (half uniform in the range, half with |v| <= 16). Pointer arguments get fresh 64-element buffers
    (contents uniform in [-1000, 1000] (bytes [0, 255]); in the |v| <= 16 half, [-8, 8] (bytes [0, 40])).
    """
    if isinstance(n_random, bool) or not isinstance(n_random, int) or n_random < 0:
        raise ValueError(f"n_random must be a non-negative integer, got {n_random!r}")
    specs = arg_specs or [("ptr:i32" if t == "ptr" else t) for t in param_types]
    info = [_parse_spec(s, t) for s, t in zip(specs, param_types)]
    rng = np.random.default_rng(seed)
    elem_bits = [b if k == "ptr" else 0 for k, b, _, _ in info]

    def buffer(bits, small=False):
        if small:  # small contents hit the small keys, targets and sentinels of the kernels
            lo, hi = (0, 40) if bits == 8 else (-8, 8)
        else:
            lo, hi = (0, 255) if bits == 8 else (-1000, 1000)
        return [int(v) for v in rng.integers(lo, hi + 1, BUF_LEN)]

    grids = []
    for kind, bits, lo, hi in info:
        if kind == "ptr":
            grids.append([None])
            continue
        mn, mx = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        cand = {0, 1, -1, 2, -2, mn, mn + 1, mx - 1, mx, lo, hi}
        grids.append(sorted(v for v in cand if lo <= v <= hi))
    product = list(itertools.product(*grids))
    if len(product) > 256:
        idx = sorted(rng.choice(len(product), 256, replace=False))
        product = [product[i] for i in idx]
    vectors = []
    for combo in product:
        vectors.append([buffer(b) if k == "ptr" else int(v) for (k, b, _, _), v in zip(info, combo)])
    for r in range(n_random):
        vec = []
        for kind, bits, lo, hi in info:
            if kind == "ptr":
                vec.append(buffer(bits, small=r % 2 == 1))
            elif r % 2 == 0:
                vec.append(int(rng.integers(lo, hi, endpoint=True)))
            else:
                vec.append(int(np.clip(rng.integers(-16, 17), lo, hi)))
        vectors.append(vec)
    return vectors, elem_bits


def _run_many(ir, function, vectors, elem_bits, cpu_s):
    """Run ``function`` on every vector in one sandbox child limited to ``cpu_s`` CPU seconds (whole seconds,
    rounded up, by RLIMIT_CPU) and RUN_WALL_FACTOR x ``cpu_s`` + 1 wall seconds; (outputs or None, CPU seconds
    used, error text or None, timed out?)."""
    from papers.cirbench.ir import _sandbox

    res = _sandbox().call("papers.cirbench._worker:run_inputs", [ir, function, vectors, elem_bits],
                          timeout_s=RUN_WALL_FACTOR * cpu_s + 1.0, cpu_s=cpu_s, memory_mb=1024)
    if res.ok and "outputs" in (res.value or {}):
        return res.value["outputs"], res.cpu_s, None, False
    return None, res.cpu_s, f"{res.status}: {res.error or (res.value or {}).get('error', '')}"[:300], _timed_out(res)


def _source_outputs(src_ir, function, vectors, elem_bits, key):
    """(kept input indices, source outputs on them, CPU seconds of the source run), cached per source."""
    if key in _SOURCE_RUNS:
        return _SOURCE_RUNS[key]
    outs, cpu, err, _ = _run_many(src_ir, function, vectors, elem_bits, cpu_s=max(5.0, 0.05 * len(vectors)))
    if outs is not None:
        kept = list(range(len(vectors)))
    else:  # one call per input, each with its own CPU limit; inputs on which the source fails are dropped
        kept, outs, cpu = [], [], 0.0
        for i, vec in enumerate(vectors):
            o, c, e, _ = _run_many(src_ir, function, [vec], elem_bits, cpu_s=CALL_CPU_S)
            if o is not None:
                kept.append(i)
                outs.append(o[0])
                cpu += c
    _SOURCE_RUNS[key] = (kept, outs, cpu)
    return _SOURCE_RUNS[key]


def _timeout_result(limit: float) -> EquivResult:
    return EquivResult("TIMEOUT", "differential", None,
                       f"differential: candidate ran past {limit:g} s CPU and past {RETRY_FACTOR * limit:g} s CPU "
                       "on the retry", {})


def differential(src_ir: str, tgt_ir: str, function: str, signature: dict, *, arg_specs=None,
                 n_random: int = 64, seed: int = 0, run_limit_s: float | None = None) -> EquivResult:
    """Differential layer only (JIT both, compare return value and every buffer bitwise). A candidate that runs
    past :func:`run_limit` (or ``run_limit_s``) is retried once with RETRY_FACTOR times the limit, then is
    TIMEOUT."""
    t0 = time.perf_counter()
    vectors, elem_bits = make_inputs(signature["params"], arg_specs, n_random=n_random, seed=seed)
    key = (text_hash(src_ir), function, n_random, seed, str(arg_specs))
    kept, src_outs, src_cpu = _source_outputs(src_ir, function, vectors, elem_bits, key)
    if len(kept) < MIN_KEPT:
        return EquivResult("UNKNOWN", None, None, f"differential: only {len(kept)} inputs kept",
                           {"differential": time.perf_counter() - t0})
    kept_vectors = [vectors[i] for i in kept]
    limit = _limit(src_cpu, run_limit_s)
    outs, _, err, late = _run_many(tgt_ir, function, kept_vectors, elem_bits, cpu_s=limit)
    if outs is None and late:
        RUN_STATS["retried"] += 1
        outs, _, err, late = _run_many(tgt_ir, function, kept_vectors, elem_bits, cpu_s=RETRY_FACTOR * limit)
        if outs is None and late:
            RUN_STATS["timeout_after_retry"] += 1
            r = _timeout_result(limit)
            r.times = {"differential": time.perf_counter() - t0}
            return r
    dt = time.perf_counter() - t0
    if outs is None:
        return EquivResult("NOT_EQ", "differential", None, f"differential: candidate failed ({err})",
                           {"differential": dt})
    for vec, a, b in zip(kept_vectors, src_outs, outs):
        if a != b:
            cex = {f"arg{i}": (v if isinstance(v, int) else "buffer") for i, v in enumerate(vec)}
            return EquivResult("NOT_EQ", "differential", cex, "differential: outputs differ", {"differential": dt})
    return EquivResult("EQ", "differential", None, f"differential: {len(kept)} inputs agree", {"differential": dt})


def check_equivalence(src_ir: str, tgt_ir: str, function: str, *, layers: tuple[str, ...] = LAYERS,
                      timeout_s: float = 10.0, n_random: int = 64, seed: int = 0,
                      arg_specs: list[str] | None = None, run_limit_s: float | None = None,
                      unroll_bound: int = 0) -> EquivResult:
    """Does the candidate ``tgt_ir`` refine ``src_ir`` on ``function``? Layered: formal first; only a formal
    UNKNOWN falls back to the differential layer; a formal NOT_EQ is final.

    Examples: ``udiv i32 %x, 4`` vs ``lshr i32 %x, 2`` -> EQ (formal); ``icmp slt`` vs ``icmp ult`` ->
    NOT_EQ with a counterexample. ``arg_specs`` (optional) are the kernel sidecar's argument specs;
    ``run_limit_s`` (optional) replaces the derived CPU limit of the candidate's differential run;
    ``unroll_bound`` k > 0 lets the formal layer unroll loops k times (0: loops are outside its fragment).
    Raises ValueError for an unknown layer, a missing function, different signatures, n_random < 0 or a negative
    unroll_bound;
    IRError when either side does not parse or verify.
    """
    layers = tuple(layers)
    for layer in layers:
        if layer not in LAYERS:
            raise ValueError(f"layers: unknown layer {layer!r}; known: {LAYERS}")
    if isinstance(n_random, bool) or not isinstance(n_random, int) or n_random < 0:
        raise ValueError(f"n_random must be a non-negative integer, got {n_random!r}")
    _check_bound(unroll_bound)
    for name, text in (("src_ir", src_ir), ("tgt_ir", tgt_ir)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be str, got {type(text).__name__}")
        if not text.strip():
            raise IRError(f"{name}: empty IR text")
    t0 = time.perf_counter()
    res = sandbox_call("check_pair", src_ir, tgt_ir, function, int(timeout_s * 1000), "formal" in layers,
                       unroll_bound, timeout_s=3 * timeout_s * FORMAL_WALL_FACTOR + 30)
    if not res.ok:
        raise IRError(f"LLVM failed on the input ({res.status}): {res.error}")
    out = res.value
    for side, name in (("src", "src_ir"), ("tgt", "tgt_ir")):
        if not out[side]["ok"]:
            raise IRError(f"{name} is invalid: {out[side]['message']}")
        if out[side]["signature"] is None:
            raise ValueError(f"function: {function!r} is not defined in {name}")
    ss, ts = out["src"]["signature"], out["tgt"]["signature"]
    if (ss["ret"], ss["params"]) != (ts["ret"], ts["params"]):
        raise ValueError(f"function: signatures differ: {ss['ret']}({', '.join(ss['params'])}) vs "
                         f"{ts['ret']}({', '.join(ts['params'])})")
    times, fv, bound = {}, None, None
    if "formal" in out:
        f = out["formal"]
        times["formal"] = time.perf_counter() - t0
        fv, bound = f["verdict"], f.get("bound")
        if fv in ("EQ", "NOT_EQ"):
            return EquivResult(fv, "formal", f["counterexample"], f["detail"], times, formal_verdict=fv, bound=bound)
        detail = f["detail"]
    else:
        detail = "formal layer not run"
    guard = bool(out.get("formal", {}).get("wall_guard"))
    if "differential" in layers:
        r = differential(src_ir, tgt_ir, function, ss, arg_specs=arg_specs, n_random=n_random, seed=seed,
                         run_limit_s=run_limit_s)
        r.times = {**times, **r.times}
        r.detail = f"{detail}; {r.detail}"
        r.wall_guard = guard
        r.formal_verdict, r.bound = fv, bound
        if r.verdict == "UNKNOWN" and fv == "BOUNDED_EQ":   # too few inputs kept: the bounded proof is all there is
            r.verdict, r.layer = "BOUNDED_EQ", "formal"
        return r
    if fv == "BOUNDED_EQ":
        return EquivResult("BOUNDED_EQ", "formal", None, detail, times, guard, fv, bound)
    return EquivResult("UNKNOWN", None, None, detail, times, guard, fv, bound)


def _check_bound(unroll_bound) -> None:
    if isinstance(unroll_bound, bool) or not isinstance(unroll_bound, int) or unroll_bound < 0:
        raise ValueError(f"unroll_bound must be a non-negative integer, got {unroll_bound!r}")


def check_batch(src_ir: str, cands: list[str], function: str, *, arg_specs=None, timeout_s: float = 10.0,
                n_random: int = 64, seed: int = 0, src_in_fragment: bool = True,
                run_limit_s: float | None = None, unroll_bound: int = 0) -> list:
    """Layered checks of many candidates against one (valid) source, mostly in one sandbox child.

    Returns, per candidate, an :class:`EquivResult` or None (invalid: does not verify, lacks the function or
    has another signature). Same verdicts as :func:`check_equivalence`: a candidate whose differential run goes
    past :func:`run_limit` CPU seconds is run once more alone with RETRY_FACTOR times the limit and is TIMEOUT
    when it goes past that too; one that crashes on the kept inputs is NOT_EQ; one on which LLVM itself crashes
    or hangs the shared child is re-checked alone with :func:`check_equivalence`. ``src_in_fragment``: run the
    formal layer (the source lies in its fragment, loops included when ``unroll_bound`` > 0)."""
    import json

    _check_bound(unroll_bound)
    sig_res = sandbox_call("verify", src_ir, function)
    if not sig_res.ok or not sig_res.value["ok"] or sig_res.value["signature"] is None:
        raise IRError(f"source of {function!r} is invalid or lacks the function")
    sig = sig_res.value["signature"]
    vectors, elem_bits = make_inputs(sig["params"], arg_specs, n_random=n_random, seed=seed)
    key = (text_hash(src_ir), function, n_random, seed, str(arg_specs))
    kept, src_outs, src_cpu = _source_outputs(src_ir, function, vectors, elem_bits, key)
    kept_vectors = [vectors[i] for i in kept] if len(kept) >= MIN_KEPT else []
    limit = _limit(src_cpu, run_limit_s)
    outs_kept = src_outs if kept_vectors else []

    def run(idx, do_formal, lim):
        """One child over candidates ``idx``: ({position: EquivResult or None}, position running when it died
        or None, the SandboxResult)."""
        res = _sandbox_batch(src_ir, [cands[j] for j in idx], function, sig, timeout_s, do_formal, kept_vectors,
                             elem_bits, outs_kept, lim,
                             wall=10.0 + len(idx) * (3 * timeout_s * FORMAL_WALL_FACTOR + 6 + RUN_WALL_FACTOR * lim),
                             unroll_bound=unroll_bound)
        got, running = {}, None
        for line in (res.stdout or "").splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "running" in msg:
                running = msg["j"]
            if "result" in msg:
                r = msg["result"]
                got[msg["j"]] = None if not r["valid"] else EquivResult(
                    r["verdict"], r["layer"], r["counterexample"], r["detail"], r["times"],
                    bool(r.get("wall_guard")), r.get("formal_verdict"), r.get("bound"))
                if r["valid"] and r["verdict"] in ("UNKNOWN", "BOUNDED_EQ") and not kept_vectors:
                    got[msg["j"]].detail += f"; differential: only {len(kept)} inputs kept"
        return got, (running if running is not None and running not in got else None), res

    results: list = [None] * len(cands)
    start = 0
    while start < len(cands):
        todo = list(range(start, len(cands)))
        got, running, res = run(todo, src_in_fragment, limit)
        for pos, r in got.items():
            results[todo[pos]] = r
        if len(got) == len(todo):
            break
        pos = min(set(range(len(todo))) - set(got))
        j = todo[pos]
        if running == pos and _timed_out(res):  # ran past its limit: once more alone, with a much larger one
            RUN_STATS["retried"] += 1
            got1, running1, res1 = run([j], False, RETRY_FACTOR * limit)
            if 0 in got1:
                results[j] = got1[0]
            elif running1 == 0 and _timed_out(res1):
                RUN_STATS["timeout_after_retry"] += 1
                results[j] = _timeout_result(limit)
            else:
                results[j] = EquivResult("NOT_EQ", "differential", None,
                                         f"differential: candidate failed ({res1.status}) on kept inputs", {})
        elif running == pos:  # crashed on inputs the source runs on
            results[j] = EquivResult("NOT_EQ", "differential", None,
                                     f"differential: candidate failed ({res.status}) on kept inputs", {})
        else:  # LLVM crashed or hung on the candidate itself: alone, with the per-call limits
            try:
                results[j] = check_equivalence(src_ir, cands[j], function, timeout_s=timeout_s,
                                               n_random=n_random, seed=seed, arg_specs=arg_specs,
                                               run_limit_s=run_limit_s, unroll_bound=unroll_bound)
            except (IRError, ValueError, TypeError):
                results[j] = None
        start = j + 1
    return results


def _sandbox_batch(src_ir, cands, function, sig, timeout_s, do_formal, vectors, elem_bits, src_outs, run_limit_s,
                   wall, unroll_bound=0):
    from papers.cirbench.ir import _sandbox

    return _sandbox().call("papers.cirbench._worker:check_many",
                           [src_ir, cands, function, sig, int(timeout_s * 1000), do_formal, vectors, elem_bits,
                            src_outs, run_limit_s, None, unroll_bound], timeout_s=wall, memory_mb=1024,
                           max_output_bytes=1 << 22)
