"""The kernel generator: seeded, distinct by source and by normalised IR, compilable, and -O3 keeps semantics."""
import pytest

from papers.cirbench.generator import TEMPLATES, dedupe_by_ir, generate_loop_kernels


def test_generator_is_seeded_and_distinct():
    text, side = generate_loop_kernels(60, 3)
    assert (text, side) == generate_loop_kernels(60, 3) and text != generate_loop_kernels(60, 4)[0]
    assert len(side) == 60 and text.count("int32_t gen_") == 60
    assert {e["template"] for e in side.values()} == set(TEMPLATES)
    assert all(e["args"] == [["a", "ptr:i32"], ["n", "len:64"]] and e["ret"] == "i32" for e in side.values())
    with pytest.raises(ValueError, match="non-negative"):
        generate_loop_kernels(-1, 0)


def test_dedupe_by_ir_ignores_the_function_name():
    norm = {"a": "define i32 @a(i32 %0) { ret i32 %0 }", "b": "define i32 @b(i32 %0) { ret i32 %0 }",
            "c": "define i32 @c(i32 %0) { ret i32 1 }"}
    assert dedupe_by_ir(["a", "b", "c"], norm) == ["a", "c"]


def test_generated_kernels_compile_and_keep_semantics_at_o3():
    from papers.cirbench.corpus import build_corpus, load_sidecar
    from papers.cirbench.equiv import check_equivalence
    text, side = generate_loop_kernels(len(TEMPLATES), 11)      # one kernel per template
    corpus = build_corpus(sorted(side), sidecar={**load_sidecar(), **side}, extra_sources={"generated.c": text})
    for name, k in corpus.items():
        assert check_equivalence(k.o0, k.o3, function=name, arg_specs=k.arg_specs).verdict == "EQ", name
