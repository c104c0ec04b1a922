"""A throw-away single-node SLURM cluster on this machine, for the SLURM tests.

``LocalCluster(state_dir).start()`` installs Debian's ``slurm-wlm`` and ``munge`` when they are missing
(needs root and apt), writes a private ``slurm.conf`` (one node with this machine's CPUs and memory,
``proctrack/linuxproc``, ``task/none``, no accounting database), starts ``munged``, ``slurmctld`` and
``slurmd`` on private sockets and ports, and waits until ``sinfo`` shows the node idle. ``stop()`` ends
exactly the daemons it started, by their process ids, and removes the state directory. Client commands
(``sbatch``, ``squeue``, ``scancel``) reach the cluster through the ``SLURM_CONF`` of :meth:`env`.

Snakemake's job-step executor strips ``SLURM_*`` variables before its nested ``srun``, which then reads the
default ``/etc/slurm/slurm.conf``. The cluster therefore also places its config there, but only when no such
file exists (a machine with a real SLURM configuration is left alone: :class:`ClusterUnavailable`), and
removes it again in :meth:`stop`.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
PACKAGES = ("slurm-wlm", "munge")


class ClusterUnavailable(RuntimeError):
    """This machine cannot host the test cluster (the reason is the message)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(name: str) -> str | None:
    for folder in ("/usr/sbin", "/usr/bin"):
        if Path(folder, name).is_file():
            return str(Path(folder, name))
    return shutil.which(name)


def ensure_installed() -> None:
    """Install slurm-wlm and munge with apt when a daemon is missing; ClusterUnavailable when impossible."""
    if all(_binary(d) for d in DAEMONS) and _binary("sbatch"):
        return
    if os.geteuid() != 0:
        raise ClusterUnavailable("SLURM is not installed and installing it needs root")
    if not shutil.which("apt-get"):
        raise ClusterUnavailable("SLURM is not installed and this machine has no apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True, timeout=600)
    done = subprocess.run(["apt-get", "install", "-y", "-qq", *PACKAGES], env=env, capture_output=True, text=True,
                          timeout=1200)
    if done.returncode != 0:
        raise ClusterUnavailable(f"apt-get install {' '.join(PACKAGES)} failed: {done.stderr[-500:]}")


def _memory_mb() -> int:
    with open("/proc/meminfo", encoding="utf-8") as fh:
        total_kb = int(next(line for line in fh if line.startswith("MemTotal")).split()[1])
    return max(1024, int(total_kb / 1024 * 0.9))


class LocalCluster:
    """One slurmctld + one slurmd (+ munged) with all state under ``state_dir``."""

    def __init__(self, state_dir: str | Path):
        self.dir = Path(state_dir)
        self.host = socket.gethostname().split(".")[0]
        self.pids: dict[str, int] = {}
        self.placed_system_conf = False

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    def env(self) -> dict:
        """Environment in which SLURM client commands talk to this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _write_conf(self) -> None:
        d = self.dir
        for sub in ("state", "spool", "log"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        lines = [
            "ClusterName=repro-test", f"SlurmctldHost={self.host}", "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={d / 'munge.socket'}",
            f"StateSaveLocation={d / 'state'}", f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmdPidFile={d / 'slurmd.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={d / 'log' / 'slurmd.log'}",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
            "ReturnToService=2", "SchedulerType=sched/backfill", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory", "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none", "JobCompType=jobcomp/none", "MinJobAge=3600",
            "SlurmdTimeout=60", "InactiveLimit=0", "KillWait=5",
            f"NodeName={self.host} CPUs={os.cpu_count()} RealMemory={_memory_mb()} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n")
        if SYSTEM_CONF.exists():
            raise ClusterUnavailable(f"{SYSTEM_CONF} exists (a SLURM configuration of this machine); not replacing it")
        SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.conf, SYSTEM_CONF)
        self.placed_system_conf = True

    def _start_munged(self) -> None:
        key = Path("/etc/munge/munge.key")
        if not key.is_file():
            subprocess.run([_binary("mungekey") or "mungekey", "--create", f"--keyfile={self.dir / 'munge.key'}"],
                           check=True, capture_output=True)
            key = self.dir / "munge.key"
        subprocess.run([_binary("munged"), "--force", f"--socket={self.dir / 'munge.socket'}", f"--key-file={key}",
                        f"--pid-file={self.dir / 'munged.pid'}", f"--log-file={self.dir / 'log' / 'munged.log'}",
                        f"--seed-file={self.dir / 'munged.seed'}"], check=True, capture_output=True, timeout=60)
        self.pids["munged"] = self._read_pid("munged.pid")

    def _read_pid(self, name: str, timeout: float = 30.0) -> int:
        path = self.dir / name
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.is_file() and path.read_text().strip():
                return int(path.read_text().split()[0])
            time.sleep(0.2)
        raise ClusterUnavailable(f"{name} did not appear; see {self.dir / 'log'}")

    def start(self, timeout: float = 90.0) -> "LocalCluster":
        ensure_installed()
        if os.geteuid() != 0:
            raise ClusterUnavailable("starting slurmd with SlurmdUser=root needs root")
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self._write_conf()
            self._start_munged()
            env = self.env()
            subprocess.run([_binary("slurmctld"), "-c", "-f", str(self.conf)], check=True, env=env,
                           capture_output=True, timeout=60)
            self.pids["slurmctld"] = self._read_pid("slurmctld.pid")
            subprocess.run([_binary("slurmd"), "-c", "-f", str(self.conf), "-N", self.host], check=True, env=env,
                           capture_output=True, timeout=60)
            self.pids["slurmd"] = self._read_pid("slurmd.pid")
            self._wait_idle(timeout)
        except Exception:
            self.stop()
            raise
        return self

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env(), capture_output=True, text=True)
            state = out.stdout.strip()
            if state == "idle":
                return
            time.sleep(1.0)
        raise ClusterUnavailable(f"the node did not become idle within {timeout:.0f} s (state {state!r}); "
                                 f"logs in {self.dir / 'log'}")

    def versions(self) -> str:
        out = subprocess.run(["sinfo", "--version"], env=self.env(), capture_output=True, text=True)
        return out.stdout.strip()

    def stop(self) -> None:
        """Stop the daemons this object started (by pid, slurmd first) and remove the state directory."""
        for name in ("slurmd", "slurmctld", "munged"):
            pid = self.pids.pop(name, None)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
            else:
                os.kill(pid, signal.SIGKILL)
        if self.placed_system_conf:
            SYSTEM_CONF.unlink(missing_ok=True)
            self.placed_system_conf = False
        shutil.rmtree(self.dir, ignore_errors=True)
