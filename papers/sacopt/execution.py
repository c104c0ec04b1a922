"""Execute model-written programs in ``shared.sandbox`` (never in the workflow process).

Program contract: a complete Python script that reads ``data.json`` from its working directory, imports only
``ALLOWED_IMPORTS`` and prints one final line ``OBJECTIVE: <float>``, ``STATUS: infeasible`` or
``STATUS: unbounded``; any other ending is an execution error. The sandbox (``shared.sandbox``) runs each
program under bubblewrap: read-only filesystem but a fresh scratch directory, its own PID and network
namespaces, a cleared environment, CPU/address-space/process/file-size limits, with pulp's bundled CBC as the
only allowed spawn. ``shared.sandbox.isolation_summary`` tells an experiment whether every program of the run was
confined (it is not under the explicit opt-out ``REPRO_SANDBOX_UNSAFE_NO_ISOLATION=1``).
"""
from __future__ import annotations

import atexit
import json
import math
from dataclasses import dataclass

from papers.sacopt.scoring import parse_final_line

__all__ = ["ExecutionResult", "run_model_program", "run_in_sandbox", "ALLOWED_IMPORTS", "PRELOAD", "STATUSES",
           "sandbox_pid", "close_sandbox"]

ALLOWED_IMPORTS = ("pulp", "gurobipy", "highspy", "scipy", "numpy", "math", "json", "itertools", "collections")
PRELOAD = ("json", "math", "numpy", "pulp")
ALLOW_SPAWN = ("cbc",)
STATUSES = ("ok", "infeasible", "unbounded", "error", "timeout", "memory", "forbidden")
_SANDBOX = None


@dataclass
class ExecutionResult:
    """``status`` in STATUSES; ``objective`` (float when "ok"); captured ``stdout``/``stderr``; ``wall_s``."""

    status: str
    objective: float | None
    stdout: str
    stderr: str
    wall_s: float


def _sandbox():
    global _SANDBOX
    if _SANDBOX is None:
        from shared.sandbox import Sandbox

        _SANDBOX = Sandbox(PRELOAD, allow_spawn=ALLOW_SPAWN, allowed_imports=ALLOWED_IMPORTS)
    return _SANDBOX


def sandbox_pid() -> int:
    """Process id of the outermost process of the module's sandbox (``bwrap``), started if need be; the zygote
    is one of its descendants."""
    return _sandbox().pid


def run_in_sandbox(code: str, data: dict, *, timeout_s: float = 30.0, memory_mb: int = 2048):
    """The sandbox's own result of running ``code`` with ``data`` as ``data.json``, under the limits of
    :func:`run_model_program` (for timing: it carries ``cpu_s``, the CPU seconds of the program and of the
    children it waited for, its CBC)."""
    payload = json.dumps(data, sort_keys=True, allow_nan=False)
    return _sandbox().run_code(code, files={"data.json": payload}, timeout_s=float(timeout_s),
                               cpu_s=float(min(20.0, timeout_s)), memory_mb=memory_mb)


def close_sandbox() -> None:
    """Stop the module's zygote (it is restarted on the next call)."""
    global _SANDBOX
    if _SANDBOX is not None:
        _SANDBOX.close()
        _SANDBOX = None


atexit.register(close_sandbox)


def run_model_program(code: str, *, data: dict | None = None, timeout_s: float = 30.0,
                      memory_mb: int = 2048) -> ExecutionResult:
    """Run ``code`` in the sandbox with ``data`` as ``data.json``; CPU limit = min(20 s, timeout_s).

    Never raises for a failing program (its outcome is the status); raises ``ValueError`` for non-str
    ``code``, non-JSON ``data`` or bad limits.
    """
    if not isinstance(code, str):
        raise ValueError(f"code must be a string, got {type(code).__name__}")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not (
            math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a positive finite number, got {timeout_s!r}")
    if isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or memory_mb < 64:
        raise ValueError(f"memory_mb must be an integer >= 64, got {memory_mb!r}")
    if data is not None and not isinstance(data, dict):
        raise ValueError(f"data must be a dict or None, got {type(data).__name__}")
    try:
        payload = json.dumps(data if data is not None else {}, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"data must be JSON-serialisable without NaN/Inf: {exc}") from None
    res = _sandbox().run_code(code, files={"data.json": payload}, timeout_s=float(timeout_s),
                              cpu_s=float(min(20.0, timeout_s)), memory_mb=memory_mb)
    if res.status == "ok":
        status, objective = parse_final_line(res.stdout)
    elif res.status in ("timeout", "memory", "forbidden"):
        status, objective = res.status, None
    else:
        status, objective = "error", None
    stderr = res.stderr if res.error is None else (res.stderr + "\n" + str(res.error)).strip()
    return ExecutionResult(status, objective, res.stdout, stderr, float(res.wall_s))

