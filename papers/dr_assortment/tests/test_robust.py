"""Exact identities and small known answers of the robust revenue and the robust assortment solver."""
import itertools
import math

import numpy as np
import pytest

from papers.dr_assortment.mnl import Assortment, dinkelbach, mnl_revenue, solve_mnl_assortment, solve_mnl_lp
from papers.dr_assortment.robust import (divergence_value, dual_solution, primal_robust_revenue,
                                         pseudo_revenues, robust_revenue, solve_drao, worst_case_distribution)

DIVS = ("tv", "kl", "chi2")


def _support(v, r, S):
    w = np.concatenate(([1.0], np.asarray(v, float)[list(S)]))
    return w / w.sum(), np.concatenate(([0.0], np.asarray(r, float)[list(S)]))


# ------------------------------------------------------------------ nominal MNL
def test_mnl_revenue_small_known_answer():
    assert mnl_revenue([1.0, 1.0], [2.0, 4.0], [0, 1]) == pytest.approx(2.0, abs=1e-15)
    assert mnl_revenue([1.0, 3.0], [2.0, 4.0], [1]) == pytest.approx(3.0, abs=1e-15)
    assert mnl_revenue([1.0, 3.0], [2.0, 4.0], []) == 0.0


def test_nominal_uncapacitated_known_answer():
    # {0}: 10/2 = 5 beats {0,1}: 11/3 and {1}: 1/2
    a = solve_mnl_assortment([1.0, 1.0], [10.0, 1.0])
    assert a == Assortment((0,), 5.0)


def test_capacitated_optimum_can_skip_top_revenue_item():
    v, r = [0.1, 5.0, 5.0], [10.0, 5.0, 5.0]
    # {1,2}: 50/11 = 4.545...; {0,1}: 26/6.1 = 4.262...; so the top-revenue item is skipped
    a = solve_mnl_assortment(v, r, capacity=2)
    assert a.items == (1, 2) and a.value == pytest.approx(50.0 / 11.0, rel=1e-14)


@pytest.mark.parametrize("seed", range(6))
def test_dinkelbach_and_lp_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = 7
    v, r = rng.lognormal(0, 1, n), rng.uniform(1, 10, n)
    for cap in (1, 2, 3, None):
        k = n if cap is None else cap
        best = max(mnl_revenue(v, r, S) for j in range(k + 1) for S in itertools.combinations(range(n), j))
        assert solve_mnl_assortment(v, r, cap).value == pytest.approx(best, rel=1e-12)
        assert solve_mnl_lp(v, r, cap).value == pytest.approx(best, rel=1e-9)
        assert mnl_revenue(v, r, dinkelbach(v, r, cap)) == pytest.approx(best, rel=1e-12)


# ------------------------------------------------------------------ robust revenue: known answers
def test_two_point_known_answers():
    # S = {0}, v0 = 1, r0 = 10: P = (1/2, 1/2) on revenues (0, 10)
    v, r, S, rho = [1.0], [10.0], [0], 0.2
    assert robust_revenue(v, r, S, rho, "tv") == pytest.approx(10 * (0.5 - rho), abs=1e-12)
    # chi2 = 4 (t - 1/2)^2 <= rho  ->  t = 1/2 - sqrt(rho)/2
    assert robust_revenue(v, r, S, rho, "chi2") == pytest.approx(10 * (0.5 - math.sqrt(rho) / 2), rel=1e-10)
    # KL: t < 1/2 solves t log 2t + (1-t) log 2(1-t) = rho (bisection here, independent of the dual)
    lo, hi = 0.0, 0.5
    for _ in range(200):
        t = 0.5 * (lo + hi)
        kl = (t * math.log(2 * t) if t > 0 else 0.0) + (1 - t) * math.log(2 * (1 - t))
        lo, hi = (lo, t) if kl < rho else (t, hi)
    assert robust_revenue(v, r, S, rho, "kl") == pytest.approx(10 * t, rel=1e-10)


def test_chi2_interior_case_mean_minus_std():
    # small rho: eta* > max r, so R = E_P r - sqrt(rho Var_P r) (and eta* exceeds max r: needs the wide bracket)
    v, r, S, rho = [0.5, 1.0, 2.0], [3.0, 5.0, 9.0], [0, 1, 2], 0.01
    p, rr = _support(v, r, S)
    mean = p @ rr
    var = p @ (rr - mean) ** 2
    val, eta = dual_solution(v, r, S, rho, "chi2")
    assert val == pytest.approx(mean - math.sqrt(rho * var), rel=1e-10)
    assert eta > max(r)
    assert eta == pytest.approx(mean + math.sqrt(var / rho), rel=1e-6)


def test_tv_worst_case_moves_top_mass_to_outside():
    v, r, S, rho = [1.0, 1.0, 2.0], [4.0, 6.0, 8.0], [0, 1, 2], 0.3
    # p = (0.2, 0.2, 0.2, 0.4) on revenues (0, 4, 6, 8): move 0.3 from revenue 8 to the outside option
    q = worst_case_distribution(v, r, S, rho, "tv")
    np.testing.assert_allclose(q, [0.5, 0.2, 0.2, 0.1], atol=1e-15)
    assert robust_revenue(v, r, S, rho, "tv") == pytest.approx(0.2 * 4 + 0.2 * 6 + 0.1 * 8, abs=1e-12)


@pytest.mark.parametrize("div", DIVS)
def test_rho_zero_is_nominal_and_empty_is_zero(div):
    v, r = [0.7, 1.3, 2.0], [2.0, 5.0, 7.0]
    assert robust_revenue(v, r, [0, 2], 0.0, div) == pytest.approx(mnl_revenue(v, r, [0, 2]), rel=1e-15)
    assert robust_revenue(v, r, [], 0.3, div) == 0.0
    assert robust_revenue(v, [0.0, 0.0, 0.0], [0, 1], 0.3, div) == 0.0


def test_value_is_zero_once_outside_point_mass_is_feasible():
    v, r, S = [1.0, 3.0], [5.0, 7.0], [0, 1]
    p0 = 1 / 5
    assert robust_revenue(v, r, S, 1 - p0, "tv") == 0.0
    assert robust_revenue(v, r, S, math.log(1 / p0), "kl") == 0.0
    assert robust_revenue(v, r, S, (1 - p0) / p0, "chi2") == 0.0
    # just below the thresholds the value is positive
    assert robust_revenue(v, r, S, 1 - p0 - 1e-3, "tv") > 0
    assert robust_revenue(v, r, S, math.log(1 / p0) - 1e-2, "kl") > 0
    assert robust_revenue(v, r, S, (1 - p0) / p0 - 1e-2, "chi2") > 0
    np.testing.assert_array_equal(worst_case_distribution(v, r, S, 5.0, "kl"), [1.0, 0.0, 0.0])


@pytest.mark.parametrize("div", DIVS)
def test_monotone_in_rho_and_below_nominal(div):
    v, r, S = [0.4, 1.1, 2.5, 0.9], [9.0, 2.0, 4.0, 6.5], [0, 2, 3]
    vals = [robust_revenue(v, r, S, rho, div) for rho in (0.0, 0.01, 0.05, 0.2, 0.5, 1.0)]
    assert all(a >= b - 1e-12 for a, b in zip(vals, vals[1:]))
    assert vals[0] == pytest.approx(mnl_revenue(v, r, S))


@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("rho", [0.01, 0.1, 0.5])
def test_worst_case_is_feasible_and_attains_value(div, rho):
    rng = np.random.default_rng(11)
    v, r = rng.lognormal(0, 1, 6), rng.uniform(1, 10, 6)
    S = [0, 2, 3, 5]
    p, rr = _support(v, r, S)
    q = worst_case_distribution(v, r, S, rho, div)
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0, abs=1e-14)
    assert divergence_value(q, p, div) <= rho + 1e-9
    assert q @ rr == pytest.approx(robust_revenue(v, r, S, rho, div), abs=1e-8)


def test_kl_worst_case_is_mnl_with_tilted_weights():
    v, r, S, rho = np.array([0.5, 2.0, 1.0]), np.array([8.0, 3.0, 5.0]), [0, 1, 2], 0.2
    val, lam = dual_solution(v, r, S, rho, "kl")
    w = v * np.exp(-r / lam)
    expected = np.concatenate(([1.0], w)) / (1 + w.sum())
    np.testing.assert_allclose(worst_case_distribution(v, r, S, rho, "kl"), expected, rtol=1e-12)
    p, rr = _support(v, r, S)
    assert divergence_value(expected, p, "kl") == pytest.approx(rho, abs=1e-9)   # the ball constraint is active


@pytest.mark.parametrize("div", DIVS)
def test_pseudo_revenue_identities(div):
    # For fixed dual the dual objective is an increasing function of the MNL revenue with pseudo-revenues.
    rng = np.random.default_rng(3)
    v, r = rng.lognormal(0, 1, 5), rng.uniform(1, 10, 5)
    S = [1, 2, 4]
    p, rr = _support(v, r, S)
    for dual in (0.5, 3.0, 7.5, 12.0):
        rev_t = mnl_revenue(v, pseudo_revenues(r, dual, div), S)
        if div == "tv":
            assert p @ np.minimum(rr, dual) == pytest.approx(rev_t, rel=1e-13)
        elif div == "kl":
            assert p @ np.exp(-rr / dual) == pytest.approx(1 - rev_t, rel=1e-13)
        else:
            assert p @ np.maximum(dual - rr, 0) ** 2 == pytest.approx(dual ** 2 - rev_t, rel=1e-12)


@pytest.mark.parametrize("div", DIVS)
def test_dual_matches_cvxpy_primal(div):
    v, r, S = [0.8, 1.7, 0.3, 2.2], [3.0, 6.0, 9.5, 4.0], [0, 1, 2, 3]
    primal, backend = primal_robust_revenue(v, r, S, 0.1, div)
    assert backend in ("MOSEK", "CLARABEL", "SCS")
    assert abs(robust_revenue(v, r, S, 0.1, div) - primal) <= 1e-5 * (1 + abs(primal))


# ------------------------------------------------------------------ DRAO
def _brute_reference(v, r, rho, div, cap):
    n = len(v)
    k = n if cap is None else cap
    return max(robust_revenue(v, r, S, rho, div) for j in range(k + 1) for S in itertools.combinations(range(n), j))


@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("cap", [2, None])
def test_fast_equals_brute_force(div, cap):
    rng = np.random.default_rng(5)
    for _ in range(2):
        v, r = rng.lognormal(0, 1, 7), rng.uniform(1, 10, 7)
        ref = _brute_reference(v, r, 0.3, div, cap)
        fast = solve_drao(v, r, 0.3, div, cap)
        assert fast.value == pytest.approx(ref, rel=1e-12, abs=1e-12)
        assert fast.value == pytest.approx(robust_revenue(v, r, fast.items, 0.3, div), rel=1e-15)
        assert cap is None or len(fast.items) <= cap


@pytest.mark.parametrize("div", DIVS)
def test_uncapacitated_robust_optimum_is_revenue_ordered(div):
    rng = np.random.default_rng(8)
    v, r = rng.lognormal(0, 1, 9), rng.uniform(1, 10, 9)
    a = solve_drao(v, r, 0.2, div)
    order = np.argsort(-r)
    assert set(a.items) == set(order[:len(a.items)].tolist())
    assert a.items == tuple(sorted(a.items))


def test_ties_prefer_smaller_then_lexicographic():
    # every set is worth 0 under TV rho = 1: the empty set is returned
    assert solve_drao([1.0, 2.0], [3.0, 4.0], 1.0, "tv") == Assortment((), 0.0)
    # two identical items, capacity 1: both singletons tie; the lexicographically smaller wins
    a = solve_drao([1.0, 1.0], [5.0, 5.0], 0.1, "kl", capacity=1)
    b = solve_drao([1.0, 1.0], [5.0, 5.0], 0.1, "kl", capacity=1, method="brute")
    assert a.items == b.items == (0,)
