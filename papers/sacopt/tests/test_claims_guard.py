"""The LLM claims of claims.yaml read "not evaluated" without a capable model, and can fail with one.

A model below the floor (SmolLM2-135M: every accuracy 0, every difference 0 - 0) must never give a judged verdict;
a capable model with a real gain is reproduced(-reduced); a gain that the control "backward loop off" also shows
is "cannot fail"; a loss is "not reproduced".
"""
import json
from pathlib import Path


from shared.claims import (CANNOT_FAIL, NOT_EVALUATED, NOT_REPRODUCED, REPRODUCED_REDUCED, evaluate_claim,
                           load_claims_file)
from shared.lm.backends import Backend
from papers.sacopt import experiments as E
from papers.sacopt import pipeline as P
from papers.sacopt.datasets import DATASETS
from papers.sacopt.execution import ExecutionResult

CLAIMS = load_claims_file(Path(__file__).resolve().parents[1] / "claims.yaml")
LLM_CLAIMS = [c for c in CLAIMS["claims"] if c["kind"] == "paper"]


def _write(tmp_path, metrics):
    (tmp_path / "llm").mkdir(exist_ok=True)
    (tmp_path / "llm" / "metrics.json").write_text(json.dumps(metrics))
    return tmp_path


def _verdicts(results):
    return {c["id"]: evaluate_claim(c, results, "quick", reduced=CLAIMS["reduced"]) for c in LLM_CLAIMS}


def _filled(accuracy, diff, control_diff, n=40, is_real=1):
    """llm metrics as the experiment writes them, with every per-item difference equal to diff (control_diff)."""
    m = E._null_llm_metrics(DATASETS)
    m["backend"] = {"name": "openai", "model": "m", "label": "openai:m", "is_real_llm": is_real}
    for name in DATASETS:
        m["accuracy"][name] = {p: accuracy for p in E.PIPELINES}
        m["paired_diff"][name] = [diff] * (n - 2) + [diff - 100.0, diff + 100.0]
        m["control"]["backward_off"]["paired_diff"][name] = [control_diff] * n
    m["per_dataset_diffs"] = [diff + k for k in (-1.0, 0.0, 0.5, 0.0, 1.0)]
    m["control"]["backward_off"]["per_dataset_diffs"] = [control_diff] * 5
    m["forward_mean_accuracy"] = accuracy
    m["ablation"]["no_debug_minus_no_semantic"] = m["paired_diff"]["nl4opt"]
    m["control"]["semantic_off"]["no_debug_minus_no_semantic"] = [min(control_diff, 0.0)] * n
    m["judge"]["detect_minus_false_alarm"] = m["paired_diff"]["nl4opt"]
    m["control"]["no_fault"]["detect_minus_false_alarm"] = [control_diff] * n
    return m


def test_every_official_claim_is_addressed_or_explained():
    addressed = {i for c in CLAIMS["claims"] if c["kind"] == "paper" for i in c.get("official", [])}
    assert addressed | {int(k) for k in CLAIMS["official_not_addressed"]} == set(range(1, 7))
    assert all("control" in c and c.get("requires") for c in LLM_CLAIMS)


def test_no_backend_is_not_evaluated(tmp_path):
    m = E._null_llm_metrics(DATASETS)
    m["backend"] = E.backend_info(None)
    for cid, v in _verdicts(_write(tmp_path, m)).items():
        assert v.verdict == NOT_EVALUATED and "real-llm" in v.detail, cid


def test_model_below_floor_is_not_evaluated(tmp_path):
    # SmolLM2-135M: a real LM that solves nothing, so every difference is 0 - 0
    for cid, v in _verdicts(_write(tmp_path, _filled(0.0, 0.0, 0.0))).items():
        assert v.verdict == NOT_EVALUATED and "model-above-floor" in v.detail, cid


def test_capable_model_can_pass_and_fail(tmp_path):
    verdicts = _verdicts(_write(tmp_path, _filled(0.6, 20.0, 0.0, n=200)))
    assert {v.verdict for v in verdicts.values()} == {REPRODUCED_REDUCED}
    assert all(v.control_flips for v in verdicts.values())
    verdicts = _verdicts(_write(tmp_path, _filled(0.6, -20.0, 0.0, n=200)))
    assert {v.verdict for v in verdicts.values()} == {NOT_REPRODUCED}


def test_gain_that_the_control_also_shows_cannot_fail(tmp_path):
    verdicts = _verdicts(_write(tmp_path, _filled(0.6, 20.0, 20.0, n=200)))
    assert {v.verdict for v in verdicts.values()} - {CANNOT_FAIL} <= {REPRODUCED_REDUCED}
    assert verdicts["llm-nl4opt"].verdict == CANNOT_FAIL


def test_backend_info_is_numeric():
    assert E.backend_info(None)["is_real_llm"] == 0

    class Fake(Backend):
        name = "local"

        def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
            return ["I cannot help with that."] * n, 10, 5, False
    assert E.backend_info(Fake("SmolLM2-135M-Instruct"))["is_real_llm"] == 1
    assert E.backend_info(Fake("sacopt-scripted-modeller"))["is_real_llm"] == 0


def test_shared_calls_answer_repeats_from_memory():
    class Counting(Backend):
        name = "openai"

        def __init__(self):
            super().__init__("m")
            self.n = 0

        def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
            self.n += 1
            return [f"reply {self.n}"] * n, 3, 2, False
    inner = Counting()
    be = E.SharedCalls(inner)
    msg = [{"role": "user", "content": "hi"}]
    assert be.complete(msg) == be.complete(msg) == ["reply 1"] and inner.n == 1
    assert be.complete(msg, seed=1) == ["reply 2"] and be.label == "openai:m"


def test_weak_model_end_to_end(tmp_path, monkeypatch):
    """The llm experiment with a real-LLM-shaped backend that writes no usable program: not evaluated."""
    class Weak(Backend):
        name = "local"

        def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
            return ["I am not sure."] * n, 10, 4, False

    def fake_items(name, **_):
        from papers.sacopt.datasets import Problem
        return [Problem(f"{name}-{k}", "Maximise x subject to x <= 3.", 3.0, {"sample_input": {}}) for k in range(5)]
    monkeypatch.setenv("REPRO_LLM_BACKEND", "local")
    monkeypatch.setattr(E, "get_backend", lambda: Weak("SmolLM2-135M-Instruct"))
    monkeypatch.setattr(E, "load_dataset", fake_items)
    monkeypatch.setattr(E, "complexor_audit", lambda items: {"rows": []})
    monkeypatch.setattr(P, "_default_executor", lambda code, data: ExecutionResult("error", None, "", "bad", 0.0))
    ctx = type("Ctx", (), {"seed": 1, "out_dir": tmp_path})()
    _, metrics = E.llm({"datasets": list(DATASETS), "replay_problems": 0, "judge_pairs": 4}, ctx)
    assert metrics["backend"]["is_real_llm"] == 1 and metrics["forward_mean_accuracy"] == 0.0
    # "I am not sure." is never YES: every constraint flagged, faulty or not, so detection = false alarm = 1
    assert metrics["judge"]["detection_rate"] == metrics["judge"]["false_alarm_rate"] == 1.0
    assert metrics["control"]["no_fault"]["detect_minus_false_alarm"] == [0.0] * 2
    assert metrics["paired_diff"]["nl4opt"] == [0.0] * 2          # the local model runs local_limit = 2 items
    for cid, v in _verdicts(_write(tmp_path, json.loads(json.dumps(metrics)))).items():
        assert v.verdict == NOT_EVALUATED and "model-above-floor" in v.detail, cid
