"""A pretrained CNN split client on Digits and the communication comparison of official claim 2 (HO-SFL
against first-order SFL and FSL-SAGE).

* The client ``CNNClient``: Conv2d(1, 64, 3, stride 2, padding 1) -> ReLU -> Flatten -> Linear(1024, 100)
  -> ReLU, d_c = 103140 (>= 1e5) and a cut of 100 features. It is pre-trained here, with a temporary
  Linear(100, n) head, on the Digits training images of classes 0..4 only (:func:`pretrain_client`); the split
  runs then fine-tune it on all ten classes, a small analogue of the paper's ImageNet-pretrained ResNet-18
  fine-tuned on CIFAR-10.
* The server is the SplitMLP server: Linear(100, 64) -> ReLU -> Linear(64, 10), SGD with momentum.
* K clients, all present, one batch of B each per round, client models averaged every round (tau = 1); with
  equal batches that is one step on the mean over the K B rows, so the K clients are simulated as one
  stacked batch (the per-client loss is the mean over its rows, lambda_m = d loss_m / d z_m, and the
  server mean of the K clients' scalars, gradients or models is what the stacked pass computes).

Methods (bytes booked per client and round with ``shared.fed.ByteLedger``, float32 = 4 B, labels 8 B):

* ``hosfl``: as in :mod:`papers.hosfl.training` (Sec. 3 of the paper): z under no_grad, lambda from the
  server, P scalars up, vbar down, one shared client model. Bytes: cut activations and labels up, lambda down,
  4 P up, 4 P down, 4 P seeds down.
* ``sfl_fo``: backprop of lambda into the client, FedAvg every round. Bytes: cut up, labels up, lambda down,
  4 d_c up and 4 d_c down.
* ``fsl_sage`` (Nair et al., ICML 2025; reconstructed from the paper's description): the client holds an
  auxiliary model a(z; phi) = Linear(100, 10) and steps with the gradient of its own loss CE(a(z), y), so it
  never waits for the server's lambda. Every ``server_every`` rounds it uploads its cut activations and labels
  and the server takes its first-order step on them; every ``align_every`` rounds the server aligns the
  auxiliary model to its own cut-layer gradient, minimising ||d CE(a(z), y)/dz - lambda||^2 over phi
  (``align_steps`` Adam steps), and sends phi down. Client models are averaged every round. Bytes: cut
  activations and labels up at server rounds, 4 d_a down at alignment rounds, 4 d_c up and 4 d_c down.
* ``frozen``: the HO-SFL server with the pretrained client never updated (cut activations and labels up).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from shared import seeding
from shared.fed import FLOAT32_BYTES, INT64_BYTES, UINT32_BYTES, ByteLedger, draw_batch, partition_iid
from shared.oracles.zeroth_order import perturbation_directions

from papers.hosfl import hybrid as H
from papers.hosfl.data import load_digits_split
from papers.hosfl.model import module_apply, module_vector
from papers.hosfl.training import CATEGORIES, final_accuracy, rounds_to_target

__all__ = ["CNNClient", "pretrain_client", "run_pretrained_split", "validation_split", "holdout_rows",
           "check_rates", "PRETRAINED_METHODS"]

PRETRAINED_METHODS = ("hosfl", "sfl_fo", "fsl_sage", "frozen")


class CNNClient(nn.Module):
    """Conv2d(1, channels, 3, stride 2, padding 1) -> ReLU -> Flatten -> Linear(channels 16, cut_dim) -> ReLU
    on 8 x 8 images; parameters from ``seed`` (the global torch RNG is left as it was)."""

    def __init__(self, channels: int = 64, cut_dim: int = 100, seed: int = 0):
        super().__init__()
        for name, v in (("channels", channels), ("cut_dim", cut_dim)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.cut_dim = int(cut_dim)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.net = nn.Sequential(nn.Conv2d(1, int(channels), 3, stride=2, padding=1), nn.ReLU(),
                                     nn.Flatten(), nn.Linear(16 * int(channels), self.cut_dim), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _images(x: np.ndarray) -> torch.Tensor:
    """(n, 64) Digits rows -> (n, 1, 8, 8) float32 images."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] != 64:
        raise ValueError(f"Digits inputs must have shape (n, 64), got {x.shape}")
    return torch.from_numpy(x).view(-1, 1, 8, 8)


def pretrain_client(client: CNNClient, x_train, y_train, *, classes, epochs: int, lr: float, batch_size: int,
                    seed) -> dict:
    """Pre-train ``client`` in place with a temporary Linear(cut_dim, len(classes)) head by Adam on the training
    rows whose label is in ``classes`` (cross-entropy, ``epochs`` shuffled passes). Returns the training
    accuracy of the head at the end and the number of rows used."""
    classes = sorted(int(c) for c in classes)
    if not classes:
        raise ValueError("classes must name at least one label")
    keep = np.isin(np.asarray(y_train), classes)
    if not keep.any():
        raise ValueError(f"no training row has a label in {classes}")
    x = _images(np.asarray(x_train)[keep])
    remap = {c: i for i, c in enumerate(classes)}
    y = torch.tensor([remap[int(v)] for v in np.asarray(y_train)[keep]])
    rng = seeding.generator(seed, "pretrain")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(2 ** 31)))
        head = nn.Linear(client.cut_dim, len(classes))
    opt = torch.optim.Adam(list(client.parameters()) + list(head.parameters()), lr=lr)
    for _ in range(int(epochs)):
        perm = rng.permutation(len(y))
        for i in range(0, len(y), int(batch_size)):
            idx = torch.from_numpy(perm[i:i + int(batch_size)])
            loss = F.cross_entropy(head(client(x[idx])), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    with torch.no_grad():
        acc = float((head(client(x)).argmax(1) == y).float().mean())
    return {"pretrain_train_accuracy": acc, "pretrain_rows": int(keep.sum())}


class _Run:
    """State of one split run: the client vector, the server, the optional auxiliary model, the ledger."""

    def __init__(self, method, client, theta, n_classes, *, server_lr, momentum, seed):
        self.method, self.client, self.theta = method, client, theta.copy()
        self.d_c = theta.size
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seeding.generator(seed, "server").integers(2 ** 31)))
            self.server = nn.Sequential(nn.Linear(client.cut_dim, 64), nn.ReLU(), nn.Linear(64, n_classes))
            self.aux = nn.Linear(client.cut_dim, n_classes)
        self.opt = torch.optim.SGD(self.server.parameters(), lr=server_lr, momentum=momentum)
        self.aux_opt = None
        self.buf = None
        self.ledger = ByteLedger()

    def book(self, cat, n_bytes, t, K):
        for k in range(K):
            self.ledger.add(cat, int(n_bytes), t, k)

    def server_step(self, Z, Y):
        """Mean cross-entropy over the stacked rows, its gradient lambda w.r.t. Z, one server SGD step."""
        Zt = Z.detach().clone().requires_grad_(True)
        loss = F.cross_entropy(self.server(Zt), Y)
        params = list(self.server.parameters())
        grads = torch.autograd.grad(loss, [Zt] + params)
        for p, g in zip(params, grads[1:]):
            p.grad = g
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss.detach()), grads[0].detach()

    def accuracy(self, x_test, y_test):
        with torch.no_grad():
            out = self.server(module_apply(self.client, x_test, torch.from_numpy(self.theta)))
            return float((out.argmax(1) == y_test).double().mean())


def _align_aux(run: _Run, Z, Y, lam, steps, lr):
    """FSL-SAGE alignment (reconstructed): ``steps`` Adam steps on phi of ||d CE(a(Z; phi), Y)/dZ - lam||^2."""
    if run.aux_opt is None:
        run.aux_opt = torch.optim.Adam(run.aux.parameters(), lr=lr)
    Zt = Z.detach().clone().requires_grad_(True)
    for _ in range(int(steps)):
        (ga,) = torch.autograd.grad(F.cross_entropy(run.aux(Zt), Y), [Zt], create_graph=True)
        mis = torch.sum((ga - lam) ** 2)
        run.aux_opt.zero_grad(set_to_none=True)
        mis.backward(inputs=list(run.aux.parameters()))
        run.aux_opt.step()
    return float(mis.detach())


def _round(run: _Run, t, X, Y, K, B, *, P, mu, client_lr, momentum, rng, server_every, align_every, align_steps,
           align_lr):
    """One round of ``run.method`` on the stacked batch X (K B, 1, 8, 8), Y (K B,); returns the training loss
    at the round's starting point (the server's loss, or the auxiliary loss for FSL-SAGE off server rounds)."""
    cut = run.client.cut_dim
    theta = torch.from_numpy(run.theta)
    m = run.method
    if m in ("hosfl", "frozen"):
        with torch.no_grad():
            Z = module_apply(run.client, X, theta)
        loss, lam = run.server_step(Z, Y)
        run.book("cut.act_up", B * cut * FLOAT32_BYTES, t, K)
        run.book("cut.labels_up", B * INT64_BYTES, t, K)
        if m == "frozen":
            return loss
        seeds = [int(s) for s in rng.choice(H.SEED_BOUND, size=P, replace=False)]
        vbar = np.empty(P)
        with torch.no_grad():
            for p, s in enumerate(seeds):   # vbar_p = (1/K) sum_m <lambda_m, f_c(theta + mu u_p) - z_m>
                u = torch.from_numpy(perturbation_directions([s], run.d_c)[0]).float()
                # lam is the gradient of the mean over the K clients: lambda_m / K on client m's rows
                vbar[p] = float((lam.double() * (module_apply(run.client, X, theta + mu * u) - Z).double()).sum())
        run.theta, run.buf = H.client_update(run.theta, seeds, vbar, mu, lr=client_lr, momentum=momentum,
                                             buf=run.buf)
        run.book("cut.grad_down", B * cut * FLOAT32_BYTES, t, K)
        for cat, nb in (("weights.up", P * FLOAT32_BYTES), ("weights.down", P * FLOAT32_BYTES),
                        ("seeds.down", P * UINT32_BYTES)):
            run.book(cat, nb, t, K)
        return loss
    th = theta.clone().requires_grad_(True)
    Z = module_apply(run.client, X, th)
    if m == "sfl_fo":
        loss, lam = run.server_step(Z, Y)
        run.book("cut.act_up", B * cut * FLOAT32_BYTES, t, K)
        run.book("cut.labels_up", B * INT64_BYTES, t, K)
        run.book("cut.grad_down", B * cut * FLOAT32_BYTES, t, K)
        (g,) = torch.autograd.grad(Z, [th], grad_outputs=lam)
    elif m == "fsl_sage":
        Zd = Z.detach().clone().requires_grad_(True)
        aux_loss = F.cross_entropy(run.aux(Zd), Y)
        (lam_hat,) = torch.autograd.grad(aux_loss, [Zd])
        (g,) = torch.autograd.grad(Z, [th], grad_outputs=lam_hat)
        loss = float(aux_loss.detach())
        if t % server_every == 0:
            loss, lam = run.server_step(Z, Y)
            run.book("cut.act_up", B * cut * FLOAT32_BYTES, t, K)
            run.book("cut.labels_up", B * INT64_BYTES, t, K)
            if t % align_every == 0:
                _align_aux(run, Z, Y, lam, align_steps, align_lr)
                run.book("weights.down", sum(p.numel() for p in run.aux.parameters()) * FLOAT32_BYTES, t, K)
    else:
        raise ValueError(f"method must be one of {list(PRETRAINED_METHODS)}, got {m!r}")
    run.theta, run.buf = H.sgd_momentum_step(run.theta, g.numpy().astype(np.float64), client_lr, momentum, run.buf)
    run.book("weights.up", run.d_c * FLOAT32_BYTES, t, K)
    run.book("weights.down", run.d_c * FLOAT32_BYTES, t, K)
    return loss


def run_pretrained_split(method, client: CNNClient, theta0, *, rounds, n_clients=10, batch_size=32, P=5, mu=1e-3,
                         server_lr=0.05, client_lr=0.01, momentum=0.9, eval_every=10, server_every=2,
                         align_every=10, align_steps=5, align_lr=1e-2, seed=0, holdout=0.0) -> dict:
    """Fine-tune the split model from the client vector ``theta0`` on all Digits classes with ``method`` (IID
    partition, every client every round). ``align_every`` must be a multiple of ``server_every`` (FSL-SAGE
    aligns on the activations of a server round). ``holdout`` in [0, 1): the fraction of the training rows held
    out as a validation set (:func:`validation_split`, the same rows for every seed); the run then trains on the
    other rows and its ``test_accuracy`` is measured on the held-out rows, never on the test set (lr tuning).
    Returns the evaluation rounds, test accuracy, training loss, bytes per round by category, total bytes per
    client after each evaluation, final_acc and rounds_to_90."""
    if method not in PRETRAINED_METHODS:
        raise ValueError(f"method must be one of {list(PRETRAINED_METHODS)}, got {method!r}")
    for name, v in (("rounds", rounds), ("n_clients", n_clients), ("batch_size", batch_size), ("P", P),
                    ("eval_every", eval_every), ("server_every", server_every), ("align_every", align_every),
                    ("align_steps", align_steps)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if align_every % server_every:
        raise ValueError(f"align_every ({align_every}) must be a multiple of server_every ({server_every})")
    mu = H.check_mu(mu)
    check_rates(momentum=momentum, holdout=holdout, server_lr=server_lr, client_lr=client_lr, align_lr=align_lr)
    theta0 = np.asarray(theta0, dtype=np.float32)
    if theta0.shape != (sum(p.numel() for p in client.parameters()),):
        raise ValueError(f"theta0 must have shape ({sum(p.numel() for p in client.parameters())},), got {theta0.shape}")
    x_tr, y_tr, x_te, y_te = load_digits_split()
    n_classes = int(max(y_tr.max(), y_te.max())) + 1
    if float(holdout) > 0:
        x_tr, y_tr, x_te, y_te = validation_split(x_tr, y_tr, holdout)
    X_all, Y_all, X_te, Y_te = _images(x_tr), torch.from_numpy(y_tr), _images(x_te), torch.from_numpy(y_te)
    parts = partition_iid(y_tr.size, int(n_clients), seeding.generator(seed, "partition"))
    run = _Run(method, client, theta0, n_classes, server_lr=float(server_lr), momentum=float(momentum), seed=seed)
    batch_rng, rng = seeding.generator(seed, "batches"), seeding.generator(seed, "perturb")
    eval_rounds, acc, losses, bytes_at_eval = [], [], [], []
    K, B = int(n_clients), int(batch_size)
    for t in range(int(rounds)):
        idx = np.concatenate([draw_batch(parts[k], B, batch_rng) for k in range(K)])
        loss = _round(run, t, X_all[idx], Y_all[idx], K, B, P=int(P), mu=mu, client_lr=float(client_lr),
                      momentum=float(momentum), rng=rng, server_every=int(server_every),
                      align_every=int(align_every), align_steps=int(align_steps), align_lr=float(align_lr))
        if not (math.isfinite(loss) and np.all(np.isfinite(run.theta))):
            raise FloatingPointError(f"method {method!r}: non-finite loss or client parameters at round {t}")
        losses.append(loss)
        if (t + 1) % int(eval_every) == 0 or t + 1 == rounds:
            eval_rounds.append(t + 1)
            acc.append(run.accuracy(X_te, Y_te))
            bytes_at_eval.append(run.ledger.total() / K)
    per_round = {c: np.zeros(int(rounds), dtype=np.int64) for c in CATEGORIES}
    for row in run.ledger.rows():
        per_round[row["metric"][len("bytes."):]][row["step"]] += row["value"]
    return {"method": method, "round": np.array(eval_rounds), "test_accuracy": np.array(acc),
            "train_loss": np.array(losses), "bytes": per_round, "bytes_per_client_at_eval": np.array(bytes_at_eval),
            "final_acc": final_accuracy(acc), "rounds_to_90": rounds_to_target(eval_rounds, acc, 0.90),
            "client_dim": run.d_c, "n_clients": K, "client_vector": run.theta.copy()}


def check_rates(*, momentum, holdout, **lrs) -> None:
    """Validate the rates of a fine-tuning run: every learning rate in ``lrs`` finite and > 0, ``momentum`` and
    ``holdout`` in [0, 1). ValueError names the offending argument."""
    for name, v in lrs.items():
        if not (math.isfinite(float(v)) and float(v) > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if not 0 <= float(momentum) < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    if not 0 <= float(holdout) < 1:
        raise ValueError(f"holdout must lie in [0, 1), got {holdout!r}")


def holdout_rows(n: int, fraction, stream: str):
    """(fit rows, validation rows), sorted: ``round(fraction n)`` of ``n`` training rows (at least one, fewer than
    n) held out by a permutation of the fixed stream ``seeding.generator(0, stream, "validation")``, so the same rows
    whatever the run's seed."""
    n_val = int(round(float(fraction) * n))
    if not 0 < n_val < n:
        raise ValueError(f"holdout {fraction!r} of {n} training rows leaves no validation or no training row")
    perm = seeding.generator(0, stream, "validation").permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def validation_split(x_train, y_train, fraction):
    """(x_fit, y_fit, x_val, y_val): the rows of :func:`holdout_rows` on the stream "pretrained"."""
    x_train, y_train = np.asarray(x_train), np.asarray(y_train)
    fit, val = holdout_rows(y_train.size, fraction, "pretrained")
    return x_train[fit], y_train[fit], x_train[val], y_train[val]


def pretrained_client(*, channels, cut_dim, classes, epochs, lr, batch_size, seed):
    """A ``CNNClient`` pre-trained by :func:`pretrain_client` on the Digits training rows of ``classes``; returns
    (client, its parameter vector, pretraining facts)."""
    x_tr, y_tr, _, _ = load_digits_split()
    client = CNNClient(channels, cut_dim, seed=int(seeding.generator(seed, "client_init").integers(2 ** 31)))
    facts = pretrain_client(client, x_tr, y_tr, classes=classes, epochs=epochs, lr=lr, batch_size=batch_size,
                            seed=seed)
    for p in client.parameters():
        p.requires_grad_(False)
    return client, module_vector(client), facts
