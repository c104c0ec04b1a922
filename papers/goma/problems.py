"""Monotone Lipschitz test operators F: R^d -> R^d with known zero z* (spec: Problems and data), and one
negatively comonotone (nonmonotone) operator for the RAIN++ baseline.

A min-max problem ``min_x max_y f(x, y)`` becomes the operator ``F(z) = (grad_x f, -grad_y f)``, ``z = (x, y)``.
Every operator accepts one point of shape ``(d,)`` or a batch of shape ``(S, d)`` (one trajectory per row).
Random instances draw from ``numpy.random.default_rng(seed)`` in the order given in each docstring, so an
instance is fixed by (name, parameters, seed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from shared.oracles import NOISE_KINDS, sample_noise

__all__ = ["MonotoneProblem", "make_problem", "PROBLEM_NAMES", "skew_matrix", "with_state_dependent_noise"]

PROBLEM_NAMES = ("logspectrum_bilinear", "random_bilinear", "rank_deficient_quadratic", "nonlinear_logspectrum",
                 "stochastic_logspectrum", "bilinear", "gaussian_bilinear", "comonotone_linear")


@dataclass(frozen=True)
class MonotoneProblem:
    """A monotone L-Lipschitz operator with its zero and starting point (for "comonotone_linear": a negatively
    comonotone one).

    Attributes
    ----------
    name : str
    dim : int
        d, the dimension of z.
    L : float
        Lipschitz constant of ``operator`` (positive, finite).
    z0, z_star : ndarray, shape (d,)
        Starting point and a zero of F (``F(z_star) = 0``).
    operator : callable
        ``z -> F(z)`` for z of shape (d,) or (S, d).
    sample : callable or None
        ``(z, rng) -> F(z; xi)``, one independent stochastic sample per row of z; None for deterministic problems.
    noise_variance : callable or None
        ``z -> E||F(z; xi) - F(z)||^2`` (exact), per row; None for deterministic problems.
    """

    name: str
    dim: int
    L: float
    z0: np.ndarray
    z_star: np.ndarray
    operator: Callable[[np.ndarray], np.ndarray]
    sample: Optional[Callable[[np.ndarray, np.random.Generator], np.ndarray]] = None
    noise_variance: Optional[Callable[[np.ndarray], np.ndarray]] = None

    def __post_init__(self):
        if not (isinstance(self.L, (int, float, np.floating)) and math.isfinite(self.L) and self.L > 0):
            raise ValueError(f"L must be positive and finite, got {self.L!r}")
        for field in ("z0", "z_star"):
            value = np.asarray(getattr(self, field), dtype=float)
            if value.shape != (self.dim,):
                raise ValueError(f"{field} must have shape ({self.dim},), got {value.shape}")
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{field} contains NaN or Inf")
            value.setflags(write=False)
            object.__setattr__(self, field, value)


def skew_matrix(A: np.ndarray) -> np.ndarray:
    """The matrix K = [[0, A], [-A^T, 0]] of the bilinear operator F(z) = K z + (b, -c)."""
    m, n = A.shape
    K = np.zeros((m + n, m + n))
    K[:m, m:] = A
    K[m:, :m] = -A.T
    return K


def _check_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_nonneg(value, name: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return value


def _check_vector(value, length: int, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (length,):
        raise ValueError(f"{name} must have shape ({length},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or Inf")
    return arr


def _linear_operator(M: np.ndarray, q: np.ndarray) -> Callable:
    """F(z) = M z + q, row-wise for a batch."""
    MT = np.ascontiguousarray(M.T)

    def operator(z):
        return z @ MT + q
    return operator


def _logspectrum(params, n_default, lo, hi):
    n = _check_int(params.pop("n", n_default), "n")
    return n, np.logspace(lo, hi, n)


def _diag_bilinear_operator(s: np.ndarray) -> Callable:
    """F(x, y) = (s * y, -s * x), written as F(z) = w * z[swap] to stay elementwise."""
    n = s.size
    swap = np.concatenate([np.arange(n, 2 * n), np.arange(n)])
    w = np.concatenate([s, -s])

    def operator(z):
        return z[..., swap] * w
    return operator


def _logspectrum_bilinear(params, seed):
    """P1: f = sum_j s_j x_j y_j, s = logspace(-3, 0, n); F = (s*y, -s*x); L = 1, z* = 0, z0 = 1/sqrt(2n)."""
    n, s = _logspectrum(params, 100, -3, 0)
    d = 2 * n
    return dict(dim=d, L=float(s.max()), z0=np.ones(d) / math.sqrt(d), z_star=np.zeros(d),
                operator=_diag_bilinear_operator(s))


def _random_bilinear(params, seed):
    """P2: A = N(0,1)^{n x n}/sqrt(n), then b, then c ~ N(0, I_n); f = x^T A y + b^T x + c^T y.

    F = (A y + b, -(A^T x + c)); z* solves A^T x* = -c, A y* = -b; L = ||A||_2; z0 = 0.
    """
    n = _check_int(params.pop("n", 50), "n")
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n)) / math.sqrt(n)
    b = rng.standard_normal(n)
    c = rng.standard_normal(n)
    z_star = np.concatenate([np.linalg.solve(A.T, -c), np.linalg.solve(A, -b)])
    return dict(dim=2 * n, L=float(np.linalg.norm(A, 2)), z0=np.zeros(2 * n), z_star=z_star,
                operator=_linear_operator(skew_matrix(A), np.concatenate([b, -c])))


def _rank_deficient_quadratic(params, seed):
    """P3: draws B, C (n x r)/sqrt(n), A (n x n)/sqrt(n), b, c; P = B B^T, Q = C C^T.

    F(z) = M z + q with M = [[P, A], [-A^T, Q]], q = (b, c); monotone (M + M^T >= 0), not strongly monotone.
    z* = -M^{-1} q, L = ||M||_2, z0 = 0.
    """
    n = _check_int(params.pop("n", 40), "n")
    r = _check_int(params.pop("r", max(1, n // 4)), "r")
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, r)) / math.sqrt(n)
    C = rng.standard_normal((n, r)) / math.sqrt(n)
    A = rng.standard_normal((n, n)) / math.sqrt(n)
    b = rng.standard_normal(n)
    c = rng.standard_normal(n)
    M = np.block([[B @ B.T, A], [-A.T, C @ C.T]])
    q = np.concatenate([b, c])
    return dict(dim=2 * n, L=float(np.linalg.norm(M, 2)), z0=np.zeros(2 * n), z_star=-np.linalg.solve(M, q),
                operator=_linear_operator(M, q))


def _nonlinear_logspectrum(params, seed):
    """P4: F(z) = F_P1(z) + B^T (sigmoid(B z) - 1/2), B = N(0,1)^{r x d}/sqrt(d), d = 2n.

    The second term is the gradient of the convex sum_i softplus(b_i^T z) - b_i^T z/2, hence monotone, and
    vanishes at 0: z* = 0. L = 1 + ||B||_2^2/4 (sigmoid' <= 1/4). z0 = ones(d)/sqrt(d).
    """
    n, s = _logspectrum(params, 100, -3, 0)
    r = _check_int(params.pop("r", 10), "r")
    d = 2 * n
    B = np.random.default_rng(seed).standard_normal((r, d)) / math.sqrt(d)
    BT = np.ascontiguousarray(B.T)
    linear = _diag_bilinear_operator(s)

    def operator(z):
        return linear(z) + (1.0 / (1.0 + np.exp(-(z @ BT))) - 0.5) @ B
    return dict(dim=d, L=float(s.max() + np.linalg.norm(B, 2) ** 2 / 4), z0=np.ones(d) / math.sqrt(d),
                z_star=np.zeros(d), operator=operator)


def _stochastic_logspectrum(params, seed):
    """S1: A = diag(logspace(-1, 0, n)), b = c = 0, z* = 0, z0 = ones(2n), L = 1, with the noise model

    A_xi = A + (s_mult/sqrt(n)) G, G_ij ~ N(0, 1);  F(z; xi) = (A_xi y, -A_xi^T x) + sigma_a eps,
    so E F(z; xi) = F(z) and E||F(z; xi) - F(z)||^2 = s_mult^2 ||z||^2 + 2 n sigma_a^2 Var(eps_1)
    ("unbounded variance": it grows with ||z - z*||^2). eps is Gaussian by default; ``noise="student_t"`` or
    ``"student_t_unit"`` with ``tail_index`` gives heavy-tailed additive noise (shared.oracles.sample_noise).
    Draw order per sample: G, then eps. A batch z of shape (S, 2n) draws G (S, n, n) and eps (S, 2n) at once.
    """
    n, s = _logspectrum(params, 10, -1, 0)
    s_mult = _check_nonneg(params.pop("s_mult", 0.5), "s_mult")
    sigma_a = _check_nonneg(params.pop("sigma_a", 0.1), "sigma_a")
    kind = params.pop("noise", "gaussian")
    if kind not in NOISE_KINDS:
        raise ValueError(f"noise must be one of {list(NOISE_KINDS)}, got {kind!r}")
    tail_index = params.pop("tail_index", None)
    sample_noise(np.random.default_rng(0), 0, kind, scale=sigma_a, tail_index=tail_index)  # validates early
    if kind == "gaussian":
        eps_var = 1.0
    elif kind == "student_t_unit":
        eps_var = 1.0
    else:
        eps_var = tail_index / (tail_index - 2.0) if tail_index > 2 else math.inf
    d = 2 * n
    operator = _diag_bilinear_operator(s)
    g_scale = s_mult / math.sqrt(n)

    def sample(z, rng):
        z = np.asarray(z, dtype=float)
        G = sample_noise(rng, z.shape[:-1] + (n, n), scale=g_scale)
        eps = sample_noise(rng, z.shape, kind, scale=sigma_a, tail_index=tail_index)
        x, y = z[..., :n], z[..., n:]
        Gy = np.einsum("...ij,...j->...i", G, y)
        GTx = np.einsum("...ij,...i->...j", G, x)
        return operator(z) + np.concatenate([Gy, -GTx], axis=-1) + eps

    def noise_variance(z):
        z = np.asarray(z, dtype=float)
        return s_mult ** 2 * np.sum(z * z, axis=-1) + d * sigma_a ** 2 * eps_var

    return dict(dim=d, L=float(s.max()), z0=np.ones(d), z_star=np.zeros(d), operator=operator, sample=sample,
                noise_variance=noise_variance)


def _bilinear(params, seed):
    """Generic bilinear f = x^T A y + b^T x + c^T y, A of shape (m, n); F = (A y + b, -(A^T x + c)).

    z* is the least-norm solution (np.linalg.lstsq) of A^T x = -c, A y = -b; L = ||A||_2; z0 defaults to 0.
    """
    if "A" not in params:
        raise ValueError("A is required for the 'bilinear' problem")
    A = np.asarray(params.pop("A"), dtype=float)
    if A.ndim != 2 or A.size == 0:
        raise ValueError(f"A must be a non-empty 2-D array, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("A contains NaN or Inf")
    m, n = A.shape
    b = _check_vector(params.pop("b", np.zeros(m)), m, "b")
    c = _check_vector(params.pop("c", np.zeros(n)), n, "c")
    z0 = _check_vector(params.pop("z0", np.zeros(m + n)), m + n, "z0")
    x_star = np.linalg.lstsq(A.T, -c, rcond=None)[0]
    y_star = np.linalg.lstsq(A, -b, rcond=None)[0]
    L = float(np.linalg.norm(A, 2))
    return dict(dim=m + n, L=L, z0=z0, z_star=np.concatenate([x_star, y_star]),
                operator=_linear_operator(skew_matrix(A), np.concatenate([b, -c])))


def _gaussian_bilinear(params, seed):
    """The paper's Section 6.2.2 game [matrix reconstructed]: f = x^T B y, B = N(0,1)^{n x n} / ||.||_2 (n = 5,
    d = 10), so L = 1; z* = 0 (B is invertible almost surely); z0 = ones(2n)/sqrt(2n), ||z0 - z*|| = 1."""
    n = _check_int(params.pop("n", 5), "n")
    B = np.random.default_rng(seed).standard_normal((n, n))
    B = B / np.linalg.norm(B, 2)
    d = 2 * n
    return dict(dim=d, L=1.0, z0=np.ones(d) / math.sqrt(d), z_star=np.zeros(d),
                operator=_linear_operator(skew_matrix(B), np.zeros(d)))


def _comonotone_linear(params, seed):
    """A 2-d nonmonotone operator that is negatively comonotone (Lee & Kim 2021's hard example, used by Chen & Luo
    for RAIN++): f(x, y) = (rho/2) x^2 + sqrt(1 - rho^2) x y - (rho/2) y^2, L = 1, so

        F(z) = rho z + sqrt(1 - rho^2) (y, -x),   <F(z) - F(z'), z - z'> = rho ||F(z) - F(z')||^2,   ||F(z)|| = ||z||.

    rho in [-1, 0] (default -1/3); rho < 0 makes F nonmonotone. z* = 0, z0 = (1, 1)."""
    rho = float(params.pop("rho", -1.0 / 3.0))
    if not (math.isfinite(rho) and -1.0 <= rho <= 0.0):
        raise ValueError(f"rho must be in [-1, 0] for 'comonotone_linear', got {rho!r}")
    s = math.sqrt(1.0 - rho * rho)
    M = np.array([[rho, s], [-s, rho]])
    return dict(dim=2, L=1.0, z0=np.ones(2), z_star=np.zeros(2), operator=_linear_operator(M, np.zeros(2)))


_BUILDERS = {
    "logspectrum_bilinear": _logspectrum_bilinear,
    "random_bilinear": _random_bilinear,
    "rank_deficient_quadratic": _rank_deficient_quadratic,
    "nonlinear_logspectrum": _nonlinear_logspectrum,
    "stochastic_logspectrum": _stochastic_logspectrum,
    "bilinear": _bilinear,
    "gaussian_bilinear": _gaussian_bilinear,
    "comonotone_linear": _comonotone_linear,
}


def make_problem(name: str, *, seed: int = 0, **params) -> MonotoneProblem:
    """Build a test problem by name.

    Parameters
    ----------
    name : {"logspectrum_bilinear" (P1), "random_bilinear" (P2), "rank_deficient_quadratic" (P3),
            "nonlinear_logspectrum" (P4), "stochastic_logspectrum" (S1), "bilinear", "gaussian_bilinear",
            "comonotone_linear" (negatively comonotone, not monotone)}
    seed : int
        Seed of ``numpy.random.default_rng`` for the random instances (P2, P3, P4).
    **params
        Sizes (``n``, and ``r`` for P3/P4), the noise of S1 (``s_mult``, ``sigma_a``, ``noise``,
        ``tail_index``), the data of "bilinear" (``A``, ``b``, ``c``, ``z0``), ``rho`` of "comonotone_linear",
        and ``z0`` to override the
        starting point of any problem.

    Raises
    ------
    ValueError
        Unknown name or parameter, bad sizes, negative noise scales, z0 of the wrong shape or not finite,
        "bilinear" with a non-2-D A or b, c of the wrong length.
    """
    if name not in _BUILDERS:
        raise ValueError(f"name must be one of {list(PROBLEM_NAMES)}, got {name!r}")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    params = dict(params)
    z0_override = params.pop("z0", None) if name != "bilinear" else None
    fields = _BUILDERS[name](params, int(seed))
    if params:
        raise ValueError(f"unknown parameter(s) for problem {name!r}: {sorted(params)}")
    if z0_override is not None:
        fields["z0"] = _check_vector(z0_override, fields["dim"], "z0")
    return MonotoneProblem(name=name, **fields)


def with_state_dependent_noise(problem: MonotoneProblem, *, sigma: float, kappa: float) -> MonotoneProblem:
    """``problem`` with the state-dependent oracle of the paper's Theorem 4 (E G = F, E||G||^2 = sigma^2 +
    kappa ||F(z)||^2, so the variance (kappa - 1) ||F(z)||^2 + sigma^2 is unbounded in z):

        G(z, xi) = F(z) + sqrt(kappa - 1) ||F(z)|| v + sigma eps,   v, eps ~ N(0, I_d / d) independent.

    ``sample(z, rng, batch=b)`` returns the mean of b independent samples per row; given z the noise is
    Gaussian, so that mean is drawn exactly as F(z) + (sqrt(kappa - 1) ||F(z)|| v + sigma eps) / sqrt(b).
    One draw of shape (2,) + z.shape per call: v = [0], eps = [1] (``shared.oracles.sample_noise``).
    """
    sigma = _check_nonneg(sigma, "sigma")
    kappa = float(kappa)
    if not math.isfinite(kappa) or kappa < 1:
        raise ValueError(f"kappa must be finite and >= 1 (E||G||^2 >= ||F||^2), got {kappa!r}")
    operator, d = problem.operator, problem.dim
    mult, add = math.sqrt(kappa - 1.0) / math.sqrt(d), sigma / math.sqrt(d)

    def sample(z, rng, batch: int = 1):
        z = np.asarray(z, dtype=float)
        if isinstance(batch, bool) or int(batch) != batch or batch < 1:
            raise ValueError(f"batch must be an integer >= 1, got {batch!r}")
        Fz = operator(z)
        v, eps = sample_noise(rng, (2,) + z.shape)
        norm = np.sqrt(np.sum(Fz * Fz, axis=-1, keepdims=True))
        return Fz + (mult * norm * v + add * eps) / math.sqrt(batch)

    def noise_variance(z):
        Fz = operator(np.asarray(z, dtype=float))
        return (kappa - 1.0) * np.sum(Fz * Fz, axis=-1) + sigma ** 2

    return MonotoneProblem(name=f"{problem.name}+noise", dim=d, L=problem.L, z0=problem.z0, z_star=problem.z_star,
                           operator=operator, sample=sample, noise_variance=noise_variance)
