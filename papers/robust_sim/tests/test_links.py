"""Gaussian constants of the links against closed forms, and the Stein identities they rely on."""
import math

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss

from papers.robust_sim.links import LINK_NAMES, get_link, link_constants


def test_phase_constants_are_gaussian_moments():
    # f = z^2: E f' = 0, E f'' = 2, ESC = E Z^6 - E Z^4 = 15 - 3, E f'^2 = 4, E f'^2 Z^2 = 4 E Z^4, E f^2 = 3
    c = link_constants("phase")
    expected = {"E_df": 0.0, "E_d2f": 2.0, "esc": 12.0, "E_df_sq": 4.0, "E_df_sq_z_sq": 12.0, "E_f_sq": 3.0}
    for k, v in expected.items():
        assert c[k] == pytest.approx(v, abs=1e-10), k


def test_bump_constants_closed_form():
    # E exp(-a Z^2) = (1 + 2a)^(-1/2), E Z^2 exp(-a Z^2) = (1 + 2a)^(-3/2)
    c = link_constants("bump")
    assert c["E_f_sq"] == pytest.approx(5 ** -0.5, rel=1e-12)
    assert c["esc"] == pytest.approx(5 ** -1.5 - 5 ** -0.5, rel=1e-12)  # negative: beta* is the bottom eigvec
    assert c["E_d2f"] == pytest.approx(3 ** -1.5 - 3 ** -0.5, rel=1e-12)
    assert c["E_df_sq"] == pytest.approx(4 * 5 ** -1.5, rel=1e-12)  # E 4 Z^2 exp(-2 Z^2)
    assert c["E_df"] == pytest.approx(0.0, abs=1e-14)


def test_gelu_swish_first_and_second_order():
    # GeLU: E f' = E Phi(Z) + E Z phi(Z) = 1/2; E f'' = E[2 phi - Z^2 phi] = 1/sqrt(pi) - 1/(4 sqrt(pi))
    g = link_constants("gelu")
    assert g["E_df"] == pytest.approx(0.5, abs=1e-12)
    assert g["E_d2f"] == pytest.approx(3.0 / (4.0 * math.sqrt(math.pi)), rel=1e-10)
    assert link_constants("swish")["E_df"] == pytest.approx(0.5, abs=1e-12)  # s + z s(1-s): odd part vanishes


def test_odd_links_have_zero_second_order_stein_but_positive_esc():
    for name in ("tanh", "logistic"):
        c = link_constants(name)
        assert abs(c["E_d2f"]) < 1e-12
        assert c["esc"] > 0.0


def test_derivatives_match_finite_differences():
    z = np.linspace(-4, 4, 41)
    h = 1e-6
    for name in LINK_NAMES:
        lk = get_link(name)
        fd = (lk.f(z + h) - lk.f(z - h)) / (2 * h)
        np.testing.assert_allclose(lk.df(z), fd, atol=1e-7, err_msg=name)
        if lk.even:
            np.testing.assert_allclose(lk.f(-z), lk.f(z), atol=0)


def test_links_do_not_overflow():
    z = np.array([-800.0, 800.0])
    for name in ("gelu", "swish", "logistic", "tanh"):
        lk = get_link(name)
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            assert np.all(np.isfinite(lk.f(z))) and np.all(np.isfinite(lk.df(z)))


def _gauss2():
    z, w = hermegauss(80)
    w = w / math.sqrt(2 * math.pi)
    Z1, Z2 = np.meshgrid(z, z, indexing="ij")
    return np.stack([Z1.ravel(), Z2.ravel()], axis=1), np.outer(w, w).ravel()


@pytest.mark.parametrize("name", ["gelu", "swish", "tanh", "bump"])
def test_second_moment_and_hessian_identities(name):
    # E[f(x^T b)^2 x x^T] = E f^2 I + ESC b b^T and E[f'(x^T b)^2 x x^T] = E f'^2 (I - bb^T) + E f'^2 Z^2 bb^T
    # for x ~ N(0, I_2), checked by a tensor Gauss-Hermite rule
    x, w = _gauss2()
    b = np.array([math.cos(0.7), math.sin(0.7)])
    lk, c = get_link(name), link_constants(name)
    z = x @ b
    M = (x * (w * lk.f(z) ** 2)[:, None]).T @ x
    H = (x * (w * lk.df(z) ** 2)[:, None]).T @ x
    P = np.outer(b, b)
    np.testing.assert_allclose(M, c["E_f_sq"] * np.eye(2) + c["esc"] * P, atol=1e-8)
    np.testing.assert_allclose(H, c["E_df_sq"] * (np.eye(2) - P) + c["E_df_sq_z_sq"] * P, atol=1e-8)


def test_bad_link_and_nodes():
    with pytest.raises(ValueError, match="link must be one of"):
        get_link("relu")
    with pytest.raises(ValueError, match="link"):
        link_constants("relu")
    with pytest.raises(ValueError, match="n_nodes"):
        link_constants("gelu", n_nodes=10)


def test_probit_constants_closed_form():
    # f = Phi, f' = phi: E phi(Z) = 1/(2 sqrt pi); E Phi(Z)^2 = 1/3; E phi(Z)^2 = 1/(2 pi sqrt 3);
    # E Z^2 phi(Z)^2 = 1/(6 pi sqrt 3); Phi - 1/2 is odd, so E f'' = E[Phi(Z)(Z^2 - 1)] = 0;
    # ESC = 2 E phi^2 + 2 E[Phi f''] with f'' = -Z phi and E[Z phi Phi] = E phi^2 / 2 (Stein), so ESC = E phi^2
    c = link_constants("probit")
    e_phi_sq = 1.0 / (2.0 * math.pi * math.sqrt(3.0))
    assert c["E_df"] == pytest.approx(1.0 / (2.0 * math.sqrt(math.pi)), rel=1e-12)
    assert c["E_f_sq"] == pytest.approx(1.0 / 3.0, rel=1e-12)
    assert c["E_df_sq"] == pytest.approx(e_phi_sq, rel=1e-12)
    assert c["E_df_sq_z_sq"] == pytest.approx(e_phi_sq / 3.0, rel=1e-12)
    assert c["esc"] == pytest.approx(e_phi_sq, rel=1e-10)
    assert abs(c["E_d2f"]) < 1e-12
    assert get_link("probit").f(np.array([0.0]))[0] == 0.5 and not get_link("probit").even
