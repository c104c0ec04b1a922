"""Reference formulations of ComplexOR: small answers derived by hand (LP duality, Johnson's rule, enumeration)."""
import pytest

from papers.sacopt import datasets as D
from papers.sacopt.complexor import READINGS, REFERENCE, audit, audit_problem, reference_formulation
from papers.sacopt.formulation import solve_formulation


def _solve(name, inp, backend="highs"):
    return solve_formulation(reference_formulation(name, inp), backend=backend)


def test_seventeen_references_with_readings():
    assert len(REFERENCE) == 17 and set(READINGS) == set(REFERENCE) and "prod" not in REFERENCE


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_transport_with_limits(backend):
    # cheap arcs (0,1) rate 6 and (1,0) rate 5; (1,0) capped at 25 -> x = [[5, 15], [25, 5]], cost 40+90+125+50
    inp = {"supply": [20, 30], "demand": [30, 20], "rate": [[8, 6], [5, 10]], "limit": [[15, 25], [25, 20]]}
    assert _solve("nltrans", inp, backend).objective == pytest.approx(305.0)


def test_multi_limit_is_destination_by_origin():
    # one product; arc origin 0 -> destination 1 is cheapest (1 vs 5) but limit[1][0] = 0 closes it, so both
    # origins ship to their own destination: 5*10 + 5*10. Read [origin][destination], the arc would stay open (60).
    inp = {"supply": [[10], [10]], "demand": [[10], [10]], "limit": [[10, 10], [0, 10]],
           "cost": [[[5], [1]], [[5], [5]]]}
    res = _solve("multi", inp)
    assert res.objective == pytest.approx(100.0) and res.x["t_0_1_0"] == pytest.approx(0.0)


def test_diet_lp_matches_its_dual():
    # min 2a + 3b + 1.5c s.t. 2a + b + 3c >= 50, 3a + 4b + 2c >= 60: primal (16, 0, 6) and dual (0.1, 0.6) give 41
    inp = {"cost": [2, 3, 1.5], "f_min": [0, 0, 0], "f_max": [100, 100, 100], "n_min": [50, 60],
           "n_max": [200, 250], "amt": [[2, 1, 3], [3, 4, 2]]}
    res = _solve("dietu_problem", inp)
    assert res.objective == pytest.approx(41.0)
    assert res.x["buy_0"] == pytest.approx(16.0) and res.x["buy_2"] == pytest.approx(6.0)


def test_steel_market_bounds_bind():
    # hours x0/2 + x1/3 <= 10 and x0/3 + x1/2 <= 8 are slack at the market caps (5, 4): profit 10*5 + 20*4
    inp = {"rate": [[2, 3], [3, 2]], "profit": [10, 20], "commit": [1, 2], "market": [5, 4], "avail": [10, 8]}
    assert _solve("steel4", inp).objective == pytest.approx(130.0)


def test_binary_models():
    assert _solve("knapsack_optimization", {"item_values": [60, 100, 120], "item_weights": [10, 20, 30],
                                            "max_weight_knapsack": 50}).objective == pytest.approx(220.0)
    # tower 0 (cost 3) covers regions 0 and 2 (100 + 150); tower 1 (cost 4) covers region 1 (200); budget 4
    assert _solve("cell_tower", {"delta": [[1, 0, 1], [0, 1, 0]], "cost": [3, 4], "population": [100, 200, 150],
                                 "budget": 4}).objective == pytest.approx(250.0)
    # set cover: {0, 1} costs 25, every pair covering all three audiences costs at least 25
    assert _solve("media_selection", {"incidence_matrix": [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
                                      "media_costs": [10, 15, 20]}).objective == pytest.approx(25.0)


def test_flowshop_johnson_makespan():
    # Johnson's rule on (1,3), (2,2), (3,1): order 1, 2, 3, makespan 7
    assert _solve("flowshop_scheduling", {"proces_time": [[1, 3], [2, 2], [3, 1]]}).objective == pytest.approx(7.0)


def test_aircraft_landing_separation_costs():
    # two aircraft, target 5, separation 2, unit penalties: one lands at 5, the other 2 away -> cost 2
    inp = {"EarliestLanding": [0, 0], "LatestLanding": [10, 10], "TargetLanding": [5, 5],
           "PenaltyAfterTarget": [1, 1], "PenaltyBeforeTarget": [1, 1], "SeparationTime": [[0, 2], [2, 0]]}
    assert _solve("aircraft_landing", inp).objective == pytest.approx(2.0)
    inp["TargetLanding"] = [1, 8]  # targets already 7 apart: no penalty
    assert _solve("aircraft_landing", inp).objective == pytest.approx(0.0, abs=1e-9)


def test_bad_inputs():
    with pytest.raises(ValueError, match="name must be one of"):
        reference_formulation("prod", {})
    with pytest.raises(ValueError, match="lacks key 'limit'"):
        reference_formulation("nltrans", {"supply": [1], "demand": [1], "rate": [[1]]})
    with pytest.raises(ValueError, match="sample_input must be a dict"):
        reference_formulation("nltrans", [1, 2])
    with pytest.raises(ValueError, match="rel_tol"):
        audit_problem("knapsack_optimization", {"item_values": [1], "item_weights": [1], "max_weight_knapsack": 1},
                      1.0, rel_tol=-1.0)


def test_audit_row_matches_and_mismatches():
    inp = {"item_values": [60, 100, 120], "item_weights": [10, 20, 30], "max_weight_knapsack": 50}
    assert audit_problem("knapsack_optimization", inp, 220.0)["match"]
    row = audit_problem("knapsack_optimization", inp, 220.0 * (1 + 1e-5))
    assert not row["match"] and row["reference"] == pytest.approx(220.0) and row["backends_agree"]


@pytest.mark.skipif(not (D.default_root() / "ComplexOR" / "prod" / "sample.json").is_file(),
                    reason="data/sacopt not fetched")
def test_real_audit_schema():
    res = audit(D.load_dataset("complexor"))
    assert res["n_with_gt_model"] == 17 and res["backends_agree"]
    assert len(res["mismatches"]) == 17 - res["n_reproduced"]
    assert all({"problem", "reference", "recorded", "status"} <= set(m) for m in res["mismatches"])
    multi = next(r for r in res["rows"] if r["problem"] == "multi")
    assert multi["status"] == "optimal" and multi["match"]
