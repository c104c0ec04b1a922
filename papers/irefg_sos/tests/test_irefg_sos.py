"""Unit tests of irefg_sos: exact identities, small known answers, and every bad input of the spec."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from papers.irefg_sos import poly as P
from papers.irefg_sos.baselines import (amsgrad, project_simplex_rows, projected_gradient_ascent,
                                        regret_matching_plus)
from papers.irefg_sos.concavity import (pseudo_gradient_form, sos_concavity_certificate, sos_monotone_polys,
                                        sos_monotonicity_certificate)
from papers.irefg_sos.crosscheck import ncpol_available, ncpol_bound
from papers.irefg_sos.games import (canonical_sha256, forgetful_cut_game, game_file, load_game, parse_game,
                                    random_cut_game, random_decision_problem, random_two_player_game)
from papers.irefg_sos.hierarchy import moment_bound, pure_optimum
from papers.irefg_sos.nash import kkt_constraints, nash_conv, sos_nash

MIRROR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data")


@pytest.fixture(autouse=True)
def _mirror(monkeypatch):
    if "REPRO_DATA_MIRROR" not in os.environ and os.path.isdir(os.path.join(MIRROR, "irefg")):
        monkeypatch.setenv("REPRO_DATA_MIRROR", os.path.abspath(MIRROR))


AMD = """node / player 1 actions e c
node /P1:e leaf payoffs 1=0
node /P1:c player 1 actions e c
node /P1:c/P1:e leaf payoffs 1=4
node /P1:c/P1:c leaf payoffs 1=1
infoset highway nodes / /P1:c
"""


def _close(p, q, tol=1e-12):
    keys = set(p) | set(q)
    return all(abs(p.get(k, 0.0) - q.get(k, 0.0)) <= tol for k in keys)


# ------------------------------------------------------------------------------------------ polynomials
def test_monomials_graded_lex():
    assert P.monomials(2, 2) == ((0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2))
    assert len(P.monomials(5, 3)) == math.comb(8, 3)


def test_poly_product_and_derivative():
    x, y = P.var(0, 2), P.var(1, 2)
    p = P.mul(P.add(x, y), P.add(x, P.scale(y, -1)))          # x^2 - y^2
    assert _close(p, {(2, 0): 1.0, (0, 2): -1.0})
    assert _close(P.derivative(p, 0), {(1, 0): 2.0})
    assert P.evaluate(p, [3.0, 2.0]) == pytest.approx(5.0)


# ------------------------------------------------------------------------------------------------ games
def test_amd_classic_polynomial_and_utility():
    g = parse_game(AMD, "liteefg")
    assert g.is_absentminded and g.variables == (("highway", "e"),)
    # U = 4 c e + c^2 with e = x, c = 1 - x  ->  1 + 2x - 3x^2
    assert _close(g.polynomial(1), {(0,): 1.0, (1,): 2.0, (2,): -3.0})
    prof = {"highway": {"e": 0.25, "c": 0.75}}
    assert g.utility(prof, 1) == pytest.approx(4 * 0.75 * 0.25 + 0.75 ** 2)


def test_mirrored_games_known_polynomials():
    """On the games built in code (equal to the public files: test_code_games.py), so that no fetch is needed."""
    fig3 = load_game("picc_rub_fig3_code")
    assert not fig3.is_absentminded
    assert _close(fig3.polynomial(1), {(1, 1): 3.0, (1, 0): -2.0, (0, 1): -2.0, (0, 0): 2.0})
    drv = load_game("absentminded_driver_code")
    assert _close(drv.polynomial(1), {(1,): 4.0, (2,): -4.0})
    ext = load_game("extended_abs_driver_code")
    assert _close(ext.polynomial(1), {(1,): 27.0, (2,): -54.0, (3,): 27.0})   # 27 x (1 - x)^2


def test_wichardt_zero_sum_and_structure():
    w = load_game("wichardt2008_code")
    assert w.players == (1, 2)
    assert [I.name for I in w.infosets] == ["P1:1", "P1:2", "P2:1"]
    assert not w.is_absentminded
    assert P.add(w.polynomial(1), w.polynomial(2)) == {}
    # (R, r, B): payoff 1 for player 1
    assert w.utility({"P1:1": {"R": 1, "L": 0}, "P1:2": {"r": 1, "l": 0}, "P2:1": {"B": 1, "T": 0}}, 1) == 1.0


def test_efg_outcomes_accumulate_along_path():
    text = ('EFG 2 R "t" { "A" "B" } "c"\n'
            'p "" 1 1 "" { "x" "y" } 1 "o1" { 1, 2 }\n'
            't "" 2 "o2" { 10, 20 }\n'
            't "" 1\n')
    g = parse_game(text, "efg")
    prof = {"P1:1": {"x": 1.0, "y": 0.0}}
    assert g.utility(prof, 1) == 11.0
    prof = {"P1:1": {"x": 0.0, "y": 1.0}}
    assert g.utility(prof, 1) == 2.0


def test_forgetful_cut_polynomial():
    g = forgetful_cut_game(3, [(0, 1), (1, 2)], weights=[1, 3])
    x = [0.2, 0.7, 0.4]
    expect = 0.25 * (x[0] + x[1] - 2 * x[0] * x[1]) + 0.75 * (x[1] + x[2] - 2 * x[1] * x[2])
    assert P.evaluate(g.polynomial(1), x) == pytest.approx(expect)
    assert not g.is_absentminded


def test_random_generators_follow_the_spec():
    rng = np.random.default_rng(3)
    edges = [(i, j) for i in range(5) for j in range(i + 1, 5) if rng.random() < 0.6] or [(0, 1)]
    g = random_cut_game(5, 0.6, 3)
    verts = sorted({v for e in edges for v in e})
    assert [I.name for I in g.infosets] == [f"v{v}" for v in verts]
    d = random_decision_problem(4, 3, 1)
    assert not d.is_absentminded and d.players == (1,)
    assert all(I.actions == ("a", "b") for I in d.infosets)


def test_canonical_sha_ignores_final_newline_and_crlf():
    assert canonical_sha256(b"a \r\nb") == canonical_sha256(b"a\nb\n\n")


# -------------------------------------------------------------------------------------------- hierarchy
def test_moment_bound_amd_classic_exact_at_level_one():
    res = moment_bound(parse_game(AMD, "liteefg"), 1)
    assert res.bound == pytest.approx(4 / 3, abs=1e-6)
    assert res.certified and res.flat and res.rank == 1
    assert res.strategy["highway"]["e"] == pytest.approx(1 / 3, abs=1e-3)


def test_cycle5_level_one_is_goemans_williamson():
    g = forgetful_cut_game(5, [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4)])
    res = moment_bound(g, 1)
    assert res.bound == pytest.approx((5 + math.sqrt(5)) / 8, abs=1e-6)
    assert pure_optimum(g)[0] == pytest.approx(0.8)


def test_pure_optimum_fig2():
    val, strat = pure_optimum(load_game("picc_rub_fig2_code"))
    assert val == pytest.approx(3.0)
    assert strat["inf1/"]["s1"] == 1.0


# ---------------------------------------------------------------------------------------- certificates
def test_concavity_certificates():
    assert sos_concavity_certificate(load_game("absentminded_driver_code")).certified
    assert not sos_concavity_certificate(load_game("picc_rub_fig3_code")).certified     # indefinite Hessian
    assert not sos_concavity_certificate(load_game("extended_abs_driver_code")).certified


# ------------------------------------------------------------------------------------------------- nash
def test_nash_conv_known_values():
    a = load_game("amd_policeman")
    ne = {"d_start": {"T": 0, "S": 1}, "p_watch": {"W": 0, "I": 1}, "d_highway": {"C": 0.5, "E": 0.5},
          "p_exit": {"H": 0.5, "E": 0.5}}
    assert nash_conv(a, ne) == pytest.approx(0.0, abs=1e-7)
    w = load_game("wichardt2008_code")
    # (R, r, B): player 1 gets 1 (its max); player 2 gets -1 and switches to T for +1: NashConv 2
    prof = {"P1:1": {"R": 1, "L": 0}, "P1:2": {"r": 1, "l": 0}, "P2:1": {"B": 1, "T": 0}}
    assert nash_conv(w, prof) == pytest.approx(2.0)


def test_kkt_holds_at_an_equilibrium():
    a = load_game("amd_policeman")
    ineqs, eqs = kkt_constraints(a)
    x = a.profile_to_vector({"d_start": {"T": 0, "S": 1}, "p_watch": {"W": 0, "I": 1},
                             "d_highway": {"C": 0.3, "E": 0.7}, "p_exit": {"H": 0.2, "E": 0.8}})
    assert all(P.evaluate(g, x) >= -1e-12 for g in ineqs)
    assert all(abs(P.evaluate(h, x)) <= 1e-12 for h in eqs)


def test_sos_nash_wichardt_no_ne():
    res = sos_nash(load_game("wichardt2008_code"), level=2, max_level=2, theta_seed=0, max_iter=5, solver="SCS")
    assert res.status == "no_ne" and res.profile is None


# -------------------------------------------------------------------------------------------- baselines
def test_simplex_projection_known_answer():
    out = project_simplex_rows(np.array([[0.5, 0.5, 0.5], [2.0, 0.0, 0.0], [0.2, 0.3, 0.5]]))
    np.testing.assert_allclose(out, [[1 / 3, 1 / 3, 1 / 3], [1, 0, 0], [0.2, 0.3, 0.5]], atol=1e-12)


def test_first_order_baselines_on_fig3():
    g = load_game("picc_rub_fig3_code")
    start = {"inf1/": {"l1": 0.9, "r1": 0.1}, "inf2/": {"l2": 0.9, "r2": 0.1}}   # basin of the local max (1, 1)
    out = projected_gradient_ascent(g, start, iters=300)
    assert out["value"] == pytest.approx(1.0) and out["strategy"]["inf1/"]["l1"] == pytest.approx(1.0)
    low = {"inf1/": {"l1": 0.1, "r1": 0.9}, "inf2/": {"l2": 0.1, "r2": 0.9}}
    assert regret_matching_plus(g, low, iters=200)["value"] == pytest.approx(2.0)
    assert amsgrad(g, low, iters=500)["value"] == pytest.approx(2.0, abs=1e-6)


# ------------------------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("text, match", [
    ("nod / player 1 actions a b\n", "unknown keyword"),
    ("node / player 1 a b\n", "actions"),
    ("node / leaf 1=2\n", "payoffs"),
    ("node / chance actions a=x b=0.5\n", "not a number"),
    ("node / chance actions a=-0.5 b=1.5\n", "negative"),
    ("node / chance actions a=0.5 b=0.4\n", "sum"),
    ("node / player 1 actions a\nnode /P1:a/P1:b leaf payoffs 1=0\ninfoset I nodes /\n", "parent"),
    ("node / player 1 actions a b\nnode /P1:a leaf payoffs 1=0\ninfoset I nodes /\n", "child"),
    ("node / player 1 actions a b\nnode /P1:a player 2 actions a b\nnode /P1:b leaf payoffs 1=0 2=0\n"
     "node /P1:a/P2:a leaf payoffs 1=0 2=0\nnode /P1:a/P2:b leaf payoffs 1=0 2=0\ninfoset I nodes / /P1:a\n",
     "different players"),
    ("node / player 1 actions a b\nnode /P1:a player 1 actions a c\nnode /P1:b leaf payoffs 1=0\n"
     "node /P1:a/P1:a leaf payoffs 1=0\nnode /P1:a/P1:c leaf payoffs 1=0\ninfoset I nodes / /P1:a\n",
     "different action lists"),
    ("node / player 1 actions a b\nnode /P1:a leaf payoffs 1=0\nnode /P1:b leaf payoffs 1=0\n"
     "infoset I nodes /\ninfoset J nodes /\n", "two infosets"),
    ("node / player 1 actions a b\nnode /P1:a leaf payoffs 1=0\nnode /P1:b leaf payoffs 1=0\n", "no infoset"),
    ("node / player 1 actions a b\nnode /P1:a player 2 actions c d\nnode /P1:b leaf payoffs 1=0 2=0\n"
     "node /P1:a/P2:c leaf payoffs 1=0\nnode /P1:a/P2:d leaf payoffs 1=0 2=0\ninfoset I nodes /\n"
     "infoset J nodes /P1:a\n", "lacks the payoff"),
])
def test_liteefg_bad_input(text, match):
    with pytest.raises(ValueError, match=match):
        parse_game(text, "liteefg")


def test_efg_bad_input():
    head = 'EFG 2 R "t" { "A" "B" } "c"\n'
    with pytest.raises(ValueError, match="children"):
        parse_game(head + 'p "" 1 1 "" { "x" "y" } 0\nt "" 1 "o" { 1, 2 }\n', "efg")
    with pytest.raises(ValueError, match="before it is defined"):
        parse_game(head + 'p "" 1 1 "" { "x" "y" } 0\nt "" 1\nt "" 2 "o" { 1, 2 }\n', "efg")
    with pytest.raises(ValueError, match="fmt"):
        parse_game(head, "gambit")


def test_profile_bad_input():
    g = parse_game(AMD, "liteefg")
    for prof, match in [({}, "lacks"), ({"highway": {"e": 1, "c": 0}, "x": {}}, "unknown infosets"),
                        ({"highway": {"e": 1, "z": 0}}, "unknown actions"),
                        ({"highway": {"e": -0.1, "c": 1.1}}, "negative"),
                        ({"highway": {"e": 0.5, "c": 0.6}}, "sums")]:
        with pytest.raises(ValueError, match=match):
            g.utility(prof, 1)


def test_level_player_and_max_level_errors():
    ext = load_game("extended_abs_driver_code")
    with pytest.raises(ValueError, match="level"):
        moment_bound(ext, 1)                       # deg 3 needs level >= 2
    with pytest.raises(ValueError, match="player"):
        moment_bound(ext, 2, player=2)
    with pytest.raises(ValueError, match="player"):
        moment_bound(load_game("wichardt2008_code"), 2)  # other strategic players
    with pytest.raises(ValueError, match="absentminded"):
        pure_optimum(ext)
    with pytest.raises(ValueError, match="max_level"):
        sos_nash(load_game("wichardt2008_code"), level=3, max_level=2)
    with pytest.raises(ValueError, match="level"):
        sos_nash(load_game("amd_policeman"), level=2)   # deg 5 needs level >= 3
    with pytest.raises(ValueError, match="player"):
        sos_concavity_certificate(ext, player=3)


def test_cut_game_bad_input():
    for args, match in [((3, [(1, 1)]), "i == j"), ((3, [(0, 1), (1, 0)]), "duplicate"),
                        ((3, [(0, 3)]), "out of range"), ((3, [(0, 1)], [0.0]), "positive")]:
        with pytest.raises(ValueError, match=match):
            forgetful_cut_game(*args)


def test_load_game_bad_name():
    with pytest.raises(ValueError, match="unknown game"):
        load_game("no_such_game")


def test_content_hash_mismatch(tmp_path, monkeypatch):
    from shared.data import ChecksumError

    mirror = tmp_path / "mirror"
    (mirror / "irefg").mkdir(parents=True)
    (mirror / "irefg" / "picc_rub_fig3.txt").write_text("node / leaf payoffs 1=0\n")
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(mirror))
    with pytest.raises(ChecksumError):
        game_file("picc_rub_fig3", tmp_path / "data")
    assert issubclass(ChecksumError, ValueError)


# ------------------------------------------------------------------------------ random two-player games
@pytest.mark.parametrize("zero_sum", [True, False])
def test_random_two_player_game_follows_the_spec(zero_sum):
    g = random_two_player_game(2, 1, 5, zero_sum=zero_sum)
    rng = np.random.default_rng(5)
    orders = []
    for _ in (1, 2):
        d = int(rng.integers(2, 3))
        orders.append(rng.permutation(2)[:d])
    u1 = rng.integers(-9, 10, size=16)
    u2 = -u1 if zero_sum else rng.integers(-9, 10, size=16)
    assert g.players == (1, 2) and not g.is_absentminded
    assert sorted(I.name for I in g.infosets) == ["P1_I0", "P1_I1", "P2_I0", "P2_I1"]
    for bits in np.ndindex(2, 2, 2, 2):  # bits[p*2 + k]: action of player p+1 at its infoset I<k> (0 = a)
        prof = {f"P{p + 1}_I{k}": {"a": 1.0 - bits[2 * p + k], "b": float(bits[2 * p + k])}
                for p in range(2) for k in range(2)}
        seq = [bits[int(k)] for k in orders[0]] + [bits[2 + int(k)] for k in orders[1]]
        idx = int("".join(map(str, seq)), 2)
        assert g.utility(prof, 1) == pytest.approx(u1[idx])
        assert g.utility(prof, 2) == pytest.approx(u2[idx])
    if zero_sum:
        assert _close(P.add(g.polynomial(1), g.polynomial(2)), {})


def test_random_two_player_game_bad_input():
    with pytest.raises(ValueError, match="n_infosets"):
        random_two_player_game(1, 2, 0, zero_sum=True)
    with pytest.raises(ValueError, match="n_branches"):
        random_two_player_game(2, 0, 0, zero_sum=True)
    with pytest.raises(ValueError, match="zero_sum"):
        random_two_player_game(2, 2, 0, zero_sum="yes")


# ------------------------------------------------------------------------------------ SOS-monotonicity
def test_pseudo_gradient_form_and_monotone_known_answers():
    # U1 = -x^2 + x y, U2 = -y^2 - x y: F = (2x - y, 2y + x), J + J^T = 4 I (strongly monotone)
    U1, U2 = {(2, 0): -1.0, (1, 1): 1.0}, {(0, 2): -1.0, (1, 1): -1.0}
    assert _close(pseudo_gradient_form([U1, U2], [[0], [1]], 2), {(0, 0, (0, 0)): 2.0, (1, 1, (0, 0)): 2.0})
    res = sos_monotone_polys([U1, U2], [[0], [1]], 2)
    assert res.certified and res.min_gram_eigenvalue == pytest.approx(1.0, abs=1e-6)  # capped at 1
    # zero-sum bilinear U1 = x y: J + J^T = 0 (monotone, not strictly)
    res = sos_monotone_polys([{(1, 1): 1.0}, {(1, 1): -1.0}], [[0], [1]], 2)
    assert res.certified and res.min_gram_eigenvalue == pytest.approx(0.0, abs=1e-6)
    # U1 = x^2, U2 = -y^2: J = diag(-2, 2), not monotone; smallest Gram eigenvalue -2
    res = sos_monotone_polys([{(2, 0): 1.0}, {(0, 2): -1.0}], [[0], [1]], 2)
    assert not res.certified and res.min_gram_eigenvalue == pytest.approx(-2.0, abs=1e-5)
    # a single player: SOS-monotone iff SOS-concave (amd_classic: U = 1 + 2x - 3x^2, concave)
    g = load_game("amd_classic")
    assert sos_monotonicity_certificate(g).certified == sos_concavity_certificate(g).certified is True


def test_monotone_bad_blocks():
    with pytest.raises(ValueError, match="blocks"):
        pseudo_gradient_form([{(1, 1): 1.0}], [[0], [1]], 2)
    with pytest.raises(ValueError, match="blocks"):
        pseudo_gradient_form([{(1, 1): 1.0}, {(1, 1): -1.0}], [[0], [0]], 2)


# --------------------------------------------------------------------------- bounds monotone in the level
def test_bounds_monotone_in_level_on_cycle5():
    g = forgetful_cut_game(5, [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4)])
    b1, b2 = moment_bound(g, 1).bound, moment_bound(g, 2).bound
    assert b1 <= (5 + math.sqrt(5)) / 8 + 1e-6
    assert b2 <= b1 + 1e-6 and b2 >= 0.8 - 1e-6   # rho_1 >= rho_2 >= U* = 4/5


# ---------------------------------------------------------------------------------- ncpol2sdpa cross-check
@pytest.mark.skipif(not ncpol_available(), reason="ncpol2sdpa not installed")
def test_ncpol_crosscheck_known_answers():
    res = ncpol_bound(load_game("amd_classic"), 1)   # max of 1 + 2x - 3x^2 on [0, 1]: 4/3 at x = 1/3
    assert res.bound == pytest.approx(4 / 3, abs=1e-6)
    g = forgetful_cut_game(3, [(0, 1), (1, 2), (0, 2)])   # triangle: both builds give the same level-1 bound
    assert ncpol_bound(g, 1).bound == pytest.approx(moment_bound(g, 1).bound, abs=1e-6)
    with pytest.raises(ValueError, match="level"):
        ncpol_bound(load_game("extended_abs_driver_code"), 1)   # cubic utility: level >= 2
    with pytest.raises(ValueError, match="player"):
        ncpol_bound(load_game("wichardt2008_code"), 1)
