"""Run model-generated programs under bubblewrap: own namespaces, read-only filesystem, limits, no network.

Code written by a model never runs in the workflow's own process. A :class:`Sandbox` starts one *zygote*, a
Python interpreter inside a ``bwrap`` (bubblewrap) sandbox that imports the given heavy modules once and then
forks one child per call. The operating system, not this package, is the security boundary; the package only
composes the tool: :mod:`shared.sandbox.bwrap` builds the bubblewrap command line (bound paths, tmpfs,
namespaces, user, environment), :mod:`shared.sandbox.runtime` is what runs inside (privilege drop, rlimits, the
zygote's fork/kill/reap/clean-up loop, and the second-layer audit hook), :mod:`shared.sandbox.common` holds
the constants and the JSON protocol on the pipes, and this module (:class:`Sandbox`) validates a call's
limits, starts the zygote and turns its answer into a :class:`SandboxResult`.

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
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from shared.sandbox.bwrap import (_bwrap_command, _diagnose_bwrap, _missing_bwrap_message, _unsafe_opt_out,
                                  _visible_paths, find_bwrap, scratch_dir)
from shared.sandbox.common import (_ANSWER_GRACE_S, _CHILD_PATH, _ETC_ENTRIES, _ROOT, _ROOT_CALLER_UID_BASE,  # noqa: F401
                                   _ROOT_CALLER_UID_SPAN, _THREADS_ENV, _USERNS_UID, BWRAP_ENV, STATUSES, UNSAFE_ENV,
                                   SandboxError, _receive, _send)
# the zygote imports it inside the sandbox; imported here too so that shared.codedeps (rerun and freshness rules)
# counts it among the code of every paper that uses the sandbox
from shared.sandbox import runtime as _runtime  # noqa: F401

__all__ = ["Sandbox", "SandboxResult", "SandboxError", "run_code", "STATUSES", "UNSAFE_ENV", "BWRAP_ENV",
           "find_bwrap", "unavailable_reason", "isolation_summary", "reset_isolation_summary"]



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
                     "from shared.sandbox.runtime import _zygote_main\n"
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
        return _tallied(self._run({"code": code, "entry": entry}, args, kwargs, files, timeout_s, cpu_s,
                                  memory_mb, max_output_bytes, max_file_mb))

    def call(self, target: Callable | str, args: tuple | list = (), kwargs: Mapping[str, Any] | None = None, *,
             files: Mapping[str, str | bytes] | None = None, timeout_s: float = 10.0, cpu_s: float | None = None,
             memory_mb: int = 1024, max_output_bytes: int = 1 << 20, max_file_mb: int = 64) -> SandboxResult:
        """Call a module-level function (a callable or ``"package.module:function"``) in a fresh child.

        Same limits as :meth:`run_code`; arguments and return value must be JSON-able. Use this for trusted
        code that handles untrusted input (parsing, JIT-ing or solving what a model wrote).
        """
        return _tallied(self._run({"target": _target_name(target)}, args, kwargs, files, timeout_s, cpu_s,
                                  memory_mb, max_output_bytes, max_file_mb))

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


# how every result of this process was isolated, since the last reset (see isolation_summary)
_TALLY = {"runs": 0, "unconfined_runs": 0, "isolation": set()}


def _tallied(result: SandboxResult) -> SandboxResult:
    _TALLY["runs"] += 1
    _TALLY["unconfined_runs"] += int(not result.confined)
    _TALLY["isolation"].add(result.isolation or "none")
    return result


def isolation_summary() -> dict:
    """How the sandboxed runs of this process since :func:`reset_isolation_summary` were isolated, for an
    experiment's metrics (so that a report shows a run under the unsafe opt-out): ``runs``, ``unconfined_runs``,
    ``confined_all`` (1 when every run was confined, 0 otherwise, None before any run) and ``isolation`` (the
    names seen, ``"bwrap"``, ``"unconfined"`` or both joined by "+"; None before any run)."""
    runs = _TALLY["runs"]
    return {"runs": runs, "unconfined_runs": _TALLY["unconfined_runs"],
            "confined_all": None if runs == 0 else int(_TALLY["unconfined_runs"] == 0),
            "isolation": "+".join(sorted(_TALLY["isolation"])) or None}


def reset_isolation_summary() -> None:
    """Forget the runs counted so far (an experiment starts from zero)."""
    _TALLY.update(runs=0, unconfined_runs=0, isolation=set())


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
