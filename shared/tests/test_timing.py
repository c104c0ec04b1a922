"""shared.timing: call counts, warm-up, per-call seconds from the clocks, statistics, bad input."""
import itertools

import pytest

from shared.timing import time_calls


def _clock(step):
    """A fake clock that advances by ``step`` seconds at every reading."""
    counter = itertools.count()
    return lambda: step * next(counter)


def test_per_call_seconds_come_from_the_clocks():
    calls = []
    t = time_calls(lambda: calls.append(1) or len(calls), 3, wall_clock=_clock(2.0), cpu_clock=_clock(0.5))
    assert len(calls) == 3 and t.output == 3
    # each call reads each clock twice, so it spans exactly one step of each fake clock
    assert t.wall_s == [2.0, 2.0, 2.0] and t.cpu_s == [0.5, 0.5, 0.5]
    assert (t.wall_median, t.wall_min, t.cpu_median, t.cpu_min) == (2.0, 2.0, 0.5, 0.5)


def test_warmup_is_one_untimed_call():
    calls = []
    t = time_calls(lambda: calls.append(1), 2, warmup=True)
    assert len(calls) == 3 and len(t.wall_s) == len(t.cpu_s) == 2
    assert all(s >= 0 for s in t.wall_s + t.cpu_s)


def test_median_and_min_of_uneven_calls():
    walls = iter([0.0, 1.0, 1.0, 4.0, 4.0, 6.0])  # calls of 1, 3 and 2 seconds
    t = time_calls(lambda: None, 3, wall_clock=lambda: next(walls), cpu_clock=lambda: 0.0)
    assert t.wall_s == [1.0, 3.0, 2.0] and t.wall_median == 2.0 and t.wall_min == 1.0


@pytest.mark.parametrize("repeats", [0, -1, 1.5, True])
def test_bad_repeats(repeats):
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        time_calls(lambda: None, repeats)
