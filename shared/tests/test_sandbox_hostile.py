"""shared.sandbox against hostile programs (issue 26): every attack is contained, checked from OUTSIDE.

Each snippet tries to change or read something outside its scratch directory with calls that the in-process
audit hook does not see (os.* calls it does not police, ctypes, _posixsubprocess, /proc); afterwards the test
looks at the host: the victim files still exist unchanged, the secrets are not in the output, no process is
left, and the caller got a structured result. The victims live in a host directory that is on ``sys.path``
(so it is visible, read-only, inside the sandbox: the attacks are refused by the read-only mount, not merely
by invisibility); the secrets live in a sibling directory that is not visible and in the environment.
Skipped (with the reason) only where bubblewrap cannot run here.
"""
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time

import pytest

import shared.sandbox as sandbox_module
from shared.sandbox import STATUSES, Sandbox, SandboxResult

SECRET_ENV = "sk-hostile-test-env-5f2a9c"
SECRET_FILE = "hidden-file-secret-81d3e0"
VICTIM_TEXT = "original victim text\n"
# papers/sacopt/execution.py's policy (copied: shared never imports a paper)
SACOPT_IMPORTS = ("pulp", "gurobipy", "highspy", "scipy", "numpy", "math", "json", "itertools", "collections")
SACOPT_PRELOAD = ("json", "math", "numpy", "pulp")

PRELUDE = '''
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def attempt(label, fn):
    try:
        out = fn()
        print(label, "DONE", out, flush=True)
    except BaseException as exc:
        print(label, "BLOCKED", type(exc).__name__, exc, flush=True)
def c_check(value):
    if value == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return value
def c_open(path, flags, mode=0o666):  # libc's open: not seen by the audit hook
    return c_check(libc.open(path.encode(), flags, mode))
'''


_WHY_NOT = sandbox_module.unavailable_reason()
pytestmark = pytest.mark.skipif(_WHY_NOT is not None, reason=f"bubblewrap sandbox unavailable: {_WHY_NOT}")


@pytest.fixture(autouse=True)
def _never_unconfined(monkeypatch):
    monkeypatch.delenv(sandbox_module.UNSAFE_ENV, raising=False)


@pytest.fixture(scope="module")
def outside():
    """Host directories: ``visible`` (on sys.path, hence bound read-only) with victims, ``hidden`` with a
    secret; not below /tmp (the sandbox's scratch tmpfs covers /tmp)."""
    base = tempfile.mkdtemp(prefix="repro-sandbox-hostile-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    os.chmod(base, 0o755)
    visible, hidden = os.path.join(base, "visible"), os.path.join(base, "hidden")
    os.makedirs(os.path.join(visible, "victim_dir", "sub"))
    os.makedirs(hidden)
    for path in (os.path.join(visible, "victim.txt"), os.path.join(visible, "victim_dir", "sub", "inner.txt")):
        with open(path, "w") as handle:
            handle.write(VICTIM_TEXT)
    for root, dirs, files in os.walk(visible):  # writable by anyone: only the read-only mount stops the program
        os.chmod(root, 0o777)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666)
    with open(os.path.join(visible, "root_only.txt"), "w") as handle:
        handle.write(SECRET_FILE)
    os.chmod(os.path.join(visible, "root_only.txt"), 0o600)
    with open(os.path.join(hidden, "secret.txt"), "w") as handle:
        handle.write(SECRET_FILE)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(sandbox_module.UNSAFE_ENV, raising=False)
        patch.syspath_prepend(visible)
        patch.setenv("REPRO_LLM_API_KEY", SECRET_ENV)
        patch.setenv("REPRO_LLM_BASE_URL", "https://secret.example/" + SECRET_ENV)
        yield {"base": base, "visible": visible, "hidden": hidden, "victim": os.path.join(visible, "victim.txt"),
               "victim_dir": os.path.join(visible, "victim_dir")}
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def box(outside):
    with Sandbox(["json", "math", "numpy", "pulp"], allow_spawn=["cbc", "sleep"], max_processes=32) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def sacopt_box(outside):
    with Sandbox(SACOPT_PRELOAD, allow_spawn=["cbc"], allowed_imports=SACOPT_IMPORTS) as sandbox:
        yield sandbox


def _snapshot(outside) -> dict:
    """Every path below ``visible`` with its mode, owner, size, link count and content (the host's view)."""
    state = {}
    for root, dirs, files in os.walk(outside["visible"]):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            content = None
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as handle:
                    content = handle.read()
            state[os.path.relpath(path, outside["visible"])] = (st.st_mode, st.st_uid, st.st_gid, st.st_size,
                                                                st.st_nlink, content)
    return state


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _namespace_processes(sandbox: Sandbox) -> list[int]:
    """Host pids of the live processes in the sandbox's PID namespace (bwrap's init and the zygote when idle)."""
    with open(f"/proc/{sandbox.pid}/task/{sandbox.pid}/children") as handle:
        init = int(handle.read().split()[0])
    namespace = os.readlink(f"/proc/{init}/ns/pid")
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/ns/pid") == namespace and _alive(int(name)):
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def _run(sandbox: Sandbox, body: str, **limits) -> SandboxResult:
    limits.setdefault("memory_mb", 2048)  # numpy and pulp preloaded map more than 1 GiB of address space
    result = sandbox.run_code(PRELUDE + body, **limits)
    assert isinstance(result, SandboxResult) and result.status in STATUSES
    assert result.confined and result.isolation == "bwrap"
    return result


def _lines(result: SandboxResult) -> dict:
    """``label -> "DONE ..." | "BLOCKED ..."`` from the snippet's attempt() lines."""
    out = {}
    for line in result.stdout.splitlines():
        label, _, rest = line.partition(" ")
        out[label] = rest
    return out


def _assert_secrets_absent(result: SandboxResult) -> None:
    text = result.stdout + result.stderr + str(result.error) + json.dumps(result.value)
    assert SECRET_ENV not in text and SECRET_FILE not in text


# ---------------------------------------------------------------------------------- the filesystem

FILESYSTEM_ATTACKS = {
    "remove": "attempt('x', lambda: os.remove(V + '/victim.txt'))",
    "rename": "attempt('x', lambda: os.rename(V + '/victim.txt', V + '/renamed.txt'))",
    "rename_into_scratch": "attempt('x', lambda: os.rename(V + '/victim.txt', 'stolen.txt'))",
    "truncate": "attempt('x', lambda: os.truncate(V + '/victim.txt', 0))",
    "mkdir": "attempt('x', lambda: os.mkdir(V + '/new_dir'))\nattempt('y', lambda: os.mkdir('/new_dir'))",
    "rmtree": "import shutil\nattempt('x', lambda: shutil.rmtree(V + '/victim_dir'))",
    "hard_link_then_append": ("attempt('x', lambda: os.link(V + '/victim.txt', 'link.txt'))\n"
                              "attempt('y', lambda: open('link.txt', 'a').write('appended'))\n"
                              "attempt('z', lambda: os.link(V + '/victim.txt', V + '/link2.txt'))"),
    "symlink_then_write": ("attempt('x', lambda: os.symlink(V + '/victim.txt', 'sym.txt'))\n"
                           "attempt('y', lambda: os.write(c_open('sym.txt', os.O_WRONLY | os.O_APPEND), b'x'))"),
    "chmod_chown": ("attempt('x', lambda: os.chmod(V + '/victim.txt', 0o777))\n"
                    "attempt('y', lambda: os.chown(V + '/victim.txt', os.getuid(), os.getgid()))\n"
                    "attempt('z', lambda: os.utime(V + '/victim.txt', (0, 0)))"),
    "ctypes_open_write": (
        "def go(path, flags):\n"
        "    fd = c_check(libc.open(path.encode(), flags, 0o666))\n"
        "    return c_check(libc.write(fd, b'pwned', 5))\n"
        "attempt('x', lambda: go(V + '/victim.txt', os.O_WRONLY | os.O_APPEND))\n"
        "attempt('y', lambda: go(V + '/created.txt', os.O_WRONLY | os.O_CREAT))\n"
        "attempt('z', lambda: go(V + '/victim.txt', os.O_WRONLY | os.O_TRUNC))"),
    "ctypes_system": ("attempt('x', lambda: libc.system(('echo pwned >> ' + V + '/victim.txt; rm -rf ' + V +"
                      " '/victim_dir; touch ' + V + '/created.txt; chmod 777 ' + V + '/victim.txt').encode()))"),
    "posixsubprocess_fork_exec": (
        "import _posixsubprocess, time\n"
        "script = 'echo pwned >> ' + V + '/victim.txt; rm -f ' + V + '/victim.txt; mkdir ' + V + '/created'\n"
        "def go():\n"
        "    r, w = os.pipe()\n"
        "    pid = _posixsubprocess.fork_exec([b'/bin/sh', b'-c', script.encode()], [b'/bin/sh'], True, (w,),"
        " None, None, -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)\n"
        "    os.close(w)\n"
        "    return os.waitpid(pid, 0)[1]\n"
        "attempt('x', go)"),
    "proc_self_fd": (
        "for fd in os.listdir('/proc/self/fd'):\n"
        "    attempt('fd' + fd, lambda: (os.readlink('/proc/self/fd/' + fd),"
        " os.write(c_open('/proc/self/fd/' + fd, os.O_WRONLY | os.O_APPEND), b'FORGED')))\n"
        "attempt('root', lambda: os.write(c_open('/proc/self/root' + V + '/victim.txt', os.O_WRONLY), b'x'))\n"
        "attempt('cwd', lambda: os.write(c_open('/proc/1/cwd/../' + V + '/victim.txt', os.O_WRONLY), b'x'))\n"
        "attempt('fdlink', lambda: os.write(c_open('/proc/self/fd/%d' % c_open(V + '/victim.txt', os.O_RDONLY),"
        " os.O_WRONLY | os.O_APPEND), b'x'))\n"
        "for fd in ('0', '1', '2', '3', '4', '5'):\n"
        "    attempt('zygote' + fd, lambda: os.write(c_open('/proc/%d/fd/%s' % (os.getppid(), fd), os.O_WRONLY),"
        " b'\\x00\\x00\\x00\\x02{}'))\n"
        "attempt('mem', lambda: open('/proc/%d/mem' % os.getppid(), 'rb').read(1))"),
    "open_for_write": (
        "for label, flags in (('append', os.O_WRONLY | os.O_APPEND), ('trunc', os.O_RDWR | os.O_TRUNC)):\n"
        "    attempt(label, lambda: os.write(c_open(V + '/victim.txt', flags), b'pwned'))\n"
        "attempt('create', lambda: c_open(V + '/victim_dir/new.txt', os.O_WRONLY | os.O_CREAT))\n"
        "attempt('mknod', lambda: os.mkfifo(V + '/fifo'))\n"
        "attempt('xattr', lambda: os.setxattr(V + '/victim.txt', 'user.x', b'1'))\n"),
    "write_everywhere": (
        "for place in ('/', '/usr', '/etc', '/dev', '/dev/shm', '/proc', '/var/tmp', V,"
        " os.path.dirname(sys.executable), os.path.dirname(os.__file__)):\n"
        "    attempt(place, lambda: os.close(c_check(libc.open((place + '/pwned').encode(),"
        " os.O_WRONLY | os.O_CREAT, 0o644))))\n"
        "import shared\n"
        "attempt('repo', lambda: os.close(c_check(libc.open((os.path.dirname(shared.__file__) + '/_pwned').encode(),"
        " os.O_WRONLY | os.O_CREAT, 0o644))))"),
}


# attempts that succeed, inside the scratch directory only (the shell runs, its commands fail)
CONFINED_TO_SCRATCH = {"hard_link_then_append": ("y",), "symlink_then_write": ("x",), "ctypes_system": ("x",),
                       "posixsubprocess_fork_exec": ("x",)}


@pytest.mark.parametrize("name", sorted(FILESYSTEM_ATTACKS))
def test_filesystem_outside_the_scratch_is_untouched(box, outside, name):
    before = _snapshot(outside)
    result = _run(box, f"V = {outside['visible']!r}\nprint('visible', os.path.exists(V + '/victim.txt'))\n"
                  + FILESYSTEM_ATTACKS[name], timeout_s=20)
    assert "visible True" in result.stdout  # the victim is really there for the program: refused, not hidden
    assert _snapshot(outside) == before, result.stdout + result.stderr
    for label, outcome in _lines(result).items():
        if label != "visible" and not label.startswith("fd") and label not in CONFINED_TO_SCRATCH.get(name, ()):
            assert outcome.startswith("BLOCKED"), f"{name}: {label} {outcome}"
    assert not os.path.exists(os.path.join(sandbox_module._ROOT, "shared", "_pwned"))
    assert len(_namespace_processes(box)) == 2  # nothing left running


def test_allow_list_bypasses_are_contained(sacopt_box, outside):
    """numpy.ctypeslib.ctypes and pulp.apis.core.os pass sacopt's import allow-list: the OS stops them."""
    before = _snapshot(outside)
    victim = outside["victim"]
    code = (f"import numpy, pulp\nV = {outside['visible']!r}\n"
            "libc = numpy.ctypeslib.ctypes.CDLL(None)\n"
            "print('system', libc.system(('rm -f ' + V + '/victim.txt; touch ' + V + '/new').encode()))\n"
            "os = pulp.apis.core.os\n"
            "for label, fn in (('remove', lambda: os.remove(V + '/victim.txt')),"
            " ('truncate', lambda: os.truncate(V + '/victim.txt', 0)), ('mkdir', lambda: os.mkdir(V + '/d')),"
            " ('env', lambda: os.environ.get('REPRO_LLM_API_KEY'))):\n"
            "    try:\n"
            "        print(label, 'DONE', fn())\n"
            "    except OSError as exc:\n"
            "        print(label, 'BLOCKED', exc)\n"
            "print('OBJECTIVE: 1.0')\n")
    result = sacopt_box.run_code(code, timeout_s=20, memory_mb=2048)
    assert result.ok and result.confined, result
    lines = _lines(result)
    assert all(lines[k].startswith("BLOCKED") for k in ("remove", "truncate", "mkdir")) and lines["env"] == "DONE None"
    assert os.path.exists(victim) and _snapshot(outside) == before
    _assert_secrets_absent(result)


# ---------------------------------------------------------------------------------- secrets

def test_secrets_are_invisible(box, outside):
    host_passwd = open("/etc/passwd").read()
    code = (f"H, V = {outside['hidden']!r}, {outside['visible']!r}\nPARENT = {os.getpid()}\n"
            "print('env', dict(os.environ))\n"
            "attempt('passwd', lambda: open('/etc/passwd').read())\n"
            "attempt('shadow', lambda: open('/etc/shadow').read())\n"
            "attempt('etc', lambda: sorted(os.listdir('/etc')))\n"
            "attempt('hidden', lambda: open(H + '/secret.txt').read())\n"
            "attempt('root_only', lambda: open(V + '/root_only.txt').read())\n"
            "attempt('parent_environ', lambda: open('/proc/%d/environ' % PARENT, 'rb').read())\n"
            "attempt('zygote_environ', lambda: open('/proc/%d/environ' % os.getppid(), 'rb').read())\n"
            "attempt('init_environ', lambda: open('/proc/1/environ', 'rb').read())\n"
            "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
            "print('pids', pids)\n"
            "for p in pids:\n"
            "    for what in ('environ', 'cmdline'):\n"
            "        attempt(what + p, lambda: open('/proc/%s/%s' % (p, what), 'rb').read())\n"
            "import shared\n"
            "repo = os.path.dirname(os.path.dirname(shared.__file__))\n"
            "print('repo', sorted(os.listdir(repo)))\n"
            "for place in ('/root', '/home', '/var', '/run', '/tmp', '/mnt', '/opt', '/sys', repo + '/.git',"
            " repo + '/results'):\n"
            "    attempt('ls' + place, lambda: os.listdir(place))\n")
    result = _run(box, code, timeout_s=20)
    assert result.ok, result
    _assert_secrets_absent(result)
    lines = _lines(result)
    assert lines["passwd"].startswith("DONE sandbox:x:") and lines["passwd"].count(":x:") == 1
    assert "root:x:0:0" not in result.stdout and host_passwd not in result.stdout
    assert lines["hidden"].startswith("BLOCKED FileNotFoundError") and lines["shadow"].startswith("BLOCKED")
    etc = set(eval(lines["etc"].split(" ", 1)[1]))
    assert etc <= set(sandbox_module._ETC_ENTRIES) | {"passwd", "group"} and "passwd" in etc  # no pip.conf ...
    assert lines["parent_environ"].startswith("BLOCKED")  # the test process is not in the sandbox's PID namespace
    assert len(eval(lines["pids"])) <= 3  # bwrap's init, the zygote, the program
    assert set(eval(lines["repo"])) <= {"shared", "papers", ".venv"}
    for place in ("/root", "/home", "/var", "/run", "/mnt", "/opt", "/sys"):
        outcome = lines["ls" + place]  # absent, or only the way to a bound directory (this test's, the Python)
        assert outcome.startswith("BLOCKED") or outcome in ("DONE []", "DONE ['.pyenv']", "DONE ['tmp']"), \
            (place, outcome)
    if os.geteuid() == 0:  # the program is not root: a root-only file in a visible directory stays unreadable
        assert lines["root_only"].startswith("BLOCKED PermissionError")


def test_unprivileged_user_seen_from_outside(box):
    zygotes = [p for p in _namespace_processes(box) if p != int(open(f"/proc/{box.pid}/task/{box.pid}/children")
                                                                .read().split()[0])]
    assert len(zygotes) == 1
    status = dict(line.split(":", 1) for line in open(f"/proc/{zygotes[0]}/status").read().splitlines())
    assert "0" not in status["Uid"].split() and int(status["CapEff"], 16) == 0
    assert os.readlink(f"/proc/{zygotes[0]}/ns/net") != os.readlink("/proc/self/ns/net")
    assert os.readlink(f"/proc/{zygotes[0]}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    result = _run(box, "print(os.getresuid(), open('/proc/self/status').read().split('CapEff:')[1].split()[0])")
    uid = int(result.stdout.split(",")[0].strip("("))
    assert uid != 0 and result.stdout.split()[-1] == "0000000000000000"


# ---------------------------------------------------------------------------------- network

def test_sockets_through_ctypes_reach_nothing(box):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f"\0repro-sandbox-test-{os.getpid()}"
    abstract.bind(abstract_name)
    abstract.listen(4)
    abstract.setblocking(False)
    port = listener.getsockname()[1]
    code = (f"import struct, socket\nPORT = {port}\nNAME = {abstract_name!r}\n"
            "def tcp(host, port):\n"
            "    fd = c_check(libc.socket(2, 1, 0))\n"
            "    addr = struct.pack('!HH4s8x', 2, port, socket.inet_aton(host))\n"
            "    addr = struct.pack('=H', 2) + addr[2:]\n"
            "    return c_check(libc.connect(fd, addr, len(addr)))\n"
            "attempt('loopback', lambda: tcp('127.0.0.1', PORT))\n"
            "attempt('internet', lambda: tcp('1.1.1.1', 53))\n"
            "attempt('udp', lambda: c_check(libc.sendto(c_check(libc.socket(2, 2, 0)), b'x', 1, 0,"
            " struct.pack('=H', 2) + struct.pack('!H4s8x', 53, socket.inet_aton('8.8.8.8')), 16)))\n"
            "def unix():\n"
            "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            "    s.connect(NAME)\n"
            "attempt('abstract_unix', unix)\n"
            "attempt('interfaces', lambda: open('/proc/net/dev').read().count(':'))\n")
    try:
        result = _run(box, code, timeout_s=20)
        lines = _lines(result)
        for label in ("loopback", "internet", "udp", "abstract_unix"):
            assert lines[label].startswith("BLOCKED"), (label, lines[label])
        assert lines["interfaces"] == "DONE 1"  # the loopback device only
        for server in (listener, abstract):  # seen from outside: nobody connected
            with pytest.raises(BlockingIOError):
                server.accept()
    finally:
        listener.close()
        abstract.close()


# ---------------------------------------------------------------------------------- resources

def test_fork_bomb_is_bounded(box):
    code = ("import time\ncount = 0\nerr = None\n"
            "while count < 10000:\n"
            "    pid = libc.fork()\n"
            "    if pid == 0:\n"
            "        libc.pause()\n"
            "        libc._exit(0)\n"
            "    if pid < 0:\n"
            "        err = os.strerror(ctypes.get_errno())\n"
            "        break\n"
            "    count += 1\n"
            "print('forks', count, err, flush=True)\n")
    result = _run(box, code, timeout_s=20)
    assert result.ok, result
    _, count, *err = result.stdout.split()
    assert int(count) < box.max_processes and "Resource temporarily unavailable" in " ".join(err)
    assert len(_namespace_processes(box)) == 2  # all of them killed and reaped


def test_filling_the_disk_stops_at_the_scratch_size(outside):
    with Sandbox(scratch_mb=8) as small:
        code = ("total = 0\nerr = None\n"
                "try:\n"
                "    for i in range(10000):\n"
                "        with open('fill%d.bin' % i, 'wb') as handle:\n"
                "            handle.write(b'x' * (1 << 20))\n"
                "        total += 1\n"
                "except OSError as exc:\n"
                "    err = exc.errno\n"
                "print('filled', total, err == errno.ENOSPC)\n"
                "for label, path in (('shm', b'/dev/shm/fill'), ('root', b'/fill')):\n"
                "    attempt(label, lambda: c_check(libc.open(path, os.O_WRONLY | os.O_CREAT, 0o644)))\n")
        result = _run(small, code, timeout_s=20)
        assert result.ok and "filled" in result.stdout, result
        _, total, enospc = result.stdout.splitlines()[0].split()
        assert int(total) <= 8 and enospc == "True"
        assert _lines(result)["shm"].startswith("BLOCKED") and _lines(result)["root"].startswith("BLOCKED")
        after = _run(small, "print(sorted(os.listdir('/tmp')), len(os.listdir('.')))")
        assert after.ok and len(eval(after.stdout.rsplit(" ", 1)[0])) == 1 and after.stdout.split()[-1] == "0"


def test_another_sandboxs_scratch_is_invisible(box):
    with Sandbox() as other:
        writer_result = {}
        code = ("import os, time\nopen('mine.txt', 'w').write('scratch-secret-77ab')\n"
                "print(os.path.abspath('mine.txt'), flush=True)\ntime.sleep(2.5)\n")
        thread = threading.Thread(target=lambda: writer_result.update(r=other.run_code(code, timeout_s=20)))
        thread.start()
        time.sleep(1.0)
        spy = ("found = []\n"
               "for root, dirs, files in os.walk('/tmp'):\n"
               "    for name in files:\n"
               "        found.append(os.path.join(root, name))\n"
               "        attempt('read', lambda: open(os.path.join(root, name)).read())\n"
               "print('found', found)\n"
               "attempt('proc', lambda: [open('/proc/%s/cmdline' % p).read() for p in os.listdir('/proc')"
               " if p.isdigit()])\n")
        spied = _run(box, spy, timeout_s=20)
        thread.join()
        written = writer_result["r"]
        scratch = sandbox_module.scratch_dir(sandbox_module._visible_paths(sys.path))
        assert written.ok and written.stdout.startswith(scratch + "/")
        assert "scratch-secret-77ab" not in spied.stdout + spied.stderr
        assert "mine.txt" not in spied.stdout
        later = _run(other, f"attempt('again', lambda: open({written.stdout.strip()!r}).read())")
        assert _lines(later)["again"].startswith("BLOCKED FileNotFoundError")  # the next call of the same sandbox


def test_ipc_leftovers_do_not_reach_the_next_call(box):
    code = ("shmget = libc.shmget\nshmget.restype = ctypes.c_int\n"
            "attempt('shm', lambda: c_check(shmget(0x5eed, 1 << 20, 0o1000 | 0o666)))\n"
            "attempt('mq', lambda: c_check(ctypes.CDLL('librt.so.1', use_errno=True).mq_open(b'/q', os.O_CREAT"
            " | os.O_RDWR, 0o600, None)))\n")
    first_pid = box.pid
    result = _run(box, code)
    assert _lines(result)["shm"].startswith("DONE") and _lines(result)["mq"].startswith("BLOCKED")
    later = _run(box, "attempt('shm', lambda: c_check(libc.shmget(0x5eed, 0, 0)))")
    assert _lines(later)["shm"].startswith("BLOCKED")  # a fresh sandbox: the segment is gone
    assert box.pid != first_pid


# ---------------------------------------------------------------------------------- the supervisor

@pytest.mark.parametrize("how", ["zygote", "init", "everyone"])
def test_killing_the_parent_gives_a_structured_result(how):
    with Sandbox(["json"]) as sandbox:
        first_pid = sandbox.pid
        target = {"zygote": "os.getppid()", "init": "1", "everyone": "-1"}[how]
        code = ("pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
                "assert len(pids) <= 3, pids  # inside a PID namespace: killing everyone stays in it\n"
                f"os.kill({target}, 9)\nimport time\ntime.sleep(1)\nprint('survived')\n")
        result = _run(sandbox, code, timeout_s=10)
        assert result.status in ("killed", "ok", "error") and result.status in STATUSES
        if how != "init":
            assert result.status == "killed" and "fresh sandbox" in result.error
        assert _alive(os.getpid())
        again = sandbox.run_code("print(6 * 7)")
        assert again.ok and again.stdout == "42\n"
        if how != "init":
            assert sandbox.pid != first_pid


def test_stopping_the_zygote_gives_a_timeout(monkeypatch):
    monkeypatch.setattr(sandbox_module, "_ANSWER_GRACE_S", 1.0)
    with Sandbox() as sandbox:
        start = time.monotonic()
        result = sandbox.run_code("import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n", timeout_s=1)
        assert result.status == "timeout" and "did not answer" in result.error
        assert time.monotonic() - start < 10
        assert sandbox.run_code("print(1)").stdout == "1\n"


def test_forged_protocol_messages_do_not_reach_the_caller(box):
    """Writing fake answers on every fd (the protocol pipes are not among them) changes nothing."""
    fake = json.dumps({"status": "ok", "stdout": "FORGED"}).encode()
    code = (f"import struct\nmsg = struct.pack('!I', {len(fake)}) + {fake!r}\n"
            "for fd in range(0, 64):\n"
            "    try:\n"
            "        os.write(fd, msg)\n"
            "    except OSError:\n"
            "        pass\n"
            "print('done')\n")
    result = _run(box, code)
    assert result.status in STATUSES
    following = _run(box, "print('genuine')")
    assert following.ok and following.stdout == "genuine\n"


# ---------------------------------------------------------------------------------- legitimate programs

def test_pulp_cbc_and_numpy_still_run(sacopt_box):
    code = ("import json, numpy as np, pulp\n"
            "data = json.load(open('data.json'))\n"
            "c = np.array(data['c'])\n"
            "m = pulp.LpProblem('t', pulp.LpMaximize)\n"
            "x = [pulp.LpVariable(f'x{i}', 0, 4, cat='Integer') for i in range(len(c))]\n"
            "m += pulp.lpSum(float(ci) * xi for ci, xi in zip(c, x))\n"
            "m += pulp.lpSum(x) <= 5\n"
            "m.solve(pulp.PULP_CBC_CMD(msg=False))\n"
            "print('OBJECTIVE:', pulp.value(m.objective))\n")
    result = sacopt_box.run_code(code, files={"data.json": json.dumps({"c": [3, 2, 1]})}, timeout_s=30,
                                 memory_mb=2048)
    assert result.ok, result
    assert result.stdout.strip().splitlines()[-1] == "OBJECTIVE: 14.0"


def test_llvmlite_jit_still_runs():
    llvm = pytest.importorskip("llvmlite.binding")
    if not hasattr(llvm, "initialize_native_target"):
        pytest.skip("this llvmlite has no initialize_native_target")
    ir = "define i32 @add(i32 %a, i32 %b) {\n  %s = add i32 %a, %b\n  ret i32 %s\n}\n"
    code = (f"import ctypes, llvmlite.binding as llvm\nIR = {ir!r}\n"
            "llvm.initialize_native_target(); llvm.initialize_native_asmprinter()\n"
            "mod = llvm.parse_assembly(IR); mod.verify()\n"
            "tm = llvm.Target.from_default_triple().create_target_machine()\n"
            "engine = llvm.create_mcjit_compiler(mod, tm); engine.finalize_object()\n"
            "signature = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)\n"
            "add = signature(engine.get_function_address('add'))\n"
            "print(add(40, 2))\n")
    with Sandbox(["llvmlite.binding"]) as sandbox:
        result = sandbox.run_code(code, timeout_s=30)
    assert result.ok and result.stdout == "42\n", result
