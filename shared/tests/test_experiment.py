import pytest
import yaml

from shared.config import ConfigError
from shared.experiment import main, run_experiment
from shared.results import read_metrics


def _config(tmp_path, params):
    block = {"experiments": {"toy": {"params": params}}, "figures": []}
    cfg = {"paper": {"title": "T", "authors": "A", "venue": "V", "fidelity": "exact"}, "seed": 5,
           "smoke": block, "quick": block, "full": block}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def toy(params, ctx):
    rng = ctx.generator()
    x = float("nan") if params.get("poison") else rng.standard_normal(params["n"]).mean() * params["scale"]
    ctx.record(solver="none")
    return [{"method": "toy", "seed": ctx.seed, "step": 0, "metric": "x", "value": x}], {"x": x}


def test_run_writes_three_files_deterministically(tmp_path):
    cfg = _config(tmp_path, {"n": 10, "scale": 1.0})
    run_experiment({"toy": toy}, "toy", cfg, "smoke", tmp_path / "a")
    run_experiment({"toy": toy}, "toy", cfg, "smoke", tmp_path / "b")
    for name in ("metrics.json", "results.csv", "provenance.json"):
        assert (tmp_path / "a" / name).is_file()
    assert (tmp_path / "a" / "metrics.json").read_bytes() == (tmp_path / "b" / "metrics.json").read_bytes()
    assert read_metrics(tmp_path / "a" / "provenance.json")["solver"] == "none"


def test_nan_metric_stops_and_leaves_no_metrics(tmp_path, capsys):
    cfg = _config(tmp_path, {"n": 10, "scale": 1.0, "poison": True})
    assert main({"toy": toy}, ["toy", "--config", str(cfg), "--scale", "smoke", "--out", str(tmp_path / "o")]) == 2
    assert "metric 'x' is nan" in capsys.readouterr().err
    assert not any((tmp_path / "o" / f).exists() for f in ("metrics.json", "results.csv", "provenance.json"))


def test_bad_config_names_the_key(tmp_path):
    cfg = _config(tmp_path, {"n": 1, "scale": 1.0})
    data = yaml.safe_load(cfg.read_text())
    data["seed"] = "five"
    cfg.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="key 'seed'"):
        run_experiment({"toy": toy}, "toy", cfg, "smoke", tmp_path / "o")


def test_unknown_experiment_is_named(tmp_path):
    cfg = _config(tmp_path, {"n": 1, "scale": 1.0})
    with pytest.raises(ConfigError, match="'other'"):
        run_experiment({"toy": toy, "other": toy}, "other", cfg, "smoke", tmp_path / "o")


def counted(params, ctx):
    total = sum(ctx.progress(range(params["n"]), total=params["n"], what="steps"))
    return [{"method": "m", "seed": 0, "step": 0, "metric": "s", "value": total}], {"s": total}


def test_progress_goes_to_stdout_with_the_paper_and_experiment(tmp_path, capsys):
    paper = tmp_path / "mypaper"
    paper.mkdir()
    cfg = _config(paper, {"n": 7})
    run_experiment({"toy": counted}, "toy", cfg, "smoke", tmp_path / "out")
    out = capsys.readouterr().out
    assert "mypaper/toy steps" in out and "7/7" in out


def test_record_refuses_a_provenance_field_and_leaves_no_metrics(tmp_path, capsys):
    def colliding(params, ctx):
        ctx.record(cpu_s=1.0)
        return [], {"x": 1.0}

    cfg = _config(tmp_path, {"n": 10, "scale": 1.0})
    with pytest.raises(ValueError, match=r"\['cpu_s'\] are provenance's own fields"):
        run_experiment({"toy": colliding}, "toy", cfg, "smoke", tmp_path / "o")
    assert not (tmp_path / "o" / "metrics.json").exists()


def test_provenance_fields_are_every_key_that_provenance_fills(tmp_path):
    from shared.experiment import PROVENANCE_FIELDS

    cfg = _config(tmp_path, {"n": 10, "scale": 1.0})
    run_experiment({"toy": toy}, "toy", cfg, "smoke", tmp_path / "a")
    written = set(read_metrics(tmp_path / "a" / "provenance.json"))
    # "solvers" (backend counts of shared.solvers) is recorded when any solve ran in this process, which depends on
    # the tests that ran before this one in the same pytest process, not on the toy experiment
    assert written - {"solver", "solvers"} == PROVENANCE_FIELDS


def test_cpu_seconds_counts_children_that_were_waited_for():
    """A child that burns CPU and is waited for adds its CPU time to cpu_seconds (sandboxed programs count)."""
    import subprocess
    import sys

    from shared.experiment import cpu_seconds

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    before = cpu_seconds()
    subprocess.run([sys.executable, "-c", burn], check=True)
    assert cpu_seconds() - before >= 0.3
