"""Figures and tables of the dro_varclust reproduction, drawn from saved results (never recomputed).

``python -m papers.dro_varclust.plots --results results/quick/dro_varclust --out figures/quick/dro_varclust --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_write_text, markdown_table, read_arrays, read_metrics, write_markdown_table

from papers.dro_varclust.experiments import PUBLISHED, key_of

__all__ = ["make_figures", "LABELS", "METHOD_ORDER"]

METHOD_ORDER = ("dro", "dro_admm_paper", "lasso_cv", "ridge", "corr_spectral", "kmeans", "ssc_omp", "ensc", "ssc_admm",
                "lrr", "cord", "mfc", "kmedoids")
LABELS = {"dro": "DRO (ADMM)", "dro_admm_paper": "DRO (release ADMM)", "lasso_cv": "Lasso-CV nodewise",
          "ridge": "Ridge nodewise", "corr_spectral": "abs-corr spectral", "kmeans": "k-means", "ssc_omp": "SSC-OMP",
          "ensc": "EnSC", "cord": "CORD/ACC", "mfc": "MFC", "kmedoids": "k-medoids", "ssc_admm": "SSC-ADMM",
          "lrr": "LRR"}
COLORS = method_colors(METHOD_ORDER)


def _is_main_config(config: dict) -> bool:
    return (config.get("n"), config.get("p"), config.get("K")) == (250, 500, 25) and \
        set(config.get("seeds", [])) == set(PUBLISHED["dro_acc_by_seed"])


def _accuracy_by_method(results: Path, out: Path) -> None:
    m = read_metrics(results / "synthetic_main" / "metrics.json")
    methods = [k for k in METHOD_ORDER if k in m]
    fig, axes = new_figure(width=max(4.2, 0.75 * len(methods) + 1.5), height=3.4)
    ax = axes[0, 0]
    for i, k in enumerate(methods):
        vals = np.array(list(m[k]["acc_by_seed"].values()))
        ax.bar(i, m[k]["mean_acc"], color=COLORS[k], alpha=0.35, width=0.7)
        ax.errorbar(i, m[k]["mean_acc"], yerr=m[k]["se_acc"], color="k", capsize=3, linewidth=1)
        jitter = np.linspace(-0.2, 0.2, vals.size)
        ax.scatter(i + jitter, vals, color=COLORS[k], s=12, zorder=3)
    if _is_main_config(m["config"]):
        pub = np.array([PUBLISHED["dro_acc_by_seed"][s] for s in m["config"]["seeds"]])
        ax.scatter(np.linspace(-0.2, 0.2, pub.size), pub, marker="x", color="k", s=16, zorder=4,
                   label=f"published DRO (mean {PUBLISHED['dro_mean_acc']})")
        ax.legend(fontsize=7)
    ax.set_xticks(range(len(methods)), [LABELS[k] for k in methods], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("clustering accuracy")
    ax.set_ylim(0, 1.02)
    c = m["config"]
    ax.set_title(f"Block-factor model, n={c['n']}, p={c['p']}, K={c['K']} ({len(c['seeds'])} seeds; "
                 "bar = mean +- s.e.)", fontsize=8)
    save_figure(fig, out / "accuracy_by_method.png")
    main_config = _is_main_config(c)
    rows = [{"seed": int(s),
             "published_dro_acc": PUBLISHED["dro_acc_by_seed"][int(s)] if main_config else "n/a (other config)",
             "ours_dro_acc": f"{v:.6g}",
             **({"ours_dro_admm_paper_acc": f"{m['dro_admm_paper']['acc_by_seed'][s]:.6g}"}
                if "dro_admm_paper" in m else {})}
            for s, v in m["dro"]["acc_by_seed"].items()]
    atomic_write_text(out / "published_vs_ours.csv", pd.DataFrame(rows).to_csv(index=False))
    table = pd.DataFrame([{"method": LABELS[k], "mean accuracy": m[k]["mean_acc"], "s.e.": m[k]["se_acc"],
                           "mean AMI": m[k]["mean_ami"],
                           "DRO - method (paired mean)": m["diff"][f"dro_minus_{k}"]["mean"] if k != "dro" else "",
                           "paired s.e.": m["diff"][f"dro_minus_{k}"]["se"] if k != "dro" else ""}
                          for k in methods])
    write_markdown_table(table, out / "accuracy_table.md", floatfmt=".3f",
                         title=f"Block-factor model, (n, p, K) = ({c['n']}, {c['p']}, {c['K']}), seeds "
                               f"{min(c['seeds'])}-{max(c['seeds'])}: accuracy and AMI per method")


def _grid_plot(ax, grid, block, xkey, published=None, log=False, label="DRO (ADMM)"):
    means = np.array([block[key_of(v)]["mean_acc"] for v in grid])
    ses = np.array([block[key_of(v)]["se_acc"] for v in grid])
    plot_band(ax, grid, means, means - ses, means + ses, label=f"{label}, ours (band: +- 1 s.e.)", color=COLORS["dro"],
              marker="o")
    if published:
        xs = sorted(published)
        ax.plot(xs, [published[x] for x in xs], marker="x", linestyle="--", color="0.4",
                label="published (main config)")
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xkey)
    ax.set_ylabel("mean accuracy")
    ax.legend(fontsize=7)


def _alpha_figure(results: Path, out: Path, full: bool) -> None:
    m = read_metrics(results / "alpha_ablation" / "metrics.json")
    fig, axes = new_figure(width=4.4, height=3.2)
    _grid_plot(axes[0, 0], m["alphas"], m["by_alpha"], r"$\alpha$ (radius level)",
               PUBLISHED["alpha"] if full else None, log=True)
    axes[0, 0].set_title(f"Sensitivity to alpha (range of means {m['acc_range']:.3f})", fontsize=8)
    save_figure(fig, out / "alpha_ablation.png")


def _k_figure(results: Path, out: Path, full: bool) -> None:
    m = read_metrics(results / "k_misspecified" / "metrics.json")
    ks = m["K_test"]
    ctl = m.get("control", {}).get("random_affinity")
    fig, axes = new_figure(ncols=2, width=4.4, height=3.2)
    for ax, (what, label) in zip(axes[0], (("acc", "mean accuracy"), ("ari", "mean adjusted Rand index"))):
        for block, name, color, marker in ((m, "DRO (ADMM), ours", COLORS["dro"], "o"),
                                           (ctl, "control: random affinity", "0.45", "s")):
            if block is None:
                continue
            if what == "acc":
                means = np.array([block["by_K"][str(k)]["mean_acc"] for k in ks])
                ses = np.array([block["by_K"][str(k)]["se_acc"] for k in ks])
            else:
                means = np.array([block["ari_by_K"][str(k)]["mean"] for k in ks])
                ses = np.array([block["ari_by_K"][str(k)]["se"] for k in ks])
            plot_band(ax, ks, means, means - ses, means + ses, label=f"{name} (band: +- 1 s.e.)", color=color,
                      marker=marker)
        if full and what == "acc":
            xs = sorted(PUBLISHED["K"])
            ax.plot(xs, [PUBLISHED["K"][k] for k in xs], marker="x", linestyle="--", color="0.4", label="published")
        band = m.get("peak_band_K")
        if band:
            ax.axvspan(min(band) - 0.5, max(band) + 0.5, color="0.9", zorder=0, label="band around the true K")
        ax.axvline(m["K_true"], color="0.6", linestyle=":", linewidth=1, label=f"true K = {m['K_true']}")
        ax.set_xlabel("K used by the spectral step")
        ax.set_ylabel(label)
        ax.legend(fontsize=6)
    axes[0, 0].set_title("Misspecified number of clusters: best-matching accuracy", fontsize=8)
    axes[0, 1].set_title("Chance-corrected: adjusted Rand index (k-peak)", fontsize=8)
    save_figure(fig, out / "k_misspecified.png")


def _pecok_table(results: Path, out: Path) -> None:
    m = read_metrics(results / "pecok_baseline" / "metrics.json")
    t = read_metrics(results / "pecok_baseline" / "provenance.json")["cpu_s_by_seed"]
    c = m["config"]
    paired = m["diff"]["dro_minus_pecok"]["by_seed"]
    rows = []
    for i, (seed, acc) in enumerate(m["pecok"]["acc_by_seed"].items()):
        rows.append({"seed": seed, "PECOK accuracy": f"{acc:.3f}",
                     "DRO - PECOK": "n/a (not paired)" if paired is None else f"{paired[i]:.3f}",
                     "Gamma_hat CPU s": f"{t[seed]['gamma_cpu_s']:.3g}", "SDP (SCS) CPU s": f"{t[seed]['sdp_cpu_s']:.3g}"})
    title = (f"PECOK (SCS, eps {m['eps']:g}, then the spectral step) at (n, p, K) = ({c['n']}, {c['p']}, {c['K']}), "
             f"seeds {min(c['seeds'])}-{max(c['seeds'])}; " + (m.get("not_paired") or
                                                                "paired with synthetic_main's DRO accuracy"))
    write_markdown_table(pd.DataFrame(rows), out / "pecok_table.md", title=title)


def _rho_figure(results: Path, out: Path, full: bool) -> None:
    m = read_metrics(results / "rho_init_ablation" / "metrics.json")
    fig, axes = new_figure(width=4.4, height=3.2)
    _grid_plot(axes[0, 0], m["rho_inits"], m["by_rho_init"], r"initial ADMM penalty $\rho_{init}$",
               PUBLISHED["rho_init"] if full else None, log=True, label=f"DRO ({m['method']})")
    ctl = m.get("control", {}).get("first_iterates")
    if ctl:  # the negative control of rho-insensitive: the solver returned after its first outer iteration(s)
        xs = sorted(float(r) for r in (min(m["rho_inits"]), max(m["rho_inits"])))
        axes[0, 0].plot(xs, [float(np.mean(list(ctl["acc_by_rho_init"][key_of(r)].values()))) for r in xs], "s--",
                        color="0.45", label=f"control: stopped after {ctl['max_outer']} outer iteration(s)")
        axes[0, 0].legend(fontsize=7)
    axes[0, 0].set_title(f"Sensitivity to rho_init (range of means {m['acc_range']:.3f})", fontsize=8)
    save_figure(fig, out / "rho_init_ablation.png")


def _scenario_figure(results: Path, out: Path) -> None:
    m = read_metrics(results / "scenario_sweeps" / "metrics.json")
    fig, axes = new_figure(ncols=3, width=3.8, height=3.2)
    for ax, name, xlabel in ((axes[0, 0], "common_factor", r"common-factor strength $\rho$ (noise 1)"),
                             (axes[0, 1], "noise", r"noise level (no common factor)")):
        levels = m[name]["levels"]
        for meth in [k for k in METHOD_ORDER if k in m[name][key_of(levels[0])]]:
            ax.plot(levels, [m[name][key_of(v)][meth]["mean_acc"] for v in levels], marker="o", color=COLORS[meth],
                    label=LABELS[meth])
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mean accuracy")
    nog = m["no_global"][key_of(m["no_global"]["levels"][0])]
    meths = [k for k in METHOD_ORDER if k in nog]
    ax = axes[0, 2]
    ax.bar(range(len(meths)), [nog[k]["mean_acc"] for k in meths], yerr=[nog[k]["se_acc"] for k in meths],
           color=[COLORS[k] for k in meths], capsize=3)
    ax.set_xticks(range(len(meths)), [LABELS[k] for k in meths], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("mean accuracy")
    ax.set_title("no global factor, noise 0.1", fontsize=8)
    axes[0, 0].legend(fontsize=7)
    save_figure(fig, out / "scenario_sweeps.png")


def _affinity_figure(results: Path, out: Path) -> None:
    a = read_arrays(results / "synthetic_main" / "affinity_example.npz")
    W, labels = a["W"], a["labels"]
    fig, axes = new_figure(width=4.0, height=3.6)
    ax = axes[0, 0]
    im = ax.imshow(W, cmap="viridis", interpolation="nearest")
    for b in np.flatnonzero(np.diff(labels)) + 0.5:
        ax.axhline(b, color="w", linewidth=0.5)
        ax.axvline(b, color="w", linewidth=0.5)
    ax.grid(False)
    fig.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title(f"|B| + |B|^T, seed {int(a['seed'])}, variables by true cluster", fontsize=8)
    save_figure(fig, out / "affinity_example.png")


def _solver_table(results: Path, out: Path) -> None:
    m = read_metrics(results / "solver_check" / "metrics.json")
    timings = read_metrics(results / "solver_check" / "timings.json")
    rows = []
    for iid, inst in m["instances"].items():
        for meth, obj in inst["objective"].items():
            rows.append({"instance": iid, "method": meth, "objective": f"{obj:.10g}",
                         "rel_gap_vs_cvxpy": f"{(obj - inst['objective']['cvxpy']) / inst['objective']['cvxpy']:.3g}",
                         "iterations": inst["n_iter"][meth], "wall_s": f"{timings[iid][meth]:.3g}"})
    text = pd.DataFrame(rows).to_csv(index=False)
    atomic_write_text(out / "solver_check.csv", text)


def _performance_table(results: Path, out: Path) -> None:
    base = results / "performance"
    t = read_metrics(base / "timings.json")
    m = read_metrics(base / "metrics.json")
    hw = read_metrics(base / "provenance.json").get("hardware", {})
    rows = []
    for iid, v in t["timings"].items():
        rows.append({"instance (n, p)": iid, "ADMM (ours) CPU s": f"{v['admm_cpu_s']:.3g}",
                     f"cvxpy ({t['backends'][iid]}) CPU s": f"{v['cvxpy_cpu_s']:.3g}",
                     "ratio cvxpy / ADMM (CPU)": f"{v['ratio_cvxpy_over_admm']:.3g}",
                     "wall s (ADMM, cvxpy)": f"{v['admm_s']:.3g}, {v['cvxpy_s']:.3g}",
                     "ADMM iterations": v["admm_iters"], "rel. objective gap": f"{m['rel_obj_gap'][iid]:.2g}"})
    frame = pd.DataFrame(rows)
    title = (f"solve_dro_nodewise(method='admm') vs method='cvxpy' on the same X and s, CPU seconds (median of "
             f"{t['repeats']} "
             f"ADMM runs, {t['cvxpy_repeats']} cvxpy run(s), BLAS on one thread; hardware: {hw.get('cpu', 'unknown')}, "
             f"{hw.get('cores', '?')} cores)")
    path = out / "performance_table.md"
    parts = [markdown_table(frame, title=title)]
    probe = results / "main_probe"
    if (probe / "timings.json").exists():
        t, m = read_metrics(probe / "timings.json"), read_metrics(probe / "metrics.json")
        c = m["config"]
        where = "the paper's main configuration" if m["main_config"] else "a configuration other than the paper's"
        published = m["published_by_seed"] or [None] * len(m["seeds"])
        cold = pd.DataFrame([{"seed": seed, "radius s": f"{t[str(seed)]['radius_cpu_s']:.3g}",
                              "ADMM s": f"{t[str(seed)]['admm_cpu_s']:.3g}", "iterations": m["n_iter"][str(seed)],
                              "ms per iteration": f"{1000 * t[str(seed)]['admm_cpu_s_per_iteration']:.3g}",
                              "accuracy (ours)": f"{acc:.3f}", "accuracy (release)": "n/a" if pub is None else str(pub)}
                             for seed, acc, pub in zip(m["seeds"], m["acc_by_seed"], published)])
        parts += [f"One cold solve at (n, p, K) = ({c['n']}, {c['p']}, {c['K']}), {where}; ADMM (ours, abs_tol "
                  f"{m['abs_tol']:g}, rel_tol {m['rel_tol']:g}), BLAS on one thread, CPU seconds (the unit of the "
                  "projected full run):\n", markdown_table(cold)]
        if m.get("plain_admm"):
            plain = pd.DataFrame([{
                "seed": seed, "plain ADMM s": f"{t[str(seed)]['plain_admm_cpu_s']:.3g}",
                "iterations": m["plain_admm"][str(seed)]["n_iter"],
                "ms per iteration": f"{1000 * t[str(seed)]['plain_admm_cpu_s_per_iteration']:.3g}",
                "speed-up (plain / accelerated)": f"{t[str(seed)]['speedup_plain_over_anderson']:.3g}",
                "rel. objective difference (accelerated - plain)": f"{m['plain_admm'][str(seed)]['rel_obj_diff']:.2g}",
                "max abs B difference": f"{m['plain_admm'][str(seed)]['max_abs_B_diff']:.2g}",
                "accuracy (plain)": f"{m['plain_admm'][str(seed)]['accuracy']:.3f}"} for seed in m["seeds"]])
            parts += ["The same solve by the former default (plain ADMM without Anderson acceleration, abs_tol 1e-7, "
                      "rel_tol 1e-6), CPU seconds:\n", markdown_table(plain)]
    atomic_write_text(path, "\n".join(parts))


def _digits_table(results: Path, out: Path) -> None:
    m = read_metrics(results / "digits" / "metrics.json")
    frame = pd.DataFrame([{"method": LABELS.get(k, k), "accuracy": v["accuracy"], "AMI": v["ami"]}
                          for k, v in m["scores"].items()])
    write_markdown_table(frame, out / "digits_table.md", floatfmt=".3f",
                         title=f"Digits (exploratory, no claim): p = {m['p']} images as variables, n = {m['n']} "
                               f"pixels, K = {m['K']}")


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table whose results exist under ``results_dir``."""
    results, out = Path(results_dir), Path(out_dir)
    full = scale == "full"
    if (results / "synthetic_main" / "metrics.json").exists():
        _accuracy_by_method(results, out)
        _affinity_figure(results, out)
    steps = (("alpha_ablation", lambda: _alpha_figure(results, out, full)),
             ("k_misspecified", lambda: _k_figure(results, out, full)),
             ("rho_init_ablation", lambda: _rho_figure(results, out, full)),
             ("scenario_sweeps", lambda: _scenario_figure(results, out)),
             ("solver_check", lambda: _solver_table(results, out)),
             ("performance", lambda: _performance_table(results, out)),
             ("pecok_baseline", lambda: _pecok_table(results, out)),
             ("digits", lambda: _digits_table(results, out)))
    for name, draw in steps:
        if (results / name / "metrics.json").exists():
            draw()


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
