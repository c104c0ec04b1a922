"""Optimistic policy optimisation for contextual bandits (OPO-CMAB), Levy & Mansour, ICML 2026.

Setting: at round t a context c_t ~ D arrives, the learner draws a_t ~ pi_t(c_t, .) over A actions and sees a
loss l_t in [0, 1] with E[l | c, a] = f*(c, a). An offline least-squares oracle returns f_hat_k, the ERM on
rounds 1..k-1 (f_hat_1 := 0). The policy is defined on every context and computed lazily by replaying

    pi_1(c, .) = uniform,   S_k(c, a) = 1 + sum_{i<k} pi_i(c, a)            (coverage, S_1 = 1)
    beta_k = gamma sqrt(k / A),   b_k(c, a) = min(1, (beta_k / 2) / S_k(c, a))   (bonus)
    l~_k(c, a) = max(0, f_hat_k(c, a) - b_k(c, a))                          (optimistic loss)
    pi_{k+1}(c, a) = pi_k(c, a) exp(-eta l~_k(c, a)) / Z_k                   (exponential weights)

in the order: l~_k with S_k, then S_{k+1} = S_k + pi_k, then the weight update. At round t the agent replays
k = 1..t-1 on c_t with the stored snapshots f_hat_1..f_hat_{t-1}: O(t A) per round, O(K^2 A) in total. The
replay loop is compiled with numba (``numba==0.68.1``); :func:`opo_policies_numpy` is the pure-numpy
reference (multiplicative weights, renormalised every step) that the compiled kernel (the same update with
one normalising multiply per step) must match to 1e-12.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["opo_policies", "opo_policies_numpy", "OPOCMAB", "check_distribution", "sample_action",
           "validate_nonneg", "HAVE_NUMBA"]

try:  # numba is pinned for this paper; the fallback keeps the reference path usable without it
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only in environments without numba
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        def wrap(fn):
            return fn
        return wrap(args[0]) if args and callable(args[0]) else wrap


PROB_TOL = 1e-9


@njit(cache=True)
def _replay(F_hat, eta, gamma, out, store_all):
    """Replay k = 1..T; writes pi_1..pi_{T+1} into ``out`` (or only pi_{T+1} into out[0]).

    Keeps pi_k as w_k / Z_k; each step normalises w by the previous Z (one multiply) before the update, so
    the weights stay on the probability scale and nothing underflows earlier than in the reference.
    """
    T, A = F_hat.shape
    w = np.full(A, 1.0 / A)
    S = np.ones(A)
    z = 1.0
    c = 0.5 * gamma / math.sqrt(A)
    if store_all:
        for a in range(A):
            out[0, a] = 1.0 / A
    for k in range(1, T + 1):
        half_beta = c * math.sqrt(k)
        inv_z = 1.0 / z
        z_next = 0.0
        for a in range(A):
            bonus = min(1.0, half_beta / S[a])
            lt = max(0.0, F_hat[k - 1, a] - bonus)
            p = w[a] * inv_z
            S[a] += p
            w[a] = p * math.exp(-eta * lt)
            z_next += w[a]
        z = z_next
        if store_all:
            for a in range(A):
                out[k, a] = w[a] / z
    if not store_all:
        for a in range(A):
            out[0, a] = w[a] / z


def validate_nonneg(value, name: str) -> float:
    """``value`` as a float, or ValueError naming ``name`` when it is NaN, infinite or negative."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-negative number, got {value!r}") from None
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
    return v


def _validate_F_hat(F_hat) -> np.ndarray:
    F = np.asarray(F_hat, dtype=float)
    if F.ndim != 2:
        raise ValueError(f"F_hat must be 2-D (T, n_actions), got shape {F.shape}")
    if F.shape[1] < 1:
        raise ValueError(f"F_hat must have at least one action (column), got shape {F.shape}")
    if not np.all(np.isfinite(F)):
        raise ValueError("F_hat contains NaN or Inf")
    if F.size and (F.min() < -1e-12 or F.max() > 1 + 1e-12):
        raise ValueError(f"F_hat values must lie in [0, 1], got range [{F.min()}, {F.max()}]")
    return np.ascontiguousarray(np.clip(F, 0.0, 1.0))


def opo_policies(F_hat, eta: float, gamma: float) -> np.ndarray:
    """Policies pi_1..pi_{T+1} of OPO-CMAB on one context (compiled replay).

    Parameters
    ----------
    F_hat : ndarray (T, A)
        Row k - 1 holds f_hat_k(c, .), the oracle snapshot trained on rounds < k (the caller supplies
        f_hat_1 = 0 as row 0). T >= 0.
    eta : float >= 0
        Step size of the exponential weights.
    gamma : float >= 0
        Bonus scale: beta_k = gamma sqrt(k / A), b_k = min(1, (beta_k / 2) / S_k).

    Returns
    -------
    ndarray (T + 1, A)
        Row k - 1 is pi_k; every row sums to one.

    With gamma = 0 and constant rows f, pi_k = softmax(-eta (k - 1) f) (no bonus, l~ = f).
    Reference: Levy & Mansour (2026), OPO-CMAB; update order from the authors' VW reduction.
    """
    F = _validate_F_hat(F_hat)
    eta = validate_nonneg(eta, "eta")
    gamma = validate_nonneg(gamma, "gamma")
    out = np.empty((F.shape[0] + 1, F.shape[1]))
    _replay(F, eta, gamma, out, True)
    return out


def opo_policies_numpy(F_hat, eta: float, gamma: float) -> np.ndarray:
    """Pure-numpy reference of :func:`opo_policies` (multiplicative weights, renormalised every step)."""
    F = _validate_F_hat(F_hat)
    eta = validate_nonneg(eta, "eta")
    gamma = validate_nonneg(gamma, "gamma")
    T, A = F.shape
    pi = np.full(A, 1.0 / A)
    S = np.ones(A)
    rows = [pi.copy()]
    for k in range(1, T + 1):
        bonus = np.minimum(1.0, (gamma * np.sqrt(k / A) / 2.0) / S)
        lt = np.maximum(0.0, F[k - 1] - bonus)
        S = S + pi
        w = pi * np.exp(-eta * lt)
        pi = w / w.sum()
        rows.append(pi.copy())
    return np.array(rows)


def _last_policy(F: np.ndarray, eta: float, gamma: float) -> np.ndarray:
    out = np.empty((1, F.shape[1]))
    _replay(np.ascontiguousarray(F, dtype=float), float(eta), float(gamma), out, False)
    return out[0]


def check_distribution(p: np.ndarray, round_: int, algorithm: str) -> np.ndarray:
    """Return ``p`` or raise RuntimeError naming the round and algorithm when it is not a distribution."""
    s = float(p.sum())
    if not (abs(s - 1.0) <= PROB_TOL and float(p.min()) >= -PROB_TOL):
        raise RuntimeError(f"algorithm {algorithm!r}, round {round_}: action probabilities sum to {s!r} "
                           f"(min {float(np.min(p))!r}), not a distribution (numerical bug)")
    return p


def sample_action(p: np.ndarray, rng: np.random.Generator) -> int:
    """Draw an action from ``p`` by inverting the CDF with one uniform draw."""
    cdf = np.cumsum(p)
    a = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return min(a, p.size - 1)


def check_n_actions(n_actions) -> int:
    """``n_actions`` as an int >= 2, or ValueError naming it."""
    if isinstance(n_actions, bool) or not isinstance(n_actions, (int, np.integer)) or n_actions < 2:
        raise ValueError(f"n_actions must be an integer >= 2, got {n_actions!r}")
    return int(n_actions)


def check_feedback(n_actions: int, action, loss) -> tuple[int, float]:
    """Validate an (action, loss) pair given to ``update``; ValueError naming the argument."""
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < n_actions:
        raise ValueError(f"action must be an integer in [0, {n_actions}), got {action!r}")
    loss = float(loss)
    if not (math.isfinite(loss) and 0.0 <= loss <= 1.0):
        raise ValueError(f"loss must lie in [0, 1], got {loss!r}")
    return int(action), loss


def check_context(context, dim: int) -> np.ndarray:
    """``context`` as a finite 1-D float array of length ``dim``; ValueError naming it otherwise."""
    x = np.asarray(context, dtype=float)
    if x.ndim != 1 or x.shape[0] != dim:
        raise ValueError(f"context must be 1-D of length {dim} (the oracle's dim), got shape {x.shape}")
    if not math.isfinite(float(x.sum())):  # the sum is finite iff every entry is (no overflow at these sizes)
        raise ValueError("context contains NaN or Inf")
    return x


class OPOCMAB:
    """OPO-CMAB agent: at round t, pi_t(c_t, .) from the replay of f_hat_1..f_hat_{t-1} on c_t.

    ``oracle`` follows the protocol ``add(context, action, loss)``, ``snapshot_predictions(context)`` ->
    (j + 1, A) after j calls of ``add`` (f_hat_1..f_hat_{j+1} on the context, row 0 all zeros) and ``dim``.
    The agent uses the first t - 1 rows at round t: f_hat_t, trained through round t - 1, first acts at t + 1.
    """

    name = "opo"

    def __init__(self, n_actions: int, eta: float, gamma: float, oracle):
        self.n_actions = check_n_actions(n_actions)
        self.eta = validate_nonneg(eta, "eta")
        self.gamma = validate_nonneg(gamma, "gamma")
        self.oracle = oracle
        self.t = 1  # the round about to be played

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        """(action, pi_t(context, .)) of the current round."""
        x = check_context(context, self.oracle.dim)
        preds = self.oracle.snapshot_predictions(x)
        if preds.shape != (self.t, self.n_actions):
            raise RuntimeError(f"oracle returned snapshot predictions of shape {preds.shape} at round {self.t}, "
                               f"expected {(self.t, self.n_actions)}")
        pi = _last_policy(preds[: self.t - 1], self.eta, self.gamma)
        check_distribution(pi, self.t, self.name)
        return sample_action(pi, rng), pi

    def update(self, context, action: int, loss: float) -> None:
        """Give (context, action, loss) of the current round to the oracle and move to the next round."""
        x = check_context(context, self.oracle.dim)
        action, loss = check_feedback(self.n_actions, action, loss)
        self.oracle.add(x, action, loss)
        self.t += 1
