"""The contaminated model: shapes, corruption counts, adversary geometry and bad inputs."""
import math

import numpy as np
import pytest

from papers.robust_sim.data import make_sim_data
from papers.robust_sim.links import get_link


def test_clean_draw_is_the_model_and_deterministic():
    a = make_sim_data(400, 6, link="gelu", sigma=0.0, seed=3)
    b = make_sim_data(400, 6, link="gelu", sigma=0.0, seed=3)
    assert np.linalg.norm(a.beta_star) == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, get_link("gelu").f(a.X @ a.beta_star))  # sigma = 0: no noise
    assert not a.corrupted.any()


@pytest.mark.parametrize("adv", ["A1", "A2", "A3", "A4", "A5", "A6"])
def test_corruption_count_and_untouched_rows(adv):
    clean = make_sim_data(503, 5, link="swish", sigma=0.2, eps=0.0, adversary=adv, seed=1)
    bad = make_sim_data(503, 5, link="swish", sigma=0.2, eps=0.1, adversary=adv, seed=1)
    assert bad.corrupted.sum() == math.floor(0.1 * 503)
    ok = ~bad.corrupted
    np.testing.assert_array_equal(bad.X[ok], clean.X[ok])
    np.testing.assert_array_equal(bad.y[ok], clean.y[ok])
    np.testing.assert_array_equal(bad.beta_star, clean.beta_star)


def test_a3_flips_and_a4_plants_leverage_points():
    clean = make_sim_data(300, 4, link="gelu", sigma=0.1, eps=0.0, adversary="A3", seed=2)
    a3 = make_sim_data(300, 4, link="gelu", sigma=0.1, eps=0.2, adversary="A3", seed=2)
    np.testing.assert_allclose(a3.y[a3.corrupted], -5.0 * clean.y[a3.corrupted], rtol=0, atol=0)
    a4 = make_sim_data(300, 4, link="gelu", sigma=0.1, eps=0.2, adversary="A4", seed=2)
    Xc = a4.X[a4.corrupted]
    np.testing.assert_allclose(np.linalg.norm(Xc, axis=1), 10.0, rtol=1e-14)
    np.testing.assert_allclose(Xc @ a4.beta_star, 0.0, atol=1e-12)  # x' = 10 v with v orthogonal to beta*
    assert np.all(a4.y[a4.corrupted] == 0.0)


def test_a1_response_is_link_of_spike_plus_two():
    a1 = make_sim_data(300, 4, link="gelu", sigma=0.1, eps=0.2, adversary="A1", seed=4)
    Xc, yc = a1.X[a1.corrupted], a1.y[a1.corrupted]
    # y' = f(x'^T v) + 2 >= min f + 2 > 1.8 for GeLU (min z Phi(z) ~ -0.17)
    assert np.all(yc > 1.8)


def test_noise_variance_is_sigma_squared():
    d = make_sim_data(200_000, 2, link="phase", sigma=0.5, noise_df=5.0, seed=0)
    resid = d.y - (d.X @ d.beta_star) ** 2
    assert resid.var() == pytest.approx(0.25, rel=0.05)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n=1), "n must"), (dict(d=1), "d must"), (dict(eps=0.5, adversary="A1"), "eps"),
    (dict(eps=-0.1, adversary="A1"), "eps"), (dict(sigma=-1.0), "sigma"), (dict(noise_df=2.0), "noise_df"),
    (dict(noise_df=1.5), "noise_df"), (dict(link="relu"), "link"), (dict(adversary="A9"), "adversary"),
    (dict(eps=0.1), "adversary"),
])
def test_bad_arguments(kwargs, match):
    args = dict(n=100, d=3, link="gelu", sigma=0.1)
    args.update(kwargs)
    n, d = args.pop("n"), args.pop("d")
    with pytest.raises(ValueError, match=match):
        make_sim_data(n, d, **args)


def test_gaussian_noise_allowed():
    d = make_sim_data(50, 3, link="gelu", sigma=0.1, noise_df=math.inf)
    assert d.X.shape == (50, 3) and d.y.shape == (50,) and np.isfinite(d.y).all()
    assert not d.corrupted.any() and abs(np.linalg.norm(d.beta_star) - 1) < 1e-12   # eps = 0: clean draw
