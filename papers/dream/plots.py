"""Figures and tables of the dream reproduction, read from results (never recomputed).

``python -m papers.dream.plots --results results/quick/dream --out figures/quick/dream --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, save_figure
from shared.results import read_arrays, read_metrics, write_markdown_table

__all__ = ["make_figures"]

METHODS = ("dream", "dream_no_cv", "fmgda", "mgda_central", "fedavg_ls", "scaffold_ls", "dream_m05", "fedcmoo",
           "dream_beta0", "fsmgda", "fedmgda_plus")
COLORS = method_colors(METHODS)
LABELS = {"dream": "DREAM-R", "dream_no_cv": "DREAM-R without CV", "fmgda": "FMGDA", "fedcmoo": "FedCMOO",
          "mgda_central": "central MGDA",
          "fedavg_ls": "FedAvg-LS", "scaffold_ls": "SCAFFOLD-LS", "dream_m05": "DREAM-R (beta 0.5)",
          "dream_beta0": "DREAM-R without momentum", "fsmgda": "FSMGDA", "fedmgda_plus": "FedMGDA+"}


def _instances(traces: dict, run: str) -> list[str]:
    return sorted({k.split("__")[1] for k in traces if k.startswith(run + "__")})


def _stationarity(results: Path, out: Path) -> None:
    traces = read_arrays(results / "quadratic" / "traces.npz")
    fig, axes = new_figure(ncols=2, width=4.2, height=3.3)
    for ax, (suffix, K) in zip(axes[0], (("_k1", 1), ("", 10))):
        for m in ("dream", "dream_no_cv", "fmgda", "fedcmoo", "mgda_central"):
            run = m + suffix
            insts = _instances(traces, run)
            for j, inst in enumerate(insts):
                y = traces[f"{run}__{inst}__sqrt_s"]
                ax.semilogy(np.arange(y.size), np.maximum(y, 1e-17), color=COLORS[m], alpha=1.0 if j == 0 else 0.35,
                            linestyle={"mgda_central": "--", "fedcmoo": ":"}.get(m, "-"),
                            label=LABELS[m] if j == 0 else None)
        ax.set_xlabel("round t")
        ax.set_title(f"K = {K} local steps")
    axes[0, 0].set_ylabel(r"$\sqrt{S(x_t)}$ (exact gradients)")
    axes[0, 1].legend(fontsize=7)
    save_figure(fig, out / "stationarity.png")


def _ca_distance(results: Path, out: Path) -> None:
    traces = read_arrays(results / "quadratic" / "traces.npz")
    fig, axes = new_figure(width=5.0, height=3.4)
    ax = axes[0, 0]
    for m in ("dream", "dream_m05", "dream_no_cv", "fmgda", "fedcmoo"):
        insts = _instances(traces, m)
        if not insts:
            continue
        ys = np.array([traces[f"{m}__{inst}__ca"][:100] for inst in insts])
        ok = np.any(np.isfinite(ys), axis=0)   # NaN where ||d*|| < 1e-8 (converged) on every instance
        mean = np.array([np.nanmean(col) if k else np.nan for col, k in zip(ys.T, ok)])
        ax.semilogy(np.arange(ys.shape[1]), mean, color=COLORS[m], label=LABELS[m],
                    linestyle=":" if m == "fedcmoo" else "-")
    ax.set_xlabel("round t")
    ax.set_ylabel(r"$\|d^t - d^*(x^t)\| / \|d^*(x^t)\|$ (mean over instances)")
    ax.set_title("Distance to the conflict-avoidant direction")
    ax.legend(fontsize=7)
    save_figure(fig, out / "ca_distance.png")


def _speedup(results: Path, out: Path) -> None:
    met = read_metrics(results / "speedup" / "metrics.json")
    Ns = np.array(met["n_clients"], dtype=float)
    y = np.array([met["avg_s"][f"N{int(n)}"] for n in Ns])
    fig, axes = new_figure(width=4.6, height=3.4)
    ax = axes[0, 0]
    ax.loglog(Ns, y, "o-", color=COLORS["dream"], label=f"DREAM-R (fitted slope {met['slope']:.2f})")
    for name, c in met.get("control", {}).items():
        yc = np.array([c["avg_s"][f"N{int(n)}"] for n in Ns])
        ax.loglog(Ns, yc, "s:", color=COLORS.get(name, "0.3"),
                  label=f"{LABELS.get(name, name)} (fitted slope {c['slope']:.2f})")
    ax.loglog(Ns, y[0] * Ns[0] / Ns, "--", color="0.5", label="slope -1")
    ax.set_xticks(Ns)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FixedFormatter([f"{int(n)}" for n in Ns]))
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("number of clients N")
    ax.set_ylabel(r"mean of $S(x_t)$ over $t > T/2$")
    ax.set_title(f"IID noisy quadratics, T = {met['rounds']}")
    ax.legend(fontsize=7)
    save_figure(fig, out / "linear_speedup.png")


RATE_VARIANTS = {"dream": ("DREAM-R", "o", "-"), "one_client": ("one-client server (control)", "s", ":"),
                 "const_step": ("constant step c sqrt(N_max/T_min)", "^", "--")}


def _rate_joint(results: Path, out: Path) -> None:
    base = results / "rate_joint"
    met = read_metrics(base / "metrics.json")
    arr = read_arrays(base / "rate.npz")
    Ns, Ts = arr["n_clients"], arr["rounds"]
    NT = np.outer(Ns, Ts)
    fig, axes = new_figure(width=5.2, height=3.8)
    ax = axes[0, 0]
    colors = {"dream": COLORS["dream"], "one_client": "0.35", "const_step": COLORS["fedavg_ls"]}
    for name, (label, marker, style) in RATE_VARIANTS.items():
        if f"{name}__avg_s" not in arr:
            continue
        m = met if name == "dream" else met["control"][name]
        gm = np.exp(np.log(arr[f"{name}__avg_s"]).mean(axis=2))      # geometric mean over seeds
        ax.loglog(NT.ravel(), gm.ravel(), marker, color=colors[name], linestyle="none", markersize=4)
        xs = np.array([NT.min(), NT.max()], dtype=float)
        fit = m["fit_mean"]
        ax.loglog(xs, np.exp(fit["nt_intercept"]) * xs ** fit["nt_exponent"], style, color=colors[name],
                  label=(f"{label}: NT exp. {m['nt_exponent']:.2f}, N exp. {m['n_exponent']:.2f}, "
                         f"T exp. {m['t_exponent']:.2f}"))
    ax.set_xlabel("N T (clients x rounds)")
    ax.set_ylabel(r"mean of $S(x_t)$ over $t < T$ (geometric mean over seeds)")
    ax.set_title(f"Step c sqrt(N/T), c = {met['c']:.3g}; N in {[int(n) for n in Ns]}, T in {[int(t) for t in Ts]}; "
                 f"{met['n_seeds']} seeds", fontsize=7)
    ax.legend(fontsize=6)
    save_figure(fig, out / "rate_joint.png")


def _rho(results: Path, out: Path) -> None:
    met = read_metrics(results / "rho_sweep" / "metrics.json")
    rhos = np.array(met["rhos"])
    keys = [f"r{k}" for k in range(rhos.size)]
    fig, axes = new_figure(ncols=2, width=3.8, height=3.2)
    for ax, series, label in ((axes[0, 0], "lam_dev", r"$|\lambda_{1,T} - 1/2|$"),
                              (axes[0, 1], "dist_ls", r"$\|x_T - x_{LS}\|$")):
        ax.plot(rhos, [met[series][k] for k in keys], "o-", color=COLORS["dream"])
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_yscale("log")
        ax.set_xlabel(r"regulariser $\rho$")
        ax.set_ylabel(label)
    axes[0, 0].set_title(f"Weights at T = {met['rounds']}")
    axes[0, 1].set_title("Distance to uniform scalarisation")
    save_figure(fig, out / "rho_sweep.png")


def _multidigits(results: Path, out: Path) -> None:
    traces = read_arrays(results / "multidigits" / "traces.npz")
    fig, axes = new_figure(width=5.0, height=3.4)
    ax = axes[0, 0]
    for m in METHODS:
        if f"{m}__acc" not in traces:
            continue
        ax.plot(traces[f"{m}__round"], traces[f"{m}__acc"].mean(axis=1), color=COLORS[m], label=LABELS[m])
    ax.set_xlabel("round")
    ax.set_ylabel("mean-task test accuracy (%)")
    ax.set_title("MultiDigits, Dirichlet non-IID clients")
    ax.legend(fontsize=7)
    save_figure(fig, out / "multidigits_accuracy.png")


def _hardware(path: Path) -> str:
    hw = read_metrics(path).get("hardware", {}) if path.exists() else {}
    return f"{hw.get('cpu', 'unknown CPU')}, {hw.get('cores', '?')} cores"


def _weight_diff(value) -> str:
    """A weight difference for the QP table; a solver that returned no solution reads "no solution"."""
    return "no solution" if value is None else f"{value:.2e}"


def _qp_table(results: Path, out: Path) -> None:
    base = results / "qp_timing"
    met = read_metrics(base / "metrics.json")
    tim = read_metrics(base / "timings.json")
    solvers = ["own", *met["solvers"]]
    title = (f"Weight QP: process-CPU microseconds per call, the least of {tim['rounds']} rounds that time the "
             f"solvers of one size in turn, each measurement batching calls to at least {tim['min_seconds']:g} s"
             + (f" (torchjd: Frank-Wolfe to epsilon {met['torchjd']['epsilon']:g})"
                if (met.get("torchjd") or {}).get("epsilon") is not None else "")
             + f"; every call starts from C, BLAS on one thread; hardware: {_hardware(base / 'provenance.json')})")
    rows = []
    for key, t in sorted(tim["us_per_call"].items(), key=lambda kv: tuple(int(v) for v in kv[0].split("x"))):
        row = {"M x d": key.replace("x", " x "), **{f"{s} (us/call)": t[s] for s in solvers},
               "own / cvxpy-Clarabel": f"{t['ratio_own_over_clarabel']:.3g}"}
        row.update({f"max abs weight diff vs own ({s})": _weight_diff(met["max_weight_diff"][key].get(s))
                    for s in met["solvers"]})
        rows.append(row)
    write_markdown_table(pd.DataFrame(rows), out / "qp_timing.md", floatfmt=".4g", title=title)


def _round_cost(results: Path, out: Path) -> None:
    base = results / "multidigits"
    met = read_metrics(base / "metrics.json")
    tim = read_metrics(base / "timings.json")
    cats = sorted({c for v in met["bytes_per_client_round"].values() for c in v})
    rows = []
    for m in [m for m in METHODS if m in met["bytes_per_client_round"]]:
        b = met["bytes_per_client_round"][m]
        rows.append({"method": LABELS[m], "train wall ms / round": f"{1e3 * tim[m]['train_s_per_round']:.3g}",
                     **{f"{c} (B/client/round)": float(b.get(c, 0)) for c in cats},
                     "total up": float(sum(v for c, v in b.items() if c.endswith(".up"))),
                     "total down": float(sum(v for c, v in b.items() if c.endswith(".down")))})
    title = (f"Cost of one MultiDigits round (same model, batch and K; {met['rounds']} rounds; bytes as float32 on the "
             f"wire; hardware: {_hardware(base / 'provenance.json')})")
    write_markdown_table(pd.DataFrame(rows), out / "round_cost.md", floatfmt=".0f", title=title)


def _grid_table(results: Path, out: Path) -> None:
    met = read_metrics(results / "quadratic_grid" / "metrics.json")
    runs = list(met["runs"])
    rows = []
    for M, d in met["grid"]:
        key = f"{M}x{d}"
        rows.append({"M x d": f"{M} x {d}", **{f"{r} sqrt S(x_T)": met["final_sqrt_s"][key][r] for r in runs},
                     **{f"{r} CA distance": met["ca"][key][r] for r in runs},
                     "CA ratio DREAM-R / best baseline": met["ca_ratio"][key]})
    title = (f"Heterogeneous quadratics with more objectives and dimensions (T = {met['rounds']}; sqrt S(x_T) is the "
             "max over instances for DREAM-R runs and the min for the others; CA distance: mean relative distance to "
             "the conflict-avoidant direction over the first rounds, mean over instances)")
    write_markdown_table(pd.DataFrame(rows), out / "quadratic_grid.md", floatfmt=".3g", title=title)


def _pareto(results: Path, out: Path) -> None:
    base = results / "pareto_front"
    met = read_metrics(base / "metrics.json")
    front = read_arrays(base / "front.npz")
    fig, axes = new_figure(width=4.6, height=3.6)
    ax = axes[0, 0]
    L, W = front["losses"], front["preferences"]
    ax.plot(L[:, 0], L[:, 1], "o-", color=COLORS["dream"])
    for (a, b), w in zip(L, W):
        ax.annotate(f"{w[0]:.1f}", (a, b), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("task 1 test loss")
    ax.set_ylabel("task 2 test loss")
    ax.set_title(f"DREAM-R with A = w 1^T (labels: w_1); hypervolume {met['hypervolume']:.4g} "
                 f"(ref {met['hv_reference']})", fontsize=7)
    save_figure(fig, out / "pareto_front.png")


def _ablation(results: Path, out: Path) -> None:
    met = read_metrics(results / "ablation" / "metrics.json")
    frame = pd.DataFrame({"variant": met["variants"], "accuracy": [met["acc"][n] for n in met["variants"]],
                          "s.e.": [met["acc_se"][n] for n in met["variants"]]})
    title = (f"MultiDigits ablations of DREAM-R (mean-task test accuracy in percent, mean of the last evaluations, "
             f"mean +- standard error over seeds {met['seeds']})")
    write_markdown_table(frame, out / "ablation.md", floatfmt=".2f", title=title)


def _conflict(results: Path, out: Path) -> None:
    met = read_metrics(results / "conflict_digits" / "metrics.json")
    traces = read_arrays(results / "conflict_digits" / "traces.npz")
    methods = list(met["acc"])
    fig, axes = new_figure(ncols=2, width=4.4, height=3.4)
    for m in methods:
        style = "--" if m in ("dream_no_cv", "dream_beta0") else "-"
        r = traces[f"{m}__round"]
        axes[0, 0].plot(r, traces[f"{m}__acc"].mean(axis=1), color=COLORS[m], linestyle=style, label=LABELS[m])
        axes[0, 1].plot(np.r_[0, r], traces[f"{m}__cosine"], color=COLORS[m], linestyle=style, label=LABELS[m])
    if "reference__cosine" in traces:
        c = traces["reference__cosine"]
        every = int(met["conflict_reference"]["settings"].get("eval_every", 10))
        rounds = np.minimum(np.arange(c.size) * every, int(met["conflict_reference"]["settings"]["rounds"]))
        axes[0, 1].plot(rounds, c, color="0.5", linestyle=":", label="MultiDigits, FedAvg-LS")
    axes[0, 1].axhline(0.0, color="k", linewidth=0.6)
    axes[0, 0].set_xlabel("round")
    axes[0, 0].set_ylabel("mean-task test accuracy (%), first seed")
    axes[0, 1].set_xlabel("round")
    axes[0, 1].set_ylabel("trunk cosine of the task gradients")
    axes[0, 0].legend(fontsize=6)
    axes[0, 1].legend(fontsize=6)
    save_figure(fig, out / "conflict_digits.png")
    seeds = met["seeds"]
    frame = pd.DataFrame({
        "method": [LABELS[m] for m in methods],
        "task-1 acc": [met["acc"][m][0] for m in methods], "task-2 acc": [met["acc"][m][1] for m in methods],
        "Delta-m%": [met["delta_m"][m] for m in methods],
        "Delta-m% s.e.": [float(np.std(met["delta_m_per_seed"][m], ddof=1) / np.sqrt(len(seeds)))
                          if len(seeds) > 1 else float("nan") for m in methods],
        "hypervolume": [met["hv"][m] for m in methods],
        "mean trunk cosine": [float(np.mean(met["conflict"][m]["mean_cos_per_seed"])) for m in methods],
        "share of negative cosines": [float(np.mean(met["conflict"][m]["frac_negative_per_seed"])) for m in methods]})
    ref = met["stl_acc"]
    title = (f"ConflictDigits, {met['n_clients']} clients, {met['rounds']} rounds, seeds {seeds}: accuracies in percent "
             f"(mean of the last evaluations, mean over seeds), Delta-m% against the single-task references "
             f"({met['reference_method']}; task 1 {ref[0]:.2f}, task 2 {ref[1]:.2f}; lower is better), hypervolume of "
             f"the final test losses w.r.t. {met['hv_reference']} (higher is better)")
    write_markdown_table(frame, out / "conflict_digits.md", floatfmt=".3f", title=title)


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table whose results exist under ``results_dir``."""
    results, out = Path(results_dir), Path(out_dir)
    if (results / "quadratic" / "traces.npz").exists():
        _stationarity(results, out)
        _ca_distance(results, out)
    if (results / "quadratic_grid" / "metrics.json").exists():
        _grid_table(results, out)
    if (results / "speedup" / "metrics.json").exists():
        _speedup(results, out)
    if (results / "rate_joint" / "rate.npz").exists():
        _rate_joint(results, out)
    if (results / "rho_sweep" / "metrics.json").exists():
        _rho(results, out)
    if (results / "multidigits" / "traces.npz").exists():
        _multidigits(results, out)
        _round_cost(results, out)
    if (results / "qp_timing" / "metrics.json").exists():
        _qp_table(results, out)
    if (results / "pareto_front" / "front.npz").exists():
        _pareto(results, out)
    if (results / "ablation" / "metrics.json").exists():
        _ablation(results, out)
    if (results / "conflict_digits" / "traces.npz").exists():
        _conflict(results, out)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
