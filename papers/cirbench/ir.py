"""IR utilities of the CIRBench harness: verifier layer, pass pipelines and JIT runs.

Every operation on IR text runs in a child of one :class:`shared.sandbox.Sandbox` zygote (llvmlite and z3
pre-imported, 1 GiB address space) through :mod:`papers.cirbench._worker`, because LLVM may abort or loop on
hostile input and JIT-ed code may crash.
"""
from __future__ import annotations

import atexit
import hashlib
import re
from dataclasses import dataclass

from shared.sandbox import Sandbox, isolation_summary

__all__ = ["IRError", "ExecutionError", "VerifyResult", "SINGLE_PASSES", "verify_ir", "apply_passes",
           "run_function", "normalise", "sandbox_call", "batch", "extract_ir", "text_hash",
           "sandbox_provenance"]

SINGLE_PASSES = ("sroa", "instcombine", "simplifycfg", "newgvn", "sccp", "dse", "reassociate", "jump-threading",
                 "loop-rotate", "loop-unroll", "tailcallelim", "adce", "dce", "memcpyopt", "loop-deletion", "sink")
LEVELS = ("O0", "O1", "O2", "O3")
MEMORY_MB = 1024
_SANDBOX: Sandbox | None = None


class IRError(ValueError):
    """The IR text does not parse or does not pass the LLVM verifier (message: LLVM's text)."""


class ExecutionError(RuntimeError):
    """A JIT-ed function crashed or ran past its time limit."""


@dataclass
class VerifyResult:
    """Verifier layer: ``ok``; ``stage`` ("parse", "verify" or None); ``message`` (LLVM's text)."""

    ok: bool
    stage: str | None
    message: str


def _sandbox() -> Sandbox:
    global _SANDBOX
    if _SANDBOX is None:
        _SANDBOX = Sandbox(["llvmlite.binding", "z3", "papers.cirbench._worker"])
        atexit.register(_SANDBOX.close)
    return _SANDBOX


def sandbox_provenance() -> dict:
    """``{"confined_all": 1 or 0 (None before any call), "isolation": "bwrap", "unconfined" or both}`` of the
    sandboxed calls since the experiment began (:func:`shared.sandbox.isolation_summary`; the call count is
    left out because retries make it load-dependent)."""
    summary = isolation_summary()
    return {"confined_all": summary["confined_all"], "isolation": summary["isolation"]}


PERF_TOOLS = ("gcc", "valgrind", "callgrind_annotate")  # the only programs the performance sandbox may start
PERF_MEMORY_MB = 8192  # valgrind reserves a large address space for its own tools
_PERF_SANDBOX = None


def _perf_sandbox() -> Sandbox:
    global _PERF_SANDBOX
    if _PERF_SANDBOX is None:
        _PERF_SANDBOX = Sandbox(["papers.cirbench._worker"], allow_spawn=PERF_TOOLS)
        atexit.register(_PERF_SANDBOX.close)
    return _PERF_SANDBOX


def perf_sandbox_call(fn: str, *args, timeout_s: float = 300.0):
    """Call ``papers.cirbench._worker.<fn>`` in the performance sandbox, the one that may start ``PERF_TOOLS``
    (linking and profiling candidate objects: model-written code runs only there); returns the SandboxResult."""
    return _perf_sandbox().call(f"papers.cirbench._worker:{fn}", list(args), timeout_s=timeout_s,
                                memory_mb=PERF_MEMORY_MB)


def sandbox_call(fn: str, *args, timeout_s: float = 30.0):
    """Call ``papers.cirbench._worker.<fn>`` in a sandbox child; returns the SandboxResult."""
    return _sandbox().call(f"papers.cirbench._worker:{fn}", list(args), timeout_s=timeout_s, memory_mb=MEMORY_MB)


def batch(calls: list, timeout_s: float = 300.0) -> list:
    """Several worker calls ``[(name, args), ...]`` in one sandbox child (the project's own IR only)."""
    if not calls:
        return []
    res = sandbox_call("batch", [[n, list(a)] for n, a in calls], timeout_s=timeout_s)
    if not res.ok:
        raise IRError(f"batch of {len(calls)} IR operations failed ({res.status}): {res.error}")
    return res.value


def _check_text(ir_text, name="ir_text") -> None:
    if not isinstance(ir_text, str):
        raise TypeError(f"{name} must be str, got {type(ir_text).__name__}")


def text_hash(text: str) -> str:
    """SHA-256 of a text (cache key of verdicts)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def verify_ir(ir_text: str) -> VerifyResult:
    """Parse and verify LLVM IR (LLVM 22 through llvmlite). Never raises for bad IR (empty text fails to verify
    as a module without functions is valid: an empty text is reported ``ok=False, stage="parse"``).

    Raises TypeError for non-str input.
    """
    _check_text(ir_text)
    if not ir_text.strip():
        return VerifyResult(False, "parse", "empty IR text")
    res = sandbox_call("verify", ir_text, None)
    if not res.ok:
        return VerifyResult(False, "parse", f"LLVM aborted ({res.status}): {res.error or res.stderr[-300:]}")
    v = res.value
    return VerifyResult(v["ok"], v["stage"], v["message"])


def signature(ir_text: str, function: str) -> dict | None:
    """{'ret', 'params', 'names'} of ``function`` (None when it is not defined); IRError for invalid IR."""
    _check_text(ir_text)
    res = sandbox_call("verify", ir_text, function)
    if not res.ok or not res.value["ok"]:
        msg = res.value["message"] if res.ok else f"LLVM aborted ({res.status})"
        raise IRError(f"invalid IR: {msg}")
    return res.value["signature"]


def apply_passes(ir_text: str, passes) -> str:
    """Apply "O0".."O3" (llvmlite ``create_pass_builder(tm, create_pipeline_tuning_options(speed_level=k))``)
    or a list of single passes (names of :data:`SINGLE_PASSES`) in order; returns the printed module.

    Example: ``["instcombine"]`` turns ``add i32 %x, %x`` into ``shl i32 %x, 1``.
    Raises ValueError for an unknown pass, IRError (LLVM's message) for invalid input.
    """
    _check_text(ir_text)
    if isinstance(passes, str):
        if passes not in LEVELS:
            raise ValueError(f"passes: unknown level {passes!r}; use one of {LEVELS} or a list of passes")
        pipeline = passes
    else:
        pipeline = list(passes)
        for p in pipeline:
            if p not in SINGLE_PASSES:
                raise ValueError(f"passes: unknown pass {p!r}; known: {', '.join(SINGLE_PASSES)}")
    if not ir_text.strip():
        raise IRError("invalid IR: empty text")
    res = sandbox_call("passes", ir_text, pipeline, timeout_s=60.0)
    if not res.ok:
        raise IRError(f"LLVM failed on the input ({res.status}): {res.error or res.stderr[-300:]}")
    if not res.value["ok"]:
        raise IRError(f"invalid IR ({res.value['stage']}): {res.value['message']}")
    return res.value["ir"]


def normalise(ir_text: str, function: str) -> str | None:
    """EM normal form of one function (instnamer names, function text only, attribute groups and metadata
    attachments dropped, whitespace collapsed); None when the text is invalid or lacks the function."""
    res = sandbox_call("normalise", ir_text, function)
    return res.value["text"] if res.ok else None


def run_function(ir_text: str, name: str, args: list[int], *, timeout_s: float = 5.0) -> int:
    """JIT ``name`` (MCJIT, in the sandbox) and call it on integer ``args``; the result as a signed int.

    Raises IRError (invalid IR), ValueError (missing function, wrong arity, non-integer signature),
    ExecutionError (crash or timeout). Example: an iterative factorial of an i64 argument gives 120 for 5.
    """
    sig = signature(ir_text, name)
    if sig is None:
        raise ValueError(f"name: function {name!r} is not defined in the IR")
    if not re.fullmatch(r"i\d+", sig["ret"]) or not all(re.fullmatch(r"i\d+", t) for t in sig["params"]):
        raise ValueError(f"name: {name!r} has a non-integer signature {sig['ret']}({', '.join(sig['params'])})")
    if len(args) != len(sig["params"]) or not all(isinstance(a, int) for a in args):
        raise ValueError(f"args: {name!r} takes {len(sig['params'])} integer arguments, got {args!r}")
    res = sandbox_call("run_inputs", ir_text, name, [list(args)], [0] * len(args), timeout_s=timeout_s)
    if not res.ok or "outputs" not in (res.value or {}):
        raise ExecutionError(f"{name}: {res.status} {res.error or ''}".strip())
    return res.value["outputs"][0][0]


_FENCE = re.compile(r"```llvm[^\n]*\n(.*?)```", re.S)


def extract_ir(reply: str) -> str | None:
    """The first fenced block tagged ``llvm``, else the whole reply if it starts with ``define``, ``declare``,
    ``;`` or ``target``; None otherwise (scored invalid, never raised)."""
    if not isinstance(reply, str):
        return None
    m = _FENCE.search(reply)
    if m:
        return m.group(1)
    s = reply.lstrip()
    if s.startswith(("define", "declare", ";", "target")):
        return s
    return None
