r"""A stationary absorbing goal MDP (gridworld) and a softmax-linear policy class.

N x N grid, start (0, 0), goal (N-1, N-1) (absorbing success). Every other cell except the start is a pit
(absorbing failure) with probability 0.1, resampled until the goal is reachable from the start. Actions
up/right/down/left; the intended move happens with probability 0.8, otherwise a uniformly random one of the
four (which may equal the intended one); moving off the grid means staying. Before each move the episode
fails with probability kappa.

Exact evaluation on the transient cells: with :math:`M_\pi` the sub-stochastic transition matrix and
:math:`\sigma_\pi` the one-step success probability, :math:`V = (I - M_\pi)^{-1}\sigma_\pi`,
:math:`Q(s,a) = (1-\kappa)(P(goal|s,a) + \sum_{s'} P(s'|s,a)V(s'))`, expected visits
:math:`d = \mu_0^\top (I - M_\pi)^{-1}` and :math:`d^+ = d V / J`. Q and V do not depend on time, so pooling
successful (s, a) pairs over time steps is exact here.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
from scipy.optimize import minimize

__all__ = ["GridWorld", "make_gridworld", "evaluate", "rollout_counts", "features", "softmax_linear_policy",
           "fit_softmax_linear"]

MOVES = np.array([(-1, 0), (0, 1), (1, 0), (0, -1)])  # up, right, down, left as (row, column) steps
N_ACTIONS = 4


@dataclass
class GridWorld:
    """Grid of side ``size``; ``pits`` (size*size,) bool; ``move`` (cells, 4) the cell reached by each move;
    ``transient`` (n,) the indices of non-absorbing cells; ``kappa`` the failure probability per step."""

    size: int
    pits: np.ndarray
    move: np.ndarray
    transient: np.ndarray
    kappa: float
    slip: float = 0.2

    @property
    def goal(self) -> int:
        return self.size * self.size - 1

    @property
    def start(self) -> int:
        return 0

    @property
    def start_index(self) -> int:
        """Index of the start cell among the transient cells."""
        return int(np.searchsorted(self.transient, self.start))

    def transitions(self) -> np.ndarray:
        """T (cells, 4, cells): P(next cell | cell, action) of the move itself (no failure)."""
        cells = self.size * self.size
        T = np.zeros((cells, N_ACTIONS, cells))
        rows = np.arange(cells)
        for a in range(N_ACTIONS):
            np.add.at(T, (rows, a, self.move[:, a]), 1.0 - self.slip)
            for b in range(N_ACTIONS):
                np.add.at(T, (rows, a, self.move[:, b]), self.slip / N_ACTIONS)
        return T


def _reachable(size: int, pits: np.ndarray, move: np.ndarray) -> bool:
    seen = np.zeros(size * size, dtype=bool)
    queue = deque([0])
    seen[0] = True
    while queue:
        cell = queue.popleft()
        if cell == size * size - 1:
            return True
        for nxt in move[cell]:
            if not seen[nxt] and not pits[nxt]:
                seen[nxt] = True
                queue.append(nxt)
    return False


def make_gridworld(size: int, rng: np.random.Generator, *, pit_prob: float = 0.1, kappa: float = 0.02) -> GridWorld:
    """Random gridworld, pits resampled until the goal is reachable from the start (BFS)."""
    if int(size) != size or size < 2:
        raise ValueError(f"size: must be an integer >= 2, got {size!r}")
    if not 0 < kappa < 1:
        raise ValueError(f"kappa: must lie in (0, 1), got {kappa!r}")
    cells = size * size
    r, c = np.divmod(np.arange(cells), size)
    move = np.empty((cells, N_ACTIONS), dtype=np.int64)
    for a, (dr, dc) in enumerate(MOVES):
        rr, cc = r + dr, c + dc
        inside = (rr >= 0) & (rr < size) & (cc >= 0) & (cc < size)
        move[:, a] = np.where(inside, rr * size + cc, np.arange(cells))
    while True:
        pits = rng.random(cells) < pit_prob
        pits[0] = pits[cells - 1] = False
        if _reachable(size, pits, move):
            break
    transient = np.flatnonzero(~pits & (np.arange(cells) != cells - 1))
    return GridWorld(size=size, pits=pits, move=move, transient=transient, kappa=kappa)


def evaluate(grid: GridWorld, pi: np.ndarray, *, T: np.ndarray | None = None) -> dict:
    """Exact evaluation of a stationary policy ``pi`` (n_transient, 4). Returns Q, V, d (expected visits),
    d_plus, J (= V(start)); cells with V = 0 have d_plus = 0."""
    T = grid.transitions() if T is None else T
    tr = grid.transient
    Tt = T[tr][:, :, tr]
    g = T[tr, :, grid.goal]
    keep = 1.0 - grid.kappa
    M = keep * np.einsum("sa,sat->st", pi, Tt)
    sigma = keep * np.sum(pi * g, axis=1)
    n = len(tr)
    A = np.eye(n) - M
    mu0 = np.zeros(n)
    mu0[grid.start_index] = 1.0
    if n > 400:
        lu = scipy.sparse.linalg.splu(scipy.sparse.csc_matrix(A))
        V, d = lu.solve(sigma), lu.solve(mu0, trans="T")
    else:
        lu = scipy.linalg.lu_factor(A)
        V, d = scipy.linalg.lu_solve(lu, sigma), scipy.linalg.lu_solve(lu, mu0, trans=1)
    V = np.clip(V, 0.0, 1.0)
    d = np.maximum(d, 0.0)
    Q = np.clip(keep * (g + Tt @ V), 0.0, 1.0)
    J = float(V[grid.start_index])
    return {"Q": Q, "V": V, "d": d, "d_plus": d * V / J, "J": J}


def rollout_counts(grid: GridWorld, pi: np.ndarray, n_rollouts: int, rng: np.random.Generator,
                   *, max_steps: int = 400) -> dict:
    """Vectorised rollouts of ``pi``; a capped episode counts as a failure. Returns ``n_success`` (n, 4),
    the successful (state, action) counts pooled over time, ``successes`` and ``capped`` (episode counts)."""
    index = np.full(grid.size * grid.size, -1)
    index[grid.transient] = np.arange(len(grid.transient))
    cdf = np.cumsum(pi, axis=1)
    cell = np.zeros(n_rollouts, dtype=np.int64)
    alive = np.arange(n_rollouts)
    success = np.zeros(n_rollouts, dtype=bool)
    episodes, keys = [], []
    for _ in range(max_steps):
        if alive.size == 0:
            break
        survive = rng.random(alive.size) >= grid.kappa
        alive, cell_now = alive[survive], cell[alive[survive]]
        state = index[cell_now]
        action = np.minimum(np.sum(rng.random(alive.size)[:, None] >= cdf[state], axis=1), N_ACTIONS - 1)
        slipped = rng.random(alive.size) < grid.slip
        direction = np.where(slipped, rng.integers(0, N_ACTIONS, alive.size), action)
        nxt = grid.move[cell_now, direction]
        episodes.append(alive)
        keys.append(state * N_ACTIONS + action)
        cell[alive] = nxt
        reached = nxt == grid.goal
        success[alive[reached]] = True
        alive = alive[~reached & ~grid.pits[nxt]]
    episodes = np.concatenate(episodes) if episodes else np.zeros(0, dtype=np.int64)
    keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    size = len(grid.transient) * N_ACTIONS
    n_success = np.bincount(keys[success[episodes]], minlength=size).reshape(-1, N_ACTIONS).astype(float)
    return {"n_success": n_success, "successes": int(success.sum()), "capped": int(alive.size)}


def features(grid: GridWorld) -> np.ndarray:
    r"""phi(s) = [1, x/(N-1), y/(N-1), 9 Gaussian bumps exp(-|(x,y)-c_k|^2 / (2 w^2))] on the transient cells,
    centres on the 3 x 3 lattice {0, (N-1)/2, N-1}^2, width w = (N-1)/3. Shape (n, 12)."""
    size = grid.size
    y, x = np.divmod(grid.transient, size)
    x, y = x.astype(float), y.astype(float)
    span = size - 1
    centres = np.array([(cx, cy) for cy in (0, span / 2, span) for cx in (0, span / 2, span)])
    width = span / 3
    sq = (x[:, None] - centres[:, 0]) ** 2 + (y[:, None] - centres[:, 1]) ** 2
    bumps = np.exp(-sq / (2 * width ** 2))
    return np.column_stack([np.ones_like(x), x / span, y / span, bumps])


def softmax_linear_policy(W: np.ndarray, phi: np.ndarray) -> np.ndarray:
    r""":math:`\pi_W(a|s) \propto \exp(W_a \cdot \phi(s))`; W (4, F), phi (n, F) -> (n, 4)."""
    logits = phi @ W.T
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def fit_softmax_linear(n_success: np.ndarray, phi: np.ndarray, W0: np.ndarray, *, l2: float = 1e-4) -> np.ndarray:
    r"""SFT on successful pairs: maximise :math:`\sum_{s,a} n_S(s,a)\log\pi_W(a|s) - l2\, n_S \|W\|^2/2`
    (L-BFGS on the objective divided by :math:`n_S`, analytic gradient, warm start W0)."""
    total = float(n_success.sum())
    if total == 0:
        return W0.copy()
    counts = n_success / total
    state_mass = counts.sum(axis=1)
    shape = W0.shape

    def objective(w):
        W = w.reshape(shape)
        logits = phi @ W.T
        top = logits.max(axis=1, keepdims=True)
        log_z = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
        log_pi = logits - log_z[:, None]
        value = -np.sum(counts * log_pi) + 0.5 * l2 * np.sum(W ** 2)
        grad = -(counts - state_mass[:, None] * np.exp(log_pi)).T @ phi + l2 * W
        return value, grad.ravel()

    res = minimize(objective, W0.ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "gtol": 1e-10, "ftol": 1e-15})
    return res.x.reshape(shape)
