"""Non-LLM rewriters that exercise every metric of the harness, and the scripted stand-in "LLM".

Each rewriter maps an instance to ``n`` replies (strings, as a model would answer), so that every candidate
goes through the same extraction, validity, equivalence and performance path:

* ``identity``: the input unchanged; ``O1``/``O2``/``O3``: llvmlite's default pipelines;
* ``random``: seeded pass sequences of 4-8 single passes (an autotuner-style baseline);
* ``mutant``: a semantic mutation of one instruction (icmp predicate negated, add <-> sub with a non-zero
  operand, an integer constant c -> c + 1); must be caught by the equivalence layers;
* ``scripted``: SCRIPTED STAND-IN (not an LLM): goes through the prompt/backend/extraction path and returns
  the -O2 result in a fence, corrupted by a mutation with probability 0.2 (Analysis: a text-count heuristic).
"""
from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from papers.cirbench import ir as IR
from papers.cirbench.instances import Instance, prompt

__all__ = ["REWRITERS", "fence", "mutate", "random_pipeline", "rewrite", "scripted_fn", "heuristic_analysis"]

REWRITERS = ("identity", "O1", "O2", "O3", "random", "mutant", "scripted")
_NEG = {"eq": "ne", "ne": "eq", "slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt", "ult": "uge",
        "uge": "ult", "ugt": "ule", "ule": "ugt"}


def fence(ir_text: str) -> str:
    return f"```llvm\n{ir_text}```"


def _body(lines, function):
    start = next(i for i, ln in enumerate(lines) if ln.startswith("define") and f"@{function}(" in ln)
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return start, end


def mutate(ir_text: str, function: str, rng: np.random.Generator) -> str | None:
    """One semantic mutation inside ``function``; None when no site exists."""
    lines = ir_text.splitlines()
    start, end = _body(lines, function)
    sites = []
    for i in range(start + 1, end):
        ln = lines[i]
        if re.search(r"= icmp (samesign )?(\w+) ", ln):
            sites.append(("icmp", i))
        m = re.search(r"= (add|sub)( nuw| nsw)* i\d+ (\S+), (\S+)$", ln)
        if m and m.group(4) != "0":
            sites.append(("addsub", i))
        if re.search(r"^\s*(%\S+ = (add|sub|mul|and|or|xor|shl|lshr|ashr|sdiv|udiv|srem|urem|icmp|select)|store|ret)"
                     r".*(\bi(8|16|32|64) |, )-?\d+\b", ln):
            sites.append(("const", i))
    if not sites:
        return None
    kind, i = sites[int(rng.integers(len(sites)))]
    ln = lines[i]
    if kind == "icmp":
        ln = re.sub(r"= icmp (samesign )?(\w+) ", lambda m: f"= icmp {_NEG[m.group(2)]} ", ln, count=1)
    elif kind == "addsub":
        ln = re.sub(r"= (add|sub)( nuw| nsw)*", lambda m: "= " + ("sub" if m.group(1) == "add" else "add"), ln,
                    count=1)
    else:
        consts = list(re.finditer(r"(\bi8 |\bi16 |\bi32 |\bi64 |, )(-?\d+)\b", ln))
        m = consts[int(rng.integers(len(consts)))]
        ln = ln[:m.start(2)] + str(int(m.group(2)) + 1) + ln[m.end(2):]
    lines[i] = ln
    return "\n".join(lines) + "\n"


def random_pipeline(rng: np.random.Generator) -> list[str]:
    """4 to 8 passes drawn (with replacement) from the single-pass list."""
    k = int(rng.integers(4, 9))
    return [IR.SINGLE_PASSES[int(j)] for j in rng.integers(len(IR.SINGLE_PASSES), size=k)]


def heuristic_analysis(ir_text: str, fields: list[str]) -> dict:
    """Text-count answers of the scripted stand-in (no CFG reasoning: loops are guessed empty)."""
    body = ir_text[ir_text.index("define"):]
    body = body[:body.index("\n}") + 2]
    labels = re.findall(r"^([\w.$\-]+):", body, flags=re.M)
    guess = {"num_blocks": 1 + len(labels) if not body.split("\n")[1].strip().endswith(":") else len(labels),
             "num_loads": len(re.findall(r"= load ", body)), "num_stores": len(re.findall(r"^\s*store ", body, re.M)),
             "num_calls": len(re.findall(r"\bcall ", body)), "num_phis": len(re.findall(r"= phi ", body)),
             "loops": [], "dominators_of_return": (labels[:1] or ["bb"])}
    return {f: guess[f] for f in fields}


def _seed_of(messages, seed) -> int:
    h = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
    return int.from_bytes(h[:8], "little") ^ (seed or 0)


def scripted_fn(messages, *, n, temperature, max_tokens, seed):
    """SCRIPTED STAND-IN (not an LLM): -O2 of the IR in the prompt, corrupted with probability 0.2."""
    user = messages[-1]["content"]
    rng = np.random.default_rng(_seed_of(messages, seed))
    m = re.search(r"```llvm\n(.*?)```", user, re.S)
    ir_text = m.group(1) if m else ""
    fn = re.search(r"@([\w.$]+) below", user)
    fn = fn.group(1) if fn else ""
    if "json block" in user:
        fields = json.loads(re.search(r"keys (\[.*?\])", user).group(1).replace("'", '"'))
        out = []
        for _ in range(n):
            ans = heuristic_analysis(ir_text, fields)
            if rng.random() < 0.2:
                f = next((k for k in fields if k.startswith("num_")), None)
                if f:
                    ans[f] += 1
            out.append("```json\n" + json.dumps(ans) + "\n```")
        return out
    try:
        o2 = IR.apply_passes(ir_text, "O2")
    except (IR.IRError, ValueError):
        return ["I could not parse this IR, so I cannot answer with a module."] * n
    out = []
    for _ in range(n):
        text = o2
        if rng.random() < 0.2:
            text = mutate(o2, fn, rng) or o2
        out.append(fence(text))
    return out


def _passes_or_none(ir_text, pipeline):
    try:
        return fence(IR.apply_passes(ir_text, pipeline))
    except IR.IRError:
        return "The input does not parse; no module."


def rewrite(name: str, inst: Instance, n: int, rng: np.random.Generator, backend=None) -> list[str]:
    """``n`` replies of rewriter ``name`` for one instance (Analysis: only the scripted/LLM backend answers)."""
    if name not in REWRITERS and name != "llm":
        raise ValueError(f"name: unknown rewriter {name!r}; known: {REWRITERS}")
    if name in ("scripted", "llm"):
        return backend.complete(prompt(inst), n=n, temperature=0.2, max_tokens=4096, seed=0)
    if inst.track == "analysis":
        return []
    if name == "identity":
        return [fence(inst.input_ir)] * n
    if name in ("O1", "O2", "O3", "random"):
        pipes = [name] if name != "random" else [random_pipeline(rng) for _ in range(n)]
        outs = IR.batch([("passes", (inst.input_ir, p)) for p in pipes])  # the instance's own IR
        replies = [fence(o["ir"]) if o["ok"] else "The input does not parse; no module." for o in outs]
        return replies * n if name != "random" else replies
    out = []
    for _ in range(n):
        m = mutate(inst.input_ir, inst.function, rng)
        out.append(fence(m) if m else "no mutation site")
    return out
