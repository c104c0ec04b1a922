"""MultiDigits: the data recipe, the hand-written batched backward against autograd, a tiny run, bad input."""
import numpy as np
import pytest
import torch

from papers.dream.data import compose_pair, make_multidigits
from papers.dream.training import SharedTrunkMLP, run_multidigits

TINY = dict(rounds=2, n_clients=3, local_steps=1, n_train_pairs=200, eval_every=1, seed=0)


def test_compose_pair_overlay():
    a = np.zeros((8, 8))
    a[:, 7] = 0.25
    b = np.zeros((8, 8))
    b[:, 3] = 0.75
    b[:, 0] = 0.1
    x = compose_pair(a, b).reshape(8, 12)
    assert x[0, 7] == 0.75          # max(a col 7, b col 3)
    assert x[0, 4] == 0.1           # b col 0 over a col 4 (zero)
    assert x[0, 11] == 0.0 and x.shape == (8, 12)


def test_multidigits_shapes_and_labels():
    Xtr, Ytr, Xte, Yte = make_multidigits(50, 20)
    assert Xtr.shape == (50, 96) and Xte.shape == (20, 96) and Xtr.dtype == np.float32
    assert 0.0 <= Xtr.min() and Xtr.max() <= 1.0
    np.testing.assert_array_equal(Ytr[:, 2], (Ytr[:, 0] + Ytr[:, 1]) % 2)


@pytest.mark.parametrize("n_tasks", [2, 3])
def test_batched_backward_matches_autograd(n_tasks):
    model = SharedTrunkMLP(n_tasks, seed=1)
    g = torch.Generator().manual_seed(0)
    S, B = 2, 5
    theta = model.theta0.unsqueeze(0).repeat(S, 1) + 0.01 * torch.randn(S, model.dim, generator=g)
    X = torch.rand(S, B, 96, generator=g)
    Y = torch.stack([torch.randint(0, c, (S, B), generator=g) for c in model.n_classes], dim=2)
    omega = torch.tensor([[0.3, 0.7, 0.0][:n_tasks], [1.0, 0.0, 0.5][:n_tasks]])
    sw = torch.full((S, B), 1.0 / B)
    sw[1, 3:] = 0.0
    sw[1, :3] = 1.0 / 3
    grads = model.grads(theta, X, Y, omega, sw)
    for s in range(S):
        th = theta[s].clone().requires_grad_(True)
        keep = sw[s] > 0
        losses = model.task_losses(th, X[s][keep], Y[s][keep])
        ref = torch.autograd.grad(sum(omega[s, m] * losses[m] for m in range(n_tasks)), th)[0]
        torch.testing.assert_close(grads[s], ref, atol=2e-6, rtol=1e-4)


def test_tiny_run_is_deterministic_and_counts_bytes():
    a = run_multidigits("dream", **TINY)
    b = run_multidigits("dream", **TINY)
    np.testing.assert_array_equal(a["test_loss"], b["test_loss"])
    D = SharedTrunkMLP(2).dim
    assert a["bytes_per_client_round"]["model.up"] == 4 * D
    assert a["bytes_per_client_round"]["control.up"] == 4 * 2 * D
    assert a["bytes_per_client_round"]["weights.down"] == 8
    np.testing.assert_array_equal(a["round"], [1, 2])
    np.testing.assert_array_equal(a["bytes_up"], [3 * 4 * 3 * D, 2 * 3 * 4 * 3 * D])
    # with K = 1 and all clients the corrections average out (DREAM = no CV); with K = 2 they act from round 2
    two = {**TINY, "local_steps": 2}
    a2, c2 = run_multidigits("dream", **two), run_multidigits("dream_no_cv", **two)
    np.testing.assert_array_equal(a2["test_loss"][0], c2["test_loss"][0])   # c = 0 in round 1
    assert not np.array_equal(a2["test_loss"][-1], c2["test_loss"][-1])


def test_all_methods_and_three_tasks_run():
    for m in ("fmgda", "fedavg_ls", "scaffold_ls"):
        res = run_multidigits(m, **TINY)
        assert np.all(np.isfinite(res["test_accuracy"]))
    res = run_multidigits("dream", n_tasks=3, dirichlet_alpha=float("inf"), **TINY)
    assert res["test_accuracy"].shape == (2, 3)


def test_bad_input():
    with pytest.raises(ValueError, match="n_tasks"):
        run_multidigits("dream", n_tasks=4, **TINY)
    with pytest.raises(ValueError, match="dirichlet_alpha"):
        run_multidigits("dream", dirichlet_alpha=0.0, **TINY)
    with pytest.raises(ValueError, match="method"):
        run_multidigits("mgda_central", **TINY)
    with pytest.raises(ValueError, match="momentum"):
        run_multidigits("dream", momentum=1.0, **TINY)


def test_fedcmoo_with_preference_is_fedavg_and_counts_bytes():
    # with 200 pairs over 3 clients every probe is the whole local set (no draw), so both methods see the same
    # minibatches; A = w 1^T makes FedCMOO's weighted local loss sum_m w_m f_{i,m}
    w = np.array([0.25, 0.75])
    a = run_multidigits("fedcmoo", correction=np.outer(w, np.ones(2)), **TINY)
    b = run_multidigits("fedavg_ls", preference=w, **TINY)
    np.testing.assert_allclose(a["test_loss"], b["test_loss"], rtol=1e-6)
    D = SharedTrunkMLP(2).dim
    c = run_multidigits("fedcmoo", **TINY)
    assert c["bytes_per_client_round"]["jacobian.up"] == 4 * 2 * D
    assert c["bytes_per_client_round"]["model.up"] == 4 * D
    assert c["bytes_per_client_round"]["weights.down"] == 8
    assert np.all(np.isfinite(c["test_accuracy"]))


def _fixed_samplers(X, Y):
    """Samplers that hand every client the same minibatch / probe (the whole of X, Y)."""
    def minibatches(part):
        return X.expand(part.size, *X.shape), Y.expand(part.size, *Y.shape)

    def probes(part):
        return (X.expand(part.size, *X.shape), Y.expand(part.size, *Y.shape),
                torch.full((part.size, X.shape[0]), 1.0 / X.shape[0]))
    return minibatches, probes


def test_scalarised_local_models_are_sgd_and_scaffold_keeps_c_the_mean_of_the_c_i():
    from papers.dream.training import ScaffoldControls, scalarised_local_models

    model = SharedTrunkMLP(2, seed=3)
    g = torch.Generator().manual_seed(1)
    X = torch.rand(6, 96, generator=g)
    Y = torch.stack([torch.randint(0, c, (6,), generator=g) for c in model.n_classes[:2]], dim=1)
    w = torch.tensor([0.25, 0.75])
    minibatches, probes = _fixed_samplers(X, Y)
    kw = dict(minibatches=minibatches, probes=probes, batch_size=6, local_steps=2, lr_local=0.1)
    x = model.theta0.clone()

    def scalarised_grad(theta):
        th = theta.clone().requires_grad_(True)
        losses = model.task_losses(th, X, Y)
        return torch.autograd.grad(w[0] * losses[0] + w[1] * losses[1], th)[0]

    # FedAvg: two plain SGD steps on w . f from x, the same for every client (same data)
    part = np.array([0, 2])
    xs, y, cats = scalarised_local_models("fedavg_ls", model, x, part, w, ScaffoldControls(3, model.dim), **kw)
    y_ref = x - 0.1 * scalarised_grad(x)
    y_ref = y_ref - 0.1 * scalarised_grad(y_ref)
    torch.testing.assert_close(y[1], y_ref, atol=2e-6, rtol=1e-4)
    assert torch.equal(xs[0], x) and dict(cats) == {"model.down": model.dim, "model.up": model.dim}

    # SCAFFOLD: the correction c - c_i enters every step; the probes become the new c_i (option I) and c stays
    # (1/N) sum_i c_i
    controls = ScaffoldControls(3, model.dim)
    controls.client[0] = 0.01
    controls.server = controls.client.mean(dim=0)
    _, y, cats = scalarised_local_models("scaffold_ls", model, x, part, w, controls, **kw)
    corr = -0.01 * (1 - 1 / 3)        # c - c_0 = 0.01 / 3 - 0.01
    y_ref = x - 0.1 * (scalarised_grad(x) + corr)
    y_ref = y_ref - 0.1 * (scalarised_grad(y_ref) + corr)
    torch.testing.assert_close(y[0], y_ref, atol=2e-6, rtol=1e-4)
    torch.testing.assert_close(controls.client[0], scalarised_grad(x), atol=2e-6, rtol=1e-4)
    torch.testing.assert_close(controls.server, controls.client.mean(dim=0), atol=1e-7, rtol=1e-5)
    assert dict(cats)["control.up"] == model.dim
    with pytest.raises(ValueError, match="method"):
        scalarised_local_models("dream", model, x, part, w, controls, **kw)


def test_a_non_finite_model_stops_the_run_naming_method_and_round():
    from shared.fed import ByteLedger

    from papers.dream.training import record_messages

    ledger = ByteLedger()
    record_messages(ledger, np.array([0, 1]), (("model.up", 3),), 0, torch.zeros(3), "fedavg_ls")
    assert ledger.total("model.up") == 2 * 3 * 4
    with pytest.raises(FloatingPointError, match="'scaffold_ls'.*round 4"):
        record_messages(ledger, np.array([0]), (("model.up", 3),), 4, torch.tensor([0.0, float("nan"), 1.0]),
                        "scaffold_ls")


class _ConstantModel:
    """Two tasks whose logits favour class 0 (task 0) and class 1 (task 1) for every input, whatever theta."""

    def logits(self, theta, X):
        n = X.shape[0]
        z0 = torch.zeros(n, 2)
        z0[:, 0] = 1.0
        return [z0, z0.flip(1)]


def test_federated_training_evaluates_on_schedule_and_books_bytes_per_client_round():
    from shared.fed import ByteLedger

    from papers.dream.training import federated_training
    X, Y = torch.zeros(4, 3), torch.tensor([[0, 1], [0, 1], [1, 1], [0, 0]])
    calls = []

    def one_round(x, part, lam):
        calls.append(sorted(int(i) for i in part))
        return x + 1.0, lam, [("up", 5), ("down", 2)]

    ledger = ByteLedger()
    out = {"round": [], "test_accuracy": [], "test_loss": [], "weights": [], "x_sum": []}
    res = federated_training(one_round, _ConstantModel(), torch.zeros(3), np.array([0.5, 0.5]), method="t",
                             rounds=5, n_clients=4, S=2, server_rng=np.random.default_rng(0), ledger=ledger,
                             X_te=X, Y_te=Y, eval_every=2, out=out, at_eval=(("x_sum", lambda x: float(x.sum())),))
    assert len(calls) == 5 and all(len(p) == 2 for p in calls)
    assert res["round"].tolist() == [2, 4, 5]                      # every eval_every rounds and after the last
    assert res["x_sum"].tolist() == [6.0, 12.0, 15.0]              # x after t rounds is t in each of 3 coordinates
    assert res["test_accuracy"].tolist() == [[75.0, 75.0]] * 3     # 3 of 4 labels are 0 (task 0) and 1 (task 1)
    assert res["bytes_per_client_round"] == {"up": 5 * 4, "down": 2 * 4}   # float32 bytes per client and round


def test_federated_training_stops_on_a_non_finite_model_naming_method_and_round():
    from shared.fed import ByteLedger

    from papers.dream.training import federated_training

    def one_round(x, part, lam):
        return x * float("nan"), lam, []

    with pytest.raises(FloatingPointError, match="method 'broken'.*round 0"):
        federated_training(one_round, _ConstantModel(), torch.zeros(3), np.ones(2) / 2, method="broken", rounds=3,
                           n_clients=2, S=1, server_rng=np.random.default_rng(0), ledger=ByteLedger(),
                           X_te=torch.zeros(1, 3), Y_te=torch.zeros(1, 2, dtype=torch.long), eval_every=1,
                           out={"round": [], "test_accuracy": [], "test_loss": [], "weights": []})
