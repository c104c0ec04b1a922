"""The command line that every experiment runs through.

``python -m papers.<slug>.experiments NAME --config papers/<slug>/config.yaml --scale quick --out DIR``

It validates the paper's config, pins BLAS to one thread, calls the experiment function with the params of
``<scale>.experiments.NAME``, and writes ``DIR/results.csv`` (tidy), ``DIR/metrics.json`` and
``DIR/provenance.json``. A failure (bad config, NaN/Inf in the metrics) leaves no ``metrics.json`` behind.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from shared import provenance, results, seeding
from shared.config import SCALES, ConfigError, load_paper_config, scale_block

__all__ = ["RunContext", "run_experiment", "main", "cpu_seconds"]


@dataclass
class RunContext:
    """What an experiment function gets besides its params.

    Attributes: ``name`` (experiment), ``scale``, ``seed`` (the paper's root seed), ``out_dir`` (for extra
    artefacts), ``extra`` (run-dependent facts for provenance.json, e.g. solver backends or timings),
    ``paper`` (the slug). Long loops go through :meth:`progress`.
    """

    name: str
    scale: str
    seed: int
    out_dir: Path
    extra: dict = field(default_factory=dict)
    paper: str = ""

    def generator(self, *names: str) -> np.random.Generator:
        """Generator of the stream (experiment name, *names) under the root seed."""
        return seeding.generator(self.seed, self.name, *names)

    def record(self, **facts) -> None:
        """Add run-dependent facts (solver used, wall times) to provenance.json, not to metrics.

        Raises ``ValueError`` for a key that provenance.json already fills itself (``PROVENANCE_FIELDS``):
        recording it would silently replace the measured value."""
        taken = sorted(set(facts) & PROVENANCE_FIELDS)
        if taken:
            raise ValueError(f"experiment {self.name!r}: ctx.record() key(s) {taken} are provenance's own fields "
                             f"({sorted(PROVENANCE_FIELDS)}); rename them")
        self.extra.update(facts)

    def log(self, message: str) -> None:
        """A line for the job's log file (stderr), prefixed by the experiment name."""
        print(f"[{self.name}] {message}", file=sys.stderr, flush=True)

    def progress(self, iterable, *, total: int | None = None, what: str = ""):
        """``iterable`` with a progress bar (count, rate, ETA) on stdout, which the workflow shows in the
        terminal while the log file keeps stderr; at most one update every 5 s, so it stays readable when
        several jobs run at once."""
        from tqdm import tqdm

        label = f"{self.paper}/{self.name}" + (f" {what}" if what else "")
        return tqdm(iterable, total=total, desc=label, file=sys.stdout, mininterval=5.0, ascii=True,
                    dynamic_ncols=False, ncols=100, leave=True)


ExperimentFn = Callable[[dict, RunContext], tuple]

#: Keys of provenance.json that :func:`run_experiment` and :func:`shared.provenance.collect` fill themselves.
PROVENANCE_FIELDS = frozenset({"commit", "dirty", "packages", "hardware", "experiment", "scale", "seed", "params",
                               "wall_s", "cpu_s"})


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of the child processes it has waited for (sandboxed
    programs, forked probes): an experiment's ``cpu_s`` is the difference over its run. A child still alive when
    the experiment returns (a sandbox's zygote) is not counted."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _pin_threads(n: int) -> None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:  # pragma: no cover - threadpoolctl is a base pin
        pass
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)


def run_experiment(experiments: Mapping[str, ExperimentFn], name: str, config_path: str | Path, scale: str,
                   out_dir: str | Path) -> dict:
    """Run one experiment and write its outputs; returns the metrics."""
    config = load_paper_config(config_path)
    block = scale_block(config, scale, where=str(config_path))
    if name not in experiments:
        raise ConfigError(f"unknown experiment {name!r}; this paper has {sorted(experiments)}")
    if name not in block["experiments"]:
        raise ConfigError(f"{config_path}: key '{scale}.experiments': experiment {name!r} is not configured "
                          f"at scale {scale!r}")
    entry = block["experiments"][name]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("metrics.json", "results.csv", "provenance.json"):
        (out_dir / stale).unlink(missing_ok=True)
    _pin_threads(entry.get("resources", {}).get("threads", 1))
    ctx = RunContext(name=name, scale=scale, seed=config["seed"], out_dir=out_dir,
                     paper=Path(config_path).resolve().parent.name)
    start, cpu_start = time.perf_counter(), cpu_seconds()
    rows, metrics = experiments[name](dict(entry["params"]), ctx)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    metrics_text = results.metrics_json(metrics)  # refuses NaN/Inf before anything is written
    results.write_tidy(rows, out_dir / "results.csv")
    if "shared.solvers" in sys.modules and sys.modules["shared.solvers"].backend_counts():
        ctx.extra.setdefault("solvers", sys.modules["shared.solvers"].backend_counts())
    record = provenance.collect(experiment=name, scale=scale, seed=config["seed"], params=entry["params"],
                                wall_s=round(wall, 3), cpu_s=round(cpu, 3), **ctx.extra)
    results.write_metrics(record, out_dir / "provenance.json")
    results.atomic_write_text(out_dir / "metrics.json", metrics_text)  # last: its presence means completion
    ctx.log(f"done in {wall:.1f} s -> {out_dir}")
    return metrics


def main(experiments: Mapping[str, ExperimentFn], argv=None) -> int:
    """Command-line entry point of a paper's ``experiments`` module."""
    parser = argparse.ArgumentParser(description="Run one experiment of a paper.")
    parser.add_argument("name", choices=sorted(experiments))
    parser.add_argument("--config", required=True, help="papers/<slug>/config.yaml")
    parser.add_argument("--scale", required=True, choices=SCALES)
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)
    try:
        run_experiment(experiments, args.name, args.config, args.scale, args.out)
    except (ConfigError, results.NonFiniteError) as exc:
        print(f"error: experiment {args.name!r}: {exc}", file=sys.stderr)
        return 2
    return 0
