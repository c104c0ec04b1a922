"""MNL bandits: the epoch-based UCB of Agrawal, Avadhanula, Goyal & Zeevi (Operations Research 2019) and an
optimistic distributionally robust variant that maximises the robust revenue of the upper confidence weights.

Both learners share the estimator and the confidence bonus; they differ only in the objective they maximise.

Epochs. In epoch l the learner offers S_l in every round until a customer picks the outside option (the epoch
ends with that round). The number of purchases of item i in the epoch, ``vtilde_{i,l}``, is an unbiased
estimate of v_i (a geometric count with mean v_i under MNL); ``vbar_i`` is its mean over the ``n_i`` epochs that
offered i, and the upper confidence weight is

    v_i^UCB = vbar_i + sqrt(c * vbar_i * log(sqrt(N) l + 1) / n_i) + c * log(sqrt(N) l + 1) / n_i,

with c = 48 in the paper's analysis (``bonus`` multiplies it). Items never offered have v_i^UCB = ``v_init``.

Objectives. ``nominal``: S_l = argmax_S Rev(S; v^UCB) (Agrawal et al.). ``robust``: S_l = argmax_S
R_rho'(S; v^UCB) with the learner's radius rho' (``learner_rho``, default the evaluation radius rho).
``random``: a uniformly random assortment of ``min(C, ceil(N / 2))`` items in every epoch (no learning; a control). Optimism carries over: for a fixed dual variable the robust objective is an increasing map of
an MNL revenue with non-negative pseudo-revenues, whose optimum over S is non-decreasing in v (Agrawal et al.,
Lemma 4.2); the maximum over the dual variable keeps that monotonicity, so max_S R_rho(S; v^UCB) >=
max_S R_rho(S; v) whenever v^UCB >= v.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import check_capacity, check_divergence, check_rho, check_vr
from .mnl import choice_probabilities, solve_mnl_assortment
from .robust import robust_revenue, solve_drao, worst_case_distribution

__all__ = ["OBJECTIVES", "BanditRun", "ucb_weights", "run_mnl_bandit"]

OBJECTIVES = ("robust", "nominal", "random")


@dataclass
class BanditRun:
    """One run of :func:`run_mnl_bandit` over ``horizon`` rounds.

    ``robust_regret[t]`` = sum_{s <= t} R_rho(S*_rho) - R_rho(S_s) (robust pseudo-regret, exact values);
    ``shift_regret[t]`` = sum_{s <= t} R_rho(S*_rho) - r(c'_s), the realised regret against revenue booked from
    customers c'_s drawn from the worst-case choice distribution of S_s in the rho-ball (the distribution shift);
    ``nominal_regret[t]`` = sum_{s <= t} Rev(S*_0) - r(c_s), the realised regret without shift (c_s are the
    learning customers, drawn from the MNL model). ``n_epochs``: epochs used; ``final_set``: last offer.
    """

    robust_regret: np.ndarray
    shift_regret: np.ndarray
    nominal_regret: np.ndarray
    n_epochs: int
    final_set: tuple[int, ...]


def ucb_weights(vbar: np.ndarray, counts: np.ndarray, epoch: int, *, bonus: float = 1.0,
                v_init: float = 1.0) -> np.ndarray:
    """Upper confidence weights of Agrawal et al. (2019), eq. (9), with c = 48 * ``bonus``."""
    vbar, counts = np.asarray(vbar, float), np.asarray(counts, float)
    if vbar.shape != counts.shape or np.any(counts < 0) or np.any(vbar < 0):
        raise ValueError("vbar and counts must be non-negative arrays of the same shape")
    if epoch < 1 or bonus < 0 or v_init <= 0:
        raise ValueError(f"need epoch >= 1, bonus >= 0 and v_init > 0, got {epoch}, {bonus}, {v_init}")
    c = 48.0 * bonus
    log_term = math.log(math.sqrt(vbar.size) * epoch + 1.0)
    out = np.full(vbar.shape, float(v_init))
    seen = counts > 0
    n = counts[seen]
    out[seen] = vbar[seen] + np.sqrt(c * vbar[seen] * log_term / n) + c * log_term / n
    return out


def _sample(rng: np.random.Generator, probs: np.ndarray) -> int:
    """Index of one draw from ``probs`` (entry 0 = the outside option)."""
    return int(min(np.searchsorted(np.cumsum(probs), rng.random() * probs.sum(), side="right"), probs.size - 1))


def run_mnl_bandit(v, r, horizon: int, rng: np.random.Generator, *, objective: str, rho: float,
                   divergence: str = "kl", capacity: int | None = None, bonus: float = 1.0,
                   v_init: float = 1.0, learner_rho: float | None = None) -> BanditRun:
    """Run the epoch-based UCB learner with ``objective`` (``robust`` or ``nominal``) for ``horizon`` rounds
    on an MNL with true weights ``v`` and revenues ``r``; regrets are measured against the robust objective
    R_rho (``divergence``, ``rho``) and, for ``nominal_regret``, against the nominal revenue.

    One generator ``rng`` draws, per round, the learning customer's choice (from the MNL of the offer) and then
    the shifted customer's choice (from the worst-case distribution of the offer in the rho-ball); the
    ``random`` objective draws its offer from ``rng`` at the start of each epoch.
    """
    v, r = check_vr(v, r)
    divergence = check_divergence(divergence)
    rho = check_rho(rho, divergence)
    capacity = check_capacity(capacity)
    learner_rho = rho if learner_rho is None else check_rho(learner_rho, divergence)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {list(OBJECTIVES)}, got {objective!r}")
    if isinstance(horizon, bool) or int(horizon) != horizon or horizon < 1:
        raise ValueError(f"horizon must be a positive int, got {horizon!r}")
    n = v.size
    best_rob = solve_drao(v, r, rho, divergence, capacity).value
    best_nom = solve_mnl_assortment(v, r, capacity).value
    cache: dict = {}

    def offer_stats(S):
        if S not in cache:
            q = worst_case_distribution(v, r, list(S), rho, divergence) if S else np.ones(1)
            cache[S] = (robust_revenue(v, r, list(S), rho, divergence) if S else 0.0,
                        choice_probabilities(v, list(S)), q, np.concatenate(([0.0], r[list(S)])))
        return cache[S]

    vsum, counts = np.zeros(n), np.zeros(n)
    rob_reg, shift_reg, nom_reg = np.empty(horizon), np.empty(horizon), np.empty(horizon)
    acc = [0.0, 0.0, 0.0]
    t, epoch, S = 0, 0, ()
    while t < horizon:
        epoch += 1
        w = ucb_weights(np.divide(vsum, counts, out=np.zeros(n), where=counts > 0), counts, epoch, bonus=bonus,
                        v_init=v_init)
        w = np.maximum(w, 1e-12)  # an item never bought has vbar = 0; without a bonus its weight would be 0
        if objective == "robust":
            S = solve_drao(w, r, learner_rho, divergence, capacity).items
        elif objective == "nominal":
            S = solve_mnl_assortment(w, r, capacity).items
        else:
            size = min(n if capacity is None else capacity, math.ceil(n / 2))
            S = tuple(sorted(int(i) for i in rng.choice(n, size=size, replace=False)))
        value, p, q, rev = offer_stats(S)
        purchases = np.zeros(len(S))
        while t < horizon:
            c = _sample(rng, p)
            c_shift = _sample(rng, q)
            acc[0] += best_rob - value
            acc[1] += best_rob - rev[c_shift]
            acc[2] += best_nom - rev[c]
            rob_reg[t], shift_reg[t], nom_reg[t] = acc
            t += 1
            if c == 0:
                break
            purchases[c - 1] += 1
        else:
            break  # horizon reached inside the epoch: its counts are not used
        idx = list(S)
        vsum[idx] += purchases
        counts[idx] += 1
    return BanditRun(rob_reg, shift_reg, nom_reg, epoch, tuple(S))
