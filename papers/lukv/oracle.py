"""Oracle long-horizon importance (spec step 1) and its extraction from a Llama-style model.

    I_{l,g,j} = max_{h in G(g)} max_{k=1..K} A^{l,h}_{k,j} * || W_O^{l,h} v^{l,g}_j ||_2

with A the full-cache attention of future query k (head h) on context key j, v the value row of KV head g and
W_O^{l,h} the D x d_h column block of ``o_proj.weight`` of query head h (GQA: query heads g*H_q/G .. of KV head
g, the ``repeat_kv`` convention of transformers).

The official profiler (step 1) uses the layer-normalised value norm n_{l,h,j} / sum_{h',j'} n_{l,h',j'} with
n_{l,h,j} = ||W_O^{l,h} v^{l,g(h)}_j|| (``normalize_value_norms=True``) and takes the max over the decode steps of
a continuation generated after the question (``decode_steps`` in :func:`extract_oracle`; the official code
samples 64 tokens at temperature 0.7, we decode greedily so that profiles are deterministic).
"""
from __future__ import annotations

import numpy as np

__all__ = ["oracle_importance", "extract_oracle", "greedy_continuation"]


def oracle_importance(attentions: np.ndarray, values: np.ndarray, o_proj_weight: np.ndarray, *,
                      normalize_value_norms: bool = False) -> np.ndarray:
    """Oracle importance of one layer: attentions (H_q, K, T), values (G, T, d_h), o_proj_weight
    (D, H_q*d_h); returns (G, T) float64 (see the module docstring for the formula). With
    ``normalize_value_norms`` the norms ||W_O^h v_j|| are divided by their sum over the layer's query heads h and
    tokens j (official step 1), which rescales each layer's importances by one constant."""
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
    norms = np.stack([np.linalg.norm(V[h // group] @ W[:, h * d_h:(h + 1) * d_h].T, axis=1)   # (H_q, T)
                      for h in range(n_q)])
    if normalize_value_norms:
        norms = norms / (norms.sum() + 1e-9)
    out = np.zeros((n_kv, seq_len))
    for h in range(n_q):
        g = h // group
        out[g] = np.maximum(out[g], A[h].max(axis=0) * norms[h])
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


def greedy_continuation(model, ids, n_tokens: int):
    """``ids`` followed by ``n_tokens`` greedy (argmax) tokens of ``model`` under the full cache."""
    import torch

    if isinstance(n_tokens, bool) or int(n_tokens) != n_tokens or n_tokens < 0:
        raise ValueError(f"n_tokens must be an integer >= 0, got {n_tokens!r}")
    if not n_tokens:
        return ids
    pieces = [ids]
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        for step in range(int(n_tokens)):
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
            pieces.append(tok)
            if step + 1 < n_tokens:
                out = model(input_ids=tok, past_key_values=cache, use_cache=True)
    return torch.cat(pieces, dim=1)


def extract_oracle(model, context_ids, future_ids, *, decode_steps: int = 0,
                   normalize_value_norms: bool = False) -> np.ndarray:
    """Oracle importance of every sample: one teacher-forced full-cache forward pass over context + future
    (eager attention, ``output_attentions=True``); returns (batch, L, G, T) float64 for the T context keys.
    ``decode_steps`` > 0 appends that many greedy tokens after the future window and takes the max over all
    future positions (the official profiler's decode steps); ``normalize_value_norms``: see
    :func:`oracle_importance`."""
    import torch

    _check_model_for_oracle(model)
    seq_len = context_ids.shape[1]
    ids = torch.cat([context_ids, future_ids], dim=1)
    if decode_steps:
        ids = greedy_continuation(model, ids, decode_steps)
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True, use_cache=True, logits_to_keep=1)
    cache = out.past_key_values
    result = []
    for l, layer in enumerate(model.model.layers):
        A = out.attentions[l][:, :, seq_len:, :seq_len].double().cpu().numpy()
        V = cache.layers[l].values[:, :, :seq_len].double().cpu().numpy()
        W = layer.self_attn.o_proj.weight.detach().double().cpu().numpy()
        result.append(np.stack([oracle_importance(A[b], V[b], W, normalize_value_norms=normalize_value_norms)
                                 for b in range(ids.shape[0])]))
    return np.stack(result, axis=1)
