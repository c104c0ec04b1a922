"""Confidence intervals of a mean, and the three-way decision of a threshold check against an interval."""
from __future__ import annotations

import math

import numpy as np
from scipy import stats as _st

__all__ = ["LEVEL", "MIN_SAMPLES", "BOOTSTRAP_RESAMPLES", "TIE_RTOL", "mean_interval", "decide_interval",
           "snap_to_threshold"]

LEVEL = 0.95
MIN_SAMPLES = 5  # below this at a judged scale, a pass is only "reproduced-reduced" and a fail "inconclusive"
BOOTSTRAP_RESAMPLES = 10_000
PASS, FAIL, UNDECIDED = "pass", "fail", "inconclusive"
TIE_RTOL = 1e-9  # a number within TIE_RTOL * max(1, |threshold|) of a threshold is a tie with it


def snap_to_threshold(x: float, threshold: float) -> float:
    """``threshold`` when ``x`` is within rounding of it, else ``x``.

    A metric that is exactly a threshold in exact arithmetic (a count of test images, a difference of two
    rationals) comes out a few ulps to either side in floating point; |x - t| <= TIE_RTOL max(1, |t|) is read
    as x = t, so that ``>= t`` passes and ``> t`` fails a tie whichever side rounding put it on.
    """
    if math.isfinite(x) and abs(x - threshold) <= TIE_RTOL * max(1.0, abs(threshold)):
        return float(threshold)
    return x


def mean_interval(samples, method: str = "t", level: float = LEVEL) -> tuple[float, float, float]:
    """Mean of ``samples`` and its two-sided ``level`` confidence interval ``(mean, lo, hi)``.

    ``t``: mean +- t_{(1+level)/2, n-1} s / sqrt(n) (Student). ``bootstrap``: percentile interval of the means
    of ``BOOTSTRAP_RESAMPLES`` resamples drawn with the fixed seed 0 (so the interval is deterministic).
    With one sample the interval is (-inf, inf): one run cannot decide anything.
    """
    x = np.asarray(samples, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"samples must be a non-empty list of numbers, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("samples contain NaN or Inf")
    mean = float(x.mean())
    if x.size == 1:
        return mean, -math.inf, math.inf
    if method == "t":
        half = float(_st.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
        return mean, mean - half, mean + half
    if method == "bootstrap":
        rng = np.random.default_rng(0)
        means = x[rng.integers(0, x.size, size=(BOOTSTRAP_RESAMPLES, x.size))].mean(axis=1)
        lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
        return mean, float(lo), float(hi)
    raise ValueError(f"unknown interval method {method!r}; choose 't' or 'bootstrap'")


def _band(check: dict) -> tuple[float, float]:
    """The passing set of a ``between`` or ``within`` check as a closed interval."""
    if check["op"] == "between":
        lo, hi = check["value"]
        return float(lo), float(hi)
    target = float(check["value"])
    tol = max(check.get("abs_tol", 0.0), check.get("rel_tol", 0.0) * abs(target))
    return target - tol, target + tol


def _snap_both(x: float, ends: tuple[float, float]) -> float:
    return snap_to_threshold(snap_to_threshold(x, ends[0]), ends[1])


def decide_interval(lo: float, hi: float, check: dict) -> str:
    """``pass`` when all of [lo, hi] satisfies ``check``, ``fail`` when none of it does, else ``inconclusive``.

    Interval ends within rounding of a threshold are ties with it (``snap_to_threshold``).
    """
    op = check["op"]
    if op == "==":
        raise ValueError("operator '==' cannot be decided on an interval; use 'within' with a tolerance")
    if op in ("between", "within"):
        a, b = _band(check)
        lo, hi = _snap_both(lo, (a, b)), _snap_both(hi, (a, b))
        if a <= lo and hi <= b:
            return PASS
        return FAIL if hi < a or lo > b else UNDECIDED
    v = float(check["value"])
    lo, hi = snap_to_threshold(lo, v), snap_to_threshold(hi, v)
    passes = {"<": hi < v, "<=": hi <= v, ">": lo > v, ">=": lo >= v}[op]
    fails = {"<": lo >= v, "<=": lo > v, ">": hi <= v, ">=": hi < v}[op]
    return PASS if passes else FAIL if fails else UNDECIDED
