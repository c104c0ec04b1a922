"""Kernel corpus: C kernels written for this reproduction (``kernels/*.c``) compiled to LLVM IR.

C to IR (zig frontend, clang 22.1 = llvmlite's LLVM major)::

    python -m ziglang cc -S -emit-llvm -O0 -Xclang -disable-O0-optnone -fno-sanitize=all -g0
        -fno-stack-protector -fno-unwind-tables -fno-asynchronous-unwind-tables -target x86_64-linux-gnu k.c

then the module triple is set to llvmlite's default triple and each kernel gets a module of its own. The
sidecar ``kernels/kernels.json`` gives every kernel's argument roles and value ranges; a sidecar that does
not match the C signature, or a C file that does not compile, stops the build with a message naming it.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from papers.cirbench import ir as IR

__all__ = ["KERNEL_DIR", "Kernel", "CorpusError", "load_sidecar", "compile_c", "build_corpus", "split_module"]

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
TRIPLE = "x86_64-unknown-linux-gnu"
ZIG_FLAGS = ["-S", "-emit-llvm", "-O0", "-Xclang", "-disable-O0-optnone", "-fno-sanitize=all", "-g0",
             "-fno-stack-protector", "-fno-unwind-tables", "-fno-asynchronous-unwind-tables",
             "-target", "x86_64-linux-gnu"]


class CorpusError(RuntimeError):
    """A kernel does not compile, or its sidecar does not match its C signature."""


@dataclass
class Kernel:
    """One kernel: name, class (scalar | loop | nested), sidecar arg specs, and its IR at -O0/-O1/-O3."""

    name: str
    kclass: str
    ret: str
    arg_specs: list
    arg_names: list
    o0: str
    o1: str = ""
    o3: str = ""


def load_sidecar(path: Path | None = None) -> dict:
    """The sidecar (name -> entry), without keys starting with '_'."""
    data = json.loads(Path(path or KERNEL_DIR / "kernels.json").read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def compile_c(c_file: Path, *, frontend: str = "zig", opt: str = "-O0", clang: str = "clang-19") -> str:
    """C file -> IR text (module triple normalised). Raises CorpusError naming the file on failure.
    ``clang``: the binary used by the ``clang19`` frontend."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "k.ll"
        if frontend == "zig":
            cmd = [sys.executable, "-m", "ziglang", "cc", *ZIG_FLAGS, str(c_file), "-o", str(out)]
        elif frontend == "clang19":
            cmd = [clang, *[f for f in ZIG_FLAGS if f != "x86_64-linux-gnu" and f != "-target"],
                   str(c_file), "-o", str(out)]
        else:
            raise ValueError(f"frontend must be 'zig' or 'clang19', got {frontend!r}")
        if opt != "-O0":
            cmd[cmd.index("-O0")] = opt
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            raise CorpusError(f"{c_file.name} failed to compile: {proc.stderr.strip()[-500:]}")
        text = out.read_text()
    # the compiler writes the path it was given (a temporary directory for generated sources, the checkout's
    # location otherwise) into the module: keep only the file name, so that the IR (and every prompt and
    # verdict built from it) is the same in every run and on every machine
    text = re.sub(r"^; ModuleID = '.*'$", f"; ModuleID = '{c_file.name}'", text, flags=re.M)
    text = re.sub(r'^source_filename = ".*"$', f'source_filename = "{c_file.name}"', text, flags=re.M)
    return re.sub(r'^target triple = ".*"$', f'target triple = "{TRIPLE}"', text, flags=re.M)


def split_module(module_text: str) -> dict[str, str]:
    """One module per defined function: every top-level line that is not a function body, plus that body."""
    lines = module_text.splitlines()
    common, bodies, cur, name = [], {}, None, None
    for line in lines:
        if line.startswith("define"):
            name = re.search(r"@([\w.$]+)\(", line).group(1)
            cur = [line]
            continue
        if cur is not None:
            cur.append(line)
            if line == "}":
                bodies[name] = "\n".join(cur)
                cur = None
            continue
        if line.startswith("; Function Attrs"):
            continue
        common.append(line)
    head = "\n".join(common)
    return {n: head + "\n" + body + "\n" for n, body in bodies.items()}


_KIND = {"i32": "i32", "i64": "i64", "u8": "i8", "len": "i32", "ptr": "ptr"}


def _check_sidecar(name: str, entry: dict, sig: dict) -> None:
    expected = [_KIND[s.split(":")[0]] if s.split(":")[0] in _KIND else s.split(":")[0] for _, s in entry["args"]]
    if sig["params"] != expected or sig["ret"] != entry["ret"]:
        raise CorpusError(f"kernel {name!r}: sidecar says {entry['ret']}({', '.join(expected)}) but the C "
                          f"signature compiles to {sig['ret']}({', '.join(sig['params'])})")


def _compile_file(f: str, extra_sources: dict, *, frontend: str, clang: str) -> str:
    if f not in extra_sources:
        return compile_c(KERNEL_DIR / f, frontend=frontend, clang=clang)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f
        path.write_text(extra_sources[f])
        return compile_c(path, frontend=frontend, clang=clang)


def build_corpus(names: list[str] | None = None, *, frontend: str = "zig", levels=("O1", "O3"),
                 sidecar: dict | None = None, clang: str = "clang-19",
                 extra_sources: dict[str, str] | None = None) -> dict[str, Kernel]:
    """Compile the kernels (all, or ``names``) and derive their -O1/-O3 IR; sorted by name.

    ``extra_sources``: C text by file name for files that are not in ``kernels/`` (the generated kernels of
    :mod:`papers.cirbench.generator`); their kernels must be in ``sidecar``.
    """
    sidecar = sidecar or load_sidecar()
    extra_sources = extra_sources or {}
    if names is not None:
        missing = [n for n in names if n not in sidecar]
        if missing:
            raise CorpusError(f"kernels {missing} are not in the sidecar")
    wanted = sorted(names or sidecar)
    files = sorted({sidecar[n]["file"] for n in wanted})
    modules = {}
    for f in files:
        modules.update(split_module(_compile_file(f, extra_sources, frontend=frontend, clang=clang)))
    for n in wanted:
        if n not in modules:
            raise CorpusError(f"kernel {n!r}: no such function in {sidecar[n]['file']}")
    calls = []
    for n in wanted:
        calls += [("verify", (modules[n], n))] + [("passes", (modules[n], lv)) for lv in levels]
    out = IR.batch(calls)
    corpus, step = {}, 1 + len(levels)
    for j, n in enumerate(wanted):
        v, passed = out[step * j], out[step * j + 1: step * (j + 1)]
        if not v["ok"] or v["signature"] is None:
            raise CorpusError(f"kernel {n!r}: the compiled IR does not verify: {v['message']}")
        entry = sidecar[n]
        _check_sidecar(n, entry, v["signature"])
        k = Kernel(n, entry["class"], entry["ret"], [s for _, s in entry["args"]], [a for a, _ in entry["args"]],
                   modules[n])
        for lv, r in zip(levels, passed):
            setattr(k, lv.lower(), r["ir"])
        corpus[n] = k
    return corpus
