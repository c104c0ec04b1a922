"""shared.timing: call counts, warm-up, per-call seconds from the clocks, statistics, bad input."""
import itertools

import pytest

from shared.timing import alternating_least_cpu, calls_per_measurement, time_calls


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


class _Work:
    """A fake CPU clock that advances only when a fake function runs: ``cost(name)`` seconds per call, plus
    ``extra[k]`` on the k-th call overall (interference)."""

    def __init__(self, cost, extra=None):
        self.t, self.cost, self.extra, self.calls = 0.0, cost, extra or {}, []

    def fn(self, name):
        def call():
            self.t += self.cost[name] + self.extra.get(len(self.calls), 0.0)
            self.calls.append(name)
        return call


def test_calls_per_measurement_is_timeits_rule():
    assert calls_per_measurement(0.001, 0.05) == 50 and calls_per_measurement(0.003, 0.05) == 17
    assert calls_per_measurement(1.0, 0.05) == 1 and calls_per_measurement(0.0, 0.05, max_calls=7) == 7
    assert calls_per_measurement(1e-9, 0.05, max_calls=1000) == 1000


def test_alternating_least_cpu_batches_alternates_and_keeps_the_least():
    # times are powers of two, so that the fake clock adds exactly. a's first call is slow (2^-6 s: 4 calls
    # would reach min_seconds = 2^-4), later ones take 2^-10 s (64 calls); b's take 2^-8 s (16 calls); the
    # first timed call of a (call 1 + 4 + 1 + 16 = 22) is disturbed
    a, b = 2.0 ** -10, 2.0 ** -8
    w = _Work({"a": a, "b": b}, extra={0: 2.0 ** -6 - a, 22: 0.5})
    out = alternating_least_cpu({"a": w.fn("a"), "b": w.fn("b")}, rounds=3, min_seconds=2.0 ** -4,
                                cpu_clock=lambda: w.t)
    assert out["number"] == {"a": 64, "b": 16} and out["rounds"] == 3
    assert out["seconds"] == {"a": a, "b": b}
    # a: one call (-> 4 calls), an untimed batch of 4 (-> 64); b: one call (-> 16), a batch of 16;
    # then per round a batch of a followed by a batch of b
    calib = 1 + 4 + 1 + 16
    assert w.calls[:calib] == ["a"] * 5 + ["b"] * 17
    assert w.calls[calib:calib + 64] == ["a"] * 64 and w.calls[calib + 64:calib + 80] == ["b"] * 16
    assert len(w.calls) == calib + 3 * (64 + 16)


@pytest.mark.parametrize("rounds", [0, 1.5, True])
def test_alternating_least_cpu_bad_rounds(rounds):
    with pytest.raises(ValueError, match="rounds must be an integer >= 1"):
        alternating_least_cpu({"a": lambda: None}, rounds)
    with pytest.raises(ValueError, match="at least one function"):
        alternating_least_cpu({}, 3)
