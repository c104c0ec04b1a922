"""GOMA and its baselines for monotone variational inequalities F(z*) = 0.

Every method is written once, as a generator of iterates ``z_0, z_1, ..., z_N`` that uses only ``+``, ``-``,
multiplication by a scalar and calls of the oracle ``F``. The same code therefore runs on numpy arrays
(one point of shape (d,) or a batch (S, d) of stochastic trajectories) and on PEPit points
(:mod:`papers.goma.pep`). Step sizes are given in absolute units (a step ``0.5/L`` is ``0.5 / problem.L``).

GOMA-D [reconstructed; spec "Method"], with g_{-1} = F(z_0) (one initial oracle call)::

    beta_k  = 1/(k+2)                       (Halpern anchor weight)
    base_k  = z_k + beta_k (z_0 - z_k)
    zt_k    = base_k - gamma g_{k-1}        (optimistic extrapolation with the last oracle value)
    g_k     = F(zt_k)                       (the only oracle call of iteration k)
    z_{k+1} = base_k - eta g_k,             eta <= gamma (two time scales)

Baselines (spec "Baselines"): EG (Korpelevich 1976), OG / Popov / past-EG (Popov 1980), EAG-C (Yoon & Ryu,
ICML 2021), FEG (Lee & Kim, NeurIPS 2021), anchored Popov, and the three further baselines the paper names:
E-Halpern (Cai, Song, Guzman & Diakonikolas, NeurIPS 2022, with the exact operator), RAIN++ (Chen & Luo 2022:
RAIN on the saddle envelope; deterministic reconstruction ``rain_pp_recon``), RAIN itself (the monotone method
that RAIN++ extends) and a Nesterov-type accelerated extragradient (the momentum form of anchored EG,
Tran-Dinh 2022); and the stochastic SGDA, SEG, SOG, DSEG
(Hsieh et al., NeurIPS 2020) and the S-AGD ablation. Each is coded plainly and separately from GOMA, so that
the identities "GOMA with these flags is that baseline" compare two independent implementations.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from shared.oracles import CallCounter

__all__ = [
    "DETERMINISTIC_METHODS", "STOCHASTIC_METHODS", "ANCHORS", "EXTRAPOLATE_WITH", "DIVERGENCE_FACTOR",
    "DeterministicTrace", "StochasticTrace", "resolve_steps", "iterates", "goma_momentum_iterates",
    "run_deterministic", "run_stochastic", "VARIANTS", "variant_kwargs", "run_variant", "theorem4_iterates",
    "run_theorem4", "theorem4_bound", "THM1_STEP", "THM1_STEP_BOUND", "THM2_GAMMA", "THM2_ETA", "THM2_GAMMA_BOUND",
    "e_halpern_steps", "rain_schedule", "E_HALPERN_M", "RAIN_LAMBDA0", "RAIN_PP_ENVELOPE", "RAIN_PP_INNER",
    "RAIN_PP_INNER_STEP", "envelope_grad",
]

DETERMINISTIC_METHODS = ("goma", "anchored_popov", "og", "eg", "eag_c", "feg", "e_halpern", "rain", "rain_pp_recon",
                         "nesterov_eg")
STOCHASTIC_METHODS = ("s_goma", "s_agd", "sgda", "seg", "sog", "dseg")
ANCHORS = ("k+2", "k+1", "2/(k+6)", "none")
EXTRAPOLATE_WITH = ("past", "current")
DIVERGENCE_FACTOR = 1e20  # a run stops when h_k > DIVERGENCE_FACTOR * h_0 or h_k is not finite

# Default steps in units of 1/L (spec "Method" and "Baselines").
_DEFAULT_STEPS = {
    "goma": {"gamma": 0.5, "eta": 0.4},
    "anchored_popov": {"step": 0.5},
    "og": {"step": 0.5},
    "eg": {"step": 0.5},
    "eag_c": {"step": 1.0 / 8.0},
    "feg": {"step": 1.0},
    "e_halpern": {"step": 1.0 / 6.0},   # eta_1 = 1/(2 sqrt(M)) with M = 9 L^2 (our choice; M eta_1^2 < 1 is needed)
    "rain": {"step": 0.5},              # inner EG step 0.5/(L + mu_s) (our choice inside EG's range 1/(L + mu_s))
    "rain_pp_recon": {"step": 0.5},     # RAIN's stage steps 0.5/(L_env + mu_s) on the envelope, L_env = 2 L
    "nesterov_eg": {"step": 0.25},      # alpha = 0.25/L (our choice; see _nesterov_eg_iterates)
}
_FLAG_DEFAULTS = {"anchor": "k+2", "damp_extrapolation": False, "extrapolate_with": "past"}


# ----------------------------------------------------------------------------------------------- helpers
def _constant(value: float) -> Callable[[int], float]:
    return lambda k: value


def _schedule(step) -> Callable[[int], float]:
    """A step given as a number or as a function k -> step_k."""
    return step if callable(step) else _constant(float(step))


def _anchor_weight(anchor: str) -> Callable[[int], float]:
    """beta_k of the anchor schedule: 1/(k+2), 1/(k+1), 2/(k+6) (the paper's Theorem 1) or 0."""
    if anchor == "k+2":
        return lambda k: 1.0 / (k + 2)
    if anchor == "k+1":
        return lambda k: 1.0 / (k + 1)
    if anchor == "2/(k+6)":
        return lambda k: 2.0 / (k + 6)
    return _constant(0.0)


def _check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return value


def _check_n_iter(n_iter) -> int:
    if isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 0:
        raise ValueError(f"n_iter must be a non-negative integer, got {n_iter!r}")
    return int(n_iter)


# ------------------------------------------------------------------------------------ the iterate generators
def _goma_iterates(F, z0, n_iter, gamma, eta, anchor="k+2", damp_extrapolation=False, extrapolate_with="past"):
    """GOMA family: anchored (two-time-scale) optimistic steps; yields z_0, ..., z_N.

    ``gamma`` and ``eta`` are numbers or schedules k -> step. With ``extrapolate_with="current"`` the
    extrapolation uses F(z_k) (two calls per iteration, no initial call); with ``damp_extrapolation`` the
    extrapolation step is (1 - beta_k) gamma_k. At k = 0 the anchor term beta_0 (z_0 - z_0) vanishes.
    """
    gamma, eta, beta = _schedule(gamma), _schedule(eta), _anchor_weight(anchor)
    past = extrapolate_with == "past"
    g = F(z0) if past else None  # g_{-1} = F(z_0): one oracle call
    z = z0
    yield z
    for k in range(n_iter):
        b = beta(k)
        base = z if (b == 0.0 or k == 0) else z + b * (z0 - z)
        if not past:
            g = F(z)
        coef = (1.0 - b) * gamma(k) if damp_extrapolation else gamma(k)
        zt = base if coef == 0.0 else base - coef * g
        g = F(zt)
        z = base - eta(k) * g
        yield z


def _anchored_popov_iterates(F, z0, n_iter, step):
    """Anchored Popov: zt = z + (z0 - z)/(k+2) - a g_{k-1}; g_k = F(zt); z+ = z + (z0 - z)/(k+2) - a g_k."""
    a = _schedule(step)
    g_prev = F(z0)
    z = z0
    yield z
    for k in range(n_iter):
        anchored = z + (z0 - z) / (k + 2) if k > 0 else z
        g_prev = F(anchored - a(k) * g_prev)
        z = anchored - a(k) * g_prev
        yield z


def _og_iterates(F, z0, n_iter, step):
    """OG / Popov / past-EG: zt_k = z_k - a g_{k-1}; g_k = F(zt_k); z_{k+1} = z_k - a g_k; g_{-1} = F(z_0)."""
    a = _schedule(step)
    g_prev = F(z0)
    z = z0
    yield z
    for k in range(n_iter):
        g_prev = F(z - a(k) * g_prev)
        z = z - a(k) * g_prev
        yield z


def _eg_iterates(F, z0, n_iter, explore, update=None):
    """EG (Korpelevich): zh = z_k - a F(z_k); z_{k+1} = z_k - b F(zh), with b = a unless ``update`` is given
    (DSEG: a larger exploration step than update step)."""
    a = _schedule(explore)
    b = a if update is None else _schedule(update)
    z = z0
    yield z
    for k in range(n_iter):
        zh = z - a(k) * F(z)
        z = z - b(k) * F(zh)
        yield z


def _eag_c_iterates(F, z0, n_iter, step):
    """EAG-C (Yoon & Ryu 2021), beta_k = 1/(k+2):
    zh = z_k + beta_k (z_0 - z_k) - alpha F(z_k);  z_{k+1} = z_k + beta_k (z_0 - z_k) - alpha F(zh)."""
    alpha = float(step)
    z = z0
    yield z
    for k in range(n_iter):
        beta = 1.0 / (k + 2)
        zh = z + beta * (z0 - z) - alpha * F(z)
        z = z + beta * (z0 - z) - alpha * F(zh)
        yield z


def _feg_iterates(F, z0, n_iter, step):
    """FEG (Lee & Kim 2021, monotone case), beta_k = 1/(k+1), step = 1/L:
    zh = z_k + beta_k (z_0 - z_k) - (1 - beta_k) step F(z_k);  z_{k+1} = z_k + beta_k (z_0 - z_k) - step F(zh)."""
    a = float(step)
    z = z0
    yield z
    for k in range(n_iter):
        beta = 1.0 / (k + 1)
        zh = z + beta * (z0 - z) - (1.0 - beta) * a * F(z)
        z = z + beta * (z0 - z) - a * F(zh)
        yield z


E_HALPERN_M = 9.0  # M = 9 L^2 in E-Halpern's step recursion (Cai et al. 2022)


def e_halpern_steps(eta1: float, L: float, n: int) -> list:
    """E-Halpern's step sequence eta_1, ..., eta_n (Cai et al. 2022), with M = 9 L^2 and k = 1, 2, ...:

        eta_{k+1} = eta_k (1 - 1/(k+1)^2 - M eta_k^2) (k+1)^2 / ((1 - M eta_k^2) k (k+2)).

    It decreases and stays positive when M eta_1^2 < 1 (raises ValueError otherwise)."""
    M_ = E_HALPERN_M * float(L) ** 2
    if not M_ * eta1 * eta1 < 1.0:
        raise ValueError(f"E-Halpern needs 9 L^2 eta_1^2 < 1, got eta_1 = {eta1} with L = {L}")
    etas = [float(eta1)]
    for k in range(1, n):
        e = etas[-1]
        etas.append(e * (1.0 - 1.0 / (k + 1) ** 2 - M_ * e * e) * (k + 1) ** 2 / ((1.0 - M_ * e * e) * k * (k + 2)))
    return etas


def _e_halpern_iterates(F, z0, n_iter, step, L=1.0):
    """E-Halpern, the extrapolated (past-gradient) Halpern iteration of Cai, Song, Guzman & Diakonikolas
    ("Stochastic Halpern iteration with variance reduction for stochastic monotone inclusions", NeurIPS 2022)
    for Lipschitz monotone F, here with the exact operator in place of its variance-reduced estimator.
    With lambda_k = 1/(k+1), u_1 = v_0 = z_0 and k = 1, 2, ... (our iterate z_j is u_{j+1}):

        v_k     = lambda_k u_0 + (1 - lambda_k) u_k - eta_k F(v_{k-1})
        u_{k+1} = lambda_k u_0 + (1 - lambda_k) u_k - eta_k F(v_k)

    with eta_k from :func:`e_halpern_steps` (eta_1 = ``step``). One oracle call per iteration plus F(v_0).
    """
    etas = e_halpern_steps(float(step), L, max(n_iter, 1))
    g = F(z0)  # F(v_0), v_0 = z_0
    z = z0
    yield z
    for j in range(n_iter):
        lam, eta = 1.0 / (j + 2), etas[j]
        base = z if j == 0 else lam * z0 + (1.0 - lam) * z
        g = F(base - eta * g)
        z = base - eta * g
        yield z


RAIN_LAMBDA0 = 2.0  # lambda_0 = 2 L / n_iter (see rain_schedule)


def rain_schedule(n_iter: int, L: float, step: float = 0.5) -> list:
    """Stages (lambda_s, mu_s, inner step a_s, inner iterations N_s) of the deterministic RAIN of
    :func:`_rain_iterates` for a horizon of ``n_iter`` EG iterations.

    lambda_0 = 2 L / n_iter, lambda_s = 2^s lambda_0, mu_s = lambda_0 (2^{s+1} - 1) (the strong monotonicity
    of stage s), S = max(1, ceil(log2(L / lambda_0))) stages, a_s = step / (L + mu_s), and N_s proportional to
    the stage's condition number (L + mu_s) / mu_s, summing to n_iter (the last stage takes the remainder).
    The horizon and this allocation are ours (RAIN sets them from the target accuracy); the factor 2 in lambda_0
    was picked from {1, 2, 4, 8, 16, 32} (with step factors 0.5 and 1) as the best overall on P1-P3 and the 5x5
    game at horizons 2e3 and 1e4, so that the baseline is not handicapped by our schedule."""
    n_iter, L = int(n_iter), float(L)
    if n_iter < 1:
        return []
    lam0 = RAIN_LAMBDA0 * L / n_iter
    S = max(1, math.ceil(math.log2(L / lam0))) if L > lam0 else 1
    mus = [lam0 * (2.0 ** (s + 1) - 1.0) for s in range(S)]
    weights = [(L + mu) / mu for mu in mus]
    counts = [int(n_iter * w / sum(weights)) for w in weights]
    counts[-1] = n_iter - sum(counts[:-1])
    return [(lam0 * 2.0 ** s, mu, step / (L + mu), n) for s, (mu, n) in enumerate(zip(mus, counts))]


def _rain_iterates(F, z0, n_iter, step, L=1.0):
    """RAIN, Recursive Anchored IteratioN (Chen & Luo, "Near-optimal algorithms for making the gradient small
    in stochastic minimax optimization", 2022), monotone case, with deterministic EG as the stage solver in
    place of Epoch-SEG. Stage s (anchors z^(0) = z_0, ..., z^(s), the stage starts) solves the strongly
    monotone problem

        F_s(z) = F(z) + sum_{j<=s} lambda_j (z - z^(j)) = F(z) + mu_s (z - c_s),
        c_s = sum_{j<=s} lambda_j z^(j) / mu_s,   lambda_j = 2^j lambda_0,

    by N_s EG iterations zh = z - a_s F_s(z), z+ = z - a_s F_s(zh) from z^(s); its last iterate is z^(s+1).
    Schedule: :func:`rain_schedule` (tied to the horizon ``n_iter``, so the trajectory is not anytime).
    Two oracle calls per iteration. RAIN++ (the same recursion on the saddle envelope, for comonotone problems)
    is :func:`_rain_pp_iterates`."""
    z = z0
    yield z
    weighted = None
    for lam, mu, a, n in rain_schedule(n_iter, L, float(step)):
        weighted = lam * z if weighted is None else weighted + lam * z
        c = (1.0 / mu) * weighted
        for _ in range(n):
            zh = z - a * (F(z) + mu * (z - c))
            z = z - a * (F(zh) + mu * (zh - c))
            yield z


RAIN_PP_ENVELOPE = 2.0    # the saddle envelope's parameter lambda = 2 L (Chen & Luo's f_{2L})
RAIN_PP_INNER = 2         # warm-started EG steps per envelope-gradient estimate (ours)
RAIN_PP_INNER_STEP = 0.25  # their step, in units of 1/L (ours; the subproblem is 3L-Lipschitz)


def envelope_grad(F, x, w, lam: float, inner: int, inner_step: float):
    """Estimate of the saddle envelope's gradient at ``x`` (the Yosida approximation of F with parameter 1/lam),

        F_lam(x) = lam (x - J(x)),   J(x) the zero of G_x(v) = F(v) + lam (v - x),   F_lam(x) = F(J(x)),

    from ``inner`` EG steps v_h = v - b G_x(v), v+ = v - b G_x(v_h) (b = ``inner_step``) started at ``w`` (warm
    start). Returns (lam (x - v), v); 2 * inner oracle calls. For L-Lipschitz F and lam = 2L, G_x is L-strongly
    monotone (lam - L) and 3L-Lipschitz, so v -> J(x); F_lam is 2L-Lipschitz (||F(J x) - F(J x')|| <= L ||J x - J x'||,
    J 2-Lipschitz), and monotone when F is rho-comonotone with rho >= -1/lam."""
    v = w
    for _ in range(int(inner)):
        vh = v - inner_step * (F(v) + lam * (v - x))
        v = v - inner_step * (F(vh) + lam * (vh - x))
    return lam * (x - v), v


def _rain_pp_iterates(F, z0, n_iter, step, L=1.0, inner=RAIN_PP_INNER, inner_step=None):
    """RAIN++ (Chen & Luo 2022), deterministic reconstruction: RAIN (:func:`_rain_iterates`, the same stage
    recursion and :func:`rain_schedule`) run on the saddle envelope of parameter lambda = 2L, whose gradient
    F_lam(z) = lam (z - J(z)) is estimated by :func:`envelope_grad` (``inner`` EG steps on the proximal
    subproblem, warm-started at the previous estimate of the proximal point). Stage s, anchors z^(j):

        g   = F_lam(z);   zh = z - a_s (g + mu_s (z - c_s));   gh = F_lam(zh);   z+ = z - a_s (gh + mu_s (zh - c_s)),

    with a_s = step/(L_env + mu_s), L_env = 2L. One *iteration* here is one inner EG step (2 oracle calls), so
    that a horizon of ``n_iter`` iterations spends 2 n_iter calls like EG and RAIN: there are n_iter // (2 inner)
    outer steps (the schedule is set for them), the iterate reported after each inner step is the current outer
    iterate z (held until the outer step completes), and leftover inner steps refine J(z) at the last z.
    ||F(z)|| <= (1 + L/lam) ||F_lam(z)|| = 1.5 ||F_lam(z)|| at the exact proximal point.

    Not reproduced: the multilevel Monte Carlo estimator of the envelope gradient (it removes the bias of the
    inexact proximal point under stochastic noise; with the exact operator our estimate is deterministic) and
    the paper's inner accuracies (ours: a fixed ``inner`` warm-started steps)."""
    L = float(L)
    lam = RAIN_PP_ENVELOPE * L
    b = RAIN_PP_INNER_STEP / L if inner_step is None else float(inner_step)
    per_outer = 2 * int(inner)
    n_outer = n_iter // per_outer
    z, w = z0, z0
    yield z
    done, weighted = 0, None
    for lmb, mu, a, n in rain_schedule(n_outer, RAIN_PP_ENVELOPE * L, float(step)):
        weighted = lmb * z if weighted is None else weighted + lmb * z
        c = (1.0 / mu) * weighted
        for _ in range(n):
            for _ in range(inner):
                _, w = envelope_grad(F, z, w, lam, 1, b)
                yield z
            g = lam * (z - w)
            zh = z - a * (g + mu * (z - c))
            for j in range(inner):
                _, w = envelope_grad(F, zh, w, lam, 1, b)
                if j < inner - 1:
                    yield z
            gh = lam * (zh - w)
            z = z - a * (gh + mu * (zh - c))
            yield z
            done += per_outer
    for _ in range(n_iter - done):
        _, w = envelope_grad(F, z, w, lam, 1, b)
        yield z


def _nesterov_eg_iterates(F, z0, n_iter, step):
    """Nesterov-type accelerated extragradient: anchored EG (beta_k = 1/(k+2)) in momentum form, never using
    z_0 after the first step (the Halpern/Nesterov correspondence of Tran-Dinh, "The connection between
    Nesterov's accelerated methods and Halpern fixed-point iterations", 2022; Tran-Dinh & Luo 2021):

        m_0 = z_0;  m_k = z_k + k/(k+2) (z_k - z_{k-1}) + (k+1)/(k+2) alpha F(zh_{k-1})   (k >= 1)
        zh_k = m_k - alpha F(z_k);   z_{k+1} = m_k - alpha F(zh_k).

    Two oracle calls per iteration. Algebraically m_k = z_k + (z_0 - z_k)/(k+2), so with alpha = 1/(8L) it
    is EAG-C; we run it with alpha = 0.25/L (our choice; EAG-C's proof covers alpha <= 1/(8L))."""
    alpha = float(step)
    z_prev, z, gh = None, z0, None
    yield z
    for k in range(n_iter):
        m = z if k == 0 else z + (k / (k + 2)) * (z - z_prev) + ((k + 1) / (k + 2) * alpha) * gh
        gh = F(m - alpha * F(z))
        z_prev, z = z, m - alpha * gh
        yield z


def _gda_iterates(F, z0, n_iter, step, anchor="none"):
    """(Anchored) gradient descent-ascent: z_{k+1} = z_k + beta_k (z_0 - z_k) - eta_k F(z_k).
    SGDA with anchor "none"; the S-AGD ablation with anchor "k+2"."""
    eta, beta = _schedule(step), _anchor_weight(anchor)
    z = z0
    yield z
    for k in range(n_iter):
        b = beta(k)
        base = z if (b == 0.0 or k == 0) else z + b * (z0 - z)
        z = base - eta(k) * F(z)
        yield z


def goma_momentum_iterates(F, z0, n_iter, gamma, eta):
    """GOMA-D (beta_k = 1/(k+2), constant steps) in momentum ("Nesterov") form, which never uses z_0 after
    the first step:  m_0 = z_0;  m_k = z_k + k/(k+2) (z_k - z_{k-1}) + (k+1)/(k+2) eta g_{k-1} (k >= 1);
    zt_k = m_k - gamma g_{k-1};  g_k = F(zt_k);  z_{k+1} = m_k - eta g_k.  Yields z_0, ..., z_N.

    Algebraically equal to the anchored form: m_k = z_k + (z_0 - z_k)/(k+2).
    """
    g = F(z0)
    z_prev, z = None, z0
    yield z
    for k in range(n_iter):
        m = z if k == 0 else z + (k / (k + 2)) * (z - z_prev) + ((k + 1) / (k + 2)) * eta * g
        g = F(m - gamma * g)
        z_prev, z = z, m - eta * g
        yield z


def resolve_steps(method: str, L: float, *, gamma=None, eta=None, step=None, anchor="k+2",
                  damp_extrapolation=False, extrapolate_with="past", allow_eta_gt_gamma=False) -> dict:
    """Validate the arguments of a deterministic method and return its resolved parameters.

    Steps left as None take the defaults (in units of 1/L): GOMA gamma = 0.5/L, eta = 0.4/L; anchored Popov,
    OG and EG 0.5/L; EAG-C 1/(8L); FEG 1/L; E-Halpern eta_1 = 1/(6L) (must be < 1/(3L)); Nesterov-type EG
    0.25/L; RAIN the factor 0.5 of its stage steps 0.5/(L + mu_s) (at most 1), RAIN++ the same factor of
    0.5/(2L + mu_s) on the envelope (its inner solver: RAIN_PP_INNER steps of RAIN_PP_INNER_STEP/L). ``gamma``/``eta`` and the three flags apply to "goma" only;
    ``step`` to the other methods. Raises ValueError naming the offending argument.
    """
    if method not in DETERMINISTIC_METHODS:
        raise ValueError(f"method must be one of {list(DETERMINISTIC_METHODS)}, got {method!r}")
    L = _check_positive(L, "L")
    flags = {"anchor": anchor, "damp_extrapolation": damp_extrapolation, "extrapolate_with": extrapolate_with}
    if method != "goma":
        changed = [k for k, v in flags.items() if v != _FLAG_DEFAULTS[k]]
        if changed:
            raise ValueError(f"{', '.join(changed)} appl{'ies' if len(changed) == 1 else 'y'} to method='goma' "
                             f"only, not to method={method!r}")
        for name, value in (("gamma", gamma), ("eta", eta)):
            if value is not None:
                raise ValueError(f"{name} applies to method='goma' only; use step= for method={method!r}")
        if method in ("rain", "rain_pp_recon"):  # the factor c of the stage steps c/(L + mu_s)
            c = _DEFAULT_STEPS[method]["step"] if step is None else _check_positive(step, "step")
            if c > 1.0:
                raise ValueError(f"step must be <= 1 for method={method!r} (stage steps step/(L + mu_s)), got {c}")
            if method == "rain_pp_recon":
                return {"step": c, "L": L, "inner": RAIN_PP_INNER, "inner_step": RAIN_PP_INNER_STEP / L}
            return {"step": c, "L": L}
        a = _DEFAULT_STEPS[method]["step"] / L if step is None else _check_positive(step, "step")
        if method == "e_halpern":
            if not E_HALPERN_M * (a * L) ** 2 < 1.0:
                raise ValueError(f"step (eta_1) must be < 1/(3L) for method='e_halpern', got {a} with L = {L}")
            return {"step": a, "L": L}
        return {"step": a}
    if step is not None:
        raise ValueError("step does not apply to method='goma'; use gamma= and eta=")
    if anchor not in ANCHORS:
        raise ValueError(f"anchor must be one of {list(ANCHORS)}, got {anchor!r}")
    if extrapolate_with not in EXTRAPOLATE_WITH:
        raise ValueError(f"extrapolate_with must be one of {list(EXTRAPOLATE_WITH)}, got {extrapolate_with!r}")
    if not isinstance(damp_extrapolation, (bool, np.bool_)):
        raise ValueError(f"damp_extrapolation must be True or False, got {damp_extrapolation!r}")
    g = _DEFAULT_STEPS["goma"]["gamma"] / L if gamma is None else _check_positive(gamma, "gamma")
    e = _DEFAULT_STEPS["goma"]["eta"] / L if eta is None else _check_positive(eta, "eta")
    if e > g and not allow_eta_gt_gamma:
        raise ValueError(f"eta must be <= gamma for method='goma' (got eta={e}, gamma={g}); pass "
                         "allow_eta_gt_gamma=True to explore that region")
    return {"gamma": g, "eta": e, "anchor": anchor, "damp_extrapolation": bool(damp_extrapolation),
            "extrapolate_with": extrapolate_with}


def iterates(method: str, F, z0, n_iter: int, params: dict):
    """Generator of the iterates z_0, ..., z_N of a deterministic method with resolved ``params``
    (see :func:`resolve_steps`). ``F`` is the oracle; it may be a numpy operator or a PEPit gradient."""
    if method == "goma":
        return _goma_iterates(F, z0, n_iter, params["gamma"], params["eta"], params["anchor"],
                              params["damp_extrapolation"], params["extrapolate_with"])
    if method in ("e_halpern", "rain"):
        builder = _e_halpern_iterates if method == "e_halpern" else _rain_iterates
        return builder(F, z0, n_iter, params["step"], params["L"])
    if method == "rain_pp_recon":
        return _rain_pp_iterates(F, z0, n_iter, params["step"], params["L"], params["inner"], params["inner_step"])
    builder = {"anchored_popov": _anchored_popov_iterates, "og": _og_iterates, "eg": _eg_iterates,
               "eag_c": _eag_c_iterates, "feg": _feg_iterates, "nesterov_eg": _nesterov_eg_iterates}[method]
    return builder(F, z0, n_iter, params["step"])


# ------------------------------------------------------------------------------------------------ traces
@dataclass
class DeterministicTrace:
    """Result of :func:`run_deterministic`.

    grad_norm_sq[k] = ||F(z_k)||^2 (n_iter+1 entries; inf after a divergence); oracle_calls[k] = cumulative
    oracle calls after k iterations, including the initial call; z_last = last computed iterate; params =
    resolved steps and flags; diverged_at = first k with h_k not finite or > 1e20 h_0, else None.
    """

    method: str
    grad_norm_sq: np.ndarray
    oracle_calls: np.ndarray
    z_last: np.ndarray
    params: dict
    diverged_at: Optional[int] = None

    @property
    def calls_per_iter(self) -> float:
        """Oracle calls per iteration, excluding the initial call (from the call counter)."""
        n = len(self.oracle_calls) - 1
        return float(self.oracle_calls[-1] - self.oracle_calls[0]) / n if n > 0 else 0.0


@dataclass
class StochasticTrace:
    """Result of :func:`run_stochastic`.

    mean_grad_norm_sq[k] and mean_dist_sq[k]: means over the n_runs trajectories of ||F(z_k)||^2 (exact F) and
    ||z_k - z*||^2; grad_norm_sq_runs: the per-trajectory values, shape (n_runs, n_iter+1); oracle_calls:
    cumulative calls per trajectory; diverged_at as in :class:`DeterministicTrace`.
    """

    method: str
    mean_grad_norm_sq: np.ndarray
    mean_dist_sq: np.ndarray
    oracle_calls: np.ndarray
    n_runs: int
    diverged_at: Optional[int] = None
    grad_norm_sq_runs: np.ndarray = field(default=None, repr=False)
    params: dict = field(default_factory=dict)
    dist_sq_runs: np.ndarray = field(default=None, repr=False)  # (n_runs, n_iter+1), run_theorem4 only


def _check_problem_z0(problem) -> np.ndarray:
    z0 = np.asarray(problem.z0, dtype=float)
    if z0.shape != (problem.dim,) or not np.all(np.isfinite(z0)):
        raise ValueError(f"z0 must be a finite array of shape ({problem.dim},)")
    return z0


def run_deterministic(method: str, problem, n_iter: int, *, gamma=None, eta=None, step=None, anchor="k+2",
                      damp_extrapolation=False, extrapolate_with="past",
                      allow_eta_gt_gamma=False) -> DeterministicTrace:
    """Run a deterministic method for ``n_iter`` iterations and monitor h_k = ||F(z_k)||^2 at every iterate.

    Methods: "goma" (GOMA-D and its family, see the module docstring; flags ``anchor`` in {"k+2", "k+1",
    "none"}, ``damp_extrapolation``, ``extrapolate_with`` in {"past", "current"}), "anchored_popov", "og",
    "eg", "eag_c", "feg", "e_halpern", "rain", "rain_pp_recon", "nesterov_eg". Oracle calls are counted by a :class:`shared.oracles.CallCounter` around the operator
    the method sees; monitoring uses the bare operator and is not counted. A run that diverges (h_k not
    finite or > 1e20 h_0) stops, sets ``diverged_at = k`` and fills h from k on with inf.
    """
    n_iter = _check_n_iter(n_iter)
    params = resolve_steps(method, problem.L, gamma=gamma, eta=eta, step=step, anchor=anchor,
                           damp_extrapolation=damp_extrapolation, extrapolate_with=extrapolate_with,
                           allow_eta_gt_gamma=allow_eta_gt_gamma)
    z0 = _check_problem_z0(problem)
    operator = problem.operator
    oracle = CallCounter(operator)
    h = np.full(n_iter + 1, np.inf)
    calls = np.zeros(n_iter + 1, dtype=np.int64)
    diverged_at, limit, z = None, None, z0
    for k, z in enumerate(iterates(method, oracle, z0, n_iter, params)):
        Fz = operator(z)
        hk = float(Fz @ Fz)
        calls[k] = oracle.calls
        if k == 0:
            limit = DIVERGENCE_FACTOR * hk if hk > 0 else DIVERGENCE_FACTOR
        if not math.isfinite(hk) or hk > limit:
            diverged_at = k
            calls[k:] = oracle.calls
            break
        h[k] = hk
    return DeterministicTrace(method=method, grad_norm_sq=h, oracle_calls=calls, z_last=np.array(z, dtype=float),
                              params=params, diverged_at=diverged_at)


def _stochastic_iterates(method, F, Z0, n_iter, L, eta0):
    """The six stochastic methods on a batch Z0 (S, d); F draws one fresh sample per row and call."""
    sqrt_step = lambda k: eta0 / (L * math.sqrt(k + 1))  # noqa: E731
    goma_step = lambda k: eta0 / (L * (k + 1) ** 0.75)  # noqa: E731
    if method == "s_goma":
        return _goma_iterates(F, Z0, n_iter, goma_step, goma_step, "k+2", False, "past")
    if method == "s_agd":
        return _gda_iterates(F, Z0, n_iter, goma_step, anchor="k+2")
    if method == "sgda":
        return _gda_iterates(F, Z0, n_iter, sqrt_step, anchor="none")
    if method == "seg":
        return _eg_iterates(F, Z0, n_iter, sqrt_step)
    if method == "sog":
        return _og_iterates(F, Z0, n_iter, sqrt_step)
    return _eg_iterates(F, Z0, n_iter, lambda k: eta0 / (L * (k + 1) ** (1 / 3)),
                        lambda k: eta0 / (L * (k + 1) ** (2 / 3)))


def run_stochastic(method: str, problem, n_iter: int, *, n_runs: int, seed, eta0: float = 0.5) -> StochasticTrace:
    """Run a stochastic method on ``n_runs`` trajectories at once (an (S, d) array), one sample per call.

    Schedules (eta0 = 0.5 by default; beta_k = 1/(k+2)):
      s_goma  GOMA loop, gamma_k = eta_k = eta0/(L (k+1)^{3/4}), g_{-1} one sample at z_0 [reconstructed];
      s_agd   z_{k+1} = z_k + beta_k (z_0 - z_k) - eta_k F(z_k; xi), S-GOMA's eta_k (ablation, no optimism);
      sgda    z_{k+1} = z_k - eta_k F(z_k; xi), eta_k = eta0/(L sqrt(k+1));
      seg     EG with two independent samples, both steps eta0/(L sqrt(k+1));
      sog     OG with gamma_k = eta_k = eta0/(L sqrt(k+1));
      dseg    EG with exploration eta0/(L (k+1)^{1/3}) and update eta0/(L (k+1)^{2/3}) (Hsieh et al. 2020).
    ``seed`` (int, SeedSequence or Generator) gives the one generator that serves all trajectories. The means
    over trajectories of ||F(z_k)||^2 (exact F, not counted) and ||z_k - z*||^2 are recorded at every k.
    """
    if method not in STOCHASTIC_METHODS:
        raise ValueError(f"method must be one of {list(STOCHASTIC_METHODS)}, got {method!r}")
    n_iter = _check_n_iter(n_iter)
    if isinstance(n_runs, bool) or not isinstance(n_runs, (int, np.integer)) or n_runs < 1:
        raise ValueError(f"n_runs must be an integer >= 1, got {n_runs!r}")
    eta0 = _check_positive(eta0, "eta0")
    if problem.sample is None:
        raise ValueError(f"problem {problem.name!r} has no stochastic oracle (its sample is None)")
    z0 = _check_problem_z0(problem)
    rng = np.random.default_rng(seed)
    sample = problem.sample
    oracle = CallCounter(lambda z: sample(z, rng))
    operator, z_star = problem.operator, np.asarray(problem.z_star)
    Z0 = np.tile(z0, (int(n_runs), 1))
    h_runs = np.full((n_iter + 1, int(n_runs)), np.inf)
    dist = np.full(n_iter + 1, np.inf)
    calls = np.zeros(n_iter + 1, dtype=np.int64)
    diverged_at, limit = None, None
    for k, Z in enumerate(_stochastic_iterates(method, oracle, Z0, n_iter, problem.L, eta0)):
        Fz = operator(Z)
        hk = np.einsum("ij,ij->i", Fz, Fz)
        D = Z - z_star
        mean_h = float(hk.mean())
        calls[k] = oracle.calls
        if k == 0:
            limit = DIVERGENCE_FACTOR * mean_h if mean_h > 0 else DIVERGENCE_FACTOR
        if not math.isfinite(mean_h) or mean_h > limit:
            diverged_at = k
            calls[k:] = oracle.calls
            break
        h_runs[k] = hk
        dist[k] = float(np.einsum("ij,ij->", D, D)) / n_runs
    return StochasticTrace(method=method, mean_grad_norm_sq=h_runs.mean(axis=1), mean_dist_sq=dist,
                           oracle_calls=calls, n_runs=int(n_runs), diverged_at=diverged_at,
                           grad_norm_sq_runs=np.ascontiguousarray(h_runs.T), params={"eta0": eta0})


# ------------------------------------------------------------------------- the paper's schedules (addendum)
THM1_STEP = 0.25  # Theorem 1 needs a constant step eta in (0, 1/(2 sqrt(3) L)) = (0, 0.2887/L)
THM2_GAMMA, THM2_ETA = 0.14, 0.10  # Theorem 2: exploration gamma < (1/(3L)) sqrt(5/26) = 0.1462/L
THM1_STEP_BOUND = 1.0 / (2.0 * math.sqrt(3.0))
THM2_GAMMA_BOUND = math.sqrt(5.0 / 26.0) / 3.0

# Named deterministic variants: (method, keyword arguments with steps in units of 1/L).
VARIANTS = {
    "goma_t1": ("goma", {"anchor": "2/(k+6)", "gamma": THM1_STEP, "eta": THM1_STEP}),
    "goma_t1_noanchor": ("goma", {"anchor": "none", "gamma": THM1_STEP, "eta": THM1_STEP}),
    "goma_t1_bigstep": ("goma", {"anchor": "2/(k+6)", "gamma": 1.0, "eta": 1.0}),
    "goma_t2": ("goma", {"anchor": "2/(k+6)", "gamma": THM2_GAMMA, "eta": THM2_ETA}),
    "goma_t2_noanchor": ("goma", {"anchor": "none", "gamma": THM2_GAMMA, "eta": THM2_ETA}),
    "goma_recon": ("goma", {}),
    **{m: (m, {}) for m in DETERMINISTIC_METHODS if m != "goma"},
}
_STEP_KEYS = ("gamma", "eta", "step")


def variant_kwargs(name: str, L: float) -> tuple[str, dict]:
    """(method, keyword arguments of :func:`run_deterministic`) of a named variant on a problem with constant L.

    ``goma_t1``: Theorem 1 ("Case I"): beta_k = 2/(k+6), gamma = eta = 0.25/L (< 1/(2 sqrt 3 L));
    ``goma_t2``: Theorem 2 ("Case II"): beta_k = 2/(k+6), exploration gamma = 0.14/L (< sqrt(5/26)/(3L)),
    update eta = 0.10/L [the update step of Case II is reconstructed]; ``*_noanchor``: the same steps with
    beta_k = 0 (the control); ``goma_t1_bigstep``: the Theorem 1 schedule with gamma = eta = 1/L, outside the
    theorem's range (a control); ``goma_recon``: the spec's earlier reconstruction (beta_k = 1/(k+2),
    gamma = 0.5/L, eta = 0.4/L); any other name is a baseline with its default step.
    """
    if name not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, got {name!r}")
    L = _check_positive(L, "L")
    method, kwargs = VARIANTS[name]
    return method, {k: (v / L if k in _STEP_KEYS else v) for k, v in kwargs.items()}


def run_variant(name: str, problem, n_iter: int) -> DeterministicTrace:
    """:func:`run_deterministic` of a named variant (see :func:`variant_kwargs`)."""
    method, kwargs = variant_kwargs(name, problem.L)
    kwargs.setdefault("allow_eta_gt_gamma", name == "goma_t1_bigstep")
    return run_deterministic(method, problem, n_iter, **kwargs)


def theorem4_iterates(G, z0, n_iter, L: float, kappa: float, anchor: bool = True):
    """Simplified single-call GOMA of the paper's Theorem 4 (gamma_k = 0); yields x_0, ..., x_N:

        y_k = beta_k x_0 + (1 - beta_k) x_k,   x_{k+1} = y_k - eta_k G(y_k, xi_k, k),
        beta_k = 1/(k+2),   eta_k = 1 / (L sqrt(kappa) (k+2)^{3/4}).

    ``G(y, k)`` returns one stochastic sample per row (``k`` lets it grow a minibatch). ``anchor=False``
    sets beta_k = 0 (the control: the same steps without the anchor).
    """
    scale = 1.0 / (L * math.sqrt(kappa))
    x = z0
    yield x
    for k in range(n_iter):
        y = x + (z0 - x) / (k + 2) if (anchor and k > 0) else x
        x = y - (scale / (k + 2) ** 0.75) * G(y, k)
        yield x


MINIBATCH = ("one", "linear")


def run_theorem4(problem, n_iter: int, *, n_runs: int, seed, kappa: float, anchor: bool = True,
                 minibatch: str = "one") -> StochasticTrace:
    """Theorem 4's method on ``n_runs`` trajectories at once; ``problem.sample(z, rng, batch=b)`` draws the mean
    of b samples per row. ``minibatch="one"``: b_k = 1; ``"linear"``: b_k = k+1 (the linearly increasing
    minibatch of the official claims). ``oracle_calls`` counts samples per trajectory (sum of b_k)."""
    n_iter = _check_n_iter(n_iter)
    if isinstance(n_runs, bool) or not isinstance(n_runs, (int, np.integer)) or n_runs < 1:
        raise ValueError(f"n_runs must be an integer >= 1, got {n_runs!r}")
    kappa = _check_positive(kappa, "kappa")
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1 (E||G||^2 >= ||F||^2), got {kappa}")
    if minibatch not in MINIBATCH:
        raise ValueError(f"minibatch must be one of {list(MINIBATCH)}, got {minibatch!r}")
    if problem.sample is None:
        raise ValueError(f"problem {problem.name!r} has no stochastic oracle (its sample is None)")
    z0 = _check_problem_z0(problem)
    rng = np.random.default_rng(seed)
    batch = (lambda k: 1) if minibatch == "one" else (lambda k: k + 1)  # noqa: E731
    samples = [0]

    def G(y, k):
        samples[0] += batch(k)
        return problem.sample(y, rng, batch=batch(k))

    operator, z_star = problem.operator, np.asarray(problem.z_star)
    h_runs = np.full((n_iter + 1, int(n_runs)), np.inf)
    d_runs = np.full((n_iter + 1, int(n_runs)), np.inf)
    calls = np.zeros(n_iter + 1, dtype=np.int64)
    diverged_at, limit = None, None
    Z0 = np.tile(z0, (int(n_runs), 1))
    for k, Z in enumerate(theorem4_iterates(G, Z0, n_iter, problem.L, kappa, anchor)):
        Fz = operator(Z)
        hk = np.einsum("ij,ij->i", Fz, Fz)
        mean_h = float(hk.mean())
        calls[k] = samples[0]
        if k == 0:
            limit = DIVERGENCE_FACTOR * mean_h if mean_h > 0 else DIVERGENCE_FACTOR
        if not math.isfinite(mean_h) or mean_h > limit:
            diverged_at = k
            calls[k:] = samples[0]
            break
        h_runs[k] = hk
        D = Z - z_star
        d_runs[k] = np.einsum("ij,ij->i", D, D)
    return StochasticTrace(method="s_goma_t4" if anchor else "s_goma_t4_noanchor",
                           mean_grad_norm_sq=h_runs.mean(axis=1), mean_dist_sq=d_runs.mean(axis=1),
                           oracle_calls=calls, n_runs=int(n_runs), diverged_at=diverged_at,
                           grad_norm_sq_runs=np.ascontiguousarray(h_runs.T),
                           params={"kappa": kappa, "anchor": bool(anchor), "minibatch": minibatch},
                           dist_sq_runs=np.ascontiguousarray(d_runs.T))


def theorem4_bound(L: float, kappa: float, dist0_sq: float, sigma: float) -> float:
    """The constant of Theorem 4: E||F(x_N)||^2 sqrt(N+1) <= 1570 L^2 kappa ||x_0 - x*||^2 + 8 sigma^2/kappa."""
    return 1570.0 * L * L * kappa * dist0_sq + 8.0 * sigma * sigma / kappa
