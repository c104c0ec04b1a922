"""IAMP baseline: the fixed point, the Parisi PDE against its Cole-Hopf solution, rounding, bad inputs."""
import math

import numpy as np
import pytest

from papers.mipcrim.iamp import edwards_anderson_q, iamp, sequential_rounding, solve_parisi_pde
from papers.mipcrim.problems import ising_energy, sk_instance


def test_q_star_solves_the_fixed_point():
    beta = 6.0
    q = edwards_anderson_q(beta)
    z, w = np.polynomial.hermite_e.hermegauss(200)
    assert abs(np.sum(w / w.sum() * np.tanh(beta * math.sqrt(q) * z) ** 2) - q) < 1e-10
    assert 0.8 < q < 0.9
    assert edwards_anderson_q(0.5) == 0.0


@pytest.mark.parametrize("beta", [0.0, -1.0, float("nan")])
def test_q_star_rejects_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        edwards_anderson_q(beta)


def test_parisi_pde_with_mu_one_matches_cole_hopf():
    """mu = 1 on [0, 1] (q* = 0): Phi(t, x) = log 2 cosh x + beta^2 (1 - t) / 2, so d_xx Phi = sech^2 x."""
    beta = 1.5
    pde = solve_parisi_pde(beta, 0.0, 0.05, nx=1601)
    assert abs(pde.phi0 - (math.log(2.0) + beta ** 2 / 2)) < 2e-3
    x = np.linspace(-3, 3, 13)
    d1, d2 = pde.at(0, x)
    assert np.max(np.abs(d1 - np.tanh(x))) < 2e-3
    assert np.max(np.abs(d2 - 1.0 / np.cosh(x) ** 2)) < 5e-3


def test_parisi_pde_rejects_bad_delta():
    with pytest.raises(ValueError, match="delta"):
        solve_parisi_pde(2.0, 0.5, 0.0)


def test_sequential_rounding_never_decreases_the_objective():
    rng = np.random.default_rng(0)
    for _ in range(5):
        B = rng.standard_normal((40, 40))
        A = (B + B.T) / 2
        np.fill_diagonal(A, 0.0)
        z = rng.uniform(-1.5, 1.5, 40)
        s = sequential_rounding(A, z)
        c = np.clip(z, -1, 1)
        assert set(np.unique(s)) <= {-1, 1}
        assert s @ A @ s >= c @ A @ c - 1e-12


def test_iamp_returns_spins_and_their_energies_and_beats_random_spins():
    n = 200
    J = sk_instance(n, 42)
    np.fill_diagonal(J, 0.0)
    S, E = iamp(J, restarts=2, seed=1)
    assert S.shape == (n, 2) and set(np.unique(S)) <= {-1, 1}
    for r in range(2):
        assert E[r] == pytest.approx(ising_energy(J, S[:, r]), rel=1e-12)
    assert E.min() / (n ** 1.5 / math.sqrt(2)) < -0.6      # random spins: about 0; ground state about -0.76


def test_iamp_rejects_bad_input():
    J = sk_instance(20, 0)
    with pytest.raises(ValueError, match="zero diagonal"):
        iamp(J + np.eye(20))
    J0 = J.copy()
    np.fill_diagonal(J0, 0.0)
    with pytest.raises(ValueError, match="restarts"):
        iamp(J0, restarts=0)


def test_time_to_target_known_answers_and_bad_input():
    from papers.mipcrim.experiments import time_to_target

    assert time_to_target(2.0, 1.0) == 2.0
    assert time_to_target(2.0, 0.0) is None
    # p = 0.5: ln(0.01) / ln(0.5) = 6.64 runs
    assert time_to_target(1.0, 0.5) == pytest.approx(math.log(0.01) / math.log(0.5))
    assert time_to_target(1.0, 0.995) == 1.0          # fewer than one run needed: one run
    with pytest.raises(ValueError, match="success"):
        time_to_target(1.0, 1.5)


def test_least_cpu_with_outputs_keeps_last_output_and_counts_calls():
    from papers.mipcrim.experiments import least_cpu_with_outputs

    ticks, calls = iter(range(1000)), {"a": 0, "b": 0}

    def clock():                                  # every reading advances by one "second"
        return float(next(ticks))

    def make(name):
        def fn():
            calls[name] += 1
            return (name, calls[name])
        return fn

    timing, out = least_cpu_with_outputs({"a": make("a"), "b": make("b")}, 3, min_seconds=0.5, cpu_clock=clock)
    # one warm-up plus 3 rounds of one call each (a warm-up reading of 1 s >= 0.5 s: no batching)
    assert calls == {"a": 4, "b": 4}
    assert out == {"a": ("a", 4), "b": ("b", 4)}
    assert timing["number"] == {"a": 1, "b": 1} and timing["rounds"] == 3
    assert timing["seconds"] == {"a": 1.0, "b": 1.0}


def test_tts_share_known_answers_and_bad_input():
    """share = t_mip / (t_mip + t_ref) = r / (1 + r): 1/2 at a tie, 1/3 when MiP-CRIM takes half the time, and an
    unreached target (None, infinite time) counts against the method that missed it."""
    from papers.mipcrim.experiments import tts_share

    assert tts_share(1.0, 1.0) == 0.5
    assert tts_share(1.0, 2.0) == pytest.approx(1.0 / 3.0)
    assert tts_share(3.0, 1.0) == pytest.approx(0.75)
    assert tts_share(None, 1.0) == 1.0
    assert tts_share(1.0, None) == 0.0
    assert tts_share(None, None) == 0.5
    for r in (0.01, 0.5, 2.0, 50.0):                    # monotone in the ratio, below 1/2 iff r < 1
        assert (tts_share(r, 1.0) < 0.5) == (r < 1.0)
        assert tts_share(r, 1.0) == pytest.approx(r / (1.0 + r))
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            tts_share(bad, 1.0)
