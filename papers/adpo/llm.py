"""The pretrained-LM arm (spec "Experiments by scale", full): SmolLM2-135M-Instruct + LoRA on T1/T2 as text.

The integer tasks of :mod:`papers.adpo.tasks` are rendered as chat prompts and plain-text answers:

- sort: "Sort the digits: 3 1 4 1 5 9 2 6" -> "1 1 2 3 4 5 6 9"; rejected = the integer pair's rejected
  digits (one adjacent swap).
- add: "Add 4321 + 8765. Answer with exactly five digits." -> "13086"; digits are written most significant
  first (the integer task stores them least significant first); rejected = one digit replaced.

Responses are the answer's tokens followed by the tokenizer's EOS (``<|im_end|>`` for SmolLM2). With SmolLM2's
tokenizer every digit and every space is one token, so chosen and rejected have the same length and the
error positions are where their tokens differ; a pair whose tokenisations differ in length is an error.
LoRA (Hu et al., 2022) adds ``B A`` (rank r, scale alpha / r) to the named projections with ``B = 0`` at
initialisation, so the LoRA policy starts exactly at the reference: every rho is 0 and the DPO loss is ln 2.
"""
from __future__ import annotations

import copy

import numpy as np
import torch

from papers.adpo.tasks import EOS, PreferencePair, heldout_prompts, solve

__all__ = ["TEXT_TASKS", "prompt_text", "answer_text", "chat_prompt_ids", "text_pair", "text_heldout", "add_lora",
           "greedy_text_responses", "text_exact_match"]

TEXT_TASKS = ("sort", "add")


def _check_text_task(task):
    if task not in TEXT_TASKS:
        raise ValueError(f"task must be one of {TEXT_TASKS} for the text arm, got {task!r}")


def prompt_text(task: str, prompt: list[int]) -> str:
    """The user message of an integer prompt (``BOS ... SEP``)."""
    _check_text_task(task)
    if task == "sort":
        return "Sort the digits: " + " ".join(str(d) for d in prompt[1:-1])
    a = "".join(str(d) for d in reversed(prompt[1:5]))
    b = "".join(str(d) for d in reversed(prompt[6:10]))
    return f"Add {a} + {b}. Answer with exactly five digits."


def answer_text(task: str, response: list[int]) -> str:
    """The text of an integer response (its EOS dropped): digits with spaces (sort) or most significant
    first (add)."""
    _check_text_task(task)
    digits = [d for d in response if d != EOS]
    if task == "sort":
        return " ".join(str(d) for d in digits)
    return "".join(str(d) for d in reversed(digits))


def chat_prompt_ids(tokenizer, text: str) -> list[int]:
    """Token ids of the chat template with one user turn and the assistant header (generation prompt)."""
    out = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def _answer_ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text)["input_ids"]) + [int(tokenizer.eos_token_id)]


def text_pair(task: str, pair: PreferencePair, tokenizer) -> PreferencePair:
    """The token-id :class:`PreferencePair` of an integer pair rendered as text.

    Error positions are the indices where chosen and rejected tokens differ; ValueError when the two
    tokenisations have different lengths (the token-level alignment would be undefined)."""
    prompt = chat_prompt_ids(tokenizer, prompt_text(task, pair.prompt))
    chosen = _answer_ids(tokenizer, answer_text(task, pair.chosen))
    rejected = _answer_ids(tokenizer, answer_text(task, pair.rejected))
    if len(chosen) != len(rejected):
        raise ValueError(f"chosen and rejected tokenise to {len(chosen)} and {len(rejected)} tokens for "
                         f"{prompt_text(task, pair.prompt)!r}: token-level units need equal lengths")
    errors = [i for i, (c, r) in enumerate(zip(chosen, rejected)) if c != r]
    return PreferencePair(prompt, chosen, rejected, errors)


def text_heldout(task: str, n: int, tokenizer, *, seed: int, exclude=None) -> tuple[list, list]:
    """(prompt ids, target answer ids with EOS) of ``n`` held-out prompts."""
    prompts = heldout_prompts(task, n, seed=seed, exclude=exclude)
    ids = [chat_prompt_ids(tokenizer, prompt_text(task, p)) for p in prompts]
    targets = [_answer_ids(tokenizer, answer_text(task, solve(task, p))) for p in prompts]
    return ids, targets


def add_lora(model, *, r: int = 8, alpha: int = 16, targets=("q_proj", "v_proj")):
    """A copy of ``model`` with LoRA adapters (peft) on ``targets``; only the adapters are trainable.

    ``W x + (alpha / r) B A x`` with ``B = 0`` at initialisation, so the copy computes exactly what ``model``
    computes until the first update."""
    from peft import LoraConfig, get_peft_model

    if int(r) < 1 or int(alpha) < 1:
        raise ValueError(f"LoRA rank r and alpha must be >= 1, got r={r!r}, alpha={alpha!r}")
    config = LoraConfig(r=int(r), lora_alpha=int(alpha), target_modules=list(targets), lora_dropout=0.0,
                        bias="none")
    return get_peft_model(copy.deepcopy(model), config)


@torch.no_grad()
def greedy_text_responses(model, prompts, length: int, *, eos: int, batch: int = 64) -> list[list[int]]:
    """Greedy decoding with the KV cache (``generate``), at most ``length`` new tokens, cut after ``eos``.

    Prompts must have one length (no padding needed)."""
    if len({len(p) for p in prompts}) != 1:
        raise ValueError("greedy_text_responses needs prompts of one length")
    model.eval()
    device = next(model.parameters()).device
    out = []
    for s in range(0, len(prompts), batch):
        ids = torch.tensor(prompts[s:s + batch], dtype=torch.long, device=device)
        gen = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=int(length),
                             do_sample=False, eos_token_id=int(eos), pad_token_id=int(eos))
        for row in gen[:, ids.shape[1]:].tolist():
            out.append(row[:row.index(eos) + 1] if eos in row else row)
    return out


def text_exact_match(responses, targets) -> float:
    """Share of generated responses equal to the target answer (EOS included)."""
    return float(np.mean([r == t for r, t in zip(responses, targets)]))
