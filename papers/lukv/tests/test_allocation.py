"""Exact identities and small known answers of the allocation (spec steps 3-7, 9)."""
import itertools

import numpy as np
import pytest

from papers.lukv.allocation import allocate_budget, antitonic_regression, round_keep_counts


def test_pava_known_answer():
    np.testing.assert_allclose(antitonic_regression(np.array([4, 1, 3, 2])), [4, 2, 2, 2])
    np.testing.assert_allclose(antitonic_regression(np.array([1.0, 2.0, 3.0])), [2, 2, 2])
    np.testing.assert_allclose(antitonic_regression(np.array([3.0, 2.0, 1.0])), [3, 2, 1])


def test_pava_is_concave_majorant_with_same_total():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.exponential(size=12)
        y = antitonic_regression(x)
        assert np.all(np.diff(y) <= 1e-12)
        assert np.isclose(y.sum(), x.sum())
        assert np.all(np.cumsum(y) >= np.cumsum(x) - 1e-12)   # majorant of the prefix sums
        assert np.all(y >= 0)


@pytest.mark.parametrize("bad", [np.zeros((2, 2)), np.array([]), np.array([1.0, np.nan]), np.array([np.inf])])
def test_pava_bad_input(bad):
    with pytest.raises(ValueError, match="values"):
        antitonic_regression(bad)


def test_allocate_spec_example():
    d = np.array([[0.0, 9.0], [5.0, 1.0]])
    g = allocate_budget(d, 2)
    assert g.budgets.tolist() == [1, 1] and g.value == 5 and g.relaxed_value == 9.5
    e = allocate_budget(d, 2, method="dp")
    assert e.value == 9 and e.budgets.tolist() == [2, 0]
    assert allocate_budget(d, 2, method="dp_relaxed").relaxed_value == 9.5


def _brute(d, budget):
    n, t = d.shape
    R = np.hstack([np.zeros((n, 1)), np.cumsum(d, 1)])
    return max(sum(R[i, b[i]] for i in range(n)) for b in itertools.product(range(t + 1), repeat=n)
               if sum(b) == budget)


def test_dp_matches_brute_force_and_sandwich():
    rng = np.random.default_rng(1)
    for _ in range(10):
        d = rng.exponential(size=(3, 4)) * rng.integers(0, 2, size=(3, 4))
        for budget in range(0, 13):
            e = allocate_budget(d, budget, method="dp")
            g = allocate_budget(d, budget)
            r = allocate_budget(d, budget, method="dp_relaxed")
            assert e.budgets.sum() == budget == g.budgets.sum()
            assert np.isclose(e.value, _brute(d, budget))
            assert g.relaxed_value >= e.value - 1e-12 >= g.value - 2e-12
            assert np.isclose(g.relaxed_value, r.relaxed_value)


def test_greedy_exact_when_rows_are_sorted():
    d = -np.sort(-np.random.default_rng(2).exponential(size=(4, 6)), axis=1)  # concave R: hull = R
    for budget in (0, 5, 11, 24):
        g, e = allocate_budget(d, budget), allocate_budget(d, budget, method="dp")
        assert np.isclose(g.value, e.value) and np.isclose(g.value, g.relaxed_value)


@pytest.mark.parametrize("d,budget,match", [
    (np.array([[1.0, -1.0]]), 1, "non-negative"), (np.array([[1.0, np.nan]]), 1, "finite"),
    (np.array([[1.0, np.inf]]), 1, "finite"), (np.array([1.0, 2.0]), 1, "2-D"),
    (np.ones((2, 3)), 7, "total_budget"), (np.ones((2, 3)), -1, "total_budget")])
def test_allocate_bad_input(d, budget, match):
    with pytest.raises(ValueError, match=match):
        allocate_budget(d, budget)


def test_allocate_unknown_method():
    with pytest.raises(ValueError, match="method"):
        allocate_budget(np.ones((2, 2)), 1, method="lp")


def test_round_keep_counts_spec_example():
    assert round_keep_counts(np.array([0.30, 0.45, 0.55]), 8).tolist() == [2, 4, 4]
    assert round_keep_counts(np.array([0.0, 0.0]), 8).tolist() == [1, 1]      # target clipped to G, clamp >= 1
    assert round_keep_counts(np.array([1.0, 1.0]), 5).tolist() == [5, 5]


@pytest.mark.parametrize("rates,T,match", [(np.array([1.2]), 4, "keep_rates"), (np.array([-0.1]), 4, "keep_rates"),
                                           (np.array([np.nan]), 4, "keep_rates"), (np.array([0.5]), 0, "seq_len")])
def test_round_keep_counts_bad_input(rates, T, match):
    with pytest.raises(ValueError, match=match):
        round_keep_counts(rates, T)
