"""One house style for every figure; each method keeps its colour across a paper's figures."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from shared.config import SCALES  # noqa: E402
from shared.results import atomic_path  # noqa: E402

__all__ = ["PALETTE", "PNG_DPI", "use_style", "method_colors", "new_figure", "save_figure", "vector_path",
           "plot_band", "main"]

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
           "#882255", "#44AA99", "#999933", "#AA4499")  # Okabe-Ito, then Tol's muted


PNG_DPI = 300


def use_style() -> None:
    """Apply the house style (called by :func:`new_figure`)."""
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": PNG_DPI, "pdf.fonttype": 42, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
        "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False, "lines.linewidth": 1.4,
        "svg.hashsalt": "repro", "path.simplify": True,
    })


def method_colors(methods: Iterable[str]) -> dict[str, str]:
    """Colour per method, fixed by the order of ``methods`` (pass a paper's full method list every time): the
    12 colours of ``PALETTE``, then matplotlib's 20 ``tab20`` colours, so that up to 32 methods get distinct
    colours (more repeat them: tell them apart by line style)."""
    from matplotlib.colors import to_hex

    colours = PALETTE + tuple(to_hex(c) for c in plt.get_cmap("tab20").colors)
    return {m: colours[i % len(colours)] for i, m in enumerate(list(methods))}


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 4.2, height: float = 3.2):
    """``(fig, axes)`` in the house style, ``width`` x ``height`` inches per panel."""
    use_style()
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, layout="constrained")


def vector_path(path: str | Path) -> Path:
    """The vector twin of a PNG figure: the same name with ``.pdf``."""
    return Path(path).with_suffix(".pdf")


def save_figure(fig, path: str | Path) -> Path:
    """Save a figure atomically as a 300 dpi PNG and a vector PDF beside it (:func:`vector_path`), both without
    timestamps so that reruns give identical bytes, and close it."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=PNG_DPI, metadata={"Software": None})
    with atomic_path(vector_path(path)) as tmp:
        fig.savefig(tmp, format="pdf", metadata={"Creator": None, "Producer": None, "CreationDate": None})
    plt.close(fig)
    return Path(path)


def plot_band(ax, steps, center, lower=None, upper=None, *, label: str, color: str, log: bool = False, **line):
    """One method's metric against the step: a line at ``center`` and, when given, a shaded band
    [``lower``, ``upper``] (a spread over seeds: an interval or +- one standard error; say which in the
    axis label or the caption). ``log`` puts both axes on a log scale."""
    (handle,) = ax.plot(steps, center, label=label, color=color, **line)
    if lower is not None and upper is not None:
        ax.fill_between(steps, lower, upper, color=color, alpha=0.2, linewidth=0)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    return handle


def main(make_figures: Callable[[Path, Path, str], None], argv=None) -> int:
    """Command line of a paper's ``plots`` module: ``--results DIR --out DIR --scale S``."""
    parser = argparse.ArgumentParser(description="Draw a paper's figures and tables from its results.")
    parser.add_argument("--results", required=True, help="results/<scale>/<slug>")
    parser.add_argument("--out", required=True, help="figures/<scale>/<slug>")
    parser.add_argument("--scale", required=True, choices=SCALES)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    make_figures(Path(args.results), out, args.scale)
    print(f"figures written to {out}", file=sys.stderr)
    return 0
