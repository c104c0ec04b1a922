"""Unit tests of the cirbench harness: exact identities and small known answers derived from the math."""
from __future__ import annotations

import numpy as np
import pytest

from papers.cirbench import ir as IR
from papers.cirbench.corpus import CorpusError, _check_sidecar, compile_c
from papers.cirbench.equiv import check_equivalence, make_inputs
from papers.cirbench.instances import analysis_oracle, corrupt
from papers.cirbench.metrics import analysis_scores, pass_at_k
from papers.cirbench.rewriters import mutate

DOUBLE = "define i32 @f(i32 %x) {\n  %a = add i32 %x, %x\n  ret i32 %a\n}\n"
UDIV = "define i32 @g(i32 %x) {\n  %r = udiv i32 %x, 4\n  ret i32 %r\n}\n"
LSHR = "define i32 @g(i32 %x) {\n  %r = lshr i32 %x, 2\n  ret i32 %r\n}\n"
SLT = "define i1 @h(i32 %x, i32 %y) {\n  %r = icmp slt i32 %x, %y\n  ret i1 %r\n}\n"
ULT = "define i1 @h(i32 %x, i32 %y) {\n  %r = icmp ult i32 %x, %y\n  ret i1 %r\n}\n"
FACT = """define i64 @fact(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 1, %entry ], [ %i2, %loop ]
  %acc = phi i64 [ 1, %entry ], [ %acc2, %loop ]
  %acc2 = mul i64 %acc, %i
  %i2 = add i64 %i, 1
  %c = icmp sgt i64 %i2, %n
  br i1 %c, label %done, label %loop
done:
  ret i64 %acc2
}
"""


# ------------------------------------------------------------------------------------------- metrics
def test_pass_at_k_known_values():
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 5, 1) == 1.0
    assert pass_at_k(5, 2, 1) == pytest.approx(2 / 5)          # k = 1: c / n
    assert pass_at_k(5, 1, 5) == 1.0                            # any pass among all samples
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)      # 1 - C(3,2)/C(5,2)


@pytest.mark.parametrize("n,c,k", [(5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6), (5, 2.0, 1)])
def test_pass_at_k_bad_input(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_analysis_scores():
    gold = {"num_phis": 2, "dominators_of_return": ["bb", "bb3"]}
    assert analysis_scores({"num_phis": 2, "dominators_of_return": ["bb3", "bb"]}, gold) == (True, 1.0)
    em, f1 = analysis_scores({"num_phis": 3, "dominators_of_return": ["bb"]}, gold)
    assert not em and f1 == pytest.approx(2 * 1 / (3 + 2))     # tp = 1, |gold| = 3, |pred| = 2
    assert analysis_scores(None, gold) == (False, 0.0)


# ------------------------------------------------------------------------------------------- IR layer
def test_verify_and_passes():
    assert IR.verify_ir(DOUBLE).ok
    bad = IR.verify_ir("define i32 @f() {\n  ret i64 0\n}\n")
    assert not bad.ok and bad.stage == "parse" and "type" in bad.message
    unterminated = IR.verify_ir("define i32 @f(i32 %x) {\nbb:\n  %a = add i32 %x, 1\n}\n")
    assert not unterminated.ok
    assert not IR.verify_ir("").ok
    with pytest.raises(TypeError):
        IR.verify_ir(b"define")
    out = IR.apply_passes(DOUBLE, ["instcombine"])
    assert "shl i32 %x, 1" in out


def test_apply_passes_errors():
    with pytest.raises(ValueError, match="unknown pass"):
        IR.apply_passes(DOUBLE, ["not-a-pass"])
    with pytest.raises(ValueError, match="unknown level"):
        IR.apply_passes(DOUBLE, "O7")
    with pytest.raises(IR.IRError):
        IR.apply_passes("define i32 @f( {", ["dce"])


def test_run_function():
    assert IR.run_function(FACT, "fact", [5]) == 120
    assert IR.run_function(DOUBLE, "f", [-3]) == -6
    with pytest.raises(ValueError, match="not defined"):
        IR.run_function(FACT, "nope", [5])
    with pytest.raises(ValueError, match="args"):
        IR.run_function(FACT, "fact", [5, 6])
    with pytest.raises(IR.IRError):
        IR.run_function("garbage", "f", [1])
    spin = "define i32 @s(i32 %x) {\nentry:\n  br label %l\nl:\n  br label %l\n}\n"
    with pytest.raises(IR.ExecutionError):
        IR.run_function(spin, "s", [1], timeout_s=1.0)


def test_extract_ir():
    assert IR.extract_ir("text\n```llvm\ndefine void @a() {\n  ret void\n}\n```\nmore") .startswith("define void")
    assert IR.extract_ir("define i32 @x() {") == "define i32 @x() {"
    assert IR.extract_ir("Sorry, I cannot help.") is None


# --------------------------------------------------------------------------------------- equivalence
def test_formal_known_answers():
    r = check_equivalence(UDIV, LSHR, "g")
    assert (r.verdict, r.layer) == ("EQ", "formal")
    r = check_equivalence(SLT, ULT, "h")
    assert (r.verdict, r.layer) == ("NOT_EQ", "formal")
    x, y = r.counterexample["x"], r.counterexample["y"]
    assert (x < y) != ((x % 2**32) < (y % 2**32))              # the counterexample really separates them


def test_refinement_is_directional():
    # add nsw may be poison where add is not: dropping a flag refines, adding one does not
    nsw = "define i32 @p(i32 %x) {\n  %r = add nsw i32 %x, 1\n  ret i32 %r\n}\n"
    plain = "define i32 @p(i32 %x) {\n  %r = add i32 %x, 1\n  ret i32 %r\n}\n"
    assert check_equivalence(nsw, plain, "p").verdict == "EQ"
    r = check_equivalence(plain, nsw, "p")
    assert r.verdict == "NOT_EQ" and r.counterexample == {"x": 2**31 - 1}


def test_ub_source_allows_anything():
    # division by zero is UB in the source, so any result is a refinement for y = 0
    src = "define i32 @d(i32 %x, i32 %y) {\n  %r = udiv i32 %x, %y\n  ret i32 %r\n}\n"
    tgt = ("define i32 @d(i32 %x, i32 %y) {\n  %z = icmp eq i32 %y, 0\n  %s = select i1 %z, i32 1, i32 %y\n"
           "  %q = udiv i32 %x, %s\n  %r = select i1 %z, i32 7, i32 %q\n  ret i32 %r\n}\n")
    assert check_equivalence(src, tgt, "d").verdict == "EQ"
    assert check_equivalence(tgt, src, "d").verdict == "NOT_EQ"


def test_differential_layer_and_loops():
    fact2 = FACT.replace("%acc2 = mul i64 %acc, %i", "%acc2 = mul i64 %i, %acc")
    r = check_equivalence(FACT, fact2, "fact", arg_specs=["i64:0:20"])
    assert (r.verdict, r.layer) == ("EQ", "differential")        # loops are outside the formal fragment
    wrong = FACT.replace("%i2 = add i64 %i, 1", "%i2 = add i64 %i, 2")
    assert check_equivalence(FACT, wrong, "fact", arg_specs=["i64:0:20"]).verdict == "NOT_EQ"
    r = check_equivalence(UDIV, LSHR, "g", layers=("differential",))
    assert (r.verdict, r.layer) == ("EQ", "differential")


def test_equivalence_bad_input():
    with pytest.raises(ValueError, match="layer"):
        check_equivalence(UDIV, LSHR, "g", layers=("alive2",))
    with pytest.raises(ValueError, match="not defined"):
        check_equivalence(UDIV, LSHR, "nope")
    other = "define i64 @g(i64 %x) {\n  ret i64 %x\n}\n"
    with pytest.raises(ValueError, match="signatures differ"):
        check_equivalence(UDIV, other, "g")
    with pytest.raises(IR.IRError):
        check_equivalence(UDIV, "define i32 @g(i32 %x) {", "g")
    with pytest.raises(IR.IRError):
        check_equivalence(UDIV, "", "g")
    with pytest.raises(ValueError, match="n_random"):
        check_equivalence(UDIV, LSHR, "g", n_random=-1)


def test_make_inputs_boundaries():
    vecs, bits = make_inputs(["i32"], None, n_random=4, seed=0)
    first = {v[0] for v in vecs[:-4]}
    assert first == {0, 1, -1, 2, -2, -2**31, -2**31 + 1, 2**31 - 2, 2**31 - 1}
    vecs, _ = make_inputs(["i32", "i32", "i32", "i32"], None, n_random=0, seed=0)
    assert len(vecs) == 256                                      # 9^4 product capped at 256
    vecs, bits = make_inputs(["ptr", "i32"], ["ptr:i32", "len:64"], n_random=2, seed=0)
    assert bits == [32, 0] and all(len(v[0]) == 64 and 0 <= v[1] <= 64 for v in vecs)


# ------------------------------------------------------------------------------- instances and corpus
def test_analysis_oracle_loop():
    named = IR.batch([("name_values", (FACT,))])[0]["ir"]
    o = analysis_oracle(named, "fact")
    assert o["num_blocks"] == 3 and o["num_phis"] == 2 and o["num_loads"] == 0
    assert o["loops"] == [{"header": "loop", "latches": ["loop"], "depth": 1}]
    assert o["dominators_of_return"] == ["done", "entry", "loop"]


@pytest.mark.parametrize("kind", ["delete_def", "binop_type", "phi_pred", "drop_terminator", "use_before_def",
                                  "ret_type"])
def test_corruptions_break_verification(kind):
    text = FACT
    bad = corrupt(text, "fact", kind, np.random.default_rng(0))
    assert bad is not None and bad != text
    assert not IR.verify_ir(bad).ok


def test_mutant_is_caught():
    m = mutate(UDIV, "g", np.random.default_rng(0))
    assert m is not None and check_equivalence(UDIV, m, "g").verdict == "NOT_EQ"


def test_sidecar_mismatch_and_bad_c(tmp_path):
    with pytest.raises(CorpusError, match="sidecar"):
        _check_sidecar("k", {"ret": "i32", "args": [["a", "ptr:i32"]]}, {"ret": "i32", "params": ["i32"]})
    bad = tmp_path / "bad.c"
    bad.write_text("int f(int x) { return x + ; }\n")
    with pytest.raises(CorpusError, match="bad.c"):
        compile_c(bad)


def test_formal_local_slots():
    # the -O0 pattern (a local slot written on both arms of a branch) is inside the formal fragment
    o0 = """define i32 @m(i32 %a, i32 %b) {
entry:
  %s = alloca i32, align 4
  %c = icmp sgt i32 %a, %b
  br i1 %c, label %t, label %f
t:
  store i32 %a, ptr %s, align 4
  br label %j
f:
  store i32 %b, ptr %s, align 4
  br label %j
j:
  %r = load i32, ptr %s, align 4
  ret i32 %r
}
"""
    ssa = "define i32 @m(i32 %a, i32 %b) {\n  %r = call i32 @llvm.smax.i32(i32 %a, i32 %b)\n  ret i32 %r\n}\n" \
          "declare i32 @llvm.smax.i32(i32, i32)\n"
    r = check_equivalence(o0, ssa, "m")
    assert (r.verdict, r.layer) == ("EQ", "formal")
    smin = ssa.replace("smax", "smin")
    r = check_equivalence(o0, smin, "m")
    assert (r.verdict, r.layer) == ("NOT_EQ", "formal")
    uninit = o0.replace("  store i32 %b, ptr %s, align 4\n", "")   # undef on one path: outside the fragment
    r = check_equivalence(uninit, ssa, "m", layers=("formal",))
    assert r.verdict == "UNKNOWN"


def test_reply_without_ir_is_invalid_not_raised():
    from papers.cirbench.experiments import _Scorer, score_candidate
    from papers.cirbench.instances import Instance

    inst = Instance("t-0", "transform", "g", "g", UDIV, reference=LSHR, arg_specs=["i32"])
    out = score_candidate(_Scorer({}, 0), inst, "I would rather not.")
    assert out["valid"] is False and out["equiv"] is False
    out = score_candidate(_Scorer({}, 0), inst, "```llvm\n" + LSHR + "```")
    assert out["valid"] and out["equiv_formal"]


# ------------------------------------------------------------------------- optional LLVM tools (tools.py)
from papers.cirbench import tools as T  # noqa: E402
from papers.cirbench.instances import oracle_from_facts  # noqa: E402

# entry -> outer header b1 -> inner self-loop b2 -> b3 (outer latch) -> b1 | exit b4
NEST = {"blocks": ["b0", "b1", "b2", "b3", "b4"],
        "succ": {"b0": ["b1"], "b1": ["b2"], "b2": ["b2", "b3"], "b3": ["b1", "b4"], "b4": []},
        "counts": {"load": 0, "store": 0, "call": 0, "phi": 0}, "rets": ["b4"]}
NEST_LOOPS = [{"header": "b1", "latches": ["b3"], "depth": 1}, {"header": "b2", "latches": ["b2"], "depth": 2}]

# `opt -passes='print<loops>'` output in the documented format: LLVM 14 prints the loop tree only (stderr);
# newer LLVMs first print a "Loop info for function" line.
PRINT_LOOPS_14 = """Loop at depth 1 containing: %for.cond<header><exiting>,%for.body,%for.inc<latch>
    Loop at depth 2 containing: %for.body<header><latch><exiting>
Loop at depth 1 containing: %"odd name"<header><latch><exiting>
"""
PRINT_LOOPS_NEW = """Loop info for function 'f':
Loop at depth 1 containing: %loop<header><latch><exiting>
Loop info for function 'g':
Loop at depth 1 containing: %h<header>,%a<latch>,%b<exiting><latch>
"""
MCA_OUT = """[0] Code Region - base

Iterations:        100
Instructions:      300
Total Cycles:      104
Total uOps:        300

[1] Code Region - cand

Iterations:        100
Instructions:      200
Total Cycles:      53
"""
ASM = """\t.text
\t.globl\tf_o3
\t.p2align\t4
f_o3:                                   # @f_o3
\t.cfi_startproc
# %bb.0:
\ttestl\t%edi, %edi
\tjle\t.LBB0_2   # jump
.LBB0_1:
\taddl\t$1, %eax
\tjmp\t.LBB0_1
.LBB0_2:
\tretq
.Lfunc_end0:
\t.size\tf_o3, .Lfunc_end0-f_o3
"""


def test_llvm_version_and_find_tool():
    assert T.llvm_version("Debian LLVM version 14.0.6\n  Optimized build.") == (14, "14.0.6")
    assert T.llvm_version("Ubuntu LLVM version 19.1.7") == (19, "19.1.7")
    assert T.llvm_version("GNU opt 1.0") is None
    with pytest.raises(TypeError):
        T.llvm_version(b"LLVM version 14.0.6")
    r = T.find_tool(["no-such-opt-binary-xyz"])
    assert r["path"] is None and "not installed" in r["reason"]
    with pytest.raises(ValueError, match="candidates"):
        T.find_tool([])


def test_parse_print_loops_documented_format():
    loops = T.parse_print_loops(PRINT_LOOPS_14)
    assert [(x["function"], x["depth"], x["header"], x["latches"]) for x in loops] == [
        (None, 1, "for.cond", ["for.inc"]), (None, 2, "for.body", ["for.body"]), (None, 1, "odd name", ["odd name"])]
    assert loops[0]["blocks"] == ["for.cond", "for.body", "for.inc"]
    loops = T.parse_print_loops(PRINT_LOOPS_NEW)
    assert [(x["function"], x["header"], x["latches"]) for x in loops] == [("f", "loop", ["loop"]),
                                                                           ("g", "h", ["a", "b"])]
    assert T.parse_print_loops("nothing here\n") == []
    with pytest.raises(ValueError, match="header"):
        T.parse_print_loops("Loop at depth 1 containing: %a,%b<latch>\n")


def test_cfg_skeleton_and_oracle_on_nest():
    text, names = T.cfg_skeleton(NEST, "k0")
    assert names == {f"k0_b{j}": f"b{j}" for j in range(5)}
    assert "br i1 %c, label %k0_b2, label %k0_b3" in text and "ret void" in text
    assert oracle_from_facts(NEST)["loops"] == NEST_LOOPS
    assert oracle_from_facts(NEST)["dominators_of_return"] == ["b0", "b1", "b2", "b3", "b4"]
    three = {"blocks": ["e", "x", "y", "z"], "succ": {"e": ["x", "y", "z"], "x": [], "y": [], "z": []}}
    assert "switch i32 %s, label %k1_b1 [ i32 1, label %k1_b2 i32 2, label %k1_b3 ]" in T.cfg_skeleton(three, "k1")[0]
    with pytest.raises(ValueError, match="prefix"):
        T.cfg_skeleton(NEST, "1bad")
    with pytest.raises(ValueError, match="unique"):
        T.cfg_skeleton({"blocks": ["", ""], "succ": {"": []}}, "k2")


@pytest.mark.skipif(T.find_tool(["opt-19", "opt"])["path"] is None, reason="no opt of LLVM >= 13 installed")
def test_opt_loops_matches_oracle():
    opt = T.find_tool(["opt-19", "opt"])["path"]
    flat = {"blocks": ["a", "b"], "succ": {"a": ["b"], "b": []}}
    got = T.opt_loops(opt, {"k0": T.cfg_skeleton(NEST, "k0"), "k1": T.cfg_skeleton(flat, "k1")})
    assert got == {"k0": NEST_LOOPS, "k1": []}


def test_asm_body_and_parse_mca():
    body = T.asm_function_body(ASM, "f_o3")
    assert body == ["\ttestl\t%edi, %edi", "\tjle\t.Lf_o3_BB0_2", ".Lf_o3_BB0_1:", "\taddl\t$1, %eax",
                    "\tjmp\t.Lf_o3_BB0_1", ".Lf_o3_BB0_2:", "\tretq"]
    with pytest.raises(ValueError, match="symbol"):
        T.asm_function_body(ASM, "g")
    src = T.mca_source({"b": ["\tretq"], "a": ["\tnop"]})
    assert src.index("LLVM-MCA-BEGIN a") < src.index("LLVM-MCA-BEGIN b") and src.count("LLVM-MCA-END") == 2
    assert T.parse_mca(MCA_OUT) == {"base": 104, "cand": 53}
    assert T.parse_mca("Iterations: 10\nTotal Cycles:      12\n") == {"": 12}
    with pytest.raises(ValueError, match="two"):
        T.parse_mca("Total Cycles: 1\nTotal Cycles: 2\n")


@pytest.mark.skipif(T.find_tool(["llvm-mca-19", "llvm-mca"])["path"] is None, reason="no llvm-mca installed")
def test_mca_cycles_same_code_same_cycles():
    mca = T.find_tool(["llvm-mca-19", "llvm-mca"])["path"]
    body = T.asm_function_body(ASM, "f_o3")
    out = T.mca_cycles(mca, {"x": body, "y": list(body), "z": body + body})
    assert out["x"] == out["y"] > 0 and out["z"] > out["x"]        # twice the instructions: more cycles
    with pytest.raises(ValueError, match="iterations"):
        T.mca_cycles(mca, {"x": body}, iterations=0)


# ------------------------------------------------------------------- local-model plumbing (scripted stand-in)
def test_plumbing_run_with_scripted_backend():
    from shared.lm.backends import ScriptedBackend
    from papers.cirbench.experiments import PLUMBING_LABEL, _Scorer, plumbing_run
    from papers.cirbench.instances import Instance

    replies = ["```llvm\n" + LSHR + "```", "I do not know LLVM."]           # one IR block, one without
    backend = ScriptedBackend(lambda messages, n, **kw: replies[:n], model="two-replies")
    inst = Instance("transform-000", "transform", "g", "g", UDIV, reference=LSHR, arg_specs=["i32"])
    m, rep = plumbing_run([inst], backend, _Scorer({}, 0), n=2, max_tokens=16)
    t = m["tracks"]["transform"]
    assert (t["instances"], t["replies"], t["with_block"], t["valid"], t["equiv"]) == (1, 2, 1, 1, 1)
    assert t["valid@1"] == pytest.approx(0.5) and m["total"]["valid_share"] == pytest.approx(0.5)
    assert m["label"] == PLUMBING_LABEL and m["is_llm"] is False and "SCRIPTED STAND-IN" in m["llm_label"]
    assert [r["verdict"] for r in rep] == ["EQ", "INVALID"]
    assert len(backend.calls) == 1 and backend.calls[0].n == 2                # one request with n samples
    with pytest.raises(ValueError, match="n must"):
        plumbing_run([inst], backend, _Scorer({}, 0), n=0, max_tokens=16)
    with pytest.raises(ValueError, match="max_tokens"):
        plumbing_run([inst], backend, _Scorer({}, 0), n=1, max_tokens=0)


def test_plumbing_unknown_backend():
    from papers.cirbench.experiments import plumbing

    with pytest.raises(ValueError, match="backend"):
        plumbing({"backend": "gpt", "sizes": {}}, None)


# ----------------------------------------------------------------- second C frontend (clang-19) cross-check
def test_frontend_crosscheck_absent_and_stand_in(tmp_path, monkeypatch):
    import os
    import sys

    from papers.cirbench.experiments import frontend_crosscheck

    r = frontend_crosscheck(["popc8"], ["no-such-clang-xyz"])
    assert r["equiv_share"] is None and r["tool"] is None and "not installed" in r["reason"]
    # a stand-in "clang-19" that forwards to zig's clang: the same compiler, so every kernel must be EQ
    fake = tmp_path / "clang-19"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Debian clang version 19.1.7"; exit 0; fi\n'
                    f'exec {sys.executable} -m ziglang cc -target x86_64-linux-gnu "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    r = frontend_crosscheck(["popc8"], ["clang-19"])
    assert r["tool"] == "clang-19 19.1.7" and r["n_kernels"] == 1
    assert r["equiv_share"] == 1.0 and r["verdicts"]["popc8"]["verdict"] == "EQ"
