"""The perf experiment at smoke scale: the keys the performance comparison reads, and its untimed values."""
from pathlib import Path

import pytest

from shared import seeding
from shared.config import load_paper_config, scale_block
from shared.experiment import RunContext

from papers.lukv.allocation import allocate_budget
from papers.lukv.experiments import perf, random_instance
from papers.lukv.profile import total_budget

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


@pytest.fixture(scope="module")
def smoke_perf(tmp_path_factory):
    block = scale_block(load_paper_config(CONFIG), "smoke")
    params = block["experiments"]["perf"]["params"]
    ctx = RunContext(name="perf", scale="smoke", seed=7, out_dir=tmp_path_factory.mktemp("perf"))
    return params, ctx, perf(params, ctx)


def test_perf_keys_and_ratios_follow_from_the_times(smoke_perf):
    _, _, (rows, metrics) = smoke_perf
    a, e = metrics["allocation"], metrics["eviction"]
    assert a["time_ratio_dp_over_greedy"] == a["dp_s"] / a["greedy_s"]
    assert set(e["median_s"]) == {"none", "scorer", "adakv", "lukv"}
    for m, t in e["median_s"].items():
        assert t > 0
        assert e["ratio_to_no_press"][m] == t / e["median_s"]["none"]
    assert e["ratio_to_no_press"]["none"] == 1.0
    assert {r["method"]: r["value"] for r in rows} == e["ratio_to_no_press"]


def test_perf_value_gap_is_that_of_the_timed_allocations(smoke_perf):
    params, ctx, (_, metrics) = smoke_perf
    n, t = params["allocation"]["N"], params["allocation"]["T"]
    d = random_instance(seeding.generator(ctx.seed, "perf", "alloc"), n, t)
    budget = total_budget(0.8, n, t)
    g = allocate_budget(d, budget, method="greedy")
    e = allocate_budget(d, budget, method="dp")
    a = metrics["allocation"]
    assert (a["N"], a["T"], a["B"]) == (n, t, budget)
    assert a["rel_value_gap"] == (e.value - g.value) / e.value
