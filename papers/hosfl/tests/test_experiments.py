"""Smoke scale of every experiment and the figures, in a temporary folder; determinism of metrics.json."""
from pathlib import Path

import pytest

from shared.experiment import run_experiment
from papers.hosfl.experiments import EXPERIMENTS
from papers.hosfl.plots import make_figures

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


def test_smoke_all_and_figures(tmp_path):
    for name in ("estimator", "iid", "dirichlet", "pca", "straggler", "memory", "performance"):
        run_experiment(EXPERIMENTS, name, CONFIG, "smoke", tmp_path / "res" / name)
    m = (tmp_path / "res" / "memory" / "metrics.json").read_bytes()
    run_experiment(EXPERIMENTS, "memory", CONFIG, "smoke", tmp_path / "again")
    assert (tmp_path / "again" / "metrics.json").read_bytes() == m
    s = (tmp_path / "res" / "straggler" / "metrics.json").read_bytes()
    run_experiment(EXPERIMENTS, "straggler", CONFIG, "smoke", tmp_path / "again2")
    assert (tmp_path / "again2" / "metrics.json").read_bytes() == s
    make_figures(tmp_path / "res", tmp_path / "fig", "smoke")
    for f in ("accuracy_vs_samples.png", "communication.md", "communication.png", "zo_variance.png",
              "alignment.png", "memory.md", "performance.md"):
        assert (tmp_path / "fig" / f).exists(), f
