"""The matrix-game and robust multiclass experiments tune the baselines on an instance they do not evaluate on."""
import pytest

from papers.pf_minimax.experiments import BOROUN_BASELINES, run_cc_games, run_robust_multiclass
from papers.pf_minimax.methods import run_method
from papers.pf_minimax.problems import make_problem
from shared.experiment import RunContext

SHAPE = {"N": 12, "d": 20, "C": 3, "s": 4, "delta": 10.0}
PARAMS = {**SHAPE, "seeds": [0, 1], "tune_seed": 7, "K": 20, "record_every": 10, "baseline_steps": [0.125, 0.25, 0.5]}


def test_tune_seed_must_differ_from_evaluation_seeds():
    with pytest.raises(ValueError, match="tune_seed 1 must not be one of the evaluation seeds"):
        run_robust_multiclass({**PARAMS, "tune_seed": 1}, None)


def test_baselines_are_tuned_on_the_tuning_instance(tmp_path):
    ctx = RunContext(name="robust_multiclass", scale="smoke", seed=0, out_dir=tmp_path, paper="pf_minimax")
    _, metrics = run_robust_multiclass(PARAMS, ctx)
    rmc = metrics["rmc"]
    assert rmc["tune_seed"] == 7
    tune_prob = make_problem("robust_multiclass", seed=7, **SHAPE)
    grid = PARAMS["baseline_steps"]
    for method in BOROUN_BASELINES:
        tuning = rmc["baseline_tuning"][method]
        finals = {c: float(run_method(method, tune_prob, 20, record_every=10, step_c=c).measure[-1]) for c in grid}
        assert tuning["gap_final"] == {f"{c:g}": v for c, v in finals.items()}
        best = min(grid, key=finals.get)
        assert tuning["best_step_c"] == best
        assert tuning["at_edge"] == (best in (min(grid), max(grid)))
        # the evaluation seeds run with the tuned constant
        eval_prob = make_problem("robust_multiclass", seed=0, **SHAPE)
        gap0 = float(run_method(method, eval_prob, 20, record_every=10, step_c=best).measure[-1])
        assert rmc["per_seed"]["gap_final"][method][0] == gap0


GAMES = {"uniform_shape": [6, 5], "uniform_seeds": [0, 1], "tune_seed": 3, "K": 40, "baseline_steps": [0.125, 0.5]}


def test_cc_games_refuse_a_tuning_game_among_the_evaluated_ones():
    with pytest.raises(ValueError, match="tune_seed 0 must not be one of the evaluation seeds"):
        run_cc_games({**GAMES, "tune_seed": 0}, None)


def test_cc_games_tune_the_baselines_on_the_tuning_game(tmp_path):
    ctx = RunContext(name="cc_games", scale="smoke", seed=0, out_dir=tmp_path, paper="pf_minimax")
    _, metrics = run_cc_games(GAMES, ctx)
    cc = metrics["cc"]
    assert cc["tune_seed"] == 3
    game = make_problem("uniform_game", n=6, m=5, seed=3)
    for method in BOROUN_BASELINES:
        finals = {c: float(run_method(method, game, 40, step_c=c).measure[-1]) for c in GAMES["baseline_steps"]}
        assert cc["baseline_tuning"][method]["gap_final"] == {f"{c:g}": v for c, v in finals.items()}
        assert cc["baseline_tuning"][method]["at_edge"]   # a two-point grid has no interior
        best = cc["baseline_tuning"][method]["best_step_c"]
        evaluated = make_problem("uniform_game", n=6, m=5, seed=1)
        assert cc["gap_final"]["uniform_s1"][method] == float(run_method(method, evaluated, 40, step_c=best).measure[-1])
