"""Is a committed performance ratio reproducible?

Every paper names its headline performance ratios in ``config/performance.yaml``: a ratio of times (or of
rates) of our method and the library a user would otherwise pick, measured in one process on the same work.
:func:`check_paper` reruns the paper's performance experiment at full scale into a scratch directory and
compares each fresh ratio r_f with the committed one r_c (``results/full/<slug>/<experiment>/``). The ratio is
*reproducible* when

    | r_f / r_c - 1 | <= tolerance        (tolerance = 0.3 in the manifest).

Times depend on the machine and on what else runs on it, so every run records the processor of the committed
and of the fresh run, the 1-minute load average before and after the fresh run, and what of the experiment's code
or config changed since the committed run (:func:`shared.experiment_code.experiment_changes`; then the two
ratios measure different code and the comparison says so).

Usage (writes ``reports/performance_reproducibility.{md,json}``; ``make perf-check``)::

    python -m shared.perfcheck [--papers adpo,goma] [--out reports/performance_reproducibility.md]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shared.config import REPO_ROOT, ConfigError, load_paper_config, load_yaml, validate
from shared.results import atomic_write_text, get_key

__all__ = ["load_manifest", "ratio_value", "read_ratios", "compare", "run_experiment", "check_paper",
           "refresh_kept", "render_markdown"]

MANIFEST = REPO_ROOT / "config" / "performance.yaml"


def load_manifest(path: str | Path = MANIFEST, root: Path = REPO_ROOT) -> dict:
    """Load and validate the manifest; ConfigError when it breaks the schema or names an experiment that the
    paper's ``config.yaml`` does not define at full scale."""
    manifest = validate(load_yaml(path), "performance.schema.json", where=str(path))
    for slug, entry in manifest["papers"].items():
        cfg_path = Path(root, "papers", slug, "config.yaml")
        if not cfg_path.is_file():
            raise ConfigError(f"{path}: key 'papers.{slug}': no paper folder papers/{slug}/ with a config.yaml")
        experiments = load_paper_config(cfg_path)["full"]["experiments"]
        if entry["experiment"] not in experiments:
            raise ConfigError(f"{path}: key 'papers.{slug}.experiment': {entry['experiment']!r} is not a full-scale "
                              f"experiment of {slug} (it has {sorted(experiments)})")
    return manifest


def _number(value, what: str) -> float:
    """A finite float from a number or the mean of a non-empty list of numbers; ValueError otherwise."""
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{what}: empty list of samples")
        return float(sum(_number(v, what) for v in value) / len(value))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what}: {value!r} is not a finite number")
    return float(value)


def ratio_value(data: dict, spec: dict) -> float:
    """The ratio a manifest entry names: ``key`` (a list of samples is averaged), or ``key / denominator``."""
    value = _number(get_key(data, spec["key"]), spec["key"])
    if "denominator" in spec:
        den = _number(get_key(data, spec["denominator"]), spec["denominator"])
        if den == 0:
            raise ValueError(f"{spec['denominator']}: zero denominator")
        value /= den
    return value


def read_ratios(run_dir: str | Path, ratios: list[dict]) -> dict[str, float | str]:
    """``{name: ratio}`` of every manifest entry, read from the files of one run; a ratio that cannot be read is
    the reason as a string (missing file or key, not a number)."""
    out, cache = {}, {}
    for spec in ratios:
        path = Path(run_dir, spec["file"])
        try:
            if path not in cache:
                with open(path, encoding="utf-8") as fh:
                    cache[path] = json.load(fh)
            out[spec["name"]] = ratio_value(cache[path], spec)
        except FileNotFoundError:
            out[spec["name"]] = f"{spec['file']} missing"
        except (KeyError, ValueError, json.JSONDecodeError) as exc:
            out[spec["name"]] = f"{spec['file']}: {exc}"
    return out


def compare(committed: float | str, fresh: float | str, tolerance: float) -> dict:
    """``{"fresh_over_committed", "reproducible"}``; reproducible iff |fresh/committed - 1| <= tolerance, None
    when either side is missing."""
    if isinstance(committed, str) or isinstance(fresh, str) or committed == 0:
        return {"fresh_over_committed": None, "reproducible": None}
    rel = fresh / committed
    return {"fresh_over_committed": rel, "reproducible": abs(rel - 1.0) <= tolerance}


def _load_1min() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def run_experiment(slug: str, experiment: str, out_dir: str | Path, *, timeout_s: float = 3600,
                   root: Path = REPO_ROOT) -> dict:
    """Run ``papers.<slug>.experiments <experiment>`` at full scale into ``out_dir`` in a child process (which pins its
    BLAS threads to the experiment's ``threads`` resource, :func:`shared.experiment.run_experiment`). Returns return code, wall and child CPU seconds, the load average before
    and after, and the last lines of its output when it failed."""
    cmd = [sys.executable, "-m", f"papers.{slug}.experiments", experiment, "--config",
           f"papers/{slug}/config.yaml", "--scale", "full", "--out", str(out_dir)]
    load_before, t0, c0 = _load_1min(), time.perf_counter(), os.times()
    try:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout_s)
        rc, tail = proc.returncode, (proc.stdout + proc.stderr).strip().splitlines()[-5:]
    except subprocess.TimeoutExpired:
        rc, tail = None, [f"stopped after {timeout_s:.0f} s"]
    c1 = os.times()
    return {"returncode": rc, "wall_s": time.perf_counter() - t0,
            "cpu_s": (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system),
            "load_before": load_before, "load_after": _load_1min(), "log_tail": tail if rc != 0 else []}


def _committed_provenance(run_dir: Path) -> dict:
    try:
        with open(run_dir / "provenance.json", encoding="utf-8") as fh:
            prov = json.load(fh)
    except (OSError, json.JSONDecodeError):
        return {}
    cpu = (prov.get("hardware") or {}).get("cpu") or prov.get("cpu")
    return {"commit": prov.get("commit"), "cpu_s": prov.get("cpu_s"), "wall_s": prov.get("wall_s"), "cpu": cpu}


def check_paper(slug: str, entry: dict, tolerance: float, *, root: Path = REPO_ROOT,
                timeout_s: float = 3600) -> dict:
    """Rerun one paper's performance experiment and compare every manifest ratio with the committed one."""
    from shared.experiment_code import experiment_changes

    committed_dir = Path(root, "results", "full", slug, entry["experiment"])
    committed = read_ratios(committed_dir, entry["ratios"])
    prov = _committed_provenance(committed_dir)
    changed = experiment_changes(slug, entry["experiment"], prov["commit"], root) if prov.get("commit") else None
    with tempfile.TemporaryDirectory(prefix=f"perfcheck_{slug}_") as tmp:
        run = run_experiment(slug, entry["experiment"], tmp, timeout_s=timeout_s, root=root)
        fresh = read_ratios(tmp, entry["ratios"]) if run["returncode"] == 0 else \
            {s["name"]: "run failed" for s in entry["ratios"]}
    rows = [{"name": s["name"], "what": s["what"], "committed": committed[s["name"]], "fresh": fresh[s["name"]],
             **compare(committed[s["name"]], fresh[s["name"]], tolerance)} for s in entry["ratios"]]
    return {"slug": slug, "experiment": entry["experiment"], "committed_run": prov,
            "code_changed_since": changed, "run": run, "ratios": rows}


def refresh_kept(paper: dict, entry: dict, root: Path = REPO_ROOT) -> dict:
    """A row kept from an earlier check, with every ratio whose committed value has changed since (the
    performance experiment was run and committed again) marked ``stale`` and no longer counted: its fresh
    value was compared with a committed value that is gone."""
    now = read_ratios(Path(root, "results", "full", paper["slug"], entry["experiment"]), entry["ratios"])
    ratios = []
    for r in paper["ratios"]:
        current = now.get(r["name"])
        same = isinstance(current, float) and isinstance(r["committed"], (int, float)) and \
            math.isclose(current, r["committed"], rel_tol=1e-9)
        ratios.append(r if same else {**r, "committed": current, "reproducible": None, "stale": True})
    return {**paper, "ratios": ratios}


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:.3g}"


def render_markdown(result: dict) -> str:
    """The report: one row per ratio, then the run conditions of each paper."""
    tol = result["tolerance"]
    lines = [
        "# Are the committed performance ratios reproducible?", "",
        f"Each paper's headline performance ratios (`config/performance.yaml`) were measured again by rerunning its "
        f"performance experiment at full scale, and compared with the committed full-scale value: a ratio is "
        f"reproducible when |fresh / committed - 1| <= {tol:g}. Rendered by `python -m shared.perfcheck` "
        f"(`make perf-check`; `--papers` reruns some papers and keeps the rows of the others), last at commit "
        f"`{result['commit'][:12]}` on {result['hardware'].get('cpu', '?')} ({result['hardware'].get('cores', '?')} "
        f"cores), {result['date']}; each paper's own run is dated in the second table.", "",
    ]
    counted = [r for p in result["papers"] for r in p["ratios"] if r["reproducible"] is not None]
    lines += [f"**{sum(r['reproducible'] for r in counted)} of {len(counted)} ratios reproducible** "
              f"({sum(len(p['ratios']) for p in result['papers']) - len(counted)} not compared: no committed value, "
              f"the run failed, or the value was committed again after the check)." + (f" Not rerun yet: {', '.join(result['not_checked'])}."
                                        if result.get("not_checked") else ""), "",
              "| paper | ratio | what | committed | fresh | fresh / committed | reproducible |", "|---|---|---|---|---|---|---|"]
    for p in result["papers"]:
        for r in p["ratios"]:
            verdict = "not compared: committed again since this check" if r.get("stale") else \
                {True: "yes", False: "**no**", None: "not compared"}[r["reproducible"]]
            lines.append(f"| {p['slug']} | `{r['name']}` | {r['what']} | {_fmt(r['committed'])} | {_fmt(r['fresh'])} "
                         f"| {_fmt(r['fresh_over_committed'])} | {verdict} |")
    lines += ["", "## Run conditions", "",
              "Load average: the 1-minute load of the machine just before and after the fresh run (the committed run's "
              "load is not recorded; its wall time far above its CPU time shows a shared machine).", "",
              "| paper | experiment | committed at | committed run CPU / wall s | fresh run at | fresh run CPU / wall s "
              "| load before / after | processor committed / fresh | experiment's code or config changed since the committed run |",
              "|---|---|---|---|---|---|---|---|---|"]
    for p in result["papers"]:
        c, r = p["committed_run"], p["run"]
        changed = "unknown" if p["code_changed_since"] is None else (", ".join(p["code_changed_since"]) or "no")
        at = p.get("checked_at", {})
        lines.append(f"| {p['slug']} | {p['experiment']} | `{(c.get('commit') or '?')[:12]}` | {_fmt(c.get('cpu_s'))} / "
                     f"{_fmt(c.get('wall_s'))} | `{(at.get('commit') or '?')[:12]}` {at.get('date', '')} | "
                     f"{_fmt(r['cpu_s'])} / {_fmt(r['wall_s'])} | {_fmt(r['load_before'])} / {_fmt(r['load_after'])} "
                     f"| {c.get('cpu') or '?'} / {at.get('cpu') or '?'} | {changed} |")
    failed = [p for p in result["papers"] if p["run"]["returncode"] != 0]
    for p in failed:
        lines += ["", f"Run of {p['slug']} / {p['experiment']} failed (return code {p['run']['returncode']}):", "```",
                  *p["run"]["log_tail"], "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from shared.provenance import git_state, hardware

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--papers", default="", help="comma-separated slugs (default: every paper of the manifest)")
    ap.add_argument("--out", default="reports/performance_reproducibility.md")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per experiment run")
    args = ap.parse_args(argv)
    manifest = load_manifest()
    slugs = [s for s in args.papers.split(",") if s] or list(manifest["papers"])
    unknown = sorted(set(slugs) - set(manifest["papers"]))
    if unknown:
        raise SystemExit(f"perfcheck: not in config/performance.yaml: {unknown}")
    out = Path(args.out)
    json_path = out.with_suffix(".json")
    previous = json.loads(json_path.read_text()) if json_path.is_file() else {"papers": []}
    kept = [refresh_kept(p, manifest["papers"][p["slug"]]) for p in previous["papers"]
            if p["slug"] not in slugs and p["slug"] in manifest["papers"]]
    papers, commit = [], git_state()["commit"]
    for slug in slugs:
        print(f"perfcheck: {slug} / {manifest['papers'][slug]['experiment']} ...", flush=True)
        papers.append({**check_paper(slug, manifest["papers"][slug], manifest["tolerance"], timeout_s=args.timeout),
                       "checked_at": {"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M"),
                                      "cpu": hardware()["cpu"]}})
        print("  " + ", ".join(f"{r['name']}: {_fmt(r['committed'])} -> {_fmt(r['fresh'])}"
                               for r in papers[-1]["ratios"]), flush=True)
    order = list(manifest["papers"])
    result = {"tolerance": manifest["tolerance"], "commit": commit, "hardware": hardware(),
              "date": time.strftime("%Y-%m-%d"),
              "papers": sorted(kept + papers, key=lambda p: order.index(p["slug"]))}
    result["not_checked"] = [s for s in order if s not in {p["slug"] for p in result["papers"]}]
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(json_path, json.dumps(result, indent=1, sort_keys=True) + "\n")
    atomic_write_text(out, render_markdown(result))
    print(f"perfcheck: wrote {out} and {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
