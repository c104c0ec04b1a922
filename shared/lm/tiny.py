"""A tiny causal language model over integer tokens, and the masked next-token training loop.

The model is a plain ``transformers.LlamaForCausalLM`` (RMSNorm, RoPE, SwiGLU MLP, grouped-query attention)
built from a small ``LlamaConfig``, so tools written for Llama checkpoints (kvpress presses, TRL trainers,
``generate``) run on it unchanged. No tokenizer: token ids are the task's own integers.

Conventions (used by lukv's KV-recall task and adpo's SFT reference):
- ``token_logprobs(model, x)[:, t] = log p(x_{t+1} | x_{<=t})``: column ``t`` scores token ``t + 1``.
- ``loss_mask[:, t] = 1`` marks token ``t`` as a training target; token 0 has no context and cannot be one.
- masked loss  L = - sum_{b,t} m_{b,t} log p(x_{b,t} | x_{b,<t}) / sum_{b,t} m_{b,t}.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import shared.lm  # noqa: F401  (offline flags before transformers)

__all__ = ["tiny_llama", "token_logprobs", "masked_lm_loss", "train_lm", "TrainLog"]

_ATTENTION = ("eager", "sdpa")


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def tiny_llama(vocab_size: int, *, num_layers: int = 2, hidden_size: int = 128, num_heads: int = 4,
               num_kv_heads: int | None = None, intermediate_size: int | None = None,
               rope_theta: float = 1e4, max_position_embeddings: int = 512, seed: int = 0,
               attn_implementation: str = "sdpa", dtype: str = "float32"):
    """A freshly initialised ``LlamaForCausalLM`` with the given shape, in eval mode.

    ``num_kv_heads`` defaults to ``num_heads`` (multi-head attention; fewer KV heads give GQA),
    ``intermediate_size`` to ``4 * hidden_size``; head dimension = hidden_size / num_heads. The weights are
    a function of ``seed`` only (drawn inside ``torch.random.fork_rng``: the global torch RNG is untouched).
    ``attn_implementation`` is "sdpa" (kvpress presses) or "eager" (returns attention weights).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    vocab_size = _positive_int(vocab_size, "vocab_size")
    num_layers = _positive_int(num_layers, "num_layers")
    hidden_size = _positive_int(hidden_size, "hidden_size")
    num_heads = _positive_int(num_heads, "num_heads")
    num_kv_heads = num_heads if num_kv_heads is None else _positive_int(num_kv_heads, "num_kv_heads")
    intermediate_size = 4 * hidden_size if intermediate_size is None else _positive_int(
        intermediate_size, "intermediate_size")
    max_position_embeddings = _positive_int(max_position_embeddings, "max_position_embeddings")
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size ({hidden_size}) must be a multiple of num_heads ({num_heads})")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})")
    if (hidden_size // num_heads) % 2:
        raise ValueError(f"head dimension hidden_size / num_heads = {hidden_size // num_heads} must be even (RoPE)")
    if not (isinstance(rope_theta, (int, float)) and math.isfinite(rope_theta) and rope_theta > 1):
        raise ValueError(f"rope_theta must be a finite number > 1, got {rope_theta!r}")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if attn_implementation not in _ATTENTION:
        raise ValueError(f"attn_implementation must be one of {_ATTENTION}, got {attn_implementation!r}")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings, rope_theta=float(rope_theta),
        tie_word_embeddings=False, attention_dropout=0.0, use_cache=True,
        bos_token_id=None, eos_token_id=None, pad_token_id=None)
    config._attn_implementation = attn_implementation
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = LlamaForCausalLM(config)
    return model.to(getattr(torch, dtype)).eval()


def _check_tokens(input_ids, name: str = "input_ids"):
    import torch

    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype not in (
            torch.int64, torch.int32):
        raise ValueError(f"{name} must be an integer tensor of shape (batch, length)")
    if input_ids.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 tokens per row, got shape {tuple(input_ids.shape)}")


def token_logprobs(model, input_ids, attention_mask=None):
    """Log-probability of every next token: output ``[:, t] = log p(x_{t+1} | x_{<=t})``, shape (B, T-1).

    Computed in the model's dtype with ``log_softmax`` (never log of softmax).
    """
    import torch

    _check_tokens(input_ids)
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
    logprobs = torch.log_softmax(logits, dim=-1)
    return logprobs.gather(-1, input_ids[:, 1:].long().unsqueeze(-1)).squeeze(-1)


def masked_lm_loss(model, input_ids, loss_mask, attention_mask=None):
    """Mean negative log-likelihood of the tokens marked by ``loss_mask`` (same shape as ``input_ids``)."""
    import torch

    _check_tokens(input_ids)
    if not isinstance(loss_mask, torch.Tensor) or loss_mask.shape != input_ids.shape:
        raise ValueError(f"loss_mask must be a tensor of shape {tuple(input_ids.shape)}")
    if bool(loss_mask[:, 0].any()):
        raise ValueError("loss_mask[:, 0] must be 0: the first token has no context to be predicted from")
    weights = loss_mask[:, 1:].to(torch.float64)
    total = weights.sum()
    if float(total) == 0:
        raise ValueError("loss_mask marks no target token")
    nll = -token_logprobs(model, input_ids, attention_mask)
    return (nll * weights.to(nll.dtype)).sum() / total.to(nll.dtype)


@dataclass
class TrainLog:
    """What :func:`train_lm` did: per-step losses, (step, metric) evaluations and why it stopped."""

    steps: int = 0
    losses: list[float] = field(default_factory=list)
    evals: list[tuple[int, float]] = field(default_factory=list)
    stopped: str = "steps"  # "steps" | "time" | "target"
    wall_s: float = 0.0


def train_lm(model, batch_fn: Callable, *, steps: int, lr: float, weight_decay: float = 0.0,
             max_seconds: float | None = None, eval_fn: Callable | None = None, eval_every: int = 50,
             target: float | None = None, progress: Callable | None = None) -> TrainLog:
    """Train with AdamW (constant lr) on the masked next-token loss; returns a :class:`TrainLog`.

    ``batch_fn(step)`` returns ``(input_ids, loss_mask)`` or ``(input_ids, loss_mask, attention_mask)``
    (make it a function of ``step`` and a seed for determinism). Every ``eval_every`` steps and at the end,
    ``eval_fn(model)`` (in eval mode, under ``no_grad``) gives a metric; training stops early when it reaches
    ``target``, or when ``max_seconds`` of wall time are spent (both recorded in ``stopped``; the caller
    should record a time cut, never hide it). A non-finite loss raises ``FloatingPointError`` naming the step.
    The model is left in eval mode.
    """
    import torch

    steps = _positive_int(steps, "steps")
    eval_every = _positive_int(eval_every, "eval_every")
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if not (isinstance(weight_decay, (int, float)) and math.isfinite(weight_decay) and weight_decay >= 0):
        raise ValueError(f"weight_decay must be a non-negative finite number, got {weight_decay!r}")
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"max_seconds must be positive or None, got {max_seconds!r}")
    if target is not None and eval_fn is None:
        raise ValueError("target needs an eval_fn")
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    log, start = TrainLog(), time.perf_counter()

    def evaluate(step: int) -> bool:
        if eval_fn is None:
            return False
        model.eval()
        with torch.no_grad():
            value = float(eval_fn(model))
        model.train()
        log.evals.append((step, value))
        return target is not None and value >= target

    model.train()
    try:
        for step in range(1, steps + 1):
            batch = batch_fn(step - 1)
            loss = masked_lm_loss(model, *batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise FloatingPointError(f"train_lm: non-finite loss {value} at step {step}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            log.steps = step
            log.losses.append(value)
            if progress is not None:
                progress(step, value)
            if step % eval_every == 0 and evaluate(step):
                log.stopped = "target"
                break
            if max_seconds is not None and time.perf_counter() - start > max_seconds:
                log.stopped = "time"
                break
        if eval_fn is not None and (not log.evals or log.evals[-1][0] != log.steps):
            if evaluate(log.steps) and log.stopped == "steps":
                log.stopped = "target"
    finally:
        model.eval()
        log.wall_s = time.perf_counter() - start
    return log
