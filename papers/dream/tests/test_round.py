"""The shared round (training.multi_objective_round) against a direct transcription of the update equations.

Tiny problem: a TrunkMLP (in 5, trunk 4-3, two 10-class heads) in float64, 3 clients of which 2 take part, K = 3
local steps, fixed minibatches and probes. The transcription follows the equations of the round's docstring
(DREAM-R Alg. with momentum and control variates, FMGDA/FSMGDA, FedCMOO), client by client, with gradients from
autograd on the mean cross-entropies and the two-task min-norm weight in closed form:
lam_1 = clip((<g_2, g_2 - g_1> + rho) / (||g_1 - g_2||^2 + 2 rho), 0, 1), the minimiser over lam_1 in [0, 1] of
1/2 ||lam_1 g_1 + (1 - lam_1) g_2||^2 + rho/2 (lam_1^2 + (1 - lam_1)^2).
"""
import numpy as np
import pytest
import torch

from papers.dream.conflict import TrunkMLP
from papers.dream.data import _digits, draw_pairs
from papers.dream.training import ControlVariates, multi_objective_round

K, N, M, B, P = 3, 3, 2, 4, 6
PART = np.array([0, 2])
HP = dict(eta_l=0.2, eta_g=0.9, beta=0.3, alpha=0.7)     # beta != 1 - beta, so the EMA weights are told apart


def _problem(seed=0):
    g = torch.Generator().manual_seed(seed)
    model = TrunkMLP(5, (4, 3), M, seed=seed)
    x = model.theta0.double() + 0.1 * torch.randn(model.dim, generator=g, dtype=torch.float64)
    mb_X = torch.rand(K, PART.size, B, 5, generator=g, dtype=torch.float64)
    mb_Y = torch.randint(0, 10, (K, PART.size, B, M), generator=g)
    pr_X = torch.rand(PART.size, P, 5, generator=g, dtype=torch.float64)
    pr_Y = torch.randint(0, 10, (PART.size, P, M), generator=g)
    n_probe = [P, P - 2]                       # the second client has fewer probe samples (padding)
    c_client = 0.3 * torch.randn(N, M, model.dim, generator=g, dtype=torch.float64)
    return model, x, (mb_X, mb_Y), (pr_X, pr_Y, n_probe), c_client


def _samplers(mb, pr, log):
    mb_X, mb_Y = mb
    pr_X, pr_Y, n_probe = pr
    count = [0]

    def minibatches(clients):
        np.testing.assert_array_equal(clients, PART)
        k = count[0]
        count[0] += 1
        log.append("minibatch")
        return mb_X[k], mb_Y[k]

    def probes(clients):
        np.testing.assert_array_equal(clients, PART)
        log.append("probe")
        sw = torch.zeros(PART.size, P, dtype=torch.float64)
        for s, n in enumerate(n_probe):
            sw[s, :n] = 1.0 / n
        return pr_X, pr_Y, sw

    return minibatches, probes


def _grad(model, theta, X, Y, weights):
    """Autograd gradient of sum_m weights[m] * mean CE_m(theta; X, Y)."""
    th = theta.detach().clone().requires_grad_(True)
    losses = model.task_losses(th, X, Y)
    return torch.autograd.grad(sum(float(weights[m]) * losses[m] for m in range(M)), th)[0]


def _min_norm_two(g1, g2, rho):
    diff = g1 - g2
    den = float(diff @ diff) + 2.0 * rho
    lam1 = 0.5 if den == 0 else min(1.0, max(0.0, (float(g2 @ (g2 - g1)) + rho) / den))
    return np.array([lam1, 1.0 - lam1])


def _run(method, rho=0.0, correction=None, lam0=(0.3, 0.7)):
    model, x, mb, pr, c_client = _problem()
    cv = ControlVariates(N, M, model.dim, dtype=torch.float64)
    cv.client = c_client.clone()
    cv.server = c_client.mean(dim=0)
    log = []
    minibatches, probes = _samplers(mb, pr, log)
    x_new, lam, cats = multi_objective_round(
        method, model, x, PART, np.array(lam0), cv, minibatches=minibatches, probes=probes, batch_size=B,
        local_steps=K, lr_local=HP["eta_l"], lr_global=HP["eta_g"], momentum=HP["beta"], cv_ema=HP["alpha"],
        rho=rho, correction=correction)
    return (model, x, mb, pr, c_client), (x_new, lam, cv, log, cats)


@pytest.mark.parametrize("method", ["dream", "dream_no_cv"])
@pytest.mark.parametrize("rho", [0.0, 0.05])
def test_dream_round_is_the_transcription(method, rho):
    (model, x, (mb_X, mb_Y), (pr_X, pr_Y, n_probe), c_client), (x_new, lam, cv, log, cats) = _run(method, rho)
    lam0 = np.array([0.3, 0.7])
    omega = lam0                                            # A = I
    c = c_client.mean(dim=0)
    ys = []
    for s, i in enumerate(PART):
        corr = sum(omega[m] * (c[m] - c_client[i, m]) for m in range(M)) if method == "dream" else 0.0
        y, v = x.clone(), None
        for k in range(K):
            g = _grad(model, y, mb_X[k, s], mb_Y[k, s], omega) + corr
            v = g if k == 0 else HP["beta"] * v + (1 - HP["beta"]) * g
            y = y - HP["eta_l"] * v
        ys.append(y)
    x_ref = x + HP["eta_g"] * sum(y - x for y in ys) / len(ys)
    c_client_ref, c_ref = c_client.clone(), c.clone()
    for s, i in enumerate(PART):
        for m in range(M):
            p = _grad(model, x, pr_X[s, :n_probe[s]], pr_Y[s, :n_probe[s]], np.eye(M)[m])
            delta = HP["alpha"] * (p - c_client[i, m])
            c_client_ref[i, m] = c_client[i, m] + delta
            c_ref[m] = c_ref[m] + delta / N
    lam_ref = _min_norm_two(c_ref[0].numpy(), c_ref[1].numpy(), rho)
    torch.testing.assert_close(x_new, x_ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(cv.client, c_client_ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(cv.server, c_ref, atol=1e-12, rtol=0)
    np.testing.assert_allclose(lam, lam_ref, atol=1e-9)
    assert log == ["minibatch"] * K + ["probe"]
    D = model.dim
    assert dict(cats) == {"model.down": D, "weights.down": M, "control.down": M * D, "model.up": D,
                          "control.up": M * D}


def test_dream_with_scalarising_correction_steps_on_the_preference():
    """A = w 1^T: omega = A lam = w for any lam on the simplex, and the correction is sum_m w_m (c_m - c_{i,m})."""
    w = np.array([0.8, 0.2])
    (model, x, (mb_X, mb_Y), _, c_client), (x_new, lam, _, _, _) = _run("dream", correction=np.outer(w, np.ones(M)))
    c = c_client.mean(dim=0)
    ys = []
    for s, i in enumerate(PART):
        corr = sum(w[m] * (c[m] - c_client[i, m]) for m in range(M))
        y, v = x.clone(), None
        for k in range(K):
            g = _grad(model, y, mb_X[k, s], mb_Y[k, s], w) + corr
            v = g if k == 0 else HP["beta"] * v + (1 - HP["beta"]) * g
            y = y - HP["eta_l"] * v
        ys.append(y)
    x_ref = x + HP["eta_g"] * sum(y - x for y in ys) / len(ys)
    torch.testing.assert_close(x_new, x_ref, atol=1e-12, rtol=0)
    assert np.all(lam >= 0) and abs(lam.sum() - 1) < 1e-12


@pytest.mark.parametrize("rho", [0.0, 0.05])
def test_fmgda_round_is_the_transcription(rho):
    (model, x, (mb_X, mb_Y), _, c_client), (x_new, lam, cv, log, cats) = _run("fmgda", rho)
    delta = []
    for m in range(M):
        acc = torch.zeros_like(x)
        for s in range(PART.size):
            y = x.clone()
            for k in range(K):
                y = y - HP["eta_l"] * _grad(model, y, mb_X[k, s], mb_Y[k, s], np.eye(M)[m])
            acc = acc + (x - y)
        delta.append(acc / PART.size / (K * HP["eta_l"]))
    lam_ref = _min_norm_two(delta[0].numpy(), delta[1].numpy(), rho)
    d = lam_ref[0] * delta[0] + lam_ref[1] * delta[1]
    x_ref = x - HP["eta_g"] * K * HP["eta_l"] * d
    torch.testing.assert_close(x_new, x_ref, atol=1e-12, rtol=0)
    np.testing.assert_allclose(lam, lam_ref, atol=1e-9)
    torch.testing.assert_close(cv.client, c_client, atol=0, rtol=0)      # FMGDA keeps no control variates
    assert log == ["minibatch"] * K
    assert dict(cats) == {"model.down": model.dim, "model.up": M * model.dim}


@pytest.mark.parametrize("rho", [0.0, 0.05])
def test_fedcmoo_round_is_the_transcription(rho):
    (model, x, (mb_X, mb_Y), (pr_X, pr_Y, n_probe), _), (x_new, lam, _, log, cats) = _run("fedcmoo", rho)
    J = [sum(_grad(model, x, pr_X[s, :n_probe[s]], pr_Y[s, :n_probe[s]], np.eye(M)[m])
             for s in range(PART.size)) / PART.size for m in range(M)]
    lam_ref = _min_norm_two(J[0].numpy(), J[1].numpy(), rho)
    ys = []
    for s in range(PART.size):
        y = x.clone()
        for k in range(K):
            y = y - HP["eta_l"] * _grad(model, y, mb_X[k, s], mb_Y[k, s], lam_ref)
        ys.append(y)
    x_ref = x + HP["eta_g"] * sum(y - x for y in ys) / len(ys)
    torch.testing.assert_close(x_new, x_ref, atol=1e-12, rtol=0)
    np.testing.assert_allclose(lam, lam_ref, atol=1e-9)
    assert log == ["probe"] + ["minibatch"] * K
    D = model.dim
    assert dict(cats) == {"model.down": D, "weights.down": M, "model.up": D, "jacobian.up": M * D}


def test_round_rejects_unknown_method():
    model, x, mb, pr, _ = _problem()
    minibatches, probes = _samplers(mb, pr, [])
    with pytest.raises(ValueError, match="method must be one of"):
        multi_objective_round("fedavg_ls", model, x, PART, np.array([0.5, 0.5]), ControlVariates(N, M, model.dim),
                              minibatches=minibatches, probes=probes, batch_size=B, local_steps=K, lr_local=0.1,
                              lr_global=1.0, momentum=0.0, cv_ema=1.0, rho=0.0)


def test_draw_pairs_pools_and_sizes():
    (a_tr, b_tr), (a_te, b_te) = draw_pairs(50, 20, data_seed=3)
    n = _digits()[0].shape[0]
    perm = np.random.default_rng(3).permutation(n)
    train_pool, test_pool = set(perm[:1200]), set(perm[1200:])
    assert a_tr.shape == b_tr.shape == (50,) and a_te.shape == b_te.shape == (20,)
    assert set(a_tr) | set(b_tr) <= train_pool and set(a_te) | set(b_te) <= test_pool
    with pytest.raises(ValueError, match="n_test_pairs"):
        draw_pairs(5, 0)
