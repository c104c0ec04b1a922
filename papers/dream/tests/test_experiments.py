"""Experiment helpers: correction specs, hypervolume, the (M, d) grid on a tiny instance, the torchjd cross-check."""
import numpy as np
import pytest

from shared.experiment import RunContext

from papers.dream.aggregation import dream_weights, pcgrad_correction
from papers.dream.experiments import quadratic_grid, resolve_correction, torchjd_direction


def test_resolve_correction():
    np.testing.assert_array_equal(resolve_correction({"preference": [0.25, 0.75]}, 2), [[0.25, 0.25], [0.75, 0.75]])
    np.testing.assert_array_equal(resolve_correction({"priority": [1.0, 0.5]}, 2), np.diag([1.0, 0.5]))
    assert resolve_correction("pcgrad", 2) == "pcgrad" and resolve_correction(None, 2) is None
    with pytest.raises(ValueError, match="correction"):
        resolve_correction({"weights": [1]}, 2)


def test_hypervolume_2d():
    from papers.dream.experiments import hypervolume_2d

    # one point (1, 1) with reference (2, 3): box 1 x 2
    assert hypervolume_2d([(1.0, 1.0)], [2.0, 3.0]) == 2.0
    # two non-dominated points: union of boxes = 1*2 + 1*1 (staircase), a dominated point adds nothing
    assert hypervolume_2d([(0.0, 2.0), (1.0, 1.0), (1.5, 2.5)], [2.0, 3.0]) == pytest.approx(2.0 * 1.0 + 1.0 * 1.0)
    assert hypervolume_2d([(3.0, 0.0)], [2.0, 3.0]) == 0.0


def test_quadratic_grid_exact_dream_and_baseline_floors(tmp_path):
    params = {"grid": [[3, 4], [5, 7]], "n_clients": 4, "rounds": 150, "instance_seeds": [0], "ca_rounds": 20,
              "runs": {"dream": {"method": "dream"}, "fmgda": {"method": "fmgda"},
                       "fedcmoo": {"method": "fedcmoo"}, "central": {"method": "mgda_central"}}}
    ctx = RunContext(name="quadratic_grid", scale="smoke", seed=0, out_dir=tmp_path)
    rows, met = quadratic_grid(params, ctx)
    assert met["dream_max"] < 1e-9                       # drift-corrected fixed point: exact stationarity
    assert met["baseline_min"] > 1e-3                    # FMGDA / FedCMOO keep a floor (central MGDA excluded)
    assert met["baseline_min"] == min(met["final_sqrt_s"][k][r] for k in ("3x4", "5x7") for r in ("fmgda", "fedcmoo"))
    assert met["ca"]["3x4"]["central"] < 1e-12           # the exact MGDA step is the CA direction
    assert met["ca_ratio"]["3x4"] == met["ca"]["3x4"]["dream"] / min(met["ca"]["3x4"]["fmgda"], met["ca"]["3x4"]["fedcmoo"])
    assert {r["n_tasks"] for r in rows} == {3, 5} and (tmp_path / "traces.npz").exists()


def test_torchjd_mgda_matches_the_own_qp():
    pytest.importorskip("torchjd")
    # hand check: g_1 = (3, 0), g_2 = (0, 1) -> d = (0.3, 0.9)
    np.testing.assert_allclose(torchjd_direction(np.array([[3.0, 0.0], [0.0, 1.0]]), 1e-12, 1000), [0.3, 0.9],
                               atol=1e-14)
    # min-norm points inside the simplex: Frank-Wolfe converges fast and both give the same direction
    rng = np.random.default_rng(0)
    for M, d in ((2, 7), (3, 20), (6, 50)):
        C = rng.standard_normal((M, d))
        lam, own = dream_weights(C)
        assert lam.min() > 0
        v = torchjd_direction(C, 1e-12, 100000)
        assert np.linalg.norm(v - own) <= 1e-8 * np.linalg.norm(own)
    # a min-norm point on a face (two zero weights): Frank-Wolfe without away steps is sublinear there; ours is
    # the exact minimiser, so its norm is never larger, and the two directions are still close
    C = np.random.default_rng(0).standard_normal((5, 9))
    lam, own = dream_weights(C)
    assert np.sum(lam == 0) == 2
    v = torchjd_direction(C, 1e-12, 2000)
    assert own @ own <= v @ v + 1e-14
    assert np.linalg.norm(v - own) <= 1e-2 * np.linalg.norm(own)


def test_torchjd_pcgrad_is_the_column_sum_of_pcgrad_a():
    torchjd = pytest.importorskip("torchjd")
    import torch

    # two tasks: PCGrad's sum of projected gradients is G^T A 1 with A = PCGrad-A (no order dependence for M = 2)
    rng = np.random.default_rng(3)
    for _ in range(3):
        G = rng.standard_normal((2, 5))
        G[1] = -0.5 * G[0] + 0.3 * G[1]                   # conflicting pair
        ours = pcgrad_correction(G).sum(axis=1) @ G
        theirs = torchjd.aggregation.PCGrad()(torch.from_numpy(G)).numpy()
        np.testing.assert_allclose(theirs, ours, atol=1e-12)


def test_qp_timing_records_a_library_solver_that_returns_no_solution(tmp_path, monkeypatch):
    """A backend that returns no weights (OSQP declared M = 2, d = 1e5 "infeasible" at eps 1e-10) is listed in
    solver_failures with a null difference, instead of stopping the run on a NaN metric; the agreement check reads
    the solutions that were returned. The backends share one cvxpy variable, so "no solution" is read from the
    solver's status, not from the variable (which still holds the previous backend's answer here)."""
    import shared.solvers
    from papers.dream import experiments as E
    from papers.dream.plots import _qp_table, _weight_diff
    from shared.results import read_metrics, write_metrics

    real_solve = shared.solvers.solve

    def flaky(problem, solver=None, **opts):
        if solver == "OSQP":   # a status without a solution; the variable keeps Clarabel's earlier value
            return shared.solvers.SolveResult(status="infeasible", value=None, backend="OSQP", solve_time=0.0)
        return real_solve(problem, solver=solver, **opts)

    monkeypatch.setattr(shared.solvers, "solve", flaky)
    out = tmp_path / "qp_timing"
    out.mkdir()
    ctx = RunContext(name="qp_timing", scale="smoke", seed=0, out_dir=out)
    rows, met = E.qp_timing({"sizes": [[2, 30]], "rounds": 1, "min_seconds": 0.0, "rho": 0.0}, ctx)
    assert met["solver_failures"] == [{"size": "2x30", "solver": "cvxpy_osqp"}]
    assert met["max_weight_diff"]["2x30"]["cvxpy_osqp"] is None
    assert met["max_weight_diff_all"] <= 1e-6            # Clarabel (and quadprog) still agree with ours
    assert _weight_diff(None) == "no solution" and _weight_diff(1.5e-9) == "1.50e-09"
    # every solver of a size is timed (alternating rounds; min_seconds 0 means one call per measurement)
    tim = read_metrics(out / "timings.json")
    assert tim["rounds"] == 1 and tim["min_seconds"] == 0.0
    solvers = ["own", *met["solvers"]]
    assert tim["number"]["2x30"] == {s: 1 for s in solvers}
    t = tim["us_per_call"]["2x30"]
    assert set(t) == {*solvers, "ratio_own_over_clarabel"}
    assert t["ratio_own_over_clarabel"] == t["own"] / t["cvxpy_clarabel"]
    write_metrics(met, out / "metrics.json")
    _qp_table(tmp_path, tmp_path)
    assert "least of 1 rounds" in (tmp_path / "qp_timing.md").read_text()
