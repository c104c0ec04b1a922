"""Vowpal Wabbit's contextual-bandit explorers as agents of this reproduction (the library comparator).

Two of VW's ``--cb_explore_adf`` reductions (action-dependent features, ADF), with VW's default online learner:
squared loss, online gradient descent with adaptive, normalised and importance-invariant updates, trained on the
chosen action's example with VW's default ``--cb_type mtr``.

- ``vw_squarecb``: ``--cb_explore_adf --squarecb --gamma_scale g --gamma_exponent e`` (Foster & Rakhlin 2020). VW
  plays inverse-gap weighting on its predicted costs, p(a) = 1 / (A + gamma_t (f(a) - f(b))) off the greedy action
  b, with gamma_t = g * t^e (VW's defaults g = 10, e = 0.5), the same rule as our :class:`SquareCB` (which runs it
  on the ridge oracle instead).
- ``vw_regcb``: ``--cb_explore_adf --regcb --regcbopt --mellowness c0`` (RegCB-optimistic, Foster et al. 2018). VW
  plays the action with the smallest lower confidence bound on the cost, found by its sensitivity-based binary
  search, with a version-space radius of the form c0 log(|A| t); costs are bounded by ``--cb_min_cost 0`` and
  ``--cb_max_cost 1`` (VW's defaults). ``--regcb`` turns the reduction on and ``--regcbopt`` chooses the
  optimistic variant (``--regcbopt`` alone does not enable the reduction in VW 9).

Example format (VW's multi-line ADF text format): one ``shared`` line with the context, then one line per action
with the action's indicator, and the interaction ``-q sa`` so that the linear learner has one weight vector per
action (as our per-action ridge oracle does):

    shared |s x0:0.5 x1:-1.25 x4:1
    |a a0
    0:1:0.25 |a a1            <- learning only: the chosen action's line carries "0:cost:probability"
    |a a2

Zero context entries are omitted (they contribute nothing to a linear score). The round's protocol is the one of
:func:`papers.opo_cmab.experiments.run_bandit`: VW returns a score per action, the wrapper turns it into a
distribution and the action is drawn with the experiment's own generator, so every method sees the same contexts
and loss draws. VW's RegCB-optimistic gives a score of 1 to every action that ties for the smallest lower bound
(and 0 to the others), so its scores sum to the number of ties; the wrapper normalises them, which breaks a tie
uniformly. The probability in the learning label is the one the action was drawn with.
"""
from __future__ import annotations

import math

import numpy as np

from papers.opo_cmab.opo import check_context, check_feedback, check_n_actions, sample_action, validate_nonneg

__all__ = ["VW_ALGOS", "vw_arguments", "adf_lines", "VWAgent", "vw_label", "make_vw_agent", "normalise_scores"]

VW_ALGOS = ("vw_squarecb", "vw_regcb")
SCORE_SUM_TOL = 1e-4   # VW's SquareCB probabilities are float32: their sum may miss 1 by a few 1e-8


def vw_arguments(algo: str, *, gamma_scale: float = 10.0, gamma_exponent: float = 0.5, mellowness: float = 0.1,
                 seed: int = 0) -> str:
    """VW's command line of ``algo`` ("vw_squarecb" or "vw_regcb"; see the module docstring), quiet, with the
    shared-by-action interaction ``-q sa`` and VW's random seed ``seed``."""
    if algo not in VW_ALGOS:
        raise ValueError(f"algo must be one of {VW_ALGOS}, got {algo!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if algo == "vw_squarecb":
        g, e = validate_nonneg(gamma_scale, "gamma_scale"), validate_nonneg(gamma_exponent, "gamma_exponent")
        explore = f"--squarecb --gamma_scale {g!r} --gamma_exponent {e!r}"
    else:
        c0 = validate_nonneg(mellowness, "mellowness")
        if c0 == 0:
            raise ValueError("mellowness must be positive, got 0")
        explore = f"--regcb --regcbopt --mellowness {c0!r} --cb_min_cost 0 --cb_max_cost 1"
    return f"--cb_explore_adf {explore} -q sa --random_seed {int(seed)} --quiet"


def vw_label(cost: float, probability: float) -> str:
    """The ADF label of the chosen action's line, ``0:cost:probability`` (cost in [0, 1], probability in (0, 1])."""
    cost, probability = float(cost), float(probability)
    if not (math.isfinite(cost) and 0.0 <= cost <= 1.0):
        raise ValueError(f"cost must lie in [0, 1], got {cost!r}")
    if not (math.isfinite(probability) and 0.0 < probability <= 1.0):
        raise ValueError(f"probability must lie in (0, 1], got {probability!r}")
    return f"0:{cost!r}:{probability!r}"


def adf_lines(context, n_actions: int, label: tuple[int, float, float] | None = None) -> list[str]:
    """The multi-line ADF example of one round: ``shared |s x<j>:<value>`` for the non-zero context entries, then
    ``|a a<i>`` for every action i. With ``label = (action, cost, probability)`` the chosen action's line starts
    with :func:`vw_label`."""
    A = check_n_actions(n_actions)
    x = np.asarray(context, dtype=float)
    if x.ndim != 1 or x.size < 1:
        raise ValueError(f"context must be a non-empty 1-D array, got shape {x.shape}")
    return _lines(_shared_line(check_context(x, x.size)), A, label)


def _shared_line(x: np.ndarray) -> str:
    """``shared |s x<j>:<value> ...`` over the non-zero entries of a validated context (values as Python's repr,
    which VW reads back exactly up to its float32 storage)."""
    nz = np.flatnonzero(x)
    return " ".join(["shared |s"] + [f"x{j}:{v!r}" for j, v in zip(nz.tolist(), x[nz].tolist())])


def _lines(shared: str, n_actions: int, label) -> list[str]:
    lines = [shared] + [f"|a a{i}" for i in range(n_actions)]
    if label is not None:
        action, cost, probability = label
        action, cost = check_feedback(n_actions, action, cost)
        lines[action + 1] = f"{vw_label(cost, probability)} {lines[action + 1]}"
    return lines


def normalise_scores(scores, n_actions: int, algo: str, round_: int) -> np.ndarray:
    """VW's per-action scores as a distribution: finite, non-negative, with a positive sum; SquareCB's must
    already sum to 1 (within float32 rounding, ``SCORE_SUM_TOL``), RegCB's are tie indicators and are divided by
    their sum. RuntimeError naming the round otherwise."""
    p = np.asarray(scores, dtype=float)
    if p.shape != (n_actions,):
        raise RuntimeError(f"{algo}, round {round_}: VW returned {p.shape} scores for {n_actions} actions")
    s = float(p.sum())
    if not (np.all(np.isfinite(p)) and p.min() >= 0.0 and s > 0.0):
        raise RuntimeError(f"{algo}, round {round_}: VW's scores {p.tolist()} are not a distribution")
    if algo == "vw_squarecb" and abs(s - 1.0) > SCORE_SUM_TOL:
        raise RuntimeError(f"{algo}, round {round_}: VW's probabilities sum to {s!r}")
    return p / s


class VWAgent:
    """A VW ``--cb_explore_adf`` learner behind the agents' interface ``act(context, rng) -> (action, p)`` and
    ``update(context, action, loss)`` (see :mod:`papers.opo_cmab.baselines`).

    ``act`` predicts VW's scores on the unlabelled ADF example, normalises them (:func:`normalise_scores`) and
    draws the action from them with ``rng``; ``update`` learns the same example with the label
    ``0:loss:p(action)`` on the chosen action's line. ``close()`` frees VW's workspace (idempotent).
    """

    full_information = False

    def __init__(self, n_actions: int, context_dim: int, algo: str, **options):
        import vowpalwabbit  # the pinned library comparator; imported here so the rest of the paper needs it not

        self.n_actions = check_n_actions(n_actions)
        if isinstance(context_dim, bool) or not isinstance(context_dim, (int, np.integer)) or context_dim < 1:
            raise ValueError(f"context_dim must be a positive integer, got {context_dim!r}")
        self.dim = int(context_dim)
        self.algo = algo
        self.name = algo
        self.arguments = vw_arguments(algo, **options)
        self._vw = vowpalwabbit.Workspace(self.arguments)
        self._last = None   # (context, shared line, p) of the round being played
        self.t = 1

    def act(self, context, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        x = check_context(context, self.dim)
        if self._vw is None:
            raise RuntimeError("the VW workspace is closed")
        shared = _shared_line(x)
        p = normalise_scores(self._vw.predict(_lines(shared, self.n_actions, None)), self.n_actions, self.algo,
                             self.t)
        self._last = (x, shared, p)
        return sample_action(p, rng), p

    def update(self, context, action: int, loss: float) -> None:
        x = check_context(context, self.dim)
        action, loss = check_feedback(self.n_actions, action, loss)
        if self._last is None or not np.array_equal(self._last[0], x):
            raise RuntimeError("update must follow act on the same context")
        _, shared, p = self._last
        self._vw.learn(_lines(shared, self.n_actions, (action, loss, float(p[action]))))
        self._last = None
        self.t += 1

    def close(self) -> None:
        if self._vw is not None:
            self._vw.finish()
            self._vw = None


def make_vw_agent(spec: dict, env, seed: int = 0) -> VWAgent:
    """The VW agent of ``spec``: ``{"algo": "vw_squarecb", "gamma_scale": g}`` (optional ``gamma_exp``) or
    ``{"algo": "vw_regcb", "c0": c0}`` (VW's mellowness), on ``env``'s actions and context dimension."""
    algo = spec.get("algo")
    if algo == "vw_squarecb":
        options = {"gamma_scale": spec["gamma_scale"], "gamma_exponent": spec.get("gamma_exp", 0.5)}
    elif algo == "vw_regcb":
        options = {"mellowness": spec["c0"]}
    else:
        raise ValueError(f"spec's algo must be one of {VW_ALGOS}, got {algo!r}")
    return VWAgent(env.n_actions, env.context_dim, algo, seed=seed, **options)
