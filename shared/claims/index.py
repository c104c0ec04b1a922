"""Render ``reports/README.md``: one table per scale over the reports that exist."""
from __future__ import annotations

import argparse
import sys

from shared.claims.report import parse_audit_block
from shared.config import REPO_ROOT, SCALES
from shared.results import atomic_write_text

__all__ = ["render_index", "main"]

_INTRO = """# Audit reports

Every paper has one report per scale, `reports/<scale>/<slug>.md`, rendered by the workflow from the paper's
`claims.yaml` and the metrics its experiments wrote. A report gives, claim by claim: the statement and its
source in the paper, the paper's value, ours (with its spread over seeds where the claim averages seeds), the
threshold and where it comes from (`paper`, `theory`, or `calibrated` on our own runs), and the verdict. It
then shows the figures, the performance comparison, the deviations from the paper and the provenance (commit,
seeds, package versions, solver backends, hardware, wall time).

How to audit: read a paper's fidelity paragraph first (which parts of the method are exact and which are
reconstructed), then the claims table. `make audit` fails when any verdict differs from the `expected` that
the maintainers recorded in `claims.yaml`, or when a regenerated quick report disagrees with the committed
one. The quick-scale reports and figures are committed, so they can be read without running anything.
"""


def _rows(scale: str) -> list[str]:
    reports = sorted((REPO_ROOT / "reports" / scale).glob("*.md"))
    rows = []
    for path in reports:
        block = parse_audit_block(path.read_text(encoding="utf-8"))
        if block is None:
            continue
        rows.append(f"| [{block['slug']}]({scale}/{path.name}) | {block['title']} | {block['fidelity']} | "
                    f"{block['reproduced']} / {block['claims']} | {block['wall_s']:.0f} | `{block['commit'][:10]}` |")
    return rows


def _disabled_papers() -> list[str]:
    from shared.config import load_yaml

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
        rows = _rows(shown)
        if not rows:
            continue
        judged = "" if shown != "smoke" else " (verdicts not judged at smoke scale)"
        lines += [f"## Scale `{shown}`{judged}", "",
                  "| paper | title | fidelity | claims reproduced | experiment wall (s) | commit |",
                  "|---|---|---|---|---|---|", *rows, ""]
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
