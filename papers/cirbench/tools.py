"""Optional LLVM command-line tools: the ``opt print<loops>`` cross-check of the Analysis oracle and
``llvm-mca`` cycle estimates (a secondary performance column).

Both tools are optional: :func:`find_tool` looks for the configured binaries, checks their LLVM version, and
returns why none fits; the experiments then write ``null`` metrics with that reason.

Version rule (the spec's pitfall: never send IR printed by LLVM 22 to an older LLVM tool):

* ``opt``: the cross-check never sends llvmlite's IR. It sends a *CFG skeleton*: one function per checked
  function, one block per block, the same edges (``br`` on an ``i1`` argument, ``switch`` for more than two
  successors), ``ret void`` in exit blocks, and nothing else. Natural loops (``LoopInfo``) depend only on the
  CFG, so the skeleton's loops are those of the original function, and the skeleton uses only syntax that
  every LLVM with the new pass manager's ``print<loops>`` (LLVM >= 13) parses.
* ``llvm-mca`` reads x86 assembly, which llvmlite's target machine prints; directives are stripped and only
  instructions and labels are kept, so any ``llvm-mca`` >= 13 reads it.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["ToolError", "find_tool", "llvm_version", "cfg_skeleton", "parse_print_loops", "opt_loops",
           "asm_function_body", "mca_source", "parse_mca", "mca_cycles", "MIN_MAJOR"]

MIN_MAJOR = 13          # new pass manager syntax `-passes='print<loops>'`; llvm-mca region markers
_VERSION = re.compile(r"(?:LLVM|clang) version (\d+)\.(\d+)(?:\.(\d+))?")


class ToolError(RuntimeError):
    """An external tool failed on input it should accept."""


def llvm_version(text: str) -> tuple[int, str] | None:
    """(major, "X.Y.Z") from the output of ``<tool> --version`` ("LLVM version" of opt/llvm-mca, "clang
    version" of clang); None when no version is named."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    m = _VERSION.search(text)
    if not m:
        return None
    return int(m.group(1)), ".".join(g for g in m.groups() if g is not None)


def find_tool(candidates, *, min_major: int = MIN_MAJOR) -> dict:
    """The first of ``candidates`` (binary names or paths) that exists and reports LLVM >= ``min_major``.

    Returns ``{"path", "name", "major", "version"}``, or ``{"path": None, "reason": ...}`` naming what was
    tried and why it was rejected."""
    if isinstance(candidates, str):
        candidates = [candidates]
    if not candidates or not all(isinstance(c, str) and c for c in candidates):
        raise ValueError(f"candidates must be a non-empty list of binary names, got {candidates!r}")
    reasons = []
    for name in candidates:
        path = shutil.which(name)
        if path is None:
            reasons.append(f"{name}: not installed")
            continue
        try:
            proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"{name}: --version failed ({exc})")
            continue
        ver = llvm_version(proc.stdout + proc.stderr)
        if ver is None:
            reasons.append(f"{name}: no LLVM version in --version output")
        elif ver[0] < min_major:
            reasons.append(f"{name}: LLVM {ver[1]} < {min_major}")
        else:
            return {"path": path, "name": name, "major": ver[0], "version": ver[1]}
    return {"path": None, "reason": "; ".join(reasons)}


# ------------------------------------------------------------------------------------ opt print<loops>
def cfg_skeleton(facts: dict, prefix: str) -> tuple[str, dict]:
    """A function ``@<prefix>`` with the CFG of ``facts`` (``blocks`` with the entry first, ``succ``).

    Block ``j`` is named ``<prefix>_b<j>``; returns (function text, skeleton name -> original name)."""
    if not re.fullmatch(r"[A-Za-z_][\w]*", prefix or ""):
        raise ValueError(f"prefix must be an identifier, got {prefix!r}")
    blocks = list(facts["blocks"])
    if not blocks:
        raise ValueError("facts: a function needs at least one block")
    idx = {b: j for j, b in enumerate(blocks)}
    if len(idx) != len(blocks):
        raise ValueError("facts: block names must be unique (name the values first)")
    lines = [f"define void @{prefix}(i1 %c, i32 %s) {{"]
    for j, b in enumerate(blocks):
        succ = [f"{prefix}_b{idx[s]}" for s in facts["succ"].get(b, [])]
        lines.append(f"{prefix}_b{j}:")
        if not succ:
            lines.append("  ret void")
        elif len(succ) == 1:
            lines.append(f"  br label %{succ[0]}")
        elif len(succ) == 2:
            lines.append(f"  br i1 %c, label %{succ[0]}, label %{succ[1]}")
        else:
            cases = " ".join(f"i32 {k}, label %{s}" for k, s in enumerate(succ[1:], start=1))
            lines.append(f"  switch i32 %s, label %{succ[0]} [ {cases} ]")
    lines.append("}")
    return "\n".join(lines) + "\n", {f"{prefix}_b{j}": b for j, b in enumerate(blocks)}


_LOOP_LINE = re.compile(r"^(\s*)Loop at depth (\d+) containing: (.*)$")
_BLOCK_TOKEN = re.compile(r'%("(?:[^"\\]|\\.)*"|[\w.$\-]+)((?:<[\w ]+>)*)')
_FUNC_LINE = re.compile(r"^Loop info for function '(.*)':\s*$")


def parse_print_loops(text: str) -> list[dict]:
    """Loops from ``opt -passes='print<loops>'`` output, in printed order.

    Each line ``Loop at depth D containing: %h<header><exiting>,%b,%l<latch>`` gives one loop:
    ``{"function", "depth", "header", "latches" (sorted), "blocks" (printed order)}``; ``function`` comes from
    the ``Loop info for function 'f':`` line that newer LLVMs print first (None when absent, as in LLVM 14).
    Other lines are ignored. Raises ``ValueError`` for a loop line without exactly one header block."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    out, function = [], None
    for line in text.splitlines():
        fm = _FUNC_LINE.match(line.strip())
        if fm:
            function = fm.group(1)
            continue
        m = _LOOP_LINE.match(line)
        if not m:
            continue
        blocks, header, latches = [], [], []
        for name, tags in _BLOCK_TOKEN.findall(m.group(3)):
            name = name[1:-1] if name.startswith('"') else name
            blocks.append(name)
            if "<header>" in tags:
                header.append(name)
            if "<latch>" in tags:
                latches.append(name)
        if len(header) != 1:
            raise ValueError(f"text: loop line without exactly one <header> block: {line.strip()!r}")
        out.append({"function": function, "depth": int(m.group(2)), "header": header[0],
                    "latches": sorted(latches), "blocks": blocks})
    return out


def opt_loops(opt_path: str, skeletons: dict[str, tuple[str, dict]], *, timeout_s: float = 120.0) -> dict:
    """Run ``opt -passes='print<loops>'`` once on a module of CFG skeletons (prefix -> (text, name map)).

    Returns prefix -> sorted list of ``{"header", "latches", "depth"}`` in the original block names. Loops are
    assigned to functions by their block-name prefix (LLVM 14 prints no function names)."""
    module = "".join(text for text, _ in skeletons.values())
    with tempfile.TemporaryDirectory(prefix="cirbench-opt-") as tmp:
        path = Path(tmp) / "skeleton.ll"
        path.write_text(module)
        proc = subprocess.run([opt_path, "-passes=print<loops>", "-disable-output", str(path)],
                              capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise ToolError(f"{opt_path} failed on the CFG skeletons: {proc.stderr.strip()[-500:]}")
    result = {p: [] for p in skeletons}
    for loop in parse_print_loops(proc.stdout + "\n" + proc.stderr):
        prefix = loop["header"].rsplit("_b", 1)[0]
        if prefix not in skeletons:
            raise ToolError(f"opt printed a loop of unknown function {prefix!r}")
        names = skeletons[prefix][1]
        result[prefix].append({"header": names[loop["header"]],
                               "latches": sorted(names[b] for b in loop["latches"]), "depth": loop["depth"]})
    return {p: sorted(v, key=lambda x: x["header"]) for p, v in result.items()}


# -------------------------------------------------------------------------------------------- llvm-mca
def asm_function_body(asm: str, symbol: str) -> list[str]:
    """Instructions and local labels of ``symbol`` in an assembly listing (AT&T syntax, as llvmlite prints).

    Lines from ``symbol:`` up to its ``.Lfunc_end`` label; directives (``.cfi_*``, ``.p2align``, ...) and
    comments are dropped; local labels are kept and renamed ``.L<symbol>_<label>`` so that the bodies of
    several modules can share one file. Raises ``ValueError`` when ``symbol`` is not defined."""
    lines = asm.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.split("#", 1)[0].strip() == f"{symbol}:"), None)
    if start is None:
        raise ValueError(f"symbol: {symbol!r} is not defined in the assembly")
    body = []
    for ln in lines[start + 1:]:
        s = ln.split("#", 1)[0].strip()
        if re.match(r"^\.Lfunc_end\d+:$", s):
            break
        if not s:
            continue
        if s.endswith(":"):
            if s.startswith(".L"):
                body.append(f".L{symbol}_{s[2:]}")
            continue
        if s.startswith("."):
            continue
        body.append("\t" + re.sub(r"\.L(\w+)", lambda m: f".L{symbol}_{m.group(1)}", s))
    return body


def mca_source(bodies: dict[str, list[str]]) -> str:
    """One assembly file with an ``llvm-mca`` code region per symbol (sorted by symbol)."""
    out = []
    for sym in sorted(bodies):
        out += [f"# LLVM-MCA-BEGIN {sym}", *bodies[sym], f"# LLVM-MCA-END {sym}"]
    return "\n".join(out) + "\n"


_REGION = re.compile(r"^\[(\d+)\] Code Region(?: - (\S+))?\s*$")
_CYCLES = re.compile(r"^Total Cycles:\s+(\d+)\s*$")


def parse_mca(text: str) -> dict[str, int]:
    """Region name -> ``Total Cycles`` from ``llvm-mca`` output (regions named by ``LLVM-MCA-BEGIN name``;
    an unnamed single-region report is keyed ``""``)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    out, region = {}, ""
    for line in text.splitlines():
        m = _REGION.match(line.strip())
        if m:
            region = m.group(2) or ""
            continue
        c = _CYCLES.match(line.strip())
        if c:
            if region in out:
                raise ValueError(f"text: two 'Total Cycles' lines for region {region!r}")
            out[region] = int(c.group(1))
    return out


def mca_cycles(mca_path: str, bodies: dict[str, list[str]], *, iterations: int = 100,
               timeout_s: float = 300.0) -> dict[str, int]:
    """Static cycle estimates (``llvm-mca -mcpu=x86-64``, ``iterations`` iterations of each region's
    straight-line instruction sequence; branches are not followed) for every symbol, in one call."""
    if not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    bodies = {s: b for s, b in bodies.items() if b}
    if not bodies:
        return {}
    with tempfile.TemporaryDirectory(prefix="cirbench-mca-") as tmp:
        path = Path(tmp) / "regions.s"
        path.write_text(mca_source(bodies))
        proc = subprocess.run([mca_path, "-mtriple=x86_64-unknown-linux-gnu", "-mcpu=x86-64",
                               f"-iterations={iterations}", str(path)],
                              capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise ToolError(f"{mca_path} failed: {proc.stderr.strip()[-500:]}")
    return parse_mca(proc.stdout)
