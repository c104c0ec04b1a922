"""The default profile takes effect for plain `snakemake` commands: a run killed hard reruns as it was typed."""
import os
import signal
import subprocess
import sys
import time

import pytest

from shared.config import load_paper_config
from tests.helpers import REPO, copy_repository

pytestmark = pytest.mark.slow

SLUG = "dream"  # a light smoke scale


def _first_experiment() -> str:
    return next(iter(load_paper_config(REPO / "papers" / SLUG / "config.yaml")["smoke"]["experiments"]))


def test_profile_is_found_from_the_repository_root():
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", SLUG, "--config", "scale=smoke"], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "profiles/default" in out.stdout + out.stderr


def test_a_killed_run_reruns_with_the_same_command(tmp_path):
    work = copy_repository(tmp_path / "repo")
    target = f"results/smoke/{SLUG}/{_first_experiment()}/metrics.json"
    stale = work / "results" / "smoke" / SLUG / "old" / ".metrics.json.x.part"
    stale.parent.mkdir(parents=True)
    stale.write_text("half-written")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    command = [sys.executable, "-m", "snakemake", "--config", "scale=smoke", "--", target]
    run = subprocess.Popen(command, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    log = work / "logs" / "smoke" / SLUG
    deadline = time.time() + 300
    while time.time() < deadline and not (log.is_dir() and any(log.iterdir())) and run.poll() is None:
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # hard kill while the job runs: no clean-up by Snakemake
    run.wait()
    again = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (work / target).is_file() and not stale.exists()
