"""Figures and tables of robust_sim, drawn from the results of the experiments (nothing is recomputed).

``python -m papers.robust_sim.plots --results results/quick/robust_sim --out figures/quick/robust_sim --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_path, read_metrics, read_tidy, write_markdown_table

__all__ = ["make_figures", "METHODS"]

METHODS = ("robust", "nonrobust", "huber", "huber_l2", "itlm", "random", "stein", "robust_budget", "plain",
           "budget")
LABELS = {"robust": "robust spectral + robust GD", "nonrobust": "spectral + GD (non-robust)",
          "huber": "soft-L1 M-est. (scipy)", "huber_l2": "Huber M-est. (scipy)", "itlm": "ITLM",
          "random": "random init + robust GD", "stein": "Stein init + robust GD",
          "robust_budget": "fixed-budget init + robust GD", "plain": "plain spectral (no filter)",
          "budget": "fixed-budget filter"}
COLORS = method_colors(METHODS)


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.6g")


def _band(ax, x, group, label, color, logy=False):
    """Mean line and min-max band over seeds of ``group`` (a frame with columns x, value)."""
    stats = group.groupby(x)["value"].agg(["mean", "min", "max"]).sort_index()
    plot_band(ax, stats.index, stats["mean"], stats["min"], stats["max"], label=label, color=color, marker="o", ms=3)
    if logy:
        ax.set_yscale("log")


def _err_vs_eps(results: Path, out: Path) -> None:
    frames = [read_tidy(results / name / "results.csv") for name in ("robustness", "eps_sweep")
              if (results / name / "results.csv").exists()]
    df = pd.concat(frames, ignore_index=True)
    df = df[(df["metric"] == "err") & df["method"].isin(["robust", "nonrobust", "huber"])]
    # the two experiments share data seeds and settings: a setting run by both appears once
    df = df.drop_duplicates(subset=["method", "seed", "adversary", "link", "eps", "metric"])
    advs = [a for a in ("A1", "A2", "A3", "A4", "A5") if a in set(df["adversary"])]
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
        sub = df[(df["d"] == d) & (df["metric"] == "err") & (df["method"] == "nonrobust")]
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
    """Final error vs eps at each sigma (final_rate), robust and non-robust, with sigma sqrt(eps) references."""
    df = read_tidy(results / "final_rate" / "results.csv")
    df = df[df["metric"] == "err"]
    fig, axes = new_figure(ncols=2, width=3.6)
    for ax, m in zip(axes[0], ("robust", "nonrobust")):
        sub = df[df["method"] == m]
        for k, sigma in enumerate(sorted(set(sub["sigma"]))):
            g = sub[sub["sigma"] == sigma]
            color = COLORS[METHODS[k % len(METHODS)]]
            _band(ax, "eps", g, f"sigma={sigma:g}", color, logy=True)
            eps = np.array(sorted(set(g["eps"])))
            first = g[g["eps"] == eps[0]]["value"].mean()
            ax.plot(eps, first * np.sqrt(eps / eps[0]), "--", color=color, alpha=0.6, lw=1)
        ax.plot([], [], "--", color="grey", label=r"$\propto\sqrt{\epsilon}$")
        ax.set_xscale("log")
        ticks = sorted(set(float(e) for e in sub["eps"]))
        ax.set_xticks(ticks, [f"{e:g}" for e in ticks])
        ax.minorticks_off()
        ax.set_xlabel("eps")
        ax.set_ylabel(r"final $\|\hat\beta-\beta^*\|$")
        ax.set_title(f"{LABELS[m]} ({df['adversary'].iloc[0]}, {df['link'].iloc[0]})", fontsize=8)
        ax.legend(fontsize=7)
    save_figure(fig, out / "err_vs_sigma.png")


def _init_vs_eps(results: Path, out: Path) -> None:
    """sin angle of the initial estimate vs eps per adversary and initialiser (init_scaling), eps^{1/4} guide."""
    df = read_tidy(results / "init_scaling" / "results.csv")
    advs = list(dict.fromkeys(df["adversary"]))
    fig, axes = new_figure(ncols=len(advs), width=3.0)
    for ax, adv in zip(axes[0], advs):
        sub = df[df["adversary"] == adv]
        for m, label in (("robust", "stability filter (ours)"), ("budget", LABELS["budget"]),
                         ("plain", LABELS["plain"])):
            g = sub[sub["method"] == m]
            if len(g):
                _band(ax, "eps", g, label, COLORS[m], logy=True)
        eps = np.array(sorted(set(sub["eps"])))
        ax.plot(eps, eps ** 0.25, "k--", lw=1, label=r"$\epsilon^{1/4}$")
        ax.set_xscale("log")
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.minorticks_off()
        ax.set_xlabel("eps")
        ax.set_ylabel("sin angle of the initial estimate")
        ax.set_title(adv)
    axes[0][0].legend(fontsize=6)
    save_figure(fig, out / "init_vs_eps.png")


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
    ax.set_xticks(x, [f"{lk}\nn={met[lk]['n']}" if "n" in met[lk] else lk for lk in links], fontsize=7)
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
    markers = {"A1": "o", "A2": "s", "A3": "^", "A4": "D", "A5": "v"}
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
    """timing.csv: robust_mean's n sweep (median), and every (n, d) point of the two timed designs (whole robust
    fits; the O(n^2 d) pairwise-pruning control) with the median CPU time and its ratio to the smallest n d."""
    prov = read_metrics(results / "timing" / "provenance.json")
    met = prov["timing"]  # run-dependent times live in provenance.json
    rows = []
    ns = sorted(int(k[2:]) for k in met["cpu_s"])
    d = met.get("fit", {}).get("d")
    for n in ns:
        cpu = met["cpu_s"][f"n_{n}"]
        rows.append({"what": "robust_mean", "n": n, "d": d, "cpu_s": cpu, "wall_s": met["wall_s"][f"n_{n}"],
                     "ratio_to_smallest": cpu / met["cpu_s"][f"n_{ns[0]}"]})
    for key, name in (("fit_nd", "robust fit"), ("control_nd", "pairwise_filter_mean (O(n^2 d))")):
        if key not in met:
            continue
        b = met[key]
        pts = sorted(b["points"], key=lambda p: (p[0] * p[1], p[0]))
        base = b["cpu_s_median"][f"n_{pts[0][0]}.d_{pts[0][1]}"]
        for n, dd in pts:
            cpu = b["cpu_s_median"][f"n_{n}.d_{dd}"]
            rows.append({"what": name, "n": n, "d": dd, "cpu_s": cpu, "wall_s": float("nan"),
                         "ratio_to_smallest": cpu / base})
    frame = pd.DataFrame(rows)
    frame["cpu"] = prov["hardware"]["cpu"]
    _write_csv(frame, out / "timing.csv")


def _performance(results: Path, out: Path) -> None:
    prov = read_metrics(results / "performance" / "provenance.json")
    met = prov["performance"]  # run-dependent times live in provenance.json
    hw = prov["hardware"]
    rows = []
    for k in sorted((k for k in met if k.startswith("n_")), key=lambda k: int(k[2:])):
        v = met[k]
        for name in ("scipy_soft_l1", "scipy_huber_robust_start"):
            rows.append({"n": int(k[2:]), "d": prov["params"]["d"], "comparator": name,
                         "t_ours_s": v["ours"]["cpu_s"], "t_comparator_s": v[name]["cpu_s"],
                         "time_ratio": v[name]["time_ratio_ours_to_it"], "err_ours": v["ours"]["err"],
                         "err_comparator": v[name]["err"], "err_ratio": v[name]["err_ratio_ours_to_it"]})
    frame = pd.DataFrame(rows)
    _write_csv(frame, out / "performance.csv")
    title = (f"robust GD (ours) vs scipy.optimize.least_squares: soft-L1 from the plain spectral start (the spec's "
             f"comparator) and Huber from the robust spectral start; same (X, y), "
             f"{prov['params']['adversary']} eps={prov['params']['eps']}, {prov['params']['link']}; "
             f"least CPU seconds per call over {met['repeats']} alternating round(s), single-threaded BLAS; "
             f"hardware: {hw['cpu']} ({hw['cores']} cores)")
    write_markdown_table(frame, out / "performance.md", title=title)


def _basin_radius(results: Path, out: Path) -> None:
    """basin_radius.csv: the population convexity radius R per link (and of the step-link control) and the
    robust / plain init distances."""
    met = read_metrics(results / "basin" / "metrics.json")
    rows = [{"what": "population convexity radius R", "link": lk, "value": v["radius"],
             "psi_nearest_crossing": v["psi"], "lambda_min_H_star": v["h_star"]} for lk, v in met["radius"].items()]
    ctl = met["control"]["step_link"]
    rows.append({"what": "population convexity radius R, control (f' = 0 almost everywhere)", "link": "step",
                 "value": ctl["radius"], "psi_nearest_crossing": ctl["psi"], "lambda_min_H_star": ctl["h_star"]})
    for m, vals in met["init_dist_per_seed"].items():
        rows.append({"what": f"largest ||w_0 - beta*|| over the adversaries, {m} init (mean over seeds)",
                     "link": met["init_link"], "value": float(np.mean(vals))})
    _write_csv(pd.DataFrame(rows), out / "basin_radius.csv")


def make_figures(results_dir: Path, out_dir: Path, scale: str) -> None:
    """Write every figure and table listed in config.yaml from ``results_dir`` into ``out_dir``."""
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for draw in (_err_vs_eps, _err_vs_n, _err_vs_sigma, _init_vs_eps, _esc_spectrum, _init_vs_final,
                 _link_constants, _timing, _performance, _basin_radius):
        draw(results_dir, out_dir)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
