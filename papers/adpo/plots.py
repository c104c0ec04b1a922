"""Figures and tables of the adpo reproduction, drawn from saved results (never recomputed).

``python -m papers.adpo.plots --results results/quick/adpo --out figures/quick/adpo --scale quick``
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import atomic_path, atomic_write_text, markdown_table, read_metrics, read_tidy

__all__ = ["make_figures", "LABELS"]

ORDER = ["dpo", "adpo_token", "adpo_adaptive_m4", "adpo_static_k2", "adpo_static_k4", "adpo_static_kinf",
         "adpo_adaptive_m1", "adpo_adaptive_m2", "adpo_adaptive_m8", "adpo_token_mean", "adpo_static_k2_mean",
         "adpo_static_k4_mean", "adpo_adaptive_m2_mean", "adpo_adaptive_m4_mean", "adpo_adaptive_m8_mean",
         "cdpo_critical", "cadpo_critical", "cdpo_conservative", "cadpo_conservative"]
LABELS = {"dpo": "DPO", "adpo_token": "ADPO (token)", "adpo_adaptive_m4": "ADPO (adaptive m=4)",
          "cdpo_critical": "cDPO (critical)", "cadpo_critical": "cADPO (critical)",
          "cdpo_conservative": "cDPO (conservative)", "cadpo_conservative": "cADPO (conservative)",
          "trl_dpo": "TRL DPOTrainer (sigmoid)"}
COLORS = method_colors(ORDER)


def _label(m):
    return LABELS.get(m, m.replace("adpo_", "ADPO ").replace("_", " "))


def _methods(frame):
    present = list(dict.fromkeys(frame["method"]))
    return [m for m in ORDER if m in present] + [m for m in present if m not in ORDER]


def _em_vs_step(tidy, out):
    tasks = list(dict.fromkeys(tidy["task"]))
    fig, axes = new_figure(ncols=len(tasks), width=4.4, height=3.3)
    for ax, task in zip(axes[0], tasks):
        sub = tidy[(tidy["task"] == task) & (tidy["metric"] == "exact_match")]
        for m in _methods(sub):
            g = sub[sub["method"] == m].groupby("step")["value"]
            mean, lo, hi = g.mean(), g.min(), g.max()
            plot_band(ax, mean.index, 100 * mean.values, 100 * lo.values, 100 * hi.values, label=_label(m),
                      color=COLORS.get(m), marker="o")
        ax.set_xlabel("preference step")
        ax.set_ylabel("held-out exact match (%)")
        ax.set_title(f"task {task}: mean, min-max over runs (SFT seeds x seeds)", fontsize=8)
        ax.legend(fontsize=6)
    save_figure(fig, out / "em_vs_step.png")


def _kl_vs_em(tidy, out):
    sub = tidy[tidy["metric"].isin(["exact_match", "kl"])]
    last = sub[sub["step"] == sub["step"].max()]
    index = ["task", "method", "seed"] + (["sft_seed"] if "sft_seed" in last.columns else [])
    wide = last.pivot_table(index=index, columns="metric", values="value").reset_index()
    fig, axes = new_figure(width=4.6, height=3.4)
    ax = axes[0, 0]
    markers = dict(zip(dict.fromkeys(wide["task"]), "osD^"))
    for m in _methods(wide):
        w = wide[wide["method"] == m]
        for task, wt in w.groupby("task"):
            ax.scatter(wt["kl"], 100 * wt["exact_match"], color=COLORS.get(m), marker=markers[task], s=22,
                       label=f"{_label(m)} ({task})")
    ax.set_xlabel("KL(pi || pi_ref) per token, final step")
    ax.set_ylabel("held-out exact match (%)")
    ax.set_title("one point per run (method, SFT seed, seed)", fontsize=8)
    ax.legend(fontsize=6)
    save_figure(fig, out / "kl_vs_em.png")


def _grad_share(tidy, out):
    sub = tidy[tidy["metric"] == "grad_share"]
    tasks = list(dict.fromkeys(sub["task"]))
    fig, axes = new_figure(ncols=len(tasks), width=4.4, height=3.3)
    for ax, task in zip(axes[0], tasks):
        st = sub[sub["task"] == task]
        for m in _methods(st):
            g = st[st["method"] == m].groupby("step")["value"].mean()
            ax.plot(g.index, g.values, color=COLORS.get(m), label=_label(m))
        ax.set_xlabel("preference step")
        ax.set_ylabel("error-token share of ||dL/d rho||^2")
        ax.set_title(f"task {task}: mean over runs and pairs", fontsize=8)
        ax.legend(fontsize=6)
    save_figure(fig, out / "grad_share.png")


def _granularity(metrics, out):
    fig, axes = new_figure(ncols=2, width=4.2, height=3.2)
    for task in [t for t in metrics if isinstance(metrics[t], dict) and "methods" in metrics[t]]:
        methods = metrics[task]["methods"]
        for ax, fam, key in ((axes[0, 0], "static_k", "k"), (axes[0, 1], "adaptive_m", "m")):
            for red, style in (("", "-"), ("_mean", "--")):
                xs, ys = [], []
                for name, v in methods.items():
                    if name.startswith(f"adpo_{fam}") and name.endswith(red) and (red or not name.endswith("_mean")):
                        val = name[len(f"adpo_{fam}"):len(name) - len(red) if red else None]
                        xs.append(64 if val == "inf" else int(val))
                        ys.append(100 * v["exact_match"]["mean"])
                if fam == "static_k" and "adpo_token" + red in methods:
                    xs.append(1), ys.append(100 * methods["adpo_token" + red]["exact_match"]["mean"])
                if xs:
                    o = np.argsort(xs)
                    ax.plot(np.array(xs)[o], np.array(ys)[o], style, marker="o",
                            label=f"{task}, {'mean' if red else 'sum'}")
            ax.set_xscale("log", base=2)
            ax.set_xlabel(f"{key} ({'window; 64 = inf' if key == 'k' else 'segments'})")
            ax.set_ylabel("exact match (%)")
    axes[0, 0].set_title("static window k", fontsize=8)
    axes[0, 1].set_title("adaptive m segments", fontsize=8)
    axes[0, 1].legend(fontsize=6)
    save_figure(fig, out / "granularity.png")


def _summary(results, metrics, out):
    prov = read_metrics(results / "train" / "provenance.json")
    sps = prov.get("steps_per_s", {})
    rows = []
    for task in [t for t in metrics if isinstance(metrics[t], dict) and "methods" in metrics[t]]:
        ref = metrics[task]["reference"]
        rows.append({"task": task, "method": "SFT reference", "exact_match_%": 100 * ref["exact_match"],
                     "exact_match_se": 100 * ref.get("exact_match_se", 0.0), "pref_acc_%": float("nan"),
                     "kl_per_token": ref["kl"], "steps_per_s": float("nan")})
        for m, v in metrics[task]["methods"].items():
            rows.append({"task": task, "method": _label(m), "exact_match_%": 100 * v["exact_match"]["mean"],
                         "exact_match_se": 100 * v["exact_match"]["se"], "pref_acc_%": 100 * v["pref_acc"]["mean"],
                         "kl_per_token": v["kl"]["mean"], "steps_per_s": sps.get(f"{task}.{m}", float("nan"))})
    frame = pd.DataFrame(rows)
    with atomic_path(out / "summary.csv") as tmp:
        frame.to_csv(tmp, index=False, float_format="%.6g")
    sft_seeds = metrics.get("sft_seeds", [0])
    title = (f"Held-out results after {metrics['steps']} preference steps ({metrics.get('pairs', 'offline')} "
             f"pairs, lr {metrics['lr']:g}, beta {metrics['beta']:g}; mean and standard error over SFT seeds "
             f"{sft_seeds}, each the mean over preference seeds {metrics['seeds']}; steps/s: training only, without "
             "the evaluations, wall clock on a shared machine)")
    shown = frame.astype(object).where(frame.notna(), "-")
    table = markdown_table(shown, floatfmt=".4g", title=title)
    atomic_write_text(out / "summary.md", table + _llm_summary(results))


def _llm_summary(results) -> str:
    """Markdown text for the SmolLM2 + LoRA arm (``llm`` experiment), or a line saying it was not run."""
    met_path = results / "llm" / "metrics.json"
    met = read_metrics(met_path) if met_path.exists() else {"run": False}
    if not met.get("run"):
        return ("\nSmolLM2-135M-Instruct + LoRA arm: not run at this scale (configured at full scale only, and left out "
                "there when no GPU is lent: `not_run` in claims.yaml).\n")
    rows = []
    for task, v in met.items():
        if not (isinstance(v, dict) and "methods" in v):
            continue
        rows.append({"task": task, "method": "pretrained reference",
                     "exact_match_%": 100 * v["reference"]["exact_match"], "exact_match_se": "-", "pref_acc_%": "-"})
        rows += [{"task": task, "method": _label(m), "exact_match_%": 100 * r["exact_match"]["mean"],
                  "exact_match_se": 100 * r["exact_match"]["se"], "pref_acc_%": 100 * r["pref_acc"]["mean"]}
                 for m, r in v["methods"].items()]
    title = (f"SmolLM2-135M-Instruct + LoRA, held-out exact match after {met['steps']} steps (mean over seeds "
             f"{met['seeds']})")
    return "\n" + markdown_table(pd.DataFrame(rows), floatfmt=".4g", title=title)


def _performance(results, out):
    base = results / "perf"
    met, tim = read_metrics(base / "metrics.json"), read_metrics(base / "timings.json")
    hw = read_metrics(base / "provenance.json").get("hardware", {})
    title = (f"{met['steps']} training steps each, {tim.get('repeats', 1)} repeats, batch {met['batch']} pairs, "
             f"same model, data, order, AdamW and lr, TRL in float32 (hardware: {hw.get('cpu', 'unknown')}, "
             f"{hw.get('cores', '?')} cores, one torch thread; CPU seconds per training step, median over steps "
             "2..n of each repeat, on a shared machine)")
    speed = pd.DataFrame([{"trainer": _label(name), "steps/s (CPU, median over repeats)": f"{v:.3g}",
                           "final loss": f"{met['final_loss'].get(name, float('nan')):.6g}"}
                          for name, v in tim["steps_per_s"].items()])
    ratios = pd.DataFrame([{"ratio of steps/s": name.replace("_over_", " / "), "median over repeats": v["median"],
                            "range over repeats": f"{v['min']:.3g} - {v['max']:.3g}"}
                           for name, v in tim["ratios"].items()])
    agree = met["trl_agree"]["max_rel_diff"]
    checks = [{"cross-check with TRL": "max relative difference of per-step losses, our DPO vs TRL",
               "value": f"not evaluated ({met['trl_agree']['error']})" if agree is None else f"{agree:.2e}"}]
    checks += [{"cross-check with TRL": f"step-1 gradient, relative difference from float64 DPO: "
                                        f"{name.replace('_', ' ')}", "value": f"{v:.2e}"}
               for name, v in (met["trl_agree"].get("step1_grad_rel_diff") or {}).items()]
    path = out / "performance.md"
    tables = [markdown_table(speed, title=title),
              markdown_table(ratios, floatfmt=".3g"),
              markdown_table(pd.DataFrame(checks))]
    atomic_write_text(path, "\n".join(tables))


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table whose results exist under ``results_dir``."""
    results, out = Path(results_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if (results / "train" / "metrics.json").exists():
        tidy = read_tidy(results / "train" / "results.csv")
        metrics = read_metrics(results / "train" / "metrics.json")
        _em_vs_step(tidy, out)
        _kl_vs_em(tidy, out)
        _grad_share(tidy, out)
        _summary(results, metrics, out)
        if scale == "full":
            _granularity(metrics, out)
    if (results / "perf" / "metrics.json").exists():
        _performance(results, out)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
