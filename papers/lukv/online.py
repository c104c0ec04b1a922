"""Online eviction with kvpress presses (spec step 9 and the baselines) and scorer-score recording.

The LU-KV online part is ``kvpress.LUKVPress`` used as a library: our profiled curve is assigned to
``press._budget_curves`` before ``with press(model):`` so kvpress never tries to download one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["make_lukv_press", "make_press", "record_scores", "run_compressed", "METHODS_ONLINE"]

METHODS_ONLINE = ("full", "uniform", "scorer", "adakv", "streaming", "lukv", "lukv_shuffled", "pyramidkv",
                  "criticalkv")


def _check_rho(rho) -> float:
    if not (isinstance(rho, (int, float)) and np.isfinite(rho) and 0 <= rho < 1):
        raise ValueError(f"rho (compression ratio) must lie in [0, 1), got {rho!r}")
    return float(rho)


def _check_scorer(scorer):
    from kvpress import ScorerPress

    if not isinstance(scorer, ScorerPress):
        raise ValueError(f"scorer must be a kvpress ScorerPress, got {type(scorer).__name__}")
    return scorer


def make_scorer(name: str, params: dict | None = None):
    """A kvpress scorer by short name: expected_attention, snapkv, knorm."""
    from kvpress import ExpectedAttentionPress, KnormPress, SnapKVPress

    params = dict(params or {})
    table = {"expected_attention": ExpectedAttentionPress, "snapkv": SnapKVPress, "knorm": KnormPress}
    if name not in table:
        raise ValueError(f"scorer must be one of {sorted(table)}, got {name!r}")
    return table[name](**params)


def make_lukv_press(scorer, curve: np.ndarray, rho: float, *, n_layers: int, n_kv_heads: int, sink: int = 4,
                    window: int = 1):
    """``LUKVPress(press=scorer, compression_ratio=rho, sink, window)`` with our curve already assigned
    (shape (99, L, G), values in [0, 1]); raises ``ValueError`` for a missing or malformed curve."""
    from kvpress import LUKVPress

    from papers.lukv.profile import check_curve

    _check_scorer(scorer)
    rho = _check_rho(rho)
    if curve is None:
        raise ValueError("a budget curve is required (kvpress would otherwise try to download one)")
    press = LUKVPress(press=scorer, compression_ratio=rho, sink=sink, window=window)
    press._budget_curves = check_curve(curve, n_layers, n_kv_heads)
    return press


def uniform_curve(n_layers: int, n_kv_heads: int) -> np.ndarray:
    """The constant curve Phi(rho) = rho for every head (allocation-matched uniform baseline)."""
    grid = np.arange(1, 100, dtype=np.float32) / 100
    return np.broadcast_to(grid[:, None, None], (99, n_layers, n_kv_heads)).astype(np.float32).copy()


def make_press(method: str, scorer, rho: float, *, seq_len: int, curve=None, n_layers: int, n_kv_heads: int,
               sink: int = 4, window: int = 1, adakv_alpha: float = 0.20, pyramid_window: int = 64,
               shuffle_seed: int = 0):
    """The press of one online method (None for the full cache), keeping exactly (1 - rho) * ``seq_len``
    tokens per head on average whatever the method (:func:`papers.lukv.profile.kept_per_head`): LU-KV and
    uniform read a curve row rounded to integer budgets (:func:`papers.lukv.profile.curve_at_budget`), the
    flooring presses get :func:`papers.lukv.profile.press_ratio`. ``lukv_shuffled`` (the control) is LU-KV
    with the curve's heads permuted (:func:`papers.lukv.profile.shuffle_heads`, seed ``shuffle_seed``).
    ``pyramidkv`` (SnapKV-based, its own scorer: ``scorer`` is ignored) uses an observation window of
    ``pyramid_window`` tokens; ``criticalkv`` is ``CriticalAdaKVPress(scorer, alpha_safeguard=adakv_alpha)``."""
    from kvpress import AdaKVPress, CriticalAdaKVPress, PyramidKVPress, StreamingLLMPress

    from papers.lukv.profile import curve_at_budget, press_ratio, shuffle_heads

    rho = _check_rho(rho)
    if method == "full" or rho == 0:
        return None
    if method not in METHODS_ONLINE:
        raise ValueError(f"method must be one of {METHODS_ONLINE}, got {method!r}")
    ratio = press_ratio(rho, seq_len)
    if method in ("lukv", "lukv_shuffled", "uniform"):
        if method == "uniform":
            curve = uniform_curve(n_layers, n_kv_heads)
        elif curve is None:
            raise ValueError("a budget curve is required (kvpress would otherwise try to download one)")
        elif method == "lukv_shuffled":
            curve = shuffle_heads(curve, np.random.default_rng(shuffle_seed))
        return make_lukv_press(scorer, curve_at_budget(curve, rho, seq_len), rho, n_layers=n_layers,
                               n_kv_heads=n_kv_heads, sink=sink, window=window)
    if method == "scorer":
        _check_scorer(scorer)
        scorer.compression_ratio = ratio
        return scorer
    if method == "adakv":
        _check_scorer(scorer)
        scorer.compression_ratio = ratio
        return AdaKVPress(press=scorer, alpha_safeguard=adakv_alpha)
    if method == "streaming":
        return StreamingLLMPress(compression_ratio=ratio, n_sink=sink)
    if method == "pyramidkv":
        if isinstance(pyramid_window, bool) or int(pyramid_window) != pyramid_window or pyramid_window < 1:
            raise ValueError(f"pyramid_window must be a positive integer, got {pyramid_window!r}")
        return PyramidKVPress(compression_ratio=ratio, window_size=int(pyramid_window))
    if method == "criticalkv":
        _check_scorer(scorer)
        scorer.compression_ratio = ratio
        if hasattr(scorer, "use_vnorm"):   # CriticalKV weighs by the projected value norm itself (kvpress warns)
            scorer.use_vnorm = False
        return CriticalAdaKVPress(press=scorer, alpha_safeguard=adakv_alpha)
    raise ValueError(f"method must be one of {METHODS_ONLINE}, got {method!r}")


def _check_online_model(model) -> None:
    impl = getattr(model.config, "_attn_implementation", None)
    if impl == "eager":
        raise ValueError("kvpress presses refuse attn_implementation='eager'; use 'sdpa' for online eviction")


def _scorer_recorder():
    from kvpress.presses.base_press import BasePress

    @dataclass
    class _Recorder(BasePress):
        scorer: object = None
        scores: dict = field(default_factory=dict)

        def post_init_from_model(self, model):
            self.scorer.post_init_from_model(model)

        def compress(self, module, hidden_states, keys, values, attentions, kwargs):
            s = self.scorer.score(module, hidden_states, keys, values, attentions, kwargs)
            self.scores[int(module.layer_idx)] = s.detach().double().cpu().numpy()
            return keys, values

    return _Recorder


def record_scores(model, scorer, context_ids) -> np.ndarray:
    """Scorer scores pi of every context token, computed from the context only: (batch, L, G, T)."""
    import torch
    from transformers import DynamicCache

    _check_scorer(scorer)
    _check_online_model(model)
    rec = _scorer_recorder()(scorer=scorer)
    with torch.no_grad(), rec(model):
        model(input_ids=context_ids, past_key_values=DynamicCache(), use_cache=True, logits_to_keep=1)
    return np.stack([rec.scores[l] for l in range(len(model.model.layers))], axis=1)


def run_compressed(model, press, context_ids, future_ids, logit_positions=None):
    """Prefill the context under ``press`` (None: full cache), then run the future window teacher-forced
    on the compressed cache; returns logits over the future positions (batch, K, V) and the mean kept
    fraction of context keys (1 - evicted / (L*G*T)). With ``logit_positions`` (sorted future indices) only
    those positions' logits are computed and returned (batch, len(logit_positions), V); the other steps run
    the decoder without the LM head (same cache)."""
    import torch
    from transformers import DynamicCache

    _check_online_model(model)
    seq_len = context_ids.shape[1]
    cache = DynamicCache()
    layers = [layer.self_attn for layer in model.model.layers]
    with torch.no_grad():
        if press is None:   # prefill logits are not used: compute only the last position's
            model(input_ids=context_ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        else:
            with press(model):
                model(input_ids=context_ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        n_kv = model.config.num_key_value_heads
        total = len(layers) * n_kv * seq_len * context_ids.shape[0]
        evicted = 0
        for l, attn in enumerate(layers):
            cached = cache.layers[l].keys.shape[2]
            evicted += (seq_len - cached) * n_kv * context_ids.shape[0]
            masked = getattr(attn, "masked_key_indices", None)
            if masked is not None:
                evicted += int(masked[0].numel())
        # one future token per forward pass: kvpress masks evicted keys with a fake key found per KV head
        # from the current queries, which always exists for one query position (see README Deviations)
        n_future = future_ids.shape[1]
        if logit_positions is None:
            wanted = set(range(n_future))
        else:
            wanted = {int(k) for k in logit_positions}
            if not wanted or min(wanted) < 0 or max(wanted) >= n_future:
                raise ValueError(f"logit_positions must be non-empty indices in [0, {n_future}), "
                                 f"got {list(logit_positions)!r}")
        steps = []
        for k in range(n_future):
            pos = torch.full((future_ids.shape[0], 1), seq_len + k, dtype=torch.long, device=future_ids.device)
            call = model if k in wanted else model.model
            out = call(input_ids=future_ids[:, k:k + 1], past_key_values=cache, position_ids=pos, use_cache=True)
            if k in wanted:
                steps.append(out.logits)
        logits = torch.cat(steps, dim=1)
        for attn in layers:
            attn.masked_key_indices = None
    return logits, 1.0 - evicted / total
