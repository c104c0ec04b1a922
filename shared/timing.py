"""Timing of repeated calls for the performance comparisons of the papers.

Wall time (``time.perf_counter``) and the CPU time of this process (``time.process_time``) are both taken
for every call. On a shared machine the CPU time of a single-threaded loop is its compute time and is much
less disturbed by other jobs than wall time; the papers say which of the two their tables report. Timings
change from run to run, so they never go into a deterministic ``metrics.json`` (see ``papers/README.md``).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Timing", "time_calls"]


@dataclass(frozen=True)
class Timing:
    """Per-call seconds of ``repeats`` timed calls and the output of the last call."""

    wall_s: list = field(default_factory=list)
    cpu_s: list = field(default_factory=list)
    output: object = None

    @property
    def wall_median(self) -> float:
        return float(statistics.median(self.wall_s))

    @property
    def cpu_median(self) -> float:
        return float(statistics.median(self.cpu_s))

    @property
    def wall_min(self) -> float:
        return float(min(self.wall_s))

    @property
    def cpu_min(self) -> float:
        return float(min(self.cpu_s))


def time_calls(fn: Callable[[], object], repeats: int = 1, *, warmup: bool = False,
               wall_clock: Callable[[], float] = time.perf_counter,
               cpu_clock: Callable[[], float] = time.process_time) -> Timing:
    """Call ``fn()`` ``repeats`` times (after one untimed call when ``warmup``) and time every call.

    Returns a :class:`Timing` with the per-call wall and CPU seconds and the last call's output. The clocks
    can be replaced (tests). ValueError when ``repeats`` is not an integer >= 1.
    """
    if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    if warmup:
        fn()
    walls, cpus, out = [], [], None
    for _ in range(int(repeats)):
        w0, c0 = wall_clock(), cpu_clock()
        out = fn()
        cpus.append(cpu_clock() - c0)
        walls.append(wall_clock() - w0)
    return Timing(walls, cpus, out)
