"""Methods: first steps by hand, the anytime property, records, and bad inputs."""
import numpy as np
import pytest

from papers.pf_minimax.experiments import loglog_slope, tune_horizon_baselines
from papers.pf_minimax.methods import horizon_parameters, run_method
from papers.pf_minimax.problems import make_problem


def test_vx_first_step_by_hand():
    # A = diag(1, 2), x0 = y0 = ybar = (1/2, 1/2), mu_0 = 1, L_xy = 2:
    # gy = A^T x0 = (1/2, 1); y1 = P(y0 + gy/3) = P(2/3, 5/6) = (5/12, 7/12);
    # gx = A y1 = (5/12, 7/6) -> LMO e_0, alpha_0 = 1 -> x1 = e_0.
    game = make_problem("matrix_game", A=np.diag([1.0, 2.0]))
    tr = run_method("v_x", game, 1)
    assert np.allclose(tr.y, [5 / 12, 7 / 12]) and np.array_equal(tr.x, [1.0, 0.0])
    assert tr.params == {"mu0": 1.0, "omega": 0.5, "x_step": "open_loop", "freeze_y": False}


def test_proj_first_step_by_hand():
    # same game, PROJ: L_0 = L_xy^2/mu_0 = 4; x1 = P(x0 - A y1 / 4) = P(0.5 - 5/48, 0.5 - 7/24) = (0.59375, 0.40625)
    game = make_problem("matrix_game", A=np.diag([1.0, 2.0]))
    tr = run_method("proj", game, 1)
    assert np.allclose(tr.x, [0.59375, 0.40625])


def test_spfw_first_step_by_hand():
    # A = [[0, 1], [1, 0]] at the barycentre: all gradient entries tie -> both LMOs pick e_0, step 1;
    # Gap(e_0, e_0) = max(A^T e_0) - min(A e_0) = 1 - 0.
    game = make_problem("matrix_game", A=np.array([[0.0, 1.0], [1.0, 0.0]]))
    tr = run_method("sp_fw", game, 1)
    assert np.array_equal(tr.x, [1.0, 0.0]) and np.array_equal(tr.y, [1.0, 0.0])
    assert tr.measure.tolist() == [0.0, 1.0]


def test_symmetric_games_start_at_equilibrium():
    for name, kw in (("rps", {}), ("identity_game", {"n": 4})):
        game = make_problem(name, **kw)
        for method in ("proj", "peg"):
            assert np.all(np.abs(run_method(method, game, 20).measure) < 1e-15)


def test_anytime_prefix_and_records():
    game = make_problem("uniform_game", n=6, m=5, seed=1)
    short, long = run_method("v_xy", game, 30), run_method("v_xy", game, 60)
    assert np.array_equal(short.measure, long.measure[:31])
    tr = run_method("v_x", game, 7, record_every=3, time_iterations=True)
    assert tr.steps.tolist() == [0, 3, 6, 7] and tr.iter_seconds.shape == (7,)


def test_nc_defaults_and_best_so_far():
    p = make_problem("dro_synthetic", N=30, d=5, lam=0.1, grouping="example", seed=0)
    tr = run_method("v_y", p, 50, record_every=5)
    assert tr.params == {"mu0": 0.0, "omega": 0.5, "x_step": "short", "freeze_y": False}
    assert np.all(np.diff(tr.measure) <= 0) and np.allclose(tr.measure, np.minimum.accumulate(tr.raw_measure))
    q = make_problem("dro_synthetic", N=30, d=5, lam=0.0, grouping="block", seed=0)
    tr = run_method("v_x", q, 10)
    assert tr.params["mu0"] == 1.0 and tr.objective[0] == 0.5   # Phi(0) = 1/2 in group DRO


def test_loglog_slope_exact_power_law():
    k = np.arange(0, 2001)
    assert abs(loglog_slope(k, 3.0 * np.maximum(k, 1) ** -0.5) + 0.5) < 1e-12


@pytest.mark.parametrize("kwargs, msg", [
    (dict(method="nope"), "method"),
    (dict(omega=0.0), "omega"),
    (dict(omega=1.5), "omega"),
    (dict(n_iter=-1), "n_iter"),
    (dict(record_every=0), "record_every"),
    (dict(x_step="armijo"), "x_step"),
    (dict(mu0=-1.0), "mu0"),
])
def test_bad_run_arguments(kwargs, msg):
    args = dict(method="v_x", problem=make_problem("rps"), n_iter=5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        run_method(args.pop("method"), args.pop("problem"), args.pop("n_iter"), **args)


def test_ncc_needs_positive_mu0_and_peg_needs_cc():
    p = make_problem("dro_synthetic", N=30, d=5, lam=0.0, grouping="block", seed=0)
    with pytest.raises(ValueError, match="mu0"):
        run_method("v_x", p, 5, mu0=0.0)
    with pytest.raises(ValueError, match="peg"):
        run_method("peg", p, 5)


def test_freeze_y_keeps_the_dual_at_its_center_and_descends_f_at_ybar():
    """The negative control: with the dual step removed y stays at ybar, and the x-step is the same LMO step on
    f(., ybar) as the running method takes on f(., y_{k+1})."""
    prob = make_problem("dro_synthetic", N=30, d=5, lam=0.0, grouping="block", seed=0)
    tr = run_method("v_x", prob, 5, freeze_y=True)
    np.testing.assert_array_equal(tr.y, prob.Y.center())
    x = prob.X.center()
    y = prob.Y.center()
    L_k = prob.L_xx + prob.L_xy ** 2 / (prob.mu_y + 1.0)
    gx = prob.grad_x(x, y)
    d = prob.X.lmo(gx) - x
    alpha = min(1.0, max(-float(np.vdot(gx, d)), 0.0) / (L_k * float(np.vdot(d, d))))
    np.testing.assert_allclose(run_method("v_x", prob, 1, freeze_y=True).x, x + alpha * d, rtol=1e-12)
    with pytest.raises(ValueError, match="freeze_y"):
        run_method("sp_fw", prob, 5, freeze_y=True)


def test_peg_step_scales_the_extragradient_step():
    game = make_problem("uniform_game", n=6, m=5, seed=1)
    a = run_method("peg", game, 3)
    b = run_method("peg", game, 3, peg_step=0.5)
    np.testing.assert_array_equal(a.x, b.x)
    c = run_method("peg", game, 3, peg_step=1.0)
    assert not np.array_equal(a.x, c.x)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="peg_step"):
            run_method("peg", game, 3, peg_step=bad)


def test_horizon_parameters_from_eps():
    # T = 64: R-PDCG eps = 64^(-1/6) = 1/2, CG-RPGA eps = 64^(-1/4) = 1/(2 sqrt 2); gamma = step_c / sqrt(T)
    r = horizon_parameters("r_pdcg", 64, mu0=2.0, step_c=1.0)
    assert np.isclose(r["eps"], 0.5) and np.isclose(r["mu"], 1.0) and np.isclose(r["gamma"], 0.125)
    c = horizon_parameters("cg_rpga", 64, step_c=16.0)
    assert np.isclose(c["mu"], 1 / (2 * np.sqrt(2))) and c["gamma"] == 1.0   # capped at 1
    for kwargs, msg in ((dict(method="v_x", horizon=5), "method"), (dict(method="r_pdcg", horizon=0), "horizon"),
                        (dict(method="r_pdcg", horizon=5, step_c=0.0), "step_c"),
                        (dict(method="cg_rpga", horizon=5, mu0=float("inf")), "mu0")):
        with pytest.raises(ValueError, match=msg):
            horizon_parameters(**kwargs)


def test_boroun_baselines_first_step_by_hand():
    # A = diag(1, 2), T = 1: eps = 1, mu = 1, gamma = 1. gy = A^T x0 - mu (y0 - ybar) = (1/2, 1).
    # R-PDCG: y1 = LMO_Y(-gy) = e_1; gx = A y1 = (0, 2) -> x1 = e_0.
    # CG-RPGA: y1 = P(y0 + gy/(L_yy + L_xy + mu)) = P(y0 + gy/3) = (5/12, 7/12); gx = (5/12, 7/6) -> x1 = e_0.
    game = make_problem("matrix_game", A=np.diag([1.0, 2.0]))
    tr = run_method("r_pdcg", game, 1)
    assert np.array_equal(tr.y, [0.0, 1.0]) and np.array_equal(tr.x, [1.0, 0.0])
    assert tr.params["mu"] == 1.0 and tr.params["gamma"] == 1.0 and tr.params["horizon"] == 1
    tr = run_method("cg_rpga", game, 1)
    assert np.allclose(tr.y, [5 / 12, 7 / 12]) and np.array_equal(tr.x, [1.0, 0.0])


def test_boroun_baselines_reject_bad_inputs():
    game = make_problem("matrix_game", A=np.diag([1.0, 2.0]))
    for method in ("r_pdcg", "cg_rpga"):
        for kwargs, msg in ((dict(step_c=0.0), "step_c"), (dict(step_c=float("nan")), "step_c"),
                            (dict(horizon=0), "horizon"), (dict(mu0=-1.0), "mu0"),
                            (dict(freeze_y=True), "freeze_y")):
            with pytest.raises(ValueError, match=msg):
                run_method(method, game, 3, **kwargs)
    # mu0 reaches the fixed regulariser mu = mu0 eps (T = 64: eps = 1/2 for R-PDCG)
    assert run_method("r_pdcg", game, 64, mu0=2.0).params["mu"] == 1.0


def test_boroun_baselines_depend_on_the_horizon():
    """Not anytime: the K-run is not a prefix of the 2K-run unless the horizon is fixed."""
    game = make_problem("uniform_game", n=6, m=5, seed=1)
    for method in ("r_pdcg", "cg_rpga"):
        short, long = run_method(method, game, 30), run_method(method, game, 60)
        assert not np.array_equal(short.measure, long.measure[:31])
        fixed = run_method(method, game, 30, horizon=60)
        np.testing.assert_array_equal(fixed.measure, long.measure[:31])


def test_baseline_tuning_picks_the_smallest_final_gap():
    game = make_problem("uniform_game", n=6, m=5, seed=1)
    out = tune_horizon_baselines(game, 40, [0.25, 1.0])
    for method in ("r_pdcg", "cg_rpga"):
        finals = out[method]["gap_final"]
        assert finals[f"{out[method]['best_step_c']:g}"] == min(finals.values())
        for c in (0.25, 1.0):   # each recorded gap is the final gap of a run with that step constant
            assert finals[f"{c:g}"] == run_method(method, game, 40, step_c=c).measure[-1]
    with pytest.raises(ValueError, match="baseline_steps"):
        tune_horizon_baselines(game, 40, [])


def test_to_target_call_runs_the_iterations_with_two_gap_records():
    from papers.pf_minimax.experiments import _to_target_call

    game = make_problem("uniform_game", n=8, m=6, seed=0)
    ref = run_method("peg", game, 40, peg_step=1.0)
    tr = _to_target_call(game, "peg", 40, {"peg_step": 1.0})()
    assert np.array_equal(tr.steps, [0, 40]) and np.array_equal(tr.x, ref.x) and np.array_equal(tr.y, ref.y)
    assert tr.measure[-1] == ref.measure[-1]
    assert np.array_equal(_to_target_call(game, "peg", 0, {})().steps, [0, 1])  # at least one iteration
