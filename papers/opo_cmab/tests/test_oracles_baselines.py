"""Oracles (exact ERM, recursive ridge) and baselines (IGW, FALCON epochs, epsilon-greedy) against known answers."""
import math

import numpy as np
import pytest

from papers.opo_cmab.baselines import FALCON, EpsilonGreedy, SquareCB, Supervised, Uniform, igw_probs
from papers.opo_cmab.oracles import FiniteClassOracle, RidgeOracle, sigmoid


def logit(p):
    return math.log(p / (1 - p))


def test_sigmoid_values():
    np.testing.assert_allclose(sigmoid([0.0, math.log(3.0), -800.0, 800.0]), [0.5, 0.75, 0.0, 1.0], atol=1e-15)


def test_finite_class_erm_and_snapshots():
    # three constant models on action 0: 0.2, 0.5, 0.8; action 1 constant 0.5 for all (context x = (1,))
    thetas = np.array([[[logit(p)], [0.0]] for p in (0.2, 0.5, 0.8)])
    oracle = FiniteClassOracle(thetas, 0)
    x = np.array([1.0])
    np.testing.assert_allclose(oracle.snapshot_predictions(x), [[0.0, 0.0]])
    np.testing.assert_allclose(oracle.predict(x), [0.0, 0.0])
    oracle.add(x, 0, 1.0)   # squared losses 0.64, 0.25, 0.04 -> model 2
    oracle.add(x, 0, 0.0)   # cumulative 0.68, 0.5, 0.68 -> model 1
    np.testing.assert_allclose(oracle.cum_loss, [0.68, 0.5, 0.68])
    np.testing.assert_allclose(oracle.snapshot_predictions(x), [[0, 0], [0.8, 0.5], [0.5, 0.5]], atol=1e-15)
    np.testing.assert_allclose(oracle.predict(x), [0.5, 0.5], atol=1e-15)


def test_finite_class_ties_are_random_and_seeded():
    thetas = np.zeros((2, 2, 1))  # two identical models: every ERM is a tie
    picks = set()
    for seed in range(20):
        o = FiniteClassOracle(thetas, seed)
        o.add(np.array([1.0]), 0, 0.3)
        picks.add(int(o._indices.view()[0]))
    assert picks == {0, 1}
    a, b = FiniteClassOracle(thetas, 5), FiniteClassOracle(thetas, 5)
    for o in (a, b):
        for _ in range(10):
            o.add(np.array([1.0]), 1, 0.3)
    np.testing.assert_array_equal(a._indices.view(), b._indices.view())


def test_ridge_matches_closed_form_at_every_snapshot():
    rng = np.random.default_rng(3)
    dim, A, lam, n = 3, 2, 0.7, 12
    X = rng.standard_normal((n, dim))
    acts = rng.integers(A, size=n)
    losses = rng.random(n)
    oracle = RidgeOracle(dim, A, lam)
    for i in range(n):
        oracle.add(X[i], int(acts[i]), float(losses[i]))
    c = rng.standard_normal(dim)
    snaps = oracle.snapshot_predictions(c)
    assert snaps.shape == (n + 1, A)
    for k in range(n + 1):  # row k = fit on the first k observations
        for a in range(A):
            m = acts[:k] == a
            w = np.linalg.solve(lam * np.eye(dim) + X[:k][m].T @ X[:k][m], X[:k][m].T @ losses[:k][m])
            assert snaps[k, a] == pytest.approx(float(np.clip(w @ c, 0, 1)), abs=1e-12)
    np.testing.assert_allclose(oracle.predict(c), snaps[-1], atol=1e-12)


def test_oracle_bad_inputs():
    with pytest.raises(ValueError, match="thetas"):
        FiniteClassOracle(np.zeros((2, 2)), 0)
    with pytest.raises(ValueError, match="dim"):
        RidgeOracle(0, 2)
    with pytest.raises(ValueError, match="n_actions"):
        RidgeOracle(2, 1)
    with pytest.raises(ValueError, match="lam"):
        RidgeOracle(2, 2, lam=0.0)
    for oracle in (RidgeOracle(3, 2), FiniteClassOracle(np.zeros((2, 2, 3)), 0)):
        with pytest.raises(ValueError, match="context"):
            oracle.add(np.ones(4), 0, 0.5)
        with pytest.raises(ValueError, match="context"):
            oracle.snapshot_predictions(np.ones(2))
        with pytest.raises(ValueError, match="action"):
            oracle.add(np.ones(3), 2, 0.5)
        with pytest.raises(ValueError, match="loss"):
            oracle.add(np.ones(3), 0, -0.5)


def test_igw_known_answer():
    p = igw_probs(np.array([0.1, 0.5, 0.3]), 10.0)
    np.testing.assert_allclose(p, [1 - 1 / 7 - 1 / 5, 1 / 7, 1 / 5], atol=1e-15)
    np.testing.assert_allclose(igw_probs(np.array([0.3, 0.9]), 0.0), [0.5, 0.5])
    q = igw_probs(np.array([0.0, 1e-18, 1.0]), 1e6)  # p(b) stays a probability
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0, abs=1e-15)


def test_igw_bad_inputs():
    with pytest.raises(ValueError, match="f_hat"):
        igw_probs(np.zeros((2, 2)), 1.0)
    with pytest.raises(ValueError, match="gamma"):
        igw_probs(np.zeros(3), -1.0)
    with pytest.raises(ValueError, match="best"):
        igw_probs(np.array([0.1, 0.5]), 1.0, best=1)


def test_falcon_epochs_and_gamma():
    assert [FALCON.epoch(t) for t in range(1, 10)] == [1, 1, 2, 2, 3, 3, 3, 3, 4]
    thetas = np.zeros((100, 3, 2))
    agent = FALCON(3, FiniteClassOracle(thetas, 0), gamma_scale=10.0, delta=0.05)
    tau = 4.0
    assert agent.gamma_m(3) == pytest.approx((10 / 30) * math.sqrt(3 * tau / math.log(100 * tau / 0.05)))


def test_falcon_fits_previous_epoch_only():
    thetas = np.array([[[logit(p)], [0.0]] for p in (0.2, 0.8)])
    agent = FALCON(2, FiniteClassOracle(thetas, 0), gamma_scale=30.0)
    x, rng = np.array([1.0]), np.random.default_rng(0)
    for loss in (1.0, 1.0):           # epoch 1 (rounds 1-2): uniform play, data favour model 1 (0.8)
        _, p = agent.act(x, rng)
        np.testing.assert_allclose(p, 0.5)
        agent.update(x, 0, loss)
    np.testing.assert_allclose(agent.model.predict(x), [0.8, 0.5], atol=1e-15)
    for loss in (0.0, 0.0, 0.0):     # epoch 2 data favour model 0, but epoch 2 still acts on epoch 1's fit
        if agent.t <= 4:
            np.testing.assert_allclose(agent.model.predict(x), [0.8, 0.5], atol=1e-15)
        agent.update(x, 0, loss)
    np.testing.assert_allclose(agent.model.predict(x), [0.2, 0.5], atol=1e-15)  # epoch 3 uses rounds 3-4 only


def test_eps_greedy_greedy_squarecb_uniform_distributions():
    thetas = np.array([[[logit(0.3)], [logit(0.6)], [logit(0.3)]]])
    x, rng = np.array([1.0]), np.random.default_rng(0)
    eg = EpsilonGreedy(3, FiniteClassOracle(thetas, 0), eps=0.3)
    eg.update(x, 1, 1.0)
    np.testing.assert_allclose(eg.act(x, rng)[1], [0.1 + 0.35, 0.1, 0.1 + 0.35])
    g = EpsilonGreedy(3, FiniteClassOracle(thetas, 0), eps=0.0)
    assert g.name == "greedy"
    np.testing.assert_allclose(g.act(x, rng)[1], 1 / 3)  # f_hat_1 = 0: all tied
    s = SquareCB(3, FiniteClassOracle(thetas, 0))
    np.testing.assert_allclose(s.act(x, rng)[1], 1 / 3)
    np.testing.assert_allclose(Uniform(4).act(x, rng)[1], 0.25)
    sup = Supervised(3, 1)
    sup.update_full(x, np.array([1.0, 0.0, 1.0]))
    assert sup.act(x, rng)[0] == 1
    with pytest.raises(ValueError, match="eps"):
        EpsilonGreedy(3, FiniteClassOracle(thetas, 0), eps=1.5)
