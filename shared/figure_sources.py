"""Which experiments each figure of a paper is drawn from.

``snakemake --report`` groups a paper's figures and tables by experiment (category: the paper; subcategory:
the experiment). A paper declares the sources of a figure in its ``config.yaml``::

    figure_sources:
      p1_gradnorm_vs_iter.png: [deterministic]
      stochastic_table.md: [stochastic]

A figure without a declared source is attributed to every experiment whose name occurs in the figure's file
name (``rmc_gap_vs_iter.png`` and ``robust_multiclass`` do not match: declare those); one that matches none
falls back to ``figures`` or ``tables``. A figure drawn from several experiments goes under the first.

This module is used by the workflow only (no paper imports it), so a change here reruns no experiment.
"""
from __future__ import annotations

from shared.config import SCALES, ConfigError

__all__ = ["figure_sources", "report_subcategory", "validate_figure_sources"]

_TABLE_SUFFIXES = (".md", ".csv")


def _matching_experiments(figure: str, experiments) -> list[str]:
    """Experiments whose name occurs in the figure's file stem, longest name first."""
    stem = figure.rsplit(".", 1)[0]
    return sorted((e for e in experiments if e in stem), key=lambda e: (-len(e), e))


def figure_sources(config: dict, scale: str) -> dict[str, list[str]]:
    """``{figure: [experiment, ...]}`` for every figure of ``scale``: declared sources, else name matches
    (an empty list when neither gives one)."""
    declared = config.get("figure_sources", {})
    experiments = config[scale]["experiments"]
    return {fig: list(declared.get(fig) or _matching_experiments(fig, experiments))
            for fig in config[scale]["figures"]}


def report_subcategory(figure: str, sources: list[str]) -> str:
    """The report subcategory of ``figure``: its first source experiment, else ``tables`` or ``figures``."""
    if sources:
        return sources[0]
    return "tables" if figure.endswith(_TABLE_SUFFIXES) else "figures"


def validate_figure_sources(config: dict, *, where: str) -> None:
    """ConfigError naming the key when a declared figure is listed at no scale, or names an experiment that a
    scale listing the figure does not have."""
    for fig, sources in config.get("figure_sources", {}).items():
        scales = [s for s in SCALES if fig in config[s]["figures"]]
        if not scales:
            raise ConfigError(f"{where}: key 'figure_sources.{fig}': figure is not in the figures of any scale")
        for scale in scales:
            missing = [e for e in sources if e not in config[scale]["experiments"]]
            if missing:
                raise ConfigError(f"{where}: key 'figure_sources.{fig}': experiment(s) {missing} not defined at "
                                  f"scale {scale!r} (defined: {sorted(config[scale]['experiments'])})")
