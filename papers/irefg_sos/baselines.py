r"""First-order and local baselines on behavioural strategies (single player).

As in Tewolde, Zhang, Anagnostides, Sandholm, Conitzer (2026), "Decision Making under Imperfect Recall:
Algorithms and Benchmarks", all in full coordinates :math:`x = (x_I)_I`, :math:`x_I \in \Delta(A_I)`, with
:math:`D_{I,a} = \partial U / \partial x_{I,a}`:

* projected gradient ascent: :math:`x_I \leftarrow \Pi_{\Delta}(x_I + \eta D_I)` (Euclidean projection);
* RM+: :math:`r_{I,a} \leftarrow [r_{I,a} + D_{I,a} - \sum_b x_{I,b} D_{I,b}]_+`,
  :math:`x_I \propto r_I` (uniform when :math:`r_I = 0`);
* AMSGrad on the projected iterate (Reddi, Kale, Kumar 2018), ascent direction, :math:`\beta = (0.9, 0.999)`;
* scipy multistart SLSQP on :math:`-U` in the free variables;
* dense grid (<= 3 free variables) plus SLSQP polish, for absentminded ground truth.

The public functions take one start (a strategy dict); the ``*_batch`` functions run many starts at once
(rows of a full-coordinate matrix) and are what the experiments use.
"""
from __future__ import annotations

import time

import numpy as np

from . import poly as P

__all__ = ["projected_gradient_ascent", "regret_matching_plus", "amsgrad", "run_batch", "random_starts",
           "slsqp_multistart", "maximise_polynomial", "grid_optimum", "project_simplex_rows", "PolynomialModel",
           "FullModel"]


class PolynomialModel:
    """Value, gradient and projection of a full-coordinate polynomial ``U`` in ``m`` variables on a product of
    simplices (the index ``blocks``), vectorised over batches of strategies: the interface of :func:`run_batch`."""

    def __init__(self, U: dict, m: int, blocks):
        self.m = m
        self.E, self.c = P.to_arrays(U, m)
        self.grads = [P.to_arrays(P.derivative(U, j), m) for j in range(m)]
        self.blocks = [np.asarray(b) for b in blocks]

    def value(self, X):
        return P.eval_batch(self.E, self.c, X)

    def grad(self, X):
        return P.grad_batch(self.grads, X)

    def project(self, X):
        out = np.empty_like(X)
        for b in self.blocks:
            out[:, b] = project_simplex_rows(X[:, b])
        return out


class FullModel(PolynomialModel):
    """Vectorised value and gradient of :math:`U_i` in full coordinates for batches of strategies."""

    def __init__(self, game, player: int = 1):
        from .hierarchy import _single_player

        player = _single_player(game, player)
        self.game = game
        blocks, o = [], 0
        for I in game.infosets:
            blocks.append(np.arange(o, o + len(I.actions)))
            o += len(I.actions)
        super().__init__(game.full_polynomial(player), len(game.full_variables), blocks)

    def to_full(self, strategy) -> np.ndarray:
        self.game.check_profile(strategy)
        return np.array([float(strategy[name].get(a, 0.0)) for name, a in self.game.full_variables])

    def to_strategy(self, row) -> dict:
        out = {}
        for I, b in zip(self.game.infosets, self.blocks):
            out[I.name] = {a: float(row[j]) for a, j in zip(I.actions, b)}
        return out


def project_simplex_rows(V: np.ndarray) -> np.ndarray:
    r"""Euclidean projection of each row onto the probability simplex (sort-based, Held et al. 1974)."""
    V = np.asarray(V, dtype=float)
    k = V.shape[1]
    U = -np.sort(-V, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    idx = np.arange(1, k + 1)
    cond = U - css / idx > 0
    rho = k - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(V.shape[0]), rho] / (rho + 1)
    return np.maximum(V - theta[:, None], 0.0)


def random_starts(game, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` full-coordinate starts, each block uniform on its simplex (Dirichlet(1))."""
    cols = [rng.dirichlet(np.ones(len(I.actions)), size=n) for I in game.infosets]
    return np.concatenate(cols, axis=1)


def run_batch(model: FullModel, method: str, X0: np.ndarray, *, iters: int = 2000, step: float = 0.05,
              lr: float = 0.01, target: float | None = None, check_every: int = 10, record: bool = False) -> dict:
    """Run ``method`` ("pga" | "rm+" | "amsgrad") from every row of ``X0``.

    Returns ``{"X", "values", "iters_run", "reached_at" (first checked iteration with max value >=
    target - 1e-6, or None), "trace" (best value per check when ``record``)}``; stops early when the target
    is reached.
    """
    X = np.array(X0, dtype=float)
    reached, trace = None, []
    if method == "rm+":
        R = np.zeros_like(X)
    if method == "amsgrad":
        m = np.zeros_like(X)
        v = np.zeros_like(X)
        vhat = np.zeros_like(X)
    it = 0
    for it in range(1, iters + 1):
        G = model.grad(X)
        if method == "pga":
            X = model.project(X + step * G)
        elif method == "rm+":
            for b in model.blocks:
                base = np.sum(X[:, b] * G[:, b], axis=1, keepdims=True)
                R[:, b] = np.maximum(0.0, R[:, b] + G[:, b] - base)
                s = R[:, b].sum(axis=1, keepdims=True)
                X[:, b] = np.where(s > 0, R[:, b] / np.where(s > 0, s, 1.0), 1.0 / len(b))
        elif method == "amsgrad":
            m = 0.9 * m + 0.1 * G
            v = 0.999 * v + 0.001 * G * G
            vhat = np.maximum(vhat, v)
            X = model.project(X + lr * m / (np.sqrt(vhat) + 1e-8))
        else:
            raise ValueError(f"method must be 'pga', 'rm+' or 'amsgrad', got {method!r}")
        if (target is not None or record) and (it % check_every == 0 or it == iters):
            best = float(model.value(X).max())
            if record:
                trace.append(best)
            if target is not None and best >= target - 1e-6:
                reached = it
                break
    return {"X": X, "values": model.value(X), "iters_run": it, "reached_at": reached, "trace": np.array(trace)}


def _single(game, start, player, method, iters, **kw):
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)) or iters < 1:
        raise ValueError(f"iters must be a positive integer, got {iters!r}")
    model = FullModel(game, player)
    x0 = model.to_full(start)[None, :]
    t0 = time.perf_counter()
    out = run_batch(model, method, x0, iters=iters, record=True, check_every=1, **kw)
    return {"strategy": model.to_strategy(out["X"][0]), "value": float(out["values"][0]),
            "values": out["trace"], "seconds": time.perf_counter() - t0}


def projected_gradient_ascent(game, start, *, step: float = 0.05, iters: int = 2000, player: int = 1) -> dict:
    r"""Projected gradient ascent :math:`x_I \leftarrow \Pi_\Delta(x_I + \eta\, \partial U / \partial x_I)`.

    Returns ``{"strategy", "value", "values" (U after each iteration), "seconds"}``."""
    if not step > 0:
        raise ValueError(f"step must be positive, got {step!r}")
    return _single(game, start, player, "pga", iters, step=step)


def regret_matching_plus(game, start, *, iters: int = 2000, player: int = 1) -> dict:
    r"""RM+ per infoset on the utility gradient (local regret), :math:`x_I \propto r_I`."""
    return _single(game, start, player, "rm+", iters)


def amsgrad(game, start, *, lr: float = 0.01, iters: int = 2000, player: int = 1) -> dict:
    r"""AMSGrad ascent on the projected iterate, :math:`\beta_1 = 0.9`, :math:`\beta_2 = 0.999`."""
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    return _single(game, start, player, "amsgrad", iters, lr=lr)


def _slsqp(U: dict, n: int, groups, x0):
    from scipy.optimize import minimize

    E, c = P.to_arrays(U, n)
    grads = [P.to_arrays(P.derivative(U, j), n) for j in range(n)]
    cons = []
    for g in groups:
        if len(g) > 1:
            A = np.zeros(n)
            A[g] = 1.0
            cons.append({"type": "ineq", "fun": (lambda z, A=A: 1.0 - A @ z), "jac": (lambda z, A=A: -A)})
    res = minimize(lambda z: -float(P.eval_batch(E, c, z[None, :])[0]), x0,
                   jac=lambda z: -P.grad_batch(grads, z[None, :])[0], method="SLSQP",
                   bounds=[(0.0, 1.0)] * n, constraints=cons, options={"ftol": 1e-12, "maxiter": 200})
    z = np.clip(res.x, 0.0, 1.0)
    for g in groups:
        s = z[g].sum()
        if s > 1:
            z[g] = z[g] / s
    return float(P.eval_batch(E, c, z[None, :])[0]), z


def _free_starts(groups, n, k, rng):
    Z = np.zeros((k, n))
    for g in groups:
        Z[:, g] = rng.dirichlet(np.ones(len(g) + 1), size=k)[:, :len(g)]
    return Z


def slsqp_multistart(U: dict, n: int, groups, *, starts: int = 50, seed: int = 0, target: float | None = None):
    """Best of ``starts`` SLSQP runs on -U over the free variables; stops at the first run within 1e-6 of
    ``target`` when given. Returns ``(value, point, runs)``."""
    rng = np.random.default_rng(seed)
    Z = _free_starts(groups, n, starts, rng)
    best, arg, runs = -np.inf, None, 0
    for z0 in Z:
        runs += 1
        v, z = _slsqp(U, n, groups, z0)
        if v > best:
            best, arg = v, z
        if target is not None and best >= target - 1e-6:
            break
    return best, arg, runs


def grid_optimum(U: dict, n: int, groups, *, points_1d: int = 10001, points_2d: int = 401, points_3d: int = 101):
    """Dense grid maximum over the product of simplices (<= 3 free variables) then SLSQP polish."""
    if n > 3:
        raise ValueError(f"grid_optimum needs <= 3 free variables, got {n}")
    pts = {1: points_1d, 2: points_2d, 3: points_3d}[n]
    axes = [np.linspace(0.0, 1.0, pts)] * n
    G = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    ok = np.ones(G.shape[0], dtype=bool)
    for g in groups:
        ok &= G[:, g].sum(axis=1) <= 1.0 + 1e-12
    G = G[ok]
    E, c = P.to_arrays(U, n)
    vals = P.eval_batch(E, c, G)
    k = int(np.argmax(vals))
    v, z = _slsqp(U, n, groups, G[k])
    if v >= vals[k]:
        return v, z
    return float(vals[k]), G[k]


def maximise_polynomial(U: dict, n: int, groups, *, seed: int = 0):
    """Grid + polish when ``n <= 3``, else 50-start SLSQP (a local answer, not a certificate)."""
    if n <= 3:
        return grid_optimum(U, n, groups)
    v, z, _ = slsqp_multistart(U, n, groups, starts=50, seed=seed)
    return v, z
