import math

import pytest

from papers.sacopt.scoring import answers_match, asks_rounding, parse_final_line


def test_relative_tolerance_boundary():
    assert answers_match(100.0, 100.0)
    assert answers_match(100.0 + 0.0099, 100.0)          # 1e-4 * 100 = 0.01
    assert not answers_match(100.0 + 0.0101, 100.0)
    assert answers_match(0.5 + 0.99e-4, 0.5)               # max(1, |g|) = 1 for small gold
    assert not answers_match(0.5 + 1.01e-4, 0.5)
    assert answers_match(101.0, 100.0, rel_tol=1e-2)


def test_rounding_and_statuses():
    assert answers_match(41.6, 42.0, rounding="integer")
    assert not answers_match(41.6, 42.0)
    assert answers_match(-2.5, -3.0, rounding="integer")   # half away from zero
    assert answers_match("infeasible", None) and answers_match("unbounded", None)
    assert not answers_match(0.0, None) and not answers_match("infeasible", 3.0)
    assert not answers_match(None, 3.0) and not answers_match(None, None)
    assert not answers_match(math.inf, 3.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(predicted=math.nan, gold=1.0), "predicted"),
    (dict(predicted=1.0, gold=math.nan), "gold"),
    (dict(predicted=1.0, gold=1.0, rel_tol=-1e-4), "rel_tol"),
    (dict(predicted="optimal", gold=1.0), "status"),
    (dict(predicted=1.0, gold=1.0, rounding="cent"), "rounding"),
])
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        answers_match(**kwargs)


def test_parse_final_line_and_rounding_detector():
    assert parse_final_line("noise\nOBJECTIVE: 36.0\n") == ("ok", 36.0)
    assert parse_final_line("STATUS: infeasible") == ("infeasible", None)
    assert parse_final_line("STATUS: unbounded\n\n") == ("unbounded", None)
    assert parse_final_line("OBJECTIVE: 1\nbye") == ("error", None)
    assert parse_final_line("OBJECTIVE: nan") == ("error", None)
    assert parse_final_line("") == ("error", None)
    assert asks_rounding("Give the answer rounded to the nearest dollar.") == "integer"
    assert asks_rounding("What is the minimum cost?") is None
