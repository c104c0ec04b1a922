"""A small binary sentiment task of short templated sentences, built from a packaged human-rated lexicon.

The paper fine-tunes LLaMA-3.2-1B on SST-2, which cannot be fetched at run time. No text classification set ships
inside an installed package (scikit-learn's 20 Newsgroups is a download). What does ship is the VADER sentiment
lexicon (``vaderSentiment/vader_lexicon.txt`` in ``vadersentiment==3.3.2``, pinned in ``envs/nodeps.txt``): about
7500 tokens, each with the mean valence that ten human raters gave it on a -4..+4 scale. The task here is built
from it, deterministically, with no download:

* words: the lexicon entries that are lower-case alphabetic, at least ``min_length`` letters long, with
  |mean valence| >= ``min_abs_valence`` and (when a tokenizer vocabulary is given) a single token of it, so
  slang and acronyms are dropped; label 1 when the human mean valence is positive, else 0;
* sentences: each word is placed in one of ``TEMPLATES`` (short SST-2-like review phrases such as "the story
  felt {w} ."), the template drawn uniformly;
* splits: ``n_train`` and ``n_test`` sentences from disjoint word sets, half of each split positive, drawn with a
  seeded generator, so the test words are never seen in training.

This is generated text, not SST-2: the labels are the lexicon's human ratings, the sentences are ours.
"""
from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path

import numpy as np

__all__ = ["VADER_SHA256", "TEMPLATES", "lexicon_path", "sentiment_words", "sentiment_sentences"]

#: SHA-256 of vaderSentiment/vader_lexicon.txt in vadersentiment 3.3.2
VADER_SHA256 = "1ec9c6e9ee19aade328f8beb393a6afa71a5bb3acf7d3cc22d4ef568df374bf5"

TEMPLATES = ("it was {w} .", "the film is {w} .", "the story felt {w} .", "simply {w} .",
             "my one word review : {w} .", "critics called it {w} .", "the acting was {w} .",
             "overall , {w} .")


def lexicon_path() -> Path:
    """Path of the VADER lexicon inside the installed ``vaderSentiment`` package (found without importing it)."""
    spec = importlib.util.find_spec("vaderSentiment")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the package vadersentiment is not installed; pip install --no-deps vadersentiment==3.3.2")
    return Path(list(spec.submodule_search_locations)[0]) / "vader_lexicon.txt"


def sentiment_words(*, min_abs_valence: float = 1.0, min_length: int = 3, vocab=None, path=None,
                    sha256: str = VADER_SHA256) -> tuple[list[str], np.ndarray]:
    """(words, labels): lexicon entries matching ``^[a-z]+$`` with at least ``min_length`` letters and
    |mean valence| >= ``min_abs_valence``, first occurrence kept, restricted to ``vocab`` (a container of tokens)
    when given; label 1 if the mean valence is positive, else 0. RuntimeError on a checksum mismatch."""
    if not float(min_abs_valence) > 0:
        raise ValueError(f"min_abs_valence must be > 0, got {min_abs_valence!r}")
    if isinstance(min_length, bool) or not isinstance(min_length, (int, np.integer)) or min_length < 1:
        raise ValueError(f"min_length must be a positive integer, got {min_length!r}")
    path = Path(path) if path is not None else lexicon_path()
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise RuntimeError(f"checksum mismatch for the VADER lexicon {path.name}: {digest}, expected {sha256}")
    words, labels, seen = [], [], set()
    for line in raw.decode("utf-8", errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not re.fullmatch(r"[a-z]+", parts[0]) or len(parts[0]) < int(min_length):
            continue
        mean = float(parts[1])
        if abs(mean) < float(min_abs_valence) or parts[0] in seen or (vocab is not None and parts[0] not in vocab):
            continue
        seen.add(parts[0])
        words.append(parts[0])
        labels.append(1 if mean > 0 else 0)
    return words, np.asarray(labels, dtype=np.int64)


def sentiment_sentences(words, labels, *, n_train: int, n_test: int, seed) -> dict:
    """Balanced train and test sentences from disjoint words: ``n_train`` / 2 positive and negative training
    words and ``n_test`` / 2 of each for the test set (both even), each placed in a template drawn uniformly.
    Returns {"train": (sentences, labels), "test": (sentences, labels), "train_words", "test_words"}."""
    for name, v in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 2 or v % 2:
            raise ValueError(f"{name} must be an even integer >= 2, got {v!r}")
    labels = np.asarray(labels)
    if len(words) != labels.size:
        raise ValueError(f"words and labels differ in length: {len(words)} and {labels.size}")
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    need = (int(n_train) + int(n_test)) // 2
    if min(pos.size, neg.size) < need:
        raise ValueError(f"{need} words of each class are needed, the lexicon gives {pos.size} positive and "
                         f"{neg.size} negative")
    pos, neg = rng.permutation(pos)[:need], rng.permutation(neg)[:need]
    h = int(n_train) // 2
    out = {}
    for split, idx in (("train", np.concatenate([pos[:h], neg[:h]])), ("test", np.concatenate([pos[h:], neg[h:]]))):
        idx = rng.permutation(idx)
        tmpl = rng.integers(0, len(TEMPLATES), idx.size)
        out[split] = ([TEMPLATES[t].format(w=words[i]) for t, i in zip(tmpl, idx)], labels[idx].astype(np.int64))
        out[f"{split}_words"] = [words[i] for i in idx]
    return out
