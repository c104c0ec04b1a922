"""Figures and tables of irefg_sos, drawn from the results (never recomputed).

``python -m papers.irefg_sos.plots --results results/quick/irefg_sos --out figures/quick/irefg_sos --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from shared.plotting import main, method_colors, new_figure, save_figure
from shared.results import atomic_write_text, read_arrays, read_metrics, read_tidy

METHODS = ["sos", "pga", "rm+", "amsgrad", "slsqp"]
COLORS = method_colors(METHODS)
FLOOR = 1e-10


def _gaps(results: Path, exp: str) -> pd.DataFrame:
    df = read_tidy(results / exp / "results.csv")
    return df[(df["method"] == "sos") & (df["metric"] == "gap")]


def bounds_vs_level(results: Path, out: Path) -> None:
    fig, axes = new_figure(3, 1, width=3.6, height=3.0)
    panels = [("canonical", "standard IR games"), ("cycle5", "forgetful cycles"), ("random", "random problems")]
    for ax, (exp, title) in zip(axes[0], panels):
        df = _gaps(results, exp)
        metrics = read_metrics(results / exp / "metrics.json")
        info = metrics.get("games", {})
        for k, (game, g) in enumerate(df.groupby("game", sort=True)):
            g = g.sort_values("level")
            y = np.maximum(np.abs(g["value"].to_numpy()), FLOOR)
            label = game if exp != "random" else None
            ax.semilogy(g["level"], y, marker="o", ms=3, lw=1, alpha=0.8 if exp != "random" else 0.5, label=label,
                        color=None if exp != "random" else ("#0072B2" if game.startswith("cut") else "#D55E00"))
            l_inf = info.get(game, {}).get("n_infosets") or (5 if game == "cycle5" else 7 if game == "cycle7" else None)
            if l_inf is not None:
                ax.axvline(l_inf + 1, color="0.6", lw=0.6, ls=":")
        ax.axhline(1e-6, color="k", lw=0.7, ls="--", label="1e-6 (exactness tolerance)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title)
        ax.set_xlabel("level r (dotted: l + 1)")
        ax.set_ylabel(r"$|\rho_r - U^*|$ (floored at 1e-10)")
        if exp == "random":
            ax.plot([], [], color="#0072B2", label="cut games")
            ax.plot([], [], color="#D55E00", label="decision problems")
        # below the axes, so that no legend covers the tolerance line or the curves
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    save_figure(fig, out / "bounds_vs_level.png")


def sdp_time(results: Path, out: Path) -> None:
    frames = []
    for exp in ("canonical", "cycle5", "random"):
        df = read_tidy(results / exp / "results.csv")
        df = df[df["method"] == "sos"].pivot_table(index=["game", "level"], columns="metric", values="value")
        frames.append(df.reset_index())
    df = pd.concat(frames)
    fig, axes = new_figure(2, 1)
    ax = axes[0][0]
    for level, g in df.groupby("level"):
        ax.scatter(g["moment_size"], g["seconds"], s=14, label=f"level {int(level)}")
    ax.set_xlabel("moment matrix side C(n + r, r)")
    ax.set_ylabel("SDP seconds (build + solve + extract)")
    ax.set_yscale("log")
    ax.legend()
    ax = axes[0][1]
    levels = sorted(df["level"].unique())
    ax.boxplot([df[df["level"] == lv]["seconds"].to_numpy() for lv in levels], tick_labels=[str(int(v)) for v in levels])
    ax.set_yscale("log")
    ax.set_xlabel("level r")
    ax.set_ylabel("SDP seconds")
    save_figure(fig, out / "sdp_time.png")


def canonical_table(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "canonical" / "metrics.json")
    df = read_tidy(results / "canonical" / "results.csv")
    secs = df[df["metric"] == "seconds"]
    rows = []
    for game, info in metrics["games"].items():
        lv = info["levels"][str(info["r0"])]
        fo = {}
        for m in ("pga", "rm+", "amsgrad"):
            t = secs[(secs["game"] == game) & (secs["method"] == m)]["value"]
            fo[m] = f"{info['first_order'][m]:.6g} ({t.iloc[0]:.2f}s)" if len(t) else ""
        t = secs[(secs["game"] == game) & (secs["method"] == "sos") & (secs["level"] == info["r0"])]["value"]
        rows.append({"game": game, "deg": info["degree"], "l": info["n_infosets"], "r0": info["r0"],
                     "bound": f"{lv['bound']:.8f}", "optimum": f"{info['optimum']:.8f} ({info['truth']})",
                     "strategy": "-" if lv["strategy"] is None else "(" + ", ".join(f"{v:.4f}" for v in lv["strategy"]) + ")",
                     "solver": lv["solver"], "status": lv["status"], "certified": lv["certified"],
                     "seconds": f"{t.iloc[0]:.3f}" if len(t) else "",
                     "PGD": fo["pga"], "RM+": fo["rm+"], "AMSGrad": fo["amsgrad"]})
    _write_table(pd.DataFrame(rows), out / "canonical.md",
                 "Canonical imperfect-recall games: first admissible level r0 vs ground truth; first-order methods "
                 "from the uniform strategy (final value, time)")


def _table_text(frame: pd.DataFrame, title: str) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([f"**{title}**", "", header, rule, *body]) + "\n"


def _write_table(frame: pd.DataFrame, path: Path, title: str) -> None:
    atomic_write_text(path, _table_text(frame, title))


def fig3_basins(results: Path, out: Path) -> None:
    arr = read_arrays(results / "pgd" / "basins.npz")
    metrics = read_metrics(results / "pgd" / "metrics.json")
    opt = metrics["optimum"]
    bad = arr["values"] < opt - 0.1
    fig, axes = new_figure(1, 1, width=4.2, height=4.4)
    ax = axes[0][0]
    ax.scatter(arr["starts"][~bad, 0], arr["starts"][~bad, 1], s=5, color="#009E73",
               label=f"reaches the global max {opt:g}")
    ax.scatter(arr["starts"][bad, 0], arr["starts"][bad, 1], s=5, color="#D55E00", label="trapped at a worse local max")
    sx, sy = metrics["saddle"]
    ax.plot([sx], [sy], marker="x", color="k", ms=8, label="saddle (2/3, 2/3)")
    xs = np.linspace(1 / 3, 1, 50)
    ax.plot(xs, 4 / 3 - xs, color="k", lw=0.8, ls="--", label="stable manifold x1 + x2 = 4/3")
    ax.set_xlabel("x1 = P(l1)")
    ax.set_ylabel("x2 = P(l2)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(f"PGD on picc_rub_fig3: {bad.mean():.1%} of starts trapped")
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    save_figure(fig, out / "fig3_basins.png")


def nash_table(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "nash" / "metrics.json")
    df = read_tidy(results / "nash" / "results.csv")
    secs = df[df["metric"] == "seconds"]
    rows = []
    for game, key in (("wichardt2008", "wichardt"), ("amd_policeman", "amdp")):
        for run, info in metrics[key]["runs"].items():
            if key == "wichardt":
                level, seed = (int(p[1:]) for p in run.split("_"))
            else:
                seed, level = int(run[1:]), info["levels"][0]
            t = secs[(secs["game"] == game) & (secs["seed"] == seed) & (secs["level"] == level)]["value"]
            rows.append({"game": game, "level": "/".join(str(v) for v in sorted(set(info["levels"]))),
                         "theta seed": seed, "status": info["status"], "iterations": info["iterations"],
                         "cuts": info["cuts"], "NashConv": "-" if info.get("nash_conv") is None else f"{info['nash_conv']:.2e}",
                         "seconds": f"{t.iloc[0]:.2f}" if len(t) else ""})
    rows.append({"game": "wichardt2008", "level": "grid", "theta seed": "-", "status": "min NashConv on grid",
                 "iterations": "-", "cuts": "-", "NashConv": f"{metrics['wichardt']['min_grid_nashconv']:.4f}",
                 "seconds": "-"})
    cert = metrics["wichardt"].get("certificate")
    if cert:
        rows.append({"game": "wichardt2008", "level": "certificate", "theta seed": "-",
                     "status": f"grid min - L h/2 (L = {cert['lipschitz']:g}, h = {cert['h']:g})", "iterations": "-",
                     "cuts": "-", "NashConv": f"{cert['margin']:.4f}", "seconds": "-"})
    for game, key in (("wichardt2008", "wichardt"), ("amd_policeman", "amdp")):
        ex = metrics[key].get("exact_certificate")
        if ex:
            what = "no NE (proof)" if ex["z3"] == "unsat" else "an NE exists" if ex["z3"] == "sat" else "undecided"
            rows.append({"game": game, "level": "exact (z3)", "theta seed": "-", "status": f"z3 {ex['z3']}: {what}",
                         "iterations": "-", "cuts": "-",
                         "NashConv": f"{ex['witness_nashconv']:.2e}" if "witness_nashconv" in ex else "-",
                         "seconds": "-"})
    _write_table(pd.DataFrame(rows), out / "nash.md", "Nash procedure (levels used; NashConv is an independent check)")


def performance_table(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "performance" / "metrics.json")
    prov = read_metrics(results / "performance" / "provenance.json")
    rows = []
    for game, ent in metrics["games"].items():
        row = {"game": game, "SDP s": f"{ent['sos']['seconds']:.3f}", "SDP gap": f"{ent['sos']['gap']:.1e}",
               "SDP level": ent["sos"]["level"]}
        for m, label in (("pga", "PGD"), ("rm+", "RM+"), ("amsgrad", "AMSGrad"), ("slsqp", "SLSQP")):
            e = ent[m]
            ratio = ent["sos"]["seconds"] / e["seconds"] if e["reached"] and e["seconds"] > 0 else None
            row[f"{label} s"] = f"{e['seconds']:.3f}" + ("" if e["reached"] else " (not reached)")
            row[f"t_sdp/t_{label}"] = "-" if ratio is None else f"{ratio:.3g}"
            row[f"{label} gap"] = f"{e['gap']:.1e}"
        rows.append(row)
    summ = metrics["summary"]
    backends = ", ".join(f"{k}: {v}" for k, v in sorted(prov.get("solvers", {}).items())) or "see provenance"
    title = (f"Time to the optimum (within 1e-6): SDP route (levels r0.. until the bound is exact) vs baselines "
             f"(best of {metrics['starts']} random starts, first-order capped at {metrics['max_iters']} iterations; "
             f"SLSQP up to {metrics['slsqp_starts']} starts). CPU: {metrics['cpu']}; "
             f"SDP backends: {backends}. Median t_sdp/t_baseline: "
             + ", ".join(f"{m} {summ[m]['median_ratio_sdp_over_baseline']:.3g} ({summ[m]['n_reached']}/{metrics['n_games']} reached)"
                         for m in ("pga", "rm+", "amsgrad", "slsqp")))
    _write_table(pd.DataFrame(rows), out / "performance.md", title)


def _fmt(v, spec=".2e"):
    return "-" if v is None else format(v, spec)


def random2p_table(results: Path, out: Path) -> None:
    m = read_metrics(results / "random2p" / "metrics.json")
    rows = []
    for key, g in m["games"].items():
        rows.append({"game": key, "variables": g["n_variables"], "degree": g["degree"], "status": g["status"],
                     "iterations": g["iterations"], "cuts": g["cuts"], "levels": ",".join(map(str, g["levels"])),
                     "NashConv": _fmt(g["nash_conv"]), "grid min NashConv": _fmt(g["grid_min_nashconv"], ".4f"),
                     "SOS-monotone": g["sos_monotone"],
                     "monotone t*": _fmt(g["monotone_min_gram_eigenvalue"], ".3g")})
    c = m["counts"]
    title = (f"Random two-player games (zs: zero-sum, gs: general-sum): Nash procedure status "
             f"(ne {c['ne']}, no_ne {c['no_ne']}, undecided {c['undecided']}), independent NashConv, "
             f"grid minimum of NashConv when no NE was returned, SOS-monotonicity certificate (reported, not judged)")
    _write_table(pd.DataFrame(rows), out / "random2p.md", title)


def crosscheck_table(results: Path, out: Path) -> None:
    m = read_metrics(results / "crosscheck" / "metrics.json")
    rows = [{"game": game, "level": level, "this package": f"{e['ours']:.8f}", "ncpol2sdpa": f"{e['ncpol2sdpa']:.8f}",
             "abs diff": f"{e['abs_diff']:.1e}", "ncpol2sdpa status": e["status"]}
            for game, levels in m["games"].items() for level, e in levels.items()]
    title = (f"Moment bounds: this package vs the relaxation built by ncpol2sdpa {m['ncpol2sdpa_version']} "
             f"(same constraints; max abs diff {m['max_abs_diff']:.1e})")
    _write_table(pd.DataFrame(rows), out / "crosscheck.md", title)


def table1_table(results: Path, out: Path) -> None:
    """The random-instance experiment (Table 1): success of SOS and of PGA, and the time per instance."""
    path = results / "table1" / "metrics.json"
    if not path.is_file():
        return
    m = read_metrics(path)
    t = read_metrics(results / "table1" / "timings.json") if (results / "table1" / "timings.json").is_file() else {}
    rate = m["pgd_success_rate_per_instance"]
    rows = [{"method": "SOS, first level (certified optimum)", "instances": m["n_instances"],
             "success": f"{m['sos_success_rate']:.3f} (instances certified)",
             "seconds per instance": _fmt(t.get("sos_s_per_instance"), ".3f")},
            {"method": f"projected gradient ascent, {t.get('restarts', '?')} restarts x {t.get('iters', '?')} "
                       "iterations", "instances": len(rate),
             "success": f"{np.mean(rate):.3f} per restart (instance range {min(rate):.2f}-{max(rate):.2f}); "
                        f"best of the restarts {np.mean(m['control']['pgd_best_of_restarts']['success_rate_per_instance']):.3f}",
             "seconds per instance": _fmt(t.get("pgd_s_per_instance"), ".3f")}]
    _write_table(pd.DataFrame(rows), out / "table1.md",
                 f"Random instances (Table 1): 2 infosets x 3 actions, degree 4; wall seconds on {t.get('cpu', '?')}")


def sparse_cycles_table(results: Path, out: Path) -> None:
    """Correlative-sparse against dense hierarchy on forgetful odd cycles: bounds, gaps, moment-matrix sides and
    CPU seconds (from results.csv) of each solve; "not run" where the dense relaxation was not attempted."""
    path = results / "sparse_cycles" / "metrics.json"
    if not path.is_file():
        return
    m = read_metrics(path)
    df = read_tidy(results / "sparse_cycles" / "results.csv")
    cpu = df[df["metric"] == "cpu_seconds"].set_index(["method", "game", "level"])["value"]

    def secs(method, game, level):
        key = (method, game, int(level))
        return f"{cpu[key]:.2f}" if key in cpu.index else "not run"

    rows = []
    for name, e in sorted(m["cycles"].items(), key=lambda kv: kv[1]["n_variables"]):
        lvs = sorted({int(k[5:].split("_")[0]) for k in e if k.startswith("level") and k[5:].split("_")[0].isdigit()})
        for lv in lvs:
            sp, de = e.get(f"level{lv}"), e.get(f"level{lv}_dense")
            rows.append({"game": name, "variables": e["n_variables"], "level": lv,
                         "sparse bound": "not run" if sp is None else f"{sp:.8f}",
                         "dense bound": "not run" if de is None else f"{de:.8f}",
                         "optimum": f"{e['optimum']:.8f}",
                         "sparse gap": "-" if sp is None else f"{sp - e['optimum']:.1e}",
                         "sparse - dense": "-" if (sp is None or de is None) else f"{sp - de:.1e}",
                         "cliques (largest)": f"{e['n_cliques']} ({e['max_clique']})",
                         "clique matrix side": e.get(f"level{lv}_clique_moment_size", "-"),
                         "dense matrix side": e[f"level{lv}_dense_moment_size"],
                         "sparse CPU s": secs("sos_sparse", name, lv), "dense CPU s": secs("sos_dense", name, lv)})
    text = _table_text(pd.DataFrame(rows), "Correlative-sparse (cliques of a chordal extension, running intersection "
                       "checked) against dense hierarchy on forgetful odd cycles; CPU seconds per solve")
    reach = [{"problem": name, "variables": e["n_variables"], "cliques": e["n_cliques"],
              "largest clique": e["max_clique"], "largest clique / variables": f"{e['max_clique'] / e['n_variables']:.2f}"}
             for name, e in sorted(m.get("reach", {}).items(), key=lambda kv: (kv[1]["n_variables"], kv[0]))]
    if reach:
        text += "\n" + _table_text(pd.DataFrame(reach), "Where sparsity stops: cliques of the chordal extension for "
                                    "random decision problems (no SDP solved; a largest clique close to all variables "
                                    "leaves the dense relaxation)")
    atomic_write_text(out / "sparse_cycles.md", text)


def make_figures(results_dir: Path, out_dir: Path, scale: str) -> None:
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    bounds_vs_level(results_dir, out_dir)
    sdp_time(results_dir, out_dir)
    canonical_table(results_dir, out_dir)
    fig3_basins(results_dir, out_dir)
    nash_table(results_dir, out_dir)
    performance_table(results_dir, out_dir)
    random2p_table(results_dir, out_dir)
    crosscheck_table(results_dir, out_dir)
    table1_table(results_dir, out_dir)
    sparse_cycles_table(results_dir, out_dir)


if __name__ == "__main__":
    main(make_figures)
