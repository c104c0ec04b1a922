import json

import pytest

from shared.lm.backends import ReplayBackend, ReplayMissError, cache_key
from papers.sacopt import problems as G
from papers.sacopt.datasets import Problem
from papers.sacopt.execution import ExecutionResult
from papers.sacopt.pipeline import ScriptedModeller, run_forward_only, run_sacopt, run_standard

PROBS = G.generate_problems(6, seed=11, verify=False)


def null_exec(code, data):
    return ExecutionResult("ok", 0.0, "OBJECTIVE: 0", "", 0.0)


def test_no_faults_means_nothing_flagged():
    be = ScriptedModeller(PROBS, q=0.0, seed=1).backend()
    for pr in PROBS:
        run = run_sacopt(pr, be, executor=null_exec)
        assert run.rounds == 1 and run.flagged == [[]] and len(run.hashes) == 1
        assert run.hashes[0] == {f"c{i}": G.code_hash(c) for i, c in enumerate(pr.fragments)}
        assert "SCRIPTED STAND-IN" in run.backend
        # calls: extract, variables, objective, n constraints, then n back-translations and n judgements
        n = len(pr.specs)
        assert run.llm_calls == 3 + 3 * n
        assert run_forward_only(pr, be, executor=null_exec).llm_calls == 3 + n


def test_every_constraint_faulty_then_fixed_in_one_regeneration():
    sm = ScriptedModeller(PROBS, q=1.0, p=1.0, seed=2)
    be = sm.backend()
    for pr in PROBS:
        run = run_sacopt(pr, be, executor=null_exec)
        ids = [f"c{i}" for i in range(len(pr.specs))]
        assert run.flagged == [ids, []] and run.rounds == 2
        assert all(sm.is_faulty(pr, c, run.fragments[0][c]) for c in ids)
        assert not any(sm.is_faulty(pr, c, run.fragments[1][c]) for c in ids)
        assert run.fragments[1] == dict(zip(ids, pr.fragments))


def test_never_fixed_uses_all_rounds_and_max_iter_zero_is_forward():
    be = ScriptedModeller(PROBS[:2], q=1.0, p=0.0, seed=3).backend()
    run = run_sacopt(PROBS[0], be, max_iter=5, executor=null_exec)
    assert run.rounds == 5 and len(run.flagged) == 5 and all(run.flagged)
    run0 = run_sacopt(PROBS[0], be, max_iter=0, executor=null_exec)
    assert run0.rounds == 0 and run0.flagged == []


def test_end_to_end_in_sandbox_gold_answer():
    be = ScriptedModeller(PROBS[:1], q=0.0, seed=4).backend()
    run = run_sacopt(PROBS[0], be)
    assert run.status == "ok" and run.answer == pytest.approx(PROBS[0].answer, rel=1e-6)
    std = run_standard(PROBS[0], be)
    assert std.answer == pytest.approx(PROBS[0].answer, rel=1e-6)


def test_bad_inputs_and_refusals(tmp_path):
    be = ScriptedModeller(PROBS, q=0.3, seed=5).backend()
    with pytest.raises(ValueError, match="max_iter"):
        run_sacopt(PROBS[0], be, max_iter=-1)
    with pytest.raises(ValueError, match="coverage"):
        run_sacopt(PROBS[0], be, coverage="vibes")
    with pytest.raises(ValueError, match="scripted backend"):
        run_sacopt(Problem("7", "Maximise x.", 1.0), be)
    with pytest.raises(ValueError, match="probability"):
        ScriptedModeller(PROBS, q=1.5)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 1, "temperature": 0.0,
               "max_tokens": 1024, "seed": None}
    path = tmp_path / "cache.jsonl"
    path.write_text(json.dumps({"key": cache_key(**request), "request": request, "responses": ["x"]}) + "\n")
    with pytest.raises(ReplayMissError):
        run_sacopt(Problem("7", "Maximise x.", 1.0), ReplayBackend(path))


def test_objective_faults_stay_outside_the_loop():
    sm = ScriptedModeller(PROBS, q=0.0, p=1.0, seed=4, q_obj=1.0)
    be, ex = sm.backend(), sm.executor()
    for pr in PROBS:
        run = run_sacopt(pr, be, executor=ex)
        assert sm.objective_faulty(pr, run.program_before_debug) and sm.objective_faulty(pr, run.program)
        assert run.flagged == [[]]  # constraints are gold: the loop sees nothing
    sm0 = ScriptedModeller(PROBS, q=0.0, seed=4, q_obj=0.0)
    assert not any(sm0.objective_faulty(pr, run_forward_only(pr, sm0.backend(), executor=sm0.executor()).program)
                   for pr in PROBS)
    with pytest.raises(ValueError, match="q_obj"):
        ScriptedModeller(PROBS, q=0.0, q_obj=1.5)


def test_in_process_evaluation_gold_and_crash():
    sm = ScriptedModeller(PROBS, q=0.0, seed=5)
    be, ex = sm.backend(), sm.executor()
    for pr in PROBS:
        run = run_forward_only(pr, be, executor=ex)
        assert run.status == "ok" and run.answer == pytest.approx(pr.answer, rel=1e-9)
    crash = ScriptedModeller(PROBS[:1], q=0.0, q_crash=1.0, p_debug=0.0, seed=5)
    run = run_forward_only(PROBS[0], crash.backend(), executor=crash.executor(), max_debug=1)
    assert run.status == "error" and run.answer is None


def test_perfect_regeneration_removes_every_fault():
    # p = 1 with an exact judge: every flagged constraint is fixed in one round, so SAC-Opt is always right
    sm = ScriptedModeller(PROBS, q=0.5, p=1.0, seed=6)
    be, ex = sm.backend(), sm.executor()
    for pr in PROBS:
        assert run_sacopt(pr, be, executor=ex).answer == pytest.approx(pr.answer, rel=1e-9)


def test_in_process_evaluation_equals_sandbox():
    sm = ScriptedModeller(PROBS[:2], q=1.0, p=0.0, seed=7, q_obj=1.0)
    be = sm.backend()
    for pr in PROBS[:2]:
        run = run_forward_only(pr, be)  # default executor: the sandbox
        ev = sm.evaluate(pr, run.program)
        assert ev.status == run.status
        assert run.answer == pytest.approx(ev.objective, rel=1e-6) if ev.status == "ok" else run.answer == ev.status
