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


def test_main_probe_compares_with_the_release_only_at_the_main_configuration(tmp_path):
    from shared.experiment import RunContext

    ctx = RunContext(name="main_probe", scale="smoke", seed=0, out_dir=tmp_path)
    _, m = E.main_probe({"n": 20, "p": 30, "K": 3, "seeds": [2021], "n_sim": 50}, ctx)
    assert m["main_config"] is False and m["acc_minus_published"] is None and len(m["acc_by_seed"]) == 1
    assert E._is_main({"n": 250, "p": 500, "K": 25, "seeds": list(range(2021, 2031))})
    assert not E._is_main({"n": 250, "p": 500, "K": 25, "seeds": [2021]})


def test_random_affinity_control_is_at_chance():
    # the control's affinity carries no information about the clusters (AMI near 0), and it is deterministic
    import numpy as np
    from papers.dro_varclust.cluster import clustering_scores
    from papers.dro_varclust.data import make_block_factor_data

    _, y = make_block_factor_data(50, 100, 5, seed=2021)
    labels = E.random_affinity_labels(100, 5, E.random_affinity_generator(2021))
    assert clustering_scores(y, labels)["ami"] < 0.1
    np.testing.assert_array_equal(labels, E.random_affinity_labels(100, 5, E.random_affinity_generator(2021)))


def test_pecok_baseline_refuses_a_reference_of_another_size_before_solving(smoke_results, tmp_path):
    # synthetic_main at smoke is (n, p, K) = (20, 30, 3); a PECOK run at p = 40 must stop on reading it
    from shared.experiment import RunContext

    ctx = RunContext(name="pecok_baseline", scale="smoke", seed=0, out_dir=tmp_path / "pecok_baseline")
    ctx.out_dir.mkdir(parents=True)
    params = {"n": 20, "p": 40, "K": 3, "seeds": [2021], "reference_dir": str(smoke_results / "synthetic_main")}
    with pytest.raises(ValueError, match="synthetic_main's metrics are for"):
        E.pecok_baseline(params, ctx)
    assert not (ctx.out_dir / "timings.json").exists()
    with pytest.raises(ValueError, match="synthetic_main's metrics are for"):
        E.pecok_baseline(params | {"p": 30, "seeds": [2099]}, ctx)
