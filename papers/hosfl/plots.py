"""Figures and tables of the hosfl reproduction, drawn from saved results (never recomputed).

``python -m papers.hosfl.plots --results results/quick/hosfl --out figures/quick/hosfl --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, save_figure
from shared.results import read_arrays, read_metrics, write_markdown_table

__all__ = ["make_figures", "LABELS"]

LABELS = {"sfl_fo_tau1": "SFL-FO (tau=1)", "sfl_fo_tau10": "SFL-FO (tau=10)", "hosfl": "HO-SFL",
          "frozen": "frozen client", "sfl_zo": "SFL-ZO (pure ZO)", "mu_splitfed": "MU-SplitFed",
          "sfl_fo": "SFL-FO", "hosfl_stragglers30": "HO-SFL, 30% stragglers (replay)",
          "hosfl_decoupled": "control: HO-SFL, scalars decoupled", "fsl_sage": "FSL-SAGE (reconstructed)",
          "hosfl_grad": "control: HO-SFL step with gradients enabled",
          "hosfl_stragglers30_no_catchup": "control: 30% stragglers, no catch-up (rounds lost)",
          "inference": "inference only (no-grad forward)"}
CATEGORY_LABELS = {"cut.act_up": "cut activations up", "cut.labels_up": "labels up",
                   "cut.grad_down": "cut gradients down", "cut.scalar_down": "cut scalars down",
                   "weights.up": "client weights / scalars up", "weights.down": "client weights / scalars down",
                   "seeds.down": "seeds down"}
COLORS = method_colors(["hosfl", "sfl_fo_tau1", "sfl_fo_tau10", "frozen", "sfl_zo", "mu_splitfed"])
COLORS["sfl_fo"] = COLORS["sfl_fo_tau1"]
COLORS["hosfl_stragglers30"] = COLORS["sfl_fo_tau10"]
COLORS["hosfl_decoupled"] = "0.6"
COLORS["hosfl_stragglers30_no_catchup"] = "0.6"
COLORS["fsl_sage"] = COLORS["sfl_fo_tau10"]
PANELS = (("iid", "IID, random init"), ("dirichlet", "Dirichlet 0.1, random init"), ("pca", "IID, PCA init"),
          ("adamw", "IID, random init, AdamW"), ("straggler_rate", "IID, 30% stragglers a round"),
          ("synthetic", "make_classification, 256-256 client"))


def _accuracy(results: Path, out: Path) -> None:
    present = [(k, t) for k, t in PANELS if (results / k / "metrics.json").exists()]
    ncols = min(3, max(1, len(present)))
    nrows = max(1, -(-len(present) // ncols))
    fig, axes = new_figure(ncols=ncols, nrows=nrows, width=4.0, height=3.2)
    for ax in axes.ravel()[len(present):]:
        ax.set_visible(False)
    for ax, (key, title) in zip(axes.ravel(), present):
        met = read_metrics(results / key / "metrics.json")
        curves = read_arrays(results / key / "curves.npz")
        per_round = met["n_clients"] * met["batch_size"]
        for name, m in met["runs"].items():
            r, a = curves[f"{name}__s0__round"], curves[f"{name}__s0__acc"]
            label = LABELS.get(name, name) + (f" lr={m['client_lr']:g}" if "lr_grid" in m else "")
            ax.plot(r * per_round, a, color=COLORS.get(name), label=label)
        ax.set_xlabel("processed samples (round x K x B)")
        ax.set_ylabel("test accuracy")
        ax.set_ylim(0.0, 1.0)
        ax.set_title(title)
        ax.legend(fontsize=6)
    save_figure(fig, out / "accuracy_vs_samples.png")


def _communication(results: Path, out: Path) -> None:
    met = read_metrics(results / "iid" / "metrics.json")
    rows = []
    for name, m in met["runs"].items():
        if name == "hosfl_decoupled":   # a negative control, not a method
            continue
        row = {"method": LABELS.get(name, name)}
        row.update({k: int(round(v)) for k, v in m["bytes_per_client_round"].items()})
        row["total"] = int(round(sum(m["bytes_per_client_round"].values())))
        rows.append(row)
    frame = pd.DataFrame(rows)
    write_markdown_table(frame, out / "communication.md",
                         title=f"Bytes per client per round (float32 = 4 B, IID run; d_c = "
                               f"{met['runs']['hosfl']['client_dim']}, B = {met['batch_size']})")
    cats = [c for c in frame.columns if c not in ("method", "total")]
    fig, axes = new_figure(width=7.0, height=3.4)
    ax = axes[0, 0]
    colors = method_colors(cats)
    x = np.arange(len(frame))
    w = 0.8 / len(cats)
    for i, c in enumerate(cats):
        vals = frame[c].to_numpy(dtype=float)
        ax.bar(x + (i - (len(cats) - 1) / 2) * w, np.where(vals > 0, vals, np.nan), width=w,
               label=CATEGORY_LABELS.get(c, c),
               color=colors[c])
    ax.set_xticks(x, frame["method"])
    ax.set_yscale("log")
    ax.set_ylim(bottom=1)
    ax.set_ylabel("bytes per client per round (log)")
    ax.tick_params(axis="x", labelsize=7)
    for label in ax.get_xticklabels():
        label.set_rotation(25)
        label.set_horizontalalignment("right")
    ax.legend(fontsize=6, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save_figure(fig, out / "communication.png")


def _variance(results: Path, out: Path) -> None:
    met = read_metrics(results / "estimator" / "metrics.json")
    h2 = met["h2"]
    P = np.array(sorted(int(k) for k in h2["rel_sq_error"]))
    vals = np.array([h2["rel_sq_error"][str(p)] for p in P])
    se = np.array([h2["rel_sq_error_se"][str(p)] for p in P])
    fig, axes = new_figure()
    ax = axes[0, 0]
    ax.errorbar(P, vals, yerr=2 * se, marker="o", color=COLORS["hosfl"], label="measured (mean, 2 SE)")
    Pl = np.logspace(np.log10(P.min()), np.log10(P.max()), 50)
    ax.plot(Pl, (met["d_c"] + 1) / Pl, "--", color="0.4", label="(d_c + 1)/P")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("perturbations P")
    ax.set_ylabel(r"$E\|\hat g - g\|^2 / \|g\|^2$")
    ax.set_title(f"identity client, d_c = {met['d_c']}, {h2['draws']} draws")
    ax.legend()
    save_figure(fig, out / "zo_variance.png")


def _alignment(results: Path, out: Path) -> None:
    met = read_metrics(results / "iid" / "metrics.json")
    al = read_arrays(results / "iid" / "curves.npz")["hosfl__s0__alignment"]
    fig, axes = new_figure(width=5.0)
    ax = axes[0, 0]
    ax.plot(np.arange(1, al.size + 1), al, color=COLORS["hosfl"], linewidth=0.6, alpha=0.6, label="cos per round")
    k = max(1, al.size // 30)
    ax.plot(np.arange(k, al.size + 1), np.convolve(al, np.ones(k) / k, mode="valid"), color="k", linewidth=1.2,
            label=f"running mean ({k} rounds)")
    ax.axhline(met["runs"]["hosfl"]["alignment_theory"], linestyle="--", color="0.4", label="sqrt(P/(d_c+P+1))")
    ax.axhline(met["runs"]["hosfl"]["alignment_theory"] * met["runs"]["hosfl"]["alignment_finite_p_factor"],
               linestyle=":", color="0.2", label="finite-P: sqrt(2) G((P+1)/2) / (G(P/2) sqrt(P)) x that")
    ax.set_xlabel("round")
    ax.set_ylabel(r"cos($\hat g$, g)")
    ax.set_title("HO-SFL estimate vs true client gradient (IID)")
    ax.legend(fontsize=7)
    save_figure(fig, out / "alignment.png")


def _memory(results: Path, out: Path) -> None:
    met = read_metrics(results / "memory" / "metrics.json")
    frame = pd.DataFrame([{"method": LABELS.get(k, k), "saved-for-backward bytes": int(v)}
                          for k, v in met["saved_bytes"].items()])
    write_markdown_table(frame, out / "memory.md",
                         title=f"Tensors saved for backward during one client step (B = {met['batch_size']}, "
                               f"cut_dim = {met['cut_dim']}; 4 B cut_dim = {met['activation_bytes']} bytes)")


def _performance(results: Path, out: Path) -> None:
    perf = read_metrics(results / "performance" / "metrics.json")
    mem = read_metrics(results / "memory" / "metrics.json") if (results / "memory" / "metrics.json").exists() else None
    comm = read_metrics(results / "iid" / "metrics.json") if (results / "iid" / "metrics.json").exists() else None
    runs = {"hosfl": "hosfl", "sfl_fo": "sfl_fo_tau1", "sfl_zo": "sfl_zo"}
    rows = []
    for m, t in perf["timing"].items():
        row = {"method": LABELS.get(m, m), "ms per round": 1e3 * t["round_s"], "client ms per round": 1e3 * t["client_s"],
               "round time / SFL-FO": t["round_s"] / perf["timing"]["sfl_fo"]["round_s"],
               "client time / SFL-FO": t["client_s"] / perf["timing"]["sfl_fo"]["client_s"]}
        if comm is not None and runs.get(m) in comm["runs"]:
            row["bytes up+down per client per round"] = int(round(sum(comm["runs"][runs[m]]["bytes_per_client_round"].values())))
        if mem is not None:
            row["saved-for-backward bytes"] = int(mem["saved_bytes"].get(m, 0))
        rows.append(row)
    write_markdown_table(pd.DataFrame(rows), out / "performance.md",
                         title=f"Same model, batches and machine; best of {perf['repeats']} x {perf['rounds_timed']} "
                               f"rounds, one thread; CPU: {perf['cpu']}")


def _p_sweep(results: Path, out: Path) -> None:
    met = read_metrics(results / "p_sweep" / "metrics.json")
    P = np.array(met["P_list"])
    r = np.array([met["rounds_to_90_censored"][str(p)] for p in P])
    acc = np.array([met["final_acc"][str(p)] for p in P])
    fig, axes = new_figure(ncols=2)
    ax = axes[0, 0]
    ax.plot(P, r, marker="o", color=COLORS["hosfl"], label="HO-SFL")
    ax.axhline(met["rounds"], linestyle=":", color="0.5", label="horizon (never = one evaluation past it)")
    ax.set_xscale("log")
    ax.set_xlabel("perturbations P")
    ax.set_ylabel("rounds to 90% test accuracy")
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    ax.plot(P, acc, marker="o", color=COLORS["hosfl"], label="HO-SFL")
    for method, c in met.get("control", {}).items():
        Pc = sorted(int(p) for p in c["final_acc"])
        ax.plot(Pc, [c["final_acc"][str(p)] for p in Pc], marker="s", linestyle="--", color=COLORS.get(method, "0.6"),
                label=LABELS.get(method, method))
    ax.set_xscale("log")
    ax.set_xlabel("perturbations P")
    ax.set_ylabel("final test accuracy")
    ax.legend(fontsize=7)
    save_figure(fig, out / "rounds_vs_P.png")


def _width_sweep(results: Path, out: Path) -> None:
    met = read_metrics(results / "width_sweep" / "metrics.json")["final_acc"]
    fig, axes = new_figure(ncols=2)
    for ax, key in zip(axes[0], ("cut_dim", "hidden_dim")):
        widths = sorted(met[key], key=int)
        methods = [m for m in ("hosfl", "sfl_zo", "frozen") if all(m in met[key][w] for w in widths)]
        for method in methods:
            vals = [np.nan if met[key][w][method] is None else met[key][w][method] for w in widths]
            ax.plot([int(w) for w in widths], vals, marker="o", color=COLORS[method], label=LABELS[method])
        ax.set_xscale("log", base=2)
        ax.set_ylim(0.0, 1.0)
        ax.set_xlabel(key + (" (client width)" if key == "cut_dim" else " (server width)"))
        ax.set_ylabel("final test accuracy")
        ax.legend()
    save_figure(fig, out / "width_sweep.png")


def _memory_measured(results: Path, out: Path) -> None:
    met = read_metrics(results / "memory_measured" / "metrics.json")
    ref = met["peak_mib_mean"]["sfl_fo"]
    frame = pd.DataFrame([{"method": LABELS.get(k, k), "peak growth, MiB (mean)": v,
                           "min over repeats": min(met["peak_mib"][k]), "max over repeats": max(met["peak_mib"][k]),
                           "/ SFL-FO": v / ref} for k, v in met["peak_mib_mean"].items()])
    write_markdown_table(frame, out / "memory_measured.md",
                         title=f"Measured peak memory growth of one client step ({met['measurement']}; device "
                               f"{met['device']}; {met['depth']} blocks Linear-LayerNorm-GELU of width {met['width']}, "
                               f"d_c = {met['d_c']}, B = {met['batch_size']}, P = {met['P']}, {met['repeats']} repeats)")


def _pretrained(results: Path, out: Path) -> None:
    met = read_metrics(results / "pretrained" / "metrics.json")
    curves = read_arrays(results / "pretrained" / "curves.npz")
    rows = []
    for name, m in met["runs"].items():
        rows.append({"method": LABELS.get(name, name),
                     "client lr": f"{m['client_lr']:g}" if m.get("client_lr") is not None else "-",
                     "final accuracy (mean)": m["final_acc"],
                     "SE": m["final_acc_se"], "bytes per client per round": int(round(sum(m["bytes_per_client_round"].values()))),
                     "bytes per client, whole run": int(round(m["bytes_total_per_client"])),
                     f"bytes per client to {met['target_accuracy']:g} (mean)": float(np.mean(m["bytes_to_target_per_seed"])),
                     "seeds reaching it": int(sum(m["reached_target"]))})
    write_markdown_table(pd.DataFrame(rows), out / "pretrained.md",
                         title=f"Pretrained CNN client (d_c = {met['client_dim']}, pre-trained on classes "
                               f"{met['pretrain']['classes']}), {met['common']['rounds']} rounds, "
                               f"{len(met['seeds'])} seeds; float32 = 4 B"
                               + (f"; client lrs chosen on tuning seeds {met['tuning_seeds']} (held-out training rows)"
                                  if met.get("tuning_seeds") else ""))
    fig, axes = new_figure(width=5.0)
    ax = axes[0, 0]
    for name in met["runs"]:
        b, a = curves[f"{name}__s0__bytes"], curves[f"{name}__s0__acc"]
        ax.plot(b, a, marker="o", markersize=3, color=COLORS.get(name), label=LABELS.get(name, name))
    ax.axhline(met["target_accuracy"], linestyle=":", color="0.5", label="target")
    ax.set_xscale("log")
    ax.set_xlabel("bytes per client (cumulative, log)")
    ax.set_ylabel("test accuracy")
    ax.set_title("pretrained CNN client, seed 0")
    ax.legend(fontsize=7)
    save_figure(fig, out / "pretrained.png")


def _lrs_used(run: dict) -> str:
    """", client lr .., server lr .." of a run's metrics, each marked "(tuned)" when chosen on the tuning seeds."""
    tuned = run.get("tuning", {})
    return "".join(f", {what} lr {run[key]:g}" + (" (tuned)" if key in tuned else "")
                   for key, what in (("client_lr", "client"), ("server_lr", "server")) if key in run)


def _minilm_split(results: Path, out: Path) -> None:
    path = results / "minilm_split" / "metrics.json"
    if not path.exists():
        return
    met = read_metrics(path)
    mem, ref = met["memory"], met["memory"]["peak_mib_mean"]["sfl_fo"]
    rows = [{"table": "client step memory", "method": LABELS.get(k, k), "value": f"{v:.1f} MiB",
             "detail": f"min {min(mem['peak_mib'][k]):.1f}, max {max(mem['peak_mib'][k]):.1f} over "
                       f"{mem['processes']} processes; within a process at most "
                       f"{mem['within_process_range_mib'][k]:.1f} apart",
             "/ SFL-FO": f"{v / ref:.3f}"} for k, v in mem["peak_mib_mean"].items()]
    for name, r in met["runs"].items():
        rows.append({"table": "test accuracy", "method": LABELS.get(name, name),
                     "value": f"{r['final_acc']:.4f} +- {r['final_acc_se']:.4f}",
                     "detail": f"min {min(r['final_acc_per_seed']):.4f}, max {max(r['final_acc_per_seed']):.4f} over seeds"
                               + _lrs_used(r),
                     "/ SFL-FO": ""})
    for name, r in met["runs"].items():
        b = r["bytes_per_client_round"]
        rows.append({"table": "bytes per client per round", "method": LABELS.get(name, name),
                     "value": str(int(round(r["bytes_per_client_round_total"]))),
                     "detail": ", ".join(f"{k} {int(round(v))}" for k, v in b.items() if v),
                     "/ SFL-FO": ""})
    write_markdown_table(pd.DataFrame(rows), out / "minilm_split.md",
                         title=f"Pretrained MiniLM client ({met['model']}, {met['client_layers']} client and "
                               f"{met['server_layers']} server layers, d_c = {met['client_dim']}): peak RSS growth of "
                               f"one client step in a forked child (B = {mem['batch_size']} sentences of "
                               f"{mem['seq_len']} tokens, P = {mem['P']}, {mem['repeats']} forked repeats in each of "
                               f"{mem['processes']} processes); test accuracy "
                               f"(mean +- s.e. over {len(met['seeds'])} seeds, {met['common']['rounds']} rounds); "
                               f"bytes per client per round (non-zero categories)")


def make_figures(results_dir, out_dir, scale: str) -> None:
    results, out = Path(results_dir), Path(out_dir)
    _accuracy(results, out)
    _communication(results, out)
    _variance(results, out)
    _alignment(results, out)
    _memory(results, out)
    _performance(results, out)
    _p_sweep(results, out)
    _width_sweep(results, out)
    _memory_measured(results, out)
    _pretrained(results, out)
    _minilm_split(results, out)


if __name__ == "__main__":
    main(make_figures)
