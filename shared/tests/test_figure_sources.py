"""Figures are grouped by the experiment they are drawn from (snakemake --report subcategories)."""
import pytest

from shared.config import ConfigError
from shared.figure_sources import figure_sources, report_subcategory, validate_figure_sources


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
