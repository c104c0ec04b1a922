"""What runs *inside* the bubblewrap sandbox: the zygote (drops privileges, preloads modules, forks one
child per call, kills and reaps what a program leaves, empties the tmpfs) and the child (rlimits, the
second-layer PEP 578 audit hook and import allow-list, then the program). Started by
:meth:`shared.sandbox.Sandbox._start` as ``from shared.sandbox.runtime import zygote_main``."""
from __future__ import annotations

import json
import math
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from typing import Any, Callable

from shared.sandbox.common import (_CHILD_PATH, _IO_DIR, _PR_SET_CHILD_SUBREAPER, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS,
                                   _PR_SET_PDEATHSIG, _SCRATCH, _THREADS_ENV, BWRAP_ENV, STATUSES, SandboxError,
                                   _receive, _send)




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

