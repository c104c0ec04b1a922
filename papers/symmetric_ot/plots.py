"""Figures and tables of symmetric_ot, drawn from the results only (nothing is recomputed).

``python -m papers.symmetric_ot.plots --results results/quick/symmetric_ot --out figures/quick/symmetric_ot
--scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_write_text, markdown_table, read_arrays, read_metrics, read_tidy, write_markdown_table

METHODS = ["POT", "reduced", "refine", "aggregate", "solve", "lift"]
COLORS = method_colors(METHODS)
PARTS = ["refine", "aggregate", "solve", "lift"]


def _speed_figure(results: Path, out: Path) -> None:
    df = read_tidy(results / "speed" / "results.csv")
    df = df[(df["method"] == "1thread") & (df["weights"] == "uniform")]
    wide = df.pivot_table(index="step", columns="metric", values="value")
    ns = list(wide.index)
    fig, axes = new_figure(2, 1, width=4.4, height=3.3)
    x = np.arange(len(ns))
    for ax, pot_key, red, title in ((axes[0, 0], "emd2_wall", "rlp", "linear OT: ot.emd2 vs reduced LP"),
                                    (axes[0, 1], "sinkhorn_wall", "rsk", "entropic OT: ot.sinkhorn vs reduced")):
        ax.bar(x - 0.2, wide[pot_key], width=0.38, color=COLORS["POT"], label="POT")
        bottom = np.zeros(len(ns))
        for part in PARTS:
            vals = wide[f"{red}_{part}_wall"].to_numpy()
            ax.bar(x + 0.2, vals, width=0.38, bottom=bottom, color=COLORS[part], label=f"reduced: {part}")
            bottom += vals
        ax.set_xticks(x, [str(int(n)) for n in ns])
        ax.set_xlabel("n = m (points)")
        ax.set_ylabel("wall time [s], 1 thread")
        ax.set_yscale("log")
        ax.set_title(title)
    axes[0, 0].legend(fontsize=7)
    save_figure(fig, out / "speed.png")


def _speed_table(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "speed" / "timing.json")["speed"]
    prov = read_metrics(results / "speed" / "provenance.json")
    df = read_tidy(results / "speed" / "results.csv")
    rows = []
    for (method, n, w), grp in df.groupby(["method", "step", "weights"], sort=True):
        t = dict(zip(grp["metric"], grp["value"]))
        single = method == "1thread"
        timer = "cpu" if single else "wall"
        rows.append({
            "n": int(n), "weights": w, "threads": "1" if single else "all",
            "ot.emd2 [s]": t[f"emd2_{timer}"], "reduced LP [s]": t[f"rlp_total_{timer}"],
            "LP ratio": t[f"emd2_{timer}"] / t[f"rlp_total_{timer}"],
            "ot.sinkhorn [s]": t[f"sinkhorn_{timer}"], "reduced Sinkhorn [s]": t[f"rsk_total_{timer}"],
            "Sinkhorn ratio": t[f"sinkhorn_{timer}"] / t[f"rsk_total_{timer}"],
            "iterations-only ratio": max(t["sinkhorn_wall"] - t["kernel_wall"], 0.0) / t["rsk_solve_wall"],
        })
    frame = pd.DataFrame(rows).sort_values(["threads", "weights", "n"], kind="stable")
    hw = prov.get("hardware", {})
    blas = {(d.get("internal_api"), d.get("architecture")) for d in prov.get("blas", [])
            if d.get("user_api") == "blas"}
    title = (f"POT vs reduced pipeline on D4 clouds (reg = 0.05 median(C), {int(df['step'].max())} max points). "
             f"CPU: {hw.get('cpu', 'unknown')}, {hw.get('cores', '?')} cores; BLAS: "
             f"{', '.join(sorted(f'{a} ({k})' for a, k in blas)) or 'unknown'}. 1-thread rows time process CPU "
             f"seconds (threadpool_limits(1)), all-thread rows wall seconds with {prov.get('cpu_threads', '?')} "
             f"threads; minimum over repeats. Gate: Sinkhorn ratio at n = {metrics['gate_n']}, uniform, 1 thread.")
    path = out / "speed.md"
    speed = markdown_table(frame, floatfmt=".3g", title=title)
    gate = markdown_table(_gate_table(results))
    atomic_write_text(path, speed + "\n\nJudged ratios (paired: POT and the reduction timed back to back in every "
                      "repeat; mean and 95% t interval over the repeats):\n\n" + gate)


def _mean_ci(x) -> str:
    """'mean [lo, hi]' with the 95% Student t interval of the mean (as the claims engine decides)."""
    from shared.claims.stats import mean_interval

    mean, lo, hi = mean_interval(list(x), "t")
    return f"{mean:.3g} [{lo:.3g}, {hi:.3g}]"


def _gate_table(results: Path) -> pd.DataFrame:
    """The judged, paired timing ratios (mean and 95% t interval over the repeats)."""
    gate = read_metrics(results / "speed" / "timing.json")["speed"]["gate"]
    ctl = gate["control"]["no_symmetry"]
    rows = []
    for key, label in (("lp_plan", "LP with plan: ot.emd / reduced_emd"),
                       ("lp_value", "LP value: ot.emd2 / reduced_emd(return_plan=False)"),
                       ("sinkhorn", "Sinkhorn end to end: ot.sinkhorn / reduced_sinkhorn"),
                       ("iterations", "Sinkhorn iterations only")):
        rows.append({"ratio (1 thread, process CPU)": label,
                     f"D4 cloud, n = {gate['n']}": _mean_ci(gate[key]),
                     f"no symmetry (control), n = {ctl['n']}": _mean_ci(ctl[key])})
    return pd.DataFrame(rows)


def _sgrot_table(results: Path, out: Path) -> None:
    """SG-ROT's synthetic experiments: cells, exactness of every version, CPU ratios with 95% intervals."""
    per = read_metrics(results / "sgrot" / "metrics.json")["instances"]
    timing = read_metrics(results / "sgrot" / "timing.json")["sgrot"]
    rows = []
    for name, e in per.items():
        t = timing[name]
        row = {"configuration": name, "n": e["n"], "|G|": e["order"], "orbits": e["orbits"],
               "cells (ours)": e["cells"], "cells (SG-ROT detection)": e["sgrot_detected"],
               "SG LP rel. err": e["SG_lp_rel_err"], "SG EOT plan diff": e["SG_eot_plan_rel_diff"],
               "C LP rel. err": e.get("C_lp_rel_err", float("nan")),
               "C EOT plan diff": e.get("C_eot_plan_rel_diff", float("nan")),
               "first-block-row formula LP err": e["block_formula_lp_rel_err"]}
        for v in ("SG_LOT", "SG_EROT", "C_LOT", "C_EROT"):
            row[f"speedup {v}"] = _mean_ci(t[f"ratio_{v}"]) if f"ratio_{v}" in t else "-"
        rows.append(row)
    n_rep = len(next(iter(timing.values()))["cpu_s"]["LOT"])
    title = ("SG-ROT synthetic clouds (Gaussian blobs moved by every group element, Euclidean cost, weights "
             "1 + 0.05 N(0, 1) per orbit). SG = cells found by colour refinement, C = orbits of the maximal cyclic "
             "subgroup (block ordering only, as in SG-ROT); entropic OT with reg = 0.1 and POT's stopping rule "
             f"(1e-6). Speedups: CPU time of POT over the version, mean [95% t interval] over {n_rep} repeats, "
             "one thread. The first-block-row formula is SG-ROT's reduction without orbit identification: exact "
             "on block ordering, wrong on random ordering.")
    write_markdown_table(pd.DataFrame(rows), out / "sgrot.md", floatfmt=".2g", title=title)


def _cells_figure(results: Path, out: Path) -> None:
    maps = read_arrays(results / "exact" / "cells_grid.npz")
    fig, axes = new_figure(3, 1, width=2.8, height=2.9)
    for ax, key, title in zip(axes[0], ("D4", "C4", "uniform_from_C"),
                              ("D4-symmetric images", "C4-symmetric images", "uniform marginals, C alone")):
        labels = maps[key]
        rng = np.random.default_rng(0)
        palette = rng.permutation(labels.max() + 1)
        ax.imshow(palette[labels], cmap="tab20", interpolation="nearest")
        ax.set_title(f"{title}: {labels.max() + 1} cells", fontsize=8)
        ax.set_xticks([]), ax.set_yticks([])
        ax.grid(False)
    save_figure(fig, out / "cells_grid.png")


def _identity_figure(results: Path, out: Path) -> None:
    df = read_tidy(results / "identity" / "results.csv")
    fig, axes = new_figure(1, 1, width=4.4, height=3.2)
    ax = axes[0, 0]
    for (method, inst), grp in df.groupby(["method", "instance"], sort=True):
        grp = grp.sort_values("step")
        plot_band(ax, grp["step"], grp["value"], label=f"{method} ({inst})",
                  color=COLORS["POT" if method == "sinkhorn" else "reduced"], log=True, marker="o")
    ax.axhline(1e-12, color="gray", ls="--", lw=1, label="claim threshold 1e-12")
    ax.set_xlabel("iterations k"), ax.set_ylabel("max |P_red - P_POT| / max P_POT")
    ax.set_title("reduced Sinkhorn vs POT, per iterate")
    ax.legend(fontsize=7)
    save_figure(fig, out / "identity.png")


def _robust_figure(results: Path, out: Path) -> None:
    df = read_tidy(results / "robust" / "results.csv")
    df = df[df["metric"].isin(["error", "bound"]) & df["eta"].notna()]
    fig, axes = new_figure(2, 1, width=4.4, height=3.2)
    ax = axes[0, 0]
    for metric, color in (("error", COLORS["reduced"]), ("bound", COLORS["POT"])):
        grp = df[df["metric"] == metric].sort_values("eta")
        ax.plot(grp["eta"], grp["value"], marker="o", color=color,
                label="|OT(a,b) - OT(a-bar,b-bar)|" if metric == "error" else "duality bound")
    ax.set_xscale("log"), ax.set_yscale("log")
    ax.set_xlabel("marginal perturbation eta"), ax.set_ylabel("absolute error")
    ax.set_title("symmetrised marginals: error vs bound")
    ax.legend(fontsize=7)
    raw = read_metrics(results / "robust" / "metrics.json")["digits_raw"]["rel_err"]
    ax = axes[0, 1]
    ax.bar(np.arange(len(raw)), raw, color=COLORS["reduced"])
    ax.set_xlabel("raw digit pair"), ax.set_ylabel("relative error vs ot.emd2")
    ax.set_title("raw (unsymmetrised) digits: the approximate route fails", fontsize=9)
    save_figure(fig, out / "robust.png")


def _instances_table(results: Path, out: Path) -> None:
    df = read_tidy(results / "exact" / "results.csv")
    wide = df.pivot_table(index="instance", columns="metric", values="value", sort=False)
    frame = pd.DataFrame({
        "instance": wide.index, "m": wide["m"].astype(int), "n": wide["n"].astype(int),
        "p": wide["p"].astype(int), "q": wide["q"].astype(int), "rounds": wide["rounds"].astype(int),
        "OT (ot.emd2)": wide["ot_pot"], "LP rel. err": wide["lp_rel_err"],
        "marginal err": wide["lp_marginal_err"], "lift cost err": wide["lp_lift_cost_err"],
        "Sinkhorn iters": wide["sinkhorn_iters"].astype(int), "Sinkhorn plan rel. diff": wide["eot_plan_rel_diff"],
    })
    write_markdown_table(frame, out / "instances.md", floatfmt=".3g",
                         title="Exactly symmetric instances: cells found from (C, a, b), reduced vs POT")


def make_figures(results_dir: Path, out_dir: Path, scale: str) -> None:
    """Write speed.png, speed.md, cells_grid.png, identity.png, robust.png, instances.md and sgrot.md."""
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    _speed_figure(results_dir, out_dir)
    _speed_table(results_dir, out_dir)
    _cells_figure(results_dir, out_dir)
    _identity_figure(results_dir, out_dir)
    _robust_figure(results_dir, out_dir)
    _instances_table(results_dir, out_dir)
    _sgrot_table(results_dir, out_dir)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
