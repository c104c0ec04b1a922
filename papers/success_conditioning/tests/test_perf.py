"""The trust-region timing of the perf experiment: solutions and per-instance seconds from a counting clock."""
import itertools

import numpy as np

from papers.success_conditioning.core import chi2_trust_region, influence_terms, success_condition
from papers.success_conditioning.experiments import _solve_trust_region, _time_trust_regions

PI = np.array([0.25, 0.25, 0.5])
Q = np.array([0.8, 0.4, 0.2])


def _bandit_problem(pi, q):
    return ("bandit", pi[None], q[None], influence_terms(pi, q)["action_influence"], None, None)


def test_solve_trust_region_dispatches_to_the_solver():
    prob = _bandit_problem(PI, Q)
    # at delta = I the closed form is the SC policy pi q / V = (0.5, 0.25, 0.25)
    np.testing.assert_allclose(_solve_trust_region("closed_form", prob), [[0.5, 0.25, 0.25]], atol=1e-15)
    np.testing.assert_array_equal(_solve_trust_region("slsqp", prob),
                                  chi2_trust_region(PI[None], Q[None], prob[3], solver="numeric"))
    p, backend = _solve_trust_region("cvxpy", prob)
    assert isinstance(backend, str)
    np.testing.assert_allclose(p, [[0.5, 0.25, 0.25]], atol=1e-6)


def test_time_trust_regions_per_instance_seconds_and_solutions():
    rng = np.random.default_rng(1)
    bandits = [(rng.dirichlet(np.ones(4)), rng.uniform(0.1, 0.9, 4)) for _ in range(3)]
    problems = [_bandit_problem(pi, q) for pi, q in bandits]
    ticks = itertools.count()
    # every reading of the clock advances it by 1 s: each call takes 1 s, so one call per measurement
    seconds, solutions, number = _time_trust_regions(problems, ("closed_form", "slsqp"), 2,
                                                     cpu_clock=lambda: float(next(ticks)))
    assert number == {"closed_form": 1, "slsqp": 1}
    assert seconds == {"closed_form": 1 / 3, "slsqp": 1 / 3}
    assert len(solutions["closed_form"]) == len(solutions["slsqp"]) == 3
    for (pi, q), p_cf, p_num in zip(bandits, solutions["closed_form"], solutions["slsqp"]):
        np.testing.assert_allclose(p_cf[0], success_condition(pi, q), atol=1e-14)
        np.testing.assert_array_equal(p_num, _solve_trust_region("slsqp", _bandit_problem(pi, q)))
