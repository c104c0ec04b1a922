"""Tests of the audit-v2 additions: the finite-P alignment factor and the decoupled-scalars control."""
import math

import numpy as np
import pytest

from papers.hosfl.experiments import _paired_differences, finite_p_alignment_factor
from papers.hosfl.training import run_split_training


def test_finite_p_factor_known_values():
    # P = 1: E|N(0,1)| = sqrt(2/pi); P = 2: E[chi_2] / sqrt(2) = sqrt(pi/2) / sqrt(2) = sqrt(pi)/2
    assert finite_p_alignment_factor(1) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-12)
    assert finite_p_alignment_factor(2) == pytest.approx(math.sqrt(math.pi) / 2, rel=1e-12)
    assert finite_p_alignment_factor(5) == pytest.approx(0.9515, abs=1e-4)
    assert finite_p_alignment_factor(10_000) == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(ValueError):
        finite_p_alignment_factor(0)


def test_finite_p_factor_matches_monte_carlo():
    rng = np.random.default_rng(0)
    U = rng.standard_normal((200_000, 5))
    assert np.linalg.norm(U, axis=1).mean() / math.sqrt(5) == pytest.approx(finite_p_alignment_factor(5), rel=5e-3)


def test_decoupled_control_moves_the_client_without_alignment():
    kw = dict(rounds=3, n_clients=2, batch_size=8, eval_every=3, seed=1)
    a = run_split_training("hosfl", **kw)
    b = run_split_training("hosfl_decoupled", **kw)
    f = run_split_training("frozen", **kw)
    assert not np.allclose(b["client_vector"], f["client_vector"])   # the control does move the client
    assert not np.allclose(a["client_vector"], b["client_vector"])   # but not along HO-SFL's directions
    assert "alignment" not in b


def test_paired_differences_use_shared_seeds_only():
    out = _paired_differences({"hosfl": {0: 0.9, 1: 0.8, 2: 0.7}, "frozen": {0: 0.5, 2: 0.6}})
    assert out["hosfl_minus_frozen_points"] == pytest.approx([40.0, 10.0])
    assert out["frozen_minus_hosfl_points"] == pytest.approx([-40.0, -10.0])


def test_paired_r90_ratios_are_per_seed_over_shared_seeds():
    from papers.hosfl.experiments import _paired_r90_ratios
    out = _paired_r90_ratios({"hosfl": {0: 100, 1: 200, 2: 50}, "sfl_fo_tau1": {0: 50, 2: 100},
                              "sfl_zo": {0: 610, 1: 400}})
    assert out["r90_ratio_hosfl_sfl_fo_tau1"] == pytest.approx([2.0, 0.5])
    assert out["r90_ratio_sfl_fo_tau1_hosfl"] == pytest.approx([0.5, 2.0])
    assert out["r90_ratio_sfl_zo_hosfl"] == pytest.approx([6.1, 2.0])
    assert out["r90_ratio_sfl_zo_sfl_fo_tau1"] == pytest.approx([12.2])
    assert "r90_ratio_hosfl_hosfl" not in out and "r90_ratio_sfl_fo_tau1_sfl_zo" not in out
