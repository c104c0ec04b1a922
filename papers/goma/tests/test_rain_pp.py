"""RAIN++ (deterministic reconstruction ``rain_pp_recon``): the saddle envelope's gradient, one outer step by hand,
the identity "RAIN++ = RAIN on the saddle envelope", convergence on monotone games and on a negatively comonotone
game where the monotone methods diverge, oracle counts, bad inputs; and the comonotone test problem itself."""
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


def _matrix(problem):
    d = problem.dim
    q = problem.operator(np.zeros(d))
    return (problem.operator(np.eye(d)) - q).T, q


def _exact_envelope(problem, lam):
    """F_lam(x) = lam (x - J(x)), J(x) = (M + lam I)^{-1} (lam x - q) for F(z) = M z + q."""
    Mm, q = _matrix(problem)
    A = Mm + lam * np.eye(problem.dim)
    return lambda x: lam * (x - np.linalg.solve(A, lam * x - q))


def test_comonotone_problem_is_rho_comonotone_and_not_monotone():
    rng = np.random.default_rng(0)
    for rho in (-1.0 / 3.0, -0.49, 0.0):
        p = make_problem("comonotone_linear", rho=rho)
        assert p.L == 1.0 and np.all(p.z_star == 0) and np.all(p.operator(p.z_star) == 0)
        for _ in range(5):
            z, w = rng.standard_normal(2), rng.standard_normal(2)
            dF = p.operator(z) - p.operator(w)
            assert dF @ (z - w) == pytest.approx(rho * (dF @ dF), abs=1e-12)   # rho-comonotone, with equality
            assert np.linalg.norm(dF) == pytest.approx(np.linalg.norm(z - w), rel=1e-12)  # L = 1
    p = make_problem("comonotone_linear")
    assert p.operator(p.z0) @ p.z0 < 0  # not monotone
    with pytest.raises(ValueError, match="rho"):
        make_problem("comonotone_linear", rho=0.2)
    with pytest.raises(ValueError, match="rho"):
        make_problem("comonotone_linear", rho=-1.5)


def test_envelope_grad_one_step_by_hand_and_exact_limit():
    lam, b = 2.0 * S, 0.25 / S
    x, w = np.array([0.3, -0.8]), np.array([1.0, 0.5])
    G = lambda v: F(v) + lam * (v - x)  # noqa: E731
    vh = w - b * G(w)
    v1 = w - b * G(vh)
    g, v = M.envelope_grad(F, x, w, lam, 1, b)
    np.testing.assert_allclose(v, v1, rtol=1e-15)
    np.testing.assert_allclose(g, lam * (x - v1), rtol=1e-15)
    # many steps: the proximal point J(x) (zero of G), and F_lam(x) = lam (x - J(x)) = F(J(x))
    g, v = M.envelope_grad(F, x, w, lam, 200, b)
    np.testing.assert_allclose(g, _exact_envelope(_game(), lam)(x), rtol=1e-12)
    np.testing.assert_allclose(g, F(v), rtol=1e-12)


def F(z):
    return S * np.array([z[1], -z[0]])


def test_first_outer_step_by_hand():
    # horizon 4 with 2 inner steps: one outer step; rain_schedule(1, 2L): lambda_0 = mu_0 = 4L, a = 0.5/(2L + 4L).
    p = _game()
    lam, b, L_env = 2.0 * S, 0.25 / S, 2.0 * S
    (lmb, mu, a, n), = M.rain_schedule(1, L_env, 0.5)
    assert (lmb, mu, n) == (2 * L_env, 2 * L_env, 1) and a == pytest.approx(0.5 / (3 * L_env))
    _, w = M.envelope_grad(F, Z0, Z0, lam, 2, b)
    zh = Z0 - a * lam * (Z0 - w)                 # anchor c = z_0: the regulariser vanishes at z = z_0
    _, w = M.envelope_grad(F, zh, w, lam, 2, b)  # warm start at the last proximal estimate
    z1 = Z0 - a * (lam * (zh - w) + mu * (zh - Z0))
    zs = list(M.iterates("rain_pp_recon", F, Z0, 4, M.resolve_steps("rain_pp_recon", S)))
    assert len(zs) == 5
    for k in range(4):                          # the outer iterate is held during the inner steps
        np.testing.assert_array_equal(zs[k], Z0)
    np.testing.assert_allclose(zs[4], z1, rtol=1e-14)
    np.testing.assert_allclose(run_deterministic("rain_pp_recon", p, 4).z_last, z1, rtol=1e-14)


@pytest.mark.parametrize("name,params", [("gaussian_bilinear", {"n": 3}), ("comonotone_linear", {}),
                                         ("rank_deficient_quadratic", {"n": 4})])
def test_is_rain_on_the_saddle_envelope(name, params):
    # with (nearly) exact proximal points, every outer iterate of RAIN++ is RAIN's iterate on F_lam with L_env = 2L,
    # including the stage anchors z^(s) and their doubling weights lambda_s = 2^s lambda_0
    p = make_problem(name, seed=1, **params)
    inner = 150  # EG contracts the subproblem error by about 0.7 per step at step 0.25/L
    n_outer = 24
    prm = dict(M.resolve_steps("rain_pp_recon", p.L), inner=inner)
    zs = list(M.iterates("rain_pp_recon", p.operator, p.z0, 2 * inner * n_outer, prm))
    env = _exact_envelope(p, 2.0 * p.L)
    ref = list(M.iterates("rain", env, p.z0, n_outer, {"step": 0.5, "L": 2.0 * p.L}))
    assert len(M.rain_schedule(n_outer, 2.0 * p.L)) >= 3  # several stages, so the recursion is exercised
    for k in range(n_outer + 1):
        np.testing.assert_allclose(zs[2 * inner * k], ref[k], rtol=1e-9, atol=1e-12)


def test_leftover_inner_steps_keep_the_iterate_and_the_call_count():
    p = _game()
    for n in (1, 3, 7, 10):  # not multiples of 2 * inner = 4
        tr = run_deterministic("rain_pp_recon", p, n)
        assert tr.calls_per_iter == 2.0 and tr.oracle_calls[-1] == 2 * n
        full = run_deterministic("rain_pp_recon", p, 4 * (n // 4))
        np.testing.assert_array_equal(tr.z_last, full.z_last)


def test_solves_monotone_games():
    for prob in (_game(), make_problem("gaussian_bilinear", seed=0, n=5),
                 make_problem("rank_deficient_quadratic", seed=0, n=8)):
        tr = run_deterministic("rain_pp_recon", prob, 4000)
        assert tr.diverged_at is None and tr.calls_per_iter == 2.0
        assert tr.grad_norm_sq[-1] < 1e-3 * tr.grad_norm_sq[0]
    p = make_problem("gaussian_bilinear", seed=0, n=5)  # unique solution z* = 0
    tr = run_deterministic("rain_pp_recon", p, 4000)
    assert np.linalg.norm(tr.z_last - p.z_star) < 5e-2 * np.linalg.norm(p.z0 - p.z_star)


def test_converges_on_comonotone_game_where_monotone_methods_diverge():
    p = make_problem("comonotone_linear")  # rho = -1/3 >= -1/(2L)
    tr = run_deterministic("rain_pp_recon", p, 4000)
    assert tr.diverged_at is None
    assert tr.grad_norm_sq[-1] < 1e-3 * tr.grad_norm_sq[0]
    assert np.linalg.norm(tr.z_last) < 0.05 * np.linalg.norm(p.z0)
    for method in ("eg", "rain"):
        assert run_deterministic(method, p, 4000).diverged_at is not None
    # EG on the linear operator F = rho I + s J multiplies by 1 - a mu + a^2 mu^2 (mu = rho + i s): modulus > 1
    mu = complex(-1.0 / 3.0, math.sqrt(8.0) / 3.0)
    assert abs(1 - 0.5 * mu + 0.25 * mu * mu) > 1


def test_named_variant_and_bad_inputs():
    method, kwargs = M.variant_kwargs("rain_pp_recon", 2.0)
    assert method == "rain_pp_recon" and kwargs == {}
    prm = M.resolve_steps("rain_pp_recon", 2.0)
    assert prm == {"step": 0.5, "L": 2.0, "inner": M.RAIN_PP_INNER, "inner_step": M.RAIN_PP_INNER_STEP / 2.0}
    p = _game()
    with pytest.raises(ValueError, match="rain_pp_recon"):
        run_deterministic("rain_pp_recon", p, 5, step=1.5)
    with pytest.raises(ValueError, match="step must be positive"):
        run_deterministic("rain_pp_recon", p, 5, step=-0.1)
    with pytest.raises(ValueError, match="gamma"):
        run_deterministic("rain_pp_recon", p, 5, gamma=0.1)
    assert len(list(M.iterates("rain_pp_recon", F, Z0, 0, prm))) == 1
