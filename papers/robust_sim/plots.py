"""Figures and tables of robust_sim, drawn from the results of the experiments (nothing is recomputed).

``python -m papers.robust_sim.plots --results results/quick/robust_sim --out figures/quick/robust_sim --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, save_figure
from shared.results import atomic_path, read_metrics, read_tidy, write_markdown_table

__all__ = ["make_figures", "METHODS"]

METHODS = ("robust", "nonrobust", "huber", "huber_l2", "itlm", "random", "stein")
LABELS = {"robust": "robust spectral + robust GD", "nonrobust": "spectral + GD (non-robust)",
          "huber": "soft-L1 M-est. (scipy)", "huber_l2": "Huber M-est. (scipy)", "itlm": "ITLM",
          "random": "random init + robust GD", "stein": "Stein init + robust GD"}
COLORS = method_colors(METHODS)


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.6g")


def _band(ax, x, group, label, color, logy=False):
    """Mean line and min-max band over seeds of ``group`` (a frame with columns x, value)."""
    stats = group.groupby(x)["value"].agg(["mean", "min", "max"]).sort_index()
    ax.plot(stats.index, stats["mean"], "o-", color=color, label=label, ms=3)
    ax.fill_between(stats.index, stats["min"], stats["max"], color=color, alpha=0.2, lw=0)
    if logy:
        ax.set_yscale("log")


def _err_vs_eps(results: Path, out: Path) -> None:
    frames = [read_tidy(results / name / "results.csv") for name in ("robustness", "eps_sweep")
              if (results / name / "results.csv").exists()]
    df = pd.concat(frames, ignore_index=True)
    df = df[(df["metric"] == "err") & df["method"].isin(["robust", "nonrobust", "huber"])]
    # the two experiments share data seeds and settings: a setting run by both appears once
    df = df.drop_duplicates(subset=["method", "seed", "adversary", "link", "eps", "metric"])
    advs = [a for a in ("A1", "A2", "A3", "A4") if a in set(df["adversary"])]
    links = list(dict.fromkeys(df["link"]))
    fig, axes = new_figure(ncols=len(advs), nrows=len(links), width=3.4, height=2.7)
    for i, link in enumerate(links):
        for j, adv in enumerate(advs):
            ax = axes[i][j]
            sub = df[(df["adversary"] == adv) & (df["link"] == link)]
            for m in ("robust", "nonrobust", "huber"):
                g = sub[sub["method"] == m]
                if len(g):
                    _band(ax, "eps", g, LABELS[m], COLORS[m], logy=True)
            ax.set_title(f"{adv}, {link}")
            ax.set_xlabel("eps")
            ax.set_ylabel(r"$\|\hat\beta-\beta^*\|$")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("error vs contamination (robustness + eps_sweep; mean, min-max band over seeds)")
    save_figure(fig, out / "err_vs_eps.png")


def _err_vs_n(results: Path, out: Path) -> None:
    df = read_tidy(results / "rate" / "results.csv")
    met = read_metrics(results / "rate" / "metrics.json")
    fig, axes = new_figure()
    ax = axes[0][0]
    for k, d in enumerate(sorted(set(df["d"]))):
        sub = df[(df["d"] == d) & (df["metric"] == "err")]
        color = COLORS[METHODS[k % len(METHODS)]]
        slope = met[f"d_{int(d)}"]["slope"]
        _band(ax, "n", sub, f"d={int(d)} (slope {slope:.2f})", color)
        stats = sub.groupby("n")["value"].mean().sort_index()
        ref = stats.iloc[0] * np.sqrt(stats.index[0] / stats.index.to_numpy(float))
        ax.plot(stats.index, ref, "--", color=color, alpha=0.6, lw=1)
    ax.plot([], [], "--", color="grey", label=r"reference $n^{-1/2}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ns = sorted(set(int(v) for v in df["n"]))
    ax.set_xticks(ns, [str(v) for v in ns])
    ax.minorticks_off()
    ax.set_xlabel("n")
    ax.set_ylabel(r"$\|\hat\beta-\beta^*\|$")
    ax.set_title("clean data (eps = 0): error vs n")
    ax.legend(fontsize=7)
    save_figure(fig, out / "err_vs_n.png")


def _err_vs_sigma(results: Path, out: Path) -> None:
    df = read_tidy(results / "sigma_scaling" / "results.csv")
    met = read_metrics(results / "sigma_scaling" / "metrics.json")
    fig, axes = new_figure()
    ax = axes[0][0]
    for k, eps in enumerate(sorted(set(df["eps"]))):
        sub = df[(df["eps"] == eps) & (df["metric"] == "err")]
        color = COLORS[METHODS[k % len(METHODS)]]
        ratio = met[f"eps_{str(eps).replace('.', 'p')}"]["ratio"]
        _band(ax, "sigma", sub, f"eps={eps} (ratio {ratio:.2f})", color)
        stats = sub.groupby("sigma")["value"].mean().sort_index()
        ax.plot(stats.index, stats.iloc[0] * stats.index / stats.index[0], "--", color=color, alpha=0.6, lw=1)
    ax.plot([], [], "--", color="grey", label="linear in sigma")
    ax.set_xscale("log")
    ax.set_yscale("log")
    sig = sorted(set(float(v) for v in df["sigma"]))
    ax.set_xticks(sig, [f"{v:g}" for v in sig])
    ax.minorticks_off()
    ax.set_xlabel("sigma")
    ax.set_ylabel(r"$\|\hat\beta-\beta^*\|$ (robust)")
    ax.set_title(f"error vs noise level ({df['adversary'].iloc[0]}, {df['link'].iloc[0]})")
    ax.legend(fontsize=7)
    save_figure(fig, out / "err_vs_sigma.png")


def _esc_spectrum(results: Path, out: Path) -> None:
    met = read_metrics(results / "esc_init" / "metrics.json")
    links = sorted((k for k, v in met.items() if isinstance(v, dict) and "top_abs_cos" in v),
                   key=lambda lk: -met[lk]["esc"])
    fig, axes = new_figure(width=5.0)
    ax = axes[0][0]
    x = np.arange(len(links))
    for off, which, color in ((-0.2, "top", COLORS["robust"]), (0.2, "bottom", COLORS["nonrobust"])):
        vals = [met[lk][f"{which}_abs_cos"] for lk in links]
        errs = [met[lk][f"{which}_abs_cos_se"] for lk in links]
        ax.bar(x + off, vals, width=0.4, yerr=errs, color=color, label=f"{which} eigenvector")
    for i, lk in enumerate(links):
        ax.annotate(f"ESC={met[lk]['esc']:.2f}", (i, 1.02), ha="center", fontsize=7)
    ax.set_xticks(x, links)
    ax.set_ylim(0, 1.32)
    ax.set_ylabel(r"$|\cos(v, \beta^*)|$")
    ax.set_title(r"eigenvectors of $\frac{1}{n}\sum y_i^2 x_i x_i^T$ (eps = 0)")
    ax.legend(fontsize=7, loc="upper center", ncol=2)
    save_figure(fig, out / "esc_spectrum.png")


def _init_vs_final(results: Path, out: Path) -> None:
    df = read_tidy(results / "robustness" / "results.csv")
    df = df[df["eps"] > 0]
    fig, axes = new_figure()
    ax = axes[0][0]
    markers = {"A1": "o", "A2": "s", "A3": "^", "A4": "D"}
    for m in ("robust", "nonrobust"):
        sub = df[df["method"] == m]
        wide = sub.pivot_table(index=["adversary", "link", "seed"], columns="metric", values="value").reset_index()
        for adv, g in wide.groupby("adversary"):
            ax.scatter(g["init_sin"], g["err"], color=COLORS[m], marker=markers.get(adv, "o"), s=18,
                       label=f"{LABELS[m]}, {adv}")
    ax.set_yscale("log")
    ax.set_xlabel("sin angle of the initial estimate")
    ax.set_ylabel(r"final $\|\hat\beta-\beta^*\|$")
    ax.set_title("initialisation vs final error (each run)")
    ax.legend(fontsize=6)
    save_figure(fig, out / "init_vs_final.png")


def _link_constants(results: Path, out: Path) -> None:
    met = read_metrics(results / "esc_init" / "metrics.json")
    frame = pd.DataFrame([{"link": lk, **c} for lk, c in met["constants"].items()])
    _write_csv(frame, out / "link_constants.csv")


def _timing(results: Path, out: Path) -> None:
    prov = read_metrics(results / "timing" / "provenance.json")
    met = prov["timing"]  # run-dependent times live in provenance.json
    ns = sorted(int(k[2:]) for k in met["cpu_s"])
    frame = pd.DataFrame({"n": ns, "cpu_s": [met["cpu_s"][f"n_{n}"] for n in ns],
                          "wall_s": [met["wall_s"][f"n_{n}"] for n in ns]})
    frame["ratio_to_smallest"] = frame["cpu_s"] / frame["cpu_s"].iloc[0]
    frame["cpu"] = prov["hardware"]["cpu"]
    _write_csv(frame, out / "timing.csv")


def _performance(results: Path, out: Path) -> None:
    prov = read_metrics(results / "performance" / "provenance.json")
    met = prov["performance"]  # run-dependent times live in provenance.json
    hw = prov["hardware"]
    rows = []
    for k in sorted((k for k in met if k.startswith("n_")), key=lambda k: int(k[2:])):
        v = met[k]
        rows.append({"n": int(k[2:]), "d": prov["params"]["d"], "t_ours_s": v["cpu_s_ours"],
                     "t_scipy_s": v["cpu_s_scipy"], "time_ratio": v["time_ratio"], "err_ours": v["err_ours"],
                     "err_scipy": v["err_scipy"], "err_ratio": v["err_ratio"]})
    frame = pd.DataFrame(rows)
    _write_csv(frame, out / "performance.csv")
    title = (f"robust GD (ours) vs scipy.optimize.least_squares(loss='soft_l1'), same (X, y), "
             f"{prov['params']['adversary']} eps={prov['params']['eps']}, {prov['params']['link']}; "
             f"median CPU seconds of {met['repeats']} run(s), single-threaded BLAS; "
             f"hardware: {hw['cpu']} ({hw['cores']} cores)")
    write_markdown_table(frame, out / "performance.md", title=title)


def make_figures(results_dir: Path, out_dir: Path, scale: str) -> None:
    """Write every figure and table listed in config.yaml from ``results_dir`` into ``out_dir``."""
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for draw in (_err_vs_eps, _err_vs_n, _err_vs_sigma, _esc_spectrum, _init_vs_final, _link_constants, _timing,
                 _performance):
        draw(results_dir, out_dir)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
