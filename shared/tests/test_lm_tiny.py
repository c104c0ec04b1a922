"""shared.lm.tiny: the tiny Llama, next-token log-probabilities, the masked loss and the training loop."""
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from shared.lm import masked_lm_loss, tiny_llama, token_logprobs, train_lm  # noqa: E402


def small(**kwargs):
    options = dict(num_layers=1, hidden_size=32, num_heads=4, num_kv_heads=2, intermediate_size=64,
                   max_position_embeddings=64, seed=0)
    options.update(kwargs)
    return tiny_llama(15, **options)


def test_architecture_follows_the_arguments():
    from transformers import LlamaForCausalLM

    model = tiny_llama(83, num_layers=2, hidden_size=128, num_heads=4, num_kv_heads=4, intermediate_size=512,
                       rope_theta=1e4)
    config = model.config
    assert isinstance(model, LlamaForCausalLM) and not model.training
    assert (config.vocab_size, config.num_hidden_layers, config.hidden_size, config.num_attention_heads,
            config.num_key_value_heads, config.intermediate_size) == (83, 2, 128, 4, 4, 512)
    assert config.rope_parameters["rope_theta"] == 1e4
    gqa = small()
    assert gqa.model.layers[0].self_attn.k_proj.weight.shape == (16, 32)  # 2 KV heads x head dim 8
    assert next(gqa.parameters()).dtype == torch.float32


def test_seeded_and_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    first, second, other = small(seed=5), small(seed=5), small(seed=6)
    assert torch.equal(torch.rand(3), expected)
    for a, b in zip(first.parameters(), second.parameters()):
        assert torch.equal(a, b)
    assert not torch.equal(first.lm_head.weight, other.lm_head.weight)


def test_eager_and_sdpa_agree():
    tokens = torch.randint(0, 15, (2, 9), generator=torch.Generator().manual_seed(0))
    eager, sdpa = small(attn_implementation="eager"), small(attn_implementation="sdpa")
    with torch.no_grad():
        assert torch.allclose(eager(tokens).logits, sdpa(tokens).logits, atol=1e-5)
        assert eager(tokens, output_attentions=True).attentions[0].shape == (2, 4, 9, 9)


def test_token_logprobs_off_by_one_on_a_three_token_example():
    model = small(dtype="float64")
    tokens = torch.tensor([[11, 3, 7]])
    with torch.no_grad():
        logits = model(tokens).logits
        lp = token_logprobs(model, tokens)
    assert lp.shape == (1, 2)
    assert math.isclose(float(lp[0, 0]), float(torch.log_softmax(logits[0, 0], -1)[3]), abs_tol=1e-12)
    assert math.isclose(float(lp[0, 1]), float(torch.log_softmax(logits[0, 1], -1)[7]), abs_tol=1e-12)


def test_masked_loss_is_the_mean_over_marked_targets():
    model = small(dtype="float64")
    tokens = torch.tensor([[11, 3, 7, 2], [11, 1, 1, 4]])
    mask = torch.tensor([[0, 0, 1, 1], [0, 1, 0, 0]])
    with torch.no_grad():
        lp = token_logprobs(model, tokens)
        loss = masked_lm_loss(model, tokens, mask)
    assert math.isclose(float(loss), -float(lp[0, 1] + lp[0, 2] + lp[1, 0]) / 3, rel_tol=1e-12)


@pytest.mark.parametrize("mask, match", [
    (torch.tensor([[1, 0, 1]]), "first token"), (torch.zeros(1, 3, dtype=torch.long), "no target"),
    (torch.ones(1, 2, dtype=torch.long), "shape")])
def test_masked_loss_bad_masks(mask, match):
    with pytest.raises(ValueError, match=match):
        masked_lm_loss(small(), torch.tensor([[1, 2, 3]]), mask)


def test_token_logprobs_bad_tokens():
    with pytest.raises(ValueError, match="input_ids"):
        token_logprobs(small(), torch.tensor([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="at least 2"):
        token_logprobs(small(), torch.tensor([[1]]))


@pytest.mark.parametrize("kwargs, match", [
    ({"hidden_size": 30}, "multiple of num_heads"), ({"num_kv_heads": 3}, "multiple of num_kv_heads"),
    ({"hidden_size": 12, "num_heads": 4}, "even"), ({"rope_theta": float("nan")}, "rope_theta"),
    ({"seed": -1}, "seed"), ({"attn_implementation": "flash"}, "attn_implementation"),
    ({"num_layers": 0}, "num_layers"), ({"dtype": "float16"}, "dtype")])
def test_bad_configs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        small(**kwargs)


def _copy_batches(step):
    """Sequences BOS a a a a: the target after the first 'a' is the same token (learnable in a few steps)."""
    generator = torch.Generator().manual_seed(step)
    first = torch.randint(0, 10, (32, 1), generator=generator)
    tokens = torch.cat([torch.full((32, 1), 11), first.repeat(1, 4)], dim=1)
    mask = torch.zeros_like(tokens)
    mask[:, 2:] = 1
    return tokens, mask


def _copy_accuracy(model):
    tokens, _ = _copy_batches(10_000)
    return float((model(tokens).logits[:, 1:-1].argmax(-1) == tokens[:, 2:]).float().mean())


def test_train_lm_reaches_target_and_is_deterministic():
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = small()
        log = train_lm(model, _copy_batches, steps=300, lr=3e-2, eval_fn=_copy_accuracy, eval_every=10,
                       target=0.99)
        runs.append(log)
        assert not model.training
    assert runs[0].stopped == "target" and runs[0].evals[-1][1] >= 0.99 and runs[0].steps < 300
    assert runs[0].losses == runs[1].losses and runs[0].losses[-1] < runs[0].losses[0]


def test_train_lm_time_cap_and_bad_input():
    log = train_lm(small(), _copy_batches, steps=10_000, lr=1e-3, max_seconds=0.01)
    assert log.stopped == "time" and log.steps < 10_000
    for kwargs, match in [({"lr": 0}, "lr"), ({"steps": 0}, "steps"), ({"target": 0.5}, "eval_fn"),
                          ({"weight_decay": -1}, "weight_decay"), ({"max_seconds": 0}, "max_seconds")]:
        with pytest.raises(ValueError, match=match):
            train_lm(small(), _copy_batches, **{"steps": 1, "lr": 1e-3, **kwargs})


def test_train_lm_stops_on_non_finite_loss():
    model = small()
    with torch.no_grad():
        model.lm_head.weight[0, 0] = float("nan")
    with pytest.raises(FloatingPointError, match="step 1"):
        train_lm(model, _copy_batches, steps=5, lr=1e-3)
