"""The kernel generator: seeded, distinct by source and by normalised IR, compilable, and -O3 keeps semantics."""
import pytest

from papers.cirbench.generator import (TEMPLATES, canonical_names, count_duplicates, dedupe_by_ir,
                                       generate_loop_kernels, ir_fingerprint)

SCALAR_ARGS = {"count": [["n", "len:64"]], "fixed": [["x", "i32"]]}


def test_generator_is_seeded_and_distinct():
    text, side = generate_loop_kernels(60, 3)
    assert (text, side) == generate_loop_kernels(60, 3) and text != generate_loop_kernels(60, 4)[0]
    assert len(side) == 60 and text.count("int32_t gen_") == 60
    assert {e["template"] for e in side.values()} == set(TEMPLATES)
    assert all(e["args"] == SCALAR_ARGS.get(e["template"], [["a", "ptr:i32"], ["n", "len:64"]]) and e["ret"] == "i32"
               for e in side.values())
    with pytest.raises(ValueError, match="non-negative"):
        generate_loop_kernels(-1, 0)


def test_dedupe_by_ir_ignores_the_function_name():
    norm = {"a": "define i32 @a(i32 %0) { ret i32 %0 }", "b": "define i32 @b(i32 %0) { ret i32 %0 }",
            "c": "define i32 @c(i32 %0) { ret i32 1 }"}
    assert dedupe_by_ir(["a", "b", "c"], norm) == ["a", "c"]
    assert count_duplicates(["a", "b", "c"], norm) == 1 and count_duplicates(["a", "c"], norm) == 0


def test_fingerprint_canonicalises_names_and_metadata():
    from papers.cirbench import ir as IR
    one = "define i32 @p(i32 %x) {\n  %sum = add i32 %x, 1, !dbg !0\n  ret i32 %sum\n}\n!0 = !{}\n"
    two = "define i32 @q(i32 %y) {\nbb:\n  %t = add i32 %y, 1\n  ret i32 %t\n}\n"
    three = "define i32 @q(i32 %y) {\n  %t = add i32 %y, 2\n  ret i32 %t\n}\n"
    n1, n2, n3 = IR.normalise(one, "p"), IR.normalise(two, "q"), IR.normalise(three, "q")
    assert ir_fingerprint("p", n1) == ir_fingerprint("q", n2) != ir_fingerprint("q", n3)
    assert len(ir_fingerprint("p", n1)) == 64
    assert canonical_names(n2, "q") == "define i32 @f(i32 %v0) { v1: %v2 = add i32 %v0, 1 ret i32 %v2 }"
    with pytest.raises(ValueError, match="no normalised IR"):
        ir_fingerprint("p", None)


def test_generated_kernels_compile_and_keep_semantics_at_o3():
    from papers.cirbench.corpus import build_corpus, load_sidecar
    from papers.cirbench.equiv import check_equivalence
    text, side = generate_loop_kernels(len(TEMPLATES), 11)      # one kernel per template
    corpus = build_corpus(sorted(side), sidecar={**load_sidecar(), **side}, extra_sources={"generated.c": text})
    for name, k in corpus.items():
        r = check_equivalence(k.o0, k.o3, function=name, arg_specs=k.arg_specs, unroll_bound=8)
        assert r.verdict == "EQ", name
        if side[name]["template"] == "fixed":   # constant trip count: unrolled completely, proved formally
            assert r.layer == "formal", (name, r.detail)


def test_fingerprint_ignores_loop_metadata_ids():
    """Two copies of one loop carry different !llvm.loop ids when split from one module: the same fingerprint."""
    from papers.cirbench import ir as IR
    loop = ("define i32 @{f}(i32 %n) {{\nentry:\n  br label %h\nh:\n  %i = phi i32 [ 0, %entry ], [ %j, %h ]\n"
            "  %j = add i32 %i, 1\n  %c = icmp slt i32 %j, %n\n  br i1 %c, label %h, label %x, !llvm.loop !{m}\n"
            "x:\n  ret i32 %j\n}}\n!{m} = distinct !{{!{m}}}\n")
    a, b = IR.normalise(loop.format(f="a", m=0), "a"), IR.normalise(loop.format(f="b", m=7), "b")
    assert a is not None and "llvm.loop" not in a
    assert ir_fingerprint("a", a) == ir_fingerprint("b", b)
