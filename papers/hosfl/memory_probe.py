"""Measured client memory of one training step (official claim 3: "HO-SFL reduces client-side memory").

The paper reports peak device memory of the client (LLaMA-3.2-1B on SST-2: 4.14 GB for HO-SFL, 8.78 GB for
SFL). Here one client step is run on a deep transformer-style MLP client and its peak memory is *measured*:

* on the CPU, as the growth of the peak resident set size (``VmHWM``) of a child process forked for that
  one step: the child starts with the inputs (x, lambda) and the client already resident, its high-water
  mark is reset to its current RSS (``/proc/self/clear_refs``; a forked child otherwise inherits the
  parent's earlier peak, which hides a smaller step), and allocations touch fresh pages (glibc
  ``mallopt(M_MMAP_THRESHOLD, 64 KiB)`` and ``malloc_trim(0)`` in the child: otherwise a free chunk the parent
  left in its heap, resident already, is reused), so the growth is the memory the step itself touched;
* on a CUDA device, as ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` minus the
  allocated bytes before the step.

Client steps (lambda = d loss / d z from the server is an input to all of them):

* ``hosfl``: z = f_c(x; theta) and, for p = 1..P, f_c(x; theta + mu u_p) with u_p rebuilt from seed s_p, all
  under ``torch.no_grad`` (Sec. 3 of the paper: forward passes only); v_p = <lambda, f_c(theta + mu u_p) - z>;
  theta <- theta - lr (1/(P mu)) sum_p v_p u_p.
* ``sfl_fo``: z = f_c(x; theta) with autograd, backward of <lambda, z> into theta (J_c^T lambda), SGD step.
* ``inference``: one forward z = f_c(x; theta) under ``torch.no_grad`` and no update (the paper's
  inference-only reference).
* ``hosfl_grad`` (negative control): the HO-SFL step with gradients enabled (theta requires grad), so every
  forward records its graph and keeps the activations it would need for a backward that never comes.
"""
from __future__ import annotations

import ctypes
import os
import pickle

import numpy as np
import torch
from torch import nn

from shared.oracles.zeroth_order import perturbation_directions

from papers.hosfl import hybrid as H
from papers.hosfl.model import module_apply, module_vector

__all__ = ["deep_client", "client_step", "STEP_METHODS", "peak_rss_growth", "peak_cuda_growth"]

STEP_METHODS = ("hosfl", "sfl_fo", "hosfl_grad", "inference")
_M_MMAP_THRESHOLD = -3   # glibc mallopt parameter number


def deep_client(in_dim: int = 64, width: int = 128, depth: int = 4, seed: int = 0) -> nn.Sequential:
    """``depth`` blocks Linear -> LayerNorm -> GELU (the first maps in_dim -> width), torch default init
    from ``seed`` (the global torch RNG is left as it was)."""
    for name, v in (("in_dim", in_dim), ("width", width), ("depth", depth)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    layers, d = [], int(in_dim)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        for _ in range(int(depth)):
            layers += [nn.Linear(d, int(width)), nn.LayerNorm(int(width)), nn.GELU()]
            d = int(width)
    return nn.Sequential(*layers)


def client_step(method: str, client: nn.Module, x: torch.Tensor, lam: torch.Tensor, *, seeds, mu: float = 1e-3,
                lr: float = 1e-3) -> np.ndarray:
    """One client update of ``method`` (see the module docstring); returns the new client vector. ``lam``
    has the shape of f_c(x)."""
    if method not in STEP_METHODS:
        raise ValueError(f"method must be one of {list(STEP_METHODS)}, got {method!r}")
    theta = torch.from_numpy(module_vector(client)).to(x.device)
    d = theta.numel()
    if method == "inference":   # the inference-only footprint: one forward under no_grad, no update
        with torch.no_grad():
            module_apply(client, x, theta)
        return theta.cpu().numpy()
    if method == "sfl_fo":
        th = theta.clone().requires_grad_(True)
        z = module_apply(client, x, th)
        if z.shape != lam.shape:
            raise ValueError(f"lam shape {tuple(lam.shape)} must equal the client output shape {tuple(z.shape)}")
        (g,) = torch.autograd.grad(z, [th], grad_outputs=lam)
        return (theta - lr * g).detach().cpu().numpy()
    seeds = H.check_seeds(seeds)
    mu = H.check_mu(mu)
    grad = method == "hosfl_grad"
    with torch.set_grad_enabled(grad):
        th = theta.clone().requires_grad_(grad)
        z = module_apply(client, x, th)
        if z.shape != lam.shape:
            raise ValueError(f"lam shape {tuple(lam.shape)} must equal the client output shape {tuple(z.shape)}")
        v = []
        for s in seeds:   # one direction at a time, rebuilt from its seed
            u = torch.from_numpy(perturbation_directions([s], d)[0]).to(theta.dtype).to(x.device)
            zp = module_apply(client, x, th + mu * u)
            v.append(float((lam * (zp - z)).sum().detach()))
    ghat = H.client_gradient_estimate(np.asarray(v), seeds, mu, d)
    return theta.detach().cpu().numpy() - lr * ghat.astype(np.float32)


def _status_bytes(field: str) -> int:
    """``VmRSS`` or ``VmHWM`` of ``/proc/self/status`` in bytes (the file gives kB)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field} line")


def _reset_peak_rss() -> None:
    """Set the high-water mark of the resident set to the current resident size (``echo 5 >
    /proc/self/clear_refs``, Linux >= 4.0). A forked child otherwise inherits its parent's high-water mark, and
    ``ru_maxrss`` would report the parent's earlier peak instead of the child's own."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError as exc:
        raise RuntimeError(f"cannot reset the peak RSS through /proc/self/clear_refs: {exc}") from exc


def _fresh_heap_pages() -> None:
    """Make the child's allocations touch pages it does not yet have resident (glibc): large allocations get
    fresh ``mmap`` pages (``mallopt(M_MMAP_THRESHOLD, 64 KiB)``), and ``malloc_trim(0)`` hands the free chunks the
    parent left in the heap back to the kernel. Without the trim an allocation reuses such a chunk, whose pages
    are resident already (shared with the parent until written), and the RSS does not grow by its size."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:   # not glibc: the measurement still holds, freed heap may only be reused
        return
    libc.mallopt(_M_MMAP_THRESHOLD, 64 * 1024)
    libc.malloc_trim(0)


def peak_rss_growth(fn, warmup=None) -> int:
    """Bytes by which the peak resident set size of a child process, forked to run ``fn()`` once, exceeds
    its resident size at the start: ``VmHWM`` after ``fn()`` minus ``VmRSS`` before it, with the high-water mark
    reset to the resident size first (:func:`_reset_peak_rss`). The child runs torch on one thread (an OpenMP
    pool of the parent does not survive ``fork``). The parent's memory is untouched.

    ``warmup`` (optional) runs in the child before the reset, followed by ``malloc_trim(0)``: a forked child does
    not inherit the page tables of file-backed mappings, so the first call of a kernel faults the shared library's
    code pages in and counts them as growth. A small call of the
    same step as ``warmup`` brings them in first, as a device that trains step after step has them already."""
    if not os.path.exists("/proc/self/clear_refs"):
        raise RuntimeError("peak_rss_growth needs Linux (/proc/self/clear_refs)")
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:   # child
        code = 0
        try:
            os.close(rd)
            torch.set_num_threads(1)
            _fresh_heap_pages()
            if warmup is not None:
                warmup()
                _fresh_heap_pages()
            _reset_peak_rss()
            base = _status_bytes("VmRSS")
            fn()
            msg = pickle.dumps(("ok", int(_status_bytes("VmHWM") - base)))
        except BaseException as exc:   # noqa: BLE001 - reported to the parent
            msg, code = pickle.dumps(("error", repr(exc))), 1
        with os.fdopen(wr, "wb") as fh:
            fh.write(msg)
        os._exit(code)
    os.close(wr)
    with os.fdopen(rd, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    status, value = pickle.loads(data)
    if status != "ok":
        raise RuntimeError(f"memory probe child failed: {value}")
    return int(value)


def peak_cuda_growth(fn, device) -> int:
    """Bytes of ``torch.cuda.max_memory_allocated`` during ``fn()`` above the bytes allocated before it."""
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    fn()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device) - base)
