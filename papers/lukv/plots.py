"""Figures and tables of the lukv reproduction; they read results, never recompute them.

``python -m papers.lukv.plots --results results/quick/lukv --out figures/quick/lukv --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_write_text, markdown_table, read_arrays, read_metrics, read_tidy, write_markdown_table

__all__ = ["make_figures"]

METHODS = ["full", "uniform", "scorer", "adakv", "streaming", "lukv", "oracle", "pyramidkv", "criticalkv"]
COLORS = method_colors(METHODS)


def _instances(results: Path, out: Path) -> None:
    arr = read_arrays(results / "instances" / "instances.npz")
    dp = arr["dp"]
    idx = np.arange(dp.size)
    fig, axes = new_figure()
    ax = axes[0, 0]
    ax.plot(idx, arr["relaxed"] / dp, "o", label="relaxed (hull) value of greedy")
    ax.plot(idx, np.ones_like(dp), "-", color="k", label="exact DP optimum")
    ax.plot(idx, arr["true_greedy"] / dp, "s", label="true value of greedy")
    ax.set_xlabel("instance"); ax.set_ylabel("value / DP optimum"); ax.legend()
    ax.set_title("Sandwich: relaxed >= OPT >= greedy")
    save_figure(fig, out / "sandwich.png")
    fig, axes = new_figure()
    gaps = 100 * (dp - arr["true_greedy"]) / dp
    axes[0, 0].hist(gaps, bins=15)
    axes[0, 0].set_xlabel("relative gap (DP - greedy) / DP [%]"); axes[0, 0].set_ylabel("instances")
    save_figure(fig, out / "gap_hist.png")
    t = read_arrays(results / "instances" / "timings.npz")
    fig, axes = new_figure()
    axes[0, 0].plot(idx, 1e3 * t["greedy_s"], "o", label="greedy (one sort)")
    axes[0, 0].plot(idx, 1e3 * t["dp_s"], "s", label="exact DP")
    axes[0, 0].set_yscale("log"); axes[0, 0].set_xlabel("instance"); axes[0, 0].set_ylabel("time [ms]")
    axes[0, 0].legend()
    save_figure(fig, out / "solver_time.png")


def _profile(results: Path, out: Path) -> None:
    m = read_metrics(results / "profile" / "metrics.json")
    name = sorted(m["spearman_ab"])[0] if "expected_attention" not in m["spearman_ab"] else "expected_attention"
    A = np.load(results / "profile" / f"curve_{name}_A.npy")
    B = np.load(results / "profile" / f"curve_{name}_B.npy")
    smol = _smollm2_metrics(results)
    smol_curve = results / "smollm2" / f"curve_{name}.npy"
    panels = [("tiny model", A)]
    if smol is not None and smol_curve.exists():
        panels.append((f"SmolLM2 ({smol['L']} layers)", np.load(smol_curve)))
    fig, axes = new_figure(ncols=len(panels))
    for ax, (label, curve) in zip(axes[0], panels):
        im = ax.imshow(curve[79], cmap="viridis", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        n_layers, n_heads = curve.shape[1:]
        ax.set_xticks(np.arange(n_heads)); ax.set_yticks(np.arange(n_layers) if n_layers <= 12 else
                                                          np.arange(0, n_layers, 5))
        ax.set_xlabel("KV head"); ax.set_ylabel("layer")
        ax.set_title(f"{label}, {name}", fontsize=8)
        ax.grid(False)
        fig.colorbar(im, ax=ax).set_label("prune ratio Phi(0.8) (evicted fraction)")
    save_figure(fig, out / "budget_heatmap.png")
    fig, axes = new_figure()
    axes[0, 0].plot(A[79].ravel(), B[79].ravel(), "o")
    axes[0, 0].plot([0, 1], [0, 1], "k--", lw=0.8)
    axes[0, 0].set_xlabel("Phi_A(0.8)"); axes[0, 0].set_ylabel("Phi_B(0.8)")
    per = m.get("spearman_ab_per_split", {}).get(name, [m["spearman_ab"][name]])
    axes[0, 0].set_title(f"split 0 of {len(per)}: Spearman {per[0]:.3f} (mean over splits {np.mean(per):.3f})",
                         fontsize=8)
    save_figure(fig, out / "profile_ab.png")


def _smollm2_metrics(results: Path):
    """SmolLM2 metrics, or None when the experiment is absent or had no weights."""
    path = results / "smollm2" / "metrics.json"
    if not path.exists():
        return None
    m = read_metrics(path)
    return m if m.get("available") else None


def _smollm2_rows(m: dict) -> list:
    rows = []
    for task, by in m["tasks"].items():
        rows.append({"task": f"smollm2/{task}", "scorer": "", "rho": 0.0, "method": "full",
                     "recall": by["full"]["acc"], "kl": 0.0, "kept": 1.0})
        for scorer, by_rho in by.items():
            if scorer == "full":
                continue
            for key, by_method in by_rho.items():
                for method, v in by_method.items():
                    rows.append({"task": f"smollm2/{task}", "scorer": scorer if scorer != "none" else "",
                                 "rho": int(key[3:]) / 100, "method": method, "recall": v["acc"], "kl": v["kl"],
                                 "kept": v["kept"]})
    return rows


def _smollm2_panel(ax, m: dict, metric: str) -> None:
    """Task-mean SmolLM2 accuracy (or KL) at each rho, one marker per (method, scorer)."""
    table = {}
    for task, by in m["tasks"].items():
        for scorer, by_rho in by.items():
            if scorer == "full":
                continue
            for key, by_method in by_rho.items():
                for method, v in by_method.items():
                    table.setdefault((method, scorer), {}).setdefault(int(key[3:]) / 100, []).append(v[metric])
    markers = ["o", "s", "^", "D"]
    scorers = sorted({s for _, s in table})
    for (method, scorer), by_rho in sorted(table.items()):
        rhos = sorted(by_rho)
        ax.plot(rhos, [np.mean(by_rho[r]) for r in rhos], marker=markers[scorers.index(scorer) % 4], ls="-",
                color=COLORS.get(method, "k"), label=f"{method} / {scorer}" if scorer != "none" else method)
    if metric == "acc":
        ax.axhline(np.mean(list(m["full_acc"].values())), color=COLORS["full"], ls="--", label="full")
    ax.set_title(f"SmolLM2 ({m['context_len']} tokens), task mean", fontsize=8)
    ax.set_xlabel("compression ratio rho"); ax.set_ylabel("exact-match accuracy" if metric == "acc" else
                                                          "KL(full || compressed), answer tokens")
    ax.legend(fontsize=5)


def _evaluate(results: Path, out: Path) -> None:
    m = read_metrics(results / "evaluate" / "metrics.json")
    tidy = read_tidy(results / "evaluate" / "results.csv")
    ol = tidy[tidy.metric == "oracle_loss"]
    fig, axes = new_figure()
    per = m.get("oracle_loss_per_split", {})
    keys = sorted(per, key=lambda k: int(k[3:]))
    for method in ("uniform", "adakv", "lukv", "oracle"):
        sub = ol[ol.method == method].sort_values("step")
        if method == "lukv" and keys:
            # the curves of the independent profiling splits: mean, band from the smallest to the largest
            vals = np.array([per[k]["lukv"] for k in keys])
            plot_band(axes[0, 0], [int(k[3:]) / 100 for k in keys], vals.mean(axis=1), vals.min(axis=1),
                      vals.max(axis=1), label=f"lukv (mean, range over {vals.shape[1]} profiling splits)",
                      color=COLORS[method], marker="o")
            continue
        axes[0, 0].plot(sub.step / 100, sub.value, "o-", color=COLORS[method], label=method)
    axes[0, 0].set_xlabel("compression ratio rho"); axes[0, 0].set_ylabel("held-out oracle loss (sum)")
    axes[0, 0].legend()
    save_figure(fig, out / "oracle_loss_vs_rho.png")
    ds = tidy[tidy.metric.isin(["recall", "kl"])]
    scorers = sorted(ds.scorer.dropna().unique())
    for metric, fname, ylabel in (("recall", "accuracy_vs_rho.png", "recall accuracy"),
                                  ("kl", "kl_vs_rho.png", "KL(full || compressed)")):
        smol = _smollm2_metrics(results)
        fig, axes = new_figure(ncols=len(scorers) + (smol is not None))
        if smol is not None:
            _smollm2_panel(axes[0, -1], smol, "acc" if metric == "recall" else "kl")
        for ax, scorer in zip(axes[0], scorers):
            sub = ds[(ds.metric == metric) & (ds.scorer == scorer)]
            for method in METHODS:
                s = sub[sub.method == method].sort_values("step")
                if len(s):
                    ax.plot(s.step / 100, s.value, "o-", color=COLORS[method], label=method)
            if metric == "recall":
                ax.axhline(m["recall_full"], color=COLORS["full"], ls="--", label="full")
            ax.set_title(f"scorer {scorer}"); ax.set_xlabel("compression ratio rho"); ax.set_ylabel(ylabel)
            ax.legend()
        save_figure(fig, out / fname)
    rows = []
    for scorer, by_rho in m["downstream"].items():
        for key, by_method in by_rho.items():
            for method, vals in by_method.items():
                rows.append({"task": "kv_recall", "scorer": scorer, "rho": int(key[3:]) / 100, "method": method,
                             "recall": vals["recall"], "kl": vals["kl"], "kept": vals["kept"]})
    smol = _smollm2_metrics(results)
    if smol is not None:
        rows += _smollm2_rows(smol)
    frame = pd.DataFrame(rows)
    from shared.results import atomic_path

    with atomic_path(out / "downstream.csv") as tmp:
        frame.to_csv(tmp, index=False)
    write_markdown_table(frame, out / "downstream.md",
                         title=f"Downstream on held-out KV recall (full-cache recall {m['recall_full']:.3f}) and "
                               "the SmolLM2 tasks (task smollm2/*: recall = exact-match accuracy, KL over the "
                               "answer tokens); kept = fraction of context keys kept")


def _performance(results: Path, out: Path) -> None:
    m = read_metrics(results / "perf" / "metrics.json")
    hw = read_metrics(results / "perf" / "provenance.json").get("hardware", {})
    a, e = m["allocation"], m["eviction"]
    allocation = pd.DataFrame([{"what": f"allocation N={a['N']}, T={a['T']}, rho=0.8",
                                "ours": f"greedy {a['greedy_s'] * 1e3:.3g} ms",
                                "reference": f"exact DP {a['dp_s'] * 1e3:.3g} ms",
                                "ratio (reference / ours)": a["time_ratio_dp_over_greedy"]}])
    presses = pd.DataFrame(list(e["ratio_to_no_press"].items()),
                           columns=["press (prefill + compression + decode)", "CPU time / no-press CPU time"])
    path = out / "performance_table.md"
    title = (f"Performance (least CPU time over alternating rounds, one thread; hardware: {hw.get('cpu', 'unknown')}, "
             f"{hw.get('cores', '?')} cores)")
    atomic_write_text(path, "\n".join([
        markdown_table(allocation, floatfmt=".3g", title=title),
        f"Relative value gap (DP - greedy) / DP: {a['rel_value_gap']:.3g}.\n",
        markdown_table(presses, floatfmt=".3g"),
        "Head-wise presses (AdaKV, LU-KV) only mask keys: no memory is freed, so memory and latency gains of the "
        "paper are not evaluated.\n"]))


_DRAWN_FROM = {"instances": _instances, "profile": _profile, "evaluate": _evaluate, "perf": _performance}


def make_figures(results_dir: Path, out_dir: Path, scale: str) -> None:
    """Write every figure and table listed under the scale's ``figures:`` whose experiment ran: one left out at
    this scale (``not_run`` in claims.yaml) has no metrics, and the workflow does not expect its figures."""
    for experiment, draw in _DRAWN_FROM.items():
        if (results_dir / experiment / "metrics.json").exists():
            draw(results_dir, out_dir)


if __name__ == "__main__":
    main(make_figures)
