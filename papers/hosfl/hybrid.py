"""The hybrid-order (HO-SFL) pieces: Lagrangian multiplier at the cut, the client's directional scalars,
the seed-shared gradient estimate, and the straggler replay.

Lifting (Chen et al. 2026, Sec. 3): min loss(f_s(z; theta_s), y) s.t. z = f_c(x; theta_c), with Lagrangian
L = loss(f_s(z; theta_s), y) + lambda^T (f_c(x; theta_c) - z). Stationarity in z gives lambda = grad_z loss,
and the client proxy L_c(theta_c) = lambda^T f_c(x; theta_c) has gradient J_c^T lambda = grad_{theta_c} loss.
The client estimates it with forward passes only: for shared seeds s_1..s_P, u_p = N(0, I) rebuilt from s_p,

    v_p = <lambda, f_c(x; theta_c + mu u_p) - f_c(x; theta_c)>,   ghat = (1/(P mu)) sum_p vbar_p u_p,

where vbar_p is the mean of v_p over the clients of the round. For a client linear in theta_c,
v_p / mu = u_p . g exactly, so ghat is the Gaussian estimator (1/P) sum_p (u_p . g) u_p of g, unbiased with
E||ghat - g||^2 = ((d_c + 1)/P) ||g||^2 (Nesterov and Spokoiny 2017).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from shared.oracles.zeroth_order import estimate_from_directional, perturbation_directions

__all__ = ["cut_layer_multiplier", "client_directional_scalars", "client_gradient_estimate", "replay_client",
           "client_update", "sgd_momentum_step", "adamw_step", "optimizer_step", "OPTIMIZERS", "check_seeds", "check_mu", "client_apply", "server_apply",
           "check_batch", "SEED_BOUND"]

SEED_BOUND = 2 ** 32
OPTIMIZERS = ("sgd", "adamw")
ADAMW_BETAS = (0.9, 0.999)
ADAMW_EPS = 1e-8
_ACT = {"relu": torch.relu, "tanh": torch.tanh, "identity": lambda t: t}


# ------------------------------------------------------------------------------------------- validation
def check_seeds(seeds) -> list[int]:
    """Seeds as a list of ints; ValueError unless they are P >= 1 distinct integers in [0, 2**32)."""
    arr = [seeds] if np.ndim(seeds) == 0 else list(np.asarray(seeds, dtype=object).ravel())
    if len(arr) < 1:
        raise ValueError("seeds must hold P >= 1 seeds")
    out = []
    for s in arr:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise ValueError(f"seeds must be integers in [0, 2**32), got {s!r}")
        if not 0 <= int(s) < SEED_BOUND:
            raise ValueError(f"seeds must be integers in [0, 2**32), got {int(s)}")
        out.append(int(s))
    if len(set(out)) != len(out):
        raise ValueError(f"seeds must be distinct within a round, got repeated seeds in {out}")
    return out


def check_mu(mu) -> float:
    """mu as a float; ValueError unless finite and > 0."""
    if isinstance(mu, bool):
        raise ValueError(f"mu must be a finite number > 0, got {mu!r}")
    try:
        m = float(mu)
    except (TypeError, ValueError):
        raise ValueError(f"mu must be a finite number > 0, got {mu!r}") from None
    if not math.isfinite(m) or m <= 0:
        raise ValueError(f"mu must be a finite number > 0, got {mu!r}")
    return m


def check_batch(model, x, y=None):
    """x as a tensor of the model dtype (n, in_dim) and y as int64 labels in 0..n_classes-1."""
    x = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
    if x.ndim != 2 or x.shape[1] != model.in_dim:
        raise ValueError(f"x must have shape (B, in_dim={model.in_dim}), got {tuple(x.shape)}")
    x = x.to(model.torch_dtype)
    if y is None:
        return x
    y = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y)
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(f"y must have shape ({x.shape[0]},), got {tuple(y.shape)}")
    if y.is_floating_point() and not torch.equal(y, y.round()):
        raise ValueError("y must hold integer class labels")
    y = y.to(torch.int64)
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= model.n_classes):
        raise ValueError(f"labels y must lie in 0..{model.n_classes - 1}")
    return x, y


# ------------------------------------------------------------------------------------------- functional passes
def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """x @ w^T + b with optional leading batch dims on w (..., out, in) and b (..., out)."""
    if w.ndim == 2:
        return F.linear(x, w, b)
    y = torch.matmul(x, w.transpose(-1, -2))
    return y if b is None else y + b.unsqueeze(-2)


def _split(theta: torch.Tensor, shapes):
    lead = theta.shape[:-1]
    parts, start = [], 0
    for shp in shapes:
        n = int(np.prod(shp))
        parts.append(theta[..., start:start + n].reshape(*lead, *shp))
        start += n
    return parts


def client_apply(model, x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """f_c(x; theta) for the SplitMLP client, theta a flat tensor (d_c,) in the parameter-vector convention,
    or a stack (K, d_c) of client vectors applied to x of shape (K, B, in_dim)."""
    lin = model.client[0]
    shapes = [tuple(lin.weight.shape)] + ([tuple(lin.bias.shape)] if lin.bias is not None else [])
    parts = _split(theta, shapes)
    return _ACT[model.client_activation](_linear(x, parts[0], parts[1] if len(parts) > 1 else None))


def server_apply(model, z: torch.Tensor, theta_s: torch.Tensor) -> torch.Tensor:
    """f_s(z; theta_s) for the SplitMLP server (Linear, ReLU, Linear), theta_s flat (d_s,) or a stack
    (K, d_s) applied to z of shape (K, B, cut_dim)."""
    l1, l2 = model.server[0], model.server[2]
    w1, b1, w2, b2 = _split(theta_s, [tuple(l1.weight.shape), tuple(l1.bias.shape), tuple(l2.weight.shape),
                                      tuple(l2.bias.shape)])
    return _linear(torch.relu(_linear(z, w1, b1)), w2, b2)


def _server_pass(model, z: torch.Tensor, y: torch.Tensor, with_server_grads: bool):
    """Mean cross-entropy of f_s(z) and its gradients w.r.t. z (lambda) and, optionally, theta_s.
    Uses ``torch.autograd.grad``, so no ``.grad`` field is touched."""
    zt = z.detach().clone().requires_grad_(True)
    loss = F.cross_entropy(model.server(zt), y)
    inputs = [zt] + (list(model.server.parameters()) if with_server_grads else [])
    grads = torch.autograd.grad(loss, inputs)
    return loss.detach(), grads[0].detach(), [g.detach() for g in grads[1:]]


# ------------------------------------------------------------------------------------------- public API
def cut_layer_multiplier(model, x, y):
    """Client forward (eval mode, no grad) z = f_c(x), server forward, loss = mean cross-entropy, and the
    multiplier lambda = d loss / d z (the Lagrangian stationarity condition in z).

    Returns (loss: float, z: ndarray (B, cut), lam: ndarray (B, cut)) in the model dtype. No parameter or
    ``.grad`` of the model is changed.
    """
    x, y = check_batch(model, x, y)
    was_training = model.client.training
    model.client.eval()
    with torch.no_grad():
        z = model.client(x)
    model.client.train(was_training)
    loss, lam, _ = _server_pass(model, z, y, with_server_grads=False)
    return float(loss), z.numpy().copy(), lam.numpy().copy()


def _scalars_from_directions(model, x: torch.Tensor, lam: torch.Tensor, z: torch.Tensor, theta: torch.Tensor,
                             directions: torch.Tensor, mu: float) -> np.ndarray:
    """v_p = sum(lam * (f_c(x; theta + mu u_p) - z)) for every row u_p of ``directions`` (no grad; theta is
    never modified: each perturbed vector is a fresh tensor built from the stored one)."""
    out = np.empty(directions.shape[0], dtype=np.float64)
    with torch.no_grad():
        for p in range(directions.shape[0]):
            zt = client_apply(model, x, theta + mu * directions[p])
            out[p] = float(torch.sum((lam * (zt - z)).to(torch.float64)))
    return out


def client_directional_scalars(model, x, lam, seeds, mu, z=None) -> np.ndarray:
    """The client's P uploaded scalars v_p = sum(lam * (f_c(x; theta_c + mu u_p) - z)), u_p =
    ``perturbation_directions([s_p], d_c)[0]`` cast to the model dtype; z = f_c(x; theta_c) when not given.

    For a client linear in theta_c, v_p / mu = u_p . (J_c^T lam) exactly. Forward passes only (no grad,
    client in eval mode); the client parameters are left bitwise unchanged. Returns float64 (P,).
    """
    seeds = check_seeds(seeds)
    mu = check_mu(mu)
    x = check_batch(model, x)
    lam_t = torch.as_tensor(np.asarray(lam))
    if lam_t.shape != (x.shape[0], model.cut_dim):
        raise ValueError(f"lam must have the shape of z, ({x.shape[0]}, {model.cut_dim}), got {tuple(lam_t.shape)}")
    if not torch.all(torch.isfinite(lam_t)):
        raise ValueError("lam must be finite")
    lam_t = lam_t.to(model.torch_dtype)
    theta = torch.from_numpy(model.client_vector())
    if z is None:
        with torch.no_grad():
            z_t = client_apply(model, x, theta)
    else:
        z_t = torch.as_tensor(np.asarray(z)).to(model.torch_dtype)
        if z_t.shape != lam_t.shape:
            raise ValueError(f"lam shape {tuple(lam_t.shape)} must equal z shape {tuple(z_t.shape)}")
    u = torch.from_numpy(perturbation_directions(seeds, model.client_dim)).to(model.torch_dtype)
    return _scalars_from_directions(model, x, lam_t, z_t, theta, u, mu)


def client_gradient_estimate(scalars, seeds, mu, dim) -> np.ndarray:
    """ghat = (1/(P mu)) sum_p scalars_p u_p with u_p rebuilt from seed s_p, in float64:
    ``estimate_from_directional(scalars / mu, perturbation_directions(seeds, dim))``."""
    seeds = check_seeds(seeds)
    mu = check_mu(mu)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    s = np.asarray(scalars, dtype=np.float64).ravel()
    if s.size != len(seeds):
        raise ValueError(f"len(scalars) = {s.size} must equal len(seeds) = {len(seeds)}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scalars must be finite")
    return estimate_from_directional(s / mu, perturbation_directions(seeds, int(dim)))


def sgd_momentum_step(theta: np.ndarray, grad: np.ndarray, lr: float, momentum: float = 0.0,
                      buf: np.ndarray | None = None):
    """torch's SGD convention in theta's dtype: buf = momentum buf + grad; theta = theta - lr buf
    (plain theta - lr grad when momentum = 0). Returns new (theta, buf)."""
    g = np.asarray(grad).astype(theta.dtype)
    if momentum > 0:
        buf = g.copy() if buf is None else (theta.dtype.type(momentum) * buf + g).astype(theta.dtype)
        step = buf
    else:
        step = g
    return (theta - theta.dtype.type(lr) * step).astype(theta.dtype), buf


def adamw_step(theta: np.ndarray, grad: np.ndarray, lr: float, state=None, *, weight_decay: float = 0.01,
               betas=ADAMW_BETAS, eps: float = ADAMW_EPS):
    """torch's AdamW (``torch.optim.AdamW``, amsgrad off) in theta's dtype, on a flat vector or a stack of
    vectors. ``state`` is None (first step) or (step, exp_avg, exp_avg_sq). With t = step + 1:
    theta <- theta (1 - lr wd); m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g^2;
    theta <- theta - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps). Returns (theta, state)."""
    dt = theta.dtype
    g = np.asarray(grad).astype(dt)
    if g.shape != theta.shape:
        raise ValueError(f"grad shape {g.shape} must equal theta shape {theta.shape}")
    b1, b2 = betas
    if state is None:
        step, m, v = 0, np.zeros_like(theta), np.zeros_like(theta)
    else:
        step, m, v = state
    step = int(step) + 1
    theta = (theta * dt.type(1 - lr * weight_decay)).astype(dt)
    m = (dt.type(b1) * m + dt.type(1 - b1) * g).astype(dt)
    v = (dt.type(b2) * v + dt.type(1 - b2) * g * g).astype(dt)
    bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
    denom = (np.sqrt(v) / dt.type(math.sqrt(bc2)) + dt.type(eps)).astype(dt)
    theta = (theta - dt.type(lr / bc1) * (m / denom)).astype(dt)
    return theta, (step, m, v)


def optimizer_step(theta: np.ndarray, grad: np.ndarray, lr: float, *, optimizer: str = "sgd",
                   momentum: float = 0.0, state=None, weight_decay: float = 0.01):
    """One step of ``optimizer`` ("sgd": :func:`sgd_momentum_step` with ``state`` the momentum buffer;
    "adamw": :func:`adamw_step` with ``state`` = (step, exp_avg, exp_avg_sq)). Returns (theta, state)."""
    if optimizer == "sgd":
        return sgd_momentum_step(theta, grad, lr, momentum, state)
    if optimizer == "adamw":
        return adamw_step(theta, grad, lr, state, weight_decay=weight_decay)
    raise ValueError(f"optimizer must be one of {list(OPTIMIZERS)}, got {optimizer!r}")


def client_update(theta: np.ndarray, seeds, vbar, mu, *, lr: float, momentum: float = 0.0, buf=None,
                  optimizer: str = "sgd", weight_decay: float = 0.01):
    """One HO-SFL client step: ghat = client_gradient_estimate(vbar, seeds, mu, d_c), then
    :func:`optimizer_step` (SGD with momentum, ``buf`` the buffer; or AdamW, ``buf`` its state). The live
    client and :func:`replay_client` both call this function."""
    ghat = client_gradient_estimate(vbar, seeds, mu, theta.size)
    return optimizer_step(theta, ghat, lr, optimizer=optimizer, momentum=momentum, state=buf,
                          weight_decay=weight_decay)


def replay_client(theta, history, *, lr, momentum=0.0, momentum_buffer=None, optimizer="sgd",
                  weight_decay=0.01):
    """Straggler catch-up: apply, in round order, the updates of ``history`` (a list of (seeds, vbar, mu))
    to ``theta`` with the same update as the live client (:func:`client_update`), optimizer state included
    (``momentum_buffer``: the SGD momentum buffer, or for ``optimizer="adamw"`` the (step, exp_avg,
    exp_avg_sq) state the client last held in sync). Only P seeds and P scalars per missed round are
    needed, never a d_c-sized download.

    Returns (theta, optimizer state)."""
    theta = np.asarray(theta)
    if theta.ndim != 1 or not np.issubdtype(theta.dtype, np.floating):
        raise ValueError(f"theta must be a 1-D float array, got shape {theta.shape}, dtype {theta.dtype}")
    if not 0 <= float(momentum) < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {list(OPTIMIZERS)}, got {optimizer!r}")
    if momentum_buffer is None:
        buf = None
    elif optimizer == "adamw":
        step, m, v = momentum_buffer
        buf = (int(step), np.asarray(m, dtype=theta.dtype).copy(), np.asarray(v, dtype=theta.dtype).copy())
    else:
        buf = np.asarray(momentum_buffer, dtype=theta.dtype).copy()
    theta = theta.copy()
    for r, entry in enumerate(history):
        try:
            seeds, vbar, mu = entry
        except (TypeError, ValueError):
            raise ValueError(f"history[{r}] must be a (seeds, vbar, mu) triple") from None
        theta, buf = client_update(theta, seeds, vbar, mu, lr=lr, momentum=momentum, buf=buf,
                                   optimizer=optimizer, weight_decay=weight_decay)
    return theta, buf
