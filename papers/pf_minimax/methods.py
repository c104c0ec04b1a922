r"""Dual dynamic smoothing with linear minimization oracles, and the baselines.

Smoothing framework (reconstructed; after AGP of Xu, Zhang, Xu & Lan, Math. Prog. 2023, and the smoothing
with LMOs of Lan 2013 / HCGM of Yurtsever et al., ICML 2018). Iteration ``k = 0, 1, ...``::

    mu_k = mu0 / (k+1)^omega
    gy   = grad_y f(x_k, y_k) - mu_k (y_k - ybar)
    y-step  proj: y_{k+1} = P_Y(y_k + tau_k gy),  tau_k = 1/(L_yy + L_xy + mu_k)
            lmo : v = LMO_Y(-gy);  y_{k+1} = y_k + 2/(k+2) (v - y_k)
    gx   = grad_x f(x_k, y_{k+1})
    L_k  = L_xx + L_xy^2 / (mu_y + mu_k)
    x-step  lmo : s = LMO_X(gx); d = s - x_k; x_{k+1} = x_k + alpha_k d with
                  alpha_k = 2/(k+2) ("open_loop"), min{1, <-gx, d>/(L_k ||d||^2)} ("short"),
                  or 0.1/sqrt(k+1) ("sqrt")
            proj: x_{k+1} = P_X(x_k - gx / L_k)

Variants: ``v_x`` (x: lmo, y: proj), ``v_y`` (x: proj, y: lmo), ``v_xy`` (both lmo); ``proj`` (both proj) is the
projection-based, AGP-like reference. Every schedule depends on ``k`` only, so the runs are anytime (no horizon).

Baselines: ``sp_fw``, the simultaneous saddle-point Frank-Wolfe of Gidel, Jebara & Lacoste-Julien (AISTATS 2017),
``x += 2/(k+2)(LMO_X(grad_x f) - x)``, ``y += 2/(k+2)(LMO_Y(-grad_y f) - y)``; ``peg``, projected extragradient
(Korpelevich 1976) with constant step ``a = peg_step/L_xy`` (C-C only; default 0.5).

Projection-free baselines of Boroun, Yazdandoost Hamedani & Jalilzadeh (NeurIPS 2023, arXiv 2306.11944):
``r_pdcg`` (R-PDCG, "regularized primal-dual conditional gradient": LMOs on both sides, O(eps^-6) iterations,
guarantee stated for a strongly convex dual set Y) and ``cg_rpga`` (CG-RPGA, "conditional gradient with regularized
projected gradient ascent": LMO on x, projected ascent on y, O(eps^-4)). From the paper we have its abstract and the
opening of its introduction only (single loop, a regularised dual, "regularization and nested approximation",
parameters set from the target accuracy eps); its Algorithms 1-2 and the step and regulariser choices of its
theorems could not be read, so the update rules below are our reading. With ``eps = T^(-1/6)`` (R-PDCG) or
``T^(-1/4)`` (CG-RPGA) for a run of T iterations and ``gamma = step_c/sqrt(T)``::

    mu   = mu0 * eps                                  (fixed regulariser, chosen from the horizon)
    gy   = grad_y f(x_k, y_k) - mu (y_k - ybar)
    y-step  r_pdcg : y_{k+1} = y_k + gamma (LMO_Y(-gy) - y_k)
            cg_rpga: y_{k+1} = P_Y(y_k + gy / (L_yy + L_xy + mu))
    x_{k+1} = x_k + gamma (LMO_X(grad_x f(x_k, y_{k+1})) - x_k)

Unlike the dual dynamic smoothing above, the regulariser and the steps depend on T, so these runs are not anytime.
Every Y on which they run here is a simplex, a polytope and not a strongly convex set, so R-PDCG runs outside the
assumption under which its rate is stated.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .problems import MinimaxProblem

__all__ = ["METHODS", "SMOOTHING_VARIANTS", "HORIZON_BASELINES", "horizon_parameters", "X_STEPS", "Trace",
           "run_method", "mu_schedule"]

SMOOTHING_VARIANTS = {"v_x": ("lmo", "proj"), "v_y": ("proj", "lmo"), "v_xy": ("lmo", "lmo"),
                      "proj": ("proj", "proj")}
"""Method -> (x-step, y-step)."""
HORIZON_BASELINES = {"r_pdcg": ("lmo", 1.0 / 6.0), "cg_rpga": ("proj", 0.25)}
"""Boroun et al. baselines -> (y-step, eps exponent: eps = T^(-exponent))."""
METHODS = (*SMOOTHING_VARIANTS, "sp_fw", "peg", *HORIZON_BASELINES)
X_STEPS = ("open_loop", "short", "sqrt")
SQRT_ALPHA0 = 0.1


@dataclass
class Trace:
    """Output of :func:`run_method`.

    ``steps`` (int array, from 0) and ``measure`` (the duality gap of the last iterate for C-C; the best-so-far
    Frank-Wolfe gap for NC) at the recorded steps; ``raw_measure`` (the FW gap at each recorded step, NC only;
    equal to ``measure`` for C-C); ``objective`` (``Phi(x_k) = max_y f(x_k, y)`` for NC, else None); ``x``, ``y``
    (the last iterates); ``iter_seconds`` (seconds of each update, without the measure, or None); ``params``
    (resolved ``mu0``, ``omega``, ``x_step``).
    """

    steps: np.ndarray
    measure: np.ndarray
    x: np.ndarray
    y: np.ndarray
    iter_seconds: np.ndarray | None
    params: dict
    raw_measure: np.ndarray = field(default=None)
    objective: np.ndarray | None = None


def mu_schedule(k, mu0: float, omega: float):
    """``mu_k = mu0 / (k+1)^omega``."""
    return mu0 / (np.asarray(k, dtype=float) + 1.0) ** omega


def horizon_parameters(method: str, horizon: int, mu0: float = 1.0, step_c: float = 1.0) -> dict:
    """Fixed parameters of a Boroun et al. baseline for horizon ``T``: ``eps = T^(-a)`` (a = 1/6 for R-PDCG, 1/4
    for CG-RPGA), regulariser ``mu = mu0 eps`` and the constant Frank-Wolfe step ``gamma = min(1, step_c/sqrt(T))``."""
    if method not in HORIZON_BASELINES:
        raise ValueError(f"method must be one of {list(HORIZON_BASELINES)}, got {method!r}")
    horizon = _check_int(horizon, "horizon", 1)
    for name, val in (("mu0", mu0), ("step_c", step_c)):
        if isinstance(val, bool) or not isinstance(val, (int, float, np.integer, np.floating)) \
                or not math.isfinite(val) or val <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {val!r}")
    eps = float(horizon) ** (-HORIZON_BASELINES[method][1])
    return {"mu": float(mu0) * eps, "gamma": min(1.0, float(step_c) / math.sqrt(horizon)), "eps": eps,
            "horizon": horizon}


def _inner(g, d) -> float:
    if sp.issparse(g):
        return float(g.multiply(d).sum())
    return float(np.vdot(g, d))


def _dense(g):
    return g.toarray() if sp.issparse(g) else g


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _resolve_params(method, problem, mu0, omega, x_step):
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    if not isinstance(problem, MinimaxProblem):
        raise ValueError(f"problem must be a MinimaxProblem, got {type(problem).__name__}")
    if method == "peg" and problem.regime != "cc":
        raise ValueError(f"method 'peg' is for convex-concave problems; problem regime is {problem.regime!r}")
    omega = float(omega)
    if not (0.0 < omega <= 1.0):
        raise ValueError(f"omega must lie in (0, 1], got {omega!r}")
    if x_step is not None and x_step not in X_STEPS:
        raise ValueError(f"x_step must be one of {list(X_STEPS)} or None, got {x_step!r}")
    if method not in SMOOTHING_VARIANTS:  # SP-FW, PEG, R-PDCG, CG-RPGA
        return {"mu0": None, "omega": omega, "x_step": None}
    if mu0 is None:
        mu0 = 0.0 if problem.regime == "ncsc" else 1.0
    mu0 = float(mu0)
    if not math.isfinite(mu0) or mu0 < 0:
        raise ValueError(f"mu0 must be a finite number >= 0, got {mu0!r}")
    if problem.mu_y + mu0 <= 0:
        raise ValueError(f"mu0 must be > 0 when the problem is not strongly concave in y (mu_y = 0, regime "
                         f"{problem.regime!r}): L_k = L_xx + L_xy^2/(mu_y + mu_k) would be infinite")
    if x_step is None:
        x_step = "open_loop" if problem.regime == "cc" else "short"
    return {"mu0": mu0, "omega": omega, "x_step": x_step}


def run_method(method: str, problem: MinimaxProblem, n_iter: int, *, mu0: float | None = None, omega: float = 0.5,
               x_step: str | None = None, record_every: int = 1, time_iterations: bool = False,
               freeze_y: bool = False, peg_step: float = 0.5, horizon: int | None = None,
               step_c: float = 1.0, full_svd_lmo: bool = False) -> Trace:
    r"""Run ``method`` for ``n_iter`` iterations from ``x_0 = center(X)``, ``y_0 = ybar = center(Y)``.

    ``method``: ``"v_x"``, ``"v_y"``, ``"v_xy"``, ``"proj"`` (dual dynamic smoothing, see the module docstring),
    ``"sp_fw"`` or ``"peg"`` (C-C only). ``mu0`` defaults to 1 (C-C, NC-C) or 0 (NC-SC); ``x_step`` to
    ``"open_loop"`` (C-C) or ``"short"`` (NC). The measure is recorded at ``k = 0, record_every, 2 record_every, ...``
    and at ``n_iter``: the duality gap ``Gap(x_k, y_k)`` (C-C), the FW gap of ``Phi`` at ``x_k`` (NC-SC) or of
    ``Phi_{mu_k}`` at ``x_k`` (NC-C), the NC ones as best-so-far. ``time_iterations`` times each update only
    (``time.perf_counter``), not the measure. ``freeze_y=True`` (smoothing variants only; a negative control)
    skips the dual step, so y stays at ``ybar`` and x descends f(., ybar) instead of the max function.
    ``peg_step`` is PEG's step in units of 1/max(L_xy, L_xx, L_yy) (default 0.5; the performance experiment tunes it).
    ``horizon`` (default ``n_iter``) and ``step_c`` set the fixed parameters of ``"r_pdcg"`` and ``"cg_rpga"``
    (:func:`horizon_parameters`, with ``mu0`` default 1); other methods ignore them. ``full_svd_lmo=True``
    (``v_x`` and ``v_xy`` on a nuclear-ball X; the negative control of ``lmo-wallclock``) computes the x-step's
    LMO from a full SVD (``X._lmo_full_svd``) instead of ``svds(k=1)``: the same iterates up to rounding, at the
    cost of a projection's factorisation.
    """
    baseline_mu0 = 1.0 if mu0 is None else mu0   # R-PDCG / CG-RPGA: mu = mu0 * eps (validated there)
    params = _resolve_params(method, problem, mu0, omega, x_step)
    if freeze_y and method not in SMOOTHING_VARIANTS:
        raise ValueError(f"freeze_y applies to the smoothing variants {list(SMOOTHING_VARIANTS)}, not {method!r}")
    params["freeze_y"] = bool(freeze_y)
    if full_svd_lmo:
        if method not in SMOOTHING_VARIANTS or SMOOTHING_VARIANTS[method][0] != "lmo":
            raise ValueError(f"full_svd_lmo applies to the variants with an LMO on x (v_x, v_xy), not {method!r}")
        if not hasattr(problem.X, "_lmo_full_svd"):
            raise ValueError(f"full_svd_lmo needs a nuclear-ball X, got {type(problem.X).__name__}")
        params["full_svd_lmo"] = True
    n_iter = _check_int(n_iter, "n_iter", 0)
    record_every = _check_int(record_every, "record_every", 1)
    X, Y = problem.X, problem.Y
    x, y, ybar = X.center(), Y.center(), problem.ybar
    regime = problem.regime
    mu0, omega, x_rule = params["mu0"], params["omega"], params["x_step"]

    def measure(k, x, y):
        if regime == "cc":
            return problem._gap(x, y), None
        mu = 0.0 if regime == "ncsc" or mu0 is None else mu0 / (k + 1.0) ** omega
        return problem._fw_gap(x, mu), problem._smoothed_max(x, 0.0)[0]

    if method in SMOOTHING_VARIANTS:
        x_mode, y_mode = SMOOTHING_VARIANTS[method]
        L_xx, L_xy, L_yy, mu_y = problem.L_xx, problem.L_xy, problem.L_yy, problem.mu_y

        def update(k, x, y):
            mu = mu0 / (k + 1.0) ** omega
            if freeze_y:
                y_new = y
            else:
                gy = problem.grad_y(x, y)
                if mu > 0:
                    gy = gy - mu * (y - ybar)
            if freeze_y:
                pass
            elif y_mode == "proj":
                y_new = Y._project(y + gy / (L_yy + L_xy + mu))
            else:
                y_new = y + (2.0 / (k + 2.0)) * (Y._lmo(-gy) - y)
            gx = problem.grad_x(x, y_new)
            L_k = max(L_xx + (L_xy * L_xy / (mu_y + mu) if L_xy > 0 else 0.0), 1e-12)
            if x_mode == "proj":
                return X._project(x - _dense(gx) / L_k), y_new
            d = (X._lmo_full_svd(gx) if full_svd_lmo else X._lmo(gx)) - x
            if x_rule == "open_loop":
                alpha = 2.0 / (k + 2.0)
            elif x_rule == "sqrt":
                alpha = SQRT_ALPHA0 / math.sqrt(k + 1.0)
            else:
                dd = float(np.vdot(d, d))
                alpha = 0.0 if dd == 0.0 else min(1.0, max(-_inner(gx, d), 0.0) / (L_k * dd))
            return x + alpha * d, y_new

    elif method == "sp_fw":
        def update(k, x, y):
            gx, gy = problem.grad_x(x, y), problem.grad_y(x, y)
            gamma = 2.0 / (k + 2.0)
            return x + gamma * (X._lmo(gx) - x), y + gamma * (Y._lmo(-gy) - y)

    elif method in HORIZON_BASELINES:
        fixed = horizon_parameters(method, max(n_iter, 1) if horizon is None else horizon, baseline_mu0, step_c)
        params.update(fixed)
        y_mode = HORIZON_BASELINES[method][0]
        mu_fix, gamma = fixed["mu"], fixed["gamma"]
        y_step = 1.0 / (problem.L_yy + problem.L_xy + mu_fix)

        def update(k, x, y):
            gy = problem.grad_y(x, y) - mu_fix * (y - ybar)
            if y_mode == "lmo":
                y_new = y + gamma * (Y._lmo(-gy) - y)
            else:
                y_new = Y._project(y + y_step * gy)
            gx = problem.grad_x(x, y_new)
            return x + gamma * (X._lmo(gx) - x), y_new

    else:  # peg
        if not (isinstance(peg_step, (int, float)) and math.isfinite(peg_step) and peg_step > 0):
            raise ValueError(f"peg_step must be a positive finite number, got {peg_step!r}")
        L = max(problem.L_xy, problem.L_xx, problem.L_yy)
        a = float(peg_step) / L if L > 0 else 1.0

        def update(k, x, y):
            xh = X._project(x - a * _dense(problem.grad_x(x, y)))
            yh = Y._project(y + a * problem.grad_y(x, y))
            return (X._project(x - a * _dense(problem.grad_x(xh, yh))),
                    Y._project(y + a * problem.grad_y(xh, yh)))

    n_rec = n_iter // record_every + 1 + (1 if n_iter % record_every else 0)
    steps = np.empty(n_rec, dtype=np.int64)
    raw = np.empty(n_rec)
    obj = np.empty(n_rec) if regime != "cc" else None
    iter_seconds = np.empty(n_iter) if time_iterations else None
    steps[0] = 0
    raw[0], o = measure(0, x, y)
    if obj is not None:
        obj[0] = o
    r = 1
    clock = time.perf_counter
    for k in range(n_iter):
        if time_iterations:
            t0 = clock()
            x, y = update(k, x, y)
            iter_seconds[k] = clock() - t0
        else:
            x, y = update(k, x, y)
        if (k + 1) % record_every == 0 or k + 1 == n_iter:
            steps[r] = k + 1
            raw[r], o = measure(k + 1, x, y)
            if obj is not None:
                obj[r] = o
            r += 1
    measure_out = raw.copy() if regime == "cc" else np.minimum.accumulate(raw)
    return Trace(steps=steps, measure=measure_out, x=x, y=y, iter_seconds=iter_seconds, params=params,
                 raw_measure=raw, objective=obj)
