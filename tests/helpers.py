"""Helpers for the cross-cutting tests: the repository root, its papers, and snakemake runs."""
import subprocess
import sys
from pathlib import Path



REPO = Path(__file__).resolve().parent.parent


def paper_slugs() -> list[str]:
    """Every paper folder (a directory of papers/ with a config.yaml or any python file)."""
    return sorted(p.name for p in (REPO / "papers").iterdir()
                  if p.is_dir() and not p.name.startswith(("_", ".")) and p.name != "__pycache__")


def snakemake(*args, cwd=REPO, timeout=1800) -> subprocess.CompletedProcess:
    """Run snakemake with this interpreter; returns the completed process (stdout and stderr merged)."""
    return subprocess.run([sys.executable, "-m", "snakemake", "--nolock", *args], cwd=cwd, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


