"""The online logistic oracle (per-action logistic regression, one AdaGrad step per observation)."""
import numpy as np
import pytest

from papers.opo_cmab.envs import make_env
from papers.opo_cmab.experiments import _any_agent, _stream_grid, _stream_label, run_bandit
from papers.opo_cmab.opo import OPOCMAB
from papers.opo_cmab.oracles import OnlineLogisticOracle


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def test_first_step_by_hand():
    # w = 0: f = 1/2, g = (1/2 - 1) x = (-1/2, -1); G = g^2; w = -lr g / |g| = lr sign(-g) = (0.5, 0.5)
    oracle = OnlineLogisticOracle(2, 3, lr=0.5)
    oracle.add([1.0, 2.0], 1, 1.0)
    np.testing.assert_allclose(oracle.w, [[0.0, 0.0], [0.5, 0.5], [0.0, 0.0]], atol=0)
    np.testing.assert_allclose(oracle.predict([1.0, 2.0]), [0.5, _sigmoid(1.5), 0.5], rtol=1e-15)
    # a zero coordinate of x has no gradient and does not move
    oracle.add([0.0, 1.0], 0, 0.0)
    assert oracle.w[0, 0] == 0.0 and oracle.w[0, 1] == -0.5


def test_second_step_uses_the_accumulated_squares():
    oracle = OnlineLogisticOracle(1, 2, lr=1.0)
    oracle.add([1.0], 0, 1.0)                  # g1 = -1/2, w = 1
    g2 = _sigmoid(1.0) - 0.0                   # loss 0 at x = 1
    oracle.add([1.0], 0, 0.0)
    assert oracle.w[0, 0] == pytest.approx(1.0 - g2 / np.sqrt(0.25 + g2 ** 2), rel=1e-14)


def test_snapshots_are_the_prefix_fits():
    rng = np.random.default_rng(0)
    xs, acts, losses = rng.standard_normal((30, 4)), rng.integers(0, 3, 30), rng.random(30)
    full = OnlineLogisticOracle(4, 3, lr=0.3)
    for x, a, l in zip(xs, acts, losses):
        full.add(x, int(a), float(l))
    probe = rng.standard_normal(4)
    snaps = full.snapshot_predictions(probe)
    assert snaps.shape == (31, 3)
    np.testing.assert_array_equal(snaps[0], 0.0)          # f_hat_1 := 0
    for k in (1, 7, 30):
        prefix = OnlineLogisticOracle(4, 3, lr=0.3)
        for x, a, l in zip(xs[:k], acts[:k], losses[:k]):
            prefix.add(x, int(a), float(l))
        np.testing.assert_allclose(snaps[k], prefix.predict(probe), rtol=1e-14)
    np.testing.assert_allclose(snaps[-1], full.predict(probe), rtol=1e-14)


def test_fits_the_mean_loss_of_a_constant_context():
    # cross-entropy on a constant context is minimised where sigmoid(w) equals the mean loss
    rng = np.random.default_rng(1)
    oracle = OnlineLogisticOracle(1, 2, lr=0.5)
    for _ in range(20000):
        oracle.add([1.0], 0, float(rng.random() < 0.2))
    assert oracle.predict([1.0])[0] == pytest.approx(0.2, abs=0.02)


def test_bad_inputs():
    with pytest.raises(ValueError, match="lr must be positive"):
        OnlineLogisticOracle(2, 2, lr=0.0)
    with pytest.raises(ValueError, match="dim"):
        OnlineLogisticOracle(0, 2)
    with pytest.raises(ValueError, match="loss"):
        OnlineLogisticOracle(2, 2).add([1.0, 0.0], 0, 1.5)
    with pytest.raises(NotImplementedError, match="no version space"):
        OnlineLogisticOracle(2, 2).confidence_bounds([1.0, 0.0], 1.0)


def test_streams_build_opo_and_squarecb_on_the_logistic_oracle():
    params = {"opo_eta": [1.0], "opo_gamma": [0.1], "squarecb_gamma_scale": [10.0], "logistic_lr": [0.1, 1.0]}
    specs = _stream_grid(params, "opo_logistic")
    assert [_stream_label(s) for s in specs] == ["opo_eta1_gamma0.1_logistic_lr0.1", "opo_eta1_gamma0.1_logistic_lr1"]
    env = make_env("iris", 0)
    agent = _any_agent(specs[1], env)
    assert isinstance(agent, OPOCMAB) and isinstance(agent.oracle, OnlineLogisticOracle) and agent.oracle.lr == 1.0
    out = run_bandit(env, agent, 50, 0)
    assert out["pv_loss"].shape[0] >= 1 and np.all(np.isfinite(out["pv_loss"]))
    with pytest.raises(ValueError, match="OPO and SquareCB only"):
        _any_agent({"algo": "regcb", "c0": 0.1, "oracle": "logistic", "lr": 0.1}, env)
