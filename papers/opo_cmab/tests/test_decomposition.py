"""Recorders of the regret decomposition (Section 4): hand-computed terms, the exact three-term identity, the
exponential-weights and bonus-potential bounds, the agreement with the agent, bad inputs, and the wiring into the
synthetic experiment."""
import math

import numpy as np
import pytest

from shared.experiment import RunContext

from papers.opo_cmab.decomposition import TERMS, bonus_bound, hedge_bound, mean_terms, replay_terms
from papers.opo_cmab.envs import make_env
from papers.opo_cmab.experiments import make_agent, misspecified_class, run_bandit, synthetic
from papers.opo_cmab.opo import opo_policies
from papers.opo_cmab.oracles import FiniteClassOracle

F_HAT = np.array([[0.0, 0.0], [0.5, 0.2]])
POLICIES = np.array([[0.5, 0.5], [0.7, 0.3]])
F_STAR = np.array([0.6, 0.1])  # the optimal action is 1


def test_terms_by_hand_without_bonus():
    t = replay_terms(F_HAT, POLICIES, F_STAR, gamma=0.0)
    assert set(t) == set(TERMS)
    # l~ = f_hat; subopt_2 = 0.7 * 0.5 + 0.3 * 0.2 - 0.2
    np.testing.assert_allclose(t["subopt"], [0.0, 0.21], atol=1e-15)
    np.testing.assert_allclose(t["bonus"], [0.0, 0.0])
    # (f_hat - f*)^2: round 1 (0.36, 0.01), round 2 (0.01, 0.01)
    np.testing.assert_allclose(t["sq_err"], [0.5 * 0.36 + 0.5 * 0.01, 0.01], atol=1e-15)
    # Corollary 4.1's quantity: f_hat_2 on the data of pi_1 only
    np.testing.assert_allclose(t["past_sq_err"], [0.0, 0.5 * 0.01 + 0.5 * 0.01], atol=1e-15)
    np.testing.assert_allclose(t["optimism"], [-0.1, 0.1], atol=1e-15)


def test_terms_by_hand_with_bonus():
    # gamma = 2, A = 2: beta_k / 2 = sqrt(k / 2); S_1 = (1, 1), S_2 = (1.5, 1.5)
    t = replay_terms(F_HAT, POLICIES, F_STAR, gamma=2.0)
    b1, b2 = math.sqrt(0.5), 1.0 / 1.5
    np.testing.assert_allclose(t["bonus"], [b1, b2], rtol=1e-14)
    np.testing.assert_allclose(t["subopt"], [0.0, 0.0], atol=1e-15)   # l~_2 = max(0, f_hat_2 - 2/3) = 0
    np.testing.assert_allclose(t["optimism"], [-0.1, -0.1], atol=1e-15)


def test_three_terms_sum_to_the_regret_of_each_round():
    rng = np.random.default_rng(3)
    K, A = 50, 4
    F = rng.random((K, A))
    P = opo_policies(F, 2.0, 0.5)[:K]
    f = rng.random(A)
    t = replay_terms(F, P, f, 0.5)
    np.testing.assert_allclose(t["approx"] + t["subopt"] + t["optimism"], P @ f - f.min(), atol=1e-14)


def test_replay_stays_under_the_hedge_bound():
    rng = np.random.default_rng(5)
    K, A = 400, 5
    eta = math.sqrt(math.log(A) / K)
    for _ in range(5):
        F = rng.random((K, A))
        P = opo_policies(F, eta, 0.0)[:K]
        for best in range(A):  # every point-mass comparator
            f = np.full(A, 1.0)
            f[best] = 0.0
            assert replay_terms(F, P, f, 0.0)["subopt"].sum() <= hedge_bound(K, A, eta) + 1e-9
    assert hedge_bound(K, A, eta) == pytest.approx(1.5 * math.sqrt(K * math.log(A)), rel=1e-12)


def test_accumulated_bonus_stays_under_the_potential_bound():
    rng = np.random.default_rng(7)
    K, A, gamma = 300, 4, 3.0
    one_hot = np.eye(A)[rng.integers(A, size=K)]
    for P in (rng.dirichlet(np.ones(A) * 0.3, size=K), one_hot, np.full((K, A), 1.0 / A)):
        total = replay_terms(np.zeros((K, A)), P, np.zeros(A), gamma)["bonus"].sum()
        assert total <= bonus_bound(K, A, gamma)
    # without the coverage counts (S = 1) the bonus would be sum_k min(1, beta_k / 2) ~ K^1.5 and break the bound
    # (where the cap at 1 does not bind: a small gamma)
    small = 0.05
    no_coverage = sum(min(1.0, 0.5 * small * math.sqrt(k / A)) for k in range(1, K + 1))
    assert no_coverage > 3 * bonus_bound(K, A, small)


def test_mean_terms_replays_what_the_agent_played():
    env = make_env("finite_class", 4, n_models=8, n_actions=3, context_dim=2)
    agent = make_agent({"algo": "opo", "eta": 5.0, "gamma": 0.3}, env, "finite_class", 1)
    run_bandit(env, agent, 30, 2)
    x = env.context(30)
    # the agent's policy on a context after 30 rounds is the replay's row 31
    probe = make_agent({"algo": "opo", "eta": 5.0, "gamma": 0.3}, env, "finite_class", 1)
    probe.oracle, probe.t = agent.oracle, 31
    _, pi = probe.act(x, np.random.default_rng(0))
    preds = agent.oracle.snapshot_predictions(x)
    np.testing.assert_allclose(opo_policies(preds[:30], 5.0, 0.3)[30], pi, atol=1e-12)
    one = mean_terms(agent.oracle, x[None], env.expected_losses(30)[None], 30, 5.0, 0.3)
    direct = replay_terms(preds[:30], opo_policies(preds[:30], 5.0, 0.3)[:30], env.expected_losses(30), 0.3)
    for term in TERMS:
        np.testing.assert_allclose(one[term], direct[term], atol=1e-15)


def test_realisable_oracle_error_vanishes_once_f_star_is_found():
    env = make_env("finite_class", 0, n_models=5, n_actions=2, context_dim=2)
    oracle = FiniteClassOracle(env.thetas, 0)
    for t in range(300):  # full information: every action's loss, so the ERM finds f*
        for a in range(2):
            oracle.add(env.context(t), a, float(np.random.default_rng(t * 2 + a).random() < env.expected_losses(t)[a]))
    contexts = np.array([env.context(1000 + m) for m in range(4)])
    f_star = np.array([env.expected_losses(1000 + m) for m in range(4)])
    t = mean_terms(oracle, contexts, f_star, 600, 1.0, 0.1)
    assert t["sq_err"][-1] == 0.0 and t["past_sq_err"][-1] == 0.0


def test_misspecified_class_excludes_f_star():
    env = make_env("finite_class", 1, n_models=6, n_actions=3, context_dim=2)
    shifted = misspecified_class(env.thetas)
    assert shifted.shape == env.thetas.shape
    np.testing.assert_allclose(shifted[..., -1] - env.thetas[..., -1], 1.0)
    np.testing.assert_array_equal(shifted[..., :-1], env.thetas[..., :-1])
    assert not np.any(np.all(np.isclose(shifted, env.theta_star), axis=(1, 2)))


def test_bad_inputs():
    with pytest.raises(ValueError, match="policies"):
        replay_terms(F_HAT, np.array([[0.5, 0.6], [0.7, 0.3]]), F_STAR, 0.0)
    with pytest.raises(ValueError, match="policies"):
        replay_terms(F_HAT, POLICIES[:1], F_STAR, 0.0)
    with pytest.raises(ValueError, match="f_star"):
        replay_terms(F_HAT, POLICIES, np.array([0.1, 0.2, 0.3]), 0.0)
    with pytest.raises(ValueError, match="gamma"):
        replay_terms(F_HAT, POLICIES, F_STAR, -1.0)
    with pytest.raises(ValueError, match="F_hat"):
        replay_terms(np.array([0.1, 0.2]), POLICIES, F_STAR, 0.0)
    with pytest.raises(ValueError, match="eta"):
        hedge_bound(10, 3, 0.0)
    with pytest.raises(ValueError, match="K and n_actions"):
        bonus_bound(0, 3, 1.0)
    oracle = FiniteClassOracle(np.zeros((2, 2, 2)), 0)
    with pytest.raises(ValueError, match="snapshots"):
        mean_terms(oracle, np.ones((1, 2)), np.zeros((1, 2)), 5, 1.0, 0.1)
    with pytest.raises(ValueError, match="same M"):
        mean_terms(oracle, np.ones((2, 2)), np.zeros((1, 2)), 1, 1.0, 0.1)


def test_synthetic_records_the_decomposition_and_its_controls(tmp_path):
    params = {"problems": [{"n_models": 5, "n_actions": 3, "context_dim": 2, "decomposition_controls": True}],
              "K": 40, "tune_seeds": 1, "eval_seeds": 2, "checkpoints": [10, 20, 40], "opo_eta": [1.0],
              "opo_gamma": [0.1], "squarecb_gamma_scale": [10.0], "falcon_gamma_scale": [10.0],
              "decomposition_contexts": 3}
    _, metrics = synthetic(params, RunContext(name="synthetic", scale="smoke", seed=1, out_dir=tmp_path))
    m = metrics["F5_A3"]
    ps = m["per_seed"]
    for key in ("subopt_slope", "sq_err_slope", "subopt_hedge_ratio", "bonus_ratio", "past_sq_err_over_log"):
        assert all(len(v) == 2 for v in ps[key].values()), key
    assert {"opo_theory", "opo_theory_eta0", "opo_theory_misspecified", "opo_tuned"} <= set(ps["subopt_slope"])
    assert "greedy" not in ps["subopt_slope"]          # only OPO runs are decomposed
    assert "opo_theory_eta0" not in ps["subopt_hedge_ratio"]   # eta = 0 has no finite hedge bound
    assert set(m["decomposition"]["at"]["opo_theory"]) == set(TERMS)
    assert all(h <= 1.0 for h in ps["subopt_hedge_ratio"]["opo_theory"])
    assert all(b <= 1.0 for b in ps["bonus_ratio"]["opo_theory"])
