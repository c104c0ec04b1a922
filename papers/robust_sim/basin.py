"""Radius of the convex basin of the population squared loss around beta* (Theorem 3.1, reconstructed).

Population loss L(w) = (1/2) E (f(x^T w) - y)^2 with x ~ N(0, I_d), y = f(x^T beta*) + zeta (zeta independent
of x, mean 0). Its Hessian is

    H(w) = E[h x x^T],   h = f'(s)^2 + (f(s) - f(z)) f''(s),   s = x^T w,  z = x^T beta*

(the noise drops out because E zeta = 0). With e1 = w/||w||, e2 the unit vector of span(w, beta*) orthogonal
to e1 and g_i = x^T e_i (independent N(0, 1)), s = ||w|| g1 and z = cos(theta) g1 + sin(theta) g2, so

    H(w) = E[h] (I - e1 e1^T - e2 e2^T) + sum_{i,j <= 2} E[h g_i g_j] e_i e_j^T,

and lambda_min(H(w)) = min(E h, lambda_min of the 2 x 2 block) for d >= 3: it depends only on the plane of w
and beta*, never on d. The basin radius is R = sup{rho : lambda_min(H(w)) > 0 for all ||w - beta*|| <= rho},
found by scanning directions w = beta* + rho (cos psi beta* + sin psi beta_perp), psi in [0, pi] (the other
half-plane is the mirror image). When lambda_min(H(beta*)) <= 0 no ball around beta* qualifies and R = 0.
Expectations by two-dimensional Gauss-Hermite quadrature; f'' by a central difference of f' (step 1e-5). This is
the population radius: the theorem's radius for the empirical loss at a finite n cannot be larger.

``STEP_LINK`` (f = 1{z > 0}, f' = 0 almost everywhere) lies outside Theorem 3.1's class (E f'(Z)^2 = 0): h = 0
on every quadrature node, H(w) = 0, and R = 0. The basin experiment runs it as the negative control of the
radius claim.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from ._validate import check_int, check_positive
from .links import Link, get_link

__all__ = ["STEP_LINK", "hessian_min_eig", "basin_radius"]

STEP_LINK = Link("step", lambda z: (np.asarray(z, dtype=float) > 0).astype(float),
                 lambda z: np.zeros_like(np.asarray(z, dtype=float)), False)

_FD_STEP = 1e-5


def _nodes(n_nodes: int):
    z, w = hermegauss(int(n_nodes))
    w = w / math.sqrt(2.0 * math.pi)
    g1, g2 = np.meshgrid(z, z, indexing="ij")
    return g1, g2, np.outer(w, w)


def _as_link(link: str | Link) -> Link:
    return link if isinstance(link, Link) else get_link(link)


def hessian_min_eig(link: str | Link, w_plane, n_nodes: int = 60) -> float:
    """lambda_min of the population Hessian H(w) (module docstring) at w = a beta* + b beta_perp,
    ``w_plane`` = (a, b) (a non-zero 2-vector); ``link`` a name of :func:`links.get_link` or a ``Link``."""
    lk = _as_link(link)
    n_nodes = check_int(n_nodes, "n_nodes", 10)
    wp = np.asarray(w_plane, dtype=float)
    if wp.shape != (2,) or not np.all(np.isfinite(wp)) or np.linalg.norm(wp) == 0:
        raise ValueError(f"w_plane must be a finite non-zero 2-vector, got {w_plane!r}")
    g1, g2, wts = _nodes(n_nodes)
    r = float(np.linalg.norm(wp))
    e1 = wp / r
    cos_t, sin_t = e1[0], -e1[1]  # beta* = (1, 0) = cos(theta) e1 + sin(theta) e2 with e2 = (-e1[1], e1[0])
    s, z = r * g1, cos_t * g1 + sin_t * g2
    d2f = (lk.df(s + _FD_STEP) - lk.df(s - _FD_STEP)) / (2.0 * _FD_STEP)
    h = lk.df(s) ** 2 + (lk.f(s) - lk.f(z)) * d2f
    e_h = float(np.sum(wts * h))
    b11, b12, b22 = (float(np.sum(wts * h * a)) for a in (g1 * g1, g1 * g2, g2 * g2))
    return min(e_h, float(np.linalg.eigvalsh(np.array([[b11, b12], [b12, b22]]))[0]))


def basin_radius(link: str | Link, *, n_dirs: int = 31, step: float = 0.02, n_bisect: int = 8,
                 rho_max: float = 2.0, n_nodes: int = 60) -> dict:
    """Population convexity radius R of ``link`` (module docstring): 0 when lambda_min(H(beta*)) <= 0;
    otherwise, for each of ``n_dirs`` directions psi in [0, pi], scan rho = step, 2 step, ... up to the smallest
    crossing found so far (at first ``rho_max``) for the first rho with lambda_min(H) <= 0, then bisect
    ``n_bisect`` times. Returns {"radius": R (rho_max when no crossing), "psi": the direction of the nearest
    crossing (None when there is none, or R = 0), "h_star": lambda_min(H(beta*))}."""
    link = _as_link(link)
    n_dirs = check_int(n_dirs, "n_dirs", 2)
    n_bisect = check_int(n_bisect, "n_bisect", 0)
    step = check_positive(step, "step")
    rho_max = check_positive(rho_max, "rho_max")
    h_star = hessian_min_eig(link, [1.0, 0.0], n_nodes)
    if h_star <= 0:
        return {"radius": 0.0, "psi": None, "h_star": h_star}
    best, best_psi = rho_max, None
    for psi in np.linspace(0.0, math.pi, n_dirs):
        u = np.array([math.cos(psi), math.sin(psi)])
        lam = lambda rho: hessian_min_eig(link, np.array([1.0, 0.0]) + rho * u, n_nodes)  # noqa: E731
        lo, hi = 0.0, None
        while lo < best:
            rho = min(lo + step, best)  # the last point checked is the smallest crossing found so far
            if lam(rho) <= 0:
                hi = rho
                break
            lo = rho
        if hi is None:
            continue
        for _ in range(n_bisect):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if lam(mid) > 0 else (lo, mid)
        best, best_psi = hi, float(psi)
    return {"radius": float(best), "psi": best_psi, "h_star": h_star}
