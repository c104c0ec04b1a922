"""Robust mean, robust spectral initialisation and robust gradient descent: exact answers and bad inputs."""
import math

import numpy as np
import pytest

from papers.robust_sim.baselines import fit_huber, fit_itlm, mad, pairwise_filter_mean, random_unit, stein_init
from papers.robust_sim.data import make_sim_data
from papers.robust_sim.links import link_constants
from papers.robust_sim.method import (_robust_mean_mask, _threshold_filter_keep, clean_score_moments,
                                      clean_score_threshold, estimation_error, fit_robust_sim, robust_mean,
                                      robust_spectral_init, sin_angle, trimmed_loss)
from shared.results import NonFiniteError


def _clean_cube(n, d, rng):
    """Rows with entries +-1/sqrt(d): every row (and every mean of rows) has norm <= 1."""
    return rng.choice([-1.0, 1.0], size=(n, d)) / math.sqrt(d)


def test_robust_mean_eps_zero_is_exact_mean():
    G = np.random.default_rng(0).standard_normal((37, 4))
    assert np.array_equal(robust_mean(G, 0.0), G.mean(axis=0))


def test_robust_mean_removes_far_outliers_and_respects_budget():
    rng = np.random.default_rng(1)
    n, d = 200, 5
    G = _clean_cube(n, d, rng)
    G[:20] = 50.0 * np.eye(d)[0]  # 10 % outliers at distance 50 along e1
    keep = _robust_mean_mask(G, 0.1)
    assert (~keep).sum() == math.ceil(2 * 0.1 * n)  # exactly the budget is removed
    assert not keep[:20].any()  # every outlier is removed
    mu = robust_mean(G, 0.1)
    assert np.linalg.norm(mu) <= 1.0 + 1e-12  # a mean of clean rows lies in their convex hull
    assert np.linalg.norm(G.mean(axis=0)) > 4.0  # the plain mean is dragged by 20 * 50 / 200 = 5


def test_robust_mean_ties_drop_lower_index_first():
    # all rows equal except two identical outliers: scores tie, the lower index goes first
    G = np.zeros((20, 2))
    G[[5, 9]] = [3.0, 0.0]
    keep = _robust_mean_mask(G, 0.025)  # budget ceil(2 * 0.025 * 20) = 1
    assert list(np.flatnonzero(~keep)) == [5]


def test_robust_mean_bad_inputs():
    with pytest.raises(ValueError, match="G must be a 2-D"):
        robust_mean(np.zeros(5), 0.1)
    with pytest.raises(ValueError, match="G contains NaN"):
        robust_mean(np.array([[0.0, np.nan], [1.0, 2.0]]), 0.1)
    with pytest.raises(ValueError, match="eps"):
        robust_mean(np.zeros((10, 2)), 0.5)
    with pytest.raises(ValueError, match="too few for the removal budget"):
        robust_mean(np.zeros((10, 2)), 0.49)  # ceil(9.8) = 10 rows to remove out of 10


def _axis_data():
    """x_i = sqrt(2) e_j (j cycling), y = 1 except y = 2 on e1 rows: M = diag with top direction e1;
    then 5 % outliers along e2 with y = 10."""
    d, n = 4, 400
    X = np.zeros((n, d))
    X[np.arange(n), np.arange(n) % d] = math.sqrt(2.0)
    y = np.where(np.arange(n) % d == 0, 2.0, 1.0)
    X_out, y_out = X.copy(), y.copy()
    out = np.arange(n) % d == 1
    idx = np.flatnonzero(out)[:20]
    y_out[idx] = 10.0
    return X, y, X_out, y_out


def test_spectral_init_known_answers():
    X, y, X_out, y_out = _axis_data()
    e1, e2 = np.eye(4)[0], np.eye(4)[1]
    assert abs(robust_spectral_init(X, y, 0.0) @ e1) == pytest.approx(1.0, abs=1e-12)
    assert abs(robust_spectral_init(X_out, y_out, 0.0) @ e2) == pytest.approx(1.0, abs=1e-12)  # outliers win
    # budget ceil(1.2 * 0.05 * 400) = 24 >= 20 outliers: all removed, e1 is back on top
    assert abs(robust_spectral_init(X_out, y_out, 0.05, init_filter="budget") @ e1) == pytest.approx(1.0, abs=1e-12)
    v = robust_spectral_init(X_out, y_out, 0.05, init_filter="budget")
    assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-14)


def test_threshold_filter_removes_exactly_the_rows_above_threshold():
    X, y, X_out, y_out = _axis_data()
    U = y_out[:, None] * X_out
    # clean scores along e1 are 8 (y = 2, x = sqrt 2 e1) and along e2 2; outliers along e2 score 200
    keep = _threshold_filter_keep(U, 50.0)
    assert list(np.flatnonzero(~keep)) == list(np.flatnonzero(y_out == 10.0))  # only the outliers go
    assert _threshold_filter_keep(y[:, None] * X, 50.0).all()  # clean data: nothing above t, nothing removed
    Uk = U[keep]
    top = np.linalg.eigh(Uk.T @ Uk)[1][:, -1]
    assert abs(top[0]) == pytest.approx(1.0, abs=1e-12)


def test_clean_score_moments_match_closed_forms_and_monte_carlo():
    sigma, nu = 0.3, 6.0
    c = link_constants("gelu")
    mean, sd = clean_score_moments("gelu", sigma, nu, n_theta=3)  # theta = 0, pi/4, pi/2
    # E tau = E y^2 + ESC cos^2 (second-moment identity)
    assert mean[0] == pytest.approx(c["E_f_sq"] + sigma ** 2 + c["esc"], rel=1e-10)
    assert mean[2] == pytest.approx(c["E_f_sq"] + sigma ** 2, rel=1e-10)
    assert mean[1] == pytest.approx(c["E_f_sq"] + sigma ** 2 + c["esc"] / 2, rel=1e-10)
    D = make_sim_data(400_000, 2, link="gelu", sigma=sigma, noise_df=nu, seed=3)
    w = np.array([-D.beta_star[1], D.beta_star[0]])
    m = (D.beta_star + w) / math.sqrt(2.0)
    tau = np.square(D.y * (D.X @ m))
    assert tau.mean() == pytest.approx(mean[1], rel=0.02)
    assert tau.std() == pytest.approx(sd[1], rel=0.1)
    # t = max_theta (mean + sd / sqrt(eps)) is decreasing in eps, infinite at eps = 0
    ts = [clean_score_threshold("gelu", sigma, e, nu) for e in (0.01, 0.1, 0.3)]
    assert ts[0] > ts[1] > ts[2] > mean.max()
    assert clean_score_threshold("gelu", sigma, 0.0, nu) == math.inf


def test_stability_filter_keeps_the_clean_spike_and_removes_the_spike_adversary():
    D = make_sim_data(20000, 10, link="gelu", sigma=0.1, seed=1)
    plain = robust_spectral_init(D.X, D.y, 0.0, link="gelu")
    for eps in (0.05, 0.2):  # clean data: the filter must not destroy the signal (the fixed budget did)
        w = robust_spectral_init(D.X, D.y, eps, link="gelu", sigma=0.1)
        assert sin_angle(w, D.beta_star) <= sin_angle(plain, D.beta_star) + 0.02
    A = make_sim_data(20000, 10, link="gelu", sigma=0.1, eps=0.1, adversary="A1", seed=1)
    assert sin_angle(robust_spectral_init(A.X, A.y, 0.0, link="gelu"), A.beta_star) > 0.99
    assert sin_angle(robust_spectral_init(A.X, A.y, 0.1, link="gelu", sigma=0.1), A.beta_star) < 0.1


def test_filter_aware_adversary_sits_just_below_the_threshold():
    eps, sigma = 0.1, 0.1
    D = make_sim_data(5000, 6, link="gelu", sigma=sigma, eps=eps, adversary="A5", seed=4)
    t = clean_score_threshold("gelu", sigma, eps)
    U = D.y[D.corrupted, None] * D.X[D.corrupted]
    norms2 = np.square(np.linalg.norm(U, axis=1))  # = the score along their own direction m
    assert np.allclose(norms2, 0.999 * t)
    keep = _threshold_filter_keep(D.y[:, None] * D.X, t)
    assert keep[D.corrupted].all()  # none of them is ever above t along any unit direction


def test_spectral_init_filter_bad_inputs():
    X, y = np.ones((10, 3)), np.ones(10)
    with pytest.raises(ValueError, match="init_filter"):
        robust_spectral_init(X, y, 0.1, init_filter="magic")
    with pytest.raises(ValueError, match="needs the link and sigma"):
        robust_spectral_init(X, y, 0.1, link="gelu")
    with pytest.raises(ValueError, match="noise_df must exceed 4"):
        clean_score_moments("gelu", 0.1, 3.0)
    with pytest.raises(ValueError, match="sigma"):
        clean_score_moments("gelu", -0.1)


def test_spectral_init_sign_by_trimmed_loss():
    D = make_sim_data(3000, 5, link="gelu", sigma=0.05, seed=7)
    w = robust_spectral_init(D.X, D.y, 0.0, link="gelu")
    assert w @ D.beta_star > 0.9  # right sign, ESC > 0 makes the top eigenvector informative
    assert trimmed_loss(D.X, D.y, w, "gelu", 0.0) < trimmed_loss(D.X, D.y, -w, "gelu", 0.0)


def test_spectral_init_bad_inputs():
    X, y = np.ones((10, 3)), np.ones(10)
    for bad_X, bad_y, match in [(np.ones(10), y, "X must be a 2-D"), (X, np.ones((10, 1)), "y must be a 1-D"),
                                (X, np.ones(9), "length"), (np.ones((1, 3)), np.ones(1), "n >= 2"),
                                (np.ones((10, 1)), y, "d >= 2"), (X, np.full(10, np.inf), "y contains")]:
        with pytest.raises(ValueError, match=match):
            robust_spectral_init(bad_X, bad_y, 0.1)
    with pytest.raises(ValueError, match="truncate_quantile"):
        robust_spectral_init(X, y, 0.1, truncate_quantile=0.0)
    with pytest.raises(ValueError, match="truncate_quantile"):
        robust_spectral_init(X, y, 0.1, truncate_quantile=1.5)
    with pytest.raises(ValueError, match="link"):
        robust_spectral_init(X, y, 0.1, link="relu")


def test_gd_fixed_point_and_noiseless_recovery():
    D = make_sim_data(2000, 5, link="gelu", sigma=0.0, seed=11)
    fit = fit_robust_sim(D.X, D.y, "gelu", 0.0, n_iter=5, init=D.beta_star)
    assert np.array_equal(fit.beta, D.beta_star)  # zero residuals: zero gradient, beta* is a fixed point
    assert np.all(fit.grad_norms == 0.0)
    fit = fit_robust_sim(D.X, D.y, "gelu", 0.0, n_iter=150)
    assert estimation_error(fit.beta, D.beta_star) < 1e-6  # noiseless: the minimiser is beta* itself
    assert fit.grad_norms.shape == (150,)


def test_robust_gd_beats_plain_gd_under_spike():
    D = make_sim_data(3000, 8, link="gelu", sigma=0.1, eps=0.1, adversary="A1", seed=5)
    rob = fit_robust_sim(D.X, D.y, "gelu", 0.1, n_iter=60, sigma=0.1)
    plain = fit_robust_sim(D.X, D.y, "gelu", 0.0, n_iter=60)
    assert estimation_error(rob.beta, D.beta_star) < 0.15 < estimation_error(plain.beta, D.beta_star)


def test_gd_nan_names_step():
    D = make_sim_data(200, 3, link="phase", sigma=0.1, seed=0)
    with pytest.raises(NonFiniteError, match="step"), np.errstate(all="ignore"):
        fit_robust_sim(D.X, D.y, "phase", 0.0, eta=1e6, n_iter=50, init=np.ones(3))


def test_fit_bad_inputs():
    D = make_sim_data(100, 3, link="gelu", sigma=0.1, seed=0)
    cases = [(dict(eta=0.0), "eta"), (dict(eta=-1.0), "eta"), (dict(n_iter=-1), "n_iter"),
             (dict(init=np.ones(4)), "init must have shape"), (dict(init=np.zeros(3)), "non-zero norm")]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            fit_robust_sim(D.X, D.y, "gelu", 0.1, **kwargs)
    with pytest.raises(ValueError, match="eps"):
        fit_robust_sim(D.X, D.y, "gelu", 0.6)
    with pytest.raises(ValueError, match="link"):
        fit_robust_sim(D.X, D.y, "relu", 0.1)
    with pytest.raises(ValueError, match="X contains NaN"):
        fit_robust_sim(np.full((10, 3), np.nan), np.ones(10), "gelu", 0.1)


def test_errors_and_angles():
    b = np.array([1.0, 0.0])
    assert estimation_error(-b, b) == pytest.approx(2.0)
    assert estimation_error(-b, b, even=True) == 0.0
    assert sin_angle(np.array([3.0, 3.0]), b) == pytest.approx(math.sqrt(0.5))


def test_baselines_small_answers():
    assert mad(np.array([1.0, 2.0, 3.0, 4.0, 100.0])) == 1.0
    D = make_sim_data(2000, 5, link="gelu", sigma=0.0, seed=2)
    assert estimation_error(fit_huber(D.X, D.y, "gelu"), D.beta_star) < 1e-5  # noiseless: exact fit
    assert estimation_error(fit_itlm(D.X, D.y, "gelu", 0.0, n_rounds=5), D.beta_star) < 1e-4
    w0 = stein_init(D.X, D.y, "gelu", 0.0)  # E[y x] / E f' = beta* up to sampling error
    assert estimation_error(w0, D.beta_star) < 0.15
    with pytest.raises(ValueError, match="E f'"):
        stein_init(D.X, D.y ** 2, "phase", 0.0)
    u = random_unit(6, np.random.default_rng(0))
    assert np.linalg.norm(u) == pytest.approx(1.0)


def test_pairwise_filter_mean_drops_the_far_rows():
    rng = np.random.default_rng(1)
    G = _clean_cube(100, 4, rng)
    G[:5] = 40.0  # 5 far rows; budget ceil(2 * 0.05 * 100) = 10 removes them (and 5 clean rows)
    mu = pairwise_filter_mean(G, 0.05)
    assert np.linalg.norm(mu) <= 1.0 + 1e-12
    assert np.array_equal(pairwise_filter_mean(G, 0.0), G.mean(axis=0))
    with pytest.raises(ValueError, match="too few"):
        pairwise_filter_mean(G[:4], 0.49)


def test_least_cpu_fits_batches_alternates_and_keeps_outputs():
    from papers.robust_sim.experiments import _least_cpu_fits

    ticks = {"t": 0.0}
    order = []

    def clock():
        return ticks["t"]

    def make(name, cost, value):
        def fn():
            order.append(name)
            ticks["t"] += cost
            return value
        return fn

    res = _least_cpu_fits({"a": make("a", 1.0, "A"), "b": make("b", 0.2, "B")}, 2, min_seconds=0.5,
                          cpu_clock=clock, wall_clock=clock)
    # warm-up fixes number: ceil(0.5 / 1.0) = 1 and ceil(0.5 / 0.2) = 3, confirmed for b by an untimed batch of
    # 3; then two rounds in turn
    assert order == ["a", "b"] + ["b"] * 3 + (["a"] + ["b"] * 3) * 2
    assert res["a"] == {"cpu_s": 1.0, "wall_s": 1.0, "number": 1, "out": "A"}
    assert res["b"]["number"] == 3 and res["b"]["out"] == "B"
    assert res["b"]["cpu_s"] == pytest.approx(0.2) and res["b"]["wall_s"] == pytest.approx(0.2)


def test_size_exponents_recover_known_powers():
    from papers.robust_sim.experiments import size_exponents
    pts = [(1000, 10), (1000, 40), (4000, 10), (4000, 40)]
    # t = 3 n d: both exponents 1, slope in n d 1
    out = size_exponents(pts, [3e-6 * n * d for n, d in pts])
    assert out["alpha_n"] == pytest.approx(1.0) and out["alpha_d"] == pytest.approx(1.0)
    assert out["alpha_nd"] == pytest.approx(1.0) and out["alpha_max"] == pytest.approx(1.0)
    # t = n^2 d (the pairwise control): alpha_n = 2, alpha_d = 1, max 2; on this balanced design the single
    # slope in n d is (2 + 1) / 2 = 1.5, which is why the claim reads the two exponents
    out = size_exponents(pts, [1e-9 * n * n * d for n, d in pts])
    assert out["alpha_n"] == pytest.approx(2.0) and out["alpha_d"] == pytest.approx(1.0)
    assert out["alpha_max"] == pytest.approx(2.0) and out["alpha_nd"] == pytest.approx(1.5)
    with pytest.raises(ValueError, match="two distinct"):
        size_exponents([(1000, 10), (4000, 10), (8000, 10)], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="positive"):
        size_exponents(pts, [1.0, 0.0, 1.0, 1.0])


def test_time_design_warms_up_and_alternates():
    from papers.robust_sim.experiments import _time_design
    log, clock = [], iter(range(1000))
    pts = [(1, 2), (3, 4)]

    def make(n, d):
        return lambda: log.append((n, d))

    t = _time_design(pts, make, 2, cpu_clock=lambda: float(next(clock)))
    # one warm-up each, then the repeats alternate over the points
    assert log == [(1, 2), (3, 4), (1, 2), (3, 4), (1, 2), (3, 4)]
    assert t.shape == (2, 2) and np.all(t == 1.0)
