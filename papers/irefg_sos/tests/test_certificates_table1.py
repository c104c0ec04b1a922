"""No-NE grid certificate, derivative bounds, the cut-loop record, and the Table-1 random instances."""
from __future__ import annotations

import os

import numpy as np
import pytest

from papers.irefg_sos import poly as P
from papers.irefg_sos.baselines import run_batch
from papers.irefg_sos.games import load_game, random_two_player_game
from papers.irefg_sos.hierarchy import single_player_bound
from papers.irefg_sos.nash import coordinate_derivative_bounds, nash_conv_lipschitz, no_ne_grid_certificate, sos_nash
from papers.irefg_sos.table1 import instance_model, random_instance, success_tolerance

MIRROR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data")


@pytest.fixture(autouse=True)
def _mirror(monkeypatch):
    if "REPRO_DATA_MIRROR" not in os.environ and os.path.isdir(os.path.join(MIRROR, "irefg")):
        monkeypatch.setenv("REPRO_DATA_MIRROR", os.path.abspath(MIRROR))


def test_derivative_bounds_exact_for_multilinear_and_valid_otherwise():
    # p = 1 - 6 x0 + 10 x0 x1: dp/dx0 = -6 + 10 x1 in [-6, 4] -> 6; dp/dx1 = 10 x0 in [0, 10] -> 10
    p = {(0, 0): 1.0, (1, 0): -6.0, (1, 1): 10.0}
    assert np.allclose(coordinate_derivative_bounds(p, 2), [6.0, 10.0])
    # q = x0^2 - x0 x1 (not multilinear): coefficient bound |1| * 2 + |-1| * 1 = 3 for x0, 1 for x1
    q = {(2, 0): 1.0, (1, 1): -1.0}
    S = coordinate_derivative_bounds(q, 2)
    assert np.allclose(S, [3.0, 1.0])
    X = np.random.default_rng(0).random((2000, 2))
    for j in range(2):
        E, c = P.to_arrays(P.derivative(q, j), 2)
        assert np.max(np.abs(P.eval_batch(E, c, X))) <= S[j] + 1e-12


def test_wichardt_certificate_proves_no_ne():
    w = load_game("wichardt2008_code")
    cert = no_ne_grid_certificate(w, 41)
    assert cert["min_grid_nashconv"] >= 0.99
    assert cert["margin"] > 0
    assert cert["lipschitz"] == pytest.approx(nash_conv_lipschitz(w))
    assert no_ne_grid_certificate(w, 11)["margin"] < 0       # too coarse a grid proves nothing


def test_certificate_fails_on_a_game_with_an_equilibrium():
    game = random_two_player_game(2, 2, 0, zero_sum=True)
    res = sos_nash(game, level=3, max_level=3, max_iter=10, solver="SCS", scs_max_iters=2000)
    assert res.status == "ne"
    assert no_ne_grid_certificate(game, 11)["margin"] <= 0


def test_certificate_bad_grid():
    with pytest.raises(ValueError, match="k must be"):
        no_ne_grid_certificate(load_game("wichardt2008_code"), 1)


def test_candidate_gaps_record_the_cut_loop():
    game = random_two_player_game(2, 2, 0, zero_sum=False)
    res = sos_nash(game, level=3, max_level=3, max_iter=10, solver="SCS", scs_max_iters=2000)
    assert res.status == "ne" and len(res.candidate_gaps) >= 1
    assert res.candidate_gaps[-1] <= 1e-6                    # the returned profile passed the verification
    assert all(g > 1e-6 for g in res.candidate_gaps[:-1])    # every rejected candidate had a positive gain
    assert res.cuts >= len(res.candidate_gaps) - 1            # each rejection added at least one cut


def test_random_instance_is_deterministic_and_eliminates_correctly():
    a, b = random_instance(5), random_instance(5)
    assert a.full == b.full and len(a.full) == 16 and max(sum(e) for e in a.full) <= 4
    z = np.random.default_rng(1).dirichlet(np.ones(3), size=2)[:, :2].ravel()
    x = a.to_full(z)
    assert P.evaluate(a.free, z) == pytest.approx(P.evaluate(a.full, x), abs=1e-12)


def test_random_instance_bad_input():
    with pytest.raises(ValueError, match="terms"):
        random_instance(0, terms=10_000)
    with pytest.raises(ValueError, match="actions"):
        random_instance(0, actions=1)
    with pytest.raises(ValueError, match="tol"):
        success_tolerance(1.0, 0.0)


def test_polynomial_model_gradient_and_projection():
    inst = random_instance(3)
    m = instance_model(inst)
    X = np.random.default_rng(2).random((4, inst.m))
    G = m.grad(X)
    eps = 1e-6
    for j in range(inst.m):
        E = np.zeros(inst.m)
        E[j] = eps
        fd = (m.value(X + E) - m.value(X - E)) / (2 * eps)
        assert np.allclose(G[:, j], fd, atol=1e-5)
    Y = m.project(X)
    for blk in m.blocks:
        assert np.allclose(Y[:, blk].sum(axis=1), 1.0) and np.all(Y[:, blk] >= 0)


def test_sos_bound_is_above_every_pga_value_on_an_instance():
    inst = random_instance(1)
    res = single_player_bound(inst.free, inst.n, inst.groups, 2)
    X0 = np.concatenate([np.random.default_rng(0).dirichlet(np.ones(3), size=20) for _ in range(2)], axis=1)
    out = run_batch(instance_model(inst), "pga", X0, iters=300, step=0.02)
    assert np.all(out["values"] <= res.bound + 1e-6)


def _cycle(k):
    from papers.irefg_sos.games import forgetful_cut_game

    game = forgetful_cut_game(k, [(i, i + 1) for i in range(k - 1)] + [(0, k - 1)])
    groups = [game.infoset_variables(j) for j in range(len(game.infosets))]
    var_of = {I.name: game.infoset_variables(j)[0] for j, I in enumerate(game.infosets)}
    v = [var_of[f"v{i}"] for i in range(k)]
    return game, groups, [[v[0], v[i], v[i + 1]] for i in range(1, k - 1)]


def test_sparse_bound_is_weaker_than_dense_and_above_the_optimum():
    from papers.irefg_sos.hierarchy import moment_bound, sparse_single_player_bound

    game, groups, cliques = _cycle(5)
    U, n = game.polynomial(1), game.n_variables
    s1 = sparse_single_player_bound(U, n, groups, 1, cliques)
    s2 = sparse_single_player_bound(U, n, groups, 2, cliques)
    assert s1.bound == pytest.approx((5 + 5 ** 0.5) / 8, abs=1e-6)     # level 1: the GW value, as dense
    assert s2.bound >= moment_bound(game, 2).bound - 1e-6            # sparse is a relaxation of dense
    assert 0.8 - 1e-7 <= s2.bound <= s1.bound + 1e-7


def test_sparse_bound_bad_cliques():
    from papers.irefg_sos.hierarchy import sparse_single_player_bound

    game, groups, cliques = _cycle(5)
    U, n = game.polynomial(1), game.n_variables
    with pytest.raises(ValueError, match="infoset group"):
        sparse_single_player_bound(U, n, groups, 1, cliques[:-1])
    singles = [[j] for g in groups for j in g]                     # every vertex alone: no edge monomial fits
    with pytest.raises(ValueError, match="monomial"):
        sparse_single_player_bound(U, n, groups, 1, singles)
    with pytest.raises(ValueError, match="cliques must be"):
        sparse_single_player_bound(U, n, groups, 1, [[0, 1, 99]])


MATCHING_PENNIES = ("node / player 1 actions H T\nnode /P1:H player 2 actions h t\nnode /P1:T player 2 actions h t\n"
                    "node /P1:H/P2:h leaf payoffs 1=1 2=-1\nnode /P1:H/P2:t leaf payoffs 1=-1 2=1\n"
                    "node /P1:T/P2:h leaf payoffs 1=-1 2=1\nnode /P1:T/P2:t leaf payoffs 1=1 2=-1\n"
                    "infoset A nodes /\ninfoset B nodes /P1:H /P1:T\n")


def test_exact_certificate_proves_no_ne_for_wichardt_only():
    from papers.irefg_sos.games import parse_game
    from papers.irefg_sos.nash import nash_conv, no_ne_exact_certificate

    w = no_ne_exact_certificate(load_game("wichardt2008_code"))
    assert w["z3"] == "unsat" and w["witness"] is None
    assert w["pure_deviations"] == 4 + 2                      # 2 x 2 pure strategies of player 1, 2 of player 2
    # a game with an NE: the absent-minded policeman (player 1 absentminded: quantified, not enumerated)
    a_game = load_game("amd_policeman")
    a = no_ne_exact_certificate(a_game)
    assert a["z3"] == "sat" and a["quantified_players"] == [1]
    assert nash_conv(a_game, a_game.vector_to_profile(a["witness"])) <= 1e-12
    # matching pennies: the only NE is mixed, (1/2, 1/2), and z3's model is that exact rational point
    mp = no_ne_exact_certificate(parse_game(MATCHING_PENNIES, "liteefg"))
    assert mp["z3"] == "sat" and mp["witness"] == [0.5, 0.5]


def test_exact_certificate_bad_timeout():
    from papers.irefg_sos.nash import no_ne_exact_certificate

    for bad in (0, -1.0, True, "10"):
        with pytest.raises(ValueError, match="timeout_s"):
            no_ne_exact_certificate(load_game("wichardt2008_code"), timeout_s=bad)


def test_running_intersection_known_answers():
    from papers.irefg_sos.hierarchy import running_intersection_violation

    assert running_intersection_violation([[0, 1, 2], [0, 2, 3], [0, 3, 4]]) is None    # fan of a pentagon
    assert running_intersection_violation([[0, 1], [1, 2], [2, 3]]) is None             # a path
    assert running_intersection_violation([[0, 1], [1, 2], [2, 3], [3, 0]]) == 3       # the 4-cycle itself
    assert running_intersection_violation([[0, 1], [2, 3], [1, 2]]) == 2               # a bad order of a path


def test_correlative_cliques_triangulate_a_cycle_with_rip():
    from papers.irefg_sos.hierarchy import correlative_cliques, running_intersection_violation

    game = _cycle(7)[0]
    groups = [game.infoset_variables(j) for j in range(len(game.infosets))]
    cliques = correlative_cliques([game.polynomial(1)], groups, game.n_variables)
    assert len(cliques) == 7 - 2 and all(len(c) == 3 for c in cliques)    # a minimal triangulation of C_7
    assert running_intersection_violation(cliques) is None
    assert sorted({j for c in cliques for j in c}) == list(range(game.n_variables))
    for a in game.polynomial(1):                                          # every monomial lies in one clique
        assert any({j for j, k in enumerate(a) if k} <= set(c) for c in cliques)
    with pytest.raises(ValueError, match="n must be"):
        correlative_cliques([game.polynomial(1)], groups, 0)


def test_sparse_with_one_clique_is_the_dense_relaxation_and_rip_is_enforced():
    from papers.irefg_sos.hierarchy import moment_bound, sparse_single_player_bound

    game, groups, _ = _cycle(5)
    U, n = game.polynomial(1), game.n_variables
    one = sparse_single_player_bound(U, n, groups, 2, [list(range(n))])
    assert one.bound == pytest.approx(moment_bound(game, 2).bound, abs=1e-6)   # the same SDP
    var_of = {I.name: game.infoset_variables(j)[0] for j, I in enumerate(game.infosets)}
    v = [var_of[f"v{i}"] for i in range(5)]
    no_rip = [[v[0], v[1]], [v[1], v[2]], [v[2], v[3]], [v[3], v[4]], [v[4], v[0]]]   # the cycle's edges
    with pytest.raises(ValueError, match="running intersection"):
        sparse_single_player_bound(U, n, groups, 2, no_rip)
    loose = sparse_single_player_bound(U, n, groups, 2, no_rip, require_rip=False)
    assert loose.bound >= one.bound - 1e-6                                      # still a valid (weaker) bound


def test_status_confirmed_only_when_z3_agrees():
    from papers.irefg_sos.experiments import _confirmed

    assert _confirmed("no_ne", "unsat") == "no_ne"
    assert _confirmed("ne", "sat") == "ne"
    assert _confirmed("no_ne", "sat") == "contradicted"        # the SDP said no NE, z3 found one
    assert _confirmed("ne", "unsat") == "contradicted"
    assert _confirmed("no_ne", "unknown") == "no_ne (unconfirmed)"
    assert _confirmed("undecided", "unsat") == "undecided (unconfirmed)"
