r"""Saddle-point problems ``min_{x in X} max_{y in Y} f(x, y)`` used by the experiments.

Each problem carries the block Lipschitz constants of ``grad f`` (``L_xx``, ``L_xy``, ``L_yy``), the
strong-concavity modulus ``mu_y`` in ``y`` and the smoothing anchor ``ybar = Y.center()``.

Dual smoothing (standard facts, e.g. Nesterov 2005): ``f_mu(x, y) = f(x, y) - (mu/2) ||y - ybar||^2``,
``Phi_mu(x) = max_{y in Y} f_mu(x, y)`` with maximiser ``y*_mu(x)``; when ``mu_y + mu > 0`` Danskin's theorem gives
``grad Phi_mu(x) = grad_x f(x, y*_mu(x))``, and ``0 <= Phi_0(x) - Phi_mu(x) <= (mu/2) D_Y^2``.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from .sets import L1Ball, NuclearBall, Simplex, project_simplex, top_singular_pair

__all__ = ["MinimaxProblem", "MatrixGame", "RegularizedMatrixGame", "NuclearGame", "DRO", "make_problem", "game_value",
           "RPS_MATRIX", "PROBLEM_NAMES"]

RPS_MATRIX = np.array([[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]])
"""Rock-paper-scissors payoff to the max player: x^T A y, value 0, unique equilibrium (1/3, 1/3, 1/3)."""

PROBLEM_NAMES = ("matrix_game", "uniform_game", "identity_game", "rps", "nuclear_game", "dro",
                 "dro_synthetic", "dro_digits", "robust_multiclass")


def _vertex_max(values: np.ndarray) -> np.ndarray:
    """``e_j`` with ``j = argmax values`` (first index on ties)."""
    y = np.zeros(values.size)
    y[int(np.argmax(values))] = 1.0
    return y


def _smoothed_simplex_max(scores: np.ndarray, ybar: np.ndarray, curvature: float):
    r"""``max_{y in Delta} <scores, y> - (curvature/2) ||y - ybar||^2`` and its maximiser.

    For ``curvature > 0`` the maximiser is ``P_Delta(ybar + scores/curvature)``; for ``curvature = 0`` it is the
    vertex at ``argmax scores`` (first index on ties).
    """
    if curvature > 0:
        y = project_simplex(ybar + scores / curvature, 1.0)
        d = y - ybar
        return float(scores @ y - 0.5 * curvature * (d @ d)), y
    y = _vertex_max(scores)
    return float(np.max(scores)), y


class MinimaxProblem:
    r"""Base class of ``min_{x in X} max_{y in Y} f(x, y)``.

    Attributes: ``X``, ``Y`` (sets with ``lmo``/``project``), ``regime`` (``"cc"``, ``"ncsc"`` or ``"ncc"``),
    ``L_xx``, ``L_xy``, ``L_yy`` (block Lipschitz constants of ``grad f``), ``mu_y`` (strong concavity in ``y``),
    ``ybar`` (the smoothing anchor, the centre of ``Y``), ``name``.
    """

    regime: str
    name: str = "problem"

    def grad_x(self, x, y):
        """``grad_x f(x, y)``."""
        raise NotImplementedError

    def grad_y(self, x, y):
        """``grad_y f(x, y)``."""
        raise NotImplementedError

    def value(self, x, y) -> float:
        """``f(x, y)``."""
        raise NotImplementedError

    def smoothed_max(self, x, mu: float = 0.0):
        r"""``(Phi_mu(x), y*_mu(x))`` with ``Phi_mu(x) = max_{y in Y} f(x, y) - (mu/2)||y - ybar||^2`` (exact)."""
        raise NotImplementedError

    def duality_gap(self, x, y) -> float:
        r"""``Gap(x, y) = max_{y'} f(x, y') - min_{x'} f(x', y)`` (C-C problems only)."""
        raise ValueError(f"duality_gap is defined for convex-concave problems; this problem has regime "
                         f"{self.regime!r} (use fw_gap)")

    def fw_gap(self, x, mu: float = 0.0) -> float:
        r"""Frank-Wolfe gap of ``Phi_mu``: ``max_{s in X} <grad Phi_mu(x), x - s>`` (NC problems only)."""
        raise ValueError(f"fw_gap is defined for nonconvex problems; this problem has regime {self.regime!r} "
                         "(use duality_gap)")

    def _check_mu(self, mu) -> float:
        mu = float(mu)
        if not math.isfinite(mu) or mu < 0:
            raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
        return mu

    def _check_x(self, x):
        if sp.issparse(x):
            x = x.toarray()
        x = np.asarray(x, dtype=float)
        if x.shape != self.X.shape:
            raise ValueError(f"x must have shape {self.X.shape}, got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("x contains NaN or Inf")
        return x

    def _check_y(self, y):
        y = np.asarray(y, dtype=float)
        if y.shape != self.Y.shape:
            raise ValueError(f"y must have shape {self.Y.shape}, got {y.shape}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or Inf")
        return y

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, regime={self.regime!r})"


def _check_game_matrix(A) -> np.ndarray:
    A = np.asarray(A, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"A must be a 2-D matrix, got {A.ndim} dimension(s)")
    if A.size == 0:
        raise ValueError("A must not be empty")
    if not np.all(np.isfinite(A)):
        raise ValueError("A contains NaN or Inf")
    return A


class MatrixGame(MinimaxProblem):
    r"""Bilinear matrix game ``f(x, y) = x^T A y`` on ``X = Delta_n``, ``Y = Delta_m`` (C-C).

    ``L_xx = L_yy = mu_y = 0``, ``L_xy = ||A||_2``;
    ``Gap(x, y) = max_j (A^T x)_j - min_i (A y)_i``.
    """

    regime = "cc"

    def __init__(self, A, name: str = "matrix_game"):
        self.A = _check_game_matrix(A)
        self.AT = np.ascontiguousarray(self.A.T)
        n, m = self.A.shape
        self.X, self.Y = Simplex(n), Simplex(m)
        self.L_xx, self.L_yy, self.mu_y = 0.0, 0.0, 0.0
        self.L_xy = float(np.linalg.norm(self.A, 2))
        self.ybar = self.Y.center()
        self.name = name

    def grad_x(self, x, y):
        """``A y``."""
        return self.A @ y

    def grad_y(self, x, y):
        """``A^T x``."""
        return self.AT @ x

    def value(self, x, y) -> float:
        """``x^T A y``."""
        return float(x @ self.A @ y)

    def smoothed_max(self, x, mu: float = 0.0):
        r"""``max_{y in Delta_m} x^T A y - (mu/2)||y - ybar||^2``; maximiser ``P_Delta(ybar + A^T x / mu)``.

        ``mu = 0`` is allowed and returns the vertex ``e_j``, ``j = argmax (A^T x)_j``.
        """
        x = self._check_x(x)
        return _smoothed_simplex_max(self.AT @ x, self.ybar, self._check_mu(mu))

    def _gap(self, x, y) -> float:
        return float((self.AT @ x).max() - (self.A @ y).min())

    def duality_gap(self, x, y) -> float:
        """``max_j (A^T x)_j - min_i (A y)_i`` (each term is one LMO over a simplex)."""
        return self._gap(self._check_x(x), self._check_y(y))


class RegularizedMatrixGame(MatrixGame):
    r"""Matrix game with a strongly concave dual: ``f(x, y) = x^T A y - (mu_y/2) ||y - ybar||^2`` on
    ``X = Delta_n``, ``Y = Delta_m``, ``ybar = 1/m`` (convex-concave, mu_y-strongly concave in ``y``).

    The setting of the second half of Theorem 2.2 (official claim 3): a convex-concave problem whose dual is
    strongly concave. ``L_xx = 0``, ``L_xy = ||A||_2``, ``L_yy = mu_y``. ``Phi(x) = max_y f(x, y)`` is attained at
    ``y*(x) = P_Delta(ybar + A^T x / mu_y)``, and the duality gap is

    ``Gap(x, y) = Phi(x) - min_i (A y)_i + (mu_y/2) ||y - ybar||^2 >= Phi(x) - min_x' Phi(x') >= 0``,

    so it bounds the primal optimality gap of the official claim from above.
    """

    def __init__(self, A, mu_y: float, name: str = "regularized_game"):
        super().__init__(A, name=name)
        mu_y = float(mu_y)
        if not math.isfinite(mu_y) or mu_y <= 0:
            raise ValueError(f"mu_y must be a finite number > 0 (a strongly concave dual), got {mu_y!r}")
        self.mu_y = self.L_yy = mu_y

    def grad_y(self, x, y):
        """``A^T x - mu_y (y - ybar)``."""
        return self.AT @ x - self.mu_y * (y - self.ybar)

    def value(self, x, y) -> float:
        """``x^T A y - (mu_y/2) ||y - ybar||^2``."""
        d = y - self.ybar
        return float(x @ self.A @ y) - 0.5 * self.mu_y * float(d @ d)

    def smoothed_max(self, x, mu: float = 0.0):
        r"""``max_{y in Delta_m} f(x, y) - (mu/2)||y - ybar||^2``; maximiser ``P_Delta(ybar + A^T x / (mu_y + mu))``."""
        x = self._check_x(x)
        return _smoothed_simplex_max(self.AT @ x, self.ybar, self.mu_y + self._check_mu(mu))

    def _gap(self, x, y) -> float:
        d = y - self.ybar
        phi = _smoothed_simplex_max(self.AT @ x, self.ybar, self.mu_y)[0]
        return float(phi - (self.A @ y).min() + 0.5 * self.mu_y * (d @ d))


class NuclearGame(MinimaxProblem):
    r"""``f(W, y) = sum_j y_j (<A_j, W> - c_j)`` on the nuclear ball ``{||W||_* <= delta}`` x ``Delta_J`` (C-C).

    ``A_j`` are sparse ``p x q`` matrices (``q = p`` unless given) stored as the rows of the ``J x p^2`` CSR matrix ``M``
    (``<A_j, W> = (M vec(W))_j``, row-major ``vec``). ``grad_x f = sum_j y_j A_j`` is assembled as a sparse CSR
    matrix from the triplets and never densified for the LMO. ``L_xy = ||M||_2 = sqrt(lambda_max(M M^T))``;
    ``Gap(W, y) = max_j(<A_j, W> - c_j) + delta sigma_max(sum_j y_j A_j) + c^T y``.
    """

    regime = "cc"

    def __init__(self, rows, cols, vals, c, p: int, delta: float, name: str = "nuclear_game", q: int | None = None):
        self.p = int(p)
        self.q = self.p if q is None else int(q)
        self.X = NuclearBall((self.p, self.q), delta)
        self.c = np.asarray(c, dtype=float)
        J = self.c.size
        self.Y = Simplex(J)
        rows, cols, vals = (np.asarray(a) for a in (rows, cols, vals))
        self._fn = np.repeat(np.arange(J), rows.shape[1])  # functional index of each triplet
        self._rows, self._cols, self._vals = rows.ravel(), cols.ravel(), vals.ravel().astype(float)
        self.M = sp.csr_matrix((self._vals, (self._fn, self._rows * self.q + self._cols)),
                               shape=(J, self.p * self.q))
        self.M.sum_duplicates()
        self.L_xx, self.L_yy, self.mu_y = 0.0, 0.0, 0.0
        self.L_xy = self._operator_norm()
        self.ybar = self.Y.center()
        self.delta = self.X.radius
        self.name = name

    def _operator_norm(self) -> float:
        """``||M||_2 = sqrt(lambda_max(M M^T))`` (dense eigvalsh of the small J x J matrix)."""
        return float(math.sqrt(max(np.linalg.eigvalsh((self.M @ self.M.T).toarray())[-1], 0.0)))

    def adjoint(self, y) -> sp.csr_matrix:
        """``sum_j y_j A_j`` as a ``p x q`` CSR matrix built from the triplets (duplicates add)."""
        return sp.csr_matrix((self._vals * y[self._fn], (self._rows, self._cols)), shape=(self.p, self.q))

    def grad_x(self, x, y):
        """``sum_j y_j A_j`` (sparse CSR)."""
        return self.adjoint(y)

    def grad_y(self, x, y):
        """``(<A_j, W> - c_j)_j``."""
        return self.M @ np.ravel(x) - self.c

    def value(self, x, y) -> float:
        """``sum_j y_j (<A_j, W> - c_j)``."""
        return float(y @ self.grad_y(x, y))

    def smoothed_max(self, x, mu: float = 0.0):
        r"""Exact smoothed max over ``Delta_J``: maximiser ``P_Delta(ybar + (M vec W - c)/mu)``, vertex if ``mu = 0``."""
        x = self._check_x(x)
        return _smoothed_simplex_max(self.M @ x.ravel() - self.c, self.ybar, self._check_mu(mu))

    def _gap(self, x, y) -> float:
        _, sigma, _ = top_singular_pair(self.adjoint(y))
        return float(np.max(self.M @ np.ravel(x) - self.c) + self.delta * sigma + self.c @ y)

    def duality_gap(self, x, y) -> float:
        """``max_j(<A_j, W> - c_j) + delta sigma_max(sum_j y_j A_j) + c^T y``."""
        return self._gap(self._check_x(x), self._check_y(y))


def _check_dro_inputs(features, labels, groups, lam, radius):
    A = np.asarray(features, dtype=float)
    if A.ndim != 2 or A.size == 0:
        raise ValueError(f"features must be a non-empty 2-D array, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("features contains NaN or Inf")
    lab = np.asarray(labels, dtype=float).ravel()
    if lab.size != A.shape[0]:
        raise ValueError(f"labels has length {lab.size} but features has {A.shape[0]} rows")
    if not np.all(np.isin(lab, (-1.0, 1.0))):
        raise ValueError("labels must all be -1 or +1")
    g = np.asarray(groups).ravel()
    if g.size != A.shape[0]:
        raise ValueError(f"groups has length {g.size} but features has {A.shape[0]} rows")
    if g.size and not np.all(np.equal(np.mod(g, 1), 0)):
        raise ValueError("groups must be integers 0..J-1")
    g = g.astype(int)
    if g.min() < 0:
        raise ValueError("groups must be integers 0..J-1, got a negative group")
    J = int(g.max()) + 1
    counts = np.bincount(g, minlength=J)
    if np.any(counts == 0):
        raise ValueError(f"groups must cover 0..J-1 with no empty group; group(s) "
                         f"{np.flatnonzero(counts == 0)[:5].tolist()} are empty")
    lam = float(lam)
    if not math.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
    return A, lab, g, J, counts, lam


class DRO(MinimaxProblem):
    r"""Chi-square-penalised distributionally robust sigmoid-loss classification.

    ``ell_i(x) = 1/(1 + exp(l_i a_i^T x))`` (nonconvex), group losses ``L_j(x) = mean_{i in j} ell_i(x)``,
    ``f(x, y) = sum_j y_j L_j(x) - (lam J/2) ||y - 1/J||^2`` on ``X = {||x||_1 <= r}``, ``Y = Delta_J``.
    ``mu_y = L_yy = lam J``; ``L_xx = 0.1 max_i ||a_i||^2`` (``|sigmoid''| <= 0.0962``);
    ``L_xy = 0.25 ||A||_2 / sqrt(min_j |group j|)``. Regime ``"ncsc"`` if ``lam > 0``, else ``"ncc"`` (group DRO).
    Closed form: ``y*_mu(x) = P_Delta(1/J + L(x)/(lam J + mu))``.
    """

    def __init__(self, features, labels, groups, lam: float, radius: float = 10.0, name: str = "dro"):
        A, lab, g, J, counts, lam = _check_dro_inputs(features, labels, groups, lam, radius)
        self.A, self.labels, self.groups, self.J, self.counts, self.lam = A, lab, g, J, counts, lam
        self.X, self.Y = L1Ball(A.shape[1], radius), Simplex(J)
        self.regime = "ncsc" if lam > 0 else "ncc"
        self.mu_y = self.L_yy = lam * J
        self.L_xx = 0.1 * float(np.max(np.einsum("ij,ij->i", A, A)))
        self.L_xy = 0.25 * float(np.linalg.norm(A, 2)) / math.sqrt(float(counts.min()))
        self.ybar = self.Y.center()
        self._inv_count = 1.0 / counts
        self._single = J == A.shape[0] and np.array_equal(g, np.arange(J))  # one group per example
        self.name = name

    def losses(self, x) -> np.ndarray:
        """Group losses ``L_j(x)``, ``j = 0..J-1``."""
        ell = 1.0 / (1.0 + np.exp(self.labels * (self.A @ x)))
        if self._single:
            return ell
        return np.bincount(self.groups, weights=ell, minlength=self.J) * self._inv_count

    def objective(self, x) -> float:
        """The true group-DRO objective of the NC-C problem, ``Phi(x) = max_j L_j(x)`` (penalty-free)."""
        return float(np.max(self.losses(self._check_x(x))))

    def grad_x(self, x, y):
        r"""``sum_i (y_{g_i}/n_{g_i}) grad ell_i(x)`` with ``grad ell_i = -l_i s_i (1 - s_i) a_i``, ``s_i = ell_i``."""
        s = 1.0 / (1.0 + np.exp(self.labels * (self.A @ x)))
        w = (y if self._single else (y * self._inv_count)[self.groups]) * (-self.labels * s * (1.0 - s))
        return self.A.T @ w

    def grad_y(self, x, y):
        """``L(x) - lam J (y - 1/J)``."""
        return self.losses(x) - self.mu_y * (y - self.ybar)

    def value(self, x, y) -> float:
        """``y^T L(x) - (lam J/2)||y - 1/J||^2``."""
        d = y - self.ybar
        return float(y @ self.losses(x) - 0.5 * self.mu_y * (d @ d))

    def _smoothed_max(self, x, mu: float):
        return _smoothed_simplex_max(self.losses(x), self.ybar, self.mu_y + mu)

    def smoothed_max(self, x, mu: float = 0.0):
        r"""``(Phi_mu(x), y*_mu(x))``, ``y*_mu = P_Delta(1/J + L(x)/(lam J + mu))`` (vertex if ``lam J + mu = 0``)."""
        return self._smoothed_max(self._check_x(x), self._check_mu(mu))

    def _fw_gap(self, x, mu: float) -> float:
        _, ystar = self._smoothed_max(x, mu)
        g = self.grad_x(x, ystar)
        return float(g @ x + self.X.radius * np.max(np.abs(g)))

    def fw_gap(self, x, mu: float = 0.0) -> float:
        r"""``max_{||s||_1 <= r} <grad Phi_mu(x), x - s> = <g, x> + r ||g||_inf`` with ``g = grad_x f(x, y*_mu(x))``."""
        return self._fw_gap(self._check_x(x), self._check_mu(mu))


def game_value(A) -> tuple[float, np.ndarray, np.ndarray]:
    r"""Value and equilibrium of ``min_{x in Delta_n} max_{y in Delta_m} x^T A y`` by HiGHS.

    LP over ``(x, t)``: ``min t`` s.t. ``A^T x <= t 1``, ``1^T x = 1``, ``x >= 0``; ``y`` is read from the duals
    of the inequality constraints. Raises RuntimeError naming the HiGHS status when it is not optimal.
    """
    A = _check_game_matrix(A)
    n, m = A.shape
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    A_ub = np.hstack([A.T, -np.ones((m, 1))])
    A_eq = np.hstack([np.ones((1, n)), np.zeros((1, 1))])
    bounds = [(0, None)] * n + [(None, None)]
    res = linprog(cost, A_ub=A_ub, b_ub=np.zeros(m), A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"HiGHS did not solve the game LP: status {res.status} ({res.message})")
    x = np.maximum(res.x[:n], 0.0)
    x /= x.sum()
    y = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=float), 0.0)
    y = y / y.sum() if y.sum() > 0 else np.full(m, 1.0 / m)
    return float(res.x[-1]), x, y


def _nuclear_game(p: int, J: int = 50, s: int = 200, delta: float = 10.0, *, seed: int = 0) -> NuclearGame:
    for nm, v in (("p", p), ("J", J), ("s", s)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{nm} must be an integer >= 1, got {v!r}")
    if int(p) < 2:
        raise ValueError(f"p must be an integer >= 2, got {p!r}")
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, p, (J, s))
    cols = rng.integers(0, p, (J, s))
    signs = rng.choice([-1.0, 1.0], (J, s))
    c = rng.standard_normal(J)
    return NuclearGame(rows, cols, signs / math.sqrt(s), c, p, delta, name=f"nuclear_game(p={p})")


def text_like_corpus(N: int, d: int, C: int, s: int, *, topic_words: int = 20, boost: float = 20.0,
                     zipf: float = 1.1, seed: int = 0):
    """Sparse bag-of-words documents in the style of RCV1 / 20 Newsgroups (generated; those corpora cannot be
    fetched offline). Word w has base weight (w+1)^(-zipf) (Zipf's law); each class multiplies the weights of
    ``topic_words`` random words by ``boost``. A document draws its label uniformly, then ``s`` word tokens with
    replacement from its class distribution; its term vector is the token counts divided by sqrt(s).
    Draws, in order: the topic words of each class, the labels, the tokens. Returns (words (N, s) int64, labels
    (N,) int64, value 1/sqrt(s) of one token).
    """
    for nm, v in (("N", N), ("d", d), ("C", C), ("s", s), ("topic_words", topic_words)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{nm} must be an integer >= 1, got {v!r}")
    if C < 2 or topic_words > d:
        raise ValueError(f"need C >= 2 and topic_words <= d, got C={C}, topic_words={topic_words}, d={d}")
    rng = np.random.default_rng(seed)
    base = (np.arange(d) + 1.0) ** (-float(zipf))
    probs = np.tile(base, (C, 1))
    for c in range(C):
        probs[c, rng.choice(d, topic_words, replace=False)] *= float(boost)
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, C, N)
    cdf = np.cumsum(probs, axis=1)
    words = np.stack([np.minimum(np.searchsorted(cdf[labels[i]], rng.uniform(size=s)), d - 1) for i in range(N)])
    return words.astype(np.int64), labels.astype(np.int64), 1.0 / math.sqrt(s)


def _robust_multiclass(N: int, d: int, C: int, s: int, delta: float, *, seed: int = 0) -> NuclearGame:
    """Robust multiclass classification with a nuclear-norm-bounded weight matrix W (d x C), the convex-concave
    experiment of the paper's Section 5 on generated text-like data: one pair j = (i, c), c != label_i, per
    document and wrong class, with the linear margin loss 1 + <a_i, w_c - w_{label_i}>, and the worst pair
    chosen by y in the simplex:  min_{||W||_* <= delta} max_{y in Delta_J} sum_j y_j (1 + <A_j, W>),
    A_j = a_i (e_c - e_{label_i})^T."""
    words, labels, value = text_like_corpus(N, d, C, s, seed=seed)
    pairs = [(i, c) for i in range(N) for c in range(C) if c != labels[i]]
    rows = np.array([np.concatenate([words[i], words[i]]) for i, _ in pairs])
    cols = np.array([np.concatenate([np.full(s, c), np.full(s, labels[i])]) for i, c in pairs])
    vals = np.tile(np.concatenate([np.full(s, value), np.full(s, -value)]), (len(pairs), 1))
    return RobustMulticlass(rows, cols, vals, -np.ones(len(pairs)), d, delta, q=C,
                            name=f"robust_multiclass(N={N}, d={d}, C={C}, seed={seed})")


class RobustMulticlass(NuclearGame):
    """:class:`NuclearGame` whose weight matrix is d x C with few classes C: the adjoint sum_j y_j A_j is formed
    densely as reshape(M^T y, (d, C)) (a sparse matrix-vector product), cheaper than assembling it from triplets."""

    def _operator_norm(self) -> float:
        """``||M||_2`` by ARPACK (M has one row per document and wrong class, too many for a dense eigvalsh)."""
        return top_singular_pair(self.M)[1]

    def adjoint(self, y) -> np.ndarray:
        return np.asarray(self.M.T @ y).reshape(self.p, self.q)


def _synthetic_dro_data(N: int, d: int, grouping: str, seed: int):
    if grouping not in ("example", "block"):
        raise ValueError(f"grouping must be 'example' or 'block', got {grouping!r}")
    for nm, v in (("N", N), ("d", d)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{nm} must be an integer >= 1, got {v!r}")
    if grouping == "block" and N < 10:
        raise ValueError(f"N must be >= 10 for grouping='block', got {N}")
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((N, d)) / math.sqrt(d)
    noise = rng.standard_normal(N)
    w = np.zeros(d)
    w[:5] = 2.0
    block = (10 * np.arange(N)) // N
    labels = np.where(features @ w + (0.1 + 0.1 * block) * noise >= 0, 1.0, -1.0)
    groups = np.arange(N) if grouping == "example" else block
    return features, labels, groups


def _digits_dro_data(grouping: str):
    if grouping not in ("example", "block"):
        raise ValueError(f"grouping must be 'example' or 'block', got {grouping!r}")
    from sklearn.datasets import load_digits

    digits = load_digits()
    a = digits.data / 16.0
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    labels = np.where(digits.target < 5, 1.0, -1.0)
    groups = np.arange(a.shape[0]) if grouping == "example" else digits.target.astype(int)
    return a, labels, groups


def make_problem(name: str, *, seed: int = 0, **params) -> MinimaxProblem:
    """Build a named problem.

    ``name``: ``"matrix_game"`` (``A``), ``"uniform_game"`` (``n``, ``m``; ``A ~ U(-1, 1)^{n x m}``),
    ``"identity_game"`` (``n``), ``"rps"``, ``"nuclear_game"`` (``p``, ``J=50``, ``s=200``, ``delta=10``),
    ``"dro"`` (``features``, ``labels``, ``groups``, ``lam``, ``radius``), ``"dro_synthetic"`` (``N``, ``d``,
    ``lam``, ``grouping``, ``radius=10``), ``"dro_digits"`` (``lam``, ``grouping``; ``"block"`` groups by digit)
    and ``"robust_multiclass"`` (``N``, ``d``, ``C``, ``s=20``, ``delta=10``; generated text-like data).
    Random instances draw from ``numpy.random.default_rng(seed)`` in the order of the spec.
    """
    if name == "matrix_game":
        return MatrixGame(params["A"], name="matrix_game")
    if name == "uniform_game":
        n, m = params["n"], params["m"]
        Simplex(n), Simplex(m)  # validates n, m
        A = np.random.default_rng(seed).uniform(-1.0, 1.0, (n, m))
        return MatrixGame(A, name=f"uniform_game({n}x{m}, seed={seed})")
    if name == "identity_game":
        n = params["n"]
        Simplex(n)
        return MatrixGame(np.eye(n), name=f"identity_game({n})")
    if name == "rps":
        return MatrixGame(RPS_MATRIX, name="rps")
    if name == "nuclear_game":
        return _nuclear_game(params["p"], params.get("J", 50), params.get("s", 200), params.get("delta", 10.0),
                             seed=seed)
    if name == "robust_multiclass":
        return _robust_multiclass(params["N"], params["d"], params["C"], params.get("s", 20),
                                  params.get("delta", 10.0), seed=seed)
    if name == "dro":
        return DRO(params["features"], params["labels"], params["groups"], params["lam"],
                   params.get("radius", 10.0))
    if name == "dro_synthetic":
        grouping = params.get("grouping", "example")
        features, labels, groups = _synthetic_dro_data(params["N"], params["d"], grouping, seed)
        return DRO(features, labels, groups, params["lam"], params.get("radius", 10.0),
                   name=f"dro_synthetic({grouping}, seed={seed})")
    if name == "dro_digits":
        grouping = params.get("grouping", "example")
        features, labels, groups = _digits_dro_data(grouping)
        return DRO(features, labels, groups, params["lam"], params.get("radius", 10.0),
                   name=f"dro_digits({grouping})")
    raise ValueError(f"name must be one of {list(PROBLEM_NAMES)}, got {name!r}")
