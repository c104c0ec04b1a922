"""The negative control of lmo-wallclock: V-x with its LMO taken from a full SVD.

The LMO of the nuclear ball is argmin_{||S||_* <= delta} <G, S> = -delta u1 v1^T (Jaggi 2013), whatever
factorisation finds (u1, v1); a full SVD finds the same pair as svds(k=1) (u1 v1^T is invariant under the joint
sign flip), so the control runs the same iterates and differs only in what an update costs.
"""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from papers.pf_minimax.experiments import _equal_time_ratio
from papers.pf_minimax.methods import run_method
from papers.pf_minimax.problems import make_problem
from papers.pf_minimax.sets import NuclearBall


def test_full_svd_lmo_by_hand():
    N = NuclearBall((2, 2), 3.0)
    assert np.allclose(N._lmo_full_svd(np.diag([3.0, 1.0])), [[-3.0, 0.0], [0.0, 0.0]])
    # sigma1 = 4 with u1 v1^T = -e2 e2^T, so the LMO is +3 e2 e2^T
    assert np.allclose(N._lmo_full_svd(np.diag([1.0, -4.0])), [[0.0, 0.0], [0.0, 3.0]])


@pytest.mark.parametrize("shape", [(30, 30), (40, 25)])
def test_full_svd_lmo_equals_svds_lmo_and_attains_the_dual_norm(shape):
    G = np.random.default_rng(3).normal(size=shape)
    N = NuclearBall(shape, 2.5)
    S = N._lmo_full_svd(G)
    assert math.isclose(np.sum(G * S), -2.5 * np.linalg.norm(G, 2), rel_tol=1e-12)   # <G, S> = -delta ||G||_op
    assert math.isclose(np.linalg.svd(S, compute_uv=False).sum(), 2.5, rel_tol=1e-10)  # on the boundary, rank one
    assert np.allclose(S, N._lmo(G), atol=1e-10)
    assert np.allclose(N._lmo_full_svd(sp.csr_matrix(G)), S)                       # sparse gradients too


def test_vx_with_full_svd_lmo_runs_the_same_iterates():
    game = make_problem("nuclear_game", p=25, J=12, s=40, delta=3.0, seed=2)
    ref = run_method("v_x", game, 15, record_every=5)
    ctl = run_method("v_x", game, 15, record_every=5, full_svd_lmo=True)
    assert np.array_equal(ref.steps, ctl.steps)
    assert np.allclose(ref.measure, ctl.measure, rtol=1e-8, atol=1e-10)
    assert np.allclose(ref.x, ctl.x, atol=1e-9) and np.allclose(ref.y, ctl.y, atol=1e-9)
    assert ctl.params["full_svd_lmo"] is True and "full_svd_lmo" not in ref.params


def test_full_svd_lmo_bad_inputs():
    game = make_problem("nuclear_game", p=6, J=4, s=5, delta=2.0, seed=1)
    with pytest.raises(ValueError, match="full_svd_lmo"):
        run_method("proj", game, 2, full_svd_lmo=True)          # no LMO on x
    with pytest.raises(ValueError, match="full_svd_lmo"):
        run_method("sp_fw", game, 2, full_svd_lmo=True)
    with pytest.raises(ValueError, match="nuclear-ball"):
        run_method("v_x", make_problem("matrix_game", A=np.eye(2)), 2, full_svd_lmo=True)


def test_equal_time_ratio_by_hand():
    cum, gap = [0.0, 1.0, 2.0, 3.0], [4.0, 2.0, 1.0, 0.5]
    assert _equal_time_ratio(cum, gap, 2.5, 2.0) == (0.5, False)   # last record within 2.5 s: gap 1.0
    assert _equal_time_ratio(cum, gap, 9.0, 2.0) == (0.25, True)   # every record within: budget exhausted
