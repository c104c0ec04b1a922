"""The further baselines the paper names (E-Halpern, RAIN, the method RAIN++ extends, a Nesterov-type accelerated
EG): hand-computed first steps, a solved bilinear game (solution 0), exact identities, oracle counts, bad inputs.
RAIN++ itself (reconstructed) is tested in test_rain_pp.py."""
import math

import numpy as np
import pytest

from papers.goma import methods as M
from papers.goma.methods import run_deterministic
from papers.goma.problems import make_problem

S = 0.7
Z0 = np.array([2.0, -1.0])


def _game():
    # f(x, y) = s x y: F(x, y) = s (y, -x), L = s, unique solution z* = 0.
    return make_problem("bilinear", A=[[S]], z0=Z0.tolist())


def F(z):
    return S * np.array([z[1], -z[0]])


def test_e_halpern_steps_known_values():
    # L = 1, eta_1 = 1/6: M eta_1^2 = 9/36 = 1/4, eta_2 = (1/6)(1 - 1/4 - 1/4) 4 / ((3/4) 3) = 4/27.
    etas = M.e_halpern_steps(1.0 / 6.0, 1.0, 3)
    assert etas[0] == 1.0 / 6.0
    assert etas[1] == pytest.approx(4.0 / 27.0, rel=1e-15)
    e2 = 4.0 / 27.0
    e3 = e2 * (1 - 1 / 9 - 9 * e2 * e2) * 9 / ((1 - 9 * e2 * e2) * 2 * 4)
    assert etas[2] == pytest.approx(e3, rel=1e-15)
    many = M.e_halpern_steps(1.0 / 6.0, 1.0, 2000)
    assert all(b < a for a, b in zip(many, many[1:])) and many[-1] > 0.05  # decreasing to a positive limit


def test_e_halpern_first_two_steps_by_hand():
    p = _game()
    eta1 = 1.0 / (6.0 * S)
    eta2 = M.e_halpern_steps(eta1, S, 2)[1]
    v0 = Z0
    v1 = Z0 - eta1 * F(v0)           # lambda_1 = 1/2: base = u_0
    z1 = Z0 - eta1 * F(v1)
    base = Z0 / 3.0 + 2.0 * z1 / 3.0  # lambda_2 = 1/3: base = u_0/3 + 2 u_2/3
    v2 = base - eta2 * F(v1)
    z2 = base - eta2 * F(v2)
    np.testing.assert_allclose(run_deterministic("e_halpern", p, 1).z_last, z1, rtol=1e-15)
    np.testing.assert_allclose(run_deterministic("e_halpern", p, 2).z_last, z2, rtol=1e-14)


def test_rain_schedule_small_case():
    # n = 16, L = 1: lambda_0 = 2/16, S = ceil(log2 8) = 3, mu = (1/8, 3/8, 7/8), weights (9, 11/3, 15/7)
    # (sum 14.81): N = (int(9.72), int(3.96), remainder) = (9, 3, 4).
    sched = M.rain_schedule(16, 1.0, 0.5)
    assert [s[0] for s in sched] == [0.125, 0.25, 0.5]
    assert [s[1] for s in sched] == [0.125, 0.375, 0.875]
    assert [s[2] for s in sched] == [0.5 / 1.125, 0.5 / 1.375, 0.5 / 1.875]
    assert [s[3] for s in sched] == [9, 3, 4]
    for n in (1, 7, 100, 12345):
        assert sum(s[3] for s in M.rain_schedule(n, 2.0)) == n


def test_rain_first_step_and_second_stage_anchor_by_hand():
    p = _game()
    n = 64
    lam0 = 2.0 * S / n
    a0 = 0.5 / (S + lam0)
    zh = Z0 - a0 * F(Z0)             # F_0(z0) = F(z0) + lam0 (z0 - z0)
    z1 = Z0 - a0 * (F(zh) + lam0 * (zh - Z0))
    tr = run_deterministic("rain", p, 1)  # horizon 1: one stage of one iteration, lambda_0 = 2 L
    lam = 2.0 * S
    a = 0.5 / (S + lam)
    zh1 = Z0 - a * F(Z0)
    np.testing.assert_allclose(tr.z_last, Z0 - a * (F(zh1) + lam * (zh1 - Z0)), rtol=1e-15)
    # with horizon n the first iterate uses lambda_0 = 16 L / n
    z = list(M.iterates("rain", F, Z0, n, {"step": 0.5, "L": S}))
    np.testing.assert_allclose(z[1], z1, rtol=1e-15)
    # second stage: F_1(z) = F(z) + lam0 (z - z0) + 2 lam0 (z - z^(1)), z^(1) the first stage's last iterate
    sched = M.rain_schedule(n, S)
    (_, _, _, n0), (_, mu1, a1, _) = sched[0], sched[1]
    start = z[n0]
    g = lambda w: F(w) + lam0 * (w - Z0) + 2 * lam0 * (w - start)  # noqa: E731
    w = start - a1 * g(start)
    np.testing.assert_allclose(z[n0 + 1], start - a1 * g(w), rtol=1e-13)
    assert mu1 == pytest.approx(3 * lam0)


def test_nesterov_eg_first_step_and_eag_identity():
    p = _game()
    a = 0.25 / S
    np.testing.assert_allclose(run_deterministic("nesterov_eg", p, 1).z_last, Z0 - a * F(Z0 - a * F(Z0)),
                               rtol=1e-15)
    # with alpha = 1/(8L) the momentum form is EAG-C exactly (m_k = z_k + (z_0 - z_k)/(k+2))
    for prob in (p, make_problem("random_bilinear", seed=3, n=6), make_problem("rank_deficient_quadratic", seed=1, n=8)):
        alpha = 1.0 / (8.0 * prob.L)
        a_tr = run_deterministic("nesterov_eg", prob, 200, step=alpha)
        b_tr = run_deterministic("eag_c", prob, 200)
        np.testing.assert_allclose(a_tr.grad_norm_sq, b_tr.grad_norm_sq, rtol=1e-8, atol=0)


@pytest.mark.parametrize("method,calls", [("e_halpern", 1.0), ("rain", 2.0), ("nesterov_eg", 2.0)])
def test_solves_bilinear_game_and_counts_calls(method, calls):
    for prob in (_game(), make_problem("gaussian_bilinear", seed=0, n=5)):
        tr = run_deterministic(method, prob, 2000)
        assert tr.diverged_at is None
        assert tr.grad_norm_sq[-1] < 1e-4 * tr.grad_norm_sq[0]  # O(1/k^2): about 1e-5 at k = 2000
        assert np.linalg.norm(tr.z_last - prob.z_star) < 5e-2 * np.linalg.norm(prob.z0 - prob.z_star)
        assert tr.calls_per_iter == calls


def test_named_variants_exist():
    for name in ("e_halpern", "rain", "nesterov_eg"):
        method, kwargs = M.variant_kwargs(name, 2.0)
        assert method == name and kwargs == {}


def test_bad_inputs():
    p = _game()
    with pytest.raises(ValueError, match="e_halpern"):
        run_deterministic("e_halpern", p, 5, step=1.0 / (3.0 * S))
    with pytest.raises(ValueError, match="9 L\\^2 eta_1\\^2 < 1"):
        M.e_halpern_steps(0.4, 1.0, 3)
    with pytest.raises(ValueError, match="rain"):
        run_deterministic("rain", p, 5, step=1.5)
    with pytest.raises(ValueError, match="step must be a positive"):
        run_deterministic("nesterov_eg", p, 5, step="big")
    with pytest.raises(ValueError, match="anchor"):
        run_deterministic("nesterov_eg", p, 5, anchor="none")
    with pytest.raises(ValueError, match="gamma"):
        run_deterministic("e_halpern", p, 5, gamma=0.1)
    assert M.rain_schedule(0, 1.0) == []
    assert math.isfinite(M.e_halpern_steps(0.1, 1.0, 1)[0])
