"""PECOK (Bunea, Giraud, Royer & Verzelen 2020): the Gamma correction by hand, the SDP's known answer, recovery."""
import numpy as np
import pytest

from papers.dro_varclust import baselines as BL
from papers.dro_varclust.cluster import clustering_scores

# n = 2 observations of p = 4 variables (columns): x1 = (0, 0), x2 = (1, 0), x3 = (0, 2), x4 = (3, 4).
X_HAND = np.array([[0.0, 1.0, 0.0, 3.0],
                   [0.0, 0.0, 2.0, 4.0]])


def test_v_matrix_by_hand():
    # With p = 4 the max over {c, d} outside {a, b} is over one pair:
    # V(1,2) = |<(-1,0), x3-x4 = (-3,-2)>| / sqrt(13) = 3/sqrt(13); V(1,3) = |<(0,-2), (-2,-4)>| / sqrt(20) = 8/sqrt(20)
    # V(1,4) = |<(-3,-4), (1,-2)>| / sqrt(5) = 5/sqrt(5); V(2,3) = |<(1,-2), (-3,-4)>| / 5 = 1
    # V(2,4) = |<(-2,-4), (0,-2)>| / 2 = 4; V(3,4) = |<(-3,-2), (-1,0)>| / 1 = 3
    V = BL.pecok_v_matrix(X_HAND)
    expected = np.array([[np.inf, 3 / np.sqrt(13), 8 / np.sqrt(20), 5 / np.sqrt(5)],
                         [3 / np.sqrt(13), np.inf, 1.0, 4.0],
                         [8 / np.sqrt(20), 1.0, np.inf, 3.0],
                         [5 / np.sqrt(5), 4.0, 3.0, np.inf]])
    np.testing.assert_allclose(V, expected, rtol=1e-12)


def test_gamma_hat_by_hand():
    # neighbours (ne1, ne2): 1 -> (2, 3), 2 -> (1, 3), 3 -> (2, 1), 4 -> (1, 3), so with n = 2
    # Gamma_11 = <x1-x2, x1-x3>/2 = 0; Gamma_22 = <x2-x1, x2-x3>/2 = 1/2; Gamma_33 = <x3-x2, x3-x1>/2 = 2;
    # Gamma_44 = <x4-x1, x4-x3>/2 = 17/2
    np.testing.assert_allclose(BL.pecok_gamma_hat(X_HAND), [0.0, 0.5, 2.0, 8.5], atol=1e-12)


def test_gamma_hat_chunking_does_not_change_v():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 9))
    np.testing.assert_array_equal(BL.pecok_v_matrix(X), BL.pecok_v_matrix(X, chunk=50))


def test_gamma_hat_rejects_too_few_variables():
    with pytest.raises(ValueError, match="p >= 4"):
        BL.pecok_v_matrix(np.ones((5, 3)))


def test_sdp_known_answer_is_the_normalised_membership_matrix():
    # S = A C A^T with well-separated blocks (C positive diagonal): the maximiser over {B psd, B >= 0, B1 = 1,
    # tr B = K} puts every row's mass in its own block, and tr B = K forces each block to (1/|G_k|) 1 1^T.
    sizes = (3, 4, 5)
    A = np.zeros((sum(sizes), len(sizes)))
    start = 0
    for k, m in enumerate(sizes):
        A[start:start + m, k] = 1.0
        start += m
    S = A @ np.diag([1.0, 2.0, 1.5]) @ A.T
    B = BL.pecok_sdp(S, len(sizes))
    B_star = A @ np.diag(1.0 / np.array(sizes, dtype=float)) @ A.T
    np.testing.assert_allclose(B, B_star, atol=1e-4)


def test_sdp_rejects_bad_input():
    with pytest.raises(ValueError, match="square"):
        BL.pecok_sdp(np.ones((3, 4)), 2)
    with pytest.raises(ValueError, match="K"):
        BL.pecok_sdp(np.eye(4), 5)


def test_pecok_recovers_latent_blocks():
    # G-latent model X = Z A^T + E with independent latent variables and small noise: perfect recovery
    rng = np.random.default_rng(0)
    n, sizes = 200, (6, 8, 10)
    y = np.repeat(np.arange(len(sizes)), sizes)
    Z = rng.normal(size=(n, len(sizes)))
    X = Z[:, y] + 0.3 * rng.normal(size=(n, y.size))
    assert clustering_scores(y, BL.pecok(X, len(sizes)))["accuracy"] == 1.0
