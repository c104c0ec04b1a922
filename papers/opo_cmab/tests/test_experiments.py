"""The bandit loop: known regret of uniform play, bad inputs, the probability guard, a tiny deterministic run."""
import numpy as np
import pytest

from shared.experiment import RunContext
from shared.results import metrics_json

from papers.opo_cmab.baselines import Uniform
from papers.opo_cmab.envs import make_env
from papers.opo_cmab.experiments import loglog_slope, make_agent, run_bandit, synthetic


def test_uniform_regret_on_a_stream_is_linear_exactly():
    env = make_env("iris", 0)
    out = run_bandit(env, Uniform(3), 150, seed=1)
    assert set(out) == {"cum_pseudo_regret", "pv_loss", "actions", "chosen_prob"}
    assert all(len(v) == 150 for v in out.values())
    np.testing.assert_allclose(out["cum_pseudo_regret"], np.arange(1, 151) * 2 / 3, rtol=1e-12)
    np.testing.assert_allclose(out["chosen_prob"], 1 / 3)
    assert 0.5 < out["pv_loss"][-1] < 0.8


def test_supervised_and_opo_learn_iris():
    env = make_env("iris", 0)
    sup = run_bandit(env, make_agent({"algo": "supervised"}, env, "ridge", 0), 150, 0)
    opo = run_bandit(env, make_agent({"algo": "opo", "eta": 10.0, "gamma": 0.1}, env, "ridge", 0), 150, 0)
    assert sup["pv_loss"][-1] < 0.3 and opo["pv_loss"][-1] < 0.5


def test_run_bandit_bad_inputs():
    env = make_env("iris", 0)
    with pytest.raises(ValueError, match="n_rounds"):
        run_bandit(env, Uniform(3), 0, 0)
    with pytest.raises(ValueError, match="n_rounds"):
        run_bandit(env, Uniform(3), 151, 0)


class _Broken(Uniform):
    name = "broken"

    def act(self, context, rng):
        return 0, np.array([0.5, 0.2, 0.2])


def test_bad_distribution_names_round_and_algorithm():
    with pytest.raises(RuntimeError, match=r"'broken', round 1"):
        run_bandit(make_env("iris", 0), _Broken(3), 5, 0)


def test_loglog_slope():
    t = np.array([250, 500, 1000, 2000])
    assert loglog_slope(t, 3 * t ** 0.5) == pytest.approx(0.5, abs=1e-12)


def test_tiny_synthetic_is_deterministic(tmp_path):
    params = {"problems": [{"n_models": 5, "n_actions": 2, "context_dim": 2},
                           {"n_models": 5, "n_actions": 3, "context_dim": 2, "kind": "hidden_arm", "gap": 0.4}],
              "K": 40, "tune_seeds": 1, "eval_seeds": 2,
              "checkpoints": [10, 20, 40], "opo_eta": [1.0], "opo_gamma": [0.1], "squarecb_gamma_scale": [10.0],
              "falcon_gamma_scale": [10.0]}
    texts = []
    for _ in range(2):
        ctx = RunContext(name="synthetic", scale="smoke", seed=1, out_dir=tmp_path)
        rows, metrics = synthetic(dict(params), ctx)
        texts.append(metrics_json(metrics))
    assert texts[0] == texts[1]
    m = metrics["F5_A2"]
    assert m["tuning"]["tuned"]["opo"] == "opo_eta1_gamma0.1"
    assert m["final"]["uniform"] > 0
    ps = m["per_seed"]
    assert {"final", "slope", "normalised", "late_rate", "minus_greedy", "ratio_to_squarecb", "bonus_gain"} <= set(ps)
    assert all(len(v) == 2 for v in ps["final"].values())
    # the bonus-removed control keeps the tuned eta and sets gamma = 0
    np.testing.assert_allclose(np.array(ps["bonus_gain"]["opo_tuned"]),
                               np.array(ps["final"]["opo_tuned_nobonus"]) - np.array(ps["final"]["opo_tuned"]))
    assert "hidden_F5_A3" in metrics and metrics["scaling"] is None


def test_hidden_arm_class_structure():
    from papers.opo_cmab.envs import hidden_arm_models
    thetas, star = hidden_arm_models(np.random.default_rng(0), 50, 4, 3, gap=0.4, bad=1.0, jitter=0.1)
    assert thetas.shape == (50, 4, 4)
    np.testing.assert_array_equal(thetas[:, 0, -1], 0.0)   # the safe action is the same in every model
    np.testing.assert_allclose(thetas[:, :, :-1], np.broadcast_to(thetas[0, 0, :-1], (50, 4, 3)))  # one shared slope
    bias = thetas[star, 1:, -1]
    assert np.sum(bias == -0.4) == 1 and np.sum(bias == 1.0) == 2   # f*: one hidden good action, the rest bad
    with pytest.raises(ValueError, match="n_actions"):
        hidden_arm_models(np.random.default_rng(0), 5, 1, 3)


def test_jackknife_of_the_mean_is_the_standard_error():
    from papers.opo_cmab.experiments import jackknife_se
    x = np.array([1.0, 4.0, 2.5, 7.0])
    assert jackknife_se(lambda ix: x[ix].mean(), 4) == pytest.approx(x.std(ddof=1) / 2.0, rel=1e-12)
    assert jackknife_se(lambda ix: x[ix].mean(), 1) == 0.0
