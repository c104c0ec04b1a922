"""Test problems of the Romberg-ZOGE reproduction; every objective is batched, ``(n, d) -> (n,)``.

* ``ExponentialSeparable``: ``f(x) = sum_i exp(x_i - c_i) - (x_i - c_i)``, minimiser ``c``.
* ``LogisticTest``: ``f(x) = mean_i log(1 + exp(-b_i a_i^T x)) + 0.005 ||x||^2`` (numpy.logaddexp).
* ``power_sum(p)``: ``f(x) = sum_i x_i^p`` (quartic, sextic).
* ``BreastCancerLogistic``: regularised logistic regression on the standardised breast-cancer data (d = 30),
  with its Gaussian-smoothed value and gradient (Gauss-Hermite quadrature).
* ``StyblinskiTang``: ``f(x) = 0.5 sum_i (x_i^4 - 16 x_i^2 + 5 x_i)`` and the analytic ZO-SGD fixed points.
* ``RISProblem``: received rate of a reconfigurable intelligent surface (the wireless substitute).
* ``PromptTuning``: a frozen digits classifier with a learned additive input prompt (the prompt-tuning
  substitute for black-box tuning of OPT-1.3B).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["ExponentialSeparable", "QuadraticSeparable", "LogisticTest", "power_sum", "power_sum_gradient", "BreastCancerLogistic",
           "StyblinskiTang", "RISProblem",
           "PHASE_MODELS", "PromptTuning", "MinibatchLoss", "fit_frozen_model", "save_frozen_model",
           "load_frozen_model"]


def _as_points(X, d: int) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"points must have shape (n, {d}), got {np.shape(X)}")
    return X


# ---------------------------------------------------------------------------------------------- synthetic
@dataclass
class _SeparableOnLine:
    """Base of the separable test functions: dimension ``dim`` and centres ``c = linspace(-1, 1, dim)``."""

    dim: int = 50
    c: np.ndarray = field(init=False)

    def __post_init__(self):
        if self.dim < 1:
            raise ValueError(f"dim must be >= 1, got {self.dim}")
        self.c = np.linspace(-1.0, 1.0, self.dim)


@dataclass
class ExponentialSeparable(_SeparableOnLine):
    """``f(x) = sum_i exp(x_i - c_i) - (x_i - c_i)`` with ``c = linspace(-1, 1, d)``; ``grad_i = exp(x_i - c_i) - 1``."""

    def __call__(self, X) -> np.ndarray:
        z = _as_points(X, self.dim) - self.c
        with np.errstate(over="ignore"):  # an overflow gives inf, which the estimators report by step
            return (np.exp(z) - z).sum(axis=1)

    def gradient(self, x) -> np.ndarray:
        return np.exp(np.asarray(x, dtype=float) - self.c) - 1.0


@dataclass
class QuadraticSeparable(_SeparableOnLine):
    """``f(x) = sum_i (x_i - c_i)^2 / 2`` with the exponential's ``c``: a control without smoothing bias (central
    differences of a quadratic are exact at every radius, so bias reduction has nothing to remove)."""

    def __call__(self, X) -> np.ndarray:
        z = _as_points(X, self.dim) - self.c
        return 0.5 * (z * z).sum(axis=1)

    def gradient(self, x) -> np.ndarray:
        return np.asarray(x, dtype=float) - self.c


@dataclass
class LogisticTest:
    """The logistic test function of the spec (d = 20, 50 samples, labels from a noisy planted model)."""

    n_samples: int = 50
    dim: int = 20
    l2: float = 0.005
    seed: int = 0

    def __post_init__(self):
        rng = np.random.default_rng(self.seed)
        self.A = rng.standard_normal((self.n_samples, self.dim))
        xs = rng.standard_normal(self.dim)
        self.b = np.sign(self.A @ xs + 0.5 * rng.standard_normal(self.n_samples))
        self.x0 = 0.5 * np.ones(self.dim)

    def __call__(self, X) -> np.ndarray:
        X = _as_points(X, self.dim)
        margins = -(X @ (self.A * self.b[:, None]).T)                 # (n, m)
        return np.logaddexp(0.0, margins).mean(axis=1) + self.l2 * (X ** 2).sum(axis=1)

    def single(self, x) -> float:
        """Unbatched value, ``(d,) -> float`` (for libraries that call one point at a time)."""
        x = np.asarray(x, dtype=float)
        return float(np.logaddexp(0.0, -self.b * (self.A @ x)).mean() + self.l2 * x @ x)

    def gradient(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        m = -self.b * (self.A @ x)
        sig = 0.5 * (1.0 + np.tanh(0.5 * m))                           # sigmoid(m), overflow-free
        return (self.A * (-self.b * sig)[:, None]).mean(axis=0) + 2.0 * self.l2 * x


def power_sum(p: int):
    """Batched ``f(x) = sum_i x_i^p``."""
    def f(X):
        return (np.asarray(X, dtype=float) ** p).sum(axis=1)
    f.__name__ = f"power_sum_{p}"
    return f


def power_sum_gradient(x, p: int) -> np.ndarray:
    """``grad sum_i x_i^p = p x^{p-1}``."""
    return p * np.asarray(x, dtype=float) ** (p - 1)


def _smoothing_radii_weights(radii, weights):
    radii = np.atleast_1d(np.asarray(radii, dtype=float))
    weights = np.ones(1) if weights is None else np.atleast_1d(np.asarray(weights, dtype=float))
    if radii.ndim != 1 or weights.shape != radii.shape:
        raise ValueError(f"radii and weights must be 1-D of the same length, got {radii.shape} and {weights.shape}")
    if not np.all(np.isfinite(radii)) or np.any(radii < 0):
        raise ValueError(f"radii must be finite and >= 0, got {radii}")
    return radii, weights


class BreastCancerLogistic:
    """L2-regularised logistic regression on ``sklearn.datasets.load_breast_cancer`` (569 samples, 30 features
    standardised to mean 0 and variance 1, labels ``b = 2y - 1``): ``f(x) = mean_i log(1 + exp(-b_i a_i^T x))
    + l2 ||x||^2``.

    ``smoothed_value/gradient(x, radii, weights)`` give ``sum_k w_k f_{h_k}(x)`` and its gradient, with
    ``f_h(x) = E f(x + h u)``, ``u ~ N(0, I)``: each loss term only sees ``a_i^T u ~ N(0, ||a_i||^2)``, so the
    expectation is one-dimensional and computed by Gauss-Hermite quadrature (``nodes`` points). With the
    Romberg weights this is the mean field of Romberg-ZOGE, whose minimiser is ZO-SGD's expected fixed point.
    """

    def __init__(self, l2: float = 0.005, nodes: int = 60):
        from sklearn.datasets import load_breast_cancer

        if not math.isfinite(float(l2)) or float(l2) <= 0:
            raise ValueError(f"l2 must be finite and > 0, got {l2!r}")
        X, y = load_breast_cancer(return_X_y=True)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        self.l2 = float(l2)
        self.dim = X.shape[1]
        self.BA = X * (2.0 * y - 1.0)[:, None]                       # rows b_i a_i
        self.row_norms = np.linalg.norm(X, axis=1)
        t, w = np.polynomial.hermite.hermgauss(int(nodes))
        self._z, self._wz = math.sqrt(2.0) * t, w / math.sqrt(math.pi)

    def __call__(self, X) -> np.ndarray:
        X = _as_points(X, self.dim)
        return np.logaddexp(0.0, -(X @ self.BA.T)).mean(axis=1) + self.l2 * (X ** 2).sum(axis=1)

    def gradient(self, x) -> np.ndarray:
        return self.smoothed_gradient(x, [0.0])

    def _margins(self, x, h):
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ValueError(f"x must have shape ({self.dim},), got {x.shape}")
        return (self.BA @ x)[:, None] + h * self.row_norms[:, None] * self._z[None, :]   # (m, nodes)

    def smoothed_value(self, x, radii, weights=None) -> float:
        """``sum_k w_k f_{h_k}(x)`` (``weights`` None: one radius, weight 1)."""
        radii, weights = _smoothing_radii_weights(radii, weights)
        x = np.asarray(x, dtype=float)
        total = 0.0
        for h, w in zip(radii, weights):
            loss = (np.logaddexp(0.0, -self._margins(x, h)) @ self._wz).mean()
            total += w * (loss + self.l2 * (x @ x + h ** 2 * self.dim))
        return float(total)

    def smoothed_gradient(self, x, radii, weights=None) -> np.ndarray:
        """Gradient of ``smoothed_value``."""
        radii, weights = _smoothing_radii_weights(radii, weights)
        x = np.asarray(x, dtype=float)
        g = np.zeros(self.dim)
        for h, w in zip(radii, weights):
            m = self._margins(x, h)
            s = (0.5 * (1.0 - np.tanh(0.5 * m))) @ self._wz           # E sigmoid(-margin)
            g += w * (-(self.BA * s[:, None]).mean(axis=0) + 2.0 * self.l2 * x)
        return g

    def smoothed_minimiser(self, radii, weights=None, x0=None) -> np.ndarray:
        """Minimiser of ``sum_k w_k f_{h_k}`` by L-BFGS-B (tolerances near machine precision)."""
        from scipy.optimize import minimize

        start = np.zeros(self.dim) if x0 is None else np.asarray(x0, dtype=float)
        res = minimize(lambda x: self.smoothed_value(x, radii, weights), start,
                       jac=lambda x: self.smoothed_gradient(x, radii, weights), method="L-BFGS-B",
                       options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
        return res.x


class StyblinskiTang:
    """Styblinski-Tang ``f(x) = 0.5 sum_i (x_i^4 - 16 x_i^2 + 5 x_i)``, a separable quartic.

    Gaussian smoothing adds ``h^2 (3 x_i^2 ...)``: ``d/dx_i f_h = 0.5 (4 x_i^3 + (12 h^2 - 32) x_i + 5)``. A
    quartic is differentiated exactly along ``u`` by Romberg-ZOGE with ``R >= 1``, so ZO-SGD's expected fixed
    point is the stationary point itself, while two-point's is the root of the smoothed derivative.
    """

    def __init__(self, dim: int = 20):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be an int >= 1, got {dim!r}")
        self.dim = int(dim)

    def __call__(self, X) -> np.ndarray:
        X = _as_points(X, self.dim)
        with np.errstate(over="ignore", invalid="ignore"):
            return 0.5 * (X ** 4 - 16.0 * X ** 2 + 5.0 * X).sum(axis=1)

    def gradient(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return 0.5 * (4.0 * x ** 3 - 32.0 * x + 5.0)

    @staticmethod
    def fixed_point(radius: float, level: int) -> float:
        """Per-coordinate expected ZO-SGD fixed point in the basin of the global minimum (about -2.9035):
        the smallest real root of ``4 x^3 + (12 h^2 - 32) x + 5`` with ``h = radius`` for ``level = 0``
        and ``h = 0`` for ``level >= 1``."""
        if not math.isfinite(float(radius)) or float(radius) < 0:
            raise ValueError(f"radius must be finite and >= 0, got {radius!r}")
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 0:
            raise ValueError(f"level must be a non-negative int, got {level!r}")
        h2 = float(radius) ** 2 if level == 0 else 0.0
        roots = np.roots([4.0, 0.0, 12.0 * h2 - 32.0, 5.0])
        real = roots[np.abs(roots.imag) < 1e-9].real
        return float(real.min())


# ---------------------------------------------------------------------------------------------------- RIS
PHASE_MODELS = ("ideal", "practical")


class RISProblem:
    """Rate of a single-antenna link helped by an ``n``-element reconfigurable intelligent surface.

    ``g(theta) = h_d + sum_n c_n beta(theta_n) exp(j theta_n)``, gain ``G = |g|^2``, objective (minimised)
    ``f(theta) = -log2(1 + snr G)``. Phase models: ``"ideal"`` (``beta = 1``) and ``"practical"``
    (``beta(theta) = (1 - b_min)((sin(theta - phi) + 1)/2)^a + b_min``, ``b_min = 0.2``, ``phi = 0.43 pi``,
    ``a = 1.6``; Abeywickrama, Zhang, Wu, Yuen, IEEE Trans. Commun. 2020). Oracles: exact; noisy pilots
    (``pilots = L > 0``: ``y_l = sqrt(snr) g + n_l``, ``n_l ~ CN(0, 1)``, ``Ghat = max(0, mean|y_l|^2 - 1)/snr``,
    fresh noise on every evaluation); ``quantize="float16"`` casts the objective value to float16.
    """

    B_MIN, PHI, ALPHA = 0.2, 0.43 * math.pi, 1.6

    def __init__(self, h_direct, cascaded, *, snr: float = 1.0, phase_model: str = "ideal", pilots: int = 0,
                 quantize=None):
        c = np.asarray(cascaded, dtype=complex)
        if c.ndim != 1:
            raise ValueError(f"cascaded must be a 1-D array of n coefficients, got shape {c.shape}")
        if c.size < 1:
            raise ValueError("cascaded must hold n >= 1 elements")
        if not math.isfinite(float(snr)) or float(snr) <= 0:
            raise ValueError(f"snr must be finite and > 0, got {snr!r}")
        if phase_model not in PHASE_MODELS:
            raise ValueError(f"phase_model must be one of {list(PHASE_MODELS)}, got {phase_model!r}")
        if isinstance(pilots, bool) or not isinstance(pilots, (int, np.integer)) or pilots < 0:
            raise ValueError(f"pilots must be a non-negative int, got {pilots!r}")
        if quantize not in (None, "float16"):
            raise ValueError(f"quantize must be None or 'float16', got {quantize!r}")
        self.h_direct = complex(h_direct)
        self.cascaded = c
        self.n = c.size
        self.snr = float(snr)
        self.phase_model = phase_model
        self.pilots = int(pilots)
        self.quantize = quantize

    @classmethod
    def from_seed(cls, n_elements: int, seed: int, **kw) -> "RISProblem":
        """Channels from ``g = default_rng(seed).standard_normal(2n + 2)``: ``h_d = (g0 + j g1)/sqrt 2``,
        ``c = (g[2:2+n] + j g[2+n:])/sqrt 2``."""
        if isinstance(n_elements, bool) or not isinstance(n_elements, (int, np.integer)) or n_elements < 1:
            raise ValueError(f"n_elements must be an int >= 1, got {n_elements!r}")
        g = np.random.default_rng(seed).standard_normal(2 * n_elements + 2)
        h_d = (g[0] + 1j * g[1]) / math.sqrt(2.0)
        c = (g[2:2 + n_elements] + 1j * g[2 + n_elements:]) / math.sqrt(2.0)
        return cls(h_d, c, **kw)

    # -- amplitude model
    def amplitude(self, theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        if self.phase_model == "ideal":
            return np.ones_like(theta)
        return (1 - self.B_MIN) * ((np.sin(theta - self.PHI) + 1) / 2) ** self.ALPHA + self.B_MIN

    def _amplitude_derivative(self, theta) -> np.ndarray:
        if self.phase_model == "ideal":
            return np.zeros_like(theta)
        s = (np.sin(theta - self.PHI) + 1) / 2
        return (1 - self.B_MIN) * self.ALPHA * np.maximum(s, 0.0) ** (self.ALPHA - 1) * np.cos(theta - self.PHI) / 2

    def _check_thetas(self, thetas) -> np.ndarray:
        T = np.asarray(thetas, dtype=float)
        if T.ndim == 1:
            T = T[None, :]
        if T.ndim != 2 or T.shape[1] != self.n:
            raise ValueError(f"thetas must have shape (m, {self.n}), got {np.shape(thetas)}")
        return T

    def received(self, thetas) -> np.ndarray:
        """Complex received coefficient ``g(theta)`` per row, shape (m,)."""
        T = self._check_thetas(thetas)
        return self.h_direct + (self.cascaded * self.amplitude(T) * np.exp(1j * T)).sum(axis=1)

    def gain(self, thetas) -> np.ndarray:
        return np.abs(self.received(thetas)) ** 2

    def objective(self, thetas, rng: np.random.Generator | None = None) -> np.ndarray:
        """Batched negative rate ``-log2(1 + snr G)`` (``G`` estimated from pilots when ``pilots > 0``)."""
        g = self.received(thetas)
        if self.pilots > 0:
            if rng is None:
                raise ValueError("rng is required for the noisy-pilot oracle (pilots > 0)")
            noise = rng.standard_normal((g.size, self.pilots, 2))
            y = math.sqrt(self.snr) * g[:, None] + (noise[..., 0] + 1j * noise[..., 1]) / math.sqrt(2.0)
            G = np.maximum(0.0, (np.abs(y) ** 2).mean(axis=1) - 1.0) / self.snr
        else:
            G = np.abs(g) ** 2
        value = -np.log2(1.0 + self.snr * G)
        if self.quantize == "float16":
            value = value.astype(np.float16).astype(np.float64)
        return value

    def rate(self, theta) -> float:
        """Exact rate ``log2(1 + snr G(theta))`` of one configuration."""
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.n,):
            raise ValueError(f"theta must have shape ({self.n},), got {theta.shape}")
        return float(np.log2(1.0 + self.snr * self.gain(theta)[0]))

    def rate_gradient(self, theta) -> np.ndarray:
        """Gradient of the exact rate: ``dG/dtheta_n = 2 Re(conj(g) c_n e^{j theta_n}(beta' + j beta))``."""
        theta = np.asarray(theta, dtype=float)
        g = self.received(theta)[0]
        dg = self.cascaded * np.exp(1j * theta) * (self._amplitude_derivative(theta) + 1j * self.amplitude(theta))
        dG = 2.0 * np.real(np.conj(g) * dg)
        return self.snr * dG / ((1.0 + self.snr * abs(g) ** 2) * math.log(2.0))

    def ideal_optimum(self):
        """Closed form of the ideal model: ``theta_n = arg h_d - arg c_n``, ``G* = (|h_d| + sum |c_n|)^2``.

        Returns ``(theta in [0, 2 pi), G*, log2(1 + snr G*))``.
        """
        theta = np.mod(np.angle(self.h_direct) - np.angle(self.cascaded), 2 * math.pi)
        gain = (abs(self.h_direct) + np.abs(self.cascaded).sum()) ** 2
        return theta, float(gain), float(np.log2(1.0 + self.snr * gain))

    def reference_optimum(self, starts: int = 5, spread: float = 0.3, seed: int = 0):
        """Best of ``starts`` L-BFGS-B runs on the exact rate, started from the ideal phases plus
        ``N(0, spread^2)`` perturbations (the first start unperturbed). Returns ``(theta, rate)``."""
        from scipy.optimize import minimize

        theta0, _, _ = self.ideal_optimum()
        rng = np.random.default_rng(seed)
        best = (None, -np.inf)
        for s in range(starts):
            start = theta0 + (spread * rng.standard_normal(self.n) if s else 0.0)
            res = minimize(lambda t: -self.rate(t), start, jac=lambda t: -self.rate_gradient(t), method="L-BFGS-B")
            r = self.rate(res.x)
            if r > best[1]:
                best = (res.x, r)
        return best


# ------------------------------------------------------------------------------------------ prompt tuning
def _digits_split():
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = digits.data / 16.0
    y = digits.target
    perm = np.random.default_rng(0).permutation(len(y))
    X, y = X[perm], y[perm]
    return (X[:900], y[:900]), (X[900:1350], y[900:1350]), (X[1350:], y[1350:])


def fit_frozen_model(max_iter: int = 120) -> dict:
    """Fit ``MLPClassifier(hidden_layer_sizes=(128,), max_iter, random_state=0)`` on the 900 source digits;
    returns its weights as float64 arrays ``W1 (64,128), b1, W2 (128,10), b2``."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    (Xs, ys), _, _ = _digits_split()
    model = MLPClassifier(hidden_layer_sizes=(128,), max_iter=max_iter, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(Xs, ys)
    return {"W1": model.coefs_[0], "b1": model.intercepts_[0], "W2": model.coefs_[1], "b2": model.intercepts_[1]}


def save_frozen_model(path, weights: dict) -> Path:
    from shared.results import write_arrays

    return write_arrays(path, **weights)


def load_frozen_model(path) -> dict:
    from shared.results import read_arrays

    return read_arrays(path)


class PromptTuning:
    """Frozen digits MLP on corrupted target images, tuned through an additive input prompt ``A z``.

    Corruption: mask ``m = 1`` on rows 2..5 and columns 1..6 (inclusive) of the 8x8 image,
    ``x' = x (1 - 0.5 m) + 0.5 m``. Prompted input ``x' + A z`` with ``A = default_rng(1).standard_normal((64,
    d_z)) / sqrt(d_z)``. Loss: mean cross-entropy of the frozen model (ReLU hidden layer, softmax output)
    computed in ``dtype`` (float32 by default).
    """

    def __init__(self, weights: dict, prompt_dim: int = 10, dtype=np.float32):
        if prompt_dim < 1:
            raise ValueError(f"prompt_dim must be >= 1, got {prompt_dim}")
        self.dtype = np.dtype(dtype)
        self.W1, self.b1, self.W2, self.b2 = (np.asarray(weights[k], dtype=self.dtype)
                                              for k in ("W1", "b1", "W2", "b2"))
        _, (Xt, yt), (Xe, ye) = _digits_split()
        mask = np.zeros((8, 8))
        mask[2:6, 1:7] = 1.0
        mask = mask.ravel()
        corrupt = lambda X: X * (1 - 0.5 * mask) + 0.5 * mask  # noqa: E731
        self.X_train, self.y_train = corrupt(Xt).astype(self.dtype), yt
        self.X_test, self.y_test = corrupt(Xe).astype(self.dtype), ye
        self.dim = int(prompt_dim)
        self.A = (np.random.default_rng(1).standard_normal((64, self.dim)) / math.sqrt(self.dim)).astype(self.dtype)

    def _logits(self, Z, X) -> np.ndarray:
        """Logits of the frozen model for prompts ``Z`` (n, d_z) on images ``X`` (m, 64): (n, m, 10)."""
        prompts = np.asarray(Z, dtype=self.dtype) @ self.A.T                         # (n, 64)
        inputs = X[None, :, :] + prompts[:, None, :]                                  # (n, m, 64)
        hidden = np.maximum(inputs @ self.W1 + self.b1, 0)
        return hidden @ self.W2 + self.b2

    def loss(self, Z, indices=None) -> np.ndarray:
        """Batched mean cross-entropy on the target-train images ``indices`` (all when None), shape (n,)."""
        Z = _as_points(Z, self.dim)
        idx = slice(None) if indices is None else indices
        logits = self._logits(Z, self.X_train[idx])
        y = self.y_train[idx]
        lse = np.logaddexp.reduce(logits, axis=2)
        picked = np.take_along_axis(logits, np.broadcast_to(y[None, :, None], logits.shape[:2] + (1,)), axis=2)[..., 0]
        return (lse - picked).mean(axis=1).astype(np.float64)

    def accuracy(self, Z, split: str = "test") -> np.ndarray:
        """Accuracy of the prompted frozen model on ``split`` ("test" or "train"), one value per row of Z."""
        Z = _as_points(Z, self.dim)
        X, y = (self.X_test, self.y_test) if split == "test" else (self.X_train, self.y_train)
        return (self._logits(Z, X).argmax(axis=2) == y[None, :]).mean(axis=1)


class MinibatchLoss:
    """Batched objective that draws a fresh minibatch of target-train images on every call.

    ZO-SGD calls its objective once per step with all the step's points, so every evaluation of one step
    sees the same minibatch (common random numbers).
    """

    def __init__(self, problem: PromptTuning, batch_size: int, rng: np.random.Generator):
        self.problem, self.batch_size, self.rng = problem, int(batch_size), rng
        self.calls = 0

    def __call__(self, Z) -> np.ndarray:
        self.calls += 1
        idx = self.rng.choice(self.problem.y_train.size, size=self.batch_size, replace=False)
        return self.problem.loss(Z, idx)
