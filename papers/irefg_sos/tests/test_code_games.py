"""The games built in code (the smoke scale's games) equal the parsed public files, when those are available."""
import os
from pathlib import Path

import pytest

from papers.irefg_sos import games as G

PAIRS = [(f"{name}_code", name) for name in G.MIRRORED]


def _public_text(name: str) -> tuple[str, str] | None:
    """(text, format) of a verified local copy of the public file (data/irefg_sos or REPRO_DATA_MIRROR), or None."""
    fname, _, sha = G.MIRRORED[name]
    dirs = [G.DATA_DIR] + [Path(p) / G.MIRROR_SUBDIR for p in os.environ.get("REPRO_DATA_MIRROR", "").split(os.pathsep)
                           if p]
    for d in dirs:
        path = d / fname
        if path.is_file() and G.canonical_sha256(path.read_bytes()) == sha:
            return path.read_text(encoding="utf-8"), "efg" if fname.endswith(".efg") else "liteefg"
    return None


def _structure(game):
    nodes = {p: (n.kind, n.player, n.actions, n.probs, dict(n.payoffs)) for p, n in game._nodes.items()}
    return nodes, game.infosets, game._node_infoset, game.variables, game.is_absentminded


@pytest.mark.parametrize("built, public", PAIRS)
def test_built_equals_public_file(built, public):
    found = _public_text(public)
    if found is None:
        pytest.skip(f"{public}: no verified local copy (data/irefg_sos or REPRO_DATA_MIRROR)")
    parsed, game = G.parse_game(*found), G.load_game(built)
    assert _structure(game) == _structure(parsed)
    for pl in game.players:
        assert game.polynomial(pl) == parsed.polynomial(pl)


def test_every_mirrored_game_is_built_in_code():
    assert sorted(G.CODE_GAMES) == sorted(f"{name}_code" for name in G.MIRRORED)


def test_built_games_known_values():
    fig3 = G.load_game("picc_rub_fig3_code")
    assert fig3.players == (1,) and not fig3.is_absentminded
    # (r1, r2) with probability 1 gives the optimum 2; (l1, l2) gives 1
    assert fig3.utility({"inf1/": {"l1": 0.0, "r1": 1.0}, "inf2/": {"l2": 0.0, "r2": 1.0}}, 1) == 2.0
    assert fig3.utility({"inf1/": {"l1": 1.0, "r1": 0.0}, "inf2/": {"l2": 1.0, "r2": 0.0}}, 1) == 1.0
    w = G.load_game("wichardt2008_code")
    assert w.players == (1, 2)
    prof = {"P1:1": {"R": 1.0, "L": 0.0}, "P1:2": {"r": 1.0, "l": 0.0}, "P2:1": {"B": 1.0, "T": 0.0}}
    assert w.utility(prof, 1) == 1.0 and w.utility(prof, 2) == -1.0
