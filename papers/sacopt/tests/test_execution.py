import pytest

from papers.sacopt.execution import run_model_program

LP = """import json
import pulp
data = json.load(open("data.json"))
prob = pulp.LpProblem("m", pulp.LpMaximize)
x = pulp.LpVariable("x", lowBound=0)
y = pulp.LpVariable("y", lowBound=0)
prob += 3 * x + 5 * y
prob += x <= 4
prob += 2 * y <= 12
prob += 3 * x + 2 * y <= data["c"]
prob.solve(pulp.PULP_CBC_CMD(msg=0))
if pulp.LpStatus[prob.status] == "Optimal":
    print(f"OBJECTIVE: {pulp.value(prob.objective)}")
else:
    print("STATUS: infeasible")
"""


def test_outcomes():
    ok = run_model_program(LP, data={"c": 18})
    assert ok.status == "ok" and ok.objective == pytest.approx(36.0)
    assert run_model_program(LP, data={"c": -1}).status == "infeasible"
    assert run_model_program("print('STATUS: unbounded')").status == "unbounded"
    assert run_model_program("raise RuntimeError('boom')").status == "error"
    assert run_model_program("print('hello')").status == "error"          # no final contract line
    assert run_model_program("import os\nprint('OBJECTIVE: 1')").status == "forbidden"
    assert run_model_program("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)").status == "forbidden"
    assert run_model_program("open('/tmp/x_sacopt', 'w')").status == "forbidden"
    assert run_model_program("while True:\n    pass", timeout_s=1.0).status == "timeout"


@pytest.mark.parametrize("kwargs, match", [
    (dict(code=b"print(1)"), "code"),
    (dict(code="print(1)", timeout_s=0), "timeout_s"),
    (dict(code="print(1)", memory_mb=1), "memory_mb"),
    (dict(code="print(1)", data=[1]), "data"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_model_program(**kwargs)


def test_isolation_summary_counts_confined_and_unconfined_runs(monkeypatch):
    import papers.sacopt.execution as X
    from shared.sandbox import UNSAFE_ENV, isolation_summary, reset_isolation_summary

    reset_isolation_summary()
    run_model_program("print('OBJECTIVE: 1')")
    assert isolation_summary() == {"runs": 1, "unconfined_runs": 0, "confined_all": 1, "isolation": "bwrap"}
    X.close_sandbox()
    monkeypatch.setenv(UNSAFE_ENV, "1")
    try:
        assert run_model_program("print('OBJECTIVE: 2')").objective == 2.0
    finally:
        X.close_sandbox()  # the next test gets a confined zygote again
    monkeypatch.delenv(UNSAFE_ENV)
    assert isolation_summary() == {"runs": 2, "unconfined_runs": 1, "confined_all": 0, "isolation": "bwrap+unconfined"}
    reset_isolation_summary()
