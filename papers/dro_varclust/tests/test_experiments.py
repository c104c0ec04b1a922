"""The smoke scale: what is specific to the DRO clustering experiments (solver check, reuse of the reference)."""
from pathlib import Path

import pytest

from shared.config import load_paper_config
from shared.testing import run_scale
from shared.results import read_metrics

from papers.dro_varclust import experiments as E

HERE = Path(__file__).resolve().parent.parent
CONFIG = HERE / "config.yaml"


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    return run_scale(E.EXPERIMENTS, CONFIG, tmp_path_factory.mktemp("smoke"), names=["solver_check", "synthetic_main", "k_misspecified"])


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
