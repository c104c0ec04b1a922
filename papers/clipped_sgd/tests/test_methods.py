"""SGD / Clip-SGD: the clip operator, schedules, hand-computed steps, batch = single, bad inputs."""
import math

import numpy as np
import pytest

from papers.clipped_sgd.analysis import clipped_fixed_point, predicted_sgd_error
from papers.clipped_sgd.baselines import index_sequence
from papers.clipped_sgd.methods import INDEX_CHUNK, clip_by_norm, run_sgd, run_sgd_batch, schedule_values
from papers.clipped_sgd.problems import make_problem


def ls(n=30, seed=0, dim=3):
    return make_problem("least_squares_synthetic", n_samples=n, tail_index=1.5, dim=dim, seed=seed)


# ------------------------------------------------------------------------------------------------ clip
def test_clip_by_norm_known_answers():
    np.testing.assert_allclose(clip_by_norm([3.0, 4.0], 1.0), [0.6, 0.8])
    np.testing.assert_array_equal(clip_by_norm([3.0, 4.0], 5.0), [3.0, 4.0])      # ||g|| = lam: unchanged
    np.testing.assert_array_equal(clip_by_norm([0.0, 0.0], 1.0), [0.0, 0.0])      # clip(0, lam) = 0
    rows = clip_by_norm([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]], 1.0)
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
    # eps: coefficient lam / (||g|| + eps), clamped at 1 (torch's clip_grad_norm_ with eps = 1e-6)
    np.testing.assert_allclose(clip_by_norm([3.0, 4.0], 1.0, eps=1e-6), np.array([3.0, 4.0]) / (5.0 + 1e-6),
                               rtol=1e-15)
    np.testing.assert_array_equal(clip_by_norm([3.0, 4.0], math.inf), [3.0, 4.0])


@pytest.mark.parametrize("level", [0.0, -1.0, float("nan")])
def test_clip_by_norm_bad_level(level):
    with pytest.raises(ValueError, match="level"):
        clip_by_norm([1.0, 2.0], level)


def test_clip_by_norm_bad_eps_and_shape():
    with pytest.raises(ValueError, match="eps"):
        clip_by_norm([1.0], 1.0, eps=-1.0)
    with pytest.raises(ValueError, match="g must be"):
        clip_by_norm(np.ones((2, 2, 2)), 1.0)


# ------------------------------------------------------------------------------------------- schedules
def test_schedule_values():
    np.testing.assert_array_equal(schedule_values(0.5, 3), [0.5, 0.5, 0.5])
    v = schedule_values({"value": 2.0, "k0": 2, "exponent": -1.0}, 4)
    np.testing.assert_allclose(v, [2.0, 2.0 / 1.5, 1.0, 2.0 / 2.5])     # value (1 + k/k0)^exponent, k from 0
    np.testing.assert_array_equal(schedule_values(lambda k: 1.0 / (k + 1), 3), [1.0, 0.5, 1.0 / 3])


@pytest.mark.parametrize("schedule, match", [
    (0.0, "step_size"), (-0.1, "step_size"), (float("inf"), "step_size"), (float("nan"), "step_size"),
    ({"value": 1.0, "k0": 0, "exponent": -1}, "k0"), ({"value": 1.0, "k0": -5, "exponent": -1}, "k0"),
    ({"value": 1.0, "exponent": -1}, "missing"), ({"value": 1.0, "k0": 1, "exponent": 1, "x": 2}, "unknown"),
    ({"value": -1.0, "k0": 1, "exponent": 1}, "step_size"),
    (lambda k: 0.1 if k < 3 else -0.1, "k=3"), (lambda k: float("nan"), "k=0"), ("0.1", "step_size"),
])
def test_bad_schedules(schedule, match):
    with pytest.raises(ValueError, match=match):
        run_sgd(ls(), 10, step_size=schedule, seed=0)


# ---------------------------------------------------------------------------------------- the iteration
def test_index_sequence_is_uniform_indices_in_chunks():
    rng = np.random.default_rng(5)
    expected = np.concatenate([rng.integers(0, 17, INDEX_CHUNK), rng.integers(0, 17, INDEX_CHUNK)])
    np.testing.assert_array_equal(index_sequence(5, 17, INDEX_CHUNK + 10), expected[:INDEX_CHUNK + 10])


def test_mean_estimation_with_unit_step_jumps_to_the_sampled_point():
    """gamma = 1: x_{k+1} = x_k - (x_k - xi_{i_k}) = xi_{i_k}."""
    p = make_problem("mean", samples=np.arange(10.0))
    for steps in (1, 7):
        res = run_sgd(p, steps, step_size=1.0, seed=3, burn_in=0)
        assert res.x_final[0] == index_sequence(3, 10, steps)[-1]


def test_one_least_squares_step_by_hand():
    p = ls(n=5)
    i = index_sequence(9, 5, 1)[0]
    a, b = p.features[i], p.targets[i]
    x0 = np.array([0.3, -0.2, 1.0])
    g = (a @ x0 - b) * a
    res = run_sgd(p, 1, step_size=0.1, seed=9, x0=x0, burn_in=0, record_at=[1])
    np.testing.assert_allclose(res.x_final, x0 - 0.1 * g, rtol=1e-14)
    lam = 0.5 * np.linalg.norm(g)
    res_c = run_sgd(p, 1, step_size=0.1, clip_level=lam, seed=9, x0=x0, burn_in=0)
    np.testing.assert_allclose(res_c.x_final, x0 - 0.1 * 0.5 * g, rtol=1e-13)
    assert res_c.n_clipped == 1 and res.n_clipped == 0 and res.grad_evals == 1
    assert res.err_at[1] == pytest.approx(np.sum((res.x_final - p.x_erm) ** 2))
    assert res.method == "sgd" and res_c.method == "clip_sgd"


def test_averages_follow_their_definition():
    p = ls(n=20)
    K, burn = 40, 10
    res = run_sgd(p, K, step_size=0.05, clip_level=2.0, seed=4, burn_in=burn, record_at=range(1, K + 1))
    xs = [run_sgd(p, k, step_size=0.05, clip_level=2.0, seed=4, burn_in=0).x_final for k in range(burn + 1, K + 1)]
    np.testing.assert_allclose(res.x_avg, np.mean(xs, axis=0), rtol=1e-12)
    errs = [res.err_at[k] for k in range(burn + 1, K + 1)]
    assert res.err_avg == pytest.approx(np.mean(errs), rel=1e-12)
    assert res.err_at[K] == pytest.approx(np.sum((res.x_final - p.x_erm) ** 2), rel=1e-12)
    assert run_sgd(p, K, step_size=0.05, seed=4).err_avg == pytest.approx(
        np.mean([run_sgd(p, K, step_size=0.05, seed=4, record_at=[k], burn_in=0).err_at[k]
                 for k in range(K // 4 + 1, K + 1)]), rel=1e-12)   # default burn_in = K // 4


def test_huge_clip_level_is_sgd_and_tiny_clip_level_clips_every_step():
    p = ls()
    a = run_sgd(p, 300, step_size=0.02, seed=1)
    b = run_sgd(p, 300, step_size=0.02, clip_level=1e12, seed=1)
    np.testing.assert_array_equal(a.x_final, b.x_final)
    assert b.n_clipped == 0
    c = run_sgd(p, 300, step_size=0.02, clip_level=1e-9, seed=1)
    assert c.n_clipped == 300
    # every clipped step moves by exactly gamma * lam
    assert np.linalg.norm(c.x_final) <= 300 * 0.02 * 1e-9 * (1 + 1e-9)


def test_batch_equals_single_runs_exactly():
    probs = [ls(n=30, seed=s) for s in range(3)] + [ls(n=200, seed=9)]
    seeds = [np.random.SeedSequence(s) for s in (10, 11, 12, 13)]
    K = 4200     # crosses one gather block (4096 steps)
    for clip_level, sched in ((None, 0.01), (3.0, {"value": 0.02, "k0": 100, "exponent": -1.0})):
        batch = run_sgd_batch(probs + probs, K, step_size=sched, clip_level=clip_level,
                              clipped=None if clip_level is None else [False] * 4 + [True] * 4,
                              seeds=seeds + seeds, record_at=[100, K])
        for r in (0, 3, 4, 7):   # SGD and Clip-SGD rows, on both problem sizes
            single = run_sgd(probs[r % 4], K, step_size=sched, seed=seeds[r % 4], record_at=[100, K],
                             clip_level=clip_level if r >= 4 else None)
            np.testing.assert_array_equal(batch[r].x_final, single.x_final)
            np.testing.assert_array_equal(batch[r].x_avg, single.x_avg)
            assert batch[r].err_avg == single.err_avg and batch[r].err_at == single.err_at
            assert batch[r].n_clipped == single.n_clipped


def test_prefix_property_over_index_chunks():
    p = make_problem("mean", samples=np.arange(50.0))
    short = run_sgd(p, 1000, step_size=0.01, seed=2, record_at=[1000])
    long = run_sgd(p, INDEX_CHUNK + 100, step_size=0.01, seed=2, record_at=[1000])
    assert short.err_at[1000] == long.err_at[1000]


def test_mean_estimation_stationary_error_matches_the_exact_formula():
    """E||x - xbar||^2 = gamma sigma_N^2(xbar) / (2 - gamma) for SGD on f = ||x - xi||^2 / 2."""
    p = make_problem("mean", samples=np.random.default_rng(0).standard_normal((20, 2)) * 3)
    gamma = 0.3
    res = run_sgd(p, 60000, step_size=gamma, seed=1, burn_in=1000)
    assert res.err_avg == pytest.approx(predicted_sgd_error(p, gamma), rel=0.05)


def test_clip_sgd_with_small_steps_reaches_the_clipped_fixed_point():
    xi = np.array([0.0, 0.2, 0.5, 1.0, 30.0])
    p = make_problem("mean", samples=xi)
    x_lam = clipped_fixed_point(xi, 1.0)
    res = run_sgd(p, 20000, step_size=2e-3, clip_level=1.0, seed=0, x0=[x_lam])
    assert abs(res.x_avg[0] - x_lam) < 0.02
    assert abs(res.x_avg[0] - p.x_erm[0]) > 5      # far from the mean 6.34


def test_nonfinite_iterates_stop_the_run_naming_step_and_method():
    p = ls(n=30)
    with pytest.raises(FloatingPointError, match=r"step k=\d+.*'sgd'"):
        run_sgd(p, 5000, step_size=50.0, seed=0)


def test_bad_run_arguments():
    p = ls()
    with pytest.raises(ValueError, match="n_steps"):
        run_sgd(p, 0, step_size=0.1, seed=0)
    with pytest.raises(ValueError, match="burn_in"):
        run_sgd(p, 10, step_size=0.1, seed=0, burn_in=10)
    with pytest.raises(ValueError, match="burn_in"):
        run_sgd(p, 10, step_size=0.1, seed=0, burn_in=-1)
    with pytest.raises(ValueError, match="record_at"):
        run_sgd(p, 10, step_size=0.1, seed=0, record_at=[0])
    with pytest.raises(ValueError, match="record_at"):
        run_sgd(p, 10, step_size=0.1, seed=0, record_at=[11])
    with pytest.raises(ValueError, match="x0"):
        run_sgd(p, 10, step_size=0.1, seed=0, x0=np.zeros(4))
    for lam in (0.0, -2.0):
        with pytest.raises(ValueError, match="clip_level"):
            run_sgd(p, 10, step_size=0.1, clip_level=lam, seed=0)
    with pytest.raises(ValueError, match="clip_level"):
        run_sgd(p, 10, step_size=0.1, clip_level={"value": 1.0, "k0": 0, "exponent": 1}, seed=0)
    with pytest.raises(ValueError, match="clip_level"):
        run_sgd(p, 10, step_size=0.1, clip_level=lambda k: 1.0 - 0.2 * k, seed=0)
    with pytest.raises(ValueError, match="seed"):
        run_sgd(p, 10, step_size=0.1, seed=None)
    g = np.random.default_rng(0)
    with pytest.raises(ValueError, match="Generator"):
        run_sgd_batch([p, p], 10, step_size=0.1, seeds=[g, g])
    with pytest.raises(ValueError, match="kind and dim"):
        run_sgd_batch([p, make_problem("mean", samples=[1.0, 2.0])], 10, step_size=0.1, seeds=[0, 1])
