import json

import pytest
import yaml

from shared.claims import (MISSING, NOT_EVALUATED, NOT_REPRODUCED, SKIPPED, REPRODUCED, check_for_scale, evaluate_check, evaluate_claim,
                           expected_for_scale, format_check, load_claims)
from shared.claims.report import parse_audit_block, readme_section
from shared.config import ConfigError


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
])
def test_operators(value, check, ok):
    assert evaluate_check(value, check) is ok


def test_format_check():
    assert format_check({"op": "<=", "value": -1.8}) == "<= -1.8"
    assert format_check({"op": "between", "value": [0, 1]}) == "in [0, 1]"
    assert format_check({"op": "within", "value": 4, "rel_tol": 1e-3}) == "within 0.001 (rel) of 4"


CLAIM = {"id": "rate", "statement": "s", "source": "abstract", "metric": {"file": "e/metrics.json", "key": "a.b"},
         "check": {"op": "<=", "value": -1.8}, "check_by_scale": {"full": {"op": "<=", "value": -1.9}},
         "origin": "theory", "paper_value": -2, "expected": {"quick": "reproduced", "full": "not_reproduced"}}


def test_per_scale_threshold_and_expected():
    assert check_for_scale(CLAIM, "quick")["value"] == -1.8
    assert check_for_scale(CLAIM, "full")["value"] == -1.9
    assert expected_for_scale(CLAIM, "full") == NOT_REPRODUCED
    assert expected_for_scale(CLAIM, "smoke") == REPRODUCED


def test_evaluate_claim_verdicts(tmp_path):
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "metrics.json").write_text(json.dumps({"a": {"b": -1.85}}))
    assert evaluate_claim(CLAIM, tmp_path, "quick").verdict == REPRODUCED
    assert evaluate_claim(CLAIM, tmp_path, "full").verdict == NOT_REPRODUCED
    missing = evaluate_claim({**CLAIM, "metric": {"file": "e/metrics.json", "key": "a.c"}}, tmp_path, "quick")
    assert missing.verdict == MISSING and "a.c" in missing.detail
    assert evaluate_claim({**CLAIM, "metric": {"file": "x.json", "key": "a"}}, tmp_path, "quick").verdict == MISSING
    skipped = evaluate_claim({**CLAIM, "skip_at": ["smoke"]}, tmp_path, "smoke")
    assert skipped.verdict == SKIPPED and evaluate_claim({**CLAIM, "skip_at": ["smoke"]}, tmp_path, "quick").verdict \
        == REPRODUCED
    (tmp_path / "e" / "metrics.json").write_text(json.dumps({"a": {"b": None}}))
    assert evaluate_claim(CLAIM, tmp_path, "quick").verdict == NOT_EVALUATED


def test_load_claims_validates_and_names_key(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump([{**CLAIM, "origin": "guess"}]))
    with pytest.raises(ConfigError, match="key '0.origin'"):
        load_claims(path)
    path.write_text(yaml.safe_dump([{**CLAIM, "skip_at": ["quick"]}]))
    with pytest.raises(ConfigError, match="skip_at"):
        load_claims(path)
    path.write_text(yaml.safe_dump([CLAIM, CLAIM]))
    with pytest.raises(ConfigError, match="duplicate claim id"):
        load_claims(path)
    bad_between = {**CLAIM, "check": {"op": "between", "value": 3}}
    path.write_text(yaml.safe_dump([bad_between]))
    with pytest.raises(ConfigError, match="check"):
        load_claims(path)


def test_readme_section_and_audit_block():
    text = "# T\n## Fidelity\nExact: x.\n### sub\ny\n## Deviations\nnone\n"
    assert readme_section(text, "Fidelity") == "Exact: x.\n### sub\ny"
    assert readme_section(text, "Deviations") == "none"
    assert readme_section(text, "Missing") == ""
    assert parse_audit_block('x\n<!-- audit: {"a": 1} -->\n') == {"a": 1}
    assert parse_audit_block("no block") is None
