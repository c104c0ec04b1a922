"""The claim metrics of the SmolLM2 + LoRA arm (``llm_claim_metrics``), on hand-made per-task results."""
import pytest

from papers.adpo.experiments import llm_claim_metrics

COMPARE = {"adpo": "adpo_token", "dpo": "dpo", "control": "adpo_adaptive_m1"}


def _task(ref, dpo, token, one_unit):
    em = lambda v: {"exact_match": {"mean": v}}  # noqa: E731
    return {"reference": {"exact_match": ref},
            "methods": {"dpo": em(dpo), "adpo_token": em(token), "adpo_adaptive_m1": em(one_unit)}}


def test_min_over_tasks_in_points_and_control():
    metrics = {"sort": _task(0.5, 0.60, 0.70, 0.61), "add": _task(0.7, 0.40, 0.45, 0.38)}
    out = llm_claim_metrics(metrics, ["sort", "add"], COMPARE)
    assert out["llm_scale_min_diff_points"] == pytest.approx(5.0)            # min(10, 5)
    assert out["control"]["one_unit"]["llm_scale_min_diff_points"] == pytest.approx(-2.0)   # min(1, -2)
    assert (out["reference_em_min"], out["reference_em_max"]) == (0.5, 0.7)
    assert out["informative"] is True


def test_all_zero_task_is_not_informative():
    metrics = {"sort": _task(0.5, 0.6, 0.7, 0.6), "add": _task(0.0, 0.0, 0.0, 0.0)}
    out = llm_claim_metrics(metrics, ["sort", "add"], COMPARE)
    assert out["llm_scale_min_diff_points"] is None
    assert out["control"]["one_unit"]["llm_scale_min_diff_points"] is None


def test_not_run_gives_nulls_for_every_claim_key():
    out = llm_claim_metrics(None, [], {})
    assert out["llm_scale_min_diff_points"] is None and out["reference_em_min"] is None
    assert out["control"]["one_unit"]["llm_scale_min_diff_points"] is None
