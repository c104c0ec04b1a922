"""Oracle importance (GQA max, o_proj slicing) and profiled curves (budget invariant, bad inputs)."""
import numpy as np
import pytest

from papers.lukv.oracle import oracle_importance
from papers.lukv.profile import build_budget_curve, check_curve, protect_scores, scorer_order


def test_oracle_importance_known_answer():
    # 2 query heads over 1 KV head, d_h = 1, D = 1: W_O = [2, 3] -> head 0 scales v by 2, head 1 by 3
    A = np.array([[[0.5, 0.5], [0.2, 0.8]], [[0.9, 0.1], [0.6, 0.4]]])   # (H_q=2, K=2, T=2)
    V = np.array([[[1.0], [-2.0]]])                                      # (G=1, T=2, 1)
    W = np.array([[2.0, 3.0]])
    # j=0: max(0.5*2, 0.9*3) = 2.7 ; j=1: max(0.8*4, 0.4*6) = 3.2
    np.testing.assert_allclose(oracle_importance(A, V, W), [[2.7, 3.2]])


def test_oracle_importance_gqa_groups_follow_repeat_kv():
    A = np.zeros((4, 1, 1)); A[1, 0, 0] = 1.0; A[2, 0, 0] = 1.0          # heads 0,1 -> kv 0; heads 2,3 -> kv 1
    V = np.array([[[1.0]], [[1.0]]])
    W = np.array([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(oracle_importance(A, V, W), [[2.0], [3.0]])


@pytest.mark.parametrize("A,V,W,match", [
    (np.ones((3, 1, 2)), np.ones((2, 2, 1)), np.ones((1, 3)), "multiple"),
    (np.ones((2, 1, 2)), np.ones((1, 3, 1)), np.ones((1, 2)), "values have"),
    (np.ones((2, 1, 2)), np.ones((1, 2, 1)), np.ones((1, 3)), "columns"),
    (-np.ones((2, 1, 2)), np.ones((1, 2, 1)), np.ones((1, 2)), "non-negative"),
    (np.full((2, 1, 2), np.nan), np.ones((1, 2, 1)), np.ones((1, 2)), "finite")])
def test_oracle_bad_input(A, V, W, match):
    with pytest.raises(ValueError, match=match):
        oracle_importance(A, V, W)


def test_protection_and_stable_order():
    s = protect_scores(np.array([[0.0, 5.0, 1.0, 1.0, 2.0, 0.5]]), sink=1, window=1)
    assert s[0, 0] == s[0, -1] == 6.0
    assert scorer_order(s)[0].tolist() == [0, 5, 1, 4, 2, 3]      # ties by position ascending
    with pytest.raises(ValueError, match="sink"):
        protect_scores(np.ones((1, 4)), sink=3, window=1)


def test_curve_spends_global_budget_exactly():
    rng = np.random.default_rng(0)
    L, G, T = 2, 3, 16
    imps = [rng.exponential(size=(L, G, T)) for _ in range(3)]
    scores = [rng.normal(size=(L, G, T)) for _ in range(3)]
    grid = np.arange(1, 100) / 100
    # the earlier reconstruction (one global sort, no per-head floor) reaches every rho
    curve = build_budget_curve(imps, scores, protocol="sorted")
    assert curve.shape == (99, L, G) and curve.dtype == np.float32
    assert np.max(np.abs(curve.mean(axis=(1, 2)) - grid)) <= 1 / (L * G * T) + 1e-6
    assert np.all((curve >= 0) & (curve <= 1))
    # the official protocol keeps sink + window = 5 tokens per head: exact up to rho = 1 - 5/16
    official = build_budget_curve(imps, scores)
    feasible = grid <= 1 - 5 / T + 1e-12
    assert np.max(np.abs(official.mean(axis=(1, 2)) - grid)[feasible]) <= 1 / (L * G * T) + 1e-6


def test_curve_gives_budget_to_the_head_with_utility():
    # head 0 carries no future utility, head 1 does: at rho = 0.5 (B = T) head 1 keeps all T tokens
    T = 16
    imp = np.stack([np.zeros(T), np.exp(-np.arange(T) / 4.0)])[None]
    sc = np.random.default_rng(0).normal(size=(1, 2, T))
    for protocol in ("official", "sorted"):
        curve = build_budget_curve([imp], [sc], rho_grid=np.array([0.5]), sink=0, window=0, protocol=protocol)
        np.testing.assert_array_equal(curve[0, 0], [1.0, 0.0])


@pytest.mark.parametrize("imps,scores,grid,match", [
    ([], [], None, "empty"), ([np.ones((1, 1, 4))], [], None, "same length"),
    ([np.ones((1, 1, 4))], [np.ones((1, 1, 5))], None, "shape"),
    ([-np.ones((1, 1, 8))], [np.ones((1, 1, 8))], None, "non-negative"),
    ([np.ones((1, 1, 8))], [np.ones((1, 1, 8))], np.array([1.0]), "rho_grid"),
    ([np.ones((1, 1, 8))], [np.ones((1, 1, 8))], np.array([0.0]), "rho_grid")])
def test_curve_bad_input(imps, scores, grid, match):
    with pytest.raises(ValueError, match=match):
        build_budget_curve(imps, scores, rho_grid=grid)


def test_check_curve():
    with pytest.raises(ValueError, match="shape"):
        check_curve(np.zeros((98, 2, 2)), 2, 2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        check_curve(np.full((99, 2, 2), 1.5), 2, 2)


def test_kept_per_head_needs_an_integer_budget():
    from papers.lukv.profile import kept_per_head, press_ratio

    assert kept_per_head(0.8, 40) == 8 and kept_per_head(0.5, 40) == 20
    # 1 - 0.8 = 0.19999999999999996: a plain int() would floor 8 tokens to 7
    assert int(40 * (1 - 0.8)) == 7 and int(40 * (1 - press_ratio(0.8, 40))) == 8
    assert round(40 * (1 - press_ratio(0.8, 40))) == 8
    with pytest.raises(ValueError, match="integer"):
        kept_per_head(0.8, 32)    # 6.4 tokens per head: presses would floor or round differently


def test_integer_budgets_keep_the_exact_total():
    from papers.lukv.profile import curve_at_budget, integer_budgets
    from papers.lukv.allocation import round_keep_counts

    rng = np.random.default_rng(0)
    ratios = rng.uniform(0.5, 0.99, size=(3, 4))
    b = integer_budgets(ratios, 3 * 4 * 8, 40)
    assert b.sum() == 96 and b.min() >= 1 and b.max() <= 40
    curve = np.broadcast_to(ratios.astype(np.float32), (99, 3, 4)).copy()
    c = curve_at_budget(curve, 0.8, 40)
    # kvpress's per-layer rounding of the rounded row gives back exactly these budgets: 8 per head on average
    counts = np.stack([round_keep_counts(1 - c[79, l], 40) for l in range(3)])
    assert counts.sum() == 96
    np.testing.assert_array_equal(counts, integer_budgets(curve[79], 96, 40))


def test_oracle_domain_methods_keep_equal_budgets():
    from papers.lukv.experiments import _curve_counts, oracle_losses
    from papers.lukv.online import uniform_curve

    rng = np.random.default_rng(1)
    L, G, T = 2, 4, 40
    imp, scores = rng.lognormal(size=(L, G, T)), rng.normal(size=(L, G, T))
    curve = np.sort(rng.uniform(0, 1, size=(99, L, G)), axis=0).astype(np.float32)
    counts = {"uniform": _curve_counts(uniform_curve(L, G), 0.8, T), "lukv": _curve_counts(curve, 0.8, T)}
    assert counts["uniform"].sum() == counts["lukv"].sum() == L * G * 8
    out = oracle_losses(imp, scores, counts, 0.8, 4, 1)
    # the DP optimum over the same (protected) scorer order bounds every curve-based allocation
    assert out["oracle"] <= min(out["uniform"], out["lukv"]) + 1e-9


def test_shuffle_heads_is_a_permutation():
    from papers.lukv.profile import shuffle_heads

    c = np.arange(99 * 6, dtype=np.float32).reshape(99, 2, 3) / 1000
    s = shuffle_heads(c, np.random.default_rng(0))
    np.testing.assert_array_equal(np.sort(s.reshape(99, -1), axis=1), np.sort(c.reshape(99, -1), axis=1))
    assert not np.array_equal(s, c)
