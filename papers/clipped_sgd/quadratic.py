"""The paper's Section 4 experiment: f(x, xi) = ||x||^2 / 2 + <xi, x> with heavy-tailed xi (spec addendum).

Finite sum F_S(x) = ||x||^2 / 2 + <xbar, x>, so grad f(x, xi_i) = x + xi_i, x_S = -xbar and, for centred
noise, the population minimiser is x* = 0. The noise is xi = c T_alpha (Student-t with df = alpha, tail index
alpha; c = 10 in the paper). With i_t uniform on {0..N-1} and t = 1..T:

* SGD:          x_t = x_{t-1} - gamma_t (x_{t-1} + xi_{i_t}),          gamma_t = eta t^{-1/alpha}  (eta = 1/4);
* Clip-SGD:     x_t = x_{t-1} - gamma_t clip(x_{t-1} + xi_{i_t}, lambda_t),  lambda_t = t^{1/alpha};
* averaged SGD: the SGD run above, reported at the mean of x_t over t = T/2+1..T (Polyak-Ruppert suffix average);
* tuned SGD:    the SGD run with the multiplier eta chosen from a grid.

Every method of one dataset runs on the same index sequences (``n_runs`` independent runs, the algorithm's
randomness), all runs of all datasets at once as one array.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shared.oracles import uniform_indices

__all__ = ["QuadraticRuns", "quadratic_runs", "step_schedule", "clip_schedule", "sgd_expected_error"]


def step_schedule(n_steps: int, alpha: float, eta: float = 0.25) -> np.ndarray:
    """gamma_t = eta t^{-1/alpha} for t = 1..n_steps (the paper's step with eta = 1/4)."""
    _check_alpha(alpha)
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be finite and > 0, got {eta!r}")
    return eta * np.arange(1, int(n_steps) + 1, dtype=float) ** (-1.0 / alpha)


def clip_schedule(n_steps: int, alpha: float) -> np.ndarray:
    """lambda_t = t^{1/alpha} for t = 1..n_steps (the paper's clipping level)."""
    _check_alpha(alpha)
    return np.arange(1, int(n_steps) + 1, dtype=float) ** (1.0 / alpha)


def _check_alpha(alpha):
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be finite and > 0, got {alpha!r}")


@dataclass
class QuadraticRuns:
    """Squared errors of every method on D datasets, each with R runs: arrays of shape (D, R).

    ``opt[m]`` = ||x_T - x_S||^2 (optimization error), ``gen[m]`` = ||x_T - x*||^2 with x* = 0 (statistical
    error), for the method names m; ``x_erm`` (D,) the empirical minimisers -xbar.
    """

    opt: dict
    gen: dict
    x_erm: np.ndarray


def quadratic_runs(datasets, index_seeds, n_steps: int, alpha: float, *, n_runs: int, etas=(0.25,),
                   x0: float = 0.0) -> QuadraticRuns:
    """Run SGD (one per step multiplier in ``etas``), averaged SGD (same runs) and Clip-SGD (eta = 1/4) on the 1-D
    quadratic f(x, xi) = x^2/2 + xi x for each dataset (a 1-D array xi of length N_d) with ``n_runs`` runs.

    Run r of dataset d takes its indices from ``uniform_indices(default_rng(index_seeds[d]), N_d, (n_steps,
    n_runs))[:, r]``; every method sees those same indices. Method names: ``sgd_eta<j>`` (j indexes ``etas``),
    ``avg_eta<j>``, ``clip``. Raises ValueError for bad inputs and FloatingPointError on a non-finite iterate.
    """
    n_steps, n_runs = int(n_steps), int(n_runs)
    if n_steps < 2 or n_runs < 1:
        raise ValueError(f"n_steps must be >= 2 and n_runs >= 1, got {n_steps} and {n_runs}")
    datasets = [np.asarray(xi, dtype=float) for xi in datasets]
    if not datasets or len(index_seeds) != len(datasets):
        raise ValueError("datasets must be non-empty, with one index seed per dataset")
    for xi in datasets:
        if xi.ndim != 1 or xi.size < 2 or not np.all(np.isfinite(xi)):
            raise ValueError("every dataset must be a finite 1-D array of length >= 2")
    etas = [float(e) for e in etas]
    D = len(datasets)
    # data seen by run r of dataset d at step t: (T, D, R)
    seen = np.empty((n_steps, D, n_runs))
    for d, (xi, ss) in enumerate(zip(datasets, index_seeds)):
        seen[:, d, :] = xi[uniform_indices(np.random.default_rng(ss), xi.size, (n_steps, n_runs))]
    x_erm = np.array([-xi.mean() for xi in datasets])
    gam = np.stack([step_schedule(n_steps, alpha, e) for e in etas])          # (E, T)
    lam = clip_schedule(n_steps, alpha)
    gam_clip = step_schedule(n_steps, alpha, 0.25)
    X = np.full((len(etas), D, n_runs), float(x0))
    Xc = np.full((D, n_runs), float(x0))
    avg = np.zeros_like(X)
    start = n_steps // 2
    for t in range(n_steps):
        g = X + seen[t]
        X -= gam[:, t, None, None] * g
        gc = Xc + seen[t]
        gc *= lam[t] / np.maximum(np.abs(gc), lam[t])
        Xc -= gam_clip[t] * gc
        if t >= start:
            avg += X
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Xc))):
        raise FloatingPointError("non-finite iterate in the quadratic runs (SGD or Clip-SGD)")
    avg /= n_steps - start
    opt, gen = {}, {}
    for j in range(len(etas)):
        for name, x in ((f"sgd_eta{j}", X[j]), (f"avg_eta{j}", avg[j])):
            opt[name] = (x - x_erm[:, None]) ** 2
            gen[name] = x ** 2
    opt["clip"] = (Xc - x_erm[:, None]) ** 2
    gen["clip"] = Xc ** 2
    return QuadraticRuns(opt=opt, gen=gen, x_erm=x_erm)


def sgd_expected_error(xi, gammas, x0: float = 0.0) -> float:
    """Exact E_alg ||x_T - x_S||^2 of SGD on the quadratic finite sum (no runs): with e_t = x_t - x_S and
    x_S = -xbar, e_t = (1 - gamma_t) e_{t-1} - gamma_t (xi_{i_t} - xbar), where xi_{i_t} - xbar has mean 0 and
    variance v = (1/N) sum_i (xi_i - xbar)^2 under uniform sampling, independently over t. Hence

        E e_T^2 = P_1^2 e_0^2 + v sum_t gamma_t^2 P_{t+1}^2,     P_t = prod_{s=t}^{T} (1 - gamma_s)   (P_{T+1} = 1).

    It is the limit of the mean over runs of ``quadratic_runs``' SGD error as the number of runs grows: clipping off,
    with the expectation over the algorithm taken exactly. ``xi``: 1-D finite data; ``gammas``: (T,) positive steps.
    """
    xi = np.asarray(xi, dtype=float)
    g = np.asarray(gammas, dtype=float)
    if xi.ndim != 1 or xi.size < 1 or not np.all(np.isfinite(xi)):
        raise ValueError("xi must be a finite, non-empty 1-D array")
    if g.ndim != 1 or g.size < 1 or not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ValueError("gammas must be a non-empty 1-D array of finite steps > 0")
    xbar = float(xi.mean())
    v = float(np.mean((xi - xbar) ** 2))
    tail = np.append(np.cumprod((1.0 - g)[::-1])[::-1], 1.0) ** 2       # P_t^2 for t = 1..T+1
    return float(tail[0] * (float(x0) + xbar) ** 2 + v * np.sum(g ** 2 * tail[1:]))
