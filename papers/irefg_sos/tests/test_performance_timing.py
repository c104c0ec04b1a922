"""The per-game timing of the performance comparison, on a fake clock (exact, no timed assertions)."""
from __future__ import annotations

import numpy as np
import pytest

from papers.irefg_sos.experiments import _reached, least_cpu_each


class FakeClock:
    """A CPU clock that only moves when a fake function 'runs': each call of a function advances it by the next
    cost in that function's list."""

    def __init__(self):
        self.now = 0.0
        self.calls = {}

    def __call__(self):
        return self.now

    def fn(self, name, costs):
        costs = list(costs)

        def run():
            k = self.calls.get(name, 0)
            self.calls[name] = k + 1
            self.now += costs[k]
            return f"{name}-{k}"
        return run


def test_least_cpu_each_repeats_short_calls_only():
    clock = FakeClock()
    fns = {"long": clock.fn("long", [2.0]),
           "short": clock.fn("short", [0.5, 0.4, 0.3, 0.35, 0.6]),   # first, warm-up, then 3 rounds
           "unused": clock.fn("unused", [0.1])}
    outs, secs, used = least_cpu_each(fns, 3, single_s=1.0, min_seconds=0.0, cpu_clock=clock,
                                      repeat=lambda name, out: name != "unused")
    assert outs == {"long": "long-0", "short": "short-0", "unused": "unused-0"}   # the first call's output
    assert clock.calls == {"long": 1, "short": 5, "unused": 1}
    assert secs == pytest.approx({"long": 2.0, "short": 0.3, "unused": 0.1})
    assert used == {"long": 1, "short": 3, "unused": 1}


def test_least_cpu_each_batched_calls_keep_their_cost():
    clock = FakeClock()   # costs are binary fractions: the clock's differences are exact
    fns = {"a": clock.fn("a", [0.25] * 100), "b": clock.fn("b", [0.5] * 100), "c": clock.fn("c", [4.0])}
    _, secs, used = least_cpu_each(fns, 2, single_s=4.0, min_seconds=0.75, cpu_clock=clock)
    assert secs == {"a": 0.25, "b": 0.5, "c": 4.0}
    assert used == {"a": 2, "b": 2, "c": 1}
    assert clock.calls["c"] == 1 and clock.calls["a"] > 1 + 2 and clock.calls["b"] > 1 + 2   # batches of > 1 call


def test_least_cpu_each_rejects_bad_rounds():
    with pytest.raises(ValueError, match="rounds"):
        least_cpu_each({"a": lambda: None}, 0)


def test_reached_rules():
    assert _reached("pga", {"reached_at": 10}, 1.0) is True
    assert _reached("amsgrad", {"reached_at": None}, 1.0) is False
    assert _reached("slsqp", (1.0 - 5e-7, np.zeros(1), 3), 1.0) is True
    assert _reached("slsqp", (1.0 - 2e-6, np.zeros(1), 50), 1.0) is False
