"""LP certificate of the capacitated robust optimum and the alternative placements of the ambiguity set
(known answers, brute-force enumeration, bad inputs)."""
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

from shared.experiment import run_experiment

from papers.dr_assortment.certify import DGTLinearProgram, certify_drao
from papers.dr_assortment.experiments import EXPERIMENTS
from papers.dr_assortment.mnl import mnl_revenue
from papers.dr_assortment.placements import (kl_robust_mean, placement_values, solve_placement,
                                             solve_weight_box, weight_box_revenue)
from papers.dr_assortment.robust import robust_revenue, solve_drao

CONFIG = Path(__file__).resolve().parent.parent / "config.yaml"


def _instance(seed, n):
    rng = np.random.default_rng(seed)
    return rng.lognormal(0.0, 1.0, n), rng.uniform(1.0, 10.0, n)


# ------------------------------------------------------------------ DGT LP
def test_dgt_lp_known_answers():
    # v = (1, 1), r = (2, 4): {1} gives 4/2 = 2, {0, 1} gives 6/3 = 2, {0} gives 1
    val, items = DGTLinearProgram([1.0, 1.0], 1).solve(np.array([2.0, 4.0]))
    assert val == pytest.approx(2.0, abs=1e-12) and items == (1,)
    val, _ = DGTLinearProgram([1.0, 1.0], None).solve(np.array([2.0, 4.0]))
    assert val == pytest.approx(2.0, abs=1e-12)
    # one item: r v / (1 + v) = 3 * 2 / 3
    assert DGTLinearProgram([2.0], None).solve(np.array([3.0]))[0] == pytest.approx(2.0, abs=1e-12)


def test_dgt_lp_matches_enumeration_with_capacity():
    v, r = _instance(3, 8)
    for cap in (1, 2, 3, 8):
        best = max(mnl_revenue(v, r, S) for k in range(cap + 1) for S in itertools.combinations(range(8), k))
        lp = DGTLinearProgram(v, cap)
        val, items = lp.solve(r)
        assert val == pytest.approx(best, rel=1e-9)
        assert mnl_revenue(v, r, items) == pytest.approx(best, rel=1e-9) and len(items) <= cap
        assert lp.max_fractionality <= 1e-7                      # the vertex is an assortment


@pytest.mark.parametrize("rt, match", [(np.array([1.0, -1.0]), ">= 0"), (np.array([1.0, np.nan]), "finite"),
                                       (np.array([1.0]), "shape")])
def test_dgt_lp_bad_inputs(rt, match):
    with pytest.raises(ValueError, match=match):
        DGTLinearProgram([1.0, 2.0], 1).solve(rt)


# ------------------------------------------------------------------ certificate
@pytest.mark.parametrize("div", ["tv", "kl", "chi2"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_certificate_brackets_the_brute_force_optimum(div, seed):
    v, r = _instance(10 + seed, 9)
    for cap, rho in ((2, 0.05), (3, 0.5), (None, 0.2)):
        brute = solve_drao(v, r, rho, div, cap, method="brute").value
        cert = certify_drao(v, r, rho, div, cap, tol=1e-10)
        assert cert.lower <= cert.upper + 1e-15
        assert cert.lower == pytest.approx(brute, rel=1e-9, abs=1e-12)
        assert cert.upper == pytest.approx(brute, rel=1e-9, abs=1e-12)
        assert cap is None or len(cert.items) <= cap
        assert robust_revenue(v, r, cert.items, rho, div) >= cert.lower - 1e-9   # lower bound attained by a set


def test_certificate_bad_inputs():
    v, r = _instance(0, 5)
    with pytest.raises(ValueError, match="tol"):
        certify_drao(v, r, 0.1, "kl", 2, tol=0.0)
    with pytest.raises(ValueError, match="rho must be > 0"):
        certify_drao(v, r, 0.0, "kl", 2)
    with pytest.raises(ValueError, match="divergence"):
        certify_drao(v, r, 0.1, "hellinger", 2)
    with pytest.raises(RuntimeError, match="did not close"):
        certify_drao(v, r, 0.1, "chi2", 2, tol=1e-300, max_lp=3)


# ------------------------------------------------------------------ weight box
def test_weight_box_known_answers():
    v, r = np.array([2.0, 0.5]), np.array([3.0, 6.0])
    assert weight_box_revenue(v, r, [0, 1], 0.0) == pytest.approx(mnl_revenue(v, r, [0, 1]), rel=1e-13)
    lo = 2.0 * math.exp(-0.7)                         # one item: r v'/(1 + v') increases in v', so v' = lower end
    assert weight_box_revenue(v, r, [0], 0.7) == pytest.approx(3.0 * lo / (1.0 + lo), rel=1e-13)
    assert weight_box_revenue(v, r, [], 0.7) == 0.0


def test_weight_box_worst_case_is_a_corner():
    v, r = _instance(4, 5)
    S, delta = [0, 2, 3, 4], 0.4
    corners = itertools.product(*[(v[i] * math.exp(-delta), v[i] * math.exp(delta)) for i in S])
    brute = min(mnl_revenue(np.array(c), r[S], range(len(S))) for c in corners)
    assert weight_box_revenue(v, r, S, delta) == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("cap", [None, 2, 3])
def test_solve_weight_box_matches_enumeration(cap):
    v, r = _instance(5, 8)
    k_max = 8 if cap is None else cap
    best = max(weight_box_revenue(v, r, S, 0.5) for k in range(k_max + 1)
               for S in itertools.combinations(range(8), k))
    sol = solve_weight_box(v, r, 0.5, cap)
    assert sol.value == pytest.approx(best, rel=1e-12)
    assert cap is None or len(sol.items) <= cap


@pytest.mark.parametrize("delta", [-0.1, float("nan"), True])
def test_weight_box_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        weight_box_revenue([1.0], [1.0], [0], delta)


# ------------------------------------------------------------------ KL over the context distribution
def test_kl_robust_mean_known_answers():
    x = [1.0, 2.0, 3.0]
    assert kl_robust_mean(x, 0.0) == pytest.approx(2.0)
    assert kl_robust_mean(x, math.log(3.0)) == pytest.approx(1.0)   # the point mass on the minimum is feasible
    # two points {0, 1} with P = (1/2, 1/2): the worst case is Q = (1 - q, q) with KL = rho
    rho = 0.1
    q = brentq(lambda q: q * math.log(2 * q) + (1 - q) * math.log(2 * (1 - q)) - rho, 1e-12, 0.5)
    assert kl_robust_mean([0.0, 1.0], rho) == pytest.approx(q, abs=1e-9)


@pytest.mark.parametrize("values, weights, match", [([], None, "values"), ([1.0, np.inf], None, "values"),
                                                    ([1.0, 2.0], [0.5, 0.6], "weights")])
def test_kl_robust_mean_bad_inputs(values, weights, match):
    with pytest.raises(ValueError, match=match):
        kl_robust_mean(values, 0.1, weights)


# ------------------------------------------------------------------ placements
def test_single_segment_placements_reduce_to_known_problems():
    v, r = _instance(6, 8)
    V = v[None, :]
    choice = solve_placement(V, r, "choice", 0.5)
    assert choice.value == pytest.approx(solve_drao(v, r, 0.5, "kl", method="brute").value, rel=1e-10)
    assert solve_placement(V, r, "weights", 0.5).value == pytest.approx(solve_weight_box(v, r, 0.5).value,
                                                                         rel=1e-12)
    # one segment: the context ball can only keep P-hat, so the robust value is the nominal revenue
    ctx = solve_placement(V, r, "context", 0.5)
    assert ctx.value == pytest.approx(solve_placement(V, r, "nominal", 0.0).value, rel=1e-12)


def test_placement_values_and_enumeration_agree():
    rng = np.random.default_rng(7)
    v, r = _instance(7, 6)
    V = v[None, :] * np.exp(0.5 * rng.standard_normal((3, 6)))
    sets = [S for k in range(7) for S in itertools.combinations(range(6), k)]
    for place, rad in (("choice", 0.3), ("weights", 0.3), ("context", 0.3), ("nominal", 0.0)):
        vals = placement_values(V, r, sets, place, rad)
        sol = solve_placement(V, r, place, rad)
        assert sol.value == pytest.approx(vals.max(), rel=1e-9)
    # each segment's choice value is the single-model robust revenue
    S = (0, 2, 4)
    expect = np.mean([robust_revenue(Vm, r, S, 0.3, "kl") for Vm in V])
    assert placement_values(V, r, [S], "choice", 0.3)[0] == pytest.approx(expect, rel=1e-13)


def test_placement_bad_inputs():
    v, r = _instance(0, 4)
    with pytest.raises(ValueError, match="placement"):
        solve_placement(v[None], r, "prices", 0.1)
    with pytest.raises(ValueError, match="placement"):
        placement_values(v[None], r, [(0,)], "prices", 0.1)
    with pytest.raises(ValueError, match="refused"):
        solve_placement(np.ones((1, 15)), np.ones(15), "nominal", 0.0)
    with pytest.raises(ValueError, match="v must be positive"):
        solve_placement(-v[None], r, "choice", 0.1)


# ------------------------------------------------------------------ experiments (smoke settings)
def test_exactness_large_smoke(tmp_path):
    m = run_experiment(EXPERIMENTS, "exactness_large", CONFIG, "smoke", tmp_path / "el")
    assert m["max_rel_shortfall"] <= 1e-9 and m["max_cert_width"] <= 1e-9
    assert m["control"]["prefix_max_rel_shortfall"] >= m["max_rel_shortfall"]
    assert (tmp_path / "el" / "exactness_large.csv").is_file()


def test_placements_smoke(tmp_path):
    m = run_experiment(EXPERIMENTS, "placements", CONFIG, "smoke", tmp_path / "pl")
    assert (tmp_path / "pl" / "placements.csv").is_file()
    one = m["by_segments"]["1"]["context"]                      # one segment: context ball changes nothing
    assert one["size_diff"]["mean"] == 0.0 and one["rel_gain"]["mean"] == 0.0
    assert m["n_verdicts_depending"] == len(m["verdicts_depending_on_placement"])


def test_performance_smoke_keys_and_certificate_bracket(tmp_path):
    """The performance experiment keeps the perf-check keys, adds the robust HiGHS comparator, and the fast
    solver's value lies inside the HiGHS certificate's bracket on every instance."""
    config = Path(__file__).resolve().parents[1] / "config.yaml"
    m = run_experiment(EXPERIMENTS, "performance", config, "smoke", tmp_path / "perf")
    assert m["values_agree"] and m["certificate_bracket_violation"] == 0.0
    assert {"brute_N6_C3", "lp_N20_C5", "certificate_N20_C5"} <= set(m["timing"])
    for t in m["timing"].values():
        assert t["speedup"] == t["baseline_s"] / t["ours_s"]
