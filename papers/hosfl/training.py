"""Split federated training on Digits: HO-SFL and the baselines, on the same model, partition and batches.

Methods (``run_split_training(method, ...)``):

* ``hosfl``: one shared client model. Per round the server draws P distinct seeds; client m sends
  z_m = f_c(x_m) (no grad) and y_m, gets lambda_m = d loss_m / d z_m, sends v_{m,p} =
  <lambda_m, f_c(x_m; theta_c + mu u_p) - z_m>; the server averages vbar_p and every client steps with
  ghat = (1/(P mu)) sum_p vbar_p u_p. The server takes one first-order step with the mean gradient.
* ``sfl_fo``: each client backpropagates lambda_m into its own copy; FedAvg of the copies every tau rounds
  (momentum buffers stay local).
* ``sfl_zo``: pure ZO on the whole model: u_p over (theta_c, theta_s), central differences of the loss,
  D_{m,p}; both blocks step with (1/P) sum_p Dbar_p u_p (lr = client_lr for both blocks).
* ``mu_splitfed``: per client, tau ZO server steps on a server copy then one ZO client step (central
  differences, one direction each, plain SGD, lr_s = lr_c = client_lr), then averaging (eta_g = 1).
* ``frozen``: the server as in HO-SFL, the client never updated.
* ``hosfl_decoupled`` (a negative control): HO-SFL whose client steps with the measured scalars vbar_p but
  along directions rebuilt from P freshly drawn seeds, not the ones the scalars were measured on. The step has
  the same size and no information about the gradient: a random walk of the client.
* ``hosfl_no_catchup`` (a negative control of the straggler claim): HO-SFL in which every client keeps its own
  copy of theta_c and an absent client's rounds are simply lost: it neither replays them nor downloads the
  model, and on return it measures its scalars at its stale copy and applies the broadcast steps from then
  on. Test accuracy is the mean over the N clients of the accuracy of each client's own copy with the shared
  server (with full participation every copy equals HO-SFL's shared model).
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F

from shared import seeding
from shared.fed import ByteLedger, INT64_BYTES, FLOAT32_BYTES, UINT32_BYTES, draw_batch, sample_clients
from shared.oracles.zeroth_order import estimate_from_directional, perturbation_directions

from papers.hosfl import hybrid as H
from papers.hosfl.data import DATASETS, PARTITIONS, load_dataset, make_partition
from papers.hosfl.model import SplitMLP

__all__ = ["METHODS", "STRAGGLER_METHODS", "INITS", "OPTIMIZERS", "ADAMW_METHODS", "DEFAULT_CLIENT_LR", "run_split_training", "final_accuracy", "rounds_to_target",
           "make_stepper", "Setup", "setup"]

METHODS = ("sfl_fo", "hosfl", "sfl_zo", "mu_splitfed", "frozen", "hosfl_decoupled", "hosfl_no_catchup")
STRAGGLER_METHODS = ("hosfl", "hosfl_no_catchup")   # methods that accept stragglers / straggler_fraction
INITS = ("random", "pca")
DEFAULT_CLIENT_LR = {"sfl_fo": 0.05, "hosfl": 0.005, "sfl_zo": 1e-3, "mu_splitfed": 1e-2, "frozen": 0.0,
                     "hosfl_decoupled": 0.005, "hosfl_no_catchup": 0.005}
OPTIMIZERS = H.OPTIMIZERS
ADAMW_METHODS = ("sfl_fo", "hosfl", "frozen", "hosfl_decoupled")   # methods with a first-order server (the ZO baselines use plain SGD)
CATEGORIES = ("cut.act_up", "cut.labels_up", "cut.grad_down", "cut.scalar_down", "weights.up", "weights.down",
              "seeds.down")


# ------------------------------------------------------------------------------------------- metrics
def final_accuracy(acc) -> float:
    """Mean test accuracy over the last 10% of evaluations (at least one)."""
    acc = np.asarray(acc, dtype=float)
    k = max(1, int(math.ceil(0.1 * acc.size)))
    return float(acc[-k:].mean())


def rounds_to_target(rounds, acc, target: float = 0.90):
    """First evaluated round r with accuracy >= target at r and at the next evaluation (None if never; the
    last evaluation counts alone)."""
    acc = np.asarray(acc, dtype=float)
    for i in range(acc.size):
        if acc[i] >= target and (i + 1 == acc.size or acc[i + 1] >= target):
            return int(rounds[i])
    return None


# ------------------------------------------------------------------------------------------- validation
def _check_int(value, name, lo=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    return int(value)


def _check_pos(value, name, allow_zero=False):
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return v


class Setup:
    """Model, data tensors and client partition of one run (shared by every method for one seed)."""

    def __init__(self, *, n_clients, partition, dirichlet_alpha, init, seed, dtype="float32", model_kwargs=None,
                 dataset="digits", dataset_kwargs=None):
        x_tr, y_tr, x_te, y_te = load_dataset(dataset, **(dataset_kwargs or {}))
        if n_clients > y_tr.size:
            raise ValueError(f"n_clients ({n_clients}) must not exceed the {y_tr.size} training samples")
        self.parts = make_partition(partition, y_tr, n_clients, seeding.generator(seed, "partition"),
                                    dirichlet_alpha=dirichlet_alpha)
        init_seed = int(seeding.generator(seed, "init").integers(2 ** 31))
        mk = {"n_classes": int(max(y_tr.max(), y_te.max())) + 1, **(model_kwargs or {})}
        self.model = SplitMLP(x_tr.shape[1], seed=init_seed, dtype=dtype, **mk)
        if init == "pca":
            self.model.init_client_pca(x_tr)
        self.dtype = self.model.torch_dtype
        self.x_train = torch.from_numpy(x_tr).to(self.dtype)
        self.y_train = torch.from_numpy(y_tr)
        self.x_test = torch.from_numpy(x_te).to(self.dtype)
        self.y_test = torch.from_numpy(y_te)


def setup(**kw) -> Setup:
    return Setup(**kw)


# ------------------------------------------------------------------------------------------- steppers
# A round's batches are stacked: X (K, B, in_dim), Y (K, B) for the K present clients (equal batch sizes),
# so that one batched pass does the work of K client passes with the same per-client results (each client's
# loss, multiplier and scalars depend only on its own rows).
def _client_losses(logits: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Per-client mean cross-entropy, shape (K,), from logits (K, B, n) and labels (K, B)."""
    K, B, n = logits.shape
    return F.cross_entropy(logits.reshape(K * B, n), Y.reshape(K * B), reduction="none").view(K, B).mean(1)


class _Base:
    def __init__(self, s: Setup, *, n_perturbations, mu, server_lr, client_lr, momentum, rng, ledger,
                 optimizer="sgd", weight_decay=0.01):
        self.s, self.m = s, s.model
        self.P, self.mu = n_perturbations, mu
        self.server_lr, self.client_lr, self.momentum = server_lr, client_lr, momentum
        self.optimizer, self.weight_decay = optimizer, weight_decay
        self.rng, self.ledger = rng, ledger
        self.theta_c = self.m.client_vector()
        self.d_c = self.theta_c.size
        self.buf = None
        self.client_time = 0.0
        self.catchup_bytes = 0

    def book(self, cat, n_bytes, t, clients):
        if self.ledger is not None and n_bytes:
            for k in clients:
                self.ledger.add(cat, int(n_bytes), t, int(k))

    def book_cut(self, t, clients, B, n_act=1, grad=True):
        self.book("cut.act_up", n_act * B * self.m.cut_dim * FLOAT32_BYTES, t, clients)
        self.book("cut.labels_up", B * INT64_BYTES, t, clients)
        if grad:
            self.book("cut.grad_down", B * self.m.cut_dim * FLOAT32_BYTES, t, clients)

    def draw_seeds(self, n):
        return [int(s) for s in self.rng.choice(H.SEED_BOUND, size=n, replace=False)]

    def eval_client_vector(self):
        return self.theta_c

    def accuracy(self) -> float:
        with torch.no_grad():
            th = torch.from_numpy(self.eval_client_vector())
            out = self.m.server(H.client_apply(self.m, self.s.x_test, th))
            return float((out.argmax(1) == self.s.y_test).to(torch.float64).mean())


class _ServerFO(_Base):
    """First-order server: one SGD (momentum) step a round on the mean of the clients' gradients."""

    def __init__(self, s, **kw):
        super().__init__(s, **kw)
        if self.optimizer == "adamw":
            self.opt = torch.optim.AdamW(self.m.server.parameters(), lr=self.server_lr, betas=H.ADAMW_BETAS,
                                         eps=H.ADAMW_EPS, weight_decay=self.weight_decay)
        else:
            self.opt = torch.optim.SGD(self.m.server.parameters(), lr=self.server_lr, momentum=self.momentum)

    def server_pass(self, Z, Y):
        """Per-client losses (K,), multipliers lambda_m = d loss_m / d z_m (K, B, cut) and the server step
        with the mean over clients of grad_{theta_s} loss_m."""
        Zt = Z.detach().clone().requires_grad_(True)
        losses = _client_losses(self.m.server(Zt), Y)
        params = list(self.m.server.parameters())
        grads = torch.autograd.grad(losses.sum(), [Zt] + params)
        K = Z.shape[0]
        for p, g in zip(params, grads[1:]):
            p.grad = g / K
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return losses.detach(), grads[0].detach()

    def client_forward(self, X, theta):
        """Z = f_c(X; theta) under no_grad (the client's cut activations), timed as client time."""
        tc = time.perf_counter()
        with torch.no_grad():
            Z = H.client_apply(self.m, X, theta)
        self.client_time += time.perf_counter() - tc
        return Z

    def book_hybrid_round(self, t, clients, B):
        """The bytes of one HO-SFL round per present client: cut activations and labels up, lambda down, P
        scalars up, P scalars down and P seeds down."""
        self.book_cut(t, clients, B)
        self.book("weights.up", self.P * FLOAT32_BYTES, t, clients)
        self.book("weights.down", self.P * FLOAT32_BYTES, t, clients)
        self.book("seeds.down", self.P * UINT32_BYTES, t, clients)

    def projected_scalars(self, X, theta, Z, lam, seeds):
        """v[k, p] = <lambda_k, f_c(x_k; theta_k + mu u_p) - z_k> for the clients' inputs X (K, B, in), their
        client parameters ``theta`` (d_c,) or (K, d_c), outputs Z = f_c(X; theta) and multipliers ``lam``, with
        u_p rebuilt from ``seeds`` (Sec. 3: forward passes only, under no_grad). Timed as client time."""
        tc = time.perf_counter()
        u = torch.from_numpy(perturbation_directions(seeds, self.d_c)).to(self.s.dtype)
        v = np.empty((X.shape[0], len(seeds)))
        with torch.no_grad():
            for p in range(len(seeds)):
                Zp = H.client_apply(self.m, X, theta + self.mu * u[p])
                v[:, p] = (lam * (Zp - Z)).to(torch.float64).sum(dim=(1, 2)).numpy()
        self.client_time += time.perf_counter() - tc
        return v


class _HOSFL(_ServerFO):
    def __init__(self, s, *, update_client=True, track_alignment=True, decoupled=False, **kw):
        super().__init__(s, **kw)
        self.update_client = update_client
        self.decoupled = bool(decoupled)
        self.track_alignment = track_alignment and update_client and not self.decoupled
        self.history, self.alignment = [], []

    def step(self, t, clients, X, Y):
        B = X.shape[1]
        theta_t = torch.from_numpy(self.theta_c)
        Z = self.client_forward(X, theta_t)
        losses, lam = self.server_pass(Z, Y)
        if not self.update_client:
            self.book_cut(t, clients, B, grad=False)
            return float(losses.mean())
        seeds = self.draw_seeds(self.P)
        v = self.projected_scalars(X, theta_t, Z, lam, seeds)
        vbar = v.mean(axis=0)
        if self.track_alignment:
            self.alignment.append(self._alignment(X, lam, seeds, vbar))
        if self.decoupled:   # control: the scalars no longer belong to the directions the client steps along
            seeds = self.draw_seeds(self.P)
        tc = time.perf_counter()
        self.theta_c, self.buf = H.client_update(self.theta_c, seeds, vbar, self.mu, lr=self.client_lr,
                                                 momentum=self.momentum, buf=self.buf, optimizer=self.optimizer,
                                                 weight_decay=self.weight_decay)
        self.client_time += time.perf_counter() - tc
        self.history.append((seeds, vbar, self.mu))
        self.book_hybrid_round(t, clients, B)
        self.last_scalars = v
        return float(losses.mean())

    def _alignment(self, X, lam, seeds, vbar):
        """cos(ghat, g) with g = (1/K) sum_m J_m^T lambda_m from a separate autograd pass on a detached copy."""
        th = torch.from_numpy(self.theta_c.copy()).requires_grad_(True)
        (g,) = torch.autograd.grad(torch.sum(lam * H.client_apply(self.m, X, th)) / X.shape[0], [th])
        g = g.to(torch.float64).numpy()
        ghat = H.client_gradient_estimate(vbar, seeds, self.mu, self.d_c)
        return float(ghat @ g / (np.linalg.norm(ghat) * np.linalg.norm(g) + 1e-300))


class _HOSFLNoCatchup(_ServerFO):
    """HO-SFL with one copy of theta_c per client and no catch-up (a negative control): a present client
    measures its scalars at its own copy, every present client steps its copy (and its own optimizer state)
    with the broadcast (seeds, vbar) through :func:`papers.hosfl.hybrid.client_update`, an absent client's
    copy and state stay as they were. With every client present in every round the copies stay equal to
    HO-SFL's shared model."""

    def __init__(self, s, *, n_clients=10, **kw):
        super().__init__(s, **kw)
        self.copies = np.tile(self.theta_c, (n_clients, 1))
        self.bufs = [None] * n_clients
        self.history, self.alignment = [], []

    def step(self, t, clients, X, Y):
        B = X.shape[1]
        clients = [int(k) for k in clients]
        th = torch.from_numpy(self.copies[clients])
        Z = self.client_forward(X, th)
        losses, lam = self.server_pass(Z, Y)
        seeds = self.draw_seeds(self.P)
        vbar = self.projected_scalars(X, th, Z, lam, seeds).mean(axis=0)
        tc = time.perf_counter()
        for k in clients:
            self.copies[k], self.bufs[k] = H.client_update(self.copies[k], seeds, vbar, self.mu, lr=self.client_lr,
                                                           momentum=self.momentum, buf=self.bufs[k],
                                                           optimizer=self.optimizer,
                                                           weight_decay=self.weight_decay)
        self.client_time += time.perf_counter() - tc
        self.theta_c = self.copies.mean(axis=0).astype(self.copies.dtype)
        self.history.append((seeds, vbar, self.mu))
        self.book_hybrid_round(t, clients, B)
        return float(losses.mean())

    def accuracy(self) -> float:
        """Mean over the clients of the test accuracy of each client's own copy with the shared server."""
        with torch.no_grad():
            N = self.copies.shape[0]
            x = self.s.x_test.unsqueeze(0).expand(N, *self.s.x_test.shape)
            Z = H.client_apply(self.m, x, torch.from_numpy(self.copies))
            out = self.m.server(Z.reshape(-1, Z.shape[-1])).view(N, -1, self.m.n_classes)
            return float((out.argmax(-1) == self.s.y_test.unsqueeze(0)).to(torch.float64).mean())


class _SFLFO(_ServerFO):
    def __init__(self, s, *, tau=1, n_clients=10, **kw):
        super().__init__(s, **kw)
        self.tau = tau
        self.copies = np.tile(self.theta_c, (n_clients, 1))
        self.bufs = None

    def step(self, t, clients, X, Y):
        m, B = self.m, X.shape[1]
        clients = np.asarray(clients)
        tc = time.perf_counter()
        th = torch.from_numpy(self.copies[clients]).requires_grad_(True)
        Z = H.client_apply(m, X, th)
        self.client_time += time.perf_counter() - tc
        losses, lam = self.server_pass(Z, Y)
        tc = time.perf_counter()
        (gc,) = torch.autograd.grad(Z, [th], grad_outputs=lam)
        if self.optimizer == "adamw":   # every client takes part in every round: one shared step count
            if len(clients) != len(self.copies):
                raise ValueError("sfl_fo with AdamW needs every client in every round")
            new, self.bufs = H.adamw_step(self.copies, gc.numpy(), self.client_lr, self.bufs,
                                          weight_decay=self.weight_decay)
            self.copies[:] = new
            bufs = None
        else:
            bufs = None if self.bufs is None else self.bufs[clients]
            new, bufs = H.sgd_momentum_step(self.copies[clients], gc.numpy(), self.client_lr, self.momentum, bufs)
            self.copies[clients] = new
        if bufs is not None:
            if self.bufs is None:
                self.bufs = np.zeros_like(self.copies)
            self.bufs[clients] = bufs
        self.client_time += time.perf_counter() - tc
        self.book_cut(t, clients, B)
        if (t + 1) % self.tau == 0:
            self.copies[:] = self.copies.mean(axis=0).astype(self.copies.dtype)
            self.book("weights.up", self.d_c * FLOAT32_BYTES, t, clients)
            self.book("weights.down", self.d_c * FLOAT32_BYTES, t, clients)
        self.theta_c = self.copies.mean(axis=0).astype(self.copies.dtype)
        return float(losses.mean())


class _SFLZO(_Base):
    def __init__(self, s, **kw):
        super().__init__(s, **kw)
        self.theta_s = self.m.server_vector()

    def step(self, t, clients, X, Y):
        m, mu, P, B = self.m, self.mu, self.P, X.shape[1]
        seeds = self.draw_seeds(P)
        U = perturbation_directions(seeds, self.d_c + self.theta_s.size)
        Ut = torch.from_numpy(U).to(self.s.dtype)
        thc, ths = torch.from_numpy(self.theta_c), torch.from_numpy(self.theta_s)
        D = np.empty((len(clients), P))
        with torch.no_grad():
            losses = _client_losses(H.server_apply(m, H.client_apply(m, X, thc), ths), Y)
            for p in range(P):
                uc, us = Ut[p, :self.d_c], Ut[p, self.d_c:]
                tc = time.perf_counter()
                zp = H.client_apply(m, X, thc + mu * uc)
                zm = H.client_apply(m, X, thc - mu * uc)
                self.client_time += time.perf_counter() - tc
                lp = _client_losses(H.server_apply(m, zp, ths + mu * us), Y)
                lm = _client_losses(H.server_apply(m, zm, ths - mu * us), Y)
                D[:, p] = ((lp.to(torch.float64) - lm.to(torch.float64)) / (2 * mu)).numpy()
        g = estimate_from_directional(D.mean(0), U)
        theta = np.concatenate([self.theta_c, self.theta_s])
        theta, self.buf = H.sgd_momentum_step(theta, g, self.client_lr, self.momentum, self.buf)
        self.theta_c, self.theta_s = theta[:self.d_c].copy(), theta[self.d_c:].copy()
        _check_params(self, "sfl_zo", t)
        self.m.set_server_vector(self.theta_s)
        self.book_cut(t, clients, B, n_act=2 * P, grad=False)
        self.book("weights.down", P * FLOAT32_BYTES, t, clients)
        self.book("seeds.down", P * UINT32_BYTES, t, clients)
        return float(losses.mean())


class _MUSplitFed(_Base):
    def __init__(self, s, *, tau=5, **kw):
        super().__init__(s, **kw)
        self.theta_s = self.m.server_vector()
        self.tau = tau

    def step(self, t, clients, X, Y):
        m, mu, lr, B = self.m, self.mu, self.client_lr, X.shape[1]
        K, d_s = len(clients), self.theta_s.size
        seeds = self.draw_seeds(K * (self.tau + 1))
        dt = self.s.dtype
        us = torch.from_numpy(perturbation_directions(seeds[:K * self.tau], d_s)).to(dt).view(self.tau, K, d_s)
        uc = torch.from_numpy(perturbation_directions(seeds[K * self.tau:], self.d_c)).to(dt)   # (K, d_c)
        thc0, ths0 = torch.from_numpy(self.theta_c), torch.from_numpy(self.theta_s)
        with torch.no_grad():
            tc = time.perf_counter()
            h = H.client_apply(m, X, thc0)
            self.client_time += time.perf_counter() - tc
            ths = ths0.expand(K, d_s).clone()                   # one server copy per client
            losses = _client_losses(H.server_apply(m, h, ths0), Y)
            for j in range(self.tau):
                u = us[j]
                d = (_client_losses(H.server_apply(m, h, ths + mu * u), Y)
                     - _client_losses(H.server_apply(m, h, ths - mu * u), Y)) / (2 * mu)
                ths = ths - lr * d[:, None] * u
            tc = time.perf_counter()
            hp, hm = H.client_apply(m, X, thc0 + mu * uc), H.client_apply(m, X, thc0 - mu * uc)
            self.client_time += time.perf_counter() - tc
            d = (_client_losses(H.server_apply(m, hp, ths), Y) - _client_losses(H.server_apply(m, hm, ths), Y)) / (2 * mu)
            tc = time.perf_counter()
            thc = thc0 - lr * d[:, None] * uc                  # (K, d_c) client copies after their ZO step
            self.client_time += time.perf_counter() - tc
            self.theta_c = (thc0 + (thc - thc0).mean(0)).numpy().copy()
            self.theta_s = (ths0 + (ths - ths0).mean(0)).numpy().copy()
        _check_params(self, "mu_splitfed", t)
        self.m.set_server_vector(self.theta_s)
        self.book_cut(t, clients, B, n_act=3, grad=False)
        self.book("cut.scalar_down", FLOAT32_BYTES, t, clients)
        self.book("seeds.down", UINT32_BYTES, t, clients)
        self.book("weights.up", self.d_c * FLOAT32_BYTES, t, clients)
        self.book("weights.down", self.d_c * FLOAT32_BYTES, t, clients)
        return float(losses.mean())


def _check_params(stepper, method, t):
    if not (np.all(np.isfinite(stepper.theta_c)) and np.all(np.isfinite(stepper.theta_s))):
        raise FloatingPointError(f"method {method!r}: non-finite parameters after round {t}")


def make_stepper(method, s: Setup, *, n_perturbations=5, mu=1e-3, server_lr=0.05, client_lr=None, momentum=0.9,
                 tau=1, mu_splitfed_tau=5, n_clients=10, rng=None, ledger=None, track_alignment=True,
                 optimizer="sgd", weight_decay=0.01):
    """The per-round update object of ``method`` on the setup ``s`` (used by the training loop and by the
    performance timing). ``step(t, clients, X, Y)`` runs round t on the stacked batches X (K, B, in_dim),
    Y (K, B) of the K present ``clients`` and returns the
    mean training loss at the round's starting point."""
    lr = DEFAULT_CLIENT_LR[method] if client_lr is None else client_lr
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {list(OPTIMIZERS)}, got {optimizer!r}")
    if optimizer == "adamw" and method not in ADAMW_METHODS:
        raise ValueError(f"optimizer 'adamw' is supported for methods {list(ADAMW_METHODS)}, got method {method!r}")
    kw = dict(n_perturbations=n_perturbations, mu=mu, server_lr=server_lr, client_lr=lr, momentum=momentum,
              rng=rng, ledger=ledger, optimizer=optimizer, weight_decay=weight_decay)
    if method == "hosfl":
        return _HOSFL(s, track_alignment=track_alignment, **kw)
    if method == "frozen":
        return _HOSFL(s, update_client=False, **kw)
    if method == "hosfl_decoupled":
        return _HOSFL(s, decoupled=True, track_alignment=False, **kw)
    if method == "hosfl_no_catchup":
        return _HOSFLNoCatchup(s, n_clients=n_clients, **kw)
    if method == "sfl_fo":
        return _SFLFO(s, tau=tau, n_clients=n_clients, **kw)
    if method == "sfl_zo":
        return _SFLZO(s, **kw)
    if method == "mu_splitfed":
        return _MUSplitFed(s, tau=mu_splitfed_tau, **kw)
    raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")


# ------------------------------------------------------------------------------------------- training loop
def run_split_training(method, *, rounds, n_clients=10, partition="iid", dirichlet_alpha=0.1, batch_size=32,
                       init="random", n_perturbations=5, mu=1e-3, server_lr=0.05, client_lr=None, momentum=0.9,
                       tau=1, mu_splitfed_tau=5, eval_every=10, stragglers=None, seed=0, dtype="float32",
                       model_kwargs=None, optimizer="sgd", weight_decay=0.01, straggler_fraction=0.0,
                       dataset="digits", dataset_kwargs=None, track_alignment=True) -> dict:
    """Train the split MLP on Digits with ``method`` for ``rounds`` rounds (full participation).

    Each round every present client draws ``batch_size`` of its indices (``shared.fed.draw_batch``); batches,
    partition, model init and perturbation seeds come from separate streams of ``seed``, so every method sees
    the same problem. ``client_lr=None`` takes ``DEFAULT_CLIENT_LR[method]`` (0.05 sfl_fo, 0.005 hosfl).
    ``stragglers`` ({client: (first_absent_round, last_absent_round)}, hosfl and hosfl_no_catchup): the client
    skips those rounds, then (hosfl) replays the logged (seeds, vbar, mu) with
    :func:`papers.hosfl.hybrid.replay_client` and the run records max |replayed - live| as ``replay_error``. ``model_kwargs`` (e.g. ``cut_dim``, ``hidden_dim``)
    go to :class:`papers.hosfl.model.SplitMLP` (width sweeps). ``optimizer`` "sgd" (momentum) or "adamw"
    (torch's AdamW with ``weight_decay`` on both sides; methods sfl_fo, hosfl, frozen). ``straggler_fraction``
    (hosfl and hosfl_no_catchup): each round round(fraction N) clients, drawn from their own stream, are
    absent; under hosfl a client replays the rounds it missed when it is next present (and at the end), and
    the catch-up download (P seeds and P scalars per missed round) is booked in ``seeds.down`` and
    ``weights.down``; under hosfl_no_catchup the missed rounds are lost (``client_rounds_missed`` counts them).
    ``dataset`` "digits" or "synthetic" (``make_classification``, options in ``dataset_kwargs``).

    Returns a dict: ``round`` and ``test_accuracy`` (every ``eval_every`` rounds), ``train_loss`` (per round),
    ``bytes`` (category -> per-round totals), ``final_acc``, ``rounds_to_90``, ``client_vector`` (final),
    and for hosfl ``alignment`` (cos(ghat, g) per round) and ``history``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {list(PARTITIONS)}, got {partition!r}")
    if init not in INITS:
        raise ValueError(f"init must be one of {list(INITS)}, got {init!r}")
    rounds = _check_int(rounds, "rounds")
    n_clients = _check_int(n_clients, "n_clients")
    batch_size = _check_int(batch_size, "batch_size")
    n_perturbations = _check_int(n_perturbations, "n_perturbations (P)")
    tau = _check_int(tau, "tau")
    mu_splitfed_tau = _check_int(mu_splitfed_tau, "mu_splitfed_tau")
    eval_every = _check_int(eval_every, "eval_every")
    mu = H.check_mu(mu)
    dirichlet_alpha = _check_pos(dirichlet_alpha, "dirichlet_alpha")
    server_lr = _check_pos(server_lr, "server_lr")
    if client_lr is not None:
        client_lr = _check_pos(client_lr, "client_lr")
    if not 0 <= float(momentum) < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    momentum = float(momentum)
    stragglers = dict(stragglers or {})
    if stragglers and method not in STRAGGLER_METHODS:
        raise ValueError(f"stragglers are only supported for methods {list(STRAGGLER_METHODS)}, got method {method!r}")
    straggler_fraction = float(straggler_fraction)
    if not 0 <= straggler_fraction < 1:
        raise ValueError(f"straggler_fraction must lie in [0, 1), got {straggler_fraction!r}")
    if straggler_fraction > 0 and method not in STRAGGLER_METHODS:
        raise ValueError(f"straggler_fraction is only supported for methods {list(STRAGGLER_METHODS)}, "
                         f"got method {method!r}")
    if stragglers and straggler_fraction > 0:
        raise ValueError("give either stragglers or straggler_fraction, not both")
    n_absent = int(round(straggler_fraction * n_clients))
    if straggler_fraction > 0 and n_absent >= n_clients:
        raise ValueError(f"straggler_fraction {straggler_fraction} leaves no client present among {n_clients}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {list(OPTIMIZERS)}, got {optimizer!r}")
    weight_decay = _check_pos(weight_decay, "weight_decay", allow_zero=True)
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {list(DATASETS)}, got {dataset!r}")
    for c, span in stragglers.items():
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c < n_clients:
            raise ValueError(f"stragglers names client {c!r}, outside 0..{n_clients - 1}")
        if len(span) != 2 or not 0 <= span[0] <= span[1]:
            raise ValueError(f"stragglers[{c}] must be (first_absent_round, last_absent_round), got {span!r}")

    s = Setup(n_clients=n_clients, partition=partition, dirichlet_alpha=dirichlet_alpha, init=init, seed=seed,
              dtype=dtype, model_kwargs=model_kwargs, dataset=dataset, dataset_kwargs=dataset_kwargs)
    ledger = ByteLedger()
    stepper = make_stepper(method, s, n_perturbations=n_perturbations, mu=mu, server_lr=server_lr,
                           client_lr=client_lr, momentum=momentum, tau=tau, mu_splitfed_tau=mu_splitfed_tau,
                           n_clients=n_clients, rng=seeding.generator(seed, "perturb"), ledger=ledger,
                           track_alignment=track_alignment, optimizer=optimizer, weight_decay=weight_decay)
    batch_rng = seeding.generator(seed, "batches")
    absent_rng = seeding.generator(seed, "stragglers") if n_absent else None
    eval_rounds, acc, losses = [], [], []
    held, replay_errors, n_rejoins, n_replayed = {}, {}, [0], [0]
    catch_up = method == "hosfl"   # hosfl_no_catchup: an absent client's rounds are lost, nothing is replayed
    n_missed = 0
    for t in range(rounds):
        if n_absent:
            absent = set(int(k) for k in sample_clients(n_clients, n_absent, absent_rng))
        else:
            absent = {k for k, span in stragglers.items() if span[0] <= t <= span[1]}
        present = []
        for k in range(n_clients):
            if k in absent:
                n_missed += 1
                if not catch_up:
                    continue
                if k not in held:  # leaves holding the synchronised state of the start of round t
                    held[k] = (stepper.theta_c.copy(), _copy_state(stepper.buf), t)
                continue
            if k in held:
                _rejoin(stepper, held.pop(k), k, replay_errors, t, n_rejoins, n_replayed)
            present.append(k)
        if not present:
            raise ValueError(f"round {t} has no participating client")
        idx = np.stack([draw_batch(s.parts[k], batch_size, batch_rng) for k in present])
        loss = stepper.step(t, present, s.x_train[idx], s.y_train[idx])
        if not math.isfinite(loss):
            raise FloatingPointError(f"method {method!r}: non-finite training loss {loss} at round {t}")
        losses.append(loss)
        if (t + 1) % eval_every == 0 or t + 1 == rounds:
            eval_rounds.append(t + 1)
            acc.append(stepper.accuracy())
    for k in list(held):
        _rejoin(stepper, held.pop(k), k, replay_errors, rounds - 1, n_rejoins, n_replayed)
    per_round = {c: np.zeros(rounds, dtype=np.int64) for c in CATEGORIES}
    for row in ledger.rows():
        per_round[row["metric"][len("bytes."):]][row["step"]] += row["value"]
    out = {"method": method, "round": np.array(eval_rounds), "test_accuracy": np.array(acc),
           "train_loss": np.array(losses), "bytes": per_round, "ledger": ledger,
           "final_acc": final_accuracy(acc), "rounds_to_90": rounds_to_target(eval_rounds, acc, 0.90),
           "client_vector": stepper.eval_client_vector().copy(), "client_dim": stepper.d_c,
           "n_clients": n_clients, "client_time": stepper.client_time}
    if method == "hosfl":
        out["alignment"] = np.array(stepper.alignment)
        out["history"] = stepper.history
    if method == "hosfl_no_catchup":
        out["history"] = stepper.history
        out["client_vectors"] = stepper.copies.copy()
        out["client_rounds_missed"] = n_missed
    if (stragglers or n_absent) and catch_up:
        out["replay_error"] = max(replay_errors.values()) if replay_errors else 0.0
        out["replay_errors"] = replay_errors
        out["n_rejoins"], out["rounds_replayed"] = n_rejoins[0], n_replayed[0]
        out["catchup_bytes"] = int(stepper.catchup_bytes)
    return out


def _copy_state(buf):
    if buf is None:
        return None
    if isinstance(buf, tuple):   # AdamW (step, exp_avg, exp_avg_sq)
        return (buf[0], buf[1].copy(), buf[2].copy())
    return buf.copy()


def _rejoin(stepper, state, k, errors, t, n_rejoins, n_replayed):
    """Client k, absent since round ``first``, replays the logged rounds first..t-1 (P seeds and P scalars
    each, booked at round t) and the gap to the live client vector is recorded (max over its rejoins)."""
    theta, buf, first = state
    missed = stepper.history[first:]
    replayed, _ = H.replay_client(theta, missed, lr=stepper.client_lr, momentum=stepper.momentum,
                                  momentum_buffer=buf, optimizer=stepper.optimizer,
                                  weight_decay=stepper.weight_decay)
    err = float(np.max(np.abs(replayed.astype(np.float64) - stepper.theta_c.astype(np.float64))))
    errors[k] = max(err, errors.get(k, 0.0))
    n_rejoins[0] += 1
    n_replayed[0] += len(missed)
    stepper.catchup_bytes += len(missed) * stepper.P * (UINT32_BYTES + FLOAT32_BYTES)
    stepper.book("seeds.down", len(missed) * stepper.P * UINT32_BYTES, t, [k])
    stepper.book("weights.down", len(missed) * stepper.P * FLOAT32_BYTES, t, [k])
