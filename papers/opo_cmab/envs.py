"""Bandit problems: the synthetic finite class (realisable) and classification streams (supervised-to-bandit).

Rounds are indexed from 0 in ``context(t)``, ``expected_losses(t)`` and ``sample_loss(t, a, rng)``.

- ``finite_class``: x = (z, 1), z ~ N(0, I_d); f_j(x, a) = sigmoid(Theta_j[a] . x); f* is one of |F| models; the
  others are perturbations of it (see :class:`FiniteClassEnv`), or, with ``kind="hidden_arm"``, decoys built so
  that greedy can lock in on a safe action (:func:`hidden_arm_models`); loss l ~ Bernoulli(f*(x, a)).
- classification streams: A = number of classes, loss 1[a != y] (expected loss the same), one pass over the rows
  in an order fixed by the seed. sklearn-shipped sets (breast_cancer, wine, iris, digits; features z-scored, plus
  a bias 1) and MONK-1/2/3 regenerated from their rules over the full 432-point grid (one-hot, 17 columns, plus a
  bias 1).
"""
from __future__ import annotations

import itertools

import numpy as np

from papers.opo_cmab.opo import check_n_actions, validate_nonneg
from papers.opo_cmab.oracles import sigmoid

__all__ = ["make_env", "ENV_NAMES", "STREAM_NAMES", "FiniteClassEnv", "ClassificationEnv", "monk_data",
           "finite_class_models", "hidden_arm_models"]

STREAM_NAMES = ("breast_cancer", "wine", "iris", "digits", "monk1", "monk2", "monk3")
ENV_NAMES = ("finite_class",) + STREAM_NAMES
MONK3_NOISE_SEED = 3   # fixed seed of the 22 flipped MONK-3 labels
MONK3_N_FLIPS = 22


def finite_class_models(rng: np.random.Generator, n_models: int, n_actions: int, context_dim: int):
    """(thetas (|F|, A, d + 1), star_index) of the synthetic class.

    Theta* (A x (d + 1)) has iid N(0, 1) entries. Each of the other |F| - 1 models is Theta* + N(0, 0.1^2) noise on
    every entry, plus +-2 (sign uniform) on the bias entry of floor(A / 2) actions chosen without replacement. The
    |F| models are then shuffled; star_index is where Theta* lands.
    """
    dim = context_dim + 1
    star = rng.standard_normal((n_actions, dim))
    models = [star]
    for _ in range(n_models - 1):
        theta = star + 0.1 * rng.standard_normal((n_actions, dim))
        shifted = rng.choice(n_actions, size=n_actions // 2, replace=False)
        theta[shifted, -1] += 2.0 * rng.choice(np.array([-1.0, 1.0]), size=shifted.size)
        models.append(theta)
    order = rng.permutation(n_models)
    thetas = np.stack(models)[order]
    return thetas, int(np.flatnonzero(order == 0)[0])


class FiniteClassEnv:
    """The realisable synthetic class; contexts are drawn lazily (in blocks) from the env's own generator.

    ``kind`` chooses the models: "perturbed" (the spec's class, :func:`finite_class_models`) or "hidden_arm"
    (:func:`hidden_arm_models`, whose keyword parameters gap, bad, jitter and slope pass through).
    """

    def __init__(self, seed: int, n_models: int = 100, n_actions: int = 5, context_dim: int = 4,
                 kind: str = "perturbed", **model_params):
        if isinstance(n_models, bool) or not isinstance(n_models, (int, np.integer)) or n_models < 1:
            raise ValueError(f"n_models must be a positive integer, got {n_models!r}")
        if isinstance(context_dim, bool) or not isinstance(context_dim, (int, np.integer)) or context_dim < 1:
            raise ValueError(f"context_dim must be a positive integer, got {context_dim!r}")
        self.n_actions = check_n_actions(n_actions)
        model_ss, context_ss = np.random.SeedSequence(seed).spawn(2)
        if kind not in ("perturbed", "hidden_arm"):
            raise ValueError(f"kind must be 'perturbed' or 'hidden_arm', got {kind!r}")
        if kind == "perturbed" and model_params:
            raise ValueError(f"the perturbed class takes no model params, got {sorted(model_params)}")
        generate = finite_class_models if kind == "perturbed" else hidden_arm_models
        self.thetas, self.star_index = generate(np.random.default_rng(model_ss), int(n_models), self.n_actions,
                                                int(context_dim), **model_params)
        self.kind = kind
        self.theta_star = self.thetas[self.star_index]
        self.context_dim = int(context_dim) + 1
        self.n_rounds = None
        self.name = "finite_class"
        self._context_rng = np.random.default_rng(context_ss)
        self._contexts = np.empty((0, self.context_dim))
        self._cached_t, self._cached_f = -1, None

    def context(self, t: int) -> np.ndarray:
        while t >= self._contexts.shape[0]:
            z = self._context_rng.standard_normal((1024, self.context_dim - 1))
            block = np.hstack([z, np.ones((1024, 1))])
            self._contexts = np.vstack([self._contexts, block])
        return self._contexts[t]

    def expected_losses(self, t: int) -> np.ndarray:
        """f*(x_t, .) = sigmoid(Theta* x_t) (a copy; the last round's values are cached)."""
        if t != self._cached_t:
            self._cached_t, self._cached_f = t, sigmoid(self.theta_star @ self.context(t))
        return self._cached_f.copy()

    def sample_loss(self, t: int, a: int, rng: np.random.Generator) -> float:
        """l ~ Bernoulli(f*(x_t, a))."""
        f = self._cached_f if t == self._cached_t else self.expected_losses(t)
        return float(rng.random() < f[a])


def hidden_arm_models(rng: np.random.Generator, n_models: int, n_actions: int, context_dim: int, *,
                      gap: float = 0.4, bad: float = 1.0, jitter: float = 0.1, slope: float = 0.5):
    """(thetas (|F|, A, d + 1), star_index) of the hidden-arm class [ours], built so that exploration matters.

    Every model shares one context slope w ~ N(0, slope^2 I / d) on every action, so contexts move all logits
    together and the ranking of the actions is the same on every context. Biases (the logit at w.z = 0):
    action 0 is a safe action with bias 0 in every model (playing it says nothing about which model is true);
    in f* one hidden action a* in {1..A-1} (uniform) has bias -gap and the others +bad. Each other model names
    its own good action g in {0..A-1} (uniform; g = 0 means "no action beats the safe one", a pessimist about
    a*) with bias -gap, the rest +bad, plus N(0, jitter^2) on the biases of actions 1..A-1. A learner that
    trusts a pessimist plays the safe action, whose losses cannot refute it: greedy locks in with constant
    probability and pays about sigmoid(0) - sigmoid(-gap) per round, while an exploration bonus keeps sampling
    a*. The |F| models are shuffled; star_index is where f* lands.
    """
    if n_actions < 2:
        raise ValueError(f"n_actions must be >= 2, got {n_actions}")
    for name, v in (("gap", gap), ("bad", bad), ("jitter", jitter), ("slope", slope)):
        validate_nonneg(v, name)
    dim = context_dim + 1
    w = slope * rng.standard_normal(context_dim) / np.sqrt(context_dim)
    star_arm = 1 + int(rng.integers(n_actions - 1))

    def model(good: int) -> np.ndarray:
        theta = np.zeros((n_actions, dim))
        theta[:, :-1] = w
        theta[1:, -1] = bad
        if good > 0:
            theta[good, -1] = -gap
        return theta

    models = [model(star_arm)]
    for _ in range(n_models - 1):
        theta = model(int(rng.integers(n_actions)))
        theta[1:, -1] += jitter * rng.standard_normal(n_actions - 1)
        models.append(theta)
    order = rng.permutation(n_models)
    return np.stack(models)[order], int(np.flatnonzero(order == 0)[0])


class ClassificationEnv:
    """A labelled data set played once as a bandit stream in the row order fixed by ``seed``."""

    def __init__(self, name: str, X: np.ndarray, y: np.ndarray, seed: int):
        classes = np.unique(y)
        self.name = name
        self.n_actions = check_n_actions(len(classes))
        self.labels = np.searchsorted(classes, y)
        self.order = np.random.default_rng(seed).permutation(len(y))
        self.X = np.ascontiguousarray(X, dtype=float)
        self.context_dim = self.X.shape[1]
        self.n_rounds = len(y)

    def context(self, t: int) -> np.ndarray:
        return self.X[self.order[t]]

    def expected_losses(self, t: int) -> np.ndarray:
        """1[a != y_t] for every action a."""
        losses = np.ones(self.n_actions)
        losses[self.labels[self.order[t]]] = 0.0
        return losses

    def sample_loss(self, t: int, a: int, rng: np.random.Generator) -> float:
        return float(a != self.labels[self.order[t]])


def _zscore_bias(X: np.ndarray) -> np.ndarray:
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return np.hstack([Z, np.ones((X.shape[0], 1))])


def monk_data(problem: int) -> tuple[np.ndarray, np.ndarray]:
    """MONK-``problem`` (1, 2 or 3) over the full grid a1, a2, a4 in {1,2,3}; a3, a6 in {1,2}; a5 in {1,..,4}.

    MONK-1: a1 = a2 or a5 = 1. MONK-2: exactly two of the six attributes equal 1. MONK-3: (a5 = 3 and a4 = 1) or
    (a5 != 4 and a2 != 3), with the labels of 22 points (5 %) flipped (fixed seed). Features: one-hot (17
    columns) plus a bias 1. Returns (X (432, 18), y (432,)).
    """
    levels = (3, 3, 2, 3, 4, 2)
    grid = np.array(list(itertools.product(*[range(1, n + 1) for n in levels])))
    a1, a2, a3, a4, a5, a6 = grid.T
    if problem == 1:
        y = (a1 == a2) | (a5 == 1)
    elif problem == 2:
        y = (grid == 1).sum(axis=1) == 2
    elif problem == 3:
        y = ((a5 == 3) & (a4 == 1)) | ((a5 != 4) & (a2 != 3))
        flip = np.random.default_rng(MONK3_NOISE_SEED).choice(len(y), size=MONK3_N_FLIPS, replace=False)
        y = y.copy()
        y[flip] = ~y[flip]
    else:
        raise ValueError(f"problem must be 1, 2 or 3, got {problem!r}")
    onehot = np.hstack([(grid[:, [j]] == np.arange(1, n + 1)[None]).astype(float) for j, n in enumerate(levels)])
    return np.hstack([onehot, np.ones((len(y), 1))]), y.astype(int)


def _sklearn_data(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    loader = {"breast_cancer": datasets.load_breast_cancer, "wine": datasets.load_wine,
              "iris": datasets.load_iris, "digits": datasets.load_digits}[name]
    data = loader()
    return _zscore_bias(np.asarray(data.data, dtype=float)), np.asarray(data.target)


def make_env(name: str, seed: int, **params):
    """The bandit problem ``name`` with seed ``seed``.

    ``finite_class`` takes ``n_models=100, n_actions=5, context_dim=4`` (Gaussian part; a bias 1 is appended, so
    ``env.context_dim`` is context_dim + 1), optionally ``kind="hidden_arm"`` with its model parameters, and
    exposes ``thetas`` (|F|, A, dim) and ``star_index``. The streams
    ("breast_cancer", "wine", "iris", "digits", "monk1", "monk2", "monk3") take no params; the seed fixes the row
    order. Every env has ``n_actions``, ``context_dim``, ``n_rounds`` (None for the synthetic class),
    ``context(t)``, ``expected_losses(t)`` and ``sample_loss(t, a, rng)``.
    """
    if name not in ENV_NAMES:
        raise ValueError(f"name must be one of {list(ENV_NAMES)}, got {name!r}")
    if name == "finite_class":
        return FiniteClassEnv(seed, **params)
    if params:
        raise ValueError(f"env {name!r} takes no params, got {sorted(params)}")
    X, y = monk_data(int(name[-1])) if name.startswith("monk") else _sklearn_data(name)
    return ClassificationEnv(name, X, y, seed)
