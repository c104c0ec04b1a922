"""Render ``reports/<scale>/<slug>.md``: the audit of one paper at one scale (audit v2).

Sections: identity and the count line, fidelity (from the paper README), how verdicts are decided, the
official claims with our combined verdict on each, the paper's claims (value or mean with its 95% interval and
sample count, threshold and origin, control and whether it flips, verdict), checks and findings apart, notes,
figures and tables, performance, deviations (from the paper README) and provenance. The last line is a
machine-readable block (``<!-- audit: {...} -->``) that the index and the gate read.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from shared.claims.check import (CANNOT_FAIL, FAILS, INCONCLUSIVE, NOT_EVALUATED, NOT_REPRODUCED, PASSES,
                                 REPRODUCED, REPRODUCED_REDUCED, evaluate_claim, format_check, load_claims_file,
                                 verdict_label)
from shared.claims.freshness import inputs_dirty
from shared.claims.official import NOT_ADDRESSED, coverage_problems, official_rows
from shared.claims.stats import LEVEL, MIN_SAMPLES
from shared.config import REPO_ROOT, load_paper_config
from shared.figure_sources import undrawn_figures
from shared.provenance import git_state
from shared.results import atomic_write_text, read_metrics

__all__ = ["AUDIT_MARK", "fmt_value", "readme_section", "count_verdicts", "count_line", "render_report",
           "parse_audit_block", "main"]

AUDIT_MARK = "<!-- audit: "


def readme_section(readme: str, heading: str) -> str:
    """Body of the ``## heading`` section of a markdown text ('' when absent), sub-headings included."""
    match = re.search(rf"^##\s+{re.escape(heading)}\s*$(.*?)(?=^##\s|\Z)", readme, flags=re.M | re.S)
    return match.group(1).strip() if match else ""


def fmt_value(value) -> str:
    """A number, list or string as a report prints it (4 significant digits)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt_value(v) for v in value) + "]"
    return str(value)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def count_verdicts(kinds: dict, verdicts: dict, official: dict) -> dict:
    """The counts the index and the report print, from claim kinds and verdicts.

    Paper claims that cannot fail are counted with the checks (as passing checks), never as reproduced.
    """
    paper = Counter(v for k, v in verdicts.items() if kinds[k] == "paper")
    checks = Counter(v for k, v in verdicts.items() if kinds[k] == "check")
    findings = Counter(v for k, v in verdicts.items() if kinds[k] == "finding")
    n_paper = sum(paper.values()) - paper[CANNOT_FAIL]
    return {"official_addressed": official.get("addressed", 0), "official_total": official.get("total", 0),
            "paper_total": n_paper, "reproduced": paper[REPRODUCED], "reduced": paper[REPRODUCED_REDUCED],
            "not_reproduced": paper[NOT_REPRODUCED], "inconclusive": paper[INCONCLUSIVE],
            "not_evaluated": paper[NOT_EVALUATED], "cannot_fail": paper[CANNOT_FAIL],
            "checks_passing": checks[PASSES] + paper[CANNOT_FAIL],
            "checks_total": sum(checks.values()) + paper[CANNOT_FAIL], "checks_not_evaluated": checks[NOT_EVALUATED],
            "findings_holding": findings[PASSES], "findings_total": sum(findings.values())}


def count_line(c: dict) -> str:
    """official claims addressed k of M; paper claims reproduced a, reduced b, ...; checks passing f of g
    (n not evaluated)."""
    official = (f"official claims addressed {c['official_addressed']} of {c['official_total']}; "
                if c["official_total"] else "no official claims located; ")
    line = (official + f"paper claims ({c['paper_total']}): reproduced {c['reproduced']}, reduced {c['reduced']}, "
            f"not reproduced {c['not_reproduced']}, inconclusive {c['inconclusive']}, not evaluated "
            f"{c['not_evaluated']}; checks passing {c['checks_passing']} of {c['checks_total']}")
    if c.get("checks_not_evaluated"):
        line += f" ({c['checks_not_evaluated']} not evaluated)"
    if c["cannot_fail"]:
        line += f" (including {c['cannot_fail']} paper claim(s) that cannot fail)"
    if c["findings_total"]:
        line += f"; findings holding {c['findings_holding']} of {c['findings_total']}"
    return line


def _ours(v) -> str:
    if v.outcome is None:
        return "-"
    return v.outcome.describe() + (f" ± {fmt_value(v.spread)}" if v.spread is not None else "")


def _control_cell(claim, v) -> str:
    if "control" not in claim:
        return "none: " + claim.get("no_control", "-") if claim["kind"] == "paper" else "-"
    if v.control is None:
        return f"{claim['control']['name']}: no value"
    return f"{claim['control']['name']}: {v.control.describe()}; flips: {'yes' if v.control_flips else 'no'}"


def _verdict_cell(v, judged: bool) -> str:
    text = verdict_label(v.verdict)
    if v.verdict in (NOT_REPRODUCED, FAILS, CANNOT_FAIL) or v.verdict.startswith("missing"):
        text = f"**{text}**"
    if not judged:
        return f"{text} (smoke: not judged)"
    return text + ("" if v.matches_expected else " ⚠")


def _paper_table(pairs, judged) -> list[str]:
    lines = ["| id | statement | source | official | paper | theory | ours | threshold (origin) | control | verdict "
             "| expected |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c, v in pairs:
        lines.append(f"| `{c['id']}` | {_cell(c['statement'])} | {_cell(c['source'])} | "
                     f"{', '.join(map(str, c.get('official', []))) or '-'} | {fmt_value(c.get('paper_value'))} | "
                     f"{fmt_value(c.get('theory_value'))} | {_cell(_ours(v))} | {format_check(v.check)} "
                     f"({c['origin']}) | {_cell(_control_cell(c, v))} | {_verdict_cell(v, judged)} | "
                     f"{verdict_label(v.expected)} |")
    return lines


def _check_table(pairs, judged) -> list[str]:
    lines = ["| id | kind | statement | source | ours | threshold (origin) | verdict | expected |",
             "|---|---|---|---|---|---|---|---|"]
    for c, v in pairs:
        lines.append(f"| `{c['id']}` | {c['kind']} | {_cell(c['statement'])} | {_cell(c['source'])} | "
                     f"{_cell(_ours(v))} | {format_check(v.check)} ({c['origin']}) | {_verdict_cell(v, judged)} | "
                     f"{verdict_label(v.expected)} |")
    return lines


def _official_section(rows, problems) -> list[str]:
    if not rows:
        return ["No official claims of the reproducibility challenge were located for this paper; the claims "
                "below come from the paper's abstract and the spec.", ""]
    lines = ["The challenge's scored claims (its index and the part of the paper each cites; the text is "
             "shortened). Our claims that address each one, and one combined verdict over them.", "",
             "| # | cites | official claim (shortened) | our claims | combined verdict |", "|---|---|---|---|---|"]
    for r in rows:
        text = r.text if len(r.text) <= 160 else r.text[:157].rstrip() + "..."
        ours = ", ".join(f"`{i}`" for i in r.ours) or "-"
        verdict = verdict_label(r.verdict) if r.verdict != NOT_ADDRESSED else f"not addressed: {r.reason or '?'}"
        lines.append(f"| {r.index} | {_cell(r.cites)} | {_cell(text)} | {ours} | {_cell(verdict)} |")
    if problems:
        lines += ["", "**Mapping problems:** " + "; ".join(problems)]
    return lines + [""]


_DECIDED = (f"Verdicts. A claim on one number passes or fails its threshold. A claim on a list of per-seed (or "
            f"per-instance) values is decided by the {LEVEL:.0%} confidence interval of the mean (Student t unless "
            f"the row says bootstrap: percentile, 10,000 resamples with a fixed seed): all of the interval on the "
            f"passing side is a pass, all on the failing side a fail, otherwise inconclusive; with fewer than "
            f"{MIN_SAMPLES} values a pass is at most reproduced-reduced and a fail inconclusive. Every paper claim "
            f"names a control (a variant under which it must not hold) or says why none exists; a claim that also "
            f"holds under its control cannot fail and is counted with the checks. Reproduced-reduced: the claim "
            f"holds at a smaller scale than the paper's (the scale row above says how). A claim whose precondition "
            f"fails (no capable model, no GPU, no data) is not evaluated.")


def _figures(slug, scale, names, performance, undrawn) -> list[str]:
    """Markdown for the figures and tables (``undrawn``: ``{figure: [not-run experiments]}``, named only)."""
    fig_dir = REPO_ROOT / "figures" / scale / slug
    out = []
    for name in names:
        if name in performance:
            continue
        path = fig_dir / name
        if name in undrawn:
            out += [f"*{name}*: not drawn at this scale (its experiment(s) {', '.join(undrawn[name])} were not "
                    f"run).", ""]
        elif name.endswith(".png"):
            out += [f"![{name}](../../figures/{scale}/{slug}/{name})", ""]
        elif name.endswith(".csv") and path.is_file():
            out += [f"**[{name}](../../figures/{scale}/{slug}/{name})**", "", *_csv_preview(path), ""]
        elif path.is_file():
            out += [f"**{name}**", "", path.read_text(encoding="utf-8").strip(), ""]
    return out


def _csv_preview(path: Path, max_rows: int = 12) -> list[str]:
    """The first rows of a CSV table as markdown (the whole file is linked)."""
    import pandas as pd

    frame = pd.read_csv(path)
    shown = frame.head(max_rows)
    lines = ["| " + " | ".join(map(str, shown.columns)) + " |", "|" + "---|" * len(shown.columns)]
    lines += ["| " + " | ".join(_cell(fmt_value(v)) for v in row) + " |" for row in shown.itertuples(index=False)]
    if len(frame) > max_rows:
        lines += ["", f"({len(frame) - max_rows} more rows in the file)"]
    return lines


def _provenance(slug, scale, config, experiments, not_run) -> tuple[list[str], dict]:
    rows, total, cpu, solvers, record = [], 0.0, 0.0, {}, None
    for name in experiments:
        path = REPO_ROOT / "results" / scale / slug / name / "provenance.json"
        if name in not_run:
            rows.append(f"| {name} | - | - | not run at this scale |")
            continue
        if not path.is_file():
            rows.append(f"| {name} | - | - | (no provenance.json) |")
            continue
        record = read_metrics(path)
        total += record.get("wall_s", 0.0)
        cpu += record.get("cpu_s", 0.0)
        for key in ("solver", "solvers"):
            if key in record:
                solvers[name] = record[key]
        rows.append(f"| {name} | {record.get('wall_s', 0.0):.1f} | {record.get('cpu_s', float('nan')):.1f} | "
                    f"{'dirty' if record.get('dirty') else 'clean'} "
                    f"{str(record.get('commit', 'unknown'))[:10]} |")
    state, dirty = git_state(), inputs_dirty(slug)
    lines = [f"- rendered at commit: `{state['commit'][:12]}`"
             + (" (the paper's code, config or claims had uncommitted changes: this report is not fresh)"
                if dirty else ""),
             f"- scale: `{scale}`; root seed: `{config['seed']}`"]
    if record:
        hw = record.get("hardware", {})
        lines.append(f"- hardware: {hw.get('cpu', '?')}, {hw.get('cores', '?')} cores"
                     + (f", GPU {hw['gpu']}" if hw.get("gpu") else ", no GPU") + f"; Python {hw.get('python', '?')}")
        lines.append("- packages: " + ", ".join(f"{k} {v}" for k, v in sorted(record.get("packages", {}).items())))
    if solvers:
        lines.append("- solvers: " + "; ".join(f"{k}: {fmt_value(v)}" for k, v in solvers.items()))
    lines.append(f"- experiment time, total: {total:.1f} s wall, {cpu:.1f} s CPU of the experiment processes and the "
                 f"child processes they waited for (wall exceeds CPU when jobs share cores)")
    lines += ["", "| experiment | wall (s) | CPU (s) | code at run time |", "|---|---|---|---|", *rows]
    return lines, {"wall_s": round(total, 1), "cpu_s": round(cpu, 1), "commit": state["commit"],
                   "inputs_dirty": dirty}


def render_report(slug: str, scale: str) -> str:
    """The markdown audit report of ``slug`` at ``scale`` (reads papers/, results/ and figures/)."""
    paper_dir = REPO_ROOT / "papers" / slug
    config = load_paper_config(paper_dir / "config.yaml")
    doc = load_claims_file(paper_dir / "claims.yaml")
    claims, reduced = doc["claims"], doc.get("reduced", {})
    readme = (paper_dir / "README.md").read_text(encoding="utf-8")
    block, meta = config[scale], config["paper"]
    not_run = doc.get("not_run", {}).get(scale, {})
    verdicts = [evaluate_claim(c, REPO_ROOT / "results" / scale / slug, scale, reduced=reduced, not_run=not_run)
                for c in claims]
    rows = official_rows(slug, claims, verdicts, doc.get("official_not_addressed", {}))
    problems = coverage_problems(slug, doc)
    official = {"total": len(rows), "addressed": sum(bool(r.ours) for r in rows),
                "verdicts": {str(r.index): r.verdict for r in rows}}
    kinds = {c["id"]: c["kind"] for c in claims}
    verdict_map = {v.claim_id: v.verdict for v in verdicts}
    counts = count_verdicts(kinds, verdict_map, official)
    counts["no_control"] = sum(c["kind"] == "paper" and "control" not in c for c in claims)
    judged = scale != "smoke"
    ids = ", ".join(f"{k}: {v}" for k, v in meta.get("ids", {}).items())
    performance = set(config.get("performance", []))
    paper_pairs = [(c, v) for c, v in zip(claims, verdicts) if c["kind"] == "paper"]
    other_pairs = [(c, v) for c, v in zip(claims, verdicts) if c["kind"] != "paper"]
    lines = [f"# Audit: {meta['title']}", "",
             f"{meta['authors'].rstrip('.')}. *{meta['venue']}*." + (f" ({ids})" if ids else ""), "",
             f"Paper folder: `papers/{slug}/` · scale: **{scale}** · fidelity: **{meta['fidelity']}**"
             + (" (smoke scale: verdicts are not judged)" if not judged else ""), "",
             f"**{count_line(counts)}.**", "",
             f"Scale against the paper: {reduced.get(scale, 'equivalent to the paper where a claim is judged')}.",
             *([""] + [f"Not run at this scale: `{name}` ({why})." for name, why in not_run.items()] if not_run else []),
             "", "## Fidelity", "", readme_section(readme, "Fidelity") or "(the paper README has no Fidelity section)",
             "", "## Official claims", "", *_official_section(rows, problems),
             "## Claims of the paper", "", _DECIDED, "",
             *(_paper_table(paper_pairs, judged) if paper_pairs else ["(none)"]), ""]
    if other_pairs:
        lines += ["## Checks and findings", "",
                  "Checks test our own harness, libraries and identities; findings are audit findings about the "
                  "paper. Neither counts as a reproduced claim.", "", *_check_table(other_pairs, judged), ""]
    notes = [(c, v) for c, v in zip(claims, verdicts) if c.get("note") or v.detail or c.get("control", {}).get("note")]
    if notes:
        lines += ["### Notes on claims", ""]
        for c, v in notes:
            parts = [c.get("note", "").strip(), v.detail,
                     f"Control: {c['control']['note'].strip()}" if c.get("control", {}).get("note") else ""]
            lines.append(f"- `{c['id']}`: " + " ".join(p.rstrip(".") + "." for p in parts if p))
        lines.append("")
    undrawn = undrawn_figures(config, scale, doc.get("not_run", {}))
    lines += ["## Figures and tables", "", *_figures(slug, scale, block["figures"], performance, undrawn)]
    lines += ["## Performance", ""]
    perf = [p for p in block["figures"] if p in performance]
    for name in perf:
        path = REPO_ROOT / "figures" / scale / slug / name
        if name in undrawn:
            lines += [f"({name} not drawn at this scale: {', '.join(undrawn[name])} not run)", ""]
        else:
            lines += [path.read_text(encoding="utf-8").strip() if path.is_file() else f"({name} missing)", ""]
    if not perf:
        lines += ["(this paper declares no performance table at this scale)", ""]
    lines += ["## Deviations", "", readme_section(readme, "Deviations") or "(none stated)", "",
              "## Provenance", ""]
    prov_lines, prov = _provenance(slug, scale, config, list(block["experiments"]), not_run)
    lines += prov_lines
    audit = {"version": 2, "slug": slug, "scale": scale, "title": meta["title"], "fidelity": meta["fidelity"],
             "counts": counts, "kinds": kinds, "verdicts": verdict_map,
             "expected": {v.claim_id: v.expected for v in verdicts}, "official": official,
             "official_problems": problems,
             "samples_n": {v.claim_id: v.outcome.n for v in verdicts if v.outcome is not None and v.outcome.n},
             "few_samples_reason": sorted(c["id"] for c in claims if "few_samples" in c),
             "not_run_claims": sorted(v.claim_id for v in verdicts if v.not_run), **prov}
    lines += ["", AUDIT_MARK + json.dumps(audit, sort_keys=True) + " -->", ""]
    return "\n".join(lines)


def parse_audit_block(text: str) -> dict | None:
    """The machine-readable block of a report, or None when absent."""
    for line in reversed(text.splitlines()):
        if line.startswith(AUDIT_MARK) and line.rstrip().endswith("-->"):
            return json.loads(line[len(AUDIT_MARK):].rstrip()[:-3])
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Render the audit report of one paper.")
    parser.add_argument("--slug", required=True)
    parser.add_argument("--scale", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    atomic_write_text(args.out, render_report(args.slug, args.scale))
    print(f"report written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
