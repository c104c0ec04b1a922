"""Baselines on the same regression oracles: SquareCB, FALCON, RegCB, AdaCB, epsilon-greedy, greedy, uniform,
supervised.

Every agent has ``act(context, rng) -> (action, distribution)`` and ``update(context, action, loss)``; the
supervised agent has ``full_information = True`` and ``update_full(context, losses)`` instead.
"""
from __future__ import annotations

import math

import numpy as np

from papers.opo_cmab.opo import (check_context, check_distribution, check_feedback, check_n_actions,
                                 sample_action, validate_nonneg)
from papers.opo_cmab.oracles import RidgeOracle

__all__ = ["igw_probs", "SquareCB", "FALCON", "RegCB", "AdaCB", "regcb_radius", "plausible_actions",
           "EpsilonGreedy", "Uniform", "Supervised", "greedy_set"]


def igw_probs(f_hat, gamma: float, *, best: int | None = None) -> np.ndarray:
    """Inverse-gap weighting (Abe & Long 1999; Foster & Rakhlin 2020, SquareCB).

    With b = argmin_a f_hat(a) (or ``best``, which must be a minimiser),

        p(a) = 1 / (A + gamma (f_hat(a) - f_hat(b)))  for a != b,     p(b) = 1 - sum_{a != b} p(a).

    p(b) >= 1/A in exact arithmetic; rounding can make it tiny negative, so it is clipped at 0 and the vector
    renormalised.
    """
    f = np.asarray(f_hat, dtype=float)
    if f.ndim != 1 or f.size < 1:
        raise ValueError(f"f_hat must be a non-empty 1-D array, got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError("f_hat contains NaN or Inf")
    gamma = validate_nonneg(gamma, "gamma")
    A = f.size
    b = int(np.argmin(f)) if best is None else int(best)
    if not 0 <= b < A or f[b] > f.min():
        raise ValueError(f"best must index a minimiser of f_hat, got {best!r}")
    p = 1.0 / (A + gamma * (f - f[b]))
    p[b] = 0.0
    p[b] = max(0.0, 1.0 - p.sum())
    return p / p.sum()


def greedy_set(f: np.ndarray) -> np.ndarray:
    """Indices of the minimisers of ``f`` (exact ties)."""
    return np.flatnonzero(f == f.min())


def _pick_best(f: np.ndarray, rng: np.random.Generator) -> int:
    ties = greedy_set(f)
    return int(ties[0]) if ties.size == 1 else int(ties[int(rng.integers(ties.size))])


class _OracleAgent:
    name = "agent"

    def __init__(self, n_actions: int, oracle):
        self.n_actions = check_n_actions(n_actions)
        if oracle.n_actions != self.n_actions:
            raise ValueError(f"oracle has {oracle.n_actions} actions, n_actions is {self.n_actions}")
        self.oracle = oracle
        self.t = 1

    def _finish(self, p: np.ndarray, rng) -> tuple[int, np.ndarray]:
        check_distribution(p, self.t, self.name)
        return sample_action(p, rng), p

    def update(self, context, action: int, loss: float) -> None:
        x = check_context(context, self.oracle.dim)
        action, loss = check_feedback(self.n_actions, action, loss)
        self.oracle.add(x, action, loss)
        self.t += 1


class SquareCB(_OracleAgent):
    """SquareCB (Foster & Rakhlin 2020): IGW on f_hat_t (trained on rounds < t, f_hat_1 = 0) with
    gamma_t = gamma_scale * t^gamma_exp (VW defaults 10 and 0.5); the greedy arm's ties are broken uniformly."""

    name = "squarecb"

    def __init__(self, n_actions: int, oracle, gamma_scale: float = 10.0, gamma_exp: float = 0.5):
        super().__init__(n_actions, oracle)
        self.gamma_scale = validate_nonneg(gamma_scale, "gamma_scale")
        self.gamma_exp = validate_nonneg(gamma_exp, "gamma_exp")

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        f = self.oracle.predict(check_context(context, self.oracle.dim))
        gamma_t = self.gamma_scale * self.t ** self.gamma_exp
        return self._finish(igw_probs(f, gamma_t, best=_pick_best(f, rng)), rng)


class FALCON(_OracleAgent):
    """FALCON (Simchi-Levi & Xu 2021), epoch version.

    Epoch 1 = rounds 1-2, played uniformly; epoch m >= 2 = rounds 2^{m-1} + 1 .. 2^m, acting by IGW on the ERM
    fitted on the data of epoch m - 1 only, with gamma_m = (gamma_scale / 30) sqrt(A tau / log(|F| tau / delta)),
    tau = 2^{m-1}. ``log_class_size`` (log |F|) defaults to the oracle's.
    """

    name = "falcon"

    def __init__(self, n_actions: int, oracle, gamma_scale: float = 1.0, delta: float = 0.05,
                 log_class_size: float | None = None):
        super().__init__(n_actions, oracle)
        self.gamma_scale = validate_nonneg(gamma_scale, "gamma_scale")
        self.delta = validate_nonneg(delta, "delta")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        log_f = oracle.log_class_size if log_class_size is None else log_class_size
        if log_f is None:
            raise ValueError("log_class_size is needed for an oracle without a finite class")
        self.log_class_size = validate_nonneg(log_f, "log_class_size")
        self.collecting = oracle.fresh()  # data of the current epoch
        self.model = None                 # ERM of the previous epoch (None in epoch 1)

    @staticmethod
    def epoch(t: int) -> int:
        """Epoch of round t: 1 for t <= 2, else m with 2^{m-1} < t <= 2^m."""
        return max(1, (int(t) - 1).bit_length())

    def gamma_m(self, m: int) -> float:
        tau = 2.0 ** (m - 1)
        return (self.gamma_scale / 30.0) * math.sqrt(self.n_actions * tau
                                                      / math.log(math.exp(self.log_class_size) * tau / self.delta))

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        x = check_context(context, self.oracle.dim)
        if self.model is None:
            return self._finish(np.full(self.n_actions, 1.0 / self.n_actions), rng)
        f = self.model.predict(x)
        return self._finish(igw_probs(f, self.gamma_m(self.epoch(self.t)), best=_pick_best(f, rng)), rng)

    def update(self, context, action: int, loss: float) -> None:
        x = check_context(context, self.oracle.dim)
        action, loss = check_feedback(self.n_actions, action, loss)
        self.collecting.add(x, action, loss)
        if self.t >= 2 and (self.t & (self.t - 1)) == 0:  # t = 2^m closes epoch m
            self.model, self.collecting = self.collecting, self.oracle.fresh()
        self.t += 1


def regcb_radius(c0: float, n_actions: int, n_obs: int) -> float:
    """Radius of the RegCB version space after ``n_obs`` observations: Delta = c0 log(|A| max(1, n_obs)).

    Foster et al. (2018) set Delta_t from a union bound (order log(|F| t / delta)) and tune a "mellowness"
    constant c0 in practice; the log(|A| n) form with losses in [0, 1] is the one of Vowpal Wabbit's ``--regcb``
    (the max(1, .) keeps it positive in the first two rounds).
    """
    c0 = validate_nonneg(c0, "c0")
    if isinstance(n_obs, bool) or int(n_obs) != n_obs or n_obs < 0:
        raise ValueError(f"n_obs must be a non-negative integer, got {n_obs!r}")
    return c0 * math.log(check_n_actions(n_actions) * max(1, int(n_obs)))


def plausible_actions(lcb, ucb) -> np.ndarray:
    """Indices of the actions that may be optimal for some fit in the version space:
    {a : lcb(a) <= min_b ucb(b)} (RegCB-elim's and AdaCB's candidate set; never empty)."""
    lcb, ucb = np.asarray(lcb, dtype=float), np.asarray(ucb, dtype=float)
    if lcb.ndim != 1 or lcb.shape != ucb.shape or lcb.size < 1:
        raise ValueError(f"lcb and ucb must be 1-D of the same length, got {lcb.shape} and {ucb.shape}")
    if not (np.all(np.isfinite(lcb)) and np.all(np.isfinite(ucb))):
        raise ValueError("lcb or ucb contains NaN or Inf")
    if np.any(lcb > ucb):
        raise ValueError("lcb must not exceed ucb")
    return np.flatnonzero(lcb <= ucb.min())


class RegCB(_OracleAgent):
    """RegCB-optimistic (Foster, Agarwal, Dudik, Luo & Schapire 2018, "Practical contextual bandits with
    regression oracles", Algorithm 2 in loss form).

    At round t with n = t - 1 observations, the version space is F_t = {f : R_t(f) - min_g R_t(g) <= Delta_t},
    R_t the empirical squared loss and Delta_t = :func:`regcb_radius` (c0 the tuned mellowness). The agent plays

        a_t = argmin_a LCB_t(x_t, a),   LCB_t(x, a) = min_{f in F_t} f(x, a)

    deterministically (ties uniform), i.e. optimism in the face of uncertainty. The bounds come from the
    oracle's ``confidence_bounds``: exact enumeration for the finite class, and for per-action ridge the closed
    form w_a . x - sqrt(Delta x^T A_a^{-1} x), which is the limit of the paper's binary search over an
    importance-weighted extra example (see :func:`papers.opo_cmab.oracles.ridge_bound_binary_search`).
    """

    name = "regcb"

    def __init__(self, n_actions: int, oracle, c0: float = 0.1):
        super().__init__(n_actions, oracle)
        self.c0 = validate_nonneg(c0, "c0")
        if not hasattr(oracle, "confidence_bounds"):
            raise ValueError("RegCB needs an oracle with confidence_bounds(context, radius)")

    def radius(self) -> float:
        return regcb_radius(self.c0, self.n_actions, self.t - 1)

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        x = check_context(context, self.oracle.dim)
        lcb, _ = self.oracle.confidence_bounds(x, self.radius())
        ties = greedy_set(lcb)
        p = np.zeros(self.n_actions)
        p[ties] = 1.0 / ties.size
        return self._finish(p, rng)


class AdaCB(_OracleAgent):
    """AdaCB core: inverse-gap weighting restricted to the RegCB plausible actions (action elimination + IGW).

    At round t: version-space bounds (LCB_t, UCB_t) with radius Delta_t = :func:`regcb_radius` (c0), the
    plausible set P_t(x) = {a : LCB_t(x, a) <= min_b UCB_t(x, b)} (:func:`plausible_actions`), b = argmin_{a in
    P_t} f_hat_t(x, a) (ties uniform) and

        p(a) = 1 / (|P_t| + gamma_t (f_hat_t(x, a) - f_hat_t(x, b)))  for a in P_t, a != b;   p(a) = 0 off P_t;
        p(b) = 1 - sum_{a != b} p(a),   gamma_t = gamma_scale * t^gamma_exp.

    This is the elimination core of the gap-adaptive AdaCB (Foster, Rakhlin, Simchi-Levi & Xu 2020,
    "Instance-dependent complexity of contextual bandits and reinforcement learning"; IGW over the disagreement
    set), as implemented by
    Vowpal Wabbit's ``--squarecb --elim``; the paper's epoch schedule with a gamma_m that adapts to the
    estimated size of the disagreement region is not built. When every action is plausible (e.g. a radius so
    large that the clipped ridge bounds are [0, 1]) it is SquareCB with the same gamma_t.
    """

    name = "adacb"

    def __init__(self, n_actions: int, oracle, gamma_scale: float = 10.0, c0: float = 0.1, gamma_exp: float = 0.5):
        super().__init__(n_actions, oracle)
        self.gamma_scale = validate_nonneg(gamma_scale, "gamma_scale")
        self.gamma_exp = validate_nonneg(gamma_exp, "gamma_exp")
        self.c0 = validate_nonneg(c0, "c0")
        if not hasattr(oracle, "confidence_bounds"):
            raise ValueError("AdaCB needs an oracle with confidence_bounds(context, radius)")

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        x = check_context(context, self.oracle.dim)
        lcb, ucb = self.oracle.confidence_bounds(x, regcb_radius(self.c0, self.n_actions, self.t - 1))
        keep = plausible_actions(lcb, ucb)
        f = self.oracle.predict(x)[keep]
        p = np.zeros(self.n_actions)
        p[keep] = igw_probs(f, self.gamma_scale * self.t ** self.gamma_exp, best=_pick_best(f, rng))
        return self._finish(p, rng)


class EpsilonGreedy(_OracleAgent):
    """Epsilon-greedy on f_hat_t: p = eps / A + (1 - eps) 1[a in argmin] / |argmin| (ties uniform).
    ``eps = 0`` is the greedy baseline."""

    def __init__(self, n_actions: int, oracle, eps: float = 0.05):
        super().__init__(n_actions, oracle)
        self.eps = validate_nonneg(eps, "eps")
        if self.eps > 1:
            raise ValueError(f"eps must lie in [0, 1], got {eps!r}")
        self.name = "greedy" if self.eps == 0 else "eps_greedy"

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        f = self.oracle.predict(check_context(context, self.oracle.dim))
        ties = greedy_set(f)
        p = np.full(self.n_actions, self.eps / self.n_actions)
        p[ties] += (1.0 - self.eps) / ties.size
        return self._finish(p, rng)


class Uniform:
    """Uniform play: p = 1 / A; learns nothing."""

    name = "uniform"

    def __init__(self, n_actions: int, dim: int | None = None):
        self.n_actions = check_n_actions(n_actions)
        self.dim = dim
        self.t = 1

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        p = np.full(self.n_actions, 1.0 / self.n_actions)
        return sample_action(p, rng), p

    def update(self, context, action: int, loss: float) -> None:
        check_feedback(self.n_actions, action, loss)
        self.t += 1


class Supervised:
    """Full-information floor: the same per-action ridge model, trained on the losses of every action each
    round, acting greedily (ties uniform)."""

    name = "supervised"
    full_information = True

    def __init__(self, n_actions: int, dim: int, lam: float = 1.0):
        self.n_actions = check_n_actions(n_actions)
        self.model = RidgeOracle(dim, self.n_actions, lam, keep_history=False)
        self.t = 1

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        f = self.model.predict(context)
        ties = greedy_set(f)
        p = np.zeros(self.n_actions)
        p[ties] = 1.0 / ties.size
        check_distribution(p, self.t, self.name)
        return sample_action(p, rng), p

    def update(self, context, action: int, loss: float) -> None:
        raise RuntimeError("Supervised learns from full information: call update_full(context, losses)")

    def update_full(self, context, losses) -> None:
        self.model.add_full(context, losses)
        self.t += 1
