"""Exact identities and small known answers of the DPO / ADPO losses (spec "Method", "Public API")."""
import math

import numpy as np
import pytest
import torch

from papers.adpo.losses import adpo_loss, adpo_pair_losses, dpo_loss, dpo_pair_losses, segment_bounds, unit_margins


def nls(x):  # -log sigma(x), written independently of the code under test
    return math.log1p(math.exp(-x))


def test_spec_examples():
    assert dpo_loss([0.4, 0.0], [0.0, 0.2], beta=0.5) == pytest.approx(0.6443966601, abs=1e-10)
    assert adpo_loss([0.4, 0.0], [0.0, 0.2], beta=0.5) == pytest.approx(1.3425355295, abs=1e-10)
    rw = torch.tensor([0.4, 0.0], dtype=torch.float64, requires_grad=True)
    loss = adpo_loss(rw, torch.tensor([0.0, 0.2], dtype=torch.float64), beta=0.5)
    assert isinstance(loss, torch.Tensor) and loss.dim() == 0
    loss.backward()
    np.testing.assert_allclose(rw.grad.numpy(), [-0.2250830013, -0.2624895937], atol=1e-10)
    assert segment_bounds(7, granularity="adaptive", m=3) == [(0, 3), (3, 5), (5, 7)]


def test_segment_bounds_families():
    assert segment_bounds(5, granularity="static", k=2) == [(0, 2), (2, 4), (4, 5)]
    assert segment_bounds(3, granularity="token") == [(0, 1), (1, 2), (2, 3)]
    assert segment_bounds(2, granularity="adaptive", m=4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    for T in range(0, 12):
        for m in range(1, 6):
            sizes = [e - s for s, e in segment_bounds(T, granularity="adaptive", m=m)]
            assert sizes == [len(c) for c in np.array_split(np.arange(T), m)]


def test_static_units_by_hand():
    # T_w = 3, T_l = 2, k = 2: units {0,1} | {2} on the chosen side, {0,1} | {} on the rejected side
    rw, rl, beta = [0.3, -0.1, 0.5], [0.2, 0.4], 0.7
    z1 = beta * (0.3 - 0.1 - 0.2 - 0.4)
    z2 = beta * 0.5
    assert adpo_loss(rw, rl, beta=beta, granularity="static", k=2) == pytest.approx(nls(z1) + nls(z2), abs=1e-12)
    assert adpo_loss(rw, rl, beta=beta, granularity="static", k=2, reduction="mean") == pytest.approx(
        (nls(z1) + nls(z2)) / 2, abs=1e-12)


def test_adaptive_units_by_hand_and_empty_units():
    rw, rl, beta = [1.0, 2.0, 3.0], [0.5], 0.1
    # m = 2: chosen [1,2] | [3]; rejected [0.5] | []
    expect = nls(0.1 * (3.0 - 0.5)) + nls(0.1 * 3.0)
    assert adpo_loss(rw, rl, beta=beta, granularity="adaptive", m=2) == pytest.approx(expect, abs=1e-12)
    # m = 5 > T: units 3, 4 are empty on both sides and do not exist
    expect = nls(0.1 * 0.5) + nls(0.2) + nls(0.3)
    assert adpo_loss(rw, rl, beta=beta, granularity="adaptive", m=5) == pytest.approx(expect, abs=1e-12)


def test_reduces_to_dpo_and_padding_ignored():
    rng = np.random.default_rng(0)
    rw, rl = rng.normal(size=(4, 6)), rng.normal(size=(4, 5))
    mw = (np.arange(6)[None] < np.array([[6], [3], [1], [4]])).astype(float)
    ml = (np.arange(5)[None] < np.array([[2], [5], [5], [1]])).astype(float)
    d = dpo_pair_losses(rw, rl, beta=0.3, mask_chosen=mw, mask_rejected=ml)
    for kw in ({"granularity": "adaptive", "m": 1}, {"granularity": "static", "k": 6}):
        np.testing.assert_allclose(adpo_pair_losses(rw, rl, beta=0.3, mask_chosen=mw, mask_rejected=ml, **kw), d,
                                   atol=1e-14)
    # garbage in padded positions changes nothing
    rw2 = rw + 100 * (1 - mw)
    np.testing.assert_allclose(adpo_pair_losses(rw2, rl, beta=0.3, mask_chosen=mw, mask_rejected=ml),
                               adpo_pair_losses(rw, rl, beta=0.3, mask_chosen=mw, mask_rejected=ml), atol=1e-14)
    # by hand, pair 2: one chosen token, five rejected tokens
    z = 0.3 * (rw[2, 0] - rl[2].sum())
    assert d[2] == pytest.approx(nls(z), abs=1e-12)


def test_initial_value_and_jensen():
    mw = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], float)
    ml = np.array([[1, 1, 0], [1, 0, 0]], float)
    zero_w, zero_l = np.zeros((2, 4)), np.zeros((2, 3))
    # mu' = max(T_w, T_l) = 3 and 4 at token level
    assert adpo_loss(zero_w, zero_l, beta=0.1, mask_chosen=mw, mask_rejected=ml) == pytest.approx(3.5 * math.log(2))
    assert adpo_loss(zero_w, zero_l, beta=0.1, reduction="mean", mask_chosen=mw, mask_rejected=ml) == pytest.approx(
        math.log(2))
    rng = np.random.default_rng(1)
    for _ in range(50):
        rw, rl = rng.normal(0, 3, (3, 5)), rng.normal(0, 3, (3, 5))
        z, ex = unit_margins(rw, rl, beta=0.5)
        mean_loss = adpo_pair_losses(rw, rl, beta=0.5, reduction="mean")
        bound = np.log1p(np.exp(-z.numpy().mean(1)))
        assert np.all(mean_loss >= bound - 1e-12)


def test_gradient_identity_and_weights():
    rng = np.random.default_rng(2)
    rw = torch.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    rl = torch.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    beta = 0.2
    (adpo_loss(rw, rl, beta=beta) * 3).backward()
    z = beta * (rw - rl).detach()
    np.testing.assert_allclose(rw.grad.numpy(), (-beta * torch.sigmoid(-z)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(rl.grad.numpy(), (beta * torch.sigmoid(-z)).numpy(), rtol=1e-12)
    # weights_rejected = 1 is plain DPO, weights scale the rejected sum
    assert dpo_loss([0.1, 0.2], [0.3, 0.4], beta=1.0, weights_rejected=[1, 1]) == pytest.approx(
        dpo_loss([0.1, 0.2], [0.3, 0.4], beta=1.0))
    assert dpo_loss([0.1, 0.2], [0.3, 0.4], beta=1.0, weights_rejected=[0.5, 0]) == pytest.approx(nls(0.3 - 0.15))
    # conservative: -(1-eps) log s(z) - eps log s(-z)
    assert dpo_loss([0.5], [0.0], beta=1.0, label_smoothing=0.1) == pytest.approx(0.9 * nls(0.5) + 0.1 * nls(-0.5))


@pytest.mark.parametrize("kwargs, match", [
    ({"beta": 0.0}, "beta"), ({"beta": float("nan")}, "beta"), ({"beta": -1.0}, "beta"),
    ({"beta": 0.1, "label_smoothing": 0.5}, "label_smoothing"), ({"beta": 0.1, "label_smoothing": -0.1}, "label_smoothing"),
    ({"beta": 0.1, "weights_rejected": [1.5, 0.0]}, "weights_rejected"),
    ({"beta": 0.1, "mask_chosen": [1, 0, 1]}, "mask_chosen"), ({"beta": 0.1, "mask_chosen": [1, 0.5]}, "mask_chosen"),
    ({"beta": 0.1, "mask_rejected": [0, 0]}, "empty"),
])
def test_bad_inputs_both_losses(kwargs, match):
    for fn in (dpo_loss, adpo_loss):
        with pytest.raises(ValueError, match=match):
            fn([0.1, 0.2], [0.3, 0.4], **kwargs)


def test_bad_inputs_adpo():
    with pytest.raises(ValueError, match="rho_chosen"):
        adpo_loss([0.1, float("nan")], [0.0, 0.0], beta=0.1)
    with pytest.raises(ValueError, match="rho_rejected"):
        dpo_loss([0.1, 0.2], [0.0, float("inf")], beta=0.1)
    with pytest.raises(ValueError, match="batch sizes"):
        adpo_loss(np.zeros((2, 3)), np.zeros((3, 3)), beta=0.1)
    with pytest.raises(ValueError, match="granularity"):
        adpo_loss([0.1], [0.2], beta=0.1, granularity="word")
    with pytest.raises(ValueError, match="reduction"):
        adpo_loss([0.1], [0.2], beta=0.1, reduction="max")
    with pytest.raises(ValueError, match="k must"):
        adpo_loss([0.1], [0.2], beta=0.1, granularity="static", k=0)
    with pytest.raises(ValueError, match="m must"):
        adpo_loss([0.1], [0.2], beta=0.1, granularity="adaptive", m=0)
    with pytest.raises(ValueError, match="k is given"):
        adpo_loss([0.1], [0.2], beta=0.1, granularity="adaptive", m=2, k=2)
    with pytest.raises(ValueError, match="m is given"):
        adpo_loss([0.1], [0.2], beta=0.1, granularity="static", k=2, m=2)
    with pytest.raises(ValueError, match="needs k"):
        segment_bounds(3, granularity="static")
