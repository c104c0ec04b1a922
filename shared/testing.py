"""Helpers for the tests of a paper folder: run some experiments of a scale in-process.

The workflow's own end-to-end test (``tests/test_smoke_end_to_end.py``) runs every paper through Snakemake
at smoke scale and checks what every paper shares: figures written, claim metrics present (the audit gate),
byte-identical reruns. A paper's tests use :func:`run_scale` only to check something specific about its
experiments' outputs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Mapping

from shared.config import load_paper_config
from shared.experiment import run_experiment

__all__ = ["run_scale"]


def run_scale(experiments: Mapping[str, Callable], config_path: str | Path, out_root: str | Path,
              scale: str = "smoke", names: Iterable[str] | None = None) -> Path:
    """Run the experiments ``names`` (default: every one configured at ``scale``) into ``out_root/<name>``.

    Experiments run in the given order, so an experiment that reuses another's output comes after it.
    Returns ``out_root``. A name that the scale does not configure raises ``KeyError`` naming it.
    """
    out_root = Path(out_root)
    configured = load_paper_config(config_path)[scale]["experiments"]
    names = list(configured) if names is None else list(names)
    unknown = [n for n in names if n not in configured]
    if unknown:
        raise KeyError(f"experiments {unknown} are not configured at scale {scale!r} in {config_path}")
    for name in names:
        run_experiment(experiments, name, config_path, scale, out_root / name)
    return out_root
