"""The audit gate: exit non-zero when a verdict differs from ``expected`` or from the committed report.

``python -m shared.claims.gate --scale quick`` checks every enabled paper of ``config/config.yaml``:
1. its report ``reports/<scale>/<slug>.md`` exists and carries a verdict block;
2. every verdict equals the claim's ``expected`` (at smoke scale only "missing metric" fails: smoke numbers
   are not judged);
3. when the report is tracked by git, its verdicts equal those of the committed version (a stale committed
   report is a defect).
"""
from __future__ import annotations

import argparse
import subprocess
import sys

from shared.claims.check import MISSING
from shared.claims.report import parse_audit_block
from shared.config import REPO_ROOT, SCALES, enabled_papers, load_yaml

__all__ = ["audit_paper", "main"]


def _committed_block(rel_path: str) -> dict | None:
    out = subprocess.run(["git", "show", f"HEAD:{rel_path}"], cwd=REPO_ROOT, capture_output=True, text=True)
    return parse_audit_block(out.stdout) if out.returncode == 0 else None


def audit_paper(slug: str, scale: str, *, compare_committed: bool = True) -> list[str]:
    """Problems found in one paper's report (empty when it passes)."""
    rel = f"reports/{scale}/{slug}.md"
    path = REPO_ROOT / rel
    if not path.is_file():
        return [f"{slug}: {rel} is missing (run the workflow at scale {scale})"]
    block = parse_audit_block(path.read_text(encoding="utf-8"))
    if block is None:
        return [f"{slug}: {rel} has no audit block"]
    problems = []
    for claim_id, verdict in block["verdicts"].items():
        expected = block["expected"][claim_id]
        if verdict == MISSING or (scale != "smoke" and verdict != expected):
            problems.append(f"{slug}: claim {claim_id!r} is {verdict}, expected {expected}")
    if compare_committed and scale != "smoke":
        committed = _committed_block(rel)
        if committed is not None and committed["verdicts"] != block["verdicts"]:
            changed = sorted(k for k in set(committed["verdicts"]) | set(block["verdicts"])
                             if committed["verdicts"].get(k) != block["verdicts"].get(k))
            problems.append(f"{slug}: committed {rel} is stale; verdicts differ for {changed}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Fail when any audit verdict differs from what is expected.")
    parser.add_argument("--scale", default="quick", choices=SCALES)
    parser.add_argument("--papers", nargs="*", help="slugs (default: every enabled paper)")
    parser.add_argument("--no-compare-committed", action="store_true")
    args = parser.parse_args(argv)
    slugs = args.papers or enabled_papers(load_yaml(REPO_ROOT / "config" / "config.yaml"))
    problems = [p for slug in slugs
                for p in audit_paper(slug, args.scale, compare_committed=not args.no_compare_committed)]
    if problems:
        print(f"audit FAILED at scale {args.scale} ({len(problems)} problem(s)):", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print(f"audit passed at scale {args.scale}: {len(slugs)} paper(s), every verdict as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
