"""Preference-task generators and the response log-prob alignment (spec "Problems and data", "Pitfalls")."""
import math

import numpy as np
import pytest
import torch

from papers.adpo.tasks import BOS, EOS, PLUS, SEP, make_preference_pairs, make_sft_examples, perturb, solve


def test_sort_pairs():
    for p in make_preference_pairs("sort", 200, seed=0):
        assert p.prompt[0] == BOS and p.prompt[-1] == SEP and len(p.prompt) == 10
        assert p.chosen == sorted(p.prompt[1:-1]) + [EOS]
        assert p.rejected != p.chosen and sorted(p.rejected[:-1]) == p.chosen[:-1]
        i, j = p.error_positions
        assert j == i + 1 and p.rejected[i] == p.chosen[j] and p.rejected[j] == p.chosen[i]


def test_add_pairs():
    p = make_preference_pairs("add", 1, seed=3)[0]
    assert p.prompt[5] == PLUS and len(p.prompt) == 11
    assert solve("add", [BOS, 9, 9, 9, 9, PLUS, 1, 0, 0, 0, SEP]) == [0, 0, 0, 0, 1, EOS]  # 9999 + 1 = 10000
    assert solve("add", [BOS, 1, 2, 0, 0, PLUS, 3, 0, 0, 0, SEP]) == [4, 2, 0, 0, 0, EOS]  # 21 + 3 = 24
    for p in make_preference_pairs("add", 100, seed=1):
        assert len(p.error_positions) == 1 and p.rejected != p.chosen


def test_sort_length_pairs_differ_in_length():
    for p in make_preference_pairs("sort_length", 100, seed=2):
        assert abs(len(p.rejected) - len(p.chosen)) == 1 and p.rejected[-1] == EOS


def test_no_equal_pair_and_redraw():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="all equal"):
        perturb("sort", [3] * 8 + [EOS], rng)
    for p in make_preference_pairs("sort", 500, seed=5):
        assert len(set(p.prompt[1:-1])) > 1


def test_bad_inputs_tasks():
    with pytest.raises(ValueError, match="n must"):
        make_preference_pairs("sort", 0, seed=0)
    with pytest.raises(ValueError, match="task"):
        make_preference_pairs("mul", 3, seed=0)


def test_sft_mix():
    data = make_sft_examples("sort", 2000, seed=0)
    share = np.mean([r == solve("sort", p) for p, r in data])
    assert 0.66 < share < 0.74


def test_response_logprob_alignment():
    """A hand-computed log-prob on a 3-token example: the first response token is scored by the SEP column."""
    from papers.adpo.train import response_logprobs

    class Fixed(torch.nn.Module):
        # logits at position t depend on the token at t only: logits[v] = 1 if v == (x_t + 1) % 15 else 0
        def forward(self, input_ids, attention_mask=None):
            logits = torch.nn.functional.one_hot((input_ids + 1) % 15, 15).double()
            return type("O", (), {"logits": logits})()

    lp, mask = response_logprobs(Fixed(), [[11, 12]], [[13]])  # prompt BOS SEP, response EOS
    log_z = math.log(math.e + 14)
    assert lp.shape == (1, 1)
    assert float(lp[0, 0]) == pytest.approx(1 - log_z)  # SEP (12) predicts 13 with logit 1
    lp, _ = response_logprobs(Fixed(), [[11, 12]], [[0, 1]])
    np.testing.assert_allclose(lp.numpy(), [[-log_z, 1 - log_z]])
