"""The text arm: rendering, token alignment of pairs, LoRA starting at the reference (a tiny Llama and a
character tokenizer stand in for SmolLM2, so the test needs no pretrained weights)."""
import math

import pytest
import torch

from shared.lm import tiny_llama
from papers.adpo.llm import (add_lora, answer_text, chat_prompt_ids, greedy_text_responses, prompt_text,
                             text_exact_match, text_heldout, text_pair)
from papers.adpo.tasks import BOS, EOS, PLUS, SEP, PreferencePair, make_preference_pairs
from papers.adpo.train import encode_pairs, method_spec, train_preference



class CharTokenizer:
    """One token per printable ASCII character (ids 3..97), EOS 1; the chat template wraps the user text in ids 0 and 2."""

    eos_token_id = 1

    def __call__(self, text):
        return {"input_ids": [3 + ord(c) - 32 for c in text]}

    def apply_chat_template(self, messages, add_generation_prompt=True):
        return [0, *self(messages[0]["content"])["input_ids"], 2]


VOCAB = 3 + 95


def test_rendering_known_strings():
    sort_prompt = [BOS, 3, 1, 4, 1, 5, 9, 2, 6, SEP]
    assert prompt_text("sort", sort_prompt) == "Sort the digits: 3 1 4 1 5 9 2 6"
    assert answer_text("sort", [1, 1, 2, 3, 4, 5, 6, 9, EOS]) == "1 1 2 3 4 5 6 9"
    # add stores digits least significant first: a = 4321, b = 8765, sum 13086 -> digits 6 8 0 3 1
    add_prompt = [BOS, 1, 2, 3, 4, PLUS, 5, 6, 7, 8, SEP]
    assert prompt_text("add", add_prompt) == "Add 4321 + 8765. Answer with exactly five digits."
    assert answer_text("add", [6, 8, 0, 3, 1, EOS]) == "13086"


def test_text_pair_error_positions_of_an_adjacent_swap():
    tok = CharTokenizer()
    pair = PreferencePair([BOS, 3, 1, 4, 1, 5, 9, 2, 6, SEP], [1, 1, 2, 3, 4, 5, 6, 9, EOS],
                          [1, 1, 3, 2, 4, 5, 6, 9, EOS], [2, 3])
    out = text_pair("sort", pair, tok)
    # "1 1 2 3 ..." vs "1 1 3 2 ...": digits sit at even character positions, so digits 2 and 3 -> 4 and 6
    assert out.error_positions == [4, 6]
    assert out.chosen[-1] == out.rejected[-1] == tok.eos_token_id and len(out.chosen) == 16
    assert out.prompt == chat_prompt_ids(tok, "Sort the digits: 3 1 4 1 5 9 2 6")


def test_bad_inputs():
    with pytest.raises(ValueError, match="task must be one of"):
        prompt_text("sort_length", [BOS, 1, SEP])
    with pytest.raises(ValueError, match="LoRA rank"):
        add_lora(tiny_llama(VOCAB, num_layers=1, hidden_size=16, num_heads=2, intermediate_size=32, seed=0), r=0)

    class Uneven(CharTokenizer):
        def __call__(self, text):
            return {"input_ids": [3 + ord(c) - 32 for c in text.replace("3", "33")]}

    pair = PreferencePair([BOS, 3, 1, 4, 1, 5, 9, 2, 6, SEP], [1, 1, 2, 3, EOS], [1, 1, 2, 2, EOS], [3])
    with pytest.raises(ValueError, match="equal lengths"):
        text_pair("sort", pair, Uneven())


def test_lora_starts_at_the_reference_and_trains_only_adapters():
    torch.manual_seed(0)
    tok = CharTokenizer()
    ref = tiny_llama(VOCAB, num_layers=1, hidden_size=16, num_heads=2, intermediate_size=32, seed=0,
                     max_position_embeddings=128).eval()
    policy = add_lora(ref, r=4, alpha=8)
    ids = torch.randint(0, VOCAB, (2, 12))
    assert torch.equal(policy(input_ids=ids).logits, ref(input_ids=ids).logits)   # B = 0 at initialisation
    trainable = [n for n, p in policy.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    data = encode_pairs([text_pair("sort", p, tok) for p in make_preference_pairs("sort", 8, seed=0)], ref)
    model, log = train_preference(policy, method_spec({"loss": "dpo"}), data, steps=2, batch=4, lr=1e-2, beta=0.1,
                                  seed=0)
    assert log["init_err"] < 1e-6 and abs(log["loss"][0] - math.log(2)) < 1e-6   # every rho is 0 at step 1
    base_after = {n: p for n, p in model.named_parameters() if "lora_" not in n}
    base_before = dict(policy.named_parameters())
    assert all(torch.equal(p, base_before[n]) for n, p in base_after.items())       # frozen base weights


def test_greedy_text_responses_and_exact_match():
    tok = CharTokenizer()
    model = tiny_llama(VOCAB, num_layers=1, hidden_size=16, num_heads=2, intermediate_size=32, seed=1,
                       max_position_embeddings=128).eval()
    prompts, targets = text_heldout("add", 3, tok, seed=0)
    out = greedy_text_responses(model, prompts, 7, eos=tok.eos_token_id)
    assert len(out) == 3 and all(len(r) <= 7 for r in out)
    assert text_exact_match(targets, targets) == 1.0 and text_exact_match(out, targets) <= 1.0
    with pytest.raises(ValueError, match="one length"):
        greedy_text_responses(model, [[0, 1], [0, 1, 2]], 2, eos=1)
