"""Layered equivalence (refinement) checking of a candidate against a source function.

Formal layer (z3, QF_BV; see :func:`papers.cirbench._worker.formal`): for arguments x assumed well defined,
the candidate refines the source iff for all x

    UB_src(x) or ( not UB_tgt(x) and ( poison_src(x) or ( not poison_tgt(x) and r_src(x) = r_tgt(x) ) ) ).

The negation is given to z3: unsat -> EQ, sat -> NOT_EQ with the model as counterexample, timeout or a
function outside the fragment -> UNKNOWN. Only an UNKNOWN falls through to the differential layer: both
functions are JIT-ed (llvmlite MCJIT, in the sandbox) and run on a seeded input set (boundary values per
integer argument, cartesian product capped at 256, plus ``n_random`` random vectors); inputs on which the
source fails are dropped, a candidate failure or mismatch on a kept input is NOT_EQ, fewer than 8 kept
inputs is UNKNOWN. (Replaces Alive2, which is not installable here; Lopes et al., PLDI 2021.)
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from papers.cirbench.ir import IRError, sandbox_call, text_hash

__all__ = ["EquivResult", "check_equivalence", "check_batch", "make_inputs", "LAYERS", "BUF_LEN"]

LAYERS = ("formal", "differential")
BUF_LEN = 64
MIN_KEPT = 8
CALL_TIMEOUT_S = 0.5
_SOURCE_RUNS: dict = {}


@dataclass
class EquivResult:
    """``verdict`` ("EQ", "NOT_EQ", "UNKNOWN"), ``layer`` ("formal", "differential" or None),
    ``counterexample`` (dict or None), ``detail``; ``times`` (seconds per layer)."""

    verdict: str
    layer: str | None
    counterexample: dict | None
    detail: str
    times: dict = field(default_factory=dict)


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


def _run_many(ir, function, vectors, elem_bits, timeout_s):
    res = sandbox_call("run_inputs", ir, function, vectors, elem_bits, timeout_s=timeout_s)
    if res.ok and "outputs" in (res.value or {}):
        return res.value["outputs"], res.wall_s, None
    return None, res.wall_s, f"{res.status}: {res.error or (res.value or {}).get('error', '')}"[:300]


def _source_outputs(src_ir, function, vectors, elem_bits, key):
    if key in _SOURCE_RUNS:
        return _SOURCE_RUNS[key]
    outs, wall, err = _run_many(src_ir, function, vectors, elem_bits, timeout_s=max(5.0, 0.05 * len(vectors)))
    if outs is not None:
        kept = list(range(len(vectors)))
    else:  # one call per input, each with its own limit; inputs on which the source fails are dropped
        kept, outs, wall = [], [], 0.0
        for i, vec in enumerate(vectors):
            o, w, e = _run_many(src_ir, function, [vec], elem_bits, timeout_s=CALL_TIMEOUT_S)
            wall += w
            if o is not None:
                kept.append(i)
                outs.append(o[0])
    _SOURCE_RUNS[key] = (kept, outs, wall)
    return _SOURCE_RUNS[key]


def differential(src_ir: str, tgt_ir: str, function: str, signature: dict, *, arg_specs=None,
                 n_random: int = 64, seed: int = 0) -> EquivResult:
    """Differential layer only (JIT both, compare return value and every buffer bitwise)."""
    t0 = time.perf_counter()
    vectors, elem_bits = make_inputs(signature["params"], arg_specs, n_random=n_random, seed=seed)
    key = (text_hash(src_ir), function, n_random, seed, str(arg_specs))
    kept, src_outs, src_wall = _source_outputs(src_ir, function, vectors, elem_bits, key)
    if len(kept) < MIN_KEPT:
        return EquivResult("UNKNOWN", None, None, f"differential: only {len(kept)} inputs kept",
                           {"differential": time.perf_counter() - t0})
    kept_vectors = [vectors[i] for i in kept]
    outs, _, err = _run_many(tgt_ir, function, kept_vectors, elem_bits,
                             timeout_s=max(2.0, 20 * src_wall + 1.0))
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
                      arg_specs: list[str] | None = None) -> EquivResult:
    """Does the candidate ``tgt_ir`` refine ``src_ir`` on ``function``? Layered: formal first; only a formal
    UNKNOWN falls back to the differential layer; a formal NOT_EQ is final.

    Examples: ``udiv i32 %x, 4`` vs ``lshr i32 %x, 2`` -> EQ (formal); ``icmp slt`` vs ``icmp ult`` ->
    NOT_EQ with a counterexample. ``arg_specs`` (optional) are the kernel sidecar's argument specs.
    Raises ValueError for an unknown layer, a missing function, different signatures or n_random < 0;
    IRError when either side does not parse or verify.
    """
    layers = tuple(layers)
    for layer in layers:
        if layer not in LAYERS:
            raise ValueError(f"layers: unknown layer {layer!r}; known: {LAYERS}")
    if isinstance(n_random, bool) or not isinstance(n_random, int) or n_random < 0:
        raise ValueError(f"n_random must be a non-negative integer, got {n_random!r}")
    for name, text in (("src_ir", src_ir), ("tgt_ir", tgt_ir)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be str, got {type(text).__name__}")
        if not text.strip():
            raise IRError(f"{name}: empty IR text")
    t0 = time.perf_counter()
    res = sandbox_call("check_pair", src_ir, tgt_ir, function, int(timeout_s * 1000), "formal" in layers,
                       timeout_s=timeout_s + 30)
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
    times = {}
    if "formal" in out:
        f = out["formal"]
        times["formal"] = time.perf_counter() - t0
        if f["verdict"] != "UNKNOWN":
            return EquivResult(f["verdict"], "formal", f["counterexample"], f["detail"], times)
        detail = f["detail"]
    else:
        detail = "formal layer not run"
    if "differential" in layers:
        r = differential(src_ir, tgt_ir, function, ss, arg_specs=arg_specs, n_random=n_random, seed=seed)
        r.times = {**times, **r.times}
        r.detail = f"{detail}; {r.detail}"
        return r
    return EquivResult("UNKNOWN", None, None, detail, times)


def check_batch(src_ir: str, cands: list[str], function: str, *, arg_specs=None, timeout_s: float = 10.0,
                n_random: int = 64, seed: int = 0, src_in_fragment: bool = True) -> list:
    """Layered checks of many candidates against one (valid) source, mostly in one sandbox child.

    Returns, per candidate, an :class:`EquivResult` or None (invalid: does not verify, lacks the function or
    has another signature). Same verdicts as :func:`check_equivalence`; a candidate that crashes or hangs the
    shared child is re-checked alone with the per-call limits."""
    import json

    sig_res = sandbox_call("verify", src_ir, function)
    if not sig_res.ok or not sig_res.value["ok"] or sig_res.value["signature"] is None:
        raise IRError(f"source of {function!r} is invalid or lacks the function")
    sig = sig_res.value["signature"]
    vectors, elem_bits = make_inputs(sig["params"], arg_specs, n_random=n_random, seed=seed)
    key = (text_hash(src_ir), function, n_random, seed, str(arg_specs))
    kept, src_outs, src_wall = _source_outputs(src_ir, function, vectors, elem_bits, key)
    kept_vectors = [vectors[i] for i in kept] if len(kept) >= MIN_KEPT else []
    results: list = [None] * len(cands)
    done = [False] * len(cands)
    start = 0
    while start < len(cands):
        todo = list(range(start, len(cands)))
        # the same limit as a lone differential check (differential()): a floor well above a JIT compile on a
        # busy machine, so that only a real hang, not load, ends a candidate as NOT_EQ
        run_limit = max(5.0, 20 * src_wall + 1.0)
        res = _sandbox_batch(src_ir, [cands[j] for j in todo], function, sig, timeout_s, src_in_fragment,
                             kept_vectors, elem_bits, src_outs if kept_vectors else [], run_limit,
                             wall=10.0 + len(todo) * (timeout_s + 6 + run_limit))
        last, running = -1, None
        for line in (res.stdout or "").splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "running" in msg:
                running = msg["j"]
            if "result" in msg:
                j = todo[msg["j"]]
                r = msg["result"]
                results[j] = None if not r["valid"] else EquivResult(r["verdict"], r["layer"], r["counterexample"],
                                                                     r["detail"], r["times"])
                if r["valid"] and r["verdict"] == "UNKNOWN" and not kept_vectors:
                    results[j].detail += f"; differential: only {len(kept)} inputs kept"
                done[j] = True
                last = msg["j"]
        if all(done[j] for j in todo):
            break
        j = todo[last + 1]
        if running == last + 1:  # ran past its limit (or crashed) on kept inputs: NOT_EQ
            results[j] = EquivResult("NOT_EQ", "differential", None,
                                     f"differential: candidate failed ({res.status}) on kept inputs", {})
            done[j] = True
            start = j + 1
            continue
        try:  # LLVM crashed or hung on the candidate itself: alone, with the per-call limits
            results[j] = check_equivalence(src_ir, cands[j], function, timeout_s=timeout_s, n_random=n_random,
                                           seed=seed, arg_specs=arg_specs)
        except (IRError, ValueError, TypeError):
            results[j] = None
        done[j] = True
        start = j + 1
    return results


def _sandbox_batch(src_ir, cands, function, sig, timeout_s, do_formal, vectors, elem_bits, src_outs, run_limit,
                   wall):
    from papers.cirbench.ir import _sandbox

    return _sandbox().call("papers.cirbench._worker:check_many",
                           [src_ir, cands, function, sig, int(timeout_s * 1000), do_formal, vectors, elem_bits,
                            src_outs, run_limit], timeout_s=wall, memory_mb=1024, max_output_bytes=1 << 22)
