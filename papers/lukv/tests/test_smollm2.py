"""SmolLM2 part: task generation (exact lengths, answers present), answer scoring, claim summaries, and the
PyramidKV / CriticalKV presses of the comparison. No SmolLM2 weights are needed: a small stand-in tokenizer
splits on spaces and digits (the SmolLM2 tokenizer also splits numbers into single digits)."""
import re

import numpy as np
import pytest
import torch

from shared.lm import tiny_llama

from papers.lukv.online import make_press, make_scorer, run_compressed
from papers.lukv.smol_tasks import PROFILE_QUESTIONS, TASKS, make_task_batch, profile_story
from papers.lukv.smollm2 import answer_metrics, answer_positions, summarize_claims


class WordTokenizer:
    """Words, digits and punctuation become tokens; ids assigned on first sight (shared vocabulary)."""

    def __init__(self):
        self.vocab = {}

    def __call__(self, text, add_special_tokens=False):
        pieces = re.findall(r"\d|\w+|[^\w\s]|\n", text)
        return {"input_ids": [self.vocab.setdefault(p, len(self.vocab)) for p in pieces]}

    def decode(self, ids):
        inv = {v: k for k, v in self.vocab.items()}
        return " ".join(inv[i] for i in ids)


@pytest.mark.parametrize("task", TASKS)
def test_task_batch_shapes_and_answer_in_context(task):
    tok = WordTokenizer()
    b = make_task_batch(task, tok, np.random.default_rng(1), 5, 80)
    assert b.context.shape == (5, 80) and b.context.dtype == np.int64
    assert b.question.shape[0] == b.answer.shape[0] == 5
    for i in range(5):
        ctx = tok.decode(b.context[i].tolist()).replace(" ", "")
        answer = b.answers[i]
        # the answer digits are in the context (vartrack: in the first link of the chain)
        assert answer in ctx
        assert tok.decode(b.answer[i].tolist()).replace(" ", "") == answer
    if task == "vartrack":
        assert all(len(a) == 5 for a in b.answers)
    else:
        assert all(len(a) == 7 for a in b.answers)


def test_task_batch_is_deterministic():
    a = make_task_batch("niah_multikey", WordTokenizer(), np.random.default_rng(3), 3, 64, n_keys=3)
    b = make_task_batch("niah_multikey", WordTokenizer(), np.random.default_rng(3), 3, 64, n_keys=3)
    np.testing.assert_array_equal(a.context, b.context)
    assert a.answers == b.answers


def test_task_bad_input():
    tok = WordTokenizer()
    with pytest.raises(ValueError, match="task must be one of"):
        make_task_batch("qa", tok, np.random.default_rng(0), 2, 64)
    with pytest.raises(ValueError, match="n_items"):
        make_task_batch("niah_single", tok, np.random.default_rng(0), 0, 64)
    with pytest.raises(ValueError, match="n_tokens"):
        make_task_batch("niah_single", tok, np.random.default_rng(0), 2, 8)
    with pytest.raises(ValueError, match="too short"):
        make_task_batch("niah_multikey", tok, np.random.default_rng(0), 2, 20, n_keys=4)


def test_profile_story_length_and_questions():
    s = profile_story(WordTokenizer(), np.random.default_rng(0), 100)
    assert s.shape == (100,)
    assert len(PROFILE_QUESTIONS) == 30 and len(set(PROFILE_QUESTIONS)) == 30


def test_answer_positions_and_metrics_known_answer():
    assert answer_positions(4, 3) == [3, 4, 5]
    with pytest.raises(ValueError, match="question_len"):
        answer_positions(0, 3)
    V = 5
    answer = torch.tensor([[1, 2], [3, 4]])
    logits = torch.full((2, 2, V), -10.0)
    logits[0, 0, 1] = logits[0, 1, 2] = 10.0        # item 0 exact
    logits[1, 0, 3] = 10.0
    logits[1, 1, 0] = 10.0                          # item 1: second token wrong
    exact, nll = answer_metrics(logits, answer)
    np.testing.assert_array_equal(exact, [1.0, 0.0])
    # uniform logits -> NLL = log V for every token
    _, nll_u = answer_metrics(torch.zeros((2, 2, V)), answer)
    np.testing.assert_allclose(nll_u, np.log(V))
    with pytest.raises(ValueError, match="logits must have shape"):
        answer_metrics(torch.zeros((2, 3, V)), answer)


def test_summarize_claims_known_answer():
    acc = {"a": {"s1": {"rho80": {"lukv": 0.5, "uniform": 0.25}}, "s2": {"rho80": {"lukv": 0.0, "uniform": 0.5}}},
           "b": {"s1": {"rho80": {"lukv": 1.0, "uniform": 1.0}}, "s2": {"rho80": {"lukv": 1.0, "uniform": 0.0}}}}
    nll = {"a": {"s1": {"rho80": {"lukv": 1.0, "uniform": 2.0}}, "s2": {"rho80": {"lukv": 3.0, "uniform": 2.0}}},
           "b": {"s1": {"rho80": {"lukv": 1.0, "uniform": 2.0}}, "s2": {"rho80": {"lukv": 2.0, "uniform": 2.0}}}}
    out = summarize_claims(acc, {"a": 1.0, "b": 0.5}, "s1", ["s1", "s2"], nll=nll)
    assert out["acc_ratio_rho80"] == pytest.approx((0.5 / 1.0 + 1.0 / 0.5) / 2)
    assert out["scorers_lukv_ge_uniform"] == 2          # s1: 0.75 >= 0.625; s2: 0.5 >= 0.25
    assert out["scorers_lukv_nll_le_uniform"] == 1      # s1: 1 <= 2; s2: 2.5 > 2
    assert out["nll_ratio_lukv_uniform"] == pytest.approx(0.5)
    # a task whose full-cache accuracy is 0 is left out of the ratio; all zero -> None (not evaluated)
    assert summarize_claims(acc, {"a": 0.0, "b": 0.0}, "s1", ["s1", "s2"])["acc_ratio_rho80"] is None
    zeros = {t: {s: {"rho80": {"lukv": 0.0, "uniform": 0.0}} for s in ("s1", "s2")} for t in ("a", "b")}
    assert summarize_claims(zeros, {"a": 1.0, "b": 1.0}, "s1", ["s1", "s2"])["scorers_lukv_ge_uniform"] is None
    with pytest.raises(ValueError, match="primary scorer"):
        summarize_claims(acc, {"a": 1.0}, "s3", ["s1", "s2"])


T = 24


@pytest.fixture(scope="module")
def model():
    return tiny_llama(83, num_layers=2, hidden_size=32, num_heads=4, num_kv_heads=2, intermediate_size=64, seed=0)


@pytest.fixture(scope="module")
def ids():
    g = np.random.default_rng(0)
    return torch.tensor(g.integers(3, 83, size=(2, T))), torch.tensor(g.integers(3, 83, size=(2, 3)))


def test_pyramidkv_and_criticalkv_compress(model, ids):
    c, f = ids
    full, kept_full = run_compressed(model, None, c, f)
    assert kept_full == 1.0
    pk = make_press("pyramidkv", None, 0.5, seq_len=T, n_layers=2, n_kv_heads=2, pyramid_window=4)
    logits, kept = run_compressed(model, pk, c, f)
    assert logits.shape == full.shape
    # PyramidKV spends the same total budget as uniform 50% (layer-wise split), so about half the keys stay
    assert 0.3 < kept < 0.7
    ck = make_press("criticalkv", make_scorer("knorm"), 0.5, seq_len=T, n_layers=2, n_kv_heads=2)
    logits, kept = run_compressed(model, ck, c[:1], f[:1])     # kvpress 0.5.5: batch of one item
    assert kept == pytest.approx(0.5, abs=1 / T)
    with pytest.raises(ValueError, match="pyramid_window"):
        make_press("pyramidkv", None, 0.5, seq_len=T, n_layers=2, n_kv_heads=2, pyramid_window=0)
    with pytest.raises(ValueError, match="ScorerPress"):
        make_press("criticalkv", object(), 0.5, seq_len=T, n_layers=2, n_kv_heads=2)


def test_run_compressed_logit_positions_match_full_logits(model, ids):
    c, f = ids
    full, _ = run_compressed(model, None, c, f)
    part, _ = run_compressed(model, None, c, f, logit_positions=[1, 2])
    torch.testing.assert_close(part, full[:, 1:3])
    with pytest.raises(ValueError, match="logit_positions"):
        run_compressed(model, None, c, f, logit_positions=[3])


def test_switched_off_run_writes_null_claims_and_the_context_length(tmp_path):
    from shared.experiment import RunContext

    from papers.lukv.smollm2 import smollm2

    ctx = RunContext(name="smollm2", scale="quick", seed=1, out_dir=tmp_path)
    params = {"run": False, "context_len": 130, "methods": ["full", "uniform", "lukv"], "rhos": [0.8],
              "scorers": {"knorm": {"press": "knorm"}}, "primary_scorer": "knorm"}
    _, metrics = smollm2(params, ctx)
    assert metrics["available"] is False and metrics["context_len"] == 130
    assert metrics["acc_ratio_rho80"] is None and metrics["control"]["streaming"]["acc_ratio_rho80"] is None
