"""The negative controls of `poly-time` (brute force, exponential) and `mle-rate` (a misspecified MLE)."""
import math

import numpy as np
import pytest

from shared.experiment import RunContext

from papers.dr_assortment import experiments as E
from papers.dr_assortment.learning import fit_mnl_mle_omitting, make_contextual_data


def _ctx(tmp_path, name):
    ctx = RunContext(name=name, scale="smoke", seed=0, out_dir=tmp_path / name)
    ctx.out_dir.mkdir(parents=True)
    return ctx


# ------------------------------------------------------------------ mle-rate: misspecified model
def test_omitting_a_relevant_feature_leaves_a_bias_floor():
    # the omitted coefficient is fixed at 0, so the error is at least |theta*_j| at any n
    rng = np.random.default_rng(5)
    theta = np.array([0.8, 0.6, 0.0])
    feats, offered, choices = make_contextual_data(rng, 4000, 6, 3, 3, theta)
    est = fit_mnl_mle_omitting(feats, offered, choices, 0)
    assert est[0] == 0.0
    assert np.linalg.norm(est - theta) >= 0.8


def test_omitting_an_irrelevant_feature_is_consistent():
    # theta*_j = 0 and independent features: the smaller model is correct, so its MLE converges to theta*
    rng = np.random.default_rng(6)
    theta = np.array([0.8, 0.6, 0.0])
    feats, offered, choices = make_contextual_data(rng, 8000, 6, 3, 3, theta)
    assert np.linalg.norm(fit_mnl_mle_omitting(feats, offered, choices, 2) - theta) < 0.1


@pytest.mark.parametrize("omit", [-1, 3, 1.0, True])
def test_omit_must_be_a_feature_index(omit):
    feats = np.zeros((4, 3, 3))
    with pytest.raises(ValueError, match="omit"):
        fit_mnl_mle_omitting(feats, np.ones((4, 3), bool), -np.ones(4, int), omit)


def test_misspecified_control_cannot_reach_the_rate(tmp_path):
    # d = 3: the control's error is >= max|theta*_j| >= 1/sqrt(3) at every n; between n = 200 and 3200 a slope
    # <= -0.3 would need its error at n = 200 to be >= 16^0.3 / sqrt(3) = 1.3, far above an MLE's error there
    params = {"dim": 3, "n_items": 5, "offer_size": 3, "ns": [200, 3200], "n_reps": 3, "n_test": 3,
              "decisions": [["kl", 0.1, None]], "control_misspecified": True}
    _, m = E.run_sample_complexity(params, _ctx(tmp_path, "sample_complexity"))
    ctl = m["control_misspecified"]
    assert len(ctl["err_slope_per_rep"]) == 3
    assert all(s > -0.3 for s in ctl["err_slope_per_rep"])
    assert all(ctl["mean_err"][k] >= 1 / math.sqrt(3) for k in ("200", "3200"))


# ------------------------------------------------------------------ poly-time: brute force
def test_brute_force_control_grows_faster_than_quadratic(tmp_path):
    # brute force enumerates about 2^N subsets (C >= N): from N = 6 to 10 that is 16x the work, a log-log slope
    # of log 16 / log(10/6) = 5.4, while a quadratic would give 2
    params = {"rho": 0.1, "capacity": 10, "sizes": [10, 20], "n_instances": 1, "control_brute_sizes": [6, 10]}
    _, m = E.run_scalability(params, _ctx(tmp_path, "scalability"))
    ctl = m["timing"]["control_brute"]
    assert set(ctl["median_s"]) == {"6", "10"}
    assert ctl["slope"] > 2.0


def test_without_control_sizes_no_control_is_written(tmp_path):
    params = {"rho": 0.1, "capacity": 3, "sizes": [10, 20], "n_instances": 1}
    _, m = E.run_scalability(params, _ctx(tmp_path, "scalability"))
    assert "control_brute" not in m["timing"]
