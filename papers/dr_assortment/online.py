"""Online (bandit) variant: explore-then-commit on the contextual MNL parameter, then robust decisions.

The paper's own bandit algorithm is unknown; this is the spec's optional explore-then-commit (ETC) variant.
Rounds ``t = 1..T`` each bring a context ``phi_t`` (``N x d``). During the first ``T0`` rounds a uniformly random
assortment of ``offer_size`` items is offered and the choice is logged; then ``theta_hat`` is the MLE on those
``T0`` rounds and every later round offers ``DRAO(exp(theta_hat^T phi_t))`` (or, for the non-robust contrast,
the nominal MNL optimum under ``theta_hat``). The robust regret of a round is
``R_rho(S*(x); theta*) - R_rho(S_t; theta*) >= 0``.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ._checks import check_capacity, check_divergence, check_rho
from .mnl import solve_mnl_assortment
from .robust import robust_revenue, solve_drao

POLICIES = ("robust", "nominal")


def etc_exploration_length(horizon: int, coef: float) -> int:
    r"""Exploration length :math:`T_0 = \min(T, \lceil c\,T^{2/3}\rceil)` of explore-then-commit.

    :math:`T^{2/3}` balances the exploration cost :math:`T_0` against a commit cost :math:`T\,T_0^{-1/2}`
    (a decision gap of order :math:`n^{-1/2}` after :math:`n` samples), which gives regret of order
    :math:`T^{2/3}`.
    """
    if isinstance(horizon, bool) or not isinstance(horizon, numbers.Integral) or horizon < 1:
        raise ValueError(f"horizon must be a positive int, got {horizon!r}")
    if isinstance(coef, bool) or not isinstance(coef, numbers.Real) or not math.isfinite(coef) or coef <= 0:
        raise ValueError(f"coef must be a positive finite number, got {coef!r}")
    # the small relative slack keeps exact cubes (T = k^3, c = 1) from rounding up through float error
    return int(min(int(horizon), max(1, math.ceil(coef * float(horizon) ** (2.0 / 3.0) * (1.0 - 1e-12)))))


def etc_expected_regret(horizon: int, explore_len: int, explore_gap: float, commit_gap: float) -> float:
    """Expected cumulative regret ``T0 * explore_gap + (T - T0) * commit_gap`` of explore-then-commit.

    ``explore_gap`` is the expected per-round regret of the random exploration offers and ``commit_gap`` the
    expected per-round regret of the committed policy (both expectations over contexts).
    """
    if isinstance(horizon, bool) or not isinstance(horizon, numbers.Integral) or horizon < 1:
        raise ValueError(f"horizon must be a positive int, got {horizon!r}")
    if (isinstance(explore_len, bool) or not isinstance(explore_len, numbers.Integral)
            or not 0 <= explore_len <= horizon):
        raise ValueError(f"explore_len must be an int in [0, horizon = {horizon}], got {explore_len!r}")
    for name, gap in (("explore_gap", explore_gap), ("commit_gap", commit_gap)):
        if not isinstance(gap, numbers.Real) or not math.isfinite(gap) or gap < 0:
            raise ValueError(f"{name} must be a finite number >= 0 (a regret), got {gap!r}")
    return float(explore_len * explore_gap + (horizon - explore_len) * commit_gap)


def robust_decision_gaps(test_features, theta_true, theta_hat, r, rho: float, divergence: str,
                         capacity: int | None = None, policy: str = "robust", best=None) -> np.ndarray:
    """Per-context robust regret ``R(S*(x); theta*) - R(S_hat(x); theta*)`` of a plug-in decision.

    ``test_features``: (m, N, d). ``policy="robust"``: ``S_hat = DRAO(exp(theta_hat^T phi))``;
    ``policy="nominal"``: ``S_hat`` = the nominal MNL optimum under ``theta_hat`` (ignores the ambiguity).
    ``best``: optional precomputed robust optima under ``theta_true`` (a list of ``Assortment``).
    """
    feats = np.asarray(test_features, dtype=float)
    if feats.ndim != 3:
        raise ValueError(f"test_features must be 3-D (m, N, d), got shape {feats.shape}")
    theta_true = np.asarray(theta_true, dtype=float)
    theta_hat = np.asarray(theta_hat, dtype=float)
    for name, th in (("theta_true", theta_true), ("theta_hat", theta_hat)):
        if th.shape != (feats.shape[2],) or not np.all(np.isfinite(th)):
            raise ValueError(f"{name} must be a finite vector of length d = {feats.shape[2]}, got shape {th.shape}")
    divergence = check_divergence(divergence)
    rho = check_rho(rho, divergence)
    capacity = check_capacity(capacity)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {list(POLICIES)}, got {policy!r}")
    if best is not None and len(best) != feats.shape[0]:
        raise ValueError(f"best must hold one assortment per test context ({feats.shape[0]}), got {len(best)}")
    v_true = np.exp(feats @ theta_true)
    v_hat = np.exp(feats @ theta_hat)
    gaps = np.empty(feats.shape[0])
    for x in range(feats.shape[0]):
        opt = best[x] if best is not None else solve_drao(v_true[x], r, rho, divergence, capacity)
        if policy == "robust":
            s_hat = solve_drao(v_hat[x], r, rho, divergence, capacity).items
        else:
            s_hat = solve_mnl_assortment(v_hat[x], r, capacity).items
        gaps[x] = 0.0 if s_hat == opt.items else opt.value - robust_revenue(v_true[x], r, s_hat, rho, divergence)
    return gaps
