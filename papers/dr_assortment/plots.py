"""Figures and tables of dr_assortment, drawn from the results only (nothing is recomputed).

``python -m papers.dr_assortment.plots --results results/quick/dr_assortment --out figures/quick/dr_assortment
--scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared import results
from shared.plotting import main, method_colors, new_figure, plot_band, save_figure

METHODS = ["robust", "nominal", "fast", "brute", "reference", "random", "robust_rho0"]
COLORS = method_colors(METHODS)
DIVERGENCE_NAMES = {"tv": "TV", "kl": "KL", "chi2": r"$\chi^2$"}


def _exactness_table(res: Path, out: Path) -> None:
    frame = pd.read_csv(res / "exactness" / "exactness.csv", keep_default_na=False)
    cols = ["instance", "N", "C", "rho", "divergence", "brute_value", "fast_value", "shortfall", "prefix_optimal"]
    with results.atomic_path(out / "exactness.csv") as tmp:
        frame[cols].to_csv(tmp, index=False, float_format="%.12g")


def _sweep(res: Path):
    m = results.read_metrics(res / "value_of_robustness" / "metrics.json")
    return m, m["sweep"]


def _capacitated(res: Path):
    path = res / "capacitated_sweep" / "metrics.json"
    return results.read_metrics(path) if path.is_file() else None


def _robust_vs_nominal(res: Path, out: Path) -> None:
    _, sweep = _sweep(res)
    cap = _capacitated(res)
    panels = [("no capacity", sweep)] + ([(f"C = {cap['capacity']}", cap["sweep"])] if cap else [])
    fig, axes = new_figure(ncols=len(sweep), nrows=len(panels), width=3.4, height=2.9)
    for row, (cap_label, by_div) in enumerate(panels):
        for ax, div in zip(axes[row], sweep):
            by_rho = by_div.get(div, {})
            rhos = sorted(by_rho, key=float)
            x = [float(s) for s in rhos]
            ax.plot(x, [by_rho[s]["mean_wc_robust"] for s in rhos], "o-", color=COLORS["robust"],
                    label="robust set")
            ax.plot(x, [by_rho[s]["mean_wc_nominal"] for s in rhos], "s--", color=COLORS["nominal"],
                    label="nominal set")
            ax.set_xscale("log")
            ax.set_title(f"{DIVERGENCE_NAMES.get(div, div)}, {cap_label}")
            ax.set_xlabel(r"radius $\rho$")
        axes[row][0].set_ylabel("mean worst-case revenue")
    axes[0][0].legend()
    save_figure(fig, out / "robust_vs_nominal.png")


def _set_size(res: Path, out: Path) -> None:
    m, sweep = _sweep(res)
    cap = _capacitated(res)
    panels = [("no capacity", sweep, m["sweep_mean_size_nominal"])]
    if cap:
        panels.append((f"C = {cap['capacity']}", cap["sweep"], cap["mean_size_nominal"]))
    fig, axes = new_figure(ncols=len(panels), width=4.2, height=3.0)
    markers = {"tv": "o", "kl": "s", "chi2": "^"}
    for ax, (cap_label, by_div, nominal_size) in zip(axes[0], panels):
        for div, by_rho in by_div.items():
            rhos = sorted(by_rho, key=float)
            ax.plot([float(s) for s in rhos], [by_rho[s]["mean_size_robust"] for s in rhos],
                    marker=markers.get(div, "o"), label=f"robust, {DIVERGENCE_NAMES.get(div, div)}")
        ax.axhline(nominal_size, color=COLORS["nominal"], ls="--", label="nominal")
        ax.set_xscale("log")
        ax.set_xlabel(r"radius $\rho$")
        ax.set_title(cap_label)
        ax.set_ylabel("mean assortment size")
        ax.legend(fontsize=7)
    save_figure(fig, out / "set_size_vs_rho.png")


def _scalability(res: Path, out: Path) -> None:
    sc = results.read_tidy(res / "scalability" / "results.csv")
    m = results.read_metrics(res / "scalability" / "metrics.json")
    timing = m["timing"]
    med = sc[sc["method"] == "fast"].groupby("step")["value"].median()
    fig, axes = new_figure(width=4.4, height=3.2)
    ax = axes[0][0]
    ns = med.index.to_numpy(dtype=float)
    ax.plot(ns, med.to_numpy(), "o-", color=COLORS["fast"],
            label=f"fast, KL, C = {m['capacity']} (slope {timing['slope']:.2f})")
    coef = np.polyfit(np.log(ns), np.log(med.to_numpy()), 1)
    ax.plot(ns, np.exp(np.polyval(coef, np.log(ns))), ":", color=COLORS["reference"], label="log-log fit")
    if "control_brute" in timing:  # the negative control of poly-time: brute force, same problem
        bm = sc[sc["method"] == "brute"].groupby("step")["value"].median()
        ax.plot(bm.index.to_numpy(dtype=float), bm.to_numpy(), "s-", color=COLORS["brute"],
                label=f"brute, KL, C = {m['capacity']} (control, slope {timing['control_brute']['slope']:.2f})")
    perf_path = res / "performance" / "results.csv"
    if perf_path.is_file():
        perf = results.read_tidy(perf_path)
        perf = perf[perf["method"].isin(["brute", "fast"])]
        for (method, cap), g in perf.groupby(["method", "C"]):
            gm = g.groupby("step")["value"].median()
            ax.plot(gm.index.to_numpy(dtype=float), gm.to_numpy(), "^--" if method == "brute" else "v-",
                    color=COLORS[method], alpha=1.0 if cap == "none" else 0.55,
                    label=f"{method}, KL, C = {cap} (performance, CPU s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of items N")
    ax.set_ylabel("time per solve (s, median)")
    ax.legend(fontsize=7)
    save_figure(fig, out / "scalability.png")


def _sample_complexity(res: Path, out: Path) -> None:
    m = results.read_metrics(res / "sample_complexity" / "metrics.json")
    ns = np.array(m["ns"], dtype=float)
    fig, axes = new_figure(ncols=2, width=3.8, height=3.0)
    ax = axes[0][0]
    mean = np.array([m["mean_err"][str(int(n))] for n in ns])
    se = np.array([m["se_err"][str(int(n))] for n in ns])
    ax.errorbar(ns, mean, yerr=se, fmt="o-", color=COLORS["robust"], capsize=3, label="MLE")
    ax.plot(ns, mean[0] * (ns / ns[0]) ** -0.5, "--", color=COLORS["reference"], label=r"$n^{-1/2}$")
    if "control_misspecified" in m:  # the negative control of mle-rate
        mis = np.array([m["control_misspecified"]["mean_err"][str(int(n))] for n in ns])
        ax.plot(ns, mis, "s:", color=COLORS["nominal"], label="misspecified MLE (control)")
    ax.set_ylabel(r"$\|\hat\theta-\theta^*\|$")
    ax.set_title(f"slope {m['err_slope']:.2f}")
    ax = axes[0][1]
    first = None
    for key in m["decision_order"]:
        dd = m["decisions"][key]
        mean = np.array([dd["mean_gap"][str(int(n))] for n in ns])
        se = np.array([dd["se_gap"][str(int(n))] for n in ns])
        first = mean if first is None else first
        pos = mean > 0
        ax.errorbar(ns[pos], mean[pos], yerr=se[pos], fmt="o-", capsize=2, ms=3, lw=1,
                    label=f"{DIVERGENCE_NAMES.get(dd['divergence'], dd['divergence'])}, "
                          f"rho = {dd['rho']:g}, C = {dd['capacity']}")
    if first is not None and first[0] > 0:
        ax.plot(ns, first[0] * (ns / ns[0]) ** -0.5, "--", color=COLORS["reference"], label=r"$n^{-1/2}$")
    ax.set_ylabel("robust decision gap (plug-in)")
    ax.set_title("decision gap by divergence / capacity")
    for ax in axes[0]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("sample size n")
        ax.legend(fontsize=6)
    save_figure(fig, out / "sample_complexity.png")


def _online(res: Path, out: Path) -> None:
    m = results.read_metrics(res / "online" / "metrics.json")
    ts = np.array(m["horizons"], dtype=float)
    fig, axes = new_figure(ncols=2, width=3.8, height=3.0)
    for policy, fmt, label in (("robust", "o-", "ETC + DRAO"), ("nominal", "s--", "ETC + nominal MNL")):
        mean = np.array([m[policy]["mean_regret"][str(int(t))] for t in ts])
        se = np.array([m[policy]["se_regret"][str(int(t))] for t in ts])
        axes[0][0].errorbar(ts, mean, yerr=se, fmt=fmt, capsize=3, color=COLORS[policy],
                            label=f"{label} (slope {m[policy]['regret_slope']:.2f})")
        gap = np.array([m[policy]["mean_commit_gap"][str(int(t))] for t in ts])
        pos = gap > 0
        axes[0][1].plot(ts[pos], gap[pos], fmt, color=COLORS[policy], label=label)
    first = m["robust"]["mean_regret"][str(int(ts[0]))]
    axes[0][0].plot(ts, first * (ts / ts[0]) ** (2.0 / 3.0), ":", color=COLORS["reference"], label=r"$T^{2/3}$")
    axes[0][0].set_ylabel("expected cumulative robust regret")
    axes[0][0].set_title(f"{m['divergence'].upper()}, rho = {m['rho']:g}, C = {m['capacity']}")
    axes[0][1].set_ylabel("per-round regret after commit")
    for ax in axes[0]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("horizon T")
        ax.legend(fontsize=7)
    save_figure(fig, out / "online_regret.png")


def _bandit(res: Path, out: Path) -> None:
    """Cumulative robust regret and realised regret under the shift against t, per learner (mean, min-max)."""
    df = results.read_tidy(res / "bandit" / "results.csv")
    m = results.read_metrics(res / "bandit" / "metrics.json")
    labels = {"robust": "robust UCB (ours)", "nominal": "nominal UCB (Agrawal et al.)", "random": "random offers"}
    fig, axes = new_figure(ncols=2, width=3.8, height=3.0)
    for ax, metric, title in zip(axes[0], ("robust_regret", "shift_regret"),
                                 ("robust pseudo-regret", "realised regret, shifted customers")):
        for name, label in labels.items():
            g = df[(df["method"] == name) & (df["metric"] == metric)]
            stats = g.groupby("step")["value"].agg(["mean", "min", "max"]).sort_index()
            plot_band(ax, stats.index.to_numpy(dtype=float), stats["mean"].to_numpy(), stats["min"].to_numpy(),
                      stats["max"].to_numpy(), label=label, color=COLORS[name], marker="o", ms=3)
        ax.set_xscale("log")
        ax.set_xlabel("round t")
        ax.set_ylabel("cumulative regret\n(mean; band: min-max over seeds)", fontsize=8)
        ax.set_title(f"{title} ({m['divergence'].upper()}, rho = {m['rho']:g})", fontsize=8)
    axes[0][0].legend(fontsize=6)
    save_figure(fig, out / "bandit_regret.png")


def _shift_tail(res: Path, out: Path) -> None:
    arr = results.read_arrays(res / "shift" / "shift_revenues.npz")
    k = arr["robust"].shape[0]
    fig, axes = new_figure(ncols=k, width=2.8, height=2.6)
    for j, ax in enumerate(axes[0]):
        lo = min(arr["robust"][j].min(), arr["nominal"][j].min())
        hi = max(arr["robust"][j].max(), arr["nominal"][j].max())
        bins = np.linspace(lo, hi, 25)
        for name in ("nominal", "robust"):
            ax.hist(arr[name][j], bins=bins, alpha=0.5, color=COLORS[name], label=f"{name} set")
            ax.axvline(np.quantile(arr[name][j], 0.05), color=COLORS[name], ls="--")
        ax.set_title(f"instance {j}")
        ax.set_xlabel("revenue under shift")
    axes[0][0].set_ylabel("count (dashed: 5% quantile)")
    axes[0][0].legend(fontsize=7)
    save_figure(fig, out / "shift_tail.png")


def _exactness_large(res: Path, out: Path) -> None:
    """Per (N, divergence): the fast solver and the revenue-ordered control against the LP certificate."""
    frame = pd.read_csv(res / "exactness_large" / "exactness_large.csv", keep_default_na=False)
    table = (frame.groupby(["N", "divergence"], sort=True)
             .agg(instances=("instance", "size"), fast_max_rel_shortfall=("rel_shortfall", "max"),
                  certificate_max_width=("cert_width", "max"), mean_lp_solves=("n_lp", "mean"),
                  prefix_max_rel_shortfall=("prefix_rel_shortfall", "max"),
                  prefix_optimal_fraction=("prefix_rel_shortfall", lambda x: float((x <= 1e-9).mean())))
             .reset_index())
    results.write_markdown_table(table, out / "exactness_large.md",
                                 title="Capacitated robust optimum: fast solver and revenue-ordered control "
                                       "against the LP certificate (relative shortfall = (certified upper bound "
                                       "- value) / max(1, bound))")


def _placements(res: Path, out: Path) -> None:
    """Verdicts of the robust-vs-nominal claims under each placement of the ambiguity set (one column each)."""
    frame = pd.read_csv(res / "placements" / "placements.csv", keep_default_na=False)
    frame["cell"] = [f"{v} ({m:.3g} [{lo:.3g}, {hi:.3g}])" for v, m, lo, hi in
                     zip(frame["verdict"], frame["mean"], frame["ci95_low"], frame["ci95_high"])]
    table = frame.pivot_table(index=["segments", "claim", "check"], columns="placement", values="cell",
                              aggfunc="first", sort=False).reset_index()
    cols = ["segments", "claim", "check"] + [p for p in ("choice", "weights", "context") if p in table.columns]
    table = table[cols]
    table["depends"] = [len({str(c).split(" ")[0] for c in row[3:]}) > 1 for row in table.itertuples(index=False)]
    results.write_markdown_table(table, out / "placements.md",
                                 title="Placement of the ambiguity set: verdict (mean [95% interval]) of each "
                                       "robust-vs-nominal check; choice = KL ball on each segment's choice "
                                       "distribution, weights = log-weight box, context = KL ball on the "
                                       "segment distribution; depends = the verdict changes with the placement")


def _performance(res: Path, out: Path) -> None:
    table = pd.read_csv(res / "performance" / "performance_table.csv", keep_default_na=False)
    prov = results.read_metrics(res / "performance" / "provenance.json")
    hw = prov.get("hardware", {})
    title = (f"Performance, same instances, same process, single-thread BLAS; process CPU seconds per solve "
             f"(median over instances of the least over alternating rounds; one call each where a brute-force "
             f"call lasts 0.5 s or more); "
             f"hardware: {hw.get('cpu', 'unknown')} ({hw.get('cores', '?')} cores). "
             f"speedup = baseline_s / ours_s")
    results.write_markdown_table(table, out / "performance.md", title=title)


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure/table listed for ``scale`` in config.yaml from ``results_dir`` into ``out_dir``."""
    res, out = Path(results_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _exactness_table(res, out)
    _exactness_large(res, out)
    _placements(res, out)
    _robust_vs_nominal(res, out)
    _set_size(res, out)
    _scalability(res, out)
    _sample_complexity(res, out)
    _shift_tail(res, out)
    _online(res, out)
    _bandit(res, out)
    _performance(res, out)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
