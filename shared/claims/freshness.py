"""Is a report rendered from the code it describes?

A report records the commit it was rendered at and whether the paper's inputs had uncommitted changes then.
It is fresh when none of its inputs changed between that commit and ``HEAD``: the paper's folder (without its
tests), the shared modules the paper imports (:mod:`shared.codedeps`), the audit engine and the claims schema.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from shared.codedeps import paper_dependencies
from shared.config import REPO_ROOT

__all__ = ["report_inputs", "metric_inputs", "inputs_dirty", "changed_inputs"]

_ENGINE = ["shared/claims", "workflow/schemas/claims.schema.json"]
_NOT_METRIC_INPUTS = ("README.md", "claims.yaml", "plots.py")   # change a report or figure, never a metric


def report_inputs(slug: str, root: Path = REPO_ROOT) -> list[str]:
    """Paths (files and folders) whose change makes the reports of ``slug`` stale."""
    paper = Path(root, "papers", slug)
    own = sorted(p.relative_to(root).as_posix() for p in paper.iterdir()
                 if p.name not in ("tests", "__pycache__"))
    shared = [p for p in paper_dependencies(slug, plots=True, root=root) if p.startswith("shared/")]
    return sorted(set(own) | set(shared) | set(_ENGINE))


def metric_inputs(slug: str, root: Path = REPO_ROOT) -> list[str]:
    """The inputs that can change an experiment's metrics: the paper's folder without its tests, README, claims
    and plotting code, and the shared modules its experiment code imports (not the audit engine)."""
    paper = Path(root, "papers", slug)
    own = sorted(p.relative_to(root).as_posix() for p in paper.iterdir()
                 if p.name not in ("tests", "__pycache__") + _NOT_METRIC_INPUTS)
    shared = [p for p in paper_dependencies(slug, plots=False, root=root)
              if p.startswith("shared/") and not p.startswith("shared/claims/")]
    return sorted(set(own) | set(shared))


def _git(*args, root: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)


def inputs_dirty(slug: str, root: Path = REPO_ROOT) -> bool:
    """True when a report input has uncommitted changes (or git cannot tell)."""
    out = _git("status", "--porcelain", "--untracked-files=normal", "--", *report_inputs(slug, root), root=root)
    lines = [ln for ln in out.stdout.splitlines() if "__pycache__" not in ln]
    return out.returncode != 0 or bool(lines)


def changed_inputs(slug: str, commit: str, root: Path = REPO_ROOT, *, metrics_only: bool = False) -> list[str] | None:
    """Inputs of ``slug`` that differ between ``commit`` and ``HEAD`` (None when ``commit`` is unknown to git);
    with ``metrics_only`` only the :func:`metric_inputs`."""
    if _git("cat-file", "-e", f"{commit}^{{commit}}", root=root).returncode != 0:
        return None
    inputs = metric_inputs(slug, root) if metrics_only else report_inputs(slug, root)
    out = _git("diff", "--name-only", commit, "HEAD", "--", *inputs, root=root)
    return sorted(ln for ln in out.stdout.splitlines() if ln)
