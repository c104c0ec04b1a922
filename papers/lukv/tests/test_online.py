"""kvpress integration: our curve drives LUKVPress (no download), keep counts follow the rounding rule,
oracle extraction shapes, and the bad inputs of the spec."""
import numpy as np
import pytest
import torch

from shared.lm import tiny_llama

from papers.lukv.allocation import round_keep_counts
from papers.lukv.online import make_lukv_press, make_press, make_scorer, record_scores, run_compressed
from papers.lukv.oracle import extract_oracle

T = 16


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return tiny_llama(83, num_layers=2, hidden_size=32, num_heads=4, num_kv_heads=2, intermediate_size=64, seed=0)


@pytest.fixture(scope="module")
def ids():
    g = np.random.default_rng(0)
    return torch.tensor(g.integers(3, 83, size=(2, T))), torch.tensor(g.integers(3, 83, size=(2, 3)))


def test_lukv_uses_our_curve_without_network(model, ids, monkeypatch):
    import requests

    def no_network(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(requests, "get", no_network)
    curve = np.zeros((99, 2, 2), dtype=np.float32)
    curve[79] = [[0.7, 0.55], [0.9, 0.75]]
    press = make_lukv_press(make_scorer("knorm"), curve, 0.8, n_layers=2, n_kv_heads=2)
    with torch.no_grad(), press(model):
        model(input_ids=ids[0], use_cache=True)
    for l, attn in enumerate(model.model.layers):
        _, heads, _ = attn.self_attn.masked_key_indices
        pruned = np.bincount(heads.numpy(), minlength=2) / 2        # batch of 2
        expected = T - round_keep_counts(1 - curve[79, l], T)
        np.testing.assert_array_equal(pruned, expected)
        attn.self_attn.masked_key_indices = None


def test_run_compressed_full_equals_plain_forward(model, ids):
    c, f = ids
    logits, kept = run_compressed(model, None, c, f)
    with torch.no_grad():
        ref = model(input_ids=torch.cat([c, f], 1)).logits[:, T:]
    assert kept == 1.0
    torch.testing.assert_close(logits, ref, atol=1e-4, rtol=1e-4)
    press = make_press("lukv", make_scorer("knorm"), 0.5, seq_len=T, curve=np.full((99, 2, 2), 0.5, np.float32),
                       n_layers=2, n_kv_heads=2)
    _, kept = run_compressed(model, press, c, f)
    assert kept == pytest.approx(0.5)


def test_oracle_and_scores_shapes(model, ids):
    c, f = ids
    model.config._attn_implementation = "eager"
    try:
        imp = extract_oracle(model, c, f)
    finally:
        model.config._attn_implementation = "sdpa"
    assert imp.shape == (2, 2, 2, T) and np.all(imp >= 0)
    s = record_scores(model, make_scorer("snapkv", {"window_size": 4}), c)
    assert s.shape == (2, 2, 2, T)


def test_bad_inputs(model, ids):
    from kvpress import AdaKVPress

    good = np.full((99, 2, 2), 0.5, np.float32)
    with pytest.raises(ValueError, match="ScorerPress"):
        make_lukv_press(AdaKVPress(press=make_scorer("knorm")), good, 0.5, n_layers=2, n_kv_heads=2)
    with pytest.raises(ValueError, match="shape"):
        make_lukv_press(make_scorer("knorm"), np.zeros((99, 3, 2)), 0.5, n_layers=2, n_kv_heads=2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        make_lukv_press(make_scorer("knorm"), good + 1, 0.5, n_layers=2, n_kv_heads=2)
    with pytest.raises(ValueError, match="curve"):
        make_lukv_press(make_scorer("knorm"), None, 0.5, n_layers=2, n_kv_heads=2)
    for rho in (1.0, -0.1):
        with pytest.raises(ValueError, match="rho"):
            make_press("uniform", make_scorer("knorm"), rho, seq_len=T, n_layers=2, n_kv_heads=2)
    with pytest.raises(ValueError, match="eager"):       # oracle needs eager
        extract_oracle(model, *ids)
    model.config._attn_implementation = "eager"
    try:
        with pytest.raises(ValueError, match="eager"):   # presses refuse eager
            run_compressed(model, None, *ids)
    finally:
        model.config._attn_implementation = "sdpa"


def test_missing_o_proj(ids):
    m = tiny_llama(83, num_layers=1, hidden_size=32, num_heads=4, num_kv_heads=2, intermediate_size=64,
                   attn_implementation="eager")
    m.model.layers[0].self_attn.o_proj = torch.nn.Identity()
    with pytest.raises(ValueError, match="o_proj"):
        extract_oracle(m, *ids)


@pytest.mark.parametrize("method", ["uniform", "lukv", "lukv_shuffled", "scorer", "adakv", "streaming",
                                    "pyramidkv"])
def test_every_press_keeps_exactly_one_fifth_at_rho_08(model, method):
    """(1 - 0.8) * 20 = 4 tokens per head for every press (a plain int() of 20 * (1 - 0.8) would keep 3)."""
    g = np.random.default_rng(1)
    c, f = torch.tensor(g.integers(3, 83, size=(2, 20))), torch.tensor(g.integers(3, 83, size=(2, 3)))
    curve = np.sort(np.random.default_rng(2).uniform(0.5, 1.0, size=(99, 2, 2)), axis=0).astype(np.float32)
    press = make_press(method, make_scorer("knorm"), 0.8, seq_len=20, curve=curve, n_layers=2, n_kv_heads=2,
                       sink=2, window=1, pyramid_window=4, shuffle_seed=3)
    _, kept = run_compressed(model, press, c, f)
    assert kept == pytest.approx(0.2, abs=1e-12)


def test_make_press_refuses_a_budget_that_is_not_an_integer(model):
    with pytest.raises(ValueError, match="integer"):
        make_press("adakv", make_scorer("knorm"), 0.8, seq_len=16, n_layers=2, n_kv_heads=2)
