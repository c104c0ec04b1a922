"""The pretrained MiniLM split client, its lexicon sentence task and its in-place client steps."""
import os

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel

from papers.hosfl import hybrid as H
from papers.hosfl.memory_probe import peak_rss_growth
from papers.hosfl.minilm_split import (MiniLMSplit, client_direction, client_step_inplace,
                                       measure_memory_in_fresh_process, memory_summary, run_text_split,
                                       text_bytes_per_round)
from papers.hosfl.model import module_vector
from papers.hosfl.text_task import TEMPLATES, sentiment_sentences, sentiment_words


def tiny_bert(hidden=32, layers=3, seed=0):
    cfg = BertConfig(vocab_size=50, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                     intermediate_size=2 * hidden, max_position_embeddings=64)
    torch.manual_seed(seed)
    return BertModel(cfg, add_pooling_layer=False).eval()


def tokens(n, length, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 50, (n, length), generator=g)
    attn = torch.ones(n, length, dtype=torch.int64)
    for i in range(n):   # right padding of varying length
        attn[i, length - (i % 3):] = 0
    return ids * attn, attn


@pytest.fixture(scope="module")
def minilm():
    from shared.lm.pretrained import load_minilm
    return load_minilm()


# ------------------------------------------------------------------------------------------- the split
@pytest.mark.parametrize("k,m", [(1, 5), (2, 4)])
def test_split_forward_equals_the_whole_minilm(minilm, k, m):
    tok, bert = minilm
    enc = tok(["the film is wonderful .", "simply dreadful .", "critics called it a mess"], padding=True,
              return_tensors="pt")
    split = MiniLMSplit(bert, k, m)
    server = split.new_server(2, seed=0)
    with torch.no_grad():
        full = bert(**enc).last_hidden_state
        h0, mask = split.embed(enc["input_ids"], enc["attention_mask"])
        z = split.client_apply(h0, mask, torch.from_numpy(split.theta0))
        out = server.hidden(z, mask)
    assert enc["attention_mask"].min() == 0   # padding is exercised
    assert torch.allclose(out, full, atol=1e-6, rtol=0)
    assert split.client_dim == 1774464 * k


def test_functional_client_equals_the_module_and_server_pools_over_tokens():
    split = MiniLMSplit(tiny_bert(), 2, 1)
    ids, attn = tokens(4, 7)
    h0, mask = split.embed(ids, attn)
    with torch.no_grad():
        a = split.client(h0, mask)
        b = split.client_apply(h0, mask, torch.from_numpy(split.theta0))
    assert torch.equal(a, b)
    server = split.new_server(3, seed=1)
    with torch.no_grad():
        h = server.hidden(a, mask)
        m = attn.unsqueeze(-1).float()
        ref = server.head((h * m).sum(1) / m.sum(1))
        assert torch.allclose(server(a, mask, attn), ref, atol=1e-6)


def test_split_rejects_bad_layer_counts():
    bert = tiny_bert(layers=3)
    with pytest.raises(ValueError):
        MiniLMSplit(bert, 2, 2)
    with pytest.raises(ValueError):
        MiniLMSplit(bert, 0, 1)


# ------------------------------------------------------------------------------------------- directions, estimator
def test_direction_is_one_generator_stream_tensor_by_tensor():
    shapes = [(3, 4), (4,), (2, 5)]
    parts = client_direction(7, shapes)
    assert [tuple(p.shape) for p in parts] == shapes
    gen = torch.Generator().manual_seed(7)
    for p, shp in zip(parts, shapes):
        assert torch.equal(p, torch.randn(shp, generator=gen))
    assert not torch.equal(client_direction(8, shapes)[0], parts[0])


def test_zo_estimate_of_a_linear_client_is_exact_per_direction_and_unbiased():
    """For f(theta) = <g, theta>: v/mu = u . g for every mu, and the mean of (u . g) u over seeds is g."""
    shapes = [(6,), (2, 3)]
    g = torch.linspace(-1.0, 1.0, 12, dtype=torch.float64)
    theta = torch.zeros(12, dtype=torch.float64)
    est = torch.zeros(12, dtype=torch.float64)
    n = 4000
    for s in range(n):
        u = torch.cat([t.reshape(-1) for t in client_direction(s, shapes)]).double()
        for mu in (1e-3, 1.0):
            v = float(g @ (theta + mu * u) - g @ theta)
            assert v / mu == pytest.approx(float(u @ g), rel=1e-9, abs=1e-12)
        est += float(u @ g) * u / n
    # E[(u.g) u] = g; the per-coordinate s.d. of the mean is about ||g|| / sqrt(n)
    assert torch.max(torch.abs(est - g)) < 5 * float(g.norm()) / np.sqrt(n)


# ------------------------------------------------------------------------------------------- in-place client steps
def test_inplace_hosfl_step_equals_the_functional_pipeline():
    split = MiniLMSplit(tiny_bert(), 2, 1)
    ids, attn = tokens(5, 6)
    h0, mask = split.embed(ids, attn)
    theta0 = torch.from_numpy(split.theta0.copy())
    lam = torch.randn(5, 6, 32, generator=torch.Generator().manual_seed(3)) / 30
    seeds, mu, lr = [11, 22, 33], 1e-2, 0.1
    with torch.no_grad():
        z = split.client_apply(h0, mask, theta0)
        v_ref = []
        for s in seeds:
            u = torch.cat([t.reshape(-1) for t in client_direction(s, split.shapes)])
            v_ref.append(float((lam.double() * (split.client_apply(h0, mask, theta0 + mu * u) - z).double()).sum()))
    v = client_step_inplace("hosfl", split, ids, attn, lam, seeds=seeds, mu=mu, lr=lr)
    assert np.allclose(v, v_ref, rtol=1e-3, atol=1e-7)
    ghat = sum(vp / (len(seeds) * mu) * torch.cat([t.reshape(-1) for t in client_direction(s, split.shapes)]).double()
               for vp, s in zip(v, seeds))
    new, _ = H.sgd_momentum_step(split.theta0, ghat.numpy(), lr)
    assert np.allclose(module_vector(split.client), new, atol=1e-5)
    assert not np.allclose(module_vector(split.client), split.theta0)


def test_inplace_sfl_step_is_the_autograd_gradient_step_and_inference_changes_nothing():
    split = MiniLMSplit(tiny_bert(), 1, 1)
    ids, attn = tokens(4, 5)
    h0, mask = split.embed(ids, attn)
    lam = torch.randn(4, 5, 32, generator=torch.Generator().manual_seed(1))
    th = torch.from_numpy(split.theta0.copy()).requires_grad_(True)
    (g,) = torch.autograd.grad(split.client_apply(h0, mask, th), [th], grad_outputs=lam)
    client_step_inplace("inference", split, ids, attn, lam)
    assert np.array_equal(module_vector(split.client), split.theta0)
    client_step_inplace("sfl_fo", split, ids, attn, lam, lr=0.05)
    assert np.allclose(module_vector(split.client), split.theta0 - 0.05 * g.numpy(), atol=1e-6)
    assert not any(p.requires_grad for p in split.client.parameters())


def test_inplace_step_rejects_bad_inputs():
    split = MiniLMSplit(tiny_bert(), 1, 1)
    ids, attn = tokens(2, 4)
    lam = torch.zeros(2, 4, 32)
    with pytest.raises(ValueError):
        client_step_inplace("sfl_zo", split, ids, attn, lam)
    with pytest.raises(ValueError):
        client_step_inplace("hosfl", split, ids, attn, lam, seeds=[1, 1])
    with pytest.raises(ValueError):
        client_step_inplace("hosfl", split, ids, attn, torch.zeros(2, 3, 32), seeds=[1])


def test_measured_memory_of_forward_backward_exceeds_forward_only():
    split = MiniLMSplit(tiny_bert(hidden=64, layers=2), 1, 1)
    ids, attn = tokens(256, 32)
    lam = torch.randn(256, 32, 64) / 1000
    kw = {"seeds": [5, 6], "mu": 1e-3, "lr": 1e-3}
    peak = {}
    for m in ("inference", "hosfl", "sfl_fo"):
        peak[m] = peak_rss_growth(lambda m=m: client_step_inplace(m, split, ids, attn, lam, **kw),
                                  warmup=lambda m=m: client_step_inplace(m, split, ids[:1], attn[:1], lam[:1], **kw))
    act = 256 * 32 * 64 * 4   # one hidden-state tensor, 2 MiB
    assert peak["sfl_fo"] > peak["inference"] + 4 * act
    assert peak["sfl_fo"] > peak["hosfl"]


def test_memory_summary_takes_per_process_means_and_ratios():
    """One sample per process: the mean over its forked repeats; ratios per process; the within-process range."""
    mib = 2 ** 20
    procs = [{"peak_bytes": {"hosfl": [30 * mib, 32 * mib], "sfl_fo": [62 * mib, 62 * mib],
                             "hosfl_grad": [90 * mib, 90 * mib], "inference": [20 * mib, 22 * mib]},
              "batch_size": 128, "seq_len": 9, "hidden": 384, "client_dim": 1000, "P": 2},
             {"peak_bytes": {"hosfl": [40 * mib, 40 * mib], "sfl_fo": [50 * mib, 50 * mib],
                             "hosfl_grad": [75 * mib, 75 * mib], "inference": [25 * mib, 25 * mib]},
              "batch_size": 128, "seq_len": 9, "hidden": 384, "client_dim": 1000, "P": 2}]
    out = memory_summary(procs)
    assert (out["processes"], out["repeats"], out["P"], out["batch_size"]) == (2, 2, 2, 128)
    assert out["peak_mib"]["hosfl"] == [31.0, 40.0]
    assert out["ratio"]["hosfl_over_sfl_fo"] == pytest.approx([0.5, 0.8])
    assert out["ratio"]["hosfl_grad_over_sfl_fo"] == pytest.approx([90 / 62, 1.5])
    assert out["ratio"]["hosfl_over_inference"] == pytest.approx([31 / 21, 1.6])
    assert out["ratio_mean"]["hosfl_over_sfl_fo"] == pytest.approx(0.65)
    assert out["within_process_range_mib"] == {"hosfl": 2.0, "sfl_fo": 0.0, "hosfl_grad": 0.0, "inference": 2.0}
    assert out["cut_activation_mib"] == pytest.approx(128 * 9 * 384 * 4 / mib)
    with pytest.raises(ValueError, match="at least one process"):
        memory_summary([])


def test_memory_probe_runs_in_a_fresh_process_and_measures_every_method(minilm):
    """The probe of minilm_split in another (spawned) process: every method measured, SFL's backward above
    inference, the probe's batch and P reported."""
    probe = {"task": {"n_train": 16, "n_test": 4, "max_length": 16}, "split": {"client_layers": 1, "server_layers": 1},
             "task_seed": 3, "batch_size": 16, "server_seed": 4, "step_seeds": [5, 6], "mu": 1e-3, "lr": 1e-3,
             "repeats": 2}
    out = measure_memory_in_fresh_process(probe)
    assert set(out["peak_bytes"]) == {"hosfl", "sfl_fo", "hosfl_grad", "inference"}
    assert all(len(v) == 2 for v in out["peak_bytes"].values())
    assert out["client_dim"] == 1774464 and out["hidden"] == 384
    assert out["pid"] != os.getpid() and (out["batch_size"], out["P"]) == (16, 2)
    assert min(out["peak_bytes"]["sfl_fo"]) > max(out["peak_bytes"]["inference"])


# ------------------------------------------------------------------------------------------- training runs
def test_text_runs_frozen_keeps_the_client_and_bytes_follow_the_protocol():
    bert = tiny_bert()
    split = MiniLMSplit(bert, 1, 1)
    ids, attn = tokens(24, 6)
    y = torch.arange(24) % 2
    data = {"train": (ids, attn, y), "test": (ids[:8], attn[:8], y[:8])}
    kw = dict(rounds=3, n_clients=2, batch_size=3, P=2, eval_every=3, seed=4)
    fr = run_text_split("frozen", split, data, **kw)
    assert np.array_equal(fr["client_vector"], split.theta0)
    ho = run_text_split("hosfl", split, data, client_lr=1e-3, **kw)
    fo = run_text_split("sfl_fo", split, data, client_lr=1e-2, **kw)
    assert not np.array_equal(ho["client_vector"], split.theta0)
    assert not np.array_equal(fo["client_vector"], split.theta0)
    assert fr["train_loss"][0] == ho["train_loss"][0] == fo["train_loss"][0]   # same start, batches, server init
    d = split.client_dim
    assert ho["bytes_per_client_round"]["weights.up"] == 8 and fo["bytes_per_client_round"]["weights.up"] == 4 * d
    assert ho["bytes_per_client_round"]["cut.act_up"] == fo["bytes_per_client_round"]["cut.act_up"] == 3 * 6 * 32 * 4
    assert text_bytes_per_round("frozen", batch_size=3, seq_len=6, hidden=32, client_dim=d, P=2)["cut.grad_down"] == 0
    with pytest.raises(ValueError):
        run_text_split("sfl_zo", split, data, **kw)
    with pytest.raises(ValueError):
        run_text_split("hosfl", split, data, **{**kw, "rounds": 0})
    with pytest.raises(ValueError):
        run_text_split("hosfl", split, data, client_lr=-1.0, **kw)


# ------------------------------------------------------------------------------------------- the task
def test_sentiment_task_is_balanced_disjoint_and_deterministic():
    words, labels = sentiment_words()
    assert len(words) == labels.size > 1000 and set(np.unique(labels)) == {0, 1}
    assert all(w.isalpha() and w.islower() and len(w) >= 3 for w in words)
    a = sentiment_sentences(words, labels, n_train=40, n_test=20, seed=3)
    b = sentiment_sentences(words, labels, n_train=40, n_test=20, seed=3)
    assert a["train"][0] == b["train"][0] and np.array_equal(a["test"][1], b["test"][1])
    assert not set(a["train_words"]) & set(a["test_words"])
    assert a["train"][1].sum() == 20 and a["test"][1].sum() == 10
    lab = dict(zip(words, labels))
    for s, w, y in zip(a["train"][0], a["train_words"], a["train"][1]):
        assert lab[w] == y and any(s == t.format(w=w) for t in TEMPLATES)
    vocab = {"good", "bad", "happy", "sad"}
    w2, _ = sentiment_words(vocab=vocab)
    assert set(w2) <= vocab


def test_sentiment_task_rejects_bad_inputs(tmp_path):
    words, labels = sentiment_words()
    with pytest.raises(ValueError):
        sentiment_sentences(words, labels, n_train=41, n_test=20, seed=0)
    with pytest.raises(ValueError):
        sentiment_sentences(words, labels, n_train=10 ** 5, n_test=20, seed=0)
    with pytest.raises(ValueError):
        sentiment_sentences(words[:5], labels, n_train=4, n_test=2, seed=0)
    bad = tmp_path / "lexicon.txt"
    bad.write_text("good\t2.0\t0.5\t[]\n")
    with pytest.raises(RuntimeError):
        sentiment_words(path=bad)
    with pytest.raises(ValueError):
        sentiment_words(min_abs_valence=0)
