"""OPO-CMAB core: closed forms, a hand-computed replay, the numba/numpy agreement and bad inputs."""
import math

import numpy as np
import pytest

from papers.opo_cmab.opo import OPOCMAB, check_distribution, opo_policies, opo_policies_numpy
from papers.opo_cmab.oracles import FiniteClassOracle, sigmoid


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


@pytest.mark.parametrize("eta", [0.0, 0.3, 5.0])
def test_no_bonus_constant_oracle_is_softmax(eta):
    f = np.array([0.1, 0.7, 0.4])
    T = 12
    pis = opo_policies(np.tile(f, (T, 1)), eta, 0.0)
    assert pis.shape == (T + 1, 3)
    for k in range(1, T + 2):
        np.testing.assert_allclose(pis[k - 1], softmax(-eta * (k - 1) * f), rtol=0, atol=1e-13)


def test_zero_oracle_stays_uniform_with_bonus():
    pis = opo_policies(np.zeros((20, 4)), 3.0, 1.0)
    np.testing.assert_allclose(pis, 0.25, atol=1e-15)


def test_empty_history_gives_uniform():
    pis = opo_policies(np.zeros((0, 5)), 1.0, 1.0)
    np.testing.assert_allclose(pis, [[0.2] * 5])


def test_two_steps_by_hand():
    """A = 2, gamma = 2, eta = 1: beta_1 = sqrt 2, S_1 = 1; beta_2 = 2, S_2 = 1 + 1/2 (coverage added after l~)."""
    F = np.array([[0.9, 0.2], [0.9, 0.2]])
    b1 = min(1.0, math.sqrt(2.0) / 2.0)
    l1 = np.array([max(0.0, 0.9 - b1), max(0.0, 0.2 - b1)])
    pi2 = softmax(-l1)
    S2 = 1.0 + 0.5
    b2 = min(1.0, 1.0 / S2)
    l2 = np.array([max(0.0, 0.9 - b2), max(0.0, 0.2 - b2)])
    pi3 = softmax(-(l1 + l2))
    pis = opo_policies(F, 1.0, 2.0)
    np.testing.assert_allclose(pis, [[0.5, 0.5], pi2, pi3], atol=1e-15)
    assert pis[2, 0] != pytest.approx(softmax(-(l1 + np.array([0.9 - 0.5, 0.0])))[0])  # the S_2 = 2 shift differs


@pytest.mark.parametrize("eta,gamma", [(0.1, 0.01), (1.0, 0.1), (10.0, 1.0), (100.0, 1.0), (100.0, 0.01)])
def test_compiled_matches_numpy_reference(eta, gamma):
    F = np.random.default_rng(7).random((200, 4))
    a, b = opo_policies(F, eta, gamma), opo_policies_numpy(F, eta, gamma)
    assert np.max(np.abs(a - b)) <= 1e-12
    np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-12)


def test_bonus_lowers_loss_of_rarely_played_action():
    """With a large bonus the coverage term keeps an action that looks bad at a higher probability."""
    F = np.tile([0.2, 0.8], (30, 1))
    assert opo_policies(F, 5.0, 5.0)[-1, 1] > opo_policies(F, 5.0, 0.0)[-1, 1]


@pytest.mark.parametrize("F,match", [(np.zeros(3), "2-D"), (np.zeros((3, 0)), "at least one action"),
                                     (np.array([[0.1, np.nan]]), "NaN"), (np.array([[0.1, np.inf]]), "NaN"),
                                     (np.array([[0.1, 1.5]]), r"\[0, 1\]"), (np.array([[-0.1, 0.5]]), r"\[0, 1\]")])
def test_bad_F_hat(F, match):
    with pytest.raises(ValueError, match="F_hat.*" + match if match != "NaN" else "F_hat contains NaN"):
        opo_policies(F, 1.0, 1.0)


def test_F_hat_rounding_tolerated():
    pi = opo_policies(np.array([[1.0 + 1e-13, -1e-13]]), 1.0, 1.0)
    assert pi.shape == (2, 2) and np.all(pi >= 0) and np.allclose(pi.sum(axis=1), 1.0)
    np.testing.assert_allclose(pi[0], [0.5, 0.5])   # pi_1 is uniform before any feedback


@pytest.mark.parametrize("eta,gamma,name", [(-1.0, 1.0, "eta"), (1.0, -0.1, "gamma"), (np.nan, 1.0, "eta"),
                                            (1.0, np.nan, "gamma")])
def test_bad_eta_gamma(eta, gamma, name):
    with pytest.raises(ValueError, match=name):
        opo_policies(np.zeros((2, 2)), eta, gamma)
    oracle = FiniteClassOracle(np.zeros((1, 2, 1)), 0)
    with pytest.raises(ValueError, match=name):
        OPOCMAB(2, eta, gamma, oracle)


def _one_model_oracle():
    thetas = np.array([[[0.0, 1.0], [0.0, -1.0], [0.0, 0.5]]])  # f(x, a) = sigmoid(theta_a . x), x = (z, 1)
    return FiniteClassOracle(thetas, 0), thetas


def test_agent_uses_snapshots_up_to_t_minus_1():
    """Round 1: uniform. Round 3 (gamma = 0): f_hat_1 = 0 contributes nothing and f_hat_2 = f once, so
    pi_3 = softmax(-eta f(c)) although f_hat_3 = f is already available."""
    oracle, thetas = _one_model_oracle()
    agent = OPOCMAB(3, 2.0, 0.0, oracle)
    rng = np.random.default_rng(0)
    c = np.array([0.3, 1.0])
    a, p = agent.act(c, rng)
    np.testing.assert_allclose(p, 1 / 3)
    agent.update(c, a, 1.0)
    _, p = agent.act(c, rng)
    np.testing.assert_allclose(p, 1 / 3)  # pi_2 replays f_hat_1 = 0 only
    agent.update(c, 0, 0.0)
    _, p = agent.act(c, rng)
    np.testing.assert_allclose(p, softmax(-2.0 * sigmoid(thetas[0] @ c)), atol=1e-14)


def test_agent_bad_inputs():
    oracle, _ = _one_model_oracle()
    with pytest.raises(ValueError, match="n_actions"):
        OPOCMAB(1, 1.0, 1.0, oracle)
    agent = OPOCMAB(3, 1.0, 1.0, oracle)
    c = np.array([0.3, 1.0])
    with pytest.raises(ValueError, match="action"):
        agent.update(c, 3, 0.5)
    with pytest.raises(ValueError, match="action"):
        agent.update(c, -1, 0.5)
    with pytest.raises(ValueError, match="loss"):
        agent.update(c, 0, 1.5)
    with pytest.raises(ValueError, match="loss"):
        agent.update(c, 0, np.nan)
    with pytest.raises(ValueError, match="context"):
        agent.act(np.ones(3), np.random.default_rng(0))


def test_probability_check_names_round_and_algorithm():
    with pytest.raises(RuntimeError, match=r"'opo', round 7"):
        check_distribution(np.array([0.5, 0.6]), 7, "opo")
    check_distribution(np.array([0.5, 0.5 + 1e-12]), 7, "opo")
