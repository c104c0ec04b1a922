"""MiP-CRIM: Adam with projection on the local-minima-preserving relaxation (Banerjee et al. 2026, Algorithm 1).

The Ising problem :math:`\\min_{s\\in\\{\\pm1\\}^n} E(s) = -\\tfrac12 s^\\top J s` is relaxed (eq. 9) to

.. math::  \\min_{x \\in [-\\lambda, \\lambda]^n} H(x) = -\\tfrac12 x^\\top J x + \\sum_i f(x_i), \\qquad
           f(x) = \\tfrac{\\beta}{4} x^4 - \\tfrac{\\alpha}{2} x^2,

so :math:`\\nabla H(x) = \\beta x^3 - (J + \\alpha I) x`. With margin :math:`\\gamma(J)` (Prop. 3.4) the quartic
attractor is admissible iff :math:`3\\beta\\lambda^2 < \\alpha < \\beta\\lambda^2 + \\gamma` (Def. 3.6), and then the
local minima of :math:`H` on the box are exactly :math:`\\lambda \\times` the one-flip minima of :math:`E`
(Thm. 3.13). A corner :math:`y = \\lambda s` is a strict local minimum iff :math:`y_i\\,\\partial_i H(y) < 0` for all
:math:`i` (Lemma B.3).

Algorithm 1 (as the reference code ``mip_crim.py``): ``K`` epochs of ``T`` projected Adam steps
(:math:`\\beta_1 = 0.09`, :math:`\\beta_2 = 0.999`, :math:`\\epsilon = 10^{-8}`, moments reset every epoch), rounding
:math:`s = \\mathrm{sign}(x)` (sign(0) = +1), the strict corner test, and a restart from
:math:`N(\\lambda s, \\sigma I)` (:math:`\\sigma` is a variance). A field :math:`h` is removed by the homogenisation of
App. A: :math:`\\hat J = [[J, h], [h^\\top, 0]]`, :math:`s^\\star = t_0 s_0`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .problems import ising_energy, sync_score

__all__ = ["MipCrimResult", "TuneResult", "mip_crim", "mip_crim_batch", "admissible_alpha_range", "check_coupling",
           "tune_mip_crim", "RETURN_POLICIES"]

RETURN_POLICIES = ("best_seen", "one_flip_only")


@dataclass(frozen=True)
class MipCrimResult:
    """Output of :func:`mip_crim`.

    ``spins`` int8 (n,); ``energy`` :math:`E` w.r.t. ``J, h`` as passed; ``sync`` fraction of spins aligned with
    their local field; ``is_one_flip_minimum`` (sync == 1); ``n_passed_epochs`` epochs whose rounded corner passed
    the strict corner test; ``energy_trace`` (epochs,) energy of each epoch's rounded spins; ``seconds`` wall time
    (for a batch: the batch's wall time divided by its number of runs); ``fallback`` True when
    ``return_policy='one_flip_only'`` found no passing epoch and returned the best seen instead.
    """

    spins: np.ndarray
    energy: float
    sync: float
    is_one_flip_minimum: bool
    n_passed_epochs: int
    energy_trace: np.ndarray
    seconds: float
    fallback: bool = False


def admissible_alpha_range(beta: float, lam: float, gamma: float) -> tuple[float, float]:
    """Open interval of admissible :math:`\\alpha` for the quartic attractor: :math:`(3\\beta\\lambda^2,
    \\beta\\lambda^2 + \\gamma)` (Def. 3.6 with :math:`f'(\\lambda) < 0 < f'(\\lambda) + \\lambda\\gamma`).

    Raises ValueError if any input is not positive or if the interval is empty
    (:math:`\\lambda^2 \\ge \\gamma / (2\\beta)`).
    """
    for nm, v in (("beta", beta), ("lam", lam), ("gamma", gamma)):
        _positive(v, nm)
    lo, hi = 3.0 * beta * lam ** 2, beta * lam ** 2 + gamma
    if not lo < hi:
        raise ValueError(f"empty admissible interval: 3*beta*lam^2 = {lo:g} >= beta*lam^2 + gamma = {hi:g}; "
                         f"need lam^2 < gamma/(2*beta) = {gamma / (2 * beta):g}")
    return lo, hi


def _positive(v, name: str) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    return arr


def check_coupling(J, *, name: str = "J"):
    """Validate a coupling: square, finite, symmetric (:math:`|J - J^\\top| \\le 10^{-12}\\max|J|`), zero diagonal.

    A ``scipy.sparse.linalg.LinearOperator`` is only checked for squareness (it must be symmetric).
    Dense inputs are returned as float64 arrays and sparse ones as CSR.
    """
    if isinstance(J, LinearOperator):
        if J.shape[0] != J.shape[1]:
            raise ValueError(f"{name} must be square, got shape {J.shape}")
        return J
    if sp.issparse(J):
        J = sp.csr_matrix(J, dtype=np.float64)
        if J.shape[0] != J.shape[1]:
            raise ValueError(f"{name} must be square, got shape {J.shape}")
        if not np.all(np.isfinite(J.data)):
            raise ValueError(f"{name} contains NaN or Inf")
        scale = float(abs(J).max()) if J.nnz else 0.0
        asym = float(abs(J - J.T).max()) if J.nnz else 0.0
        diag = J.diagonal()
    else:
        J = np.asarray(J, dtype=np.float64)
        if J.ndim != 2 or J.shape[0] != J.shape[1]:
            raise ValueError(f"{name} must be square, got shape {J.shape}")
        if not np.all(np.isfinite(J)):
            raise ValueError(f"{name} contains NaN or Inf")
        scale = float(np.abs(J).max()) if J.size else 0.0
        asym = float(np.abs(J - J.T).max()) if J.size else 0.0
        diag = np.diag(J)
    if asym > 1e-12 * scale:
        raise ValueError(f"{name} must be symmetric (max |J - J^T| = {asym:g})")
    if np.any(diag != 0):
        raise ValueError(f"{name} must have a zero diagonal: the diagonal only shifts every energy by -tr(J)/2; "
                         f"remove it (np.fill_diagonal(J, 0)) before calling and add the constant back yourself")
    return J


def _augment(J, h):
    """Homogenised coupling :math:`\\hat J = [[J, h], [h^\\top, 0]]` (App. A)."""
    n = J.shape[0]
    if isinstance(J, LinearOperator):
        def mv(x):
            x = np.asarray(x, dtype=np.float64)
            top = J @ x[:n] + (np.outer(h, x[n]) if x.ndim == 2 else h * x[n])
            return np.concatenate([top, (h @ x[:n])[None]], axis=0)
        return LinearOperator((n + 1, n + 1), matvec=mv, matmat=mv, rmatvec=mv, dtype=np.float64)
    if sp.issparse(J):
        hc = sp.csr_matrix(h.reshape(-1, 1))
        return sp.bmat([[J, hc], [hc.T, None]], format="csr")
    out = np.zeros((n + 1, n + 1))
    out[:n, :n] = J
    out[:n, n] = h
    out[n, :n] = h
    return out


def _validate_common(sigma, epochs, inner_steps, return_policy, adam_beta1, adam_beta2, adam_eps):
    if not np.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be finite and >= 0 (a variance), got {sigma!r}")
    for nm, v in (("epochs", epochs), ("inner_steps", inner_steps)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{nm} must be an integer >= 1, got {v!r}")
    if return_policy not in RETURN_POLICIES:
        raise ValueError(f"return_policy must be one of {RETURN_POLICIES}, got {return_policy!r}")
    if not 0 <= adam_beta1 < 1 or not 0 <= adam_beta2 < 1:
        raise ValueError("adam_beta1 and adam_beta2 must lie in [0, 1)")
    _positive(adam_eps, "adam_eps")


def _run(J, *, alpha, beta, lam, tau, sigma, epochs, inner_steps, rngs, b1, b2, eps, batched):
    """Core loop. ``J`` homogeneous (n, n); params scalars (single) or (R,) arrays (batched, one column each)."""
    n = J.shape[0]
    R = len(rngs)
    if batched:
        x_in = np.empty((n, R))
        for c, r in enumerate(rngs):
            x_in[:, c] = r.standard_normal(n)
    else:
        x_in = rngs[0].standard_normal(n)
    sd = np.sqrt(sigma)
    shape = (R,) if batched else ()
    trace = np.empty((epochs,) + shape)
    passed_all = np.zeros((epochs,) + shape, dtype=bool)
    best_seen_E = np.full(shape, np.inf)
    best_seen_s = np.ones_like(x_in, dtype=np.int8)
    best_pass_E = np.full(shape, np.inf)
    best_pass_s = np.ones_like(x_in, dtype=np.int8)
    corner_thr = beta * lam ** 2 - alpha          # y_i dH_i(y) < 0  <=>  s_i (Js)_i > beta lam^2 - alpha
    for k in range(epochs):
        x = x_in.copy()
        m = np.zeros_like(x)
        v = np.zeros_like(x)
        for t in range(1, inner_steps + 1):
            # g = beta x^3 - J x - alpha x, then the Adam update, computed in place
            g = x * x
            g *= x
            g *= beta
            g -= J @ x
            g -= alpha * x
            m *= b1
            m += (1.0 - b1) * g
            g *= g
            v *= b2
            v += (1.0 - b2) * g
            c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
            den = v / c2
            np.sqrt(den, out=den)
            den += eps
            step = m / c1
            step *= tau
            step /= den
            x -= step
            np.clip(x, -lam, lam, out=x)
        s = np.where(x >= 0, 1.0, -1.0)
        Js = np.asarray(J @ s)
        sJs = s * Js
        E = -0.5 * sJs.sum(axis=0)
        # strict corner test of Lemma B.3 at y = lam*s: y*(beta y^3 - J y - alpha y) = lam^2 (beta lam^2 - s Js - alpha)
        passed = np.all(lam ** 2 * (corner_thr - sJs) < 0, axis=0)
        trace[k] = E
        passed_all[k] = passed
        s8 = s.astype(np.int8)
        better = E < best_seen_E
        best_seen_E = np.where(better, E, best_seen_E)
        best_seen_s = np.where(better, s8, best_seen_s)
        pbetter = passed & (E < best_pass_E)
        best_pass_E = np.where(pbetter, E, best_pass_E)
        best_pass_s = np.where(pbetter, s8, best_pass_s)
        y = lam * s
        if batched:
            for c, r in enumerate(rngs):
                x_in[:, c] = r.normal(y[:, c], sd)
        else:
            x_in = rngs[0].normal(y, sd)
    return trace, passed_all, best_seen_s, best_pass_s


def _finish(Jin, h, n, trace, passed, seen_s, pass_s, policy, seconds):
    npass = int(passed.sum())
    fallback = False
    s = seen_s
    if policy == "one_flip_only":
        if npass:
            s = pass_s
        else:
            fallback = True
    s = s.astype(np.int8)
    if h is not None:
        s = (s[:n] * s[n]).astype(np.int8)
    energy = ising_energy(Jin, s, h)
    sync = sync_score(Jin, s, h)
    return MipCrimResult(spins=s, energy=energy, sync=sync, is_one_flip_minimum=bool(sync == 1.0),
                         n_passed_epochs=npass, energy_trace=np.asarray(trace, dtype=np.float64), seconds=seconds,
                         fallback=fallback)


def _prepare(J, h):
    J = check_coupling(J)
    n = J.shape[0]
    if h is not None:
        h = np.asarray(h, dtype=np.float64).ravel()
        if h.shape[0] != n:
            raise ValueError(f"h must have length {n} (the number of spins), got {h.shape[0]}")
        if not np.all(np.isfinite(h)):
            raise ValueError("h contains NaN or Inf")
        return J, h, _augment(J, h)
    return J, None, J


def mip_crim(J, *, alpha, beta, lam, tau, sigma=1e-3, epochs=200, inner_steps=10, seed=0, h=None,
             adam_beta1=0.09, adam_beta2=0.999, adam_eps=1e-8, return_policy="best_seen") -> MipCrimResult:
    """Run MiP-CRIM (Algorithm 1) on :math:`E(s) = -\\tfrac12 s^\\top J s - h^\\top s`.

    Parameters: ``J`` symmetric with zero diagonal (ndarray, scipy sparse, or symmetric LinearOperator);
    ``alpha, beta`` of the attractor :math:`f(x) = \\beta x^4/4 - \\alpha x^2/2`; ``lam`` box half-width; ``tau`` Adam
    step; ``sigma`` restart variance; ``epochs`` K; ``inner_steps`` T; ``seed`` for ``numpy.random.default_rng``
    (an int or a SeedSequence); ``return_policy`` ``'best_seen'`` (reference code: lowest energy over all epochs)
    or ``'one_flip_only'`` (Algorithm 1: best among epochs passing the strict corner test, falling back to
    best-seen with ``fallback=True``). Admissibility (:func:`admissible_alpha_range`) is not enforced.
    """
    for nm, v in (("alpha", alpha), ("beta", beta), ("lam", lam), ("tau", tau)):
        _positive(v, nm)
    _validate_common(sigma, epochs, inner_steps, return_policy, adam_beta1, adam_beta2, adam_eps)
    Jin, h, Jrun = _prepare(J, h)
    t0 = time.perf_counter()
    out = _run(Jrun, alpha=float(alpha), beta=float(beta), lam=float(lam), tau=float(tau), sigma=float(sigma),
               epochs=int(epochs), inner_steps=int(inner_steps), rngs=[np.random.default_rng(seed)],
               b1=adam_beta1, b2=adam_beta2, eps=adam_eps, batched=False)
    return _finish(Jin, h, Jin.shape[0], *out, return_policy, time.perf_counter() - t0)


def mip_crim_batch(J, *, alpha, beta, lam, tau, seeds, sigma=1e-3, epochs=200, inner_steps=10, h=None,
                   adam_beta1=0.09, adam_beta2=0.999, adam_eps=1e-8, return_policy="best_seen"
                   ) -> list[MipCrimResult]:
    """Independent MiP-CRIM runs batched as columns of an (n, R) array (matrix-matrix products).

    Column ``c`` uses ``default_rng(seeds[c])`` and draws exactly what :func:`mip_crim` with that seed would;
    ``alpha, beta, lam, tau`` are scalars or length-R sequences (one value per run). Matrix-matrix and
    matrix-vector products may differ in the last bit, so results need not be bitwise equal to :func:`mip_crim`.
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must be a non-empty sequence")
    R = len(seeds)
    params = {}
    for nm, v in (("alpha", alpha), ("beta", beta), ("lam", lam), ("tau", tau)):
        arr = np.broadcast_to(_positive(v, nm), (R,)).astype(np.float64) if np.ndim(v) == 0 else _positive(v, nm)
        if arr.shape != (R,):
            raise ValueError(f"{nm} must be a scalar or have one value per seed ({R}), got shape {arr.shape}")
        params[nm] = arr
    _validate_common(sigma, epochs, inner_steps, return_policy, adam_beta1, adam_beta2, adam_eps)
    Jin, h, Jrun = _prepare(J, h)
    t0 = time.perf_counter()
    trace, passed, seen, pas = _run(Jrun, **params, sigma=float(sigma), epochs=int(epochs),
                                    inner_steps=int(inner_steps), rngs=[np.random.default_rng(s) for s in seeds],
                                    b1=adam_beta1, b2=adam_beta2, eps=adam_eps, batched=True)
    sec = (time.perf_counter() - t0) / R
    return [_finish(Jin, h, Jin.shape[0], trace[:, c], passed[:, c], seen[:, c], pas[:, c], return_policy, sec)
            for c in range(R)]


@dataclass(frozen=True)
class TuneResult:
    """Output of :func:`tune_mip_crim`: best parameters, their run, and one history row per run."""

    params: dict
    result: MipCrimResult
    history: list = field(default_factory=list)


def _refine(G: np.ndarray, b: int, res: int) -> np.ndarray:
    if b == 0:
        return np.linspace(max(1e-6, G[0] / 2), G[0], res)
    if b == len(G) - 1:
        return np.linspace(G[b], 2 * G[b], res)
    return np.linspace(G[b - 1], G[b + 1], res)


def tune_mip_crim(J, *, res=3, rounds=10, tau0=1.0, gamma0=0.1, beta0=10.0, epochs=200, inner_steps=10,
                  sigma=1e-3, seed=0, h=None) -> TuneResult:
    """Adaptive grid refinement of (tau, gamma, beta, lam, alpha) of App. E and the reference notebook.

    Start ``Steps = linspace(0, tau0, res)[1:]``, ``Gamma = linspace(0, gamma0, res)[1:]``,
    ``Beta = linspace(0, beta0, res)[1:]``. Each round runs, for every (tau, gamma, beta),
    :math:`\\lambda \\in \\mathrm{linspace}(0, \\sqrt{\\gamma/2\\beta}, res)[1:]` and
    :math:`\\alpha \\in \\mathrm{linspace}(3\\beta\\lambda^2, \\beta\\lambda^2 + \\gamma, res)`; keeps the lowest-energy
    cell and refines each axis around its index ``b``: ``b = 0`` -> ``linspace(max(1e-6, G0/2), G0, res)``,
    ``b = last`` -> ``linspace(Gb, 2 Gb, res)``, else ``linspace(G[b-1], G[b+1], res)``. Run seeds come from one
    ``SeedSequence(seed)`` (spawned in order); every round is one batched call.
    """
    if isinstance(res, bool) or int(res) != res or res < 2:
        raise ValueError(f"res must be an integer >= 2, got {res!r}")
    if isinstance(rounds, bool) or int(rounds) != rounds or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    for nm, v in (("tau0", tau0), ("gamma0", gamma0), ("beta0", beta0)):
        _positive(v, nm)
    root = np.random.SeedSequence(seed)
    steps = np.linspace(0, tau0, res)[1:]
    gammas = np.linspace(0, gamma0, res)[1:]
    betas = np.linspace(0, beta0, res)[1:]
    best, history = None, []
    for rnd in range(int(rounds)):
        cells = []
        for it, tau in enumerate(steps):
            for ig, g in enumerate(gammas):
                for ib, b in enumerate(betas):
                    lam0 = np.sqrt(g / (2 * b))
                    for lam in np.linspace(0, lam0, res)[1:]:
                        for alpha in np.linspace(3 * b * lam ** 2, b * lam ** 2 + g, res):
                            cells.append((it, ig, ib, float(tau), float(g), float(b), float(lam), float(alpha)))
        cols = np.array([c[3:] for c in cells])
        runs = mip_crim_batch(J, alpha=cols[:, 4], beta=cols[:, 2], lam=cols[:, 3], tau=cols[:, 0],
                              seeds=root.spawn(len(cells)), sigma=sigma, epochs=epochs, inner_steps=inner_steps,
                              h=h)
        energies = np.array([r.energy for r in runs])
        k = int(np.argmin(energies))
        for c, r in zip(cells, runs):
            history.append({"round": rnd, "tau": c[3], "gamma": c[4], "beta": c[5], "lam": c[6], "alpha": c[7],
                            "energy": r.energy, "sync": r.sync})
        if best is None or energies[k] < best[1].energy:
            it, ig, ib, tau, g, b, lam, alpha = cells[k]
            best = ({"tau": tau, "gamma": g, "beta": b, "lam": lam, "alpha": alpha, "round": rnd}, runs[k])
        it, ig, ib = cells[k][:3]
        gammas, betas, steps = _refine(gammas, ig, res), _refine(betas, ib, res), _refine(steps, it, res)
    return TuneResult(params=best[0], result=best[1], history=history)
