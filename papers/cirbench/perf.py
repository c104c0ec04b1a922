"""Performance layer: instruction counts (callgrind ``Ir``) instead of wall clock [reconstructed].

All functions of one evaluation are compiled by the same llvmlite target machine (cpu "x86-64", no extra
features, codegen level 2, PIC; in the sandbox), renamed ``<instance>_<rewriter>_<mode>`` so that symbols are
unique, linked with a generated C driver (gcc -O1) that calls every function on a fixed seeded workload
(identical for baseline and candidates of one instance), and run under ``valgrind --tool=callgrind``.
Inclusive counts per function come from ``callgrind_annotate --inclusive=yes``.

    speedup = Ir(baseline: source after -O3) / Ir(candidate)
"""
from __future__ import annotations

import re
import shutil

import numpy as np

from papers.cirbench import ir as IR

__all__ = ["rename", "workload", "driver_source", "callgrind_counts", "PerfError", "tools_available"]

_CTYPE = {"i32": "int", "i64": "long long", "u8": "unsigned char", "len": "int", "ptr:i32": "int *",
          "ptr:i8": "unsigned char *", "void": "void"}


class PerfError(RuntimeError):
    """The driver did not build or the profiler failed."""


def tools_available() -> bool:
    return all(shutil.which(t) for t in ("gcc", "valgrind", "callgrind_annotate"))


def rename(ir_text: str, function: str, symbol: str) -> str:
    """Rename the definition (and any call) of ``function`` to ``symbol``."""
    return re.sub(rf"@{re.escape(function)}\(", f"@{symbol}(", ir_text)


def _ctype(spec: str) -> str:
    base = spec if spec.startswith("ptr") else spec.split(":")[0]
    return _CTYPE[base]


def workload(arg_specs: list[str], seed: int, n_vectors: int = 8) -> list[list]:
    """Seeded argument vectors of one instance: ranges from the sidecar, length arguments at their maximum."""
    rng = np.random.default_rng(seed)
    vecs = []
    for _ in range(n_vectors):
        vec = []
        for s in arg_specs:
            parts = s.split(":")
            if parts[0] == "ptr":
                lo, hi = (0, 255) if parts[1] == "i8" else (-1000, 1000)
                vec.append([int(v) for v in rng.integers(lo, hi + 1, 64)])
            elif parts[0] == "len":
                vec.append(int(parts[1]))
            elif len(parts) == 3:
                vec.append(int(rng.integers(int(parts[1]), int(parts[2]), endpoint=True)))
            elif parts[0] == "u8":
                vec.append(int(rng.integers(0, 256)))
            else:
                bits = int(parts[0][1:])
                vec.append(int(rng.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1, endpoint=True)))
        vecs.append(vec)
    return vecs


def driver_source(entries: list[tuple[str, str, list[str], list[list]]]) -> str:
    """C driver: ``entries`` = (symbol, return spec, arg specs, workload vectors); one call per vector."""
    out = ["#include <string.h>", "volatile long long cirbench_sink;"]
    mains = []
    for sym, ret, specs, vecs in entries:
        out.append(f"extern {_CTYPE[ret]} {sym}({', '.join(_ctype(s) for s in specs) or 'void'});")
        body = []
        for v, vec in enumerate(vecs):
            args = []
            for a, (s, val) in enumerate(zip(specs, vec)):
                if s.startswith("ptr"):
                    ct = _ctype(s)[:-2]
                    name = f"{sym}_v{v}_a{a}"
                    out.append(f"static const {ct} {name}_init[64] = {{{', '.join(map(str, val))}}};")
                    body.append(f"  {ct} {name}[64]; memcpy({name}, {name}_init, sizeof {name});")
                    args.append(name)
                else:
                    args.append(f"({_ctype(s)}){val}" + ("LL" if s.startswith("i64") else ""))
            call = f"{sym}({', '.join(args)})"
            body.append(f"  cirbench_sink += {call};" if ret != "void" else f"  {call};")
        out.append(f"static void run_{sym}(void) {{\n" + "\n".join(body) + "\n}")
        mains.append(f"  run_{sym}();")
    out.append("int main(void) {\n" + "\n".join(mains) + "\n  return 0;\n}")
    return "\n".join(out) + "\n"


def _parse_annotate(text: str, symbols: set[str]) -> dict[str, int]:
    counts = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\S*?:?([\w.$]+)(?: \[.*\])?\s*$", line)
        if m and m.group(2) in symbols:
            counts[m.group(2)] = int(m.group(1).replace(",", ""))
    return counts


def callgrind_counts(objects: dict[str, str], entries, *, runs: int = 1, timeout_s: float = 300.0) -> list[dict]:
    """Emit one object per item of ``objects`` (symbol -> IR text, already renamed), link with the driver,
    run callgrind ``runs`` times; returns one {symbol: inclusive Ir} per run (symbols that fail to emit are
    absent). Emission runs in the IR sandbox, linking and profiling in the performance sandbox
    (:func:`papers.cirbench.ir.perf_sandbox_call`): the candidate code never runs outside one."""
    if not tools_available():
        raise PerfError("gcc, valgrind and callgrind_annotate are needed for the performance layer")
    items = sorted(objects.items())
    res = IR.sandbox_call("emit_many", [t for _, t in items], timeout_s=60 + 2 * len(items))
    if res.ok:
        hexes = res.value
    else:  # one module crashed LLVM: emit them one by one
        hexes = []
        for _, text in items:
            r = IR.sandbox_call("emit_object", text, timeout_s=60)
            hexes.append(r.value.get("object") if r.ok and r.value else None)
    emitted = [(sym, hx) for (sym, _), hx in zip(items, hexes) if hx is not None]
    ok = {sym for sym, _ in emitted}
    kept = [e for e in entries if e[0] in ok]
    res = IR.perf_sandbox_call("callgrind_annotations", [hx for _, hx in emitted], driver_source(kept), int(runs),
                               timeout_s=60.0 + timeout_s * runs)
    if not res.ok:
        raise PerfError(f"the performance sandbox failed ({res.status}): {(res.error or res.stderr)[-800:]}")
    if "error" in res.value:
        raise PerfError(res.value["error"])
    return [_parse_annotate(text, {e[0] for e in kept}) for text in res.value["annotations"]]
