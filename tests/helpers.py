"""Helpers for the cross-cutting tests: the repository root, its papers, and snakemake runs."""
import os
import shutil
import subprocess
import sys
from pathlib import Path



REPO = Path(__file__).resolve().parent.parent


def paper_slugs() -> list[str]:
    """Every paper folder (a directory of papers/ with a config.yaml or any python file)."""
    return sorted(p.name for p in (REPO / "papers").iterdir()
                  if p.is_dir() and not p.name.startswith(("_", ".")) and p.name != "__pycache__")


def snakemake(*args, cwd=REPO, timeout=1800, env=None) -> subprocess.CompletedProcess:
    """Run snakemake with this interpreter; returns the completed process (stdout and stderr merged).

    A run in a copy of the repository shares this checkout's cache of converted language models
    (``REPRO_LM_CACHE``, keyed by the weights' SHA-256), so that the copy does not convert them again."""
    from shared.lm.pretrained import CACHE_ENV, lm_cache_dir

    env = dict(os.environ if env is None else env)
    env.setdefault(CACHE_ENV, str(lm_cache_dir()))
    return subprocess.run([sys.executable, "-m", "snakemake", "--nolock", *args], cwd=cwd, text=True, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


def copy_repository(dest: Path) -> Path:
    """Copy what git would commit (tracked and untracked-but-not-ignored files, generated smoke outputs
    excluded) to ``dest``: a file missing from the repository fails there as on a fresh clone."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(src), dest / rel)
        elif src.is_file() and not rel.startswith(("results/", "reports/smoke/", "figures/smoke/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest




def timing_experiments(root: Path, scale: str = "smoke") -> set[str]:
    """``<slug>/<experiment>`` of the experiments whose config says ``timing: true`` (wall-clock metrics)."""
    from shared.config import load_paper_config

    out = set()
    for path in (root / "papers").glob("*/config.yaml"):
        for name, entry in load_paper_config(path)[scale]["experiments"].items():
            if entry.get("timing"):
                out.add(f"{path.parent.name}/{name}")
    return out


def deterministic_metrics(root: Path, scale: str = "smoke", slugs=None) -> dict[str, bytes]:
    """Bytes of every ``metrics.json`` under ``results/<scale>`` (of ``slugs`` when given), except those of
    timing experiments, keyed by their path relative to ``root``."""
    timing = timing_experiments(root, scale)
    base = root / "results" / scale
    paths = sorted(base.rglob("metrics.json")) if slugs is None else \
        sorted(p for slug in slugs for p in (base / slug).rglob("metrics.json"))
    return {str(p.relative_to(root)): p.read_bytes() for p in paths
            if f"{p.parent.parent.name}/{p.parent.name}" not in timing}
