"""The smoke scale: what is specific to GOMA's experiments (call counts, stability grid, divergence)."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from shared.experiment import RunContext
from shared.testing import run_scale
from shared.results import read_metrics

from papers.goma import experiments as E
from papers.goma.methods import run_deterministic
from papers.goma.problems import make_problem

HERE = Path(__file__).resolve().parent.parent
CONFIG = HERE / "config.yaml"


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    return run_scale(E.EXPERIMENTS, CONFIG, tmp_path_factory.mktemp("smoke"), names=["deterministic"])


def test_smoke_single_call_property(smoke_results):
    calls = read_metrics(smoke_results / "deterministic" / "metrics.json")["calls_per_iter"]
    assert calls == {"goma_t1": 1.0, "goma_t1_noanchor": 1.0, "goma_t2": 1.0, "goma_t2_noanchor": 1.0,
                     "anchored_popov": 1.0, "og": 1.0, "eg": 2.0, "eag_c": 2.0, "feg": 2.0,
                     "e_halpern": 1.0, "rain": 2.0, "rain_pp_recon": 2.0, "nesterov_eg": 2.0}


def test_smoke_theorem1_ratio_and_divergent_control(smoke_results):
    thm = read_metrics(smoke_results / "deterministic" / "metrics.json")["theorem1"]
    assert thm["max"]["goma_t1"] <= 264
    assert thm["max"]["goma_t1_bigstep"] > 1e10  # the step outside Theorem 1's range diverges


def test_smoke_comonotone_block(smoke_results):
    co = read_metrics(smoke_results / "deterministic" / "metrics.json")["comonotone"]
    assert co["diverged"]["rain_pp_recon"] is False and co["diverged_at"]["rain_pp_recon"] == -1
    assert co["ratio"]["rain_pp_recon"] < 1
    for method in ("eg", "og", "rain"):  # monotone methods on a nonmonotone game
        assert co["diverged"][method] is True and co["diverged_at"][method] > 0 and method not in co["ratio"]


def test_theorem1_ratio_known_sequence():
    h = 264.0 / (np.arange(11) + 6.0) ** 2
    assert E.theorem1_ratio(h, 2.0, 0.25) == pytest.approx(264.0)
    h[5:] = np.inf  # a diverged run keeps its finite part
    assert E.theorem1_ratio(h, 1.0, 1.0) == pytest.approx(264.0)


def test_per_seed_groups_trajectories():
    runs = np.arange(12, dtype=float).reshape(6, 2)
    groups = E._per_seed(runs, 3)
    np.testing.assert_allclose(groups, [[1, 2], [5, 6], [9, 10]])


def test_stability_experiment_tiny_grid(tmp_path):
    ctx = RunContext(name="stability", scale="smoke", seed=0, out_dir=tmp_path)
    params = {"K": 60, "instance": {"problem": "random_bilinear", "params": {"n": 4}, "seed": 0},
              "gamma_L": [0.5, 1.5], "eta_L": [0.2, 1.4]}
    rows, metrics = E.stability(params, ctx)
    conv = metrics["stability"]["converged"]
    assert set(conv) == {"g050_e020", "g050_e140", "g150_e020", "g150_e140"}
    assert conv["g050_e020"] is True
    assert len(rows) == 4


def test_divergence_is_an_error_unless_allowed():
    p = make_problem("bilinear", A=[[0.7]], z0=[2.0, -1.0])
    trace = run_deterministic("eg", p, 50, step=5.0)
    with pytest.raises(E.DivergenceError, match="'eg'.*'scalar'.*step"):
        E._check_diverged(trace, "eg", "scalar", may_diverge=[])
    E._check_diverged(trace, "eg", "scalar", may_diverge=["eg"])


def test_log_steps():
    steps = E.log_steps(1000)
    assert steps[0] == 0 and steps[-1] == 1000 and np.all(np.diff(steps) > 0)


def test_bare_run_makes_the_recorded_oracle_calls():
    p = make_problem("random_bilinear", seed=0, n=4)
    calls = []

    def counted(z):
        calls.append(1)
        return p.operator(z)
    counting = dataclasses.replace(p, operator=counted)
    for variant, n_iter in (("goma_t1", 7), ("eg", 5)):
        calls.clear()
        E._bare_run(variant, counting, n_iter, E._resolved(variant, p.L))()
        trace = E.M.run_variant(variant, p, n_iter)
        assert len(calls) == trace.oracle_calls[n_iter]


def test_direct_solve_returns_the_zero_of_a_linear_operator():
    p = make_problem("random_bilinear", seed=0, n=4)
    Mat, q = E._linear_system(p)
    np.testing.assert_allclose(Mat @ p.z0 + q, p.operator(p.z0), atol=1e-12)
    z = E._direct_solve(p)()
    np.testing.assert_allclose(p.operator(z), 0.0, atol=1e-10)


def test_timing_groups_pair_each_ratio():
    reached = {"goma_t1": ["eps1e-4", "eps1e-6"], "eg": ["eps1e-4"], "feg": []}
    groups = E._timing_groups("goma_t1", ["goma_t1", "eg", "feg"], reached, 10000)
    assert groups == [["direct_solve", ("goma_t1", "eps1e-4"), ("goma_t1", "eps1e-6")], [("eg", "eps1e-4")],
                      ["time_per_10000_calls_goma_t1", "time_per_10000_calls_eg"]]
    assert E._timing_groups("goma_t1", ["goma_t1"], {"goma_t1": []}, 200) == [
        ["direct_solve"], ["time_per_200_calls_goma_t1", "time_per_200_calls_eg"]]


def test_bound_ratio_sweep_max_per_instance():
    """Per seed, the largest Theorem-4 ratio over the configurations of the named instances only."""
    out = {"g5": {"k1": {"s0": {"anchor": {"bound_ratio_per_seed": [0.1, 0.3]}},
                         "s100": {"anchor": {"bound_ratio_per_seed": [0.2, 0.05]},
                                  "noanchor": {"bound_ratio_per_seed": [4.0, 5.0]}}},
                  "baselines": {"sgda": {"slope": -0.1}}},
           "p1": {"k10": {"s0": {"anchor": {"bound_ratio_per_seed": [0.7, 0.0]}}}}}
    assert E._bound_ratio_sweep_max(out, "anchor", ["g5"], 2) == [0.2, 0.3]
    assert E._bound_ratio_sweep_max(out, "anchor", ["g5", "p1"], 2) == [0.7, 0.3]
    assert E._bound_ratio_sweep_max(out, "noanchor", ["g5"], 2) == [4.0, 5.0]
    with pytest.raises(ValueError, match="no configuration"):
        E._bound_ratio_sweep_max(out, "noanchor", ["p1"], 2)


def test_stochastic_p1_noise_off_is_the_deterministic_ratio(tmp_path):
    """sigma = 0, kappa = 1: G = F exactly, so every seed's Theorem-4 ratio is h_K sqrt(K+1) / (1570 L^2 R^2) of
    the deterministic recursion y_k = x_k + (x_0 - x_k)/(k+2) (k >= 1), x_{k+1} = y_k - F(y_k) / (L (k+2)^{3/4})."""
    from papers.goma.problems import make_problem
    K, n = 40, 3
    ctx = RunContext(name="stochastic_p1", scale="smoke", seed=0, out_dir=tmp_path)
    params = {"K": K, "S": 2, "seeds": 3, "k_lo": 5, "instances": {"p1": {
        "problem": "logspectrum_bilinear", "params": {"n": n}, "sigmas": [0.0], "kappas": [1.0]}}}
    _rows, metrics = E.stochastic_p1(params, ctx)
    p = make_problem("logspectrum_bilinear", n=n)
    x = p.z0.copy()
    for k in range(K):
        y = x + (p.z0 - x) / (k + 2) if k > 0 else x
        x = y - p.operator(y) / (p.L * (k + 2) ** 0.75)
    expected = np.sum(p.operator(x) ** 2) * np.sqrt(K + 1) / (1570.0 * p.L ** 2 * np.sum(p.z0 ** 2))
    ratios = metrics["claims"]["bound_ratio_max_per_seed_by_instance"]["p1"]
    np.testing.assert_allclose(ratios, [expected] * 3, rtol=1e-12)
    assert set(metrics["control"]["noanchor"]) == {"bound_ratio_max_per_seed_by_instance", "p1_rate_per_seed"}
    with pytest.raises(ValueError, match="k_lo"):
        E.stochastic_p1({**params, "k_lo": K}, ctx)
