"""Smoke runs of the cheap experiments: determinism, and every claim key they own exists."""
from pathlib import Path

import pytest

from shared.config import load_yaml
from shared.experiment import run_experiment
from shared.results import get_key

from papers.dream.experiments import EXPERIMENTS, resolve_correction

HERE = Path(__file__).resolve().parent.parent
CONFIG = HERE / "config.yaml"


@pytest.mark.parametrize("name", ["quadratic", "speedup", "rho_sweep"])
def test_smoke_is_deterministic_and_has_claim_keys(name, tmp_path):
    a = run_experiment(EXPERIMENTS, name, CONFIG, "smoke", tmp_path / "a")
    run_experiment(EXPERIMENTS, name, CONFIG, "smoke", tmp_path / "b")
    assert (tmp_path / "a" / "metrics.json").read_bytes() == (tmp_path / "b" / "metrics.json").read_bytes()
    for claim in load_yaml(HERE / "claims.yaml"):
        for field in ("metric", "spread"):
            ref = claim.get(field)
            if ref and ref["file"].split("/")[0] == name:
                get_key(a, ref["key"])


def test_resolve_correction():
    import numpy as np

    np.testing.assert_array_equal(resolve_correction({"preference": [0.25, 0.75]}, 2), [[0.25, 0.25], [0.75, 0.75]])
    np.testing.assert_array_equal(resolve_correction({"priority": [1.0, 0.5]}, 2), np.diag([1.0, 0.5]))
    assert resolve_correction("pcgrad", 2) == "pcgrad" and resolve_correction(None, 2) is None
    with pytest.raises(ValueError, match="correction"):
        resolve_correction({"weights": [1]}, 2)


def test_hypervolume_2d():
    from papers.dream.experiments import hypervolume_2d

    # one point (1, 1) with reference (2, 3): box 1 x 2
    assert hypervolume_2d([(1.0, 1.0)], [2.0, 3.0]) == 2.0
    # two non-dominated points: union of boxes = 1*2 + 1*1 (staircase), a dominated point adds nothing
    assert hypervolume_2d([(0.0, 2.0), (1.0, 1.0), (1.5, 2.5)], [2.0, 3.0]) == pytest.approx(2.0 * 1.0 + 1.0 * 1.0)
    assert hypervolume_2d([(3.0, 0.0)], [2.0, 3.0]) == 0.0
