"""Tests of the audit-v2 additions: the speedup controls and named MultiDigits variants."""
from shared.experiment import RunContext

from papers.dream.experiments import speedup


def test_speedup_runs_its_controls(tmp_path):
    params = {"n_clients_list": [2, 4], "instance_seeds": [0, 1], "n_tasks": 2, "dim": 3, "noise_std": 1.0,
              "rounds": 20, "run": {"local_steps": 2, "momentum": 0.5},
              "controls": {"fedavg_ls": {"method": "fedavg_ls", "local_steps": 2}}}
    ctx = RunContext(seed=1, out_dir=tmp_path, scale="smoke", name="speedup")
    rows, met = speedup(params, ctx)
    assert len(met["slope_per_seed"]) == 2
    c = met["control"]["fedavg_ls"]
    assert c["method"] == "fedavg_ls" and len(c["slope_per_seed"]) == 2
    assert {r["method"] for r in rows} == {"dream", "fedavg_ls"}
