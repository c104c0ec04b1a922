r"""Robust dictionary learning, the nonconvex-concave experiment of the paper's Section 5 (our formulation).

Neither the official claims nor the readable part of Boroun, Yazdandoost Hamedani & Jalilzadeh (NeurIPS 2023,
the source of R-PDCG and CG-RPGA, which names dictionary learning as an application) give the formulation, so
the problem below is a reconstruction: a worst-sample sparse-coding problem

    min_{D in B_*(delta), Z in B_1(tau)^n}  max_{y in Delta_n}  f(D, Z, y) = sum_i y_i l_i(D, z_i),
    l_i(D, z_i) = (1/2) ||a_i - D z_i||^2,

with the dictionary ``D`` (p x r) in the nuclear-norm ball of radius ``delta`` (the set whose projection needs a
full SVD and whose LMO is one top singular pair) and each code ``z_i`` (the i-th column of the r x n matrix ``Z``)
in the l1 ball of radius ``tau`` (LMO: one signed vertex per column). ``f`` is nonconvex in ``x = (D, Z)``
(bilinear products ``D z_i``) and linear, hence concave but not strongly, in ``y``: regime NC-C, ``mu_y = 0``.
``Phi(x) = max_y f = max_i l_i(x)`` is the worst reconstruction error over the samples.

Data (:func:`planted_data`): a planted dictionary ``D*`` with unit-norm columns and ``s``-sparse codes ``z*_i``
with ``||z*_i||_1 <= 1``, ``a_i = D* z*_i + noise_i``. With ``delta = r`` and ``tau = 1`` the planted pair is
feasible (``||D*||_* <= sqrt(r) ||D*||_F = r``), so ``Phi(D*, Z*) = max_i ||noise_i||^2 / 2``.

Start: ``x = 0`` is a stationary point of every ``l_i`` (all gradients vanish there), so the methods start from
a random ``x_0 = (D_0, Z_0)`` with ``||D_0||_* = delta / 2`` and every ``||z_i||_1 = tau / 2``; :class:`DictionaryCodeSet` returns that
point as its ``center()``, which is where :func:`papers.pf_minimax.methods.run_method` starts.

Constants (bounds over the whole feasible set, Section "Constants" of :class:`DictionaryLearning`), multiplied by
``lipschitz_scale``: the step-size knob our algorithms are tuned over in the experiment.
"""
from __future__ import annotations

import math

import numpy as np

from .problems import MinimaxProblem, _smoothed_simplex_max
from .sets import NuclearBall, Simplex

__all__ = ["DictionaryCodeSet", "DictionaryLearning", "planted_data", "make_dictionary_problem",
           "project_l1_columns", "atom_recovery"]


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _count(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def project_l1_columns(V: np.ndarray, radius: float) -> np.ndarray:
    r"""Project every column of ``V`` onto ``{z : ||z||_1 <= radius}`` (Duchi et al. 2008, vectorised).

    A column inside the ball is kept; otherwise ``sign(v) max(|v| - theta, 0)`` with the threshold ``theta`` of
    the sort-based simplex projection of ``|v|`` onto ``{w >= 0, sum w = radius}``.
    """
    V = np.asarray(V, dtype=float)
    A = np.abs(V)
    outside = A.sum(axis=0) > radius
    if not outside.any():
        return V.copy()
    Ao = A[:, outside]
    U = -np.sort(-Ao, axis=0)                       # descending
    css = np.cumsum(U, axis=0) - radius
    ks = np.arange(1, U.shape[0] + 1)[:, None]
    cond = U - css / ks > 0
    rho = U.shape[0] - 1 - np.argmax(cond[::-1], axis=0)   # last index where cond holds
    theta = css[rho, np.arange(U.shape[1])] / (rho + 1.0)
    out = V.copy()
    out[:, outside] = np.sign(V[:, outside]) * np.maximum(Ao - theta, 0.0)
    return out


class DictionaryCodeSet:
    r"""``X = B_*(delta) x B_1(tau)^n``: a p x r dictionary in the nuclear-norm ball and n codes (the columns of an
    r x n matrix) each in the l1 ball, stored as one flat vector ``x = (vec D, vec Z)`` (row-major).

    LMO (block-wise, so over the product): ``-delta u1 v1^T`` for the dictionary block (top singular pair,
    :class:`NuclearBall`) and, per code column, ``-tau sign(g_{ji}) e_j`` with ``j = argmax_j |g_{ji}|`` (first
    index on ties, ``sign(0) = +1``). Projection: block-wise too (full SVD for the dictionary,
    :func:`project_l1_columns` for the codes). ``center()`` is the start point ``x_0`` given at construction
    (see the module docstring); ``max_dist_sq`` is ``(2 delta)^2 + n (2 tau)^2``, the squared diameter.
    """

    def __init__(self, p: int, r: int, n: int, delta: float, tau: float, start: np.ndarray):
        self.p, self.r, self.n = _count(p, "p"), _count(r, "r"), _count(n, "n")
        self.delta, self.tau = _positive(delta, "delta"), _positive(tau, "tau")
        self.dict_ball = NuclearBall((self.p, self.r), self.delta)
        self.n_dict = self.p * self.r
        self.dim = self.n_dict + self.r * self.n
        self.shape = (self.dim,)
        start = np.asarray(start, dtype=float)
        if start.shape != self.shape or not np.all(np.isfinite(start)):
            raise ValueError(f"start must be a finite vector of shape {self.shape}, got shape {start.shape}")
        D, Z = self.split(start)
        if np.linalg.svd(D, compute_uv=False).sum() > self.delta * (1 + 1e-9) or \
                np.abs(Z).sum(axis=0).max() > self.tau * (1 + 1e-9):
            raise ValueError("start must lie in the set")
        self._start = start.copy()

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Views ``(D (p x r), Z (r x n))`` of a flat vector."""
        return x[:self.n_dict].reshape(self.p, self.r), x[self.n_dict:].reshape(self.r, self.n)

    def join(self, D: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """The flat vector of ``(D, Z)``."""
        return np.concatenate([np.ravel(D), np.ravel(Z)])

    def _check(self, v, name: str) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        if v.shape != self.shape:
            raise ValueError(f"{name} must have shape {self.shape}, got {v.shape}")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{name} contains NaN or Inf")
        return v

    def _lmo(self, g: np.ndarray) -> np.ndarray:
        gD, gZ = self.split(g)
        sD = self.dict_ball._lmo(gD)
        j = np.argmax(np.abs(gZ), axis=0)
        cols = np.arange(self.n)
        sZ = np.zeros((self.r, self.n))
        sZ[j, cols] = np.where(gZ[j, cols] >= 0, -self.tau, self.tau)
        return self.join(sD, sZ)

    def lmo(self, g) -> np.ndarray:
        """``argmin_{s in X} <g, s>`` (block-wise, see the class docstring)."""
        return self._lmo(self._check(g, "g"))

    def _project(self, v: np.ndarray) -> np.ndarray:
        vD, vZ = self.split(v)
        return self.join(self.dict_ball._project(vD), project_l1_columns(vZ, self.tau))

    def project(self, v) -> np.ndarray:
        """Euclidean projection onto ``X`` (block-wise)."""
        return self._project(self._check(v, "v"))

    def center(self) -> np.ndarray:
        """The start point ``x_0 = (D_0, Z_0)`` (not the centre of the set: ``x = 0`` is stationary)."""
        return self._start.copy()

    def max_dist_sq(self) -> float:
        """The squared diameter ``(2 delta)^2 + n (2 tau)^2`` (a bound on ``||x - x_0||^2``)."""
        return (2 * self.delta) ** 2 + self.n * (2 * self.tau) ** 2

    def __repr__(self) -> str:
        return f"DictionaryCodeSet(p={self.p}, r={self.r}, n={self.n}, delta={self.delta:g}, tau={self.tau:g})"


class DictionaryLearning(MinimaxProblem):
    r"""``min_{x=(D, Z) in X} max_{y in Delta_n} sum_i y_i (1/2) ||a_i - D z_i||^2`` (NC-C; see the module docstring).

    Gradients: with residuals ``e_i = a_i - D z_i`` (the columns of ``E = A - D Z``),
    ``grad_D f = -E diag(y) Z^T``, ``grad_{z_i} f = -y_i D^T e_i``, ``grad_y f = (l_i)_i``.

    Constants (bounds over X x Delta_n; ``||D||_2 <= ||D||_* <= delta``, ``||z_i||_2 <= ||z_i||_1 <= tau``, so
    ``||e_i|| <= E := max_i ||a_i|| + delta tau``):
    - ``L_xx = tau^2 + delta^2 + E``: the second derivative of ``l_i`` along ``(dD, dz)`` is
      ``||dD z_i + D dz||^2 - 2 e_i^T dD dz``, at most ``(tau^2 + delta^2 + E)(||dD||^2 + ||dz||^2)`` in absolute
      value, and ``sum_i y_i ||dz_i||^2 <= ||dZ||^2``;
    - ``L_xy = E (sqrt(n) tau + delta)``: ``||sum_i w_i grad l_i|| <= (sqrt(n) tau E + delta E) ||w||``, and the same
      bound holds for ``||l(x) - l(x')||``;
    - ``L_yy = mu_y = 0``.
    All three are multiplied by ``lipschitz_scale`` (1 = the bounds). ``measure_mu`` (optional) fixes the smoothing
    weight of the stationarity measure that :func:`run_method` records (see :meth:`_fw_gap`).
    """

    regime = "ncc"

    def __init__(self, A, start_dictionary, delta: float, tau: float, r: int, *, start_codes=None,
                 lipschitz_scale: float = 1.0,
                 measure_mu: float | None = None, name: str = "dictionary_learning"):
        A = np.asarray(A, dtype=float)
        if A.ndim != 2 or A.size == 0 or not np.all(np.isfinite(A)):
            raise ValueError(f"A must be a finite non-empty p x n matrix, got shape {A.shape}")
        self.A = A
        p, n = A.shape
        r = _count(r, "r")
        D0 = np.asarray(start_dictionary, dtype=float)
        if D0.shape != (p, r):
            raise ValueError(f"start_dictionary must have shape {(p, r)}, got {D0.shape}")
        Z0 = np.zeros((r, n)) if start_codes is None else np.asarray(start_codes, dtype=float)
        if Z0.shape != (r, n):
            raise ValueError(f"start_codes must have shape {(r, n)}, got {Z0.shape}")
        self.X = DictionaryCodeSet(p, r, n, delta, tau, np.concatenate([D0.ravel(), Z0.ravel()]))
        self.Y = Simplex(n)
        self.ybar = self.Y.center()
        scale = _positive(lipschitz_scale, "lipschitz_scale")
        E = float(np.linalg.norm(A, axis=0).max()) + self.X.delta * self.X.tau
        self.bounds = {"E": E, "L_xx": self.X.tau ** 2 + self.X.delta ** 2 + E,
                       "L_xy": E * (math.sqrt(n) * self.X.tau + self.X.delta)}
        self.lipschitz_scale = scale
        self.L_xx, self.L_xy = scale * self.bounds["L_xx"], scale * self.bounds["L_xy"]
        self.L_yy, self.mu_y = 0.0, 0.0
        self.measure_mu = None if measure_mu is None else _positive(measure_mu, "measure_mu")
        self.name = name

    def residuals(self, x) -> np.ndarray:
        """``E = A - D Z`` (p x n)."""
        D, Z = self.X.split(x)
        return self.A - D @ Z

    def losses(self, x) -> np.ndarray:
        """``l_i = (1/2) ||a_i - D z_i||^2``, i = 1..n."""
        R = self.residuals(x)
        return 0.5 * np.einsum("ij,ij->j", R, R)

    def objective(self, x) -> float:
        """``Phi(x) = max_i l_i(x)``, the worst reconstruction error."""
        return float(np.max(self.losses(self._check_x(x))))

    def grad_x(self, x, y):
        r"""``(-E diag(y) Z^T, -D^T E diag(y))`` as one flat vector."""
        D, Z = self.X.split(x)
        R = self.A - D @ Z
        Ry = R * y
        return self.X.join(-Ry @ Z.T, -(D.T @ Ry))

    def grad_y(self, x, y):
        """``(l_i(x))_i`` (f is linear in y)."""
        return self.losses(x)

    def value(self, x, y) -> float:
        """``sum_i y_i l_i(x)``."""
        return float(np.asarray(y) @ self.losses(x))

    def _smoothed_max(self, x, mu: float):
        return _smoothed_simplex_max(self.losses(x), self.ybar, mu)

    def smoothed_max(self, x, mu: float = 0.0):
        r"""``(Phi_mu(x), y*_mu(x))``: ``y*_mu = P_Delta(1/n + l(x)/mu)`` for ``mu > 0``, the vertex of the largest
        loss for ``mu = 0``."""
        return self._smoothed_max(self._check_x(x), self._check_mu(mu))

    def _fw_gap_at(self, x, mu: float) -> float:
        _, ystar = self._smoothed_max(x, mu)
        g = self.grad_x(x, ystar)
        return float(g @ (x - self.X._lmo(g)))

    def _fw_gap(self, x, mu: float) -> float:
        """The measure :func:`run_method` records: the FW gap of ``Phi_nu`` with ``nu = measure_mu`` when it is set
        (the same function for every method, whatever its own smoothing weight), else of ``Phi_mu``."""
        return self._fw_gap_at(x, mu if self.measure_mu is None else self.measure_mu)

    def fw_gap(self, x, mu: float = 0.0) -> float:
        r"""``max_{s in X} <grad Phi_mu(x), x - s>`` with ``grad Phi_mu(x) = grad_x f(x, y*_mu(x))`` (Danskin; for
        ``mu = 0`` one element of the subdifferential)."""
        return self._fw_gap_at(self._check_x(x), self._check_mu(mu))


def planted_data(p: int, r: int, n: int, s: int, noise: float, *, seed: int = 0):
    r"""Synthetic sparse-coding data with a planted dictionary, from ``numpy.random.default_rng(seed)``.

    Draws, in order: ``D*`` = standard normal p x r with columns normalised to unit length; per sample i, the
    support of ``z*_i`` (``s`` distinct atoms, ``rng.choice``), then its ``s`` magnitudes ``U(0.5, 1)`` and signs,
    scaled by ``1/s`` (so ``||z*_i||_1 <= 1``); the noise ``N(0, noise^2 / p)`` per entry (``E||noise_i||^2 =
    noise^2``); the start dictionary ``D_0`` (standard normal p x r) and start codes ``Z_0`` (standard normal
    r x n), both scaled later. Returns ``(A (p x n), D*, Z* (r x n), D_0, Z_0)``.
    """
    p, r, n, s = _count(p, "p"), _count(r, "r"), _count(n, "n"), _count(s, "s")
    if s > r:
        raise ValueError(f"s must be <= r, got s={s}, r={r}")
    if isinstance(noise, bool) or not math.isfinite(float(noise)) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    D_star = rng.standard_normal((p, r))
    D_star /= np.linalg.norm(D_star, axis=0)
    Z_star = np.zeros((r, n))
    for i in range(n):
        support = rng.choice(r, s, replace=False)
        mags = rng.uniform(0.5, 1.0, s)
        signs = rng.choice([-1.0, 1.0], s)
        Z_star[support, i] = signs * mags / s
    A = D_star @ Z_star + rng.standard_normal((p, n)) * (float(noise) / math.sqrt(p))
    D0 = rng.standard_normal((p, r))
    Z0 = rng.standard_normal((r, n))
    return A, D_star, Z_star, D0, Z0


def make_dictionary_problem(p: int, r: int, n: int, s: int, noise: float, *, seed: int = 0,
                            delta: float | None = None, tau: float = 1.0, lipschitz_scale: float = 1.0,
                            measure_mu: float | None = None) -> DictionaryLearning:
    """The robust dictionary-learning instance of ``seed``: :func:`planted_data`, ``delta = r`` unless given, and the
    start ``x_0 = (D_0, Z_0)`` scaled to the middle of the set: ``||D_0||_* = delta / 2``, every ``||z_i||_1 = tau / 2``."""
    A, _, _, D0, Z0 = planted_data(p, r, n, s, noise, seed=seed)
    delta = float(r) if delta is None else _positive(delta, "delta")
    tau = _positive(tau, "tau")
    D0 = D0 * (0.5 * delta / np.linalg.svd(D0, compute_uv=False).sum())
    Z0 = Z0 * (0.5 * tau / np.abs(Z0).sum(axis=0))
    return DictionaryLearning(A, D0, delta, tau, r, start_codes=Z0, lipschitz_scale=lipschitz_scale, measure_mu=measure_mu,
                              name=f"dictionary_learning(p={p}, r={r}, n={n}, s={s}, seed={seed})")


def atom_recovery(D: np.ndarray, D_star: np.ndarray, threshold: float = 0.9) -> float:
    """Fraction of the planted atoms (columns of ``D*``) that some learned column matches with
    ``|cos angle| >= threshold`` (zero columns match nothing)."""
    norms = np.linalg.norm(D, axis=0)
    keep = norms > 0
    if not keep.any():
        return 0.0
    C = np.abs((D[:, keep] / norms[keep]).T @ D_star)   # (learned x planted), D* columns have unit norm
    return float(np.mean(C.max(axis=0) >= threshold))

