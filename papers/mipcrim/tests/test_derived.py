"""Derived metrics of the experiments: small known answers computed by hand."""
import csv

import pytest

import numpy as np

from papers.mipcrim.experiments import _eval_seeds, _kn_min_margin, _paired, _sk_goe_rows


def test_kn_min_margin_takes_the_smallest_percent_margin():
    # n = 100: (110 - 100) / 100 = +10%; n = 200: (190 - 200) / 200 = -5%; n = 2000 has no GW reference
    entries = {"100": {"mip_best_cut": 110.0, "gw_cut": 100.0}, "200": {"mip_best_cut": 190.0, "gw_cut": 200.0},
               "2000": {"mip_best_cut": 5000.0}}
    out = _kn_min_margin(entries)
    assert out == {"min_mip_minus_gw_pct": -5.0, "n_at_min": 200, "sizes": [100, 200]}
    # the control's cuts against the same GW references: 90 -> -10%, 200 -> 0%
    ctl = {"100": {"mip_best_cut": 90.0}, "200": {"mip_best_cut": 200.0}, "2000": {"mip_best_cut": 1.0}}
    assert _kn_min_margin(entries, ctl)["min_mip_minus_gw_pct"] == -10.0


def test_kn_min_margin_without_gw_is_null():
    assert _kn_min_margin({"2000": {"mip_best_cut": 1.0}})["min_mip_minus_gw_pct"] is None


def _write_rows(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["method", "seed", "step", "metric", "value", "trial"])
        w.writeheader()
        w.writerows(rows)


def test_sk_goe_rows_pair_per_instance(tmp_path):
    rows = [dict(method=m, seed=42 + 137 * t, step=100, metric="sk_norm_energy", value=v, trial=t)
            for m, vals in (("mip_crim", (-0.70, -0.72)), ("bsb", (-0.71, -0.70))) for t, v in enumerate(vals)]
    rows.append(dict(method="mip_crim", seed=42, step=100, metric="sk_sync", value=1.0, trial=0))  # not an energy
    _write_rows(tmp_path / "r.csv", rows)
    parsed = _sk_goe_rows(tmp_path / "r.csv")
    assert set(parsed) == {("sk", "100", "mip_crim"), ("sk", "100", "bsb")}
    assert _paired(parsed, "sk", "100", "mip_crim", "bsb") == pytest.approx([0.01, -0.02])


def test_paired_refuses_unmatched_instances(tmp_path):
    rows = [dict(method="mip_crim", seed=0, step=100, metric="goe_norm_energy", value=-0.7, trial=0),
            dict(method="bsb", seed=0, step=100, metric="goe_norm_energy", value=-0.7, trial=1)]
    _write_rows(tmp_path / "r.csv", rows)
    with pytest.raises(ValueError, match="do not pair up"):
        _paired(_sk_goe_rows(tmp_path / "r.csv"), "goe", "100", "mip_crim", "bsb")


def test_eval_seeds_are_disjoint_from_the_tuner_runs():
    # the tuner draws its run seeds as children of SeedSequence(seed): spawn keys (0,), (1,), ... (App. E has
    # 48 + 9 x 162 = 1506 runs at res = 3, 10 rounds); evaluation starts must give other generator states
    seed = 20260630
    tuner = np.random.SeedSequence(seed).spawn(1506)
    ev = _eval_seeds(seed, 16)
    assert len(ev) == 16
    states = {tuple(s.generate_state(4)) for s in tuner}
    ev_states = [tuple(s.generate_state(4)) for s in ev]
    assert len(set(ev_states)) == 16 and not states & set(ev_states)
    # deterministic given the seed
    assert [tuple(s.generate_state(4)) for s in _eval_seeds(seed, 16)] == ev_states


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_eval_seeds_rejects_bad_counts(bad):
    with pytest.raises(ValueError, match="eval_seeds"):
        _eval_seeds(0, bad)
