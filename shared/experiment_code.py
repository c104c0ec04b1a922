"""Which code one experiment of a paper can run, read statically at any commit.

An experiment is the function that its paper's ``experiments.py`` maps to it in ``EXPERIMENTS``; the runner
(``shared.experiment.main``) calls it. From these two, every top-level definition (function, class, assignment,
import) of the modules of ``papers`` and ``shared`` that reached code names is followed: ``from .x import y``,
``import papers.<slug>.x as m`` with ``m.y``, imports inside functions, and strings that name a module
(``"papers.<slug>._worker:fn"``, run in a child process). A module that is imported also runs its top-level
statements, its top-level imports and its packages' ``__init__``: those count too.

:func:`experiment_code` maps every reached definition to its source as ``ast.unparse`` prints it with docstrings
removed, so formatting, comments and docstrings do not count. The reach is an over-approximation (a local
variable that shadows a module-level name pulls that name's definition in; a module used other than through
``m.y`` counts as a whole) and misses only code reached through ``getattr`` on a module object or ``importlib``,
which the papers do not use on their own modules, and side effects of a module-level assignment whose name no
reached code uses.

:func:`experiment_changes` compares the reach of one experiment at a past commit (the one a result records in its
``provenance.json``) with ``HEAD``, together with the experiment's entry in ``config.yaml`` (its ``params``,
``inputs``, threads and the paper's seed) and the paper's files that are neither Python nor documentation.
"""
from __future__ import annotations

import ast
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import yaml

from shared.config import REPO_ROOT

__all__ = ["Snapshot", "snapshot", "experiment_code", "experiment_config", "experiment_changes"]

RUNNER = "shared.experiment"     # its main() runs every experiment
IMPORTED = "<import>"   # reach a module only as far as importing it runs (its top-level statements and imports)
# Files of a paper folder that never change a metric: documentation, the audit's inputs, figure code, the
# parameter schema (it validates, it fills in nothing) and the config (compared entry by entry instead).
NOT_CODE = ("README.md", "claims.yaml", "plots.py", "params.schema.json", "config.yaml")
_MODULE_STRING = re.compile(r"\b((?:papers|shared)(?:\.[A-Za-z_]\w*)+)(?::([A-Za-z_]\w*))?")


class Snapshot:
    """The repository's ``papers/`` and ``shared/`` files at one commit (``commit=None``: the working tree)."""

    def __init__(self, root: Path = REPO_ROOT, commit: str | None = None):
        self.root, self.commit = Path(root), commit

    @property
    @lru_cache(maxsize=None)
    def files(self) -> frozenset[str]:
        if self.commit is None:
            return frozenset(p.relative_to(self.root).as_posix() for top in ("papers", "shared")
                             for p in (self.root / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        out = _git(self.root, "ls-tree", "-r", "--name-only", self.commit, "--", "papers", "shared")
        return frozenset(out.splitlines())

    @lru_cache(maxsize=None)
    def text(self, path: str) -> str | None:
        if path not in self.files:
            return None
        if self.commit is None:
            return (self.root / path).read_text(encoding="utf-8")
        return _git(self.root, "show", f"{self.commit}:{path}")

    @lru_cache(maxsize=None)
    def module(self, path: str) -> "_Module | None":
        text = self.text(path)
        return None if text is None else _Module(path, text, self)

    @lru_cache(maxsize=None)
    def yaml(self, path: str):
        """A YAML file parsed (None when absent)."""
        text = self.text(path)
        return None if text is None else yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

    def module_path(self, dotted: str) -> str | None:
        """``papers.goma.methods`` -> ``papers/goma/methods.py`` (or the package's ``__init__.py``)."""
        base = dotted.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if candidate in self.files:
                return candidate
        return None


@lru_cache(maxsize=64)
def snapshot(commit: str | None, root: Path = REPO_ROOT) -> Snapshot:
    """One :class:`Snapshot` per commit, so that files are read and parsed once."""
    return Snapshot(root, commit)


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise LookupError(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]


def _split_import(stmt: ast.stmt) -> list[ast.stmt]:
    """``from m import a, b`` as ``from m import a`` and ``from m import b``, so that each name's definition is
    its own import (adding a name to an import line changes no other name's)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)) and len(stmt.names) > 1:
        return [ast.copy_location(ast.Import(names=[a]) if isinstance(stmt, ast.Import) else
                                  ast.ImportFrom(module=stmt.module, names=[a], level=stmt.level), stmt)
                for a in stmt.names]
    return [stmt]


def _is_main_guard(stmt: ast.stmt) -> bool:
    test = getattr(stmt, "test", None)
    return isinstance(stmt, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) \
        and test.left.id == "__name__"


def _bound_names(stmt: ast.stmt) -> set[str]:
    """Module-level names a top-level statement binds (through any nesting but not inside functions)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    names: set[str] = set()
    for node in _walk_outside_functions(stmt, _OWN_SCOPES):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


class _Module:
    """One Python file: its top-level definitions by name, its other statements and its import bindings."""

    def __init__(self, path: str, text: str, snap: Snapshot):
        self.path, self.snap = path, snap
        self.package = path.rsplit("/", 1)[0].replace("/", ".") if not path.endswith("__init__.py") \
            else path[: -len("/__init__.py")].replace("/", ".")
        tree = ast.parse(text, filename=path)
        _strip_docstrings(tree)
        tree.body = [part for stmt in tree.body for part in _split_import(stmt)]
        self.tree = tree
        self.defs: dict[str, list[ast.stmt]] = {}
        self.always: list[ast.stmt] = []     # statements that bind nothing but run on import
        self.star: list[str] = []            # modules imported with *
        for stmt in tree.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or _is_main_guard(stmt):
                continue
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                self.star.append(self.absolute(stmt))
            names = _bound_names(stmt)
            if not names:
                self.always.append(stmt)
            for name in names:
                self.defs.setdefault(name, []).append(stmt)
        self.bindings = _import_bindings(tree.body, self)
        self.top_level_imports = sorted({dotted for stmt in tree.body if not _is_main_guard(stmt)
                                         for dotted, _ in _import_bindings([stmt], self, nested=False).values()
                                         if dotted.split(".")[0] in ("papers", "shared")})
        self._unparsed: dict[int, str] = {}
        self._refs: dict[int, tuple] = {}

    def references(self, node: ast.AST):
        """:func:`_references` of a statement of this module and the imports inside it (computed once)."""
        if id(node) not in self._refs:
            names, attrs, bare, strings, imports = _references(node)
            local = _bindings_of(imports, self)
            dotted = [k for k in {**self.bindings, **local} if "." in k]
            self._refs[id(node)] = (names, attrs, bare, strings, local, dotted)
        return self._refs[id(node)]

    def source(self, stmts) -> str:
        """The statements as ``ast.unparse`` prints them (docstrings already removed)."""
        for s in stmts:
            if id(s) not in self._unparsed:
                self._unparsed[id(s)] = ast.unparse(s)
        return "\n".join(self._unparsed[id(s)] for s in stmts)

    def absolute(self, node: ast.ImportFrom) -> str:
        """The absolute dotted module of a ``from`` import (relative imports resolved against this package)."""
        if not node.level:
            return node.module or ""
        parts = self.package.split(".")
        base = parts[: len(parts) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_OWN_SCOPES = _FUNCTIONS + (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)  # names bound inside stay


def _walk_outside_functions(stmt: ast.AST, skip: tuple = _FUNCTIONS):
    """``ast.walk`` that does not enter function bodies (nor the other node types in ``skip``)."""
    todo = [stmt]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, skip):
            todo.extend(ast.iter_child_nodes(node))


def _import_bindings(body, module: _Module, nested: bool = True) -> dict[str, tuple[str, str | None]]:
    """Name -> (dotted module, attribute or None for the module itself), for the imports in ``body`` (with
    ``nested`` those inside its functions too; without, only what runs when ``body`` runs)."""
    walk = ast.walk if nested else _walk_outside_functions
    return _bindings_of([n for stmt in body for n in walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))],
                        module)


def _bindings_of(imports, module: _Module) -> dict[str, tuple[str, str | None]]:
    """The names that import statements bind (:func:`_import_bindings`), in order."""
    bindings: dict[str, tuple[str, str | None]] = {}
    for node in imports:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bindings[a.asname] = (a.name, None)
                else:   # ``import a.b.c`` binds ``a``; the dotted key (never an identifier) keeps ``a.b.c``
                    bindings[a.name.split(".")[0]] = (a.name.split(".")[0], None)
                    bindings[a.name] = (a.name, None)
        else:
            base = module.absolute(node)
            for a in node.names:
                if a.name == "*":
                    continue
                sub = f"{base}.{a.name}"
                bindings[a.asname or a.name] = (sub, None) if module.snap.module_path(sub) else (base, a.name)
    return bindings


def _references(node: ast.AST, skip=lambda n: False):
    """Names used in ``node``, (name, attribute) pairs of ``name.attribute``, names used other than as the
    base of an attribute, dotted module names inside string constants, and the import statements inside."""
    names, attrs, bare, strings, imports = set(), set(), set(), set(), []
    todo = [node]
    while todo:
        n = todo.pop()
        if skip(n):
            continue
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            names.add(n.value.id)
            attrs.add((n.value.id, n.attr))
            continue
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
            names.add(n.id)
            bare.add(n.id)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            strings.update(_MODULE_STRING.findall(n.value))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            imports.append(n)
        todo.extend(ast.iter_child_nodes(n))
    return names, attrs, bare, strings, imports


class _Reach:
    """The walk from an experiment's entry through the definitions its code names."""

    def __init__(self, snap: Snapshot):
        self.snap = snap
        self.code: dict[str, str] = {}
        self.files: set[str] = set()
        self._seen: set[tuple[str, str]] = set()
        self._todo: list[tuple[str, str]] = []

    def module(self, dotted: str, name: str = "*") -> None:
        """Reach ``name`` of a module of ``papers`` or ``shared`` (``*``: all of it)."""
        path = self.snap.module_path(dotted)
        if path is None:
            parent, _, last = dotted.rpartition(".")
            if parent and self.snap.module_path(parent):   # papers.x.mod:function strings, attribute paths
                self.module(parent, last)
            return
        if (path, name) not in self._seen:
            self._seen.add((path, name))
            self._todo.append((path, name))

    def statement(self, mod: _Module, node: ast.AST, skip=None) -> None:
        """Reach everything that one statement (or expression) of ``mod`` names."""
        if skip is None:
            names, attrs, bare, strings, local, dotted_keys = mod.references(node)
        else:
            names, attrs, bare, strings, _ = _references(node, skip)
            local, dotted_keys = {}, [k for k in mod.bindings if "." in k]
        for dotted, function in strings:
            self.module(dotted, function or "*")
        for name in names:
            for key in dotted_keys:
                if key.startswith(f"{name}."):
                    self.module(key)                # ``import a.b.c`` then ``a.b.c.f``: all of a.b.c
            bound = local.get(name) or mod.bindings.get(name)
            if bound is None:
                if name in mod.defs:
                    self.module(mod.path[:-3].replace("/", ".").removesuffix(".__init__"), name)
                continue
            dotted, attr = bound
            if dotted.split(".")[0] not in ("papers", "shared"):
                continue
            if attr is not None:
                self.module(dotted, attr)
            elif name in bare:
                self.module(dotted)
            else:
                for alias, used in attrs:
                    if alias == name:
                        self.module(f"{dotted}.{used}") if self.snap.module_path(f"{dotted}.{used}") \
                            else self.module(dotted, used)
            if name in mod.defs:   # an import that binds a name also defined in the module: both count
                self.module(mod.path[:-3].replace("/", ".").removesuffix(".__init__"), name)

    def run(self) -> None:
        while self._todo:
            path, name = self._todo.pop()
            mod = self.snap.module(path)
            key = f"{path}::<module>"
            if key not in self.code:      # first touch: the module is imported, its top-level imports run
                self.files.add(path)
                self.code[key] = mod.source(mod.always)
                package = path.rsplit("/", 1)[0].replace("/", ".")
                if path.endswith("/__init__.py"):
                    package = package.rpartition(".")[0]
                if package:                 # importing a module runs its packages' __init__ first
                    self.module(package, IMPORTED)
                for stmt in mod.always:
                    self.statement(mod, stmt)
                for dotted in mod.star + mod.top_level_imports:
                    self.module(dotted, IMPORTED)
            stmts = [s for n, ss in mod.defs.items() for s in ss] if name == "*" else mod.defs.get(name, [])
            if name == "*":
                self.code[f"{path}::*"] = mod.source(mod.tree.body)
            elif stmts:
                self.code[f"{path}::{name}"] = mod.source(stmts)
            elif mod.star and name != IMPORTED:
                for dotted in mod.star:
                    self.module(dotted, name)
            for stmt in stmts:
                self.statement(mod, stmt)


def experiment_code(slug: str, experiment: str, snap: Snapshot) -> tuple[dict[str, str], set[str]]:
    """(definition -> normalised source, module files imported) for experiment ``experiment`` of paper ``slug``.

    Definitions are keyed ``path::name`` (``path::*`` for a module reached as a whole, ``path::<module>`` for the
    statements a module runs on import)."""
    reach = _Reach(snap)
    reach.module(RUNNER, "main")
    entry = f"papers.{slug}.experiments"
    mod = snap.module(f"papers/{slug}/experiments.py")
    if mod is None:
        raise LookupError(f"papers/{slug}/experiments.py does not exist at {snap.commit or 'the working tree'}")
    table = next((s for s in mod.defs.get("EXPERIMENTS", []) if isinstance(s, ast.Assign)), None)
    dicts = [d for d in ast.walk(table) if isinstance(d, ast.Dict)] if table is not None else []
    keys = [k.value for d in dicts for k in d.keys if isinstance(k, ast.Constant)]
    if experiment not in keys:
        reach.module(entry)      # not statically named: the whole module counts
    else:
        others = {id(v) for d in dicts for k, v in zip(d.keys, d.values)
                  if not (isinstance(k, ast.Constant) and k.value == experiment)}
        chosen = [v for d in dicts for k, v in zip(d.keys, d.values)
                  if isinstance(k, ast.Constant) and k.value == experiment]
        reach.module(entry, IMPORTED)
        reach.code[f"papers/{slug}/experiments.py::EXPERIMENTS[{experiment!r}]"] = ast.unparse(chosen[0])
        reach.statement(mod, table.value, skip=lambda n: id(n) in others)
    reach.run()
    return reach.code, reach.files


def experiment_config(slug: str, experiment: str, snap: Snapshot, scale: str = "full") -> dict | None:
    """What of ``config.yaml`` one experiment reads: the paper's seed and the experiment's ``params``,
    ``inputs`` and threads at ``scale`` (None when the experiment is not configured)."""
    config = snap.yaml(f"papers/{slug}/config.yaml")
    if config is None:
        return None
    entry = ((config.get(scale) or {}).get("experiments") or {}).get(experiment)
    if entry is None:
        return None
    return {"seed": config.get("seed"), "params": entry.get("params"), "inputs": entry.get("inputs", []),
            "threads": (entry.get("resources") or {}).get("threads", 1)}


def _other_files(slug: str, snap: Snapshot) -> dict[str, str | None]:
    prefix = f"papers/{slug}/"
    return {f: snap.text(f) for f in snap.files if f.startswith(prefix) and not f.endswith((".py", ".pyc"))
            and "/tests/" not in f[len(prefix) - 1:] and f[len(prefix):] not in NOT_CODE}


def experiment_changes(slug: str, experiment: str, commit: str, root: Path = REPO_ROOT,
                       scale: str = "full") -> list[str] | None:
    """What differs, for one experiment, between ``commit`` and ``HEAD``: reached definitions
    (``path::name``), shared files, the config entry (``config.yaml: ...``) and the paper's other data files.
    None when ``commit`` is unknown to git."""
    try:
        old = snapshot(_git(root, "rev-parse", "--verify", f"{commit}^{{commit}}").strip(), root)
    except LookupError:
        return None
    new = snapshot(_git(root, "rev-parse", "HEAD").strip(), root)   # by hash: HEAD moves, a hash does not
    changed: list[str] = []
    old_code, _ = experiment_code(slug, experiment, old)
    new_code, _ = experiment_code(slug, experiment, new)
    # a module's top-level statements: absent (not imported) and empty (imported, runs nothing) are the same
    blank = {k: "" for k in set(old_code) | set(new_code) if k.endswith("::<module>")}
    old_code, new_code = {**blank, **old_code}, {**blank, **new_code}
    changed += sorted(k for k in set(old_code) | set(new_code) if old_code.get(k) != new_code.get(k))
    old_cfg, new_cfg = experiment_config(slug, experiment, old, scale), experiment_config(slug, experiment, new,
                                                                                           scale)
    if old_cfg is not None and new_cfg is not None:
        changed += [f"papers/{slug}/config.yaml: {scale}.experiments.{experiment}.{k}" if k != "seed"
                    else f"papers/{slug}/config.yaml: seed" for k in new_cfg if old_cfg.get(k) != new_cfg.get(k)]
    elif old_cfg != new_cfg:
        changed.append(f"papers/{slug}/config.yaml: {scale}.experiments.{experiment}")
    old_other, new_other = _other_files(slug, old), _other_files(slug, new)
    changed += sorted(f for f in set(old_other) | set(new_other) if old_other.get(f) != new_other.get(f))
    return changed
