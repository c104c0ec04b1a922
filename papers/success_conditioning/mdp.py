r"""Finite-horizon tabular MDPs with a terminal success event.

States :math:`s_0..s_H`, actions :math:`a_0..a_{H-1}`, transitions :math:`P_h(s'|s,a)`, initial law
:math:`\mu_0`, Markov policy :math:`\pi_h(a|s)`, success decided at the end with
:math:`P(S=1 \mid s_H = s) = \rho(s)`. Under pi:

- :math:`Q_h(s,a) = \sum_{s'} P_h(s'|s,a) V_{h+1}(s')`, :math:`V_H = \rho`,
  :math:`V_h(s) = \sum_a \pi_h(a|s) Q_h(s,a)`, :math:`J = \sum_s \mu_0(s) V_0(s) = P(S=1)`;
- occupancy :math:`d_0 = \mu_0`, :math:`d_{h+1}(s') = \sum_{s,a} d_h(s)\pi_h(a|s)P_h(s'|s,a)`;
- success-conditioned occupancy :math:`d^+_h(s) = P(s_h = s \mid S=1) = d_h(s) V_h(s) / J`.

Success conditioning per step h is :math:`\pi^+_h = \pi_h Q_h / V_h` (Bayes + Markov property); pooling the
successful pairs over h is not exact in finite horizon (see :func:`pooled_success_condition`).
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

from .core import check_distribution, check_success_probability, influence_terms, success_condition

__all__ = [
    "evaluate_policy", "rollout_estimate", "check_mdp", "random_bandit", "random_mdp",
    "success_conditioned_policy", "pooled_success_condition", "pdl_sum", "state_influence",
]


def check_mdp(P, rho, mu0, pi=None):
    """Validate a finite-horizon MDP (and optionally a policy); returns float arrays.

    P: (H, S, A, S) with every P_h(.|s,a) a distribution; rho: (S,) in [0, 1]; mu0: (S,) a distribution;
    pi: (H, S, A) with every pi_h(.|s) a distribution. ValueError names the offending argument.
    """
    P = np.asarray(P, dtype=float)
    if P.ndim != 4 or P.shape[1] != P.shape[3] or min(P.shape) == 0:
        raise ValueError(f"P: expected shape (H, S, A, S), got {P.shape}")
    P = check_distribution(P, "P")
    _, S, A, _ = P.shape
    rho = check_success_probability(rho, "rho")
    if rho.shape != (S,):
        raise ValueError(f"rho: expected shape ({S},) to match P, got {rho.shape}")
    mu0 = check_distribution(mu0, "mu0")
    if mu0.shape != (S,):
        raise ValueError(f"mu0: expected shape ({S},) to match P, got {mu0.shape}")
    if pi is None:
        return P, rho, mu0
    pi = np.asarray(pi, dtype=float)
    if pi.shape != P.shape[:3]:
        raise ValueError(f"pi: expected shape {P.shape[:3]} (H, S, A) to match P, got {pi.shape}")
    pi = check_distribution(pi, "pi")
    return P, rho, mu0, pi


def _evaluate(P, rho, mu0, pi) -> dict:
    H, S, A, _ = P.shape
    V = np.empty((H + 1, S))
    Q = np.empty((H, S, A))
    V[H] = rho
    for h in range(H - 1, -1, -1):
        Q[h] = np.clip(P[h] @ V[h + 1], 0.0, 1.0)  # rounding may leave [0, 1] by 1 ulp
        V[h] = np.clip(np.sum(pi[h] * Q[h], axis=1), 0.0, 1.0)
    d = np.empty((H, S))
    d[0] = mu0
    for h in range(H - 1):
        d[h + 1] = np.einsum("s,sa,sat->t", d[h], pi[h], P[h])
    J = float(mu0 @ V[0])
    d_plus = d * V[:H] / J if J > 0 else np.zeros((H, S))
    return {"Q": Q, "V": V[:H], "d": d, "d_plus": d_plus, "J": J, "V_terminal": V[H]}


def evaluate_policy(P, rho, mu0, pi) -> dict:
    r"""Exact evaluation of a Markov policy by backward and forward recursion.

    Returns ``Q`` (H,S,A), ``V`` (H,S), ``d`` (H,S) with :math:`d_h(s)=P(s_h=s)`, ``d_plus`` (H,S) with
    :math:`d^+_h(s) = d_h(s)V_h(s)/J` (zeros when J = 0) and ``J`` = P(S=1) (float).
    """
    P, rho, mu0, pi = check_mdp(P, rho, mu0, pi)
    out = _evaluate(P, rho, mu0, pi)
    out.pop("V_terminal")
    return out


def success_conditioned_policy(P, rho, mu0, pi) -> np.ndarray:
    r"""Exact per-step success conditioning :math:`\pi^+_h(a|s) = \pi_h(a|s) Q_h(s,a)/V_h(s)`; states with
    :math:`V_h(s)=0` keep pi."""
    ev = evaluate_policy(P, rho, mu0, pi)
    return success_condition(pi, ev["Q"], on_zero_value="keep")


def state_influence(pi, Q) -> dict:
    """:func:`core.influence_terms` on every (h, s) with V = 0 rows set to 0 (arrays of shape pi.shape[:-1])."""
    return influence_terms(pi, np.clip(Q, 0.0, 1.0), on_zero_value="keep")


def pooled_success_condition(pi, ev) -> np.ndarray:
    r"""Time-pooled SC policy (negative control; exact only for stationary absorbing problems):

    .. math:: \bar\pi^+(a|s) = \frac{\sum_h d_h(s) V_h(s) \pi^+_h(a|s)}{\sum_h d_h(s) V_h(s)},

    the maximum-likelihood stationary policy fitted to successful (s, a) pairs of all steps. Returned
    broadcast to shape (H, S, A); states never on a successful path keep pi_0.
    """
    pi = np.asarray(pi, dtype=float)
    pi_plus = success_condition(pi, np.clip(ev["Q"], 0.0, 1.0), on_zero_value="keep")
    weight = ev["d"] * ev["V"]
    total = weight.sum(axis=0)
    pooled = np.einsum("hs,hsa->sa", weight, pi_plus)
    pooled = np.where(total[:, None] > 0, pooled / np.where(total > 0, total, 1.0)[:, None], pi[0])
    return np.broadcast_to(pooled, pi.shape).copy()


def pdl_sum(d_new, V, influence) -> float:
    r"""Performance-difference sum :math:`\sum_h\sum_s d^{\pi^+}_h(s) V_h(s) I_h(s)`, equal to
    :math:`J(\pi^+) - J(\pi)` for exact SC (V and I under pi, occupancy under pi+)."""
    return float(np.sum(np.asarray(d_new) * np.asarray(V) * np.asarray(influence)))


# ------------------------------------------------------------------------------------------- random problems
def random_bandit(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A ~ U{2..5}; pi ~ Dirichlet(1_A); q_a = U_a^3. Returns (pi, q)."""
    A = int(rng.integers(2, 6))
    pi = rng.dirichlet(np.ones(A))
    q = rng.random(A) ** 3
    return pi, q


def random_mdp(rng: np.random.Generator, *, s_max: int = 6, a_max: int = 5, h_max: int = 5) -> dict:
    """S ~ U{2..s_max}, A ~ U{2..a_max}, H ~ U{1..h_max}; P_h(.|s,a) ~ Dirichlet(0.5 1_S); rho = U^3;
    mu0 ~ Dirichlet(1_S); pi_h(.|s) ~ Dirichlet(1_A). Returns a dict with P, rho, mu0, pi."""
    S = int(rng.integers(2, s_max + 1))
    A = int(rng.integers(2, a_max + 1))
    H = int(rng.integers(1, h_max + 1))
    P = rng.dirichlet(0.5 * np.ones(S), size=(H, S, A))
    rho = rng.random(S) ** 3
    mu0 = rng.dirichlet(np.ones(S))
    pi = rng.dirichlet(np.ones(A), size=(H, S))
    return {"P": P, "rho": rho, "mu0": mu0, "pi": pi}


# ------------------------------------------------------------------------------------------------ rollouts
def _sample_rows(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling: one index per row of ``cdf`` (n, K) for uniforms ``u`` (n,)."""
    idx = np.sum(u[:, None] >= cdf, axis=1)
    return np.minimum(idx, cdf.shape[1] - 1)


def rollout_estimate(P, rho, mu0, pi, n_rollouts, seed) -> dict:
    r"""Monte-Carlo rollouts of pi and the plug-in estimates of success conditioning.

    Counts ``n`` = n(h,s,a) and ``n_success`` = n_S(h,s,a) (H,S,A) over ``n_rollouts`` episodes (vectorised
    over episodes, inverse-CDF sampling). Plug-ins (NaN where the count in the denominator is 0):
    ``pi_hat`` = n(h,s,a)/n(h,s), ``q_hat`` = n_S(h,s,a)/n(h,s,a), ``v_hat`` = n_S(h,s)/n(h,s) (H,S) and the
    SFT solution ``pi_plus_hat`` = n_S(h,s,a)/n_S(h,s), which equals pi_hat q_hat / v_hat exactly.
    ``seed`` is an int or a numpy Generator. Also returns ``n_success_total``.
    """
    P, rho, mu0, pi = check_mdp(P, rho, mu0, pi)
    if isinstance(n_rollouts, bool) or not isinstance(n_rollouts, Integral) or n_rollouts < 1:
        raise ValueError(f"n_rollouts: must be an integer >= 1, got {n_rollouts!r}")
    n_rollouts = int(n_rollouts)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    H, S, A, _ = P.shape
    cdf_pi = np.cumsum(pi, axis=-1)
    cdf_P = np.cumsum(P, axis=-1)
    state = _sample_rows(np.broadcast_to(np.cumsum(mu0), (n_rollouts, S)), rng.random(n_rollouts))
    keys = np.empty((H, n_rollouts), dtype=np.int64)
    for h in range(H):
        action = _sample_rows(cdf_pi[h, state], rng.random(n_rollouts))
        keys[h] = (h * S + state) * A + action
        state = _sample_rows(cdf_P[h, state, action], rng.random(n_rollouts))
    success = rng.random(n_rollouts) < rho[state]
    size = H * S * A
    n = np.bincount(keys.ravel(), minlength=size).reshape(H, S, A).astype(float)
    n_success = np.bincount(keys[:, success].ravel(), minlength=size).reshape(H, S, A).astype(float)
    n_state, n_success_state = n.sum(axis=-1), n_success.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        pi_hat = n / n_state[..., None]
        q_hat = n_success / n
        v_hat = n_success_state / n_state
        pi_plus_hat = n_success / n_success_state[..., None]
    return {"n": n, "n_success": n_success, "pi_hat": pi_hat, "q_hat": q_hat, "v_hat": v_hat,
            "pi_plus_hat": pi_plus_hat, "n_success_total": int(success.sum())}
