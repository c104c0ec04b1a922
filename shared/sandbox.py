"""Run model-generated programs under bubblewrap: own namespaces, read-only filesystem, limits, no network.

Code written by a model never runs in the workflow's own process. A :class:`Sandbox` starts one *zygote*, a
Python interpreter inside a ``bwrap`` (bubblewrap) sandbox that imports the given heavy modules once and then
forks one child per call. The operating system, not this module, is the security boundary.

What is guaranteed while ``Sandbox.isolation == "bwrap"`` (every result then has ``confined=True``):

* **Filesystem**: a new mount namespace whose root is an empty tmpfs, remounted read-only, with only these
  host paths bound into it, all read-only: ``/usr`` (and the ``/bin``, ``/sbin``, ``/lib*`` links or
  directories); of ``/etc`` only the entries in ``_ETC_ENTRIES`` (dynamic linker, time zone, name service,
  alternatives, fonts: not ``pip.conf``, ``npmrc``, ``gitconfig``, ``environment``, ``shadow``), with
  ``/etc/passwd`` and ``/etc/group`` replaced by one-line files naming only the sandbox user; the Python
  installation (``sys.base_prefix``, ``sys.prefix``: the venv); every directory on the parent's
  ``sys.path`` except ``''`` (the cwd), entries below ``/tmp`` and the repository root, of which only
  ``shared/`` and ``papers/`` are visible. Everything else is absent: ``/root`` and ``/home`` (but for a
  Python installed there), the host's ``/tmp``, ``/var``, ``/run``, ``/opt``, ``/mnt``, ``/srv``, ``/sys``,
  the repository's ``.git``, ``results/``, ``data/``, ``logs/``, ``config/``. ``/proc`` is a new procfs of
  the sandbox's own PID namespace; ``/dev`` is bubblewrap's minimal one (null, zero, full, random, urandom,
  tty, pts; ``/dev/shm`` is not writable). The only writable place is ``/tmp``, a fresh tmpfs of
  ``scratch_mb`` MiB per :class:`Sandbox` (each call gets its own directory in it, the cwd, ``HOME`` and
  ``TMPDIR``; after every call the whole tmpfs is emptied, and another :class:`Sandbox` has a tmpfs of its
  own, invisible here), plus ``/sandbox-io``, a second tmpfs (128 MiB) that holds the unnamed stdout,
  stderr and result files, so that a program that fills ``/tmp`` still reports.
* **Processes**: a new PID namespace (the program sees only the sandbox's processes and cannot signal or
  read the ``/proc`` of any workflow process), new IPC and UTS namespaces, ``--new-session`` (no terminal),
  ``--die-with-parent`` (the sandbox dies with the process that created it), ``PR_SET_NO_NEW_PRIVS``.
* **Network**: a new network namespace with only a loopback device: no interface reaches the host or the
  internet, and abstract Unix sockets of the host are out of reach too.
* **User**: never root and no capabilities. A caller that is not root runs ``bwrap --unshare-user --uid
  65534 --gid 65534 --disable-userns`` (the program is uid 65534 in its own user namespace, mapped to the
  caller's uid, and cannot nest user namespaces). A root caller runs bwrap without a user namespace (so
  that the program is not mapped to uid 0, which would exempt it from ``RLIMIT_NPROC`` and make it the owner
  of root's files) and the zygote drops, before it imports anything, to a fresh uid/gid from
  ``[3000000000, 3000000000 + 2**24)`` with no supplementary groups and no capabilities: the program can
  read only what is world-readable in the bound paths, and its process count is its own.
* **Environment**: cleared (``bwrap --clearenv``): the program sees only ``PATH``, ``HOME``, ``TMPDIR``,
  ``LANG`` and the ``*_NUM_THREADS`` variables; the workflow's secrets (``REPRO_LLM_API_KEY`` ...) are not
  in it, not in any ``/proc/<pid>/environ`` it can see, and not in any file it can read.
* **Limits** (``setrlimit`` in each child): ``RLIMIT_CPU`` (CPU seconds; SIGXCPU), ``RLIMIT_AS`` (address
  space, including what the preloaded modules map), ``RLIMIT_FSIZE`` (per file), ``RLIMIT_NPROC``
  (``max_processes`` processes and threads of the sandbox's uid: bounds a fork bomb), ``RLIMIT_CORE = 0``; a
  wall-time limit enforced by the zygote (it kills the program's process group and, as a child subreaper,
  every descendant); total disk use is bounded by the tmpfs size.
* **Results**: every call returns a :class:`SandboxResult`; what the program does never makes the caller
  raise. The program runs as the zygote's uid, so it can kill or stop the zygote: the call then returns
  ``status="killed"`` (or ``"timeout"``, ``_ANSWER_GRACE_S`` after ``timeout_s``) and the next call starts a
  fresh sandbox. It cannot reach the zygote otherwise: its file descriptors are only stdin
  (``/dev/null``), stdout, stderr and its result file (the protocol pipes are closed), and the zygote is
  non-dumpable (no ``ptrace``, no ``/proc/<zygote>/mem``, ``fd`` or ``environ``). What a program leaves
  behind does not reach the next call: every leftover process is killed, both tmpfs are emptied, and a
  program that leaves System V IPC objects gets the next call a fresh sandbox (``RLIMIT_MSGQUEUE = 0``: no
  POSIX message queues). Return values travel as JSON, never pickle.

The in-process audit hook (PEP 578) stays as a second layer that gives clearer statuses: it stops the program
with status ``forbidden`` on an internet socket, a DNS lookup, a process spawn outside ``allow_spawn``,
``os.system``/``exec``/``fork``, a file opened for writing outside the scratch directory, or (with
``allowed_imports``) an import outside the allow-list. It is policy, not the guarantee: native code
(``ctypes``, C extensions) bypasses it, and the bubblewrap sandbox then still contains the program.

Where bubblewrap is missing (``REPRO_SANDBOX_BWRAP`` names the binary; default ``bwrap`` on ``PATH``) or
cannot create its namespaces, :class:`Sandbox` raises :class:`SandboxError` saying why: it never falls
back to running unconfined. Only ``REPRO_SANDBOX_UNSAFE_NO_ISOLATION=1`` runs model code without bubblewrap
(a plain child process with the limits above except ``RLIMIT_NPROC``, a cleared environment and the audit
hook, but the whole filesystem, network and process table of the caller); every result then has
``isolation="unconfined"`` and ``confined=False``, for the reports to show.

Not covered: a kernel exploit (no seccomp filter is installed); reading what the sandbox user may read in
the bound paths (the venv, ``/usr``, the listed ``/etc`` entries, ``shared/``, ``papers/``, the other
``sys.path`` directories); CPU and memory within the limits (no cgroup: the tmpfs pages are RAM that
``RLIMIT_AS`` does not count, and the number of files in the scratch tmpfs is bounded only by the kernel's
default inode limit and by the time limit); for a root caller, nesting a user namespace (as any unprivileged
user may); the kernel keyring of the sandbox uid, which two cooperating programs of one :class:`Sandbox`
could use to pass data. ``--die-with-parent`` ties the sandbox to the *thread* that started it: a zygote started in a
thread that then exits is restarted at the next call.

Outcomes (``SandboxResult.status``): ``ok``; ``error`` (an exception, a non-zero ``sys.exit``, a non-JSON
return value, writing past the file-size limit: ``OSError: File too large``); ``timeout`` (wall or CPU
limit); ``memory`` (``MemoryError`` under the address-space limit); ``killed`` (a signal: segmentation fault,
abort; or the zygote was killed); ``forbidden`` (the audit hook).

Overhead (medians, 2 CPU cores shared with other jobs, load about 6, bwrap 0.8, Linux 6.18; measured in
the same run against the previous audit-hook-only sandbox and against in-process execution): zygote start
0.26-0.29 s with numpy and pulp preloaded (previous 0.26-0.31 s); a trivial program 12-18 ms per call
(previous 23 ms, in process 4 ms); sacopt's kind of program (pulp model solved by CBC) 29-32 ms (previous
48 ms, in process 8-12 ms); a cirbench worker call with llvmlite and z3 preloaded 26 ms (previous 28 ms,
in process under 1 ms). The namespaces are created once per zygote, not per call, so a call costs a fork
as before (the previous sandbox created a network namespace per call).
One zygote runs one program at a time; use one :class:`Sandbox` per worker process. Linux only.
"""
from __future__ import annotations

import json
import math
import os
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

__all__ = ["Sandbox", "SandboxResult", "SandboxError", "run_code", "STATUSES", "UNSAFE_ENV", "BWRAP_ENV",
           "find_bwrap", "unavailable_reason"]

STATUSES = ("ok", "error", "timeout", "memory", "killed", "forbidden")
UNSAFE_ENV = "REPRO_SANDBOX_UNSAFE_NO_ISOLATION"
BWRAP_ENV = "REPRO_SANDBOX_BWRAP"
_ROOT = str(Path(__file__).resolve().parents[1])
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


class SandboxError(RuntimeError):
    """The sandbox cannot be set up (bubblewrap missing or not permitted, a preload import failed)."""


@dataclass
class SandboxResult:
    """What one sandboxed run did. ``value`` is the JSON-decoded return value (``None`` for a script).

    ``isolation`` is ``"bwrap"`` or ``"unconfined"``; ``confined`` is False only under the explicit opt-out
    ``REPRO_SANDBOX_UNSAFE_NO_ISOLATION=1``.
    """

    status: str
    stdout: str = ""
    stderr: str = ""
    value: Any = None
    error: str | None = None
    returncode: int | None = None  # exit code, or minus the signal number
    wall_s: float = 0.0
    cpu_s: float = 0.0
    max_rss_mb: float = 0.0
    isolation: str = ""
    confined: bool = True

    @property
    def ok(self) -> bool:
        return self.status == "ok"


_RESULT_FIELDS = frozenset(f.name for f in fields(SandboxResult))

# ---------------------------------------------------------------------------------------------- protocol


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


# ------------------------------------------------------------------------------------------ bubblewrap


def _unsafe_opt_out() -> bool:
    return os.environ.get(UNSAFE_ENV, "").strip().lower() in ("1", "true", "yes")


def find_bwrap() -> str | None:
    """Path of the bubblewrap binary: ``$REPRO_SANDBOX_BWRAP`` if set, else ``bwrap`` on ``PATH`` or in
    ``/usr/bin``; None when there is none."""
    named = os.environ.get(BWRAP_ENV)
    if named:
        return named if os.path.isfile(named) and os.access(named, os.X_OK) else None
    return shutil.which("bwrap") or shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")


def _missing_bwrap_message() -> str:
    named = os.environ.get(BWRAP_ENV)
    where = f"{BWRAP_ENV}={named!r} is not an executable file" if named else "no 'bwrap' on PATH or in /usr/bin"
    return (f"shared.sandbox refuses to run model-generated code: bubblewrap is needed to isolate it and {where}. "
            f"Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; Arch: "
            f"pacman -S bubblewrap) or point {BWRAP_ENV} at it. To run model code WITHOUT isolation at your own "
            f"risk, set {UNSAFE_ENV}=1 (results then say isolation='unconfined').")


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _visible_paths(sys_path: Iterable[str]) -> list[str]:
    """Host paths bound read-only into the sandbox besides the system ones (see the module docstring)."""
    wanted = [sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable))]
    wanted += [os.path.join(_ROOT, name) for name in _REPO_CODE_DIRS]
    for entry in sys_path:
        if not entry:  # '' is the parent's cwd: not made visible
            continue
        entry = os.path.abspath(entry)
        # the repository root and its ancestors: only shared/ and papers/; other entries below /tmp: hidden
        if not _is_within(_ROOT, entry) and not _is_within(entry, "/tmp"):
            wanted.append(entry)
    chosen: list[str] = []
    for path in sorted({os.path.abspath(p) for p in wanted if p}, key=len):
        if os.path.exists(path) and path != os.sep and not any(_is_within(path, c) for c in chosen) \
                and not any(_is_within(path, s) for s in _SYSTEM_PATHS):
            chosen.append(path)
    return chosen


def scratch_dir(visible: Iterable[str]) -> str:
    """Where the scratch tmpfs is mounted: ``/tmp``, unless a path the sandbox must see (the repository's code, the
    Python installation, the virtual environment) lies under /tmp; then ``/scratch``, and /tmp holds only those
    paths, read-only (TMPDIR, HOME and the working directory always point at the scratch)."""
    return _SCRATCH_ALT if any(_is_within(p, "/tmp") for p in visible) else _SCRATCH


def _data_fd(text: str) -> int:
    read_end, write_end = os.pipe()
    os.write(write_end, text.encode("utf-8"))
    os.close(write_end)
    return read_end


def _bwrap_command(bwrap: str, sys_path: Iterable[str], scratch_mb: int, boot: list[str],
                   root_caller: bool, uid: int, gid: int) -> tuple[list[str], list[int]]:
    """The bwrap command line that runs ``boot`` (a Python command) in the sandbox, and the fds it reads."""
    visible = _visible_paths(sys_path)
    scratch = scratch_dir(visible)
    passwd = _data_fd(f"sandbox:x:{uid}:{gid}:model-generated code:{scratch}:/usr/sbin/nologin\n")
    group = _data_fd(f"sandbox:x:{gid}:\n")
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if root_caller:  # no user namespace (it would map the program to uid 0); the zygote drops to ``uid``
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--uid", str(uid), "--gid", str(gid), "--disable-userns"]
    argv += ["--clearenv", "--setenv", "PATH", _CHILD_PATH, "--setenv", "LANG", "C.UTF-8",
             "--setenv", "HOME", scratch, "--setenv", "TMPDIR", scratch, "--setenv", "PYTHONDONTWRITEBYTECODE", "1"]
    for name, value in _THREADS_ENV.items():
        argv += ["--setenv", name, value]
    argv += ["--perms", "0755", "--dir", "/etc"]
    for path in _SYSTEM_PATHS + tuple(os.path.join("/etc", name) for name in _ETC_ENTRIES):
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            argv += ["--ro-bind", path, path]
    argv += ["--perms", "0644", "--ro-bind-data", str(passwd), "/etc/passwd",
             "--perms", "0644", "--ro-bind-data", str(group), "/etc/group"]
    made: set[str] = set()
    for path in visible:
        parents = [str(p) for p in reversed(Path(path).parents) if str(p) != os.sep]
        for parent in parents:  # bwrap would create them 0700, unreadable to the dropped uid
            if parent not in made:
                made.add(parent)
                argv += ["--perms", "0755", "--dir", parent]
        argv += ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(scratch_mb << 20),
             "--tmpfs", scratch, "--perms", "1777", "--size", str(_IO_MB << 20), "--tmpfs", _IO_DIR,
             "--remount-ro", "/", "--chdir", scratch, "--", *boot]
    return argv, [passwd, group]


def _diagnose_bwrap(bwrap: str, root_caller: bool) -> str:
    """bwrap's own error when it cannot create the namespaces here (empty when a trivial sandbox runs)."""
    argv, fds = _bwrap_command(bwrap, [], 1, ["/bin/true"], root_caller, _USERNS_UID, _USERNS_UID)
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                              pass_fds=fds, env={"PATH": _CHILD_PATH})
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        for fd in fds:
            os.close(fd)
    return "" if proc.returncode == 0 else (proc.stderr.strip() or f"bwrap exited with code {proc.returncode}")


# ------------------------------------------------------------------------------------------------ parent
def _check_names(values, name: str) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be a list of non-empty strings, got the string {values!r}")
    values = tuple(values)
    if not all(isinstance(v, str) and v for v in values):
        raise ValueError(f"{name} must be a list of non-empty strings, got {values!r}")
    return values


def _check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _encode_files(files: Mapping[str, str | bytes] | None) -> dict:
    import base64

    encoded = {}
    for name, content in (files or {}).items():
        parts = Path(name).parts if isinstance(name, str) else ()
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise ValueError(f"files: {name!r} must be a relative path inside the scratch directory")
        if isinstance(content, str):
            encoded[name] = {"text": content}
        elif isinstance(content, (bytes, bytearray)):
            encoded[name] = {"base64": base64.b64encode(bytes(content)).decode("ascii")}
        else:
            raise ValueError(f"files[{name!r}] must be str or bytes, got {type(content).__name__}")
    return encoded


def _target_name(target) -> str:
    if isinstance(target, str):
        module, _, qualname = target.partition(":")
        if not module or not qualname:
            raise ValueError(f"target must be 'package.module:function', got {target!r}")
        return target
    if not callable(target):
        raise ValueError(f"target must be a callable or 'package.module:function', got {target!r}")
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        raise ValueError(f"target {target!r} must be a module-level function of an importable module")
    return f"{module}:{qualname}"


class Sandbox:
    """A pre-warmed zygote in a bubblewrap sandbox that runs programs in limited child processes.

    ``preload``: modules the zygote imports once (e.g. ``["numpy", "pulp"]``); ``allow_spawn``: executables
    a program may start (base names such as ``"cbc"`` or full paths; audit-hook policy); ``allowed_imports``:
    top-level modules the program's own code may import (None: no restriction; audit-hook policy);
    ``scratch_root``: where the per-call scratch directories go when running unconfined (the bubblewrap
    sandbox always uses its own tmpfs); ``scratch_mb``: size of that tmpfs (all files of one call together);
    ``max_processes``: ``RLIMIT_NPROC`` of a program (processes and threads, the zygote included).
    Raises :class:`SandboxError` when the sandbox cannot be set up, never runs unconfined unless
    ``REPRO_SANDBOX_UNSAFE_NO_ISOLATION=1``.
    """

    def __init__(self, preload: Iterable[str] = (), *, allow_spawn: Iterable[str] = (),
                 allowed_imports: Iterable[str] | None = None, scratch_root: str | os.PathLike | None = None,
                 scratch_mb: int = 256, max_processes: int = 64):
        self.preload = _check_names(preload, "preload")
        self.allow_spawn = _check_names(allow_spawn, "allow_spawn")
        self.allowed_imports = None if allowed_imports is None else _check_names(allowed_imports, "allowed_imports")
        if scratch_root is not None and not Path(scratch_root).is_dir():
            raise ValueError(f"scratch_root {scratch_root!r} is not a directory")
        for value, name, low in ((scratch_mb, "scratch_mb", 1), (max_processes, "max_processes", 4)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        self.scratch_root = None if scratch_root is None else str(Path(scratch_root).resolve())
        self.scratch_mb, self.max_processes = scratch_mb, max_processes
        self.isolation = ""
        self.confined = True
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._base: str | None = None
        self._start()

    # -- zygote life cycle
    def _start(self) -> None:
        self.confined = not _unsafe_opt_out()
        boot_code = ("import os, sys\n"
                     "uid, gid = int(sys.argv[2]), int(sys.argv[3])\n"
                     "if uid >= 0 and os.getuid() == 0:\n"
                     "    os.setgroups([]); os.setresgid(gid, gid, gid); os.setresuid(uid, uid, uid)\n"
                     "if uid >= 0 and 0 in os.getresuid():\n"
                     "    raise SystemExit('sandbox: could not leave uid 0')\n"
                     "sys.path.insert(0, sys.argv[1])\n"
                     "from shared.sandbox import _zygote_main\n"
                     "_zygote_main()\n")
        fds: list[int] = []
        if self.confined:
            bwrap = find_bwrap()
            if bwrap is None:
                raise SandboxError(_missing_bwrap_message())
            root_caller = os.geteuid() == 0
            uid = (_ROOT_CALLER_UID_BASE + random.SystemRandom().randrange(_ROOT_CALLER_UID_SPAN)
                   if root_caller else _USERNS_UID)
            boot = [sys.executable, "-c", boot_code, _ROOT, str(uid), str(uid)]
            argv, fds = _bwrap_command(bwrap, sys.path, self.scratch_mb, boot, root_caller, uid, uid)
            env = {"PATH": _CHILD_PATH}
        else:
            bwrap, root_caller = None, False
            argv = [sys.executable, "-c", boot_code, _ROOT, "-1", "-1"]
            env = {"PATH": _CHILD_PATH, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", **_THREADS_ENV}
            print(f"shared.sandbox: {UNSAFE_ENV} is set: model-generated code runs UNCONFINED (no bubblewrap)",
                  file=sys.stderr)
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                          close_fds=True, pass_fds=fds, start_new_session=True)
        except OSError as exc:
            raise SandboxError(f"shared.sandbox cannot start {argv[0]}: {exc}") from None
        finally:
            for fd in fds:
                os.close(fd)
        try:
            _send(self._proc.stdin.fileno(), {"sys_path": [p for p in sys.path if p], "preload": list(self.preload),
                                              "scratch_root": self.scratch_root, "confined": self.confined,
                                              "scratch": scratch_dir(_visible_paths(sys.path))})
            reply = _receive(self._proc.stdout.fileno(), time.monotonic() + 600)
        except (TimeoutError, OSError, ValueError):
            reply = None
        if not reply or not reply.get("ok"):
            self._kill_zygote()
            if reply:
                detail = reply.get("error")
            elif bwrap is not None:
                why = _diagnose_bwrap(bwrap, root_caller)
                detail = (f"bubblewrap cannot create its sandbox here: {why}. Typical causes: unprivileged user "
                          f"namespaces disabled (sysctl user.max_user_namespaces=0, kernel.unprivileged_userns_clone"
                          f"=0, or AppArmor's kernel.apparmor_restrict_unprivileged_userns=1), or a container "
                          f"whose seccomp profile forbids unshare/mount. shared.sandbox refuses to run model code "
                          f"unconfined; set {UNSAFE_ENV}=1 to do so at your own risk"
                          if why else "the sandbox exited before answering (its error is on stderr above)")
            else:
                detail = "no answer"
            raise SandboxError(f"sandbox zygote failed to start (preload {list(self.preload)}): {detail}")
        self.isolation, self._base = reply["isolation"], reply["base"]

    def _kill_zygote(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # bwrap's group; --die-with-parent takes the namespace down
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        if self._base and not self.confined:  # a killed zygote cannot remove its scratch directories
            shutil.rmtree(self._base, ignore_errors=True)
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    @property
    def pid(self) -> int | None:
        """Process id of the zygote's outermost process (``bwrap``; None once closed)."""
        return None if self._proc is None else self._proc.pid

    def close(self) -> None:
        """Stop the zygote (idempotent)."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            try:
                proc.stdin.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._kill_zygote()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -- runs
    def run_code(self, code: str, *, entry: str | None = None, args: tuple | list = (),
                 kwargs: Mapping[str, Any] | None = None, files: Mapping[str, str | bytes] | None = None,
                 timeout_s: float = 10.0, cpu_s: float | None = None, memory_mb: int = 1024,
                 max_output_bytes: int = 1 << 20, max_file_mb: int = 64) -> SandboxResult:
        """Run ``code`` as ``__main__`` in a fresh child; if ``entry`` names a function it defines, call it
        with ``args``/``kwargs`` (JSON-able) and return its value (JSON-able) in ``result.value``.

        ``files`` (name -> text or bytes) are written into the scratch directory first (e.g. ``data.json``).
        Limits: ``timeout_s`` wall seconds, ``cpu_s`` CPU seconds (default ``timeout_s``, rounded up to whole
        seconds), ``memory_mb`` address space, ``max_file_mb`` per written file; stdout and stderr are cut at
        ``max_output_bytes``.
        """
        if not isinstance(code, str):
            raise ValueError(f"code must be a string, got {type(code).__name__}")
        if entry is not None and (not isinstance(entry, str) or not entry.isidentifier()):
            raise ValueError(f"entry must be None or a function name, got {entry!r}")
        return self._run({"code": code, "entry": entry}, args, kwargs, files, timeout_s, cpu_s, memory_mb,
                         max_output_bytes, max_file_mb)

    def call(self, target: Callable | str, args: tuple | list = (), kwargs: Mapping[str, Any] | None = None, *,
             files: Mapping[str, str | bytes] | None = None, timeout_s: float = 10.0, cpu_s: float | None = None,
             memory_mb: int = 1024, max_output_bytes: int = 1 << 20, max_file_mb: int = 64) -> SandboxResult:
        """Call a module-level function (a callable or ``"package.module:function"``) in a fresh child.

        Same limits as :meth:`run_code`; arguments and return value must be JSON-able. Use this for trusted
        code that handles untrusted input (parsing, JIT-ing or solving what a model wrote).
        """
        return self._run({"target": _target_name(target)}, args, kwargs, files, timeout_s, cpu_s, memory_mb,
                         max_output_bytes, max_file_mb)

    def _run(self, request, args, kwargs, files, timeout_s, cpu_s, memory_mb, max_output_bytes, max_file_mb):
        timeout_s = _check_positive(timeout_s, "timeout_s")
        cpu_s = timeout_s if cpu_s is None else _check_positive(cpu_s, "cpu_s")
        if isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or memory_mb < 16:
            raise ValueError(f"memory_mb must be an integer >= 16, got {memory_mb!r}")
        if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int) or max_output_bytes < 0:
            raise ValueError(f"max_output_bytes must be a non-negative integer, got {max_output_bytes!r}")
        if isinstance(max_file_mb, bool) or not isinstance(max_file_mb, int) or max_file_mb < 1:
            raise ValueError(f"max_file_mb must be a positive integer, got {max_file_mb!r}")
        if not isinstance(args, (list, tuple)):
            raise ValueError(f"args must be a list or tuple, got {type(args).__name__}")
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise ValueError(f"kwargs must be a mapping, got {type(kwargs).__name__}")
        request = dict(request, args=list(args), kwargs=dict(kwargs or {}), files=_encode_files(files),
                       timeout_s=timeout_s, cpu_s=cpu_s, memory_mb=memory_mb, max_output_bytes=max_output_bytes,
                       max_file_mb=max_file_mb, max_processes=self.max_processes,
                       allow_spawn=list(self.allow_spawn),
                       allowed_imports=None if self.allowed_imports is None else list(self.allowed_imports))
        try:
            json.dumps(request, allow_nan=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"args and kwargs must be JSON-serialisable: {exc}") from None
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._kill_zygote()
                self._start()  # raises SandboxError only when the sandbox cannot be set up at all
            start = time.perf_counter()
            status, detail = "killed", "the sandbox's zygote exited during the call (killed by the program?)"
            try:
                _send(self._proc.stdin.fileno(), request)
                reply = _receive(self._proc.stdout.fileno(), time.monotonic() + timeout_s + _ANSWER_GRACE_S)
            except TimeoutError:
                reply = None
                status, detail = "timeout", (f"the sandbox's zygote did not answer within {timeout_s:g} + "
                                             f"{_ANSWER_GRACE_S:g} s (stopped by the program?)")
            except (OSError, ValueError, UnicodeDecodeError) as exc:
                reply, detail = None, f"the sandbox's zygote broke the protocol ({type(exc).__name__}: {exc})"
            if not isinstance(reply, dict) or reply.get("status") not in STATUSES \
                    or set(reply) - _RESULT_FIELDS - {"restart"}:
                self._kill_zygote()
                return SandboxResult(status=status, error=f"{detail}; a fresh sandbox serves the next call",
                                     wall_s=time.perf_counter() - start, isolation=self.isolation,
                                     confined=self.confined)
            if reply.pop("restart", False):  # the zygote could not empty its scratch tmpfs: start afresh
                self._kill_zygote()
        reply["confined"] = self.confined
        return SandboxResult(**reply)


def unavailable_reason() -> str | None:
    """Why a confined :class:`Sandbox` cannot run here (bubblewrap missing or not permitted), or None.

    Ignores the unsafe opt-out: it answers whether real isolation is available."""
    saved = os.environ.pop(UNSAFE_ENV, None)
    try:
        with Sandbox() as box:
            result = box.run_code("pass")
        return None if result.ok and result.confined else f"a trivial program failed: {result.status} {result.error}"
    except SandboxError as exc:
        return str(exc)
    finally:
        if saved is not None:
            os.environ[UNSAFE_ENV] = saved


def run_code(code: str, *, preload: Iterable[str] = (), allow_spawn: Iterable[str] = (),
             allowed_imports: Iterable[str] | None = None, **limits) -> SandboxResult:
    """One-off :meth:`Sandbox.run_code` in a throw-away sandbox (a zygote per call: use :class:`Sandbox`
    for many programs)."""
    with Sandbox(preload, allow_spawn=allow_spawn, allowed_imports=allowed_imports) as sandbox:
        return sandbox.run_code(code, **limits)
# ------------------------------------------------------------------------------------------------ zygote

def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _close_fds_except(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _capabilities_effective() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return -1


def _check_confinement() -> None:
    """Refuse to serve unless this process is what bwrap should have made (a wrong or faked ``bwrap``)."""
    with open("/proc/net/dev") as handle:
        devices = [line.split(":")[0].strip() for line in handle if ":" in line]
    problems = [what for what, bad in (
        (f"uid {os.getresuid()}", 0 in os.getresuid()), (f"capabilities {_capabilities_effective():#x}",
                                                           _capabilities_effective() != 0),
        ("a writable root", not os.statvfs("/").f_flag & os.ST_RDONLY), (f"pid {os.getpid()}", os.getpid() > 2),
        (f"network devices {devices}", devices != ["lo"])) if bad]
    if problems:
        raise SandboxError(f"the zygote is not confined ({', '.join(problems)}): is {BWRAP_ENV} a real bwrap?")


def _zygote_main() -> None:
    """Entry point of the zygote process (started by :class:`Sandbox`, inside bwrap unless unconfined)."""
    import importlib

    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints of preloaded modules must not corrupt the protocol
    _close_fds_except({0, 1, 2, proto_in, proto_out})
    sys.dont_write_bytecode = True
    init = _receive(proto_in)
    if init is None:
        return
    for path in reversed(init["sys_path"]):
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        libc = _libc()
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # children cannot read the zygote's memory, fds or /proc
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        if init["confined"]:
            _check_confinement()
            base, io_base = init.get("scratch", _SCRATCH), _IO_DIR
        else:
            base = tempfile.mkdtemp(prefix="repro-sandbox-", dir=init["scratch_root"] or tempfile.gettempdir())
            io_base = base
        for name in init["preload"]:
            importlib.import_module(name)
        import resource  # noqa: F401  (needed by the children; imported before any fork)
        import traceback  # noqa: F401
        _empty_directory(base)
        _empty_directory(io_base)
    except BaseException as exc:  # report, never hang the parent
        _send(proto_out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    isolation = "bwrap" if init["confined"] else "unconfined"
    _send(proto_out, {"ok": True, "isolation": isolation, "base": base})
    try:
        while True:
            request = _receive(proto_in)
            if request is None:
                break
            reply = _zygote_run(request, base, io_base, libc, isolation, init["confined"])
            _send(proto_out, reply)
            if reply.get("restart"):
                break
    finally:
        _reap_all()
        if not init["confined"]:
            shutil.rmtree(base, ignore_errors=True)


def _children() -> list[int]:
    pids = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as handle:
                pids += [int(p) for p in handle.read().split()]
        except OSError:
            pass
    return pids


def _reap_all() -> None:
    """Kill and reap every remaining descendant (orphans are reparented to the subreaper zygote)."""
    for _ in range(100):
        pids = _children()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _empty_directory(path: str) -> bool:
    """Remove everything inside ``path`` (making directories the program locked writable first); False when
    something is left (the zygote then exits and the parent starts a fresh sandbox)."""
    try:
        return _remove_contents(path)
    except BaseException:  # a pathologically deep tree, say
        return False


def _remove_contents(path: str) -> bool:
    for root, dirs, _ in os.walk(path):
        for name in dirs:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                try:
                    os.chmod(full, 0o700)
                except OSError:
                    pass
    for name in os.listdir(path):
        full = os.path.join(path, name)
        try:
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)
            else:
                os.unlink(full)
        except OSError:
            pass
    return not os.listdir(path)


def _ipc_objects_left() -> bool:
    """Whether the program left System V shared memory, semaphores or message queues (in the sandbox's IPC
    namespace: they would outlive the call)."""
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as handle:
                if len(handle.read().strip().splitlines()) > 1:
                    return True
        except OSError:
            pass
    return False


def _wait(pid: int, timeout_s: float) -> tuple[int, Any, bool]:
    """Wait for ``pid`` at most ``timeout_s``; kill its process group at the deadline."""
    deadline = time.monotonic() + timeout_s
    timed_out = False
    pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    try:
        while True:
            done, status, rusage = os.wait4(pid, os.WNOHANG)
            if done:
                return status, rusage, timed_out
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                    try:
                        kill()
                    except (ProcessLookupError, PermissionError):
                        pass
                _, status, rusage = os.wait4(pid, 0)
                return status, rusage, timed_out
            if pidfd is not None:
                select.select([pidfd], [], [], remaining)
            else:
                time.sleep(min(remaining, 0.002))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _read_back(fd: int, limit: int) -> str:
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, limit, 0) if limit else b""
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text += f"\n[... {size - limit} more bytes cut by the sandbox]"
    return text


def _zygote_run(request: dict, base: str, io_base: str, libc, isolation: str, confined: bool) -> dict:
    import base64

    scratch = tempfile.mkdtemp(prefix="run-", dir=base)
    work = os.path.join(scratch, "work")
    os.mkdir(work, 0o700)
    io_fds = []
    try:
        for _ in range(3):  # stdout, stderr, result: unnamed files the program cannot swap or find by name
            io_fds.append(os.open(io_base, os.O_TMPFILE | os.O_RDWR, 0o600))
        for name, content in request["files"].items():
            path = os.path.join(work, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(content["text"].encode("utf-8") if "text" in content
                             else base64.b64decode(content["base64"]))
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child never returns
            try:
                _child_main(request, work, io_fds, libc, confined)
            finally:
                os._exit(70)
        status, rusage, timed_out = _wait(pid, request["timeout_s"])
        wall = time.perf_counter() - start
        _reap_all()
        result = _classify(request, io_fds, status, rusage, timed_out, wall)
        result["isolation"] = isolation
    except OSError as exc:
        result = {"status": "error", "error": f"the sandbox could not run the program: {exc}",
                  "isolation": isolation}
    finally:
        _reap_all()
        for fd in io_fds:
            os.close(fd)
    if confined:  # leftovers in the tmpfs or System V IPC objects: a fresh sandbox serves the next call
        if not (_empty_directory(base) and _empty_directory(io_base)) or _ipc_objects_left():
            result["restart"] = True
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def _classify(request: dict, io_fds: list[int], status: int, rusage, timed_out: bool, wall: float) -> dict:
    limit = request["max_output_bytes"]
    result = {"stdout": _read_back(io_fds[0], limit), "stderr": _read_back(io_fds[1], limit),
              "wall_s": wall, "cpu_s": rusage.ru_utime + rusage.ru_stime, "max_rss_mb": rusage.ru_maxrss / 1024}
    try:
        reported = json.loads(os.pread(io_fds[2], 1 << 28, 0).decode("utf-8") or "null")
        if not isinstance(reported, dict) or reported.get("status") not in STATUSES:
            reported = None
    except (OSError, ValueError):
        reported = None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        result["returncode"] = -sig
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        cpu_limit = math.ceil(request["cpu_s"])
        if reported and reported.get("status") == "forbidden":
            result.update(status="forbidden", error=str(reported.get("error")))
        elif timed_out:
            result.update(status="timeout", error=f"wall-time limit of {request['timeout_s']:g} s exceeded")
        elif sig == signal.SIGXCPU or (sig == signal.SIGKILL and result["cpu_s"] >= cpu_limit - 0.05):
            result.update(status="timeout", error=f"CPU-time limit of {cpu_limit} s exceeded")
        else:
            result.update(status="killed", error=f"killed by signal {name}")
        return result
    code = os.WEXITSTATUS(status)
    result["returncode"] = code
    if reported:
        error = reported.get("error")
        result.update(status=reported["status"], error=None if error is None else str(error),
                      value=reported.get("value"))
    elif code == 0:
        result.update(status="ok")
    else:
        result.update(status="error", error=f"exited with code {code}")
    if reported and isinstance(reported.get("exit_code"), int):
        result["returncode"] = reported["exit_code"]
    return result


# ------------------------------------------------------------------------------------------------- child

def _child_main(request: dict, work: str, io_fds: list[int], libc, confined: bool) -> None:
    import builtins
    import resource

    os.setsid()
    libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)  # dies with the zygote
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # its own /proc/self; the zygote stays non-dumpable
    os.chdir(work)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(io_fds[0], 1)
    os.dup2(io_fds[1], 2)
    os.dup2(io_fds[2], 3)
    result_fd = 3
    _close_fds_except({0, 1, 2, result_fd})  # the protocol pipes, among others, are not the program's
    os.environ.clear()
    os.environ.update({"PATH": _CHILD_PATH, "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8", **_THREADS_ENV})
    tempfile.tempdir = None
    sys.argv = ["<sandbox>"]
    for stream in (sys.stdout, sys.stderr):  # keep what was printed before a crash or a kill
        try:
            stream.reconfigure(line_buffering=True)
        except (AttributeError, ValueError):
            pass

    def finish(report: dict) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        try:
            os.write(result_fd, json.dumps(report, allow_nan=True).encode("utf-8"))
        finally:
            os._exit(0)

    vm_mb = _vm_size_mb()
    if vm_mb >= request["memory_mb"]:
        finish({"status": "error", "error": f"memory_mb={request['memory_mb']} is below the address space the "
                                            f"preloaded zygote already uses ({vm_mb:.0f} MiB): raise memory_mb"})
    limit = request["memory_mb"] << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    cpu = math.ceil(request["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    fsize = request["max_file_mb"] << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if confined:  # per real uid: a fresh uid (root caller) or a user namespace of its own makes it per sandbox
        resource.setrlimit(resource.RLIMIT_NPROC, (request["max_processes"], request["max_processes"]))
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))  # no POSIX message queues (they outlive the call)
    sys.dont_write_bytecode = True

    def forbid(what: str) -> None:
        finish({"status": "forbidden", "error": f"forbidden: {what}"})

    sys.addaudithook(_audit_hook(forbid, work, request["allow_spawn"]))
    if request.get("allowed_imports") is not None:
        builtins.__import__ = _import_guard(builtins.__import__, set(request["allowed_imports"]), forbid)
    finish(_execute(request))


def _vm_size_mb() -> float:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _audit_hook(forbid: Callable[[str], None], work: str, allow_spawn: list[str]):
    import socket

    allowed_exec = set(allow_spawn)
    writable = (os.path.realpath(work) + os.sep,)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    lookups = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr", "socket.gethostbyname_ex",
               "socket.getnameinfo"}
    spawns = {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"}

    def spawn_allowed(executable, argv) -> bool:
        program = executable if executable is not None else (argv[0] if argv else "")
        program = os.fsdecode(program) if isinstance(program, (bytes, os.PathLike)) else str(program)
        return program in allowed_exec or os.path.basename(program) in allowed_exec

    def writes_outside(path, mode, flags) -> bool:
        if isinstance(path, int) or path is None:
            return False
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & write_flags)
        if not writing:
            return False
        full = os.path.realpath(os.fsdecode(path))
        return full != os.devnull and not (full + os.sep).startswith(writable)

    def hook(event: str, args) -> None:
        if event == "socket.__new__":
            if len(args) > 1 and args[1] not in (socket.AF_UNIX, -1):
                forbid(f"network socket (family {args[1]})")
        elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
            if getattr(args[0], "family", None) != socket.AF_UNIX:
                forbid(f"{event} {args[1]!r:.80}")
        elif event in lookups:
            forbid(f"{event} {args[0]!r:.80}")
        elif event == "subprocess.Popen":
            if not spawn_allowed(args[0], args[1]):
                forbid(f"process spawn {args[1]!r:.120}")
        elif event in spawns:
            forbid(event)
        elif event == "open" and len(args) >= 3 and writes_outside(*args[:3]):
            forbid(f"writing {args[0]!r:.120} outside the scratch directory")

    return hook


def _import_guard(original_import, allowed: set[str], forbid: Callable[[str], None]):
    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and globals is not None and globals.get("__name__") == "__main__":
            top = name.partition(".")[0]
            if top not in allowed:
                forbid(f"import of {name!r} (allowed: {', '.join(sorted(allowed))})")
        return original_import(name, globals, locals, fromlist, level)

    return guarded_import


def _execute(request: dict) -> dict:
    import builtins
    import importlib
    import traceback

    try:
        if request.get("code") is not None:
            namespace = {"__name__": "__main__", "__builtins__": builtins}
            exec(compile(request["code"], "<sandbox>", "exec"), namespace)
            function = None
            if request.get("entry"):
                function = namespace.get(request["entry"])
                if not callable(function):
                    return {"status": "error", "error": f"the program defines no function {request['entry']!r}"}
        else:
            module, _, qualname = request["target"].partition(":")
            function = importlib.import_module(module)
            for part in qualname.split("."):
                function = getattr(function, part)
        value = None if function is None else function(*request["args"], **request["kwargs"])
        try:
            encoded = json.loads(json.dumps(value, allow_nan=True))
        except (TypeError, ValueError) as exc:
            return {"status": "error", "error": f"return value is not JSON-serialisable: {exc}"}
        return {"status": "ok", "value": encoded}
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            return {"status": "ok", "exit_code": 0}
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        return {"status": "error", "error": f"SystemExit: {code}", "exit_code": code}
    except MemoryError as exc:
        return {"status": "memory", "error": f"MemoryError: {exc}"[:2000]}
    except BaseException as exc:
        traceback.print_exc()
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:2000]}
