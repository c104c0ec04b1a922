r"""Imperfect-recall extensive-form games and their utility polynomials.

A behavioural strategy of player :math:`i` assigns a distribution :math:`x_I \in \Delta(A_I)` to each of its
information sets :math:`I`. The expected utility is the polynomial

.. math::  U_i(x) = \sum_{z \in Z} p_c(z)\, u_i(z) \prod_{(I, a) \to z} x_{I,a},

the product running over the decisions on the path to leaf :math:`z`; a factor repeats when the path visits
:math:`I` more than once (absentmindedness). Eliminating the last action of every information set,
:math:`x_{I,\mathrm{last}} = 1 - \sum_{a < \mathrm{last}} x_{I,a}`, gives the polynomial in the free
variables ``Game.variables`` (infoset order, then action order) used by the SOS hierarchies.

Formats: LiteEFG text (Tewolde et al. 2026, "Decision Making under Imperfect Recall: Algorithms and
Benchmarks") and a subset of Gambit ``.efg``. Profiles and strategies are plain dicts
``{infoset name: {action: probability}}``.
"""
from __future__ import annotations

import itertools
import math
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import poly as P

__all__ = ["Infoset", "Game", "load_game", "parse_game", "forgetful_cut_game", "random_cut_game",
           "random_decision_problem", "random_two_player_game", "MIRRORED", "PROJECT_GAMES", "CODE_GAMES", "game_file",
           "canonical_sha256"]

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent.parent
DATA_DIR = REPO_ROOT / "data" / "irefg_sos"

_TEWOLDE = ("https://raw.githubusercontent.com/emanueltewolde/Imperfect-Recall-Decisions/"
            "977e0fc96aaa46e886f41f34b56ccfdacba2b65f/decisionproblems/simple/")
_GAMBIT = ("https://raw.githubusercontent.com/gambitproject/gambit/e6d1ad2c435a1c33c5372c9326700e3f682c29d5/"
           "catalog/games/journals/geb/")

#: name -> (file name, canonical URL, SHA-256 of the canonical text)
MIRRORED = {
    "absentminded_driver": ("absentminded_driver.txt", _TEWOLDE + "absentminded_driver",
                            "ebad68554a66d81ca36bfc6c87bce8eefa6e8240396b453b1c40368895a3a9c3"),
    "extended_abs_driver": ("extended_abs_driver.txt", _TEWOLDE + "extended_abs_driver",
                            "b2362868c68d51996a2bfeb06e476d91f4eaff31c81c70c6e02dd1090ba6b6bd"),
    "picc_rub_fig2": ("picc_rub_fig2.txt", _TEWOLDE + "picc_rub_fig2",
                      "93918c8e9e092bce2fc83431df7000371c723d5fc75fe9c9a3b47dea049a304f"),
    "picc_rub_fig3": ("picc_rub_fig3.txt", _TEWOLDE + "picc_rub_fig3",
                      "22b27ce8575f1216b8e577c35376a442104832283e09ac7d63c1779efc0b3e01"),
    "picc_rub_fig6": ("picc_rub_fig6.txt", _TEWOLDE + "picc_rub_fig6",
                      "2d18860a60017a54431c519a3a1f5e08ca8c503bfdf23a4b1ad9b7a93c99f680"),
    "wichardt2008": ("wichardt2008.efg", _GAMBIT + "wichardt2008.efg",
                     "b52d4c60f2681be595b0e468a5168d8b9be6872ed6fb4e41024146f1a432575e"),
}
PROJECT_GAMES = {"amd_classic": "amd_classic.txt", "amd_policeman": "amd_policeman.txt"}
MIRROR_SUBDIR = "irefg"


class Infoset(NamedTuple):
    """An information set: its ``name``, the acting ``player`` and its ordered ``actions``."""

    name: str
    player: int
    actions: tuple


@dataclass
class _Node:
    kind: str                      # "player" | "chance" | "leaf"
    player: int = 0
    actions: tuple = ()
    probs: tuple = ()
    payoffs: dict = field(default_factory=dict)


def _child(path: str, node: _Node, action: str) -> str:
    tag = f"P{node.player}" if node.kind == "player" else "C"
    return path.rstrip("/") + f"/{tag}:{action}"


class Game:
    """A finite extensive-form game with (possibly) imperfect recall, behavioural strategies.

    Attributes: ``players`` (strategic players, sorted), ``infosets`` (tuple of :class:`Infoset`),
    ``variables`` (free variables ``(infoset name, action)`` after eliminating each last action),
    ``is_absentminded`` (some path visits an infoset twice), ``title``.
    """

    def __init__(self, nodes: dict, infosets: list, node_infoset: dict, title: str = "",
                 payoff_players: tuple | None = None):
        self.title = title
        self._nodes = nodes
        self.infosets = tuple(infosets)
        self._node_infoset = dict(node_infoset)
        self.players = tuple(sorted({I.player for I in self.infosets}))
        self._index = {I.name: k for k, I in enumerate(self.infosets)}
        self.variables = tuple((I.name, a) for I in self.infosets for a in I.actions[:-1])
        self.full_variables = tuple((I.name, a) for I in self.infosets for a in I.actions)
        self._leaves = []          # (probability, payoffs, [(infoset index, action index), ...])
        self._collect("/", 1.0, [])
        self.is_absentminded = any(len({k for k, _ in dec}) < len(dec) for _, _, dec in self._leaves)
        for _, pay, _ in self._leaves:
            for p in self.players:
                if p not in pay:
                    raise ValueError(f"a leaf lacks the payoff of player {p} (missing payoffs are errors, not 0)")
        self._poly_cache: dict = {}

    # ----------------------------------------------------------------------------------------- structure
    def _collect(self, path, prob, decisions):
        node = self._nodes[path]
        if node.kind == "leaf":
            self._leaves.append((prob, node.payoffs, list(decisions)))
            return
        for j, a in enumerate(node.actions):
            child = _child(path, node, a)
            if node.kind == "chance":
                if node.probs[j] > 0:
                    self._collect(child, prob * node.probs[j], decisions)
            else:
                k = self._index[self._node_infoset[path]]
                self._collect(child, prob, decisions + [(k, j)])

    @property
    def n_variables(self) -> int:
        """Number of free (eliminated) variables."""
        return len(self.variables)

    def check_player(self, player: int) -> int:
        """Return ``player`` or raise ValueError when it is not a strategic player of the game."""
        if isinstance(player, bool) or not isinstance(player, (int, np.integer)) or int(player) not in self.players:
            raise ValueError(f"player must be one of {list(self.players)}, got {player!r}")
        return int(player)

    def player_infosets(self, player: int) -> list[int]:
        """Indices of the information sets of ``player``."""
        return [k for k, I in enumerate(self.infosets) if I.player == player]

    def player_variables(self, player: int) -> list[int]:
        """Indices (into ``variables``) of the free variables of ``player``."""
        return [i for i, (name, _) in enumerate(self.variables) if self.infosets[self._index[name]].player == player]

    def infoset_variables(self, k: int) -> list[int]:
        """Indices of the free variables of information set ``k``."""
        name = self.infosets[k].name
        return [i for i, (n, _) in enumerate(self.variables) if n == name]

    def player_is_absentminded(self, player: int) -> bool:
        """True when some path visits one of ``player``'s information sets twice."""
        mine = set(self.player_infosets(player))
        return any(len([k for k, _ in dec if k in mine]) > len({k for k, _ in dec if k in mine})
                   for _, _, dec in self._leaves)

    # --------------------------------------------------------------------------------------- polynomials
    def full_polynomial(self, player: int) -> dict:
        r""":math:`U_i` in full coordinates (one variable per (infoset, action), order ``full_variables``)."""
        player = self.check_player(player) if self.players else player
        key = ("full", player)
        if key not in self._poly_cache:
            col = {}
            off = 0
            for k, I in enumerate(self.infosets):
                for j in range(len(I.actions)):
                    col[(k, j)] = off + j
                off += len(I.actions)
            m = off
            out: dict = {}
            for prob, pay, dec in self._leaves:
                c = prob * pay[player]
                if c == 0:
                    continue
                alpha = [0] * m
                for kj in dec:
                    alpha[col[kj]] += 1
                alpha = tuple(alpha)
                out[alpha] = out.get(alpha, 0.0) + c
            self._poly_cache[key] = P.clean(out)
        return dict(self._poly_cache[key])

    def elimination_forms(self) -> list[dict]:
        r"""Affine forms of every full variable in the free variables: :math:`x_{I,a}` or
        :math:`1 - \sum_{b < \mathrm{last}} x_{I,b}`."""
        n = self.n_variables
        forms, i = [], 0
        for I in self.infosets:
            own = list(range(i, i + len(I.actions) - 1))
            for j in range(len(I.actions) - 1):
                forms.append(P.var(own[j], n))
            last = P.const(1.0, n)
            for v in own:
                last = P.add(last, P.scale(P.var(v, n), -1.0))
            forms.append(last)
            i += len(I.actions) - 1
        return forms

    def eliminate(self, full_poly: dict) -> dict:
        """A full-coordinate polynomial rewritten in the free variables."""
        return P.substitute_affine(full_poly, self.elimination_forms(), self.n_variables)

    def polynomial(self, player: int) -> dict:
        """:math:`U_i` in the free variables ``variables`` (exponent tuple -> coefficient)."""
        player = self.check_player(player)
        key = ("elim", player)
        if key not in self._poly_cache:
            self._poly_cache[key] = self.eliminate(self.full_polynomial(player))
        return dict(self._poly_cache[key])

    def degree(self, player: int | None = None) -> int:
        """Degree of :math:`U_i` in the free variables (max over players when ``player`` is None)."""
        players = self.players if player is None else (self.check_player(player),)
        return max(P.degree(self.polynomial(p)) for p in players)

    # ------------------------------------------------------------------------------------------ profiles
    def check_profile(self, profile, *, infosets: list[int] | None = None) -> None:
        """Raise ValueError unless ``profile`` is a valid behavioural profile over ``infosets`` (default all)."""
        wanted = [self.infosets[k] for k in (range(len(self.infosets)) if infosets is None else infosets)]
        if not isinstance(profile, dict):
            raise ValueError(f"profile must be a dict infoset -> action -> probability, got {type(profile).__name__}")
        names = {I.name for I in wanted}
        missing = [I.name for I in wanted if I.name not in profile]
        extra = [k for k in profile if k not in names]
        if missing:
            raise ValueError(f"profile lacks the infosets {missing}")
        if extra:
            raise ValueError(f"profile has unknown infosets {extra}")
        for I in wanted:
            dist = profile[I.name]
            if not isinstance(dist, dict):
                raise ValueError(f"profile[{I.name!r}] must be a dict action -> probability")
            unknown = [a for a in dist if a not in I.actions]
            if unknown:
                raise ValueError(f"profile[{I.name!r}] has unknown actions {unknown}; actions are {list(I.actions)}")
            vals = [float(dist.get(a, 0.0)) for a in I.actions]
            if any(not math.isfinite(v) for v in vals):
                raise ValueError(f"profile[{I.name!r}] has non-finite probabilities")
            if min(vals) < 0:
                raise ValueError(f"profile[{I.name!r}] has a negative probability")
            if abs(sum(vals) - 1.0) > 1e-9:
                raise ValueError(f"profile[{I.name!r}] sums to {sum(vals)!r}, not 1")

    def profile_to_vector(self, profile, *, infosets: list[int] | None = None) -> np.ndarray:
        """Free-variable vector of a (validated) profile; infosets not given are left at 0."""
        self.check_profile(profile, infosets=infosets)
        x = np.zeros(self.n_variables)
        for i, (name, a) in enumerate(self.variables):
            if name in profile:
                x[i] = float(profile[name].get(a, 0.0))
        return x

    def vector_to_profile(self, x, *, infosets: list[int] | None = None) -> dict:
        """Profile dict from a free-variable vector (last action = 1 - sum of the others)."""
        x = np.asarray(x, dtype=float)
        out = {}
        for k in (range(len(self.infosets)) if infosets is None else infosets):
            I = self.infosets[k]
            vals = [float(x[i]) for i in self.infoset_variables(k)]
            vals.append(1.0 - sum(vals))
            out[I.name] = dict(zip(I.actions, vals))
        return out

    def clip_to_polytope(self, x) -> np.ndarray:
        """Map a vector to the nearest-ish point of the strategy polytope (clip at 0, rescale sums > 1)."""
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        for k in range(len(self.infosets)):
            idx = self.infoset_variables(k)
            s = x[idx].sum()
            if s > 1.0:
                x[idx] = x[idx] / s
        return x

    def utility(self, profile, player: int) -> float:
        r""":math:`U_i` at a behavioural profile: :math:`\sum_z p_c(z) u_i(z) \prod x_{I,a}`."""
        player = self.check_player(player)
        self.check_profile(profile)
        total = 0.0
        for prob, pay, dec in self._leaves:
            term = prob * pay[player]
            for k, j in dec:
                I = self.infosets[k]
                term *= float(profile[I.name].get(I.actions[j], 0.0))
            total += term
        return total

    def pure_strategies(self, player: int):
        """Iterate the free-variable sub-vectors of ``player``'s pure strategies (one action per infoset)."""
        ks = self.player_infosets(player)
        for choice in itertools.product(*[range(len(self.infosets[k].actions)) for k in ks]):
            vec = []
            for k, j in zip(ks, choice):
                m = len(self.infosets[k].actions) - 1
                vec.extend(1.0 if t == j else 0.0 for t in range(m))
            yield np.array(vec)

    def __repr__(self) -> str:
        return (f"Game({self.title!r}, players={self.players}, infosets={len(self.infosets)}, "
                f"variables={self.n_variables}, absentminded={self.is_absentminded})")


# ---------------------------------------------------------------------------------------------- parsing
def _number(tok: str, what: str) -> float:
    try:
        return float(Fraction(tok))
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{what}: {tok!r} is not a number") from None


def _check_chance(probs, where):
    if any(p < 0 for p in probs):
        raise ValueError(f"{where}: negative chance probability in {list(probs)}")
    if abs(sum(probs) - 1.0) > 1e-9:
        raise ValueError(f"{where}: chance probabilities sum to {sum(probs)!r}, not 1")


def _build(nodes: dict, infoset_list: list, title: str) -> Game:
    """Check the tree (parents, children, infosets) and build the :class:`Game`."""
    if "/" not in nodes:
        raise ValueError("the game has no root node '/'")
    for path, node in nodes.items():
        if path == "/":
            continue
        parent, _, last = path.rstrip("/").rpartition("/")
        parent = parent or "/"
        if parent not in nodes:
            raise ValueError(f"node {path!r}: its parent path {parent!r} has no node")
        pnode = nodes[parent]
        if pnode.kind == "leaf" or _child(parent, pnode, last.split(":", 1)[-1]) != path.rstrip("/") or \
                last.split(":", 1)[-1] not in pnode.actions:
            raise ValueError(f"node {path!r} is not a child of {parent!r} (no such action there)")
    for path, node in nodes.items():
        for a in node.actions:
            if _child(path, node, a) not in nodes:
                raise ValueError(f"node {path!r}: the child for action {a!r} ({_child(path, node, a)!r}) has no node")
    node_infoset, infosets = {}, []
    seen_names = set()
    for name, members in infoset_list:
        if name in seen_names:
            raise ValueError(f"infoset {name!r} is defined twice")
        seen_names.add(name)
        if not members:
            raise ValueError(f"infoset {name!r} has no nodes")
        first = None
        for m in members:
            if m not in nodes:
                raise ValueError(f"infoset {name!r}: node {m!r} does not exist")
            node = nodes[m]
            if node.kind != "player":
                raise ValueError(f"infoset {name!r}: node {m!r} is not a player node")
            if m in node_infoset:
                raise ValueError(f"node {m!r} is in two infosets ({node_infoset[m]!r} and {name!r})")
            node_infoset[m] = name
            if first is None:
                first = node
            elif node.player != first.player:
                raise ValueError(f"infoset {name!r}: its nodes belong to different players")
            elif node.actions != first.actions:
                raise ValueError(f"infoset {name!r}: its nodes have different action lists")
        infosets.append(Infoset(name, first.player, tuple(first.actions)))
    for path, node in nodes.items():
        if node.kind == "player" and path not in node_infoset:
            raise ValueError(f"player node {path!r} is in no infoset")
    return Game(nodes, infosets, node_infoset, title)


def _parse_liteefg(text: str) -> Game:
    nodes, infosets = {}, []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tok = line.split()
        where = f"line {lineno}"
        if tok[0] == "node":
            if len(tok) < 3:
                raise ValueError(f"{where}: malformed node line {raw.strip()!r}")
            path, kind = tok[1], tok[2]
            if path in nodes:
                raise ValueError(f"{where}: node {path!r} defined twice")
            if kind == "player":
                if len(tok) < 6 or tok[4] != "actions":
                    raise ValueError(f"{where}: player node needs 'player P actions A1 A2 ...': {raw.strip()!r}")
                try:
                    pl = int(tok[3])
                except ValueError:
                    raise ValueError(f"{where}: player {tok[3]!r} is not an integer") from None
                if len(set(tok[5:])) != len(tok[5:]):
                    raise ValueError(f"{where}: repeated action names")
                nodes[path] = _Node("player", player=pl, actions=tuple(tok[5:]))
            elif kind == "chance":
                if len(tok) < 5 or tok[3] != "actions":
                    raise ValueError(f"{where}: chance node needs 'chance actions a=p ...': {raw.strip()!r}")
                acts, probs = [], []
                for item in tok[4:]:
                    a, eq, p = item.partition("=")
                    if not eq or not a:
                        raise ValueError(f"{where}: chance action {item!r} is not 'action=probability'")
                    acts.append(a)
                    probs.append(_number(p, f"{where}: chance probability"))
                _check_chance(probs, where)
                nodes[path] = _Node("chance", actions=tuple(acts), probs=tuple(probs))
            elif kind == "leaf":
                if len(tok) < 5 or tok[3] != "payoffs":
                    raise ValueError(f"{where}: leaf needs 'leaf payoffs 1=v ...': {raw.strip()!r}")
                pay = {}
                for item in tok[4:]:
                    p, eq, v = item.partition("=")
                    if not eq:
                        raise ValueError(f"{where}: payoff {item!r} is not 'player=value'")
                    try:
                        pay[int(p)] = _number(v, f"{where}: payoff")
                    except ValueError as exc:
                        raise ValueError(f"{where}: payoff {item!r}: {exc}") from None
                nodes[path] = _Node("leaf", payoffs=pay)
            else:
                raise ValueError(f"{where}: unknown node kind {kind!r} (player, chance or leaf)")
        elif tok[0] == "infoset":
            if len(tok) < 4 or tok[2] != "nodes":
                raise ValueError(f"{where}: infoset line needs 'infoset NAME nodes PATH ...': {raw.strip()!r}")
            infosets.append((tok[1], tok[3:]))
        else:
            raise ValueError(f"{where}: unknown keyword {tok[0]!r} (node, infoset or #)")
    return _build(nodes, infosets, "")


_EFG_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|([{}])|([^\s{}",]+)|,')


def _efg_tokens(text: str):
    out = []
    for m in _EFG_TOKEN.finditer(text):
        if m.group(1) is not None:
            out.append(("str", m.group(1)))
        elif m.group(2) is not None:
            out.append((m.group(2), m.group(2)))
        elif m.group(3) is not None:
            out.append(("word", m.group(3)))
    return out


def _parse_efg(text: str) -> Game:
    toks = _efg_tokens(text)
    pos = 0

    def peek(k=0):
        return toks[pos + k] if pos + k < len(toks) else (None, None)

    def take(kind=None, what="token"):
        nonlocal pos
        if pos >= len(toks):
            raise ValueError(f".efg: unexpected end of file while reading {what} (wrong number of children?)")
        t = toks[pos]
        if kind is not None and t[0] != kind:
            raise ValueError(f".efg: expected {what}, got {t[1]!r}")
        pos += 1
        return t[1]

    if take("word", "'EFG'") != "EFG":
        raise ValueError(".efg: the file must start with 'EFG 2 R'")
    take("word", "version")
    if take("word", "'R'") not in ("R", "D"):
        raise ValueError(".efg: only 'R' (rational/real) payoffs are supported")
    title = take("str", "title")
    take("{", "'{' of the player list")
    players = []
    while peek()[0] == "str":
        players.append(take("str"))
    take("}", "'}' of the player list")
    if peek()[0] == "str":
        take("str")
    n_players = len(players)
    outcomes: dict = {}
    infoset_actions: dict = {}
    nodes: dict = {}
    members: dict = {}
    order: list = []

    def read_outcome():
        num = int(_number(take("word", "outcome number"), ".efg outcome"))
        if peek()[0] == "str":
            take("str")
            take("{", "'{' of outcome payoffs")
            vals = []
            while peek()[0] == "word":
                vals.append(_number(take("word"), ".efg payoff"))
            take("}", "'}' of outcome payoffs")
            if len(vals) != n_players:
                raise ValueError(f".efg: outcome {num} has {len(vals)} payoffs for {n_players} players")
            outcomes[num] = vals
        if num != 0 and num not in outcomes:
            raise ValueError(f".efg: outcome {num} is referenced before it is defined")
        return outcomes.get(num, [0.0] * n_players)

    def read_node(path, acc):
        kind = take("word", "node type (p, c or t)")
        take("str", "node name")
        if kind == "t":
            pay = read_outcome()
            tot = [a + b for a, b in zip(acc, pay)]
            nodes[path] = _Node("leaf", payoffs={i + 1: v for i, v in enumerate(tot)})
            return
        if kind == "p":
            pl = int(_number(take("word", "player"), ".efg player"))
            if not 1 <= pl <= n_players:
                raise ValueError(f".efg: player {pl} is not among the {n_players} players")
        elif kind == "c":
            pl = 0
        else:
            raise ValueError(f".efg: unknown node type {kind!r}")
        iset = int(_number(take("word", "infoset number"), ".efg infoset"))
        if peek()[0] == "str":
            take("str")
        acts, probs = None, []
        if peek()[0] == "{":
            take("{")
            acts = []
            while peek()[0] == "str":
                acts.append(take("str"))
                if kind == "c":
                    probs.append(_number(take("word", "chance probability"), ".efg chance probability"))
            take("}", "'}' of the action list")
        key = (pl, iset)
        if acts is None:
            if key not in infoset_actions:
                raise ValueError(f".efg: infoset {iset} of player {pl} is used before its actions are given")
            acts, probs = infoset_actions[key]
        elif key in infoset_actions and infoset_actions[key][0] != acts and pl != 0:
            raise ValueError(f".efg: infoset {iset} of player {pl} has different action lists")
        infoset_actions.setdefault(key, (acts, probs))
        pay = read_outcome()
        acc = [a + b for a, b in zip(acc, pay)]
        if kind == "c":
            _check_chance(probs, f".efg chance node {path!r}")
            node = _Node("chance", actions=tuple(acts), probs=tuple(probs))
        else:
            node = _Node("player", player=pl, actions=tuple(acts))
            name = f"P{pl}:{iset}"
            if name not in members:
                members[name] = []
                order.append(name)
            members[name].append(path)
        nodes[path] = node
        for a in acts:
            read_node(_child(path, node, a), acc)

    read_node("/", [0.0] * n_players)
    if pos != len(toks):
        raise ValueError(f".efg: {len(toks) - pos} tokens left after the tree (wrong number of children?)")
    return _build(nodes, [(n, members[n]) for n in order], title)


def parse_game(text: str, fmt: str) -> Game:
    """Parse a game from text; ``fmt`` is ``"liteefg"`` or ``"efg"``. ValueError on malformed input."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    if fmt == "liteefg":
        return _parse_liteefg(text)
    if fmt == "efg":
        return _parse_efg(text)
    raise ValueError(f"fmt must be 'liteefg' or 'efg', got {fmt!r}")


# ----------------------------------------------------------------------------------------------- files
def canonical_sha256(data: bytes) -> str:
    """SHA-256 of the canonical text (``shared.data.sha256_text``): lines split on CRLF/LF/CR, trailing blanks
    stripped per line, trailing empty lines dropped, joined by LF with one final LF (upstream files may lack
    the final LF)."""
    from shared.data import sha256_text

    return sha256_text(data)


def game_file(name: str, dest_dir: str | Path | None = None) -> Path:
    """Path of a verified copy of the mirrored game ``name`` (fetched on first use under ``data/irefg_sos``).

    Uses ``shared.data.fetch`` (canonical URL, or the mirror in ``REPRO_DATA_MIRROR`` first when set); a
    SHA-256 mismatch raises ``shared.data.ChecksumError`` (a ValueError).
    """
    if name not in MIRRORED:
        raise ValueError(f"unknown mirrored game {name!r}; choose one of {sorted(MIRRORED)}")
    fname, url, sha = MIRRORED[name]
    dest = Path(dest_dir or DATA_DIR) / fname
    if dest.is_file() and canonical_sha256(dest.read_bytes()) == sha:
        return dest
    from shared.data import fetch

    return fetch(url, dest, sha256=sha, mirror_relpath=f"{MIRROR_SUBDIR}/{fname}", canonical_text=True)


# ------------------------------------------------------------------------------------------ games built in code
def _picc_rub_fig3() -> Game:
    """Piccione & Rubinstein (1995), Fig. 3, built node by node: one player, infoset ``inf1/`` = {root} with actions
    l1, r1, then infoset ``inf2/`` = {after l1, after r1} (the first move is forgotten) with actions l2, r2;
    payoffs (l1, l2) = 1, (r1, r2) = 2, else 0. The same tree as the public LiteEFG file ``picc_rub_fig3``."""
    nodes = {"/": _Node("player", player=1, actions=("l1", "r1"))}
    pay = {("l1", "l2"): 1.0, ("l1", "r2"): 0.0, ("r1", "l2"): 0.0, ("r1", "r2"): 2.0}
    for a in ("l1", "r1"):
        nodes[f"/P1:{a}"] = _Node("player", player=1, actions=("l2", "r2"))
        for b in ("l2", "r2"):
            nodes[f"/P1:{a}/P1:{b}"] = _Node("leaf", payoffs={1: pay[a, b]})
    return _build(nodes, [("inf1/", ["/"]), ("inf2/", ["/P1:l1", "/P1:r1"])], "picc_rub_fig3")


def _driver(exit_payoffs, end_payoff: float, title: str) -> Game:
    """The absent-minded driver (Piccione & Rubinstein 1995) and its extension, built node by node: one infoset
    ``pl1_1__highway/`` holds every intersection; at the k-th, exit (e) pays ``exit_payoffs[k]`` and continue (c)
    leads on, to a leaf paying ``end_payoff`` after the last. The same trees as the public LiteEFG files
    ``absentminded_driver`` (exits 0, 4; end 0) and ``extended_abs_driver`` (exits 0, 0, 27; end 0)."""
    nodes, members, path = {}, [], "/"
    for u in exit_payoffs:
        node = nodes[path] = _Node("player", player=1, actions=("e", "c"))
        members.append(path)
        nodes[_child(path, node, "e")] = _Node("leaf", payoffs={1: float(u)})
        path = _child(path, node, "c")
    nodes[path] = _Node("leaf", payoffs={1: float(end_payoff)})
    return _build(nodes, [("pl1_1__highway/", members)], title)


def _chance_pair(first: tuple, second: tuple, infosets: list, title: str) -> Game:
    """A fair coin at the root, then on each side ``(chance action, player actions, stop payoff, second actions,
    second payoffs)``: the player stops (first action, payoff ``stop``) or goes on to a second decision whose
    actions pay ``second payoffs``. ``infosets``: (name, member paths) in file order."""
    nodes = {"/": _Node("chance", actions=(first[0], second[0]), probs=(0.5, 0.5))}
    for side, acts, stop, acts2, pays in (first, second):
        top = f"/C:{side}"
        nodes[top] = _Node("player", player=1, actions=acts)
        nodes[f"{top}/P1:{acts[0]}"] = _Node("leaf", payoffs={1: float(stop)})
        mid = nodes[f"{top}/P1:{acts[1]}"] = _Node("player", player=1, actions=acts2)
        for a, u in zip(acts2, pays):
            nodes[_child(f"{top}/P1:{acts[1]}", mid, a)] = _Node("leaf", payoffs={1: float(u)})
    return _build(nodes, infosets, title)


def _picc_rub_fig2() -> Game:
    """Piccione & Rubinstein (1995), Fig. 2: a fair coin h/t; after h stop (s1, 2) or go on (b1), after t stop
    (s2, 2) or go on (b2); the two second decisions (l, r) share infoset ``inf3/`` and pay (3, 0) after h, (0, 4)
    after t. The same tree as the public LiteEFG file ``picc_rub_fig2``."""
    return _chance_pair(("h", ("s1", "b1"), 2, ("l", "r"), (3, 0)), ("t", ("s2", "b2"), 2, ("l", "r"), (0, 4)),
                        [("inf1/", ["/C:h"]), ("inf2/", ["/C:t"]), ("inf3/", ["/C:h/P1:b1", "/C:t/P1:b2"])],
                        "picc_rub_fig2")


def _picc_rub_fig6() -> Game:
    """Piccione & Rubinstein (1995), Fig. 6: a fair coin l/r; the decisions {s1, b1} and {s2, b2} are met in
    opposite orders on the two sides (infosets ``inf1/`` and ``inf2/`` each hold one first and one second
    decision); stopping first pays 3, going on then stopping 0, going on twice 2. The same tree as the public
    LiteEFG file ``picc_rub_fig6``."""
    return _chance_pair(("l", ("s2", "b2"), 3, ("s1", "b1"), (0, 2)), ("r", ("s1", "b1"), 3, ("s2", "b2"), (0, 2)),
                        [("inf1/", ["/C:r", "/C:l/P1:b2"]), ("inf2/", ["/C:l", "/C:r/P1:b1"])], "picc_rub_fig6")


def _wichardt2008() -> Game:
    """Wichardt (2008), built node by node: player 1 moves R/L (infoset ``P1:1``), then r/l having forgotten the
    first move (``P1:2``), then player 2, who sees nothing, moves B/T (``P2:1``). Zero-sum; player 1 gets 1 at
    (R, r, B) and (L, l, T), -1 at (R, r, T) and (L, l, B), -5 when the two moves of player 1 differ. The same
    tree as the public Gambit file ``wichardt2008.efg`` (a game with no Nash equilibrium in behavioural
    strategies)."""
    u1 = {("R", "r", "B"): 1.0, ("R", "r", "T"): -1.0, ("L", "l", "B"): -1.0, ("L", "l", "T"): 1.0}
    nodes = {"/": _Node("player", player=1, actions=("R", "L"))}
    members = {"P1:1": ["/"], "P1:2": [], "P2:1": []}
    for a in ("R", "L"):
        p1 = f"/P1:{a}"
        nodes[p1] = _Node("player", player=1, actions=("r", "l"))
        members["P1:2"].append(p1)
        for b in ("r", "l"):
            p2 = f"{p1}/P1:{b}"
            nodes[p2] = _Node("player", player=2, actions=("B", "T"))
            members["P2:1"].append(p2)
            for c in ("B", "T"):
                v = u1.get((a, b, c), -5.0)
                nodes[f"{p2}/P2:{c}"] = _Node("leaf", payoffs={1: v, 2: -v})
    return _build(nodes, list(members.items()), "Wichardt (2008): 2 players, imperfect recall")


#: name -> builder of a small public game built in code (no file, no network: the smoke scale's games)
CODE_GAMES = {"absentminded_driver_code": lambda: _driver((0, 4), 0, "absentminded_driver"),
              "extended_abs_driver_code": lambda: _driver((0, 0, 27), 0, "extended_abs_driver"),
              "picc_rub_fig2_code": _picc_rub_fig2, "picc_rub_fig3_code": _picc_rub_fig3,
              "picc_rub_fig6_code": _picc_rub_fig6, "wichardt2008_code": _wichardt2008}


def load_game(name_or_path: str) -> Game:
    """A game by name (a mirrored game such as ``"picc_rub_fig3"`` or ``"wichardt2008"``, a project game
    ``"amd_classic"`` / ``"amd_policeman"``, a mirrored game built in code: its name + ``"_code"``, see
    ``CODE_GAMES``) or from a path ending in ``.txt`` (LiteEFG) or ``.efg``."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise ValueError(f"name_or_path must be a string, got {type(name_or_path).__name__}")
    s = str(name_or_path)
    if s in CODE_GAMES:
        return CODE_GAMES[s]()
    if s in PROJECT_GAMES:
        path = PACKAGE_DIR / "games" / PROJECT_GAMES[s]
    elif s in MIRRORED:
        path = game_file(s)
    elif s.endswith((".txt", ".efg")):
        path = Path(s)
        if not path.is_file():
            raise ValueError(f"name_or_path: file {s!r} not found")
    else:
        raise ValueError(f"name_or_path: unknown game {s!r}; names are "
                         f"{sorted(MIRRORED) + sorted(PROJECT_GAMES) + sorted(CODE_GAMES)}, "
                         "or give a path ending in .txt or .efg")
    text = path.read_text(encoding="utf-8")
    game = parse_game(text, "efg" if path.suffix == ".efg" else "liteefg")
    game.title = game.title or (s if s in MIRRORED or s in PROJECT_GAMES else path.stem)
    return game


# ------------------------------------------------------------------------------------- generated games
def forgetful_cut_game(n_vertices: int, edges, weights=None) -> Game:
    r"""Forgetful max-cut decision problem.

    Chance picks edge :math:`e = (i, j)`, :math:`i < j`, with probability :math:`w_e / \sum w`; the agent
    then acts at infoset ``v<i>`` and at ``v<j>`` (actions ``a``, ``b``) without remembering the first
    action, and gets 1 if the two actions differ. With :math:`x_k = P(a \text{ at } v_k)`:
    :math:`U = \sum_e p_e (x_i + x_j - 2 x_i x_j)` (non-absentminded; its maximum is the max cut / total
    weight).
    """
    if isinstance(n_vertices, bool) or not isinstance(n_vertices, (int, np.integer)) or n_vertices < 2:
        raise ValueError(f"n_vertices must be an integer >= 2, got {n_vertices!r}")
    edges = [tuple(int(v) for v in e) for e in edges]
    if not edges:
        raise ValueError("edges must not be empty")
    seen = set()
    for e in edges:
        if len(e) != 2:
            raise ValueError(f"edges: {e} is not a pair")
        i, j = e
        if i == j:
            raise ValueError(f"edges: self-loop ({i}, {j}) (i == j)")
        if not (0 <= i < n_vertices and 0 <= j < n_vertices):
            raise ValueError(f"edges: vertex out of range in ({i}, {j}); vertices are 0..{n_vertices - 1}")
        key = (min(i, j), max(i, j))
        if key in seen:
            raise ValueError(f"edges: duplicate edge {key}")
        seen.add(key)
    w = np.ones(len(edges)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(edges),):
        raise ValueError(f"weights must have one entry per edge ({len(edges)}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be positive")
    probs = w / w.sum()
    lines = ["node / chance actions " + " ".join(f"e{k}={float(p)!r}" for k, p in enumerate(probs))]
    members: dict = {}
    for k, (i, j) in enumerate(edges):
        i, j = min(i, j), max(i, j)
        base = f"/C:e{k}"
        lines.append(f"node {base} player 1 actions a b")
        members.setdefault(i, []).append(base)
        for a1 in "ab":
            p1 = f"{base}/P1:{a1}"
            lines.append(f"node {p1} player 1 actions a b")
            members.setdefault(j, []).append(p1)
            for a2 in "ab":
                lines.append(f"node {p1}/P1:{a2} leaf payoffs 1={int(a1 != a2)}")
    for v in sorted(members):
        lines.append(f"infoset v{v} nodes " + " ".join(members[v]))
    game = parse_game("\n".join(lines) + "\n", "liteefg")
    game.title = f"forgetful cut game ({n_vertices} vertices, {len(edges)} edges)"
    return game


def random_cut_game(n_vertices: int, p: float, seed: int) -> Game:
    """Forgetful cut game on a G(n, p) graph: one ``rng.random() < p`` draw per pair i < j in lexicographic
    order (``rng = default_rng(seed)``), ``[(0, 1)]`` if no edge, weights ``rng.integers(1, 4, m)``."""
    if not 0 <= p <= 1:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n_vertices) for j in range(i + 1, n_vertices) if rng.random() < p]
    edges = edges or [(0, 1)]
    weights = rng.integers(1, 4, len(edges))
    game = forgetful_cut_game(n_vertices, edges, weights)
    game.title = f"random cut game (n={n_vertices}, p={p}, seed={seed})"
    return game


def _check_generator_sizes(n_infosets, n_branches) -> None:
    """ValueError unless n_infosets is an integer >= 2 and n_branches an integer >= 1 (random generators)."""
    if isinstance(n_infosets, bool) or not isinstance(n_infosets, (int, np.integer)) or n_infosets < 2:
        raise ValueError(f"n_infosets must be an integer >= 2, got {n_infosets!r}")
    if isinstance(n_branches, bool) or not isinstance(n_branches, (int, np.integer)) or n_branches < 1:
        raise ValueError(f"n_branches must be a positive integer, got {n_branches!r}")


def _chance_root(n_branches: int) -> list[str]:
    """The first line of a random game: root chance with ``n_branches`` equiprobable actions k0, k1, ..."""
    prob = repr(1.0 / n_branches)
    return ["node / chance actions " + " ".join(f"k{b}={prob}" for b in range(n_branches))]


def random_decision_problem(n_infosets: int, n_branches: int, seed: int) -> Game:
    """Random non-absentminded single-player problem that forgets earlier actions.

    Root chance with ``n_branches`` equiprobable actions ``k0, ...``; branch: ``d = rng.integers(2, l+1)``,
    ``order = rng.permutation(l)[:d]``, ``payoffs = rng.integers(-9, 10, size=2**d)``; a complete binary tree
    whose depth-t nodes lie in infoset ``I<order[t]>`` (actions ``a``, ``b``), leaves in lexicographic order.
    """
    _check_generator_sizes(n_infosets, n_branches)
    rng = np.random.default_rng(seed)
    l = int(n_infosets)
    lines = _chance_root(n_branches)
    members: dict = {}
    for b in range(n_branches):
        d = int(rng.integers(2, l + 1))
        order = rng.permutation(l)[:d]
        payoffs = rng.integers(-9, 10, size=2 ** d)
        for t in range(d + 1):
            for seq in itertools.product("ab", repeat=t):
                path = f"/C:k{b}" + "".join(f"/P1:{a}" for a in seq)
                if t < d:
                    lines.append(f"node {path} player 1 actions a b")
                    members.setdefault(int(order[t]), []).append(path)
                else:
                    idx = int("".join("0" if a == "a" else "1" for a in seq), 2)
                    lines.append(f"node {path} leaf payoffs 1={int(payoffs[idx])}")
    for k in sorted(members):
        lines.append(f"infoset I{k} nodes " + " ".join(members[k]))
    game = parse_game("\n".join(lines) + "\n", "liteefg")
    game.title = f"random decision problem (l={l}, branches={n_branches}, seed={seed})"
    return game


def random_two_player_game(n_infosets: int, n_branches: int, seed: int, *, zero_sum: bool) -> Game:
    """Random two-player non-absentminded game in which each player forgets its earlier actions.

    Each player uses the decision-problem generator's draw: ``rng = default_rng(seed)``; root chance with
    ``n_branches`` equiprobable actions ``k0, ...``; per branch, for player 1 then player 2,
    ``d_p = rng.integers(2, l+1)`` and ``order_p = rng.permutation(l)[:d_p]``; then
    ``u1 = rng.integers(-9, 10, size=2**(d_1 + d_2))`` and ``u2 = -u1`` (``zero_sum``) or
    ``u2 = rng.integers(-9, 10, size=2**(d_1 + d_2))``. The branch is a complete binary tree: player 1 moves at
    depths ``t < d_1`` in infoset ``P1_I<order_1[t]>``, then player 2 (who does not observe player 1's actions)
    at depths ``d_1 + t`` in ``P2_I<order_2[t]>``; actions ``a``, ``b``; leaves in lexicographic order.
    """
    _check_generator_sizes(n_infosets, n_branches)
    if not isinstance(zero_sum, (bool, np.bool_)):
        raise ValueError(f"zero_sum must be a bool, got {zero_sum!r}")
    rng = np.random.default_rng(seed)
    l = int(n_infosets)
    lines = _chance_root(n_branches)
    members: dict = {}
    for b in range(n_branches):
        orders = []
        for _ in (1, 2):
            d = int(rng.integers(2, l + 1))
            orders.append(rng.permutation(l)[:d])
        owner = [(1, int(k)) for k in orders[0]] + [(2, int(k)) for k in orders[1]]
        depth = len(owner)
        u1 = rng.integers(-9, 10, size=2 ** depth)
        u2 = -u1 if zero_sum else rng.integers(-9, 10, size=2 ** depth)
        for t in range(depth + 1):
            for seq in itertools.product("ab", repeat=t):
                path = f"/C:k{b}" + "".join(f"/P{owner[s][0]}:{a}" for s, a in enumerate(seq))
                if t < depth:
                    pl, k = owner[t]
                    lines.append(f"node {path} player {pl} actions a b")
                    members.setdefault((pl, k), []).append(path)
                else:
                    idx = int("".join("0" if a == "a" else "1" for a in seq), 2)
                    lines.append(f"node {path} leaf payoffs 1={int(u1[idx])} 2={int(u2[idx])}")
    for pl, k in sorted(members):
        lines.append(f"infoset P{pl}_I{k} nodes " + " ".join(members[(pl, k)]))
    game = parse_game("\n".join(lines) + "\n", "liteefg")
    game.title = (f"random two-player {'zero-sum' if zero_sum else 'general-sum'} game "
                  f"(l={l}, branches={n_branches}, seed={seed})")
    return game
