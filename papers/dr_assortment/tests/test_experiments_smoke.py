"""Every experiment and figure at smoke scale; deterministic metrics."""
from pathlib import Path

from shared.config import load_yaml, validate
from shared.experiment import run_experiment

from papers.dr_assortment.experiments import EXPERIMENTS
from papers.dr_assortment.plots import make_figures

HERE = Path(__file__).resolve().parent.parent
CONFIG = HERE / "config.yaml"


def test_claims_file_is_valid():
    validate(load_yaml(HERE / "claims.yaml"), "claims.schema.json", where="claims")


def test_smoke_pipeline_and_determinism(tmp_path):
    res = tmp_path / "results"
    for name in EXPERIMENTS:
        run_experiment(EXPERIMENTS, name, CONFIG, "smoke", res / name)
    first = (res / "exactness" / "metrics.json").read_bytes()
    run_experiment(EXPERIMENTS, "exactness", CONFIG, "smoke", tmp_path / "again")
    assert (tmp_path / "again" / "metrics.json").read_bytes() == first
    make_figures(res, tmp_path / "figures", "smoke")
    for fig in load_yaml(CONFIG)["smoke"]["figures"]:
        assert (tmp_path / "figures" / fig).is_file(), fig
