"""Training loop: SFL-FO(tau=1) = centralised momentum SGD, batched HO-SFL = per-client API, ledger sizes,
straggler replay, and the bad inputs."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from papers.hosfl import hybrid as H
from papers.hosfl.training import (Setup, final_accuracy, make_stepper, rounds_to_target, run_split_training)


def _setup(dtype="float64", n=3):
    return Setup(n_clients=n, partition="iid", dirichlet_alpha=0.1, init="random", seed=4, dtype=dtype)


def _batches(s, n, B, rounds, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rounds):
        idx = np.stack([rng.choice(s.parts[k], B, replace=False) for k in range(n)])
        out.append((s.x_train[idx], s.y_train[idx]))
    return out


def test_sfl_fo_tau1_equals_centralised_momentum_sgd():
    n, B = 3, 4
    s = _setup()
    ref = Setup(n_clients=n, partition="iid", dirichlet_alpha=0.1, init="random", seed=4, dtype="float64").model
    opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    st = make_stepper("sfl_fo", s, n_clients=n, tau=1, client_lr=0.05, server_lr=0.05, momentum=0.9,
                      rng=np.random.default_rng(0))
    for t, (X, Y) in enumerate(_batches(s, n, B, 4)):
        st.step(t, list(range(n)), X, Y)
        opt.zero_grad()
        F.cross_entropy(ref(X.reshape(-1, 64)), Y.reshape(-1)).backward()   # union batch, equal sizes
        opt.step()
    np.testing.assert_allclose(st.theta_c, ref.client_vector(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s.model.server_vector(), ref.server_vector(), rtol=1e-10, atol=1e-12)


def test_batched_hosfl_scalars_equal_per_client_api():
    n, B = 3, 5
    s = _setup("float64")
    st = make_stepper("hosfl", s, n_clients=n, rng=np.random.default_rng(1), track_alignment=True)
    X, Y = _batches(s, n, B, 1)[0]
    model_copy = Setup(n_clients=n, partition="iid", dirichlet_alpha=0.1, init="random", seed=4,
                       dtype="float64").model
    seeds = [int(v) for v in np.random.default_rng(1).choice(2 ** 32, size=5, replace=False)]
    st.step(0, list(range(n)), X, Y)
    for k in range(n):
        _, z, lam = H.cut_layer_multiplier(model_copy, X[k].numpy(), Y[k].numpy())
        v = H.client_directional_scalars(model_copy, X[k].numpy(), lam, seeds, 1e-3, z=z)
        np.testing.assert_allclose(st.last_scalars[k], v, rtol=1e-9)
    assert st.history[0][0] == seeds


def test_ledger_dimension_free_and_cut_equal():
    kw = dict(rounds=20, n_clients=2, batch_size=4, eval_every=10)
    h = run_split_training("hosfl", n_perturbations=3, **kw)
    f1 = run_split_training("sfl_fo", tau=1, **kw)
    f10 = run_split_training("sfl_fo", tau=10, **kw)
    assert np.all(h["bytes"]["weights.up"] == 2 * 4 * 3) and np.all(h["bytes"]["seeds.down"] == 2 * 4 * 3)
    assert np.all(f1["bytes"]["weights.up"] == 2 * 4 * 2080)
    assert np.flatnonzero(f10["bytes"]["weights.up"]).tolist() == [9, 19]
    for c in ("cut.act_up", "cut.labels_up", "cut.grad_down"):
        assert np.array_equal(h["bytes"][c], f1["bytes"][c])
    assert h["bytes"]["cut.act_up"][0] == 2 * 4 * 32 * 4 and h["bytes"]["cut.labels_up"][0] == 2 * 4 * 8


def test_straggler_replay_exact_and_frozen_client_fixed():
    out = run_split_training("hosfl", rounds=8, n_clients=3, batch_size=4, momentum=0.9,
                             stragglers={1: (2, 5)}, eval_every=8)
    assert out["replay_error"] == 0.0 and len(out["history"]) == 8
    fr = run_split_training("frozen", rounds=3, n_clients=2, batch_size=4, eval_every=3)
    s = Setup(n_clients=2, partition="iid", dirichlet_alpha=0.1, init="random", seed=0)
    assert np.array_equal(fr["client_vector"], s.model.client_vector())


def test_metric_helpers():
    assert final_accuracy(np.arange(20) / 20) == pytest.approx((18 + 19) / 40)
    assert rounds_to_target([10, 20, 30, 40], [0.91, 0.8, 0.95, 0.96]) == 30
    assert rounds_to_target([10, 20], [0.5, 0.95]) == 20
    assert rounds_to_target([10, 20], [0.5, 0.6]) is None


@pytest.mark.parametrize("kw,msg", [
    ({"method": "adam"}, "method"), ({"partition": "shards"}, "partition"), ({"init": "imagenet"}, "init"),
    ({"tau": 0}, "tau"), ({"rounds": 0}, "rounds"), ({"batch_size": 0}, "batch_size"),
    ({"n_clients": 2000}, "n_clients"), ({"dirichlet_alpha": 0.0}, "dirichlet_alpha"),
    ({"momentum": 1.0}, "momentum"), ({"momentum": -0.1}, "momentum"), ({"n_perturbations": 0}, "P"),
    ({"mu": 0.0}, "mu"), ({"mu": float("nan")}, "mu"), ({"stragglers": {5: (1, 2)}}, "outside"),
    ({"method": "sfl_fo", "stragglers": {0: (1, 2)}}, "only supported"),
    ({"partition": "dirichlet", "n_clients": 200}, "min_size"),
])
def test_bad_training_input(kw, msg):
    args = {"method": "hosfl", "rounds": 2, "n_clients": 2, "batch_size": 4, **kw}
    method = args.pop("method")
    with pytest.raises(ValueError, match=msg):
        run_split_training(method, **args)


def test_nonfinite_loss_stops_with_method_and_round():
    with pytest.raises(FloatingPointError, match=r"'sfl_fo'.*round"):
        run_split_training("sfl_fo", rounds=30, n_clients=2, batch_size=4, server_lr=1e20, client_lr=1e20,
                           momentum=0.0, eval_every=30)


def test_zo_baseline_divergence_is_floating_point_error():
    with pytest.raises(FloatingPointError, match="mu_splitfed"):
        run_split_training("mu_splitfed", rounds=40, n_clients=2, batch_size=4, client_lr=1e8, eval_every=40)
