"""The train experiment's run cache: a stopped run that resumes gives the same metrics and rows as an uninterrupted
one, and a cached unit is reused only under the parameters and code that computed it."""
import copy
import json
from pathlib import Path

import yaml

from papers.adpo import experiments as E
from shared.experiment import RunContext

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


def test_run_cache_roundtrip_and_keys(tmp_path):
    params = {"lr": 1e-3, "resume_dir": str(tmp_path / "runs")}
    cache = E.RunCache(params)
    unit = {"task": "sort", "sft_seed": 0, "method": "dpo", "seed": 0}
    assert cache.get(unit) is None and not cache.has(unit)
    value = {"loss": [0.1 + 0.2, 1 / 3], "evals": {"5": {"kl": 2.0 ** -40}}}
    cache.put(unit, value)
    assert cache.has(unit) and cache.reused == 0          # has() does not count a reuse
    assert cache.get(unit) == value and cache.reused == 1  # floats come back bit for bit
    other = E.RunCache({**params, "lr": 2e-3})             # another parameter: another key, not reused
    assert other.get(unit) is None
    assert E.RunCache({**params, "resume_dir": str(tmp_path / "runs")}).get(unit) == value
    none = E.RunCache({"lr": 1e-3})                        # no resume_dir: nothing stored, nothing found
    none.put(unit, value)
    assert none.get(unit) is None


def _smoke_params(tmp_path):
    cfg = yaml.safe_load(CONFIG.read_text())["smoke"]["experiments"]
    sft, train = copy.deepcopy(cfg["sft"]["params"]), copy.deepcopy(cfg["train"]["params"])
    sft["sft_seeds"] = train["sft_seeds"] = [0, 1]
    train["sft_dir"] = str(tmp_path / "sft")
    train["methods"] = {k: train["methods"][k] for k in ("dpo", "adpo_token", "adpo_adaptive_m1")}
    return sft, train


def _ctx(name, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    return RunContext(name=name, scale="smoke", seed=20260209, out_dir=out_dir)


def test_resumed_train_equals_uninterrupted(tmp_path):
    sft, train = _smoke_params(tmp_path)
    E.sft(sft, _ctx("sft", tmp_path / "sft"))
    rows_plain, metrics_plain = E.train(train, _ctx("train", tmp_path / "plain"))
    runs = tmp_path / "runs"
    cached = {**train, "resume_dir": str(runs)}
    rows_first, metrics_first = E.train(cached, _ctx("train", tmp_path / "first"))
    files = sorted(runs.glob("*.json"))
    assert len(files) == 2 * (1 + 3)                       # per SFT seed: the reference and 3 methods x 1 seed
    for f in files[::2]:                                   # stop half-way: half of the units are lost
        f.unlink()
    rows_resumed, metrics_resumed = E.train(cached, _ctx("train", tmp_path / "resumed"))
    rows_cached, metrics_cached = E.train(cached, _ctx("train", tmp_path / "cached"))   # no training at all
    for rows, metrics in ((rows_first, metrics_first), (rows_resumed, metrics_resumed),
                          (rows_cached, metrics_cached)):
        assert json.dumps(metrics, sort_keys=True) == json.dumps(metrics_plain, sort_keys=True)
        assert rows == rows_plain


def test_cache_not_reused_from_other_reference_weights(tmp_path):
    """A unit cached from one SFT reference is not reused once the reference's weights change."""
    sft, train = _smoke_params(tmp_path)
    sft["sft_seeds"] = train["sft_seeds"] = [0]
    train["methods"] = {k: train["methods"][k] for k in ("dpo", "adpo_token")}
    E.sft(sft, _ctx("sft", tmp_path / "sft"))
    cached = {**train, "resume_dir": str(tmp_path / "runs")}
    digest = E.sft_weights_digest(cached, "sort", 0)
    assert digest == E.sft_weights_digest(cached, "sort", 0)
    E.train(cached, _ctx("train", tmp_path / "first"))
    assert len(list((tmp_path / "runs").glob("*.json"))) == 3   # the reference and two runs
    sft["steps"] = 1                                      # another reference, same file names
    E.sft(sft, _ctx("sft", tmp_path / "sft"))
    assert E.sft_weights_digest(cached, "sort", 0) != digest
    cache = E.RunCache(cached)
    unit = {"task": "sort", "sft_seed": 0, "method": "dpo", "seed": 0, "weights": digest}
    assert cache.has(unit)
    assert not cache.has({**unit, "weights": E.sft_weights_digest(cached, "sort", 0)})
