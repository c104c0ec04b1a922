"""The lr-grid rule (``select_lr``) and its use in the pretrained experiment: the client lr of every method is
chosen on tuning seeds (held-out training rows), never on the evaluation seeds or the test set."""
import math

import numpy as np
import pytest

from shared.experiment import RunContext

from papers.hosfl import experiments as E
from papers.hosfl.experiments import select_lr
from papers.hosfl.pretrained import CNNClient, run_pretrained_split, validation_split
from papers.hosfl.model import module_vector

GRID = [1e-3, 3e-3, 1e-2, 3e-2]
TUNING, EVALUATION = [100, 101, 102], [0, 1, 2]


def _known_accuracy(lr, seed):
    """Peaks at lr = 3e-3 on the tuning seeds; on the evaluation seeds it would peak at 3e-2."""
    best = 3e-3 if seed >= 100 else 3e-2
    return 0.9 - 0.1 * (math.log10(lr) - math.log10(best)) ** 2 + 1e-3 * (seed % 7)


def test_select_lr_picks_the_argmax_on_the_tuning_seeds_only():
    calls = []

    def stub(lr, seed):
        calls.append((lr, seed))
        return {"final_acc": _known_accuracy(lr, seed)}

    sel = select_lr(GRID, stub, TUNING, score=lambda o: o["final_acc"], mode="max")
    assert sel["lr"] == 3e-3
    assert {s for _, s in calls} == set(TUNING)                  # never an evaluation seed
    assert sorted(calls) == sorted((lr, s) for lr in GRID for s in TUNING)
    for lr in GRID:
        expect = [_known_accuracy(lr, s) for s in TUNING]
        assert sel["per_seed"][str(lr)] == pytest.approx(expect)
        assert sel["score"][str(lr)] == pytest.approx(np.mean(expect))
    assert [o["final_acc"] for o in sel["outputs"]] == pytest.approx([_known_accuracy(3e-3, s) for s in TUNING])
    # the same rule on the evaluation seeds would have chosen another lr: the choice above did not look at them
    assert select_lr(GRID, stub, EVALUATION, score=lambda o: o["final_acc"], mode="max")["lr"] == 3e-2


def test_select_lr_min_mode_ties_and_divergence():
    loss = {1e-3: 0.5, 3e-3: 0.2, 1e-2: 0.2, 3e-2: 0.1}

    def stub(lr, seed):
        if lr == 3e-2:
            raise FloatingPointError("non-finite")
        return {"loss": loss[lr]}

    sel = select_lr(GRID, stub, [7], score=lambda o: o["loss"], mode="min")
    assert sel["lr"] == 3e-3                       # tie with 1e-2: the first in grid order
    assert sel["diverged"] == [3e-2] and "0.03" not in sel["score"]
    with pytest.raises(FloatingPointError):
        select_lr(GRID, stub, [7], score=lambda o: o["loss"], mode="min", skip_diverged=False)
    with pytest.raises(FloatingPointError, match="every lr"):
        select_lr([3e-2], stub, [7], score=lambda o: o["loss"], mode="min")
    with pytest.raises(ValueError, match="mode"):
        select_lr(GRID, stub, [7], score=lambda o: o["loss"], mode="best")


def test_validation_split_is_fixed_and_disjoint():
    x, y = np.arange(200.0).reshape(100, 2), np.arange(100)
    xf, yf, xv, yv = validation_split(x, y, 0.2)
    assert yv.size == 20 and yf.size == 80 and not set(yv) & set(yf) and set(yv) | set(yf) == set(range(100))
    assert np.array_equal(validation_split(x, y, 0.2)[3], yv)
    with pytest.raises(ValueError, match="holdout"):
        validation_split(x, y, 0.0)


def test_pretrained_holdout_evaluates_on_held_out_rows():
    c = CNNClient(4, 6, seed=0)
    th = module_vector(c)
    kw = dict(rounds=2, n_clients=2, batch_size=3, eval_every=1, P=2, seed=1)
    a = run_pretrained_split("frozen", c, th, **kw)
    b = run_pretrained_split("frozen", c, th, holdout=0.2, **kw)
    assert a["test_accuracy"].size == b["test_accuracy"].size == 2
    n_val = round(0.2 * 1437)
    assert all(abs(v * n_val - round(v * n_val)) < 1e-9 for v in b["test_accuracy"])   # multiples of 1/287
    with pytest.raises(ValueError, match="holdout"):
        run_pretrained_split("frozen", c, th, holdout=1.0, **kw)


def test_pretrained_experiment_tunes_on_tuning_seeds_and_evaluates_with_the_chosen_lr(tmp_path, monkeypatch):
    """The experiment with a stub trainer: the lr is the argmax of the known accuracy over the tuning seeds
    (validation rows), the evaluation seeds run once each at that lr on the test set, and the metrics record the
    grid, the tuning seeds, the per-lr scores and the chosen lr."""
    c = CNNClient(4, 6, seed=0)
    th = module_vector(c)
    monkeypatch.setattr(E, "pretrained_client", lambda **kw: (c, th, {"pretrain_train_accuracy": 1.0}))
    roots = {}
    params = {"pretrain": {}, "common": {"rounds": 2, "n_clients": 2, "batch_size": 3, "eval_every": 1},
              "target_accuracy": 0.85, "seeds": EVALUATION, "tuning_seeds": TUNING, "validation_fraction": 0.2,
              "runs": {"hosfl": {"method": "hosfl", "lr_grid": GRID}, "frozen": {"method": "frozen"}}}
    ctx = RunContext(name="pretrained", scale="smoke", seed=1, out_dir=tmp_path)
    for s in TUNING + EVALUATION:
        roots[int(E.seeding.generator(ctx.seed, "run", str(s)).integers(2 ** 31))] = s
    calls = []

    def stub(method, client, theta0, *, seed, holdout=0.0, client_lr=None, **kw):
        s = roots[seed]
        calls.append((method, s, client_lr, holdout))
        acc = _known_accuracy(client_lr, s) if method == "hosfl" else 0.5
        return {"final_acc": acc, "test_accuracy": np.array([acc, acc]), "round": np.array([1, 2]),
                "train_loss": np.zeros(2), "bytes_per_client_at_eval": np.array([1.0, 2.0]), "n_clients": 2,
                "bytes": {"weights.up": np.ones(2)}}

    monkeypatch.setattr(E, "run_pretrained_split", stub)
    _, met = E.pretrained(params, ctx)
    tuning_calls = [k for k in calls if k[3] > 0]
    eval_calls = [k for k in calls if k[3] == 0]
    assert {(m, s) for m, s, _, _ in tuning_calls} == {("hosfl", s) for s in TUNING}
    assert all(h == 0.2 for *_, h in tuning_calls)
    assert sorted((m, s, lr) for m, s, lr, _ in eval_calls) == sorted(
        [("hosfl", s, 3e-3) for s in EVALUATION] + [("frozen", s, None) for s in EVALUATION])
    tun = met["runs"]["hosfl"]["tuning"]
    assert tun["lr_grid"] == GRID and tun["tuning_seeds"] == TUNING and tun["client_lr"] == 3e-3
    assert max(tun["tuning_final_acc"], key=tun["tuning_final_acc"].get) == str(3e-3)
    assert met["chosen_client_lr"] == {"hosfl": 3e-3} and met["runs"]["hosfl"]["client_lr"] == 3e-3
    assert "tuning" not in met["runs"]["frozen"]
    assert met["runs"]["hosfl"]["final_acc_per_seed"] == pytest.approx([_known_accuracy(3e-3, s) for s in EVALUATION])


def test_pretrained_experiment_rejects_overlapping_tuning_seeds(tmp_path, monkeypatch):
    c = CNNClient(4, 6, seed=0)
    monkeypatch.setattr(E, "pretrained_client", lambda **kw: (c, module_vector(c), {}))
    params = {"pretrain": {}, "common": {"rounds": 1, "n_clients": 2, "batch_size": 3, "eval_every": 1},
              "target_accuracy": 0.85, "seeds": [0, 1], "tuning_seeds": [1, 100],
              "runs": {"hosfl": {"method": "hosfl", "lr_grid": GRID}}}
    with pytest.raises(ValueError, match="disjoint"):
        E.pretrained(params, RunContext(name="pretrained", scale="smoke", seed=1, out_dir=tmp_path))


def test_tune_client_lrs_replaces_each_grid_by_its_argmax_and_keeps_runs_without_one():
    """The rule shared by `pretrained` and `minilm_split`: per run, the grid's best lr on the tuning seeds only;
    fixed lrs and runs without an lr pass through; the record names the grid, seeds and scores."""
    calls, logged = [], []

    def train(method, *, seed, holdout, client_lr):
        calls.append((method, client_lr, seed, holdout))
        return {"final_acc": _known_accuracy(client_lr, seed) if method == "hosfl" else 1.0 - client_lr}

    runs = {"a": {"method": "hosfl", "lr_grid": GRID}, "b": {"method": "sfl_fo", "lr_grid": [1e-2, 1e-3]},
            "c": {"method": "sfl_fo", "client_lr": 0.5}, "d": {"method": "frozen"}}
    opts, tuning = E.tune_client_lrs(runs, tuning_seeds=TUNING, seeds=EVALUATION, holdout=0.2, train=train,
                                     log=logged.append)
    assert opts == {"a": {"method": "hosfl", "client_lr": 3e-3}, "b": {"method": "sfl_fo", "client_lr": 1e-3},
                    "c": {"method": "sfl_fo", "client_lr": 0.5}, "d": {"method": "frozen"}}
    assert runs["a"] == {"method": "hosfl", "lr_grid": GRID}          # the caller's options are not modified
    assert {s for _, _, s, _ in calls} == set(TUNING) and {h for *_, h in calls} == {0.2}
    assert sorted(calls) == sorted([("hosfl", lr, s, 0.2) for lr in GRID for s in TUNING]
                                   + [("sfl_fo", lr, s, 0.2) for lr in (1e-2, 1e-3) for s in TUNING])
    assert set(tuning) == {"a", "b"} and tuning["b"]["client_lr"] == 1e-3
    assert tuning["a"]["validation_fraction"] == 0.2 and tuning["a"]["tuning_seeds"] == TUNING
    assert any("client_lr 0.003 chosen" in m for m in logged)
    with pytest.raises(ValueError, match="disjoint"):
        E.tune_client_lrs(runs, tuning_seeds=[0], seeds=EVALUATION, holdout=0.2, train=train, log=print)
    with pytest.raises(ValueError, match="no tuning_seeds"):
        E.tune_client_lrs(runs, tuning_seeds=[], seeds=EVALUATION, holdout=0.2, train=train, log=print)


def test_tune_client_lrs_chooses_client_and_server_lr_jointly_on_the_grids_product():
    """With a ``server_lr_grid`` the candidates are the product of the two grids (client outer, server inner),
    every one run on every tuning seed; the pair with the best mean validation accuracy is kept (ties: first in
    grid order), and a run with only a server grid keeps its method options and gains ``server_lr``."""
    calls = []

    def score(client_lr, server_lr, seed):   # best at (1e-3, 5e-3); seed 101 shifts every candidate equally
        return 1.0 - abs(np.log10(client_lr) + 3) - abs(np.log10(server_lr / 5e-3)) - 0.01 * (seed - 100)

    def train(method, *, seed, holdout, server_lr, client_lr=1e-3):
        calls.append((method, client_lr, server_lr, seed))
        return {"final_acc": score(client_lr, server_lr, seed)}

    runs = {"a": {"method": "hosfl", "lr_grid": [1e-4, 1e-3], "server_lr_grid": [2e-2, 5e-3]},
            "f": {"method": "frozen", "server_lr_grid": [5e-3, 5e-3 * (1 + 1e-12)]},
            "g": {"method": "frozen"}}
    opts, tuning = E.tune_client_lrs(runs, tuning_seeds=TUNING, seeds=EVALUATION, holdout=0.2, train=train,
                                     log=lambda m: None)
    assert opts["a"] == {"method": "hosfl", "client_lr": 1e-3, "server_lr": 5e-3}
    assert opts["f"] == {"method": "frozen", "server_lr": 5e-3} and opts["g"] == {"method": "frozen"}
    assert [c for c in calls if c[0] == "hosfl"] == [("hosfl", c, s, t) for c in (1e-4, 1e-3) for s in (2e-2, 5e-3)
                                                      for t in TUNING]
    rec = tuning["a"]
    assert rec["lr_grid"] == [1e-4, 1e-3] and rec["server_lr_grid"] == [2e-2, 5e-3]
    assert (rec["client_lr"], rec["server_lr"]) == (1e-3, 5e-3)
    assert set(rec["tuning_final_acc"]) == {"client_lr=0.0001,server_lr=0.02", "client_lr=0.0001,server_lr=0.005",
                                            "client_lr=0.001,server_lr=0.02", "client_lr=0.001,server_lr=0.005"}
    assert rec["tuning_final_acc"]["client_lr=0.001,server_lr=0.005"] == pytest.approx(
        np.mean([score(1e-3, 5e-3, t) for t in TUNING]))
    assert "client_lr" not in tuning["f"] and tuning["f"]["server_lr_grid"] == [5e-3, 5e-3 * (1 + 1e-12)]
