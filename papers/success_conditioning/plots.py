"""Figures and tables of the success-conditioning reproduction; they read results, never recompute them.

``python -m papers.success_conditioning.plots --results results/quick/success_conditioning
--out figures/quick/success_conditioning --scale quick``
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from shared.claims.check import evaluate_claim, format_check, load_claims_file
from shared.plotting import main, method_colors, new_figure, plot_band, save_figure
from shared.results import read_arrays, read_metrics, write_markdown_table

HERE = Path(__file__).resolve().parent
METHODS = ["exact_sc", "count_sc", "param_sc", "pg_matched", "tr_matched", "reinforce", "pooled"]
LABELS = {"exact_sc": "exact SC", "count_sc": "SC, tabular counts", "param_sc": "SC, softmax-linear SFT",
          "pg_matched": "policy gradient (matched)", "tr_matched": "occupancy-weighted TR (matched)",
          "reinforce": "REINFORCE (matched)", "pooled": "time-pooled SC (control)"}
COLORS = method_colors(METHODS)


def _identity(results: Path, out: Path):
    pts = read_arrays(results / "identity" / "identity_points.npz")
    fig, axes = new_figure(2, width=4.0)
    for ax, col, name in zip(axes[0], (1, 2), ("relative improvement", "chi2(pi+ || pi)")):
        sc, pooled = pts["sc"], pts["pooled"]
        keep = (sc[:, 0] > 0) & (sc[:, col] > 0)
        ax.loglog(sc[keep, 0], sc[keep, col], ".", ms=3, color=COLORS["exact_sc"], label="per-step SC")
        if pooled.size:
            keep = (pooled[:, 0] > 0) & (pooled[:, col] > 0)
            ax.loglog(pooled[keep, 0], pooled[keep, col], "x", ms=3, color=COLORS["pooled"],
                      label=LABELS["pooled"])
        lo = max(sc[sc[:, 0] > 0, 0].min(), 1e-8)
        ax.loglog([lo, sc[:, 0].max()], [lo, sc[:, 0].max()], "k--", lw=0.8, label="y = x")
        ax.set_xlabel("action-influence I = Var(q)/V^2")
        ax.set_ylabel(name)
        ax.legend(fontsize=7)
    save_figure(fig, out / "identity_scatter.png")


def _trust_region(results: Path, out: Path):
    arr = read_arrays(results / "trust_region" / "trust_region_path.npz")
    fig, axes = new_figure(1, width=5.0)
    ax = axes[0, 0]
    for i, (delta, value, sc) in enumerate(zip(arr["path_delta"], arr["path_value"], arr["sc_point"])):
        ax.plot(delta, value, color=f"C{i}", label=f"bandit {i + 1}: max value s.t. chi2 <= delta")
        ax.plot([sc[0]], [sc[1]], "o", color=f"C{i}", ms=6)
        ax.axvline(sc[0], color=f"C{i}", lw=0.6, ls=":")
    ax.set_xlabel("radius delta = chi2(p || pi) of the maximiser")
    ax.set_ylabel("success probability sum_a p(a) q(a)")
    ax.set_title("trust-region path; dots: SC at delta = I", fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, out / "trust_region_path.png")


def _improvement(results: Path, out: Path):
    arr = read_arrays(results / "improvement" / "improvement_points.npz")
    fig, axes = new_figure(1, width=4.2)
    ax = axes[0, 0]
    ax.loglog(arr["pdl"], arr["delta_J"], ".", ms=3, color=COLORS["exact_sc"])
    lo, hi = max(arr["pdl"].min(), 1e-12), arr["pdl"].max()
    ax.loglog([lo, hi], [lo, hi], "k--", lw=0.8, label="45-degree line")
    ax.set_xlabel("PDL sum  sum_h,s d+new V I")
    ax.set_ylabel("J(pi+) - J(pi)")
    ax.legend(fontsize=7)
    save_figure(fig, out / "improvement_pdl.png")


def _monte_carlo(results: Path, out: Path):
    arr = read_arrays(results / "monte_carlo" / "mc_points.npz")
    fig, axes = new_figure(1, width=4.4)
    ax = axes[0, 0]
    if len(arr["sizes"]) > 1:
        ax.loglog(arr["sizes"], arr["rmse"], "o-", color=COLORS["count_sc"], label="RMS error of pi_hat+")
        ref = arr["rmse"][0] * np.sqrt(arr["sizes"][0] / arr["sizes"])
        ax.loglog(arr["sizes"], ref, "k--", lw=0.8, label="slope -1/2")
        ax.set_xlabel("rollouts N")
        ax.set_ylabel("RMS |pi_hat+ - pi+|")
    else:
        z = arr["z"]
        ax.hist(z, bins=30, density=True, color=COLORS["count_sc"], alpha=0.7, label="|z| of pi_hat+")
        grid = np.linspace(0, max(4.5, z.max()), 200)
        ax.plot(grid, 2 * np.exp(-grid ** 2 / 2) / math.sqrt(2 * math.pi), "k-", lw=1, label="half-normal")
        ax.axvline(4.5, color="k", ls=":", lw=0.8, label="claim threshold")
        ax.set_xlabel("|pi_hat+ - pi+| / se")
        ax.set_ylabel("density")
    ax.legend(fontsize=7)
    save_figure(fig, out / "mc_error.png")


def _thresholding(results: Path, out: Path):
    frame = pd.read_csv(results / "thresholding" / "results.csv")
    pub = frame[frame["method"] == "public"].pivot_table(index="step", columns="metric", values="value")
    fig, axes = new_figure(3, width=3.3)
    tau = pub["tau"].to_numpy()
    ax = axes[0, 0]
    ax.plot(tau, pub["success_before"], "o--", color=COLORS["pooled"], label="before")
    ax.plot(tau, pub["success_after"], "o-", color=COLORS["exact_sc"], label="after SC")
    ax.set_ylabel("P(R >= tau)")
    ax = axes[0, 1]
    ax.plot(tau, pub["mean_before"], "o--", color=COLORS["pooled"], label="before")
    ax.plot(tau, pub["mean_after"], "o-", color=COLORS["exact_sc"], label="after SC")
    ax.set_ylabel("E[R]")
    ax = axes[0, 2]
    ax.plot(tau, pub["action_influence"], "o-", color=COLORS["exact_sc"], label="I_tau = chi2 step")
    ax.set_ylabel("action-influence I_tau")
    for ax in axes[0]:
        ax.set_xscale("log")
        ax.set_xlabel("threshold tau")
        ax.legend(fontsize=7)
    save_figure(fig, out / "thresholding.png")


def _beta_bandit(results: Path, out: Path):
    """Figure 2 analogue: true-objective gain of threshold conditioning relative to faithful conditioning,
    and its two factors (Proposition 7.1), mean and 95% t band over the seeds."""
    from scipy import stats

    arr = read_arrays(results / "beta_bandit" / "beta_bandit_curves.npz")
    tau = arr["taus"]
    fig, axes = new_figure(2, width=4.4)
    panels = ((axes[0, 0], (("gain_ratio", "dJ_tau / dJ_faithful", "C0"),)),
              (axes[0, 1], (("amplification", "amplification sqrt(I_tau / I_1)", "C1"),
                            ("alignment", "alignment Corr(r, q_tau)", "C2"))))
    for ax, series in panels:
        for key, label, color in series:
            runs = arr[key]
            mean = runs.mean(axis=0)
            half = stats.t.ppf(0.975, len(runs) - 1) * runs.std(axis=0, ddof=1) / np.sqrt(len(runs))
            plot_band(ax, tau, mean, mean - half, mean + half, label=f"{label} ({len(runs)} seeds, 95% t band)",
                      color=color)
        ax.set_xlabel("threshold tau (success = R >= tau)")
        ax.legend(fontsize=7)
    axes[0, 0].axhline(1.0, color="k", ls="--", lw=0.8, label="faithful")
    axes[0, 0].axhline(0.0, color="k", ls=":", lw=0.8)
    axes[0, 0].set_ylabel("true improvement relative to faithful SC")
    axes[0, 1].axhline(0.0, color="k", ls=":", lw=0.8)
    save_figure(fig, out / "beta_bandit.png")


def _gridworld(results: Path, out: Path):
    files = sorted((results / "gridworld").glob("gridworld_curves_N*.npz"),
                   key=lambda p: int(p.stem.rsplit("N", 1)[1]))
    fig, axes = new_figure(len(files) + 1, width=4.6)
    for ax, path in zip(axes[0], files):
        arr = read_arrays(path)
        for m in ("exact_sc", "pg_matched", "tr_matched"):
            ax.plot(np.arange(len(arr[m])), arr[m], "-", color=COLORS[m], label=LABELS[m])
        for m in ("count_sc", "param_sc", "reinforce"):
            if m not in arr:
                continue
            runs = arr[m]
            mean = runs.mean(axis=0)
            se = runs.std(axis=0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else np.zeros_like(mean)
            k = np.arange(runs.shape[1])
            plot_band(ax, k, mean, mean - se, mean + se, label=f"{LABELS[m]} ({len(runs)} seeds, +- 1 s.e.)",
                      color=COLORS[m], marker="o", ls="--", ms=3)
        ax.set_xlabel("round k")
        ax.set_ylabel("J_k = P(reach goal)")
        ax.set_title(f"gridworld N = {path.stem.rsplit('N', 1)[1]}", fontsize=9)
        ax.legend(fontsize=6)
    first = read_arrays(files[0])  # last panel: the data-chosen radius along the two exact paths (first size)
    ax = axes[0, -1]
    for m in ("exact_sc", "pg_matched"):
        ax.semilogy(np.arange(len(first[f"{m}_delta"])), first[f"{m}_delta"], "o-", ms=3, color=COLORS[m],
                    label=f"along the {LABELS[m]} path")
    ax.set_xlabel("round k")
    ax.set_ylabel("SC's radius E_d+[I] at the iterate")
    ax.set_title(f"gridworld N = {files[0].stem.rsplit('N', 1)[1]}: budget of every matched step", fontsize=9)
    ax.legend(fontsize=6)
    save_figure(fig, out / "gridworld_curves.png")


def _claims_table(results: Path, out: Path, scale: str):
    """Audit table: every claim of claims.yaml evaluated by the shared claims engine on these results."""
    rows = []
    doc = load_claims_file(HERE / "claims.yaml")
    for claim in doc["claims"]:
        v = evaluate_claim(claim, results, scale, reduced=doc["reduced"])
        ref = claim.get("metric", claim.get("samples"))
        ours = "missing" if v.outcome is None else v.outcome.describe()
        control = "" if v.control is None else f"{v.control_name}: {v.control.describe()}"
        rows.append({"id": claim["id"], "kind": claim["kind"], "metric": f"{ref['file'].split('/')[0]}.{ref['key']}",
                     "ours": ours, "threshold": format_check(v.check), "control": control,
                     "origin": claim["origin"], "verdict": v.verdict, "expected": v.expected})
    write_markdown_table(pd.DataFrame(rows), out / "table_claims.md", title=f"Claims at scale {scale}")


def _perf_table(results: Path, out: Path):
    prov = read_metrics(results / "perf" / "provenance.json")
    metrics = read_metrics(results / "perf" / "metrics.json")
    t = prov["timing"]
    hw = prov.get("hardware", {})
    backend = prov.get("solver", "none")
    rows = []
    col = "time per instance [s]"
    for kind, label in (("bandit", "per-state (bandit)"), ("mdp", "global MDP (d+-weighted)")):
        rows.append({"problem": label, "method": "closed-form SC step",
                     col: t[f"{kind}_cpu_s_closed_form"], "ratio vs closed form": 1.0,
                     "max abs diff vs closed form": 0.0})
        rows.append({"problem": label, "method": "SLSQP (scipy)", col: t[f"{kind}_cpu_s_slsqp"],
                     "ratio vs closed form": t[f"{kind}_ratio_slsqp_over_closed_form"],
                     "max abs diff vs closed form": metrics[f"{kind}_slsqp_max_abs_diff"]})
        if f"{kind}_cpu_s_cvxpy" in t:
            rows.append({"problem": label, "method": f"cvxpy ({backend})",
                         col: t[f"{kind}_cpu_s_cvxpy"],
                         "ratio vs closed form": t[f"{kind}_ratio_cvxpy_over_closed_form"],
                         "max abs diff vs closed form": metrics[f"{kind}_cvxpy_max_abs_diff"]})
    rows.append({"problem": "SFT on successful rollouts", "method": "count estimator n_S(h,s,a)/n_S(h,s)",
                 col: t["median_s_count_sft"], "ratio vs closed form": 1.0,
                 "max abs diff vs closed form": 0.0})
    rows.append({"problem": "SFT on successful rollouts", "method": "LogisticRegression (C = 1e6)",
                 col: t["median_s_logreg_sft"], "ratio vs closed form": t["ratio_logreg_over_count"],
                 "max abs diff vs closed form": metrics["sft_logreg_max_abs_diff"]})
    title = (f"Trust regions: process CPU time per instance, least of {t['timing_rounds']} alternating rounds "
             f"on the first {t['bandit_timed_instances']} bandits and {t['mdp_timed_instances']} MDPs; "
             f"differences over all {metrics['n_trust_region_instances']}. SFT: median wall time of "
             f"{metrics['n_sft_mdps']} fits, ratio and difference vs the count estimator. Hardware: "
             f"{hw.get('cpu', 'unknown')} ({hw.get('cores', '?')} cores), one BLAS thread")
    write_markdown_table(pd.DataFrame(rows), out / "table_perf.md", title=title)


def make_figures(results_dir, out_dir, scale: str) -> None:
    """Write every figure and table of the scale's ``figures:`` list from ``results/<scale>/success_conditioning``."""
    results, out = Path(results_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _identity(results, out)
    _trust_region(results, out)
    _improvement(results, out)
    _monte_carlo(results, out)
    _thresholding(results, out)
    _beta_bandit(results, out)
    _gridworld(results, out)
    _claims_table(results, out, scale)
    _perf_table(results, out)


if __name__ == "__main__":
    raise SystemExit(main(make_figures))
