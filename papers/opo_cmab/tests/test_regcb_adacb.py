"""RegCB-optimistic and the AdaCB core (elimination + IGW): confidence bounds and probabilities by hand."""
import math

import numpy as np
import pytest

from shared.experiment import RunContext

from papers.opo_cmab.baselines import AdaCB, RegCB, SquareCB, plausible_actions, regcb_radius
from papers.opo_cmab.envs import make_env
from papers.opo_cmab.experiments import config_label, make_agent, run_bandit, streams, synthetic
from papers.opo_cmab.oracles import (FiniteClassOracle, RidgeOracle, ridge_bound_binary_search,
                                     ridge_confidence_bounds)


def logit(p):
    return math.log(p / (1 - p))


# ------------------------------------------------------------------------------- ridge bounds, 1-d by hand
def _one_d_ridge():
    # lam = 1, observations x = 1 with losses 1 and 0 on action 0: A = 1 + 2 = 3, b = 1, w = 1/3, s = 1/3.
    # L(v) = (v - 1)^2 + v^2 + v^2 = 3 v^2 - 2 v + 1, so L(v) - L(1/3) = 3 (v - 1/3)^2.
    o = RidgeOracle(1, 2, lam=1.0)
    o.add(np.array([1.0]), 0, 1.0)
    o.add(np.array([1.0]), 0, 0.0)
    return o


def test_ridge_bounds_one_dimension_by_hand():
    o = _one_d_ridge()
    np.testing.assert_allclose(o.w[0], [1 / 3])
    np.testing.assert_allclose(o.ainv[0], [[1 / 3]])
    lcb, ucb = o.confidence_bounds(np.array([1.0]), 0.12)
    # 3 (v - 1/3)^2 <= 0.12  <=>  |v - 1/3| <= 0.2
    np.testing.assert_allclose([lcb[0], ucb[0]], [1 / 3 - 0.2, 1 / 3 + 0.2], atol=1e-15)
    L = lambda v: (v - 1) ** 2 + 2 * v ** 2  # noqa: E731
    assert L(lcb[0]) - L(1 / 3) == pytest.approx(0.12, abs=1e-12)
    # action 1 has no data: w = 0, s = |x|^2 / lam = 1, bounds -/+ sqrt(0.12) clipped to [0, 1]
    np.testing.assert_allclose([lcb[1], ucb[1]], [0.0, math.sqrt(0.12)], atol=1e-15)


def test_binary_search_reaches_the_closed_form():
    # the paper's method (importance-weighted extra example, refit by Sherman-Morrison) on the same 1-d problem
    lo = ridge_bound_binary_search(1 / 3, 1 / 3, 0.12, target=-1.0)
    hi = ridge_bound_binary_search(1 / 3, 1 / 3, 0.12, target=2.0)
    assert lo == pytest.approx(1 / 3 - 0.2, abs=1e-10)
    assert hi == pytest.approx(1 / 3 + 0.2, abs=1e-10)
    # a radius so large that the limit omega -> infinity stays inside: the bound is the target itself
    assert ridge_bound_binary_search(0.5, 1.0, 10.0, target=-1.0) == -1.0
    # zero sensitivity: the prediction cannot move
    assert ridge_bound_binary_search(0.4, 0.0, 1.0, target=-1.0) == 0.4


def test_binary_search_matches_closed_form_on_random_ridge():
    rng = np.random.default_rng(0)
    o = RidgeOracle(4, 3, lam=0.5)
    for _ in range(30):
        o.add(rng.standard_normal(4), int(rng.integers(3)), float(rng.random()))
    x = rng.standard_normal(4)
    lcb, ucb = ridge_confidence_bounds(o.w, o.ainv, x, 0.3)
    for a in range(3):
        p0, s = float(o.w[a] @ x), float(x @ o.ainv[a] @ x)
        assert np.clip(ridge_bound_binary_search(p0, s, 0.3, -1.0), 0, 1) == pytest.approx(lcb[a], abs=1e-9)
        assert np.clip(ridge_bound_binary_search(p0, s, 0.3, 2.0), 0, 1) == pytest.approx(ucb[a], abs=1e-9)


def test_ridge_bounds_bad_inputs():
    with pytest.raises(ValueError, match="radius"):
        ridge_confidence_bounds(np.zeros((2, 3)), np.zeros((2, 3, 3)), np.zeros(3), -1.0)
    with pytest.raises(ValueError, match="ainv"):
        ridge_confidence_bounds(np.zeros((2, 3)), np.zeros((2, 2, 2)), np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="radius"):
        ridge_bound_binary_search(0.5, 1.0, float("nan"), -1.0)
    with pytest.raises(ValueError, match=r"\bs\b"):
        ridge_bound_binary_search(0.5, -1.0, 1.0, -1.0)
    with pytest.raises(ValueError, match="finite"):
        ridge_bound_binary_search(float("inf"), 1.0, 1.0, -1.0)


# ------------------------------------------------------------------------------- finite-class version space
def test_finite_class_version_space_by_hand():
    thetas = np.array([[[logit(p)], [0.0]] for p in (0.2, 0.5, 0.8)])
    o = FiniteClassOracle(thetas, 0)
    x = np.array([1.0])
    lcb, ucb = o.confidence_bounds(x, 0.0)  # no data: every L_j = 0, the whole class
    np.testing.assert_allclose([lcb[0], ucb[0]], [0.2, 0.8])
    o.add(x, 0, 1.0)
    o.add(x, 0, 0.0)   # cumulative squared losses 0.68, 0.5, 0.68
    lcb, ucb = o.confidence_bounds(x, 0.1)
    np.testing.assert_allclose([lcb[0], ucb[0]], [0.5, 0.5])
    lcb, ucb = o.confidence_bounds(x, 0.2)
    np.testing.assert_allclose([lcb[0], ucb[0]], [0.2, 0.8])
    np.testing.assert_allclose([lcb[1], ucb[1]], [0.5, 0.5])
    with pytest.raises(ValueError, match="radius"):
        o.confidence_bounds(x, -0.1)


# ----------------------------------------------------------------------------------- radius, plausible set
def test_radius_and_plausible_set():
    assert regcb_radius(0.5, 4, 10) == pytest.approx(0.5 * math.log(40))
    assert regcb_radius(0.5, 4, 0) == pytest.approx(0.5 * math.log(4))
    with pytest.raises(ValueError, match="c0"):
        regcb_radius(-1.0, 4, 3)
    with pytest.raises(ValueError, match="n_obs"):
        regcb_radius(1.0, 4, -1)
    with pytest.raises(ValueError, match="n_actions"):
        regcb_radius(1.0, 1, 3)
    # min ucb = 0.4: actions 0 (lcb 0.1) and 1 (lcb 0.3) survive, action 2 (lcb 0.6) is eliminated
    np.testing.assert_array_equal(plausible_actions([0.1, 0.3, 0.6], [0.4, 0.5, 0.9]), [0, 1])
    with pytest.raises(ValueError, match="same length"):
        plausible_actions([0.1, 0.2], [0.3])
    with pytest.raises(ValueError, match="exceed"):
        plausible_actions([0.5, 0.2], [0.3, 0.4])
    with pytest.raises(ValueError, match="NaN"):
        plausible_actions([np.nan, 0.2], [0.3, 0.4])


class _StubOracle:
    """Fixed bounds and predictions (the agents' only contact with the oracle)."""

    dim = 1
    n_actions = 3
    log_class_size = None

    def __init__(self, lcb, ucb, f):
        self.lcb, self.ucb, self.f = (np.asarray(v, dtype=float) for v in (lcb, ucb, f))
        self.radii = []

    def confidence_bounds(self, context, radius):
        self.radii.append(radius)
        return self.lcb.copy(), self.ucb.copy()

    def predict(self, context):
        return self.f.copy()

    def add(self, context, action, loss):
        pass


def test_regcb_plays_the_smallest_lower_bound_ties_uniform():
    rng = np.random.default_rng(0)
    agent = RegCB(3, _StubOracle([0.1, 0.3, 0.1], [0.5, 0.5, 0.5], [0.3, 0.3, 0.3]), c0=0.5)
    a, p = agent.act(np.array([1.0]), rng)
    np.testing.assert_allclose(p, [0.5, 0.0, 0.5])
    assert a in (0, 2)
    assert agent.oracle.radii == [pytest.approx(0.5 * math.log(3))]
    agent = RegCB(3, _StubOracle([0.4, 0.05, 0.1], [0.5, 0.5, 0.5], [0.0, 0.3, 0.3]), c0=0.5)
    assert agent.act(np.array([1.0]), rng) == (1, pytest.approx([0.0, 1.0, 0.0]))  # not the greedy action 0


def test_adacb_is_igw_over_the_plausible_actions():
    # P = {0, 1} (as above); b = 0; gamma_1 = 10 * 1^0.5: p(1) = 1 / (|P| + 10 (0.4 - 0.2)) = 1/4, p(0) = 3/4
    agent = AdaCB(3, _StubOracle([0.1, 0.3, 0.6], [0.4, 0.5, 0.9], [0.2, 0.4, 0.7]), gamma_scale=10.0, c0=0.1)
    _, p = agent.act(np.array([1.0]), np.random.default_rng(0))
    np.testing.assert_allclose(p, [0.75, 0.25, 0.0], atol=1e-15)
    agent.update(np.array([1.0]), 0, 0.5)  # round 2: gamma_2 = 10 sqrt(2)
    _, p = agent.act(np.array([1.0]), np.random.default_rng(0))
    q1 = 1.0 / (2 + 10 * math.sqrt(2) * 0.2)
    np.testing.assert_allclose(p, [1 - q1, q1, 0.0], atol=1e-15)


def test_adacb_with_every_action_plausible_is_squarecb():
    env = make_env("iris", 0)
    a = run_bandit(env, AdaCB(3, RidgeOracle(env.context_dim, 3), gamma_scale=10.0, c0=1e9), 60, 4)
    b = run_bandit(env, SquareCB(3, RidgeOracle(env.context_dim, 3), gamma_scale=10.0), 60, 4)
    np.testing.assert_array_equal(a["actions"], b["actions"])
    np.testing.assert_allclose(a["chosen_prob"], b["chosen_prob"], atol=1e-15)


def test_agents_bad_inputs():
    with pytest.raises(ValueError, match="c0"):
        RegCB(3, RidgeOracle(2, 3), c0=-1.0)
    with pytest.raises(ValueError, match="gamma_scale"):
        AdaCB(3, RidgeOracle(2, 3), gamma_scale=float("nan"))

    class _NoBounds:
        n_actions, dim = 3, 2

    with pytest.raises(ValueError, match="confidence_bounds"):
        RegCB(3, _NoBounds())
    with pytest.raises(ValueError, match="confidence_bounds"):
        AdaCB(3, _NoBounds())
    with pytest.raises(ValueError, match="actions"):
        RegCB(2, RidgeOracle(2, 3))


# ---------------------------------------------------------------------------------- in the experiments
def test_regcb_learns_where_greedy_locks_in():
    # the hidden-arm class with a clear gap: optimism finds the hidden action; RegCB's regret stays small
    env_kw = {"n_models": 20, "n_actions": 3, "context_dim": 2, "kind": "hidden_arm", "gap": 0.4}
    env = make_env("finite_class", 3, **env_kw)
    out = run_bandit(env, make_agent({"algo": "regcb", "c0": 0.1}, env, "finite_class", 0), 400, 0)
    late = (out["cum_pseudo_regret"][-1] - out["cum_pseudo_regret"][199]) / 200
    assert late < 0.02
    assert config_label({"algo": "regcb", "c0": 0.1}) == "regcb_c00.1"
    assert config_label({"algo": "adacb", "gamma_scale": 10.0, "c0": 0.1}) == "adacb_gs10_c00.1"


def test_experiments_tune_and_evaluate_regcb_and_adacb(tmp_path):
    params = {"problems": [{"n_models": 5, "n_actions": 3, "context_dim": 2, "kind": "hidden_arm", "gap": 0.4}],
              "K": 40, "tune_seeds": 1, "eval_seeds": 2, "checkpoints": [10, 20, 40], "opo_eta": [1.0],
              "opo_gamma": [0.1], "squarecb_gamma_scale": [10.0], "falcon_gamma_scale": [10.0],
              "regcb_c0": [0.1, 1.0], "adacb_gamma_scale": [10.0], "adacb_c0": [0.1]}
    _, m = synthetic(params, RunContext(name="synthetic", scale="smoke", seed=1, out_dir=tmp_path))
    block = m["hidden_F5_A3"]
    assert block["tuning"]["tuned"]["regcb"] in ("regcb_c00.1", "regcb_c01")
    assert {"regcb_tuned", "adacb_tuned"} <= set(block["final"])
    ps = block["per_seed"]
    np.testing.assert_allclose(ps["opo_minus"]["regcb_tuned"],
                               np.array(ps["final"]["opo_tuned"]) - np.array(ps["final"]["regcb_tuned"]))
    sparams = {"streams": ["iris"], "shuffles": 2, "tune_shuffles": 1, "lam": 1.0, "opo_eta": [10.0],
               "opo_gamma": [0.1], "squarecb_gamma_scale": [10.0], "regcb_c0": [0.01], "adacb_gamma_scale": [10.0],
               "adacb_c0": [0.01], "eps": 0.05}
    _, sm = streams(sparams, RunContext(name="streams", scale="smoke", seed=1, out_dir=tmp_path / "s"))
    assert {"regcb", "adacb"} <= set(sm["streams"]["iris"]["pv"])
    assert len(sm["diff_regcb"]["by_shuffle"]) == 2 and len(sm["control"]["uniform"]["diff_adacb"]["by_shuffle"]) == 2
