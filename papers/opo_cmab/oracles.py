"""Least-squares regression oracles with snapshots (the offline oracle of OPO-CMAB).

Protocol (used by :class:`papers.opo_cmab.opo.OPOCMAB` and the baselines):

- ``add(context, action, loss)``: one more observation;
- ``snapshot_predictions(context)`` -> ndarray (j + 1, A) after j calls of ``add``: row k - 1 is f_hat_k on the
  context, where f_hat_k is the fit on the first k - 1 observations; row 0 is all zeros (f_hat_1 := 0);
- ``predict(context)`` -> ndarray (A,): the newest fit f_hat_{j+1} on the context (the last snapshot row);
- ``fresh()``: an empty oracle of the same class (FALCON refits per epoch);
- ``dim``, ``n_actions`` and ``log_class_size`` (log |F|, or None for an infinite class);
- ``confidence_bounds(context, radius)`` -> (lcb, ucb), each (A,): the smallest and largest prediction on the
  context among the fits whose empirical squared loss is within ``radius`` of the ERM's (the version space of
  RegCB, Foster et al. 2018); used by :class:`papers.opo_cmab.baselines.RegCB` and ``AdaCB``.

Snapshots are stored states (a model index, or weight vectors), never refits of old oracles.
"""
from __future__ import annotations

import math

import numpy as np

from papers.opo_cmab.opo import check_context, check_feedback, check_n_actions, validate_nonneg

__all__ = ["FiniteClassOracle", "RidgeOracle", "sigmoid", "ridge_confidence_bounds", "ridge_bound_binary_search"]


def sigmoid(z):
    """Logistic function 1 / (1 + exp(-z)), computed without overflow."""
    z = np.asarray(z, dtype=float)
    return 0.5 + 0.5 * np.tanh(0.5 * z)  # = 1 / (1 + exp(-z)), without overflow


class _Growing:
    """An append-only array with amortised doubling (rows of a fixed trailing shape)."""

    def __init__(self, row_shape, dtype=float, capacity: int = 256):
        self.data = np.zeros((capacity, *row_shape), dtype=dtype)
        self.n = 0

    def append(self, row) -> None:
        if self.n == self.data.shape[0]:
            bigger = np.zeros((2 * self.data.shape[0], *self.data.shape[1:]), dtype=self.data.dtype)
            bigger[: self.n] = self.data[: self.n]
            self.data = bigger
        self.data[self.n] = row
        self.n += 1

    def view(self) -> np.ndarray:
        return self.data[: self.n]


class FiniteClassOracle:
    """Exact ERM over a finite class f_j(x, a) = sigmoid(thetas[j, a] . x), j = 1..|F|.

    Keeps the cumulative squared losses L_j = sum_i (f_j(x_i, a_i) - l_i)^2; the fit after j observations is
    argmin_j L_j, ties broken uniformly at random by the oracle's own generator (seeded by ``seed``). A snapshot
    is a model index, so f_hat_k(c, .) is one lookup in the |F| x A prediction table of c.
    """

    def __init__(self, thetas, seed: int):
        thetas = np.asarray(thetas, dtype=float)
        if thetas.ndim != 3 or min(thetas.shape) < 1:
            raise ValueError(f"thetas must be a non-empty 3-D array (n_models, n_actions, dim), got shape "
                             f"{thetas.shape}")
        if not np.all(np.isfinite(thetas)):
            raise ValueError("thetas contains NaN or Inf")
        self.thetas = thetas
        self._by_action = np.ascontiguousarray(thetas.transpose(1, 0, 2))  # (A, |F|, dim)
        self.n_models, self.n_actions, self.dim = thetas.shape
        self.log_class_size = math.log(self.n_models)
        self._rng = np.random.default_rng(seed)
        self.cum_loss = np.zeros(self.n_models)
        self._indices = _Growing((), dtype=np.int64)

    @property
    def n_obs(self) -> int:
        return self._indices.n

    def _erm(self) -> int:
        ties = np.flatnonzero(self.cum_loss == self.cum_loss.min())
        return int(ties[0]) if ties.size == 1 else int(self._rng.choice(ties))

    def add(self, context, action: int, loss: float) -> None:
        """L_j += (f_j(x, a) - l)^2 for every model j, then store the new ERM index as a snapshot."""
        x = check_context(context, self.dim)
        action, loss = check_feedback(self.n_actions, action, loss)
        pred = sigmoid(self._by_action[action] @ x)
        self.cum_loss += (pred - loss) ** 2
        self._indices.append(self._erm())

    def table(self, context) -> np.ndarray:
        """Predictions of every model on the context, shape (|F|, A)."""
        return sigmoid(self.thetas @ check_context(context, self.dim))

    def snapshot_predictions(self, context) -> np.ndarray:
        """(j + 1, A): row 0 zeros, row k (k >= 1) the ERM after k observations, on the context."""
        table = self.table(context)
        out = np.empty((self.n_obs + 1, self.n_actions))
        out[0] = 0.0
        np.take(table, self._indices.view(), axis=0, out=out[1:])
        return out

    def predict(self, context) -> np.ndarray:
        """The newest fit on the context (zeros before any observation)."""
        if not self.n_obs:
            check_context(context, self.dim)
            return np.zeros(self.n_actions)
        x = check_context(context, self.dim)
        return sigmoid(self.thetas[self._indices.data[self.n_obs - 1]] @ x)

    def confidence_bounds(self, context, radius: float) -> tuple[np.ndarray, np.ndarray]:
        """Version-space bounds on the context: with L_j the cumulative squared losses and
        F_r = {j : L_j <= min_i L_i + radius},  lcb(a) = min_{j in F_r} f_j(x, a),  ucb(a) = max_{j in F_r} f_j(x, a).

        On a finite class the version space is enumerated, so these are the exact minimum and maximum that
        RegCB's oracle calls (binary search over an importance weight) approximate. Before any observation
        every L_j = 0, so the bounds are the range of the whole class.
        """
        radius = validate_nonneg(radius, "radius")
        table = self.table(context)
        keep = self.cum_loss <= self.cum_loss.min() + radius
        sub = table[keep]
        return sub.min(axis=0), sub.max(axis=0)

    def fresh(self) -> "FiniteClassOracle":
        """An empty oracle on the same class; its tie-breaking generator is drawn from this one's."""
        return FiniteClassOracle(self.thetas, int(self._rng.integers(2 ** 63 - 1)))


class RidgeOracle:
    """Per-action ridge regression of the loss on the context, updated recursively; predictions in [0, 1].

    For action a: A_a = lam I + sum_{i: a_i = a} x_i x_i^T, w_a = A_a^{-1} sum_{i: a_i = a} l_i x_i; A_a^{-1} is
    updated by Sherman-Morrison, A^{-1} <- A^{-1} - (A^{-1} x)(A^{-1} x)^T / (1 + x^T A^{-1} x). Prediction
    f(x, a) = clip(w_a . x, 0, 1). A snapshot is the (A, dim) weight matrix; it is stored compactly as one
    weight version per action (only the played action's weights change in a round) and a version table.
    ``keep_history=False`` keeps only the newest weights (for the full-information Supervised baseline).
    """

    log_class_size = None

    def __init__(self, dim: int, n_actions: int, lam: float = 1.0, keep_history: bool = True):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.dim = int(dim)
        self.n_actions = check_n_actions(n_actions)
        self.lam = validate_nonneg(lam, "lam")
        if self.lam == 0:
            raise ValueError("lam must be positive, got 0")
        self.keep_history = bool(keep_history)
        self.ainv = np.repeat(np.eye(self.dim)[None] / self.lam, self.n_actions, axis=0)
        self.b = np.zeros((self.n_actions, self.dim))
        self.w = np.zeros((self.n_actions, self.dim))
        self.n_obs = 0
        if self.keep_history:
            self._versions = [_Growing((self.dim,)) for _ in range(self.n_actions)]
            for hist in self._versions:
                hist.append(np.zeros(self.dim))  # version 0: no data, prediction 0
            self._table = _Growing((self.n_actions,), dtype=np.int64)
            self._table.append(np.zeros(self.n_actions, dtype=np.int64))

    def _update_action(self, x: np.ndarray, action: int, loss: float) -> None:
        ax = self.ainv[action] @ x
        self.ainv[action] -= np.outer(ax, ax) / (1.0 + x @ ax)
        self.b[action] += loss * x
        self.w[action] = self.ainv[action] @ self.b[action]

    def add(self, context, action: int, loss: float) -> None:
        """One Sherman-Morrison update of the played action; store the new snapshot."""
        x = check_context(context, self.dim)
        action, loss = check_feedback(self.n_actions, action, loss)
        self._update_action(x, action, loss)
        self.n_obs += 1
        if self.keep_history:
            self._versions[action].append(self.w[action])
            row = self._table.data[self._table.n - 1].copy()
            row[action] = self._versions[action].n - 1
            self._table.append(row)

    def add_full(self, context, losses) -> None:
        """Full information: update every action with its loss (one observation per action)."""
        x = check_context(context, self.dim)
        losses = np.asarray(losses, dtype=float)
        if losses.shape != (self.n_actions,) or np.any(~np.isfinite(losses)) or losses.min() < 0 or losses.max() > 1:
            raise ValueError(f"losses must be a vector of {self.n_actions} values in [0, 1], got {losses!r}")
        if self.keep_history:
            raise ValueError("add_full needs keep_history=False (full-information fits keep no snapshots)")
        for a in range(self.n_actions):
            self._update_action(x, a, float(losses[a]))
        self.n_obs += 1

    def predict(self, context) -> np.ndarray:
        """clip(W x, 0, 1) with the newest weights W (A, dim)."""
        return np.clip(self.w @ check_context(context, self.dim), 0.0, 1.0)

    def snapshot_predictions(self, context) -> np.ndarray:
        """(j + 1, A): row k - 1 = clip(W_k x, 0, 1), W_k the weights after k - 1 observations (W_1 = 0)."""
        if not self.keep_history:
            raise ValueError("snapshot_predictions needs keep_history=True")
        x = check_context(context, self.dim)
        table = self._table.view()
        out = np.empty(table.shape, dtype=float)
        for a in range(self.n_actions):
            preds = np.clip(self._versions[a].view() @ x, 0.0, 1.0)
            out[:, a] = preds[table[:, a]]
        return out

    def confidence_bounds(self, context, radius: float) -> tuple[np.ndarray, np.ndarray]:
        """RegCB bounds of the per-action ridge fits in closed form (:func:`ridge_confidence_bounds`)."""
        x = check_context(context, self.dim)
        return ridge_confidence_bounds(self.w, self.ainv, x, radius)

    def fresh(self) -> "RidgeOracle":
        """An empty oracle with the same dim, actions and lam."""
        return RidgeOracle(self.dim, self.n_actions, self.lam, self.keep_history)


def ridge_confidence_bounds(w, ainv, x, radius: float) -> tuple[np.ndarray, np.ndarray]:
    r"""RegCB confidence bounds of per-action ridge regression, in closed form, clipped to [0, 1].

    For action a the ridge objective is L_a(v) = sum_{i: a_i = a} (v . x_i - l_i)^2 + lam |v|^2 with minimiser
    w_a and Hessian / 2 equal to A_a = lam I + sum x_i x_i^T, so exactly L_a(v) - L_a(w_a) = (v - w_a)^T A_a
    (v - w_a). The version space {v : L_a(v) - L_a(w_a) <= radius} is an ellipsoid, and (Cauchy-Schwarz)

        min / max_v v . x  =  w_a . x  -/+  sqrt(radius * x^T A_a^{-1} x).

    Only w_a moves the prediction of action a, and the losses of the other actions are separate terms, so this
    is also the bound over the joint fit of all actions. ``w`` (A, d), ``ainv`` (A, d, d) = A_a^{-1}.
    Returns (lcb, ucb), each (A,). This is the closed form that the binary search of RegCB
    (:func:`ridge_bound_binary_search`) reaches in the limit.
    """
    radius = validate_nonneg(radius, "radius")
    w, ainv, x = np.asarray(w, dtype=float), np.asarray(ainv, dtype=float), np.asarray(x, dtype=float)
    if w.ndim != 2 or ainv.shape != (w.shape[0], w.shape[1], w.shape[1]) or x.shape != (w.shape[1],):
        raise ValueError(f"w must be (A, d), ainv (A, d, d) and x (d,); got {w.shape}, {ainv.shape}, {x.shape}")
    p0 = w @ x
    s = (ainv @ x) @ x  # x^T A_a^{-1} x per action
    half = np.sqrt(radius * np.maximum(s, 0.0))
    return np.clip(p0 - half, 0.0, 1.0), np.clip(p0 + half, 0.0, 1.0)


def ridge_bound_binary_search(p0: float, s: float, radius: float, target: float, *, tol: float = 1e-12,
                              max_iter: int = 200) -> float:
    r"""One RegCB bound by the paper's oracle method: binary search over an importance weight (ridge, exact).

    Foster et al. (2018), Section 4 (and Krishnamurthy et al. 2017, Section 7.1): add the example (x, a, target)
    with importance weight omega to the data and refit; the refit's prediction p(omega) moves from p0 towards
    ``target`` (below the loss range for the lower bound, above it for the upper one) while its excess empirical
    loss grows. The bound is p(omega*) for the largest omega* whose excess is at most ``radius``.

    For ridge the refit is one Sherman-Morrison update (the incremental update of the oracle), with s = x^T
    A_a^{-1} x (the sensitivity of the prediction):

        p(omega) = p0 - omega (p0 - target) s / (1 + omega s),   excess(omega) = (p0 - p(omega))^2 / s,

    so the search is exact here (no linearisation) and its limit is p0 -/+ sqrt(radius s), the closed form of
    :func:`ridge_confidence_bounds`. If even omega -> infinity stays within the radius, the bound is ``target``.
    Returns the bound before clipping to [0, 1].
    """
    radius = validate_nonneg(radius, "radius")
    s = validate_nonneg(s, "s")
    p0, target = float(p0), float(target)
    if not (math.isfinite(p0) and math.isfinite(target)):
        raise ValueError(f"p0 and target must be finite, got {p0!r}, {target!r}")
    if s == 0.0 or p0 == target:
        return p0

    def pred(omega: float) -> float:
        return p0 - omega * (p0 - target) * s / (1.0 + omega * s)

    def excess(omega: float) -> float:
        return (p0 - pred(omega)) ** 2 / s

    if (p0 - target) ** 2 / s <= radius:  # the limit omega -> infinity is inside the version space
        return target
    lo, hi = 0.0, 1.0
    while excess(hi) <= radius:
        lo, hi = hi, 2.0 * hi
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if excess(mid) <= radius:
            lo = mid
        else:
            hi = mid
        if abs(pred(lo) - pred(hi)) <= tol:
            break
    return pred(lo)


class OnlineLogisticOracle:
    """Per-action online logistic regression of the loss on the context: the learner of the paper's runs (Vowpal
    Wabbit with ``--loss_function logistic --sigmoid`` and a tuned ``--learning_rate``).

    For action a, prediction f(x, a) = sigmoid(w_a . x). Each observation (x, a, l), l in [0, 1], takes one
    per-coordinate adaptive (AdaGrad) step on the cross-entropy -l log f - (1 - l) log(1 - f), whose gradient in
    w_a is g = (f(x, a) - l) x:

        G_a <- G_a + g * g,   w_a <- w_a - lr * g / sqrt(G_a)   (coordinates with G_a = 0 stay put),

    VW's ``--adaptive`` update (its default also normalises by the feature scale and makes the update
    importance-invariant; those parts are not built). Snapshots are stored like :class:`RidgeOracle`'s (one weight
    version per action and a version table). f_hat_1 := 0 (row 0 of the snapshots, and ``predict`` before any
    observation); afterwards an action without data predicts sigmoid(0) = 1/2. There is no version space, so
    ``confidence_bounds`` (RegCB, AdaCB) is not available.
    """

    log_class_size = None

    def __init__(self, dim: int, n_actions: int, lr: float = 0.5):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.dim = int(dim)
        self.n_actions = check_n_actions(n_actions)
        self.lr = validate_nonneg(lr, "lr")
        if self.lr == 0:
            raise ValueError("lr must be positive, got 0")
        self.w = np.zeros((self.n_actions, self.dim))
        self.sq_grad = np.zeros((self.n_actions, self.dim))
        self.n_obs = 0
        self._versions = [_Growing((self.dim,)) for _ in range(self.n_actions)]
        for hist in self._versions:
            hist.append(np.zeros(self.dim))
        self._table = _Growing((self.n_actions,), dtype=np.int64)
        self._table.append(np.zeros(self.n_actions, dtype=np.int64))

    def add(self, context, action: int, loss: float) -> None:
        """One adaptive gradient step on the played action's cross-entropy; store the new snapshot."""
        x = check_context(context, self.dim)
        action, loss = check_feedback(self.n_actions, action, loss)
        grad = (float(sigmoid(self.w[action] @ x)) - loss) * x
        self.sq_grad[action] += grad * grad
        moved = self.sq_grad[action] > 0
        self.w[action, moved] -= self.lr * grad[moved] / np.sqrt(self.sq_grad[action, moved])
        self.n_obs += 1
        self._versions[action].append(self.w[action])
        row = self._table.data[self._table.n - 1].copy()
        row[action] = self._versions[action].n - 1
        self._table.append(row)

    def predict(self, context) -> np.ndarray:
        """sigmoid(W x) with the newest weights (zeros before any observation: f_hat_1 = 0)."""
        x = check_context(context, self.dim)
        return sigmoid(self.w @ x) if self.n_obs else np.zeros(self.n_actions)

    def snapshot_predictions(self, context) -> np.ndarray:
        """(j + 1, A): row 0 zeros, row k (k >= 1) sigmoid(W_{k+1} x), W_{k+1} the weights after k observations."""
        x = check_context(context, self.dim)
        table = self._table.view()
        out = np.empty(table.shape, dtype=float)
        for a in range(self.n_actions):
            out[:, a] = sigmoid(self._versions[a].view() @ x)[table[:, a]]
        out[0] = 0.0
        return out

    def confidence_bounds(self, context, radius: float):
        raise NotImplementedError("the online logistic oracle has no version space: RegCB and AdaCB need the "
                                  "ridge or the finite-class oracle")

    def fresh(self) -> "OnlineLogisticOracle":
        """An empty oracle with the same dim, actions and learning rate."""
        return OnlineLogisticOracle(self.dim, self.n_actions, self.lr)
