"""The audit engine, tested from its rules (shared/claims/__init__.py), not from its own output."""
import json
import subprocess

import pytest
import yaml

from shared.claims import (CANNOT_FAIL, FAILS, INCONCLUSIVE, MISSING, NOT_EVALUATED, NOT_REPRODUCED, PASSES,
                           REPRODUCED, REPRODUCED_REDUCED, SKIPPED, check_for_scale, evaluate_check, evaluate_claim,
                           expected_for_scale, format_check, load_claims_file)
from shared.claims.freshness import changed_inputs, engine_inputs, inputs_dirty, report_inputs
from shared.claims.gate import audit_block, freshness_problems
from shared.claims.official import NOT_ADDRESSED, OFFICIAL_FILE, combine, coverage_problems, official_claims
from shared.claims.report import count_line, count_verdicts, parse_audit_block, readme_section
from shared.claims.stats import decide_interval, mean_interval
from shared.codedeps import paper_dependencies, shared_closure
from shared.config import REPO_ROOT, ConfigError


@pytest.mark.parametrize("value,check,ok", [
    (-2.0, {"op": "<=", "value": -1.8}, True),
    (-1.0, {"op": "<=", "value": -1.8}, False),
    (-1.8, {"op": "<", "value": -1.8}, False),
    (3, {"op": ">=", "value": 3}, True),
    (1, {"op": "==", "value": 1}, True),
    ("clarabel", {"op": "==", "value": "clarabel"}, True),
    (0.5, {"op": "between", "value": [0, 1]}, True),
    (1.5, {"op": "between", "value": [0, 1]}, False),
    (4.004, {"op": "within", "value": 4, "rel_tol": 1e-3}, True),
    (4.005, {"op": "within", "value": 4, "rel_tol": 1e-3}, False),
    (4.005, {"op": "within", "value": 4, "abs_tol": 0.01}, True),
    (float("nan"), {"op": "<=", "value": 1}, False),
    # ties: 100 (0.12 - 0.07) is 4.999999999999999 in binary; within 1e-9 max(1, |t|) of t it is t
    (100 * (0.12 - 0.07), {"op": ">=", "value": 5}, True),
    (5 + 1e-13, {"op": ">", "value": 5}, False),
    (5 - 1e-13, {"op": "<", "value": 5}, False),
    (5 - 1e-6, {"op": ">=", "value": 5}, False),
    (1e6 - 5e-4, {"op": ">=", "value": 1e6}, True),
    (1e6 - 5e-3, {"op": ">=", "value": 1e6}, False),
    (1 + 1e-12, {"op": "between", "value": [0, 1]}, True),
])
def test_operators(value, check, ok):
    assert evaluate_check(value, check) is ok


def test_format_check():
    assert format_check({"op": "<=", "value": -1.8}) == "<= -1.8"
    assert format_check({"op": "between", "value": [0, 1]}) == "in [0, 1]"
    assert format_check({"op": "within", "value": 4, "rel_tol": 1e-3}) == "within 0.001 (rel) of 4"


# --- intervals ---------------------------------------------------------------------------------------------

def test_t_interval_known_answer():
    # mean 3, s = sqrt(2.5), se = s / sqrt(5) = 0.70711, t_{0.975, 4} = 2.77645 -> half width 1.96324
    mean, lo, hi = mean_interval([1, 2, 3, 4, 5], "t")
    assert mean == 3 and lo == pytest.approx(3 - 1.96324, abs=1e-4) and hi == pytest.approx(3 + 1.96324, abs=1e-4)


def test_bootstrap_interval_is_deterministic_and_inside_the_range():
    a = mean_interval([0.1, 0.4, 0.2, 0.9, 0.5, 0.3], "bootstrap")
    assert a == mean_interval([0.1, 0.4, 0.2, 0.9, 0.5, 0.3], "bootstrap")
    assert 0.1 <= a[1] < a[0] < a[2] <= 0.9


def test_interval_end_at_a_threshold_is_a_tie():
    assert decide_interval(5 - 1e-12, 6.0, {"op": ">=", "value": 5}) == "pass"
    assert decide_interval(4.0, 5 + 1e-12, {"op": "<=", "value": 5}) == "pass"
    assert decide_interval(4.0, 5 - 1e-12, {"op": "<", "value": 5}) == "inconclusive"
    assert decide_interval(4.0, 5 - 1e-6, {"op": "<", "value": 5}) == "pass"
    assert decide_interval(0.5, 1 + 1e-12, {"op": "between", "value": [0, 1]}) == "pass"


def test_one_sample_decides_nothing():
    _, lo, hi = mean_interval([1.0])
    assert decide_interval(lo, hi, {"op": "<=", "value": 5}) == "inconclusive"


@pytest.mark.parametrize("lo,hi,check,result", [
    (-3, -2, {"op": "<=", "value": -1}, "pass"),
    (0, 1, {"op": "<=", "value": -1}, "fail"),
    (-2, 0, {"op": "<=", "value": -1}, "inconclusive"),
    (2, 3, {"op": ">", "value": 1}, "pass"),
    (0, 1, {"op": ">", "value": 1}, "fail"),
    (0.2, 0.3, {"op": "between", "value": [0, 1]}, "pass"),
    (1.2, 1.3, {"op": "between", "value": [0, 1]}, "fail"),
    (0.9, 1.1, {"op": "between", "value": [0, 1]}, "inconclusive"),
    (3.9, 4.1, {"op": "within", "value": 4, "abs_tol": 0.2}, "pass"),
    (4.3, 4.4, {"op": "within", "value": 4, "rel_tol": 0.05}, "fail"),
])
def test_decide_interval(lo, hi, check, result):
    assert decide_interval(lo, hi, check) == result


def test_equality_cannot_be_decided_on_an_interval():
    with pytest.raises(ValueError, match="within"):
        decide_interval(0, 1, {"op": "==", "value": 1})


# --- one claim -----------------------------------------------------------------------------------------------

def _write(tmp_path, metrics):
    (tmp_path / "e").mkdir(exist_ok=True)
    (tmp_path / "e" / "metrics.json").write_text(json.dumps(metrics))


def _claim(**kw):
    base = {"id": "c", "kind": "paper", "statement": "s", "source": "abstract", "check": {"op": "<=", "value": 0.0},
            "origin": "theory", "expected": "reproduced", "no_control": "none exists"}
    base.update(kw)
    return base


SAMPLES = {"file": "e/metrics.json", "key": "x"}


def test_samples_all_on_the_passing_side_reproduce(tmp_path):
    _write(tmp_path, {"x": [-1.0, -1.1, -0.9, -1.2, -1.05]})
    v = evaluate_claim(_claim(samples=SAMPLES), tmp_path, "quick")
    assert v.verdict == REPRODUCED and v.outcome.n == 5 and v.outcome.hi < 0


def test_samples_on_the_failing_side_do_not_reproduce(tmp_path):
    _write(tmp_path, {"x": [1.0, 1.1, 0.9, 1.2, 1.05]})
    assert evaluate_claim(_claim(samples=SAMPLES), tmp_path, "quick").verdict == NOT_REPRODUCED


def test_a_straddling_interval_is_inconclusive_even_when_the_mean_passes(tmp_path):
    _write(tmp_path, {"x": [-2.0, 1.5, -1.0, 1.0, -0.5]})  # mean -0.2 passes "<= 0", the interval straddles 0
    v = evaluate_claim(_claim(samples=SAMPLES), tmp_path, "quick")
    assert v.outcome.value < 0 and v.verdict == INCONCLUSIVE


def test_fewer_than_five_samples_limit_the_verdict(tmp_path):
    _write(tmp_path, {"x": [-1.0, -1.01, -0.99]})
    assert evaluate_claim(_claim(samples=SAMPLES), tmp_path, "quick").verdict == REPRODUCED_REDUCED
    _write(tmp_path, {"x": [1.0, 1.01, 0.99]})
    assert evaluate_claim(_claim(samples=SAMPLES), tmp_path, "quick").verdict == INCONCLUSIVE


def test_reduced_scale_gives_reproduced_reduced_unless_equivalent(tmp_path):
    _write(tmp_path, {"x": -1.0})
    metric = {"metric": SAMPLES}
    reduced = {"quick": "10 instances instead of 100"}
    v = evaluate_claim(_claim(**metric), tmp_path, "quick", reduced=reduced)
    assert v.verdict == REPRODUCED_REDUCED and "10 instances" in v.detail
    assert evaluate_claim(_claim(**metric, equivalent_at=["quick"]), tmp_path, "quick",
                          reduced=reduced).verdict == REPRODUCED
    assert evaluate_claim(_claim(**metric), tmp_path, "full", reduced=reduced).verdict == REPRODUCED


def test_a_control_that_does_not_flip_demotes_the_claim(tmp_path):
    _write(tmp_path, {"x": -1.0, "ctl": -0.5, "ctl_ok": 0.5})
    flips = evaluate_claim(_claim(metric=SAMPLES, control={"name": "off", "metric": {**SAMPLES, "key": "ctl_ok"}}),
                           tmp_path, "quick")
    assert flips.verdict == REPRODUCED and flips.control_flips is True
    stuck = evaluate_claim(_claim(metric=SAMPLES, control={"name": "off", "metric": {**SAMPLES, "key": "ctl"}}),
                           tmp_path, "quick")
    assert stuck.verdict == CANNOT_FAIL and stuck.control_flips is False and "off" in stuck.detail


def test_an_inconclusive_control_does_not_count_as_flipping(tmp_path):
    _write(tmp_path, {"x": -1.0, "ctl": [-2.0, 1.5, -1.0, 1.0, -0.5]})
    v = evaluate_claim(_claim(metric=SAMPLES, control={"name": "off", "samples": {**SAMPLES, "key": "ctl"}}),
                       tmp_path, "quick")
    assert v.verdict == CANNOT_FAIL


def test_a_failed_precondition_gives_not_evaluated(tmp_path):
    _write(tmp_path, {"x": 1.0, "recall": 0.3})
    pre = [{"name": "model-solves-task", "metric": {**SAMPLES, "key": "recall"}, "check": {"op": ">=", "value": 0.95}}]
    v = evaluate_claim(_claim(metric=SAMPLES, requires=pre), tmp_path, "quick")
    assert v.verdict == NOT_EVALUATED and "model-solves-task" in v.detail
    _write(tmp_path, {"x": 1.0, "recall": 0.99})
    assert evaluate_claim(_claim(metric=SAMPLES, requires=pre), tmp_path, "quick").verdict == NOT_REPRODUCED


def test_null_missing_and_skipped(tmp_path):
    _write(tmp_path, {"x": None})
    assert evaluate_claim(_claim(metric=SAMPLES), tmp_path, "quick").verdict == NOT_EVALUATED
    missing = evaluate_claim(_claim(metric={**SAMPLES, "key": "y"}), tmp_path, "quick")
    assert missing.verdict == MISSING and "y" in missing.detail
    assert evaluate_claim(_claim(metric={"file": "z.json", "key": "a"}), tmp_path, "quick").verdict == MISSING
    assert evaluate_claim(_claim(metric=SAMPLES, skip_at=["smoke"]), tmp_path, "smoke").verdict == SKIPPED
    _write(tmp_path, {"x": "text"})
    assert evaluate_claim(_claim(samples=SAMPLES), tmp_path, "quick").verdict == MISSING


def test_an_experiment_not_run_gives_not_evaluated_with_its_reason_and_nothing_else(tmp_path):
    not_run = {"e": "projected 7 CPU-hours"}
    v = evaluate_claim(_claim(metric=SAMPLES), tmp_path, "full", not_run=not_run)
    assert v.verdict == NOT_EVALUATED and v.not_run and "projected 7 CPU-hours" in v.detail
    other = {"file": "f/metrics.json", "key": "x"}  # another experiment's metric missing: still an error
    assert evaluate_claim(_claim(metric=other), tmp_path, "full", not_run=not_run).verdict == MISSING
    ctl = evaluate_claim(_claim(metric=SAMPLES, control={"name": "off", "metric": {"file": "e/metrics.json",
                                                                                    "key": "ctl"}}),
                         tmp_path, "full", not_run=not_run)
    assert ctl.verdict == NOT_EVALUATED and ctl.not_run
    _write(tmp_path, {"x": -1.0})  # once it has run, it is judged as usual
    judged = evaluate_claim(_claim(metric=SAMPLES), tmp_path, "full", not_run=not_run)
    assert judged.verdict == REPRODUCED and not judged.not_run


def test_checks_pass_or_fail_and_never_reproduce(tmp_path):
    _write(tmp_path, {"x": -1.0})
    assert evaluate_claim(_claim(kind="check", metric=SAMPLES, expected="passes"), tmp_path, "quick").verdict == PASSES
    _write(tmp_path, {"x": 1.0})
    assert evaluate_claim(_claim(kind="check", metric=SAMPLES, expected="passes"), tmp_path, "quick").verdict == FAILS


def test_per_scale_threshold_and_expected():
    claim = _claim(metric=SAMPLES, check_by_scale={"full": {"op": "<=", "value": -1.9}},
                   expected={"quick": "reproduced", "full": "not_reproduced"})
    assert check_for_scale(claim, "quick")["value"] == 0.0 and check_for_scale(claim, "full")["value"] == -1.9
    assert expected_for_scale(claim, "full") == NOT_REPRODUCED and expected_for_scale(claim, "smoke") == REPRODUCED


# --- the claims file -----------------------------------------------------------------------------------------

def _doc(**claim):
    return {"version": 2, "reduced": {}, "claims": [_claim(metric=SAMPLES, **claim)]}


def _load(tmp_path, doc):
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_claims_file(path)


def test_schema_accepts_a_good_file(tmp_path):
    assert _load(tmp_path, _doc())["claims"][0]["id"] == "c"


@pytest.mark.parametrize("change,message", [
    ({"paper_value": -2}, "theory_value"),                      # a theory number in paper_value
    ({"no_control": None}, "control"),                          # a paper claim needs a control or a reason
    ({"kind": "check", "expected": "reproduced"}, "not a verdict of a 'check' claim"),
    ({"paper_value": "O(1/k^2)"}, "paper_value"),               # only numbers
    ({"samples": SAMPLES}, "exactly one of"),
    ({"expected": "reproduced-ish"}, "expected"),
])
def test_schema_rejects(tmp_path, change, message):
    doc = _doc(**{k: v for k, v in change.items() if v is not None})
    if change.get("no_control", 1) is None:
        del doc["claims"][0]["no_control"]
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, doc)


def test_v1_list_format_is_rejected_with_the_reason(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump([_claim(metric=SAMPLES)]))
    with pytest.raises(ConfigError, match="v1 format"):
        load_claims_file(path)


# --- official claims and counts ------------------------------------------------------------------------------

def test_combined_verdict_of_an_official_claim():
    assert combine([]) == NOT_ADDRESSED
    assert combine([NOT_EVALUATED]) == NOT_EVALUATED
    assert combine([REPRODUCED, NOT_EVALUATED]) == REPRODUCED
    assert combine([REPRODUCED, REPRODUCED_REDUCED]) == REPRODUCED_REDUCED
    assert combine([REPRODUCED, CANNOT_FAIL]) == INCONCLUSIVE
    assert combine([REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert combine([REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE]) == NOT_REPRODUCED


def test_official_coverage_names_every_gap():
    n = len(official_claims("goma"))
    assert n >= 2
    doc = {"claims": [{"kind": "paper", "official": [1]}, {"kind": "check", "official": [2]}],
           "official_not_addressed": {"3": "why"}}
    problems = coverage_problems("goma", doc)
    assert any("official claim 2 is neither" in p for p in problems)  # a check does not address it
    assert not any("official claim 1 " in p or "official claim 3 " in p for p in problems)
    assert any("does not exist" in p for p in coverage_problems("goma", {"claims": [
        {"kind": "paper", "official": [n + 1]}]}))


def test_vendored_official_claims_match_the_reference_copy():
    reference = REPO_ROOT.parent / "shared" / "official_claims" / "claims.json"
    if not reference.is_file():
        pytest.skip("the reference copy of the official claims is not beside this checkout")
    assert json.loads(OFFICIAL_FILE.read_text()) == json.loads(reference.read_text())


def test_counts_keep_checks_and_claims_that_cannot_fail_apart():
    kinds = {"a": "paper", "b": "paper", "c": "paper", "d": "check", "e": "check"}
    verdicts = {"a": REPRODUCED, "b": CANNOT_FAIL, "c": NOT_EVALUATED, "d": PASSES, "e": FAILS}
    c = count_verdicts(kinds, verdicts, {"addressed": 1, "total": 2})
    assert (c["reproduced"], c["paper_total"], c["not_evaluated"]) == (1, 2, 1)
    assert (c["checks_passing"], c["checks_total"], c["cannot_fail"]) == (2, 3, 1)
    assert c["checks_not_evaluated"] == 0 and "not evaluated)" not in count_line(c)
    c = count_verdicts({**kinds, "f": "check"}, {**verdicts, "f": NOT_EVALUATED}, {})
    assert (c["checks_passing"], c["checks_total"], c["checks_not_evaluated"]) == (2, 4, 1)
    assert "checks passing 2 of 4 (1 not evaluated)" in count_line(c)


def test_gate_flags_wrong_verdicts_coverage_and_few_samples():
    block = {"verdicts": {"a": REPRODUCED, "b": MISSING, "c": INCONCLUSIVE},
             "expected": {"a": REPRODUCED, "b": REPRODUCED, "c": REPRODUCED},
             "official_problems": ["official claim 2 is neither ..."], "samples_n": {"a": 3, "c": 8},
             "few_samples_reason": []}
    problems = audit_block("p", "quick", block)
    assert any("'b' is missing_metric" in p for p in problems) and any("'c' is inconclusive" in p for p in problems)
    assert any("official claim 2" in p for p in problems) and any("'a' is decided on 3 samples" in p for p in problems)
    assert not any("'a' is decided" in p for p in audit_block("p", "quick", {**block, "few_samples_reason": ["a"]}))


def test_report_helpers():
    assert readme_section("# T\n## Fidelity\nexact\n## Deviations\nnone\n", "Fidelity") == "exact"
    assert parse_audit_block('x\n<!-- audit: {"a": 1} -->\n') == {"a": 1}
    assert parse_audit_block("no block") is None


# --- freshness -----------------------------------------------------------------------------------------------

def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


@pytest.fixture
def tiny_repo(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "__init__.py").write_text("")
    (tmp_path / "shared" / "used.py").write_text("from shared import helper\n")
    (tmp_path / "shared" / "helper.py").write_text("X = 1\n")
    (tmp_path / "shared" / "unused.py").write_text("Y = 1\n")
    paper = tmp_path / "papers" / "p"
    (paper / "tests").mkdir(parents=True)
    (paper / "method.py").write_text("import numpy\nfrom shared.used import something\n")
    (paper / "claims.yaml").write_text("version: 2\n")
    (paper / "tests" / "test_m.py").write_text("from shared import unused\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    return tmp_path, head


def test_dependencies_follow_imports_transitively_and_skip_tests(tiny_repo):
    root, _ = tiny_repo
    assert shared_closure(["papers/p/method.py"], root) == {"shared/__init__.py", "shared/used.py",
                                                            "shared/helper.py"}
    deps = paper_dependencies("p", root=root)
    assert "shared/unused.py" not in deps and "papers/p/method.py" in deps


def test_a_stale_report_fails_the_gate(tiny_repo):
    root, commit = tiny_repo
    assert changed_inputs("p", commit, root) == [] and not inputs_dirty("p", root)
    block = {"commit": commit, "inputs_dirty": False}
    assert freshness_problems("p", block, "report", root) == []
    (root / "shared" / "unused.py").write_text("Y = 2\n")          # not imported: stays fresh
    (root / "papers" / "p" / "tests" / "test_m.py").write_text("\n")  # tests do not count
    _git(root, "commit", "-qam", "two")
    assert freshness_problems("p", block, "report", root) == []
    (root / "shared" / "helper.py").write_text("X = 2\n")          # imported through shared.used
    assert inputs_dirty("p", root)
    _git(root, "commit", "-qam", "three")
    problems = freshness_problems("p", block, "report", root)
    assert problems and "shared/helper.py" in problems[0] and "stale" in problems[0]
    assert freshness_problems("p", {"commit": "0" * 40, "inputs_dirty": False}, "report", root)
    assert "uncommitted" in freshness_problems("p", {**block, "inputs_dirty": True}, "report", root)[0]


def test_report_inputs_include_the_renderer_but_not_the_gate(tiny_repo):
    root, _ = tiny_repo
    inputs = report_inputs("p", root)
    assert "shared/claims/report.py" in inputs and "papers/p/claims.yaml" in inputs and "papers/p/tests" not in inputs
    engine = engine_inputs()
    assert {"shared/claims/report.py", "shared/claims/check.py", "shared/claims/stats.py",
            "workflow/schemas/claims.schema.json"} <= set(engine)
    assert "shared/claims/gate.py" not in engine and "shared/claims/index.py" not in engine


def test_the_control_is_shown_even_when_a_precondition_fails(tmp_path):
    _write(tmp_path, {"x": -1.0, "ctl": 0.5, "ok": 0})
    pre = [{"name": "real-llm", "metric": {**SAMPLES, "key": "ok"}, "check": {"op": "==", "value": 1}}]
    v = evaluate_claim(_claim(metric=SAMPLES, requires=pre, control={"name": "off", "metric": {**SAMPLES, "key": "ctl"}}),
                       tmp_path, "quick")
    assert v.verdict == NOT_EVALUATED and v.control is not None and v.control_flips is True


def test_integer_keys_of_official_not_addressed_are_read_as_indices(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text("version: 2\nreduced: {}\nofficial_not_addressed:\n  3: needs a 70B model\nclaims:\n"
                    + yaml.safe_dump([_claim(metric=SAMPLES)]))
    assert load_claims_file(path)["official_not_addressed"] == {"3": "needs a 70B model"}


def test_full_scale_gate_covers_only_committed_full_reports(tiny_repo):
    from shared.claims.gate import full_scale_papers

    root, _ = tiny_repo
    assert full_scale_papers(root) == []
    (root / "reports" / "full").mkdir(parents=True)
    (root / "reports" / "full" / "p.md").write_text("report\n")
    (root / "reports" / "full" / "draft.md").write_text("not committed\n")
    _git(root, "add", "reports/full/p.md")
    _git(root, "commit", "-qm", "full report of p")
    assert full_scale_papers(root) == ["p"]


def test_every_committed_report_carries_its_cpu_total_in_the_audit_block():
    # the index reads the block; the block's total is the sum of the provenance table's CPU column
    import re

    from shared.claims.report import parse_audit_block
    from shared.config import REPO_ROOT

    reports = sorted((REPO_ROOT / "reports").glob("*/*.md"))
    assert reports
    for path in reports:
        text = path.read_text(encoding="utf-8")
        table = text.split("| experiment | wall (s) | CPU (s) | code at run time |", 1)[1]   # the provenance table
        rows = re.findall(r"^\| [\w-]+ \| [0-9.]+ \| ([0-9.]+) \| ", table, flags=re.M)
        block = parse_audit_block(text)
        assert block["cpu_s"] == pytest.approx(sum(map(float, rows)), abs=0.05 * len(rows) + 0.1), path
