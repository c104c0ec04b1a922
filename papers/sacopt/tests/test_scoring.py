import math
from pathlib import Path

import pytest

from papers.sacopt import datasets as D
from papers.sacopt.scoring import answers_match, asks_rounding, parse_final_line, round_half_away
from shared.data import mirror_dirs


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
    assert asks_rounding("Give the answer rounded to the nearest dollar.") == 0
    assert asks_rounding("What is the minimum cost?") is None


@pytest.mark.parametrize("question, decimals", [
    ("Provide your answer rounded off to nearest whole number.", 0),
    ("Provide your answer rounded to the nearest integar.", 0),
    ("What is the minimum total cost (rounded off) of the plan?", 0),
    ("Find the minimum total transaction cost rounded to two decimal places.", 2),
    ("Please round your answer to one decimal place.", 1),
    ("Provide your answer rounded to 3 decimal places.", 3),
    ("Give the cost rounded to the nearest cent.", 2),
    ("the minimum total cost rounded to nearest hundred dollars.", -2),
    ("rounded off to nearest thousand dollars.", -3),
    ("Allocations must be whole numbers due to the indivisible nature of resources. What is the cost?", None),
    ("A theme park transports its visitors around the park.", None),
    ("with sales numbers rounded down to whole numbers as partial sales are not possible", None),
])
def test_rounding_detector_precision(question, decimals):
    assert asks_rounding(question) == decimals


def test_rounding_to_decimals():
    assert round_half_away(117.145, 2) == 117.15 and round_half_away(2.675, 2) == 2.68
    assert round_half_away(-2.5) == -3.0 and round_half_away(56549.0, -2) == 56500.0
    assert answers_match(117.1499, 117.15, rounding=2)      # 2 decimals, not integer rounding
    assert not answers_match(117.1499, 117.0, rounding=2)
    assert answers_match(7066.6667, 7066.67, rounding=2)
    assert answers_match(56500.0, 56500.0, rounding=-3)     # an unrounded gold is matched by the exact optimum
    assert answers_match(56549.0, 57000.0, rounding=-3)


def _data_root():
    """data/sacopt when fetched, else an offline mirror's optmodel/ folder (REPRO_DATA_MIRROR), else None."""
    for root in [D.default_root(), *(m / "optmodel" for m in mirror_dirs())]:
        if all((Path(root) / f).is_file() for f, _, _ in D.FILES.values()) and (Path(root) / "ComplexOR").is_dir():
            return root
    return None


@pytest.mark.skipif(_data_root() is None, reason="data/sacopt not fetched and no REPRO_DATA_MIRROR")
@pytest.mark.parametrize("name", D.DATASETS)
def test_every_gold_answer_scores(name):
    """The gold answer, submitted as the prediction, matches itself under the question's rounding: 100%."""
    items = D.load_dataset(name, root=str(_data_root()))
    for p in items:
        predicted = "infeasible" if p.answer is None else p.answer
        assert answers_match(predicted, p.answer, rounding=asks_rounding(p.text)), (name, p.id, p.answer)
