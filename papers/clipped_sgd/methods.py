"""SGD and Clip-SGD on finite sums, with step-size and clipping schedules (spec: Method, Algorithms).

With i_k ~ Uniform{0..N-1} i.i.d. from the algorithm's own generator (never the data generator):

* SGD:      x_{k+1} = x_k - gamma_k grad f(x_k, xi_{i_k})
* Clip-SGD: x_{k+1} = x_k - gamma_k clip(grad f(x_k, xi_{i_k}), lambda_k),
  clip(g, lam) = min(1, lam / (||g|| + eps)) g  (eps = 0 by default; eps = 1e-6 is torch's ``clip_grad_norm_``).

k is the 0-based step index: the step from x_k to x_{k+1} uses gamma_k and lambda_k. The indices are drawn with
:func:`shared.oracles.uniform_indices` in consecutive chunks of 65536, so a run's index sequence is a prefix of
any longer run's. References for clipping: Zhang et al. (NeurIPS 2020); Gorbunov, Danilova & Gasnikov (NeurIPS
2020); Sadiev et al. (ICML 2023).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence, Union

import numpy as np

from shared.oracles import uniform_indices

from papers.clipped_sgd.problems import FiniteSumProblem

__all__ = ["clip_by_norm", "schedule_values", "SGDResult", "run_sgd", "run_sgd_batch", "INDEX_CHUNK"]

INDEX_CHUNK = 65536   # indices are drawn in consecutive chunks of this size
_BLOCK = 4096         # data are gathered for this many steps at a time (divides INDEX_CHUNK)
_NO_CLIP = 1e300      # clip level of the rows that run plain SGD inside a batch

Schedule = Union[float, dict, Callable[[int], float]]


def clip_by_norm(g, level: float, *, eps: float = 0.0) -> np.ndarray:
    """clip(g, lam) = min(1, lam / (||g|| + eps)) g, row-wise for a 2-D ``g``; clip(0, lam) = 0.

    Parameters
    ----------
    g : array_like, shape (d,) or (n, d)
        One vector, or one vector per row.
    level : float
        lam > 0 (``inf`` means no clipping).
    eps : float
        eps >= 0 added to the norm; eps = 1e-6 reproduces ``torch.nn.utils.clip_grad_norm_``.
    """
    level = float(level)
    if not level > 0:
        raise ValueError(f"level must be > 0, got {level!r}")
    eps = float(eps)
    if not (math.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be finite and >= 0, got {eps!r}")
    g = np.asarray(g, dtype=float)
    if g.ndim not in (1, 2):
        raise ValueError(f"g must be 1-D or 2-D, got shape {g.shape}")
    norm = np.linalg.norm(g, axis=-1, keepdims=True) + eps
    if math.isinf(level):
        return g.copy()
    coef = level / np.maximum(norm, level)   # = min(1, level / norm), and 1 when norm = 0
    return coef * g


def _check_value(value, k: int, name: str) -> float:
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0 at every step; got {value!r} at k={k}")
    return v


def schedule_values(schedule: Schedule, n_steps: int, *, name: str = "step_size") -> np.ndarray:
    """Values v_0, ..., v_{n_steps-1} of a schedule.

    ``schedule`` is a float (constant), a dict ``{value, k0, exponent}`` meaning
    ``v_k = value (1 + k/k0)^exponent``, or a callable ``k -> v_k``. Every value must be finite and > 0
    (ValueError naming ``name`` and the first bad k).
    """
    if isinstance(schedule, bool):
        raise ValueError(f"{name} must be a float, a schedule dict or a callable, got {schedule!r}")
    if callable(schedule):
        return np.array([_check_value(schedule(k), k, name) for k in range(n_steps)], dtype=float)
    if isinstance(schedule, dict):
        missing = {"value", "k0", "exponent"} - set(schedule)
        extra = set(schedule) - {"value", "k0", "exponent"}
        if missing or extra:
            raise ValueError(f"{name} schedule dict needs exactly the keys value, k0, exponent; "
                             f"missing {sorted(missing)}, unknown {sorted(extra)}")
        k0 = float(schedule["k0"])
        if not (math.isfinite(k0) and k0 > 0):
            raise ValueError(f"{name} schedule k0 must be finite and > 0, got {schedule['k0']!r}")
        value = _check_value(schedule["value"], 0, name)
        exponent = float(schedule["exponent"])
        if not math.isfinite(exponent):
            raise ValueError(f"{name} schedule exponent must be finite, got {schedule['exponent']!r}")
        values = value * (1.0 + np.arange(n_steps) / k0) ** exponent
    elif isinstance(schedule, (int, float, np.integer, np.floating)):
        values = np.full(n_steps, float(schedule))
    else:
        raise ValueError(f"{name} must be a float, a schedule dict or a callable, got {type(schedule).__name__}")
    bad = ~(np.isfinite(values) & (values > 0))
    if bad.any():
        k = int(np.argmax(bad))
        _check_value(values[k], k, name)
    return values


@dataclass
class SGDResult:
    """Outcome of one SGD or Clip-SGD run of ``n_steps`` steps.

    Attributes
    ----------
    x_final : x_{n_steps}.
    x_avg : mean of x_k over k = burn_in+1..n_steps.
    err_avg : mean of ||x_k - x_erm||^2 over the same k.
    err_at : {k: ||x_k - x_erm||^2} for k in ``record_at``.
    n_clipped : number of steps at which clipping was active (||g|| + eps > lambda_k).
    grad_evals : number of per-sample gradient evaluations (one per step).
    method : "sgd" or "clip_sgd".
    """

    x_final: np.ndarray
    x_avg: np.ndarray
    err_avg: float
    err_at: dict = field(default_factory=dict)
    n_clipped: int = 0
    grad_evals: int = 0
    method: str = "sgd"


def _check_steps(n_steps, burn_in, record_at):
    if isinstance(n_steps, bool) or int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}")
    n_steps = int(n_steps)
    burn_in = n_steps // 4 if burn_in is None else burn_in
    if isinstance(burn_in, bool) or int(burn_in) != burn_in or not 0 <= burn_in < n_steps:
        raise ValueError(f"burn_in must be an integer in [0, n_steps) = [0, {n_steps}), got {burn_in!r}")
    record = sorted({int(k) for k in record_at})
    for k, raw in zip(record, sorted(record_at)):
        if not 1 <= k <= n_steps or int(raw) != raw:
            raise ValueError(f"record_at entries must be integers in 1..n_steps = 1..{n_steps}, got {raw!r}")
    return n_steps, int(burn_in), record


def _rngs(seeds) -> list:
    gens, seen = [], set()
    for s in seeds:
        if s is None or isinstance(s, (bool, float)):
            raise ValueError(f"seed must be an int, a SeedSequence or a Generator, got {s!r}")
        if isinstance(s, np.random.Generator):
            if id(s) in seen:
                raise ValueError("the same Generator object is given to two runs; pass ints or SeedSequences to "
                                 "give runs the same index sequence")
            seen.add(id(s))
        gens.append(np.random.default_rng(s))
    return gens


def run_sgd_batch(problems: Sequence[FiniteSumProblem], n_steps: int, *, step_size: Schedule, clip_level=None,
                  clipped=None, seeds, x0=None, burn_in=None, record_at=(), clip_eps: float = 0.0) -> list:
    """SGD / Clip-SGD on several datasets at once, as an (R, d) iterate array, one row per run.

    Row r runs on ``problems[r]`` with its own index generator ``default_rng(seeds[r])``, so its result equals
    ``run_sgd(problems[r], ..., seed=seeds[r])`` exactly. All rows share the step-size and clipping schedules;
    ``clipped`` (bools, one per row; default all True when ``clip_level`` is given) selects the rows that clip,
    the others run plain SGD. Two rows with equal int/SeedSequence seeds see the same index sequence.

    Returns a list of :class:`SGDResult`, one per row. Raises FloatingPointError naming the step and the
    method when an iterate becomes NaN or Inf, and ValueError for the bad inputs of :func:`run_sgd`.
    """
    problems = list(problems)
    if not problems:
        raise ValueError("problems must not be empty")
    kinds = {p.kind for p in problems}
    dims = {p.dim for p in problems}
    if len(kinds) != 1 or len(dims) != 1:
        raise ValueError(f"problems of one batch must share kind and dim, got {sorted(kinds)} and {sorted(dims)}")
    kind, d, R = kinds.pop(), dims.pop(), len(problems)
    seeds = list(seeds)
    if len(seeds) != R:
        raise ValueError(f"seeds must have one entry per problem ({R}), got {len(seeds)}")
    n_steps, burn_in, record = _check_steps(n_steps, burn_in, record_at)
    gammas = schedule_values(step_size, n_steps, name="step_size")
    if clip_level is None:
        if clipped is not None and any(clipped):
            raise ValueError("clipped selects clipping rows, but clip_level is None")
        lams, factor = None, None
    else:
        if isinstance(clip_level, (int, float)) and not isinstance(clip_level, bool) and not clip_level > 0:
            raise ValueError(f"clip_level must be > 0, got {clip_level!r}")
        lams = schedule_values(clip_level, n_steps, name="clip_level")
        mask = np.ones(R, bool) if clipped is None else np.asarray(clipped, bool).reshape(-1)
        if mask.shape != (R,):
            raise ValueError(f"clipped must have one entry per problem ({R}), got shape {mask.shape}")
        factor = np.where(mask, 1.0, _NO_CLIP)
    clip_eps = float(clip_eps)
    if not (math.isfinite(clip_eps) and clip_eps >= 0):
        raise ValueError(f"clip_eps must be finite and >= 0, got {clip_eps!r}")
    X = np.zeros((R, d)) if x0 is None else np.asarray(x0, dtype=float)
    if X.shape == (d,):
        X = np.tile(X, (R, 1))
    if X.shape != (R, d):
        raise ValueError(f"x0 must have shape ({d},) or ({R}, {d}), got {np.shape(x0)}")
    if not np.all(np.isfinite(X)):
        raise ValueError("x0 contains NaN or Inf")
    X = X.copy()
    methods = ["sgd" if factor is None or factor[r] != 1.0 else "clip_sgd" for r in range(R)]
    gens = _rngs(seeds)
    x_erm = np.stack([p.x_erm for p in problems])
    sizes = [p.n_samples for p in problems]
    state = _State(R, d, record)
    idx = None
    for start in range(0, n_steps, _BLOCK):
        stop = min(start + _BLOCK, n_steps)
        if start % INDEX_CHUNK == 0:
            idx = np.stack([uniform_indices(g, n, INDEX_CHUNK) for g, n in zip(gens, sizes)])
        off = start % INDEX_CHUNK
        block_idx = idx[:, off:off + stop - start]
        data = _gather(problems, kind, block_idx)
        X_start = X.copy()
        _run_block(X, data, kind, gammas, lams, factor, clip_eps, start, stop, burn_in, x_erm, state)
        if not np.all(np.isfinite(X)):
            _locate_nonfinite(X_start, data, kind, gammas, lams, factor, clip_eps, start, stop, methods)
    count = n_steps - burn_in
    results = []
    for r in range(R):
        results.append(SGDResult(x_final=X[r].copy(), x_avg=state.sum_x[r] / count,
                                 err_avg=float(state.sum_err[r] / count),
                                 err_at={k: float(v[r]) for k, v in state.err_at.items()},
                                 n_clipped=int(state.n_clipped[r]), grad_evals=n_steps, method=methods[r]))
    return results


class _State:
    def __init__(self, R, d, record):
        self.sum_x = np.zeros((R, d))
        self.sum_err = np.zeros(R)
        self.n_clipped = np.zeros(R, dtype=np.int64)
        self.record = set(record)
        self.err_at = {}


def _gather(problems, kind, block_idx):
    """Per-step data of one block, laid out (steps, R, ...) so that step j reads contiguous rows."""
    m, R = block_idx.shape[1], block_idx.shape[0]
    d = problems[0].dim
    if kind == "least_squares":
        a = np.empty((m, R, d))
        b = np.empty((m, R))
        for r, p in enumerate(problems):
            a[:, r, :] = p.features[block_idx[r]]
            b[:, r] = p.targets[block_idx[r]]
        return a, b, np.sqrt(_rowdot(a, a))
    xi = np.empty((m, R, d))
    for r, p in enumerate(problems):
        xi[:, r, :] = p.targets[block_idx[r]]
    return (xi,)


def _rowdot(u, v):
    """Row-wise dot product sum_j u[..., j] v[..., j], computed the same way for every row whatever the number of
    rows or their memory alignment (BLAS-backed dot products are not), so batched runs equal single runs."""
    return np.add.reduce(u * v, axis=-1)


def _run_block(X, data, kind, gammas, lams, factor, eps, start, stop, burn_in, x_erm, state):
    """Steps k = start..stop-1 in place on X (R, d); accumulates the averages after burn-in.

    The iterates x_{k+1} of the block are stored and reduced once at the end of the block (the loop itself
    does only the update).
    """
    m = stop - start
    R = X.shape[0]
    hist = np.empty((m,) + X.shape)
    clip = lams is not None
    if clip:
        lam_block = lams[start:stop, None] * factor[None, :]
        flags = np.empty((m, R), dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(m):
            gamma = gammas[start + j]
            if kind == "least_squares":
                a = data[0][j]
                r = _rowdot(a, X)
                r -= data[1][j]                               # g = r a, r = a^T x - b
                if clip:
                    lam = lam_block[j]
                    norm = np.abs(r)
                    norm *= data[2][j]
                    if eps:
                        norm += eps
                    np.greater(norm, lam, out=flags[j])
                    r *= lam / np.maximum(norm, lam)            # exactly 1 where no clipping happens
                r *= gamma
                X -= r[:, None] * a
            else:
                g = X - data[0][j]
                if clip:
                    lam = lam_block[j]
                    norm = np.sqrt(_rowdot(g, g))
                    if eps:
                        norm += eps
                    np.greater(norm, lam, out=flags[j])
                    g *= (lam / np.maximum(norm, lam))[:, None]
                g *= gamma
                X -= g
            hist[j] = X
    if clip:
        state.n_clipped += flags.sum(axis=0)
    first = max(burn_in - start, 0)                            # hist[j] is x_{start+j+1}
    if first < m:
        kept = hist[first:]
        # reduce along a contiguous last axis, so that a row's sums do not depend on the batch size
        state.sum_x += np.ascontiguousarray(kept.transpose(1, 2, 0)).sum(axis=-1)
        diff = kept - x_erm
        state.sum_err += np.ascontiguousarray(_rowdot(diff, diff).T).sum(axis=-1)
    for k in state.record:
        if start < k <= stop:
            diff = hist[k - start - 1] - x_erm
            state.err_at[k] = _rowdot(diff, diff)


def _locate_nonfinite(X_start, data, kind, gammas, lams, factor, eps, start, stop, methods):
    """Replay one block step by step to name the first step and run whose iterate is not finite."""
    X = X_start.copy()
    dummy = _State(X.shape[0], X.shape[1], ())
    for k in range(start, stop):
        j = k - start
        step_data = tuple(arr[j:j + 1] for arr in data)
        _run_block(X, step_data, kind, gammas, lams, factor, eps, k, k + 1, stop + 1, X, dummy)
        bad = ~np.all(np.isfinite(X), axis=1)
        if bad.any():
            r = int(np.argmax(bad))
            raise FloatingPointError(f"non-finite iterate at step k={k + 1} (x_{k + 1}) of method "
                                     f"{methods[r]!r} (run {r}); reduce step_size")
    raise FloatingPointError(f"non-finite iterate between steps {start + 1} and {stop}")  # pragma: no cover


def run_sgd(problem: FiniteSumProblem, n_steps: int, *, step_size: Schedule, clip_level=None, seed, x0=None,
            burn_in=None, record_at=(), clip_eps: float = 0.0) -> SGDResult:
    """SGD (``clip_level=None``) or Clip-SGD on one finite-sum problem.

    x_{k+1} = x_k - gamma_k clip(grad f(x_k, xi_{i_k}), lambda_k), with clip the identity for plain SGD, the
    indices i_k from ``default_rng(seed)`` (consecutive chunks of 65536 by ``shared.oracles.uniform_indices``).

    Parameters
    ----------
    problem : FiniteSumProblem
    n_steps : int
        K >= 1.
    step_size, clip_level : float, dict {value, k0, exponent} or callable k -> float
        gamma_k and lambda_k (``value (1 + k/k0)^exponent`` for a dict); each must be finite and > 0 at every k.
    seed : int, SeedSequence or Generator
        The algorithm's own randomness (never the data generator).
    x0 : array (d,), default 0.
    burn_in : int, default n_steps // 4
        The averages run over k = burn_in+1..n_steps.
    record_at : iterable of int in 1..n_steps
        Steps k at which ||x_k - x_erm||^2 is kept.
    clip_eps : float
        eps of the clip operator (1e-6 reproduces ``torch.nn.utils.clip_grad_norm_``).

    Returns
    -------
    SGDResult
    """
    return run_sgd_batch([problem], n_steps, step_size=step_size, clip_level=clip_level, seeds=[seed],
                         x0=None if x0 is None else _check_x0(x0, problem.dim), burn_in=burn_in,
                         record_at=record_at, clip_eps=clip_eps)[0]


def _check_x0(x0, d):
    x0 = np.asarray(x0, dtype=float)
    if x0.shape != (d,):
        raise ValueError(f"x0 must have shape ({d},), got {x0.shape}")
    return x0
