r"""Success conditioning at one state (a bandit): the operator, its influence terms and the chi-square
trust region it solves.

Notation (one state, actions a = 1..A): behaviour policy :math:`\pi(a)`, success probability of each action
:math:`q(a) = P(S=1 \mid a) \in [0,1]`, value :math:`V = \sum_a \pi(a) q(a) = P(S=1)`.

Success conditioning (SC) keeps the successful draws and fits the policy to their actions; at the
population level this is Bayes' rule

.. math:: \pi^+(a) = P(a \mid S=1) = \pi(a)\, q(a) / V.

Per-state identity (reconstructed from the abstract of Russo, ICML 2026, arXiv:2601.18175): since
:math:`\pi^+/\pi = q/V`,

.. math::
    \frac{\sum_a \pi^+(a) q(a) - V}{V} \;=\; \chi^2(\pi^+ \,\|\, \pi) = \sum_a \pi(a) (\pi^+(a)/\pi(a) - 1)^2
    \;=\; I = \frac{\operatorname{Var}_{a\sim\pi}[q(a)]}{V^2},

relative improvement = policy change = action-influence (squared coefficient of variation of q under pi).
"""
from __future__ import annotations

import math
import warnings
from numbers import Real

import numpy as np
from scipy.optimize import minimize

__all__ = [
    "success_condition", "influence_terms", "chi2_divergence", "chi2_trust_region", "threshold_bandit",
    "beta_tail", "threshold_decomposition", "failure_condition", "check_distribution", "check_success_probability",
]

PROB_TOL = 1e-9
_SOLVERS = ("closed_form", "numeric", "cvxpy")


# ----------------------------------------------------------------------------------------------- validation
def check_distribution(x, name: str, *, axis: int = -1, tol: float = PROB_TOL) -> np.ndarray:
    """Return ``x`` as a float array after checking it holds probability vectors along ``axis``.

    Raises ValueError naming ``name`` when an entry is NaN/Inf or negative, or a row does not sum to 1
    within ``tol``.
    """
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or arr.shape[axis] == 0:
        raise ValueError(f"{name}: expected probability vectors along axis {axis}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or Inf")
    if np.any(arr < 0):
        raise ValueError(f"{name}: contains negative probabilities (min {arr.min():.3g})")
    err = np.max(np.abs(arr.sum(axis=axis) - 1.0))
    if err > tol:
        raise ValueError(f"{name}: rows must sum to 1 within {tol:g} (largest deviation {err:.3g})")
    return arr


def check_success_probability(x, name: str) -> np.ndarray:
    """Return ``x`` as a float array after checking every entry is a probability in [0, 1]."""
    arr = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or Inf")
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name}: success probabilities must lie in [0, 1] (range [{arr.min():.3g}, "
                         f"{arr.max():.3g}])")
    return arr


def _check_pair(pi, q, *, pi_name="pi", q_name="q"):
    pi = check_distribution(pi, pi_name)
    q = check_success_probability(q, q_name)
    if pi.shape != q.shape:
        raise ValueError(f"{q_name}: shape {q.shape} does not match {pi_name} shape {pi.shape}")
    return pi, q


def _check_on_zero(on_zero_value):
    if on_zero_value not in ("raise", "keep"):
        raise ValueError(f"on_zero_value: must be 'raise' or 'keep', got {on_zero_value!r}")


def _scalarize(x):
    return float(x) if np.ndim(x) == 0 else x


# ------------------------------------------------------------------------------------------------ operators
def success_condition(pi, q, *, on_zero_value: str = "raise") -> np.ndarray:
    r"""Success-conditioned policy :math:`\pi^+(a) = \pi(a) q(a) / V`, :math:`V = \sum_a \pi(a) q(a)`.

    Works along the last axis for any leading shape (a bandit is 1-D; a tabular policy is (H, S, A)).

    Parameters
    ----------
    pi : array (..., A), probability vectors along the last axis.
    q : array (..., A), success probabilities in [0, 1].
    on_zero_value : {"raise", "keep"}
        Rows with V = 0 are never visited by a successful trajectory, so conditioning is undefined there:
        "raise" raises ValueError, "keep" returns pi on those rows.

    Returns
    -------
    pi_plus : array of pi's shape.

    References
    ----------
    D. Russo, "Success Conditioning as Policy Improvement", ICML 2026, arXiv:2601.18175 (Bayes + Markov).
    """
    _check_on_zero(on_zero_value)
    pi, q = _check_pair(pi, q)
    value = np.sum(pi * q, axis=-1, keepdims=True)
    zero = value <= 0.0
    if np.any(zero) and on_zero_value == "raise":
        raise ValueError(f"q: V = sum_a pi(a) q(a) is 0 on {int(zero.sum())} row(s): conditioning on a null "
                         "event (pass on_zero_value='keep' to keep pi there)")
    safe = np.where(zero, 1.0, value)
    return np.where(zero, pi, pi * q / safe)


def chi2_divergence(p, pi) -> np.ndarray | float:
    r"""Pearson chi-square divergence :math:`\chi^2(p\|\pi) = \sum_a (p(a)-\pi(a))^2/\pi(a)` along the last
    axis (terms with :math:`\pi(a) = p(a) = 0` are 0; :math:`p(a) > 0 = \pi(a)` gives +inf).

    The divisor is pi (the reference policy), not p.
    """
    p = np.asarray(p, dtype=float)
    pi = np.asarray(pi, dtype=float)
    if p.shape != pi.shape:
        raise ValueError(f"p: shape {p.shape} does not match pi shape {pi.shape}")
    pos = pi > 0
    terms = np.where(pos, (p - pi) ** 2 / np.where(pos, pi, 1.0), np.where(p > 0, np.inf, 0.0))
    return _scalarize(terms.sum(axis=-1))


def influence_terms(pi, q, *, on_zero_value: str = "raise") -> dict:
    r"""The three quantities that success conditioning equates at one state.

    With :math:`V = \sum \pi q` and :math:`\pi^+ = \pi q / V`:

    - ``value`` :math:`V`; ``value_after`` :math:`\sum_a \pi^+(a) q(a)`;
    - ``relative_improvement`` :math:`(\sum \pi^+ q - V)/V`;
    - ``chi2`` :math:`\chi^2(\pi^+\|\pi) = \sum (\pi^+ - \pi)^2/\pi` (computed from pi+ itself);
    - ``action_influence`` :math:`I = \operatorname{Var}_\pi(q)/V^2 = \sum \pi (q - V)^2 / V^2`.

    The identity relative_improvement = chi2 = action_influence holds exactly (Russo 2026, reconstructed).
    Each entry has shape ``pi.shape[:-1]`` (a float for 1-D input). With ``on_zero_value="keep"`` rows with
    V = 0 get pi+ = pi and all three quantities 0.
    """
    _check_on_zero(on_zero_value)
    pi, q = _check_pair(pi, q)
    pi_plus = success_condition(pi, q, on_zero_value=on_zero_value)
    value = np.sum(pi * q, axis=-1)
    zero = value <= 0.0
    safe = np.where(zero, 1.0, value)
    value_after = np.sum(pi_plus * q, axis=-1)
    relative = np.where(zero, 0.0, (value_after - value) / safe)
    chi2 = np.asarray(chi2_divergence(pi_plus, pi))
    variance = np.sum(pi * (q - value[..., None]) ** 2, axis=-1)
    influence = np.where(zero, 0.0, variance / safe ** 2)
    return {"value": _scalarize(value), "value_after": _scalarize(value_after),
            "relative_improvement": _scalarize(relative), "chi2": _scalarize(chi2),
            "action_influence": _scalarize(influence)}


# ------------------------------------------------------------------------------------------- trust region
def _check_weights(w, n, name):
    if w is None:
        return np.ones(n)
    w = np.asarray(w, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name}: contains NaN or Inf")
    if np.any(w < 0):
        raise ValueError(f"{name}: weights must be non-negative (min {w.min():.3g})")
    return w


def _check_delta(delta):
    if isinstance(delta, bool) or not isinstance(delta, (Real, np.floating, np.integer)):
        raise ValueError(f"delta: must be a real number, got {delta!r}")
    delta = float(delta)
    if not math.isfinite(delta) or delta < 0:
        raise ValueError(f"delta: must be finite and >= 0, got {delta}")
    return delta


def _trust_region_inputs(pi, q, delta, obj_weights, budget_weights, solver):
    if solver not in _SOLVERS:
        raise ValueError(f"solver: unknown solver {solver!r}; choose one of {list(_SOLVERS)}")
    pi, q = _check_pair(pi, q)
    if pi.ndim not in (1, 2):
        raise ValueError(f"pi: expected shape (A,) or (N, A), got {pi.shape}")
    if np.any(pi <= 0):
        raise ValueError("pi: has zero entries; chi2(p || pi) is undefined (the trust region needs pi > 0)")
    delta = _check_delta(delta)
    pi2, q2 = np.atleast_2d(pi), np.atleast_2d(q)
    n = pi2.shape[0]
    w = _check_weights(obj_weights, n, "obj_weights")
    c = _check_weights(budget_weights, n, "budget_weights")
    return pi2, q2, delta, w, c


def _closed_form(pi, q, delta, w, c):
    value = np.sum(pi * q, axis=1)
    variance = np.sum(pi * (q - value[:, None]) ** 2, axis=1)
    free = c <= 0
    if np.any(free & (w * variance > 0)):
        raise ValueError("budget_weights: a row with zero budget weight has w * Var(q) > 0, so its maximiser "
                         "is a vertex, not the closed form; use solver='numeric'")
    ratio = np.where(free, 0.0, w / np.where(free, 1.0, c))
    denom = float(np.sum(c * ratio ** 2 * variance))
    if delta == 0.0 or denom == 0.0:
        return pi.copy()
    kappa = math.sqrt(delta / denom)
    factor = 1.0 + kappa * ratio[:, None] * (q - value[:, None])
    if factor.min() < -1e-12:
        down = ratio[:, None] * (value[:, None] - q)
        kappa_max = float(np.min(1.0 / down[down > 0]))
        raise ValueError(f"delta: radius {delta:.6g} is too large for the closed form (the maximiser would "
                         f"leave the simplex; largest valid delta {kappa_max ** 2 * denom:.6g}); use "
                         "solver='numeric'")
    return pi * np.maximum(factor, 0.0)


def _numeric_slsqp(pi, q, delta, w, c):
    r"""SLSQP on the trust-region problem in the whitened variable
    :math:`u_{na} = (p_{na} - \pi_{na}) / s_{na}`, :math:`s_{na} = \sqrt{\delta \pi_{na} / c_n}`:

    .. math::
        \max_u \sum_n w_n (s_n \odot q_n)^\top u_n \quad \text{s.t.} \quad \|u\|_2^2 \le 1,
        \quad s_n^\top u_n = 0, \quad -\pi/s \le u \le (1 - \pi)/s,

    so that the budget is the unit ball for every radius and policy (in p itself a radius of 1e-8 or an
    action probability of 1e-4 scales the budget's gradient by 1e8 or 1e4, and SLSQP stops at an infeasible
    point). The objective and each row constraint are scaled by their largest coefficient. SLSQP starts at
    u = 0 (p = pi) and knows nothing of the closed form."""
    n, a = pi.shape
    if delta == 0.0:
        return pi.copy()
    s = np.sqrt(delta * pi / c[:, None])
    lin = -(w[:, None] * q * s).ravel()
    lin = lin / (np.abs(lin).max() or 1.0)
    rows = np.zeros((n, n * a))
    for i in range(n):
        rows[i, i * a:(i + 1) * a] = s[i] / s[i].max()

    def objective(u):
        return float(lin @ u), lin

    constraints = [
        {"type": "ineq", "fun": lambda u: np.array([1.0 - float(u @ u)]), "jac": lambda u: -2.0 * u[None, :]},
        {"type": "eq", "fun": lambda u: rows @ u, "jac": lambda u: rows},
    ]
    bounds = list(zip((-pi / s).ravel(), ((1.0 - pi) / s).ravel()))
    res = minimize(objective, np.zeros(n * a), jac=True, method="SLSQP", bounds=bounds,
                   constraints=constraints, options={"ftol": 1e-15, "maxiter": 2000})
    # Status 8 ("positive directional derivative for linesearch") at a feasible point means the line search
    # has reached machine precision at the optimum (ftol 1e-15 is below what SLSQP can certify): accepted
    # when the budget holds to 1e-6 relative and the scaled rows sum to 0 within 1e-9.
    feasible = float(res.x @ res.x) <= 1.0 + 1e-6 and np.max(np.abs(rows @ res.x)) <= 1e-9
    if not (res.success or (res.status == 8 and feasible)):
        raise RuntimeError(f"solver SLSQP did not converge: status {res.status} ({res.message})")
    return np.clip(pi + s * res.x.reshape(n, a), 0.0, 1.0)


CVXPY_TOL = 1e-12  # gap/feasibility tolerances of the cross-check (the defaults, about 1e-8, fix p to only ~1e-4)


def _cvxpy_trust_region_problem(pi, q, delta, w, c, nonneg: bool):
    import cvxpy as cp

    n, a = pi.shape
    scale = float(w.max()) if w.max() > 0 else 1.0
    p = cp.Variable((n, a), nonneg=nonneg)
    objective = cp.Maximize(cp.sum(cp.multiply(p, w[:, None] * q / scale)))
    # the budget sum_n c_n chi2(p_n || pi_n) <= delta as ONE second-order cone ||D (p - pi)||_2 <= 1,
    # D = sqrt(c / (pi delta)); cp.square would split it into one small cone per entry (less accurate)
    root = np.sqrt(c[:, None] / pi / delta)
    budget = cp.norm(cp.vec(cp.multiply(root, p - pi), order="C"), 2) <= 1.0
    return cp.Problem(objective, [budget, cp.sum(p, axis=1) == 1.0]), p


def chi2_trust_region_cvxpy(pi, q, delta, w, c, *, tol: float | None = CVXPY_TOL):
    """The weighted trust region through cvxpy and ``shared.solvers.solve``.

    Inputs as validated by :func:`chi2_trust_region` (2-D pi, q; weight vectors). ``tol`` sets the gap and
    feasibility tolerances of Clarabel (and ``eps`` of SCS); None keeps the solvers' defaults; an
    "optimal_inaccurate" answer at that floor is accepted (the caller compares it with the closed form).

    The budget is one second-order cone. The problem is first solved without the constraint p >= 0 (the
    relaxation: only the budget and the rows summing to 1); when its maximiser is non-negative (to 1e-12)
    it is feasible for, hence the maximiser of, the constrained problem, and it is returned. Otherwise the
    problem is solved again with p >= 0. The relaxation avoids the interior-point barrier of p >= 0, whose
    bias on entries of pi near 0 fixed the maximiser to only about 1e-6. Returns ``(p, backend)``, the
    backend suffixed "+nonneg" when the constrained solve was needed.
    """
    if delta == 0.0:
        return pi.copy(), "none"
    from shared.solvers import solve  # MOSEK (licensed) -> CLARABEL -> SCS; SolverError if all fail

    options = {} if tol is None else {
        "CLARABEL": {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol, "tol_ktratio": 1e-8, "max_iter": 500},
        "SCS": {"eps_abs": tol, "eps_rel": tol}}

    def solved(nonneg: bool):
        problem, p = _cvxpy_trust_region_problem(pi, q, delta, w, c, nonneg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "accepting an inaccurate solution" (see above)
            result = solve(problem, options_by_backend=options, accept_inaccurate=tol is not None)
        if result.status not in ("optimal", "optimal_inaccurate"):
            raise RuntimeError(f"solver {result.backend} returned status {result.status}")
        return np.asarray(p.value), result.backend

    value, backend = solved(nonneg=False)
    if value.min() >= -1e-12:
        return np.clip(value, 0.0, 1.0), backend
    value, backend = solved(nonneg=True)
    return np.clip(value, 0.0, 1.0), backend + "+nonneg"


def chi2_trust_region(pi, q, delta, *, obj_weights=None, budget_weights=None,
                      solver: str = "closed_form") -> np.ndarray:
    r"""Maximiser of the weighted chi-square trust-region problem

    .. math::
        \max_{p_n \in \Delta_A} \sum_n w_n \sum_a p_{na} q_{na}
        \quad \text{s.t.} \quad \sum_n c_n \chi^2(p_n \| \pi_n) \le \delta .

    Closed form (Lagrangian, valid while it stays in the simplex):
    :math:`p_n = \pi_n (1 + \kappa (w_n/c_n)(q_n - V_n))`,
    :math:`\kappa = \sqrt{\delta / \sum_n c_n (w_n/c_n)^2 \operatorname{Var}_{\pi_n}(q_n)}`.
    For one state and :math:`\delta = I = \operatorname{Var}_\pi(q)/V^2` it returns :math:`\pi q / V` (SC).
    With :math:`w_n = d_h(s)`, :math:`c_n = d^+_h(s)` and :math:`\delta = E_{d^+}[I]` it returns the SC
    policy at every state (the data-chosen radius; Russo 2026, reconstructed).

    Parameters
    ----------
    pi : array (A,) or (N, A), strictly positive probability vectors.
    q : array of pi's shape, success probabilities in [0, 1].
    delta : float >= 0, the radius.
    obj_weights, budget_weights : arrays (N,) >= 0 (default ones).
    solver : "closed_form" (raises ValueError when the formula leaves the simplex), "numeric" (SLSQP,
        ftol 1e-15, analytic Jacobians, in the whitened variable (p - pi)/sqrt(delta pi/c)) or "cvxpy".

    Returns
    -------
    p : array of pi's shape. A numeric solver that fails raises RuntimeError naming it and its status.
    """
    shape = np.shape(pi)
    pi2, q2, delta, w, c = _trust_region_inputs(pi, q, delta, obj_weights, budget_weights, solver)
    if solver == "closed_form":
        p = _closed_form(pi2, q2, delta, w, c)
    elif solver == "numeric":
        p = _numeric_slsqp(pi2, q2, delta, w, c)
    else:
        p, _ = chi2_trust_region_cvxpy(pi2, q2, delta, w, c)
    return p.reshape(shape)


# ------------------------------------------------------------------------------------- return thresholding
def threshold_bandit(pi, arm_rewards, arm_probs, tau) -> dict:
    r"""Success conditioning with success = {R >= tau} in a bandit whose arms have finite reward laws.

    :math:`q_\tau(a) = P(R_a \ge \tau)`, :math:`\pi^+ = \pi q_\tau / \sum \pi q_\tau`. Returns ``pi_plus``,
    ``success_before`` / ``success_after`` (:math:`P(R \ge \tau)` under pi and pi+), ``mean_before`` /
    ``mean_after`` (:math:`E[R]`), ``chi2`` and ``action_influence`` :math:`I_\tau`. The identities hold for
    the proxy :math:`P(R\ge\tau)`, not for :math:`E[R]` (misalignment when tau is high).
    """
    pi = check_distribution(pi, "pi")
    if pi.ndim != 1:
        raise ValueError(f"pi: expected a 1-D policy, got shape {pi.shape}")
    if isinstance(tau, bool) or not isinstance(tau, (Real, np.floating, np.integer)) or not math.isfinite(tau):
        raise ValueError(f"tau: must be a finite real number, got {tau!r}")
    if len(arm_rewards) != len(pi) or len(arm_probs) != len(pi):
        raise ValueError(f"arm_rewards/arm_probs: need one reward list and one probability list per arm "
                         f"({len(pi)} arms), got {len(arm_rewards)} and {len(arm_probs)}")
    q = np.empty(len(pi))
    means = np.empty(len(pi))
    for a, (values, probs) in enumerate(zip(arm_rewards, arm_probs)):
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or np.shape(probs) != values.shape:
            raise ValueError(f"arm_probs[{a}]: length {np.size(probs)} differs from arm_rewards[{a}] "
                             f"length {values.size}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"arm_rewards[{a}]: contains NaN or Inf")
        probs = check_distribution(probs, f"arm_probs[{a}]")
        q[a] = probs[values >= tau].sum()
        means[a] = probs @ values
    q = np.clip(q, 0.0, 1.0)
    value = float(pi @ q)
    if value <= 0:
        raise ValueError(f"tau: no arm played by pi reaches tau={tau} (P(R >= tau) = 0): conditioning on a "
                         "null event")
    terms = influence_terms(pi, q)
    pi_plus = success_condition(pi, q)
    return {"pi_plus": pi_plus, "q": q, "success_before": value, "success_after": float(pi_plus @ q),
            "mean_before": float(pi @ means), "mean_after": float(pi_plus @ means),
            "chi2": terms["chi2"], "action_influence": terms["action_influence"]}


# ------------------------------------------------------------------------- Beta arms and Proposition 7.1
def beta_tail(a, b, tau) -> np.ndarray:
    r"""Exact tail :math:`P(R \ge \tau)` of :math:`R \sim \mathrm{Beta}(a, b)`, via the regularised incomplete
    beta function: :math:`P(R \ge \tau) = 1 - I_\tau(a, b) = I_{1-\tau}(b, a)` (the second form keeps its
    relative accuracy for tau near 1). ``a``, ``b`` > 0 and tau in [0, 1] broadcast together.
    """
    from scipy.special import betainc

    a, b, tau = np.asarray(a, dtype=float), np.asarray(b, dtype=float), np.asarray(tau, dtype=float)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.all(a > 0) and np.all(b > 0)):
        raise ValueError("a, b: Beta parameters must be finite and > 0")
    if not np.all(np.isfinite(tau)) or np.any(tau < 0) or np.any(tau > 1):
        raise ValueError("tau: thresholds of a Beta reward must lie in [0, 1]")
    return betainc(b, a, 1.0 - tau)


def threshold_decomposition(pi, r, q_tau) -> dict:
    r"""True-objective effect of conditioning a bandit on a proxy success event (Section 7, Prop. 7.1;
    reconstructed statement).

    ``r`` (A,) are the arms' mean rewards in [0, 1] (faithful conditioning: success ~ Bernoulli(R), so
    P(S=1|a) = r(a)); ``q_tau`` (A,) the proxy success probabilities (e.g. P(R >= tau)). With
    :math:`J = E_\pi r`, :math:`V_\tau = E_\pi q_\tau` and :math:`\pi^+_\tau = \pi q_\tau / V_\tau`:

    .. math::
        \Delta J_\tau = E_{\pi^+_\tau} r - J = \frac{\operatorname{Cov}_\pi(r, q_\tau)}{V_\tau}
        = \underbrace{\rho_\pi(r, q_\tau)}_{\text{alignment}}
          \underbrace{\sqrt{I_\tau / I_1}}_{\text{amplification}}\ \Delta J_1,

    where :math:`I_\tau = \operatorname{Var}_\pi(q_\tau)/V_\tau^2` is the proxy's action-influence,
    :math:`I_1 = \operatorname{Var}_\pi(r)/J^2` the faithful one, and :math:`\Delta J_1 = J I_1` the
    faithful improvement. Returns ``gain`` (computed directly from pi+), ``gain_faithful``, ``alignment``,
    ``amplification``, ``influence``, ``influence_faithful`` and ``identity_gain`` (the right-hand side).
    """
    pi = check_distribution(pi, "pi")
    r = check_success_probability(r, "r")
    q = check_success_probability(q_tau, "q_tau")
    if not (pi.shape == r.shape == q.shape) or pi.ndim != 1:
        raise ValueError(f"pi, r, q_tau: need three 1-D arrays of one length, got {pi.shape}, {r.shape}, {q.shape}")
    J, V = float(pi @ r), float(pi @ q)
    if J <= 0 or V <= 0:
        raise ValueError("r, q_tau: the behaviour policy must have positive mean reward and proxy success")
    var_r, var_q = float(pi @ (r - J) ** 2), float(pi @ (q - V) ** 2)
    if var_r <= 0:
        raise ValueError("r: all played arms have the same mean reward; the faithful step is zero")
    cov = float(pi @ ((r - J) * (q - V)))
    infl, infl_1 = var_q / V ** 2, var_r / J ** 2
    alignment = cov / math.sqrt(var_r * var_q) if var_q > 0 else 0.0
    amplification = math.sqrt(infl / infl_1)
    gain_faithful = float(success_condition(pi, r) @ r) - J
    return {"gain": float(success_condition(pi, q) @ r) - J, "gain_faithful": gain_faithful,
            "alignment": alignment, "amplification": amplification, "influence": infl,
            "influence_faithful": infl_1, "identity_gain": alignment * amplification * J * infl_1}


def failure_condition(pi, q, *, on_zero_value: str = "raise") -> np.ndarray:
    r"""Imitating the *failed* trajectories, :math:`\pi^-(a) = \pi(a)(1 - q(a))/(1 - V)` (a deliberately
    wrong target used as a negative control: it never increases the success probability of a bandit)."""
    pi, q = _check_pair(pi, q)
    return success_condition(pi, 1.0 - q, on_zero_value=on_zero_value)
