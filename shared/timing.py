"""Timing of repeated calls for the performance comparisons of the papers.

Wall time (``time.perf_counter``) and the CPU time of this process (``time.process_time``) are both taken
for every call. On a shared machine the CPU time of a single-threaded loop is its compute time and is much
less disturbed by other jobs than wall time; the papers say which of the two their tables report. Timings
change from run to run, so they never go into a deterministic ``metrics.json`` (see ``papers/README.md``).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

__all__ = ["Timing", "time_calls", "alternating_least_cpu", "calls_per_measurement"]


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


def calls_per_measurement(seconds_per_call: float, min_seconds: float, max_calls: int = 100_000) -> int:
    """How many calls one measurement batches so that it lasts at least ``min_seconds``: ceil(min_seconds /
    seconds_per_call), at least 1 and at most ``max_calls`` (the rule of :mod:`timeit`'s autorange, in CPU
    seconds)."""
    if not seconds_per_call > 0:
        return max_calls
    return int(min(max_calls, max(1, math.ceil(min_seconds / seconds_per_call))))


def alternating_least_cpu(fns: Mapping[str, Callable[[], object]], rounds: int = 5, *, min_seconds: float = 0.05,
                          cpu_clock: Callable[[], float] = time.process_time) -> dict:
    """Least CPU seconds per call of each of ``fns`` over ``rounds`` rounds that call them in turn.

    An untimed warm-up call of each function also times it and fixes ``number``, the calls batched into one
    measurement so that it lasts at least ``min_seconds`` (:func:`calls_per_measurement`: a single call of a
    few microseconds is below the clock's and the scheduler's granularity); for a function that needs more than
    one call, an untimed batch of that many calls fixes ``number`` again (a first call is often slower than the
    ones after it, which would make the batches too short). Each round then measures every
    function once, in the order given, so that bursts of load from other processes reach all of them alike;
    interference only ever adds time, so the least of a function's ``rounds`` measurements, divided by
    ``number``, is its least disturbed time per call (the convention of :mod:`timeit`), and the ratio of two
    such minima is a load-robust comparison.

    Returns ``{"seconds": {name: s per call}, "number": {name: calls per measurement}, "rounds": rounds}``.
    ValueError when ``rounds`` is not an integer >= 1 or ``fns`` is empty.
    """
    if isinstance(rounds, bool) or int(rounds) != rounds or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    if not fns:
        raise ValueError("alternating_least_cpu needs at least one function to time")
    number = {}
    for name, fn in fns.items():
        c0 = cpu_clock()
        fn()
        number[name] = calls_per_measurement(cpu_clock() - c0, min_seconds)
        if number[name] > 1:   # a fast function: a batch of that size estimates a call better than a first call
            c0 = cpu_clock()
            for _ in range(number[name]):
                fn()
            number[name] = calls_per_measurement((cpu_clock() - c0) / number[name], min_seconds)
    best = {name: math.inf for name in fns}
    for _ in range(int(rounds)):
        for name, fn in fns.items():
            c0 = cpu_clock()
            for _ in range(number[name]):
                fn()
            best[name] = min(best[name], (cpu_clock() - c0) / number[name])
    return {"seconds": {k: float(v) for k, v in best.items()}, "number": number, "rounds": int(rounds)}
