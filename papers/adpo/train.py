"""Tiny-model pipeline: SFT reference, preference training (DPO / ADPO / cDPO variants), evaluation.

Log-prob convention (``shared.lm.token_logprobs``): column t scores token t + 1, so with a prompt of P tokens
the response token r (0-based) is scored by column P - 1 + r (never by the SEP column itself).
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from shared.lm import tiny_llama, token_logprobs, train_lm
from papers.adpo.losses import adpo_loss, dpo_loss, unit_margins
from papers.adpo.tasks import EOS, PAD, VOCAB_SIZE, make_sft_examples, solve

__all__ = ["MethodSpec", "method_spec", "build_model", "pad_batch", "model_device", "response_logprobs", "PairData",
           "encode_pairs", "pair_loss", "train_sft", "greedy_responses", "sample_responses", "exact_match",
           "kl_per_token",
           "preference_accuracy", "error_grad_share", "train_preference"]


@dataclass(frozen=True)
class MethodSpec:
    """A preference method: ``loss`` "dpo" or "adpo", granularity, k, m, reduction and contrastive variant
    (None, "critical": oracle weights 1 on error tokens and ``w_other`` elsewhere, "conservative": label
    smoothing ``eps``)."""

    loss: str = "dpo"
    granularity: str = "token"
    k: int | None = None
    m: int | None = None
    reduction: str = "sum"
    contrastive: str | None = None
    eps: float = 0.1
    w_other: float = 0.1


def method_spec(d: dict) -> MethodSpec:
    """A :class:`MethodSpec` from a config dict; ValueError on unknown keys or values."""
    spec = MethodSpec(**d)
    if spec.loss not in ("dpo", "adpo"):
        raise ValueError(f"loss must be 'dpo' or 'adpo', got {spec.loss!r}")
    if spec.contrastive not in (None, "critical", "conservative"):
        raise ValueError(f"contrastive must be None, 'critical' or 'conservative', got {spec.contrastive!r}")
    return spec


def build_model(arch: dict, seed: int):
    """The tiny Llama of the config (``layers``, ``hidden``, ``heads``, ``mlp``)."""
    return tiny_llama(VOCAB_SIZE, num_layers=int(arch["layers"]), hidden_size=int(arch["hidden"]),
                      num_heads=int(arch["heads"]), intermediate_size=int(arch["mlp"]), seed=seed,
                      max_position_embeddings=64)


def pad_batch(prompts, responses):
    """(input_ids, attention_mask, response_mask) for prompt + response rows, right-padded with PAD.

    All prompts must have the same length P; ``response_mask[:, r]`` marks the real response token r.
    """
    P = len(prompts[0])
    if any(len(p) != P for p in prompts):
        raise ValueError("pad_batch needs prompts of one length")
    R = max(len(r) for r in responses)
    ids = torch.full((len(prompts), P + R), PAD, dtype=torch.long)
    rmask = torch.zeros((len(prompts), R), dtype=torch.float64)
    for b, (p, r) in enumerate(zip(prompts, responses)):
        ids[b, :P] = torch.tensor(p)
        ids[b, P:P + len(r)] = torch.tensor(r)
        rmask[b, :len(r)] = 1
    attn = torch.ones_like(ids)
    attn[:, P:] = rmask.to(torch.long)
    return ids, attn, rmask, P


def model_device(model) -> torch.device:
    """The device of ``model``'s parameters (inputs are moved there; results come back to the CPU); the CPU for a
    model without parameters."""
    first = next(iter(model.parameters()), None)
    return first.device if first is not None else torch.device("cpu")


def response_logprobs(model, prompts, responses):
    """(B, R) log pi(response token r | prompt, response_<r) on the CPU and the (B, R) response mask.

    The forward pass runs on the model's device; the CPU copy keeps the autograd graph."""
    ids, attn, rmask, P = pad_batch(prompts, responses)
    dev = model_device(model)
    lp = token_logprobs(model, ids.to(dev), attn.to(dev))[:, P - 1:].cpu()
    return lp * rmask.to(lp.dtype), rmask


@dataclass
class PairData:
    """Preference pairs in tensor form, with cached reference log-probs."""

    prompts: list
    chosen: list
    rejected: list
    weights: torch.Tensor        # (N, R_l) oracle critical-token weights on the rejected side
    diff_w: torch.Tensor         # (N, R_w) 1 where the chosen token differs from the rejected one
    diff_l: torch.Tensor         # (N, R_l) 1 on the error positions of the rejected response
    shared: torch.Tensor         # (N, R) 1 where both have the same prefix and the same token
    ref_w: torch.Tensor
    ref_l: torch.Tensor
    mask_w: torch.Tensor
    mask_l: torch.Tensor


@torch.no_grad()
def encode_pairs(pairs, ref_model, *, w_other: float = 0.1, batch: int = 512) -> PairData:
    """Tensorise ``pairs`` and compute the reference log-probs once, in eval mode, under no_grad."""
    ref_model.eval()
    prompts = [p.prompt for p in pairs]
    chosen = [p.chosen for p in pairs]
    rejected = [p.rejected for p in pairs]
    ref_w, mask_w, ref_l, mask_l = [], [], [], []
    for s in range(0, len(pairs), batch):
        a, ma = response_logprobs(ref_model, prompts[s:s + batch], chosen[s:s + batch])
        b, mb = response_logprobs(ref_model, prompts[s:s + batch], rejected[s:s + batch])
        ref_w.append(a), mask_w.append(ma), ref_l.append(b), mask_l.append(mb)
    Rw, Rl = max(len(c) for c in chosen), max(len(r) for r in rejected)

    def cat(parts, R):
        return torch.cat([F.pad(p, (0, R - p.shape[1])) for p in parts])

    ref_w, mask_w, ref_l, mask_l = cat(ref_w, Rw), cat(mask_w, Rw), cat(ref_l, Rl), cat(mask_l, Rl)
    N = len(pairs)
    weights = torch.full((N, Rl), float(w_other), dtype=torch.float64)
    diff_w, diff_l = torch.zeros(N, Rw, dtype=torch.float64), torch.zeros(N, Rl, dtype=torch.float64)
    shared = torch.zeros(N, min(Rw, Rl), dtype=torch.float64)
    for i, p in enumerate(pairs):
        for e in p.error_positions:
            weights[i, e] = 1.0
            diff_l[i, e] = 1.0
            if e < len(p.chosen):
                diff_w[i, e] = 1.0
        for t in range(min(len(p.chosen), len(p.rejected))):
            if p.chosen[t] != p.rejected[t]:
                break
            shared[i, t] = 1.0
    return PairData(prompts, chosen, rejected, weights * mask_l, diff_w, diff_l, shared, ref_w, ref_l, mask_w,
                    mask_l)


def pair_loss(spec: MethodSpec, rho_w, rho_l, mask_w, mask_l, weights, beta: float):
    """The loss of ``spec`` on per-token log-ratios (mean over the pairs)."""
    kw = dict(beta=beta, mask_chosen=mask_w, mask_rejected=mask_l,
              label_smoothing=spec.eps if spec.contrastive == "conservative" else 0.0,
              weights_rejected=weights if spec.contrastive == "critical" else None)
    if spec.loss == "dpo":
        return dpo_loss(rho_w, rho_l, **kw)
    return adpo_loss(rho_w, rho_l, granularity=spec.granularity, k=spec.k, m=spec.m, reduction=spec.reduction,
                     **kw)


# --------------------------------------------------------------------------------------------- SFT
def train_sft(arch: dict, task: str, *, steps: int, batch: int, lr: float, seed: int, p_correct: float = 0.7,
              val_prompts=None, target_em: float | None = None, eval_every: int = 5):
    """The SFT reference: AdamW on the masked response NLL over 70 % correct / 30 % perturbed responses.

    With ``target_em``, training stops at the first check (every ``eval_every`` steps, at most ``steps``) where the
    greedy exact match on ``val_prompts`` reaches ``target_em`` (deterministic: a function of the seed); the log's
    ``stopped`` says "target" or "steps" and ``evals`` lists (step, validation exact match)."""
    if target_em is not None and not val_prompts:
        raise ValueError("target_em needs val_prompts")
    torch.manual_seed(seed)
    model = build_model(arch, seed)
    data = make_sft_examples(task, steps * batch, seed=seed, p_correct=p_correct)
    P = len(data[0][0])

    def batch_fn(step):
        rows = data[step * batch:(step + 1) * batch]
        ids, attn, rmask, _ = pad_batch([r[0] for r in rows], [r[1] for r in rows])
        loss_mask = torch.zeros_like(ids)
        loss_mask[:, P:] = rmask.to(torch.long)
        return ids, loss_mask, attn

    if target_em is None:
        return model, train_lm(model, batch_fn, steps=steps, lr=lr)
    length = len(solve(task, val_prompts[0])) + (1 if task == "sort_length" else 0)
    log = train_lm(model, batch_fn, steps=steps, lr=lr, eval_every=eval_every, target=float(target_em),
                   eval_fn=lambda m: exact_match(task, val_prompts, greedy_responses(m, val_prompts, length)))
    return model, log


# -------------------------------------------------------------------------------------- evaluation
@torch.no_grad()
def greedy_responses(model, prompts, length: int, *, eos: int = EOS) -> list[list[int]]:
    """Greedy decoding of ``length`` tokens (with the key-value cache), cut after the first ``eos``."""
    model.eval()
    ids = torch.tensor(prompts, dtype=torch.long, device=model_device(model))
    step_in, past = ids, None
    for _ in range(length):
        out = model(input_ids=step_in, past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
        step_in = nxt
    out = []
    for row in ids[:, len(prompts[0]):].tolist():
        out.append(row[:row.index(eos) + 1] if eos in row else row)
    return out


@torch.no_grad()
def sample_responses(model, prompts, length: int, *, k: int, seed: int, temperature: float = 1.0,
                     eos: int = EOS, batch: int = 1024) -> list[list[list[int]]]:
    """``k`` responses per prompt sampled from ``model`` at ``temperature`` (ancestral sampling of ``length``
    tokens with the key-value cache, each cut after its first ``eos``). Returns ``out[i][j]``, sample j of
    prompt i. All prompts must have one length.

    Deterministic for a fixed ``seed``: inverse-CDF sampling with one uniform per (row, position) drawn up front
    from a CPU ``torch.Generator`` seeded with it (rows in prompt-major order), so neither the chunk size
    ``batch`` nor the device changes which uniform a draw uses.
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    model.eval()
    rows = [p for p in prompts for _ in range(int(k))]
    # one uniform per (row, position), drawn up front: the draws do not depend on the chunking or the device
    uniforms = torch.rand(len(rows), length, generator=torch.Generator().manual_seed(int(seed)),
                          dtype=torch.float64)
    dev = model_device(model)
    flat = []
    for s in range(0, len(rows), batch):
        ids = torch.tensor(rows[s:s + batch], dtype=torch.long, device=dev)
        step_in, past = ids, None
        for t in range(length):
            out = model(input_ids=step_in, past_key_values=past, use_cache=True)
            past = out.past_key_values
            cdf = torch.softmax(out.logits[:, -1].double().cpu() / temperature, -1).cumsum(-1)
            u = uniforms[s:s + batch, t:t + 1] * cdf[:, -1:]
            nxt = torch.searchsorted(cdf, u, right=True).clamp_max(cdf.shape[1] - 1).to(dev)
            ids = torch.cat([ids, nxt], dim=1)
            step_in = nxt
        for row in ids[:, len(rows[0]):].tolist():
            flat.append(row[:row.index(eos) + 1] if eos in row else row)
    return [flat[i * int(k):(i + 1) * int(k)] for i in range(len(prompts))]


def exact_match(task: str, prompts, responses) -> float:
    """Share of responses equal to the correct response (EOS included)."""
    return float(np.mean([r == solve(task, p) for p, r in zip(prompts, responses)]))


@torch.no_grad()
def kl_per_token(model, ref_model, prompts, responses) -> float:
    """Mean over response tokens of KL(pi_theta || pi_ref) over the whole vocabulary, teacher-forced along
    ``responses`` (the reference's greedy responses)."""
    model.eval()
    ids, attn, rmask, P = pad_batch(prompts, responses)
    ids, attn = ids.to(model_device(model)), attn.to(model_device(model))
    lp = torch.log_softmax(model(input_ids=ids, attention_mask=attn).logits[:, P - 1:-1].double(), -1)
    lq = torch.log_softmax(ref_model(input_ids=ids, attention_mask=attn).logits[:, P - 1:-1].double(), -1)
    kl = (lp.exp() * (lp - lq)).sum(-1).cpu()
    return float((kl * rmask).sum() / rmask.sum())


@torch.no_grad()
def preference_accuracy(model, data: PairData) -> float:
    """Share of pairs with sum_i rho_i(y_w) - sum_i rho_i(y_l) > 0."""
    model.eval()
    lw, _ = response_logprobs(model, data.prompts, data.chosen)
    ll, _ = response_logprobs(model, data.prompts, data.rejected)
    margin = ((lw.double() - data.ref_w) * data.mask_w).sum(1) - ((ll.double() - data.ref_l) * data.mask_l).sum(1)
    return float((margin > 0).double().mean())


def error_grad_share(spec: MethodSpec, rho_w, rho_l, data: PairData, idx, beta: float) -> float:
    """Mean over pairs of ||dL/drho on differing positions||^2 / ||dL/drho||^2 (the loss gradient with
    respect to the log-ratios, per pair)."""
    rw = rho_w.detach().double().requires_grad_(True)
    rl = rho_l.detach().double().requires_grad_(True)
    loss = pair_loss(spec, rw, rl, data.mask_w[idx], data.mask_l[idx], data.weights[idx], beta) * len(idx)
    gw, gl = torch.autograd.grad(loss, (rw, rl))
    num = (gw ** 2 * data.diff_w[idx]).sum(1) + (gl ** 2 * data.diff_l[idx]).sum(1)
    den = (gw ** 2).sum(1) + (gl ** 2).sum(1)
    share = torch.where(den > 0, num / den.clamp_min(1e-300), torch.zeros_like(den))
    return float(share.mean())


# ------------------------------------------------------------------------------- preference training
def _rho(model, data: PairData, idx):
    lw, _ = response_logprobs(model, [data.prompts[i] for i in idx], [data.chosen[i] for i in idx])
    ll, _ = response_logprobs(model, [data.prompts[i] for i in idx], [data.rejected[i] for i in idx])
    Rw, Rl = data.ref_w.shape[1], data.ref_l.shape[1]
    lw, ll = F.pad(lw, (0, Rw - lw.shape[1])), F.pad(ll, (0, Rl - ll.shape[1]))
    return (lw - data.ref_w[idx].to(lw.dtype)) * data.mask_w[idx].to(lw.dtype), \
        (ll - data.ref_l[idx].to(ll.dtype)) * data.mask_l[idx].to(ll.dtype)


def train_preference(ref_model, spec: MethodSpec, data: PairData, *, steps: int, batch: int, lr: float,
                     beta: float, seed: int, eval_steps=(), eval_fn=None, jensen: bool = False, order=None):
    """Train a copy of ``ref_model`` with ``spec`` (AdamW, no weight decay, constant lr) on ``data`` in a
    seed-dependent order. Returns (model, log dict with per-step loss, grad share, initial-value error,
    Jensen violations and evaluations at ``eval_steps`` via ``eval_fn(model) -> dict``). ``order`` overrides
    the data order (pair indices, used for the cross-check against TRL)."""
    torch.manual_seed(seed)
    model = copy.deepcopy(ref_model)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    if order is None:
        order = np.random.default_rng(seed).permutation(len(data.prompts))
    need = steps * batch
    order = np.concatenate([order] * math.ceil(need / len(order)))[:need]
    log = {"loss": [], "grad_share": [], "evals": {}, "init_err": None, "jensen_violations": 0,
           "jensen_checked": 0, "wall_s": 0.0, "step_cpu_s": []}
    if eval_fn is not None and 0 in eval_steps:
        log["evals"][0] = eval_fn(model)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        cpu0 = time.process_time()
        idx = order[(step - 1) * batch: step * batch]
        model.train()
        rho_w, rho_l = _rho(model, data, idx)
        loss = pair_loss(spec, rho_w, rho_l, data.mask_w[idx], data.mask_l[idx], data.weights[idx], beta)
        value = float(loss.detach())
        if not math.isfinite(value):
            raise FloatingPointError(f"non-finite preference loss at step {step} ({spec})")
        if step == 1:
            log["init_err"] = _initial_value_error(spec, rho_w, rho_l, data, idx, beta, value)
        if jensen:
            v, c = _jensen_violations(spec, rho_w, rho_l, data, idx, beta)
            log["jensen_violations"] += v
            log["jensen_checked"] += c
        log["grad_share"].append(error_grad_share(spec, rho_w, rho_l, data, idx, beta))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        log["step_cpu_s"].append(time.process_time() - cpu0)
        log["loss"].append(value)
        if eval_fn is not None and step in eval_steps:
            log["wall_s"] += time.perf_counter() - start
            log["evals"][step] = eval_fn(model)
            start = time.perf_counter()
    log["wall_s"] += time.perf_counter() - start
    model.eval()
    return model, log


def _initial_value_error(spec, rho_w, rho_l, data, idx, beta, value) -> float:
    """|loss - mean mu' ln 2| at theta = theta_ref (all rho should be 0); mean reduction: mu' = 1."""
    if spec.loss == "dpo" or spec.reduction == "mean":
        n_units = np.ones(len(idx))
    else:
        _, exists = unit_margins(rho_w.detach(), rho_l.detach(), beta=beta, granularity=spec.granularity, k=spec.k,
                                 m=spec.m, mask_chosen=data.mask_w[idx], mask_rejected=data.mask_l[idx])
        n_units = exists.sum(1).numpy()
    return abs(value - float(np.mean(n_units)) * math.log(2))


def _jensen_violations(spec, rho_w, rho_l, data, idx, beta):
    """Per pair: (1/mu') sum_j -log sigma(z_j) >= -log sigma((1/mu') sum_j z_j) (float64)."""
    if spec.loss != "adpo":
        return 0, 0
    z, exists = unit_margins(rho_w.detach().double(), rho_l.detach().double(), beta=beta,
                             granularity=spec.granularity, k=spec.k, m=spec.m, mask_chosen=data.mask_w[idx],
                             mask_rejected=data.mask_l[idx],
                             weights_rejected=data.weights[idx] if spec.contrastive == "critical" else None)
    n = exists.sum(1)
    lhs = (-F.logsigmoid(z) * exists).sum(1) / n
    rhs = -F.logsigmoid((z * exists).sum(1) / n)
    return int((lhs < rhs - 1e-12).sum()), len(idx)
