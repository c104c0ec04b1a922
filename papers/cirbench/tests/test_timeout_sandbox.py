"""The TIMEOUT verdict (a candidate that runs past its limit, retried once with a larger one), the deterministic
formal budget, and the sandbox provenance recorded in the metrics."""
from __future__ import annotations

import pytest

from papers.cirbench import equiv as E
from papers.cirbench import ir as IR
from papers.cirbench.limits import RLIMIT_PER_MS
from shared.sandbox import reset_isolation_summary

DOUBLE = "define i32 @f(i32 %x) {\n  %a = add i32 %x, %x\n  ret i32 %a\n}\n"


def _sleeper(usec: int) -> str:
    """The same function as DOUBLE, but it sleeps ``usec`` microseconds per call (a call: outside the formal
    fragment, so the differential layer decides)."""
    return ("declare i32 @usleep(i32)\n"
            f"define i32 @f(i32 %x) {{\n  %s = call i32 @usleep(i32 {usec})\n  %a = add i32 %x, %x\n  ret i32 %a\n}}\n")


CRASH = ("define i32 @f(i32 %x) {\n  %p = inttoptr i64 0 to ptr\n  %v = load volatile i32, ptr %p\n"
         "  %a = add i32 %x, %v\n  ret i32 %a\n}\n")
N_INPUTS = 9   # make_inputs for one i32 argument and n_random = 0: the nine boundary values


def test_inputs_for_the_sleepers():
    vectors, _ = E.make_inputs(["i32"], None, n_random=0)
    assert len(vectors) == N_INPUTS


def test_sleeping_candidate_is_timeout_not_not_eq():
    """Sleeps 10 s per call, limit 0.1 s CPU (0.3 s wall): past it, and past the retry's 1 s CPU (3 s wall)."""
    before = dict(E.RUN_STATS)
    res = E.check_batch(DOUBLE, [_sleeper(10_000_000), DOUBLE], "f", timeout_s=2, n_random=0, run_limit_s=0.1)
    assert res[0].verdict == "TIMEOUT" and res[0].layer == "differential"
    assert res[1].verdict == "EQ"      # the candidate after the sleeper is still checked
    assert E.RUN_STATS["retried"] == before["retried"] + 1
    assert E.RUN_STATS["timeout_after_retry"] == before["timeout_after_retry"] + 1


def test_retry_with_larger_limit_rescues_a_slow_candidate():
    """9 calls of 60 ms = 0.54 s wall: past the first wall limit (3 x 0.1 s), inside the retry's (3 x 1 s)."""
    before = dict(E.RUN_STATS)
    res = E.check_batch(DOUBLE, [_sleeper(60_000)], "f", timeout_s=2, n_random=0, run_limit_s=0.1)
    assert res[0].verdict == "EQ" and res[0].layer == "differential"
    assert E.RUN_STATS["retried"] == before["retried"] + 1
    assert E.RUN_STATS["timeout_after_retry"] == before["timeout_after_retry"]


def test_lone_check_timeout_verdict():
    res = E.check_equivalence(DOUBLE, _sleeper(10_000_000), "f", timeout_s=2, n_random=0, run_limit_s=0.1)
    assert res.verdict == "TIMEOUT"
    assert E.check_equivalence(DOUBLE, _sleeper(0), "f", timeout_s=2, n_random=0, run_limit_s=0.1).verdict == "EQ"


def test_crash_is_not_eq_not_timeout():
    """A null-pointer load kills the child by SIGSEGV on every input the source runs on: NOT_EQ."""
    res = E.check_batch(DOUBLE, [CRASH], "f", timeout_s=2, n_random=0, run_limit_s=0.5)
    assert res[0].verdict == "NOT_EQ" and res[0].layer == "differential"
    assert E.check_equivalence(DOUBLE, CRASH, "f", timeout_s=2, n_random=0, run_limit_s=0.5).verdict == "NOT_EQ"


def test_run_limit_formula_and_bad_input():
    assert E.run_limit(0.0) == E.RUN_FLOOR_S
    assert E.run_limit(1.0) == 5.0             # 5 x the source's CPU time
    assert E.run_limit(0.05) == 0.5            # the floor
    for bad in (-1.0, float("nan"), float("inf"), "1", True):
        with pytest.raises(ValueError, match="src_cpu_s"):
            E.run_limit(bad)
    for bad in (0, -0.5, float("nan"), "1"):
        with pytest.raises(ValueError, match="run_limit_s"):
            E.check_batch(DOUBLE, [DOUBLE], "f", n_random=0, run_limit_s=bad)
    assert "TIMEOUT" in E.VERDICTS and E.RETRY_FACTOR == 10


def test_formal_budget_is_a_resource_limit():
    """The formal layer's budget is z3's rlimit, RLIMIT_PER_MS units per millisecond of the nominal time-out,
    and the same query gives the same verdict twice (no wall clock involved)."""
    out = IR.batch([("formal", (DOUBLE, DOUBLE, "f", 2000))])[0]
    assert out["verdict"] == "EQ"
    from papers.cirbench._worker import formal_rlimit   # the worker's module, imported only for the constant
    assert formal_rlimit(2000) == 2000 * RLIMIT_PER_MS
    # associativity of 64-bit multiplication with nsw flags (poison when a 128-bit product overflows differs):
    # far beyond a budget of 20 ms (60 000 units), stopped by the budget, not by the wall clock (600 ms)
    src = ("define i64 @m(i64 %x, i64 %y, i64 %z) {\n  %a = mul nsw i64 %x, %y\n  %b = mul nsw i64 %a, %z\n"
           "  ret i64 %b\n}\n")
    tgt = ("define i64 @m(i64 %x, i64 %y, i64 %z) {\n  %a = mul nsw i64 %y, %z\n  %b = mul nsw i64 %x, %a\n"
           "  ret i64 %b\n}\n")
    a, b = IR.batch([("formal", (src, tgt, "m", 20)), ("formal", (src, tgt, "m", 20))])
    assert a["verdict"] == b["verdict"] == "UNKNOWN"
    if not (a.get("wall_guard") or b.get("wall_guard")):   # (only an extremely loaded machine reaches the guard)
        # z3 words the same stop as "canceled" or "max. resource limit exceeded"
        assert all(x["detail"] in ("formal: solver canceled", "formal: solver max. resource limit exceeded")
                   for x in (a, b))


# ------------------------------------------------------------------------------------ sandbox provenance
def test_real_calls_are_confined_and_opt_out_shows(monkeypatch):
    reset_isolation_summary()
    assert IR.verify_ir(DOUBLE).ok
    assert IR.sandbox_provenance() == {"confined_all": 1, "isolation": "bwrap"}
    # the user's opt-out: a fresh sandbox without bubblewrap; every result says so, and so does the tally
    monkeypatch.setenv("REPRO_SANDBOX_UNSAFE_NO_ISOLATION", "1")
    monkeypatch.setattr(IR, "_SANDBOX", None)
    try:
        reset_isolation_summary()
        assert IR.verify_ir(DOUBLE).ok
        assert IR.sandbox_provenance() == {"confined_all": 0, "isolation": "unconfined"}
    finally:
        if IR._SANDBOX is not None:
            IR._SANDBOX.close()
    reset_isolation_summary()
