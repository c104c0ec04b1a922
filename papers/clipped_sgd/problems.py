"""Finite-sum problems F_S(x) = (1/N) sum_i f(x, xi_i) with heavy-tailed data (spec: Problems and data).

Two losses:

* least squares, ``f(x, (a, b)) = (a^T x - b)^2 / 2``, ``grad f(x, (a, b)) = (a^T x - b) a``;
* mean estimation, ``f(x, xi) = ||x - xi||^2 / 2``, ``grad f(x, xi) = x - xi``.

The synthetic kinds draw their data from ``numpy.random.default_rng(seed)`` in the order given in
:func:`make_problem`, with Student-t draws from :func:`shared.oracles.sample_noise` (raw Student-t with
``df = tail_index``, so ``P(|T| > t) ~ c t^{-tail_index}``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from shared.oracles import sample_noise

__all__ = ["FiniteSumProblem", "make_problem", "draw_noise", "diabetes_design", "PROBLEM_KINDS"]

PROBLEM_KINDS = ("least_squares", "mean", "least_squares_synthetic", "mean_synthetic", "least_squares_diabetes")


@dataclass(frozen=True)
class FiniteSumProblem:
    """A finite-sum problem with its exact empirical minimiser.

    Attributes
    ----------
    kind : {"least_squares", "mean"}
        The loss.
    features : ndarray (N, d) or None
        Rows a_i of the design (least squares); None for mean estimation.
    targets : ndarray
        b_i, shape (N,), for least squares; the samples xi_i, shape (N, d), for mean estimation.
    x_erm : ndarray (d,)
        The minimiser x_S of the empirical risk: ``lstsq(A, b)`` or the sample mean.
    x_pop : ndarray (d,) or None
        The population minimiser x* when known (synthetic data), else None.
    mu, L : float
        Smallest and largest eigenvalue of Sigma = (1/N) sum_i a_i a_i^T (1 and 1 for mean estimation).
    L_max : float
        max_i ||a_i||^2 (1 for mean estimation), the smoothness constant of the single losses.
    """

    kind: str
    features: Optional[np.ndarray]
    targets: np.ndarray
    x_erm: np.ndarray
    x_pop: Optional[np.ndarray]
    mu: float
    L: float
    L_max: float

    @property
    def n_samples(self) -> int:
        """N, the number of data points."""
        return int(self.targets.shape[0])

    @property
    def dim(self) -> int:
        """d, the dimension of x."""
        return int(self.x_erm.shape[0])

    def grad(self, x, idx) -> np.ndarray:
        """Per-sample gradients ``grad f(x, xi_i)`` for i in ``idx``, shape (len(idx), d).

        Least squares: ``(a_i^T x - b_i) a_i``; mean estimation: ``x - xi_i``.
        """
        x = self._check_x(x)
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_samples):
            raise ValueError(f"idx must lie in 0..{self.n_samples - 1}")
        if self.kind == "least_squares":
            a = self.features[idx]
            return (a @ x - self.targets[idx])[:, None] * a
        return x[None, :] - self.targets[idx]

    def per_sample_grads(self, x) -> np.ndarray:
        """All N per-sample gradients at x, shape (N, d)."""
        return self.grad(x, np.arange(self.n_samples))

    def _check_x(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ValueError(f"x must have shape ({self.dim},), got {x.shape}")
        return x


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float)) or int(value) != value \
            or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_tail_index(tail_index) -> float:
    alpha = float(tail_index)
    if not math.isfinite(alpha) or alpha <= 1:
        raise ValueError(f"tail_index must be finite and > 1 (the mean must exist), got {tail_index!r}")
    return alpha


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(arr, dtype=float)
    arr.setflags(write=False)
    return arr


def _least_squares(features, targets, x_pop=None) -> FiniteSumProblem:
    A = np.asarray(features, dtype=float)
    b = np.asarray(targets, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"features must be a 2-D array (N, d), got shape {A.shape}")
    if b.ndim != 1:
        raise ValueError(f"targets must be a 1-D array (N,), got shape {b.shape}")
    if A.shape[0] != b.shape[0]:
        raise ValueError(f"features and targets must have the same length, got {A.shape[0]} and {b.shape[0]}")
    _check_int(A.shape[0], "n_samples", 2)
    _check_int(A.shape[1], "dim", 1)
    if not np.all(np.isfinite(A)):
        raise ValueError("features contain NaN or Inf")
    if not np.all(np.isfinite(b)):
        raise ValueError("targets contain NaN or Inf")
    n, d = A.shape
    sigma = A.T @ A / n
    eig = np.linalg.eigvalsh(sigma)
    if np.linalg.matrix_rank(A) < d:
        raise ValueError(f"features have rank < dim = {d}: the least-squares minimiser x_erm is not unique")
    x_erm = np.linalg.lstsq(A, b, rcond=None)[0]
    return FiniteSumProblem(kind="least_squares", features=_frozen(A), targets=_frozen(b), x_erm=_frozen(x_erm),
                            x_pop=None if x_pop is None else _frozen(x_pop), mu=float(eig[0]), L=float(eig[-1]),
                            L_max=float(np.max(np.einsum("ij,ij->i", A, A))))


def _mean(samples, x_pop=None) -> FiniteSumProblem:
    xi = np.asarray(samples, dtype=float)
    if xi.ndim == 1:
        xi = xi[:, None]
    if xi.ndim != 2:
        raise ValueError(f"samples must have shape (N,) or (N, d), got {np.shape(samples)}")
    _check_int(xi.shape[0], "n_samples", 2)
    _check_int(xi.shape[1], "dim", 1)
    if not np.all(np.isfinite(xi)):
        raise ValueError("samples contain NaN or Inf")
    return FiniteSumProblem(kind="mean", features=None, targets=_frozen(xi), x_erm=_frozen(xi.mean(axis=0)),
                            x_pop=None if x_pop is None else _frozen(x_pop), mu=1.0, L=1.0, L_max=1.0)


def _rng(seed) -> np.random.Generator:
    if seed is None:
        raise ValueError("seed is required for the synthetic kinds (an int, a SeedSequence or a Generator)")
    if isinstance(seed, (bool, float)):
        raise ValueError(f"seed must be an int, a SeedSequence or a Generator, got {seed!r}")
    return np.random.default_rng(seed)


def make_problem(kind: str, **params) -> FiniteSumProblem:
    """Build a finite-sum problem.

    Parameters
    ----------
    kind : str
        ``"least_squares"`` with ``features`` (N, d) and ``targets`` (N,);
        ``"mean"`` with ``samples`` (N,) or (N, d);
        ``"least_squares_synthetic"`` with ``n_samples``, ``tail_index``, ``dim=10``, ``seed``:
        ``rng = default_rng(seed)``, ``A = rng.standard_normal((N, d))``, ``eps = Student-t(tail_index)`` of
        length N, ``b = A 1 + eps``; ``x_pop = x* = 1``. Then ``grad f(x*, xi) = -eps a`` has tail index
        ``tail_index`` (Breiman's lemma);
        ``"mean_synthetic"`` with ``n_samples``, ``tail_index``, ``dim=1``, ``seed``: ``xi = Student-t(tail_index)``
        of shape (N,) (dim 1) or (N, dim); ``x_pop = 0``, ``x_erm`` = the sample mean.
        ``"least_squares_diabetes"`` with ``n_samples``, ``tail_index``, ``seed``: real features, ``N`` rows drawn
        with replacement from the standardised diabetes design (:func:`diabetes_design`), then ``eps``;
        ``b = A x_true + eps`` with ``x_true`` the coefficients fitted on the real target, ``x_pop = x_true``.
        The synthetic kinds take ``noise="student_t"`` (default) or ``"gaussian"``: standard normal noise in
        place of the Student-t draw, the light-tailed control (same draw order).

    Raises
    ------
    ValueError
        Unknown kind or parameter; ``tail_index <= 1``; ``n_samples < 2``; ``dim < 1``; features and targets of
        different lengths or with NaN/Inf; a design of rank < dim.
    """
    if kind not in PROBLEM_KINDS:
        raise ValueError(f"kind must be one of {list(PROBLEM_KINDS)}, got {kind!r}")
    allowed = {"least_squares": {"features", "targets"}, "mean": {"samples"},
               "least_squares_synthetic": {"n_samples", "tail_index", "dim", "seed", "noise"},
               "mean_synthetic": {"n_samples", "tail_index", "dim", "seed", "noise"},
               "least_squares_diabetes": {"n_samples", "tail_index", "seed", "noise"}}[kind]
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(f"unknown parameters {sorted(unknown)} for kind {kind!r}; allowed: {sorted(allowed)}")
    if kind == "least_squares":
        return _least_squares(params["features"], params["targets"])
    if kind == "mean":
        return _mean(params["samples"])
    for key in ("n_samples", "tail_index"):
        if key not in params:
            raise ValueError(f"{key} is required for kind {kind!r}")
    n = _check_int(params["n_samples"], "n_samples", 2)
    alpha = _check_tail_index(params["tail_index"])
    d = _check_int(params.get("dim", 10 if kind == "least_squares_synthetic" else 1), "dim", 1)
    noise = params.get("noise", "student_t")
    rng = _rng(params.get("seed"))
    if kind == "least_squares_diabetes":
        X, x_true = diabetes_design()
        A = X[rng.integers(0, X.shape[0], n)]
        eps = draw_noise(rng, n, noise, alpha)
        return _least_squares(A, A @ x_true + eps, x_pop=x_true)
    if kind == "least_squares_synthetic":
        A = rng.standard_normal((n, d))
        eps = draw_noise(rng, n, noise, alpha)
        return _least_squares(A, A @ np.ones(d) + eps, x_pop=np.ones(d))
    xi = draw_noise(rng, n if d == 1 else (n, d), noise, alpha)
    return _mean(xi, x_pop=np.zeros(d))


def diabetes_design():
    """The real features of scikit-learn's bundled diabetes data (442 patients, 10 features, shipped with the
    package, no download), each column standardised to mean 0 and variance 1, and the least-squares coefficients
    of the standardised target on them: ``(X (442, 10), x_true (10,))``."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = (y - y.mean()) / y.std()
    return X, np.linalg.lstsq(X, y, rcond=None)[0]


def draw_noise(rng: np.random.Generator, size, noise: str, tail_index: float, scale: float = 1.0) -> np.ndarray:
    """One draw of the data noise: ``"student_t"`` (raw Student-t with df = ``tail_index``, the heavy-tailed
    data of the paper) or ``"gaussian"`` (the light-tailed control: standard normal, ``tail_index`` unused),
    times ``scale``; one generator call through :func:`shared.oracles.sample_noise`."""
    if noise == "student_t":
        return sample_noise(rng, size, "student_t", scale=scale, tail_index=tail_index)
    if noise == "gaussian":
        return sample_noise(rng, size, "gaussian", scale=scale)
    raise ValueError(f"noise must be 'student_t' or 'gaussian', got {noise!r}")
