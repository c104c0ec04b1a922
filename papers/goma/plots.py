"""Figures and tables of the goma reproduction, drawn from saved results (never recomputed).

``python -m papers.goma.plots --results results/quick/goma --out figures/quick/goma --scale quick``
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_write_text, markdown_table, read_arrays, read_metrics

from papers.goma.methods import STOCHASTIC_METHODS

__all__ = ["make_figures", "LABELS"]

DETERMINISTIC_ORDER = ("goma_t1", "goma_t2", "goma_t1_noanchor", "goma_t2_noanchor", "goma_recon", "anchored_popov",
                       "og", "eg", "eag_c", "feg", "e_halpern", "rain", "rain_pp_recon", "nesterov_eg")
LABELS = {"goma_t1": "GOMA (Thm 1)", "goma_t2": "GOMA (Thm 2)", "goma_t1_noanchor": "Thm 1 steps, no anchor",
          "goma_t2_noanchor": "Thm 2 steps, no anchor", "goma_t1_bigstep": "Thm 1 anchor, step 1/L",
          "goma_recon": "GOMA (spec reconstruction)", "goma": "GOMA", "anchored_popov": "Anchored Popov", "og": "OG",
          "eg": "EG", "eag_c": "EAG-C", "feg": "FEG",
          "e_halpern": "E-Halpern", "rain": "RAIN", "rain_pp_recon": "RAIN++ (reconstructed)", "nesterov_eg": "Nesterov-type EG", "s_goma": "S-GOMA", "s_agd": "S-AGD", "sgda": "SGDA",
          "seg": "SEG", "sog": "SOG", "dseg": "DSEG"}
COLORS = method_colors(list(DETERMINISTIC_ORDER) + ["goma_t1_bigstep"] + list(STOCHASTIC_METHODS))
COLORS["nesterov_eg"] = "#8c564b"  # the palette wraps around at this many methods; keep it apart from GOMA's
STYLES = {"og": "--", "s_agd": "--", "goma_t1_noanchor": ":", "goma_t2_noanchor": ":", "e_halpern": "-.",
          "rain": "-.", "rain_pp_recon": "--", "nesterov_eg": "-."}
DETERMINISTIC_METHODS = DETERMINISTIC_ORDER


def _reference_lines(ax, k, h_at_1, slopes=(-1, -2)):
    for slope, style in zip(slopes, (":", "--")):
        ax.plot(k, h_at_1 * k ** float(slope), color="0.5", linestyle=style, linewidth=1,
                label=f"slope {slope}")


def _p1_figures(results: Path, out: Path) -> None:
    traces = read_arrays(results / "deterministic" / "traces.npz")
    for x_axis, name in (("iter", "p1_gradnorm_vs_iter.png"), ("calls", "p1_gradnorm_vs_calls.png")):
        fig, axes = new_figure(width=5.0, height=3.6)
        ax = axes[0, 0]
        h0 = None
        for method in DETERMINISTIC_METHODS:
            key = f"p1__{method}__h"
            if key not in traces:
                continue
            h = traces[key]
            x = np.arange(h.size) if x_axis == "iter" else traces[f"p1__{method}__calls"]
            keep = (x >= 1) & np.isfinite(h) & (h > 0)
            plot_band(ax, x[keep], h[keep], label=LABELS[method], color=COLORS[method], log=True,
                      linestyle=STYLES.get(method, "-"))
            h0 = h[0]
        k = np.logspace(0, math.log10(max(2, h.size - 1)), 50)
        _reference_lines(ax, k, h0)
        ax.set_xlabel("iteration k" if x_axis == "iter" else "oracle calls")
        ax.set_ylabel(r"$\|F(z_k)\|^2$")
        ax.set_title("P1 log-spectrum bilinear: last iterate")
        ax.legend(fontsize=6, ncol=2)
        save_figure(fig, out / name)


def _envelope_table(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "deterministic" / "metrics.json")
    runs = metrics["envelope"]["runs"]
    methods = [m for m in DETERMINISTIC_METHODS if m in metrics["envelope"]["max"]]
    rows = [{"run": run, **{LABELS[m]: values.get(m, float("nan")) for m in methods}} for run, values in runs.items()]
    rows.append({"run": "max", **{LABELS[m]: metrics["envelope"]["max"][m] for m in methods}})
    path = out / "envelope_table.md"
    envelope = markdown_table(pd.DataFrame(rows), floatfmt=".4g",
                              title="Envelope E = max_k k^2 ||F(z_k)||^2 / (L^2 ||z_0 - z*||^2), per instance "
                                    f"and seed (K = {metrics['K']})")
    thm = metrics["theorem1"]
    tm = [m for m in list(DETERMINISTIC_METHODS) + ["goma_t1_bigstep"] if m in thm["max"]]
    theorem1 = pd.DataFrame([{"run": run, **{LABELS[m]: values[m] for m in tm}}
                             for run, values in list(thm["runs"].items()) + [("max", thm["max"])]])
    theorem1_text = markdown_table(
        theorem1, floatfmt=".4g",
        title="Theorem 1 ratio max_k (k+6)^2 ||F(z_k)||^2 / (L^2 ||z_0 - z*||^2) (Theorem 1: <= 264 for GOMA (Thm 1); "
              "the other columns are for comparison)")
    atomic_write_text(path, "\n".join([envelope, "Published bounds: FEG E <= 4 (Lee & Kim 2021); EAG-C E <= 256 "
                                              "(Yoon & Ryu 2021).\n", theorem1_text]))


def _stochastic_figure(results: Path, out: Path) -> None:
    """Theorem 4's method on the main instance: E||F(x_k)||^2 for each sigma (kappa = 1) with and without the
    anchor, and the minibatch and k^{-1/2}-step baselines at the largest sigma."""
    metrics = read_metrics(results / "stochastic" / "metrics.json")
    traces = read_arrays(results / "stochastic" / "traces.npz")
    main, sigmas, kappa = metrics["main"], metrics["sigmas"], metrics["kappas"][0]
    fig, axes = new_figure(ncols=2, width=4.6, height=3.5)
    shades = np.linspace(0.25, 0.95, len(sigmas))
    kkey = f"{kappa:g}".replace(".", "p")
    for sigma, shade in zip(sigmas, shades):
        skey = f"{sigma:g}".replace(".", "p")
        for variant, style in (("anchor", "-"), ("noanchor", ":")):
            y = traces[f"{main}__t4_{variant}_k{kkey}_s{skey}__h"]
            k = np.arange(y.size)
            keep = (k >= 1) & np.isfinite(y) & (y > 0)
            axes[0, 0].loglog(k[keep], y[keep], linestyle=style, color=plt_color(shade, variant),
                              label=f"sigma={sigma:g}" + ("" if variant == "anchor" else ", no anchor"))
    s_max = f"{max(sigmas):g}".replace(".", "p")
    curves = [(f"t4_anchor_k{kkey}_s{s_max}", "Thm 4 (anchor)"), (f"t4_noanchor_k{kkey}_s{s_max}", "no anchor"),
              (f"t4_anchor_minibatch_k{kkey}_s{s_max}", "Thm 4, minibatch k+1"),
              (f"t4_noanchor_minibatch_k{kkey}_s{s_max}", "no anchor, minibatch")]
    curves += [(m, LABELS[m]) for m in STOCHASTIC_METHODS if f"{main}__{m}__h" in traces]
    for i, (key, label) in enumerate(curves):
        if f"{main}__{key}__h" not in traces:
            continue
        y = traces[f"{main}__{key}__h"]
        k = np.arange(y.size)
        keep = (k >= 1) & np.isfinite(y) & (y > 0)
        axes[0, 1].loglog(k[keep], y[keep], color=COLORS.get(key, f"C{i % 10}"), label=label)
    for ax in axes[0]:
        k = np.logspace(0, math.log10(max(2, metrics["K"])), 50)
        ax.set_xlabel("iteration k")
        ax.set_ylabel(r"mean $\|F(x_k)\|^2$")
    y0 = traces[f"{main}__t4_anchor_k{kkey}_s{s_max}__h"]
    axes[0, 1].plot(k, y0[1] * k ** -0.5, color="0.5", linestyle="--", linewidth=1, label="slope -1/2")
    axes[0, 0].set_title(f"{main}: sigma sweep (kappa = {kappa:g})", fontsize=8)
    axes[0, 1].set_title(f"{main}: sigma = {max(sigmas):g}, kappa = 1", fontsize=8)
    axes[0, 0].legend(fontsize=6, ncol=2)
    axes[0, 1].legend(fontsize=6, ncol=2)
    save_figure(fig, out / "stochastic_sweep.png")


def plt_color(shade: float, variant: str):
    """Blue shades for the anchored runs, red for the runs without the anchor (darker = larger sigma)."""
    return (0.1, 0.2, shade) if variant == "anchor" else (shade, 0.15, 0.1)


def _theorem4_rows(t4: dict) -> list:
    """Table rows (instance, kappa, sigma, variant) of the ``t4`` block of a stochastic experiment's metrics."""
    rows = []
    for inst, by_kappa in t4.items():
        for kkey, by_sigma in by_kappa.items():
            if kkey == "baselines":
                continue
            for skey, by_variant in by_sigma.items():
                rows += [{"instance": inst, "kappa": kkey[1:].replace("p", "."), "sigma": skey[1:].replace("p", "."),
                          "variant": variant, "slope": f"{np.mean(st['slope_per_seed']):.3f}",
                          "E F(x_K)^2": np.mean(st["final_h_per_seed"]),
                          "Thm 4 ratio": np.mean(st["bound_ratio_per_seed"]),
                          "max E dist / R^2": np.mean(st["max_dist_ratio_per_seed"]),
                          "final / max E dist": np.mean(st["return_ratio_per_seed"])}
                         for variant, st in by_variant.items()]
    return rows


def _stochastic_table(results: Path, out: Path) -> None:
    """Per instance, kappa and sigma: mean slope, E||F(x_K)||^2 and the Theorem-4 ratio, with and without the anchor;
    the paper's games (``stochastic``), then our P1 (``stochastic_p1``) when it has been run."""
    metrics = read_metrics(results / "stochastic" / "metrics.json")
    path = out / "stochastic_table.md"
    title = (f"Theorem 4's method under state-dependent noise (K = {metrics['K']}, {metrics['seeds']} seeds; mean over "
             "seeds; ratio = E||F(x_K)||^2 sqrt(K+1) / (1570 L^2 kappa R^2 + 8 sigma^2 / kappa))")
    claims = metrics["claims"]
    parts = [markdown_table(pd.DataFrame(_theorem4_rows(metrics["t4"])), floatfmt=".3g", title=title)]
    if (results / "stochastic_p1" / "metrics.json").exists():
        own = read_metrics(results / "stochastic_p1" / "metrics.json")
        parts.append(markdown_table(pd.DataFrame(_theorem4_rows(own["t4"])), floatfmt=".3g", title=(
            f"The same on our instance P1 (experiment stochastic_p1; K = {own['K']}, {own['seeds']} seeds of "
            f"{own['S']} trajectories)")))
    parts.append("Noise-dominated ratio (E||F(x_K)||^2 at the largest sigma over sigma = 0, anchored): "
                 + ", ".join(f"kappa {k[1:].replace('p', '.')}: {v:.3g}"
                             for k, v in claims["noise_dominated_ratio_by_kappa"].items()) + "\n")
    base = metrics["t4"][metrics["main"]].get("baselines", {})
    if base:
        baselines = pd.DataFrame([{"method": LABELS[m], "slope": f"{v['slope']:.3f}", "E F(x_K)^2": v["final_h"]}
                                  for m, v in base.items()])
        parts += ["Baselines at the largest sigma, kappa = 1 (steps eta0/(L sqrt(k+1)); DSEG k^-1/3 and k^-2/3):\n",
                  markdown_table(baselines, floatfmt=".3g")]
    atomic_write_text(path, "\n".join(parts))


def _pep_figure(results: Path, out: Path) -> None:
    pep = read_metrics(results / "pep" / "metrics.json")["pep"]
    fig, axes = new_figure(width=4.6, height=3.4)
    ax = axes[0, 0]
    all_N = []
    for method, taus in pep["tau"].items():
        N = np.array([int(k[1:]) for k in taus])
        order = np.argsort(N)
        tau = np.array(list(taus.values()))[order]
        ax.loglog(N[order], tau, marker="o", color=COLORS[method], label=LABELS[method])
        all_N.extend(N.tolist())
    grid = np.linspace(min(all_N), max(all_N), 50)
    ax.loglog(grid, 4.0 / grid ** 2, color="0.5", linestyle="--", linewidth=1, label=r"$4/N^2$ (FEG, tight)")
    ticks = sorted(set(all_N))
    ax.set_xticks(ticks, [str(n) for n in ticks])
    ax.minorticks_off()
    ax.set_xlabel("iterations N")
    ax.set_ylabel(r"worst case $\tau(N)$ of $\|F(z_N)\|^2$")
    ax.set_title(f"PEP, monotone 1-Lipschitz ({pep['solver']})")
    ax.legend(fontsize=7)
    save_figure(fig, out / "pep_worst_case.png")


def _stability_figure(results: Path, out: Path) -> None:
    stab = read_metrics(results / "stability" / "metrics.json")["stability"]
    gammas, etas = stab["gamma_L"], stab["eta_L"]
    grid = np.array([[float(stab["converged"][f"g{int(round(100 * g)):03d}_e{int(round(100 * e)):03d}"])
                      for g in gammas] for e in etas])
    fig, axes = new_figure(width=4.6, height=3.4)
    ax = axes[0, 0]
    ax.imshow(grid, origin="lower", cmap="RdYlGn", vmin=0, vmax=1, aspect="auto",
              extent=(gammas[0] - 0.05, gammas[-1] + 0.05, etas[0] - 0.05, etas[-1] + 0.05))
    ax.set_xlabel(r"$\gamma L$")
    ax.set_ylabel(r"$\eta L$")
    ax.set_title(f"GOMA on P2, K = {stab['K']}: green converged, red not", fontsize=8)
    ax.grid(False)
    save_figure(fig, out / "stability_map.png")


def _fmt_calls(value) -> str:
    return str(value) if isinstance(value, int) else "not reached"


def _performance_table(results: Path, out: Path) -> None:
    base = results / "performance"
    perf = read_metrics(base / "metrics.json")["performance"]
    timings = read_metrics(base / "timings.json")
    hardware = read_metrics(base / "provenance.json").get("hardware", {})
    title = (f"CPU time and oracle calls to reach h_k <= eps h_0 (least over {perf['repeats']} rounds, BLAS pinned to "
             f"one thread; hardware: {hardware.get('cpu', 'unknown')}, {hardware.get('cores', '?')} cores; times are "
             "the bare method loop for the calls shown, without monitoring)")
    eps_keys = None
    rows = []
    for inst, by_method in perf["calls_to_eps"].items():
        eps_keys = eps_keys or list(next(iter(by_method.values())))
        for method in [m for m in DETERMINISTIC_METHODS if m in by_method]:
            row = {"instance (call budget)": f"{inst} ({perf['max_calls'][inst]})", "method": LABELS[method]}
            for k in eps_keys:
                t = timings[inst][method].get(k)
                row[f"calls to {k[3:]}"] = _fmt_calls(by_method[method][k])
                row[f"ms to {k[3:]}"] = "-" if t is None else 1e3 * t
            rows.append(row)
    ratios = []
    per = perf["per_calls"]
    for inst, t in timings.items():
        goma_t, eg_t = t.get(f"time_per_{per}_calls_goma_t1"), t.get(f"time_per_{per}_calls_eg")
        if goma_t and eg_t:
            ratios.append((f"time per {per} calls, GOMA / EG", inst, goma_t / eg_t))
    for inst, by_key in perf["ratios"].items():
        ratios += [(f"calls to {key.rsplit('eps', 1)[1]}, GOMA / {'EAG-C' if 'eag_c' in key else 'FEG'}", inst, value)
                   for key, value in by_key.items()]
    for inst, t in timings.items():
        smallest = eps_keys[-1] if eps_keys else None
        goma_time = t.get("goma_t1", {}).get(smallest) if smallest else None
        if goma_time is not None and t.get("direct_solve"):
            ratios.append((f"GOMA time to {smallest[3:]} / np.linalg.solve for z*", inst,
                           goma_time / t["direct_solve"]))
    ratios += [("np.linalg.solve time for z* (ms)", inst, 1e3 * t["direct_solve"])
               for inst, t in timings.items() if t.get("direct_solve")]
    path = out / "performance_table.md"
    calls = markdown_table(pd.DataFrame(rows), floatfmt=".3g", title=title)
    ratio_text = markdown_table(pd.DataFrame(ratios, columns=["ratio", "instance", "value"]), floatfmt=".3g",
                                title="Ratios")
    atomic_write_text(path, calls + "\n" + ratio_text)


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table whose results exist under ``results_dir`` (stability at full only)."""
    results, out = Path(results_dir), Path(out_dir)
    if (results / "deterministic" / "traces.npz").exists():
        _p1_figures(results, out)
        _envelope_table(results, out)
    if (results / "stochastic" / "traces.npz").exists():
        _stochastic_figure(results, out)
        _stochastic_table(results, out)
    if (results / "pep" / "metrics.json").exists():
        _pep_figure(results, out)
    if (results / "stability" / "metrics.json").exists():
        _stability_figure(results, out)
    if (results / "performance" / "metrics.json").exists():
        _performance_table(results, out)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
