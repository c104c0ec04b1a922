"""Figures and tables of the oak reproduction, drawn from saved results (never recomputed).

``python -m papers.oak.plots --results results/quick/oak --out figures/quick/oak --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_write_text, markdown_table, read_arrays, read_metrics, read_tidy

from papers.oak.testbed import CLIP, METHODS

__all__ = ["make_figures", "LABELS"]

LABELS = {"oak_e1": "OAK-E1 (warm-up)", "oak_e2": "OAK-E2 (theta_0)", "oak_e3": "OAK-E3 (oracle P)",
          "ntk": "eNTK (Adam's lr)", "ntk_oracle": "eNTK (oracle lr)", "asgd_oracle": "A-SignGD (oracle lr)"}
COLORS = method_colors(METHODS)
TERM_LABELS = {"lin": "linearisation remainder", "eP_e1": "e_P (E1)", "eP_e2": "e_P (E2)", "total_e1": "total (E1)"}


def _series(d: dict):
    """{"T10": v, ...} (JSON keys sort as text) -> (T, values) in increasing T."""
    items = sorted((int(k[1:]), v) for k, v in d.items())
    return [t for t, _ in items], [v for _, v in items]


def _load(results: Path, name: str):
    path = results / name / "metrics.json"
    return read_metrics(path)[name] if path.exists() else None


def _relerr_figure(results: Path, out: Path, name: str, group_lo: str) -> None:
    frame = read_tidy(results / name / "results.csv")
    fig, axes = new_figure(width=5.0, height=3.6)
    ax = axes[0, 0]
    sub = frame[(frame["metric"] == "relerr") & (frame["group"] == group_lo)]
    for method in METHODS:
        d = sub[sub["method"] == method]
        vals = d.assign(value=d["value"].astype(float).clip(upper=CLIP).fillna(CLIP)).groupby("step")["value"]
        T = np.array(sorted(d["step"].unique()))
        med, lo, hi = vals.median().loc[T], vals.min().loc[T], vals.max().loc[T]
        plot_band(ax, T, med, lo, hi, label=LABELS[method], color=COLORS[method], marker="o", ms=3)
        clipped = med >= CLIP
        if clipped.any():
            ax.scatter(T[clipped.values], med[clipped].values, marker="x", color=COLORS[method], s=40)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Adam step T")
    ax.set_ylabel("test relerr vs fine-tuning")
    ax.set_title(f"{name}: {group_lo} (median, min-max over seeds; x = diverged, clipped)", fontsize=8)
    ax.legend(fontsize=6)
    save_figure(fig, out / f"relerr_vs_T_{name}.png")


def _discrepancy(results: Path, out: Path) -> None:
    fig, axes = new_figure(ncols=2, width=4.2, height=3.4)
    for name, marker in (("digits", "o"), ("minilm", "s")):
        m = _load(results, name)
        if m is None:
            continue
        T = f"T{m['checkpoints'][-1]}"
        for group, g in m["groups"].items():
            if "lr1e-4" not in group and name == "digits":
                continue
            if name == "minilm" and group.startswith("sentiment_lr1e-3"):
                continue
            x = g["alignment"]
            axes[0, 0].scatter(x, g["relerr"]["oak_e1"][T], marker=marker, label=f"{name} {group}")
            axes[0, 1].scatter(x, g["probe_acc"], marker=marker, label=f"{name} {group}")
    axes[0, 0].set_xlabel("kernel-target alignment A(K_0, y)")
    axes[0, 0].set_ylabel("relerr OAK-E1 at T_max")
    axes[0, 1].set_xlabel("kernel-target alignment A(K_0, y)")
    axes[0, 1].set_ylabel("linear-probe test accuracy")
    axes[0, 0].legend(fontsize=6)
    save_figure(fig, out / "discrepancy.png")


def _cumulative(results: Path, out: Path) -> None:
    fig, axes = new_figure(ncols=2, width=4.2, height=3.4)
    for name in ("digits", "minilm"):
        m = _load(results, name)
        if m is None:
            continue
        for group, g in m["groups"].items():
            if name == "digits" and not group.startswith("a0_"):
                continue
            if name == "minilm" and not group.startswith("sentiment"):
                continue
            axes[0, 0].plot(*_series(g["relerr"]["oak_e1"]), marker="o", ms=3, label=f"{name} {group}")
            axes[0, 1].plot(*_series(g["drift"]), marker="o", ms=3, label=f"{name} {group}")
    for ax in axes[0]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Adam step T")
    axes[0, 0].set_ylabel("relerr OAK-E1")
    axes[0, 1].set_ylabel("kernel drift d(K_0, K_T)")
    axes[0, 0].legend(fontsize=6)
    save_figure(fig, out / "cumulative.png")


def _error_terms(results: Path, out: Path) -> None:
    fig, axes = new_figure(ncols=2, width=4.2, height=3.4)
    for ax, (name, group) in zip(axes[0], (("digits", "a0_lr1e-4"), ("minilm", "sentiment_lr1e-4"))):
        m = _load(results, name)
        if m is None or group not in m["groups"]:
            continue
        for k, vals in m["groups"][group]["terms"].items():
            ax.plot(*_series(vals), marker="o", ms=3, label=TERM_LABELS[k])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Adam step T")
        ax.set_ylabel("||term|| / ||f_FT - f_0|| (median)")
        ax.set_title(f"{name} {group}", fontsize=8)
        ax.legend(fontsize=6)
    save_figure(fig, out / "error_terms.png")


BOUND_TERMS = {"err": "error ||f_FT - f_OAK-E1||", "drift_path": "path v-drift D_path", "rem2": "remainder R2 (HVP)",
               "drift": "net v-drift at T", "fb": "momentum mismatch F"}
BOUND_LABELS = {**LABELS, "oak_e4": "OAK-E4 (v evolved, tangent model)", "ntk_matched": "eNTK (lr matched at theta_0)"}


def _bound(results: Path, out: Path) -> None:
    """Per lr (alpha = smallest): the error of OAK-E1 and its bound terms against T, median and min-max over seeds."""
    frame = read_tidy(results / "bound" / "results.csv")
    sub = frame[(frame["method"] == "oak_e1") & (frame["alpha"].astype(float) == frame["alpha"].astype(float).min())]
    lrs = sorted(sub["lr"].astype(float).unique())
    fig, axes = new_figure(ncols=len(lrs), width=3.6, height=3.2)
    colors = method_colors(list(BOUND_TERMS) + ["sum"])
    for ax, lr in zip(axes[0], lrs):
        d = sub[sub["lr"].astype(float) == lr]
        wide = d.pivot_table(index=["seed", "step"], columns="metric", values="value").reset_index()
        wide["bound_sum"] = wide["bound_drift_path"] + wide["bound_rem2"]
        for key, label in [*BOUND_TERMS.items(), ("sum", "D_path + R2 (the bound)")]:
            g = wide.groupby("step")[f"bound_{key}"]
            T = np.array(sorted(wide["step"].unique()))
            plot_band(ax, T, g.median().loc[T], g.min().loc[T], g.max().loc[T], label=label, color=colors[key],
                      log=True, marker="o", ms=3)
        ax.set_xlabel("Adam step T")
        ax.set_title(f"digits, lr {lr:g} (median, min-max over seeds)", fontsize=8)
    axes[0, 0].set_ylabel("||term|| / ||f_FT - f_0||")
    axes[0, 0].legend(fontsize=6)
    save_figure(fig, out / "bound.png")


def _e4(results: Path, out: Path) -> None:
    """relerr against T of the estimators and the eNTK baselines, digits, smallest alpha and lr."""
    frame = read_tidy(results / "bound" / "results.csv")
    d = frame[frame["metric"] == "relerr"]
    d = d[(d["alpha"].astype(float) == d["alpha"].astype(float).min()) & (d["lr"].astype(float) == d["lr"].astype(float).min())]
    methods = ["oak_e4", "oak_e2", "oak_e1", "ntk_matched", "ntk_oracle", "ntk"]
    colors = method_colors(methods)
    fig, axes = new_figure(width=5.0, height=3.6)
    ax = axes[0, 0]
    for m in methods:
        g = d[d["method"] == m].assign(value=lambda x: x["value"].astype(float).clip(upper=CLIP)).groupby("step")["value"]
        T = np.array(sorted(d["step"].unique()))
        plot_band(ax, T, g.median().loc[T], g.min().loc[T], g.max().loc[T], label=BOUND_LABELS[m], color=colors[m],
                  log=True, marker="o", ms=3)
    ax.set_xlabel("Adam step T")
    ax.set_ylabel("test relerr vs fine-tuning")
    ax.set_title("digits, smallest alpha and lr (median, min-max over seeds)\nE1 peeks at 5 Adam steps, the oracle lr "
                 "reads the run; E2, E4 and the matched eNTK use theta_0 only", fontsize=7)
    ax.legend(fontsize=6)
    save_figure(fig, out / "e4_vs_ntk.png")


def _scatter(results: Path, out: Path) -> None:
    path = results / "minilm" / "scatter_sentiment.npz"
    fig, axes = new_figure(width=3.8, height=3.6)
    ax = axes[0, 0]
    if path.exists():
        arr = read_arrays(path)
        ax.scatter(arr["f_ft"], arr["f_oak"], s=10)
        lim = [min(arr["f_ft"].min(), arr["f_oak"].min()), max(arr["f_ft"].max(), arr["f_oak"].max())]
        ax.plot(lim, lim, color="0.5", linestyle="--", linewidth=1)
    ax.set_xlabel("f_FT (fine-tuned, T_max)")
    ax.set_ylabel("f_OAK-E1")
    ax.set_title("MiniLM sentiment, lowest lr, seed 0 (test set)", fontsize=8)
    save_figure(fig, out / "scatter_T100.png")


def _table_accuracy(results: Path, out: Path) -> None:
    rows, minibatch_rows = [], []
    for name in ("digits", "minilm", "minilm_encoder"):
        m = _load(results, name)
        if m is None:
            continue
        label = name if name != "minilm_encoder" else f"full encoder ({m['encoder']}, p = {m['p']})"
        rows += [{"testbed": label, "task / group": group, "FT": g["acc"]["ft"], "OAK-E1": g["acc"]["oak_e1"],
                  "eNTK oracle lr": g["acc"]["ntk_oracle"],
                  "converged OAK-E1 regression (best lam)": g["acc"]["krr_best"], "linear probe": g["probe_acc"]}
                 for group, g in m["groups"].items()]
        for group, g in m.get("minibatch", {}).items():
            r = g["relerr"]
            ts = sorted(r["oak_e1"], key=lambda k: int(k[1:]))
            minibatch_rows.append({"testbed": label, "group": group,
                                   **{f"{name} {when}": r[k][t] for when, t in zip(("T1", "T_max"), ts)
                                      for k, name in (("oak_e1", "E1"), ("oak_e2", "E2"), ("oak_e3", "E3"),
                                                      ("ntk_oracle", "eNTK oracle"))},
                                   "agreement E1 T_max": f"{g['agreement_T_max']:.3f}"})
    path = out / "table_accuracy.md"
    columns = ["testbed", "task / group", "FT", "OAK-E1", "eNTK oracle lr", "converged OAK-E1 regression (best lam)",
               "linear probe"]
    text = markdown_table(pd.DataFrame(rows, columns=columns), floatfmt=".3f",
                          title="Test accuracy at T_max (median over seeds)")
    if minibatch_rows:
        text += "\n" + markdown_table(
            pd.DataFrame(minibatch_rows), floatfmt=".3g",
            title="Mini-batch Adam runs: median test relerr vs fine-tuning at T = 1 and T_max (E2 uses the mini-batch "
                  "formula)")
    atomic_write_text(path, text)


def _table_perf(results: Path, out: Path) -> None:
    base = results / "performance"
    timings = read_metrics(base / "timings.json")
    perf = read_metrics(base / "metrics.json")["performance"]
    hw = read_metrics(base / "provenance.json").get("hardware", {})
    rows = [{"model": name, "n": t["n"], "p": t["p"], "(i) loop s": t["loop_s"], "(ii) vmap+jacrev s": t["vmap_s"],
             "(iii) NTK-vector products s": t["ntvp_s"], "(ii) speed-up vs (i)": t["speedup_vmap"],
             "(iii) speed-up vs (i)": t["speedup_ntvp"],
             "max rel. diff (ii),(iii) vs (i)":
                 f"{max(perf['agreement'][name]['vmap_vs_loop'], perf['agreement'][name]['ntvp_vs_loop']):.1e}",
             "OAK predict s": t["oak_predict_s"], "fine-tune s": t["finetune_s"], "OAK / FT": t["oak_over_ft"]}
            for name, t in timings.items()]
    title = (f"Empirical NTK three ways, and OAK prediction vs fine-tuning (hardware: {hw.get('cpu', 'unknown')}, "
             f"{hw.get('cores', '?')} cores, torch pinned to one thread; CPU seconds of the process, median of "
             f"{perf['repeats']})")
    path = out / "table_perf.md"
    table = markdown_table(pd.DataFrame(rows), floatfmt=".3g", title=title)
    notes = (f"OAK predict = Jacobian + kernel + {next(iter(timings.values()))['T']} function-space steps; fine-tune = "
             "the same number of full-batch Adam steps.\n\n"
             "The specification's prototype reported (ii) about 20x faster than (i). The measured ratio is the column "
             "'(ii) speed-up vs (i)' (every way timed as the median of the repeats, in one process): the 20x anchor "
             "is not met here.\n")
    atomic_write_text(path, table + "\n" + notes)


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table whose results exist under ``results_dir``."""
    results, out = Path(results_dir), Path(out_dir)
    if (results / "digits" / "metrics.json").exists():
        _relerr_figure(results, out, "digits", "a0_lr1e-4")
    if (results / "minilm" / "metrics.json").exists():
        _relerr_figure(results, out, "minilm", "sentiment_lr1e-4")
    if any((results / n / "metrics.json").exists() for n in ("digits", "minilm")):
        _discrepancy(results, out)
        _cumulative(results, out)
        _error_terms(results, out)
    if (results / "minilm" / "metrics.json").exists():
        _scatter(results, out)
    if (results / "bound" / "metrics.json").exists():
        _bound(results, out)
        _e4(results, out)
    if any((results / n / "metrics.json").exists() for n in ("digits", "minilm", "minilm_encoder")):
        _table_accuracy(results, out)
    if (results / "performance" / "metrics.json").exists():
        _table_perf(results, out)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
