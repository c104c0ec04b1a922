"""A seeded generator of distinct loop kernels, so that a full-size track need not repeat the 40 hand-written ones.

The buffer kernels have the signature ``int32_t g(int32_t *a, int32_t n)`` (sidecar ``[["a", "ptr:i32"], ["n",
"len:64"]]``), walk the buffer in a ``for`` loop and return an accumulator; the scalar loop kernels (``count``,
``fixed``) take one integer and touch no memory, so that the formal layer's bounded unrolling reaches them.
Arithmetic is on ``uint32_t`` so that no input can overflow a signed value (no undefined behaviour for the
differential layer to trip on). A kernel is one template with drawn constants:

- ``reduce``:   acc = acc OP f(a[i])                          (OP in +, ^, |, -; f one of x*c, x+c, x^c, x&m, x>>s)
- ``guarded``:  if (a[i] CMP k) acc OP= f(a[i])               (CMP in <, <=, >, >=, ==, !=; k in [-8, 8])
- ``hash``:     acc = acc * m + f(a[i])                       (m odd)
- ``window``:   acc OP= f(a[i] OP2 a[i - d])                  (d in 1..3, OP2 in +, -, ^)
- ``inplace``:  a[i] = f(a[i]); acc OP= a[i]                  (the buffer is compared after the call)
- ``bits`` (nested): for j < K: acc OP= (a[i] >> j) & 1       (K in 2..8)
- ``count``:    g(n):  for i < n: acc = acc OP f(i)            (n in [0, 64]: a loop bounded by an argument)
- ``fixed``:    g(x):  for i < K: acc = acc OP f(x + i)        (K in 2..6: a small constant trip count)

Distinctness is decided on the compiled IR (:func:`dedupe_by_ir`): two kernels whose normalised -O0 functions
are equal up to names (function, arguments, values, blocks) and metadata count once (:func:`ir_fingerprint`).
"""
from __future__ import annotations

import hashlib
import re

import numpy as np

__all__ = ["GENERATED_FILE", "TEMPLATES", "generate_loop_kernels", "dedupe_by_ir", "ir_fingerprint",
           "canonical_names", "count_duplicates"]

GENERATED_FILE = "generated.c"
TEMPLATES = ("reduce", "guarded", "hash", "window", "inplace", "bits", "count", "fixed")
_SCALAR = {"count": ("n", "len:64"), "fixed": ("x", "i32")}
_OPS = ("+", "^", "|", "-")
_CMPS = ("<", "<=", ">", ">=", "==", "!=")


def _f(rng, x: str) -> str:
    """One drawn unary map of the uint32_t expression ``x``."""
    kind = int(rng.integers(5))
    if kind == 0:
        return f"({x} * {int(rng.integers(2, 40))}u)"
    if kind == 1:
        return f"({x} + {int(rng.integers(1, 1000))}u)"
    if kind == 2:
        return f"({x} ^ {int(rng.integers(1, 1 << 16))}u)"
    if kind == 3:
        return f"({x} & {int(rng.integers(1, 1 << 12))}u)"
    return f"({x} >> {int(rng.integers(1, 12))})"


def _body(template: str, rng) -> tuple[str, str, int, str]:
    """(loop body, initial accumulator, first index, kernel class) of one drawn kernel."""
    op = _OPS[int(rng.integers(len(_OPS)))]
    x = "(uint32_t)a[i]"
    if template == "reduce":
        return f"acc = acc {op} {_f(rng, x)};", str(int(rng.integers(0, 100))), 0, "loop"
    if template == "guarded":
        cmp, k = _CMPS[int(rng.integers(len(_CMPS)))], int(rng.integers(-8, 9))
        return f"if (a[i] {cmp} {k}) acc {op}= {_f(rng, x)};", str(int(rng.integers(0, 100))), 0, "loop"
    if template == "hash":
        m = 2 * int(rng.integers(1, 500)) + 1
        return f"acc = acc * {m}u + {_f(rng, x)};", str(int(rng.integers(1, 1 << 16))), 0, "loop"
    if template == "window":
        d, op2 = int(rng.integers(1, 4)), ("+", "-", "^")[int(rng.integers(3))]
        return f"acc {op}= {_f(rng, f'((uint32_t)a[i] {op2} (uint32_t)a[i - {d}])')};", "0", d, "loop"
    if template == "inplace":
        return f"a[i] = (int32_t){_f(rng, x)}; acc {op}= (uint32_t)a[i];", "0", 0, "loop"
    if template == "bits":
        k = int(rng.integers(2, 9))
        return (f"for (int32_t j = 0; j < {k}; j++) acc {op}= ({x} >> j) & 1u;", str(int(rng.integers(0, 100))),
                0, "nested")
    if template == "count":
        return f"acc = acc {op} {_f(rng, '(uint32_t)i')};", str(int(rng.integers(0, 100))), 0, "loop"
    if template == "fixed":
        return (f"acc = acc {op} {_f(rng, '((uint32_t)x + (uint32_t)i)')};", str(int(rng.integers(0, 100))),
                int(rng.integers(2, 7)), "loop")
    raise ValueError(f"template must be one of {TEMPLATES}, got {template!r}")


def _source(template: str, name: str, body: str, init: str, start: int, step: int) -> str:
    """C text of one kernel (for ``fixed``, ``start`` is the constant trip count)."""
    if template == "count":
        params, loop = "int32_t n", f"for (int32_t i = 0; i < n; i += {step})"
    elif template == "fixed":
        params, loop = "int32_t x", f"for (int32_t i = 0; i < {start}; i++)"
    else:
        params, loop = "int32_t *a, int32_t n", f"for (int32_t i = {start}; i < n; i += {step})"
    return (f"int32_t {name}({params}) {{\n    uint32_t acc = {init}u;\n    {loop} {{\n        {body}\n    }}\n"
            f"    return (int32_t)acc;\n}}\n")


def generate_loop_kernels(n: int, seed: int, *, prefix: str = "gen") -> tuple[str, dict]:
    """C source of ``n`` loop kernels with distinct source text, and their sidecar entries (name -> entry).

    Kernels are drawn template by template in turn, constants from ``numpy.random.default_rng(seed)``; a draw
    whose body repeats an earlier one is redrawn (at most 50 n draws in all). Raises ``ValueError`` for n < 0.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    rng = np.random.default_rng(seed)
    seen, funcs, sidecar = set(), [], {}
    draws = 0
    while len(funcs) < n and draws < 50 * max(n, 1):
        template = TEMPLATES[draws % len(TEMPLATES)]
        draws += 1
        body, init, start, kclass = _body(template, rng)
        step = 1 if template in ("window", "bits", "fixed") else int(rng.integers(1, 3))
        key = (template, body, init, start, step)
        if key in seen:
            continue
        seen.add(key)
        name = f"{prefix}_{len(funcs):03d}"
        funcs.append(_source(template, name, body, init, start, step))
        args = [list(_SCALAR[template])] if template in _SCALAR else [["a", "ptr:i32"], ["n", "len:64"]]
        sidecar[name] = {"file": GENERATED_FILE, "class": kclass, "ret": "i32", "args": args, "template": template}
    if len(funcs) < n:
        raise ValueError(f"could draw only {len(funcs)} distinct kernels of {n}")
    return "#include <stdint.h>\n\n" + "\n".join(funcs), sidecar


_LOCAL = re.compile(r"%([-\w.$]+)|(?<=\s)([-\w.$]+):(?=\s)")


def canonical_names(normalised: str, name: str) -> str:
    """The function text with its own name ``@name`` as ``@f`` and every local name (arguments, values, blocks,
    which share one namespace in LLVM) renamed ``v0, v1, ...`` in order of first appearance."""
    text = re.sub(rf"@{re.escape(name)}\b", "@f", normalised)
    ids: dict = {}

    def rename(m):
        local = m.group(1) or m.group(2)
        new = ids.setdefault(local, f"v{len(ids)}")
        return f"%{new}" if m.group(1) else f"{new}:"
    return _LOCAL.sub(rename, text)


def ir_fingerprint(name: str, normalised: str) -> str:
    """SHA-256 of a function's normalised IR (``ir.normalise``: unnamed values named by instnamer, metadata,
    attribute groups and comments dropped, whitespace collapsed) after :func:`canonical_names`: two functions
    that differ only in their names (function, arguments, values, blocks) or metadata get the same fingerprint.
    Raises ValueError when there is no normalised text (the IR did not parse)."""
    if not isinstance(normalised, str) or not normalised:
        raise ValueError(f"kernel {name!r}: no normalised IR to fingerprint")
    return hashlib.sha256(canonical_names(normalised, name).encode("utf-8")).hexdigest()


def dedupe_by_ir(names: list[str], normalised: dict[str, str]) -> list[str]:
    """``names`` in order, dropping each whose :func:`ir_fingerprint` equals an earlier one's."""
    kept, seen = [], set()
    for name in names:
        key = ir_fingerprint(name, normalised[name])
        if key not in seen:
            seen.add(key)
            kept.append(name)
    return kept


def count_duplicates(names: list[str], normalised: dict[str, str]) -> int:
    """How many of ``names`` share their :func:`ir_fingerprint` with an earlier name (0 for a distinct corpus)."""
    return len(names) - len(dedupe_by_ir(names, normalised))
