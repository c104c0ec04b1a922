"""Tests of the per-seed (paired) statistics of the P sweep and the width sweep: each paired list holds one value
per seed, computed on that seed's runs alone, and the compare entries are their means over seeds. Expected values
follow from the definitions (a difference of accuracies in points; a mean over seeds), not from earlier runs."""
import numpy as np
import pytest

from papers.hosfl.experiments import p_sweep, width_sweep
from shared.experiment import RunContext


def _ctx(tmp_path, name):
    return RunContext(name=name, scale="smoke", seed=1, out_dir=tmp_path)


COMMON = {"rounds": 3, "n_clients": 2, "batch_size": 4, "eval_every": 1}


def test_p_sweep_paired_differences_are_per_seed(tmp_path):
    params = {"seeds": [0, 1, 2], "P_list": [1, 3], "controls": ["hosfl_decoupled"], "common": COMMON}
    _, met = p_sweep(params, _ctx(tmp_path, "p_sweep"))
    acc = met["final_acc_per_seed"]
    want = [100 * (hi - lo) for hi, lo in zip(acc["3"], acc["1"])]
    assert met["paired"]["acc_Pmax_minus_Pmin_points"] == pytest.approx(want)
    # the mean of the paired differences is the difference of the means
    assert np.mean(met["paired"]["acc_Pmax_minus_Pmin_points"]) == pytest.approx(
        met["compare"]["acc_Pmax_minus_Pmin_points"])
    c = met["control"]["hosfl_decoupled"]["final_acc_per_seed"]
    assert met["paired"]["hosfl_decoupled_acc_Pmax_minus_Pmin_points"] == pytest.approx(
        [100 * (hi - lo) for hi, lo in zip(c["3"], c["1"])])
    r = met["rounds_to_90_censored_per_seed"]
    assert met["paired"]["r90_Pmin_minus_Pmax_rounds"] == [a - b for a, b in zip(r["1"], r["3"])]
    assert len(met["paired"]["acc_Pmax_minus_Pmin_points"]) == 3 and met["seeds"] == [0, 1, 2]


def test_p_sweep_seed_lists_agree_with_single_seed_runs(tmp_path):
    both = p_sweep({"seeds": [0, 1], "P_list": [1, 2], "common": COMMON}, _ctx(tmp_path, "p"))
    one = p_sweep({"seeds": [1], "P_list": [1, 2], "common": COMMON}, _ctx(tmp_path, "p"))
    assert both[1]["paired"]["acc_Pmax_minus_Pmin_points"][1] == pytest.approx(
        one[1]["paired"]["acc_Pmax_minus_Pmin_points"][0])


def test_width_sweep_over_seeds_means_the_per_seed_statistics(tmp_path):
    params = {"cut_dims": [8], "hidden_dims": [16, 32], "sfl_zo_lr_grid": [1e-3], "controls": ["frozen"],
              "common": COMMON}
    single = {s: width_sweep({**params, "seeds": [s]}, _ctx(tmp_path, "w"))[1] for s in (0, 1)}
    _, met = width_sweep({**params, "seeds": [0, 1]}, _ctx(tmp_path, "w"))
    for stat in ("hosfl_minus_sfl_zo_min_points", "frozen_minus_sfl_zo_min_points", "hosfl_hidden_change_points",
                 "sfl_zo_hidden_change_points", "gap_growth_hidden_points"):
        per = [single[s]["compare"][stat] for s in (0, 1)]
        assert met["paired"][stat] == pytest.approx(per)
        assert met["compare"][stat] == pytest.approx(np.mean(per))
    assert met["paired"]["control_gap_growth_hidden_points"]["frozen"] == pytest.approx(
        [single[s]["compare"]["control_gap_growth_hidden_points"]["frozen"] for s in (0, 1)])
    # the mean accuracy per width over the seeds
    for key in met["final_acc"]:
        for v, by_method in met["final_acc"][key].items():
            for m, a in by_method.items():
                assert a == pytest.approx(np.mean([single[s]["final_acc"][key][v][m] for s in (0, 1)]))


def test_width_sweep_without_seeds_is_seed_zero(tmp_path):
    params = {"cut_dims": [8], "hidden_dims": [16], "sfl_zo_lr_grid": [1e-3], "common": COMMON}
    a = width_sweep(params, _ctx(tmp_path, "w"))[1]
    b = width_sweep({**params, "seeds": [0]}, _ctx(tmp_path, "w"))[1]
    assert a["compare"] == b["compare"] and a["paired"]["seeds"] == [0]


def test_training_r90_ratios_are_per_seed(tmp_path):
    from papers.hosfl.experiments import training
    params = {"seeds": [0, 1], "common": {**COMMON, "partition": "iid", "init": "random"},
              "runs": {"hosfl": {"method": "hosfl"}, "sfl_fo_tau1": {"method": "sfl_fo", "tau": 1}}}
    _, met = training(params, _ctx(tmp_path, "iid"))
    h = met["runs"]["hosfl"]["rounds_to_90_censored_per_seed"]
    f = met["runs"]["sfl_fo_tau1"]["rounds_to_90_censored_per_seed"]
    assert len(h) == len(f) == 2
    assert np.mean(h) == pytest.approx(met["runs"]["hosfl"]["rounds_to_90_censored"])
    assert met["paired"]["r90_ratio_hosfl_sfl_fo_tau1"] == pytest.approx([a / b for a, b in zip(h, f)])
    assert met["paired"]["r90_ratio_sfl_fo_tau1_hosfl"] == pytest.approx([b / a for a, b in zip(h, f)])
