from __future__ import annotations

import sys
import time

import psutil
import pytest

from gitflow_agents.base import proc


def test_run_captures_output() -> None:
    result = proc.run(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"]
    )
    assert result.returncode == 0
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"


def test_stdin_is_closed_by_default() -> None:
    result = proc.run(
        [sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"], timeout=10
    )
    assert result.stdout.strip() == "''"


def test_input_is_passed() -> None:
    result = proc.run(
        [sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], input="hi"
    )
    assert result.stdout.strip() == "HI"


def test_nonzero_exit_raises_with_details() -> None:
    with pytest.raises(proc.CalledProcessError) as info:
        proc.run([sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"])
    assert info.value.result.returncode == 3
    assert "exit 3" in str(info.value)
    assert "boom" in str(info.value)


def test_check_false_returns_result() -> None:
    result = proc.run([sys.executable, "-c", "raise SystemExit(4)"], check=False)
    assert result.returncode == 4


def test_missing_command_is_clear() -> None:
    with pytest.raises(proc.GitflowError, match="command not found: no-such-binary-xyz"):
        proc.run(["no-such-binary-xyz"])


def test_timeout_kills_grandchildren(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pidfile = tmp_path / "grandchild.pid"
    # sh, not Python: its grandchild is up within milliseconds, long before the timeout
    script = f'sleep 60 >/dev/null 2>&1 & echo $! > "{pidfile}"; wait'
    with pytest.raises(proc.TimeoutExpired):
        proc.run(["sh", "-c", script], timeout=0.5)
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while psutil.pid_exists(grandchild) and time.monotonic() < deadline:
        try:
            if psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    alive = (
        psutil.pid_exists(grandchild)
        and psutil.Process(grandchild).status() != psutil.STATUS_ZOMBIE
    )
    assert not alive
