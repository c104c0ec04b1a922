"""Is a report rendered from the code it describes?

A report records the commit it was rendered at and whether the paper's inputs had uncommitted changes then.
It is fresh when none of its inputs changed between that commit and ``HEAD``: the paper's folder (without its
tests), the shared modules the paper imports (:mod:`shared.codedeps`), the modules that render a report (the
renderer :mod:`shared.claims.report` and what it imports, not the gate that checks reports) and the claims
schema. Whether a full-scale experiment's metrics are older than the code that computes them is decided per
experiment by :mod:`shared.experiment_code`.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from shared.codedeps import paper_dependencies, shared_closure
from shared.config import REPO_ROOT

__all__ = ["engine_inputs", "report_inputs", "inputs_dirty", "changed_inputs"]

_RENDERER = "shared/claims/report.py"
_ENGINE_DATA = ["shared/claims/official_claims.json", "workflow/schemas/claims.schema.json"]


def engine_inputs(root: Path = REPO_ROOT) -> list[str]:
    """The files that render a report: the renderer, the shared modules it imports, the official claims and the
    claims schema."""
    renderer = [_RENDERER] if Path(root, _RENDERER).is_file() else []
    return sorted({_RENDERER} | shared_closure(renderer, root) | set(_ENGINE_DATA))


def report_inputs(slug: str, root: Path = REPO_ROOT) -> list[str]:
    """Paths (files and folders) whose change makes the reports of ``slug`` stale."""
    paper = Path(root, "papers", slug)
    own = sorted(p.relative_to(root).as_posix() for p in paper.iterdir()
                 if p.name not in ("tests", "__pycache__"))
    shared = [p for p in paper_dependencies(slug, plots=True, root=root) if p.startswith("shared/")]
    return sorted(set(own) | set(shared) | set(engine_inputs(root)))


def _git(*args, root: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)


def inputs_dirty(slug: str, root: Path = REPO_ROOT) -> bool:
    """True when a report input has uncommitted changes (or git cannot tell)."""
    out = _git("status", "--porcelain", "--untracked-files=normal", "--", *report_inputs(slug, root), root=root)
    lines = [ln for ln in out.stdout.splitlines() if "__pycache__" not in ln]
    return out.returncode != 0 or bool(lines)


def changed_inputs(slug: str, commit: str, root: Path = REPO_ROOT) -> list[str] | None:
    """Report inputs of ``slug`` that differ between ``commit`` and ``HEAD`` (None when ``commit`` is unknown to
    git)."""
    if _git("cat-file", "-e", f"{commit}^{{commit}}", root=root).returncode != 0:
        return None
    out = _git("diff", "--name-only", commit, "HEAD", "--", *report_inputs(slug, root), root=root)
    return sorted(ln for ln in out.stdout.splitlines() if ln)
