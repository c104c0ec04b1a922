"""Figures and tables of the romberg_zoge reproduction, drawn from saved results (never recomputed).

``python -m papers.romberg_zoge.plots --results results/quick/romberg_zoge --out figures/quick/romberg_zoge --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_write_text, markdown_table, read_arrays, read_metrics, write_markdown_table

__all__ = ["make_figures"]

LEVEL_COLORS = method_colors(["R0", "R1", "R2", "R3", "kernel"])
METHOD_COLORS = method_colors(["two_point", "romberg_R1", "romberg_R2", "kernel", "forward_romberg", "cma"])


def _color(name: str) -> str:
    for key in ("romberg_R1", "romberg_R2", "kernel", "forward"):
        if name.startswith(key):
            return METHOD_COLORS["forward_romberg" if key == "forward" else key]
    return METHOD_COLORS["two_point"]


def _weights(metrics: dict, out: Path) -> None:
    frame = pd.DataFrame([{"R": key[1:], "weights (exact)": ", ".join(row["weights_exact"]),
                           "weights (float64)": ", ".join(format(w, ".6g") for w in row["weights"]),
                           "sum abs(w)": row["sum_abs"], "kappa_R": row["kappa"], "rho_R": row["rho"],
                           "evaluations per direction": str(row["evaluations_per_direction"])}
                          for key, row in metrics["weights"].items()])
    write_markdown_table(frame, out / "weights.md", floatfmt=".6g",
                         title="Romberg weights (w_k for radii r/2^k; kappa_R = sum_k w_k^2 4^k; rho_R = sum_k w_k "
                               "4^(-k(R+1)))")


def _bias(metrics: dict, out: Path) -> None:
    bias = metrics["bias"]
    radii = np.array(bias["radii"])
    fig, axes = new_figure(width=4.6, height=3.4)
    ax = axes[0, 0]
    for key, res in bias["residual"].items():
        ax.loglog(radii, res, "o-", color=LEVEL_COLORS[key], label=f"{key}: slope {bias['slope'][key]:.2f} "
                  f"(theory {2 * int(key[1:]) + 2})")
    ax.set_xlabel("radius r")
    ax.set_ylabel(r"mean$_u\ \|\hat g_R - (u^\top\nabla f)u\|$")
    ax.set_title("Z1: pathwise residual, logistic function")
    ax.legend(fontsize=7)
    save_figure(fig, out / "bias_vs_radius.png")


def _variance(metrics: dict, out: Path) -> None:
    var = metrics["variance"]
    frame = pd.DataFrame([{"estimator": k, "ratio E||g_hat - g||^2 / ((d+1)||g||^2)": v,
                           "standard error": var["ratio_se"][k], "theory (leading term)": var["theory"][k]}
                          for k, v in var["ratio"].items()])
    write_markdown_table(frame, out / "variance.md", floatfmt=".4f",
                         title="Z3: leading directional variance (gaussian/sphere: Romberg level R; kernel: "
                               "unit-sphere directions with factor d)")


def _noise(metrics: dict, out: Path) -> None:
    noise = metrics["noise"]
    keys = list(noise["empirical"])
    fig, axes = new_figure(width=4.4, height=3.4)
    ax = axes[0, 0]
    pred = np.array([noise["predicted"][k] for k in keys])
    emp = np.array([noise["empirical"][k] for k in keys])
    ax.loglog(pred, pred, color="0.5", linestyle="--", linewidth=1, label="empirical = predicted")
    for k, p, e in zip(keys, pred, emp):
        ax.loglog([p], [e], "o", color=LEVEL_COLORS[k], label=f"{k}: ratio {e / p:.3f}")
    ax.set_xlabel(r"predicted $\sigma^2\kappa_R/(2r^2)$")
    ax.set_ylabel("empirical variance")
    ax.set_title("Z4: noise amplification")
    ax.legend(fontsize=7)
    save_figure(fig, out / "noise_amplification.png")


def _exponential(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "exponential" / "metrics.json")["z5"]
    traces = read_arrays(results / "exponential" / "traces.npz")
    fig, axes = new_figure(width=5.2, height=3.6)
    ax = axes[0, 0]
    styles = ["-", "-", "-.", ":", "--", "-"]
    methods = [(k, v) for k, v in metrics.items() if isinstance(v, dict) and "method" in v]
    for i, (name, entry) in enumerate(methods):
        if entry.get("diverged"):
            ax.plot([], [], color=_color(name), label=f"{name}: diverged ({entry['diverged_at']})")
            continue
        ax.plot(traces[f"{name}__steps"], traces[f"{name}__offset"], color=_color(name),
                linestyle=styles[i % len(styles)], label=name)
        if "analytic" in entry:
            ax.axhline(entry["analytic"], color=_color(name), linestyle="--", linewidth=0.8)
    ax.set_ylim(-0.2, 0.1)
    ax.set_xlabel("iteration")
    ax.set_ylabel(r"mean$_i (x_i - c_i)$ (seed mean)")
    ax.set_title("Z5: ZO-SGD, exponential function\n(dashed: analytic fixed points)")
    ax.legend(fontsize=6)
    save_figure(fig, out / "zo_sgd_exponential.png")


def _ris(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "ris" / "metrics.json")
    radii = np.array(metrics["radii"])
    oracles = list(metrics["gap"])
    fig, axes = new_figure(ncols=len(oracles), width=3.8, height=3.3)
    for ax, oracle in zip(axes[0], oracles):
        for j, (name, by_r) in enumerate(metrics["gap"][oracle].items()):
            keys = [f"r{r:g}" for r in radii]
            med = np.array([by_r[k]["last"]["median"] for k in keys]) * 100
            lo = np.array([by_r[k]["last"]["q25"] for k in keys]) * 100
            hi = np.array([by_r[k]["last"]["q75"] for k in keys]) * 100
            x = radii * (1 + 0.04 * (j - 0.5))
            ax.errorbar(x, med, yerr=[med - lo, hi - med], fmt="o-", capsize=3, color=_color(name), label=name)
        ax.set_xscale("log")
        ax.set_xticks(radii, [f"{r:g}" for r in radii])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("radius r")
        ax.set_ylabel("relative rate gap (%)")
        ax.set_title(f"Z6: practical RIS, {oracle} oracle")
        ax.legend(fontsize=7)
    save_figure(fig, out / "ris_gap.png")


def _prompt(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "prompt" / "metrics.json")
    curves = read_arrays(results / "prompt" / "curves.npz")
    names = list(metrics["accuracy"])
    radii = [k for k in metrics["accuracy"][names[0]] if k.startswith("r")]
    fig, axes = new_figure(ncols=len(radii), width=3.2, height=3.0)
    for ax, key in zip(axes[0], radii):
        for name in names:
            ax.plot(curves["evaluations"], curves[f"{name}__{key}__accuracy"], color=_color(name), label=name)
        ax.axhline(metrics["baseline_accuracy_z0"], color="0.5", linestyle=":", linewidth=1, label="no prompt")
        ax.set_xlabel("function evaluations")
        ax.set_ylabel("target-test accuracy (%)")
        ax.set_title(f"Z7: prompt tuning, r = {key[1:]}")
        ax.legend(fontsize=7)
    save_figure(fig, out / "prompt_accuracy.png")


def _prompt_lm(results: Path, out: Path) -> None:
    """BBT-style prompt tuning of SmolLM2-135M (experiment prompt_lm); skipped where it was not run (quick)."""
    path = results / "prompt_lm" / "metrics.json"
    if not path.is_file():
        return
    metrics = read_metrics(path)
    curves = read_arrays(results / "prompt_lm" / "curves.npz")
    names = list(metrics["methods"])
    colors = dict(zip(names, method_colors(names).values()))
    fig, axes = new_figure(ncols=2, width=3.8, height=3.3)
    ax = axes[0][0]
    for name in names:
        key = f"{name}__train_loss"
        if key not in curves:
            continue
        y = curves[key]
        lr = metrics["tuning"].get(name, {}).get("lr")
        label = f"{name} (lr {lr:g})" if lr is not None else f"{name} (best so far)"
        plot_band(ax, curves[f"{name}__evaluations"], y.mean(axis=0), y.min(axis=0), y.max(axis=0), label=label,
                  color=colors[name])
    ax.axhline(metrics["baseline"]["train_loss"], color="0.5", linestyle=":", linewidth=1, label="z = 0")
    ax.set_xlabel("function evaluations")
    ax.set_ylabel("training loss (2-way cross-entropy)")
    ax.set_title(f"SmolLM2-135M, d = {metrics['task']['dim']}, r = {metrics['radius']:g}, Q = {metrics['Q']}")
    ax.legend(fontsize=6)
    ax = axes[0][1]
    for j, name in enumerate(names):
        acc = np.array(metrics["methods"][name]["test_accuracy"])
        x = j + np.linspace(-0.15, 0.15, acc.size)
        ax.plot(x, acc, "o", color=colors[name], markersize=4)
        ax.hlines(acc.mean(), j - 0.3, j + 0.3, color=colors[name])
    ax.axhline(metrics["baseline"]["test_accuracy"], color="0.5", linestyle=":", linewidth=1, label="z = 0")
    ax.set_xticks(range(len(names)), names, rotation=20, fontsize=7)
    ax.set_ylabel("test accuracy (%), held-out adjectives")
    ax.set_title(f"per seed (bars: mean), {metrics['budget']} evaluations")
    ax.legend(fontsize=7)
    save_figure(fig, out / "prompt_lm.png")


def _benchmarks(results: Path, out: Path) -> None:
    metrics = read_metrics(results / "benchmarks" / "metrics.json")
    traces = read_arrays(results / "benchmarks" / "traces.npz")
    fig, axes = new_figure(ncols=2, width=4.0, height=3.4)
    bc, st = metrics["breast_cancer"], metrics["styblinski_tang"]
    ax = axes[0, 0]
    for name, entry in bc["methods"].items():
        ax.semilogy(traces["breast_cancer__steps"], traces[f"breast_cancer__{name}__dist"], color=_color(name),
                    label=name)
        ax.axhline(entry["fixed_point_dist_to_optimum"], color=_color(name), linestyle="--", linewidth=0.8)
    ax.set_xlabel("iteration")
    ax.set_ylabel(r"$\|x_t - x^*\|$ (seed mean)")
    ax.set_title(f"breast-cancer logistic, d = {bc['dim']}, r = {bc['radius']:g}\n"
                 "(dashed: analytic fixed point)", fontsize=8)
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    for name, entry in st["methods"].items():
        ax.plot(traces["styblinski_tang__steps"], traces[f"styblinski_tang__{name}__offset"], color=_color(name),
                label=name)
        ax.axhline(entry["analytic_offset"], color=_color(name), linestyle="--", linewidth=0.8)
    if all(abs(traces[f"styblinski_tang__{name}__offset"][-1]) < 0.25 for name in st["methods"]):
        ax.set_ylim(-0.1, 0.3)                       # zoom on the fixed points (the start offset is about 1.9)
    ax.set_xlabel("iteration")
    ax.set_ylabel(r"mean$_i (x_i - x^*_i)$ (seed mean)")
    ax.set_title(f"Styblinski-Tang, d = {st['dim']}, r = {st['radius']:g}\n(dashed: analytic fixed point)",
                 fontsize=8)
    ax.legend(fontsize=7)
    save_figure(fig, out / "zo_sgd_benchmarks.png")


def _prompt_float16(results: Path, out: Path) -> None:
    f16 = read_metrics(results / "prompt" / "metrics.json")["float16"]
    rounding = pd.DataFrame([{"radius": key[1:], "std R0": row["std_R0"], "std R1": row["std_R1"],
                              "ratio R1 / R0": row["ratio_R1_over_R0"],
                              "ratio / sqrt(kappa_1)": row["ratio_over_sqrt_kappa1"]}
                             for key, row in f16["rounding"].items()])
    zo_sgd = pd.DataFrame([{"method": name, "radius": key[1:], "float16": f"{row['float16']:.1f}",
                            "float32": f"{row['float32']:.1f}", "difference": f"{row['diff']:+.2f}"}
                           for name, by_r in f16["zo_sgd"].items() for key, row in by_r.items()])
    path = out / "prompt_float16.md"
    atomic_write_text(path, "\n".join([
        "**Prompt tuning with a float16 forward pass**\n",
        f"Rounding error of sum_k w_k D(h_k) (float16 minus float32, one minibatch, z = 0); independent rounding "
        f"errors predict std(R1) / std(R0) = sqrt(kappa_1) = {f16['sqrt_kappa1']:.4g}:\n",
        markdown_table(rounding, floatfmt=".3g"),
        f"ZO-SGD ({f16['iterations']} steps, seeds {f16['seeds']}, same minibatches and directions): target-test "
        "accuracy (%) of the last iterate, evaluated in float32:\n",
        markdown_table(zo_sgd)]))


def _performance(results: Path, out: Path) -> None:
    """performance.md: process-CPU time per gradient at equal evaluations and per black-box run at equal budgets
    (least over alternating rounds, :func:`shared.timing.alternating_least_cpu`)."""
    perf = read_metrics(results / "performance" / "metrics.json")["performance"]
    timings = read_metrics(results / "performance" / "timings.json")
    hw = timings["hardware"]
    tg = timings["gradient"]
    gradient = [{"method": name, "evaluations": str(entry["evaluations"]), "relative error": entry["rel_error"],
                 "CPU time per gradient (ms)": "-" if tg.get(name) is None else 1e3 * tg[name]}
                for name, entry in perf["gradient"].items()]
    looped = [k for k in tg if k.endswith("_looped")][0]
    gradient.append({"method": f"{looped} (one Python call per point)", "evaluations": "as romberg_R1",
                     "relative error": "same", "CPU time per gradient (ms)": 1e3 * tg[looped]})
    ris, tr, pr, tp = perf["ris"], timings["ris"], perf["prompt"], timings["prompt"]
    budget = pd.DataFrame([
        ("RIS rate gap (%)", str(ris["budget"]), 100 * ris["romberg_R1_rel_gap"], 100 * ris["cma_rel_gap"],
         100 * ris["nevergrad_rel_gap"], tr["romberg_R1"], tr["cma"], tr["nevergrad"], tr["cma_over_romberg"],
         tr["nevergrad_over_romberg"]),
        ("prompt test accuracy (%)", str(pr["budget"]), pr["romberg_R1_accuracy"], pr["cma_accuracy"],
         pr["nevergrad_accuracy"], tp["romberg_R1"], tp["cma"], tp["nevergrad"], tp["cma_over_romberg"],
         tp["nevergrad_over_romberg"]),
    ], columns=["task", "budget", "ZO-SGD Romberg R=1", "CMA-ES", "nevergrad", "ZO-SGD CPU (s)", "CMA-ES CPU (s)",
                "nevergrad CPU (s)", "CPU ratio CMA / ZO", "CPU ratio nevergrad / ZO"])
    r = timings["ratios"]
    path = out / "performance.md"
    atomic_write_text(path, "\n".join([
        f"**Performance** (CPU: {hw.get('cpu', 'unknown')}, {hw.get('cores', '?')} cores, BLAS pinned to one thread; "
        f"process-CPU time, least over {perf['rounds']} rounds that call the compared methods in turn)\n",
        "Gradient of the logistic test function (d = 20) at x0:\n",
        markdown_table(pd.DataFrame(gradient), floatfmt=".3g"),
        f"CPU-time ratios at equal evaluations: numdifftools / Romberg = {r['numdifftools_over_romberg']:.3g}; "
        f"approx_fprime / Romberg = {r['approx_fprime_over_romberg']:.3g} (Romberg at approx_fprime's count; at "
        f"numdifftools' count {r['approx_fprime_over_romberg_at_numdifftools_evals']:.3g}); looped / batched "
        f"evaluation = {r['looped_over_batched']:.3g}. Romberg-ZOGE's error is that of a random-direction estimate "
        "(about sqrt((d+1)/directions)); the deterministic libraries reach rounding-level errors, so these ratios "
        "compare the cost of the same number of evaluations, not of the same accuracy.\n",
        "CMA-ES (package `cma`) and nevergrad (`TwoPointsDE`, batches of 4 points) against ZO-SGD with Romberg R = 1 "
        "at the same evaluation budget (CPU seconds per run):\n",
        markdown_table(budget, floatfmt=".3g")]))


def _radius_map(results: Path, out: Path) -> None:
    """Per-direction and fixed-budget error of the estimators against r (seed means, min-max over seeds)."""
    path = results / "radius_map" / "metrics.json"
    if not path.exists():
        return
    metrics = read_metrics(path)
    radii = np.asarray(metrics["radii"], dtype=float)
    keys = ["r" + f"{r:g}".replace(".", "p") for r in radii]
    fig, axes = new_figure(ncols=2, width=4.0, height=3.2)
    for ax, name, ylabel, ref in (
            (axes[0, 0], "ratio_R1_over_R0", r"$m_1 / m_0$ (same directions)", 1.0),
            (axes[0, 1], "budget_log_ratio", "log(error R = 1 / error two-point), Q = 4", 0.0)):
        vals = np.array([metrics["samples"][name][k] for k in keys])        # (radii, seeds)
        plot_band(ax, radii, vals.mean(axis=1), vals.min(axis=1), vals.max(axis=1), label="_nolegend_",
                  color=_color("romberg_R1"), marker="o")
        ax.set_xscale("log")
        ax.axhline(ref, color="0.5", linestyle=":", linewidth=1)
        ax.set_xlabel("radius r")
        ax.set_ylabel(ylabel, fontsize=8)
    axes[0, 0].set_title("per-direction error second moment", fontsize=9)
    axes[0, 1].set_title("fixed budget: 2 directions (two-point) vs 1 (R = 1)", fontsize=9)
    save_figure(fig, out / "radius_map.png")


def _tuned(results: Path, out: Path) -> None:
    """Table: the tuned (radius, lr) per method and problem, and the per-seed comparisons (mean, min, max)."""
    path = results / "tuned" / "metrics.json"
    if not path.exists():
        return
    metrics = read_metrics(path)
    rows = []
    for prob, entry in metrics.items():
        for method, chosen in entry["chosen"].items():
            c = entry["control"]["chosen"][method]
            rows.append({"problem": prob, "method": method, "tuned r": f"{chosen['radius']:g}",
                         "tuned lr": f"{chosen['lr']:g}", "mean score (eval seeds)": np.mean(entry["eval"][method]),
                         "control: tuned r": f"{c['radius']:g}",
                         "control: mean score": np.mean(entry["control"]["eval"][method])})
        if "cma" in entry["eval"]:
            rows.append({"problem": prob, "method": "CMA-ES (same budget)", "tuned r": "-", "tuned lr": "-",
                         "mean score (eval seeds)": np.mean(entry["eval"]["cma"]), "control: tuned r": "-",
                         "control: mean score": "-"})
    path = out / "tuned.md"
    title = ("ZO-SGD with the radius and the step tuned per method (tuning seeds separate from evaluation seeds; "
             "scores: log squared distance to the minimiser for the exponential, relative rate gap for RIS; lower is "
             "better)")
    table = markdown_table(pd.DataFrame(rows), floatfmt=".4g", title=title)
    atomic_write_text(path, table + "\nControls: the quadratic with the same noise (exponential) and the ideal RIS "
                                    "phase model, each tuned again; neither has a smoothing bias to remove.\n")


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table of the paper from ``results_dir`` into ``out_dir``."""
    results, out = Path(results_dir), Path(out_dir)
    est = read_metrics(results / "estimator" / "metrics.json")
    _weights(est, out)
    _bias(est, out)
    _variance(est, out)
    _noise(est, out)
    _exponential(results, out)
    _benchmarks(results, out)
    _ris(results, out)
    _prompt(results, out)
    _prompt_float16(results, out)
    _prompt_lm(results, out)
    _radius_map(results, out)
    _tuned(results, out)
    _performance(results, out)


if __name__ == "__main__":
    main(make_figures)
