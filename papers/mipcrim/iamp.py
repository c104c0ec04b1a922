"""Incremental approximate message passing (IAMP) for the SK energy (Montanari, arXiv 1812.10897), the paper's
own SK/GOE baseline (spec addendum: beta = 6, delta = 0.02, 3 restarts), re-implemented from its description.

Model: A symmetric, off-diagonal entries of variance 1/n, zero diagonal; the algorithm maximises s^T A s over
s in {-1, +1}^n. For a coupling J with off-diagonal variance v, A = J / sqrt(v n).

1. Edwards-Anderson order parameter q* of the replica-symmetric fixed point q = E[tanh^2(beta sqrt(q) Z)],
   Z ~ N(0, 1) (Gauss-Hermite quadrature; q* = 0 for beta <= 1).
2. Parisi PDE with the ansatz mu(t) = min(t / q*, 1), solved backwards from Phi(1, x) = log 2 cosh x:
   d_t Phi + (beta^2 / 2) (d_xx Phi + mu(t) (d_x Phi)^2) = 0; Crank-Nicolson for the diffusion, the nonlinear
   term explicit, d_xx Phi = 0 at the ends of the grid (Phi is asymptotically linear in |x|).
3. AMP with the incremental non-linearity, for k = 0 .. floor(q*/delta) - 1 (t_k = k delta):
   u^{k+1} = A (g^{k-1} o u^k) - b_k g^{k-2} o u^{k-1};
   x^{k+1} = x^k + beta^2 mu(t_k) d_x Phi(t_k, x^k) delta + beta sqrt(delta) u^k;
   g^k = sqrt(n) d_xx Phi(t_k, x^{k+1}) / ||d_xx Phi(t_k, x^{k+1})||;  b_{k+1} = mean(g^k) (Onsager term);
   z <- z + sqrt(delta) g^{k-1} o clip(u^k, -M, M);  u^0 = 0, u^1 ~ N(0, I), g^{-1} = 0, g^0 = 1, x^0 = 0.
4. Rounding: s = clip(z, -1, 1), then one sequential pass s_l <- sign(sum_{j != l} A_lj s_j) (ties to +1),
   which never decreases s^T A s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_banded
from scipy.optimize import brentq

__all__ = ["edwards_anderson_q", "ParisiSolution", "solve_parisi_pde", "iamp_trajectory", "sequential_rounding",
           "iamp"]


def edwards_anderson_q(beta: float, nodes: int = 200) -> float:
    """The root q in (0, 1) of q = E[tanh^2(beta sqrt(q) Z)] for beta > 1 (0 for beta <= 1)."""
    if not (math.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be a positive number, got {beta!r}")
    if beta <= 1.0:
        return 0.0
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()

    def resid(q):
        return float(np.sum(w * np.tanh(beta * math.sqrt(q) * z) ** 2)) - q

    return float(brentq(resid, 1e-9, 1.0 - 1e-12, xtol=1e-14))


@dataclass(frozen=True)
class ParisiSolution:
    """Phi and its x-derivatives on the grid ``xs`` at the times ``ts`` (rows)."""

    beta: float
    q_star: float
    ts: np.ndarray
    xs: np.ndarray
    dphi: np.ndarray
    d2phi: np.ndarray
    phi0: float   # Phi(0, 0)

    def mu(self, t: float) -> float:
        return 1.0 if self.q_star <= 0 else min(t / self.q_star, 1.0)

    def at(self, k: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(d_x Phi, d_xx Phi) at time ts[k], linear interpolation in x (constant beyond the grid)."""
        return np.interp(x, self.xs, self.dphi[k]), np.interp(x, self.xs, self.d2phi[k])


def solve_parisi_pde(beta: float, q_star: float, delta: float, *, x_max: float | None = None, nx: int = 801,
                     substeps: int = 80) -> ParisiSolution:
    """Solve the Parisi PDE (module docstring) backwards on [0, 1]; keep the solution at t = k delta."""
    if not (0 < delta <= 1):
        raise ValueError(f"delta must be in (0, 1], got {delta!r}")
    x_max = float(x_max if x_max is not None else 6.0 * beta + 6.0)
    xs = np.linspace(-x_max, x_max, nx)
    dx = xs[1] - xs[0]
    n_coarse = int(round(1.0 / delta))
    dt = delta / substeps
    D = beta ** 2 / 2.0
    r = D * dt / (2.0 * dx ** 2)
    ab = np.zeros((3, nx))
    ab[1, :] = 1.0 + 2.0 * r
    ab[0, 1:] = -r
    ab[2, :-1] = -r
    ab[1, 0] = ab[1, -1] = 1.0     # boundary rows: d_xx Phi = 0, Phi moves with the nonlinear term only
    ab[0, 1] = ab[2, -2] = 0.0

    def mu(t):
        return 1.0 if q_star <= 0 else min(t / q_star, 1.0)

    def lap(P):
        out = np.zeros_like(P)
        out[1:-1] = P[2:] - 2.0 * P[1:-1] + P[:-2]
        return out

    phi = np.logaddexp(xs, -xs)           # log 2 cosh x
    kept = {n_coarse: phi.copy()}
    for c in range(n_coarse - 1, -1, -1):
        for s in range(substeps):
            t = (c + 1) * delta - s * dt
            px = np.gradient(phi, dx)
            rhs = phi + r * lap(phi) + dt * D * mu(t) * px ** 2
            phi = solve_banded((1, 1), ab, rhs)
        kept[c] = phi.copy()
    ts = np.array([c * delta for c in range(n_coarse + 1)])
    P = np.stack([kept[c] for c in range(n_coarse + 1)])
    dphi = np.gradient(P, dx, axis=1)
    d2phi = np.gradient(dphi, dx, axis=1)
    return ParisiSolution(beta, q_star, ts, xs, dphi, d2phi, float(np.interp(0.0, xs, P[0])))


def iamp_trajectory(A: np.ndarray, pde: ParisiSolution, delta: float, *, m_clip: float = 5.0,
                    rng: np.random.Generator) -> np.ndarray:
    """One IAMP trajectory (step 3 of the module docstring); returns the continuous z in R^n."""
    n = A.shape[0]
    K = max(1, int(math.floor(pde.q_star / delta + 1e-9)))
    sq = math.sqrt(delta)
    u_prev, u = np.zeros(n), rng.standard_normal(n)
    g_prev2, g_prev = np.zeros(n), np.ones(n)
    b, x, z = 0.0, np.zeros(n), np.zeros(n)
    for k in range(K):
        u_next = A @ (g_prev * u) - b * (g_prev2 * u_prev)
        dphi, _ = pde.at(k, x)
        x = x + pde.beta ** 2 * pde.mu(k * delta) * dphi * delta + pde.beta * sq * u
        _, d2 = pde.at(k, x)
        nrm = float(np.linalg.norm(d2))
        g = math.sqrt(n) * d2 / nrm if nrm > 1e-14 else np.ones(n)
        z += sq * g_prev * np.clip(u, -m_clip, m_clip)
        b = float(np.mean(g))
        u_prev, u = u, u_next
        g_prev2, g_prev = g_prev, g
    return z


def sequential_rounding(A: np.ndarray, z: np.ndarray) -> np.ndarray:
    """s = clip(z, -1, 1); then for l = 1..n in order, s_l = sign(sum_{j != l} A_lj s_j) (ties to +1).

    Each update maximises s^T A s over s_l with the others fixed, so the objective never decreases."""
    s = np.clip(np.asarray(z, dtype=np.float64), -1.0, 1.0)
    diag = np.diag(A)
    for l in range(s.size):
        h = float(A[l] @ s) - diag[l] * s[l]
        s[l] = 1.0 if h >= 0.0 else -1.0
    return s.astype(np.int8)


def iamp(J: np.ndarray, *, beta: float = 6.0, delta: float = 0.02, restarts: int = 3, seed=0,
         m_clip: float = 5.0, pde: ParisiSolution | None = None) -> tuple[np.ndarray, np.ndarray]:
    """IAMP on E(s) = -1/2 s^T J s (J dense, symmetric, zero diagonal): ``restarts`` trajectories, each rounded.

    J is rescaled to off-diagonal variance 1/n (A = J / sqrt(v n), v the empirical off-diagonal variance), which
    leaves the minimisers unchanged. Returns (spins (n, restarts) int8, energies (restarts,) w.r.t. J)."""
    J = np.asarray(J, dtype=np.float64)
    if J.ndim != 2 or J.shape[0] != J.shape[1] or not np.allclose(J, J.T) or np.any(np.diag(J) != 0):
        raise ValueError("J must be a dense symmetric matrix with zero diagonal")
    if restarts < 1:
        raise ValueError(f"restarts must be >= 1, got {restarts!r}")
    n = J.shape[0]
    v = float(np.sum(J ** 2) / (n * (n - 1)))
    A = J / math.sqrt(v * n)
    if pde is None:
        pde = solve_parisi_pde(beta, edwards_anderson_q(beta), delta)
    rng = np.random.default_rng(seed)
    S = np.empty((n, int(restarts)), dtype=np.int8)
    for r in range(int(restarts)):
        S[:, r] = sequential_rounding(A, iamp_trajectory(A, pde, delta, m_clip=m_clip, rng=rng))
    Sf = S.astype(np.float64)
    return S, -0.5 * np.sum(Sf * (J @ Sf), axis=0)
