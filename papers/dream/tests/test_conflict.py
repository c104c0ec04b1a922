"""ConflictDigits: data recipe, the batched backward against autograd, FedMGDA+ from its definition (eps = 0 is
FedAvg; a wide ball is MGDA; the capped-simplex projection), Delta-m% and hypervolume on known answers."""
import numpy as np
import pytest
import torch

from papers.dream.aggregation import dream_weights, project_simplex
from papers.dream.conflict import (TrunkMLP, delta_m_percent, fedmgda_plus_weights, make_conflict_digits,
                                   point_hypervolume, project_capped_simplex, run_conflict, trunk_cosine)
from papers.dream.data import make_multidigits

TINY = dict(rounds=3, n_clients=3, local_steps=2, batch_size=8, n_train_pairs=200, eval_every=1, hidden=(16, 4),
            probe_batch=16, conflict_samples=50, seed=0)


def test_shift_four_is_multidigits():
    X, Y, Xt, Yt = make_conflict_digits(300, 50, shift=4)
    Xm, Ym, Xmt, Ymt = make_multidigits(300, 50)
    np.testing.assert_array_equal(X, Xm)
    np.testing.assert_array_equal(Y, Ym[:, :2])
    np.testing.assert_array_equal(Xt, Xmt)


def test_shift_two_overlap():
    X, _, _, _ = make_conflict_digits(20, 5, shift=2)
    assert X.shape == (20, 80) and 0.0 <= X.min() and X.max() <= 1.0
    with pytest.raises(ValueError, match="shift"):
        make_conflict_digits(20, 5, shift=0)


def test_trunk_mlp_backward_matches_autograd():
    model = TrunkMLP(80, (12, 5), 2, seed=3)
    g = torch.Generator().manual_seed(0)
    S, B = 2, 6
    theta = model.theta0.unsqueeze(0).repeat(S, 1) + 0.05 * torch.randn(S, model.dim, generator=g)
    X = torch.rand(S, B, 80, generator=g)
    Y = torch.randint(0, 10, (S, B, 2), generator=g)
    omega = torch.tensor([[0.3, 0.7], [1.0, 0.0]])
    sw = torch.full((S, B), 1.0 / B)
    grads = model.grads(theta, X, Y, omega, sw)
    for s in range(S):
        th = theta[s].clone().requires_grad_(True)
        losses = model.task_losses(th, X[s], Y[s])
        ref = torch.autograd.grad(omega[s, 0] * losses[0] + omega[s, 1] * losses[1], th)[0]
        torch.testing.assert_close(grads[s], ref, atol=2e-6, rtol=1e-4)
    assert model.trunk_dim == 80 * 12 + 12 + 12 * 5 + 5


def test_capped_simplex_projection():
    rng = np.random.default_rng(1)
    for _ in range(20):
        v = rng.normal(size=7)
        np.testing.assert_allclose(project_capped_simplex(v, 0.0, 1.0), project_simplex(v), atol=1e-12)
        lo, hi = 0.05, 0.2
        p = project_capped_simplex(v, lo, hi)
        assert abs(p.sum() - 1) < 1e-12 and p.min() >= lo - 1e-15 and p.max() <= hi + 1e-15
        # optimality (variational inequality): (v - p) . (q - p) <= 0 for feasible q
        for _ in range(50):
            q = project_capped_simplex(rng.normal(size=7) * 3, lo, hi)
            assert (v - p) @ (q - p) <= 1e-10
    np.testing.assert_allclose(project_capped_simplex(np.array([5.0, 0.0, 0.0]), 1 / 3, 1 / 3), np.full(3, 1 / 3))
    with pytest.raises(ValueError, match="empty"):
        project_capped_simplex(np.zeros(3), 0.5, 1.0)


def test_fedmgda_plus_weights_known_answers():
    G = np.array([[3.0, 0.0], [0.0, 1.0]])
    lam, d, s = fedmgda_plus_weights(G, eps=1.0, normalize=False)       # the whole simplex: MGDA's min-norm point
    np.testing.assert_allclose(lam, [0.1, 0.9], atol=1e-9)
    np.testing.assert_allclose(d, [0.3, 0.9], atol=1e-9)
    assert s == 1.0
    lam, _, _ = fedmgda_plus_weights(G, eps=0.2, normalize=False)        # 1-D convex: clipped to [0.3, 0.7]
    np.testing.assert_allclose(lam, [0.3, 0.7], atol=1e-9)
    lam, d, s = fedmgda_plus_weights(G, eps=1.0, normalize=True)         # unit vectors e1, e2: equal weights
    np.testing.assert_allclose(lam, [0.5, 0.5], atol=1e-9)
    assert s == pytest.approx(2.0)
    lam, d, _ = fedmgda_plus_weights(np.random.default_rng(0).normal(size=(6, 4)), eps=0.0)
    np.testing.assert_allclose(lam, np.full(6, 1 / 6))


def test_fedmgda_plus_wide_ball_is_mgda_for_two():
    rng = np.random.default_rng(2)
    for _ in range(10):
        G = rng.normal(size=(2, 9))
        lam, d, _ = fedmgda_plus_weights(G, eps=1.0, normalize=False)
        ref_lam, ref_d = dream_weights(G)
        np.testing.assert_allclose(lam, ref_lam, atol=1e-7)
        np.testing.assert_allclose(d, ref_d, atol=1e-7)


def test_fedmgda_plus_eps0_without_normalisation_is_fedavg():
    a = run_conflict("fedmgda_plus", eps=0.0, normalize=False, **TINY)
    b = run_conflict("fedavg_ls", **TINY)
    np.testing.assert_allclose(a["test_loss"], b["test_loss"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a["cosine"], b["cosine"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method", ["dream", "dream_no_cv", "fsmgda", "fedcmoo", "fedavg_ls", "scaffold_ls",
                                    "fedmgda_plus"])
def test_every_method_runs_and_is_deterministic(method):
    a = run_conflict(method, **TINY)
    b = run_conflict(method, **TINY)
    np.testing.assert_array_equal(a["test_loss"], b["test_loss"])
    assert a["cosine"].shape == (4,) and np.all(np.abs(a["cosine"]) <= 1 + 1e-6)


def test_bad_inputs():
    with pytest.raises(ValueError, match="method"):
        run_conflict("fmgda", **TINY)
    with pytest.raises(ValueError, match="eps"):
        run_conflict("fedmgda_plus", eps=-1.0, **TINY)
    with pytest.raises(ValueError, match="preference"):
        run_conflict("fedavg_ls", preference=[0.7, 0.7], **TINY)


def test_delta_m_and_hypervolume_known_answers():
    assert delta_m_percent([90.0, 80.0], [90.0, 80.0]) == 0.0
    assert delta_m_percent([90.0, 80.0], [100.0, 80.0]) == pytest.approx(5.0)     # task 1 drops 10 %
    assert delta_m_percent([110.0, 80.0], [100.0, 80.0]) == pytest.approx(-5.0)
    with pytest.raises(ValueError):
        delta_m_percent([1.0], [1.0, 2.0])
    assert point_hypervolume([1.0, 2.0], [2.5, 2.5]) == pytest.approx(0.75)
    assert point_hypervolume([3.0, 2.0], [2.5, 2.5]) == 0.0
    assert trunk_cosine([1.0, 2.0, 9.0], [-1.0, -2.0, 4.0], 2) == pytest.approx(-1.0)
    assert trunk_cosine([1.0, 0.0], [0.0, 1.0], 2) == pytest.approx(0.0)
