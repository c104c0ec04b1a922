"""Exact identities of the split model and the hybrid-order pieces (answers derived from the math)."""
import numpy as np
import pytest
import torch

from papers.hosfl import hybrid as H
from papers.hosfl.model import SplitMLP


def tiny(act="identity", dtype="float64", seed=0):
    return SplitMLP(5, 4, 6, 3, client_activation=act, dtype=dtype, seed=seed)


def batch(B=7, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((B, 5)), rng.integers(0, 3, B)


def manual_multiplier(model, x, y):
    """lambda = d mean-CE / dz by the chain rule written out in numpy."""
    W = model.client[0].weight.detach().numpy(); b = model.client[0].bias.detach().numpy()
    z = x @ W.T + b
    if model.client_activation == "relu":
        z = np.maximum(z, 0)
    W1 = model.server[0].weight.detach().numpy(); b1 = model.server[0].bias.detach().numpy()
    W2 = model.server[2].weight.detach().numpy(); b2 = model.server[2].bias.detach().numpy()
    a = z @ W1.T + b1
    h = np.maximum(a, 0)
    logits = h @ W2.T + b2
    p = np.exp(logits - logits.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
    onehot = np.eye(3)[y]
    loss = -np.mean(np.log(p[np.arange(len(y)), y]))
    dlogits = (p - onehot) / len(y)
    lam = ((dlogits @ W2) * (a > 0)) @ W1
    return loss, z, lam


def test_client_vector_convention_and_roundtrip():
    m = tiny()
    v = m.client_vector()
    W, b = m.client[0].weight.detach().numpy(), m.client[0].bias.detach().numpy()
    assert m.client_dim == 4 * 5 + 4 == v.size
    np.testing.assert_array_equal(v, np.concatenate([W.ravel(), b]))
    w = np.arange(24, dtype=float)
    m.set_client_vector(w)
    assert m.client[0].weight[1, 0].item() == 5.0 and m.client[0].bias[0].item() == 20.0
    np.testing.assert_array_equal(m.client_vector(), w)
    assert SplitMLP().client_dim == 2080 and SplitMLP().server_dim == 2762


def test_pca_init_keeps_scores():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 5)) @ rng.standard_normal((5, 5))
    m = SplitMLP(5, 4, 6, 3, dtype="float64")
    m.init_client_pca(x)
    W, b = m.client[0].weight.detach().numpy(), m.client[0].bias.detach().numpy()
    np.testing.assert_allclose(W[:2], -W[2:])
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    np.testing.assert_allclose(W @ x.mean(0) + b, 0.0, atol=1e-12)
    for row in W[:2]:
        assert row[np.argmax(np.abs(row))] > 0
    # relu(s) - relu(-s) = s: the top principal scores are kept exactly
    z = m.client(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(z[:, :2] - z[:, 2:], (x - x.mean(0)) @ W[:2].T, atol=1e-12)


@pytest.mark.parametrize("kw,msg", [({"cut_dim": 0}, "cut_dim"), ({"in_dim": -1}, "in_dim"),
                                    ({"client_activation": "gelu"}, "client_activation"),
                                    ({"dtype": "float16"}, "dtype")])
def test_model_bad_input(kw, msg):
    with pytest.raises(ValueError, match=msg):
        SplitMLP(**kw)


def test_set_client_vector_bad():
    m = tiny()
    with pytest.raises(ValueError, match="shape"):
        m.set_client_vector(np.zeros(23))
    with pytest.raises(ValueError, match="finite"):
        m.set_client_vector(np.full(24, np.nan))


@pytest.mark.parametrize("act", ["identity", "relu"])
def test_cut_layer_multiplier_matches_chain_rule(act):
    m = tiny(act)
    x, y = batch()
    before = [p.detach().clone() for p in m.parameters()]
    loss, z, lam = H.cut_layer_multiplier(m, x, y)
    l_ref, z_ref, lam_ref = manual_multiplier(m, x, y)
    assert loss == pytest.approx(l_ref, rel=1e-12)
    np.testing.assert_allclose(z, z_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lam, lam_ref, rtol=1e-10, atol=1e-14)
    for p, q in zip(m.parameters(), before):
        assert torch.equal(p, q) and p.grad is None


@pytest.mark.parametrize("mu", [1e-3, 1.0, 37.0])
def test_linear_client_scalars_are_exact_directional_derivatives(mu):
    """Identity client z = W x + b: v_p / mu = u_p . g with g = (lam^T x, sum_rows lam) for every mu."""
    m = tiny("identity")
    x, y = batch()
    _, z, lam = H.cut_layer_multiplier(m, x, y)
    g = np.concatenate([(lam.T @ x).ravel(), lam.sum(0)])
    seeds = [3, 11, 2 ** 32 - 1, 0, 12345]
    v = H.client_directional_scalars(m, x, lam, seeds, mu)
    U = np.stack([np.random.default_rng(s).standard_normal(24) for s in seeds])
    np.testing.assert_allclose(v / mu, U @ g, rtol=1e-9, atol=1e-12)
    ghat = H.client_gradient_estimate(v, seeds, mu, 24)
    np.testing.assert_allclose(ghat, (U @ g) @ U / 5, rtol=1e-9, atol=1e-12)


def test_nonlinear_client_gap_is_order_mu():
    m = tiny("tanh")
    x, y = batch()
    _, z, lam = H.cut_layer_multiplier(m, x, y)
    th = torch.from_numpy(m.client_vector()).requires_grad_(True)
    (g,) = torch.autograd.grad(torch.sum(torch.from_numpy(lam) * H.client_apply(m, torch.from_numpy(x), th)), [th])
    u = np.random.default_rng(5).standard_normal(24)
    gaps = [abs(H.client_directional_scalars(m, x, lam, [5], mu)[0] / mu - u @ g.numpy()) for mu in (1e-2, 1e-3)]
    assert 5 < gaps[0] / gaps[1] < 20   # one-sided difference: error ~ mu


def test_scalars_leave_float32_parameters_bitwise_unchanged():
    m = SplitMLP(seed=3)
    rng = np.random.default_rng(0)
    x, y = rng.random((8, 64)), rng.integers(0, 10, 8)
    v0 = m.client_vector().copy()
    _, z, lam = H.cut_layer_multiplier(m, x, y)
    H.client_directional_scalars(m, x, lam, [1, 2, 3], 1e-3, z=z)
    assert np.array_equal(m.client_vector(), v0) and z.dtype == np.float32 and lam.dtype == np.float32


def test_sgd_step_matches_torch_sgd_and_replay_equals_live():
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(6).astype(np.float32)
    grads = [rng.standard_normal(6) for _ in range(3)]
    p = torch.nn.Parameter(torch.from_numpy(theta.copy()))
    opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
    th, buf = theta.copy(), None
    for g in grads:
        p.grad = torch.from_numpy(g.astype(np.float32)); opt.step()
        th, buf = H.sgd_momentum_step(th, g, 0.1, 0.9, buf)
    np.testing.assert_allclose(th, p.detach().numpy(), rtol=1e-6)
    # buf after two steps of plain arithmetic: 0.9 g0 + g1
    _, b2 = H.sgd_momentum_step(*H.sgd_momentum_step(theta, grads[0], 0.1, 0.9)[:1], grads[1], 0.1, 0.9,
                                grads[0].astype(np.float32))
    np.testing.assert_allclose(b2, 0.9 * grads[0] + grads[1], rtol=1e-6)
    hist = [([1, 2], np.array([0.3, -0.1]), 1e-3), ([7, 8], np.array([0.2, 0.05]), 1e-3)]
    live, lb = theta.copy(), None
    for seeds, vbar, mu in hist:
        live, lb = H.client_update(live, seeds, vbar, mu, lr=0.01, momentum=0.9, buf=lb)
    rep, rb = H.replay_client(theta, hist, lr=0.01, momentum=0.9)
    assert np.array_equal(rep, live) and np.array_equal(rb, lb)
    manual = theta - np.float32(0.01) * (
        (H.client_gradient_estimate([0.3, -0.1], [1, 2], 1e-3, 6)).astype(np.float32))
    rep1, _ = H.replay_client(theta, hist[:1], lr=0.01)
    np.testing.assert_allclose(rep1, manual, rtol=1e-6)


@pytest.mark.parametrize("seeds,msg", [([], "P >= 1"), ([1, 1], "distinct"), ([-1], r"\[0, 2\*\*32\)"),
                                       ([2 ** 32], r"\[0, 2\*\*32\)"), ([1.5], "integers")])
def test_bad_seeds(seeds, msg):
    m = tiny()
    x, y = batch()
    _, z, lam = H.cut_layer_multiplier(m, x, y)
    with pytest.raises(ValueError, match=msg):
        H.client_directional_scalars(m, x, lam, seeds, 1e-3)
    with pytest.raises(ValueError, match=msg):
        H.client_gradient_estimate(np.zeros(len(seeds)), seeds, 1e-3, 24)


def test_bad_inputs_hybrid():
    m = tiny()
    x, y = batch()
    _, z, lam = H.cut_layer_multiplier(m, x, y)
    for mu in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="mu"):
            H.client_directional_scalars(m, x, lam, [1], mu)
    with pytest.raises(ValueError, match="len\\(scalars\\)"):
        H.client_gradient_estimate([1.0, 2.0], [1], 1e-3, 24)
    with pytest.raises(ValueError, match="lam"):
        H.client_directional_scalars(m, x, lam[:, :3], [1], 1e-3)
    with pytest.raises(ValueError, match="lam"):
        H.client_directional_scalars(m, x, np.full_like(lam, np.nan), [1], 1e-3)
    with pytest.raises(ValueError, match="lam shape"):
        H.client_directional_scalars(m, x, lam, [1], 1e-3, z=z[:-1])
    with pytest.raises(ValueError, match="in_dim"):
        H.cut_layer_multiplier(m, x[:, :4], y)
    with pytest.raises(ValueError, match="labels"):
        H.cut_layer_multiplier(m, x, np.full(len(y), 3))
    with pytest.raises(ValueError, match="labels"):
        H.cut_layer_multiplier(m, x, np.full(len(y), -1))
    with pytest.raises(ValueError, match="shape"):
        m.set_client_vector(H.client_gradient_estimate([1.0], [1], 1e-3, 25))  # dim != client_dim
    with pytest.raises(ValueError, match="momentum"):
        H.replay_client(np.zeros(3, np.float32), [], lr=0.1, momentum=1.0)
