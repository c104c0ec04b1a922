"""Section 4 quadratic f(x, xi) = x^2/2 + xi x: schedules, a scalar reference loop, shared indices, bad inputs;
and the replicate helpers (blocks of datasets, paired log ratios) and the light-tailed data option."""
import math

import numpy as np
import pytest

from shared.oracles import uniform_indices

from papers.clipped_sgd.experiments import block_slices, paired_log_ratios
from papers.clipped_sgd.problems import draw_noise, make_problem
from papers.clipped_sgd.quadratic import clip_schedule, quadratic_runs, step_schedule


def test_schedules_known_values():
    np.testing.assert_allclose(step_schedule(4, 2.0), 0.25 * np.array([1, 2, 3, 4]) ** -0.5)
    np.testing.assert_allclose(step_schedule(3, 1.0, eta=1.0), [1.0, 0.5, 1 / 3])
    np.testing.assert_allclose(clip_schedule(3, 1.5), np.array([1, 2, 3]) ** (1 / 1.5))
    with pytest.raises(ValueError, match="alpha"):
        step_schedule(3, 0.0)
    with pytest.raises(ValueError, match="eta"):
        step_schedule(3, 1.5, eta=-1.0)


def _reference(xi, idx, alpha, eta, x0, clip):
    """Scalar loop of the spec's recursion for one run."""
    x, path = x0, []
    for t, i in enumerate(idx, start=1):
        g = x + xi[i]
        if clip:
            lam = t ** (1 / alpha)
            g = g * min(1.0, lam / abs(g)) if g != 0 else 0.0
        x = x - eta * t ** (-1 / alpha) * g
        path.append(x)
    return x, path


def test_runs_match_a_scalar_reference_loop():
    rng = np.random.default_rng(0)
    data = [10 * rng.standard_t(1.1, 50), 10 * rng.standard_t(1.1, 7)]
    seeds = [np.random.SeedSequence(1), np.random.SeedSequence(2)]
    T, R, alpha, x0 = 40, 3, 1.1, 10.0
    out = quadratic_runs(data, seeds, T, alpha, n_runs=R, etas=(0.25, 0.01), x0=x0)
    for d, (xi, ss) in enumerate(zip(data, seeds)):
        idx = uniform_indices(np.random.default_rng(ss), xi.size, (T, R))
        x_s = -xi.mean()
        assert out.x_erm[d] == pytest.approx(x_s)
        for r in range(R):
            for j, eta in enumerate((0.25, 0.01)):
                x, path = _reference(xi, idx[:, r], alpha, eta, x0, clip=False)
                assert out.opt[f"sgd_eta{j}"][d, r] == pytest.approx((x - x_s) ** 2, rel=1e-10)
                assert out.gen[f"sgd_eta{j}"][d, r] == pytest.approx(x ** 2, rel=1e-10)
                avg = np.mean(path[T // 2:])
                assert out.opt[f"avg_eta{j}"][d, r] == pytest.approx((avg - x_s) ** 2, rel=1e-10)
            x, _ = _reference(xi, idx[:, r], alpha, 0.25, x0, clip=True)
            assert out.opt["clip"][d, r] == pytest.approx((x - x_s) ** 2, rel=1e-10)


def test_clipping_that_never_activates_equals_sgd():
    xi = np.array([1e-3, -2e-3, 5e-4])       # |x + xi| < 1 <= lambda_t for every t from x0 = 0
    out = quadratic_runs([xi], [3], 30, 1.5, n_runs=4, x0=0.0)
    np.testing.assert_allclose(out.opt["clip"], out.opt["sgd_eta0"], rtol=0, atol=0)


def test_one_step_with_unit_step_lands_on_minus_xi():
    # gamma_1 = 1 (eta = 1): x_1 = x_0 - (x_0 + xi_i) = -xi_i
    xi = np.array([3.0, -1.0])
    out = quadratic_runs([xi], [5], 2, 1.0, n_runs=6, etas=(1.0,), x0=7.0)
    idx = uniform_indices(np.random.default_rng(5), 2, (2, 6))
    x1 = -xi[idx[0]]
    x2 = x1 - 0.5 * (x1 + xi[idx[1]])
    np.testing.assert_allclose(out.gen["sgd_eta0"][0], x2 ** 2)


@pytest.mark.parametrize("kwargs, match", [
    (dict(datasets=[np.ones(3)], index_seeds=[0], n_steps=1, alpha=1.5, n_runs=2), "n_steps"),
    (dict(datasets=[np.ones(3)], index_seeds=[0], n_steps=5, alpha=1.5, n_runs=0), "n_runs"),
    (dict(datasets=[np.ones(3)], index_seeds=[0, 1], n_steps=5, alpha=1.5, n_runs=2), "index seed"),
    (dict(datasets=[np.array([1.0, np.nan])], index_seeds=[0], n_steps=5, alpha=1.5, n_runs=2), "finite"),
    (dict(datasets=[np.ones((3, 2))], index_seeds=[0], n_steps=5, alpha=1.5, n_runs=2), "1-D"),
])
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        quadratic_runs(kwargs.pop("datasets"), kwargs.pop("index_seeds"), kwargs.pop("n_steps"),
                       kwargs.pop("alpha"), **kwargs)


def test_block_slices_and_paired_log_ratios():
    assert block_slices(6, 3) == [slice(0, 2), slice(2, 4), slice(4, 6)]
    assert block_slices(5, 1) == [slice(0, 5)]
    with pytest.raises(ValueError, match="divide"):
        block_slices(10, 3)
    with pytest.raises(ValueError, match="n_blocks"):
        block_slices(10, 0)
    assert paired_log_ratios([2.0, 1.0], [1.0, 4.0]) == pytest.approx([math.log(2), math.log(0.25)])
    with pytest.raises(ValueError, match="positive"):
        paired_log_ratios([1.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="same shape"):
        paired_log_ratios([1.0], [1.0, 2.0])


def test_light_tailed_data_option():
    p = make_problem("least_squares_synthetic", n_samples=30, tail_index=1.5, dim=2, seed=4, noise="gaussian")
    rng = np.random.default_rng(4)
    A = rng.standard_normal((30, 2))
    np.testing.assert_array_equal(p.targets, A @ np.ones(2) + rng.standard_normal(30))
    q = make_problem("mean_synthetic", n_samples=20, tail_index=1.5, seed=4, noise="gaussian")
    np.testing.assert_array_equal(q.targets[:, 0], np.random.default_rng(4).standard_normal(20))
    np.testing.assert_array_equal(draw_noise(np.random.default_rng(1), 5, "student_t", 1.5, 10.0),
                                  10.0 * np.random.default_rng(1).standard_t(1.5, 5))
    with pytest.raises(ValueError, match="noise"):
        make_problem("mean_synthetic", n_samples=20, tail_index=1.5, seed=4, noise="cauchy")


def test_diabetes_problem_recipe():
    from papers.clipped_sgd.problems import diabetes_design

    X, x_true = diabetes_design()
    assert X.shape == (442, 10)
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1, rtol=1e-12)
    p = make_problem("least_squares_diabetes", n_samples=500, tail_index=1.5, seed=9)
    rng = np.random.default_rng(9)
    A = X[rng.integers(0, 442, 500)]
    np.testing.assert_array_equal(p.features, A)
    np.testing.assert_allclose(p.targets, A @ x_true + rng.standard_t(1.5, 500), rtol=1e-12)
    np.testing.assert_array_equal(p.x_pop, x_true)
    with pytest.raises(ValueError, match="unknown parameters"):
        make_problem("least_squares_diabetes", n_samples=50, tail_index=1.5, seed=1, dim=3)


def test_sgd_expected_error_one_and_two_steps():
    """T = 1: E (x_1 - x_S)^2 = (1 - g)^2 (x0 - x_S)^2 + g^2 v; T = 2 adds a factor (1 - g_2)^2 to both terms and
    g_2^2 v (v the population variance of the data, x_S = -xbar)."""
    from papers.clipped_sgd.quadratic import sgd_expected_error

    xi = np.array([1.0, 3.0])          # xbar = 2, v = 1, x_S = -2
    assert sgd_expected_error(xi, [0.5], x0=0.0) == pytest.approx(0.25 * 4 + 0.25 * 1)
    assert sgd_expected_error(xi, [0.5, 0.25], x0=0.0) == pytest.approx(
        0.75 ** 2 * (0.25 * 4 + 0.25 * 1) + 0.25 ** 2 * 1)
    with pytest.raises(ValueError):
        sgd_expected_error(xi, [0.0])


def test_sgd_expected_error_matches_many_runs():
    """The mean over many runs of quadratic_runs' SGD error tends to the exact expectation."""
    from papers.clipped_sgd.quadratic import sgd_expected_error

    xi = np.random.default_rng(0).standard_normal(50) * 3
    out = quadratic_runs([xi], [11], 40, 1.5, n_runs=20000, x0=5.0)
    exact = sgd_expected_error(xi, step_schedule(40, 1.5, 0.25), x0=5.0)
    assert out.opt["sgd_eta0"].mean() == pytest.approx(exact, rel=0.03)
