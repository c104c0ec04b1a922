"""The replicates experiment: one value per trained model, the mean over that model's profiling splits."""
import json
from pathlib import Path

import numpy as np
import pytest

from shared.config import load_paper_config, scale_block
from shared.experiment import RunContext

from papers.lukv.experiments import REPLICATE_KEYS, _claim_tables, _model_means, _per_model, evaluate, replicates

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


def test_model_means_are_split_means_of_the_keys_present():
    table = {"oracle_ratio_lukv_uniform_per_split": [0.9, 1.0, 1.1],
             "recall_gain_lukv_uniform_per_split": [0.5, 0.0], "not_a_claim_per_split": [7.0]}
    assert _model_means(table) == pytest.approx({"oracle_ratio_lukv_uniform": 1.0, "recall_gain_lukv_uniform": 0.25})


def test_per_model_keeps_only_keys_every_model_has():
    a = {"oracle_ratio_lukv_uniform_per_split": [1.0, 3.0], "kl_ratio_lukv_uniform_per_split": [2.0]}
    b = {"oracle_ratio_lukv_uniform_per_split": [4.0]}
    assert _per_model([a, b]) == {"oracle_ratio_lukv_uniform_per_model": [2.0, 4.0]}


def test_claim_tables_prefix_the_transfer_keys():
    transfer = {"oracle_ratio_lukv_uniform_per_split": [0.5], "rho": 0.8, "tasks": {},
                "control": {"shuffled_heads": {"oracle_ratio_lukv_pertask_per_split": [2.0]},
                            "uniform": {"oracle_ratio_lukv_pertask_per_split": [3.0]}}}
    out = _claim_tables({"kl_ratio_lukv_uniform_per_split": [1.0]},
                        {"reversed_heads": {"kl_ratio_lukv_uniform_per_split": [4.0]}}, transfer)
    assert out["claims"] == {"kl_ratio_lukv_uniform_per_split": [1.0],
                             "transfer_oracle_ratio_lukv_uniform_per_split": [0.5]}
    assert out["control"]["reversed_heads"] == {"kl_ratio_lukv_uniform_per_split": [4.0]}
    assert out["control"]["shuffled_heads"] == {"transfer_oracle_ratio_lukv_pertask_per_split": [2.0]}
    assert out["control"]["uniform"] == {"transfer_oracle_ratio_lukv_pertask_per_split": [3.0]}


@pytest.fixture(scope="module")
def smoke_replicates(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replicates")
    block = scale_block(load_paper_config(CONFIG), "smoke")["experiments"]
    params = dict(block["evaluate"]["params"])
    params.update(model_from=str(tmp / "absent_model"), profile_from=str(tmp / "absent_profile"))
    ctx = RunContext(name="evaluate", scale="smoke", seed=0, out_dir=tmp / "evaluate")
    ctx.out_dir.mkdir()
    evaluated = evaluate(params, ctx)[1]
    (ctx.out_dir / "metrics.json").write_text(json.dumps(evaluated, default=float))
    rparams = dict(block["replicates"]["params"])
    rparams.update(model_from=params["model_from"], profile_from=params["profile_from"],
                   evaluate_from=str(ctx.out_dir), replicate_seeds=[1])
    rctx = RunContext(name="replicates", scale="smoke", seed=0, out_dir=tmp / "replicates")
    rctx.out_dir.mkdir()
    return json.loads(json.dumps(evaluated, default=float)), replicates(rparams, rctx)[1]


def test_model_zero_is_the_split_mean_of_evaluate(smoke_replicates):
    evaluated, m = smoke_replicates
    for key in ("oracle_ratio_lukv_uniform", "oracle_ratio_lukv_adakv", "recall_gain_lukv_uniform",
                "kl_ratio_lukv_uniform"):
        assert m["claims"][f"{key}_per_model"][0] == pytest.approx(np.mean(evaluated["claims"][f"{key}_per_split"]))
        assert m["control"]["reversed_heads"][f"{key}_per_model"][0] == pytest.approx(
            np.mean(evaluated["control"]["reversed_heads"][f"{key}_per_split"]))
    assert m["claims"]["transfer_oracle_ratio_lukv_pertask_per_model"][0] == pytest.approx(
        np.mean(evaluated["transfer"]["oracle_ratio_lukv_pertask_per_split"]))
    assert m["control"]["uniform"]["transfer_oracle_ratio_lukv_pertask_per_model"][0] == pytest.approx(
        np.mean(evaluated["transfer"]["control"]["uniform"]["oracle_ratio_lukv_pertask_per_split"]))


def test_one_value_per_model_and_the_lowest_recall(smoke_replicates):
    _, m = smoke_replicates
    assert m["init_seeds"] == [0, 1]
    assert set(m["claims"]) == {f"{k}_per_model" for k in REPLICATE_KEYS}
    assert all(len(v) == 2 for block in (m["claims"], *m["control"].values()) for v in block.values())
    # the shuffled control is scored in the oracle domain only on the further models
    assert "recall_gain_lukv_uniform_per_model" not in m["control"]["shuffled_heads"]
    assert m["recall_full_min"] == min(m["recall_full_per_model"])


def test_a_further_model_is_another_model(smoke_replicates):
    _, m = smoke_replicates
    first, second = m["per_model"][0]["claims"], m["per_model"][1]["claims"]
    assert first["oracle_ratio_lukv_uniform_per_split"] != second["oracle_ratio_lukv_uniform_per_split"]
