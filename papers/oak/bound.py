"""The OAK error as a bound: preconditioner (v-) drift, linearisation remainder (Hessian-vector products) and the
prediction error of a frozen-preconditioner kernel.

For Adam from theta_0 with bias-corrected moments m_hat_t and preconditioners P_t, Delta_T = theta_T - theta_0 =
-lr sum_t P_t m_hat_t. With M_T = sum_t m_hat_t, a frozen estimate P and the test Jacobian J at theta_0:

    f_FT - f_0 = J Delta_T + R_T                                    (linearisation remainder R_T)
    D_T        = lr J ((P_t - P) summed along the run)  = -J Delta_T - lr J (P * M_T)      (v-drift term)
    f_FT - f_K = R_T - D_T + F_T,  F_T = lr J P (J^T U_T - M_T)     (momentum mismatch, U_T = sum_t u_hat_t)

so ||f_FT - f_K|| <= ||R_T|| + ||D_T|| + ||F_T|| exactly. The thesis tested here is that the first two terms
bound the error: ||f_FT - f_K|| <= ||D_T|| + ||R_T||. R_T is estimated to second order by
R2_T(x) = Delta_T^T H(x) Delta_T / 2 (H(x) the Hessian of f(x) in theta at theta_0), computed with forward-over-
forward products (no Hessian formed); the exact remainder is also available from the fine-tuned outputs.
"""
from __future__ import annotations

import numpy as np

from papers.oak.kernels import _to_tensors, split_flat_vector

__all__ = ["hessian_vector_product", "quadratic_form_rows", "error_terms"]


def hessian_vector_product(model, inputs, vec, weights=None, param_names=None) -> np.ndarray:
    """H vec for H the Hessian in theta of F(theta) = sum_i w_i f(x_i; theta) (``weights`` None: all ones).

    Forward-over-reverse (``torch.func.jvp`` of ``torch.func.grad``); returns a flat float64 vector over the
    parameters in ``named_parameters()`` order (default: the trainable ones), like ``per_example_jacobian``'s
    columns. The Hessian is never formed.
    """
    import torch
    from torch.func import functional_call, grad, jvp

    names, primals, tangents, frozen, buffers, dtype, device = split_flat_vector(model, vec, param_names)
    tensors = _to_tensors(inputs, dtype, device)
    n = int(tensors[0].shape[0])
    w = torch.ones(n, dtype=dtype, device=device) if weights is None else \
        torch.as_tensor(np.asarray(weights, dtype=np.float64), dtype=dtype, device=device).reshape(-1)
    if w.shape[0] != n:
        raise ValueError(f"weights must have length n = {n}, got {w.shape[0]}")

    def F(params):
        return (functional_call(model, ({**frozen, **params}, buffers), tensors).reshape(-1) * w).sum()

    _, hv = jvp(grad(F), (primals,), (tangents,))
    return torch.cat([hv[k].reshape(-1) for k in names]).double().cpu().numpy()


def quadratic_form_rows(model, inputs, vec, param_names=None, chunk_size: int = 256) -> np.ndarray:
    """vec^T H(x_i) vec for every example (float64, shape (n,)): the second directional derivative
    d^2/ds^2 f(x_i; theta + s vec) at s = 0, by forward-over-forward products (``torch.func.jvp`` twice)."""
    from torch.func import functional_call, jvp

    if int(chunk_size) != chunk_size or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    names, primals, tangents, frozen, buffers, dtype, device = split_flat_vector(model, vec, param_names)
    tensors = _to_tensors(inputs, dtype, device)
    n = int(tensors[0].shape[0])
    out = np.empty(n)
    for s in range(0, n, int(chunk_size)):
        xs = tuple(t[s:s + int(chunk_size)] for t in tensors)

        def f(params):
            return functional_call(model, ({**frozen, **params}, buffers), xs).reshape(-1)

        def df(params):
            return jvp(f, (params,), (tangents,))[1]

        out[s:s + int(chunk_size)] = jvp(df, (primals,), (tangents,))[1].double().cpu().numpy()
    return out


def error_terms(f_ft, f_kernel, f0, J_delta, J_PM, lr, quad) -> dict:
    """The norms of the decomposition f_FT - f_K = R - D + F on one evaluation set (module docstring).

    ``J_delta`` = J Delta_T, ``J_PM`` = J (P * M_T) (both on the evaluation rows), ``quad`` = Delta_T^T H(x)
    Delta_T per row. Returns err, drift (||D||), rem (exact ||R||), rem2 (||R2||, the HVP estimate), fb
    (||F||, the rest), all divided by ||f_FT - f_0||.
    """
    f_ft, f_kernel, f0 = (np.asarray(a, dtype=np.float64).reshape(-1) for a in (f_ft, f_kernel, f0))
    J_delta, J_PM, quad = (np.asarray(a, dtype=np.float64).reshape(-1) for a in (J_delta, J_PM, quad))
    m = f_ft.size
    for name, a in (("f_kernel", f_kernel), ("f0", f0), ("J_delta", J_delta), ("J_PM", J_PM), ("quad", quad)):
        if a.size != m:
            raise ValueError(f"{name} has {a.size} rows but f_ft has {m}")
    if not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    denom = np.linalg.norm(f_ft - f0)
    if denom == 0:
        raise ValueError("f_ft equals f0 everywhere: the relative terms have a zero denominator")
    err = f_ft - f_kernel
    R = f_ft - f0 - J_delta
    D = -J_delta - lr * J_PM
    F = err - R + D
    return {"err": float(np.linalg.norm(err) / denom), "drift": float(np.linalg.norm(D) / denom),
            "rem": float(np.linalg.norm(R) / denom), "rem2": float(np.linalg.norm(0.5 * quad) / denom),
            "fb": float(np.linalg.norm(F) / denom)}
