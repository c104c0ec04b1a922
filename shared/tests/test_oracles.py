"""Tests of shared.oracles: moments, tail index, one draw per call, errors, call counting."""
import math

import numpy as np
import pytest

from shared.oracles import CallCounter, sample_noise, uniform_indices


def test_gaussian_equals_scaled_standard_normal():
    a = sample_noise(np.random.default_rng(3), (4, 5), scale=2.5)
    b = 2.5 * np.random.default_rng(3).standard_normal((4, 5))
    assert a.dtype == np.float64 and a.shape == (4, 5)
    np.testing.assert_array_equal(a, b)


def test_gaussian_moments():
    x = sample_noise(np.random.default_rng(0), 200_000, scale=0.3)
    assert abs(x.mean()) < 5 * 0.3 / math.sqrt(x.size)
    assert x.var() == pytest.approx(0.09, rel=0.02)


def test_student_t_equals_scaled_standard_t():
    a = sample_noise(np.random.default_rng(5), 7, "student_t", scale=0.5, tail_index=3.0)
    b = 0.5 * np.random.default_rng(5).standard_t(3.0, 7)
    np.testing.assert_array_equal(a, b)


def test_student_t_unit_has_unit_variance():
    # Var(T_nu) = nu / (nu - 2); nu = 6 keeps the fourth moment finite, so the sample variance is reliable.
    x = sample_noise(np.random.default_rng(1), 400_000, "student_t_unit", tail_index=6.0)
    assert x.var() == pytest.approx(1.0, rel=0.03)
    y = sample_noise(np.random.default_rng(1), 10, "student_t_unit", scale=2.0, tail_index=6.0)
    np.testing.assert_allclose(y, 2.0 * np.random.default_rng(1).standard_t(6.0, 10) / math.sqrt(1.5))


def test_tail_index_hill_estimate():
    # P(|T| > t) ~ c t^{-nu}: the Hill estimator on the top order statistics recovers nu.
    for nu in (1.5, 3.0):
        x = np.abs(sample_noise(np.random.default_rng(2), 400_000, "student_t", tail_index=nu))
        top = np.sort(x)[-2000:]
        hill = 1.0 / np.mean(np.log(top[1:] / top[0]))
        assert hill == pytest.approx(nu, rel=0.12)


def test_one_generator_call_per_invocation():
    rng, ref = np.random.default_rng(9), np.random.default_rng(9)
    sample_noise(rng, (3, 3), "student_t", tail_index=4.0)
    ref.standard_t(4.0, (3, 3))
    assert rng.standard_normal() == ref.standard_normal()


def test_uniform_indices_matches_integers():
    a = uniform_indices(np.random.default_rng(4), 10, 50)
    b = np.random.default_rng(4).integers(0, 10, 50)
    assert a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() <= 9


@pytest.mark.parametrize("kwargs, word", [
    (dict(kind="cauchy"), "kind"),
    (dict(scale=-1.0), "scale"),
    (dict(scale=float("nan")), "scale"),
    (dict(scale=float("inf")), "scale"),
    (dict(kind="student_t"), "tail_index"),
    (dict(kind="student_t", tail_index=0.0), "tail_index"),
    (dict(kind="student_t", tail_index=-2.0), "tail_index"),
    (dict(kind="student_t", tail_index=float("inf")), "tail_index"),
    (dict(kind="student_t_unit", tail_index=2.0), "tail_index"),
    (dict(kind="gaussian", tail_index=3.0), "tail_index"),
    (dict(size=-1), "size"),
    (dict(size=(2, -3)), "size"),
])
def test_sample_noise_errors(kwargs, word):
    args = dict(size=3)
    args.update(kwargs)
    size = args.pop("size")
    with pytest.raises(ValueError, match=word):
        sample_noise(np.random.default_rng(0), size, **args)


def test_uniform_indices_errors():
    with pytest.raises(ValueError, match="n_examples"):
        uniform_indices(np.random.default_rng(0), 0, 3)
    with pytest.raises(ValueError, match="size"):
        uniform_indices(np.random.default_rng(0), 5, -2)


def test_call_counter_counts_and_resets():
    counter = CallCounter(lambda z: 2 * z)
    assert counter.calls == 0
    assert counter(3) == 6
    counter(np.ones((8, 4)))  # a batch of 8 trajectories counts once
    assert counter.calls == 2
    counter.reset()
    assert counter.calls == 0
    with pytest.raises(ValueError, match="fn"):
        CallCounter(3)
