"""Figures are grouped by the experiment they are drawn from (snakemake --report subcategories)."""
import pytest

from shared.config import ConfigError
from shared.figure_sources import (experiments_to_run, figure_sources, figures_to_draw, report_subcategory,
                                   undrawn_figures, validate_figure_sources, validate_not_run)


def _config(figure_sources_=None, *, full_experiments=("sweep", "sweep_large", "perf")):
    block = lambda exps: {"experiments": {e: {"params": {}} for e in exps},  # noqa: E731
                          "figures": ["sweep_large_error.png", "timing.md", "other.png"]}
    cfg = {"smoke": block(("sweep", "perf")), "quick": block(("sweep", "perf")), "full": block(full_experiments)}
    if figure_sources_ is not None:
        cfg["figure_sources"] = figure_sources_
    return cfg


def test_name_match_prefers_the_longest_experiment_name():
    assert figure_sources(_config(), "full")["sweep_large_error.png"] == ["sweep_large", "sweep"]
    assert figure_sources(_config(), "quick")["sweep_large_error.png"] == ["sweep"]


def test_declared_sources_win_over_the_name():
    cfg = _config({"timing.md": ["perf"], "sweep_large_error.png": ["perf", "sweep"]})
    sources = figure_sources(cfg, "quick")
    assert sources["timing.md"] == ["perf"]
    assert sources["sweep_large_error.png"] == ["perf", "sweep"]
    assert sources["other.png"] == []


@pytest.mark.parametrize("figure,sources,group", [
    ("a.png", ["sweep", "perf"], "sweep"), ("a.png", [], "figures"), ("t.md", [], "tables"), ("t.csv", [], "tables"),
])
def test_subcategory(figure, sources, group):
    assert report_subcategory(figure, sources) == group


def test_unknown_experiment_is_named_with_its_scale():
    cfg = _config({"other.png": ["sweep_large"]})
    with pytest.raises(ConfigError, match=r"figure_sources.other.png.*'sweep_large'.*scale 'smoke'"):
        validate_figure_sources(cfg, where="papers/x/config.yaml")


def test_figure_listed_at_no_scale_is_an_error():
    with pytest.raises(ConfigError, match="figure_sources.missing.png': figure is not in the figures"):
        validate_figure_sources(_config({"missing.png": ["sweep"]}), where="papers/x/config.yaml")


def test_valid_sources_pass():
    validate_figure_sources(_config({"timing.md": ["perf"]}), where="papers/x/config.yaml")


def test_not_run_experiments_and_their_figures_are_left_out():
    cfg = _config({"timing.md": ["perf"]})
    not_run = {"full": {"sweep_large": "projected 10 CPU-hours"}}
    assert list(experiments_to_run(cfg, "full", not_run)) == ["sweep", "perf"]
    assert list(experiments_to_run(cfg, "quick", not_run)) == ["sweep", "perf"]
    # sweep_large_error.png is drawn from sweep_large (and sweep): not drawn; other.png has no source: drawn
    assert undrawn_figures(cfg, "full", not_run) == {"sweep_large_error.png": ["sweep_large"]}
    assert figures_to_draw(cfg, "full", not_run) == ["timing.md", "other.png"]
    assert figures_to_draw(cfg, "quick", not_run) == cfg["quick"]["figures"]


def test_not_run_names_unknown_experiments_and_refuses_an_empty_run():
    with pytest.raises(ConfigError, match=r"not_run.quick': experiment\(s\) \['sweep_large'\] not defined"):
        validate_not_run(_config(), {"quick": {"sweep_large": "x"}}, where="papers/x/claims.yaml")
    with pytest.raises(ConfigError, match="every experiment is listed"):
        validate_not_run(_config(), {"smoke": {"sweep": "x", "perf": "y"}}, where="papers/x/claims.yaml")
    validate_not_run(_config(), {"full": {"sweep_large": "x"}}, where="papers/x/claims.yaml")
