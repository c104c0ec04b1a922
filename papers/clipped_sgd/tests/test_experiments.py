"""The smoke scale: what is specific to the clipped-SGD experiments (torch agreement, seeds, keys)."""
from pathlib import Path

import numpy as np
import pytest

from shared.experiment import RunContext
from shared.testing import run_scale
from shared.results import read_metrics

from papers.clipped_sgd import experiments as E

HERE = Path(__file__).resolve().parent.parent
CONFIG = HERE / "config.yaml"


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    return run_scale(E.EXPERIMENTS, CONFIG, tmp_path_factory.mktemp("smoke"), names=["performance"])


def test_torch_equivalence_and_call_counts_at_smoke(smoke_results):
    perf = read_metrics(smoke_results / "performance" / "metrics.json")
    assert perf["rel_diff_torch"]["eps_torch"] <= 1e-10
    assert 1e-12 < perf["rel_diff_torch"]["eps_zero"] < 1e-4   # eps = 0 differs from torch, as expected
    assert perf["grad_evals_per_step"] == {"numpy": 1.0, "torch": 1.0}


def test_timings_carry_the_headline_ratio_keys(smoke_results):
    """config/performance.yaml reads ratio.numpy_vectorised_over_torch and ratio.sklearn_over_torch; each ratio is
    the quotient of the per-1e4-step times it names (alternating rounds, least CPU time)."""
    t = read_metrics(smoke_results / "performance" / "timings.json")
    per, ratio = t["per_1e4_steps_s"], t["ratio"]
    assert ratio["numpy_vectorised_over_torch"] == pytest.approx(per["numpy_vectorised_per_run"] / per["torch"])
    assert ratio["sklearn_over_torch"] == pytest.approx(per["sklearn_sgdregressor_epoch"] / per["torch"])
    assert t["rounds"] >= 1 and set(t["calls_per_measurement"]) == {"numpy_single", "numpy_vectorised", "torch",
                                                                    "sklearn"}


def test_data_and_index_seeds_are_separate_children():
    ctx = RunContext(name="x", scale="smoke", seed=3, out_dir=Path("."))
    seeds = E.cell_seeds(ctx, 2, 3)
    states = {tuple(ss.generate_state(2)) for cell in seeds for pair in cell for ss in pair}
    assert len(states) == 12                  # 2 cells x 3 datasets x (data, index): all distinct
    again = E.cell_seeds(ctx, 2, 3)
    assert all(np.array_equal(a[0].generate_state(2), b[0].generate_state(2))
               for ca, cb in zip(seeds, again) for a, b in zip(ca, cb))


def test_keys():
    assert E.alpha_key(1.5) == "alpha_1p5" and E.alpha_key(2) == "alpha_2"
    assert E.n_key(10000) == "n1e4" and E.n_key(31623) == "n31623" and E.n_key(100) == "n1e2"
