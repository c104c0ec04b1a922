"""Heterogeneous quadratic federation for federated multi-objective learning (float64).

Client i holds task losses f_{i,m}(x) = 1/2 (x - a_{i,m})^T H_{i,m} (x - a_{i,m}), i = 1..N, m = 1..M, with
grad f_{i,m}(x) = H_{i,m}(x - a_{i,m}). The global tasks are F_m = (1/N) sum_i f_{i,m}, so
grad F_m(x) = Hbar_m x - bbar_m with Hbar_m = mean_i H_{i,m}, bbar_m = mean_i H_{i,m} a_{i,m}. The Pareto set
is {(sum_m lam_m Hbar_m)^{-1} sum_m lam_m bbar_m : lam in Delta_M}, and Pareto stationarity is measured by
S(x) = min_{lam in Delta_M} ||sum_m lam_m grad F_m(x)||^2 (squared norm of MGDA's min-norm direction).
"""
from __future__ import annotations

import numpy as np

from papers.dream.aggregation import dream_weights

__all__ = ["QuadraticFederation", "LogQuadraticFederation"]


class QuadraticFederation:
    """N clients x M tasks of quadratics f_{i,m}(x) = 1/2 (x - a_{i,m})^T H_{i,m} (x - a_{i,m}).

    Parameters
    ----------
    hessians : array (N, M, d, d), symmetric positive definite blocks H_{i,m}.
    centers : array (N, M, d), the minimisers a_{i,m}.
    noise_std : float >= 0, the stochastic oracle adds noise_std * N(0, I_d) to every gradient call.
    """

    def __init__(self, hessians, centers, noise_std: float = 0.0):
        H = np.asarray(hessians, dtype=float)
        a = np.asarray(centers, dtype=float)
        if H.ndim != 4 or H.shape[2] != H.shape[3]:
            raise ValueError(f"hessians must have shape (N, M, d, d), got {H.shape}")
        N, M, d = H.shape[:3]
        if N < 1 or M < 1 or d < 1:
            raise ValueError(f"hessians need N >= 1, M >= 1, d >= 1, got shape {H.shape}")
        if a.shape != (N, M, d):
            raise ValueError(f"centers must have shape (N, M, d) = {(N, M, d)} to match hessians, got {a.shape}")
        if not np.all(np.isfinite(H)):
            raise ValueError("hessians must be finite (found NaN or Inf)")
        if not np.all(np.isfinite(a)):
            raise ValueError("centers must be finite (found NaN or Inf)")
        asym = np.abs(H - np.swapaxes(H, 2, 3)).max(axis=(2, 3))
        scale = np.maximum(np.abs(H).max(axis=(2, 3)), np.finfo(float).tiny)
        if np.any(asym > 1e-10 * scale):
            raise ValueError("hessians must be symmetric (relative tolerance 1e-10)")
        H = 0.5 * (H + np.swapaxes(H, 2, 3))
        if np.linalg.eigvalsh(H).min() <= 0:
            raise ValueError("hessians must be positive definite")
        noise_std = float(noise_std)
        if not np.isfinite(noise_std) or noise_std < 0:
            raise ValueError(f"noise_std must be a finite number >= 0, got {noise_std}")
        self.hessians, self.centers, self.noise_std = H, a, noise_std
        self.n_clients, self.n_tasks, self.dim = N, M, d
        self.Hb = np.einsum("nmij,nmj->nmi", H, a)               # H_{i,m} a_{i,m}
        self.H_bar = H.mean(axis=0)                              # (M, d, d)
        self.b_bar = self.Hb.mean(axis=0)                        # (M, d)

    # ------------------------------------------------------------------ construction
    @classmethod
    def random(cls, n_clients: int, n_tasks: int, dim: int, eig_range=(0.5, 5.0), center_offset: float = 3.0,
               heterogeneity: float = 2.0, iid: bool = False, noise_std: float = 0.0, seed: int = 0):
        """Random instance. rng = default_rng(seed); for i in 0..N-1, m in 0..M-1 (only i = 0 when ``iid``,
        copied to every client): Z ~ N(0,1)^{d x d}, Q R = qr(Z), Q <- Q sign(diag R);
        e = exp(U(log lo, log hi)^d); H = Q diag(e) Q^T; a = center_offset (-1)^m 1 + heterogeneity N(0, I)."""
        for name, v in (("n_clients", n_clients), ("n_tasks", n_tasks), ("dim", dim)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        lo, hi = (float(e) for e in eig_range)
        if not (0 < lo <= hi) or not np.isfinite(hi):
            raise ValueError(f"eig_range must be (lo, hi) with 0 < lo <= hi, got {eig_range}")
        rng = np.random.default_rng(seed)
        n_draw = 1 if iid else n_clients
        H = np.empty((n_draw, n_tasks, dim, dim))
        a = np.empty((n_draw, n_tasks, dim))
        for i in range(n_draw):
            for m in range(n_tasks):
                Q, R = np.linalg.qr(rng.standard_normal((dim, dim)))
                Q = Q * np.sign(np.diag(R))
                e = np.exp(rng.uniform(np.log(lo), np.log(hi), dim))
                H[i, m] = (Q * e) @ Q.T
                a[i, m] = center_offset * (-1.0) ** m * np.ones(dim) + heterogeneity * rng.standard_normal(dim)
        H = 0.5 * (H + np.swapaxes(H, 2, 3))
        if iid:
            H = np.repeat(H, n_clients, axis=0)
            a = np.repeat(a, n_clients, axis=0)
        return cls(H, a, noise_std=noise_std)

    # ------------------------------------------------------------------ oracles
    def task_gradients(self, x) -> np.ndarray:
        """Exact grad F_m(x) = Hbar_m x - bbar_m, shape (M, d)."""
        return self.H_bar @ np.asarray(x, dtype=float) - self.b_bar

    def client_gradients(self, y, clients, rng=None) -> np.ndarray:
        """grad f_{i,m}(y_i) (+ noise_std N(0, I_d) when ``rng`` is given), shape (len(clients), M, d);
        ``y`` has one row per listed client."""
        c = np.asarray(clients)
        if c.size == self.n_clients:   # all clients, in order (sample_clients returns them sorted)
            H, Hb = self.hessians, self.Hb
        else:
            H, Hb = self.hessians[c], self.Hb[c]
        g = (H @ np.asarray(y, dtype=float)[:, None, :, None])[..., 0] - Hb
        if rng is not None and self.noise_std > 0:
            g = g + self.noise_std * rng.standard_normal(g.shape)
        return g

    def batch_gradients(self, Y) -> np.ndarray:
        """Exact client gradients for a batch of replicas: Y (B, N, d), row (b, i) the point of client i in
        replica b -> (B, N, M, d) (no noise)."""
        return (self.hessians @ np.asarray(Y, dtype=float)[..., :, None, :, None])[..., 0] - self.Hb

    def pareto_stationarity(self, x) -> float:
        """S(x) = min_{lam in Delta} ||sum_m lam_m grad F_m(x)||^2 (squared)."""
        _, d = dream_weights(self.task_gradients(x))
        return float(d @ d)

    def scalarized_minimizer(self, w=None) -> np.ndarray:
        """argmin sum_m w_m F_m = (sum_m w_m Hbar_m)^{-1} sum_m w_m bbar_m (w uniform when None)."""
        w = np.full(self.n_tasks, 1.0 / self.n_tasks) if w is None else np.asarray(w, dtype=float)
        if w.shape != (self.n_tasks,) or np.any(w < 0) or abs(w.sum() - 1) > 1e-9:
            raise ValueError(f"w must be a point of the simplex of size {self.n_tasks}, got {w}")
        return np.linalg.solve(np.einsum("m,mij->ij", w, self.H_bar), w @ self.b_bar)


class LogQuadraticFederation(QuadraticFederation):
    """A smooth non-convex federation: f_{i,m}(x) = log(1 + q_{i,m}(x)), q_{i,m}(x) = 1/2 (x - a_{i,m})^T
    H_{i,m} (x - a_{i,m}), with the blocks of a :class:`QuadraticFederation` (same constructor and ``random``).

    grad f_{i,m}(x) = H_{i,m}(x - a_{i,m}) / (1 + q_{i,m}(x)). Each f_{i,m} is bounded below by 0 (attained at
    a_{i,m}), non-convex (concave along a line where q > 1, e.g. 1-D: f'' = h (1 - q) / (1 + q)^2), and its
    gradient is lambda_max(H_{i,m})-Lipschitz (the Hessian H/(1+q) - H u u^T H/(1+q)^2 has eigenvalues in
    [-lambda_max/8, lambda_max]). ``q -> log(1 + q)`` is increasing, so the Pareto-stationary set of the
    two-task IID federation is the quadratic one. The stochastic oracle adds noise_std * N(0, I_d) per call,
    exactly as the quadratic federation's. With ``iid=True`` every client holds the same objectives.
    """

    def _grad_blocks(self, Y, H, a):
        """grad f for a stack of points: Y (..., n, d) against H (n, M, d, d), a (n, M, d) -> (..., n, M, d)."""
        u = np.asarray(Y, dtype=float)[..., :, None, :] - a
        Hu = (H @ u[..., None])[..., 0]
        q = 0.5 * np.einsum("...i,...i->...", u, Hu)
        return Hu / (1.0 + q)[..., None]

    def task_values(self, x) -> np.ndarray:
        """F_m(x) = mean_i log(1 + q_{i,m}(x)), shape (M,)."""
        u = np.asarray(x, dtype=float)[None, None, :] - self.centers
        q = 0.5 * np.einsum("nmi,nmij,nmj->nm", u, self.hessians, u)
        return np.log1p(q).mean(axis=0)

    def task_gradients(self, x) -> np.ndarray:
        """Exact grad F_m(x) = mean_i grad f_{i,m}(x), shape (M, d)."""
        x = np.asarray(x, dtype=float)
        return self._grad_blocks(np.tile(x, (self.n_clients, 1)), self.hessians, self.centers).mean(axis=0)

    def client_gradients(self, y, clients, rng=None) -> np.ndarray:
        """grad f_{i,m}(y_i) (+ noise_std N(0, I_d) when ``rng`` is given), shape (len(clients), M, d)."""
        c = np.asarray(clients)
        g = self._grad_blocks(y, self.hessians[c], self.centers[c])
        if rng is not None and self.noise_std > 0:
            g = g + self.noise_std * rng.standard_normal(g.shape)
        return g

    def batch_gradients(self, Y) -> np.ndarray:
        """Exact client gradients for a batch of replicas: Y (B, N, d), row (b, i) the point of client i in
        replica b -> (B, N, M, d) (no noise)."""
        return self._grad_blocks(Y, self.hessians, self.centers)

    def smoothness(self) -> float:
        """L = max_{i,m} lambda_max(H_{i,m}), a Lipschitz constant of every grad f_{i,m}."""
        return float(np.linalg.eigvalsh(self.hessians).max())

    def scalarized_minimizer(self, w=None):
        raise NotImplementedError("the log-quadratic federation has no closed-form scalarised minimiser")
