"""Figures and tables of the clipped_sgd reproduction, drawn from saved results (never recomputed).

``python -m papers.clipped_sgd.plots --results results/quick/clipped_sgd --out figures/quick/clipped_sgd --scale quick``

Medians and interquartile ranges over datasets are summaries of the per-dataset values in ``results.csv``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import PALETTE, main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_write_text, markdown_table, read_metrics, read_tidy

__all__ = ["make_figures", "LABELS"]

METHODS = ("sgd", "clip_sgd", "sgd_predicted", "erm", "clipped", "ls", "huber", "avg", "sgd_tuned", "avg_tuned")
LABELS = {"sgd": "SGD", "clip_sgd": "Clip-SGD", "sgd_predicted": "SGD, predicted (first order)",
          "avg": "averaged SGD", "sgd_tuned": "SGD, tuned step", "avg_tuned": "averaged SGD, tuned step",
          "erm": r"ERM $(\bar x - x^*)^2$", "clipped": r"clipped fixed point $(x_\lambda - x^*)^2$",
          "ls": r"least squares $\|x_S - x^*\|^2$", "huber": "HuberRegressor"}
COLORS = method_colors(METHODS)


def _summary(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """Median and quartiles of ``value`` per ``by``."""
    g = frame.groupby(by)["value"]
    return pd.DataFrame({"median": g.median(), "q25": g.quantile(0.25), "q75": g.quantile(0.75)}).sort_index()


def _errorbar(ax, summary, **kwargs):
    x = summary.index.to_numpy(dtype=float)
    med = summary["median"].to_numpy()
    yerr = np.vstack([med - summary["q25"].to_numpy(), summary["q75"].to_numpy() - med])
    ax.errorbar(x, med, yerr=yerr, marker="o", capsize=3, **kwargs)


def _moment_scaling(results: Path, out: Path) -> None:
    frame = read_tidy(results / "moment_scaling" / "results.csv")
    metrics = read_metrics(results / "moment_scaling" / "metrics.json")
    fig, axes = new_figure(ncols=2, width=4.4, height=3.4)
    for i, alpha in enumerate(sorted(frame["alpha"].unique())):
        color = PALETTE[i % len(PALETTE)]
        for ax, method in zip(axes[0], ("sigma2", "moment_p")):
            s = _summary(frame[(frame["alpha"] == alpha) & (frame["method"] == method)], "step")
            n = s.index.to_numpy(dtype=float)
            plot_band(ax, n, s["median"], s["q25"], s["q75"], label=rf"$\alpha$ = {alpha:g}", color=color, log=True,
                      marker="o")
            slope = 2.0 / alpha - 1.0 if method == "sigma2" else 0.0
            ax.loglog(n, s["median"].iloc[0] * (n / n[0]) ** slope, color=color, linestyle=":", linewidth=1)
    axes[0, 0].set_title(r"$\sigma_N^2(x^*)$: median, IQR; dotted $N^{2/\alpha - 1}$")
    axes[0, 1].set_title(rf"$M_{{{metrics['p']:g}}}(x^*)$: median, IQR; dotted constant")
    for ax in axes[0]:
        ax.set_xlabel("N")
        ax.legend(fontsize=7)
    save_figure(fig, out / "moment_scaling.png")


def _sgd_vs_clip(results: Path, out: Path) -> None:
    frame = read_tidy(results / "sgd_vs_clip" / "results.csv")
    frame = frame[frame["metric"] == "err_avg"]
    fig, axes = new_figure(width=4.8, height=3.6)
    ax = axes[0, 0]
    for method in ("sgd", "sgd_predicted", "clip_sgd"):
        s = _summary(frame[frame["method"] == method], "n_samples")
        _errorbar(ax, s, color=COLORS[method], label=LABELS[method],
                  linestyle="--" if method == "sgd_predicted" else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel(r"mean $\|x_k - x_S\|^2$, $k > K/4$")
    ax.set_title(r"least squares, $\alpha$ = 1.5, constant $\gamma$ (median, IQR)")
    ax.legend(fontsize=7)
    save_figure(fig, out / "sgd_vs_clip.png")


def _schedules(results: Path, out: Path) -> None:
    frame = read_tidy(results / "schedules" / "results.csv")
    tail = frame[frame["metric"] == "err_tail"]
    names = list(dict.fromkeys(tail["schedule"]))
    fig, axes = new_figure(ncols=len(names), width=3.4, height=3.2)
    for ax, name in zip(axes[0], names):
        for method in ("sgd", "clip_sgd"):
            s = _summary(tail[(tail["schedule"] == name) & (tail["method"] == method)], "n_samples")
            _errorbar(ax, s, color=COLORS[method], label=LABELS[method])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N")
        ax.set_title(f"schedule: {name}")
    axes[0, 0].set_ylabel(r"mean $\|x_k - x_S\|^2$, last 10% of steps")
    axes[0, 0].legend(fontsize=7)
    save_figure(fig, out / "schedules.png")

    at = frame[(frame["metric"] == "err_at") & (frame["schedule"] == "theory")]
    fig, axes = new_figure(width=4.8, height=3.6)
    ax = axes[0, 0]
    for j, n in enumerate(sorted(at["n_samples"].unique())):
        for method in ("sgd", "clip_sgd"):
            s = _summary(at[(at["n_samples"] == n) & (at["method"] == method)], "step")
            k = s.index.to_numpy(dtype=float)
            ax.loglog(k, s["median"], marker="o", markersize=3, color=COLORS[method],
                      linestyle="-" if j else "--", label=f"{LABELS[method]}, N = {n:g}")
    k = np.asarray(sorted(at["step"].unique()), dtype=float)
    ref = at[at["step"] == k[0]]["value"].median()
    ax.loglog(k, ref * (k / k[0]) ** (-1.0 / 3.0), color="0.5", linestyle=":", label=r"slope $-1/3$")
    ax.set_xlabel("step k")
    ax.set_ylabel(r"median $\|x_k - x_S\|^2$")
    ax.set_title(r"theory schedule: $\gamma_k \propto 1/(k+100)$, $\lambda_k \propto (1 + k/100)^{1/1.2}$",
                 fontsize=8)
    ax.legend(fontsize=7)
    save_figure(fig, out / "theory_schedule_convergence.png")


def _generalization(results: Path, out: Path) -> None:
    frame = read_tidy(results / "generalization" / "results.csv")
    metrics = read_metrics(results / "generalization" / "metrics.json")
    fig, axes = new_figure(width=4.8, height=3.6)
    ax = axes[0, 0]
    for method in ("erm", "clipped", "ls", "huber"):
        sub = frame[frame["method"] == method]
        if sub.empty:
            continue
        s = _summary(sub, "n_samples")
        _errorbar(ax, s, color=COLORS[method], label=LABELS[method])
    n = np.asarray(sorted(frame["n_samples"].unique()), dtype=float)
    for method, slope, style in (("erm", metrics["theory_erm"], ":"), ("clipped", -1.0, "--")):
        y0 = frame[(frame["method"] == method) & (frame["n_samples"] == n[0])]["value"].median()
        ax.plot(n, y0 * (n / n[0]) ** slope, color="0.5", linestyle=style, linewidth=1,
                label=f"slope {slope:.3g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel(r"squared parameter error to $x^*$")
    ax.set_title(rf"mean estimation, $\alpha$ = {metrics['tail_index']:g}, $\lambda$ = {metrics['clip_level']:g}"
                 " (median, IQR)", fontsize=8)
    ax.legend(fontsize=7)
    save_figure(fig, out / "generalization.png")


def _section4(results: Path, out: Path) -> None:
    """Median over datasets (IQR bars) of the mean over runs of ||x_T - x_S||^2 against N, one panel per alpha."""
    frame = read_tidy(results / "section4" / "results.csv")
    metrics = read_metrics(results / "section4" / "metrics.json")
    alphas = sorted(frame["alpha"].unique())
    fig, axes = new_figure(ncols=len(alphas), width=3.3, height=3.1)
    colors = {**COLORS, "clip": COLORS["clip_sgd"]}
    for ax, alpha in zip(axes[0], alphas):
        sub = frame[frame["alpha"] == alpha]
        for method in ("sgd", "avg", "sgd_tuned", "avg_tuned", "clip"):
            s = _summary(sub[sub["method"] == method], "n_samples")
            _errorbar(ax, s, color=colors[method], label=LABELS.get(method, "Clip-SGD"),
                      linestyle="--" if method.startswith("avg") else "-", markersize=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N")
        ax.set_title(rf"$\alpha$ = {alpha:g}", fontsize=9)
    axes[0, 0].set_ylabel(r"$E_{alg}\|x_T - x_S\|^2$ (median, IQR)")
    axes[0, 0].legend(fontsize=6)
    fig.suptitle(rf"Section 4: $f = x^2/2 + \xi x$, $\xi = {metrics['noise_scale']:g}\,t_\alpha$, "
                 rf"T = {metrics['n_steps']}, {metrics['n_runs']} runs per dataset", fontsize=9)
    save_figure(fig, out / "section4.png")


def _performance_table(results: Path, out: Path) -> None:
    base = results / "performance"
    perf = read_metrics(base / "metrics.json")
    timings = read_metrics(base / "timings.json")
    hw = read_metrics(base / "provenance.json").get("hardware", {})
    t, r = timings["per_1e4_steps_s"], timings["ratio"]
    timing = pd.DataFrame([
        ("numpy loop, one dataset", t["numpy_single"], r["numpy_over_torch"]),
        (f"numpy loop vectorised over {perf['n_vectorised']} runs (per run)", t["numpy_vectorised_per_run"],
         r["numpy_vectorised_over_torch"]),
        ("torch.optim.SGD + clip_grad_norm_ (float64, batch 1)", t["torch"], 1.0),
        ("sklearn SGDRegressor, one epoch (plain SGD, without replacement; reference only)",
         t["sklearn_sgdregressor_epoch"], r["sklearn_over_torch"]),
    ], columns=["implementation", "CPU s per 1e4 steps", "ratio to torch"])
    equivalence = pd.DataFrame([("1e-6 (torch's clip coefficient)", perf["rel_diff_torch"]["eps_torch"]),
                                ("0 (the spec's default)", perf["rel_diff_torch"]["eps_zero"])],
                               columns=["clip eps of the numpy run", "relative difference"])
    path = out / "performance_table.md"
    timing_text = markdown_table(
        timing, floatfmt=".3g",
        title=f"Clip-SGD, least squares N = {perf['n_samples']}, d = 10: CPU seconds per 1e4 steps (least of "
              f"{perf['rounds']} alternating rounds; BLAS and torch on one thread; hardware: "
              f"{hw.get('cpu', 'unknown')}, {hw.get('cores', '?')} cores)")
    equivalence_text = markdown_table(
        equivalence, floatfmt=".2g",
        title=f"Equivalence after {perf['equivalence_steps']} steps on the same index sequence (relative "
              "difference of the final iterates, numpy vs torch)")
    note = (f"Gradient evaluations per step: numpy {perf['grad_evals_per_step']['numpy']:g}, torch "
            f"{perf['grad_evals_per_step']['torch']:g} (counted by shared.oracles.CallCounter).\n")
    atomic_write_text(path, "\n".join([timing_text, equivalence_text, note]))


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table whose results exist under ``results_dir``."""
    results, out = Path(results_dir), Path(out_dir)
    for name, fn in (("moment_scaling", _moment_scaling), ("sgd_vs_clip", _sgd_vs_clip),
                     ("schedules", _schedules), ("generalization", _generalization),
                     ("section4", _section4), ("performance", _performance_table)):
        if (results / name / "metrics.json").exists():
            fn(results, out)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
