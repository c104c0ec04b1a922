"""Per-example Jacobians and the optimizer-aware kernels (OAK, eNTK, asymmetric SignGD).

With J(x) = df(x)/dtheta at theta_0 (a row of p numbers) and P = diag(1/(sqrt(v_hat) + eps)):

    K_P(x, x')  = J(x) P J(x')^T             (OAK; P = I gives the empirical NTK, Jacot et al. 2018)
    K_AS(x, x') = <J(x), sign J(x')>          (asymmetric SignGD kernel, Malladi et al. 2023, sign on the
                                               training point x')

References: Malladi, Wettig, Yu, Chen, Arora, "A Kernel-Based View of Language Model Fine-Tuning", ICML 2023;
Kingma & Ba, "Adam", ICLR 2015.
"""
from __future__ import annotations

import numpy as np

from shared.device import resolve_device  # noqa: F401 (part of this module's API)

__all__ = ["per_example_jacobian", "kernel_matrix", "kernel_from_precond", "second_moment_estimate",
           "blockwise_kernels", "jacobian_vector_rows", "parameter_blocks", "resolve_device", "KINDS",
           "BLOCK_COLS"]

KINDS = ("oak", "ntk", "asym_signgd")
BLOCK_COLS = 1 << 17  # columns per block when forming float64 kernels from (possibly float32) Jacobians


def _as_tuple(inputs):
    if isinstance(inputs, tuple):
        return inputs
    if isinstance(inputs, list):
        return tuple(inputs)
    return (inputs,)


def _model_device(model):
    for p in model.parameters():
        return p.device
    return None


def _to_tensors(inputs, dtype, device=None):
    import torch

    arrays = _as_tuple(inputs)
    if not arrays:
        raise ValueError("inputs must hold at least one array")
    tensors = []
    for a in arrays:
        t = torch.as_tensor(np.asarray(a)) if not isinstance(a, torch.Tensor) else a
        if t.ndim == 0:
            raise ValueError("inputs: every array needs a leading dimension n")
        if t.is_floating_point():
            t = t.to(dtype)
        if device is not None:
            t = t.to(device)
        tensors.append(t)
    lead = {int(t.shape[0]) for t in tensors}
    if len(lead) != 1:
        raise ValueError(f"inputs: leading dimensions differ ({sorted(lead)}); every array must have n rows")
    return tuple(tensors)


def per_example_jacobian(model, inputs, param_names=None, method: str = "vmap", chunk_size: int = 32,
                         max_bytes: int = 4 * 2 ** 30) -> np.ndarray:
    """Per-example Jacobian J[i] = d f(x_i) / d theta, float64 array of shape (n, p).

    ``model`` is a ``torch.nn.Module`` whose forward takes a batch (the arrays of ``inputs``, leading dimension
    n) and returns shape (n,) or (n, 1). Columns follow ``model.named_parameters()`` order restricted to
    ``param_names`` (default: the parameters with ``requires_grad``), each tensor flattened in C order.
    ``method="vmap"`` uses ``torch.func.vmap(jacrev(functional_call))`` over chunks of ``chunk_size``
    examples (the PyTorch tutorial's recipe); ``method="loop"`` runs one autograd pass per example.
    Float arrays are cast to the dtype of the model's parameters; integer arrays (token ids) are kept. Inputs
    are moved to the device of the model's parameters (CPU or CUDA); the result is always a CPU numpy array.
    """
    import torch
    from torch.func import functional_call, jacrev, vmap

    if method not in ("vmap", "loop"):
        raise ValueError(f"method must be 'vmap' or 'loop', got {method!r}")
    if int(chunk_size) != chunk_size or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    named = dict(model.named_parameters())
    if param_names is None:
        names = [k for k, v in named.items() if v.requires_grad]
        if not names:
            raise ValueError("param_names: the model has no trainable parameters (requires_grad)")
    else:
        names = list(param_names)
        if not names:
            raise ValueError("param_names must name at least one parameter")
        unknown = [k for k in names if k not in named]
        if unknown:
            raise ValueError(f"param_names: unknown parameter(s) {unknown[:5]}")
        order = list(named)
        names = sorted(set(names), key=order.index)
    dtype = named[names[0]].dtype
    tensors = _to_tensors(inputs, dtype, named[names[0]].device)
    n = int(tensors[0].shape[0])
    p = int(sum(named[k].numel() for k in names))
    if n * p * 8 > max_bytes:
        raise ValueError(f"the float64 Jacobian needs n * p * 8 = {n * p * 8} bytes > max_bytes = {max_bytes}; "
                         "use a smaller parameter subset (param_names) or blockwise kernels (blockwise_kernels, "
                         "one parameter block at a time) / NTK-vector products")
    with torch.no_grad():
        probe = model(*[t[:1] for t in tensors])
    if probe.ndim > 2 or probe.numel() != 1:
        raise ValueError(f"the model must return one scalar per example (shape (n,) or (n, 1)); got shape "
                         f"{tuple(probe.shape)} for one example")
    out = np.empty((n, p), dtype=np.float64)
    if method == "loop":
        params = [named[k] for k in names]
        for i in range(n):
            f = model(*[t[i:i + 1] for t in tensors]).reshape(())
            grads = torch.autograd.grad(f, params, allow_unused=True)
            row = [torch.zeros_like(w) if g is None else g for g, w in zip(grads, params)]
            out[i] = torch.cat([g.reshape(-1) for g in row]).double().cpu().numpy()
        return out
    train = {k: named[k].detach() for k in names}
    frozen = {k: v.detach() for k, v in named.items() if k not in train}
    buffers = dict(model.named_buffers())

    def f_single(params, *xs):
        y = functional_call(model, ({**frozen, **params}, buffers), tuple(x.unsqueeze(0) for x in xs))
        return y.reshape(())

    jac = vmap(jacrev(f_single), in_dims=(None,) + (0,) * len(tensors))
    for start in range(0, n, int(chunk_size)):
        stop = min(n, start + int(chunk_size))
        blocks = jac(train, *[t[start:stop] for t in tensors])
        out[start:stop] = torch.cat([blocks[k].reshape(stop - start, -1) for k in names], dim=1).double().cpu().numpy()
    return out


def _check_jacobians(J1, J2):
    J1 = np.asarray(J1)
    if J1.ndim != 2:
        raise ValueError(f"J1 must be a 2-D array (n1, p), got shape {J1.shape}")
    if J2 is None:
        return J1, J1
    J2 = np.asarray(J2)
    if J2.ndim != 2:
        raise ValueError(f"J2 must be a 2-D array (n2, p), got shape {J2.shape}")
    if J1.shape[1] != J2.shape[1]:
        raise ValueError(f"J1 and J2 must have the same number of columns p, got {J1.shape[1]} and {J2.shape[1]}")
    return J1, J2


def kernel_from_precond(J1, J2=None, precond=None, sign_train: bool = False) -> np.ndarray:
    """K = J1 diag(precond) T(J2)^T in float64, formed in column blocks; T = sign if ``sign_train`` else id.

    ``precond=None`` means the identity. Used by :func:`kernel_matrix` and for the oracle preconditioner
    E3 (an average of P_t, which is not of the form 1/(sqrt(v)+eps)).
    """
    J1, J2 = _check_jacobians(J1, J2)
    p = J1.shape[1]
    if precond is not None:
        precond = np.asarray(precond, dtype=np.float64)
        if precond.shape != (p,):
            raise ValueError(f"precond must have length p = {p}, got shape {precond.shape}")
    K = np.zeros((J1.shape[0], J2.shape[0]), dtype=np.float64)
    for start in range(0, p, BLOCK_COLS):
        sl = slice(start, min(p, start + BLOCK_COLS))
        A = np.asarray(J1[:, sl], dtype=np.float64)
        B = np.asarray(J2[:, sl], dtype=np.float64)
        if sign_train:
            B = np.sign(B)
        if precond is not None:
            B = B * precond[sl]
        K += A @ B.T
    return K


def kernel_matrix(J1, J2=None, kind: str = "oak", v_hat=None, eps: float = 1e-8) -> np.ndarray:
    """Kernel matrix K (n1, n2) between evaluation rows J1 and training rows J2 (J2=None means J1).

    - ``"oak"``: K = J1 diag(1 / (sqrt(v_hat) + eps)) J2^T, the Adam-preconditioned kernel with frozen
      second-moment estimate ``v_hat`` (length p);
    - ``"ntk"``: K = J1 J2^T (empirical NTK, the SGD kernel);
    - ``"asym_signgd"``: K = J1 sign(J2)^T (Malladi et al. 2023; the sign is on the training side).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    J1, J2 = _check_jacobians(J1, J2)
    if kind == "ntk":
        return kernel_from_precond(J1, J2)
    if kind == "asym_signgd":
        return kernel_from_precond(J1, J2, sign_train=True)
    if v_hat is None:
        raise ValueError("kind='oak' needs v_hat (the second-moment estimate, length p)")
    v_hat = np.asarray(v_hat, dtype=np.float64)
    if v_hat.shape != (J1.shape[1],):
        raise ValueError(f"v_hat must have length p = {J1.shape[1]}, got shape {v_hat.shape}")
    if not np.all(np.isfinite(v_hat)):
        raise ValueError("v_hat must be finite")
    if np.any(v_hat < 0):
        raise ValueError("v_hat must be non-negative")
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be finite and >= 0, got {eps!r}")
    if eps == 0 and np.any(v_hat == 0):
        raise ValueError("eps = 0 with a zero entry of v_hat gives an infinite preconditioner; use eps > 0")
    return kernel_from_precond(J1, J2, precond=1.0 / (np.sqrt(v_hat) + eps))


def second_moment_estimate(J_train, residual, batch_size=None) -> np.ndarray:
    """Estimator E2 of Adam's bias-corrected second moment at theta_0, shape (p,).

    Per-example loss gradients G_i = r_i J(x_i) (loss (f - y)^2 / 2, r = f_0 - y), mean g = (1/n) sum_i G_i
    and population variance sigma^2 = (1/n) sum_i (G_i - g)^2 (elementwise). For a batch of size B drawn
    without replacement, E[g_B^2] = g^2 + (sigma^2 / B) (n - B) / (n - 1); ``batch_size=None`` (or B = n)
    gives g^2, which is exactly Adam's v_hat_1 for a full-batch first step.
    """
    J = np.asarray(J_train)
    if J.ndim != 2:
        raise ValueError(f"J_train must be a 2-D array (n, p), got shape {J.shape}")
    r = np.asarray(residual, dtype=np.float64).reshape(-1)
    n = J.shape[0]
    if r.shape[0] != n:
        raise ValueError(f"residual has length {r.shape[0]} but J_train has {n} rows")
    if batch_size is not None and (int(batch_size) != batch_size or not 1 <= batch_size <= n):
        raise ValueError(f"batch_size must be an integer in [1, n = {n}], got {batch_size!r}")
    p = J.shape[1]
    g = np.zeros(p)
    sq = np.zeros(p)
    for start in range(0, p, BLOCK_COLS):
        sl = slice(start, min(p, start + BLOCK_COLS))
        G = r[:, None] * np.asarray(J[:, sl], dtype=np.float64)
        g[sl] = G.mean(axis=0)
        if batch_size is not None and batch_size < n:
            sq[sl] = ((G - g[sl]) ** 2).mean(axis=0)
    v = g ** 2
    if batch_size is not None and batch_size < n:
        v = v + sq / batch_size * (n - batch_size) / (n - 1)
    return v


def parameter_blocks(model, param_names=None, max_block: int = 1 << 22):
    """Parameter blocks for :func:`blockwise_kernels`: lists of parameter names in ``named_parameters()`` order
    (default: the trainable ones), one tensor per block, adjacent small tensors merged up to ``max_block``
    numbers. Returns (blocks, slices), the slices giving each block's columns in the flattened parameter vector.
    """
    named = dict(model.named_parameters())
    if param_names is None:
        names = [k for k, v in named.items() if v.requires_grad]
    else:
        unknown = [k for k in param_names if k not in named]
        if unknown:
            raise ValueError(f"param_names: unknown parameter(s) {unknown[:5]}")
        order = list(named)
        names = sorted(set(param_names), key=order.index)
    if not names:
        raise ValueError("param_names: the model has no trainable parameters (requires_grad)")
    if int(max_block) != max_block or max_block < 1:
        raise ValueError(f"max_block must be an integer >= 1, got {max_block!r}")
    blocks, cur, size = [], [], 0
    for k in names:
        m = named[k].numel()
        if cur and size + m > max_block:
            blocks.append(cur)
            cur, size = [], 0
        cur.append(k)
        size += m
    blocks.append(cur)
    slices, start = [], 0
    for b in blocks:
        m = sum(named[k].numel() for k in b)
        slices.append(slice(start, start + m))
        start += m
    return blocks, slices


def blockwise_kernels(model, inputs, n_train: int, preconds: dict, param_names=None, max_block: int = 1 << 22,
                      chunk_size: int = 32, method: str = "vmap", max_bytes: int = 4 * 2 ** 30):
    """Kernels K = sum_b J_b diag(P_b) T(J_b[:n_train])^T without ever holding the full Jacobian.

    For each parameter block b (see :func:`parameter_blocks`) the per-example Jacobian J_b (n, p_b) of all
    ``inputs`` is computed with :func:`per_example_jacobian`, its contribution added to every requested kernel,
    and discarded. Memory is n * max_block * 8 bytes instead of n * p * 8. ``preconds`` maps a name to
      - None: the empirical NTK (P = I);
      - "sign": the asymmetric SignGD kernel J sign(J_train)^T;
      - an array of length p: the diagonal preconditioner P;
      - a callable (J_b_train, slice) -> P_b (e.g. the E2 estimate, which is elementwise in the parameters).
    Returns (kernels, used): kernels[name] (n, n_train) float64; used[name] the full preconditioner (p,) for
    the callables (None otherwise). The result equals ``kernel_from_precond(J, J[:n_train], ...)`` of the
    one-shot Jacobian.
    """
    blocks, slices = parameter_blocks(model, param_names, max_block)
    p = slices[-1].stop
    n_train = int(n_train)
    kernels, used = {}, {}
    for name, P in preconds.items():
        if isinstance(P, str) and P != "sign":
            raise ValueError(f"preconds[{name!r}]: a string must be 'sign', got {P!r}")
        if P is None or isinstance(P, str) or callable(P):
            used[name] = np.empty(p) if callable(P) else None
        else:
            P = np.asarray(P, dtype=np.float64)
            if P.shape != (p,):
                raise ValueError(f"preconds[{name!r}] must have length p = {p}, got shape {P.shape}")
            used[name] = None
    for names, sl in zip(blocks, slices):
        Jb = per_example_jacobian(model, inputs, param_names=names, method=method, chunk_size=chunk_size,
                                  max_bytes=max_bytes)
        if n_train < 1 or n_train > Jb.shape[0]:
            raise ValueError(f"n_train must lie in [1, n = {Jb.shape[0]}], got {n_train}")
        Jt = Jb[:n_train]
        for name, P in preconds.items():
            if P is None:
                B = Jt
            elif isinstance(P, str):
                B = np.sign(Jt)
            elif callable(P):
                Pb = np.asarray(P(Jt, sl), dtype=np.float64).reshape(-1)
                if Pb.shape != (sl.stop - sl.start,):
                    raise ValueError(f"preconds[{name!r}] returned {Pb.shape} for a block of {sl.stop - sl.start}")
                used[name][sl] = Pb
                B = Jt * Pb
            else:
                B = Jt * np.asarray(P, dtype=np.float64)[sl]
            contrib = Jb @ B.T
            kernels[name] = contrib if name not in kernels else kernels[name] + contrib
        del Jb, Jt
    return kernels, used


def split_flat_vector(model, vec, param_names=None):
    """A flat ``vec`` over the parameters in ``named_parameters()`` order (default: the trainable ones) as
    ``torch.func`` inputs: ``(names, primals, tangents, frozen, buffers, dtype, device)``, with ``primals`` the
    detached parameters, ``tangents`` the matching pieces of ``vec``, ``frozen`` the other parameters. Raises
    ValueError for a wrong length or a non-finite entry."""
    import torch

    blocks, slices = parameter_blocks(model, param_names, max_block=1 << 62)
    names = blocks[0]
    named = dict(model.named_parameters())
    p = slices[0].stop
    vec = np.asarray(vec, dtype=np.float64).reshape(-1)
    if vec.shape != (p,):
        raise ValueError(f"vec must have length p = {p}, got shape {vec.shape}")
    if not np.all(np.isfinite(vec)):
        raise ValueError("vec must be finite")
    dtype, device = named[names[0]].dtype, named[names[0]].device
    primals, tangents, start = {}, {}, 0
    for k in names:
        w = named[k]
        primals[k] = w.detach()
        tangents[k] = torch.as_tensor(vec[start:start + w.numel()], dtype=dtype, device=device).reshape(w.shape)
        start += w.numel()
    frozen = {k: v.detach() for k, v in named.items() if k not in primals}
    return names, primals, tangents, frozen, dict(model.named_buffers()), dtype, device


def jacobian_vector_rows(model, inputs, vec, param_names=None, chunk_size: int = 256) -> np.ndarray:
    """J(x_i) @ vec for every example (float64, shape (n,)) by forward-mode differentiation (torch.func.jvp),
    without forming J. ``vec`` is a flat vector over the parameters in ``named_parameters()`` order (default:
    the trainable ones), like the columns of :func:`per_example_jacobian`."""
    from torch.func import functional_call, jvp

    _, primals, tangents, frozen, buffers, dtype, device = split_flat_vector(model, vec, param_names)
    tensors = _to_tensors(inputs, dtype, device)
    n = int(tensors[0].shape[0])
    out = np.empty(n)
    for s in range(0, n, int(chunk_size)):
        xs = tuple(t[s:s + chunk_size] for t in tensors)

        def f(params):
            return functional_call(model, ({**frozen, **params}, buffers), xs).reshape(-1)

        out[s:s + chunk_size] = jvp(f, (primals,), (tangents,))[1].double().cpu().numpy()
    return out
