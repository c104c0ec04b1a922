"""The AdamW variant, the straggler-rate setting, the make_classification benchmark and the sweeps: known answers
from the math (AdamW's first step, torch's AdamW, exact replay, byte counts) and the bad inputs."""
import numpy as np
import pytest
import torch

from papers.hosfl import hybrid as H
from papers.hosfl.data import load_dataset, load_synthetic_split
from papers.hosfl.experiments import p_sweep, width_sweep
from papers.hosfl.training import Setup, run_split_training
from shared.experiment import RunContext


# ------------------------------------------------------------------------------------------- AdamW
def test_adamw_first_step_is_signed_lr_step():
    """With zero moments, m_hat = g and v_hat = g^2, so the first step is lr g / (|g| + eps) after the decay."""
    theta = np.array([1.0, -2.0, 0.5, 3.0])
    g = np.array([0.3, -4.0, 1e-3, -0.02])
    lr, wd, eps = 0.01, 0.1, 1e-8
    new, (step, m, v) = H.adamw_step(theta, g, lr, None, weight_decay=wd)
    np.testing.assert_allclose(new, theta * (1 - lr * wd) - lr * g / (np.abs(g) + eps), rtol=0, atol=1e-15)
    assert step == 1
    np.testing.assert_allclose(m, 0.1 * g, rtol=1e-15)
    np.testing.assert_allclose(v, 0.001 * g * g, rtol=1e-12)


def test_adamw_matches_torch_adamw_over_steps():
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(7)
    p = torch.nn.Parameter(torch.from_numpy(theta.copy()))
    opt = torch.optim.AdamW([p], lr=3e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    state = None
    for _ in range(6):
        g = rng.standard_normal(7)
        theta, state = H.adamw_step(theta, g, 3e-3, state, weight_decay=0.01)
        p.grad = torch.from_numpy(g.copy())
        opt.step()
    np.testing.assert_allclose(theta, p.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_adamw_replay_equals_live_updates_bitwise():
    rng = np.random.default_rng(3)
    theta0 = rng.standard_normal(9).astype(np.float32)
    theta, state, hist = theta0.copy(), None, []
    for r in range(5):
        seeds = [int(s) for s in rng.choice(2 ** 32, size=3, replace=False)]
        vbar = rng.standard_normal(3)
        hist.append((seeds, vbar, 1e-3))
        theta, state = H.client_update(theta, seeds, vbar, 1e-3, lr=1e-3, optimizer="adamw", buf=state)
        if r == 1:
            mid_theta, mid_state = theta.copy(), (state[0], state[1].copy(), state[2].copy())
    replayed, rstate = H.replay_client(mid_theta, hist[2:], lr=1e-3, optimizer="adamw", momentum_buffer=mid_state)
    assert np.array_equal(replayed, theta) and rstate[0] == 5


def test_adamw_training_runs_and_bad_optimizer():
    out = run_split_training("hosfl", rounds=6, n_clients=3, batch_size=4, optimizer="adamw", server_lr=3e-3,
                             client_lr=1e-3, stragglers={1: (1, 3)}, eval_every=6)
    assert out["replay_error"] == 0.0
    with pytest.raises(ValueError, match="optimizer"):
        run_split_training("hosfl", rounds=2, n_clients=2, batch_size=4, optimizer="adam")
    with pytest.raises(ValueError, match="optimizer 'adamw'.*sfl_zo"):
        run_split_training("sfl_zo", rounds=2, n_clients=2, batch_size=4, optimizer="adamw")
    with pytest.raises(ValueError, match="weight_decay"):
        run_split_training("hosfl", rounds=2, n_clients=2, batch_size=4, optimizer="adamw", weight_decay=-1.0)
    with pytest.raises(ValueError, match="optimizer"):
        H.optimizer_step(np.zeros(2), np.zeros(2), 0.1, optimizer="rmsprop")


# ------------------------------------------------------------------------------------------- stragglers a round
def test_straggler_fraction_counts_present_clients_and_catchup_bytes():
    N, B, P, R = 10, 4, 3, 12
    out = run_split_training("hosfl", rounds=R, n_clients=N, batch_size=B, n_perturbations=P,
                             straggler_fraction=0.3, eval_every=R, track_alignment=False)
    # 7 of 10 clients present each round: labels up = 7 B 8 bytes
    assert np.all(out["bytes"]["cut.labels_up"] == 7 * B * 8)
    assert np.all(out["bytes"]["weights.up"] == 7 * 4 * P)
    assert out["replay_error"] == 0.0
    # every missed (client, round) slot is replayed once: 3 a round
    assert out["rounds_replayed"] == 3 * R
    assert out["catchup_bytes"] == out["rounds_replayed"] * 8 * P
    # seeds.down = 4P per present client and round, plus 4P per replayed round
    assert out["bytes"]["seeds.down"].sum() == 4 * P * (7 * R + 3 * R)


@pytest.mark.parametrize("kw,msg", [
    ({"straggler_fraction": 1.0}, "straggler_fraction"), ({"straggler_fraction": -0.1}, "straggler_fraction"),
    ({"method": "sfl_fo", "straggler_fraction": 0.3}, "only supported"),
    ({"straggler_fraction": 0.3, "stragglers": {0: (1, 2)}}, "not both"),
    ({"n_clients": 2, "straggler_fraction": 0.9}, "no client present"),
    ({"dataset": "cifar"}, "dataset"),
])
def test_bad_variant_input(kw, msg):
    args = {"method": "hosfl", "rounds": 2, "n_clients": 4, "batch_size": 4, **kw}
    method = args.pop("method")
    with pytest.raises(ValueError, match=msg):
        run_split_training(method, **args)


# ------------------------------------------------------------------------------------------- make_classification
def test_synthetic_split_shapes_and_standardisation():
    x_tr, y_tr, x_te, y_te = load_synthetic_split(n_samples=500)
    assert x_tr.shape == (400, 256) and x_te.shape == (100, 256)
    assert set(np.unique(np.concatenate([y_tr, y_te]))) == set(range(10))
    np.testing.assert_allclose(x_tr.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(x_tr.std(0), 1, atol=1e-12)
    again = load_dataset("synthetic", n_samples=500)
    assert all(np.array_equal(a, b) for a, b in zip(again, (x_tr, y_tr, x_te, y_te)))
    with pytest.raises(ValueError, match="n_samples"):
        load_synthetic_split(n_samples=0)
    with pytest.raises(ValueError, match="dataset"):
        load_dataset("mnist")
    with pytest.raises(ValueError, match="digits"):
        load_dataset("digits", n_samples=5)


def test_synthetic_setup_has_256_256_client():
    s = Setup(n_clients=2, partition="iid", dirichlet_alpha=0.1, init="random", seed=0, dataset="synthetic",
              dataset_kwargs={"n_samples": 500}, model_kwargs={"cut_dim": 256})
    assert s.model.in_dim == 256 and s.model.client_dim == 256 * 257 and s.model.n_classes == 10


# ------------------------------------------------------------------------------------------- sweeps
def _ctx(tmp_path, name):
    return RunContext(name=name, scale="smoke", seed=1, out_dir=tmp_path)


def test_width_sweep_records_diverged_pure_zo_as_null(tmp_path):
    params = {"cut_dims": [8], "hidden_dims": [16], "sfl_zo_lr_grid": [1.0e35],
              "common": {"rounds": 40, "n_clients": 2, "batch_size": 4, "eval_every": 40}}
    _, met = width_sweep(params, _ctx(tmp_path, "width_sweep"))
    assert met["final_acc"]["cut_dim"]["8"]["sfl_zo"] is None and met["diverged"]
    assert met["dims"]["cut_dim"]["8"] == {"d_c": 8 * 65, "d_s": 8 * 64 + 64 + 64 * 10 + 10}
    assert met["dims"]["hidden_dim"]["16"] == {"d_c": 32 * 65, "d_s": 32 * 16 + 16 + 16 * 10 + 10}


def _fake_training(losses_by_lr, acc=0.5):
    """A stand-in for run_split_training: the training loss curve of each lr (a curve of None raises
    FloatingPointError, as a non-finite run does)."""
    def fake(method, *, client_lr, **kw):
        curve = losses_by_lr[client_lr]
        if curve is None:
            raise FloatingPointError("non-finite parameters")
        return {"train_loss": np.asarray(curve, dtype=float), "final_acc": acc}
    return fake


def test_width_run_keeps_the_lr_with_the_lowest_tail_loss(monkeypatch, tmp_path):
    import papers.hosfl.experiments as E
    monkeypatch.setattr(E, "run_split_training", _fake_training(
        {1e-3: [2.3] * 9 + [0.5], 3e-3: [2.3] * 9 + [9.0], 1e-2: None}))
    out = E._width_run("sfl_zo", [1e-3, 3e-3, 1e-2], {"cut_dim": 8, "hidden_dim": 16}, {}, 0, 1,
                       _ctx(tmp_path, "width_sweep"))
    assert out == {"final_acc": 0.5, "lr": 1e-3, "diverged": False,
                   "grid_tail_loss": {"0.001": 0.5, "0.003": 9.0, "0.01": None}}


def test_width_run_counts_a_finite_blow_up_as_diverged(monkeypatch, tmp_path):
    """The only lr ends with its training loss above BLOW_UP_FACTOR (2) times its first round's: diverged, accuracy
    null (chance in the comparisons), although every value stayed finite; a non-finite run is diverged too."""
    import papers.hosfl.experiments as E
    monkeypatch.setattr(E, "run_split_training", _fake_training({3e-3: [2.3, 2.0, 40.0]}, acc=0.06))
    out = E._width_run("sfl_zo", [3e-3], {"cut_dim": 8, "hidden_dim": 16}, {}, 0, 1, _ctx(tmp_path, "w"))
    assert out["diverged"] and out["final_acc"] is None and out["lr"] == 3e-3
    monkeypatch.setattr(E, "run_split_training", _fake_training({3e-3: None}))
    out = E._width_run("sfl_zo", [3e-3], {"cut_dim": 8, "hidden_dim": 16}, {}, 0, 1, _ctx(tmp_path, "w"))
    assert out == {"final_acc": None, "lr": None, "grid_tail_loss": {"0.003": None}, "diverged": True}


def test_p_sweep_schema(tmp_path):
    params = {"P_list": [1, 3], "common": {"rounds": 3, "n_clients": 2, "batch_size": 4, "eval_every": 1}}
    _, met = p_sweep(params, _ctx(tmp_path, "p_sweep"))
    assert met["P_list"] == [1, 3] and set(met["alignment_ratio"]) == {"1", "3"}
    assert met["rounds_to_90_censored"]["1"] >= 3   # never reached in 3 rounds: censored past the horizon
