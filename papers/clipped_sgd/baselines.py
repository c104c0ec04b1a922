"""Library baselines: ``torch.optim.SGD`` with ``clip_grad_norm_``, scikit-learn's ``SGDRegressor`` and
``HuberRegressor`` (spec: Baselines).

The torch run uses the same index sequence as :func:`papers.clipped_sgd.methods.run_sgd` (consecutive chunks of
65536 indices from ``default_rng(seed)``), batch size 1 and float64, so that with ``clip_eps = 1e-6`` the two
implementations compute the same iterates up to rounding.
"""
from __future__ import annotations

import math

import numpy as np

from shared.oracles import CallCounter, uniform_indices

from papers.clipped_sgd.methods import INDEX_CHUNK
from papers.clipped_sgd.problems import FiniteSumProblem

__all__ = ["index_sequence", "run_torch_sgd", "sgd_regressor_epoch", "huber_location"]


def index_sequence(seed, n_samples: int, n_steps: int) -> np.ndarray:
    """The first ``n_steps`` indices i_k that ``run_sgd(..., seed=seed)`` uses on a problem of size N."""
    rng = np.random.default_rng(seed)
    chunks = [uniform_indices(rng, n_samples, INDEX_CHUNK) for _ in range(-(-n_steps // INDEX_CHUNK))]
    return np.concatenate(chunks)[:n_steps]


def run_torch_sgd(problem: FiniteSumProblem, n_steps: int, *, step_size: float, clip_level=None, seed,
                  x0=None):
    """Least-squares SGD with ``torch.optim.SGD(lr=step_size, momentum=0)`` and, when ``clip_level`` is set,
    ``torch.nn.utils.clip_grad_norm_(max_norm=clip_level)`` (coefficient max_norm / (||g|| + 1e-6), clamped at 1),
    batch size 1, float64, on the index sequence of ``seed``.

    Returns ``(x_final, grad_evals)``; the gradient evaluations (one backward pass per step) are counted by a
    :class:`shared.oracles.CallCounter` around the gradient function.
    """
    import torch

    if problem.kind != "least_squares":
        raise ValueError(f"problem must be a least-squares problem, got kind {problem.kind!r}")
    gamma = float(step_size)
    if not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"step_size must be finite and > 0, got {step_size!r}")
    if clip_level is not None and not float(clip_level) > 0:
        raise ValueError(f"clip_level must be > 0, got {clip_level!r}")
    idx = index_sequence(seed, problem.n_samples, n_steps)
    A = torch.from_numpy(np.array(problem.features))
    b = torch.from_numpy(np.array(problem.targets))
    start = np.zeros(problem.dim) if x0 is None else np.asarray(x0, dtype=float)
    x = torch.nn.Parameter(torch.tensor(start, dtype=torch.float64))
    opt = torch.optim.SGD([x], lr=gamma, momentum=0.0)

    def gradient(i):
        loss = 0.5 * (A[i] @ x - b[i]) ** 2
        loss.backward()

    counter = CallCounter(gradient)
    for i in idx.tolist():
        opt.zero_grad(set_to_none=False)
        counter(i)
        if clip_level is not None:
            torch.nn.utils.clip_grad_norm_([x], max_norm=float(clip_level))
        opt.step()
    return x.detach().numpy().copy(), counter.calls


def sgd_regressor_epoch(problem: FiniteSumProblem, *, step_size: float, seed: int = 0):
    """One epoch of ``sklearn.linear_model.SGDRegressor`` (constant learning rate eta0 = step_size, no penalty,
    no intercept). It samples without replacement by epoch, so it serves only as a timing reference.
    Returns the fitted coefficients."""
    from sklearn.linear_model import SGDRegressor

    if problem.kind != "least_squares":
        raise ValueError(f"problem must be a least-squares problem, got kind {problem.kind!r}")
    model = SGDRegressor(loss="squared_error", penalty=None, fit_intercept=False, learning_rate="constant",
                         eta0=float(step_size), max_iter=1, tol=None, shuffle=True, random_state=seed,
                         average=False)
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(problem.features, problem.targets)
    return model.coef_.copy()


def huber_location(samples, *, epsilon: float = 1.35) -> float:
    """Location estimate of ``sklearn.linear_model.HuberRegressor`` on 1-D samples (a constant feature, no
    intercept, no penalty). It estimates a scale jointly, so it is not identical to the clipped fixed point."""
    from sklearn.linear_model import HuberRegressor

    xi = np.asarray(samples, dtype=float)
    if xi.ndim != 1:
        raise ValueError(f"samples must be 1-D, got shape {xi.shape}")
    model = HuberRegressor(epsilon=epsilon, alpha=0.0, fit_intercept=False, max_iter=500)
    model.fit(np.ones((xi.size, 1)), xi)
    return float(model.coef_[0])
