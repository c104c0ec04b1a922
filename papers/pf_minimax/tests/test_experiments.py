"""Smoke scale: every experiment and figure runs; metrics.json is byte-identical on a rerun."""
from pathlib import Path

import pytest

from shared.config import load_yaml, validate
from shared.experiment import run_experiment
from papers.pf_minimax.experiments import EXPERIMENTS
from papers.pf_minimax.plots import make_figures

FOLDER = Path(__file__).resolve().parent.parent
CONFIG = FOLDER / "config.yaml"


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("pf_minimax_smoke")
    for name in EXPERIMENTS:
        run_experiment(EXPERIMENTS, name, CONFIG, "smoke", root / name)
    return root


def test_smoke_figures_and_determinism(smoke_results, tmp_path):
    out = tmp_path / "figures"
    out.mkdir()
    make_figures(smoke_results, out, "smoke")
    config = load_yaml(CONFIG)
    for fig in config["smoke"]["figures"]:
        assert (out / fig).is_file(), fig
    for name in ("cc_games", "ncc_dro", "nuclear"):
        again = tmp_path / name
        run_experiment(EXPERIMENTS, name, CONFIG, "smoke", again)
        assert (again / "metrics.json").read_bytes() == (smoke_results / name / "metrics.json").read_bytes()


def test_claims_file_is_valid_and_keys_exist(smoke_results):
    from shared.results import get_key, read_metrics

    claims = validate(load_yaml(FOLDER / "claims.yaml"), "claims.schema.json", where="claims")
    for claim in claims:
        get_key(read_metrics(smoke_results / claim["metric"]["file"]), claim["metric"]["key"])
