"""Figures and tables of pf_minimax, drawn from ``results/<scale>/pf_minimax`` (never recomputed).

``python -m papers.pf_minimax.plots --results results/quick/pf_minimax --out figures/quick/pf_minimax --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, save_figure
from shared.results import atomic_write_text, read_metrics, read_tidy, write_markdown_table

ALL_METHODS = ("v_x", "v_y", "v_xy", "proj", "sp_fw", "peg", "r_pdcg", "cg_rpga")
LABELS = {"v_x": "V-x (LMO on x)", "v_y": "V-y (LMO on y)", "v_xy": "V-xy (LMO on both)", "proj": "PROJ",
          "sp_fw": "SP-FW", "peg": "PEG", "r_pdcg": "R-PDCG (tuned)", "cg_rpga": "CG-RPGA (tuned)"}
COLORS = method_colors(ALL_METHODS)
FLOOR = 1e-15


def _loglog_panels(frame: pd.DataFrame, metric: str, methods, out: Path, ylabel: str, *, logy=True,
                   legend_fontsize: int = 7):
    """One panel per problem of ``metric`` against k (log x). ``methods``: method names of the frame, or
    (name in the frame, colour key, label, line style) tuples."""
    series = [m if isinstance(m, tuple) else (m, m, LABELS[m], "-") for m in methods]
    frame = frame[(frame.metric == metric) & (frame.step > 0)]
    problems = list(dict.fromkeys(frame.problem))
    fig, axes = new_figure(ncols=max(len(problems), 1))
    for ax, prob in zip(axes[0], problems):
        sub = frame[frame.problem == prob]
        for name, color, label, style in series:
            d = sub[sub.method == name].sort_values("step")
            if len(d):
                ax.plot(d.step, np.maximum(d.value, FLOOR) if logy else d.value, color=COLORS[color], label=label,
                        linestyle=style)
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_title(prob)
        ax.set_xlabel("iteration k")
        ax.set_ylabel(ylabel)
    axes[0][0].legend(fontsize=legend_fontsize)
    save_figure(fig, out)


def _cc_figures(results: Path, out: Path) -> None:
    frame = read_tidy(results / "cc_games" / "results.csv")
    uniform = frame[frame.problem.str.startswith("uniform")]
    _loglog_panels(uniform, "gap", ALL_METHODS, out / "cc_gap_vs_iter.png", "duality gap (last iterate)")
    cc = read_metrics(results / "cc_games" / "metrics.json")["cc"]
    table = []
    for game, vals in cc["values"].items():
        row = {"game": game, "LP value (HiGHS)": vals["lp"],
               "closed form": vals.get("closed_form", "-")}
        row.update({f"gap {LABELS[m]}": cc["gap_final"][game].get(m, "-") for m in ALL_METHODS})
        table.append(row)
    write_markdown_table(pd.DataFrame(table), out / "cc_values.md", floatfmt=".3g",
                         title=f"Matrix games: LP value and final duality gap at K = {cc['K']}")


def _rmc_figures(results: Path, out: Path) -> None:
    """Robust multiclass classification (generated text-like data): duality gap against k, first two seeds."""
    frame = read_tidy(results / "robust_multiclass" / "results.csv")
    first = list(dict.fromkeys(frame.problem))[:2]
    methods = ("v_x", "v_y", "v_xy", "proj", "sp_fw", "r_pdcg", "cg_rpga")
    _loglog_panels(frame[frame.problem.isin(first)], "gap", methods,
                   out / "rmc_gap_vs_iter.png", "duality gap (last iterate)")


def _nuclear_figures(results: Path, out: Path) -> None:
    frame = read_tidy(results / "nuclear" / "results.csv")
    problems = list(dict.fromkeys(frame.problem))
    fig, axes = new_figure(ncols=len(problems))
    for ax, prob in zip(axes[0], problems):
        sub = frame[frame.problem == prob]
        for m in ("v_x", "proj"):
            d = sub[sub.method == m]
            gap = d[d.metric == "gap"].sort_values("step").value.to_numpy()
            secs = d[d.metric == "cum_seconds"].sort_values("step").value.to_numpy()
            ax.plot(secs[1:], np.maximum(gap[1:], FLOOR), marker=".", color=COLORS[m], label=LABELS[m])
        for m in sorted(set(sub.method[sub.method.str.startswith("tuned_")])):  # the tuned comparator (issue 28)
            d = sub[sub.method == m]
            gap = d[d.metric == "gap"].sort_values("step").value.to_numpy()
            secs = d[d.metric == "cum_seconds"].sort_values("step").value.to_numpy()
            ax.plot(secs[1:], np.maximum(gap[1:], FLOOR), marker=".", color="black",
                    label=f"tuned projected comparator ({m[len('tuned_'):]})")
        d = sub[sub.method == "v_x_full_svd"]  # the control of lmo-wallclock (absent in older runs)
        if len(d):
            gap = d[d.metric == "gap"].sort_values("step").value.to_numpy()
            secs = d[d.metric == "cum_seconds"].sort_values("step").value.to_numpy()
            ax.plot(secs[1:], np.maximum(gap[1:], FLOOR), marker=".", ls="--", color=COLORS["v_x"],
                    label=f"{LABELS['v_x']}, full-SVD LMO (control)")
        ax.set_yscale("log")
        ax.set_title(prob)
        ax.set_xlabel("cumulative update time (s)")
        ax.set_ylabel("duality gap")
    axes[0][0].legend(fontsize=7)
    save_figure(fig, out / "nuclear_gap_vs_time.png")
    timing = read_metrics(results / "nuclear" / "timing.json")["nuclear"]
    rows = []
    for p, t in timing["by_p"].items():
        rows.append({"p": p[1:], "V-x median iter (ms)": 1e3 * t["v_x"]["median_iter_s"],
                     "PROJ median iter (ms)": 1e3 * t["proj"]["median_iter_s"],
                     "ratio V-x / PROJ": t["time_ratio"], "gap ratio at PROJ's total time": t["gap_ratio_equal_time"],
                     "same, full-SVD LMO (control)": t.get("control_full_svd_lmo", {}).get("gap_ratio_equal_time",
                                                                                          float("nan"))})
    if "tuned" in timing:
        t = timing["tuned"]
        rows.append({"p": f"{timing['ref_p']} (tuned: {t['choice']})", "V-x median iter (ms)": float("nan"),
                     "PROJ median iter (ms)": 1e3 * t["median_iter_s"], "ratio V-x / PROJ": float("nan"),
                     "gap ratio at PROJ's total time": t["gap_ratio_equal_time"],
                     "same, full-SVD LMO (control)": t.get("control", {}).get("full_svd_lmo", {}).get(
                         "gap_ratio_equal_time", float("nan"))})
    hw = _hardware(results / "nuclear")
    write_markdown_table(pd.DataFrame(rows), out / "nuclear_time_per_iter.md", floatfmt=".3g",
                         title=f"Nuclear-ball game: time per iteration (one BLAS thread; {hw})")


def _cc_controls_figures(results: Path, out: Path) -> None:
    """The controls of cc-rate and cc-beats-spfw (experiment cc_controls): gap traces on the first two games, the
    three algorithms (solid), with a fixed smoothing weight (dashed) and LMO-LMO with no smoothing (dotted); a
    table of the last-decade slopes and of the baselines' gaps below the cc_games grid."""
    frame = read_tidy(results / "cc_controls" / "results.csv")
    frame = frame[(frame.metric == "gap") & (frame.step > 0)]
    problems = list(dict.fromkeys(frame.problem))[:2]
    fig, axes = new_figure(ncols=max(len(problems), 1))
    for ax, prob in zip(axes[0], problems):
        sub = frame[frame.problem == prob]
        for m in ("v_x", "v_y", "v_xy"):
            for tag, ls, lab in ((m, "-", LABELS[m]), (f"{m}_fixed", "--", f"{LABELS[m]}, fixed mu")):
                d = sub[sub.method == tag].sort_values("step")
                ax.plot(d.step, np.maximum(d.value, FLOOR), ls=ls, color=COLORS[m], label=lab)
        d = sub[sub.method == "v_xy_nosmooth"].sort_values("step")
        ax.plot(d.step, np.maximum(d.value, FLOOR), ls=":", color="black", label="V-xy, no smoothing")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(prob)
        ax.set_xlabel("iteration k")
        ax.set_ylabel("duality gap (last iterate)")
    axes[0][0].legend(fontsize=6)
    save_figure(fig, out / "cc_controls_gap.png")
    cc = read_metrics(results / "cc_controls" / "metrics.json")["cc_controls"]
    rows = [{"game": g, **{f"late slope {LABELS[m]}": v for m, v in cc["slope_late"][g].items()},
             **{f"fixed mu {LABELS[m]}": v for m, v in cc["fixed_smoothing"]["slope_late"][g].items()},
             "no-smoothing V-xy / SP-FW gap": r}
            for g, r in zip(cc["slope_late"], cc["no_smoothing"]["ratio_vxy_spfw"])]
    text = [f"Last-decade gap slopes (k in [{cc['k_late']}, {cc['K']}]) and the no-smoothing ratio", "",
            _md(pd.DataFrame(rows))]
    if "grid_below" in cc:
        grid = pd.DataFrame(cc["grid_below"]).rename_axis("step constant c").reset_index()
        text += ["", "R-PDCG / CG-RPGA final gap on the first game at the step constants below cc_games' grid", "",
                 _md(grid)]
    atomic_write_text(out / "cc_controls.md", "\n".join(text) + "\n")


def _nc_figures(results: Path, out: Path) -> None:
    smoothing = ("v_x", "v_y", "v_xy", "proj")
    ncsc = read_tidy(results / "ncsc_dro" / "results.csv")
    _loglog_panels(ncsc, "fw_gap_best", smoothing, out / "ncsc_fwgap.png", "best FW gap of Phi")
    ncc = read_tidy(results / "ncc_dro" / "results.csv")
    _loglog_panels(ncc, "fw_gap_best", smoothing, out / "ncc_fwgap.png", "best FW gap of Phi_mu_k")
    _loglog_panels(ncc, "objective", smoothing, out / "ncc_objective.png", "Phi(x_k) = max_j L_j(x_k)", logy=False)


def _anytime_table(results: Path, out: Path) -> None:
    a = read_metrics(results / "anytime" / "metrics.json")["anytime"]
    frame = pd.DataFrame([{"K": a["K"], "prefix identical": "yes" if a["prefix_identical"] == 1 else "no",
                           "gap at K (K-run)": a["gap_K_short"], "gap at K (2K-run)": a["gap_K_long"],
                           "gap at 2K": a["gap_2K"]}])
    write_markdown_table(frame, out / "anytime.md", floatfmt=".6g",
                         title="Anytime check: V-x run for K and for 2K iterations (uniform game, seed 0)")


def _hardware(run_dir: Path) -> str:
    try:
        hw = read_metrics(run_dir / "provenance.json")["hardware"]
        return f"{hw['cpu']}, {hw['cores']} cores"
    except (OSError, KeyError):
        return "hardware unknown"


def _performance_table(results: Path, out: Path) -> None:
    det = read_metrics(results / "performance" / "metrics.json")["performance"]
    timing = read_metrics(results / "performance" / "timing.json")
    hw = _hardware(results / "performance")
    games = []
    for m in [m for m in ("v_x", "v_y", "v_xy", "peg", "peg_tuned", "r_pdcg", "cg_rpga") if m in det["games"]]:
        t, d = timing["games"][m], det["games"][m]
        label = (f"PEG tuned (step {det['games']['peg_tuning']['best_step']:g}/L)" if m == "peg_tuned"
                 else LABELS[m])
        games.append({"method": label, "reached gap 1e-3": "yes" if d["reached"] else "no (within K)",
                      "iterations": d["iterations"] if d["reached"] else "-",
                      "seconds": t["seconds"],
                      "time / LP time": (f"{t['ratio_to_lp']:.3g}" if d["reached"] else f"> {t['ratio_to_lp']:.3g}")})
    games_md = _md(pd.DataFrame(games))
    nuc = pd.DataFrame([{"p": p[1:], "svds(k=1) on sparse adjoint (ms)": 1e3 * t["svds_s"],
                         "dense SVD + projection (ms)": 1e3 * t["svd_project_s"], "ratio svds / SVD": t["ratio"]}
                        for p, t in timing["nuclear"].items()])
    text = [f"**Performance (one BLAS thread; {hw})**", "",
            f"Matrix game (uniform, seed 0): time to a duality gap of 1e-3 against the HiGHS LP "
            f"({1e3 * timing['games']['lp_s']:.3g} ms); CPU seconds, the LP and the runs that reach the target timed "
            f"in alternation, least of repeated calls.", "", games_md, "",
            "Nuclear-ball oracles (least CPU seconds per call over alternating rounds):", "", _md(nuc)]
    if "cvxpy" in det:
        c = det["cvxpy"]
        text += ["", f"cvxpy normNuc value {c['value']:.6g} ({c['solver']}); V-x bracket "
                     f"[{c['vx_lower']:.6g}, {c['vx_upper']:.6g}]; inside: {c['inside']}"]
    atomic_write_text(out / "performance.md", "\n".join(text) + "\n")


def _dl_figures(results: Path, out: Path) -> None:
    """Dictionary learning: median over seeds of the best FW gap of Phi_nu against k (all methods and the
    fixed-smoothing controls), and a table of the tuning choices and the per-method medians."""
    frame = read_tidy(results / "dictionary_learning" / "results.csv")
    frame = frame[(frame.metric == "fw_gap_best") & (frame.step > 0)]
    dl = read_metrics(results / "dictionary_learning" / "metrics.json")["dl"]
    fig, axes = new_figure(ncols=1)
    ax = axes[0][0]
    for m in (*ALL_METHODS, "v_x_fixed", "v_xy_fixed"):
        d = frame[frame.method == m]
        if not len(d):
            continue
        med = d.groupby("step").value.median()
        base = m.replace("_fixed", "")
        ax.plot(med.index, np.maximum(med.values, FLOOR), color=COLORS[base],
                linestyle="--" if m.endswith("_fixed") else "-",
                label=LABELS[base] + (" fixed smoothing" if m.endswith("_fixed") else ""))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iteration k")
    ax.set_ylabel("best FW gap of Phi_nu (median)")
    ax.set_title(f"nu = {dl['measure_mu']:.3g}, {len(dl['seeds'])} seeds")
    ax.legend(fontsize=7)
    save_figure(fig, out / "dl_fwgap.png")
    per = dl["per_seed"]
    table = [{"method": LABELS[m], "tuned setting": dl["tuning"][m]["choice"],
              "at grid edge": dl["tuning"][m]["at_edge"],
              "median best FW gap": float(np.median(per["best_final"][m])),
              "median Phi": float(np.median(per["phi_final"][m])),
              "mean atom recovery": float(np.mean(per["atom_recovery"][m]))} for m in per["best_final"]]
    text = [f"Dictionary learning at K = {dl['K']} over seeds {dl['seeds']} (tuned on seed {dl['tune_seed']})", "",
            _md(pd.DataFrame(table))]
    atomic_write_text(out / "dl_table.md", "\n".join(text) + "\n")


def _cc_strong_figures(results: Path, out: Path) -> None:
    """Gap against k per game: strongly concave dual (solid), general C-C (dashed), frozen-dual control (dotted)."""
    series = [(f"{m}_{arm}", m, f"{LABELS[m]}, {arm}", style) for m in ("v_x", "v_y", "v_xy")
              for arm, style in (("sc", "-"), ("c", "--"), ("frozen", ":"))]
    _loglog_panels(read_tidy(results / "cc_strong_dual" / "results.csv"), "gap", series,
                   out / "cc_strong_gap.png", "duality gap (last iterate)", legend_fontsize=5)


def _md(frame: pd.DataFrame) -> str:
    def fmt(v):
        return format(float(v), ".3g") if isinstance(v, (float, np.floating)) else str(v)

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "|".join("---" for _ in frame.columns) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def make_figures(results_dir: Path, out_dir: Path, scale: str) -> None:
    """Write every figure and table of the spec into ``out_dir``."""
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    _cc_figures(results_dir, out_dir)
    if (results_dir / "cc_controls" / "results.csv").exists():
        _cc_controls_figures(results_dir, out_dir)
    if (results_dir / "robust_multiclass" / "results.csv").exists():
        _rmc_figures(results_dir, out_dir)
    _nuclear_figures(results_dir, out_dir)
    _nc_figures(results_dir, out_dir)
    if (results_dir / "dictionary_learning" / "results.csv").exists():
        _dl_figures(results_dir, out_dir)
    if (results_dir / "cc_strong_dual" / "results.csv").exists():
        _cc_strong_figures(results_dir, out_dir)
    _anytime_table(results_dir, out_dir)
    _performance_table(results_dir, out_dir)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
