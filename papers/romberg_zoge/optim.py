"""ZO-SGD with a fixed number of function evaluations per step.

    x_{t+1} = x_t - eta_t (1/B) sum_{b=1}^B ghat(x_t; u_{t,b}, r),   eta_t = lr / (1 + t/t0)^p,

output: the average of the iterates x_t with t >= average_from * T (and the last iterate). At a budget of
``Q`` evaluations per step: ``B = Q / (2(R+1))`` for Romberg (``R = 0``: two-point), ``B = Q/2`` for the
kernel estimator and ``B = (Q - 1)/(R+1)`` for forward Romberg (``f(x)`` once per step). ``Q`` must divide
exactly. The objective is called exactly once per step with all the step's points, so a minibatch objective
that draws a new minibatch on every call gives common random numbers within a step.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from shared.oracles.zeroth_order import _check_point, check_radius, check_values
from papers.romberg_zoge.estimator import _check_level, kernel_zoge, romberg_weights, romberg_zoge

__all__ = ["METHODS", "directions_per_step", "learning_rate", "zo_sgd"]

METHODS = ("romberg", "two_point", "forward_romberg", "kernel")


def directions_per_step(method: str, level: int, evals_per_step: int) -> int:
    """Number ``B`` of directions per step at a budget of ``evals_per_step`` evaluations.

    Raises ValueError when the budget is not an exact multiple of the per-direction cost.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    level = _check_level(level)
    if isinstance(evals_per_step, bool) or not isinstance(evals_per_step, (int, np.integer)) or evals_per_step < 1:
        raise ValueError(f"evals_per_step must be a positive int, got {evals_per_step!r}")
    q = int(evals_per_step)
    if method == "forward_romberg":
        cost, budget = level + 1, q - 1
    else:
        cost = 2 if method in ("two_point", "kernel") else 2 * (level + 1)
        budget = q
    if budget < cost or budget % cost:
        extra = " after the one evaluation of f(x)" if method == "forward_romberg" else ""
        raise ValueError(f"evals_per_step = {q} is not divisible by the per-direction cost {cost} of method "
                         f"{method!r} (level {level}){extra}")
    return budget // cost


def _central_romberg_step(f, x, u, radii, weights):
    """``romberg_zoge(f, x, u, r, R)`` without re-validating the inputs (the hot loop of ZO-SGD)."""
    steps = radii[None, :, None] * u[:, None, :]
    points = np.concatenate([x + steps, x - steps]).reshape(-1, x.size)
    values = check_values(f(points), points, what="f").reshape(2, u.shape[0], radii.size)
    directional = ((values[0] - values[1]) / (2.0 * radii)) @ weights
    return directional @ u / u.shape[0]


def learning_rate(t, lr: float, lr_t0: float, lr_power: float):
    """``eta_t = lr / (1 + t / t0)^p``."""
    return lr / (1.0 + np.asarray(t, dtype=float) / lr_t0) ** lr_power


def zo_sgd(f: Callable, x0, *, method: str = "romberg", level: int = 1, radius: float, evals_per_step: int = 4,
           iterations: int, lr: float = 0.02, lr_t0: float = 500.0, lr_power: float = 0.6,
           average_from: float = 0.5, seed=0, record_every: int = 0, weights=None) -> dict:
    """Run ZO-SGD and return ``{"x_last", "x_avg", "n_evaluations", "directions_per_step"}`` (plus
    ``"iterates"`` (n_records, d) and ``"record_steps"`` when ``record_every > 0``: x_0 and every
    ``record_every``-th iterate).

    Methods: ``"romberg"`` (central Romberg-ZOGE at ``level``, Gaussian directions), ``"two_point"``
    (level 0), ``"forward_romberg"`` (forward differences, same weights) and ``"kernel"`` (unit-sphere
    directions, ``zeta ~ U[-1, 1]``). ``weights`` (method ``"romberg"`` only) replaces the extrapolation weights
    of the radii ``r/2^k`` by the given ``level + 1`` numbers, an ablation (equal weights: no extrapolation);
    ``None`` keeps the Romberg weights. ``seed`` seeds ``numpy.random.default_rng`` (an int, a SeedSequence or
    a Generator). ``x_avg`` averages ``x_t`` for ``t = ceil(average_from T), ..., T``.

    Raises
    ------
    ValueError
        Unknown method; ``evals_per_step`` not divisible by the per-direction cost; ``iterations < 1``;
        ``lr <= 0``; ``average_from`` outside [0, 1); bad radius, level or x0; ``weights`` given for another
        method than ``"romberg"``, of the wrong length or not finite.
    FloatingPointError
        ``f`` returned NaN/Inf (the message names the step and the method).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    level = 0 if method == "two_point" else _check_level(level)
    B = directions_per_step(method, level, evals_per_step)
    r = check_radius(radius)
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations must be an int >= 1, got {iterations!r}")
    for name, value in (("lr", lr), ("lr_t0", lr_t0)):
        if not math.isfinite(float(value)) or float(value) <= 0:
            raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    if not math.isfinite(float(lr_power)) or float(lr_power) < 0:
        raise ValueError(f"lr_power must be finite and >= 0, got {lr_power!r}")
    if not 0.0 <= float(average_from) < 1.0:
        raise ValueError(f"average_from must lie in [0, 1), got {average_from!r}")
    if isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer)) or record_every < 0:
        raise ValueError(f"record_every must be a non-negative int, got {record_every!r}")
    x = _check_point(x0).copy()
    d = x.size
    T = int(iterations)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if weights is None:
        weights = romberg_weights(level)
    else:
        if method != "romberg":
            raise ValueError(f"weights apply to method 'romberg' only, got method {method!r}")
        weights = np.asarray(weights, dtype=float)
        if weights.shape != (level + 1,) or not np.all(np.isfinite(weights)):
            raise ValueError(f"weights must be {level + 1} finite numbers (level {level}), got {weights!r}")
    radii = r / 2.0 ** np.arange(level + 1)
    etas = learning_rate(np.arange(T), float(lr), float(lr_t0), float(lr_power))
    start = int(math.ceil(float(average_from) * T))
    x_sum, n_avg = np.zeros(d), 0
    if start == 0:
        x_sum += x
        n_avg += 1
    records, record_steps = ([x.copy()], [0]) if record_every else ([], [])
    for t in range(T):
        try:
            if method == "kernel":
                e = rng.standard_normal((B, d))
                e /= np.linalg.norm(e, axis=1, keepdims=True)
                g = kernel_zoge(f, x, e, rng.uniform(-1.0, 1.0, B), r)
            elif method == "forward_romberg":
                g = romberg_zoge(f, x, rng.standard_normal((B, d)), r, level, scheme="forward")
            else:
                g = _central_romberg_step(f, x, rng.standard_normal((B, d)), radii, weights)
        except FloatingPointError as exc:
            raise FloatingPointError(f"zo_sgd step {t} (method {method!r}, level {level}): {exc}") from None
        x -= etas[t] * g
        if t + 1 >= start:
            x_sum += x
            n_avg += 1
        if record_every and (t + 1) % record_every == 0:
            records.append(x.copy())
            record_steps.append(t + 1)
    out = {"x_last": x, "x_avg": x_sum / n_avg, "n_evaluations": T * int(evals_per_step),
           "directions_per_step": B}
    if record_every:
        out["iterates"] = np.array(records)
        out["record_steps"] = np.array(record_steps)
    return out
