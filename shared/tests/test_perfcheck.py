"""Tests of shared.perfcheck: reading ratios, the reproducibility rule, the manifest against the committed runs."""
import json
import math

import pytest
import yaml

from shared.config import REPO_ROOT, ConfigError
from shared.perfcheck import (MANIFEST, compare, load_manifest, ratio_value, read_ratios, refresh_kept,
                              render_markdown, run_experiment)


def test_ratio_value_scalar_list_mean_and_denominator():
    data = {"r": 2.5, "samples": [1.0, 2.0, 6.0], "t": {"ours": 3.0, "lib": 12.0}, "zero": 0.0, "bad": "n/a",
            "flag": True, "nan": float("nan")}
    assert ratio_value(data, {"key": "r"}) == 2.5
    assert ratio_value(data, {"key": "samples"}) == 3.0                      # (1 + 2 + 6) / 3
    assert ratio_value(data, {"key": "t.lib", "denominator": "t.ours"}) == 4.0
    for key in ("bad", "flag", "nan"):
        with pytest.raises(ValueError, match=key):
            ratio_value(data, {"key": key})
    with pytest.raises(ValueError, match="zero denominator"):
        ratio_value(data, {"key": "r", "denominator": "zero"})


def test_compare_is_a_relative_band_around_the_committed_ratio():
    assert compare(2.0, 2.5, 0.3) == {"fresh_over_committed": 1.25, "reproducible": True}
    assert compare(2.0, 1.5, 0.3)["reproducible"] is True                    # 0.75
    assert compare(2.0, 2.8, 0.3)["reproducible"] is False                   # 1.4
    assert compare(2.0, 1.3, 0.3)["reproducible"] is False                   # 0.65
    assert compare("timings.json missing", 1.0, 0.3) == {"fresh_over_committed": None, "reproducible": None}
    assert compare(1.0, "run failed", 0.3)["reproducible"] is None


def test_read_ratios_reports_missing_files_and_keys(tmp_path):
    (tmp_path / "metrics.json").write_text(json.dumps({"speed": {"x": 4.0}}))
    specs = [{"name": "a", "file": "metrics.json", "key": "speed.x"},
             {"name": "b", "file": "metrics.json", "key": "speed.y"},
             {"name": "c", "file": "timings.json", "key": "speed.x"}]
    got = read_ratios(tmp_path, specs)
    assert got["a"] == 4.0
    assert "'speed.y' not found" in got["b"]
    assert got["c"] == "timings.json missing"


def test_manifest_names_a_full_experiment_of_every_paper_and_its_committed_ratios_are_numbers():
    """Every paper is in the manifest; where a full report is committed, its headline ratios are positive
    numbers in the committed files (a renamed key or a missing timings file fails here)."""
    manifest = load_manifest()
    papers = sorted(p.name for p in (REPO_ROOT / "papers").iterdir() if (p / "config.yaml").is_file())
    assert sorted(manifest["papers"]) == papers
    for slug, entry in manifest["papers"].items():
        if not (REPO_ROOT / "reports" / "full" / f"{slug}.md").is_file():
            continue
        got = read_ratios(REPO_ROOT / "results" / "full" / slug / entry["experiment"], entry["ratios"])
        for name, value in got.items():
            assert isinstance(value, float) and math.isfinite(value) and value > 0, (slug, name, value)


def test_manifest_errors_name_the_problem(tmp_path):
    good = yaml.safe_load(MANIFEST.read_text())
    bad = {"tolerance": good["tolerance"], "papers": {"goma": {**good["papers"]["goma"], "experiment": "nosuch"}}}
    path = tmp_path / "performance.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match="'nosuch' is not a full-scale experiment of goma"):
        load_manifest(path)
    bad["papers"]["goma"] = {"experiment": "performance", "ratios": [{"name": "x", "file": "metrics.json", "key": "k"}]}
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match="'what' is a required property"):
        load_manifest(path)


def test_a_failing_experiment_run_is_reported_with_its_output(tmp_path):
    run = run_experiment("no_such_paper", "performance", tmp_path, timeout_s=60)
    assert run["returncode"] not in (0, None)
    assert any("no_such_paper" in line for line in run["log_tail"])


def test_render_counts_reproducible_ratios_and_shows_failures():
    row = {"what": "time, library over ours", "committed": 2.0}
    result = {"tolerance": 0.3, "commit": "0" * 40, "hardware": {"cpu": "x", "cores": 2}, "date": "2026-01-01",
              "papers": [{"slug": "p", "experiment": "perf", "committed_run": {"commit": "1" * 40},
                          "code_changed_since": [], "checked_at": {"commit": "0" * 40, "date": "2026-01-01 00:00"},
                          "run": {"returncode": 0, "cpu_s": 1.0, "wall_s": 1.0, "load_before": 0.5,
                                  "load_after": 0.6, "log_tail": []},
                          "ratios": [{**row, "name": "a", "fresh": 2.2, **compare(2.0, 2.2, 0.3)},
                                     {**row, "name": "b", "fresh": 4.0, **compare(2.0, 4.0, 0.3)},
                                     {**row, "name": "c", "fresh": "run failed", **compare(2.0, "run failed", 0.3)}]}]}
    text = render_markdown(result)
    assert "**1 of 2 ratios reproducible** (1 not compared" in text
    assert "| p | `b` | time, library over ours | 2 | 4 | 2 | **no** |" in text
    assert "not compared" in text


def test_a_kept_row_whose_committed_value_changed_is_no_longer_counted(tmp_path):
    run = tmp_path / "results" / "full" / "p" / "perf"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps({"a": 2.0, "b": 5.0}))
    entry = {"experiment": "perf", "ratios": [{"name": "a", "file": "metrics.json", "key": "a"},
                                              {"name": "b", "file": "metrics.json", "key": "b"}]}
    old = {"slug": "p", "ratios": [{"name": "a", "committed": 2.0, "fresh": 2.1, **compare(2.0, 2.1, 0.3)},
                                   {"name": "b", "committed": 3.0, "fresh": 3.1, **compare(3.0, 3.1, 0.3)}]}
    a, b = refresh_kept(old, entry, root=tmp_path)["ratios"]
    assert a["reproducible"] is True and "stale" not in a
    assert b["stale"] and b["reproducible"] is None and b["committed"] == 5.0 and b["fresh"] == 3.1
