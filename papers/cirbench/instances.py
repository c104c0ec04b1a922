"""The four CIRBench tracks, built here from the kernel corpus with seeded sampling [reconstructed].

* Analysis: the -O1 function (values named by instnamer); 3 fields asked from :data:`ANALYSIS_FIELDS`;
  oracle from llvmlite's object model (CFG from terminators; dominators and natural loops with networkx).
* Repair: a verified -O1 function with one corruption from :data:`CORRUPTIONS`; settings "hint" (LLVM's
  message given) and "hard"; ground truth = the uncorrupted function.
* Refactor: (function, single pass) pairs whose pass changes the normalised IR; inputs half at -O0 and half
  at -O1; reference = the pass output.
* Transform: -O0 functions (optnone removed), at least two thirds with loops; baseline -O3.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import networkx as nx
import numpy as np

from papers.cirbench import ir as IR

__all__ = ["Instance", "ANALYSIS_FIELDS", "CORRUPTIONS", "REFACTOR_PASSES_O0", "REFACTOR_PASSES_O1",
           "analysis_oracle", "oracle_from_facts", "corrupt", "build_instances", "prompt"]

ANALYSIS_FIELDS = ("num_blocks", "num_loads", "num_stores", "num_calls", "num_phis", "loops",
                   "dominators_of_return")
CORRUPTIONS = ("delete_def", "binop_type", "phi_pred", "drop_terminator", "use_before_def", "ret_type")
REFACTOR_PASSES_O0 = ("sroa", "dse", "memcpyopt", "instcombine", "simplifycfg", "sccp")
REFACTOR_PASSES_O1 = ("instcombine", "simplifycfg", "newgvn", "reassociate", "sccp", "jump-threading",
                      "loop-rotate", "sink", "adce")


@dataclass
class Instance:
    """One benchmark instance (JSON-able)."""

    id: str
    track: str
    kernel: str
    function: str
    input_ir: str
    reference: str = ""          # Repair: ground truth; Refactor: pass output; Transform: -O3 baseline
    setting: str = ""            # Repair: hint | hard; Refactor: the pass; Analysis: fields (comma-joined)
    message: str = ""            # Repair hint: LLVM's message
    answer: dict = field(default_factory=dict)   # Analysis oracle
    arg_specs: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def named(ir_text: str) -> str:
    res = IR.sandbox_call("name_values", ir_text)
    if not res.ok or not res.value["ok"]:
        raise IR.IRError("cannot name values of invalid IR")
    return res.value["ir"]


def analysis_oracle(ir_text: str, function: str) -> dict:
    """All analysis fields of one function. Loops: natural loops of back edges (tail -> header with header
    dominating tail), ``depth`` = number of loops whose body holds the header; dominators of the return
    block(s) (blocks dominating every return block), sorted."""
    res = IR.sandbox_call("analyse", ir_text, function)
    if not res.ok or not res.value.get("ok"):
        raise IR.IRError("analysis oracle: invalid IR")
    return oracle_from_facts(res.value)


def oracle_from_facts(facts: dict) -> dict:
    """The analysis fields from raw CFG facts (``blocks`` in order, entry first; ``succ``; ``counts``;
    ``rets``), as returned by the sandboxed ``analyse`` worker call."""
    g = nx.DiGraph()
    g.add_nodes_from(facts["blocks"])
    for b, succs in facts["succ"].items():
        for s in succs:
            g.add_edge(b, s)
    entry = facts["blocks"][0]
    idom = dict(nx.immediate_dominators(g, entry))
    idom[entry] = entry

    def doms(n):
        out = {n}
        while idom[n] != n:
            n = idom[n]
            out.add(n)
        return out
    loops = {}
    for u, h in g.edges():
        if u in idom and h in doms(u):
            # natural loop: nodes that reach u without passing through h
            sub = g.subgraph([v for v in g if v != h])
            body = ({h, u} | set(nx.ancestors(sub, u))) if u != h else {h}
            loops.setdefault(h, {"latches": set(), "body": set()})
            loops[h]["latches"].add(u)
            loops[h]["body"] |= body
    loop_list = []
    for h, d in loops.items():
        depth = sum(1 for h2, d2 in loops.items() if h in d2["body"])
        loop_list.append({"header": h, "latches": sorted(d["latches"]), "depth": depth})
    rets = [r for r in facts["rets"] if r in idom]
    dom_ret = sorted(set.intersection(*[doms(r) for r in rets])) if rets else []
    c = facts["counts"]
    return {"num_blocks": len(facts["blocks"]), "num_loads": c["load"], "num_stores": c["store"],
            "num_calls": c["call"], "num_phis": c["phi"], "loops": sorted(loop_list, key=lambda x: x["header"]),
            "dominators_of_return": dom_ret}


# ------------------------------------------------------------------------------------------ corruptions
_DEF = re.compile(r"^  %([\w.$\-]+) = (.*)$")


def corrupt(ir_text: str, function: str, kind: str, rng: np.random.Generator) -> str | None:
    """One corruption of the (named) function text; None when ``kind`` does not apply."""
    lines = ir_text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("define") and f"@{function}(" in ln)
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    body = list(range(start + 1, end))
    defs = [i for i in body if _DEF.match(lines[i]) and not _DEF.match(lines[i]).group(2).startswith("phi")]
    used = [i for i in defs if re.search(rf"%{re.escape(_DEF.match(lines[i]).group(1))}\b",
                                         "\n".join(lines[i + 1:end]))]
    if kind == "delete_def":
        if not used:
            return None
        i = used[int(rng.integers(len(used)))]
        del lines[i]
    elif kind == "binop_type":
        cands = [i for i in body if re.search(r"= (add|sub|mul|and|or|xor|shl)( \w+)* i(32|64) ", lines[i])]
        if not cands:
            return None
        i = cands[int(rng.integers(len(cands)))]
        lines[i] = re.sub(r" i(32|64) ", lambda m: " i16 ", lines[i], count=1)
    elif kind == "phi_pred":
        cands = [i for i in body if " = phi " in lines[i]]
        labels = [m for m in re.findall(r"^([\w.$\-]+):", "\n".join(lines[start:end]), flags=re.M)]
        if not cands or len(labels) < 2:
            return None
        i = cands[int(rng.integers(len(cands)))]
        blk = next(ln for ln in reversed(lines[start:i]) if re.match(r"^[\w.$\-]+:", ln)).split(":")[0]
        preds = set(re.findall(r"%([\w.$\-]+) \]", lines[i]))
        bad = [b for b in labels if b not in preds and b != blk] or [blk]
        new = bad[int(rng.integers(len(bad)))]
        lines[i] = re.sub(r"%[\w.$\-]+ \]", f"%{new} ]", lines[i], count=1)
    elif kind == "drop_terminator":
        terms = [i for i in body if re.match(r"^  (br|ret|switch|unreachable)\b", lines[i])]
        i = terms[int(rng.integers(len(terms)))]
        del lines[i]
    elif kind == "use_before_def":
        pairs = []
        for i in used:
            nm = _DEF.match(lines[i]).group(1)
            for j in range(i + 1, end):
                if re.match(r"^[\w.$\-]+:", lines[j]) or " = phi " in lines[j]:
                    break
                if re.search(rf"%{re.escape(nm)}\b", lines[j]):
                    pairs.append((i, j))
                    break
        if not pairs:
            return None
        i, j = pairs[int(rng.integers(len(pairs)))]
        lines.insert(j, lines.pop(i))  # definition now sits right after its first use
    elif kind == "ret_type":
        m = re.search(r"^define (.*?)(i32|i64|void) @", lines[start])
        if not m:
            return None
        new = "i64" if m.group(2) != "i64" else "i32"
        lines[start] = lines[start][:m.start(2)] + new + lines[start][m.end(2):]
    else:
        raise ValueError(f"kind: unknown corruption {kind!r}; known: {CORRUPTIONS}")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------------------------- building
def build_instances(corpus: dict, sizes: dict, rng: np.random.Generator) -> list[Instance]:
    """Seeded instances of every track (``sizes``: track -> count), sorted by id."""
    names = sorted(corpus)
    out: list[Instance] = []
    named_o1 = dict(zip(names, [r["ir"] for r in IR.batch([("name_values", (corpus[n].o1,)) for n in names])]))
    # Analysis
    for i in range(sizes.get("analysis", 0)):
        k = corpus[names[int(rng.integers(len(names)))]]
        text = named_o1[k.name]
        fields = sorted(rng.choice(len(ANALYSIS_FIELDS), 3, replace=False))
        fields = [ANALYSIS_FIELDS[f] for f in fields]
        oracle = analysis_oracle(text, k.name)
        out.append(Instance(f"analysis-{i:03d}", "analysis", k.name, k.name, text, setting=",".join(fields),
                            answer={f: oracle[f] for f in fields}, arg_specs=k.arg_specs))
    # Repair
    i = 0
    while i < sizes.get("repair", 0):
        k = corpus[names[int(rng.integers(len(names)))]]
        kind = CORRUPTIONS[i % len(CORRUPTIONS)]
        text = named_o1[k.name]
        bad = corrupt(text, k.name, kind, rng)
        if bad is None:
            kind = "drop_terminator"
            bad = corrupt(text, k.name, kind, rng)
        v = IR.verify_ir(bad)
        setting = "hint" if i % 2 == 0 else "hard"
        out.append(Instance(f"repair-{i:03d}", "repair", k.name, k.name, bad, reference=text,
                            setting=f"{setting}:{kind}", message=v.message if setting == "hint" else "",
                            arg_specs=k.arg_specs))
        i += 1
    # Refactor: seeded (kernel, level, pass) candidates; keep those whose pass changes the normalised IR
    n_r = sizes.get("refactor", 0)
    cands, scal = [], [n for n in names if corpus[n].kclass == "scalar"]
    for j in range(12 * n_r):
        level = "O0" if j % 2 == 0 else "O1"
        pool = REFACTOR_PASSES_O0 if level == "O0" else REFACTOR_PASSES_O1
        kpool = scal if j % 4 == 1 else names  # half of the -O1 inputs from loop-free kernels
        cand = (kpool[int(rng.integers(len(kpool)))], level, pool[int(rng.integers(len(pool)))])
        if cand not in cands:
            cands.append(cand)
    srcs = [corpus[n].o0 if lv == "O0" else corpus[n].o1 for n, lv, _ in cands]
    refs = [r["ir"] for r in IR.batch([("passes", (s_, [p])) for s_, (_, _, p) in zip(srcs, cands)])]
    norms = IR.batch([("normalise", (t, n)) for s_, r, (n, _, _) in zip(srcs, refs, cands) for t in (s_, r)])
    count = {"O0": 0, "O1": 0}
    chosen = []
    for quota in (-(-n_r // 2), n_r):  # half per level; then fill up from either level (few -O1 pairs change)
        for j, (n, level, p) in enumerate(cands):
            if len(chosen) >= n_r or j in chosen or count[level] >= quota or \
                    norms[2 * j]["text"] == norms[2 * j + 1]["text"]:
                continue
            chosen.append(j)
            count[level] += 1
    for i, j in enumerate(sorted(chosen)):
        n, level, p = cands[j]
        k = corpus[n]
        out.append(Instance(f"refactor-{i:03d}", "refactor", k.name, k.name, srcs[j], reference=refs[j],
                            setting=f"{p}@{level}", arg_specs=k.arg_specs))
    # Transform: two thirds (rounded up) with loops
    n_t = sizes.get("transform", 0)
    loops = [n for n in names if corpus[n].kclass != "scalar"]
    scalars = [n for n in names if corpus[n].kclass == "scalar"]
    n_loop = min(len(loops), -(-2 * n_t // 3))
    pick = list(rng.choice(loops, n_loop, replace=False)) + \
        list(rng.choice(scalars, min(len(scalars), n_t - n_loop), replace=False))
    unused = [n for n in names if n not in set(pick)]  # distinct inputs first, repeats only when none is left
    while len(pick) < n_t:
        pick.append(unused.pop(int(rng.integers(len(unused)))) if unused else names[int(rng.integers(len(names)))])
    for i, n in enumerate(pick):
        k = corpus[str(n)]
        out.append(Instance(f"transform-{i:03d}", "transform", k.name, k.name, k.o0, reference=k.o3,
                            arg_specs=k.arg_specs))
    return sorted(out, key=lambda x: x.id)


# --------------------------------------------------------------------------------------------- prompts
_SYSTEM = "You are an expert in LLVM IR (LLVM 22). Answer with exactly one fenced code block."


def prompt(inst: Instance) -> list[dict]:
    """Chat messages of one instance (one prompt per track and setting, written for this reproduction)."""
    fence = f"```llvm\n{inst.input_ir}```"
    if inst.track == "analysis":
        task = (f"Analyse the function @{inst.function} below. Reply with one ```json block holding the keys "
                f"{inst.setting.split(',')}: counts as integers, `loops` as a list of "
                '{"header", "latches", "depth"} with block names, `dominators_of_return` as a list of block names.')
    elif inst.track == "repair":
        hint = (f" The verifier says:\n{inst.message}\n" if inst.message else " It is invalid.")
        task = (f"The LLVM IR below does not parse or verify.{hint} Repair it with the smallest change that "
                f"keeps the intended semantics of @{inst.function}; reply with the whole module in one ```llvm block.")
    elif inst.track == "refactor":
        p = inst.setting.split("@")[0]
        task = (f"Apply exactly the LLVM pass `{p}` to @{inst.function} below and reply with the resulting "
                "module in one ```llvm block.")
    else:
        task = (f"Rewrite @{inst.function} below to run as fast as possible on x86-64 while keeping its semantics "
                "and signature; reply with the whole module in one ```llvm block.")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": f"{task}\n\n{fence}"}]
