"""Stochastic oracles: noise models, uniform index sampling and an oracle-call counter.

Used by papers that query a noisy first-order oracle (goma, clipped_sgd). Every draw goes through a
caller-owned :class:`numpy.random.Generator`, with exactly one generator call per invocation, so that the
stream consumed by a run is fixed by its seed and its sequence of calls.

Noise kinds of :func:`sample_noise` (``s`` = ``scale``, ``nu`` = ``tail_index``):

* ``"gaussian"``: ``s * N(0, 1)``; variance ``s^2``.
* ``"student_t"``: ``s * T_nu`` with ``T_nu`` Student-t with ``nu`` degrees of freedom. Its tails obey
  ``P(|T_nu| > t) ~ c t^{-nu}``, so ``nu`` is the tail index; moments of order ``>= nu`` are infinite (the
  variance is infinite for ``nu <= 2``). No normalisation.
* ``"student_t_unit"``: ``s * T_nu / sqrt(nu / (nu - 2))``, unit variance before scaling; needs ``nu > 2``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["NOISE_KINDS", "sample_noise", "uniform_indices", "CallCounter"]

NOISE_KINDS = ("gaussian", "student_t", "student_t_unit")


def _check_size(size):
    """Return ``size`` as an int or a tuple of ints; ValueError naming ``size`` when an entry is negative."""
    if size is None:
        return None
    dims = (size,) if np.ndim(size) == 0 else tuple(size)
    for d in dims:
        if isinstance(d, bool) or int(d) != d:
            raise ValueError(f"size must be a non-negative integer or a tuple of them, got {size!r}")
        if d < 0:
            raise ValueError(f"size must be non-negative, got {size!r}")
    return int(dims[0]) if np.ndim(size) == 0 else tuple(int(d) for d in dims)


def sample_noise(rng: np.random.Generator, size, kind: str = "gaussian", *, scale: float = 1.0,
                 tail_index: float | None = None) -> np.ndarray:
    """Draw a noise array of shape ``size`` (float64) with one call to ``rng``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The stream to draw from.
    size : int or tuple of int
        Output shape; entries must be non-negative.
    kind : {"gaussian", "student_t", "student_t_unit"}
        ``"gaussian"``: ``scale * rng.standard_normal(size)``.
        ``"student_t"``: ``scale * rng.standard_t(tail_index, size)``; ``P(|T| > t) ~ c t^{-tail_index}``.
        ``"student_t_unit"``: the Student-t draw divided by ``sqrt(tail_index / (tail_index - 2))`` (unit
        variance), so it needs ``tail_index > 2``.
    scale : float
        Non-negative, finite multiplier.
    tail_index : float or None
        Degrees of freedom of the Student-t kinds (finite, > 0); must be None for ``"gaussian"``.

    Raises
    ------
    ValueError
        Unknown ``kind``; ``scale`` negative or not finite; ``tail_index`` missing, not finite or <= 0 for the
        t kinds, <= 2 for ``"student_t_unit"``, or passed with ``"gaussian"``; a negative ``size``.
    """
    if kind not in NOISE_KINDS:
        raise ValueError(f"kind must be one of {list(NOISE_KINDS)}, got {kind!r}")
    scale = float(scale)
    if not math.isfinite(scale) or scale < 0:
        raise ValueError(f"scale must be finite and >= 0, got {scale!r}")
    size = _check_size(size)
    if kind == "gaussian":
        if tail_index is not None:
            raise ValueError(f"tail_index applies to the Student-t kinds only; got tail_index={tail_index!r} "
                             "with kind='gaussian'")
        return scale * rng.standard_normal(size)
    if tail_index is None:
        raise ValueError(f"tail_index is required for kind={kind!r}")
    nu = float(tail_index)
    if not math.isfinite(nu) or nu <= 0:
        raise ValueError(f"tail_index must be finite and > 0, got {tail_index!r}")
    if kind == "student_t_unit" and nu <= 2:
        raise ValueError(f"tail_index must be > 2 for kind='student_t_unit' (finite variance), got {tail_index!r}")
    draw = rng.standard_t(nu, size)
    if kind == "student_t_unit":
        draw = draw / math.sqrt(nu / (nu - 2.0))
    return scale * draw


def uniform_indices(rng: np.random.Generator, n_examples: int, size) -> np.ndarray:
    """Indices drawn uniformly with replacement from ``{0, ..., n_examples - 1}``.

    Equal to ``rng.integers(0, n_examples, size)`` (int64). ValueError when ``n_examples < 1`` or ``size`` is
    negative.
    """
    if isinstance(n_examples, bool) or int(n_examples) != n_examples or n_examples < 1:
        raise ValueError(f"n_examples must be an integer >= 1, got {n_examples!r}")
    size = _check_size(size)
    return rng.integers(0, int(n_examples), size, dtype=np.int64)


class CallCounter:
    """Wrap an oracle ``fn`` and count its calls.

    Each call returns ``fn(*args, **kwargs)`` and adds one to :attr:`calls`. A call on a batch of ``S``
    trajectories (one row each) counts once, so :attr:`calls` is the number of oracle calls per trajectory.
    Evaluations that are not oracle calls (monitoring) must use the unwrapped ``fn``.
    """

    def __init__(self, fn: Callable):
        if not callable(fn):
            raise ValueError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)

    def reset(self) -> None:
        """Set the call count back to 0."""
        self.calls = 0

    def __repr__(self) -> str:
        return f"CallCounter({getattr(self.fn, '__name__', self.fn)!r}, calls={self.calls})"
