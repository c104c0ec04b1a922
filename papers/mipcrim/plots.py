"""Figures and tables of the MiP-CRIM reproduction; they read results, never recompute them.

``python -m papers.mipcrim.plots --results results/quick/mipcrim --out figures/quick/mipcrim --scale quick``
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, save_figure
from shared.results import atomic_write_text, markdown_table, read_metrics, read_tidy, write_markdown_table

METHODS = ["mip_crim", "greedy", "bsb", "sa", "paper", "gw_sdp", "karmarkar_karp", "lpt", "negctl", "iamp"]
COL = method_colors(METHODS)
LABEL = {"mip_crim": "MiP-CRIM", "greedy": "greedy 1-flip", "bsb": "ballistic SB", "sa": "SA (dwave-samplers)",
         "paper": "paper", "gw_sdp": "GW-SDP", "karmarkar_karp": "Karmarkar-Karp", "lpt": "LPT",
         "iamp": "IAMP (re-implemented)"}


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def fig_landscape(res: Path, out: Path):
    df = read_tidy(res / "landscape" / "results.csv")
    piv = df[df.metric == "n_minima"].pivot_table(index="seed", columns="method", values="value")
    fig, axes = new_figure(1, 1, width=6.0)
    ax = axes[0, 0]
    x = piv.index.to_numpy()
    ax.plot(x, piv["one_flip"], "o", ms=7, mfc="none", color=COL["greedy"], label="one-flip minima of E")
    ax.plot(x, piv["corner_admissible"], "x", color=COL["mip_crim"], label="strict corners, admissible f")
    ax.plot(x, piv["corner_negctl"], "+", ms=8, color=COL["negctl"], label="strict corners, alpha above range")
    ax.set_xlabel("instance (even: +-1 couplings, odd: 3-decimal Gaussian)")
    ax.set_ylabel("count")
    ax.set_yscale("log")
    ax.set_title("Landscape equivalence (brute force over all 2^n corners)")
    ax.legend(fontsize=7)
    save_figure(fig, out / "landscape.png")


def fig_sk_goe(res: Path, out: Path):
    df = read_tidy(res / "sk_goe" / "results.csv")
    met = read_metrics(res / "sk_goe" / "metrics.json")
    fig, axes = new_figure(2, 1)
    for ax, cls, ylab in ((axes[0, 0], "sk", "E / (n^1.5 / sqrt 2)"), (axes[0, 1], "goe", "E / n")):
        sub = df[df.metric == f"{cls}_norm_energy"]
        nmax = sub.step.max()
        sub = sub[sub.step == nmax]
        for k, meth in enumerate(("mip_crim", "iamp", "greedy", "bsb")):
            s = sub[sub.method == meth]
            ax.plot(s["trial"] + 0.1 * (k - 1.5), s["value"], "o", color=COL[meth], label=LABEL[meth])
        if "paper_mean" in met[cls]:
            ax.axhline(met[cls]["paper_mean"], color=COL["paper"], ls="--", label="paper mean (Table 2)")
        if "paper_iamp_mean" in met[cls]:
            ax.axhline(met[cls]["paper_iamp_mean"], color=COL["iamp"], ls=":", label="paper's IAMP mean (Table 2)")
        ax.set_xticks(sorted(int(t) for t in sub["trial"].unique()))
        ax.set_xlabel("trial (seed 137 trial + 42)")
        ax.set_ylabel(ylab)
        ax.set_title(f"{cls.upper()}, n = {int(nmax)}")
    axes[0, 0].legend(fontsize=7)
    save_figure(fig, out / "sk_goe.png")


def _gset_frame(res: Path) -> pd.DataFrame:
    met = read_metrics(res / "gset" / "metrics.json")["gset"]
    tim = _json(res / "gset" / "timings.json")
    rows = []
    for g, v in met.items():
        if not isinstance(v, dict):
            continue
        t = tim.get(g, {})
        rows.append({"graph": g, "n": v["n"], "best_known": v["best_known"], "MiP-CRIM cut": v["best_cut"],
                     "gap %": v["rel_gap_pct"], "Table 4 cut": v.get("table4_cut", float("nan")),
                     "Table 4 gap %": v.get("table4_gap_pct", float("nan")), "SA cut": v["sa_best_cut"],
                     "SA gap %": v["sa_gap_pct"], "greedy cut": v["greedy_best_cut"],
                     "greedy gap %": v["greedy_gap_pct"], "tau (tuned)": v["tau"], "sync (best)": v["sync_best"],
                     "mean sync": v["mean_sync"], "runs": v["n_runs"],
                     "MiP-CRIM s/run": t.get("mip_s_per_run", float("nan")),
                     "SA s (all reads)": t.get("sa_s", float("nan"))})
    df = pd.DataFrame(rows)
    for c in ("MiP-CRIM cut", "SA cut", "greedy cut"):
        df[c] = df[c].round().astype(int)
    return df


def fig_gset(res: Path, out: Path):
    df = _gset_frame(res)
    fig, axes = new_figure(1, 1, width=6.0)
    ax = axes[0, 0]
    x = np.arange(len(df))
    for k, (col, meth) in enumerate((("gap %", "mip_crim"), ("Table 4 gap %", "paper"), ("SA gap %", "sa"),
                                     ("greedy gap %", "greedy"))):
        xs = x + 0.2 * (k - 1.5)
        ax.bar(xs, df[col], width=0.2, color=COL[meth], label="paper Table 4" if meth == "paper" else LABEL[meth])
        zero = (df[col] == 0).to_numpy()       # a zero gap has no bar: mark it with a diamond and a "0"
        ax.plot(xs[zero], np.zeros(zero.sum()), "D", color=COL[meth], ms=5, mec="k", mew=0.5, clip_on=False,
                zorder=3)
        for xz in xs[zero]:
            ax.annotate("0", (xz, 0), xytext=(0, 5), textcoords="offset points", ha="center", fontsize=6)
    ax.axhline(1.0, color="k", lw=0.8, ls=":")
    ax.set_xticks(x, df["graph"])
    ax.set_yscale("symlog", linthresh=0.1)
    ax.set_ylim(bottom=0)
    ax.plot([], [], "D", color="0.6", ms=5, mec="k", mew=0.5, ls="none", label="zero gap (no bar)")
    ax.set_ylabel("gap to best-known (%)")
    ax.set_title("G-set: gap to best-known (tau tuned on separate starts)", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, frameon=False)
    save_figure(fig, out / "gset_gap.png")
    write_markdown_table(df, out / "gset_table.md", floatfmt=".4g",
                         title="G-set MAX-CUT: MiP-CRIM (Table-4 alpha, beta, lam; tau tuned on separate starts; best of the evaluation runs) "
                               "vs SA and greedy; times are wall seconds on the machine named in provenance")


def fig_tau(res: Path, out: Path):
    df = read_tidy(res / "tau_sweep" / "results.csv")
    fig, axes = new_figure(2, 1)
    graphs = list(dict.fromkeys(df["graph"]))
    cols = method_colors(graphs)
    for g in graphs:
        sub = df[df.graph == g]
        cut = sub[sub.metric == "cut"].groupby("tau")["value"]
        syn = sub[sub.metric == "sync"].groupby("tau")["value"].mean()
        bk = cut.max().max()
        axes[0, 0].plot(cut.max().index, cut.max() / bk, "o-", color=cols[g], label=f"{g} best")
        axes[0, 0].plot(cut.mean().index, cut.mean() / bk, "o:", color=cols[g], alpha=0.6)
        axes[0, 1].plot(syn.index, syn, "o-", color=cols[g], label=g)
    axes[0, 0].set_ylabel("cut / sweep best (solid: best, dotted: mean)")
    axes[0, 1].set_ylabel("mean sync")
    axes[0, 1].axhline(0.98, color="k", ls=":", lw=0.8)
    for ax in axes[0]:
        ax.set_xlabel("Adam step tau")
        ax.legend(fontsize=7)
    save_figure(fig, out / "tau_sweep.png")


def fig_npp(res: Path, out: Path):
    df = read_tidy(res / "npp" / "results.csv")
    fig, axes = new_figure(1, 1)
    ax = axes[0, 0]
    floor = 1e-18
    mip = df[df.method == "mip_crim"]
    for inst, s in mip.groupby("instance"):
        ax.plot(np.full(len(s), inst) - 0.1, np.maximum(s["value"], floor), ".", color=COL["mip_crim"], alpha=0.4)
    best = mip.groupby("instance")["value"].min()
    ax.plot(best.index - 0.1, np.maximum(best, floor), "o", color=COL["mip_crim"], label="MiP-CRIM (runs; best)")
    for meth, dx in (("lpt", 0.0), ("karmarkar_karp", 0.1)):
        s = df[df.method == meth]
        ax.plot(s["instance"] + dx, np.maximum(s["value"], floor), "s", color=COL[meth], label=LABEL[meth])
    ax.axhline(0.014, color=COL["paper"], ls="--", label="paper mean (Table 1)")
    ax.set_yscale("log")
    ax.set_xlabel("instance (a = U(0,1)^n, seed)")
    ax.set_ylabel("discrepancy |a.s| (floor 1e-18)")
    ax.legend(fontsize=7)
    save_figure(fig, out / "npp.png")


def fig_kn(res: Path, out: Path):
    met = read_metrics(res / "kn_gw" / "metrics.json")["kn"]
    tim = _json(res / "kn_gw" / "timings.json")
    ns = sorted(int(k) for k in met)
    fig, axes = new_figure(2, 1)
    ax = axes[0, 0]
    ax.plot(ns, [met[str(n)]["mip_best_cut"] for n in ns], "o-", color=COL["mip_crim"], label="MiP-CRIM best")
    gw = [n for n in ns if "gw_cut" in met[str(n)]]
    ax.plot(gw, [met[str(n)]["gw_cut"] for n in gw], "s-", color=COL["gw_sdp"], label="GW best rounding")
    ax.plot(gw, [met[str(n)]["sdp_bound"] for n in gw], "^:", color=COL["gw_sdp"], label="SDP bound")
    ax.set_xlabel("n")
    ax.set_ylabel("cut")
    ax.set_title("K_n with +-1 weights")
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    ax.plot(ns, [tim.get(str(n), {}).get("mip_total_s", np.nan) for n in ns], "o-", color=COL["mip_crim"],
            label="MiP-CRIM (all runs)")
    ttt = [tim.get(str(n), {}).get("mip_time_to_target_s") for n in gw]
    ax.plot(gw, [np.nan if v is None else v for v in ttt], "o:", color=COL["mip_crim"], label="MiP-CRIM to GW cut")
    ax.plot(gw, [tim.get(str(n), {}).get("gw_s", np.nan) for n in gw], "s-", color=COL["gw_sdp"], label="GW-SDP")
    ax.set_xlabel("n")
    ax.set_ylabel("wall seconds")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    save_figure(fig, out / "kn_gw.png")


def table_performance(res: Path, out: Path):
    perf = _json(res / "performance" / "timings.json")
    pm = read_metrics(res / "performance" / "metrics.json")["perf"]
    kt = _json(res / "kn_gw" / "timings.json")
    km = read_metrics(res / "kn_gw" / "metrics.json")["kn"] if (res / "kn_gw" / "metrics.json").is_file() else {}
    rows = [{"task": f"MAX-CUT {perf.get('graph')} ({perf.get('restarts')} restarts/reads)",
             "reference": "dwave-samplers SA, 1000 sweeps", "t_reference_s": perf.get("sa_s", float("nan")),
             "t_mip_crim_s": perf.get("mip_s", float("nan")),
             "ratio mip/ref": perf.get("ratio_mip_over_sa", float("nan")),
             "quality (mip - ref)": f"cut {pm['mip_minus_sa_cut']:+g}"},
            {"task": f"NPP n=1000 ({perf.get('restarts')} MiP-CRIM runs)", "reference": "Karmarkar-Karp",
             "t_reference_s": perf.get("npp_kk_s", float("nan")), "t_mip_crim_s": perf.get("npp_mip_s", float("nan")),
             "ratio mip/ref": perf.get("npp_ratio_mip_over_kk", float("nan")),
             "quality (mip - ref)": f"discrepancy {pm['npp_mip_discrepancy']:.2g} vs {pm['npp_kk_discrepancy']:.2g}"}]
    run = read_metrics(res / "performance" / "provenance.json")["params"]
    t_graphs = perf.get("by_graph") or {perf.get("graph"): {"time_to_target_99_s": perf.get("time_to_target_99_s",
                                                                                             {})}}
    m_graphs = pm.get("by_graph") or {pm.get("graph"): {"target_cut": pm.get("target_cut"),
                                                      "success_fraction": pm.get("success_fraction", {}),
                                                      "bsb_dt": pm.get("bsb_dt")}}
    for g in pm.get("graphs", [pm.get("graph")]):
        tts, gm = t_graphs.get(g, {}).get("time_to_target_99_s", {}), m_graphs.get(g, {})
        succ = gm.get("success_fraction", {})
        bsb_label = (f"ballistic SB, pump ramp of {run['bsb_steps']} x 1.25 time units at its stable step "
                     f"dt = {gm.get('bsb_dt', float('nan')):.3g}")
        for ref, label in (("sa", f"dwave-samplers SA, {run['sa_sweeps']} sweeps"), ("bsb", bsb_label)):
            if ref not in tts:
                continue
            t_ref, t_mip = tts[ref], tts["mip_crim"]
            rows.append({"task": f"MAX-CUT {g}, time to cut >= {gm.get('target_cut')} with 99% probability",
                         "reference": label, "t_reference_s": float("nan") if t_ref is None else t_ref,
                         "t_mip_crim_s": float("nan") if t_mip is None else t_mip,
                         "ratio mip/ref": float("nan") if None in (t_ref, t_mip) else t_mip / t_ref,
                         "quality (mip - ref)": f"runs reaching it {succ['mip_crim']:.2f} vs {succ[ref]:.2f}"})
    for n, t in sorted(kt.items(), key=lambda kv: int(kv[0])):
        if "gw_s" in t and t.get("mip_time_to_target_s") is not None:
            rows.append({"task": f"K_{n} +-1 MAX-CUT, time to GW's cut", "reference": f"GW-SDP ({t['gw_backend']})",
                         "t_reference_s": t["gw_s"], "t_mip_crim_s": t["mip_time_to_target_s"],
                         "ratio mip/ref": t["mip_time_to_target_s"] / t["gw_s"],
                         "quality (mip - ref)": f"cut {km.get(n, {}).get('mip_minus_gw', float('nan')):+g}"})
    df = pd.DataFrame(rows)
    cpu = perf.get("cpu", "unknown CPU")
    text = markdown_table(df, floatfmt=".3g",
                          title=f"Performance, one BLAS thread, on {cpu}: MAX-CUT and NPP rows in CPU seconds "
                                "of the process (least of alternating rounds), K_n rows in wall seconds")
    atomic_write_text(out / "performance_table.md", text + "\nHardware: " + cpu + ", 1 thread.\n")


def fig_ablation(res: Path, out: Path):
    """Fig. 2: histograms of E/(n^1.5/sqrt 2) over the runs, per attractor (Adam) and per optimiser (quartic f2)."""
    df = read_tidy(res / "ablation" / "results.csv")
    met = read_metrics(res / "ablation" / "metrics.json")["ablation"]
    fig, axes = new_figure(2, 1)
    vals = df["value"]
    bins = np.linspace(vals.min(), vals.max(), 31)
    greedy = df[df.variant == "greedy"]["value"]
    cols = method_colors(["f1", "f2", "f3", "gd", "heavy_ball", "adam", "greedy"])
    labels = {"f1": "f1 = -theta x^2", "f2": "f2 quartic (MiP-CRIM)", "f3": "f3 atanh barrier", "gd": "GD",
              "heavy_ball": "heavy ball (0.9)", "adam": "Adam"}
    for ax, panel, variants, title in ((axes[0, 0], "attractor", ("f1", "f2", "f3"), "attractors (Adam, tuned)"),
                                       (axes[0, 1], "optimizer", ("gd", "heavy_ball", "adam"),
                                        "optimisers (quartic f2, tuned step)")):
        sub = df[df.panel == panel]
        for v in variants:
            s = sub[sub.variant == v]["value"]
            group = met["attractors" if panel == "attractor" else "optimizers"][v]
            ax.hist(s, bins=bins, histtype="step", lw=1.5, color=cols[v],
                    label=f"{labels[v]} (mean {group['mean']:.4f})")
        ax.hist(greedy, bins=bins, histtype="stepfilled", alpha=0.2, color=cols["greedy"], label="greedy 1-flip")
        ax.set_xlabel("E / (n^1.5 / sqrt 2)")
        ax.set_ylabel("runs")
        ax.set_title(f"SK n = {met['n']}: {title}", fontsize=9)
        ax.legend(fontsize=6)
    save_figure(fig, out / "ablation.png")


def fig_er_hist(res: Path, out: Path):
    """Fig. 3: cut histograms on ER graphs for MiP-CRIM, SA and ballistic SB."""
    df = read_tidy(res / "er_hist" / "results.csv")
    met = read_metrics(res / "er_hist" / "metrics.json")["er"]
    graphs = list(dict.fromkeys(df["graph"]))
    fig, axes = new_figure(len(graphs), 1)
    for ax, g in zip(axes[0], graphs):
        sub = df[df.graph == g]
        lo = sub["value"].min()
        hi = sub["value"].max()
        bins = np.linspace(lo, hi, 31) if hi > lo else np.linspace(lo - 1, hi + 1, 3)
        for meth in ("mip_crim", "sa", "bsb"):
            s = sub[sub.method == meth]["value"]
            below = int((s < lo).sum())
            lab = LABEL[meth] + (f" ({below} runs below range)" if below else "")
            ax.hist(np.clip(s, lo, hi), bins=bins, histtype="step", lw=1.5, color=COL[meth], label=lab)
        m = met[g]
        ax.set_title(f"ER(n={m['n']}, p={m['p']:g}), MiP-CRIM tau={m['tau']:g}, bSB dt={m['bsb_dt']:.2g}", fontsize=9)
        ax.set_xlabel("cut")
        ax.set_ylabel("runs")
        ax.legend(fontsize=6)
    save_figure(fig, out / "er_hist.png")


def fig_sensitivity(res: Path, out: Path):
    """Figs. 5-7: best quality (relative to each instance's best) and mean sync vs alpha, lam and tau."""
    df = read_tidy(res / "sensitivity" / "results.csv")
    fig, axes = new_figure(3, 2)
    insts = list(dict.fromkeys(df["instance"]))
    cols = method_colors(insts)
    xlabels = {"alpha": "alpha position u in the admissible interval", "lam": "lam (alpha, beta, tau fixed)",
               "tau": "Adam step tau (alpha, beta, lam fixed)"}
    for j, axis in enumerate(("alpha", "lam", "tau")):
        for inst in insts:
            sub = df[(df.instance == inst) & (df.axis == axis)]
            q = sub[sub.metric == "quality"]
            top = df[(df.instance == inst) & (df.metric == "quality")]["value"].max()
            best = q.groupby("x")["value"].max() / top
            syn = sub[sub.metric == "sync"].groupby("x")["value"].mean()
            adm = q.groupby("x")["admissible"].max().astype(bool).to_numpy()
            axes[0, j].plot(best.index, best, "-", color=cols[inst], label=inst)
            axes[0, j].plot(best.index[adm], best[adm], "o", color=cols[inst])
            axes[0, j].plot(best.index[~adm], best[~adm], "x", color=cols[inst])
            axes[1, j].plot(syn.index, syn, "o-", color=cols[inst], label=inst)
        axes[1, j].axhline(0.98, color="k", ls=":", lw=0.8)
        for i in (0, 1):
            axes[i, j].set_xlabel(xlabels[axis], fontsize=8)
            if axis == "lam":
                axes[i, j].set_xscale("log")
        axes[0, j].set_ylabel("best / instance best (o: admissible)", fontsize=8)
        axes[1, j].set_ylabel("mean sync", fontsize=8)
        axes[0, j].legend(fontsize=7)
    save_figure(fig, out / "sensitivity.png")


def make_figures(results_dir: Path, out_dir: Path, scale: str) -> None:
    """Write every figure and table listed under the scale's ``figures:`` in config.yaml."""
    res, out = Path(results_dir), Path(out_dir)
    fig_landscape(res, out)
    fig_sk_goe(res, out)
    fig_gset(res, out)
    fig_tau(res, out)
    fig_npp(res, out)
    fig_kn(res, out)
    table_performance(res, out)
    fig_ablation(res, out)
    fig_er_hist(res, out)
    fig_sensitivity(res, out)


if __name__ == "__main__":
    main(make_figures)
