"""Methods: a closed-form answer, the family identities, the momentum form, oracle counting, published
bounds, divergence handling and bad inputs."""
import numpy as np
import pytest

from papers.goma import methods as M
from papers.goma.methods import run_deterministic, run_stochastic
from papers.goma.problems import make_problem

K = 150


@pytest.fixture(scope="module")
def problems():
    return [make_problem("random_bilinear", seed=2, n=6), make_problem("rank_deficient_quadratic", seed=1, n=8),
            make_problem("logspectrum_bilinear", n=10)]


def _same(a, b, rtol):
    np.testing.assert_allclose(a.grad_norm_sq, b.grad_norm_sq, rtol=rtol, atol=0)
    np.testing.assert_allclose(a.z_last, b.z_last, rtol=rtol, atol=rtol * np.abs(b.z_last).max())
    np.testing.assert_array_equal(a.oracle_calls, b.oracle_calls)


def test_eg_scalar_closed_form():
    # f = sigma x y: EG with step a multiplies ||z||^2 by (1 - a^2 s^2 + a^4 s^4) each iteration.
    sigma, a = 0.7, 0.9
    p = make_problem("bilinear", A=[[sigma]], z0=[2.0, -1.0])
    tr = run_deterministic("eg", p, 40, step=a)
    q = 1 - a ** 2 * sigma ** 2 + a ** 4 * sigma ** 4
    expected = sigma ** 2 * 5.0 * q ** np.arange(41)
    np.testing.assert_allclose(tr.grad_norm_sq, expected, rtol=1e-12)


def test_og_scalar_first_steps():
    # Hand-computed OG on F(z) = s (y, -x): g_{-1} = F(z0); z1 = z0 - a F(z0 - a g_{-1}).
    s, a = 0.7, 0.5
    p = make_problem("bilinear", A=[[s]], z0=[2.0, -1.0])
    F = lambda z: s * np.array([z[1], -z[0]])  # noqa: E731
    z0 = np.array([2.0, -1.0])
    z1 = z0 - a * F(z0 - a * F(z0))
    tr = run_deterministic("og", p, 1, step=a)
    np.testing.assert_allclose(tr.z_last, z1, rtol=1e-15)


@pytest.mark.parametrize("case", ["og", "anchored_popov", "eag_c", "feg", "eg"])
def test_family_identities(problems, case):
    for p in problems:
        a = 0.37 / p.L
        if case == "og":
            goma = run_deterministic("goma", p, K, gamma=a, eta=a, anchor="none")
            base = run_deterministic("og", p, K, step=a)
        elif case == "anchored_popov":
            goma = run_deterministic("goma", p, K, gamma=a, eta=a)
            base = run_deterministic("anchored_popov", p, K, step=a)
        elif case == "eag_c":
            alpha = 1 / (8 * p.L)
            goma = run_deterministic("goma", p, K, gamma=alpha, eta=alpha, extrapolate_with="current")
            base = run_deterministic("eag_c", p, K)
        elif case == "feg":
            goma = run_deterministic("goma", p, K, gamma=1 / p.L, eta=1 / p.L, extrapolate_with="current",
                                     anchor="k+1", damp_extrapolation=True)
            base = run_deterministic("feg", p, K)
        else:
            goma = run_deterministic("goma", p, K, gamma=a, eta=a, extrapolate_with="current", anchor="none")
            base = run_deterministic("eg", p, K, step=a)
        _same(goma, base, 1e-12)


def test_momentum_form_equals_anchored_form(problems):
    for p in problems:
        gamma, eta = 0.5 / p.L, 0.4 / p.L
        anchored = list(M.iterates("goma", p.operator, p.z0, K, M.resolve_steps("goma", p.L)))
        momentum = list(M.goma_momentum_iterates(p.operator, p.z0, K, gamma, eta))
        scale = max(np.abs(z).max() for z in anchored)
        for za, zm in zip(anchored, momentum):
            assert np.abs(za - zm).max() <= 1e-13 * scale


def test_default_steps_and_first_anchor(problems):
    p = problems[0]
    tr = run_deterministic("goma", p, 1)
    assert tr.params["gamma"] == 0.5 / p.L and tr.params["eta"] == 0.4 / p.L
    # k = 0: the anchor term vanishes, so z1 = z0 - eta F(z0 - gamma F(z0)).
    F, z0 = p.operator, p.z0
    np.testing.assert_allclose(tr.z_last, z0 - 0.4 / p.L * F(z0 - 0.5 / p.L * F(z0)), rtol=1e-15)
    assert run_deterministic("eag_c", p, 0).params["step"] == 1 / (8 * p.L)
    assert run_deterministic("feg", p, 0).params["step"] == 1 / p.L


def test_oracle_counting(problems):
    p = problems[0]
    for method, per, initial in [("goma", 1, 1), ("anchored_popov", 1, 1), ("og", 1, 1), ("eg", 2, 0),
                                 ("eag_c", 2, 0), ("feg", 2, 0)]:
        tr = run_deterministic(method, p, 20)
        np.testing.assert_array_equal(tr.oracle_calls, initial + per * np.arange(21))
        assert tr.calls_per_iter == per
    tr = run_deterministic("goma", p, 20, extrapolate_with="current")
    assert tr.calls_per_iter == 2 and tr.oracle_calls[0] == 0


def test_published_bounds(problems):
    # FEG: h_k <= 4 L^2 ||z0 - z*||^2 / k^2 (Lee & Kim 2021); EAG-C: h_k <= 4 ||z0 - z*||^2 / (alpha^2 (k+1)^2).
    for p in problems:
        d0 = np.sum((p.z0 - p.z_star) ** 2)
        k = np.arange(K + 1)
        feg = run_deterministic("feg", p, K).grad_norm_sq
        assert np.all(feg[1:] <= 4 * p.L ** 2 * d0 / k[1:] ** 2 * (1 + 1e-9))
        eag = run_deterministic("eag_c", p, K).grad_norm_sq
        assert np.all(eag <= 4 * d0 * (8 * p.L) ** 2 / (k + 1) ** 2 * (1 + 1e-9))


def test_divergence_stops_and_fills_inf():
    p = make_problem("bilinear", A=[[0.7]], z0=[2.0, -1.0])
    tr = run_deterministic("eg", p, 50, step=5.0)  # factor 1 - 12.25 + 150.06 per iteration
    assert tr.diverged_at is not None and 5 <= tr.diverged_at < 50
    assert np.all(np.isinf(tr.grad_norm_sq[tr.diverged_at:]))
    assert np.all(np.isfinite(tr.grad_norm_sq[:tr.diverged_at]))
    assert run_deterministic("eg", p, 50, step=0.5).diverged_at is None


def test_stochastic_zero_noise_matches_deterministic_loop():
    p = make_problem("stochastic_logspectrum", n=4, s_mult=0.0, sigma_a=0.0)
    tr = run_stochastic("sog", p, 30, n_runs=3, seed=0)
    step = lambda k: 0.5 / (p.L * np.sqrt(k + 1))  # noqa: E731
    zs = list(M._og_iterates(p.operator, p.z0, 30, step))
    h = np.array([p.operator(z) @ p.operator(z) for z in zs])
    np.testing.assert_allclose(tr.mean_grad_norm_sq, h, rtol=1e-13)
    np.testing.assert_allclose(tr.grad_norm_sq_runs, np.tile(h, (3, 1)), rtol=1e-13)


def test_stochastic_counts_and_determinism():
    p = make_problem("stochastic_logspectrum", n=4)
    per = {"s_goma": (1, 1), "s_agd": (1, 0), "sgda": (1, 0), "seg": (2, 0), "sog": (1, 1), "dseg": (2, 0)}
    for method, (calls, initial) in per.items():
        a = run_stochastic(method, p, 25, n_runs=3, seed=11)
        b = run_stochastic(method, p, 25, n_runs=3, seed=np.random.default_rng(11))
        np.testing.assert_array_equal(a.mean_grad_norm_sq, b.mean_grad_norm_sq)
        np.testing.assert_array_equal(a.oracle_calls, initial + calls * np.arange(26))
        assert a.mean_dist_sq[0] == pytest.approx(np.sum(p.z0 ** 2))
        assert a.grad_norm_sq_runs.shape == (3, 26)


@pytest.mark.parametrize("kwargs, word", [
    (dict(method="nope"), "method"),
    (dict(n_iter=-1), "n_iter"),
    (dict(n_iter=2.5), "n_iter"),
    (dict(n_iter=True), "n_iter"),
    (dict(gamma=0.0), "gamma"),
    (dict(gamma=-1.0), "gamma"),
    (dict(eta=float("nan")), "eta"),
    (dict(gamma=float("inf")), "gamma"),
    (dict(gamma=0.1, eta=0.2), "eta must be <= gamma"),
    (dict(anchor="k+3"), "anchor"),
    (dict(extrapolate_with="future"), "extrapolate_with"),
    (dict(damp_extrapolation="yes"), "damp_extrapolation"),
    (dict(step=0.1), "step"),
    (dict(method="og", anchor="none"), "anchor"),
    (dict(method="eg", damp_extrapolation=True), "damp_extrapolation"),
    (dict(method="feg", extrapolate_with="current"), "extrapolate_with"),
    (dict(method="og", gamma=0.1), "gamma"),
    (dict(method="eg", step=-0.1), "step"),
    (dict(method="eag_c", step=float("nan")), "step"),
])
def test_deterministic_bad_inputs(problems, kwargs, word):
    args = dict(method="goma", n_iter=5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=word):
        run_deterministic(args.pop("method"), problems[0], args.pop("n_iter"), **args)


def test_eta_gt_gamma_allowed_when_asked(problems):
    tr = run_deterministic("goma", problems[0], 5, gamma=0.1, eta=0.2, allow_eta_gt_gamma=True)
    assert tr.params["eta"] == 0.2


def test_stochastic_bad_inputs(problems):
    s1 = make_problem("stochastic_logspectrum", n=3)
    with pytest.raises(ValueError, match="n_runs"):
        run_stochastic("s_goma", s1, 5, n_runs=0, seed=0)
    with pytest.raises(ValueError, match="method"):
        run_stochastic("goma", s1, 5, n_runs=2, seed=0)
    with pytest.raises(ValueError, match="n_iter"):
        run_stochastic("sgda", s1, -3, n_runs=2, seed=0)
    with pytest.raises(ValueError, match="eta0"):
        run_stochastic("sgda", s1, 3, n_runs=2, seed=0, eta0=0.0)
    with pytest.raises(ValueError, match="sample is None"):
        run_stochastic("s_goma", problems[0], 5, n_runs=2, seed=0)


# ------------------------------------------------------------------ the paper's schedules (spec addendum)
from papers.goma import methods as M  # noqa: E402
from papers.goma.problems import make_problem as _mp, with_state_dependent_noise  # noqa: E402


def test_variants_respect_the_theorems_step_ranges():
    assert M.THM1_STEP < M.THM1_STEP_BOUND == pytest.approx(1 / (2 * np.sqrt(3)))
    assert M.THM2_GAMMA < M.THM2_GAMMA_BOUND == pytest.approx(np.sqrt(5 / 26) / 3)
    assert M.THM2_ETA <= M.THM2_GAMMA
    method, kw = M.variant_kwargs("goma_t1", 2.0)
    assert method == "goma" and kw == {"anchor": "2/(k+6)", "gamma": 0.125, "eta": 0.125}
    with pytest.raises(ValueError, match="variant"):
        M.variant_kwargs("nope", 1.0)


def test_theorem1_anchor_by_hand():
    """Two steps of Theorem 1's schedule written out: y_k = beta_k z0 + (1 - beta_k) z_k, beta_k = 2/(k+6)."""
    p = _mp("bilinear", A=[[0.7]], z0=[2.0, -1.0])
    F, z0, a = p.operator, p.z0, M.THM1_STEP / p.L
    g = F(z0)
    z = z0
    for k in range(2):
        b = 2.0 / (k + 6)
        y = b * z0 + (1 - b) * z
        g = F(y - a * g)
        z = y - a * g
    tr = M.run_variant("goma_t1", p, 2)
    np.testing.assert_allclose(tr.z_last, z, rtol=1e-13)


def test_theorem4_noise_free_is_the_family_with_gamma_zero():
    """With sigma = 0, kappa = 1 the oracle is exact and Theorem 4's method is GOMA's loop with gamma_k = 0."""
    p = with_state_dependent_noise(_mp("gaussian_bilinear", seed=3), sigma=0.0, kappa=1.0)
    tr = M.run_theorem4(p, 40, n_runs=2, seed=0, kappa=1.0)
    eta = lambda k: 1.0 / (k + 2) ** 0.75  # noqa: E731
    zs = list(M._goma_iterates(p.operator, p.z0, 40, lambda k: 0.0, eta, "k+2", False, "past"))
    h = [float(p.operator(z) @ p.operator(z)) for z in zs]
    np.testing.assert_allclose(tr.mean_grad_norm_sq, h, rtol=1e-12)
    assert tr.oracle_calls[-1] == 40


def test_state_dependent_noise_moments():
    """E G = F(z) and E||G||^2 = sigma^2 + kappa ||F(z)||^2; a minibatch of b divides the variance by b."""
    base = _mp("gaussian_bilinear", seed=1)
    p = with_state_dependent_noise(base, sigma=2.0, kappa=5.0)
    z = np.tile(base.z0 * 3.0, (200000, 1))
    Fz = base.operator(base.z0 * 3.0)
    rng = np.random.default_rng(0)
    G = p.sample(z, rng)
    np.testing.assert_allclose(G.mean(axis=0), Fz, atol=0.03)
    second = np.mean(np.sum(G * G, axis=1))
    assert second == pytest.approx(4.0 + 5.0 * Fz @ Fz, rel=0.01)
    assert p.noise_variance(base.z0 * 3.0) == pytest.approx(4.0 + 4.0 * Fz @ Fz)
    G8 = p.sample(z, rng, batch=8)
    var8 = np.mean(np.sum((G8 - Fz) ** 2, axis=1))
    assert var8 == pytest.approx((4.0 + 4.0 * Fz @ Fz) / 8, rel=0.01)


def test_minibatch_counts_samples_and_bad_inputs():
    p = with_state_dependent_noise(_mp("gaussian_bilinear"), sigma=1.0, kappa=2.0)
    tr = M.run_theorem4(p, 10, n_runs=2, seed=0, kappa=2.0, minibatch="linear")
    assert tr.oracle_calls[-1] == sum(range(1, 11))
    with pytest.raises(ValueError, match="kappa"):
        M.run_theorem4(p, 10, n_runs=2, seed=0, kappa=0.5)
    with pytest.raises(ValueError, match="minibatch"):
        M.run_theorem4(p, 10, n_runs=2, seed=0, kappa=2.0, minibatch="square")
    with pytest.raises(ValueError, match="kappa"):
        with_state_dependent_noise(_mp("gaussian_bilinear"), sigma=1.0, kappa=0.9)
    with pytest.raises(ValueError, match="sigma"):
        with_state_dependent_noise(_mp("gaussian_bilinear"), sigma=-1.0, kappa=1.0)
    with pytest.raises(ValueError, match="batch"):
        p.sample(p.z0, np.random.default_rng(0), batch=0)


def test_theorem4_bound_formula():
    assert M.theorem4_bound(2.0, 3.0, 0.5, 6.0) == pytest.approx(1570 * 4 * 3 * 0.5 + 8 * 36 / 3)


def test_gaussian_bilinear_definition():
    p = _mp("gaussian_bilinear", seed=0)
    assert p.dim == 10 and p.L == 1.0
    K = p.operator(np.eye(10)).T
    assert np.linalg.norm(K, 2) == pytest.approx(1.0)
    np.testing.assert_allclose(K + K.T, 0.0, atol=1e-15)
    assert np.linalg.norm(p.z0) == pytest.approx(1.0)
