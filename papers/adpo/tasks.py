"""Synthetic preference tasks with known, localised errors (spec "Problems and data").

Vocabulary (V = 15): digits 0..9 are ids 0..9, then PAD 10, BOS 11, SEP 12, EOS 13, PLUS 14.

- "sort": prompt ``BOS d1..d8 SEP``; chosen = the digits sorted ascending + EOS; rejected = chosen with one
  adjacent swap of two unequal digits (2 wrong tokens).
- "add": prompt ``BOS a0 a1 a2 a3 PLUS b0 b1 b2 b3 SEP`` (least significant digit first); chosen = the 5 sum
  digits least significant first + EOS; rejected = one digit replaced by a different digit.
- "sort_length": "sort" whose rejected response also drops or duplicates one digit (T_w != T_l).

Two ways to build the training pairs: ``make_preference_pairs`` (offline: the gold answer against a synthetic
perturbation of it) and ``on_policy_pairs`` (on-policy: responses sampled from the reference, scored by the
exact-match oracle; chosen = the first correct sample, rejected = the first incorrect sample).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["PAD", "BOS", "SEP", "EOS", "PLUS", "VOCAB_SIZE", "TASKS", "PreferencePair", "make_prompt",
           "solve", "perturb", "make_preference_pairs", "make_sft_examples", "heldout_prompts", "NO_CORRECT",
           "on_policy_pairs"]

PAD, BOS, SEP, EOS, PLUS = 10, 11, 12, 13, 14
VOCAB_SIZE = 15
TASKS = ("sort", "add", "sort_length")


@dataclass(frozen=True)
class PreferencePair:
    """One preference pair: token id lists and the indices of ``rejected`` that differ from ``chosen``."""

    prompt: list
    chosen: list
    rejected: list
    error_positions: list = field(default_factory=list)


def _check_task(task):
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")


def make_prompt(task: str, rng: np.random.Generator) -> list[int]:
    """A random prompt of ``task`` (a sort prompt never has all digits equal: it is redrawn)."""
    _check_task(task)
    if task in ("sort", "sort_length"):
        while True:
            d = rng.integers(0, 10, size=8)
            if len(set(d.tolist())) > 1:
                return [BOS, *map(int, d), SEP]
    a, b = rng.integers(0, 10, size=4), rng.integers(0, 10, size=4)
    return [BOS, *map(int, a), PLUS, *map(int, b), SEP]


def solve(task: str, prompt: list[int]) -> list[int]:
    """The correct response (with EOS) of a prompt."""
    _check_task(task)
    if task in ("sort", "sort_length"):
        return sorted(prompt[1:-1]) + [EOS]
    a, b = prompt[1:5], prompt[6:10]
    total = sum(d * 10 ** i for i, d in enumerate(a)) + sum(d * 10 ** i for i, d in enumerate(b))
    return [(total // 10 ** i) % 10 for i in range(5)] + [EOS]


def _error_positions(chosen, rejected):
    return [i for i in range(len(rejected)) if i >= len(chosen) or rejected[i] != chosen[i]]


def perturb(task: str, chosen: list[int], rng: np.random.Generator) -> list[int]:
    """A localised wrong response: adjacent swap (sort), one digit replaced (add), swap plus drop or
    duplicate (sort_length). Never equal to ``chosen``."""
    _check_task(task)
    body = list(chosen[:-1])
    if task in ("sort", "sort_length"):
        valid = [i for i in range(len(body) - 1) if body[i] != body[i + 1]]
        if not valid:
            raise ValueError("cannot perturb a sort response whose digits are all equal")
        i = int(valid[rng.integers(len(valid))])
        body[i], body[i + 1] = body[i + 1], body[i]
        if task == "sort_length":
            j = int(rng.integers(len(body)))
            body = body[:j] + body[j + 1:] if rng.random() < 0.5 else body[:j + 1] + body[j:]
    else:
        i = int(rng.integers(len(body)))
        body[i] = int((body[i] + rng.integers(1, 10)) % 10)
    out = body + [EOS]
    if out == list(chosen):  # pragma: no cover - excluded by construction
        raise RuntimeError("perturb produced the chosen response")
    return out


def make_preference_pairs(task: str, n: int, *, seed: int, exclude=None) -> list[PreferencePair]:
    """``n`` preference pairs of ``task`` drawn from ``seed``; prompts in ``exclude`` (a set of tuples) are
    redrawn (used to keep held-out prompts apart from training prompts)."""
    _check_task(task)
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    rng = np.random.default_rng(seed)
    exclude = exclude or set()
    pairs = []
    while len(pairs) < n:
        prompt = make_prompt(task, rng)
        if tuple(prompt) in exclude:
            continue
        chosen = solve(task, prompt)
        rejected = perturb(task, chosen, rng)
        pairs.append(PreferencePair(prompt, chosen, rejected, _error_positions(chosen, rejected)))
    return pairs


def make_sft_examples(task: str, n: int, *, seed: int, p_correct: float = 0.7) -> list[tuple[list, list]]:
    """(prompt, response) pairs for the SFT reference: correct with probability ``p_correct``, otherwise
    perturbed exactly like a rejected response (the reference makes the same localised mistakes)."""
    _check_task(task)
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if not 0 <= p_correct <= 1:
        raise ValueError(f"p_correct must be in [0, 1], got {p_correct!r}")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(int(n)):
        prompt = make_prompt(task, rng)
        chosen = solve(task, prompt)
        out.append((prompt, chosen if rng.random() < p_correct else perturb(task, chosen, rng)))
    return out


def heldout_prompts(task: str, n: int, *, seed: int, exclude=None) -> list[list[int]]:
    """``n`` distinct prompts from ``seed`` that are not in ``exclude``."""
    _check_task(task)
    rng = np.random.default_rng(seed)
    exclude, seen, out = set(exclude or ()), set(), []
    while len(out) < n:
        p = make_prompt(task, rng)
        if tuple(p) in exclude or tuple(p) in seen:
            continue
        seen.add(tuple(p))
        out.append(p)
    return out


NO_CORRECT = ("drop", "gold")


def on_policy_pairs(task: str, prompts, samples, *, no_correct: str = "drop"):
    """Preference pairs from responses sampled by a policy, scored by the task's exact-match oracle.

    ``samples[i]`` is the list of K responses (token id lists, EOS included when sampled) drawn for
    ``prompts[i]``, in sampling order. Rule, per prompt: chosen = the first correct sample (equal to
    ``solve(task, prompt)``), rejected = the first incorrect sample; the rejected response therefore always
    differs from the chosen one, and ``error_positions`` are the indices of the rejected response that differ
    from the chosen one (or lie beyond its end). A prompt whose K samples are all correct gives no pair (there
    is no mistake of the policy to push down). A prompt with no correct sample is dropped (``no_correct=
    "drop"``, the default: every pair stays on-policy on both sides) or gets the gold answer as chosen
    (``"gold"``: the chosen side is then off-policy).

    Returns ``(pairs, stats)``; ``stats`` counts the prompts, the pairs, the prompts dropped for having no
    correct or no incorrect sample, the gold-filled pairs, and the share of correct samples.
    """
    _check_task(task)
    if no_correct not in NO_CORRECT:
        raise ValueError(f"no_correct must be one of {NO_CORRECT}, got {no_correct!r}")
    if len(prompts) != len(samples):
        raise ValueError(f"got {len(prompts)} prompts but {len(samples)} sample lists")
    pairs = []
    stats = {"prompts": len(prompts), "pairs": 0, "dropped_no_correct": 0, "dropped_no_incorrect": 0,
             "gold_chosen": 0, "samples": 0, "correct_samples": 0}
    for prompt, responses in zip(prompts, samples):
        if not responses:
            raise ValueError("every prompt needs at least one sample")
        gold = solve(task, list(prompt))
        responses = [list(map(int, r)) for r in responses]
        correct = [r for r in responses if r == gold]
        wrong = [r for r in responses if r != gold]
        stats["samples"] += len(responses)
        stats["correct_samples"] += len(correct)
        if not wrong:
            stats["dropped_no_incorrect"] += 1
            continue
        if not correct:
            if no_correct == "drop":
                stats["dropped_no_correct"] += 1
                continue
            stats["gold_chosen"] += 1
        chosen, rejected = gold, wrong[0]
        pairs.append(PreferencePair(list(prompt), chosen, rejected, _error_positions(chosen, rejected)))
    stats["pairs"] = len(pairs)
    stats["correct_share"] = stats["correct_samples"] / stats["samples"] if stats["samples"] else 0.0
    return pairs, stats
