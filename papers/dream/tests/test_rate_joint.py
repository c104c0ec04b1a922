"""rate_joint (D3 at the step c sqrt(N/T)): the joint fit, the step schedule, the log-quadratic task, the batched
DREAM-R runner against run_quadratic, and the one-client server of the control."""
import numpy as np
import pytest

from shared.experiment import RunContext

from papers.dream.aggregation import dream_weights
from papers.dream.algorithms import rate_step, run_dream_batched, run_quadratic, two_task_min_norm
from papers.dream.experiments import (fit_product_exponent, fit_rate_exponents, momentum_noise_factor, rate_joint,
                                      theory_step_constant)
from papers.dream.problems import LogQuadraticFederation, QuadraticFederation


def test_joint_fit_recovers_known_exponents_exactly():
    Ns, Ts = np.meshgrid([1, 2, 4, 8, 16], [250, 1000, 4000], indexing="ij")
    S = 3.7 * Ns ** -0.5 * Ts ** -0.5
    a, b, c = fit_rate_exponents(Ns, Ts, S)
    assert b == pytest.approx(-0.5, abs=1e-12) and c == pytest.approx(-0.5, abs=1e-12)
    assert a == pytest.approx(np.log(3.7), abs=1e-12)
    a2, e = fit_product_exponent(Ns, Ts, S)
    assert e == pytest.approx(-0.5, abs=1e-12) and a2 == pytest.approx(np.log(3.7), abs=1e-12)
    # unequal exponents are separated by the joint fit
    _, b, c = fit_rate_exponents(Ns, Ts, 2.0 * Ns ** 0.25 * Ts ** -0.75)
    assert (b, c) == (pytest.approx(0.25, abs=1e-12), pytest.approx(-0.75, abs=1e-12))
    with pytest.raises(ValueError, match="vary both"):
        fit_rate_exponents([1, 2, 4], [10, 10, 10], [1.0, 0.5, 0.25])
    with pytest.raises(ValueError, match="> 0"):
        fit_rate_exponents([1, 2, 4], [10, 20, 40], [1.0, 0.0, 0.25])


def test_step_schedule_is_c_sqrt_n_over_t():
    assert rate_step(1.5, 4, 100) == pytest.approx(1.5 * 0.2)
    np.testing.assert_allclose(rate_step(2.0, np.array([1, 4, 16]), np.array([1, 16, 4])), [2.0, 1.0, 4.0])
    # doubling N and T together keeps the step; 4 N at fixed T doubles it
    assert rate_step(0.7, 8, 2000) == pytest.approx(rate_step(0.7, 4, 1000))
    assert rate_step(0.7, 16, 1000) == pytest.approx(2 * rate_step(0.7, 4, 1000))
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="c must"):
            rate_step(bad, 1, 1)
    with pytest.raises(ValueError, match=">= 1"):
        rate_step(1.0, 0, 10)


def test_theory_constant_and_momentum_noise_factor():
    assert momentum_noise_factor(5, 0.0) == pytest.approx(1 / 5)          # plain local SGD: 1/K
    assert momentum_noise_factor(1, 0.5) == 1.0
    # K = 3, beta = 0.5: y^3 - x = -eta_l (v1 + v2 + v3), weights of g0, g1, g2 = 1.75, 0.75, 0.5
    assert momentum_noise_factor(3, 0.5) == pytest.approx((1.75 ** 2 + 0.75 ** 2 + 0.5 ** 2) / 9)
    c = theory_step_constant(2.0, 1.5, 4.0, 0.25)
    assert c == pytest.approx(np.sqrt(2 * 2.0 / (1.5 * 0.25 * 4.0)))
    # at c* the two terms of the bound are equal for every N, T
    for N, T in ((1, 250), (16, 4000)):
        eta = rate_step(c, N, T)
        assert 2 * 2.0 / (eta * T) == pytest.approx(1.5 * eta * 0.25 * 4.0 / N)


def test_log_quadratic_task_gradients_values_and_nonconvexity():
    p = LogQuadraticFederation.random(3, 2, 4, eig_range=(0.5, 2.0), center_offset=0.5, heterogeneity=0.5,
                                      iid=False, noise_std=0.0, seed=1)
    x = np.random.default_rng(0).standard_normal(4)
    g, e = p.task_gradients(x), 1e-6
    fd = np.array([[(p.task_values(x + e * v)[m] - p.task_values(x - e * v)[m]) / (2 * e) for v in np.eye(4)]
                   for m in range(2)])
    np.testing.assert_allclose(g, fd, atol=1e-8)
    assert np.all(p.task_values(p.centers[0, 0]) >= 0)                     # bounded below by 0
    assert p.smoothness() == pytest.approx(np.linalg.eigvalsh(p.hessians).max())
    # 1-D: f = log(1 + h u^2 / 2) is concave where q > 1
    one = LogQuadraticFederation(np.array([[[[2.0]]]]), np.array([[[0.0]]]))
    f = lambda u: one.task_values(np.array([u]))[0]
    assert f(2.0) - 2 * f(1.5) + f(1.0) < 0
    np.testing.assert_allclose(p.batch_gradients(np.tile(x, (2, 3, 1))).mean(axis=1)[1], g, atol=1e-14)
    assert p.pareto_stationarity(x) == pytest.approx(float(dream_weights(g)[1] @ dream_weights(g)[1]))
    with pytest.raises(NotImplementedError):
        p.scalarized_minimizer()


def test_two_task_min_norm_matches_dream_weights():
    rng = np.random.default_rng(2)
    G = rng.standard_normal((7, 2, 5))
    G[3, 1] = G[3, 0]                                                       # equal gradients: (1/2, 1/2)
    G[4, 1] = 3 * G[4, 0]                                                   # clipped to a vertex
    lam, d = two_task_min_norm(G)
    for k in range(7):
        ref_lam, ref_d = dream_weights(G[k])
        np.testing.assert_allclose(lam[k], ref_lam, atol=1e-15)
        np.testing.assert_allclose(d[k], ref_d, atol=1e-14)
    np.testing.assert_allclose(two_task_min_norm(np.array([[3.0, 0.0], [0.0, 1.0]]))[1], [0.3, 0.9], atol=1e-15)


@pytest.mark.parametrize("make", [QuadraticFederation, LogQuadraticFederation])
def test_batched_runner_is_run_quadratic_dream(make):
    """One replica with the averaging server draws the same numbers as run_quadratic("dream") and gives the same
    iterates and stationarity (heterogeneous, noisy clients, K = 4, momentum 0.5)."""
    q = QuadraticFederation.random(3, 2, 4, noise_std=0.7, seed=5)
    p = make(q.hessians, q.centers, noise_std=0.7)
    x0 = np.linspace(-1, 1, 4)
    ref = run_quadratic(p, "dream", rounds=25, local_steps=4, lr_local=0.03, momentum=0.5, x0=x0, seed=11)
    out = run_dream_batched(p, rounds=25, lr_local=0.03, n_replicas=1, local_steps=4, momentum=0.5, x0=x0, seed=11)
    np.testing.assert_allclose(out["x_last"][0], ref["x"][-1], atol=1e-12)
    np.testing.assert_allclose(out["stationarity"][:, 0], ref["stationarity"], rtol=1e-10, atol=1e-14)


def test_one_client_server_uses_exactly_one_clients_update():
    """Known answer, one round, no noise, K = 1: round 0 has c = 0 and uniform weights, so client i ends at
    y_i = x0 - eta_l (g_i1 + g_i2) / 2; the averaging server moves to the mean of the y_i, the control to the y_i
    of the client drawn by rng.integers(0, N) after the local steps (the only draw without noise)."""
    H = np.tile(np.eye(2), (3, 2, 1, 1))
    a = np.array([[[1.0, 0.0], [0.0, 1.0]], [[4.0, 0.0], [0.0, 2.0]], [[-2.0, 0.0], [0.0, -3.0]]])
    p = LogQuadraticFederation(H, a, noise_std=0.0)
    x0, eta = np.zeros(2), 0.1
    y = np.array([x0 - eta * p.client_gradients(x0[None], [i])[0].mean(axis=0) for i in range(3)])
    assert np.ptp(y[:, 0]) > 0.05                                           # the clients' updates differ
    mean = run_dream_batched(p, rounds=1, lr_local=eta, n_replicas=1, local_steps=1, x0=x0, seed=4)
    np.testing.assert_allclose(mean["x_last"][0], y.mean(axis=0), atol=1e-15)
    picks = np.random.default_rng(4).integers(0, 3, size=6)
    one = run_dream_batched(p, rounds=1, lr_local=eta, n_replicas=6, local_steps=1, x0=x0, seed=4,
                            server="one_client")
    np.testing.assert_allclose(one["x_last"], y[picks], atol=1e-15)
    assert len(set(picks.tolist())) > 1                                     # replicas draw their own client
    with pytest.raises(ValueError, match="server"):
        run_dream_batched(p, rounds=1, lr_local=eta, n_replicas=1, server="median")


def test_batched_runner_rejects_bad_input():
    p = LogQuadraticFederation.random(2, 3, 2, iid=True, seed=0)
    with pytest.raises(ValueError, match="n_tasks = 2"):
        run_dream_batched(p, rounds=1, lr_local=0.1, n_replicas=1)
    p = LogQuadraticFederation.random(2, 2, 2, iid=True, seed=0)
    with pytest.raises(ValueError, match="lr_local"):
        run_dream_batched(p, rounds=1, lr_local=[0.1, -0.1], n_replicas=2)
    with pytest.raises(ValueError, match="n_replicas"):
        run_dream_batched(p, rounds=1, lr_local=0.1, n_replicas=0)
    with pytest.raises(ValueError, match="rounds"):
        run_dream_batched(p, rounds=0, lr_local=0.1, n_replicas=1)


def test_rate_joint_smoke_metrics(tmp_path):
    params = {"n_clients_list": [1, 2], "rounds_list": [10, 20], "n_seeds": 2, "n_tasks": 2, "dim": 3,
              "noise_std": 1.0, "local_steps": 2, "momentum": 0.5,
              "controls": {"one_client": {"server": "one_client"}, "const_step": {"fixed_step": True}}}
    ctx = RunContext(name="rate_joint", scale="smoke", seed=0, out_dir=tmp_path)
    rows, met = rate_joint(params, ctx)
    assert len(met["n_exponent_per_seed"]) == 2 and set(met["control"]) == {"one_client", "const_step"}
    assert met["c"] == pytest.approx(min(met["c_theory"], met["c_stability"]))
    assert met["step_max"] == pytest.approx(met["c"] * np.sqrt(2 / 10))
    assert {r["eta"] for r in rows if r["method"] == "const_step"} == {met["step_max"]}
    assert len(rows) == 3 * 2 * 2 * 2 and (tmp_path / "rate.npz").exists()
    _, again = rate_joint(params, RunContext(name="rate_joint", scale="smoke", seed=0, out_dir=tmp_path))
    assert again["n_exponent_per_seed"] == met["n_exponent_per_seed"]      # deterministic
