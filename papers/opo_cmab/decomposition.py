"""Terms of the regret decomposition of Section 4 (Levy & Mansour 2026), recorded on held-out contexts.

[Reconstructed: the paper's text is not available here; the decomposition below is the standard one for
optimistic policy optimisation, with l~_k the optimistic loss of the algorithm and pi* the optimal policy.]
Per context c and round k (pi*(c) the point mass on argmin_a f*(c, a)):

    <pi_k - pi*, f*> =  <pi_k, f* - l~_k>        approximation error   (Lemmas 4.2, 4.3; Corollary 4.1)
                      + <pi_k - pi*, l~_k>        policy suboptimality  (Lemma 4.4: O(sqrt(K log|A|)))
                      + <pi*, l~_k - f*>          optimism              (Lemma 4.5)

and the regret is the sum over k of the expectation over c ~ D. Quantities recorded besides the three terms:

- ``bonus``: <pi_k, b_k>, whose sum over k Lemma 4.2 bounds; for every sequence of policies (potential
  argument, x / (1 + s) <= 2 log((1 + s + x) / (1 + s)) for x in [0, 1]) it is at most
  beta_K |A| log(1 + K / |A|) (:func:`bonus_bound`);
- ``sq_err``: E_{a ~ pi_k} (f_hat_k(c, a) - f*(c, a))^2, the oracle's error on the data the policy collects;
  with Corollary 4.1 and the coverage potential its sum over k grows polylogarithmically in K when f* is in F;
- ``past_sq_err``: sum_{i<k} E_{a ~ pi_i} (f_hat_k - f*)^2 = <S_k - 1, (f_hat_k - f*)^2>, the quantity that
  Corollary 4.1 bounds by O(log(|F| K / delta)) for every k (f_hat_k is the ERM on the data of pi_1..pi_{k-1}).

The expectation over c is estimated on contexts drawn from D that the run never saw.
"""
from __future__ import annotations

import math

import numpy as np

from papers.opo_cmab.opo import _validate_F_hat, opo_policies, validate_nonneg

__all__ = ["TERMS", "replay_terms", "mean_terms", "bonus_bound", "hedge_bound"]

TERMS = ("subopt", "approx", "optimism", "bonus", "sq_err", "past_sq_err")


def _check_probability_rows(policies, shape) -> np.ndarray:
    P = np.asarray(policies, dtype=float)
    if P.shape != shape:
        raise ValueError(f"policies must have shape {shape} (pi_1..pi_K), got {P.shape}")
    if not np.all(np.isfinite(P)) or P.min() < -1e-12 or np.max(np.abs(P.sum(axis=1) - 1.0)) > 1e-9:
        raise ValueError("policies must be finite rows that sum to one")
    return P


def replay_terms(F_hat, policies, f_star, gamma: float) -> dict[str, np.ndarray]:
    """Per-round terms of the decomposition on one context, each of shape (K,) (row k - 1 is round k).

    Parameters
    ----------
    F_hat : ndarray (K, A)
        f_hat_1..f_hat_K on the context (row 0 is f_hat_1 = 0 for the algorithm).
    policies : ndarray (K, A)
        pi_1..pi_K on the context (the first K rows of :func:`papers.opo_cmab.opo.opo_policies`).
    f_star : ndarray (A,)
        f*(c, .), the true expected losses.
    gamma : float >= 0
        Bonus scale: S_k = 1 + sum_{i<k} pi_i, b_k = min(1, gamma sqrt(k / A) / 2 / S_k),
        l~_k = max(0, f_hat_k - b_k) (the algorithm's own formulas, Section 3).
    """
    F = _validate_F_hat(F_hat)
    K, A = F.shape
    P = _check_probability_rows(policies, (K, A))
    f = np.asarray(f_star, dtype=float)
    if f.shape != (A,) or not np.all(np.isfinite(f)):
        raise ValueError(f"f_star must be a finite vector of length {A}, got shape {f.shape}")
    gamma = validate_nonneg(gamma, "gamma")
    past = np.vstack([np.zeros((1, A)), np.cumsum(P[:-1], axis=0)])          # sum_{i<k} pi_i
    half_beta = 0.5 * gamma * np.sqrt(np.arange(1, K + 1) / A)
    bonus = np.minimum(1.0, half_beta[:, None] / (1.0 + past))
    tilde = np.maximum(0.0, F - bonus)
    best = int(np.argmin(f))
    err2 = (F - f) ** 2
    return {"subopt": np.sum(P * tilde, axis=1) - tilde[:, best],
            "approx": np.sum(P * (f - tilde), axis=1),
            "optimism": tilde[:, best] - f[best],
            "bonus": np.sum(P * bonus, axis=1),
            "sq_err": np.sum(P * err2, axis=1),
            "past_sq_err": np.sum(past * err2, axis=1)}


def mean_terms(oracle, contexts, f_star_rows, n_rounds: int, eta: float, gamma: float) -> dict[str, np.ndarray]:
    """Per-round terms averaged over ``contexts`` (M, dim), for OPO-CMAB with (eta, gamma) on ``oracle``.

    ``oracle`` must have seen at least ``n_rounds`` observations; f_hat_1..f_hat_K are its first K snapshots
    and pi_1..pi_K the compiled replay on each context (exactly what the agent played there).
    ``f_star_rows`` (M, A) holds f* on the contexts.
    """
    contexts = np.asarray(contexts, dtype=float)
    f_star_rows = np.asarray(f_star_rows, dtype=float)
    if contexts.ndim != 2 or contexts.shape[0] < 1 or f_star_rows.shape[0] != contexts.shape[0]:
        raise ValueError(f"contexts (M, dim) and f_star_rows (M, A) must have the same M >= 1, got "
                         f"{contexts.shape} and {f_star_rows.shape}")
    K = int(n_rounds)
    total = None
    for c, f in zip(contexts, f_star_rows):
        preds = oracle.snapshot_predictions(c)
        if preds.shape[0] < K:
            raise ValueError(f"the oracle holds {preds.shape[0]} snapshots, fewer than n_rounds={K}")
        F = preds[:K]
        terms = replay_terms(F, opo_policies(F, eta, gamma)[:K], f, gamma)
        total = terms if total is None else {k: total[k] + v for k, v in terms.items()}
    return {k: v / contexts.shape[0] for k, v in total.items()}


def bonus_bound(K: int, n_actions: int, gamma: float) -> float:
    """Lemma 4.2's bound with its constants: sum_k <pi_k, b_k> <= beta_K |A| log(1 + K / |A|), beta_K =
    gamma sqrt(K / |A|); from b_k <= (beta_K / 2) / S_k, sum_k pi_k(a) / S_k(a) <= 2 log(1 + sum_k pi_k(a)) and
    the concavity of log over the |A| actions."""
    if K < 1 or n_actions < 1:
        raise ValueError(f"K and n_actions must be positive, got {K}, {n_actions}")
    gamma = validate_nonneg(gamma, "gamma")
    return gamma * math.sqrt(K / n_actions) * n_actions * math.log(1.0 + K / n_actions)


def hedge_bound(K: int, n_actions: int, eta: float) -> float:
    """The exponential-weights bound behind Lemma 4.4 for losses in [0, 1] and any comparator:
    sum_k <pi_k - u, l_k> <= log|A| / eta + eta K / 2 (from exp(-x) <= 1 - x + x^2 / 2, x >= 0); at
    eta = sqrt(log|A| / K) it equals 1.5 sqrt(K log|A|)."""
    eta = validate_nonneg(eta, "eta")
    if eta == 0 or K < 1 or n_actions < 2:
        raise ValueError(f"hedge_bound needs eta > 0, K >= 1 and n_actions >= 2, got {eta}, {K}, {n_actions}")
    return math.log(n_actions) / eta + eta * K / 2.0
