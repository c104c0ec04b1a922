"""ConflictDigits: a two-task digit set whose tasks compete for a narrow shared trunk, the FedMGDA+ baseline, and
the multi-task metrics (Delta-m%, hypervolume, gradient conflict). Used by the experiment ``conflict_digits``.

Data (``make_conflict_digits``): the pair draw of MultiDigits, :func:`papers.dream.data.draw_pairs` (same pools and
pairs for the same seed), composed on an 8 x (8 + shift) canvas: image a at columns 0..7, image b at columns shift..shift+7,
the maximum where they overlap. shift = 4 is MultiDigits exactly (a unit test); a smaller shift overlaps the two
digits more, so the trunk has to separate them. Tasks: digit of a, digit of b.

Model (``TrunkMLP``): trunk Linear(in, h1)-ReLU-Linear(h1, h2)-ReLU and one Linear(h2, 10) head per task; a small
h2 (the bottleneck) makes the tasks compete for the shared representation. Flat float32 parameter vector, the
backward pass hand-written and batched over clients (as ``training.SharedTrunkMLP``, which is the case in = 96,
h1 = 100, h2 = 50; a unit test compares with autograd).

Runner (``run_conflict``): the rounds of :func:`papers.dream.training.run_multidigits` for DREAM-R and the
baselines (DREAM-R, its no-control-variate variant, FSMGDA and FedCMOO through the same function,
:func:`papers.dream.training.multi_objective_round`), plus

* ``fsmgda``: FSMGDA (Yang et al., NeurIPS 2023, Algorithm 1 with stochastic local gradients): per-task local SGD
  trajectories from x^t, the server averages the per-task updates over clients, solves the min-norm QP on them
  and steps along the min-norm direction (``multi_objective_round``'s ``fmgda`` branch on minibatches);
* ``fedmgda_plus``: FedMGDA+ (Hu, Ma, Li, Chen, Xu, IEEE TNSE 2022, Algorithm 1). The objectives are the
  clients: client i runs K local SGD steps on its uniformly scalarised loss (1/M) sum_m f_{i,m} (FedAvg-LS's local
  steps) and returns g_i = x^t - y_i^K; the server normalises g_i <- g_i / ||g_i|| (``normalize``), solves
  lam* = argmin { ||sum_i lam_i g_i||^2 : lam in simplex, |lam_i - 1/S| <= eps } and steps
  x^{t+1} = x^t - eta_g s d with d = sum_i lam*_i g_i and s = mean_i ||g_i|| when normalising (our choice of step
  length: with eps = 0 and equal update norms it is FedAvg's step), s = 1 otherwise. With eps = 0 and no
  normalisation it is FedAvg on the uniform scalarisation exactly (a unit test).

Metrics: ``delta_m_percent`` (Maninis et al. 2019; Liu et al. 2022, "Auto-lambda"/"Nash-MTL" convention):
Delta-m% = (100 / M) sum_m (-1)^{s_m} (M_m - M_{b,m}) / M_{b,m}, s_m = 1 for a metric where higher is better
(accuracy), against single-task references M_{b,m}; lower is better, negative beats the references.
``hypervolume_2d`` of a loss point set w.r.t. a reference point (minimisation). ``trunk_cosine``: the cosine of
the two tasks' gradients restricted to the shared trunk (the heads are disjoint, so their blocks are orthogonal).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from shared import seeding
from shared.fed import ByteLedger, partition_dirichlet, partition_iid

from papers.dream.algorithms import check_common_args
from papers.dream.data import _digits, draw_pairs
from papers.dream.training import (ControlVariates, ScaffoldControls, client_samplers, federated_training,
                                   multi_objective_round, scalarised_local_models, scalarised_step)

__all__ = ["CONFLICT_METHODS", "make_conflict_digits", "TrunkMLP", "project_capped_simplex", "fedmgda_plus_weights",
           "delta_m_percent", "trunk_cosine", "run_conflict"]

CONFLICT_METHODS = ("dream", "dream_no_cv", "fsmgda", "fedcmoo", "fedavg_ls", "scaffold_ls", "fedmgda_plus")
# methods whose round is training.multi_objective_round (FSMGDA is its ``fmgda`` branch on minibatches)
_ROUND_NAME = {"dream": "dream", "dream_no_cv": "dream_no_cv", "fsmgda": "fmgda", "fedcmoo": "fedcmoo"}


# ------------------------------------------------------------------------------------------------------ data
@lru_cache(maxsize=4)
def make_conflict_digits(n_train_pairs: int = 6000, n_test_pairs: int = 2000, shift: int = 2, data_seed: int = 0):
    """(X_train (n, 8 (8 + shift)) float32, Y_train (n, 2) int64, X_test, Y_test): the pairs of
    ``make_multidigits`` (same seed, same draws) on an 8 x (8 + shift) canvas, b shifted right by ``shift``."""
    if isinstance(shift, bool) or not isinstance(shift, (int, np.integer)) or not (1 <= shift <= 8):
        raise ValueError(f"shift must be an integer in 1..8, got {shift!r}")
    if n_train_pairs < 1 or n_test_pairs < 1:
        raise ValueError("n_train_pairs and n_test_pairs must be >= 1")
    images, labels = _digits()
    (a_tr, b_tr), (a_te, b_te) = draw_pairs(n_train_pairs, n_test_pairs, data_seed)
    width = 8 + int(shift)

    def build(a, b):
        canvas = np.zeros((a.size, 8, width))
        canvas[:, :, 0:8] = images[a]
        canvas[:, :, shift:shift + 8] = np.maximum(canvas[:, :, shift:shift + 8], images[b])
        return canvas.reshape(a.size, 8 * width).astype(np.float32), np.stack([labels[a], labels[b]], axis=1)

    X_train, Y_train = build(a_tr, b_tr)
    X_test, Y_test = build(a_te, b_te)
    return X_train, Y_train, X_test, Y_test


# ----------------------------------------------------------------------------------------------------- model
class TrunkMLP:
    """Shared trunk Linear(in, h1)-ReLU-Linear(h1, h2)-ReLU, heads Linear(h2, 10) per task, on flat vectors.

    ``grads(theta, X, Y, omega, sw)`` (batched over rows s): gradient of sum_m omega[s, m] sum_b sw[s, b]
    CE(z_m(X[s, b]), Y[s, b, m]); dz_m = sw (softmax(z_m) - onehot(y_m)), grad W_m = dz_m^T h2, the trunk gets
    delta2 = (sum_m omega_m dz_m W_m) 1[h2 > 0], delta1 = (delta2 W2) 1[h1 > 0] (standard backprop).
    """

    def __init__(self, in_dim: int, hidden=(100, 50), n_tasks: int = 2, seed: int = 0):
        if len(hidden) != 2 or min(hidden) < 1 or in_dim < 1 or n_tasks < 1:
            raise ValueError(f"need in_dim >= 1, two hidden widths >= 1 and n_tasks >= 1, got {in_dim}, {hidden}, "
                             f"{n_tasks}")
        torch.manual_seed(seed)
        h1, h2 = int(hidden[0]), int(hidden[1])
        layers = [torch.nn.Linear(in_dim, h1), torch.nn.Linear(h1, h2)] + [torch.nn.Linear(h2, 10)
                                                                          for _ in range(n_tasks)]
        self.shapes, chunks = [], []
        for layer in layers:
            for p in (layer.weight, layer.bias):
                self.shapes.append(tuple(p.shape))
                chunks.append(p.detach().reshape(-1))
        self.theta0 = torch.cat(chunks).to(torch.float32).clone()
        self.n_tasks, self.in_dim = n_tasks, in_dim
        self.dim = int(self.theta0.numel())
        self.trunk_dim = in_dim * h1 + h1 + h1 * h2 + h2

    def unflatten(self, theta):
        out, pos = [], 0
        S = theta.shape[0]
        for shape in self.shapes:
            n = int(np.prod(shape))
            out.append(theta[:, pos:pos + n].reshape(S, *shape))
            pos += n
        return out

    def logits(self, theta, X):
        """Per-task logits of one model theta (dim,) on X (n, in_dim)."""
        p = self.unflatten(theta.unsqueeze(0))
        h1 = torch.relu(X @ p[0][0].T + p[1][0])
        h2 = torch.relu(h1 @ p[2][0].T + p[3][0])
        return [h2 @ p[4 + 2 * m][0].T + p[5 + 2 * m][0] for m in range(self.n_tasks)]

    def task_losses(self, theta, X, Y):
        return [F.cross_entropy(z, Y[:, m]) for m, z in enumerate(self.logits(theta, X))]

    def grads(self, theta, X, Y, omega, sw) -> torch.Tensor:
        p = self.unflatten(theta)
        h1 = torch.relu(torch.baddbmm(p[1].unsqueeze(1), X, p[0].transpose(1, 2)))
        h2 = torch.relu(torch.baddbmm(p[3].unsqueeze(1), h1, p[2].transpose(1, 2)))
        head_grads, dh2 = [], None
        for m in range(self.n_tasks):
            W, b = p[4 + 2 * m], p[5 + 2 * m]
            dz = torch.softmax(torch.baddbmm(b.unsqueeze(1), h2, W.transpose(1, 2)), dim=2)
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


# ---------------------------------------------------------------------------------------------- FedMGDA+ QP
def project_capped_simplex(v, lo: float, hi: float) -> np.ndarray:
    """Euclidean projection of v onto {lam : sum lam = 1, lo <= lam_i <= hi}: lam_i = clip(v_i - tau, lo, hi)
    with tau the root of phi(tau) = sum_i clip(v_i - tau, lo, hi) - 1, which is continuous, non-increasing and
    linear between the breakpoints v_i - hi and v_i - lo; the root is found exactly by evaluating phi at the
    sorted breakpoints and interpolating on the bracketing segment. ValueError when the set is empty
    (n lo > 1 or n hi < 1)."""
    v = np.asarray(v, dtype=float)
    n = v.size
    if v.ndim != 1 or n == 0:
        raise ValueError(f"v must be a non-empty 1-D array, got shape {v.shape}")
    if lo > hi or n * lo > 1.0 + 1e-12 or n * hi < 1.0 - 1e-12:
        raise ValueError(f"empty capped simplex: n = {n}, lo = {lo}, hi = {hi}")
    if hi - lo <= 0.0:
        return np.full(n, lo)
    bp = np.unique(np.concatenate([v - hi, v - lo]))
    phi = np.clip(v[None, :] - bp[:, None], lo, hi).sum(axis=1) - 1.0    # non-increasing in bp
    k = int(np.searchsorted(-phi, 0.0))                                  # first breakpoint with phi <= 0
    if k == 0:
        tau = bp[0]
    elif k >= bp.size:
        tau = bp[-1]
    else:
        t0, t1, p0, p1 = bp[k - 1], bp[k], phi[k - 1], phi[k]
        tau = t0 + (t1 - t0) * p0 / (p0 - p1) if p0 != p1 else t1
    return np.clip(v - tau, lo, hi)


def fedmgda_plus_weights(updates, eps: float, normalize: bool = True, *, max_iter: int = 3000, tol: float = 1e-10):
    """FedMGDA+'s server step (Hu et al. 2022, Alg. 1): ``updates`` (n, d) rows g_i; returns (lam, d, scale) with
    lam = argmin {||sum_i lam_i g~_i||^2 : lam in simplex, |lam_i - 1/n| <= eps}, g~_i = g_i / ||g_i|| when
    ``normalize`` (rows of zero norm stay zero), d = sum_i lam_i g~_i and scale = mean_i ||g_i|| (1 without
    normalisation). Solved by projected gradient with FISTA momentum and restarts on the n x n Gram matrix, stopping
    when the projected-gradient fixed-point residual (checked every 10 iterations) is at most ``tol`` or after
    ``max_iter`` iterations; eps = 0 returns the uniform weights."""
    G = np.asarray(updates, dtype=float)
    if G.ndim != 2 or G.shape[0] < 1:
        raise ValueError(f"updates must be a 2-D array (n, d), got shape {G.shape}")
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    n = G.shape[0]
    norms = np.linalg.norm(G, axis=1)
    if normalize:
        G = G / np.where(norms > 0, norms, 1.0)[:, None]
        scale = float(norms.mean())
    else:
        scale = 1.0
    lo, hi = max(0.0, 1.0 / n - eps), min(1.0, 1.0 / n + eps)
    lam = np.full(n, 1.0 / n)
    Q = G @ G.T
    L = float(np.linalg.eigvalsh(Q)[-1]) if n > 1 else 0.0
    if eps > 0 and n > 1 and L > 0:
        y, prev, t = lam.copy(), lam.copy(), 1.0
        for it in range(1, max_iter + 1):
            new = project_capped_simplex(y - (Q @ y) / L, lo, hi)
            if it % 10 == 0 and np.abs(new - project_capped_simplex(new - (Q @ new) / L, lo, hi)).max() <= tol:
                prev = new
                break
            if (y - new) @ (new - prev) > 0:
                t = 1.0
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            y = new + ((t - 1.0) / t_new) * (new - prev)
            prev, t = new, t_new
        lam = prev
    return lam, lam @ G, scale


# --------------------------------------------------------------------------------------------------- metrics
def delta_m_percent(acc, acc_ref) -> float:
    """Delta-m% = (100 / M) sum_m -(a_m - b_m) / b_m for accuracies a (higher is better) against single-task
    references b (Maninis et al. 2019; the convention of Liu et al. 2022 and Navon et al. 2022): the mean
    relative drop in percent; lower is better, 0 = the references."""
    a, b = np.asarray(acc, dtype=float), np.asarray(acc_ref, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"acc and acc_ref must be 1-D of the same length, got {a.shape}, {b.shape}")
    if np.any(b <= 0):
        raise ValueError(f"reference accuracies must be > 0, got {b}")
    return float(100.0 * np.mean(-(a - b) / b))


def trunk_cosine(g1, g2, trunk_dim: int) -> float:
    """Cosine of two task gradients on the first ``trunk_dim`` coordinates (the shared trunk); NaN if one is 0."""
    a, b = np.asarray(g1, dtype=float)[:trunk_dim], np.asarray(g2, dtype=float)[:trunk_dim]
    den = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / den) if den > 0 else float("nan")


# ---------------------------------------------------------------------------------------------------- runner
def run_conflict(method: str, *, rounds: int, n_clients: int = 50, dirichlet_alpha: float = 0.3,
                 local_steps: int = 5, batch_size: int = 32, lr_local: float = 0.05, lr_global: float = 1.0,
                 momentum: float = 0.5, cv_ema: float = 1.0, rho: float = 0.0, clients_per_round=None,
                 eval_every: int = 10, n_train_pairs: int = 10000, shift: int = 2, hidden=(64, 8), seed: int = 0,
                 probe_batch: int = 128, preference=None, eps: float = 0.1, normalize: bool = True,
                 conflict_samples: int = 2000) -> dict:
    """Train one method on ConflictDigits split over ``n_clients`` by a Dirichlet(``dirichlet_alpha``) partition of
    the task-1 labels (``inf`` = IID) and evaluate on the 2000 test pairs every ``eval_every`` rounds.

    Methods: ``dream`` / ``dream_no_cv`` (DREAM-R, A = I, momentum ``momentum``), ``fsmgda``, ``fedcmoo``,
    ``fedavg_ls`` / ``scaffold_ls`` (on the scalarisation ``preference``, uniform by default; a one-hot preference
    trains a single-task reference), ``fedmgda_plus`` (``eps``, ``normalize``). Momentum applies to DREAM only.
    At every evaluation the trunk cosine of the two tasks' gradients is measured on the first
    ``conflict_samples`` training pairs (full-batch gradients at the global model).

    Returns ``round``, ``test_accuracy`` (n_eval, 2) in percent, ``test_loss`` (n_eval, 2), ``weights``
    (n_eval, 2) (task weights; for fedmgda_plus the preference), ``cosine`` (n_eval + 1,) (index 0 at
    initialisation), ``bytes_per_client_round`` and ``train_seconds``.
    """
    M = 2
    S = check_common_args("dream", ("dream",), rounds=rounds, local_steps=local_steps, lr_local=lr_local,
                          lr_global=lr_global, momentum=momentum, cv_ema=cv_ema, rho=rho,
                          clients_per_round=clients_per_round, n_clients=n_clients)
    if method not in CONFLICT_METHODS:
        raise ValueError(f"method must be one of {list(CONFLICT_METHODS)}, got {method!r}")
    if not (dirichlet_alpha > 0):
        raise ValueError(f"dirichlet_alpha must be > 0 (inf for an IID split), got {dirichlet_alpha!r}")
    for name, v in (("eval_every", eval_every), ("batch_size", batch_size), ("probe_batch", probe_batch),
                    ("n_train_pairs", n_train_pairs), ("conflict_samples", conflict_samples)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    w = np.full(M, 1.0 / M) if preference is None else np.asarray(preference, dtype=float)
    if w.shape != (M,) or np.any(w < 0) or abs(w.sum() - 1) > 1e-9:
        raise ValueError(f"preference must lie on the simplex of size {M}, got {preference}")
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")

    X_tr, Y_tr, X_te, Y_te = make_conflict_digits(int(n_train_pairs), 2000, int(shift))
    X_tr_t, Y_tr_t = torch.from_numpy(X_tr), torch.from_numpy(Y_tr)
    X_te_t, Y_te_t = torch.from_numpy(X_te), torch.from_numpy(Y_te)
    nc = min(int(conflict_samples), X_tr.shape[0])
    Xc, Yc, swc = X_tr_t[:nc].unsqueeze(0), Y_tr_t[:nc].unsqueeze(0), torch.full((1, nc), 1.0 / nc)
    if np.isinf(dirichlet_alpha):
        parts = partition_iid(n_train_pairs, n_clients, seed)
    else:
        parts = partition_dirichlet(Y_tr[:, 0], n_clients, dirichlet_alpha, seed)
    client_rngs = seeding.spawn(seed, n_clients, "conflict", "batches")
    server_rng = seeding.generator(seed, "conflict", "clients")
    model = TrunkMLP(X_tr.shape[1], tuple(hidden), M, seed)
    D = model.dim
    x = model.theta0.clone()
    eta_l, eta_g, beta, alpha, K = float(lr_local), float(lr_global), float(momentum), float(cv_ema), int(local_steps)
    lam = w.copy() if method in ("fedavg_ls", "scaffold_ls", "fedmgda_plus") else np.full(M, 1.0 / M)
    cv = ControlVariates(n_clients, M, D)
    controls = ScaffoldControls(n_clients, D)
    ledger = ByteLedger()
    eye = torch.eye(M)
    w_t = torch.from_numpy(w.astype(np.float32))

    def cosine_now(theta):
        g = torch.cat([model.grads(theta.unsqueeze(0), Xc, Yc, eye[m].unsqueeze(0), swc) for m in range(M)])
        return trunk_cosine(g[0].double().numpy(), g[1].double().numpy(), model.trunk_dim)

    minibatches, probes = client_samplers(parts, X_tr_t, Y_tr_t, client_rngs, batch_size, probe_batch)
    sampler_kw = dict(minibatches=minibatches, probes=probes, batch_size=batch_size, local_steps=K, lr_local=eta_l)
    round_kw = dict(**sampler_kw, lr_global=eta_g, momentum=beta, cv_ema=alpha, rho=rho, correction=None)

    def one_round(x, part, lam):
        if method in _ROUND_NAME:
            return multi_objective_round(_ROUND_NAME[method], model, x, part, lam, cv, **round_kw)
        xs, y, cats = scalarised_local_models("fedavg_ls" if method == "fedmgda_plus" else method, model, x, part,
                                              w_t, controls, **sampler_kw)
        if method == "fedmgda_plus":  # local SGD on sum_m w_m f_{i,m}, FedMGDA+ aggregation of the updates
            _, dvec, scale = fedmgda_plus_weights((xs - y).double().numpy(), float(eps), bool(normalize))
            return x - eta_g * scale * torch.from_numpy(dvec.astype(np.float32)), lam, cats
        return scalarised_step(x, xs, y, eta_g), lam, cats   # fedavg_ls / scaffold_ls on sum_m w_m f_{i,m}

    out = {"round": [], "test_accuracy": [], "test_loss": [], "weights": [], "cosine": [cosine_now(x)]}
    return federated_training(one_round, model, x, lam, method=method, rounds=rounds, n_clients=n_clients, S=S,
                              server_rng=server_rng, ledger=ledger, X_te=X_te_t, Y_te=Y_te_t,
                              eval_every=eval_every, out=out, at_eval=(("cosine", cosine_now),))


# ------------------------------------------------------------------------------------------------ experiment
def point_hypervolume(losses, reference) -> float:
    """Hypervolume of one loss point l (minimisation) w.r.t. ``reference`` r: prod_m max(r_m - l_m, 0)."""
    l, r = np.asarray(losses, dtype=float), np.asarray(reference, dtype=float)
    if l.shape != r.shape:
        raise ValueError(f"losses and reference must have the same shape, got {l.shape}, {r.shape}")
    return float(np.prod(np.maximum(r - l, 0.0)))


_RUN_KEYS = ("rounds", "n_clients", "dirichlet_alpha", "local_steps", "batch_size", "lr_local", "momentum",
             "eval_every", "n_train_pairs", "shift", "hidden", "probe_batch", "eps", "normalize", "conflict_samples",
             "clients_per_round")


def _alpha(value) -> float:
    return float("inf") if value in ("inf", ".inf", None) else float(value)


def conflict_digits(params: dict, ctx):
    """ConflictDigits (module docstring): every method in ``methods`` (named variants through
    ``method_overrides``, e.g. ``dream_beta0: {method: dream, momentum: 0}``) and the single-task references
    (``reference_method`` on the one-hot preference of each task) for every seed in ``seeds``; the partition, the
    initialisation and the minibatch streams depend on the seed only, so the methods of one seed are paired.

    Per seed and method: ``acc`` = per-task test accuracy, mean of the last ``last_evals`` evaluations; the
    reference of task m is the task-m accuracy of its single-task run (same mean). ``delta_m`` = Delta-m% of the
    two accuracies against the references (lower is better); ``hv`` = the hypervolume of the final test losses
    (last evaluation) w.r.t. ``hv_reference`` (higher is better). Paired lists over seeds:
    ``paired_dm.<b>_minus_<a>`` = Delta-m%(b) - Delta-m%(a) and ``paired_hv.<a>_minus_<b>`` = HV(a) - HV(b), for a
    in the DREAM variants and b in the others (positive: a is better). Conflict: ``conflict.<method>``: the trunk
    cosine of the two tasks' full-batch gradients (``conflict_samples`` training pairs) at initialisation
    (``cos_init_per_seed``), its mean over the evaluations (``mean_cos_per_seed``) and the fraction of evaluations
    where it is negative (``frac_negative_per_seed``). ``conflict_reference`` (optional): the same measure along
    ``method`` on the MultiDigits configuration (shift 4, trunk 100-50, its clients and step) for comparison.
    """
    import torch as _torch

    _torch.set_num_threads(1)
    _torch.use_deterministic_algorithms(True)
    methods = list(params["methods"])
    overrides = params.get("method_overrides", {})
    seeds = [int(s) for s in params["seeds"]]
    last = int(params.get("last_evals", 3))
    ref_point = [float(v) for v in params["hv_reference"]]
    ref_method = params.get("reference_method", "scaffold_ls")
    base = {k: params[k] for k in _RUN_KEYS if k in params}
    base["dirichlet_alpha"] = _alpha(base.get("dirichlet_alpha", 0.3))
    if "hidden" in base:
        base["hidden"] = tuple(int(h) for h in base["hidden"])
    dream_like = [m for m in methods if overrides.get(m, {}).get("method", m) == "dream"
                  or overrides.get(m, {}).get("method", m) == "dream_no_cv"]
    rows, arrays, timings = [], {}, {}
    acc, hv, dm, cos = {}, {}, {}, {}
    stl = {0: [], 1: []}
    runs = [(s, m) for s in seeds for m in ["stl_task1", "stl_task2", *methods]]
    for seed, name in ctx.progress(runs, total=len(runs), what="seed x run"):
        if name.startswith("stl_task"):
            task = int(name[-1]) - 1
            kw = dict(method=ref_method, preference=[1.0 - task, float(task)])
        else:
            extra = dict(overrides.get(name, {}))
            kw = dict(method=extra.pop("method", name), **extra)
        method = kw.pop("method")
        res = run_conflict(method, seed=seed, **{**base, **kw})
        a = res["test_accuracy"][-last:].mean(axis=0)
        timings.setdefault(name, []).append(res["train_seconds"] / int(base["rounds"]))
        if name.startswith("stl_task"):
            stl[task].append(float(a[task]))
            ctx.log(f"seed {seed} {name}: task-{task + 1} accuracy {a[task]:.2f}")
            continue
        acc.setdefault(name, []).append([float(v) for v in a])
        hv.setdefault(name, []).append(point_hypervolume(res["test_loss"][-1], ref_point))
        c = res["cosine"]
        cos.setdefault(name, {"cos_init_per_seed": [], "mean_cos_per_seed": [], "frac_negative_per_seed": []})
        cos[name]["cos_init_per_seed"].append(float(c[0]))
        cos[name]["mean_cos_per_seed"].append(float(np.mean(c[1:])))
        cos[name]["frac_negative_per_seed"].append(float(np.mean(c[1:] < 0)))
        if seed == seeds[0]:
            arrays[f"{name}__round"] = res["round"]
            arrays[f"{name}__acc"] = res["test_accuracy"]
            arrays[f"{name}__loss"] = res["test_loss"]
            arrays[f"{name}__weights"] = res["weights"]
            arrays[f"{name}__cosine"] = c
        for r, row in zip(res["round"], res["test_accuracy"]):
            rows.append({"method": name, "seed": seed, "step": int(r), "metric": "test_accuracy_mean",
                         "value": float(row.mean())})
        ctx.log(f"seed {seed} {name}: acc {np.round(a, 2).tolist()}, mean cos {cos[name]['mean_cos_per_seed'][-1]:.3f}")
    for name in methods:
        dm[name] = [delta_m_percent(acc[name][k], [stl[0][k], stl[1][k]]) for k in range(len(seeds))]
    others = [m for m in methods if m not in dream_like]
    paired_dm = {f"{b}_minus_{a}": [x - y for x, y in zip(dm[b], dm[a])] for a in dream_like for b in others}
    paired_hv = {f"{a}_minus_{b}": [x - y for x, y in zip(hv[a], hv[b])] for a in dream_like for b in others}
    paired_dm.update({f"{b}_minus_{a}": [x - y for x, y in zip(dm[b], dm[a])] for a in ("dream",)
                      for b in dream_like if b != "dream"})
    paired_hv.update({f"{a}_minus_{b}": [x - y for x, y in zip(hv[a], hv[b])] for a in ("dream",)
                      for b in dream_like if b != "dream"})
    reference = None
    if params.get("conflict_reference"):
        cr = dict(params["conflict_reference"])
        cr_method = cr.pop("method", "fedavg_ls")
        cr_seeds = [int(s) for s in cr.pop("seeds", seeds)]
        cr = {**base, **cr}
        cr["dirichlet_alpha"] = _alpha(cr["dirichlet_alpha"])
        cr["hidden"] = tuple(int(h) for h in cr["hidden"])
        reference = {"method": cr_method, "cos_init_per_seed": [], "mean_cos_per_seed": [],
                     "frac_negative_per_seed": [], "settings": {k: (list(v) if isinstance(v, tuple) else v)
                                                                for k, v in cr.items()}}
        if np.isinf(reference["settings"]["dirichlet_alpha"]):
            reference["settings"]["dirichlet_alpha"] = "inf"
        for seed in cr_seeds:
            c = run_conflict(cr_method, seed=seed, **cr)["cosine"]
            reference["cos_init_per_seed"].append(float(c[0]))
            reference["mean_cos_per_seed"].append(float(np.mean(c[1:])))
            reference["frac_negative_per_seed"].append(float(np.mean(c[1:] < 0)))
            if seed == cr_seeds[0]:
                arrays["reference__cosine"] = c
        ctx.log(f"MultiDigits reference ({cr_method}): mean cos {np.mean(reference['mean_cos_per_seed']):.3f}")
    tim = {m: {"train_s_per_round": float(np.median(v))} for m, v in timings.items()}
    from shared.results import write_arrays, write_metrics

    write_arrays(ctx.out_dir / "traces.npz", **arrays)
    write_metrics(tim, ctx.out_dir / "timings.json")
    ctx.record(timings=tim)
    mean = {name: float(np.mean(v)) for name, v in dm.items()}
    return rows, {
        "acc_per_seed": acc, "acc": {m: np.mean(acc[m], axis=0).tolist() for m in methods},
        "stl_acc_per_seed": {"task1": stl[0], "task2": stl[1]},
        "stl_acc": [float(np.mean(stl[0])), float(np.mean(stl[1]))],
        "delta_m_per_seed": dm, "delta_m": mean,
        "hv_per_seed": hv, "hv": {m: float(np.mean(v)) for m, v in hv.items()},
        "paired_dm": paired_dm, "paired_hv": paired_hv,
        "paired_dm_mean": {k: float(np.mean(v)) for k, v in paired_dm.items()},
        "paired_hv_mean": {k: float(np.mean(v)) for k, v in paired_hv.items()},
        "conflict": {**cos, "mean_cos_all_methods": float(np.mean([np.mean(v["mean_cos_per_seed"])
                                                                  for v in cos.values()]))},
        "conflict_reference": reference,
        "hv_reference": ref_point, "reference_method": ref_method, "seeds": seeds, "rounds": int(base["rounds"]),
        "n_clients": int(base["n_clients"]),
        "delta_m_definition": "(100 / M) sum_m -(a_m - b_m) / b_m over the task accuracies a against single-task "
                              "references b (Maninis et al. 2019; Liu et al. 2022); lower is better",
    }
