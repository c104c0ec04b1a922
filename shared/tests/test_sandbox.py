"""shared.sandbox: every outcome (ok, error, timeout, memory, killed, forbidden), that no process is left, and
the refusal to run unconfined. The hostile programs are in test_sandbox_hostile.py."""
import json
import os
import sys
import time

import pytest

import shared.sandbox as sandbox_module
from shared.sandbox import BWRAP_ENV, STATUSES, UNSAFE_ENV, Sandbox, SandboxError, SandboxResult, run_code

_WHY_NOT = sandbox_module.unavailable_reason()
needs_bwrap = pytest.mark.skipif(_WHY_NOT is not None, reason=f"bubblewrap sandbox unavailable: {_WHY_NOT}")


@pytest.fixture(autouse=True)
def _never_unconfined(monkeypatch):
    monkeypatch.delenv(UNSAFE_ENV, raising=False)


@pytest.fixture(scope="module")
def sandbox():
    if _WHY_NOT is not None:
        pytest.skip(f"bubblewrap sandbox unavailable: {_WHY_NOT}")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(UNSAFE_ENV, raising=False)
        with Sandbox(["json", "math"], allow_spawn=["sleep"]) as box:
            yield box


def _gone(pid: int, within_s: float = 5.0) -> bool:
    """True when ``pid`` no longer runs (a zombie awaiting its parent's wait counts as gone)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


def _namespace_processes(box: Sandbox) -> list[int]:
    """Host pids of the processes in ``box``'s PID namespace (bwrap's init and the zygote when idle)."""
    with open(f"/proc/{box.pid}/task/{box.pid}/children") as handle:
        init = int(handle.read().split()[0])
    namespace = os.readlink(f"/proc/{init}/ns/pid")
    pids = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and os.readlink(f"/proc/{name}/ns/pid") == namespace and not _gone(int(name), 0.01):
                pids.append(int(name))
        except OSError:
            pass
    return pids


def test_ok_with_entry_value_and_stdout(sandbox):
    code = "import math\nprint('hello')\ndef solve(xs, scale=1):\n    return {'sum': math.fsum(xs) * scale}\n"
    result = sandbox.run_code(code, entry="solve", args=[[1, 2, 3.5]], kwargs={"scale": 2})
    assert isinstance(result, SandboxResult) and result.ok
    assert result.value == {"sum": 13.0} and result.stdout == "hello\n" and result.returncode == 0
    assert result.isolation == "bwrap" and result.confined and result.wall_s > 0 and result.cpu_s >= 0


def test_script_reads_files_in_fresh_scratch_directory(sandbox):
    code = ("import json, os\nprint(json.load(open('data.json'))['a'], sorted(os.listdir('.')))\n"
            "open('out.txt', 'w').write('x')")
    first = sandbox.run_code(code, files={"data.json": json.dumps({"a": 7})})
    assert first.ok and first.stdout == "7 ['data.json']\n"
    second = sandbox.run_code("import os; print(sorted(os.listdir('.')))")
    assert second.stdout == "[]\n"  # nothing survives from the previous call


def test_exception_is_error_with_traceback(sandbox):
    result = sandbox.run_code("def f():\n    return 1 / 0\nf()")
    assert result.status == "error" and result.error == "ZeroDivisionError: division by zero"
    assert "Traceback" in result.stderr and "ZeroDivisionError" in result.stderr


@pytest.mark.parametrize("code, status, returncode", [
    ("import sys; sys.exit(0)", "ok", 0), ("import sys; sys.exit(3)", "error", 3),
    ("raise KeyboardInterrupt", "error", 0)])
def test_exit_codes(sandbox, code, status, returncode):
    result = sandbox.run_code(code)
    assert result.status == status and result.returncode == returncode


def test_bad_entry_and_non_json_value(sandbox):
    assert sandbox.run_code("x = 1", entry="solve").error == "the program defines no function 'solve'"
    result = sandbox.run_code("def f():\n    return object()", entry="f")
    assert result.status == "error" and "JSON" in result.error


def test_wall_timeout_kills_the_process_group(sandbox):
    code = "import subprocess\nprint(subprocess.Popen(['sleep', '60']).pid, flush=True)\nwhile True:\n    pass"
    start = time.monotonic()
    result = sandbox.run_code(code, timeout_s=3.0, cpu_s=60.0)  # the wall limit must fire first
    assert result.status == "timeout" and "wall-time" in result.error and result.returncode == -9
    assert time.monotonic() - start < 15
    assert len(_namespace_processes(sandbox)) == 2  # bwrap's init and the zygote: the sleep is gone


def test_cpu_limit(sandbox):
    result = sandbox.run_code("while True:\n    pass", timeout_s=60.0, cpu_s=1.0)
    assert result.status == "timeout" and "CPU" in result.error and result.cpu_s >= 0.9


def test_memory_blowup(sandbox):
    result = sandbox.run_code("block = bytearray(3 * 1024 ** 3)", memory_mb=512)
    assert result.status == "memory" and result.error.startswith("MemoryError")


def test_memory_limit_below_zygote_footprint_is_reported(sandbox):
    result = sandbox.run_code("print(1)", memory_mb=16)
    assert result.status == "error" and "raise memory_mb" in result.error and result.stdout == ""


@pytest.mark.parametrize("code, signal_name", [
    ("import os\nos.abort()", "SIGABRT"), ("import ctypes\nctypes.string_at(0)", "SIGSEGV")])
def test_crash_is_killed(sandbox, code, signal_name):
    result = sandbox.run_code(code)
    assert result.status == "killed" and result.error == f"killed by signal {signal_name}"


def test_file_size_limit(sandbox):
    result = sandbox.run_code("open('big.bin', 'wb').write(b'x' * (3 << 20))", max_file_mb=1)
    assert result.status == "error" and "File too large" in result.error  # EFBIG: Python ignores SIGXFSZ


@pytest.mark.parametrize("code, fragment", [
    ("import socket\nsocket.create_connection(('127.0.0.1', 9))", "forbidden: "),
    ("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)", "network socket"),
    ("import socket\nsocket.getaddrinfo('example.org', 80)", "socket.getaddrinfo"),
    ("import urllib.request\nurllib.request.urlopen('http://example.org')", "forbidden: "),
    ("import subprocess\nsubprocess.run(['ls'])", "process spawn"),
    ("import os\nos.system('true')", "os.system"),
    ("import os\nos.fork()", "os.fork"),
    ("open('/tmp/escaped.txt', 'w')", "outside the scratch directory"),
])
def test_forbidden_actions(sandbox, code, fragment):
    result = sandbox.run_code(code)
    assert result.status == "forbidden" and fragment in result.error


def test_forbidden_even_when_the_program_catches_it(sandbox):
    code = "import socket\ntry:\n    socket.socket(socket.AF_INET)\nexcept Exception:\n    pass\nprint('went on')"
    result = sandbox.run_code(code)
    assert result.status == "forbidden" and "went on" not in result.stdout


def test_unix_sockets_and_allowed_spawn_are_fine(sandbox):
    code = ("import socket, subprocess\na, b = socket.socketpair()\na.sendall(b'x')\n"
            "print(b.recv(1), subprocess.run(['sleep', '0']).returncode)")
    result = sandbox.run_code(code)
    assert result.ok and result.stdout == "b'x' 0\n"


def test_no_child_is_left_even_one_in_its_own_session(sandbox):
    code = ("import subprocess\nprint(subprocess.Popen(['sleep', '60']).pid,"
            " subprocess.Popen(['sleep', '60'], start_new_session=True).pid)")
    result = sandbox.run_code(code)
    assert result.ok and len(result.stdout.split()) == 2
    assert len(_namespace_processes(sandbox)) == 2


@needs_bwrap
def test_environment_is_cleared(monkeypatch):
    monkeypatch.setenv("REPRO_LLM_API_KEY", "sk-secret-for-test")
    with Sandbox() as box:
        code = "import os\nprint(sorted(os.environ))\nprint(b'sk-secret' in open('/proc/self/environ', 'rb').read())"
        result = box.run_code(code)
    names, leaked = result.stdout.splitlines()
    assert result.ok and "REPRO_LLM_API_KEY" not in names and leaked == "False"
    assert set(eval(names)) == {"HOME", "LANG", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                "PATH", "TMPDIR"}


def test_network_namespace_has_only_loopback(sandbox):
    result = sandbox.run_code("print(open('/proc/net/dev').read().count(':'))")
    assert result.ok and result.stdout.strip() == "1"  # only the loopback device


@needs_bwrap
def test_allowed_imports():
    with Sandbox(["json"], allowed_imports=["json", "math"]) as box:
        assert box.run_code("import json, math\nfrom math import sqrt\nprint(sqrt(4))").stdout == "2.0\n"
        result = box.run_code("import math\nimport os")
        assert result.status == "forbidden" and "import of 'os'" in result.error
        assert box.run_code("import os.path").status == "forbidden"
        assert box.run_code("import json\nprint(json.dumps([1]))").ok  # json itself imports freely


def test_call_runs_a_module_function(sandbox):
    assert sandbox.call("math:sqrt", [16.0]).value == 4.0
    assert sandbox.call(json.dumps, [[1, 2]], {"separators": (",", ":")}).value == "[1,2]"
    assert sandbox.call("math:no_such_function").status == "error"
    with pytest.raises(ValueError, match="module-level"):
        sandbox.call(lambda: 1)
    with pytest.raises(ValueError, match="target"):
        sandbox.call("math.sqrt")


def test_output_is_cut(sandbox):
    result = sandbox.run_code("print('x' * 5000)", max_output_bytes=100)
    assert result.stdout.startswith("x" * 100) and "more bytes cut" in result.stdout


@pytest.mark.parametrize("kwargs, match", [
    ({"timeout_s": 0}, "timeout_s"), ({"cpu_s": -1}, "cpu_s"), ({"memory_mb": 8}, "memory_mb"),
    ({"files": {"../x": "a"}}, "relative"), ({"files": {"/etc/x": "a"}}, "relative"),
    ({"files": {"a": 1}}, "str or bytes"), ({"args": [object()]}, "JSON"), ({"args": 5}, "args"),
    ({"max_output_bytes": -1}, "max_output_bytes"), ({"entry": "not a name"}, "entry")])
def test_bad_input(sandbox, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sandbox.run_code("pass", **kwargs)


def test_code_must_be_text(sandbox):
    with pytest.raises(ValueError, match="code"):
        sandbox.run_code(b"print(1)")


@needs_bwrap
def test_preload_failure_and_bad_options():
    with pytest.raises(SandboxError, match="no_such_module_for_test"):
        Sandbox(["no_such_module_for_test"])
    with pytest.raises(ValueError, match="preload"):
        Sandbox("numpy")
    with pytest.raises(ValueError, match="scratch_root"):
        Sandbox(scratch_root="/no/such/dir")


@needs_bwrap
def test_zygote_restarts_and_close_leaves_nothing(tmp_path):
    box = Sandbox(scratch_root=tmp_path)
    first = box.pid
    os.kill(first, 9)
    assert _gone(first)
    assert box.run_code("print(2)").stdout == "2\n" and box.pid != first
    second = box.pid
    box.close()
    box.close()
    assert box.pid is None and _gone(second)
    assert list(tmp_path.iterdir()) == []  # scratch directories removed


@needs_bwrap
def test_run_code_one_off_and_statuses():
    assert run_code("print(40 + 2)").stdout == "42\n"
    assert STATUSES == ("ok", "error", "timeout", "memory", "killed", "forbidden")


# ---------------------------------------------------------------------------------- refusing to run unconfined

def test_missing_bwrap_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setenv(BWRAP_ENV, "/no/such/bwrap")
    with pytest.raises(SandboxError) as info:
        Sandbox()
    message = str(info.value)
    assert "refuses to run model-generated code" in message and "/no/such/bwrap" in message
    assert "apt-get install bubblewrap" in message and UNSAFE_ENV in message
    with pytest.raises(SandboxError, match="bubblewrap"):
        run_code("print(1)")


def test_bwrap_that_cannot_create_namespaces_is_refused(monkeypatch, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
                    "does not allow non-privileged user namespaces' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(BWRAP_ENV, str(fake))
    with pytest.raises(SandboxError, match="cannot create its sandbox here: bwrap: No permissions to creating"):
        Sandbox()


def test_a_bwrap_that_does_not_confine_is_refused(monkeypatch, tmp_path):
    """A fake bwrap that runs the command without any namespace: the zygote's own checks refuse to serve."""
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done\nshift\nn=$#\ni=0\n'  # drop the uid
                    'for a in "$@"; do i=$((i+1)); [ $i -le $((n-2)) ] && set -- "$@" "$a"; done\n'
                    'shift $n\ncd /\nexec "$@" -1 -1\n')
    fake.chmod(0o755)
    monkeypatch.setenv(BWRAP_ENV, str(fake))
    with pytest.raises(SandboxError, match="not confined"):
        Sandbox()


def test_unsafe_opt_out_runs_unconfined_and_says_so(monkeypatch, capfd):
    monkeypatch.setenv(BWRAP_ENV, "/no/such/bwrap")
    monkeypatch.setenv(UNSAFE_ENV, "1")
    with Sandbox(["json"]) as box:
        result = box.run_code("import json\nprint(json.dumps([1]))")
        assert box.isolation == "unconfined" and not box.confined
    assert result.ok and result.stdout == "[1]\n"
    assert result.isolation == "unconfined" and result.confined is False
    assert "UNCONFINED" in capfd.readouterr().err


def test_bwrap_command_line_has_every_isolation_flag():
    argv, fds = sandbox_module._bwrap_command("bwrap", sys.path, 64, ["python"], os.geteuid() == 0, 3000000001,
                                              3000000001)
    for fd in fds:
        os.close(fd)
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent", "--new-session",
                 "--clearenv", "--remount-ro"):
        assert flag in argv
    assert argv[argv.index("--tmpfs") - 1] == str(64 << 20)  # the scratch tmpfs is size-limited
    binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
    hidden = ("/home", "/var/tmp") if sandbox_module._ROOT.startswith("/tmp/") else ("/home", "/tmp", "/var/tmp")
    assert not any(b.startswith(hidden) or b.endswith("/.git") for b in binds)
    assert os.path.join(sandbox_module._ROOT, "shared") in binds and sandbox_module._ROOT not in binds
    if os.geteuid() == 0:
        assert "--cap-drop" in argv and "--unshare-user" not in argv
    else:
        assert argv[argv.index("--uid") + 1] == "3000000001" and "--disable-userns" in argv


def test_isolation_summary_tallies_every_result_known_answers():
    from shared.sandbox import _tallied, isolation_summary, reset_isolation_summary

    reset_isolation_summary()
    assert isolation_summary() == {"runs": 0, "unconfined_runs": 0, "confined_all": None, "isolation": None}
    _tallied(SandboxResult("ok", isolation="bwrap", confined=True))
    _tallied(SandboxResult("error", isolation="bwrap", confined=True))
    assert isolation_summary() == {"runs": 2, "unconfined_runs": 0, "confined_all": 1, "isolation": "bwrap"}
    _tallied(SandboxResult("ok", isolation="unconfined", confined=False))
    assert isolation_summary() == {"runs": 3, "unconfined_runs": 1, "confined_all": 0,
                                   "isolation": "bwrap+unconfined"}
    reset_isolation_summary()
    assert isolation_summary()["runs"] == 0


@needs_bwrap
def test_every_call_is_tallied():
    from shared.sandbox import isolation_summary, reset_isolation_summary

    reset_isolation_summary()
    with Sandbox() as sb:
        sb.run_code("print(1)")
        sb.call("json:dumps", [[1]])
    assert isolation_summary() == {"runs": 2, "unconfined_runs": 0, "confined_all": 1, "isolation": "bwrap"}
    reset_isolation_summary()
