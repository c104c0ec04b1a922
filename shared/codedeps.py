"""Which files of the shared package a paper's code depends on (imports, followed transitively).

Used by the workflow (an experiment reruns only when code it imports changes) and by the audit's freshness
gate (a committed report is stale when code it was rendered from has changed since). Imports are read
statically with :mod:`ast`: ``import shared.x``, ``from shared.x import y`` and ``from shared import x`` all
make ``shared/x.py`` (or ``shared/x/__init__.py``) a dependency; a package's ``__init__`` is a dependency of
each of its modules.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from shared.config import REPO_ROOT

__all__ = ["module_file", "shared_imports", "shared_closure", "paper_sources", "paper_dependencies"]


def module_file(module: str, root: Path = REPO_ROOT) -> Path | None:
    """The file of a dotted module name under ``root`` (``shared.claims.check`` -> shared/claims/check.py)."""
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@lru_cache(maxsize=None)
def _shared_imports_cached(path: str, root: str) -> frozenset[str]:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    found = set()
    for name in _imported_modules(tree):
        if name != "shared" and not name.startswith("shared."):
            continue
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):  # the packages on the way are imported too
            f = module_file(".".join(parts[:depth]), Path(root))
            if f is not None:
                found.add(f.relative_to(root).as_posix())
    return frozenset(found)


def shared_imports(path: str | Path, root: Path = REPO_ROOT) -> set[str]:
    """Repository-relative files of the ``shared`` modules that one Python file imports directly."""
    return set(_shared_imports_cached(str(Path(path).resolve()), str(Path(root).resolve())))


def shared_closure(files, root: Path = REPO_ROOT) -> set[str]:
    """The shared modules the given files import, followed through the shared modules' own imports."""
    todo = [Path(root, f) if not Path(f).is_absolute() else Path(f) for f in files]
    seen: set[str] = set()
    while todo:
        for dep in shared_imports(todo.pop(), root):
            if dep not in seen:
                seen.add(dep)
                todo.append(Path(root, dep))
    return seen


def paper_sources(slug: str, *, plots: bool = False, root: Path = REPO_ROOT) -> list[str]:
    """A paper's own Python files, without its tests and (unless ``plots``) without ``plots.py``."""
    paper = Path(root, "papers", slug)
    return sorted(p.relative_to(root).as_posix() for p in paper.rglob("*.py")
                  if "tests" not in p.relative_to(paper).parts and (plots or p.name != "plots.py"))


def paper_dependencies(slug: str, *, plots: bool = False, root: Path = REPO_ROOT) -> list[str]:
    """The paper's own source files and every shared module they import (transitively), sorted."""
    own = paper_sources(slug, plots=plots, root=root)
    return sorted(set(own) | shared_closure(own, root))
