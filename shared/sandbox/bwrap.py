"""The bubblewrap command line of a sandbox: which host paths are bound (read-only), the scratch and I/O
tmpfs, the namespaces, the user, the cleared environment; and why bubblewrap cannot run here.

This module and :mod:`shared.sandbox.runtime` (the limits) are the guarantee; see :mod:`shared.sandbox`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from shared.sandbox.common import (_CHILD_PATH, _ETC_ENTRIES, _IO_DIR, _IO_MB, _REPO_CODE_DIRS, _ROOT, _SCRATCH,
                                   _SCRATCH_ALT, _SYSTEM_PATHS, _THREADS_ENV, _USERNS_UID, BWRAP_ENV, UNSAFE_ENV)





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


