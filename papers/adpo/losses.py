"""DPO and ADPO losses on per-token log-ratios (spec "Method").

Notation: rho_i(y) = log pi_theta(y_i | x, y_<i) - log pi_ref(y_i | x, y_<i) for the response tokens of y.

- DPO (Rafailov et al. 2023):   L = -log sigma( beta * sum_i rho_i(y_w) - beta * sum_i rho_i(y_l) ).
- ADPO (Oi et al. 2026), feedback units S_1..S_mu' cut from each response and aligned by index j:
      z_j = beta * ( sum_{i in S_j(y_w)} rho_i(y_w) - sum_{i in S_j(y_l)} w_i rho_i(y_l) ),
      L = -sum_j log sigma(z_j)              (reduction "sum")
      L = -(1/mu') sum_j log sigma(z_j)      (reduction "mean").
  The sum over units sits outside the log-sigmoid. Token level: one unit per position (k = 1). Static
  window k: S_j = [(j-1)k, jk). Adaptive m: ``numpy.array_split`` into m chunks. A unit empty on both sides
  does not exist. With one unit (m = 1, or k >= max(T_w, T_l)) ADPO is exactly DPO.
- Conservative variant (label smoothing eps, as TRL's ``label_smoothing``): each unit contributes
  -(1 - eps) log sigma(z_j) - eps log sigma(-z_j).
- Critical-token variant: rejected tokens carry weights w_i in [0, 1] (``weights_rejected``).

Inputs are arrays of shape (T,) (one pair) or (B, T) (padded, with 0/1 masks). numpy arrays or lists give
a Python float (mean over pairs); torch tensors give a differentiable 0-d tensor.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["segment_bounds", "unit_ids", "unit_margins", "dpo_loss", "adpo_loss", "dpo_pair_losses", "adpo_pair_losses", "GRANULARITIES", "REDUCTIONS"]

GRANULARITIES = ("token", "static", "adaptive")
REDUCTIONS = ("sum", "mean")


def _check_granularity(granularity, k, m):
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {GRANULARITIES}, got {granularity!r}")
    for name, value in (("k", k), ("m", m)):
        if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if granularity == "static":
        if m is not None:
            raise ValueError("m is given for granularity 'static' (which takes k)")
        if k is None:
            raise ValueError("granularity 'static' needs k")
    elif granularity == "adaptive":
        if k is not None:
            raise ValueError("k is given for granularity 'adaptive' (which takes m)")
        if m is None:
            raise ValueError("granularity 'adaptive' needs m")
    else:
        if k is not None or m is not None:
            raise ValueError("granularity 'token' takes neither k nor m")


def segment_bounds(length: int, *, granularity: str, k: int | None = None,
                   m: int | None = None) -> list[tuple[int, int]]:
    """Half-open boundaries [(start, end), ...] of the feedback units of one response of ``length`` tokens.

    token: (i, i+1) for every i; static k: [(j-1)k, min(jk, T)); adaptive m: the ``numpy.array_split``
    chunks (the first T mod m chunks have floor(T/m) + 1 tokens; chunks are empty when T < m).
    Example: ``segment_bounds(7, granularity="adaptive", m=3) == [(0, 3), (3, 5), (5, 7)]``.
    """
    _check_granularity(granularity, k, m)
    if isinstance(length, bool) or int(length) != length or length < 0:
        raise ValueError(f"length must be a non-negative integer, got {length!r}")
    T = int(length)
    if granularity == "token":
        return [(i, i + 1) for i in range(T)]
    if granularity == "static":
        return [(s, min(s + k, T)) for s in range(0, T, int(k))]
    q, r = divmod(T, int(m))
    bounds, start = [], 0
    for j in range(int(m)):
        size = q + (1 if j < r else 0)
        bounds.append((start, start + size))
        start += size
    return bounds


def unit_ids(length: int, *, granularity: str, k: int | None = None, m: int | None = None) -> np.ndarray:
    """Unit index of every position 0..length-1 (the inverse of :func:`segment_bounds`)."""
    out = np.empty(int(length), dtype=np.int64)
    for j, (s, e) in enumerate(segment_bounds(length, granularity=granularity, k=k, m=m)):
        out[s:e] = j
    return out


# ----------------------------------------------------------------------------------------- validation
def _as_tensor(x, name):
    is_torch = isinstance(x, torch.Tensor)
    t = x if is_torch else torch.as_tensor(np.asarray(x, dtype=np.float64))
    if t.dim() == 1:
        t = t.unsqueeze(0)
    if t.dim() != 2:
        raise ValueError(f"{name} must have shape (T,) or (B, T), got shape {tuple(t.shape)}")
    if not t.is_floating_point():
        t = t.to(torch.float64)
    return t, is_torch


def _check_inputs(rho_chosen, rho_rejected, beta, mask_chosen, mask_rejected, label_smoothing, weights_rejected):
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.floating)) or not math.isfinite(beta) \
            or beta <= 0:
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float, np.floating)) \
            or not math.isfinite(label_smoothing) or not 0 <= label_smoothing < 0.5:
        raise ValueError(f"label_smoothing must be in [0, 0.5), got {label_smoothing!r}")
    rw, torch_w = _as_tensor(rho_chosen, "rho_chosen")
    rl, torch_l = _as_tensor(rho_rejected, "rho_rejected")
    want_tensor = torch_w or torch_l
    if rw.shape[0] != rl.shape[0]:
        raise ValueError(f"rho_chosen and rho_rejected have different batch sizes ({rw.shape[0]} and {rl.shape[0]})")
    for name, t in (("rho_chosen", rw), ("rho_rejected", rl)):
        if not bool(torch.isfinite(t.detach()).all()):
            raise ValueError(f"{name} contains NaN or Inf")
    masks = []
    for name, mask, rho in (("mask_chosen", mask_chosen, rw), ("mask_rejected", mask_rejected, rl)):
        if mask is None:
            mt = torch.ones(rho.shape, dtype=torch.bool)
        else:
            mt = mask if isinstance(mask, torch.Tensor) else torch.as_tensor(np.asarray(mask, dtype=np.float64))
            if mt.dim() == 1:
                mt = mt.unsqueeze(0)
            if tuple(mt.shape) != tuple(rho.shape):
                raise ValueError(f"{name} has shape {tuple(mt.shape)}, its rho has shape {tuple(rho.shape)}")
            mf = mt.detach().to(torch.float64)
            if not bool(((mf == 0) | (mf == 1)).all()):
                raise ValueError(f"{name} must contain only 0 and 1")
            mt = mf.to(torch.bool)
        empty = (~mt.cpu()).all(dim=1)
        if bool(empty.any()):
            raise ValueError(f"{name} is all zero for pair {int(torch.nonzero(empty)[0, 0])} (empty response)")
        masks.append(mt.to(rho.device))
    wr = None
    if weights_rejected is not None:
        wr, _ = _as_tensor(weights_rejected, "weights_rejected")
        if tuple(wr.shape) != tuple(rl.shape):
            raise ValueError(f"weights_rejected has shape {tuple(wr.shape)}, rho_rejected has {tuple(rl.shape)}")
        wd = wr.detach()
        if not bool(torch.isfinite(wd).all()) or bool((wd < 0).any()) or bool((wd > 1).any()):
            raise ValueError("weights_rejected must lie in [0, 1]")
        wr = wr.to(device=rl.device, dtype=rl.dtype)
    dtype = torch.promote_types(rw.dtype, rl.dtype)
    return rw.to(dtype), rl.to(dtype), masks[0], masks[1], wr, want_tensor


def _unit_index(mask: torch.Tensor, granularity, k, m):
    """(B, T) unit index of each valid position (-1 at masked positions) and the unit counts per row."""
    mask_np = mask.cpu().numpy()
    idx = np.full(mask_np.shape, -1, dtype=np.int64)
    lengths = mask_np.sum(axis=1)
    for b in range(mask_np.shape[0]):
        pos = np.flatnonzero(mask_np[b])
        idx[b, pos] = unit_ids(len(pos), granularity=granularity, k=k, m=m)
    return idx, lengths


def unit_margins(rho_chosen, rho_rejected, *, beta: float, granularity: str = "token", k: int | None = None,
                 m: int | None = None, mask_chosen=None, mask_rejected=None, weights_rejected=None):
    """Unit margins z (B, U) and the 0/1 tensor ``exists`` (B, U) of the units that exist.

    z_j = beta * (sum_{S_j(y_w)} rho(y_w) - sum_{S_j(y_l)} w rho(y_l)); padded positions are removed before
    the units are formed; unit j exists when it is non-empty on at least one side.
    """
    _check_granularity(granularity, k, m)
    rw, rl, mw, ml, wr, _ = _check_inputs(rho_chosen, rho_rejected, beta, mask_chosen, mask_rejected, 0.0,
                                          weights_rejected)
    return _margins(rw, rl, mw, ml, wr, beta, granularity, k, m)


def _margins(rw, rl, mw, ml, wr, beta, granularity, k, m):
    iw, lw = _unit_index(mw, granularity, k, m)
    il, ll = _unit_index(ml, granularity, k, m)
    U = int(max(iw.max(), il.max())) + 1
    B = rw.shape[0]
    z = torch.zeros(B, U + 1, dtype=rw.dtype, device=rw.device)  # column U collects padded positions
    tw = torch.as_tensor(np.where(iw < 0, U, iw), device=rw.device)
    tl = torch.as_tensor(np.where(il < 0, U, il), device=rw.device)
    lrej = rl if wr is None else rl * wr
    z = z.scatter_add(1, tw, rw).scatter_add(1, tl, -lrej)
    n_units = np.maximum(iw.max(axis=1), il.max(axis=1)) + 1
    exists = torch.as_tensor(np.arange(U)[None, :] < n_units[:, None], dtype=rw.dtype, device=rw.device)
    return beta * z[:, :U], exists


def _per_pair(z, exists, label_smoothing, reduction):
    per_unit = -F.logsigmoid(z)
    if label_smoothing:
        per_unit = (1 - label_smoothing) * per_unit - label_smoothing * F.logsigmoid(-z)
    per_pair = (per_unit * exists).sum(dim=1)
    if reduction == "mean":
        per_pair = per_pair / exists.sum(dim=1)
    return per_pair


def _out(values, want_tensor, mean: bool):
    if mean:
        values = values.mean()
        return values if want_tensor else float(values)
    return values if want_tensor else values.detach().cpu().numpy()


def dpo_pair_losses(rho_chosen, rho_rejected, *, beta: float, mask_chosen=None, mask_rejected=None,
                    label_smoothing: float = 0.0, weights_rejected=None):
    """Per-pair DPO losses, shape (B,) (numpy array, or a tensor for tensor inputs); see :func:`dpo_loss`."""
    rw, rl, mw, ml, wr, want_tensor = _check_inputs(rho_chosen, rho_rejected, beta, mask_chosen, mask_rejected,
                                                    label_smoothing, weights_rejected)
    lrej = rl if wr is None else rl * wr
    z = beta * ((rw * mw).sum(dim=1) - (lrej * ml).sum(dim=1))
    return _out(_per_pair(z[:, None], torch.ones_like(z[:, None]), label_smoothing, "sum"), want_tensor, False)


def dpo_loss(rho_chosen, rho_rejected, *, beta: float, mask_chosen=None, mask_rejected=None,
             label_smoothing: float = 0.0, weights_rejected=None):
    """DPO loss  L = -log sigma(beta * sum_i rho_i(y_w) - beta * sum_i w_i rho_i(y_l)), mean over pairs.

    Rafailov et al., "Direct Preference Optimization", NeurIPS 2023. ``label_smoothing`` eps gives the
    conservative DPO loss -(1-eps) log sigma(z) - eps log sigma(-z); ``weights_rejected`` w_i in [0, 1] the
    critical-token variant (w = 1: plain DPO). Example: beta = 0.5, rho_w = [0.4, 0.0], rho_l = [0.0, 0.2]
    gives -log sigma(0.1) = 0.6443966601.
    """
    per_pair = dpo_pair_losses(rho_chosen, rho_rejected, beta=beta, mask_chosen=mask_chosen,
                               mask_rejected=mask_rejected, label_smoothing=label_smoothing,
                               weights_rejected=weights_rejected)
    return per_pair.mean() if isinstance(per_pair, torch.Tensor) else float(per_pair.mean())


def adpo_pair_losses(rho_chosen, rho_rejected, *, beta: float, granularity: str = "token", k: int | None = None,
                     m: int | None = None, reduction: str = "sum", mask_chosen=None, mask_rejected=None,
                     label_smoothing: float = 0.0, weights_rejected=None):
    """Per-pair ADPO losses, shape (B,) (numpy array, or a tensor for tensor inputs); see :func:`adpo_loss`."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    _check_granularity(granularity, k, m)
    rw, rl, mw, ml, wr, want_tensor = _check_inputs(rho_chosen, rho_rejected, beta, mask_chosen, mask_rejected,
                                                    label_smoothing, weights_rejected)
    z, exists = _margins(rw, rl, mw, ml, wr, beta, granularity, k, m)
    return _out(_per_pair(z, exists, label_smoothing, reduction), want_tensor, False)


def adpo_loss(rho_chosen, rho_rejected, *, beta: float, granularity: str = "token", k: int | None = None,
              m: int | None = None, reduction: str = "sum", mask_chosen=None, mask_rejected=None,
              label_smoothing: float = 0.0, weights_rejected=None):
    """ADPO loss  L = -sum_{j=1}^{mu'} log sigma(z_j)  (or its mean over units), mean over pairs.

    z_j = beta * (sum_{i in S_j(y_w)} rho_i(y_w) - sum_{i in S_j(y_l)} w_i rho_i(y_l)); the units S_j
    come from :func:`segment_bounds` (granularity "token", "static" with window ``k``, "adaptive" with ``m``
    segments). Oi et al., "Autoregressive Direct Preference Optimization", ICML 2026. Example: the pair of
    :func:`dpo_loss`, token level, sum: -log sigma(0.2) - log sigma(-0.1) = 1.3425355295.
    """
    per_pair = adpo_pair_losses(rho_chosen, rho_rejected, beta=beta, granularity=granularity, k=k, m=m,
                                reduction=reduction, mask_chosen=mask_chosen, mask_rejected=mask_rejected,
                                label_smoothing=label_smoothing, weights_rejected=weights_rejected)
    return per_pair.mean() if isinstance(per_pair, torch.Tensor) else float(per_pair.mean())
