"""The smoke scale end to end: every experiment through the shared runner, figures, claim keys, determinism."""
from pathlib import Path

import pytest

from shared.config import load_paper_config
from shared.testing import claim_metric_values, missing_figures, rerun_is_identical, run_scale
from shared.results import read_metrics

from papers.dro_varclust import experiments as E
from papers.dro_varclust.plots import make_figures

HERE = Path(__file__).resolve().parent.parent
CONFIG = HERE / "config.yaml"


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    return run_scale(E.EXPERIMENTS, CONFIG, tmp_path_factory.mktemp("smoke"))


def test_every_smoke_figure_is_written(smoke_results, tmp_path):
    assert missing_figures(make_figures, smoke_results, tmp_path, CONFIG) == []


def test_claim_keys_exist_at_smoke(smoke_results):
    for (claim_id, part), value in claim_metric_values(HERE / "claims.yaml", smoke_results).items():
        assert isinstance(value, (int, float)), (claim_id, part, value)


def test_metrics_are_byte_identical(smoke_results, tmp_path):
    assert rerun_is_identical(E.EXPERIMENTS, CONFIG, "synthetic_main", smoke_results, tmp_path)


def test_smoke_solver_check_agrees_with_cvxpy(smoke_results):
    m = read_metrics(smoke_results / "solver_check" / "metrics.json")
    assert m["max_rel_obj_gap"] < 1e-4 and m["max_abs_diag"] == 0.0


def test_reference_is_reused_or_recomputed_identically(smoke_results, tmp_path):
    # k_misspecified without synthetic_main's coefficients recomputes them and gets the same metrics.
    cfg = load_paper_config(CONFIG)["smoke"]["experiments"]["k_misspecified"]["params"]
    from shared.experiment import RunContext

    ctx = RunContext(name="k_misspecified", scale="smoke", seed=0, out_dir=tmp_path / "alone" / "k_misspecified")
    ctx.out_dir.mkdir(parents=True)
    _, metrics = E.k_misspecified(dict(cfg), ctx)
    assert metrics == read_metrics(smoke_results / "k_misspecified" / "metrics.json")
