"""Run model-generated programs in a child process with CPU, memory and time limits and no network.

Code written by a model never runs in the workflow's own process. A :class:`Sandbox` starts one *zygote*: a
fresh Python interpreter (cleared environment: no API keys in it, not even in ``/proc/<pid>/environ``) that
imports the given heavy modules once and then only forks. Each call forks a child from the zygote, which

1. starts a new session (``setsid``): the child and everything it spawns form one process group;
2. enters a new network namespace (``unshare(CLONE_NEWNET)``, or ``CLONE_NEWUSER | CLONE_NEWNET`` without
   root) when the kernel permits, so there is no network device but an unconfigured loopback; in every
   case it installs an audit hook (PEP 578) that stops the program, with status ``forbidden``, on an
   internet socket, a DNS lookup, a process spawn outside ``allow_spawn`` (matched on the executable's
   base name or full path), ``os.system``/``exec``/``fork``, a file opened for writing outside the scratch
   directory, or (when ``allowed_imports`` is given) an import of a top-level module outside it from the
   program's own code;
3. sets ``RLIMIT_CPU`` (CPU seconds; SIGXCPU), ``RLIMIT_AS`` (address space: it includes what the preloaded
   modules already map), ``RLIMIT_FSIZE`` and ``RLIMIT_CORE = 0`` (no core dumps), ``PR_SET_NO_NEW_PRIVS``;
4. runs in a fresh scratch directory (its cwd, ``HOME`` and ``TMPDIR``; removed afterwards) with a cleared
   environment, stdin from ``/dev/null``, stdout and stderr captured to files.

The zygote enforces the wall-time limit: at the deadline it kills the child's whole process group; after
every call it also kills and reaps whatever the program left behind (the zygote is a child subreaper, so
even a grandchild that started its own session is reparented to it and killed).

Outcomes (:class:`SandboxResult` ``.status``): ``ok``; ``error`` (an exception, a non-zero ``sys.exit``, a
non-JSON return value); ``timeout`` (wall or CPU limit); ``memory`` (``MemoryError`` under the address-space
limit); ``killed`` (a signal: segmentation fault, abort); ``forbidden`` (the audit hook). Writing past the
file-size limit is an ``error`` (``OSError: File too large``: Python ignores SIGXFSZ).
Return values travel back as JSON (never pickle: the child is not trusted).

The audit hook and the import guard are policy, not a security boundary against hostile native code (a
C extension can bypass them); the process isolation, the namespace and the resource limits are the boundary.
One zygote runs one program at a time; use one :class:`Sandbox` per worker process. Linux only.
"""
from __future__ import annotations

import json
import math
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

__all__ = ["Sandbox", "SandboxResult", "SandboxError", "run_code", "STATUSES"]

STATUSES = ("ok", "error", "timeout", "memory", "killed", "forbidden")
_ROOT = str(Path(__file__).resolve().parents[1])
_CLONE_NEWNET, _CLONE_NEWUSER = 0x40000000, 0x10000000
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS = 1, 36, 38
_CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"


class SandboxError(RuntimeError):
    """The sandbox itself failed (a preload import failed, the zygote died or stopped answering)."""


@dataclass
class SandboxResult:
    """What one sandboxed run did. ``value`` is the JSON-decoded return value (``None`` for a script)."""

    status: str
    stdout: str = ""
    stderr: str = ""
    value: Any = None
    error: str | None = None
    returncode: int | None = None  # exit code, or minus the signal number
    wall_s: float = 0.0
    cpu_s: float = 0.0
    max_rss_mb: float = 0.0
    isolation: str = ""  # "netns+audit" or "audit"

    @property
    def ok(self) -> bool:
        return self.status == "ok"


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
        chunk = os.read(fd, left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int, deadline: float | None = None) -> dict | None:
    header = _read_exact(fd, 4, deadline)
    if header is None:
        return None
    data = _read_exact(fd, struct.unpack("!I", header)[0], deadline)
    return None if data is None else json.loads(data.decode("utf-8"))


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
    """A pre-warmed zygote that runs programs in limited, network-less child processes.

    ``preload``: modules the zygote imports once (e.g. ``["numpy", "pulp"]``); ``allow_spawn``: executables
    a program may start (base names such as ``"cbc"`` or full paths); ``allowed_imports``: top-level modules
    the program's own code may import (None: no restriction); ``scratch_root``: where the per-call scratch
    directories go (default: the system temporary directory).
    """

    def __init__(self, preload: Iterable[str] = (), *, allow_spawn: Iterable[str] = (),
                 allowed_imports: Iterable[str] | None = None, scratch_root: str | os.PathLike | None = None):
        self.preload = _check_names(preload, "preload")
        self.allow_spawn = _check_names(allow_spawn, "allow_spawn")
        self.allowed_imports = None if allowed_imports is None else _check_names(allowed_imports, "allowed_imports")
        if scratch_root is not None and not Path(scratch_root).is_dir():
            raise ValueError(f"scratch_root {scratch_root!r} is not a directory")
        self.scratch_root = None if scratch_root is None else str(Path(scratch_root).resolve())
        self.isolation = ""
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._base: str | None = None
        self._start()

    # -- zygote life cycle
    def _start(self) -> None:
        env = {"PATH": os.environ.get("PATH", _CHILD_PATH), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        boot = "import sys; sys.path.insert(0, sys.argv[1]); from shared.sandbox import _zygote_main; _zygote_main()"
        self._proc = subprocess.Popen([sys.executable, "-c", boot, _ROOT], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, close_fds=True, start_new_session=True)
        _send(self._proc.stdin.fileno(), {"sys_path": [p for p in sys.path if p], "preload": list(self.preload),
                                          "scratch_root": self.scratch_root})
        try:
            reply = _receive(self._proc.stdout.fileno(), time.monotonic() + 600)
        except TimeoutError:
            reply = None
        if not reply or not reply.get("ok"):
            self._kill_zygote()
            detail = reply.get("error") if reply else "no answer"
            raise SandboxError(f"sandbox zygote failed to start (preload {list(self.preload)}): {detail}")
        self.isolation, self._base = reply["isolation"], reply["base"]

    def _kill_zygote(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        if self._base:  # a killed zygote cannot remove its scratch directories
            shutil.rmtree(self._base, ignore_errors=True)
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    @property
    def pid(self) -> int | None:
        """Process id of the zygote (None once closed)."""
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
                       max_file_mb=max_file_mb, allow_spawn=list(self.allow_spawn),
                       allowed_imports=None if self.allowed_imports is None else list(self.allowed_imports))
        try:
            json.dumps(request, allow_nan=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"args and kwargs must be JSON-serialisable: {exc}") from None
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._kill_zygote()
                self._start()
            try:
                _send(self._proc.stdin.fileno(), request)
                reply = _receive(self._proc.stdout.fileno(), time.monotonic() + timeout_s + 60)
            except (TimeoutError, OSError) as exc:
                reply, detail = None, repr(exc)
            else:
                detail = "the zygote exited"
            if reply is None:
                self._kill_zygote()
                raise SandboxError(f"sandbox zygote stopped answering ({detail}); it will be restarted")
        return SandboxResult(**reply)


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


def _enter_network_namespace(libc) -> bool:
    """Move the calling (single-threaded) process into a new, empty network namespace."""
    if libc.unshare(_CLONE_NEWNET) == 0:
        return True
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        return False
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
        except OSError:
            pass
    return True


def _probe_network_namespace(libc) -> bool:
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _enter_network_namespace(libc) else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _zygote_main() -> None:
    """Entry point of the zygote process (started by :class:`Sandbox`)."""
    import importlib

    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints of preloaded modules must not corrupt the protocol
    sys.dont_write_bytecode = True
    init = _receive(proto_in)
    if init is None:
        return
    for path in reversed(init["sys_path"]):
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        for name in init["preload"]:
            importlib.import_module(name)
        import ctypes  # noqa: F401  (needed by the children; imported before any fork)
        import resource  # noqa: F401
        import traceback  # noqa: F401
        libc = _libc()
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        netns = _probe_network_namespace(libc)
        scratch_root = init["scratch_root"] or tempfile.gettempdir()
        base = tempfile.mkdtemp(prefix="repro-sandbox-", dir=scratch_root)
    except BaseException as exc:  # report, never hang the parent
        _send(proto_out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    isolation = "netns+audit" if netns else "audit"
    _send(proto_out, {"ok": True, "isolation": isolation, "base": base})
    try:
        while True:
            request = _receive(proto_in)
            if request is None:
                break
            _send(proto_out, _zygote_run(request, base, libc, netns, isolation))
    finally:
        _reap_all()
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


def _read_output(path: str, limit: int) -> str:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            data = handle.read(limit)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text += f"\n[... {size - limit} more bytes cut by the sandbox]"
    return text


def _zygote_run(request: dict, base: str, libc, netns: bool, isolation: str) -> dict:
    import base64

    scratch = tempfile.mkdtemp(prefix="run-", dir=base)
    work, io = os.path.join(scratch, "work"), os.path.join(scratch, "io")
    os.mkdir(work, 0o700)
    os.mkdir(io, 0o700)
    try:
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
                _child_main(request, work, io, libc, netns, isolation)
            finally:
                os._exit(70)
        status, rusage, timed_out = _wait(pid, request["timeout_s"])
        wall = time.perf_counter() - start
        _reap_all()
        result = _classify(request, io, status, rusage, timed_out, wall)
        result["isolation"] = isolation
        return result
    finally:
        _reap_all()
        shutil.rmtree(scratch, ignore_errors=True)


def _classify(request: dict, io: str, status: int, rusage, timed_out: bool, wall: float) -> dict:
    limit = request["max_output_bytes"]
    result = {"stdout": _read_output(os.path.join(io, "stdout"), limit),
              "stderr": _read_output(os.path.join(io, "stderr"), limit),
              "wall_s": wall, "cpu_s": rusage.ru_utime + rusage.ru_stime, "max_rss_mb": rusage.ru_maxrss / 1024}
    try:
        with open(os.path.join(io, "result.json"), encoding="utf-8") as handle:
            reported = json.loads(handle.read() or "null")
    except (OSError, ValueError):
        reported = None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        result["returncode"] = -sig
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        cpu_limit = math.ceil(request["cpu_s"])
        if reported and reported.get("status") == "forbidden":
            result.update(status="forbidden", error=reported["error"])
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
        result.update(status=reported["status"], error=reported.get("error"), value=reported.get("value"))
    elif code == 0:
        result.update(status="ok")
    else:
        result.update(status="error", error=f"exited with code {code}")
    if reported and reported.get("exit_code") is not None:
        result["returncode"] = reported["exit_code"]
    return result


# ------------------------------------------------------------------------------------------------- child

def _child_main(request: dict, work: str, io: str, libc, netns: bool, isolation: str) -> None:
    import builtins
    import resource

    os.setsid()
    libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)  # dies with the zygote
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if netns:
        _enter_network_namespace(libc)
    os.chdir(work)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(os.open(os.path.join(io, "stdout"), flags, 0o600), 1)
    os.dup2(os.open(os.path.join(io, "stderr"), flags, 0o600), 2)
    result_fd = os.open(os.path.join(io, "result.json"), flags, 0o600)
    os.environ.clear()
    os.environ.update({"PATH": _CHILD_PATH, "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8",
                       "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
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
