"""Oracle long-horizon importance (spec step 1) and its extraction from a Llama-style model.

    I_{l,g,j} = max_{h in G(g)} max_{k=1..K} A^{l,h}_{k,j} * || W_O^{l,h} v^{l,g}_j ||_2

with A the full-cache attention of future query k (head h) on context key j, v the value row of KV head g and
W_O^{l,h} the D x d_h column block of ``o_proj.weight`` of query head h (GQA: query heads g*H_q/G .. of KV head
g, the ``repeat_kv`` convention of transformers).
"""
from __future__ import annotations

import numpy as np

__all__ = ["oracle_importance", "extract_oracle"]


def oracle_importance(attentions: np.ndarray, values: np.ndarray, o_proj_weight: np.ndarray) -> np.ndarray:
    """Oracle importance of one layer: attentions (H_q, K, T), values (G, T, d_h), o_proj_weight
    (D, H_q*d_h); returns (G, T) float64 (see the module docstring for the formula)."""
    A = np.asarray(attentions, dtype=np.float64)
    V = np.asarray(values, dtype=np.float64)
    W = np.asarray(o_proj_weight, dtype=np.float64)
    if A.ndim != 3:
        raise ValueError(f"attentions must have shape (H_q, K, T), got {A.shape}")
    if V.ndim != 3:
        raise ValueError(f"values must have shape (G, T, d_h), got {V.shape}")
    if W.ndim != 2:
        raise ValueError(f"o_proj_weight must have shape (D, H_q*d_h), got {W.shape}")
    n_q, _, seq_len = A.shape
    n_kv, v_len, d_h = V.shape
    if n_kv < 1 or n_q % n_kv:
        raise ValueError(f"the number of query heads H_q={n_q} must be a multiple of the KV heads G={n_kv}")
    if v_len != seq_len:
        raise ValueError(f"attentions cover T={seq_len} context keys but values have {v_len} rows")
    if W.shape[1] != n_q * d_h:
        raise ValueError(f"o_proj_weight must have H_q*d_h = {n_q * d_h} columns, got {W.shape[1]}")
    if not np.all(np.isfinite(A)) or np.any(A < 0):
        raise ValueError("attentions must be finite and non-negative")
    if not np.all(np.isfinite(V)) or not np.all(np.isfinite(W)):
        raise ValueError("values and o_proj_weight must be finite")
    group = n_q // n_kv
    out = np.zeros((n_kv, seq_len))
    for h in range(n_q):
        g = h // group
        proj = V[g] @ W[:, h * d_h:(h + 1) * d_h].T          # (T, D): W_O^h v_j
        norms = np.linalg.norm(proj, axis=1)                  # (T,)
        out[g] = np.maximum(out[g], A[h].max(axis=0) * norms)
    return out


def _check_model_for_oracle(model) -> None:
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "eager":
        raise ValueError(f"oracle extraction needs attn_implementation='eager' (attention weights), got {impl!r}")
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    for i, layer in enumerate(model.model.layers):
        w = getattr(getattr(layer.self_attn, "o_proj", None), "weight", None)
        if w is None or tuple(w.shape) != (cfg.hidden_size, cfg.num_attention_heads * head_dim):
            raise ValueError(f"layer {i} has no o_proj weight of shape "
                             f"({cfg.hidden_size}, {cfg.num_attention_heads * head_dim})")


def extract_oracle(model, context_ids, future_ids) -> np.ndarray:
    """Oracle importance of every sample: one teacher-forced full-cache forward pass over context + future
    (eager attention, ``output_attentions=True``); returns (batch, L, G, T) float64 for the T context keys."""
    import torch

    _check_model_for_oracle(model)
    seq_len = context_ids.shape[1]
    ids = torch.cat([context_ids, future_ids], dim=1)
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True, use_cache=True, logits_to_keep=1)
    cache = out.past_key_values
    result = []
    for l, layer in enumerate(model.model.layers):
        A = out.attentions[l][:, :, seq_len:, :seq_len].double().cpu().numpy()
        V = cache.layers[l].values[:, :, :seq_len].double().cpu().numpy()
        W = layer.self_attn.o_proj.weight.detach().double().cpu().numpy()
        result.append(np.stack([oracle_importance(A[b], V[b], W) for b in range(ids.shape[0])]))
    return np.stack(result, axis=1)
