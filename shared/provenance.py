"""Provenance of a run: code version, scale, seeds, package versions, solver backends, hardware, wall time."""
from __future__ import annotations

import platform
import subprocess
from importlib import metadata

from shared.config import REPO_ROOT

__all__ = ["git_state", "package_versions", "hardware", "collect", "TRACKED_PACKAGES"]

TRACKED_PACKAGES = (
    "numpy", "scipy", "pandas", "torch", "cvxpy", "clarabel", "scs", "mosek", "pot", "scikit-learn",
    "networkx", "pepit", "snakemake", "matplotlib", "transformers", "llvmlite", "z3-solver",
)


CODE_PATHS = ("Snakefile", "workflow", "config", "envs", "shared", "papers")


def git_state() -> dict:
    """``{"commit": sha or "unknown", "dirty": bool}`` of the repository the code runs from.

    ``dirty`` is True when code or configuration (:data:`CODE_PATHS`) differs from the commit; generated
    reports and figures do not count.
    """
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"commit": "unknown", "dirty": True}
        status = git("status", "--porcelain", "--untracked-files=normal", "--", *CODE_PATHS)
        return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": True}


def package_versions(names=TRACKED_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that results depend on (absent ones are omitted)."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware() -> dict:
    """CPU model and core count, and the GPU when torch sees one (torch is not imported if absent)."""
    import os
    import sys

    info = {"cpu": _cpu_model(), "cores": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version(), "gpu": None}
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    return info


def collect(**fields) -> dict:
    """A provenance record: git state, package versions and hardware, plus the given fields."""
    return {**git_state(), "packages": package_versions(), "hardware": hardware(), **fields}
