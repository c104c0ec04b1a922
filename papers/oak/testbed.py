"""One fine-tuning run compared with its kernel predictions (shared by the digits and MiniLM testbeds).

Adam (torch.optim.Adam, full batch, no weight decay) trains the real network for T_max steps; at the
checkpoints the float64 predictions f_FT are compared with the function-space dynamics of
:mod:`papers.oak.dynamics` under the kernels OAK-E1 (warm-up v_hat at T0), OAK-E2 (v_hat at theta_0 from
:func:`second_moment_estimate`), OAK-E3 (oracle average of P_t), eNTK (Adam's lr and oracle lr) and A-SignGD
(oracle lr).
"""
from __future__ import annotations

import copy

import numpy as np

from papers.oak.dynamics import ORACLE_MULTIPLIERS, dynamics_multi_lr
from papers.oak.kernels import (blockwise_kernels, jacobian_vector_rows, kernel_from_precond,
                                second_moment_estimate)
from papers.oak.metrics import kernel_drift, relerr_columns

__all__ = ["finetune", "compare", "DenseJacobian", "BlockJacobian", "converged_kernel_regression", "METHODS", "CLIP", "KRR_LAMBDAS"]

KRR_LAMBDAS = (0.0, 1e-6, 1e-4, 1e-2)


def _krr_predict(K_fit, K_eval, f0_fit, f0_eval, y_fit, lam):
    """f = f_0 + K(x, X)(K(X, X) + lam ||K(X, X)||_op I)^{-1}(y - f_0(X)) (lam = 0 by least squares)."""
    rhs = np.asarray(y_fit) - np.asarray(f0_fit)
    if lam == 0:
        alpha = np.linalg.lstsq(K_fit, rhs, rcond=None)[0]
    else:
        alpha = np.linalg.solve(K_fit + lam * np.linalg.norm(K_fit, 2) * np.eye(len(rhs)), rhs)
    return np.asarray(f0_eval) + K_eval @ alpha


def converged_kernel_regression(K_train, K_test, f0_train, f0_test, y_train, y_test, lambdas=KRR_LAMBDAS,
                                holdout_frac=0.25):
    """Test accuracy of Malladi et al. 2023's converged kernel regression with lam chosen on held-out data.

    The last ``ceil(holdout_frac n)`` training rows are held out; each lam is fitted on the others and the one
    with the best held-out sign accuracy (ties: the first in ``lambdas``) is refitted on every training row and
    evaluated once on the test rows. The test set never chooses lam.
    """
    y_train, f0_train = np.asarray(y_train), np.asarray(f0_train)
    lambdas = tuple(lambdas)
    if not lambdas:
        raise ValueError("lambdas must not be empty")
    n = len(y_train)
    n_val = int(np.ceil(holdout_frac * n)) if len(lambdas) > 1 else 0
    if len(lambdas) > 1 and not 1 <= n_val < n:
        raise ValueError(f"holdout_frac {holdout_frac} leaves no fitting or no held-out rows among {n}")
    best_lam = lambdas[0]
    if n_val:
        fit, val = slice(0, n - n_val), slice(n - n_val, n)
        scores = []
        for lam in lambdas:
            f = _krr_predict(K_train[fit, fit], K_train[val, fit], f0_train[fit], f0_train[val], y_train[fit], lam)
            scores.append(float(np.mean(np.sign(f) == y_train[val])))
        best_lam = lambdas[int(np.argmax(scores))]
    f = _krr_predict(K_train, K_test, f0_train, f0_test, y_train, best_lam)
    return float(np.mean(np.sign(f) == np.asarray(y_test)))


METHODS = ("oak_e1", "oak_e2", "oak_e3", "ntk", "ntk_oracle", "asgd_oracle")
CLIP = 1.0e6  # relerr values above (or diverged) are clipped to this in metrics and marked


def _flat(tensors):
    import torch

    return torch.cat([t.detach().reshape(-1).double() for t in tensors]).cpu().numpy()


class DenseJacobian:
    """The Jacobian J (rows: training points first, then test points) held in memory."""

    def __init__(self, J):
        self.J = np.asarray(J)

    def kernels(self, preconds, n_train):
        J_train = self.J[:n_train]
        out, used = {}, {}
        for name, P in preconds.items():
            used[name] = None
            if callable(P):
                P = used[name] = np.asarray(P(J_train, slice(0, self.J.shape[1])), dtype=np.float64)
            if isinstance(P, str):
                out[name] = kernel_from_precond(self.J, J_train, sign_train=True)
            else:
                out[name] = kernel_from_precond(self.J, J_train, precond=P)
        return out, used

    def rows_dot(self, vec, start):
        return self.J[start:] @ vec


class BlockJacobian:
    """The Jacobian of ``model`` at its current parameters on ``inputs`` (training rows first), never held
    whole: kernels by :func:`blockwise_kernels`, J @ v by forward-mode products. For full-encoder runs."""

    def __init__(self, model, inputs, chunk_size=32, max_block=1 << 22):
        self.model, self.inputs = model, tuple(inputs)
        self.chunk_size, self.max_block = int(chunk_size), int(max_block)

    def kernels(self, preconds, n_train):
        return blockwise_kernels(self.model, self.inputs, n_train, preconds, max_block=self.max_block,
                                 chunk_size=self.chunk_size)

    def rows_dot(self, vec, start):
        return jacobian_vector_rows(self.model, tuple(x[start:] for x in self.inputs), vec)


def finetune(net, loss_inputs, eval64, y_train, lr, T_max, checkpoints, T0, drift_T=(), drift_kernel=None,
             betas=(0.9, 0.999), eps=1e-8, batches=None, step_hook=None):
    """Adam on (f - y)^2 / 2 (mean over the batch); returns predictions and optimizer statistics per checkpoint.

    ``loss_inputs(net)`` gives f(X_train) (float32 tensor); ``eval64(net64)`` gives (f_train, f_test) as
    float64 numpy arrays from a float64 copy. ``drift_kernel(net)`` returns the training-set NTK at the
    current parameters (for the kernel drift at ``drift_T``). ``batches``: one index array per step (the
    loss is the mean over those training points); None means full batch. The network may live on any device.
    ``step_hook(t, P_t, m_hat_t)`` (optional) is called after every step with Adam's preconditioner
    1 / (sqrt(v_hat_t) + eps) and bias-corrected first moment, flat float64 arrays (the update is lr P_t m_hat_t).
    """
    import torch

    params = [p for p in net.parameters() if p.requires_grad]
    theta0 = _flat(params)
    y = torch.as_tensor(np.asarray(y_train), dtype=torch.float32, device=params[0].device)
    if batches is not None:
        if len(batches) < T_max:
            raise ValueError(f"batches must hold one index array per step ({T_max}), got {len(batches)}")
        batches = [torch.as_tensor(np.asarray(b), dtype=torch.long, device=y.device) for b in batches]
    opt = torch.optim.Adam(params, lr=lr, betas=betas, eps=eps)
    M = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    P_sum = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    out = {"f_train": {}, "f_test": {}, "delta": {}, "M": {}, "drift_K": {}, "v_hat_T0": None}
    want, drift_T = set(checkpoints), set(drift_T)
    b1, b2 = betas
    for t in range(1, T_max + 1):
        opt.zero_grad()
        f = loss_inputs(net)
        if batches is None:
            loss = 0.5 * ((f - y) ** 2).mean()
        else:
            b = batches[t - 1]
            loss = 0.5 * ((f[b] - y[b]) ** 2).mean()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for p, Mp, Pp in zip(params, M, P_sum):
                st = opt.state[p]
                Mp.add_(st["exp_avg"].double(), alpha=1.0 / (1 - b1 ** t))
                v = st["exp_avg_sq"].double() / (1 - b2 ** t)
                Pp.add_(1.0 / (v.sqrt_() + eps))
        if step_hook is not None:
            st = [opt.state[p] for p in params]
            step_hook(t, _flat([1.0 / ((s["exp_avg_sq"].double() / (1 - b2 ** t)).sqrt() + eps) for s in st]),
                      _flat([s["exp_avg"].double() / (1 - b1 ** t) for s in st]))
        if t == 1:  # no warm-up: v_hat after one step (the warmup-estimator control)
            out["v_hat_1"] = _flat([opt.state[p]["exp_avg_sq"] for p in params]) / (1 - b2)
        if t == T0:
            out["v_hat_T0"] = _flat([opt.state[p]["exp_avg_sq"] for p in params]) / (1 - b2 ** t)
        if t in want:
            net64 = copy.deepcopy(net).double()
            f_tr, f_te = eval64(net64)
            out["f_train"][t], out["f_test"][t] = f_tr, f_te
            out["delta"][t] = _flat(params) - theta0
            out["M"][t] = _flat(M)
        if t in drift_T and drift_kernel is not None:
            out["drift_K"][t] = drift_kernel(net)
    out["P_mean"] = _flat(P_sum) / T_max
    return out


def compare(J, n_train, f0_train, f0_test, y_train, y_test, run, lr, checkpoints, base=None, eps=1e-8,
            batches=None, controls=None):
    """Kernel predictions of one fine-tuning run ``run`` (from :func:`finetune`) and their errors.

    ``J`` is the Jacobian at theta_0 with the training rows first (``n_train``) and then the test rows: an
    array, a :class:`DenseJacobian` or a :class:`BlockJacobian`. ``base`` caches kernels that do not depend
    on the run (ntk, asgd, and E2 per residual and batch size). ``batches`` (one index array per step, as
    used by the run) makes the kernel dynamics mini-batch and E2 use the mini-batch formula. Returns a dict
    of per-checkpoint arrays: relerr and agreement per method, accuracies, error terms, oracle multipliers.

    ``controls`` (optional dict) adds negative-control variants under ``res["control"]``: ``"perm"`` (a
    permutation of the p parameters) gives "oak_e1_perm", OAK-E1 with its preconditioner permuted across
    parameters (same values, assignment to parameters destroyed); ``"warm1": True`` gives "oak_warm1", the
    warm-up estimate with T0 = 1 (v_hat after one Adam step, no warm-up); ``"label_perm"`` (a permutation of the
    training rows) gives "krr_perm_acc", the converged OAK-E1 kernel regression fitted to permuted training labels.
    """
    base = {} if base is None else base
    src = J if hasattr(J, "kernels") else DenseJacobian(J)
    n = int(n_train)
    B = None if batches is None else int(np.asarray(batches[0]).size)
    resid = np.asarray(f0_train) - np.asarray(y_train)
    e2_key = ("e2", resid.tobytes(), B)

    def e2_precond(J_train, sl):
        return 1.0 / (np.sqrt(second_moment_estimate(J_train, resid, batch_size=B)) + eps)

    P = {"oak_e1": 1.0 / (np.sqrt(run["v_hat_T0"]) + eps), "oak_e3": run["P_mean"]}
    controls = dict(controls or {})
    if "perm" in controls:
        perm = np.asarray(controls["perm"])
        if perm.shape != P["oak_e1"].shape:
            raise ValueError(f"controls['perm'] must have length p = {P['oak_e1'].size}, got shape {perm.shape}")
        P["oak_e1_perm"] = P["oak_e1"][perm]
    if controls.get("warm1"):
        P["oak_warm1"] = 1.0 / (np.sqrt(run["v_hat_1"]) + eps)
    need = dict(P)
    if "ntk" not in base:
        need["ntk"] = None
    if "asgd" not in base:
        need["asgd"] = "sign"
    if e2_key not in base:
        need["e2"] = e2_precond
    Ks, used = src.kernels(need, n)
    for key in ("ntk", "asgd"):
        if key in Ks:
            base[key] = Ks.pop(key)
    if "e2" in Ks:
        base[e2_key] = (Ks.pop("e2"), used["e2"])
    P["oak_e2"] = base[e2_key][1]
    K = {"oak_e1": Ks["oak_e1"], "oak_e3": Ks["oak_e3"], "oak_e2": base[e2_key][0], "ntk": base["ntk"],
         "asgd": base["asgd"]}
    ctrl_methods = [k for k in ("oak_e1_perm", "oak_warm1") if k in Ks]
    K.update({k: Ks[k] for k in ctrl_methods})
    steps = max(checkpoints)
    res = {"relerr": {m: [] for m in METHODS}, "agreement": {m: [] for m in METHODS}, "acc": {}, "oracle_c": {},
           "terms": {"lin": [], "eP_e1": [], "eP_e2": [], "total_e1": []}}
    preds = {}
    for key in ("oak_e1", "oak_e2", "oak_e3", "ntk", *ctrl_methods):
        _, _, ev = dynamics_multi_lr(K[key][:n], K[key][n:], f0_train, f0_test, y_train, [lr], steps,
                                     checkpoints=checkpoints, batches=batches)
        preds[key] = ev[..., 0]
    for key, kk in (("ntk_oracle", "ntk"), ("asgd_oracle", "asgd")):
        _, _, ev = dynamics_multi_lr(K[kk][:n], K[kk][n:], f0_train, f0_test, y_train, lr * ORACLE_MULTIPLIERS,
                                     steps, checkpoints=checkpoints, batches=batches)
        best_pred, best_c = [], []
        for i, t in enumerate(checkpoints):
            errs = relerr_columns(run["f_test"][t], ev[i], f0_test)
            j = int(np.argmin(errs))
            best_pred.append(ev[i][:, j])
            best_c.append(float(ORACLE_MULTIPLIERS[j]))
        preds[key] = np.array(best_pred)
        res["oracle_c"][key] = best_c
    res["control"] = {"relerr": {m: [] for m in ctrl_methods}, "agreement": {m: [] for m in ctrl_methods}}
    for i, t in enumerate(checkpoints):
        f_ft = run["f_test"][t]
        denom = np.linalg.norm(f_ft - f0_test)
        for m in ctrl_methods:
            with np.errstate(over="ignore", invalid="ignore"):
                e = float(np.linalg.norm(f_ft - preds[m][i]) / denom)
                a = float(np.mean(np.sign(preds[m][i]) == np.sign(f_ft)))
            res["control"]["relerr"][m].append(e if np.isfinite(e) else np.inf)
            res["control"]["agreement"][m].append(a)
        for m in METHODS:
            pred = preds[m][i]
            with np.errstate(over="ignore", invalid="ignore"):
                e = float(np.linalg.norm(f_ft - pred) / denom)
            res["relerr"][m].append(e if np.isfinite(e) else np.inf)
            res["agreement"][m].append(float(np.mean(np.sign(pred) == np.sign(f_ft))))
        Jd = src.rows_dot(run["delta"][t], n)
        lin = f_ft - (f0_test + Jd)
        res["terms"]["lin"].append(float(np.linalg.norm(lin) / denom))
        for key in ("oak_e1", "oak_e2"):
            eP = -Jd - lr * src.rows_dot(P[key] * run["M"][t], n)
            res["terms"]["eP_" + key[-2:]].append(float(np.linalg.norm(eP) / denom))
        res["terms"]["total_e1"].append(res["relerr"]["oak_e1"][-1])
    T = checkpoints[-1]
    res["acc"] = {"ft": float(np.mean(np.sign(run["f_test"][T]) == y_test)),
                  "oak_e1": float(np.mean(np.sign(preds["oak_e1"][-1]) == y_test)),
                  "ntk_oracle": float(np.mean(np.sign(preds["ntk_oracle"][-1]) == y_test))}
    res["acc"]["krr_best"] = converged_kernel_regression(K["oak_e1"][:n], K["oak_e1"][n:], f0_train, f0_test,
                                                         y_train, y_test)
    if "label_perm" in controls:
        lp = np.asarray(controls["label_perm"])
        if sorted(lp.tolist()) != list(range(n)):
            raise ValueError(f"controls['label_perm'] must be a permutation of the {n} training rows")
        res["control"]["krr_perm_acc"] = converged_kernel_regression(
            K["oak_e1"][:n], K["oak_e1"][n:], f0_train, f0_test, np.asarray(y_train)[lp], y_test)
    res["pred_e1_T"] = preds["oak_e1"][-1]
    res["drift"] = {int(t): kernel_drift(K["ntk"][:n], KT) for t, KT in run["drift_K"].items()}
    return res
