"""The evaluate experiment at smoke scale: every press run enters the recorded budget error."""
from pathlib import Path

import pytest

from shared.config import load_paper_config, scale_block
from shared.experiment import RunContext

from papers.lukv.experiments import evaluate

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


@pytest.fixture(scope="module")
def smoke_evaluate(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("evaluate")
    params = dict(scale_block(load_paper_config(CONFIG), "smoke")["experiments"]["evaluate"]["params"])
    params.update(model_from=str(tmp / "absent_model"), profile_from=str(tmp / "absent_profile"))
    ctx = RunContext(name="evaluate", scale="smoke", seed=0, out_dir=tmp / "evaluate")
    ctx.out_dir.mkdir()
    return params, evaluate(params, ctx)[1]


def test_every_press_run_is_counted_in_the_budget(smoke_evaluate):
    # per scorer and rho: every non-full method once (PyramidKV under the primary scorer only) plus, for the
    # primary scorer, split 0's shuffled control; then for the primary scorer and every rho the splits 1..S-1 of
    # LU-KV and of its shuffled control and all S splits of the reversed control
    params, m = smoke_evaluate
    methods = [x for x in params["methods"] if x != "full"]
    n_scorers, n_rho, S = len(params["scorers"]), len(params["rhos"]), int(params["n_splits"])
    per_scorer = len(methods) - ("pyramidkv" in methods)
    expected = n_rho * (n_scorers * per_scorer + ("pyramidkv" in methods) + 1) + n_rho * (2 * (S - 1) + S)
    assert m["budget"]["n_press_runs"] == expected
    assert m["budget"]["max_abs_kept_error"] <= 1e-12


def test_claim_values_are_per_split_only(smoke_evaluate):
    params, m = smoke_evaluate
    S = int(params["n_splits"])
    for block in (m["claims"], m["control"]["reversed_heads"], m["control"]["shuffled_heads"]):
        assert all(k.endswith("_per_split") and len(v) == S for k, v in block.items())
