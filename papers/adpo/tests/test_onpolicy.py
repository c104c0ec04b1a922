"""On-policy preference pairs: the chosen/rejected rule on known samples, the sampler on a stub policy with known
sampling distribution, determinism for a fixed seed, and the SFT seeds."""
import pytest
import torch

from papers.adpo.experiments import build_pairs, sft_seed_value
from papers.adpo.tasks import BOS, EOS, SEP, VOCAB_SIZE, make_preference_pairs, on_policy_pairs, solve
from papers.adpo.train import build_model, sample_responses, train_sft

P1 = [BOS, 3, 1, 2, 5, 4, 7, 6, 9, SEP]   # gold: 1 2 3 4 5 6 7 9 EOS
G1 = solve("sort", P1)
P2 = [BOS, 0, 0, 8, 8, 1, 1, 2, 2, SEP]
G2 = solve("sort", P2)
P3 = [BOS, 9, 8, 7, 6, 5, 4, 3, 2, SEP]
G3 = solve("sort", P3)


def swap01(r):
    return [r[1], r[0], *r[2:]]


def test_rule_on_known_samples():
    wrong1 = swap01(G1)
    wrong2 = G1[:-1]                       # no EOS (a truncated sample)
    samples = [[wrong1, G1, wrong2],       # P1: correct and incorrect -> (gold, first incorrect)
               [G2, G2],                   # P2: all correct -> no pair (nothing to push down)
               [swap01(G3), G3[:3]]]       # P3: none correct -> dropped by default
    pairs, stats = on_policy_pairs("sort", [P1, P2, P3], samples)
    assert len(pairs) == 1
    p = pairs[0]
    assert p.prompt == P1 and p.chosen == G1 and p.rejected == wrong1 and p.error_positions == [0, 1]
    assert stats == {"prompts": 3, "pairs": 1, "dropped_no_correct": 1, "dropped_no_incorrect": 1,
                     "gold_chosen": 0, "samples": 7, "correct_samples": 3, "correct_share": 3 / 7}
    # the rejected side is the first incorrect sample in sampling order
    pairs, _ = on_policy_pairs("sort", [P1], [[G1, wrong2, wrong1]])
    assert pairs[0].rejected == wrong2
    # error positions are indices of the rejected response: a truncated prefix of the gold answer has none (the
    # missing EOS is on the chosen side only)
    assert pairs[0].error_positions == []


def test_no_correct_gold():
    pairs, stats = on_policy_pairs("sort", [P1, P3], [[G1, swap01(G1)], [G3[:3], swap01(G3)]], no_correct="gold")
    assert [(p.chosen, p.rejected) for p in pairs] == [(G1, swap01(G1)), (G3, G3[:3])]
    assert stats["gold_chosen"] == 1 and stats["dropped_no_correct"] == 0
    # a rejected response longer than the chosen one: positions beyond the chosen's end count as errors
    longer = G1 + [EOS]
    pairs, _ = on_policy_pairs("sort", [P1], [[longer]], no_correct="gold")
    assert pairs[0].error_positions == [9]


def test_rule_invariants_on_random_samples():
    gen = torch.Generator().manual_seed(0)
    prompts = [p.prompt for p in make_preference_pairs("sort", 50, seed=1)]
    samples = []
    for p in prompts:
        gold = solve("sort", p)
        samples.append([gold if torch.rand(1, generator=gen) < 0.4 else swap01(gold) if gold[0] != gold[1]
                        else gold[:-1] for _ in range(3)])
    pairs, stats = on_policy_pairs("sort", prompts, samples)
    for pair, (p, s) in zip(pairs, [(p, s) for p, s in zip(prompts, samples)
                                    if solve("sort", p) in s and any(r != solve("sort", p) for r in s)]):
        assert pair.prompt == p and pair.chosen == solve("sort", p)
        assert pair.rejected != pair.chosen and pair.rejected == next(r for r in s if r != pair.chosen)
    assert stats["pairs"] + stats["dropped_no_correct"] + stats["dropped_no_incorrect"] == 50


def test_bad_inputs():
    with pytest.raises(ValueError, match="no_correct"):
        on_policy_pairs("sort", [P1], [[G1]], no_correct="other")
    with pytest.raises(ValueError, match="sample lists"):
        on_policy_pairs("sort", [P1, P2], [[G1]])
    with pytest.raises(ValueError, match="at least one sample"):
        on_policy_pairs("sort", [P1], [[]])
    with pytest.raises(ValueError, match="task"):
        on_policy_pairs("other", [P1], [[G1]])


class CoinFlipSorter(torch.nn.Module):
    """A stub policy for the sort task: its first response token is the gold first digit or the gold second digit
    with probability 1/2 each; afterwards it continues the gold answer, or the gold answer with its first two
    tokens swapped, deterministically. Works with and without the key-value cache (the cache is the token
    history)."""

    def forward(self, input_ids, past_key_values=None, use_cache=False, attention_mask=None):
        ids = input_ids if past_key_values is None else torch.cat([past_key_values, input_ids], 1)
        logits = torch.full((ids.shape[0], input_ids.shape[1], VOCAB_SIZE), -1e4, dtype=torch.float64)
        for b, row in enumerate(ids.tolist()):
            prompt, resp = row[:10], row[10:]
            gold = solve("sort", prompt)
            if not resp:
                logits[b, -1, gold[0]] = logits[b, -1, gold[1]] = 0.0
            else:
                target = gold if resp == gold[:len(resp)] else swap01(gold)
                logits[b, -1, target[len(resp)] if len(resp) < len(target) else EOS] = 0.0
        return type("Out", (), {"logits": logits, "past_key_values": ids})()


def test_sampler_and_builder_on_stub_policy():
    stub = CoinFlipSorter()
    samples = sample_responses(stub, [P1, P3], 9, k=16, seed=3)
    assert [len(s) for s in samples] == [16, 16]
    for prompt, ss in zip((P1, P3), samples):
        gold = solve("sort", prompt)
        assert all(r in (gold, swap01(gold)) for r in ss)
        assert gold in ss and swap01(gold) in ss          # 16 fair coin flips: both appear (seeded)
    # the builder on the stub: every prompt with two different first digits gives (gold, swapped-gold)
    params = {"pairs": "on_policy", "k_samples": 8, "temperature": 1.0, "no_correct": "drop"}
    pairs, prompts, stats = build_pairs(params, "sort", 30, seed=5, ref=stub, sample_seed=11)
    assert len(prompts) == 30 and stats["pairs"] == len(pairs) > 0
    for p in pairs:
        gold = solve("sort", p.prompt)
        assert p.chosen == gold and p.rejected == swap01(gold) and p.error_positions == [0, 1]
    # the prompts left out are those whose 8 flips all came out the same way (or whose first two digits are equal)
    assert stats["dropped_no_correct"] + stats["dropped_no_incorrect"] == 30 - len(pairs)
    # determinism: the same seeds give the same pairs; another sampling seed gives other samples
    again, _, _ = build_pairs(params, "sort", 30, seed=5, ref=stub, sample_seed=11)
    assert again == pairs
    assert sample_responses(stub, [P1] * 4, 9, k=8, seed=4) != sample_responses(stub, [P1] * 4, 9, k=8, seed=5)


def test_sampler_determinism_and_cache_on_tiny_model():
    model = build_model({"layers": 1, "hidden": 32, "heads": 2, "mlp": 64}, 0)
    prompts = [P1, P2, P3]
    a = sample_responses(model, prompts, 9, k=5, seed=7)
    assert a == sample_responses(model, prompts, 9, k=5, seed=7)
    assert a == sample_responses(model, prompts, 9, k=5, seed=7, batch=4)   # chunking does not change the draws
    assert a != sample_responses(model, prompts, 9, k=5, seed=8)
    for ss in a:
        for r in ss:
            assert 1 <= len(r) <= 9 and (EOS not in r or r.index(EOS) == len(r) - 1)
    # a very low temperature is greedy decoding
    from papers.adpo.train import greedy_responses
    cold = sample_responses(model, prompts, 9, k=2, seed=0, temperature=1e-6)
    assert [ss[0] for ss in cold] == [ss[1] for ss in cold] == greedy_responses(model, prompts, 9)
    with pytest.raises(ValueError, match="k must"):
        sample_responses(model, prompts, 9, k=0, seed=0)
    with pytest.raises(ValueError, match="temperature"):
        sample_responses(model, prompts, 9, k=1, seed=0, temperature=0.0)


def test_build_pairs_modes():
    offline, prompts, stats = build_pairs({"pairs": "offline"}, "sort", 7, seed=2, ref=None, sample_seed=0)
    assert offline == make_preference_pairs("sort", 7, seed=2) and stats == {"pairs": 7}
    assert prompts == [p.prompt for p in offline]
    with pytest.raises(ValueError, match="pairs must"):
        build_pairs({"pairs": "online"}, "sort", 7, seed=2, ref=None, sample_seed=0)


def test_no_pair_raises():
    class AlwaysEos(torch.nn.Module):
        def forward(self, input_ids, past_key_values=None, use_cache=False, attention_mask=None):
            logits = torch.full((*input_ids.shape, VOCAB_SIZE), -1e4)
            logits[..., EOS] = 0.0
            return type("Out", (), {"logits": logits, "past_key_values": None})()

    params = {"pairs": "on_policy", "k_samples": 2, "no_correct": "drop"}
    with pytest.raises(RuntimeError, match="no on-policy pair"):
        build_pairs(params, "sort", 5, seed=0, ref=AlwaysEos(), sample_seed=0)
    pairs, _, stats = build_pairs({**params, "no_correct": "gold"}, "sort", 5, seed=0, ref=AlwaysEos(),
                                  sample_seed=0)
    assert len(pairs) == 5 and stats["gold_chosen"] == 5 and all(p.rejected == [EOS] for p in pairs)


def test_sft_seeds_and_target():
    seeds = [sft_seed_value(20260209, s) for s in (0, 1, 2, "calibration")]
    assert len(set(seeds)) == 4 and seeds == [sft_seed_value(20260209, s) for s in (0, 1, 2, "calibration")]
    assert not set(seeds) & {20260209 + k for k in (0, 7, 11, 13, 17)}
    arch = {"layers": 1, "hidden": 32, "heads": 2, "mlp": 64}
    with pytest.raises(ValueError, match="val_prompts"):
        train_sft(arch, "sort", steps=2, batch=4, lr=1e-3, seed=0, target_em=0.5)
    # a target of 0 is reached at the first check: training stops there
    _, log = train_sft(arch, "sort", steps=10, batch=4, lr=1e-3, seed=0, val_prompts=[P1, P2], target_em=0.0,
                       eval_every=2)
    assert log.steps == 2 and log.stopped == "target"


@pytest.mark.parametrize("scale, record", [("quick", "calibration.json"), ("full", "calibration_full.json")])
def test_config_uses_the_committed_calibration(scale, record):
    """The preference lr and the SFT target of a scale are the ones its committed calibration chose
    (calibrate.py), for the same number of steps, not numbers typed by hand."""
    import json

    from shared.config import REPO_ROOT, load_paper_config
    config = load_paper_config(REPO_ROOT / "papers" / "adpo" / "config.yaml")
    cal = json.loads((REPO_ROOT / "papers" / "adpo" / record).read_text())
    experiments = config[scale]["experiments"]
    assert cal["scale"] == scale
    assert experiments["train"]["params"]["lr"] == cal["chosen_lr"]
    assert experiments["sft"]["params"]["target_em"] == cal["chosen_target_em"]
    assert cal["rule_lr"].endswith(f"after {experiments['train']['params']['steps']} steps")
