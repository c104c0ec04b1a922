"""RULER-like long-context tasks for SmolLM2, generated from a seed (spec "SmolLM2 tasks"; no download).

Every context is built at the token level so that all items of one task have exactly ``n_tokens`` context
tokens and the same number of question and answer tokens (they can be batched without padding):

- filler: sentences of a seeded grammar (``filler_sentence``), tokenised one by one with a leading space;
- ``niah_single``: one needle "The special magic number is NNNNNNN." (7 digits) in the filler; question
  "What is the special magic number?", answer the 7 digits;
- ``niah_multikey``: ``n_keys`` needles "The special magic number for WORD is NNNNNNN." with distinct words;
  the question names one of them;
- ``vartrack``: a chain "VAR ABCD = 48213." then "VAR EFGH = ABCD." (``hops`` links) scattered in order; the
  question asks for the value of the last variable, the answer is the 5 digits.

The SmolLM2 tokenizer splits numbers into single digits, so answers of a task have one length. An item is
answered correctly when the greedy (argmax) prediction of every answer token, teacher-forced after the
question on the (compressed) cache, equals the answer: this is the exact match of the greedy continuation
with the answer (README Deviations).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TASKS", "TaskBatch", "filler_sentence", "make_task_batch", "profile_story", "PROFILE_QUESTIONS"]

TASKS = ("niah_single", "niah_multikey", "vartrack")

_ADJ = ["quiet", "old", "bright", "small", "green", "tired", "clever", "distant", "gentle", "busy", "calm",
        "narrow", "warm", "curious", "silver", "heavy"]
_NOUN = ["farmer", "river", "teacher", "lantern", "village", "sailor", "garden", "merchant", "bridge", "child",
         "painter", "forest", "baker", "tower", "market", "doctor"]
_VERB = ["watched", "crossed", "followed", "repaired", "visited", "painted", "carried", "found", "remembered",
         "described", "passed", "cleaned"]
_PLACE = ["near the hills", "before sunrise", "in the old town", "after the storm", "by the harbour",
          "during the festival", "under the bridge", "at the edge of the forest", "on a cold morning",
          "behind the mill"]
_KEYWORDS = ["apple", "copper", "falcon", "harbor", "jasmine", "marble", "nectar", "orbit", "pepper", "quartz",
             "raven", "saffron", "tundra", "velvet", "willow", "zephyr"]
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: Project-written questions about the profiling story (spec: 30 templates).
PROFILE_QUESTIONS = [
    "Who is mentioned first in the text?", "What happened after the storm?", "Where did the farmer go?",
    "Summarize the text in one sentence.", "What did the teacher do?", "Which place is mentioned last?",
    "Describe the village.", "What did the sailor carry?", "Who repaired the bridge?",
    "What is the text mostly about?", "What happened near the hills?", "Who visited the market?",
    "What did the painter find?", "List three people in the text.", "What happened in the old town?",
    "Who followed the river?", "What was the weather like?", "What did the child remember?",
    "Which animals or objects appear in the text?", "What happened by the harbour?",
    "Who was busy in the text?", "What did the baker describe?", "What is the last sentence about?",
    "Who cleaned the tower?", "What happened during the festival?", "Which adjective is used most?",
    "What did the doctor watch?", "Where is the mill?", "What happened at the edge of the forest?",
    "Give a title for the text.",
]


def filler_sentence(rng: np.random.Generator) -> str:
    """One sentence of the seeded grammar: "The ADJ NOUN VERB the ADJ NOUN PLACE." """
    a1, a2 = rng.choice(_ADJ, 2)
    n1, n2 = rng.choice(_NOUN, 2, replace=False)
    return f"The {a1} {n1} {rng.choice(_VERB)} the {a2} {n2} {rng.choice(_PLACE)}."


def _encode(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _fill_context(tokenizer, rng: np.random.Generator, n_tokens: int, inserts: list[str]) -> list[int]:
    """Filler sentences with ``inserts`` (in order) at random sentence boundaries, exactly ``n_tokens`` long.
    The last filler sentence is cut to length; inserts are never cut."""
    pieces = [_encode(tokenizer, " " + s) for s in inserts]
    need = sum(len(p) for p in pieces)
    if need + 8 > n_tokens:
        raise ValueError(f"n_tokens={n_tokens} is too short for the inserted facts ({need} tokens)")
    filler = []
    while sum(len(f) for f in filler) < n_tokens - need + 16:
        filler.append(_encode(tokenizer, " " + filler_sentence(rng)))
    # boundaries among the first `fit` filler sentences: every insert then ends before n_tokens - 4
    total, fit = 0, 0
    for f in filler:
        if total + len(f) + need > n_tokens - 4:
            break
        total += len(f); fit += 1
    slots = np.sort(rng.integers(0, fit + 1, size=len(pieces)))   # insert k goes before filler sentence slots[k]
    out, k = [], 0
    for i, f in enumerate(filler):
        while k < len(pieces) and slots[k] == i:
            out += pieces[k]; k += 1
        out += f
        if len(out) >= n_tokens and k == len(pieces):
            break
    while k < len(pieces):
        out += pieces[k]; k += 1
    if len(out) < n_tokens:
        raise ValueError("internal: context shorter than n_tokens")
    return out[:n_tokens]   # only the last filler sentence is cut: every insert ends before n_tokens - 4


@dataclass(frozen=True)
class TaskBatch:
    """``context`` (n, T), ``question`` (n, Q) and ``answer`` (n, A) token ids (int64), and the answers as text."""
    task: str
    context: np.ndarray
    question: np.ndarray
    answer: np.ndarray
    answers: tuple


def _item(task: str, tokenizer, rng: np.random.Generator, n_tokens: int, n_keys: int, hops: int):
    if task == "niah_single":
        num = "".join(str(d) for d in rng.integers(0, 10, 7))
        num = str(rng.integers(1, 10)) + num[1:]
        inserts = [f"The special magic number is {num}."]
        question, answer = "\nQuestion: What is the special magic number? Answer: The special magic number is", num
    elif task == "niah_multikey":
        words = rng.choice(_KEYWORDS, n_keys, replace=False)
        nums = [str(rng.integers(1_000_000, 10_000_000)) for _ in range(n_keys)]
        inserts = [f"The special magic number for {w} is {n}." for w, n in zip(words, nums)]
        order = rng.permutation(n_keys)
        inserts = [inserts[i] for i in order]
        q = int(rng.integers(n_keys))
        question = (f"\nQuestion: What is the special magic number for {words[q]}? Answer: The special magic "
                    f"number for {words[q]} is")
        answer = nums[q]
    elif task == "vartrack":
        names = []
        while len(names) < hops + 1:
            name = "".join(rng.choice(list(_LETTERS), 4))
            if name not in names:
                names.append(name)
        value = str(rng.integers(10_000, 100_000))
        inserts = [f"VAR {names[0]} = {value}."] + [f"VAR {names[i + 1]} = {names[i]}." for i in range(hops)]
        question = f"\nQuestion: What is the value of VAR {names[-1]}? Answer: VAR {names[-1]} ="
        answer = value
    else:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    ctx = _fill_context(tokenizer, rng, n_tokens, inserts)
    return ctx, _encode(tokenizer, question), _encode(tokenizer, " " + answer), answer


def make_task_batch(task: str, tokenizer, rng: np.random.Generator, n_items: int, n_tokens: int, *,
                    n_keys: int = 4, hops: int = 2) -> TaskBatch:
    """``n_items`` items of ``task`` with exactly ``n_tokens`` context tokens each. Items whose question or
    answer length differs from the first item's are redrawn (token lengths of names can differ)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if int(n_items) != n_items or n_items < 1:
        raise ValueError(f"n_items must be a positive integer, got {n_items!r}")
    if int(n_tokens) != n_tokens or n_tokens < 16:
        raise ValueError(f"n_tokens must be an integer >= 16, got {n_tokens!r}")
    items = []
    tries = 0
    while len(items) < n_items:
        tries += 1
        if tries > 50 * n_items:
            raise RuntimeError(f"could not draw {n_items} {task} items of equal question/answer length")
        c, q, a, text = _item(task, tokenizer, rng, int(n_tokens), int(n_keys), int(hops))
        if items and (len(q), len(a)) != (len(items[0][1]), len(items[0][2])):
            continue
        items.append((c, q, a, text))
    arr = lambda k: np.array([it[k] for it in items], dtype=np.int64)  # noqa: E731
    return TaskBatch(task, arr(0), arr(1), arr(2), tuple(it[3] for it in items))


def profile_story(tokenizer, rng: np.random.Generator, n_tokens: int) -> np.ndarray:
    """A profiling context of exactly ``n_tokens`` grammar sentences (the ``grammar`` story source)."""
    return np.array(_fill_context(tokenizer, rng, n_tokens, []), dtype=np.int64)
