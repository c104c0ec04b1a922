"""Constants shared by the parent and the sandbox runtime, and the length-prefixed JSON protocol on the
pipes between them (never pickle)."""
from __future__ import annotations

import json
import os
import select
import struct
import time
from pathlib import Path

STATUSES = ("ok", "error", "timeout", "memory", "killed", "forbidden")
UNSAFE_ENV = "REPRO_SANDBOX_UNSAFE_NO_ISOLATION"
BWRAP_ENV = "REPRO_SANDBOX_BWRAP"
_ROOT = str(Path(__file__).resolve().parents[2])
_REPO_CODE_DIRS = ("shared", "papers")
_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# what of /etc programs need (dynamic linker, time zone, name service, alternatives links, fonts); not the rest
# of it, which may hold credentials (pip.conf, npmrc, gitconfig, environment)
_ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf", "hosts",
                "host.conf", "protocols", "services", "alternatives", "fonts", "mime.types", "os-release",
                "debian_version", "locale.alias", "magic", "magic.mime")
_USERNS_UID = 65534
_ROOT_CALLER_UID_BASE, _ROOT_CALLER_UID_SPAN = 3_000_000_000, 1 << 24
_SCRATCH = "/tmp"  # the scratch tmpfs; "/scratch" instead when the repository or Python itself lives under /tmp
_SCRATCH_ALT = "/scratch"
_IO_DIR, _IO_MB = "/sandbox-io", 128  # a tmpfs of its own for stdout/stderr/result: a full scratch keeps them
_ANSWER_GRACE_S = 15.0  # how long past timeout_s the parent waits for the zygote's answer
_MAX_MESSAGE = 1 << 30
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
_CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"
_THREADS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}





def _send(fd: int, message: dict) -> None:
    data = json.dumps(message).encode("utf-8")
    payload = struct.pack("!I", len(data)) + data
    while payload:
        payload = payload[os.write(fd, payload):]


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks, left = [], size
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int, deadline: float | None = None) -> dict | None:
    header = _read_exact(fd, 4, deadline)
    if header is None:
        return None
    size = struct.unpack("!I", header)[0]
    if size > _MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes")
    data = _read_exact(fd, size, deadline)
    return None if data is None else json.loads(data.decode("utf-8"))




class SandboxError(RuntimeError):
    """The sandbox cannot be set up (bubblewrap missing or not permitted, a preload import failed)."""
