"""Render ``reports/<scale>/<slug>.md``: the audit of one paper at one scale.

Sections: identity, fidelity (from the paper README), claims table (statement, source, paper value, ours with
spread, threshold and its origin, verdict, expected), notes on claims, figures and tables, performance,
deviations (from the paper README), provenance. The last line is a machine-readable block
(``<!-- audit: {...} -->``) that the index and the gate read.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from shared.claims.check import MISSING, REPRODUCED, evaluate_claim, format_check, load_claims
from shared.config import REPO_ROOT, load_paper_config
from shared.provenance import git_state
from shared.results import atomic_write_text, read_metrics

__all__ = ["AUDIT_MARK", "readme_section", "render_report", "parse_audit_block", "main"]

AUDIT_MARK = "<!-- audit: "
_VERDICT_TEXT = {REPRODUCED: "reproduced", "not_reproduced": "**not reproduced**", MISSING: "**missing metric**",
                 "not_evaluated": "not evaluated", "skipped": "not run at this scale"}


def readme_section(readme: str, heading: str) -> str:
    """Body of the ``## heading`` section of a markdown text ('' when absent), sub-headings included."""
    match = re.search(rf"^##\s+{re.escape(heading)}\s*$(.*?)(?=^##\s|\Z)", readme, flags=re.M | re.S)
    return match.group(1).strip() if match else ""


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _claims_table(claims, verdicts, scale) -> list[str]:
    judged = scale != "smoke"
    lines = ["| id | statement | source | paper | ours | threshold (origin) | verdict | expected |",
             "|---|---|---|---|---|---|---|---|"]
    for claim, v in zip(claims, verdicts):
        ours = _fmt(v.value) + (f" ± {_fmt(v.spread)}" if v.spread is not None else "")
        verdict = _VERDICT_TEXT[v.verdict] if judged else f"{_VERDICT_TEXT[v.verdict]} (smoke: not judged)"
        flag = "" if v.matches_expected or not judged else " ⚠"
        lines.append(f"| `{claim['id']}` | {_cell(claim['statement'])} | {_cell(claim['source'])} | "
                     f"{_cell(_fmt(claim['paper_value']))} | {ours} | {format_check(v.check)} ({claim['origin']}) | "
                     f"{verdict}{flag} | {v.expected.replace('_', ' ')} |")
    return lines


def _figures(slug, scale, names, performance) -> list[str]:
    fig_dir = REPO_ROOT / "figures" / scale / slug
    out = []
    for name in names:
        if name in performance:
            continue
        path = fig_dir / name
        if name.endswith(".png"):
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
    lines += ["| " + " | ".join(_cell(_fmt(v)) for v in row) + " |" for row in shown.itertuples(index=False)]
    if len(frame) > max_rows:
        lines += ["", f"({len(frame) - max_rows} more rows in the file)"]
    return lines


def _provenance(slug, scale, config, experiments) -> tuple[list[str], dict]:
    rows, total, solvers, record = [], 0.0, {}, None
    for name in experiments:
        path = REPO_ROOT / "results" / scale / slug / name / "provenance.json"
        if not path.is_file():
            rows.append(f"| {name} | - | (no provenance.json) |")
            continue
        record = read_metrics(path)
        total += record.get("wall_s", 0.0)
        for key in ("solver", "solvers"):
            if key in record:
                solvers[name] = record[key]
        rows.append(f"| {name} | {record.get('wall_s', 0.0):.1f} | {'dirty' if record.get('dirty') else 'clean'} "
                    f"{str(record.get('commit', 'unknown'))[:10]} |")
    state = git_state()
    lines = [f"- commit: `{state['commit'][:12]}`{' (uncommitted changes present)' if state['dirty'] else ''}",
             f"- scale: `{scale}`; root seed: `{config['seed']}`"]
    if record:
        hw = record.get("hardware", {})
        lines.append(f"- hardware: {hw.get('cpu', '?')}, {hw.get('cores', '?')} cores"
                     + (f", GPU {hw['gpu']}" if hw.get("gpu") else ", no GPU") + f"; Python {hw.get('python', '?')}")
        lines.append("- packages: " + ", ".join(f"{k} {v}" for k, v in sorted(record.get("packages", {}).items())))
    if solvers:
        lines.append("- solvers: " + "; ".join(f"{k}: {_fmt(v)}" for k, v in solvers.items()))
    lines.append(f"- experiment wall time, total: {total:.1f} s")
    lines += ["", "| experiment | wall (s) | code at run time |", "|---|---|---|", *rows]
    return lines, {"wall_s": round(total, 1), "commit": state["commit"]}


def render_report(slug: str, scale: str) -> str:
    """The markdown audit report of ``slug`` at ``scale`` (reads papers/, results/ and figures/)."""
    paper_dir = REPO_ROOT / "papers" / slug
    config = load_paper_config(paper_dir / "config.yaml")
    claims = load_claims(paper_dir / "claims.yaml")
    readme = (paper_dir / "README.md").read_text(encoding="utf-8")
    block, meta = config[scale], config["paper"]
    verdicts = [evaluate_claim(c, REPO_ROOT / "results" / scale / slug, scale) for c in claims]
    n_ok = sum(v.verdict == REPRODUCED for v in verdicts)
    ids = ", ".join(f"{k}: {v}" for k, v in meta.get("ids", {}).items())
    performance = set(config.get("performance", []))
    lines = [f"# Audit: {meta['title']}", "",
             f"{meta['authors'].rstrip('.')}. *{meta['venue']}*." + (f" ({ids})" if ids else ""), "",
             f"Paper folder: `papers/{slug}/` · scale: **{scale}** · fidelity: **{meta['fidelity']}** · "
             f"claims reproduced: **{n_ok} of {len(claims)}**"
             + (" (smoke scale: verdicts are not judged)" if scale == "smoke" else ""), "",
             "## Fidelity", "", readme_section(readme, "Fidelity") or "(the paper README has no Fidelity section)", "",
             "## Claims", "", *_claims_table(claims, verdicts, scale), ""]
    notes = [(c, v) for c, v in zip(claims, verdicts) if c.get("note") or v.detail]
    if notes:
        lines += ["### Notes on claims", ""]
        lines += [f"- `{c['id']}`: " + " ".join(x for x in (c.get("note", "").strip(), v.detail) if x)
                  for c, v in notes]
        lines.append("")
    lines += ["## Figures and tables", "", *_figures(slug, scale, block["figures"], performance)]
    lines += ["## Performance", ""]
    perf = [p for p in block["figures"] if p in performance]
    for name in perf:
        path = REPO_ROOT / "figures" / scale / slug / name
        lines += [path.read_text(encoding="utf-8").strip() if path.is_file() else f"({name} missing)", ""]
    if not perf:
        lines += ["(this paper declares no performance table at this scale)", ""]
    lines += ["## Deviations", "", readme_section(readme, "Deviations") or "(none stated)", "",
              "## Provenance", ""]
    prov_lines, prov = _provenance(slug, scale, config, list(block["experiments"]))
    lines += prov_lines
    audit = {"slug": slug, "scale": scale, "title": meta["title"], "fidelity": meta["fidelity"],
             "claims": len(claims), "reproduced": n_ok,
             "verdicts": {v.claim_id: v.verdict for v in verdicts},
             "expected": {v.claim_id: v.expected for v in verdicts}, **prov}
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
