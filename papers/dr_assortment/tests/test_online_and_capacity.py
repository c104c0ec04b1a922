"""Explore-then-commit helpers, plug-in decision gaps, revenue-ordered check, and the outputs of the
capacitated sweep / online / multi-divergence sample-complexity experiments (known identities)."""
import math

import numpy as np
import pytest

from shared.claims import load_claims
from shared.config import load_yaml
from shared.experiment import run_experiment

from papers.dr_assortment.bandit import run_mnl_bandit, ucb_weights
from papers.dr_assortment.experiments import EXPERIMENTS
import papers.dr_assortment.experiments as E
from papers.dr_assortment.mnl import is_revenue_ordered, revenue_ordered_sets
from papers.dr_assortment.online import etc_expected_regret, etc_exploration_length, robust_decision_gaps
from papers.dr_assortment.robust import solve_drao
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CONFIG = HERE / "config.yaml"


def test_claims_file_is_valid():
    claims = load_claims(HERE / "claims.yaml")  # validates against the schema; raises on duplicate ids
    assert all(c["kind"] in ("paper", "check", "finding") for c in claims)


# ------------------------------------------------------------------ explore-then-commit
def test_exploration_length_known_values():
    assert etc_exploration_length(1000, 1.0) == 100          # 1000^(2/3) = 100 exactly
    assert etc_exploration_length(27, 0.5) == 5              # ceil(0.5 * 9)
    assert etc_exploration_length(64000, 2.0) == 3200        # 2 * 40^2
    assert etc_exploration_length(5, 10.0) == 5              # capped at the horizon
    assert etc_exploration_length(1, 1e-6) == 1              # at least one exploration round


@pytest.mark.parametrize("horizon, coef, match", [(0, 1.0, "horizon"), (2.5, 1.0, "horizon"), (True, 1.0, "horizon"),
                                                  (10, 0.0, "coef"), (10, float("nan"), "coef"),
                                                  (10, -1.0, "coef")])
def test_exploration_length_bad_inputs(horizon, coef, match):
    with pytest.raises(ValueError, match=match):
        etc_exploration_length(horizon, coef)


def test_expected_regret_arithmetic():
    assert etc_expected_regret(10, 3, 2.0, 0.5) == pytest.approx(9.5, abs=1e-15)
    assert etc_expected_regret(10, 10, 2.0, 7.0) == 20.0          # all exploration
    assert etc_expected_regret(10, 0, 2.0, 0.0) == 0.0            # perfect commit, no exploration


@pytest.mark.parametrize("args, match", [((10, 11, 1.0, 1.0), "explore_len"), ((10, -1, 1.0, 1.0), "explore_len"),
                                         ((10, 3, -1.0, 1.0), "explore_gap"),
                                         ((10, 3, 1.0, float("inf")), "commit_gap"),
                                         ((0, 0, 1.0, 1.0), "horizon")])
def test_expected_regret_bad_inputs(args, match):
    with pytest.raises(ValueError, match=match):
        etc_expected_regret(*args)


# ------------------------------------------------------------------ plug-in decision gaps
def _two_item_context():
    # phi_0 = e_1, phi_1 = e_2, so v_i = exp(theta_i)
    return np.array([[[1.0, 0.0], [0.0, 1.0]]])


def test_decision_gap_small_known_answer():
    # v = (1, 1), r = (1, 10), rho = 0: Rev({1}) = 5 is optimal, Rev({0, 1}) = 11/3. With theta_hat giving
    # v_hat = (100, 0.01) the plug-in picks {0, 1} (0.991 vs 0.099), so the gap is 5 - 11/3 = 4/3.
    feats, r = _two_item_context(), np.array([1.0, 10.0])
    theta_hat = np.log([100.0, 0.01])
    for div in ("tv", "kl", "chi2"):
        gaps = robust_decision_gaps(feats, np.zeros(2), theta_hat, r, 0.0, div)
        assert gaps == pytest.approx([4.0 / 3.0], rel=1e-12)


@pytest.mark.parametrize("div, cap", [("kl", None), ("tv", 2), ("chi2", None)])
def test_decision_gap_zero_at_true_parameter_and_nonnegative(div, cap):
    rng = np.random.default_rng(3)
    feats = rng.standard_normal((6, 5, 3))
    theta = rng.standard_normal(3)
    r = rng.uniform(1, 10, 5)
    assert np.all(robust_decision_gaps(feats, theta, theta, r, 0.2, div, cap) == 0.0)
    gaps = robust_decision_gaps(feats, theta, theta + rng.standard_normal(3), r, 0.2, div, cap)
    assert np.all(gaps >= -1e-12)
    # the gap is the brute-force robust optimum minus the value of the plug-in set
    v = np.exp(feats[0] @ theta)
    assert gaps[0] <= solve_drao(v, r, 0.2, div, cap, method="brute").value


def test_nominal_policy_equals_robust_policy_at_rho_zero():
    rng = np.random.default_rng(4)
    feats = rng.standard_normal((5, 6, 2))
    theta, theta_hat = rng.standard_normal(2), rng.standard_normal(2)
    r = rng.uniform(1, 10, 6)
    a = robust_decision_gaps(feats, theta, theta_hat, r, 0.0, "kl", policy="robust")
    b = robust_decision_gaps(feats, theta, theta_hat, r, 0.0, "kl", policy="nominal")
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_decision_gap_bad_inputs():
    feats, r = _two_item_context(), np.array([1.0, 10.0])
    z = np.zeros(2)
    with pytest.raises(ValueError, match="test_features"):
        robust_decision_gaps(feats[0], z, z, r, 0.1, "kl")
    with pytest.raises(ValueError, match="theta_hat"):
        robust_decision_gaps(feats, z, np.zeros(3), r, 0.1, "kl")
    with pytest.raises(ValueError, match="theta_true"):
        robust_decision_gaps(feats, np.array([np.nan, 0.0]), z, r, 0.1, "kl")
    with pytest.raises(ValueError, match="policy"):
        robust_decision_gaps(feats, z, z, r, 0.1, "kl", policy="greedy")
    with pytest.raises(ValueError, match="best"):
        robust_decision_gaps(feats, z, z, r, 0.1, "kl", best=[])
    with pytest.raises(ValueError, match="divergence"):
        robust_decision_gaps(feats, z, z, r, 0.1, "hellinger")
    with pytest.raises(ValueError, match="capacity"):
        robust_decision_gaps(feats, z, z, r, 0.1, "kl", capacity=0)


# ------------------------------------------------------------------ revenue-ordered check
def test_is_revenue_ordered_known_answers():
    r = [5.0, 3.0, 3.0, 1.0]
    assert is_revenue_ordered([], r) and is_revenue_ordered([0, 1, 2, 3], r)
    assert is_revenue_ordered([0], r) and is_revenue_ordered([0, 1], r)
    assert is_revenue_ordered([0, 2], r)                          # either half of the tie group
    assert not is_revenue_ordered([1], r)                        # skips the top item
    assert not is_revenue_ordered([0, 3], r)
    assert all(is_revenue_ordered(S, r) for S in revenue_ordered_sets(r))


def test_is_revenue_ordered_bad_inputs():
    with pytest.raises(ValueError, match="S"):
        is_revenue_ordered([0, 0], [1.0, 2.0])
    with pytest.raises(ValueError, match="r"):
        is_revenue_ordered([0], [1.0, -2.0])
    with pytest.raises(ValueError, match="r must be 1-D"):
        is_revenue_ordered([0], [[1.0, 2.0]])


# ------------------------------------------------------------------ experiment outputs (smoke settings)
def test_capacitated_sweep_respects_capacity_and_dominates(tmp_path):
    m = run_experiment(EXPERIMENTS, "capacitated_sweep", CONFIG, "smoke", tmp_path / "cs")
    cap = m["capacity"]
    assert m["max_size_robust"] <= cap
    assert m["min_gain"] >= -1e-12                               # the robust set maximises the worst case
    for div, by_rho in m["sweep"].items():
        rhos = sorted(by_rho, key=float)
        wc = [by_rho[s]["mean_wc_robust"] for s in rhos]
        assert all(a >= b - 1e-12 for a, b in zip(wc, wc[1:])), div   # worst case shrinks as the ball grows


def test_online_regret_decomposition(tmp_path):
    m = run_experiment(EXPERIMENTS, "online", CONFIG, "smoke", tmp_path / "on")
    p = load_yaml(CONFIG)["smoke"]["experiments"]["online"]["params"]
    for t in m["horizons"]:
        t0 = m["explore_len"][str(t)]
        assert t0 == math.ceil(p["explore_coef"] * t ** (2 / 3) - 1e-9)
        for policy in ("robust", "nominal"):
            expected = t0 * m["mean_explore_gap"] + (t - t0) * m[policy]["mean_commit_gap"][str(t)]
            assert m[policy]["mean_regret"][str(t)] == pytest.approx(expected, rel=1e-12)


def test_sample_complexity_reports_every_decision(tmp_path):
    m = run_experiment(EXPERIMENTS, "sample_complexity", CONFIG, "smoke", tmp_path / "sc")
    decisions = load_yaml(CONFIG)["smoke"]["experiments"]["sample_complexity"]["params"]["decisions"]
    assert len(m["decision_order"]) == len(decisions) == len(m["decisions"])
    assert m["gap_ratio"] == m["decisions"][m["decision_order"][0]]["gap_ratio"]
    assert m["max_gap_ratio"] == max(d["gap_ratio"] for d in m["decisions"].values())
    per_rep = [d["gap_ratio_per_rep"] for d in m["decisions"].values()]
    assert m["max_gap_ratio_per_rep"] == [max(col) for col in zip(*per_rep)]
    assert len(m["control_random_gap_ratio_per_rep"]) == m["n_reps"]
    for d in m["decisions"].values():
        assert all(g >= 0 for g in d["mean_gap"].values())


# ------------------------------------------------------------------ MNL bandits
def test_ucb_weights_known_values_and_bad_inputs():
    w = ucb_weights(np.array([0.5, 0.0]), np.array([4.0, 0.0]), epoch=1, bonus=1.0, v_init=2.0)
    log_term = math.log(math.sqrt(2) * 1 + 1)
    assert w[0] == pytest.approx(0.5 + math.sqrt(48 * 0.5 * log_term / 4) + 48 * log_term / 4)
    assert w[1] == 2.0  # never offered: v_init
    assert np.array_equal(ucb_weights(np.array([0.3]), np.array([2.0]), 5, bonus=0.0), [0.3])
    with pytest.raises(ValueError):
        ucb_weights(np.array([0.3]), np.array([2.0]), 0)


def test_bandit_epoch_counts_are_unbiased_and_regrets_consistent():
    rng = np.random.default_rng(0)
    v, r = np.array([0.8, 0.5, 1.2]), np.array([5.0, 8.0, 3.0])
    run = run_mnl_bandit(v, r, 3000, np.random.default_rng(1), objective="robust", rho=0.3)
    assert run.robust_regret.shape == (3000,) and np.all(np.diff(run.robust_regret) >= -1e-12)  # pseudo-regret >= 0
    best = solve_drao(v, r, 0.3, "kl")
    # with the learner's optimum offered every round the pseudo-regret is exactly 0
    again = run_mnl_bandit(v, r, 50, rng, objective="robust", rho=0.0, learner_rho=0.0, bonus=0.0, v_init=10.0)
    assert again.n_epochs >= 1
    # radius 0 for the learner and nominal UCB give identical runs on the same stream
    a = run_mnl_bandit(v, r, 500, np.random.default_rng(2), objective="robust", rho=0.3, learner_rho=0.0)
    b = run_mnl_bandit(v, r, 500, np.random.default_rng(2), objective="nominal", rho=0.3)
    assert np.array_equal(a.robust_regret, b.robust_regret) and a.final_set == b.final_set
    assert best.value > 0
    with pytest.raises(ValueError, match="objective"):
        run_mnl_bandit(v, r, 10, rng, objective="greedy", rho=0.3)
    with pytest.raises(ValueError, match="horizon"):
        run_mnl_bandit(v, r, 0, rng, objective="robust", rho=0.3)


def test_epoch_purchase_counts_estimate_the_weights():
    # offering a fixed set, the mean number of purchases of i per epoch is v_i (geometric count)
    v, r = np.array([0.7, 0.3]), np.array([1.0, 1.0])
    rng = np.random.default_rng(3)
    from papers.dr_assortment.bandit import _sample
    from papers.dr_assortment.mnl import choice_probabilities
    p = choice_probabilities(v, [0, 1])
    counts, epochs = np.zeros(2), 20000
    for _ in range(epochs):
        while True:
            c = _sample(rng, p)
            if c == 0:
                break
            counts[c - 1] += 1
    assert np.allclose(counts / epochs, v, rtol=0.03)


def test_per_rep_ratios_known_values():
    """gap(n_max) / gap(n_min) per replication; a zero gap at n_min counts as no decay (1.0)."""
    assert E._per_rep_ratios([0.4, 0.0, 0.2], [0.1, 0.0, 0.05]) == [0.25, 1.0, 0.25]
    with pytest.raises(ValueError, match="one entry per replication"):
        E._per_rep_ratios([0.1], [0.1, 0.2])
