"""The KV-recall task and the induction warm-up of the tiny model (papers/lukv/task.py)."""
import numpy as np
import pytest

from papers.lukv.task import (BOS, FILLER, KEYS, MIN_SEGMENT, QRY, VALUES, VOCAB_SIZE, make_batch,
                              make_induction_batch, value_positions)


def test_recall_batch_answers_are_the_context_values_of_the_queried_keys():
    ctx, fut = make_batch(np.random.default_rng(0), 50, context_len=40, n_pairs=4, n_queries=2)
    assert ctx.shape == (50, 40) and fut.shape == (50, 6)
    assert (ctx[:, 0] == BOS).all() and (fut[:, 0::3] == QRY).all()
    for c, f in zip(ctx, fut):
        keys_at = np.flatnonzero(np.isin(c, KEYS))
        assert len(keys_at) == 4 and len(set(c[keys_at])) == 4      # distinct keys
        assert (keys_at % 2 == 1).all()                              # a key opens each slot
        lookup = {int(c[i]): int(c[i + 1]) for i in keys_at}
        assert all(np.isin(list(lookup.values()), VALUES))
        for k, v in zip(f[1::3], f[2::3]):
            assert lookup[int(k)] == int(v)
        rest = np.delete(c, np.r_[0, keys_at, keys_at + 1])
        assert np.isin(rest, FILLER).all()


def test_value_positions_follow_each_query_key():
    assert value_positions(3).tolist() == [2, 5, 8]


@pytest.mark.parametrize("seq_len", [9, 46, 92])
def test_induction_batch_repeats_a_segment_and_masks_its_predictable_tokens(seq_len):
    x, mask = make_induction_batch(np.random.default_rng(1), 200, seq_len)
    assert x.shape == mask.shape == (200, seq_len) and x.dtype == mask.dtype == np.int64
    assert (x[:, 0] == BOS).all() and (x[:, 1:] >= KEYS[0]).all() and (x < VOCAB_SIZE).all()
    assert mask[:, 0].sum() == 0
    lengths = []
    for row, m in zip(x, mask):
        marked = np.flatnonzero(m)
        assert len(marked) >= MIN_SEGMENT - 1 and (np.diff(marked) == 1).all()   # one contiguous run
        length = len(marked) + 1                       # the copy's first token is not marked
        first_copy = marked[0] - 1
        start = first_copy - length
        assert start >= 1
        np.testing.assert_array_equal(row[first_copy:first_copy + length], row[start:start + length])
        lengths.append(length)
    assert MIN_SEGMENT <= min(lengths) and max(lengths) <= (seq_len - 1) // 2
    assert len(set(lengths)) >= min(6, (seq_len - 1) // 2 - MIN_SEGMENT + 1)   # lengths vary where they can
    if seq_len > 1 + 2 * MIN_SEGMENT:
        assert len({int(np.flatnonzero(m)[0]) for m in mask}) > 5                 # and so do the starts


def test_induction_batch_refuses_a_sequence_too_short_for_a_segment():
    with pytest.raises(ValueError, match="seq_len"):
        make_induction_batch(np.random.default_rng(0), 2, 2 * MIN_SEGMENT)
