"""DREAM-R and baselines on quadratics: exact equivalences, stationarity, bytes and bad input."""
import numpy as np
import pytest

from papers.dream.algorithms import run_quadratic
from papers.dream.problems import QuadraticFederation


@pytest.fixture(scope="module")
def prob():
    return QuadraticFederation.random(4, 2, 3, seed=0)


def test_dream_reaches_exact_pareto_stationarity_and_fmgda_stalls(prob):
    dream = run_quadratic(prob, "dream", rounds=150)
    fmgda = run_quadratic(prob, "fmgda", rounds=150)
    assert np.sqrt(dream["stationarity"][-1]) < 1e-9
    assert np.sqrt(fmgda["stationarity"][-1]) > 1e-2
    assert dream["x"].shape == (151, 3) and dream["weights"].shape == (151, 2)
    np.testing.assert_array_equal(dream["weights"][0], [0.5, 0.5])


def test_dream_with_preference_matrix_equals_scaffold(prob):
    w = np.array([0.3, 0.7])
    for S in (None, 2):
        a = run_quadratic(prob, "dream", rounds=30, correction=np.outer(w, np.ones(2)), clients_per_round=S, seed=4)
        b = run_quadratic(prob, "scaffold_ls", rounds=30, preference=w, clients_per_round=S, seed=4)
        np.testing.assert_allclose(a["x"], b["x"], atol=1e-12)


def test_single_task_dream_is_scaffold():
    p = QuadraticFederation.random(3, 1, 2, seed=3)
    a = run_quadratic(p, "dream", rounds=20)
    b = run_quadratic(p, "scaffold_ls", rounds=20)
    np.testing.assert_allclose(a["x"], b["x"], atol=1e-12)


def test_one_local_step_identities(prob):
    # K = 1, full participation: the corrections average out, so DREAM = DREAM without CV, and
    # FMGDA = centralised MGDA with the same step; momentum is reset every round, so beta has no effect.
    d1 = run_quadratic(prob, "dream", rounds=25, local_steps=1)
    np.testing.assert_allclose(d1["x"], run_quadratic(prob, "dream_no_cv", rounds=25, local_steps=1)["x"], atol=1e-12)
    np.testing.assert_allclose(d1["x"], run_quadratic(prob, "dream", rounds=25, local_steps=1, momentum=0.7)["x"],
                               atol=1e-14)
    f1 = run_quadratic(prob, "fmgda", rounds=25, local_steps=1)
    np.testing.assert_allclose(f1["x"], run_quadratic(prob, "mgda_central", rounds=25, local_steps=1)["x"], atol=1e-12)


def test_partial_participation_keeps_exact_stationarity(prob):
    # needs the server's 1/N update of c_m (1/S would break c_m = mean_i c_{i,m})
    res = run_quadratic(prob, "dream", rounds=400, clients_per_round=2, seed=1)
    assert np.sqrt(res["stationarity"][-1]) < 1e-8


def test_ca_distance_and_bytes(prob):
    central = run_quadratic(prob, "mgda_central", rounds=10)
    assert np.nanmax(central["ca_distance"]) < 1e-12
    d, M, S = 3, 2, 2
    res = run_quadratic(prob, "dream", rounds=5, clients_per_round=S)
    np.testing.assert_array_equal(res["bytes_up"], 4 * S * (d + M * d))
    np.testing.assert_array_equal(res["bytes_down"], 4 * S * (d + M + M * d))
    f = run_quadratic(prob, "fmgda", rounds=5)
    np.testing.assert_array_equal(f["bytes_up"], 4 * 4 * M * d)


def test_noise_is_seeded():
    p = QuadraticFederation.random(3, 2, 3, noise_std=1.0, seed=0)
    a = run_quadratic(p, "dream", rounds=10, momentum=0.5, seed=7)
    b = run_quadratic(p, "dream", rounds=10, momentum=0.5, seed=7)
    c = run_quadratic(p, "dream", rounds=10, momentum=0.5, seed=8)
    np.testing.assert_array_equal(a["x"], b["x"])
    assert not np.allclose(a["x"], c["x"])


def test_other_modes_run(prob):
    for kw in ({"correction": "pcgrad"}, {"local_mode": "per_task"}, {"rho": 1.0}, {"cv_ema": 0.5}):
        res = run_quadratic(prob, "dream", rounds=20, **kw)
        assert np.all(np.isfinite(res["stationarity"]))
    fed = run_quadratic(prob, "fedavg_ls", rounds=5)
    np.testing.assert_array_equal(fed["weights"], 0.5)


def test_divergence_raises(prob):
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match="dream.*round"):
        run_quadratic(prob, "dream", rounds=200, lr_local=10.0)


@pytest.mark.parametrize("kw,name", [
    ({"rounds": 0}, "rounds"), ({"local_steps": 0}, "local_steps"), ({"lr_local": 0.0}, "lr_local"),
    ({"lr_global": -1.0}, "lr_global"), ({"momentum": 1.0}, "momentum"), ({"momentum": -0.1}, "momentum"),
    ({"cv_ema": 0.0}, "cv_ema"), ({"cv_ema": 1.5}, "cv_ema"), ({"rho": -1.0}, "rho"),
    ({"clients_per_round": 0}, "clients_per_round"), ({"clients_per_round": 5}, "clients_per_round"),
    ({"preference": [0.6, 0.6]}, "preference"), ({"preference": [-0.1, 1.1]}, "preference"),
    ({"correction": np.eye(3)}, "correction"), ({"local_mode": "sequential"}, "local_mode"),
])
def test_bad_input(prob, kw, name):
    args = {"rounds": 2, **kw}
    with pytest.raises(ValueError, match=name):
        run_quadratic(prob, "dream", **args)


def test_unknown_method(prob):
    with pytest.raises(ValueError, match="method"):
        run_quadratic(prob, "fedprox", rounds=2)


# ------------------------------------------------------------------------------------------------- FedCMOO
def test_fedcmoo_one_local_step_is_central_mgda(prob):
    # K = 1, all clients, exact gradients: the averaged anchor Jacobian is G(x^t), so the round is
    # x^{t+1} = x^t - eta_g eta_l d*(x^t), the centralised MGDA step.
    a = run_quadratic(prob, "fedcmoo", rounds=25, local_steps=1)
    b = run_quadratic(prob, "mgda_central", rounds=25, local_steps=1)
    np.testing.assert_allclose(a["x"], b["x"], atol=1e-12)
    np.testing.assert_allclose(a["weights"][:-1], b["weights"][:-1], atol=1e-12)


def test_fedcmoo_with_preference_matrix_is_fedavg(prob):
    # A = w 1^T gives omega = w whatever lam is: FedCMOO's local steps are FedAvg on sum_m w_m f_{i,m}
    w = np.array([0.3, 0.7])
    for S in (None, 2):
        a = run_quadratic(prob, "fedcmoo", rounds=20, correction=np.outer(w, np.ones(2)), clients_per_round=S, seed=2)
        b = run_quadratic(prob, "fedavg_ls", rounds=20, preference=w, clients_per_round=S, seed=2)
        np.testing.assert_allclose(a["x"], b["x"], atol=1e-12)
    p1 = QuadraticFederation.random(3, 1, 2, seed=3)   # M = 1: FedAvg
    np.testing.assert_allclose(run_quadratic(p1, "fedcmoo", rounds=15)["x"],
                               run_quadratic(p1, "fedavg_ls", rounds=15)["x"], atol=1e-12)


def test_fedcmoo_keeps_a_drift_floor_and_counts_bytes(prob):
    res = run_quadratic(prob, "fedcmoo", rounds=150)
    assert np.sqrt(res["stationarity"][-1]) > 1e-2        # no drift correction, K = 10, heterogeneous clients
    d, M, S = 3, 2, 2
    part = run_quadratic(prob, "fedcmoo", rounds=4, clients_per_round=S)
    np.testing.assert_array_equal(part["bytes_up"], 4 * S * (d + M * d))     # Jacobian (uncompressed) + model
    np.testing.assert_array_equal(part["bytes_down"], 4 * S * (d + M))       # model + weights


def test_dream_exact_with_more_tasks():
    # the drift-corrected fixed point is G lam = 0 for any M (M < d here: with M > d the Pareto-stationary
    # set has interior, and the uncorrected baselines can end inside it)
    p = QuadraticFederation.random(4, 5, 8, seed=1)
    d = run_quadratic(p, "dream", rounds=200)
    assert np.sqrt(d["stationarity"][-1]) < 1e-9
    assert np.sqrt(run_quadratic(p, "fedcmoo", rounds=200)["stationarity"][-1]) > 1e-3
