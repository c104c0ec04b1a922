"""The workflow on a real single-node SLURM cluster started on this machine (tests/slurm/cluster.py).

Runs the smoke scale of one paper through ``--profile workflow/profiles/slurm``, checks that the jobs went
through ``sbatch`` and that their outputs equal a local run's, that the audit passes, and that a job killed
by ``scancel`` fails the run while a rerun completes it without recomputing finished jobs. Skipped only where
a cluster cannot be started at all (not root, or SLURM missing and no apt-get).
"""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from shared.config import enabled_papers, load_yaml
from tests.helpers import REPO, copy_repository, deterministic_metrics, snakemake
from tests.slurm.cluster import DAEMONS, LocalCluster, _binary

pytestmark = pytest.mark.slow

# The client-side settings a cluster without an accounting database needs; a real cluster uses the defaults
# (sacct for status, an account from sacctmgr or --default-resources slurm_account=...).
# (a local cluster also polls more often than the profile's default: its jobs take seconds, not hours).
LOCAL_CLUSTER_ARGS = ["--profile", str(REPO / "workflow" / "profiles" / "slurm"), "--slurm-no-account",
                      "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1",
                      "--seconds-between-status-checks", "2", "--latency-wait", "5", "--slurm-keep-successful-logs"]
# One paper with a light, numpy-only smoke scale and a DAG of several experiments, its figures and its report
# (the pilot; others stand in if it is disabled). Every job goes through sbatch, each one a snakemake process of
# its own, so every further paper adds minutes to the test suite without testing another code path.
_LIGHT = ("goma", "success_conditioning", "dr_assortment", "pf_minimax", "robust_sim")
PAPERS = [s for s in _LIGHT if s in enabled_papers(load_yaml(REPO / "config" / "config.yaml"))][:1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("a local SLURM cluster needs root (slurmd runs as root)")
    if not all(_binary(d) for d in DAEMONS) and not shutil.which("apt-get"):
        pytest.skip("SLURM is not installed and there is no apt-get to install it")
    local = LocalCluster(tmp_path_factory.mktemp("slurm"))
    local.start()
    yield local
    local.stop()


def test_smoke_papers_run_through_sbatch_and_match_a_local_run(cluster, smoke_run, tmp_path):
    on_slurm = copy_repository(tmp_path / "slurm")
    out = snakemake(*PAPERS, *LOCAL_CLUSTER_ARGS, "--config", "scale=smoke", cwd=on_slurm, env=cluster.env())
    assert out.returncode == 0, out.stdout[-6000:]
    submitted = out.stdout.count("has been submitted with SLURM jobid")
    assert submitted >= 3 * len(PAPERS), out.stdout[-3000:]
    job_ids = set(re.findall(r"submitted with SLURM jobid (\d+)", out.stdout))
    logs = {p.stem for p in (on_slurm / ".snakemake" / "slurm_logs").rglob("*.log")}
    assert job_ids and job_ids <= logs, f"SLURM job ids {sorted(job_ids)} without their logs {sorted(logs)}"

    # the local reference is the session's smoke run of the whole DAG (tests/conftest.py)
    assert deterministic_metrics(on_slurm, slugs=PAPERS) == deterministic_metrics(smoke_run, slugs=PAPERS)

    gate = subprocess.run([sys.executable, "-m", "shared.claims.gate", "--scale", "smoke", "--no-compare-committed",
                           "--papers", *PAPERS], cwd=on_slurm, capture_output=True, text=True)
    assert gate.returncode == 0, gate.stderr


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(1.0)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def test_scancelled_job_fails_and_rerun_completes_without_recomputing(cluster, tmp_path):
    snakefile = REPO / "tests" / "slurm" / "kill" / "Snakefile"
    args = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile), "--directory", str(tmp_path),
            *LOCAL_CLUSTER_ARGS]
    run = subprocess.Popen(args, cwd=tmp_path, env=cluster.env(), text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    try:
        fast = tmp_path / "done" / "fast.txt"

        def running_slow_job():
            queue = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i %k"], env=cluster.env(),
                                   capture_output=True, text=True).stdout.split("\n")
            return [line.split()[0] for line in queue if line.strip().endswith("rule_slow")]

        _wait_for(running_slow_job, 240, "the slow job to run")
        subprocess.run(["scancel", *running_slow_job()], env=cluster.env(), check=True)
        stdout, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode != 0, stdout[-3000:]
    assert "Error in rule slow" in stdout, stdout[-3000:]
    assert not (tmp_path / "done" / "slow.txt").exists()

    fast_mtime = fast.stat().st_mtime_ns
    rerun = subprocess.run(args + ["--config", "sleep=1"], cwd=tmp_path, env=cluster.env(), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    assert (tmp_path / "done" / "slow.txt").read_text() == "slow\n"
    assert fast.stat().st_mtime_ns == fast_mtime, "the finished job was recomputed"
    assert "rule fast:" not in rerun.stdout
