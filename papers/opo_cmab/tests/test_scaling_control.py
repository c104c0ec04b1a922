"""The scaling fit and its uniform-play control (scaling-actions), from the hidden-arm class's construction.

On the hidden-arm class f*(c, 0) = sigmoid(s), f*(c, a*) = sigmoid(s - gap) and f*(c, a) = sigmoid(s + bad) for the
other |A| - 2 actions (s = w.z, the shared context term). Uniform play's pseudo-regret per round is therefore
(g0 + (|A| - 2) g1) / |A| with g0 = sigmoid(s) - sigmoid(s - gap) and g1 = sigmoid(s + bad) - sigmoid(s - gap):
it grows with |A| (the share of bad actions) and does not depend on |F|.
"""
import math

import numpy as np

from shared.experiment import RunContext

from papers.opo_cmab.baselines import Uniform
from papers.opo_cmab.envs import make_env
from papers.opo_cmab.experiments import run_bandit, scaling_exponents, synthetic
from papers.opo_cmab.oracles import sigmoid

GRID_A, GRID_F = (2, 5, 10), (10, 100, 1000)


def _fake(regret_of) -> tuple[dict, list[dict]]:
    problems = [{"n_models": f, "n_actions": a, "kind": "hidden_arm"} for a in GRID_A for f in GRID_F]
    metrics = {f"hidden_F{f}_A{a}": {"final": {"m": 1.0}, "per_seed": {"final": {"m": [regret_of(a, f)] * 3}}}
               for a in GRID_A for f in GRID_F}
    return metrics, problems


def test_scaling_fit_recovers_known_exponents():
    metrics, problems = _fake(lambda a, f: 7.0 * a ** 0.5 * math.log(f) ** 0.3)
    out = scaling_exponents(metrics, problems, "m", 100)
    assert out["replicates"] == 3
    np.testing.assert_allclose(out["beta_A"], [0.5] * 3, atol=1e-12)
    np.testing.assert_allclose(out["beta_logF"], [0.3] * 3, atol=1e-12)


def test_uniform_exponents_from_the_class_construction():
    # at s = 0 (the slope term is small: slope 0.5 / sqrt(d)), gap 0.4, bad 1
    g0, g1 = 0.5 - sigmoid(-0.4), sigmoid(1.0) - sigmoid(-0.4)
    metrics, problems = _fake(lambda a, f: 2000 * (g0 + (a - 2) * g1) / a)
    out = scaling_exponents(metrics, problems, "m", 2000)
    assert min(out["beta_A"]) > 1.0                     # the control of scaling-actions (<= 0.75) must fail
    np.testing.assert_allclose(out["beta_logF"], 0.0, atol=1e-12)   # and no |F| dependence at all


def test_uniform_pseudo_regret_per_round_is_the_mean_gap():
    env = make_env("finite_class", 4, n_models=30, n_actions=5, context_dim=4, kind="hidden_arm", gap=0.4)
    out = run_bandit(env, Uniform(5), 50, 0)
    inc = np.diff(np.concatenate([[0.0], out["cum_pseudo_regret"]]))
    expected = []
    for t in range(50):
        f = env.expected_losses(t)
        expected.append(f.mean() - f.min())
        s = float(env.theta_star[0] @ env.context(t))           # action 0: bias 0, so its logit is s
        star = int(np.argmin(env.theta_star[:, -1]))
        assert math.isclose(f[star], sigmoid(s - 0.4), rel_tol=1e-12)
        others = [a for a in range(1, 5) if a != star]
        np.testing.assert_allclose(f[others], sigmoid(s + 1.0), rtol=1e-12)
    np.testing.assert_allclose(inc, expected, rtol=1e-12, atol=1e-15)


def test_synthetic_records_the_uniform_scaling_fit(tmp_path):
    cell = {"kind": "hidden_arm", "gap": 0.4, "context_dim": 2, "eval_only": True,
            "eval_methods": ["opo_theory", "uniform"]}
    params = {"problems": [{**cell, "n_models": f, "n_actions": a} for a in (2, 3) for f in (5, 20)],
              "K": 20, "tune_seeds": 1, "eval_seeds": 2, "checkpoints": [10, 20], "opo_eta": [1.0],
              "opo_gamma": [0.1], "squarecb_gamma_scale": [10.0], "falcon_gamma_scale": [10.0]}
    ctx = RunContext(name="synthetic", scale="smoke", seed=1, out_dir=tmp_path)
    _, metrics = synthetic(params, ctx)
    ctl = metrics["scaling_controls"]["uniform"]
    assert ctl["method"] == "uniform" and ctl["replicates"] == 2 and len(ctl["beta_A"]) == 2
    assert metrics["scaling"]["method"] == "opo_theory"
