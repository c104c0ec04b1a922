"""The official profiling protocol (addendum): lower convex hull of the cumulative eviction loss, heap-greedy in
99 nested steps, sink/window kept, layer-normalised value norms. Known answers and identities from the math."""
import numpy as np
import pytest

from papers.lukv.allocation import (allocate_budget, antitonic_regression, heap_greedy_keep_counts, hull_costs,
                                    lower_convex_hull, step_targets)
from papers.lukv.oracle import oracle_importance
from papers.lukv.profile import DEFAULT_GRID, build_budget_curve, feasible_rows, min_keep


def test_lower_convex_hull_known_sequences():
    # (1, 3) lies above the chord from (0, 0) to (2, 4)
    np.testing.assert_array_equal(lower_convex_hull([0, 3, 4, 8]), [0, 2, 3])
    # collinear points are not vertices
    np.testing.assert_array_equal(lower_convex_hull([0, 1, 2, 3]), [0, 3])
    # a convex sequence: every point is a vertex
    np.testing.assert_array_equal(lower_convex_hull([0, 1, 3, 6, 10]), [0, 1, 2, 3, 4])
    # a concave sequence: only the end points
    np.testing.assert_array_equal(lower_convex_hull([0, 4, 7, 9, 10]), [0, 4])
    np.testing.assert_array_equal(lower_convex_hull([5.0]), [0])


def test_lower_convex_hull_lies_below_and_is_convex():
    rng = np.random.default_rng(3)
    for _ in range(20):
        y = np.concatenate(([0.0], np.cumsum(rng.exponential(size=15))))
        idx = lower_convex_hull(y)
        h = np.interp(np.arange(y.size), idx, y[idx])
        assert np.all(h <= y + 1e-12)
        assert np.all(np.diff(np.diff(h)) >= -1e-12)          # convex
        np.testing.assert_allclose(h[idx], y[idx])


def test_hull_costs_known_answer_and_pava_identity():
    # C = [0, 1, 4, 5, 10]: hull vertices 0, 1, 3, 4 -> slopes 1, 2, 2, 5
    np.testing.assert_allclose(hull_costs([1, 3, 1, 5]), [1, 2, 2, 5])
    np.testing.assert_allclose(hull_costs([1, 2, 3]), [1, 2, 3])          # already non-decreasing
    np.testing.assert_allclose(hull_costs([3, 2, 1]), [2, 2, 2])          # fully pooled
    rng = np.random.default_rng(0)
    for _ in range(20):
        d = rng.exponential(size=17)
        c = hull_costs(d[::-1])
        assert np.all(np.diff(c) >= -1e-12)
        assert c.sum() == pytest.approx(d.sum())
        # lower hull of the eviction loss == least concave majorant of the retained utility
        np.testing.assert_allclose(c[::-1], antitonic_regression(d), atol=1e-12)


def test_heap_greedy_small_known_answer():
    # head 0 ranks importances (5, 1), head 1 (3, 2); evictions take the cheapest next removal
    keep = heap_greedy_keep_counts(np.array([[5.0, 1.0], [3.0, 2.0]]), 2, [1, 2, 3, 4])
    np.testing.assert_array_equal(keep, [[1, 2], [1, 1], [1, 0], [0, 0]])


def test_heap_greedy_equals_exact_dp_on_concave_curves():
    rng = np.random.default_rng(1)
    n_heads, m = 5, 9
    for _ in range(10):
        d = -np.sort(-rng.exponential(size=(n_heads, m)) * rng.lognormal(size=(n_heads, 1)), axis=1)  # concave R
        targets = np.arange(0, n_heads * m + 1)
        keep = heap_greedy_keep_counts(d, m, targets)
        R = np.hstack([np.zeros((n_heads, 1)), np.cumsum(d, axis=1)])
        for D, b in zip(targets, keep):
            exact = allocate_budget(d, n_heads * m - int(D), method="dp")
            assert R[np.arange(n_heads), b].sum() == pytest.approx(exact.value, rel=1e-12, abs=1e-12)
            np.testing.assert_array_equal(b, exact.budgets)   # distinct values: the optimum is unique


def test_heap_greedy_is_optimal_for_the_hull_relaxation():
    rng = np.random.default_rng(2)
    d = rng.exponential(size=(4, 10))                          # not concave: the scorer mis-ranks
    keep = heap_greedy_keep_counts(d, 10, np.arange(41))
    for D, b in enumerate(keep):
        relaxed = allocate_budget(d, 40 - D, method="dp_relaxed")
        Rb = np.hstack([np.zeros((4, 1)), np.cumsum(antitonic_regression_rows(d), axis=1)])
        assert Rb[np.arange(4), b].sum() == pytest.approx(relaxed.relaxed_value, rel=1e-12)


def antitonic_regression_rows(d):
    return np.stack([antitonic_regression(r) for r in d])


def test_heap_greedy_budgets_sum_exactly_and_respect_the_floor():
    rng = np.random.default_rng(4)
    n_heads, T, protected = 6, 40, 5
    d = rng.exponential(size=(n_heads, T - protected))
    targets = step_targets(n_heads * T)
    floor = min_keep(T, 4, 1)
    feasible = targets <= n_heads * (T - floor)
    keep = heap_greedy_keep_counts(d, T, targets[feasible], min_keep=floor)
    np.testing.assert_array_equal(keep.sum(axis=1), n_heads * T - targets[feasible])
    assert keep.min() >= floor
    assert np.all(np.diff(keep, axis=0) <= 0)                  # nested: evictions only grow


def test_step_targets():
    np.testing.assert_array_equal(step_targets(320)[[0, 49, 79, 98]], [3, 160, 256, 317])
    assert step_targets(320).size == 99
    with pytest.raises(ValueError, match="n_units"):
        step_targets(0)


@pytest.mark.parametrize("kwargs, match", [
    ({"decrements": np.ones((2, 3)), "seq_len": 3, "targets": [7]}, "exceeds"),
    ({"decrements": np.ones((2, 3)), "seq_len": 3, "targets": [2, 1]}, "non-decreasing"),
    ({"decrements": np.ones((2, 3)), "seq_len": 3, "targets": [-1]}, "non-negative"),
    ({"decrements": np.ones((2, 3)), "seq_len": 2, "targets": [1]}, "seq_len"),
    ({"decrements": np.ones((2, 3)), "seq_len": 3, "targets": [1], "min_keep": 4}, "min_keep"),
    ({"decrements": np.ones((2, 3)), "seq_len": 3, "targets": [5], "min_keep": 1}, "exceeds"),
    ({"decrements": -np.ones((2, 3)), "seq_len": 3, "targets": [1]}, "non-negative"),
    ({"decrements": np.full((2, 3), np.nan), "seq_len": 3, "targets": [1]}, "finite"),
])
def test_heap_greedy_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        heap_greedy_keep_counts(**kwargs)


@pytest.mark.parametrize("fn, arg, match", [
    (lower_convex_hull, [], "non-empty"), (lower_convex_hull, [0, np.inf], "finite"),
    (hull_costs, np.ones((2, 2)), "1-D"), (hull_costs, [np.nan], "finite")])
def test_hull_bad_input(fn, arg, match):
    with pytest.raises(ValueError, match=match):
        fn(arg)


def _samples(seed, n=3, L=2, G=3, T=40):
    rng = np.random.default_rng(seed)
    return [rng.exponential(size=(L, G, T)) for _ in range(n)], [rng.normal(size=(L, G, T)) for _ in range(n)]


def test_official_curve_spends_the_budget_and_keeps_sink_and_window():
    imps, scores = _samples(5)
    curve = build_budget_curve(imps, scores, sink=4, window=1)
    feasible = feasible_rows(DEFAULT_GRID, 40, 4, 1)
    assert feasible.sum() == 87                                  # rho <= 1 - 5/40
    err = np.abs(curve.astype(np.float64).mean(axis=(1, 2)) - DEFAULT_GRID)[feasible]
    assert err.max() <= 0.5 / (6 * 40) + 1e-6
    assert curve.max() <= 1 - 5 / 40 + 1e-6                      # every head keeps its 5 protected tokens
    np.testing.assert_allclose(curve[~feasible], 1 - 5 / 40, atol=1e-6)   # the largest feasible compression


def test_official_curve_ignores_protected_tokens():
    imps, scores = _samples(6)
    base = build_budget_curve(imps, scores, sink=4, window=1)
    changed = [i.copy() for i in imps]
    for i in changed:
        i[..., :4] *= 100.0
        i[..., -1] = 0.0
    np.testing.assert_array_equal(build_budget_curve(changed, scores, sink=4, window=1), base)


def test_official_curve_bad_input():
    imps, scores = _samples(7)
    with pytest.raises(ValueError, match="protocol"):
        build_budget_curve(imps, scores, protocol="other")
    with pytest.raises(ValueError, match="sink"):
        build_budget_curve(imps, scores, sink=30, window=10)


def test_normalised_value_norms_rescale_each_layer_by_one_constant():
    rng = np.random.default_rng(8)
    A = rng.dirichlet(np.ones(6), size=(4, 3))                    # (H_q, K, T)
    V, W = rng.normal(size=(2, 6, 5)), rng.normal(size=(7, 20))
    raw = oracle_importance(A, V, W)
    norm = oracle_importance(A, V, W, normalize_value_norms=True)
    norms = sum(np.linalg.norm(V[h // 2] @ W[:, 5 * h:5 * h + 5].T, axis=1).sum() for h in range(4))
    np.testing.assert_allclose(norm * (norms + 1e-9), raw, rtol=1e-12)


def test_greedy_continuation_matches_the_uncached_argmax_loop():
    import torch

    from papers.lukv.oracle import extract_oracle, greedy_continuation
    from shared.lm import tiny_llama

    model = tiny_llama(20, num_layers=1, hidden_size=16, num_heads=2, num_kv_heads=1, intermediate_size=32,
                       seed=0, attn_implementation="eager").eval()
    ids = torch.randint(0, 20, (3, 7), generator=torch.Generator().manual_seed(0))
    got = greedy_continuation(model, ids, 4)
    ref = ids
    with torch.no_grad():
        for _ in range(4):
            ref = torch.cat([ref, model(input_ids=ref, use_cache=False).logits[:, -1].argmax(-1, keepdim=True)], 1)
    assert torch.equal(got, ref)
    assert torch.equal(greedy_continuation(model, ids, 0), ids)
    with pytest.raises(ValueError, match="n_tokens"):
        greedy_continuation(model, ids, -1)
    # decode steps only add future positions: the max over more queries can only grow
    ctx, fut = ids[:, :5], ids[:, 5:]
    base = extract_oracle(model, ctx, fut)
    more = extract_oracle(model, ctx, fut, decode_steps=3)
    assert more.shape == base.shape and np.all(more >= base - 1e-12)


def test_reverse_heads_swaps_the_extremes_and_keeps_each_row():
    from papers.lukv.profile import reverse_heads

    curve = np.array([[[0.1, 0.5], [0.3, 0.9]]], dtype=np.float32)          # one row, heads ratios 0.1 .. 0.9
    np.testing.assert_allclose(reverse_heads(curve), [[[0.9, 0.3], [0.5, 0.1]]])
    rng = np.random.default_rng(9)
    c = rng.random((5, 3, 4)).astype(np.float32)
    r = reverse_heads(c)
    np.testing.assert_allclose(np.sort(r.reshape(5, -1), 1), np.sort(c.reshape(5, -1), 1))
    np.testing.assert_array_equal(reverse_heads(r), c)                       # an involution for distinct values
    with pytest.raises(ValueError, match="shape"):
        reverse_heads(np.ones((2, 3)))
