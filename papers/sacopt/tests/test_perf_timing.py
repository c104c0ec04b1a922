import os
import resource
import sys
from types import SimpleNamespace

import pytest

from papers.sacopt import experiments as E
from papers.sacopt import problems as G


def test_cpu_with_children_adds_process_time_and_children_user_and_system(monkeypatch):
    usage = {resource.RUSAGE_CHILDREN: SimpleNamespace(ru_utime=2.0, ru_stime=0.125)}
    monkeypatch.setattr(E.resource, "getrusage", lambda who: usage[who])
    monkeypatch.setattr(E.time, "process_time", lambda: 1.75)
    assert E._cpu_with_children() == 1.75 + 2.0 + 0.125


def test_run_seconds_sums_first_fields_and_none_when_a_file_is_gone(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("1500000000 7 3\n")
    b.write_text("250000000 1 1\n")
    assert E._run_seconds([str(a), str(b)]) == 1.75
    assert E._run_seconds([]) == 0.0
    assert E._run_seconds([str(a), str(tmp_path / "gone")]) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_schedstat_files_lists_every_thread_of_the_process():
    own = {f"/proc/{os.getpid()}/task/{tid}/schedstat" for tid in os.listdir(f"/proc/{os.getpid()}/task")}
    assert own <= set(E._schedstat_files(os.getpid()))
    assert E._schedstat_files(-1) == []


def test_work_clock_adds_sandbox_processes_and_program_cpu(monkeypatch):
    readings = iter([2.0, 2.5, 7.0, 6.0])  # zygote run time before/after two runs (the second one goes backwards)
    monkeypatch.setattr(E, "sandbox_pid", lambda: 42)
    monkeypatch.setattr(E, "_schedstat_files", lambda pid: [f"/proc/{pid}/task/{pid}/schedstat"])
    monkeypatch.setattr(E, "_run_seconds", lambda files: next(readings))
    monkeypatch.setattr(E, "run_in_sandbox", lambda program, data: SimpleNamespace(status="ok", wall_s=1.0, cpu_s=0.25))
    monkeypatch.setattr(E, "_cpu_with_children", lambda: 10.0)
    work = E._WorkClock()
    assert work.clock() == 10.0
    assert work.run("print('OBJECTIVE: 0')", {}).cpu_s == 0.25
    assert work.sandbox_s == 0.5 + 0.25
    work.run("print('OBJECTIVE: 0')", {})
    assert work.sandbox_s == 0.75 + 0.0 + 0.25
    assert work.clock() == 11.0


def test_medians_per_name_over_problems():
    per_problem = [{"highs": 1.0, "cbc": 4.0}, {"highs": 3.0, "cbc": 2.0}, {"highs": 2.0, "cbc": 9.0}]
    assert E._medians(per_problem) == {"highs": 2.0, "cbc": 4.0}
    assert E._medians([{"a": 1.0}, {"a": 2.0}]) == {"a": 1.5}


def test_solve_timings_one_entry_per_problem():
    probs = G.generate_problems(2, seed=7, verify=False)
    out = E._solve_timings(probs, rounds=1)
    assert len(out) == 2
    assert all({"highs", "cbc", "sandbox"} <= set(t) for t in out)
    with pytest.raises(ValueError):
        E._solve_timings(probs, rounds=0)
