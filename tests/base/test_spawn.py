"""``spawn``: git started without ``subprocess`` behaves as ``proc.run`` does (issue 20)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

from gitflow_agents.base import proc, spawn
from gitflow_agents.base.errors import GitflowError

ENV = dict(os.environ)


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_both_outputs_are_read_as_text_like_subprocess() -> None:
    code = "import sys; sys.stdout.buffer.write(b'a\\r\\nb\\rc\\xff\\n'); sys.stderr.write('e\\n')"
    assert spawn.run(py(code), env=ENV) == proc.run(py(code))
    assert spawn.run(py(code), env=ENV).stdout == "a\nb\nc\ufffd\n"


def test_full_pipes_on_both_sides_do_not_deadlock() -> None:
    """stderr fills its pipe before stdout ends (and the reverse), while the input is larger
    than a pipe holds: every side is served as it is ready."""
    code = (
        "import sys\n"
        "data = sys.stdin.read()\n"
        "sys.stderr.write('e' * 300_000); sys.stderr.flush()\n"
        "sys.stdout.write(data.upper()); sys.stdout.flush()\n"
        "sys.stderr.write('f' * 300_000)\n"
    )
    given = "x" * 500_000
    result = spawn.begin(py(code), env=ENV, input=given).result(timeout=60)
    assert result.stdout == given.upper()
    assert result.stderr == "e" * 300_000 + "f" * 300_000


def test_input_the_command_does_not_read_is_dropped() -> None:
    result = spawn.run(py("import os; os.close(0); print('done')"), env=ENV, input="y" * 10**6)
    assert result.stdout == "done\n"


def test_stdin_is_closed_without_input_and_empty_input_is_passed() -> None:
    code = "import sys; print(repr(sys.stdin.read()))"
    assert spawn.run(py(code), env=ENV).stdout == "''\n"
    assert spawn.run(py(code), env=ENV, input="").stdout == "''\n"


def test_a_non_zero_exit_is_the_same_error_as_proc() -> None:
    code = "import sys; print('boom', file=sys.stderr); sys.exit(3)"
    with pytest.raises(proc.CalledProcessError) as info:
        spawn.run(py(code), env=ENV)
    with pytest.raises(proc.CalledProcessError) as same:
        proc.run(py(code))
    assert str(info.value) == str(same.value)
    assert info.value.result.returncode == 3
    assert spawn.run(py(code), env=ENV, check=False).returncode == 3


def test_a_signal_is_a_negative_code_and_sigpipe_is_at_its_default() -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    assert spawn.run(py(code), env=ENV, check=False).returncode == -15
    # Python ignores SIGPIPE; subprocess resets it (and SIGXFSZ) in the child, so does spawn
    if not Path("/proc/self/status").is_file():
        pytest.skip("no /proc here")
    ignored = ["grep", "SigIgn", "/proc/self/status"]
    pipe_and_xfsz = (1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # in this process
    for result in (spawn.run(ignored, env=ENV), proc.run(ignored)):
        assert int(result.stdout.split()[1], 16) & pipe_and_xfsz == 0


def test_the_program_is_found_on_the_path_of_the_environment(tmp_path: Path) -> None:
    (tmp_path / "tool").mkdir()  # a folder of the name is passed over
    bin = tmp_path / "bin"
    bin.mkdir()
    (bin / "tool").write_text(f"#!{sys.executable}\nprint('found')\n")
    (bin / "tool").chmod(0o755)
    env = {**ENV, "PATH": f"{tmp_path}{os.pathsep}{bin}"}
    assert spawn.run(["tool"], env=env).stdout == "found\n"
    with pytest.raises(GitflowError, match=r"^command not found: tool$"):
        spawn.run(["tool"], env={**ENV, "PATH": str(tmp_path)})
    with pytest.raises(GitflowError, match=r"^command not found: no-such-binary-xyz$"):
        spawn.run(["no-such-binary-xyz"], env=ENV)
    with pytest.raises(GitflowError, match=r"^command not found: /no/such/file$"):
        spawn.run(["/no/such/file"], env=ENV)


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


def _with_grandchild(pidfile: Path) -> list[str]:
    return py(
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "print('x' * 100_000, flush=True)\n"
        "time.sleep(60)\n"
    )


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    running = spawn.begin(_with_grandchild(pidfile), env=ENV)
    _wait_for(pidfile)  # the timeout counts from result(): the whole tree is up by then
    with pytest.raises(proc.TimeoutExpired, match=r"timed out after 0\.3s"):
        running.result(timeout=0.3)
    assert _gone(running.pid)
    assert _gone(int(pidfile.read_text()))
    running.stop()  # already ended: nothing more


def _wait_for(pidfile: Path) -> None:
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)


def test_stop_ends_an_unread_command_and_its_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    running = spawn.begin(_with_grandchild(pidfile), env=ENV)
    _wait_for(pidfile)
    running.stop()
    assert running.returncode == -9
    assert _gone(int(pidfile.read_text()))
    running.stop()  # a second time: nothing
    assert running.returncode == -9


def test_an_interrupt_while_waiting_kills_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    running = spawn.begin(py("import time; time.sleep(60)"), env=ENV)

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(spawn.select, "poll", lambda: type("P", (), {"register": interrupted})())
    with pytest.raises(KeyboardInterrupt):
        running.result()
    assert running.returncode == -9


def test_no_descriptor_is_left_open() -> None:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc here")
    before = _open_fds()
    spawn.run(py("print(1)"), env=ENV, input="x")
    spawn.begin(py("print(1)"), env=ENV).stop()
    with pytest.raises(GitflowError):
        spawn.run(["no-such-binary-xyz"], env=ENV, input="x")
    with Path(os.devnull).open("wb") as err:
        spawn.finish(spawn.start(py("print(1)"), env=ENV, stderr=err))
    assert _open_fds() == before


def _open_fds() -> set[str]:
    return {path.name for path in Path("/proc/self/fd").iterdir()}


def test_finish_waits_for_the_exit_without_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``finish`` wakes when the helper exits, not at a polling sleep (a millisecond of every
    small review, issue 20); one that does not exit in time is killed."""
    if not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfd here: finish polls")
    argv = py("import sys, time; sys.stdin.read(); time.sleep(0.05)")
    with (tmp_path / "err").open("w+b") as err:
        child = spawn.start(argv, env=ENV, stderr=err)
        sleeps: list[float] = []
        monkeypatch.setattr(spawn.time, "sleep", sleeps.append)
        assert spawn.finish(child) == 0
        assert sleeps == []
        monkeypatch.undo()
        child = spawn.start(py("import time; time.sleep(60)"), env=ENV, stderr=err)
        assert spawn.finish(child, timeout=0.2) == -9


def test_finish_without_a_pidfd_polls_until_the_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    with (tmp_path / "err").open("w+b") as err:
        child = spawn.start(py("import sys; sys.stdin.read()"), env=ENV, stderr=err)
        assert spawn.finish(child) == 0
        child = spawn.start(py("import time; time.sleep(60)"), env=ENV, stderr=err)
        assert spawn.finish(child, timeout=0.2) == -9


def test_a_helper_talks_over_its_pipes_and_its_stderr_goes_to_the_file(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for line in sys.stdin:\n"
        "    print(line.strip().upper(), flush=True)\n"
        "    print('seen', file=sys.stderr, flush=True)\n"
    )
    with (tmp_path / "err").open("w+b") as err:
        child = spawn.start(py(code), env=ENV, stderr=err)
        child.stdin.write(b"hello\n")
        child.stdin.flush()
        assert child.stdout.readline() == b"HELLO\n"
        assert spawn.finish(child) == 0
        assert child.wait() == 0
        err.seek(0)
        assert err.read() == b"seen\n"
        with pytest.raises(GitflowError, match=r"^command not found: no-such-binary-xyz$"):
            spawn.start(["no-such-binary-xyz"], env=ENV, stderr=err)


@pytest.mark.parametrize("memfd", [True, False])
def test_a_scratch_file_is_unnamed_readable_and_leaves_nothing(
    memfd: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper's stderr: a memfd, or (no memfd: not Linux, a sandbox) a file of ``TMPDIR``
    removed as soon as it is open; what the helper writes is read back."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    if not memfd:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    with spawn.scratch_file() as errors:
        child = spawn.start(("sh", "-c", "echo oops >&2"), env=dict(os.environ), stderr=errors)
        assert spawn.finish(child) == 0
        errors.seek(0)
        assert errors.read() == b"oops\n"
        assert list(tmp_path.iterdir()) == []
