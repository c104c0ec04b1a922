"""Fixtures shared by the cross-cutting tests."""
import pytest

from tests.helpers import copy_repository, snakemake


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """A copy of the repository in which the whole DAG has run at smoke scale (one run per test session: the
    end-to-end tests and the SLURM test's local reference read the same outputs)."""
    work = copy_repository(tmp_path_factory.mktemp("smoke"))
    out = snakemake("--cores", "2", "--config", "scale=smoke", cwd=work)
    assert out.returncode == 0, out.stdout[-6000:]
    return work
