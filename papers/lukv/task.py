"""The "KV recall in filler" task of the tiny model (spec "Problems and data").

Vocabulary: 0 PAD, 1 BOS, 2 QRY, keys 3..34, values 35..66, filler 67..82 (V = 83). Context: BOS then 63
tokens holding ``n_pairs`` key/value pairs (key immediately followed by its value, distinct keys) at random
non-overlapping slots, the rest uniform filler. Future window: ``n_queries`` triples ``QRY key value`` on
distinct keys of the context (K = 3 * n_queries). Training loss only on the value positions.

Training warm-up (ours, not the spec's): the key lookup is an induction circuit (a previous-token head writes
the key into its value's position; a second-layer head at the query key attends to that position and copies
the value). Trained on the recall task alone, the tiny model stays on the plateau where it copies some value of
the context; a few hundred steps on repeated random segments (:func:`make_induction_batch`) form the circuit
first.
"""
from __future__ import annotations

import numpy as np

__all__ = ["VOCAB_SIZE", "QRY", "BOS", "make_batch", "make_induction_batch", "value_positions"]

PAD, BOS, QRY = 0, 1, 2
KEYS = np.arange(3, 35)
VALUES = np.arange(35, 67)
FILLER = np.arange(67, 83)
VOCAB_SIZE = 83
MIN_SEGMENT = 4  # shortest repeated segment of the induction warm-up


def make_batch(rng: np.random.Generator, batch: int, *, context_len: int = 64, n_pairs: int = 6,
               n_queries: int = 4):
    """Return (context (B, T) int64, future (B, 3*n_queries) int64) token arrays."""
    if n_queries > n_pairs:
        raise ValueError(f"n_queries ({n_queries}) must not exceed n_pairs ({n_pairs})")
    if 2 * n_pairs > context_len - 1:
        raise ValueError(f"context_len ({context_len}) too short for {n_pairs} pairs")
    ctx = rng.choice(FILLER, size=(batch, context_len))
    ctx[:, 0] = BOS
    fut = np.empty((batch, 3 * n_queries), dtype=np.int64)
    n_slots = (context_len - 1) // 2
    for b in range(batch):
        keys = rng.choice(KEYS, size=n_pairs, replace=False)
        vals = rng.choice(VALUES, size=n_pairs)
        slots = np.sort(rng.choice(n_slots, size=n_pairs, replace=False))
        # slot s covers positions 1+2s, 2+2s; a random shift of 0/1 keeps pairs non-overlapping only if
        # the whole layout shifts together, so positions stay aligned to odd offsets
        for s, k, v in zip(slots, keys, vals):
            ctx[b, 1 + 2 * s] = k
            ctx[b, 2 + 2 * s] = v
        q = rng.choice(n_pairs, size=n_queries, replace=False)
        fut[b, 0::3] = QRY
        fut[b, 1::3] = keys[q]
        fut[b, 2::3] = vals[q]
    return ctx.astype(np.int64), fut


def value_positions(n_queries: int) -> np.ndarray:
    """Indices (within the future window) of the value tokens to be predicted."""
    return np.arange(n_queries) * 3 + 2


def make_induction_batch(rng: np.random.Generator, batch: int, seq_len: int):
    """Return (tokens (B, seq_len) int64, loss_mask (B, seq_len) int64) of the induction warm-up.

    Each row is BOS followed by uniform non-special tokens (keys, values and filler), in which a segment
    x[s : s + l] of random length l in [4, (seq_len - 1) // 2] at a random start s >= 1 is repeated right after
    itself: x[s + l + i] = x[s + i] for 0 <= i < l. The mask marks the copy after its first token,
    s + l + 1 <= t < s + 2l: each such token is the successor of the previous occurrence of its predecessor, which
    is what an induction head predicts (the first token of the copy is not predictable). Lengths and starts vary
    per row, so no fixed offset solves the task.
    """
    if seq_len < 1 + 2 * MIN_SEGMENT:
        raise ValueError(f"seq_len ({seq_len}) must be at least {1 + 2 * MIN_SEGMENT} for the induction warm-up")
    tokens = rng.integers(int(KEYS[0]), VOCAB_SIZE, size=(batch, seq_len))
    tokens[:, 0] = BOS
    mask = np.zeros((batch, seq_len), dtype=np.int64)
    for b in range(batch):
        length = int(rng.integers(MIN_SEGMENT, (seq_len - 1) // 2 + 1))
        start = int(rng.integers(1, seq_len - 2 * length + 1))
        tokens[b, start + length:start + 2 * length] = tokens[b, start:start + length]
        mask[b, start + length + 1:start + 2 * length] = 1
    return tokens.astype(np.int64), mask
