"""The LLM claims of claims.yaml: per-instance samples, the floor guard, and controls that flip them.

A model that writes no IR (SmolLM2-135M: Valid@1 = 0) or the scripted stand-in must read "not evaluated"; a
capable model that is slower than -O3 is judged; the -O3 rewriter and the pass oracle (the controls) fail the
claims' checks.
"""
import json
import math
from pathlib import Path

import pytest

from shared.claims import NOT_EVALUATED, NOT_REPRODUCED, REPRODUCED_REDUCED, evaluate_claim, load_claims_file
from papers.cirbench.experiments import backend_info, claim_samples

CLAIMS = load_claims_file(Path(__file__).resolve().parents[1] / "claims.yaml")
LLM = [c for c in CLAIMS["claims"] if c["kind"] == "paper"]


class _Inst:
    def __init__(self, iid, track):
        self.id, self.track = iid, track


def _samples(rewriter, trans_ok, refac, n=5):
    """samples[(rewriter, id)]: Transform instances with ``trans_ok`` passing samples of n, Refactor (equiv, em)."""
    out = {}
    for k, c in enumerate(trans_ok):
        out[(rewriter, f"t{k}")] = [{"valid": True, "equiv": j < c, "em": False} for j in range(n)]
    for k, (eq, em) in enumerate(refac):
        out[(rewriter, f"r{k}")] = [{"valid": True, "equiv": eq, "em": em}] * n
    return out


def _per_track(n_t, n_r):
    return {"transform": [_Inst(f"t{k}", "transform") for k in range(n_t)],
            "refactor": [_Inst(f"r{k}", "refactor") for k in range(n_r)]}


def test_claim_samples_known_values():
    speed = {"llm": {"direct": {"per_instance": {"t0": 0.5, "t1": 2.0, "t2": 0.8}},
                     "copilot": {"per_instance": {"t0": 1.0, "t1": 2.0, "t2": 0.8}}}}
    s = claim_samples("llm", _samples("llm", [5, 0, 2], [(True, False), (True, True)]), _per_track(3, 2), speed, 5)
    assert s["direct_slower"] == [1.0, 0.0, 1.0] and s["n_speedup"] == 3
    assert s["copilot_gain_log"] == pytest.approx([math.log(2.0), 0.0, 0.0])
    assert s["transform_equiv1"] == pytest.approx([1.0, 0.0, 0.4])          # pass@1 = c / n
    assert s["refactor_equiv_minus_em"] == [1.0, 0.0]
    assert s["transform_valid1"] == 1.0
    assert set(claim_samples(None, {}, {}, {}, 5).values()) == {None}


def _metrics(is_real, valid, slower, gain, equiv1, gap, o3_slower, o3_gain, oracle_gap):
    m = {"backend": {"name": "openai", "model": "m", "label": "openai:m", "is_real_llm": is_real},
         "llm_claims": {"direct_slower": slower, "copilot_gain_log": gain, "transform_equiv1": equiv1,
                        "refactor_equiv_minus_em": gap, "transform_valid1": valid, "n_speedup": len(slower)},
         "control": {"o3": {"direct_slower": o3_slower, "copilot_gain_log": o3_gain,
                            "transform_equiv1": [1.0] * len(equiv1)},
                     "pass_oracle": {"refactor_equiv_minus_em": oracle_gap}}}
    return m


def _verdicts(tmp_path, metrics):
    (tmp_path / "benchmark").mkdir(exist_ok=True)
    (tmp_path / "benchmark" / "metrics.json").write_text(json.dumps(metrics))
    return {c["id"]: evaluate_claim(c, tmp_path, "quick", reduced=CLAIMS["reduced"]) for c in LLM}


def test_stand_in_and_weak_model_are_not_evaluated(tmp_path):
    zeros = [0.0] * 30
    weak = _metrics(1, 0.0, [1.0] * 30, zeros, zeros, zeros, zeros, zeros, zeros)   # SmolLM2: no valid IR
    for cid, v in _verdicts(tmp_path, weak).items():
        assert v.verdict == NOT_EVALUATED and "model-writes-ir" in v.detail, cid
    scripted = dict(weak, backend={"name": "scripted", "model": "s", "label": "s", "is_real_llm": 0})
    for cid, v in _verdicts(tmp_path, scripted).items():
        assert v.verdict == NOT_EVALUATED and "real-llm" in v.detail, cid


def test_capable_model_is_judged_and_controls_flip(tmp_path):
    slower = [1.0] * 24 + [0.0] * 6
    good = _metrics(1, 0.8, slower, [0.2] * 28 + [0.0, 0.1], [0.7] * 25 + [1.0] * 5, [0.3] * 18 + [0.0, 1.0],
                    [0.0] * 30, [0.0] * 30, [0.0] * 20)
    verdicts = _verdicts(tmp_path, good)
    assert {v.verdict for v in verdicts.values()} == {REPRODUCED_REDUCED}
    assert all(v.control_flips for v in verdicts.values())
    fast = dict(good, llm_claims=dict(good["llm_claims"], direct_slower=[0.0] * 26 + [1.0] * 4))
    assert _verdicts(tmp_path, fast)["llm-direct-slower"].verdict == NOT_REPRODUCED


def test_backend_info_numeric():
    class B:
        is_llm, name, label = True, "local", "local:SmolLM2"
        model = "SmolLM2-135M-Instruct"
    assert backend_info(B())["is_real_llm"] == 1
    B.is_llm, B.model = False, "cirbench-scripted"
    assert backend_info(B())["is_real_llm"] == 0

