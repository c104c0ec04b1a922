"""ZO-SGD (budgets, step identity, bad inputs) and the test problems (closed forms, bad inputs)."""
import math

import numpy as np
import pytest

from papers.romberg_zoge.estimator import romberg_zoge
from papers.romberg_zoge.optim import directions_per_step, learning_rate, zo_sgd
from papers.romberg_zoge.problems import ExponentialSeparable, LogisticTest, PromptTuning, RISProblem


def test_directions_per_step_budgets():
    assert directions_per_step("two_point", 0, 4) == 2
    assert directions_per_step("romberg", 1, 4) == 1
    assert directions_per_step("romberg", 2, 6) == 1
    assert directions_per_step("kernel", 0, 4) == 2
    assert directions_per_step("forward_romberg", 1, 5) == 2
    for method, level, q in (("romberg", 1, 6), ("romberg", 2, 4), ("forward_romberg", 1, 4), ("two_point", 0, 3)):
        with pytest.raises(ValueError, match="divisible"):
            directions_per_step(method, level, q)


def test_one_step_equals_estimator_and_one_call_per_step():
    f = LogisticTest()
    calls = []

    def counted(X):
        calls.append(X.shape[0])
        return f(X)

    x0 = f.x0.copy()
    out = zo_sgd(counted, x0, method="romberg", level=1, radius=0.2, evals_per_step=8, iterations=1, lr=0.05,
                 seed=7, average_from=0.0)
    u = np.random.default_rng(7).standard_normal((2, f.dim))
    expected = x0 - 0.05 * romberg_zoge(f, x0, u, 0.2, 1)
    np.testing.assert_allclose(out["x_last"], expected, rtol=1e-12)
    np.testing.assert_allclose(out["x_avg"], (x0 + expected) / 2, rtol=1e-12)
    assert calls == [8] and out["n_evaluations"] == 8


def test_zo_sgd_records_and_determinism():
    f = ExponentialSeparable(5)
    a = zo_sgd(f, np.zeros(5), radius=0.3, iterations=20, seed=3, record_every=5)
    b = zo_sgd(f, np.zeros(5), radius=0.3, iterations=20, seed=3, record_every=5)
    np.testing.assert_array_equal(a["x_avg"], b["x_avg"])
    assert a["iterates"].shape == (5, 5)
    np.testing.assert_array_equal(a["record_steps"], [0, 5, 10, 15, 20])
    np.testing.assert_array_equal(a["iterates"][-1], a["x_last"])


def test_learning_rate_schedule():
    assert learning_rate(0, 0.02, 500.0, 0.6) == pytest.approx(0.02)
    assert learning_rate(500, 0.02, 500.0, 0.6) == pytest.approx(0.02 / 2 ** 0.6)


def test_zo_sgd_bad_inputs():
    f = ExponentialSeparable(3)
    kw = dict(radius=0.1, iterations=5)
    with pytest.raises(ValueError, match="method"):
        zo_sgd(f, np.zeros(3), method="adam", **kw)
    with pytest.raises(ValueError, match="divisible"):
        zo_sgd(f, np.zeros(3), method="romberg", level=1, evals_per_step=6, **kw)
    with pytest.raises(ValueError, match="iterations"):
        zo_sgd(f, np.zeros(3), radius=0.1, iterations=0)
    with pytest.raises(ValueError, match="lr"):
        zo_sgd(f, np.zeros(3), lr=0.0, **kw)
    for bad in (1.0, -0.1):
        with pytest.raises(ValueError, match="average_from"):
            zo_sgd(f, np.zeros(3), average_from=bad, **kw)
    with pytest.raises(ValueError, match="radius"):
        zo_sgd(f, np.zeros(3), radius=-1.0, iterations=5)
    with pytest.raises(ValueError, match="x must be a 1-D"):
        zo_sgd(f, np.zeros((3, 1)), **kw)


def test_zo_sgd_names_step_of_nonfinite_value():
    def f(X):
        return np.where(np.abs(X).max(axis=1) > 0.5, np.inf, 0.0)
    with pytest.raises(FloatingPointError, match="step 0 .*romberg"):
        zo_sgd(f, np.zeros(3), radius=1.0, iterations=3)


def test_exponential_and_logistic_gradients():
    f = ExponentialSeparable(4)
    x = np.array([0.1, -0.2, 0.3, 0.0])
    num = np.array([(f(x + 1e-6 * e) - f(x - 1e-6 * e))[0] / 2e-6 for e in np.eye(4)])
    np.testing.assert_allclose(f.gradient(x), num, rtol=1e-7)
    g = LogisticTest()
    num = np.array([(g(g.x0 + 1e-6 * e) - g(g.x0 - 1e-6 * e))[0] / 2e-6 for e in np.eye(g.dim)])
    np.testing.assert_allclose(g.gradient(g.x0), num, rtol=1e-6, atol=1e-10)
    assert g.single(g.x0) == pytest.approx(g(g.x0)[0])
    assert np.isfinite(g(np.full((1, g.dim), 1e4))).all()  # logaddexp: no overflow at large radii


def test_ris_channel_draw_and_ideal_optimum():
    P = RISProblem.from_seed(3, 5)
    gvec = np.random.default_rng(5).standard_normal(8)
    assert P.h_direct == pytest.approx((gvec[0] + 1j * gvec[1]) / math.sqrt(2))
    np.testing.assert_allclose(P.cascaded, (gvec[2:5] + 1j * gvec[5:]) / math.sqrt(2))
    theta, gain, rate = P.ideal_optimum()
    assert gain == pytest.approx((abs(P.h_direct) + np.abs(P.cascaded).sum()) ** 2)
    assert P.gain(theta)[0] == pytest.approx(gain, rel=1e-12)
    assert P.rate(theta) == pytest.approx(rate) and -P.objective(theta)[0] == pytest.approx(rate)
    rng = np.random.default_rng(0)
    assert all(P.gain(rng.uniform(0, 6.3, 3))[0] <= gain + 1e-12 for _ in range(50))


def test_ris_practical_amplitude_and_gradient():
    P = RISProblem.from_seed(4, 1, phase_model="practical")
    assert P.amplitude(np.array([0.43 * math.pi - math.pi / 2]))[0] == pytest.approx(0.2)
    assert P.amplitude(np.array([0.43 * math.pi + math.pi / 2]))[0] == pytest.approx(1.0)
    th = np.array([0.3, 1.0, 2.0, 4.0])
    num = np.array([(P.rate(th + 1e-6 * e) - P.rate(th - 1e-6 * e)) / 2e-6 for e in np.eye(4)])
    np.testing.assert_allclose(P.rate_gradient(th), num, rtol=1e-6, atol=1e-9)


def test_ris_noisy_pilots_unbiased_gain_and_float16():
    P = RISProblem.from_seed(2, 0, pilots=4)
    th = np.zeros((20000, 2))
    vals = P.objective(th, rng=np.random.default_rng(0))
    assert vals.shape == (20000,) and np.std(vals) > 0
    Q = RISProblem.from_seed(2, 0, quantize="float16")
    v = Q.objective(np.zeros(2))
    assert v[0] == float(np.float16(v[0]))


def test_ris_bad_inputs():
    with pytest.raises(ValueError, match="n_elements"):
        RISProblem.from_seed(0, 1)
    with pytest.raises(ValueError, match="cascaded"):
        RISProblem(1.0, np.ones((2, 2)))
    with pytest.raises(ValueError, match="snr"):
        RISProblem(1.0, np.ones(2), snr=0.0)
    with pytest.raises(ValueError, match="pilots"):
        RISProblem(1.0, np.ones(2), pilots=-1)
    with pytest.raises(ValueError, match="phase_model"):
        RISProblem(1.0, np.ones(2), phase_model="lossy")
    with pytest.raises(ValueError, match="rng"):
        RISProblem(1.0, np.ones(2), pilots=4).objective(np.zeros(2))


def test_prompt_problem_shapes_and_zero_prompt():
    rng = np.random.default_rng(0)
    weights = {"W1": rng.standard_normal((64, 8)), "b1": np.zeros(8), "W2": rng.standard_normal((8, 10)),
               "b2": np.zeros(10)}
    P = PromptTuning(weights, prompt_dim=3)
    assert P.X_train.shape == (450, 64) and P.X_test.shape == (447, 64)
    Z = np.zeros((2, 3))
    loss = P.loss(Z, np.arange(10))
    assert loss.shape == (2,) and loss[0] == loss[1]
    # cross-entropy by hand for one image
    x = P.X_train[0].astype(float)
    logits = np.maximum(x @ weights["W1"], 0) @ weights["W2"]
    ce = np.logaddexp.reduce(logits) - logits[P.y_train[0]]
    assert P.loss(Z[:1], np.array([0]))[0] == pytest.approx(ce, rel=1e-4)
    # masked pixels: rows 2..5, columns 1..6 are pulled half-way to 1
    assert P.X_test.reshape(-1, 8, 8)[:, 2:6, 1:7].min() >= 0.5


def test_equal_weights_step_keeps_five_eighths_of_the_r2_term():
    """Equal weights 1/2, 1/2 on the radii r and r/2 (the control of bc-romberg-removes-bias): on f(x) = x^4 the
    central difference is D(h; u) = 4 x^3 u + 4 x h^2 u^3, so the weighted difference keeps (1 + 1/4)/2 = 5/8 of
    the two-point r^2 term, 4 x (5/8) r^2 u^3 = 2.5 x r^2 u^3, where the Romberg weights (-1/3, 4/3) cancel it."""
    f = lambda X: np.sum(np.asarray(X) ** 4, axis=1)  # noqa: E731
    x0, r, lr = 0.7, 0.3, 0.01
    u = np.random.default_rng(5).standard_normal((1, 1))[0, 0]
    kw = dict(level=1, radius=r, evals_per_step=4, iterations=1, lr=lr, lr_power=0.0, seed=5)
    x_eq = zo_sgd(f, [x0], weights=[0.5, 0.5], **kw)["x_last"][0]
    x_rb = zo_sgd(f, [x0], **kw)["x_last"][0]
    assert x_eq == pytest.approx(x0 - lr * (4 * x0 ** 3 + 2.5 * x0 * r ** 2 * u ** 2) * u ** 2, rel=1e-12)
    assert x_rb == pytest.approx(x0 - lr * 4 * x0 ** 3 * u ** 2, rel=1e-12)
