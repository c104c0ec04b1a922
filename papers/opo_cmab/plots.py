"""Figures and tables of the opo_cmab reproduction, drawn from saved results (never recomputed).

``python -m papers.opo_cmab.plots --results results/quick/opo_cmab --out figures/quick/opo_cmab --scale quick``
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_path, atomic_write_text, markdown_table, read_arrays, read_metrics

__all__ = ["make_figures", "LABELS"]

FAMILIES = ("opo", "squarecb", "falcon", "greedy", "eps_greedy", "uniform", "supervised", "opo_theory", "regcb",
            "adacb", "vw_squarecb", "vw_regcb", "opo_logistic", "squarecb_logistic")
LABELS = {"opo": "OPO-CMAB (tuned)", "squarecb": "SquareCB (tuned)", "falcon": "FALCON (tuned)", "greedy": "greedy",
          "regcb": "RegCB-opt (tuned)", "adacb": "AdaCB core: elim + IGW (tuned)",
          "eps_greedy": "eps-greedy (0.05)", "uniform": "uniform", "supervised": "supervised (full info)",
          "opo_theory": "OPO (theory tuning)", "vw_squarecb": "VW --squarecb (tuned)",
          "vw_regcb": "VW --regcb --regcbopt (tuned)", "opo_logistic": "OPO-CMAB, online logistic (tuned)",
          "squarecb_logistic": "SquareCB, online logistic (tuned)"}
COLORS = method_colors(FAMILIES)


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.6g")


EVAL_CURVES = (("opo_tuned", "opo"), ("opo_tuned_nobonus", "opo_nobonus"), ("opo_theory", "opo_theory"),
               ("squarecb_tuned", "squarecb"), ("falcon_tuned", "falcon"), ("regcb_tuned", "regcb"),
               ("adacb_tuned", "adacb"), ("greedy", "greedy"), ("uniform", "uniform"))
STREAM_CURVES = ("opo", "squarecb", "regcb", "adacb", "vw_squarecb", "vw_regcb", "opo_logistic", "squarecb_logistic",
                 "eps_greedy", "uniform", "supervised")
STREAM_TUNED = ("opo", "squarecb", "regcb", "adacb", "vw_squarecb", "vw_regcb", "opo_logistic", "squarecb_logistic")


def _band(curves, key: str, stride: int = 1):
    """(mean, mean - se, mean + se) of a saved curve (no band when its ``__se`` array is absent)."""
    m = curves[key][::stride]
    se = curves.get(f"{key}__se")
    if se is None:
        return m, None, None
    se = se[::stride]
    return m, m - se, m + se


def _main_problems(metrics: dict) -> list[str]:
    """The tuned problems (those with a tuning block), the spec's perturbed class first."""
    keys = [k for k, v in metrics.items() if isinstance(v, dict) and "tuning" in v]
    return sorted(keys, key=lambda k: (k.startswith("hidden_"), k))


def _regret_curves(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "synthetic" / "metrics.json")
    curves = read_arrays(results / "synthetic" / "curves.npz")
    pkeys = _main_problems(metrics)
    fig, axes = new_figure(ncols=len(pkeys), width=4.8, height=3.8)
    K = metrics["K"]
    t = np.arange(1, K + 1)
    for ax, pkey in zip(axes.ravel(), pkeys):
        tuned = metrics[pkey]["tuning"]["tuned"]
        for name, fam in EVAL_CURVES:
            key = f"{pkey}__{name}"
            if key not in curves:
                continue
            r, lo, hi = _band(curves, key)
            label = {"opo_nobonus": "OPO, tuned eta, no bonus"}.get(fam, LABELS.get(fam, fam))
            if fam in tuned:
                label += f" [{tuned[fam]}]"
            keep = r > 0
            if lo is not None:
                lo, hi = np.maximum(lo[keep], r[keep] * 1e-2), hi[keep]  # the log axis needs a positive band
            plot_band(ax, t[keep], r[keep], lo, hi, label=label, color=COLORS.get(fam, "0.3"), log=True,
                      linestyle=":" if fam == "opo_nobonus" else "-")
        r_opo = curves[f"{pkey}__opo_tuned"]
        ax.loglog(t, r_opo[-1] * np.sqrt(t / K), color="0.5", linestyle="--", linewidth=1, label=r"$\propto\sqrt{t}$")
        ax.set_xlabel("round t")
        ax.set_ylabel("cumulative pseudo-regret (mean +- 1 s.e. over seeds)")
        kind = "hidden-arm class" if pkey.startswith("hidden_") else "perturbed class (spec)"
        ax.set_title(f"{kind}, |F| = {metrics[pkey]['n_models']}, |A| = {metrics[pkey]['n_actions']}, "
                     f"{metrics['eval_seeds']} eval seeds", fontsize=8)
        ax.legend(fontsize=6)
    save_figure(fig, out / "regret_curves.png")


def _synthetic_table(results: Path, out: Path) -> None:
    """Final regret (mean and s.e. over the evaluation seeds), late regret rate and the tuned configuration of
    every method evaluated on the tuned synthetic problems."""
    metrics = read_metrics(results / "synthetic" / "metrics.json")
    rows = []
    for pkey in _main_problems(metrics):
        d = metrics[pkey]
        tuned = d["tuning"]["tuned"]
        for name, value in d["final"].items():
            fam = name.removesuffix("_tuned")
            rate = d["per_seed"]["late_rate"][name]
            rows.append({"problem": pkey, "method": name, "configuration": tuned.get(fam, ""),
                         "final_regret": value, "final_regret_se": d["final_se"][name],
                         "late_rate": float(np.mean(rate)), "seeds": len(rate)})
    _write_csv(pd.DataFrame(rows), out / "synthetic_table.csv")


def _heatmap(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "synthetic" / "metrics.json")
    pkeys = _main_problems(metrics)
    fig, axes = new_figure(ncols=len(pkeys), width=4.6, height=3.6)
    for ax, pkey in zip(axes.ravel(), pkeys):
        final = metrics[pkey]["tuning"]["final_regret"]
        grid = {}
        for label, value in final.items():
            m = re.fullmatch(r"opo_eta([0-9.e+-]+)_gamma([0-9.e+-]+)", label)
            if m:
                grid[(float(m.group(1)), float(m.group(2)))] = value
        etas = sorted({e for e, _ in grid})
        gammas = sorted({g for _, g in grid})
        Z = np.array([[grid.get((e, g), np.nan) for e in etas] for g in gammas])
        ax.grid(False)
        im = ax.imshow(Z, origin="lower", cmap="viridis_r", aspect="auto")
        ax.set_xticks(range(len(etas)), [f"{e:g}" for e in etas])
        ax.set_yticks(range(len(gammas)), [f"{g:g}" for g in gammas])
        ax.set_xlabel(r"$\eta$")
        ax.set_ylabel(r"$\gamma$ (0 = no bonus)")
        for i in range(Z.shape[0]):
            for j in range(Z.shape[1]):
                if np.isfinite(Z[i, j]):
                    ax.text(j, i, f"{Z[i, j]:.1f}", ha="center", va="center", fontsize=7,
                            color="w" if Z[i, j] > np.nanmedian(Z) else "k")
        fig.colorbar(im, ax=ax, label=f"final regret R({metrics['K']}), tuning seeds")
        ax.set_title(f"OPO grid on {metrics[pkey]['tuning']['seeds']} held-out seeds, {pkey}", fontsize=8)
    save_figure(fig, out / "hyperparameter_heatmap.png")


def _scaling(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "synthetic" / "metrics.json")
    sc = metrics.get("scaling")
    if not sc:
        return
    fig, axes = new_figure(width=4.6, height=3.6)
    ax = axes[0, 0]
    for a in sorted({a for a, _ in sc["cells"]}):
        fs = sorted(f for a2, f in sc["cells"] if a2 == a)
        keys = [f"hidden_F{f}_A{a}" for f in fs]
        for meth, style in (("opo_theory", "-"), ("greedy", ":")):
            if all(meth in metrics[k]["final"] for k in keys):
                ax.plot([np.log(f) for f in fs], [metrics[k]["final"][meth] for k in keys], marker="o",
                        linestyle=style, label=f"|A| = {a}, {'OPO (theory)' if meth == 'opo_theory' else 'greedy'}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("log |F|")
    ax.set_ylabel(f"R({sc['K']}) (mean over seeds)")
    ax.set_title(f"hidden-arm class; fitted exponents: |A| {np.mean(sc['beta_A']):.2f}, "
                 f"log|F| {np.mean(sc['beta_logF']):.2f} (bound: 0.5)", fontsize=8)
    ax.legend(fontsize=6)
    save_figure(fig, out / "scaling.png")


def _pv_curves(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "streams" / "metrics.json")
    curves = read_arrays(results / "streams" / "curves.npz")
    names = list(metrics["streams"])
    ncols = min(4, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, width=3.2, height=2.6)
    for i, ax in enumerate(axes.ravel()):
        if i >= len(names):
            ax.set_visible(False)
            continue
        name = names[i]
        for fam in STREAM_CURVES:
            if f"{name}__{fam}" not in curves:
                continue
            pv, lo, hi = _band(curves, f"{name}__{fam}")
            t = np.arange(1, pv.size + 1)
            plot_band(ax, t, pv, lo, hi, label=LABELS[fam], color=COLORS[fam],
                      linestyle="--" if fam == "supervised" else "-." if fam.endswith("_logistic") else "-")
        ax.set_title(f"{name} (A = {metrics['streams'][name]['n_actions']})")
        ax.set_ylim(0, 1)
        ax.set_xlabel("round")
        if i % ncols == 0:
            ax.set_ylabel("PV loss (mean +- 1 s.e. over shuffles)")
    axes[0, 0].legend(fontsize=6)
    save_figure(fig, out / "pv_curves.png")


def _pv_table(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "streams" / "metrics.json")
    rows = []
    for name, d in metrics["streams"].items():
        row = {"stream": name, "n": d["n"], "supervised_pv": d["pv"]["supervised"]}
        row.update({f"{fam}_minus_supervised": d["pv_minus_supervised"][fam]
                    for fam in (*STREAM_TUNED, "eps_greedy", "uniform") if fam in d["pv_minus_supervised"]})
        row.update({f"{fam}_tuned": d["tuned"][fam] for fam in STREAM_TUNED if fam in d["tuned"]})
        rows.append(row)
    _write_csv(pd.DataFrame(rows), out / "pv_table.csv")


def _significance(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "streams" / "metrics.json")
    rows = []
    for name, d in metrics["streams"].items():
        for pair, win in d["wins"].items():
            a, b = pair.split("_vs_")
            rows.append({"stream": name, "a": a, "b": b, "pv_a": d["pv"][a], "pv_b": d["pv"][b],
                         "pval": d["pval"][pair], "a_wins": win})
    frame = pd.DataFrame(rows)
    total = frame.groupby("a")["a_wins"].sum().rename("wins_total").reset_index()
    _write_csv(frame.merge(total, on="a"), out / "significance.csv")


def _timing(results: Path, out: Path) -> None:
    timings = read_metrics(results / "streams" / "timings.json")["rounds_per_second"]
    rows = [{"stream": name, "configuration": lab, "rounds_per_second": rps}
            for name, d in timings.items() for lab, rps in d.items()]
    _write_csv(pd.DataFrame(rows), out / "timing.csv")


def _performance_table(results: Path, out: Path) -> None:
    t = read_metrics(results / "performance" / "timings.json")
    m = read_metrics(results / "performance" / "metrics.json")["performance"]
    prov = read_metrics(results / "performance" / "provenance.json")
    hw = prov.get("hardware", {})
    s = m["stream"]
    Ks = m["synthetic_K"]
    per_k = " ; ".join("K = {}: {:.3g} s".format(k, t[f"synthetic_opo_K{k}_seconds"]) for k in Ks)
    frame = pd.DataFrame([
        ("OPO-CMAB", "numba replay, O(t A) per round", t[f"{s}_opo_rounds_per_second"], f"{m['opo_final_pv']:.4f}"),
        ("SquareCB", "ours (numpy), O(A d^2) per round", t[f"{s}_squarecb_rounds_per_second"],
         f"{m['squarecb_final_pv']:.4f}"),
    ] + ([("SquareCB (Vowpal Wabbit)", "VW's --cb_explore_adf --squarecb, its online learner, through its Python "
           "bindings (text examples)", t[f"{s}_vw_squarecb_rounds_per_second"], f"{m['vw_squarecb_final_pv']:.4f}")]
         if "vw_squarecb_final_pv" in m else []), columns=["algorithm", "implementation", "rounds/s", "final PV"])
    path = out / "performance_table.md"
    table = markdown_table(
        frame, floatfmt=".4g",
        title=f"Rounds per second on the {s} stream ({m['rounds']} rounds, same shuffle, one process, one thread)")
    vw = (f"Ratio VW SquareCB / our SquareCB rounds per second: "
          f"**{t['ratio_vw_squarecb_over_squarecb_rounds_per_second']:.3g}** (same stream, shuffle, gamma_scale, "
          f"action and loss draws; VW learns by online gradient steps, ours updates per-action ridge by "
          f"Sherman-Morrison). "
          if "ratio_vw_squarecb_over_squarecb_rounds_per_second" in t else "")
    notes = [f"Ratio SquareCB / OPO rounds per second: **{t['ratio_squarecb_over_opo_rounds_per_second']:.3g}**. "
             f"{vw}Vowpal Wabbit as run: {t['vowpalwabbit']}.",
             f"OPO on the synthetic class: {per_k}"
             f" (time ratio {t['synthetic_time_ratio']:.3g} for a {Ks[-1] / Ks[0]:g}x longer horizon; the replay is "
             f"O(K^2 A), so the ratio tends to {(Ks[-1] / Ks[0]) ** 2:g} as the replay dominates).",
             f"Hardware: {hw.get('cpu', 'unknown')}, {hw.get('cores', '?')} cores (shared), Python "
             f"{hw.get('python', '?')}; wall times, median of {m['repeats']} run(s)."]
    atomic_write_text(path, table + "".join(f"\n{note}\n" for note in notes))


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table of the spec from ``results_dir`` into ``out_dir``."""
    results, out = Path(results_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _regret_curves(results, out)
    _synthetic_table(results, out)
    _heatmap(results, out)
    _scaling(results, out)
    _pv_curves(results, out)
    _pv_table(results, out)
    _significance(results, out)
    _timing(results, out)
    _performance_table(results, out)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
