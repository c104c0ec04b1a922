"""The smoke-scale experiments run, are deterministic, and write the keys the claims read."""
import yaml

from shared.experiment import run_experiment
from shared.results import get_key

from papers.romberg_zoge.experiments import EXPERIMENTS, loglog_slope

CONFIG = "papers/romberg_zoge/config.yaml"


def test_loglog_slope_of_power_law():
    assert abs(loglog_slope([0.1, 0.05, 0.025], [3 * r ** 4 for r in (0.1, 0.05, 0.025)]) - 4.0) < 1e-12


def test_smoke_estimator_and_exponential_deterministic(tmp_path):
    for name in ("estimator", "exponential"):
        a = run_experiment(EXPERIMENTS, name, CONFIG, "smoke", tmp_path / f"{name}_a")
        run_experiment(EXPERIMENTS, name, CONFIG, "smoke", tmp_path / f"{name}_b")
        assert (tmp_path / f"{name}_a" / "metrics.json").read_bytes() == \
            (tmp_path / f"{name}_b" / "metrics.json").read_bytes()
        assert a
    claims = yaml.safe_load(open("papers/romberg_zoge/claims.yaml"))
    for claim in claims:
        file = claim["metric"]["file"]
        if file.split("/")[0] in ("estimator", "exponential"):
            import json
            metrics = json.load(open(tmp_path / f"{file.split('/')[0]}_a" / "metrics.json"))
            get_key(metrics, claim["metric"]["key"])
