"""MiP-CRIM (Algorithm 1), the tuner and the baselines: known answers and bad inputs."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from papers.mipcrim.baselines import (ballistic_sb, bsb_c0, bsb_time_step, greedy_partition, greedy_restarts,
                                      gw_maxcut, karmarkar_karp, one_flip_local_search, simulated_annealing)
from papers.mipcrim.landscape import all_spins
from papers.mipcrim.problems import (cut_value, er_edges, ising_energy, maxcut_coupling, npp_discrepancy,
                                     sk_instance, sync_score)
from papers.mipcrim.solver import _augment, admissible_alpha_range, mip_crim, mip_crim_batch, tune_mip_crim

C4 = np.array([[0, 1, 1], [1, 2, 1], [2, 3, 1], [0, 3, 1]], dtype=float)
NPP5 = np.array([10.0, 8.0, 7.0, 6.0, 5.0])


def test_admissible_alpha_range():
    lo, hi = admissible_alpha_range(1.0, 0.1, 0.1)
    assert math.isclose(lo, 0.03) and math.isclose(hi, 0.11)
    with pytest.raises(ValueError, match="empty admissible interval"):
        admissible_alpha_range(1.0, 1.0, 0.5)                 # lam^2 >= gamma / (2 beta)
    for bad in ({"beta": 0.0}, {"lam": -1.0}, {"gamma": 0.0}):
        kw = {"beta": 1.0, "lam": 0.1, "gamma": 0.1, **bad}
        with pytest.raises(ValueError, match=list(bad)[0]):
            admissible_alpha_range(**kw)


def test_first_adam_step_is_signed_step_and_trace():
    """One epoch of one step: m_hat / sqrt(v_hat) = g / |g|, so x1 = clip(x0 - tau sign(g), -lam, lam)."""
    J = sk_instance(12, 3)
    lam, tau, alpha, beta = 0.1, 5.0, 0.01, 1.0
    r = mip_crim(J, alpha=alpha, beta=beta, lam=lam, tau=tau, epochs=1, inner_steps=1, seed=7, sigma=0.0)
    x0 = np.random.default_rng(7).standard_normal(12)
    g = beta * x0 ** 3 - J @ x0 - alpha * x0
    s = np.where(np.clip(x0 - tau * np.sign(g), -lam, lam) >= 0, 1, -1)
    np.testing.assert_array_equal(r.spins, s)
    assert r.energy_trace.shape == (1,) and math.isclose(r.energy_trace[0], ising_energy(J, s), rel_tol=1e-12)
    assert r.energy == ising_energy(J, s)


def test_ferromagnet_pair_and_four_cycle():
    # pair: gamma = 1, lam = 0.5 -> admissible alpha in (0.75, 1.25); 4-cycle: gamma = 2 -> (0.75, 2.25)
    r = mip_crim(np.array([[0.0, 1.0], [1.0, 0.0]]), alpha=1.0, beta=1.0, lam=0.5, tau=0.1, epochs=5, seed=0)
    assert r.energy == -1.0 and r.sync == 1.0 and r.is_one_flip_minimum and abs(int(r.spins.sum())) == 2
    J = maxcut_coupling(4, C4)
    r = mip_crim(J, alpha=1.5, beta=1.0, lam=0.5, tau=0.1, epochs=20, seed=1)
    assert cut_value(C4, r.spins) == 4.0 and r.n_passed_epochs >= 1
    assert isinstance(r.spins, np.ndarray) and r.spins.dtype == np.int8


def test_field_removal_identity_and_solution():
    rng = np.random.default_rng(2)
    J = sk_instance(6, 2)
    h = rng.standard_normal(6)
    Jh = _augment(J, h)
    for _ in range(5):
        s0, t0 = rng.choice([-1.0, 1.0], size=6), rng.choice([-1.0, 1.0])
        shat = np.append(s0, t0)
        assert math.isclose(-0.5 * shat @ Jh @ shat, ising_energy(J, t0 * s0, h), abs_tol=1e-12)
    # J = 0: the minimiser of -h.s is sign(h)
    h = np.array([0.5, -1.0, 2.0])
    r = mip_crim(np.zeros((3, 3)), h=h, alpha=0.3, beta=1.0, lam=0.2, tau=0.05, epochs=10, seed=0)
    np.testing.assert_array_equal(r.spins, np.sign(h))
    assert r.energy == -np.abs(h).sum()


def test_inadmissible_alpha_accepts_a_maximum():
    """alpha above beta lam^2 + gamma: the anti-aligned corner passes the strict test (Lemma 3.11's failure)."""
    r = mip_crim(np.array([[0.0, 1.0], [1.0, 0.0]]), alpha=1.5, beta=1.0, lam=0.5, tau=0.1, epochs=5, seed=0)
    assert r.energy == 1.0 and r.n_passed_epochs == 5 and not r.is_one_flip_minimum


def test_return_policy_fallback_and_one_flip():
    # alpha < beta lam^2 (f'(lam) > 0): the strict corner test never passes on J = 0
    r = mip_crim(np.zeros((3, 3)), alpha=0.5, beta=1.0, lam=1.0, tau=0.1, epochs=3, return_policy="one_flip_only")
    assert r.fallback and r.n_passed_epochs == 0
    J = sk_instance(30, 4)
    r = mip_crim(J, alpha=1.4996e-5, beta=1e-3, lam=0.0707, tau=1.0, epochs=30, seed=3, return_policy="one_flip_only")
    assert not r.fallback and r.n_passed_epochs > 0 and r.is_one_flip_minimum


def test_deterministic_and_batch_matches_single_on_csr():
    n, e = 40, er_edges(40, 0.2, 1)
    J = maxcut_coupling(n, e)
    kw = dict(alpha=0.0281, beta=3.75, lam=0.0354, epochs=15)
    a = mip_crim(J, tau=0.05, seed=3, **kw)
    b = mip_crim(J, tau=0.05, seed=3, **kw)
    np.testing.assert_array_equal(a.spins, b.spins)
    np.testing.assert_array_equal(a.energy_trace, b.energy_trace)
    batch = mip_crim_batch(J, tau=[0.05, 0.5], seeds=[3, 4], **kw)
    single = mip_crim(J, tau=0.5, seed=4, **kw)
    np.testing.assert_allclose(batch[0].energy_trace, a.energy_trace, rtol=1e-12)
    np.testing.assert_allclose(batch[1].energy_trace, single.energy_trace, rtol=1e-12)


def test_tuner_round_sizes():
    res = tune_mip_crim(maxcut_coupling(4, C4), res=3, rounds=2, epochs=3, inner_steps=5, seed=0)
    assert len(res.history) == 48 + 162
    assert cut_value(C4, res.result.spins) == 4.0
    lo, hi = 3 * res.params["beta"] * res.params["lam"] ** 2, res.params["beta"] * res.params["lam"] ** 2 + \
        res.params["gamma"]
    assert lo - 1e-12 <= res.params["alpha"] <= hi + 1e-12


def test_bad_inputs_solver():
    ok = dict(alpha=0.1, beta=1.0, lam=0.1, tau=0.1)
    with pytest.raises(ValueError, match="J must be square"):
        mip_crim(np.zeros((2, 3)), **ok)
    with pytest.raises(ValueError, match="J must be symmetric"):
        mip_crim(np.array([[0.0, 1.0], [0.0, 0.0]]), **ok)
    with pytest.raises(ValueError, match="zero diagonal.*-tr\\(J\\)/2"):
        mip_crim(np.eye(2), **ok)
    with pytest.raises(ValueError, match="NaN or Inf"):
        mip_crim(np.array([[0.0, np.nan], [np.nan, 0.0]]), **ok)
    J = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="h must have length 2"):
        mip_crim(J, h=[1.0], **ok)
    for nm in ("alpha", "beta", "lam", "tau"):
        with pytest.raises(ValueError, match=nm):
            mip_crim(J, **{**ok, nm: 0.0})
    with pytest.raises(ValueError, match="sigma"):
        mip_crim(J, sigma=-1.0, **ok)
    with pytest.raises(ValueError, match="epochs"):
        mip_crim(J, epochs=0, **ok)
    with pytest.raises(ValueError, match="inner_steps"):
        mip_crim(J, inner_steps=0, **ok)
    with pytest.raises(ValueError, match="return_policy"):
        mip_crim(J, return_policy="best", **ok)
    with pytest.raises(ValueError, match="seeds"):
        mip_crim_batch(J, seeds=[], **ok)
    with pytest.raises(ValueError, match="tau must be a scalar or have one value per seed"):
        mip_crim_batch(J, seeds=[0, 1, 2], **{**ok, "tau": [0.1, 0.2]})


def test_npp_known_answers():
    assert npp_discrepancy(NPP5, karmarkar_karp(NPP5)) == 2.0
    assert npp_discrepancy(NPP5, greedy_partition(NPP5)) == 4.0
    best = min(abs(NPP5 @ s) for s in all_spins(5))
    assert best == 0.0
    a = np.random.default_rng(0).random(200)
    # KK's residual (differencing alone) equals the discrepancy of the recovered partition
    vals = sorted(a.tolist())
    import heapq
    h = [-v for v in vals]
    heapq.heapify(h)
    while len(h) > 1:
        x, y = heapq.heappop(h), heapq.heappop(h)
        heapq.heappush(h, x - y)
    assert math.isclose(npp_discrepancy(a, karmarkar_karp(a)), -h[0], abs_tol=1e-12)
    with pytest.raises(ValueError, match="a must be non-negative"):
        karmarkar_karp([1.0, -1.0])
    with pytest.raises(ValueError, match="a must be a non-empty"):
        greedy_partition([])


def test_greedy_local_search_reaches_one_flip_minimum():
    J = sk_instance(50, 9)
    S0 = np.random.default_rng(0).choice(np.array([-1, 1], dtype=np.int8), size=(50, 4))
    S = one_flip_local_search(J, S0)
    for c in range(4):
        assert sync_score(J, S[:, c]) == 1.0
        assert ising_energy(J, S[:, c]) <= ising_energy(J, S0[:, c])
        np.testing.assert_array_equal(one_flip_local_search(J, S[:, c]), S[:, c])   # fixed point
    Sg, E = greedy_restarts(J, 3, 0)
    assert Sg.shape == (50, 3) and np.allclose(E, [ising_energy(J, Sg[:, c]) for c in range(3)])
    with pytest.raises(ValueError, match="spins must contain only"):
        one_flip_local_search(J, np.zeros(50))


def test_sa_bsb_gw_on_four_cycle():
    J = maxcut_coupling(4, C4)
    S, E, _ = simulated_annealing(J, num_reads=2, num_sweeps=50, seed=0)
    assert S.shape == (4, 2) and max(cut_value(C4, S[:, c]) for c in range(2)) == 4.0
    assert np.allclose(E, [ising_energy(J, S[:, c]) for c in range(2)])
    S, E = ballistic_sb(J.toarray(), steps=200, reads=2, seed=0)
    assert max(cut_value(C4, S[:, c]) for c in range(2)) == 4.0
    W = -J.toarray()
    gw = gw_maxcut(W, roundings=20, seed=0)
    assert gw["cut"] == 4.0 and abs(gw["sdp_bound"] - 4.0) < 1e-3     # bipartite: SDP bound = m


def test_bsb_time_step_on_the_complete_graph_is_the_symplectic_euler_limit():
    """K_n with unit weights, J = -W: sigma_J = 1, c0 = 0.5 / sqrt(n), mu_min(J) = -(n - 1); the limit of
    symplectic Euler on x'' = -k x is dt^2 k < 4 with k = a0 (a0 + c0 (n - 1))."""
    n = 100
    J = -(np.ones((n, n)) - np.eye(n))
    assert bsb_c0(J) == pytest.approx(0.5 / np.sqrt(n), rel=1e-12)
    k = 1.0 * (1.0 + 0.5 / np.sqrt(n) * (n - 1))
    assert bsb_time_step(J, safety=1.0) == pytest.approx(2.0 / np.sqrt(k), rel=1e-9)
    assert bsb_time_step(J) == pytest.approx(0.9 * 2.0 / np.sqrt(k), rel=1e-9)
    assert bsb_time_step(J, dt=0.1) == 0.1                     # never above the step asked for
    # the same bound through the sparse path (n > 64: ARPACK)
    n = 300
    W = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    k = 1.0 + 0.5 / np.sqrt(n) * (n - 1)
    assert bsb_time_step(-W, safety=1.0) == pytest.approx(2.0 / np.sqrt(k), rel=1e-8)
    with pytest.raises(ValueError, match="safety"):
        bsb_time_step(J, safety=0.0)


def test_bsb_keeps_goto_step_on_a_dense_zero_mean_coupling():
    """SK-like J (zero-mean Gaussian): the semicircle edge gives c0 |mu_min| ~ 1, limit 0.9 x 2 / sqrt(2) > 1.25."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((400, 400))
    J = np.triu(A, 1) + np.triu(A, 1).T
    assert bsb_time_step(J) == 1.25


def test_bsb_at_goto_step_collapses_on_a_dense_graph_and_the_stable_step_cuts():
    """Dense ER graph (p = 0.5, n = 120): at dt = 1.25 the uniform mode of J = -W is unstable and every spin
    ends on the same wall (cut 0); at the stable step bSB cuts more than half of the edges."""
    rng = np.random.default_rng(1)
    n = 120
    iu = np.triu_indices(n, 1)
    keep = rng.random(iu[0].size) < 0.5
    edges = np.column_stack([iu[0][keep], iu[1][keep], np.ones(keep.sum())])
    J = maxcut_coupling(n, edges).toarray()
    S0, _ = ballistic_sb(J, steps=500, reads=2, seed=0, stable_step=False)
    assert max(cut_value(edges, S0[:, c]) for c in range(2)) == 0.0
    S1, E1 = ballistic_sb(J, steps=500, reads=2, seed=0)
    assert min(cut_value(edges, S1[:, c]) for c in range(2)) > 0.5 * len(edges)
    assert np.allclose(E1, [ising_energy(J, S1[:, c]) for c in range(2)])
