"""A seeded generator of distinct loop kernels, so that a full-size track need not repeat the 40 hand-written ones.

Every kernel has the signature ``int32_t g(int32_t *a, int32_t n)`` (sidecar ``[["a", "ptr:i32"], ["n",
"len:64"]]``), walks the buffer in a ``for`` loop and returns an accumulator; arithmetic is on ``uint32_t`` so
that no input can overflow a signed value (no undefined behaviour for the differential layer to trip on). A
kernel is one template with drawn constants:

- ``reduce``:   acc = acc OP f(a[i])                          (OP in +, ^, |, -; f one of x*c, x+c, x^c, x&m, x>>s)
- ``guarded``:  if (a[i] CMP k) acc OP= f(a[i])               (CMP in <, <=, >, >=, ==, !=; k in [-8, 8])
- ``hash``:     acc = acc * m + f(a[i])                       (m odd)
- ``window``:   acc OP= f(a[i] OP2 a[i - d])                  (d in 1..3, OP2 in +, -, ^)
- ``inplace``:  a[i] = f(a[i]); acc OP= a[i]                  (the buffer is compared after the call)
- ``bits`` (nested): for j < K: acc OP= (a[i] >> j) & 1       (K in 2..8)

Distinctness is decided on the compiled IR (:func:`dedupe_by_ir`): two kernels whose normalised -O0 functions
are equal up to the function name count once.
"""
from __future__ import annotations

import re

import numpy as np

__all__ = ["GENERATED_FILE", "TEMPLATES", "generate_loop_kernels", "dedupe_by_ir"]

GENERATED_FILE = "generated.c"
TEMPLATES = ("reduce", "guarded", "hash", "window", "inplace", "bits")
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
    raise ValueError(f"template must be one of {TEMPLATES}, got {template!r}")


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
        step = 1 if template in ("window", "bits") else int(rng.integers(1, 3))
        key = (body, init, start, step)
        if key in seen:
            continue
        seen.add(key)
        name = f"{prefix}_{len(funcs):03d}"
        funcs.append(f"int32_t {name}(int32_t *a, int32_t n) {{\n    uint32_t acc = {init}u;\n"
                     f"    for (int32_t i = {start}; i < n; i += {step}) {{\n        {body}\n    }}\n"
                     f"    return (int32_t)acc;\n}}\n")
        sidecar[name] = {"file": GENERATED_FILE, "class": kclass, "ret": "i32",
                         "args": [["a", "ptr:i32"], ["n", "len:64"]], "template": template}
    if len(funcs) < n:
        raise ValueError(f"could draw only {len(funcs)} distinct kernels of {n}")
    return "#include <stdint.h>\n\n" + "\n".join(funcs), sidecar


def dedupe_by_ir(names: list[str], normalised: dict[str, str]) -> list[str]:
    """``names`` in order, dropping each whose normalised IR (the function name replaced) equals an earlier one's."""
    kept, seen = [], set()
    for name in names:
        key = re.sub(rf"@{re.escape(name)}\b", "@f", normalised[name])
        if key not in seen:
            seen.add(key)
            kept.append(name)
    return kept
