"""Figures and tables of the sacopt reproduction, drawn from saved results (never recomputed).

``python -m papers.sacopt.plots --results results/quick/sacopt --out figures/quick/sacopt --scale quick``.
Every number from the scripted stand-ins is labelled "SCRIPTED STAND-IN (not an LLM)".
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shared.lm.backends import SCRIPTED_LABEL
from shared.plotting import main, method_colors, new_figure, save_figure
from shared.results import atomic_write_text, markdown_table, read_arrays, read_metrics

__all__ = ["make_figures"]

PIPELINES = ("forward-only", "standard", "sacopt-prompt", "sacopt-math")
COLORS = method_colors(PIPELINES)


def _residual(results: Path, out: Path) -> None:
    arr = read_arrays(results / "mechanism" / "residual.npz")
    m = read_metrics(results / "mechanism" / "metrics.json")
    t = np.arange(arr["measured"].size)
    fig, axes = new_figure(width=4.6, height=3.4)
    ax = axes[0, 0]
    ax.plot(t, arr["theory"], color="0.3", label=f"q(1-p)^t, q={m['q']}, p={m['p']}")
    ax.plot(t, arr["measured"], "o", color=COLORS["sacopt-prompt"], label="measured (pooled seeds)")
    ax.set_xlabel("backward iteration t")
    ax.set_ylabel("faulty-constraint fraction")
    ax.set_title(SCRIPTED_LABEL, fontsize=8)
    ax.legend(fontsize=7)
    save_figure(fig, out / "residual_vs_iter.png")


def _wrong_rate(results: Path, out: Path) -> None:
    m = read_metrics(results / "mechanism" / "metrics.json")
    fig, axes = new_figure(width=5.2, height=3.4)
    ax = axes[0, 0]
    kinds = ("wrong", "infeasible", "crash")
    width = 0.2
    for k, pipe in enumerate(PIPELINES):
        vals = [m["rates"][pipe][kd] for kd in kinds]
        ax.bar(np.arange(len(kinds)) + (k - 1.5) * width, vals, width, color=COLORS[pipe], label=pipe)
    ax.set_xticks(np.arange(len(kinds)), ["wrong answer", "infeasible/unbounded", "crash"])
    ax.set_ylabel(f"rate over {m['n_problems']} generated problems")
    ax.set_title(f"{SCRIPTED_LABEL}; q={m['q']}, q_crash={m['q_crash']}, p={m['p']}", fontsize=7)
    ax.legend(fontsize=7)
    save_figure(fig, out / "wrong_rate.png")


def _cosine(results: Path, out: Path) -> None:
    arr = read_arrays(results / "embedding" / "cosines.npz")
    m = read_metrics(results / "embedding" / "metrics.json")
    fig, axes = new_figure(width=4.6, height=3.4)
    ax = axes[0, 0]
    bins = np.linspace(min(0.3, float(arr["fault"].min())), 1.0, 36)
    ax.hist(arr["consistent"], bins=bins, alpha=0.6, label="consistent pairs", color="tab:green")
    ax.hist(arr["fault"], bins=bins, alpha=0.6, label="silent-fault pairs", color="tab:red")
    ax.axvline(m["threshold"], color="k", linestyle="--", label=f"threshold {m['threshold']}")
    ax.set_xlabel("MiniLM cosine(anchor, back-translation)")
    ax.set_title("back-translations: template renderings of the stand-in (not an LLM)", fontsize=7)
    ax.set_ylabel("pairs")
    ax.legend(fontsize=7)
    save_figure(fig, out / "cosine_hist.png")


def _fmt(v, spec=".3g"):
    return "n/a" if v is None else format(v, spec) if isinstance(v, float) else str(v)


def _datasets(results: Path, out: Path) -> None:
    d = read_metrics(results / "benchmarks" / "metrics.json")["datasets"]
    llm = read_metrics(results / "llm" / "metrics.json")
    path = out / "datasets.md"
    counts = pd.DataFrame([
        [name, f"skipped: {s['skipped']}", "", "", "", ""] if "skipped" in s else
        [name, s["n_items"], s["n_loaded"], s["n_no_best"], s["n_integer_answer"], s["n_asks_rounding"]]
        for name, s in d.items()],
        columns=["dataset", "items", "loaded", "'No Best Solution'", "integer answers", "asks rounding"])
    parts = ["# Benchmarks: items, answer types and accuracy per pipeline\n", markdown_table(counts)]
    aud = read_metrics(results / "benchmarks" / "metrics.json").get("complexor_audit", {})
    parts.append("## ComplexOR audit: project reference formulations (from gt_model.txt) vs recorded outputs\n")
    if aud.get("rows"):
        audit = pd.DataFrame([{"problem": r["problem"], "reference (HiGHS)": _fmt(r["reference"], ".10g"),
                               "recorded": _fmt(r["recorded"], ".10g"), "status": r["status"],
                               "match": "yes" if r["match"] else "NO"} for r in aud["rows"]])
        parts += [f"Reproduced within rel {aud['rel_tol']:g}: {aud['n_reproduced']} of {aud['n_with_gt_model']} "
                  f"(HiGHS and CBC agree on every model: {aud['backends_agree']}).\n", markdown_table(audit)]
    else:
        parts.append(f"Not evaluated: {aud.get('skipped', 'no audit in the results')}.\n")
    info = llm.get("backend", {})
    parts.append(f"LLM backend: {llm['llm_backend']} (a language model: "
                 f"{'yes' if info.get('is_real_llm') else 'no'}).\n")
    if llm["llm_backend"] == "none":
        parts.append("Accuracy: not evaluated: no LLM backend (set REPRO_LLM_BACKEND=openai or replay).\n")
    else:
        accuracy = [[name, *(_fmt(acc[p]) for p in PIPELINES), _fmt(llm["diff"][name])]
                    for name, acc in llm["accuracy"].items()]
        if llm.get("complexor_reproducible"):
            acc = llm["complexor_reproducible"]
            accuracy.append(["complexor (reproducible subset)", *(_fmt(acc[p]) for p in PIPELINES), ""])
        parts.append(markdown_table(pd.DataFrame(accuracy, columns=["dataset", *PIPELINES,
                                                                 "SAC-Opt - forward (points)"])))
        abl = (llm.get("ablation") or {}).get("accuracy")
        if abl:
            parts.append("Ablation on NL4Opt (Table 2): accuracy full " + _fmt(abl["full"]) + ", without debugging "
                         + _fmt(abl["no_debug"]) + ", without semantic correction (= forward-only) "
                         + _fmt(abl["no_semantic"]) + ".\n")
    pl = llm.get("plumbing", {})
    parts.append("## SmolLM2 plumbing check (local backend; NOT an accuracy result)\n")
    if "skipped" in pl or not pl:
        parts.append(f"Not run at this scale: {pl.get('skipped', 'no plumbing entry in the results')}.\n")
    else:
        plumbing = pd.DataFrame([{"pipeline": name, "accuracy": _fmt(pl[name]["accuracy"]),
                                  "LLM calls": f"{pl[name]['calls_per_problem']:.1f}",
                                  "tokens": f"{pl[name]['tokens_per_problem']:.0f}",
                                  "outcomes": ", ".join(f"{k} {v}" for k, v in pl[name]["status_counts"].items())}
                                 for name in ("forward-only", "sacopt-prompt")])
        parts += [f"Backend {pl['backend']}, {pl['n_problems']} generated problems, at most {pl['max_new_tokens']} new "
                  "tokens per call.\n", markdown_table(plumbing)]
    atomic_write_text(path, "\n".join(parts))


def _cost(results: Path, out: Path) -> None:
    m = read_metrics(results / "mechanism" / "metrics.json")
    frame = pd.DataFrame([{"pipeline": p, "LLM calls": f"{m['cost'][p]['calls_per_problem']:.2f}",
                           "tokens": f"{m['cost'][p]['tokens_per_problem']:.0f}",
                           "backward rounds": f"{m['cost'][p]['mean_rounds']:.2f}"} for p in PIPELINES])
    path = out / "cost.md"
    atomic_write_text(path, f"# Cost per problem ({SCRIPTED_LABEL}; calls and whitespace tokens of the stand-in)\n\n"
                      + markdown_table(frame))


def _performance(results: Path, out: Path) -> None:
    m = read_metrics(results / "perf" / "metrics.json")
    med = m["solve_median_s"]
    pipelines = pd.DataFrame([{"quantity": key, "forward-only": m[key]["forward-only"],
                               "SAC-Opt (prompt)": m[key]["sacopt-prompt"], "ratio": f"{m[ratio]:.3g}"}
                              for key, ratio in (("calls_per_problem", "calls_ratio"),
                                                 ("tokens_per_problem", "tokens_ratio"),
                                                 ("wall_s_per_problem", "wall_ratio"))])
    backends = pd.DataFrame([{"backend": b, "median CPU s": v, "ratio to HiGHS": f"{v / med['highs']:.3g}"}
                             for b, v in med.items()])
    path = out / "performance_table.md"
    atomic_write_text(path, "\n".join([
        f"# Performance (hardware: {m['hardware']}; {m['n_problems']} generated problems)\n",
        f"Pipelines ({SCRIPTED_LABEL}): SAC-Opt vs forward-only per problem\n",
        markdown_table(pipelines, floatfmt=".4g"),
        f"Solving the gold models of {m['timed_problems']} problems in process, and running their programs in the "
        f"sandbox (median over problems of the least CPU seconds per call in {m['timing_rounds']} alternating "
        f"rounds; the CPU time of CBC's child process and of the sandbox's processes included)\n",
        markdown_table(backends, floatfmt=".4g"),
        f"Sandbox (zygote fork + program + CBC) over in-process CBC: {m['sandbox_over_inprocess_cbc']:.3g}. "
        f"gurobipy available: {m['gurobi_available']}.\n"]))


def _sweep(results: Path, out: Path) -> None:
    arr = read_arrays(results / "sweep" / "sweep.npz")
    m = read_metrics(results / "sweep" / "metrics.json")
    ratio, qs, ps = arr["ratio"], arr["q"], arr["p"]
    fig, axes = new_figure(width=4.6, height=3.6)
    ax = axes[0, 0]
    im = ax.imshow(np.nan_to_num(ratio, nan=0.0), origin="lower", cmap="viridis", vmin=0.0,
                   vmax=max(0.5, float(np.nanmax(ratio)) if np.isfinite(ratio).any() else 0.5))
    for a in range(len(qs)):
        for b in range(len(ps)):
            txt = "n/a" if not np.isfinite(ratio[a, b]) else f"{ratio[a, b]:.3f}"
            ax.text(b, a, f"{txt}\n({arr['wrong_sacopt'][a, b]:.2f}/{arr['wrong_forward'][a, b]:.2f})",
                    ha="center", va="center", fontsize=6, color="w")
    ax.set_xticks(range(len(ps)), [f"{v:g}" for v in ps])
    ax.set_yticks(range(len(qs)), [f"{v:g}" for v in qs])
    ax.set_xlabel("p (regeneration correct)")
    ax.set_ylabel("q (silent-fault rate)")
    fig.colorbar(im, ax=ax, label="wrong rate SAC-Opt / forward-only")
    ax.set_title(f"{SCRIPTED_LABEL}; {m['n_problems']} problems, q_crash=0", fontsize=7)
    save_figure(fig, out / "sweep_heatmap.png")


def _objective(results: Path, out: Path) -> None:
    m = read_metrics(results / "objective" / "metrics.json")
    frame = pd.DataFrame([{"pipeline": name, "wrong rate (all)": _fmt(r["all"]),
                           "with objective fault": _fmt(r["objective_faulty"]),
                           "with gold objective": _fmt(r["objective_gold"])} for name, r in m["wrong_rate"].items()])
    path = out / "objective_faults.md"
    atomic_write_text(path, "\n".join([
        f"# Objective faults ({SCRIPTED_LABEL}; outside the backward loop, reported apart from the main claims)\n",
        f"{m['n_problems']} generated problems, q={m['q']}, p={m['p']}, q_obj={m['q_obj']}, q_crash=0; "
        f"{m['n_objective_faulty']} programs with a silent objective fault; share of them still faulty after "
        f"SAC-Opt: {_fmt(m['persist_fraction'])}.\n",
        markdown_table(frame)]))


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure/table of the scale from ``results_dir`` into ``out_dir``."""
    results, out = Path(results_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _residual(results, out)
    _wrong_rate(results, out)
    _cosine(results, out)
    _datasets(results, out)
    _cost(results, out)
    _performance(results, out)
    _sweep(results, out)
    _objective(results, out)


if __name__ == "__main__":
    main(make_figures)
