"""Function-space Adam dynamics with a frozen preconditioner (the OAK dynamics) and the oracle-lr search.

Linearise f at theta_0 and freeze P_t = P. Adam's first moment is then m_t = J(X)^T u_t with

    u_t = b1 u_{t-1} + (1 - b1) s_t,   s_t(i) = r_t(i) / |B_t| for i in B_t (else 0),   r_t = f_{t-1}(X) - y
    u_hat_t = u_t / (1 - b1^t)
    f_t(x) = f_{t-1}(x) - lr K_P(x, X) u_hat_t

run jointly on training points (which feed r_t) and evaluation points. For a model linear in theta with frozen
P this is Adam (Kingma & Ba 2015) exactly; P = I is the NTK of gradient descent with momentum (Jacot et al.
2018), and the asymmetric SignGD kernel of Malladi et al. (ICML 2023) plugs into the same recursion.
"""
from __future__ import annotations

import numpy as np

__all__ = ["kernel_dynamics", "dynamics_multi_lr", "linearised_adam", "ORACLE_MULTIPLIERS"]

#: the oracle scalar-lr grid c = 10^(k/4), k = -40..40 (81 multipliers)
ORACLE_MULTIPLIERS = 10.0 ** (np.arange(-40, 41) / 4.0)


def _check(K_train, K_eval, f0_train, f0_eval, y_train, steps, beta1, batches, checkpoints):
    K_train = np.asarray(K_train, dtype=np.float64)
    if K_train.ndim != 2 or K_train.shape[0] != K_train.shape[1]:
        raise ValueError(f"K_train must be square (n, n), got shape {K_train.shape}")
    n = K_train.shape[0]
    f0_train = np.asarray(f0_train, dtype=np.float64).reshape(-1)
    y_train = np.asarray(y_train, dtype=np.float64).reshape(-1)
    if f0_train.shape[0] != n or y_train.shape[0] != n:
        raise ValueError(f"f0_train and y_train must have length n = {n} (K_train is {K_train.shape}), got "
                         f"{f0_train.shape[0]} and {y_train.shape[0]}")
    K_eval = np.asarray(K_eval, dtype=np.float64)
    f0_eval = np.asarray(f0_eval, dtype=np.float64).reshape(-1)
    if K_eval.ndim != 2 or K_eval.shape[1] != n or K_eval.shape[0] != f0_eval.shape[0]:
        raise ValueError(f"K_eval must have shape (m, n) = ({f0_eval.shape[0]}, {n}), got {K_eval.shape}")
    if isinstance(steps, bool) or int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    steps = int(steps)
    if not (np.isfinite(beta1) and 0 <= beta1 < 1):
        raise ValueError(f"beta1 must lie in [0, 1), got {beta1!r}")
    if batches is not None:
        batches = [np.asarray(b, dtype=np.int64).reshape(-1) for b in batches]
        if len(batches) != steps:
            raise ValueError(f"batches must hold one index array per step ({steps}), got {len(batches)}")
        for t, b in enumerate(batches, start=1):
            if b.size == 0 or b.min() < 0 or b.max() >= n:
                raise ValueError(f"batches[{t - 1}] (step {t}) has an index outside [0, {n - 1}] or is empty")
            if np.unique(b).size != b.size:
                raise ValueError(f"batches[{t - 1}] (step {t}) repeats an index")
    if checkpoints is None:
        checkpoints = list(range(1, steps + 1))
    checkpoints = [int(c) for c in checkpoints]
    if any(c < 0 or c > steps for c in checkpoints):
        raise ValueError(f"checkpoints must lie in [0, steps = {steps}], got {checkpoints}")
    return K_train, K_eval, f0_train, f0_eval, y_train, steps, batches, checkpoints


def dynamics_multi_lr(K_train, K_eval, f0_train, f0_eval, y_train, lrs, steps, beta1=0.9, batches=None,
                      checkpoints=None):
    """The recursion of :func:`kernel_dynamics` for several learning rates at once (f is (n, L)).

    Returns (checkpoints, train (k, n, L), eval (k, m, L)); diverging columns become inf/nan (no error).
    """
    K_train, K_eval, f0_train, f0_eval, y_train, steps, batches, checkpoints = _check(
        K_train, K_eval, f0_train, f0_eval, y_train, steps, beta1, batches, checkpoints)
    lrs = np.asarray(lrs, dtype=np.float64).reshape(-1)
    n, L = K_train.shape[0], lrs.size
    f_tr = np.repeat(f0_train[:, None], L, axis=1)
    f_ev = np.repeat(f0_eval[:, None], L, axis=1)
    u = np.zeros((n, L))
    want = set(checkpoints)
    saved_tr, saved_ev = {}, {}
    if 0 in want:
        saved_tr[0], saved_ev[0] = f_tr.copy(), f_ev.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, steps + 1):
            r = f_tr - y_train[:, None]
            if batches is None:
                s = r / n
            else:
                s = np.zeros_like(r)
                b = batches[t - 1]
                s[b] = r[b] / b.size
            u = beta1 * u + (1 - beta1) * s
            u_hat = u / (1 - beta1 ** t)
            f_tr = f_tr - lrs[None, :] * (K_train @ u_hat)
            f_ev = f_ev - lrs[None, :] * (K_eval @ u_hat)
            if t in want:
                saved_tr[t], saved_ev[t] = f_tr.copy(), f_ev.copy()
    return (checkpoints, np.stack([saved_tr[c] for c in checkpoints]) if checkpoints else np.zeros((0, n, L)),
            np.stack([saved_ev[c] for c in checkpoints]) if checkpoints else np.zeros((0, K_eval.shape[0], L)))


def kernel_dynamics(K_train, K_eval, f0_train, f0_eval, y_train, lr, steps, beta1=0.9, batches=None,
                    checkpoints=None, on_nonfinite="raise") -> dict:
    """Run the frozen-preconditioner Adam dynamics in function space.

    ``K_train`` = K(X, X) (n, n); ``K_eval`` = K(x_eval, X) (m, n); loss (f - y)^2 / 2 averaged over the
    batch. ``batches`` is one index array per step (None: full batch). Returns ``{"steps": checkpoints,
    "train": (k, n), "eval": (k, m)}`` (checkpoints default to 1..steps; 0 gives f_0). With
    ``on_nonfinite="raise"`` a non-finite prediction raises FloatingPointError naming the first such step;
    ``"propagate"`` returns the inf/nan values.
    """
    if on_nonfinite not in ("raise", "propagate"):
        raise ValueError(f"on_nonfinite must be 'raise' or 'propagate', got {on_nonfinite!r}")
    if isinstance(lr, bool) or not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    if on_nonfinite == "raise":
        all_steps = list(range(0, int(steps) + 1)) if isinstance(steps, (int, np.integer)) and steps >= 0 else None
        ck, tr, ev = dynamics_multi_lr(K_train, K_eval, f0_train, f0_eval, y_train, [lr], steps, beta1, batches,
                                       checkpoints)
        if not (np.all(np.isfinite(tr)) and np.all(np.isfinite(ev))):
            # locate the first non-finite step
            _, tr_all, ev_all = dynamics_multi_lr(K_train, K_eval, f0_train, f0_eval, y_train, [lr], steps, beta1,
                                                  batches, all_steps)
            bad = [t for t in all_steps if not (np.all(np.isfinite(tr_all[t])) and np.all(np.isfinite(ev_all[t])))]
            raise FloatingPointError(f"kernel_dynamics: non-finite prediction at step {bad[0] if bad else '?'} "
                                     f"(lr = {lr}); use on_nonfinite='propagate' to keep inf/nan")
    else:
        ck, tr, ev = dynamics_multi_lr(K_train, K_eval, f0_train, f0_eval, y_train, [lr], steps, beta1, batches,
                                       checkpoints)
    return {"steps": list(ck), "train": tr[..., 0], "eval": ev[..., 0]}


def linearised_adam(J_train, J_eval, f0_train, f0_eval, y_train, lr, steps, betas=(0.9, 0.999), eps=1e-8,
                    checkpoints=None) -> dict:
    """OAK-E4: Adam on the tangent model f(theta) = f_0 + J (theta - theta_0), full batch, loss mean (f - y)^2 / 2.

    The second moment is evolved from the model's own function-space residuals: g_t = J(X)^T r_t / n with
    r_t = f_{t-1}(X) - y, v_t = b2 v_{t-1} + (1 - b2) g_t^2, P_t = 1 / (sqrt(v_t / (1 - b2^t)) + eps), so the
    kernel J P_t J^T changes with t. It uses nothing of the fine-tuning run it predicts (only theta_0's Jacobian
    and the labels). Returns ``{"steps", "train" (k, n), "eval" (k, m), "P_mean"}`` (P_mean: the average of P_t
    over the ``steps`` steps).
    """
    J_train = np.asarray(J_train, dtype=np.float64)
    J_eval = np.asarray(J_eval, dtype=np.float64)
    if J_train.ndim != 2 or J_eval.ndim != 2 or J_train.shape[1] != J_eval.shape[1]:
        raise ValueError(f"J_train (n, p) and J_eval (m, p) must be 2-D with the same p, got {J_train.shape} and "
                         f"{J_eval.shape}")
    n, p = J_train.shape
    f0_train = np.asarray(f0_train, dtype=np.float64).reshape(-1)
    f0_eval = np.asarray(f0_eval, dtype=np.float64).reshape(-1)
    y_train = np.asarray(y_train, dtype=np.float64).reshape(-1)
    if f0_train.size != n or y_train.size != n:
        raise ValueError(f"f0_train and y_train must have length n = {n}, got {f0_train.size} and {y_train.size}")
    if f0_eval.size != J_eval.shape[0]:
        raise ValueError(f"f0_eval must have length m = {J_eval.shape[0]}, got {f0_eval.size}")
    if isinstance(lr, bool) or not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    b1, b2 = betas
    if not (0 <= b1 < 1 and 0 <= b2 < 1):
        raise ValueError(f"betas must lie in [0, 1), got {betas!r}")
    if not np.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be finite and > 0, got {eps!r}")
    steps = int(steps)
    checkpoints = list(range(1, steps + 1)) if checkpoints is None else [int(c) for c in checkpoints]
    if any(c < 1 or c > steps for c in checkpoints):
        raise ValueError(f"checkpoints must lie in [1, steps = {steps}], got {checkpoints}")
    want = set(checkpoints)
    d, m, v, P_sum = np.zeros(p), np.zeros(p), np.zeros(p), np.zeros(p)
    f_tr = f0_train.copy()
    saved_tr, saved_ev = {}, {}
    for t in range(1, steps + 1):
        g = J_train.T @ ((f_tr - y_train) / n)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        P = 1.0 / (np.sqrt(v / (1 - b2 ** t)) + eps)
        P_sum += P
        d -= lr * P * m / (1 - b1 ** t)
        f_tr = f0_train + J_train @ d
        if t in want:
            saved_tr[t], saved_ev[t] = f_tr.copy(), f0_eval + J_eval @ d
    return {"steps": checkpoints, "train": np.stack([saved_tr[c] for c in checkpoints]),
            "eval": np.stack([saved_ev[c] for c in checkpoints]), "P_mean": P_sum / steps}
