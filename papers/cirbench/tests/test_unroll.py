"""Bounded unrolling in the formal layer: known-equivalent and known-different loop pairs.

Semantics (see ``_worker.formal``): with loops unrolled k times, a counterexample on which both functions finish
within k back edges is NOT_EQ; a proof when no run takes more than k back edges is EQ; a proof only for the runs
within k is BOUNDED_EQ ("equivalent up to k iterations"), never counted as equivalence.
"""
from __future__ import annotations

import pytest

from papers.cirbench import ir as IR
from papers.cirbench.equiv import check_equivalence

# sum_{i < n} i, loop guarded at the top (header with phis)
SUM_LT = """define i32 @s(i32 %n) {
entry:
  br label %head
head:
  %i = phi i32 [ 0, %entry ], [ %i2, %body ]
  %acc = phi i32 [ 0, %entry ], [ %acc2, %body ]
  %c = icmp slt i32 %i, %n
  br i1 %c, label %body, label %exit
body:
  %acc2 = add i32 %acc, %i
  %i2 = add i32 %i, 1
  br label %head
exit:
  ret i32 %acc
}
"""
SUM_LE = SUM_LT.replace("icmp slt i32 %i, %n", "icmp sle i32 %i, %n")      # off by one in the bound
# the same sum after loop rotation (guard, then a bottom-tested loop): equivalent
SUM_ROT = """define i32 @s(i32 %n) {
entry:
  %g = icmp sgt i32 %n, 0
  br i1 %g, label %body, label %exit
body:
  %i = phi i32 [ 0, %entry ], [ %i2, %body ]
  %acc = phi i32 [ 0, %entry ], [ %acc2, %body ]
  %acc2 = add i32 %acc, %i
  %i2 = add i32 %i, 1
  %c = icmp slt i32 %i2, %n
  br i1 %c, label %body, label %exit
exit:
  %r = phi i32 [ 0, %entry ], [ %acc2, %body ]
  ret i32 %r
}
"""
# x added 4 times (a constant trip count) vs x << 2
FOUR = """define i32 @m(i32 %x) {
entry:
  br label %head
head:
  %i = phi i32 [ 0, %entry ], [ %i2, %body ]
  %acc = phi i32 [ 0, %entry ], [ %acc2, %body ]
  %c = icmp slt i32 %i, 4
  br i1 %c, label %body, label %exit
body:
  %acc2 = add i32 %acc, %x
  %i2 = add i32 %i, 1
  br label %head
exit:
  ret i32 %acc
}
"""
FIVE = FOUR.replace("icmp slt i32 %i, 4", "icmp slt i32 %i, 5")
FOUR_NSW = FOUR.replace("%acc2 = add i32", "%acc2 = add nsw i32")
SHL2 = "define i32 @m(i32 %x) {\n  %r = shl i32 %x, 2\n  ret i32 %r\n}\n"
MUL4_NSW = "define i32 @m(i32 %x) {\n  %r = mul nsw i32 %x, 4\n  ret i32 %r\n}\n"
# the -O0 pattern: a local slot written in the loop (alloca, load, store)
FOUR_SLOT = """define i32 @m(i32 %x) {
entry:
  %acc = alloca i32
  %i = alloca i32
  store i32 0, ptr %acc
  store i32 0, ptr %i
  br label %head
head:
  %iv = load i32, ptr %i
  %c = icmp slt i32 %iv, 4
  br i1 %c, label %body, label %exit
body:
  %a = load i32, ptr %acc
  %a2 = add i32 %a, %x
  store i32 %a2, ptr %acc
  %i2 = add i32 %iv, 1
  store i32 %i2, ptr %i
  br label %head
exit:
  %r = load i32, ptr %acc
  ret i32 %r
}
"""


def formal_only(src, tgt, fn, k):
    return check_equivalence(src, tgt, fn, layers=("formal",), unroll_bound=k, timeout_s=5)


def test_without_unrolling_loops_stay_outside_the_fragment():
    r = formal_only(SUM_LT, SUM_ROT, "s", 0)
    assert r.verdict == "UNKNOWN" and "loop" in r.detail and r.bound is None


def test_off_by_one_in_the_bound_is_caught_with_a_real_counterexample():
    r = formal_only(SUM_LT, SUM_LE, "s", 8)
    assert r.verdict == "NOT_EQ" and r.layer == "formal" and r.bound == 8
    n = r.counterexample["n"]
    assert 0 <= n <= 8                                  # both runs finish within 8 back edges
    # the counterexample is real: the two functions differ when run on it
    assert IR.run_function(SUM_LT, "s", [n]) == n * (n - 1) // 2
    assert IR.run_function(SUM_LE, "s", [n]) == n * (n + 1) // 2 != n * (n - 1) // 2


def test_rotated_loop_is_equivalent_up_to_the_bound_only():
    r = formal_only(SUM_LT, SUM_ROT, "s", 8)
    assert r.verdict == "BOUNDED_EQ" and r.bound == 8 and "up to 8" in r.detail
    # layered: a bounded proof is not equivalence; the differential layer decides
    full = check_equivalence(SUM_LT, SUM_ROT, "s", unroll_bound=8, timeout_s=5, arg_specs=["len:64"])
    assert full.verdict == "EQ" and full.layer == "differential" and full.formal_verdict == "BOUNDED_EQ"


def test_constant_trip_count_is_unrolled_completely_into_a_proof():
    r = formal_only(FOUR, SHL2, "m", 8)
    assert r.verdict == "EQ" and r.layer == "formal" and "completely" in r.detail and r.bound == 8
    r = formal_only(FOUR_SLOT, SHL2, "m", 8)          # the same through local slots (-O0 form)
    assert r.verdict == "EQ" and r.layer == "formal"
    r = formal_only(FIVE, SHL2, "m", 8)               # one iteration too many
    assert r.verdict == "NOT_EQ"
    x = r.counterexample["x"]
    assert IR.run_function(FIVE, "m", [x]) != IR.run_function(SHL2, "m", [x])


def test_bound_below_the_trip_count_proves_nothing():
    r = formal_only(FOUR, SHL2, "m", 3)
    assert r.verdict == "UNKNOWN" and "no input finishes within 3" in r.detail and r.bound == 3


def test_poison_flags_inside_the_unrolled_loop():
    # the source's nsw overflow is poison: a wrapping target refines it
    assert formal_only(FOUR_NSW, SHL2, "m", 8).verdict == "EQ"
    # a target with nsw is poison where the wrapping source is defined: rejected
    r = formal_only(FOUR, MUL4_NSW, "m", 8)
    assert r.verdict == "NOT_EQ" and r.counterexample["x"] * 4 not in range(-2 ** 31, 2 ** 31)


@pytest.mark.parametrize("bad", [-1, True, 2.0, "8"])
def test_bad_unroll_bound(bad):
    with pytest.raises(ValueError, match="unroll_bound"):
        check_equivalence(FOUR, SHL2, "m", unroll_bound=bad)
