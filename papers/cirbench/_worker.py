"""Functions that run *inside* the sandbox child (shared.sandbox): every parse, verify, pass pipeline, z3
encoding, JIT call and object emission on IR text happens here, never in the workflow process.

Importing this module initialises LLVM's native target once (in the zygote, before any fork). Every function
takes and returns JSON-able values.
"""
from __future__ import annotations

import ctypes
import re
import time

import llvmlite.binding as llvm
import z3

from papers.cirbench.limits import FORMAL_WALL_FACTOR, RLIMIT_PER_MS

llvm.initialize_native_target()
llvm.initialize_native_asmprinter()
_TRIPLE = llvm.get_default_triple()

SINGLE_PASSES = {
    "sroa": "add_sroa_pass", "instcombine": "add_instruction_combine_pass",
    "simplifycfg": "add_simplify_cfg_pass", "newgvn": "add_new_gvn_pass", "sccp": "add_sccp_pass",
    "dse": "add_dead_store_elimination_pass", "reassociate": "add_reassociate_pass",
    "jump-threading": "add_jump_threading_pass", "loop-rotate": "add_loop_rotate_pass",
    "loop-unroll": "add_loop_unroll_pass", "tailcallelim": "add_tail_call_elimination_pass",
    "adce": "add_aggressive_dce_pass", "dce": "add_dead_code_elimination_pass",
    "memcpyopt": "add_mem_copy_opt_pass", "loop-deletion": "add_loop_deletion_pass", "sink": "add_sinking_pass",
}
LEVELS = ("O0", "O1", "O2", "O3")


# metadata attached to an instruction (", !tbaa !3", ", !llvm.loop !7"): dropped wherever IR is compared
_ATTACHED_METADATA = re.compile(r",\s*![\w.]+\s+!\d+")

def _tm():
    target = llvm.Target.from_triple(_TRIPLE)
    return target.create_target_machine(cpu="x86-64", features="", opt=2, reloc="pic", codemodel="default")


def _parse(ir: str):
    """(module, None) or (None, (stage, message))."""
    try:
        mod = llvm.parse_assembly(ir)
    except RuntimeError as exc:
        return None, ("parse", str(exc).strip())
    try:
        mod.verify()
    except RuntimeError as exc:
        return None, ("verify", str(exc).strip())
    return mod, None


_DEFINE = re.compile(r"^define\s+(.*?)@([\w.$\-]+|\"[^\"]+\")\((.*)\)(.*)$")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


_ATTR_WORDS = {"noundef", "signext", "zeroext", "nonnull", "noalias", "nocapture", "readonly", "writeonly",
               "inreg", "returned", "dso_local", "internal", "private", "local_unnamed_addr", "unnamed_addr",
               "hidden", "protected", "nofree", "dereferenceable", "align", "range", "captures"}


def _type_of(tokens: str) -> str:
    for tok in re.split(r"\s+", tokens.strip()):
        if tok and (re.fullmatch(r"i\d+|ptr|float|double|void|half", tok)):
            return tok
    return "?"


def signature(fn) -> dict:
    """{'ret': type, 'params': [types], 'names': [arg names or arg<i>]} from the define line."""
    line = [ln for ln in str(fn).splitlines() if ln.startswith("define")][0]
    m = _DEFINE.match(line)
    head, params = m.group(1), m.group(3)
    ret = _type_of(re.sub(r"\([^)]*\)", "", head).replace("define", ""))
    types, names = [], []
    for i, p in enumerate(_split_top(params)):
        if p == "...":
            types.append("...")
            names.append(f"arg{i}")
            continue
        types.append(_type_of(re.sub(r"\([^)]*\)", "", p)))
        nm = re.search(r"%([A-Za-z_.$][\w.$\-]*)\s*$", p)
        names.append(nm.group(1) if nm else f"arg{i}")
    return {"ret": ret, "params": types, "names": names}


def _find(mod, name):
    for fn in mod.functions:
        if fn.name == name and not fn.is_declaration:
            return fn
    return None


def verify(ir: str, function: str | None = None) -> dict:
    """{'ok', 'stage', 'message', 'signature'} for one text (signature of ``function`` when it exists)."""
    mod, err = _parse(ir)
    if err:
        return {"ok": False, "stage": err[0], "message": err[1], "signature": None}
    sig = None
    if function is not None:
        fn = _find(mod, function)
        sig = None if fn is None else signature(fn)
    return {"ok": True, "stage": None, "message": "", "signature": sig}


def passes(ir: str, pipeline) -> dict:
    """Run "O0".."O3" or a list of single passes; {'ok', 'ir' | 'stage', 'message'}."""
    mod, err = _parse(ir)
    if err:
        return {"ok": False, "stage": err[0], "message": err[1]}
    mod.triple = _TRIPLE
    tm = _tm()
    if isinstance(pipeline, str):
        level = int(pipeline[1])
        if level > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=level)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
    else:
        pto = llvm.create_pipeline_tuning_options(speed_level=0)
        pb = llvm.create_pass_builder(tm, pto)
        mpm = llvm.create_new_module_pass_manager()
        for p in pipeline:
            getattr(mpm, SINGLE_PASSES[p])()
        mpm.run(mod, pb)
    return {"ok": True, "ir": str(mod)}


def normalise(ir: str, function: str) -> dict:
    """EM normal form: instnamer, function text only, no attribute refs or metadata, collapsed spaces."""
    mod, err = _parse(ir)
    if err:
        return {"ok": False, "text": None}
    fn = _find(mod, function)
    if fn is None:
        return {"ok": False, "text": None}
    pto = llvm.create_pipeline_tuning_options(speed_level=0)
    pb = llvm.create_pass_builder(_tm(), pto)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_instruction_namer_pass()
    mpm.run(mod, pb)
    text = str(_find(mod, function))
    text = re.sub(r"^;.*$", "", text, flags=re.M)
    text = re.sub(r";.*$", "", text, flags=re.M)
    text = _ATTACHED_METADATA.sub("", text)
    text = re.sub(r"\s#\d+", " ", text)
    return {"ok": True, "text": " ".join(text.split())}


# --------------------------------------------------------------------------------- analysis (object model)
def analyse(ir: str, function: str) -> dict:
    """Raw CFG facts of one function for the Analysis oracle: blocks, successors, opcode counts, return blocks."""
    mod, err = _parse(ir)
    if err:
        return {"ok": False}
    fn = _find(mod, function)
    blocks, succ, counts, rets = [], {}, {"load": 0, "store": 0, "call": 0, "phi": 0}, []
    for b in fn.blocks:
        blocks.append(b.name)
        insts = list(b.instructions)
        for ins in insts:
            if ins.opcode in counts:
                counts[ins.opcode] += 1
        term = insts[-1]
        names = [op.name for op in term.operands if str(op.type) == "label"]
        succ[b.name] = names
        if term.opcode == "ret":
            rets.append(b.name)
    return {"ok": True, "blocks": blocks, "succ": succ, "counts": counts, "rets": rets}


# ------------------------------------------------------------------------------------ formal (z3, QF_BV)
class Unsupported(Exception):
    """The function lies outside the formal fragment."""


_NAME = r"%([A-Za-z_.$][\w.$\-]*|\d+)"
_BIN = {"add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and", "or", "xor"}
_ICMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "ugt": z3.UGT, "uge": z3.UGE, "ult": z3.ULT,
         "ule": z3.ULE, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b, "slt": lambda a, b: a < b,
         "sle": lambda a, b: a <= b}


def _width(ty: str) -> int:
    m = re.fullmatch(r"i(\d+)", ty)
    if not m or not 1 <= int(m.group(1)) <= 64:
        raise Unsupported(f"type {ty}")
    return int(m.group(1))


def _named(fn) -> list:
    """Blocks as (name, [instruction text]) after naming every value (instnamer on a private copy)."""
    return [(b.name, [str(i).strip() for i in b.instructions]) for b in fn.blocks]


class _Encoder:
    def __init__(self, fn, args, prefix):
        self.env, self.poison, self.prefix = {}, {}, prefix
        self.fresh = 0
        sig = signature(fn)
        if sig["ret"] == "?" or sig["ret"] == "void":
            raise Unsupported("return type")
        self.ret_width = _width(sig["ret"])
        arg_names = [re.search(r"%([\w.$\-]+)\s*$", p).group(1) for p in _split_top(_DEFINE.match(
            [ln for ln in str(fn).splitlines() if ln.startswith("define")][0]).group(3))]
        for nm, ty, a in zip(arg_names, sig["params"], args):
            if a.size() != _width(ty):
                raise Unsupported("argument width")
            self.env[nm] = a
            self.poison[nm] = z3.BoolVal(False)
        self.blocks = _named(fn)

    def val(self, tok: str, width: int):
        tok = tok.strip()
        if tok.startswith("%"):
            nm = tok[1:]
            if nm not in self.env:
                raise Unsupported(f"operand {tok}")
            return self.env[nm], self.poison[nm]
        if tok == "true":
            return z3.BitVecVal(1, width), z3.BoolVal(False)
        if tok == "false":
            return z3.BitVecVal(0, width), z3.BoolVal(False)
        if tok == "poison":
            return z3.BitVecVal(0, width), z3.BoolVal(True)
        if re.fullmatch(r"-?\d+", tok):
            return z3.BitVecVal(int(tok) % (1 << width), width), z3.BoolVal(False)
        raise Unsupported(f"operand {tok}")

    def encode(self):
        order = self._topo()
        reach = {order[0]: z3.BoolVal(True)}
        edges = {}
        ub = []
        ret_val, ret_poison = None, None
        text = dict(self.blocks)
        self.allocas, mem_end = {}, {}
        for b in order:
            incoming = edges.get(b, {})
            r = z3.simplify(z3.Or(*incoming.values())) if b != order[0] and incoming else reach[order[0]]
            if b != order[0] and not incoming:
                r = z3.BoolVal(False)
            reach[b] = r
            state = {}  # local scalar allocas: value at block entry, merged over the incoming edges
            if incoming:
                preds = list(incoming)
                common = set.intersection(*[set(mem_end.get(p_, {})) for p_ in preds])
                for a in common:
                    v, p = None, None
                    for p_ in preds:
                        av, ap = mem_end[p_][a]
                        v = av if v is None else z3.If(incoming[p_], av, v)
                        p = ap if p is None else z3.If(incoming[p_], ap, p)
                    state[a] = (v, p)
            for line in text[b]:
                out = self._inst(line, b, edges, r, ub, state)
                if out is not None:
                    v, p = out
                    ret_val = v if ret_val is None else z3.If(r, v, ret_val)
                    ret_poison = p if ret_poison is None else z3.If(r, p, ret_poison)
            mem_end[b] = state
        if ret_val is None:
            raise Unsupported("no return")
        return ret_val, ret_poison, z3.Or(*ub) if ub else z3.BoolVal(False)

    def _topo(self):
        """Blocks reachable from the entry in topological order; ``Unsupported("loop")`` when the CFG has a
        cycle (the loop-free fragment)."""
        _, back, order = self._cfg()
        if back:
            raise Unsupported("loop")
        return order

    # ----------------------------------------------------------------- bounded unrolling (the loop fragment)
    def _cfg(self):
        """(successors by block, back edges, blocks reachable from the entry in a topological order of the graph
        without its back edges). A back edge is an edge to a block still on the depth-first search's stack;
        removing the back edges leaves an acyclic graph for any CFG (reducible or not)."""
        succ = {b: re.findall(r"label %([\w.$\-]+)", lines[-1]) for b, lines in self.blocks}
        back, order, state = set(), [], {}

        def dfs(n):
            state[n] = 1
            for s in succ.get(n, []):
                if state.get(s) == 1:
                    back.add((n, s))
                elif s not in state:
                    dfs(s)
            state[n] = 2
            order.append(n)
        dfs(self.blocks[0][0])
        return succ, back, order[::-1]

    def has_loop(self) -> bool:
        """Whether the CFG has a cycle reachable from the entry."""
        return bool(self._cfg()[1])

    @staticmethod
    def _merge(ends: list, conds: list) -> dict:
        """Values live on every incoming edge, merged as ``If(edge_i, v_i, ...)`` (one value when all agree)."""
        keys = set(ends[0])
        for e in ends[1:]:
            keys &= set(e)
        out = {}
        for key in keys:
            vals = [e[key] for e in ends]
            if all(v.eq(vals[0]) for v in vals[1:]):
                out[key] = vals[0]
                continue
            v = vals[0]
            for c, w in zip(conds[1:], vals[1:]):
                v = z3.If(c, w, v)
            out[key] = v
        return out

    def encode_unrolled(self, bound: int):
        """Bounded unrolling: (result, poison, UB, exceeded) over executions that take at most ``bound`` back edges.

        The CFG is copied ``bound + 1`` times; node (b, c) is block b after c back edges (loop iterations, summed
        over all loops). A forward edge stays in copy c, a back edge goes from copy c to copy c + 1, and from copy
        ``bound`` to the condition ``exceeded``. Every node starts from the values (SSA values, poison flags and
        local slots) of its incoming edges, merged by edge condition; a phi reads each incoming value at the end
        of its predecessor. On every input for which ``exceeded`` is false the encoding is the function's exact
        semantics (one execution path, at most ``bound`` back edges); beyond it nothing is claimed.
        """
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
            raise ValueError(f"unroll bound must be a non-negative integer, got {bound!r}")
        succ, back, order = self._cfg()
        text = dict(self.blocks)
        entry = order[0]
        self.allocas = {}
        incoming: dict = {}     # node -> {pred name: (edge condition, pred node)}
        ends: dict = {}         # node -> (env, poison, slots) at its end
        ub, exceeded = [], []
        ret_val, ret_poison = None, None
        args_env, args_poison = dict(self.env), dict(self.poison)
        for c in range(bound + 1):
            for b in order:
                node = (b, c)
                inc = incoming.get(node, {})
                if node == (entry, 0):
                    reach, env, poison, slots = z3.BoolVal(True), dict(args_env), dict(args_poison), {}
                elif not inc:
                    continue
                else:
                    preds = sorted(inc)
                    conds = [inc[p][0] for p in preds]
                    reach = z3.simplify(z3.Or(*conds))
                    if z3.is_false(reach):
                        continue
                    pend = [ends[inc[p][1]] for p in preds]
                    env = self._merge([e[0] for e in pend], conds)
                    poison = self._merge([e[1] for e in pend], conds)
                    slots = self._merge([e[2] for e in pend], conds)
                    phis = {}
                    for line in text[b]:
                        m = re.fullmatch(r"%([\w.$\-]+) = phi (i\d+) (.*)", line)
                        if not m:
                            continue
                        w = _width(m.group(2))
                        v, p = None, None
                        for tok, pred in re.findall(r"\[\s*([^,\]]+?)\s*,\s*%([\w.$\-]+)\s*\]", m.group(3)):
                            if pred not in inc:
                                continue
                            self.env, self.poison = ends[inc[pred][1]][0], ends[inc[pred][1]][1]
                            a, pa = self.val(tok, w)
                            v = a if v is None else z3.If(inc[pred][0], a, v)
                            p = pa if p is None else z3.If(inc[pred][0], pa, p)
                        if v is None:
                            raise Unsupported(line)
                        phis[m.group(1)] = (v, p)
                    for nm, (v, p) in phis.items():
                        env[nm], poison[nm] = v, p
                self.env, self.poison = env, poison
                state = {k[5:]: (slots[k], slots["poison:" + k[5:]]) for k in slots if k.startswith("slot:")}
                edges: dict = {}
                for line in text[b]:
                    if re.match(r"%[\w.$\-]+ = phi ", line):
                        continue
                    out = self._inst(line, b, edges, reach, ub, state)
                    if out is not None:
                        v, p = out
                        ret_val = v if ret_val is None else z3.If(reach, v, ret_val)
                        ret_poison = p if ret_poison is None else z3.If(reach, p, ret_poison)
                end_slots = {}
                for k, (v, p) in state.items():
                    end_slots["slot:" + k], end_slots["poison:" + k] = v, p
                ends[node] = (self.env, self.poison, end_slots)
                for target, by_pred in edges.items():
                    cond = by_pred[b]
                    if (b, target) in back:
                        if c == bound:
                            exceeded.append(cond)
                            continue
                        dest = (target, c + 1)
                    else:
                        dest = (target, c)
                    incoming.setdefault(dest, {})[b] = (cond, node)
        if ret_val is None:  # no execution returns within the bound: ``exceeded`` (or UB) holds on every input
            ret_val, ret_poison = z3.BitVecVal(0, self.ret_width), z3.BoolVal(False)
        return (ret_val, ret_poison, z3.Or(*ub) if ub else z3.BoolVal(False),
                z3.Or(*exceeded) if exceeded else z3.BoolVal(False))

    def _inst(self, line, b, edges, reach, ub, state):
        line = _ATTACHED_METADATA.sub("", line)
        line = re.sub(r"\s#\d+\s*$", "", line)
        m = re.fullmatch(r"%([\w.$\-]+) = alloca (i\d+)(?:, align \d+)?", line)
        if m:  # a local scalar slot (the -O0 pattern); any use other than load/store is unsupported
            self.allocas[m.group(1)] = _width(m.group(2))
            state.pop(m.group(1), None)  # a fresh slot (an alloca met again in an unrolled loop)
            return None
        m = re.fullmatch(r"store (i\d+) (\S+), ptr %([\w.$\-]+)(?:, align \d+)?", line)
        if m:
            if m.group(3) not in self.allocas or _width(m.group(1)) != self.allocas[m.group(3)]:
                raise Unsupported(line)
            state[m.group(3)] = self.val(m.group(2), self.allocas[m.group(3)])
            return None
        m = re.fullmatch(r"%([\w.$\-]+) = load (i\d+), ptr %([\w.$\-]+)(?:, align \d+)?", line)
        if m:
            a = m.group(3)
            if a not in self.allocas or a not in state or _width(m.group(2)) != self.allocas[a]:
                raise Unsupported(line)  # not a local slot, or possibly uninitialised (undef)
            self.env[m.group(1)], self.poison[m.group(1)] = state[a]
            return None
        if line.startswith("ret "):
            parts = line.split()
            if len(parts) != 3:
                raise Unsupported(line)
            return self.val(parts[2], self.ret_width)
        if line.startswith("br "):
            m = re.fullmatch(r"br label %([\w.$\-]+)", line)
            if m:
                edges.setdefault(m.group(1), {})[b] = reach
                return None
            m = re.fullmatch(r"br i1 (\S+), label %([\w.$\-]+), label %([\w.$\-]+)", line)
            if not m:
                raise Unsupported(line)
            c, pc = self.val(m.group(1), 1)
            ub.append(z3.And(reach, pc))
            t = z3.And(reach, c == 1)
            f = z3.And(reach, c == 0)
            d = edges.setdefault(m.group(2), {})
            d[b] = z3.Or(d[b], t) if b in d else t
            d = edges.setdefault(m.group(3), {})
            d[b] = z3.Or(d[b], f) if b in d else f
            return None
        if line == "unreachable":
            ub.append(reach)
            return None
        m = re.fullmatch(r"%([\w.$\-]+) = (.*)", line)
        if not m:
            raise Unsupported(line)
        name, rhs = m.group(1), m.group(2)
        if re.match(r"(alloca|load|store|getelementptr|call|tail call|atomic|cmpxchg)\b", rhs) and \
                not re.search(r"@llvm\.(smax|smin|umax|umin|abs)\.", rhs):
            raise Unsupported(rhs)
        v, p = self._rhs(rhs, b, edges, reach, ub)
        self.env[name], self.poison[name] = v, p
        return None

    def _rhs(self, rhs, b, edges, reach, ub):
        toks = rhs.replace(",", " , ").split()
        op = toks[0]
        if op in _BIN:
            m = re.fullmatch(r"(\w+)((?: (?:nsw|nuw|exact|disjoint))*) (i\d+) (\S+), (\S+)", rhs)
            if not m:
                raise Unsupported(rhs)
            flags, w = m.group(2).split(), _width(m.group(3))
            a, pa = self.val(m.group(4), w)
            c, pc = self.val(m.group(5), w)
            return self._binop(op, flags, w, a, pa, c, pc, reach, ub)
        if op == "icmp":
            m = re.fullmatch(r"icmp (samesign )?(\w+) (i\d+) (\S+), (\S+)", rhs)
            if not m:
                raise Unsupported(rhs)
            w = _width(m.group(3))
            a, pa = self.val(m.group(4), w)
            c, pc = self.val(m.group(5), w)
            res = z3.If(_ICMP[m.group(2)](a, c), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
            p = z3.Or(pa, pc)
            if m.group(1):
                p = z3.Or(p, z3.Extract(w - 1, w - 1, a) != z3.Extract(w - 1, w - 1, c))
            return res, p
        if op in ("zext", "sext", "trunc"):
            m = re.fullmatch(r"(zext|sext|trunc)((?: (?:nneg|nuw|nsw))*) (i\d+) (\S+) to (i\d+)", rhs)
            if not m:
                raise Unsupported(rhs)
            w1, w2 = _width(m.group(3)), _width(m.group(5))
            a, pa = self.val(m.group(4), w1)
            flags = m.group(2).split()
            if op == "zext":
                res = z3.ZeroExt(w2 - w1, a)
                p = z3.Or(pa, a < 0) if "nneg" in flags else pa
            elif op == "sext":
                res = z3.SignExt(w2 - w1, a)
                p = pa
            else:
                res = z3.Extract(w2 - 1, 0, a)
                p = pa
                if "nuw" in flags:
                    p = z3.Or(p, z3.ZeroExt(w1 - w2, res) != a)
                if "nsw" in flags:
                    p = z3.Or(p, z3.SignExt(w1 - w2, res) != a)
            return res, p
        if op == "freeze":
            m = re.fullmatch(r"freeze (i\d+) (\S+)", rhs)
            if not m or self.prefix == "src":
                raise Unsupported("freeze in source")
            w = _width(m.group(1))
            a, pa = self.val(m.group(2), w)
            self.fresh += 1
            return z3.If(pa, z3.BitVec(f"{self.prefix}_frz{self.fresh}", w), a), z3.BoolVal(False)
        if op == "select":
            m = re.fullmatch(r"select i1 (\S+), (i\d+) (\S+), (i\d+) (\S+)", rhs)
            if not m:
                raise Unsupported(rhs)
            w = _width(m.group(2))
            c, pc = self.val(m.group(1), 1)
            a, pa = self.val(m.group(3), w)
            d, pd = self.val(m.group(5), w)
            return z3.If(c == 1, a, d), z3.Or(pc, z3.If(c == 1, pa, pd))
        if op == "phi":
            m = re.fullmatch(r"phi (i\d+) (.*)", rhs)
            if not m:
                raise Unsupported(rhs)
            w = _width(m.group(1))
            inc = re.findall(r"\[\s*([^,\]]+?)\s*,\s*%([\w.$\-]+)\s*\]", m.group(2))
            v, p = None, None
            for tok, pred in inc:
                a, pa = self.val(tok, w)
                cond = edges.get(b, {}).get(pred, z3.BoolVal(False))
                v = a if v is None else z3.If(cond, a, v)
                p = pa if p is None else z3.If(cond, pa, p)
            return v, p
        if op in ("call", "tail"):
            m = re.search(r"call (?:\w+ )*(i\d+) @llvm\.(smax|smin|umax|umin|abs)\.i\d+\((.*)\)", rhs)
            if not m:
                raise Unsupported(rhs)
            w = _width(m.group(1))
            args = [re.sub(r"\s+(noundef|signext|zeroext|immarg)\b", "", x).split() for x in _split_top(m.group(3))]
            ops = [self.val(a[-1], _width(a[0])) for a in args]
            kind = m.group(2)
            if kind == "abs":
                (a, pa), (flag, _) = ops
                res = z3.If(a < 0, -a, a)
                mn = z3.BitVecVal(1 << (w - 1), w)
                p = z3.Or(pa, z3.And(flag == 1, a == mn))
                return res, p
            (a, pa), (c, pc) = ops
            fn = {"smax": lambda: z3.If(a > c, a, c), "smin": lambda: z3.If(a < c, a, c),
                  "umax": lambda: z3.If(z3.UGT(a, c), a, c), "umin": lambda: z3.If(z3.ULT(a, c), a, c)}[kind]
            return fn(), z3.Or(pa, pc)
        raise Unsupported(f"instruction {op}")

    def _binop(self, op, flags, w, a, pa, c, pc, reach, ub):
        p = z3.Or(pa, pc)
        zero = z3.BitVecVal(0, w)
        if op == "add":
            res = a + c
            if "nsw" in flags:
                p = z3.Or(p, z3.Not(z3.BVAddNoOverflow(a, c, True)), z3.Not(z3.BVAddNoUnderflow(a, c)))
            if "nuw" in flags:
                p = z3.Or(p, z3.Not(z3.BVAddNoOverflow(a, c, False)))
        elif op == "sub":
            res = a - c
            if "nsw" in flags:
                p = z3.Or(p, z3.Not(z3.BVSubNoOverflow(a, c)), z3.Not(z3.BVSubNoUnderflow(a, c, True)))
            if "nuw" in flags:
                p = z3.Or(p, z3.ULT(a, c))
        elif op == "mul":
            res = a * c
            if "nsw" in flags:
                p = z3.Or(p, z3.Not(z3.BVMulNoOverflow(a, c, True)), z3.Not(z3.BVMulNoUnderflow(a, c)))
            if "nuw" in flags:
                p = z3.Or(p, z3.Not(z3.BVMulNoOverflow(a, c, False)))
        elif op in ("udiv", "sdiv", "urem", "srem"):
            ub.append(z3.And(reach, z3.Or(pc, c == 0)))
            mn = z3.BitVecVal(1 << (w - 1), w)
            if op[0] == "s":
                ub.append(z3.And(reach, z3.Not(pa), a == mn, c == z3.BitVecVal(-1, w)))
            safe = z3.If(c == 0, z3.BitVecVal(1, w), c)
            res = {"udiv": lambda: z3.UDiv(a, safe), "sdiv": lambda: a / safe, "urem": lambda: z3.URem(a, safe),
                   "srem": lambda: z3.SRem(a, safe)}[op]()
            p = pa
            if "exact" in flags:
                rem = z3.URem(a, safe) if op == "udiv" else z3.SRem(a, safe)
                p = z3.Or(p, rem != 0)
        elif op in ("shl", "lshr", "ashr"):
            big = z3.UGE(c, z3.BitVecVal(w, w))
            p = z3.Or(p, big)
            if op == "shl":
                res = a << c
                if "nuw" in flags:
                    p = z3.Or(p, z3.LShR(res, c) != a)
                if "nsw" in flags:
                    p = z3.Or(p, (res >> c) != a)
            else:
                res = z3.LShR(a, c) if op == "lshr" else a >> c
                if "exact" in flags:
                    p = z3.Or(p, (res << c) != a)
        elif op == "and":
            res = a & c
        elif op == "or":
            res = a | c
            if "disjoint" in flags:
                p = z3.Or(p, (a & c) != zero)
        else:
            res = a ^ c
        return res, p


def formal_rlimit(timeout_ms: int) -> int:
    """z3 resource budget of a formal check with nominal time-out ``timeout_ms`` (see
    :mod:`papers.cirbench.limits`)."""
    return max(1, int(timeout_ms)) * RLIMIT_PER_MS


def _solver(timeout_ms: int):
    """A QF_BV solver whose deciding budget is z3's resource limit (deterministic: the same query stops at the same
    point on a busy machine); the wall-clock limit, FORMAL_WALL_FACTOR times longer, only guards a stuck solver."""
    solver = z3.SolverFor("QF_BV")
    solver.set("rlimit", formal_rlimit(timeout_ms))
    solver.set("timeout", int(timeout_ms * FORMAL_WALL_FACTOR))
    solver.set("random_seed", 0)
    return solver


def _unknown(solver, dt) -> dict:
    reason = solver.reason_unknown()
    if "timeout" in reason:  # the wall-clock guard, not the resource budget, stopped z3 (a heavily loaded machine)
        return {"verdict": "UNKNOWN", "counterexample": None, "detail": "formal: wall-clock guard reached",
                "time_s": dt, "wall_guard": True}
    return {"verdict": "UNKNOWN", "counterexample": None, "detail": f"formal: solver {reason}", "time_s": dt}


def _counterexample(solver, orig_names, args) -> dict:
    model = solver.model()
    cex = {}
    for nm, a in zip(orig_names, args):
        v = model.eval(a, model_completion=True).as_long()
        w = a.size()
        cex[nm] = v - (1 << w) if v >> (w - 1) else v
    return cex


def formal(src_ir: str, tgt_ir: str, function: str, timeout_ms: int = 10000, unroll_bound: int = 0) -> dict:
    """Refinement check src -> tgt of one function in QF_BV; {'verdict', 'counterexample', 'detail', 'time_s'}.

    Loop-free functions: EQ, NOT_EQ or UNKNOWN. When either function has a loop and ``unroll_bound`` k > 0, both
    are unrolled (:meth:`_Encoder.encode_unrolled`) and the verdict is one of

    - NOT_EQ: an input on which both finish within k back edges and refinement fails (a real counterexample);
    - EQ: no input takes more than k back edges in either function (the trip counts are small and known), so the
      unrolled encoding is exact, and refinement is proved;
    - BOUNDED_EQ: refinement holds on every input on which both finish within k back edges (``bound: k``), and
      some input does; nothing is claimed beyond; never counted as equivalence;
    - UNKNOWN: no input finishes within k, the solver's budget ran out, or an instruction is outside the fragment.

    The solver stops at the resource budget :func:`formal_rlimit` (deterministic) or, on a stuck solver, at
    ``FORMAL_WALL_FACTOR * timeout_ms`` wall milliseconds (``wall_guard: True`` in the result); both are UNKNOWN."""
    if isinstance(unroll_bound, bool) or not isinstance(unroll_bound, int) or unroll_bound < 0:
        raise ValueError(f"unroll_bound must be a non-negative integer, got {unroll_bound!r}")
    t0 = time.perf_counter()
    mods = []
    for ir in (src_ir, tgt_ir):
        mod, err = _parse(ir)
        if err:
            return {"verdict": "UNKNOWN", "counterexample": None, "detail": f"{err[0]}: {err[1]}", "time_s": 0.0}
        pto = llvm.create_pipeline_tuning_options(speed_level=0)
        pb = llvm.create_pass_builder(_tm(), pto)
        mpm = llvm.create_new_module_pass_manager()
        mpm.add_instruction_namer_pass()
        mpm.run(mod, pb)
        mods.append(mod)
    fs, ft = _find(mods[0], function), _find(mods[1], function)
    sig = signature(fs)
    orig_names = signature(_parse(src_ir)[0].get_function(function))["names"]
    try:
        args = [z3.BitVec(f"a{i}", _width(t)) for i, t in enumerate(sig["params"])]
        enc_s, enc_t = _Encoder(fs, args, "src"), _Encoder(ft, args, "tgt")
        if unroll_bound > 0 and (enc_s.has_loop() or enc_t.has_loop()):
            rs, ps, us, xs = enc_s.encode_unrolled(unroll_bound)
            rt, pt, ut, xt = enc_t.encode_unrolled(unroll_bound)
            return _formal_unrolled((rs, ps, us, xs), (rt, pt, ut, xt), unroll_bound, orig_names, args,
                                    timeout_ms, t0)
        rs, ps, us = enc_s.encode()
        rt, pt, ut = enc_t.encode()
    except Unsupported as exc:
        return {"verdict": "UNKNOWN", "counterexample": None, "detail": f"unsupported: {exc}",
                "time_s": time.perf_counter() - t0}
    refines = z3.Or(us, z3.And(z3.Not(ut), z3.Or(ps, z3.And(z3.Not(pt), rs == rt))))
    solver = _solver(timeout_ms)
    solver.add(z3.Not(refines))
    res = solver.check()
    dt = time.perf_counter() - t0
    if res == z3.unsat:
        return {"verdict": "EQ", "counterexample": None, "detail": "formal: refinement proved", "time_s": dt}
    if res == z3.sat:
        return {"verdict": "NOT_EQ", "counterexample": _counterexample(solver, orig_names, args),
                "detail": "formal: counterexample", "time_s": dt}
    return _unknown(solver, dt)


def _formal_unrolled(src, tgt, bound, orig_names, args, timeout_ms, t0) -> dict:
    """The three queries of a bounded check (see :func:`formal`): a counterexample within the bound; whether any
    execution goes past the bound (none: the proof is complete); whether any input finishes within it."""
    rs, ps, us, xs = src
    rt, pt, ut, xt = tgt
    refines = z3.Or(us, z3.And(z3.Not(ut), z3.Or(ps, z3.And(z3.Not(pt), rs == rt))))
    within = z3.And(z3.Not(xs), z3.Not(xt))
    solver = _solver(timeout_ms)
    solver.add(z3.Not(refines), within)
    res = solver.check()
    if res == z3.sat:
        return {"verdict": "NOT_EQ", "counterexample": _counterexample(solver, orig_names, args),
                "detail": f"formal: counterexample within {bound} back edges", "time_s": time.perf_counter() - t0,
                "bound": bound}
    if res != z3.unsat:
        return {**_unknown(solver, time.perf_counter() - t0), "bound": bound}
    past = _solver(timeout_ms)
    past.add(z3.Or(xs, xt))
    res = past.check()
    if res == z3.unsat:
        return {"verdict": "EQ", "counterexample": None, "time_s": time.perf_counter() - t0, "bound": bound,
                "detail": f"formal: refinement proved, loops unrolled completely (every run within {bound} back edges)"}
    if res != z3.sat:
        return {**_unknown(past, time.perf_counter() - t0), "bound": bound}
    some = _solver(timeout_ms)
    some.add(within)
    res = some.check()
    dt = time.perf_counter() - t0
    if res == z3.sat:
        return {"verdict": "BOUNDED_EQ", "counterexample": None, "bound": bound, "time_s": dt,
                "detail": f"formal: equivalent up to {bound} back edges (loop iterations), not beyond"}
    if res == z3.unsat:
        return {"verdict": "UNKNOWN", "counterexample": None, "time_s": dt, "bound": bound,
                "detail": f"formal: no input finishes within {bound} back edges"}
    return {**_unknown(some, dt), "bound": bound}


def in_fragment(ir: str, function: str) -> bool:
    """Whether one function lies in the formal fragment."""
    r = formal(ir, ir, function, 2000)
    return not str(r["detail"]).startswith("unsupported")


def in_loop_fragment(ir: str, function: str, unroll_bound: int) -> bool:
    """Whether one function has a loop and, unrolled ``unroll_bound`` times, lies in the formal fragment (no
    solver call: the encoding alone decides)."""
    mod, err = _parse(ir)
    if err or _find(mod, function) is None:
        return False
    name_values_inplace(mod)
    fn = _find(mod, function)
    try:
        args = [z3.BitVec(f"a{i}", _width(t)) for i, t in enumerate(signature(fn)["params"])]
        enc = _Encoder(fn, args, "src")
        if unroll_bound <= 0 or not enc.has_loop():
            return False
        enc.encode_unrolled(unroll_bound)
    except Unsupported:
        return False
    return True


def name_values_inplace(mod) -> None:
    """Run the instnamer pass on a parsed module (every value and block named)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=0)
    pb = llvm.create_pass_builder(_tm(), pto)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_instruction_namer_pass()
    mpm.run(mod, pb)


# -------------------------------------------------------------------------------------------- JIT / runs
_CT = {1: ctypes.c_uint8, 8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32, 64: ctypes.c_int64}


def _signed(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def run_inputs(ir: str, function: str, inputs: list, elem_bits: list) -> dict:
    """JIT ``function`` (one MCJIT engine) and call it on every input vector.

    ``inputs``: list of argument lists; a pointer argument is a list of ints (the buffer's contents, element
    width from ``elem_bits``). Returns {'outputs': [[ret, buf0, buf1, ...], ...]} with signed integers.
    """
    mod, err = _parse(ir)
    if err:
        return {"error": f"{err[0]}: {err[1]}"}
    mod.triple = _TRIPLE
    fn = _find(mod, function)
    sig = signature(fn)
    tm = _tm()
    ee = llvm.create_mcjit_compiler(mod, tm)
    ee.finalize_object()
    addr = ee.get_function_address(function)
    rw = None if sig["ret"] == "void" else int(sig["ret"][1:])
    ctys = []
    for t, eb in zip(sig["params"], elem_bits):
        ctys.append(ctypes.c_void_p if t == "ptr" else _CT[int(t[1:])])
    proto = ctypes.CFUNCTYPE(None if rw is None else _CT[rw], *ctys)(addr)
    outs = []
    for vec in inputs:
        cargs, bufs = [], []
        for t, eb, v in zip(sig["params"], elem_bits, vec):
            if t == "ptr":
                arr = (_CT[eb] * len(v))(*[_signed(x, eb) for x in v])
                bufs.append((arr, eb))
                cargs.append(ctypes.cast(arr, ctypes.c_void_p))
            else:
                cargs.append(_signed(v, int(t[1:])))
        r = proto(*cargs)
        row = [None if rw is None else _signed(int(r), rw)]
        for arr, eb in bufs:
            row.append([_signed(int(x), eb) for x in arr])
        outs.append(row)
    return {"outputs": outs}


def o3_and_codegen_time(ir: str) -> dict:
    """Seconds of the -O3 pipeline plus object emission of one module (performance comparison)."""
    t0 = time.perf_counter()
    mod, err = _parse(ir)
    if err:
        return {"error": err[1]}
    mod.triple = _TRIPLE
    tm = _tm()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    tm.emit_object(mod)
    return {"time_s": time.perf_counter() - t0}


def emit_many(texts: list) -> list:
    """Objects (hex) of many modules in one child; None for a module that does not emit."""
    out = []
    for text in texts:
        try:
            r = emit_object(text)
        except Exception:  # noqa: BLE001 - one bad module must not lose the others
            r = {}
        out.append(r.get("object"))
    return out


def emit_asm_many(texts: list) -> list:
    """Assembly listings (AT&T syntax, same target machine as :func:`emit_object`); None for a module that
    does not emit."""
    out = []
    for text in texts:
        try:
            mod, err = _parse(text)
            if err:
                out.append(None)
                continue
            mod.triple = _TRIPLE
            out.append(_tm().emit_assembly(mod))
        except Exception:  # noqa: BLE001 - one bad module must not lose the others
            out.append(None)
    return out


def emit_object(ir: str) -> dict:
    """Object file (hex) from IR with the fixed target machine (x86-64, codegen level 2, PIC)."""
    mod, err = _parse(ir)
    if err:
        return {"error": f"{err[0]}: {err[1]}"}
    mod.triple = _TRIPLE
    return {"object": _tm().emit_object(mod).hex()}


def check_pair(src_ir: str, tgt_ir: str, function: str, timeout_ms: int, do_formal: bool,
               unroll_bound: int = 0) -> dict:
    """Verify both texts, read both signatures of ``function`` and (``do_formal``) run :func:`formal` (loops
    unrolled ``unroll_bound`` times)."""
    out = {}
    for side, ir in (("src", src_ir), ("tgt", tgt_ir)):
        v = verify(ir, function)
        out[side] = {"ok": v["ok"], "message": v["message"], "signature": v["signature"]}
    if do_formal and out["src"]["ok"] and out["tgt"]["ok"] and out["src"]["signature"] and out["tgt"]["signature"] \
            and out["src"]["signature"]["ret"] == out["tgt"]["signature"]["ret"] \
            and out["src"]["signature"]["params"] == out["tgt"]["signature"]["params"]:
        out["formal"] = formal(src_ir, tgt_ir, function, timeout_ms, unroll_bound)
    return out


def name_values(ir: str) -> dict:
    """The module printed after the instnamer pass (every value and block named)."""
    mod, err = _parse(ir)
    if err:
        return {"ok": False, "ir": None}
    name_values_inplace(mod)
    return {"ok": True, "ir": str(mod)}


def batch(calls: list) -> list:
    """Several worker calls ``[[name, args], ...]`` in one child (for the project's own trusted IR)."""
    table = {"verify": verify, "passes": passes, "normalise": normalise, "name_values": name_values,
             "analyse": analyse, "formal": formal, "in_fragment": in_fragment,
             "in_loop_fragment": in_loop_fragment}
    return [table[name](*args) for name, args in calls]


def check_many(src_ir: str, cands: list, function: str, src_sig: dict, timeout_ms: int, do_formal: bool,
               vectors: list, elem_bits: list, src_outputs: list, run_limit_s: float,
               run_wall_s: float | None = None, unroll_bound: int = 0) -> None:
    """Check many candidates against one source in one child; one JSON line per finished candidate on stdout
    (so that the parent keeps the finished ones if a later candidate crashes or hangs the child). A JIT run
    that uses more than ``run_limit_s`` seconds of CPU time ends the child by SIGPROF (CPU time, not wall
    clock, so that load on the machine does not end a run early), one that takes more than ``run_wall_s`` wall
    seconds (default 3 x ``run_limit_s``: a candidate that sleeps or blocks) by SIGALRM, and so does a formal
    check that runs past its wall-clock guard + 5 s. The parent tells these apart from a crash by the signal.
    A formal BOUNDED_EQ (loops unrolled ``unroll_bound`` times) is not a proof: the candidate goes on to the
    differential layer like an UNKNOWN, and the result keeps ``formal_verdict`` and ``bound``."""
    import json
    import signal
    import sys
    for j, cand in enumerate(cands):
        signal.setitimer(signal.ITIMER_REAL, 3 * timeout_ms / 1000 * FORMAL_WALL_FACTOR + 5.0)  # <= 3 queries
        v = verify(cand, function)
        sig = v["signature"]
        if not v["ok"]:
            res = {"valid": False, "detail": f"invalid IR: {v['message'][:200]}"}
        elif sig is None:
            res = {"valid": False, "detail": f"function {function} is not defined"}
        elif (sig["ret"], sig["params"]) != (src_sig["ret"], src_sig["params"]):
            res = {"valid": False, "detail": "signatures differ"}
        else:
            res = {"valid": True, "verdict": "UNKNOWN", "layer": None, "counterexample": None, "detail": "",
                   "times": {}}
            if do_formal:
                f = formal(src_ir, cand, function, timeout_ms, unroll_bound)
                res["times"]["formal"] = f["time_s"]
                res.update(verdict=f["verdict"], counterexample=f["counterexample"], detail=f["detail"],
                           wall_guard=bool(f.get("wall_guard")), formal_verdict=f["verdict"], bound=f.get("bound"))
                if f["verdict"] not in ("UNKNOWN", "BOUNDED_EQ"):
                    res["layer"] = "formal"
                elif f["verdict"] == "BOUNDED_EQ":
                    res["layer"] = "formal"  # stays the answer only when no differential run follows
            if res["verdict"] in ("UNKNOWN", "BOUNDED_EQ") and vectors:
                t0 = time.perf_counter()
                sys.stdout.write(json.dumps({"j": j, "running": True}) + "\n")
                sys.stdout.flush()
                signal.setitimer(signal.ITIMER_REAL, run_wall_s or 3.0 * run_limit_s)
                signal.setitimer(signal.ITIMER_PROF, run_limit_s)
                outs = run_inputs(cand, function, vectors, elem_bits)["outputs"]
                signal.setitimer(signal.ITIMER_PROF, 0)
                signal.setitimer(signal.ITIMER_REAL, 0)
                bad = next((i for i, (a, b) in enumerate(zip(src_outputs, outs)) if a != b), None)
                res["times"]["differential"] = time.perf_counter() - t0
                res["layer"] = "differential"
                if bad is None:
                    res.update(verdict="EQ", detail=res["detail"] + f"; differential: {len(outs)} inputs agree")
                else:
                    res.update(verdict="NOT_EQ", detail=res["detail"] + "; differential: outputs differ",
                               counterexample={f"arg{i}": (x if isinstance(x, int) else "buffer")
                                               for i, x in enumerate(vectors[bad])})
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.write(json.dumps({"j": j, "result": res}) + "\n")
        sys.stdout.flush()


def callgrind_annotations(object_hexes: list, driver_c: str, runs: int) -> dict:
    """Link the driver with the candidate objects (``gcc -O1``), run the program ``runs`` times under
    ``valgrind --tool=callgrind`` and return ``{"annotations": [callgrind_annotate --inclusive=yes output per
    run]}``, or ``{"error": ...}``. Runs in the performance sandbox (:func:`papers.cirbench.ir.perf_sandbox_call`),
    in its scratch directory: the objects are compiled from model-written IR and execute only here."""
    import pathlib
    import subprocess

    objects = []
    for i, hexed in enumerate(object_hexes):
        path = pathlib.Path(f"o{i}.o")
        path.write_bytes(bytes.fromhex(hexed))
        objects.append(str(path))
    pathlib.Path("driver.c").write_text(driver_c)
    link = subprocess.run(["gcc", "-O1", "-o", "prog", "driver.c", *objects], capture_output=True, text=True)
    if link.returncode != 0:
        return {"error": f"driver link failed: {link.stderr[-800:]}"}
    annotations = []
    for r in range(int(runs)):
        out = f"cg{r}.out"
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "./prog"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            return {"error": f"callgrind failed: {run.stderr[-800:]}"}
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                             capture_output=True, text=True)
        annotations.append(ann.stdout)
    return {"annotations": annotations}
