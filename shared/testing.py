"""Helpers for the tests of a paper folder: run a scale in-process, check figures, claim keys and determinism.

The workflow's own end-to-end test (``tests/test_smoke_end_to_end.py``) runs every paper through Snakemake;
these helpers let a paper's unit tests do the same for one paper in seconds.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from shared.claims.check import load_claims
from shared.config import load_paper_config
from shared.experiment import run_experiment
from shared.results import get_key, read_metrics

__all__ = ["run_scale", "missing_figures", "claim_metric_values", "rerun_is_identical"]


def run_scale(experiments: Mapping[str, Callable], config_path: str | Path, out_root: str | Path,
              scale: str = "smoke") -> Path:
    """Run every experiment configured at ``scale`` into ``out_root/<name>``; return ``out_root``."""
    out_root = Path(out_root)
    for name in load_paper_config(config_path)[scale]["experiments"]:
        run_experiment(experiments, name, config_path, scale, out_root / name)
    return out_root


def missing_figures(make_figures: Callable, results_root: str | Path, out_dir: str | Path,
                    config_path: str | Path, scale: str = "smoke") -> list[str]:
    """Draw the figures from ``results_root``; return those listed in the config that are absent or empty."""
    out_dir = Path(out_dir)
    make_figures(Path(results_root), out_dir, scale)
    listed = load_paper_config(config_path)[scale]["figures"]
    return [f for f in listed if not (out_dir / f).is_file() or (out_dir / f).stat().st_size == 0]


def claim_metric_values(claims_path: str | Path, results_root: str | Path) -> dict[tuple[str, str], object]:
    """``{(claim id, "metric" | "spread"): value}`` read from the results; KeyError names a missing key."""
    values = {}
    for claim in load_claims(claims_path):
        for part in ("metric", "spread"):
            if part in claim:
                ref = claim[part]
                values[(claim["id"], part)] = get_key(read_metrics(Path(results_root) / ref["file"]), ref["key"])
    return values


def rerun_is_identical(experiments: Mapping[str, Callable], config_path: str | Path, name: str,
                       results_root: str | Path, tmp_dir: str | Path, scale: str = "smoke") -> bool:
    """Run experiment ``name`` again into ``tmp_dir`` and compare its metrics.json with the first run's bytes."""
    again = Path(tmp_dir) / name
    run_experiment(experiments, name, config_path, scale, again)
    return (again / "metrics.json").read_bytes() == (Path(results_root) / name / "metrics.json").read_bytes()
