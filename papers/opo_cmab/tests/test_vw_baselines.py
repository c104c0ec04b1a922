"""Vowpal Wabbit's explorers behind the agents' interface: the ADF text of a known context, the command lines,
the score normalisation, bad inputs, the uniform first round, and learning a deterministic best action."""
import numpy as np
import pytest

from papers.opo_cmab.vw_baselines import (VWAgent, adf_lines, make_vw_agent, normalise_scores, vw_arguments,
                                          vw_label)

vowpalwabbit = pytest.importorskip("vowpalwabbit")


def test_adf_lines_of_a_known_context():
    x = np.array([0.5, 0.0, -1.25, 1.0])
    assert adf_lines(x, 3) == ["shared |s x0:0.5 x2:-1.25 x3:1.0", "|a a0", "|a a1", "|a a2"]
    labelled = adf_lines(x, 3, (1, 1.0, 0.25))
    assert labelled == ["shared |s x0:0.5 x2:-1.25 x3:1.0", "|a a0", "0:1.0:0.25 |a a1", "|a a2"]
    assert vw_label(0, 1) == "0:0.0:1.0"


def test_adf_lines_and_labels_reject_bad_input():
    with pytest.raises(ValueError, match="context"):
        adf_lines(np.array([1.0, np.nan]), 2)
    with pytest.raises(ValueError, match="context"):
        adf_lines(np.ones((2, 2)), 2)
    with pytest.raises(ValueError, match="action"):
        adf_lines(np.ones(2), 2, (2, 0.0, 0.5))
    with pytest.raises(ValueError, match="loss"):
        adf_lines(np.ones(2), 2, (0, 1.5, 0.5))
    with pytest.raises(ValueError, match="probability"):
        vw_label(0.0, 0.0)


def test_vw_arguments():
    scb = vw_arguments("vw_squarecb", gamma_scale=100.0, seed=3)
    assert scb.startswith("--cb_explore_adf --squarecb --gamma_scale 100.0 --gamma_exponent 0.5")
    assert "-q sa" in scb and "--random_seed 3" in scb
    reg = vw_arguments("vw_regcb", mellowness=0.01)
    assert "--regcb --regcbopt --mellowness 0.01 --cb_min_cost 0 --cb_max_cost 1" in reg
    with pytest.raises(ValueError, match="algo"):
        vw_arguments("squarecb")
    with pytest.raises(ValueError, match="gamma_scale"):
        vw_arguments("vw_squarecb", gamma_scale=-1.0)
    with pytest.raises(ValueError, match="mellowness"):
        vw_arguments("vw_regcb", mellowness=0.0)
    with pytest.raises(ValueError, match="seed"):
        vw_arguments("vw_regcb", seed=-1)


def test_normalise_scores():
    np.testing.assert_allclose(normalise_scores([1.0, 1.0, 1.0], 3, "vw_regcb", 1), [1 / 3] * 3)  # a 3-way tie
    np.testing.assert_allclose(normalise_scores([0.0, 1.0], 2, "vw_regcb", 1), [0.0, 1.0])
    with pytest.raises(RuntimeError, match="sum"):
        normalise_scores([0.5, 0.6], 2, "vw_squarecb", 4)
    with pytest.raises(RuntimeError, match="round 4"):
        normalise_scores([-0.1, 1.1], 2, "vw_regcb", 4)
    with pytest.raises(RuntimeError, match="scores"):
        normalise_scores([1.0], 2, "vw_regcb", 4)


@pytest.mark.parametrize("algo", ["vw_squarecb", "vw_regcb"])
def test_first_round_is_uniform(algo):
    # before any learning every prediction is 0: no gap, so IGW gives 1/A, and every action ties for RegCB's bound
    agent = VWAgent(4, 3, algo)
    _, p = agent.act(np.array([0.3, -1.0, 1.0]), np.random.default_rng(0))
    np.testing.assert_allclose(p, 0.25, atol=1e-7)
    agent.close()


def test_agent_bad_inputs():
    agent = VWAgent(2, 3, "vw_squarecb")
    with pytest.raises(RuntimeError, match="follow act"):
        agent.update(np.ones(3), 0, 0.0)
    with pytest.raises(ValueError, match="context"):
        agent.act(np.ones(4), np.random.default_rng(0))
    agent.act(np.ones(3), np.random.default_rng(0))
    with pytest.raises(ValueError, match="loss"):
        agent.update(np.ones(3), 0, -0.5)
    agent.close()
    agent.close()   # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        agent.act(np.ones(3), np.random.default_rng(0))
    with pytest.raises(ValueError, match="context_dim"):
        VWAgent(2, 0, "vw_squarecb")
    with pytest.raises(ValueError, match="algo"):
        make_vw_agent({"algo": "squarecb", "gamma_scale": 10.0}, None)


def _play_deterministic(algo, seed, n=600, **options):
    """Two actions, loss 0 for action 0 and 1 for action 1 on every context: the chosen actions."""
    agent = VWAgent(2, 3, algo, **options)
    rng, ctx_rng = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    actions = []
    for _ in range(n):
        x = np.append(ctx_rng.standard_normal(2), 1.0)
        a, p = agent.act(x, rng)
        assert abs(p.sum() - 1.0) < 1e-12
        agent.update(x, a, float(a == 1))
        actions.append(a)
    agent.close()
    return np.array(actions)


@pytest.mark.parametrize("algo,options", [("vw_squarecb", {"gamma_scale": 10.0}), ("vw_regcb", {"mellowness": 0.1})])
def test_learns_a_deterministic_best_action(algo, options):
    actions = _play_deterministic(algo, 0, **options)
    # with a gap of 1, SquareCB's IGW plays the worse action with probability 1 / (2 + gamma_t), gamma_t = 10 sqrt(t)
    assert np.mean(actions[-200:] == 0) > 0.95
    np.testing.assert_array_equal(actions, _play_deterministic(algo, 0, **options))   # deterministic given seeds


def test_streams_tune_and_compare_vw(tmp_path):
    from shared.experiment import RunContext

    from papers.opo_cmab.experiments import streams

    params = {"streams": ["iris", "wine"], "shuffles": 2, "tune_shuffles": 1, "lam": 1.0, "opo_eta": [10.0],
              "opo_gamma": [0.1], "squarecb_gamma_scale": [10.0], "vw_squarecb_gamma_scale": [10.0, 100.0],
              "vw_regcb_mellowness": [0.01], "eps": 0.05}
    _, m = streams(params, RunContext(name="streams", scale="smoke", seed=1, out_dir=tmp_path))
    iris = m["streams"]["iris"]
    assert iris["tuned"]["vw_squarecb"] in ("vw_squarecb_gs10", "vw_squarecb_gs100")
    assert iris["tuned"]["vw_regcb"] == "vw_regcb_mellow0.01"
    # the claim's sample: per shuffle, the mean over streams of PV_OPO - PV_VW (paired on the same row order)
    for fam in ("vw_squarecb", "vw_regcb"):
        expected = [np.mean([m["streams"][s]["per_shuffle"]["opo"][sh] - m["streams"][s]["per_shuffle"][fam][sh]
                             for s in ("iris", "wine")]) for sh in range(2)]
        np.testing.assert_allclose(m[f"diff_{fam}"]["by_shuffle"], expected, rtol=0, atol=1e-15)
        assert len(m["control"]["uniform"][f"diff_{fam}"]["by_shuffle"]) == 2
