"""Which experiments each figure is drawn from, and so what the workflow builds for one paper at one scale.

- **Experiments**: every experiment of the scale's block, except those that the paper's ``claims.yaml`` lists
  under ``not_run: {<scale>: {experiment: reason}}`` (a partial full run: their claims read "not evaluated"
  with the reason, and their rules are not built).
- **Figures**: every figure of the scale's block, except those drawn from a not-run experiment. A figure's
  experiments ("sources") are declared in the paper's ``config.yaml``::

      figure_sources:
        p1_gradnorm_vs_iter.png: [deterministic]
        stochastic_table.md: [stochastic]

  A figure without a declaration is attributed to every experiment whose name occurs in its file name
  (``rmc_gap_vs_iter.png`` and ``robust_multiclass`` do not match: declare those). A figure that neither
  gives a source is always drawn, so a paper whose plots cannot draw it without a not-run experiment must
  declare its sources.
- **Report subcategories** (``snakemake --report``): a figure goes under its first source experiment, else
  under ``figures`` or ``tables``.

No paper imports this module, so a change here reruns no experiment.
"""
from __future__ import annotations

from shared.config import SCALES, ConfigError

__all__ = ["figure_sources", "report_subcategory", "validate_figure_sources", "validate_not_run",
           "experiments_to_run", "figures_to_draw", "undrawn_figures"]

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


def validate_not_run(config: dict, not_run: dict, *, where: str) -> None:
    """ConfigError naming the key when ``not_run`` (claims.yaml) names an experiment the scale does not have,
    or leaves the scale with no experiment."""
    for scale, skipped in not_run.items():
        defined = config[scale]["experiments"]
        unknown = sorted(set(skipped) - set(defined))
        if unknown:
            raise ConfigError(f"{where}: key 'not_run.{scale}': experiment(s) {unknown} not defined at scale "
                              f"{scale!r} (defined: {sorted(defined)})")
        if set(defined) <= set(skipped):
            raise ConfigError(f"{where}: key 'not_run.{scale}': every experiment is listed; nothing would run")


def experiments_to_run(config: dict, scale: str, not_run: dict) -> dict[str, dict]:
    """The experiment entries of ``scale`` that run: all but ``not_run[scale]``."""
    skipped = not_run.get(scale, {})
    return {name: entry for name, entry in config[scale]["experiments"].items() if name not in skipped}


def undrawn_figures(config: dict, scale: str, not_run: dict) -> dict[str, list[str]]:
    """``{figure: [not-run sources]}`` for the figures of ``scale`` drawn from an experiment not run there."""
    skipped = not_run.get(scale, {})
    return {fig: [s for s in sources if s in skipped] for fig, sources in figure_sources(config, scale).items()
            if any(s in skipped for s in sources)}


def figures_to_draw(config: dict, scale: str, not_run: dict) -> list[str]:
    """The figures of ``scale`` that the workflow draws: all but those of :func:`undrawn_figures`."""
    undrawn = undrawn_figures(config, scale, not_run)
    return [fig for fig in config[scale]["figures"] if fig not in undrawn]
