"""The audit gate: exit non-zero when any report cannot be trusted as it stands.

``python -m shared.claims.gate --scale quick`` checks every enabled paper of ``config/config.yaml``:
1. its report ``reports/<scale>/<slug>.md`` exists and carries an audit-v2 block;
2. no claim has a missing metric, and (above smoke) every verdict equals the claim's ``expected``;
3. every official claim of the paper is addressed or given a reason (``official_not_addressed``);
4. a claim decided on samples has at least 5 of them at a judged scale, or says why not (``few_samples``);
5. the report is fresh: rendered with no uncommitted change to the paper's inputs, and none of them (the paper
   folder without tests, the shared modules it imports, the report renderer) changed since the commit it records;
6. when the report is tracked by git, the committed version is fresh in the same sense and its verdicts equal
   the regenerated ones (a stale committed report is a defect).

``--scale full`` checks the papers whose full-scale report is committed (full runs take hours and are made by
hand, so CI does not recompute them): the small ``metrics.json`` and ``provenance.json`` files under
``results/full/`` are committed with the report, the gate renders the report again from them and fails when a
verdict differs from the committed report or from ``expected``; a report older than the paper's code is
printed as a warning (its header names the commit it was computed at), not a failure, and so is an experiment
whose committed ``provenance.json`` records a commit after which code that experiment can run, its entry in
``config.yaml`` or the paper's data files changed (:func:`shared.experiment_code.experiment_changes`; a report
rendered again is fresh, but those numbers are as old as the run).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

from shared.claims.check import MISSING
from shared.claims.freshness import changed_inputs
from shared.claims.report import parse_audit_block, render_report
from shared.claims.stats import MIN_SAMPLES
from shared.config import REPO_ROOT, SCALES, enabled_papers, load_yaml
from shared.experiment_code import experiment_changes

__all__ = ["audit_block", "freshness_problems", "metrics_age_warnings", "audit_paper", "audit_full_paper",
           "full_scale_papers", "main"]


def _committed_text(rel_path: str) -> str | None:
    out = subprocess.run(["git", "show", f"HEAD:{rel_path}"], cwd=REPO_ROOT, capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def freshness_problems(slug: str, block: dict, what: str, root=REPO_ROOT) -> list[str]:
    """Why the report ``block`` of ``slug`` (described as ``what``) is not rendered from the current code."""
    if block.get("inputs_dirty"):
        return [f"{slug}: {what} was rendered while the paper's code, config or claims had uncommitted changes "
                f"(commit them, then rerun the workflow)"]
    changed = changed_inputs(slug, block["commit"], root)
    if changed is None:
        return [f"{slug}: {what} records commit {block['commit'][:12]}, which this repository does not have"]
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        return [f"{slug}: {what} is stale: rendered at {block['commit'][:10]}, and since then {shown} changed"]
    return []


def audit_block(slug: str, scale: str, block: dict) -> list[str]:
    """Problems of one report's audit block that do not need git (verdicts, coverage, sample counts)."""
    problems, not_run = [], set(block.get("not_run_claims", ()))
    for claim_id, verdict in block["verdicts"].items():
        expected = block["expected"][claim_id]
        if verdict == MISSING or (scale != "smoke" and verdict != expected and claim_id not in not_run):
            problems.append(f"{slug}: claim {claim_id!r} is {verdict}, expected {expected}")
    problems += [f"{slug}: {p}" for p in block.get("official_problems", [])]
    if scale != "smoke":
        few = set(block.get("few_samples_reason", []))
        problems += [f"{slug}: claim {cid!r} is decided on {n} samples (< {MIN_SAMPLES}) without saying why "
                     f"(few_samples)" for cid, n in block.get("samples_n", {}).items()
                     if n < MIN_SAMPLES and cid not in few]
    return problems


def _report_block(slug: str, scale: str) -> tuple[str, dict | None, list[str]]:
    """(relative path, audit-v2 block or None, problems) of the report ``reports/<scale>/<slug>.md``."""
    rel = f"reports/{scale}/{slug}.md"
    path = REPO_ROOT / rel
    if not path.is_file():
        return rel, None, [f"{slug}: {rel} is missing (run the workflow at scale {scale})"]
    block = parse_audit_block(path.read_text(encoding="utf-8"))
    if block is None or block.get("version") != 2:
        return rel, None, [f"{slug}: {rel} has no audit-v2 block (render it again with the workflow)"]
    return rel, block, []


def _changed_verdicts(one: dict, other: dict) -> list[str]:
    """Claim ids whose verdict differs between two audit blocks."""
    a, b = one["verdicts"], other["verdicts"]
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def audit_paper(slug: str, scale: str, *, compare_committed: bool = True, check_fresh: bool = True) -> list[str]:
    """Problems found in one paper's report (empty when it passes)."""
    rel, block, problems = _report_block(slug, scale)
    if block is None:
        return problems
    problems = audit_block(slug, scale, block)
    if check_fresh and scale != "smoke":
        problems += freshness_problems(slug, block, rel)
    if compare_committed and scale != "smoke":
        text = _committed_text(rel)
        committed = parse_audit_block(text) if text is not None else None
        if committed is not None:
            if committed.get("version") != 2:
                problems.append(f"{slug}: committed {rel} predates audit v2")
            else:
                if check_fresh:
                    problems += freshness_problems(slug, committed, f"committed {rel}")
                if changed := _changed_verdicts(committed, block):
                    problems.append(f"{slug}: committed {rel} disagrees with the regenerated one for {changed}")
    return problems


def full_scale_papers(root=REPO_ROOT) -> list[str]:
    """Slugs whose ``reports/full/<slug>.md`` is tracked by git."""
    out = subprocess.run(["git", "ls-files", "reports/full/*.md"], cwd=root, capture_output=True, text=True)
    return sorted(line.rsplit("/", 1)[-1][:-3] for line in out.stdout.split())


def audit_full_paper(slug: str) -> tuple[list[str], list[str]]:
    """(problems, warnings) of one committed full-scale report: re-rendered from the committed metrics, its
    verdicts must equal the file's and ``expected``; staleness is a warning."""
    rel, block, problems = _report_block(slug, "full")
    if block is None:
        return problems, []
    problems = audit_block(slug, "full", block)
    if changed := _changed_verdicts(parse_audit_block(render_report(slug, "full")), block):
        problems.append(f"{slug}: {rel} disagrees with the report rendered again from results/full for {changed}")
    return problems, freshness_problems(slug, block, rel) + metrics_age_warnings(slug)


def metrics_age_warnings(slug: str, root=REPO_ROOT) -> list[str]:
    """One line per group of ``slug``'s committed full-scale experiments whose run (its ``provenance.json``)
    is older than what it depends on (:func:`~shared.experiment_code.experiment_changes`: the definitions the
    experiment can reach, the shared modules they import, its config entry, the paper's data files); a run with
    uncommitted changes is named as such."""
    groups: dict[tuple, list[str]] = {}
    for prov in sorted((root / "results" / "full" / slug).glob("*/provenance.json")):
        record = json.loads(prov.read_text(encoding="utf-8"))
        experiment, commit = prov.parent.name, str(record.get("commit", "unknown"))
        changed = experiment_changes(slug, experiment, commit, root)
        key = (commit, bool(record.get("dirty", True)), None if changed is None else tuple(changed))
        groups.setdefault(key, []).append(experiment)
    lines = []
    for (commit, dirty, changed), experiments in sorted(groups.items(), key=lambda kv: kv[1]):
        names = ", ".join(experiments)
        if dirty:
            lines.append(f"{slug}: full-scale experiment(s) {names} ran with uncommitted code changes at {commit[:10]}")
        if changed is None:
            lines.append(f"{slug}: full-scale experiment(s) {names} record commit {commit[:12]}, which this "
                         f"repository does not have")
        elif changed:
            shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
            lines.append(f"{slug}: full-scale experiment(s) {names} ran at {commit[:10]}; since then {shown} changed "
                         f"(their metrics are as old as that run)")
    return lines


def _fail(scale: str, problems: list[str]) -> int:
    """Print ``problems`` to stderr under one heading; the exit status of a failed gate."""
    print(f"audit FAILED at scale {scale} ({len(problems)} problem(s)):", file=sys.stderr)
    for p in problems:
        print(f"  - {p}", file=sys.stderr)
    return 1


def _main_full(slugs: list[str]) -> int:
    problems, warnings = [], []
    for slug in slugs:
        p, w = audit_full_paper(slug)
        problems, warnings = problems + p, warnings + w
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if problems:
        return _fail("full", problems)
    print(f"audit passed at scale full: {len(slugs)} committed full-scale report(s) ({', '.join(slugs) or 'none'}) "
          f"render again to the same verdicts, every verdict as expected")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Fail when any audit report cannot be trusted as it stands.")
    parser.add_argument("--scale", default="quick", choices=SCALES)
    parser.add_argument("--papers", nargs="*", help="slugs (default: every enabled paper)")
    parser.add_argument("--no-compare-committed", action="store_true")
    parser.add_argument("--no-freshness", action="store_true", help="skip the freshness checks (for local drafts)")
    args = parser.parse_args(argv)
    if args.scale == "full":
        return _main_full(args.papers or full_scale_papers())
    slugs = args.papers or enabled_papers(load_yaml(REPO_ROOT / "config" / "config.yaml"))
    problems = [p for slug in slugs for p in audit_paper(
        slug, args.scale, compare_committed=not args.no_compare_committed, check_fresh=not args.no_freshness)]
    if problems:
        return _fail(args.scale, problems)
    print(f"audit passed at scale {args.scale}: {len(slugs)} paper(s), every verdict as expected, every report fresh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
