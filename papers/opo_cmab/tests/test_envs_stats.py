"""Environments (MONK rules, synthetic class, streams) and the PV significance test."""
import itertools
import math

import numpy as np
import pytest

from papers.opo_cmab.envs import make_env, monk_data
from papers.opo_cmab.oracles import sigmoid
from papers.opo_cmab.stats import pairwise_wins, pv_significance

LEVELS = (3, 3, 2, 3, 4, 2)


def test_monk_grid_and_one_hot():
    X, y = monk_data(1)
    assert X.shape == (432, 18)
    np.testing.assert_array_equal(X[:, :17].sum(axis=1), 6)
    np.testing.assert_array_equal(X[:, 17], 1)
    assert len({tuple(r) for r in X}) == 432


def test_monk1_and_monk2_counts():
    # MONK-1: P(a1 = a2) = 1/3, P(a5 = 1) = 1/4, independent: 432 (1/3 + 1/4 - 1/12) = 216
    assert monk_data(1)[1].sum() == 216
    # MONK-2: exactly two attributes equal 1: sum over pairs {i, j} of prod_{k not in pair} (n_k - 1)
    count = sum(math.prod(n - 1 for k, n in enumerate(LEVELS) if k not in pair)
                for pair in itertools.combinations(range(6), 2))
    assert monk_data(2)[1].sum() == count == 142


def test_monk3_rule_plus_22_flips():
    X, y = monk_data(3)
    grid = np.array(list(itertools.product(*[range(1, n + 1) for n in LEVELS])))
    a2, a4, a5 = grid[:, 1], grid[:, 3], grid[:, 4]
    clean = ((a5 == 3) & (a4 == 1)) | ((a5 != 4) & (a2 != 3))
    assert clean.sum() == 216 + 12
    assert (clean != y.astype(bool)).sum() == 22
    np.testing.assert_array_equal(monk_data(3)[1], y)  # fixed noise seed


def test_finite_class_structure():
    env = make_env("finite_class", 11)
    assert (env.n_actions, env.context_dim, env.n_rounds) == (5, 5, None)
    assert env.thetas.shape == (100, 5, 5)
    star = env.thetas[env.star_index]
    for j in range(100):
        if j == env.star_index:
            continue
        diff = env.thetas[j] - star
        assert np.sum(np.abs(diff[:, -1]) > 1.0) == 2       # floor(5/2) shifted bias entries of size 2
        assert np.all(np.abs(diff[:, :-1]) < 1.0)
    x = env.context(3)
    assert x[-1] == 1.0
    np.testing.assert_allclose(env.expected_losses(3), sigmoid(star @ x))
    rng = np.random.default_rng(0)
    draws = [env.sample_loss(3, 2, rng) for _ in range(4000)]
    assert np.mean(draws) == pytest.approx(env.expected_losses(3)[2], abs=0.03)
    np.testing.assert_array_equal(make_env("finite_class", 11).thetas, env.thetas)


@pytest.mark.parametrize("name,n,A,dim", [("iris", 150, 3, 5), ("wine", 178, 3, 14), ("breast_cancer", 569, 2, 31),
                                          ("digits", 1797, 10, 65), ("monk2", 432, 2, 18)])
def test_streams(name, n, A, dim):
    env = make_env(name, 0)
    assert (env.n_rounds, env.n_actions, env.context_dim) == (n, A, dim)
    losses = env.expected_losses(0)
    assert losses.sum() == A - 1 and set(losses) == {0.0, 1.0}
    y = int(np.argmin(losses))
    assert env.sample_loss(0, y, None) == 0.0
    assert sorted(env.order) == list(range(n))
    assert not np.array_equal(make_env(name, 1).order, env.order)
    if not name.startswith("monk"):
        np.testing.assert_allclose(env.X[:, :-1].mean(axis=0), 0, atol=1e-10)


def test_make_env_bad_inputs():
    with pytest.raises(ValueError, match="name"):
        make_env("adult", 0)
    with pytest.raises(ValueError, match="takes no params"):
        make_env("iris", 0, n_actions=3)
    with pytest.raises(ValueError, match="n_actions"):
        make_env("finite_class", 0, n_actions=1)


def test_pv_significance_known_answer():
    se, z, pval = pv_significance(0.2, 0.3, 100)
    se_ref = 1e-6 + math.sqrt(0.2 * 0.8 / 100 + 0.3 * 0.7 / 100)
    assert se == pytest.approx(se_ref, rel=1e-15)
    assert z == pytest.approx(0.1 / se_ref, rel=1e-15)
    assert pval == pytest.approx(1 - math.erf(0.1 / se_ref), rel=1e-15)
    assert pv_significance(0.4, 0.4, 10)[2] == 1.0
    rows = pairwise_wins({"a": 0.1, "b": 0.5}, 1000)
    assert [r["a_wins"] for r in rows] == [True, False]


@pytest.mark.parametrize("p_a,p_b,n,name", [(-0.1, 0.2, 10, "p_a"), (0.2, 1.2, 10, "p_b"), (0.2, 0.3, 0, "n"),
                                            (np.nan, 0.3, 5, "p_a")])
def test_pv_significance_bad_inputs(p_a, p_b, n, name):
    with pytest.raises(ValueError, match=name):
        pv_significance(p_a, p_b, n)
