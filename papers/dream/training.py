"""DREAM-R and the baselines on MultiDigits with a shared-trunk MLP (torch, float32, CPU).

Model: trunk Linear(96,100)-ReLU-Linear(100,50)-ReLU, one head Linear(50,10) per digit task (Linear(50,2)
for the parity task); torch's default init under ``torch.manual_seed(seed)``. All parameters live in one
flat float32 vector theta (layer order, each weight (out, in) row-major, then its bias), so model updates,
control variates and per-task gradients are plain vectors (a head unused by a task gets a zero gradient).
The round loop is the one of :mod:`papers.dream.algorithms`; local steps are SGD on minibatches, the
control-variate probe uses its own minibatch (``probe_batch`` samples, all local ones if fewer) at x^t. The rounds of
DREAM-R, DREAM-R without control variates, FMGDA and FedCMOO are :func:`multi_objective_round`, shared with the
ConflictDigits runner (:mod:`papers.dream.conflict`).
FedCMOO (without compression) probes the per-task gradients at x^t the same way, the server averages them over
the participating clients and solves the weight QP on that Jacobian, then the clients take K plain SGD steps
on the weighted loss.
"""
from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F

from shared import seeding
from shared.fed import FLOAT32_BYTES, ByteLedger, draw_batch, partition_dirichlet, partition_iid, sample_clients

from papers.dream.aggregation import correction_matrix, dream_weights
from papers.dream.algorithms import check_common_args
from papers.dream.data import make_multidigits

__all__ = ["MD_METHODS", "ROUND_METHODS", "SCALARISED_METHODS", "SharedTrunkMLP", "ControlVariates",
           "ScaffoldControls", "client_samplers", "multi_objective_round", "scalarised_local_models",
           "record_messages", "evaluate_tasks", "scalarised_step", "federated_training", "run_multidigits"]

MD_METHODS = ("dream", "dream_no_cv", "fmgda", "fedcmoo", "fedavg_ls", "scaffold_ls")


class SharedTrunkMLP:
    """Shared-trunk MLP on flat parameter vectors, with a hand-written backward pass batched over clients.

    ``grads(theta, X, Y, omega, sw)`` returns, for every row s (a client), the gradient of
    sum_m omega[s, m] sum_b sw[s, b] CE(z_m(X[s, b]; theta[s]), Y[s, b, m]), i.e. of the weighted
    minibatch loss with per-sample weights sw (1/B for a mean; 0 for padding). With
    dz_m = sw (softmax(z_m) - onehot(y_m)): grad W_m = dz_m^T h2, grad b_m = sum_b dz_m, and the trunk gets
    delta2 = (sum_m omega_m dz_m W_m) * 1[h2 > 0], delta1 = (delta2 W2) * 1[h1 > 0] (standard backprop;
    the unit tests compare it with autograd).
    """

    def __init__(self, n_tasks: int = 2, seed: int = 0):
        torch.manual_seed(seed)
        layers = [torch.nn.Linear(96, 100), torch.nn.Linear(100, 50)]
        layers += [torch.nn.Linear(50, 10) for _ in range(2)] + ([torch.nn.Linear(50, 2)] if n_tasks == 3 else [])
        self.shapes, chunks = [], []
        for layer in layers:
            for p in (layer.weight, layer.bias):
                self.shapes.append(tuple(p.shape))
                chunks.append(p.detach().reshape(-1))
        self.theta0 = torch.cat(chunks).to(torch.float32).clone()
        self.n_tasks = n_tasks
        self.n_classes = [10, 10, 2][:n_tasks]
        self.dim = int(self.theta0.numel())

    def unflatten(self, theta):
        """Per-layer tensors of a batch of flat vectors theta (S, dim): each (S, *shape)."""
        out, pos = [], 0
        S = theta.shape[0]
        for shape in self.shapes:
            n = int(np.prod(shape))
            out.append(theta[:, pos:pos + n].reshape(S, *shape))
            pos += n
        return out

    def logits(self, theta, X):
        """Per-task logits of a single model theta (dim,) on X (n, 96) (or batched: theta (S, dim), X (S, n, 96))."""
        single = theta.dim() == 1
        th = theta.unsqueeze(0) if single else theta
        Xb = X.unsqueeze(0) if single else X
        p = self.unflatten(th)
        h1 = torch.relu(torch.baddbmm(p[1].unsqueeze(1), Xb, p[0].transpose(1, 2)))
        h2 = torch.relu(torch.baddbmm(p[3].unsqueeze(1), h1, p[2].transpose(1, 2)))
        zs = [torch.baddbmm(p[5 + 2 * m].unsqueeze(1), h2, p[4 + 2 * m].transpose(1, 2)) for m in range(self.n_tasks)]
        return [z[0] for z in zs] if single else zs

    def task_losses(self, theta, X, Y):
        """Mean cross-entropy of each task for one model theta (dim,) (autograd-friendly reference)."""
        return [F.cross_entropy(z, Y[:, m]) for m, z in enumerate(self.logits(theta, X))]

    def grads(self, theta, X, Y, omega, sw) -> torch.Tensor:
        """Batched weighted-loss gradients (S, dim); theta (S, dim), X (S, B, 96), Y (S, B, M) int64,
        omega (S, M) float32, sw (S, B) per-sample weights."""
        p = self.unflatten(theta)
        h1 = torch.relu(torch.baddbmm(p[1].unsqueeze(1), X, p[0].transpose(1, 2)))
        h2 = torch.relu(torch.baddbmm(p[3].unsqueeze(1), h1, p[2].transpose(1, 2)))
        head_grads, dh2 = [], None
        for m in range(self.n_tasks):
            W, b = p[4 + 2 * m], p[5 + 2 * m]
            z = torch.baddbmm(b.unsqueeze(1), h2, W.transpose(1, 2))
            dz = torch.softmax(z, dim=2)
            dz.scatter_add_(2, Y[:, :, m:m + 1], -torch.ones_like(dz[:, :, :1]))
            dz = dz * (sw * omega[:, m:m + 1]).unsqueeze(2)
            head_grads += [torch.bmm(dz.transpose(1, 2), h2), dz.sum(dim=1)]
            contrib = torch.bmm(dz, W)
            dh2 = contrib if dh2 is None else dh2 + contrib
        d2 = dh2 * (h2 > 0)
        gW2, gb2 = torch.bmm(d2.transpose(1, 2), h1), d2.sum(dim=1)
        d1 = torch.bmm(d2, p[2]) * (h1 > 0)
        gW1, gb1 = torch.bmm(d1.transpose(1, 2), X), d1.sum(dim=1)
        S = theta.shape[0]
        return torch.cat([g.reshape(S, -1) for g in [gW1, gb1, gW2, gb2, *head_grads]], dim=1)


ROUND_METHODS = ("dream", "dream_no_cv", "fmgda", "fedcmoo")
SCALARISED_METHODS = ("fedavg_ls", "scaffold_ls")


class ControlVariates:
    """DREAM-R's control variates: ``client`` c_i (n_clients, M, D), one per-task gradient estimate per client, and
    ``server`` c = (1/N) sum_i c_i (M, D); all zero at the start."""

    def __init__(self, n_clients: int, n_tasks: int, dim: int, dtype=torch.float32):
        self.client = torch.zeros(n_clients, n_tasks, dim, dtype=dtype)
        self.server = torch.zeros(n_tasks, dim, dtype=dtype)


class ScaffoldControls:
    """SCAFFOLD's control variates on one scalarised objective: ``client`` c_i (n_clients, D) and ``server``
    c = (1/N) sum_i c_i (D,); all zero at the start."""

    def __init__(self, n_clients: int, dim: int):
        self.client = torch.zeros(n_clients, dim)
        self.server = torch.zeros(dim)


def client_samplers(parts, X, Y, client_rngs, batch_size: int, probe_batch: int):
    """(minibatches, probes) for the clients' local data ``parts`` (index arrays into X, Y), drawing from
    ``client_rngs[i]``: ``minibatches(clients)`` = (X, Y) of one minibatch of ``batch_size`` per client (S, B, ...);
    ``probes(clients)`` = (X, Y, sw) of one probe minibatch per client (``probe_batch`` samples, all local ones if
    fewer), padded to a common length with per-sample weights 1/n_i (0 on padding)."""
    def minibatches(clients):
        idx = np.stack([draw_batch(parts[i], batch_size, client_rngs[i]) for i in clients])
        return X[idx], Y[idx]

    def probes(clients):
        sel = [parts[i] if parts[i].size <= probe_batch else draw_batch(parts[i], probe_batch, client_rngs[i])
               for i in clients]
        P = max(s_.size for s_ in sel)
        idx = np.zeros((len(sel), P), dtype=np.int64)
        sw = torch.zeros(len(sel), P)
        for r, s_ in enumerate(sel):
            idx[r, :s_.size] = s_
            sw[r, :s_.size] = 1.0 / s_.size
        return X[idx], Y[idx], sw

    return minibatches, probes


def multi_objective_round(method: str, model, x, part, lam, cv: ControlVariates, *, minibatches, probes,
                          batch_size: int, local_steps: int, lr_local: float, lr_global: float, momentum: float,
                          cv_ema: float, rho: float, correction=None):
    """One round of DREAM-R (``dream``), DREAM-R without control variates (``dream_no_cv``), FMGDA / FSMGDA
    (``fmgda``) or FedCMOO (``fedcmoo``) for the participating clients ``part`` (S of them) at the global model x
    (D,), with the task weights ``lam`` of the previous round. ``model.grads(theta, X, Y, omega, sw)`` gives the
    gradients of the omega-weighted minibatch losses; ``minibatches`` / ``probes`` are :func:`client_samplers`.
    A = ``correction_matrix(., correction)`` (identity for None), N = number of clients (rows of ``cv.client``),
    eta_l, eta_g, beta, alpha, K = ``lr_local``, ``lr_global``, ``momentum``, ``cv_ema``, ``local_steps``.

    * dream / dream_no_cv: omega = A(c) lam; client i starts at y = x and for k = 0..K-1 takes
      g = grad sum_m omega_m f_{i,m}(y; B_k) + sum_m omega_m (c_m - c_{i,m}) (the correction is 0 for dream_no_cv),
      v = g (k = 0), v = beta v + (1 - beta) g (k > 0), y <- y - eta_l v; x+ = x + eta_g mean_i (y_i - x); then
      p_{i,m} = grad f_{i,m}(x; probe), c_{i,m} <- c_{i,m} + alpha (p_{i,m} - c_{i,m}), c <- c + (1/N) sum_i of
      those changes, and lam+ = argmin_{lam in simplex} ||A^T c^T lam||^2 + rho ||lam||^2 (``dream_weights``).
      The control variates are updated for both variants (dream_no_cv does not use them).
    * fmgda: per client and task m, K plain SGD steps on f_{i,m} alone from x (the same minibatch for all tasks
      of a client) to y_{i,m}; Delta_m = mean_i (x - y_{i,m}) / (K eta_l); (lam+, d) = ``dream_weights``(Delta);
      x+ = x - eta_g K eta_l d.
    * fedcmoo: J = mean_i [grad f_{i,m}(x; probe)]_m; lam+ = ``dream_weights``(J); omega = A(J) lam+; K plain SGD
      steps on sum_m omega_m f_{i,m} from x; x+ = x + eta_g mean_i (y_i - x).

    Order of the clients' random draws: dream: K minibatches then the probe; fmgda: K minibatches; fedcmoo: the
    probe then K minibatches. Vectors keep x's dtype (weights computed in float64 are rounded to it).
    Returns (x+, lam+, cats) with cats the (ledger category, floats per client) pairs of the round's messages;
    ``cv`` is updated in place (dream variants).
    """
    if method not in ROUND_METHODS:
        raise ValueError(f"method must be one of {list(ROUND_METHODS)}, got {method!r}")
    M, D = cv.server.shape
    n_clients = cv.client.shape[0]
    dt = x.dtype
    eta_l, eta_g, beta, alpha, K = float(lr_local), float(lr_global), float(momentum), float(cv_ema), int(local_steps)
    n_p = part.size
    sw_b = torch.full((n_p, batch_size), 1.0 / batch_size, dtype=dt)
    xs = x.unsqueeze(0).expand(n_p, D)
    eye = torch.eye(M, dtype=dt)
    if method in ("dream", "dream_no_cv"):
        c = cv.server
        omega = correction_matrix(c.double().numpy(), correction) @ lam
        om = torch.from_numpy(omega).to(dt).expand(n_p, M)
        corr = (torch.einsum("m,smd->sd", om[0], c.unsqueeze(0) - cv.client[part]) if method == "dream"
                else torch.zeros(n_p, D, dtype=dt))
        y, v = xs.clone(), None
        for k in range(K):
            Xb, Yb = minibatches(part)
            g = model.grads(y, Xb, Yb, om, sw_b) + corr
            v = g if k == 0 else beta * v + (1.0 - beta) * g
            y = y - eta_l * v
        x_new = x + eta_g * (y - xs).mean(dim=0)
        Xp, Yp, swp = probes(part)
        probe = torch.stack([model.grads(xs, Xp, Yp, eye[m].expand(n_p, M), swp) for m in range(M)], dim=1)
        dc = alpha * (probe - cv.client[part])
        cv.client[part] += dc
        cv.server = c + dc.sum(dim=0) / n_clients
        lam, _ = dream_weights(cv.server.double().numpy(), correction, rho)
        cats = (("model.down", D), ("weights.down", M), ("control.down", M * D), ("model.up", D),
                ("control.up", M * D))
    elif method == "fmgda":
        ys = x.unsqueeze(0).repeat(n_p * M, 1)
        om = eye.repeat(n_p, 1)
        sw_m = sw_b.repeat_interleave(M, dim=0)
        for _ in range(K):
            Xb, Yb = minibatches(part)
            ys = ys - eta_l * model.grads(ys, Xb.repeat_interleave(M, dim=0), Yb.repeat_interleave(M, dim=0),
                                          om, sw_m)
        delta = (x.unsqueeze(0) - ys.view(n_p, M, D)).mean(dim=0) / (K * eta_l)
        lam, dvec = dream_weights(delta.double().numpy(), correction, rho)
        x_new = x - eta_g * K * eta_l * torch.from_numpy(dvec).to(dt)
        cats = (("model.down", D), ("model.up", M * D))
    else:  # fedcmoo
        Xp, Yp, swp = probes(part)
        jac = torch.stack([model.grads(xs, Xp, Yp, eye[m].expand(n_p, M), swp) for m in range(M)],
                          dim=1).mean(dim=0).double().numpy()
        lam, _ = dream_weights(jac, correction, rho)
        omega = correction_matrix(jac, correction) @ lam
        om = torch.from_numpy(omega).to(dt).expand(n_p, M)
        y = xs.clone()
        for _ in range(K):
            Xb, Yb = minibatches(part)
            y = y - eta_l * model.grads(y, Xb, Yb, om, sw_b)
        x_new = x + eta_g * (y - xs).mean(dim=0)
        cats = (("model.down", D), ("weights.down", M), ("model.up", D), ("jacobian.up", M * D))
    return x_new, lam, cats


def scalarised_local_models(method: str, model, x, part, w, controls: ScaffoldControls, *, minibatches, probes,
                            batch_size: int, local_steps: int, lr_local: float):
    """Local training of FedAvg (``fedavg_ls``) or SCAFFOLD (``scaffold_ls``) on the scalarisation
    sum_m w_m f_{i,m} for the participating clients ``part`` at the global model x (D,).

    Client i starts at y = x and takes K = ``local_steps`` steps y <- y - eta_l (g + c - c_i) with g the gradient
    of the scalarised minibatch loss (the correction c - c_i is 0 for FedAvg). SCAFFOLD then probes
    c_i+ = grad sum_m w_m f_{i,m}(x; probe) (option I of Karimireddy et al., 2020) and sets
    c <- c + (1/N) sum_i (c_i+ - c_i), updating ``controls`` in place. Returns (xs, y, cats): x repeated per
    client (S, D), the local models (S, D) (the caller aggregates them) and the ledger categories of the round.
    Order of the clients' random draws: K minibatches, then the probe (SCAFFOLD).
    """
    if method not in SCALARISED_METHODS:
        raise ValueError(f"method must be one of {list(SCALARISED_METHODS)}, got {method!r}")
    n_p, D = part.size, x.numel()
    sw_b = torch.full((n_p, batch_size), 1.0 / batch_size)
    xs = x.unsqueeze(0).expand(n_p, D)
    om = w.expand(n_p, w.numel())
    corr = (controls.server.unsqueeze(0) - controls.client[part]) if method == "scaffold_ls" else torch.zeros(n_p, D)
    y = xs.clone()
    for _ in range(int(local_steps)):
        Xb, Yb = minibatches(part)
        y = y - float(lr_local) * (model.grads(y, Xb, Yb, om, sw_b) + corr)
    cats = (("model.down", D), ("model.up", D))
    if method == "scaffold_ls":
        Xp, Yp, swp = probes(part)
        probe = model.grads(xs, Xp, Yp, om, swp)
        controls.server = controls.server + (probe - controls.client[part]).sum(dim=0) / controls.client.shape[0]
        controls.client[part] = probe
        cats += (("control.down", D), ("control.up", D))
    return xs, y, cats


def record_messages(ledger: ByteLedger, part, cats, t: int, x_new, method: str) -> None:
    """Book the round's messages (``cats``: (category, floats per client)) for every participating client and
    stop on a non-finite model, naming the method and the round."""
    for i in part:
        for cat, n in cats:
            ledger.add(cat, n * FLOAT32_BYTES, t, int(i))
    if not bool(torch.isfinite(x_new).all()):
        raise FloatingPointError(f"method {method!r}: non-finite model at round {t}")


def evaluate_tasks(model, theta, X, Y):
    """Test accuracy (percent) and mean cross-entropy of each task."""
    with torch.no_grad():
        zs = model.logits(theta, X)
        acc = [float((z.argmax(dim=1) == Y[:, m]).float().mean()) * 100.0 for m, z in enumerate(zs)]
        loss = [float(F.cross_entropy(z, Y[:, m])) for m, z in enumerate(zs)]
    return acc, loss


def scalarised_step(x, xs, y, lr_global: float):
    """Server step of FedAvg / SCAFFOLD on a scalarisation: x + eta_g mean_i (y_i - x), the averaged local
    displacement (``xs``: x repeated per client, ``y``: the clients' local models after K steps, both (S, D), as
    :func:`scalarised_local_models` returns them)."""
    return x + lr_global * (y - xs).mean(dim=0)


def federated_training(one_round, model, x, lam, *, method: str, rounds: int, n_clients: int, S: int, server_rng,
                       ledger: ByteLedger, X_te, Y_te, eval_every: int, out: dict, at_eval=()) -> dict:
    """The server loop of every federated experiment: in round t, sample ``S`` of ``n_clients`` clients
    (``sample_clients`` with ``server_rng``), take ``one_round(x, part, lam) -> (x_new, lam, categories)``,
    record the round's messages in ``ledger`` and add its wall time. Every ``eval_every`` rounds and after the
    last, evaluate the tasks on (``X_te``, ``Y_te``) and append to ``out`` the round, per-task test accuracy and
    loss, the weights of the next round and, for each ``(key, fn)`` of ``at_eval``, ``fn(x)`` under ``key``.

    Returns ``out`` as arrays, with ``bytes_per_client_round`` {category: bytes / (rounds S)} and
    ``train_seconds`` (the rounds' wall time, evaluation excluded)."""
    train_s = 0.0
    for t in range(int(rounds)):
        start = time.perf_counter()
        part = sample_clients(n_clients, S, server_rng)
        x_new, lam, cats = one_round(x, part, lam)
        record_messages(ledger, part, cats, t, x_new, method)
        x = x_new
        train_s += time.perf_counter() - start
        if (t + 1) % eval_every == 0 or t + 1 == rounds:
            acc, loss = evaluate_tasks(model, x, X_te, Y_te)
            out["round"].append(t + 1)
            out["test_accuracy"].append(acc)
            out["test_loss"].append(loss)
            out["weights"].append(np.asarray(lam, dtype=float).copy())
            for key, fn in at_eval:
                out[key].append(fn(x))
    res = {k: np.asarray(v, dtype=float) for k, v in out.items()}
    res["round"] = res["round"].astype(int)
    n_rounds_clients = int(rounds) * S
    res["bytes_per_client_round"] = {cat: ledger.total(cat) / n_rounds_clients for cat in ledger.categories()}
    res["train_seconds"] = train_s
    return res


def run_multidigits(method: str, *, rounds: int, n_clients: int = 10, dirichlet_alpha: float = 0.1,
                    local_steps: int = 5, batch_size: int = 32, lr_local: float = 0.05, lr_global: float = 1.0,
                    momentum: float = 0.5, cv_ema: float = 1.0, rho: float = 0.0, correction=None,
                    clients_per_round=None, n_tasks: int = 2, eval_every: int = 10, n_train_pairs: int = 6000,
                    seed: int = 0, probe_batch: int = 128, preference=None) -> dict:
    """Train one method on MultiDigits split over ``n_clients`` by a Dirichlet(``dirichlet_alpha``) partition of
    the task-1 labels (``inf`` = IID split) and evaluate on the 2000 test pairs every ``eval_every`` rounds.

    Returns ``round`` (n_eval,), ``test_accuracy`` (n_eval, M) in percent, ``test_loss`` (n_eval, M),
    ``weights`` (n_eval, M) (the weights of the next round), ``bytes_up`` (n_eval,) cumulative float32 bytes
    sent by clients, ``bytes_per_client_round`` {category: bytes}, ``train_seconds`` (wall time of the
    training rounds, evaluation excluded). Momentum applies to the DREAM variants only.
    """
    if n_tasks not in (2, 3):
        raise ValueError(f"n_tasks must be 2 or 3, got {n_tasks!r}")
    S = check_common_args(method, MD_METHODS, rounds=rounds, local_steps=local_steps, lr_local=lr_local,
                          lr_global=lr_global, momentum=momentum, cv_ema=cv_ema, rho=rho,
                          clients_per_round=clients_per_round, n_clients=n_clients)
    if not (dirichlet_alpha > 0):
        raise ValueError(f"dirichlet_alpha must be > 0 (inf for an IID split), got {dirichlet_alpha!r}")
    for name, v in (("eval_every", eval_every), ("batch_size", batch_size), ("probe_batch", probe_batch),
                    ("n_train_pairs", n_train_pairs)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    M = n_tasks
    if correction is not None:
        correction_matrix(np.zeros((M, 1)), correction)   # shape / name check before any work
    w = np.full(M, 1.0 / M) if preference is None else np.asarray(preference, dtype=float)
    if w.shape != (M,) or np.any(w < 0) or abs(w.sum() - 1) > 1e-9:
        raise ValueError(f"preference must lie on the simplex of size {M}, got {preference}")

    X_tr, Y_tr, X_te, Y_te = make_multidigits(n_train_pairs)
    X_tr_t, Y_tr_t = torch.from_numpy(X_tr), torch.from_numpy(Y_tr[:, :M].copy())
    X_te_t, Y_te_t = torch.from_numpy(X_te), torch.from_numpy(Y_te[:, :M].copy())
    if np.isinf(dirichlet_alpha):
        parts = partition_iid(n_train_pairs, n_clients, seed)
    else:
        parts = partition_dirichlet(Y_tr[:, 0], n_clients, dirichlet_alpha, seed)
    client_rngs = seeding.spawn(seed, n_clients, "multidigits", "batches")
    server_rng = seeding.generator(seed, "multidigits", "clients")
    model = SharedTrunkMLP(M, seed)
    D = model.dim
    x = model.theta0.clone()
    eta_l, eta_g, beta, alpha, K = float(lr_local), float(lr_global), float(momentum), float(cv_ema), int(local_steps)
    lam = w.copy() if method in ("fedavg_ls", "scaffold_ls") else np.full(M, 1.0 / M)
    cv = ControlVariates(n_clients, M, D)
    controls = ScaffoldControls(n_clients, D)
    ledger = ByteLedger()
    minibatches, probes = client_samplers(parts, X_tr_t, Y_tr_t, client_rngs, batch_size, probe_batch)
    sampler_kw = dict(minibatches=minibatches, probes=probes, batch_size=batch_size, local_steps=K, lr_local=eta_l)
    round_kw = dict(**sampler_kw, lr_global=eta_g, momentum=beta, cv_ema=alpha, rho=rho, correction=correction)
    w_t = torch.from_numpy(w.astype(np.float32))

    def one_round(x, part, lam):
        if method in ROUND_METHODS:
            return multi_objective_round(method, model, x, part, lam, cv, **round_kw)
        xs, y, cats = scalarised_local_models(method, model, x, part, w_t, controls, **sampler_kw)
        return scalarised_step(x, xs, y, eta_g), lam, cats

    out = {"round": [], "test_accuracy": [], "test_loss": [], "weights": [], "bytes_up": []}
    return federated_training(one_round, model, x, lam, method=method, rounds=rounds, n_clients=n_clients, S=S,
                              server_rng=server_rng, ledger=ledger, X_te=X_te_t, Y_te=Y_te_t,
                              eval_every=eval_every, out=out,
                              at_eval=(("bytes_up", lambda _x: ledger.direction_total("up")),))
