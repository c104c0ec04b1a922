"""Problems and brute-force landscape: exact identities and small known answers."""
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from papers.mipcrim.landscape import all_spins, margin_gamma, one_flip_minima, relaxation_corner_minima
from papers.mipcrim.problems import (cut_value, goe_instance, ising_energy, kn_instance, landscape_instance,
                                     maxcut_coupling, npp_coupling, npp_discrepancy, npp_operator, sk_instance,
                                     sync_score)

C4 = np.array([[0, 1, 1], [1, 2, 1], [2, 3, 1], [0, 3, 1]], dtype=float)


def test_maxcut_coupling_is_minus_w_and_cut_identity():
    J = maxcut_coupling(4, C4)
    assert sp.isspmatrix_csr(J)
    W = np.zeros((4, 4))
    for i, j, w in C4:
        W[int(i), int(j)] = W[int(j), int(i)] = w
    np.testing.assert_array_equal(J.toarray(), -W)
    for s in itertools.product([-1, 1], repeat=4):
        s = np.array(s)
        direct = sum(w * (1 - s[int(i)] * s[int(j)]) / 2 for i, j, w in C4)
        assert cut_value(C4, s) == direct
        assert cut_value(C4, s) == C4[:, 2].sum() / 2 - ising_energy(J, s) / 2   # cut = sum(w)/2 - E/2
    assert cut_value(C4, [1, -1, 1, -1]) == 4.0


def test_four_cycle_landscape_known_answers():
    J = maxcut_coupling(4, C4).toarray()
    ofm = one_flip_minima(J)
    assert len(ofm) == 6                        # 2 perfect cuts + 4 cuts of size 2 (ties count)
    assert margin_gamma(J) == 2.0
    cuts = sorted(cut_value(C4, s) for s in ofm)
    assert cuts == [2, 2, 2, 2, 4, 4]
    # admissible quartic attractor: 3 beta lam^2 < alpha < beta lam^2 + gamma with beta=1, lam=0.5, gamma=2
    cor = relaxation_corner_minima(J, alpha=1.5, beta=1.0, lam=0.5)
    np.testing.assert_array_equal(cor, ofm)
    # rows sorted lexicographically with -1 before +1
    keys = [tuple(r) for r in ofm]
    assert keys == sorted(keys)


def test_negative_control_adds_corners():
    J = maxcut_coupling(4, C4).toarray()
    lam, beta, gamma = 0.5, 1.0, 2.0
    cor = relaxation_corner_minima(J, alpha=beta * lam ** 2 + 5 * gamma, beta=beta, lam=lam)
    assert len(cor) == 16                       # every corner passes: the equivalence breaks
    assert len(one_flip_minima(J)) == 6


def test_all_spins_order():
    np.testing.assert_array_equal(all_spins(2), [[-1, -1], [-1, 1], [1, -1], [1, 1]])


def test_integer_coupling_margin_at_least_one():
    rng = np.random.default_rng(3)
    R = rng.integers(-3, 4, size=(9, 9)).astype(float)
    J = np.triu(R, 1)
    J = J + J.T
    g = margin_gamma(J)
    assert g >= 1.0 and g == int(g)             # Prop. 3.4 with lsb 1


def test_landscape_instances_equivalence():
    for t in (0, 1):
        J, g0 = landscape_instance(t, 10)
        assert margin_gamma(J) >= g0 * (1 - 1e-9)
        lam = math.sqrt(0.4 * g0)
        alpha = 0.5 * (3 * lam ** 2 + lam ** 2 + g0)
        np.testing.assert_array_equal(one_flip_minima(J), relaxation_corner_minima(J, alpha=alpha, beta=1.0, lam=lam))


def test_one_flip_minima_are_local_minima_of_energy():
    J = sk_instance(8, 5)
    for s in one_flip_minima(J):
        e = ising_energy(J, s)
        for i in range(8):
            t = s.copy()
            t[i] = -t[i]
            assert ising_energy(J, t) >= e - 1e-12
        assert sync_score(J, s) == 1.0


def test_npp_coupling_energy_identity_and_operator():
    a = np.array([0.3, 1.7, 2.2, 0.9, 1.1])
    J = npp_coupling(a)
    op = npp_operator(a)
    rng = np.random.default_rng(0)
    for _ in range(5):
        s = rng.choice([-1.0, 1.0], size=5)
        assert math.isclose(ising_energy(J, s), ((a @ s) ** 2 - a @ a) / 2, abs_tol=1e-12)
        np.testing.assert_allclose(op.matvec(s), J @ s, atol=1e-12)
    X = rng.standard_normal((5, 3))
    np.testing.assert_allclose(op.matmat(X), J @ X, atol=1e-12)
    assert npp_discrepancy([10, 8, 7, 6, 5], [1, 1, -1, -1, -1]) == 0.0


def test_sk_goe_kn_generators():
    J = sk_instance(400, 42)
    assert np.array_equal(J, J.T) and not np.any(np.diag(J))
    np.testing.assert_array_equal(J, np.round(J, 5))
    off = J[np.triu_indices(400, 1)]
    assert 0.45 < off.var() < 0.55                # (W + W^T)/2: variance 1/2
    G = goe_instance(400, 42)
    assert np.array_equal(G, G.T)
    assert 0.6 * 4 / 400 < np.diag(G).var() < 1.4 * 4 / 400
    K = kn_instance(30, 0)
    assert set(np.unique(K)) <= {-1.0, 0.0, 1.0} and not np.any(np.diag(K)) and np.array_equal(K, K.T)


def test_energy_with_diagonal_and_field():
    G = goe_instance(20, 1)
    J0 = G.copy()
    np.fill_diagonal(J0, 0)
    s = np.random.default_rng(1).choice([-1, 1], size=20)
    assert math.isclose(ising_energy(G, s), ising_energy(J0, s) - np.trace(G) / 2, abs_tol=1e-12)
    J = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert ising_energy(J, [1, 1], h=[0.5, -2.0]) == -1.0 - (0.5 - 2.0)


def test_bad_inputs_problems():
    with pytest.raises(ValueError, match="edges must have shape"):
        maxcut_coupling(4, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="self-loops"):
        maxcut_coupling(4, [[1, 1, 1.0]])
    with pytest.raises(ValueError, match="duplicate"):
        maxcut_coupling(4, [[0, 1, 1.0], [1, 0, 2.0]])
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        maxcut_coupling(4, [[0, 4, 1.0]])
    with pytest.raises(ValueError, match="finite"):
        maxcut_coupling(4, [[0, 1, np.nan]])
    with pytest.raises(ValueError, match="spins must contain only -1 and \\+1"):
        cut_value(C4, [1, 0, 1, 1])
    with pytest.raises(ValueError, match="spins must be a vector of length 4"):
        ising_energy(np.zeros((4, 4)), [1, 1, 1])
    with pytest.raises(ValueError, match="h must have length 4"):
        ising_energy(np.zeros((4, 4)), [1, 1, 1, 1], h=[1.0])
    with pytest.raises(ValueError, match="a must be a non-empty"):
        npp_coupling([])
    with pytest.raises(ValueError, match="a must be non-negative"):
        npp_discrepancy([1.0, -2.0], [1, 1])
    with pytest.raises(ValueError, match="a must be finite"):
        npp_operator([1.0, np.inf])
    with pytest.raises(ValueError, match="n <= 20"):
        one_flip_minima(np.zeros((21, 21)))
