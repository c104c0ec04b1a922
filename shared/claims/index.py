"""Render ``reports/README.md``: one table per scale over the reports that exist (audit v2 counts)."""
from __future__ import annotations

import argparse
import sys

from shared.claims.report import count_line, parse_audit_block
from shared.config import REPO_ROOT, SCALES, load_yaml
from shared.results import atomic_write_text

__all__ = ["render_index", "main"]

_INTRO = """# Audit reports

Every paper has one report per scale, `reports/<scale>/<slug>.md`, rendered by the workflow from the paper's
`claims.yaml` and the metrics its experiments wrote. Read a paper's fidelity paragraph first (which parts of the
method are exact and which are reconstructed), then its official claims and its claims table.

What the words mean:
- **paper claims** are statements of the paper. Each is decided by a threshold that comes from the paper, from
  theory, or (`calibrated`) from our own runs or hypotheses. Claims over seeds or instances are decided by the
  95% confidence interval of the mean: **reproduced** (all of it on the passing side; at the paper's scale or an
  equivalent one), **reproduced-reduced** (the same, at a smaller scale than the paper's, which the report
  names), **not reproduced** (all of it on the failing side), **inconclusive** (the interval straddles the
  threshold, or too few seeds), **not evaluated** (a precondition is missing: no capable LLM, no GPU, no data).
  A number within rounding of its threshold (1e-9 relative) is a tie with it: `>=` passes a tie, `>` fails it.
- every paper claim names a **control**, a variant of the method under which it must not hold (anchor removed,
  noise off, a random baseline...). The workflow runs the controls; a claim that also holds under its control
  **cannot fail** and is counted with the checks, never as reproduced.
- **checks** test our own harness, libraries and identities; **findings** are audit findings about the paper.
- **paper claims (judged)**: how many of the paper's claims we list, and in brackets how many of them were
  actually tested (all but those not evaluated); for the LLM-side papers without a capable model this is
  often none.
- **official claims** are the scored claims of the ICML 2026 reproducibility challenge, where they were found;
  each report maps our claims onto them and gives one combined verdict per official claim.

The experiment wall and CPU columns sum over the paper's experiments (CPU: the experiment processes and the
child processes they waited for); wall exceeds CPU when jobs shared the cores, CPU exceeds wall when an
experiment used several threads or processes.

Full-scale runs take hours and are made by hand: a paper's `reports/full/<slug>.md` is committed with the small
`metrics.json` and `provenance.json` files under `results/full/<slug>/` it was rendered from, and `make audit`
renders it again from them (without recomputing) and fails when a verdict changes. Papers without a full report
give in their README the measured cost of one unit and the projected total.

`make audit` fails when a verdict differs from the `expected` recorded in `claims.yaml`, when a regenerated
report disagrees with the committed one, when a committed report is older than the paper's code, config or
claims (or the shared modules it imports, or the report renderer), or when an official claim is neither
addressed nor given a reason.
"""

_HEADER = ["| paper | fidelity | official addressed | paper claims (judged) | reproduced | reduced | not reproduced | "
           "inconclusive | not evaluated | checks passing | without a control | experiment wall (s) | "
           "experiment CPU (s) | commit |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
_SUMMED = ("official_addressed", "official_total", "paper_total", "reproduced", "reduced", "not_reproduced",
           "inconclusive", "not_evaluated", "cannot_fail", "checks_passing", "checks_total", "checks_not_evaluated",
           "findings_holding", "findings_total", "no_control")


def _blocks(scale: str) -> list[dict]:
    blocks = []
    for path in sorted((REPO_ROOT / "reports" / scale).glob("*.md")):
        text = path.read_text(encoding="utf-8")
        block = parse_audit_block(text)
        if block is not None and block.get("version") == 2:
            blocks.append({**block, "file": f"{scale}/{path.name}"})
    return blocks


def _row(b: dict) -> str:
    c = b["counts"]
    official = f"{c['official_addressed']} of {c['official_total']}" if c["official_total"] else "none located"
    return (f"| [{b['slug']}]({b['file']}) | {b['fidelity']} | {official} | "
            f"{c['paper_total']} ({c['paper_total'] - c['not_evaluated']}) | {c['reproduced']} | "
            f"{c['reduced']} | {c['not_reproduced']} | {c['inconclusive']} | {c['not_evaluated']} | "
            f"{c['checks_passing']} of {c['checks_total']}{_not_evaluated(c)} | {c.get('no_control', 0)} | "
            f"{b['wall_s']:.0f} | {'-' if b.get('cpu_s') is None else format(b['cpu_s'], '.0f')} | "
            f"`{b['commit'][:10]}` |")


def _not_evaluated(c: dict) -> str:
    """`` (n not evaluated)`` when some checks are not evaluated (they are in neither side of passing f of g)."""
    return f" ({c['checks_not_evaluated']} not evaluated)" if c.get("checks_not_evaluated") else ""


def _total(blocks: list[dict]) -> dict:
    return {k: sum(b["counts"].get(k, 0) for b in blocks) for k in _SUMMED}


def _disabled_papers() -> list[str]:
    papers = load_yaml(REPO_ROOT / "config" / "config.yaml")["papers"]
    return [slug for slug, on in papers.items() if not on]


def render_index(scale: str = "quick") -> str:
    """Markdown of the index over the quick and full reports that exist (and the smoke ones when ``scale`` is
    smoke), and the papers left out of `rule all`."""
    lines = [_INTRO]
    disabled = _disabled_papers()
    if disabled:
        lines += ["## Papers not run by the workflow", "",
                  "These folders are registered but disabled in `config/config.yaml` (`papers.<slug>: false`); "
                  "their unit tests still run. Each paper's README says why.", "",
                  *[f"- `{slug}`" for slug in disabled], ""]
    for shown in SCALES:
        if shown == "smoke" and scale != "smoke":
            continue
        blocks = _blocks(shown)
        if not blocks:
            continue
        judged = "" if shown != "smoke" else " (verdicts not judged at smoke scale)"
        total = _total(blocks)
        lines += [f"## Scale `{shown}`{judged}", "", f"All {len(blocks)} papers: {count_line(total)}; "
                  f"paper claims without a control: {total['no_control']}.", "", *_HEADER,
                  *[_row(b) for b in blocks], ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Render reports/README.md.")
    parser.add_argument("--out", default=str(REPO_ROOT / "reports" / "README.md"))
    parser.add_argument("--scale", default="quick", choices=SCALES, help="the scale just run")
    args = parser.parse_args(argv)
    atomic_write_text(args.out, render_index(args.scale))
    return 0


if __name__ == "__main__":
    sys.exit(main())
