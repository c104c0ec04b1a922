"""The whole DAG at smoke scale, end to end through the audit, in a temporary copy; then determinism.

The copy (the ``smoke_run`` fixture of ``tests/conftest.py``) holds what git would commit (tracked and
untracked-but-not-ignored files), so a file that is missing from the repository fails here as it would on a
fresh clone.
"""
import subprocess
import sys

import pytest

from tests.helpers import deterministic_metrics, snakemake

pytestmark = pytest.mark.slow


def test_smoke_dag_runs_through_the_audit(smoke_run):
    reports = sorted((smoke_run / "reports" / "smoke").glob("*.md"))
    assert reports, "no smoke report was written"
    assert (smoke_run / "reports" / "README.md").is_file()
    gate = subprocess.run([sys.executable, "-m", "shared.claims.gate", "--scale", "smoke", "--no-compare-committed"],
                          cwd=smoke_run, capture_output=True, text=True)
    assert gate.returncode == 0, gate.stderr


def test_rerun_recomputes_nothing(smoke_run):
    out = snakemake("-n", "--cores", "2", "--config", "scale=smoke", cwd=smoke_run)
    assert out.returncode == 0 and "Nothing to be done" in out.stdout, out.stdout[-3000:]


def test_smoke_metrics_are_byte_identical_when_recomputed(smoke_run):
    """Every experiment whose metrics must be byte-identical runs again, with everything it depends on
    (``--forceall`` on its metrics file as target); figures, reports and timing experiments do not."""
    first = deterministic_metrics(smoke_run)
    out = snakemake(*first, "--cores", "2", "--config", "scale=smoke", "--forceall", cwd=smoke_run)
    assert out.returncode == 0, out.stdout[-6000:]
    second = deterministic_metrics(smoke_run)
    assert first.keys() == second.keys() and first
    differing = [k for k in first if first[k] != second[k]]
    assert differing == [], f"metrics that differ between two identical smoke runs: {differing}"
