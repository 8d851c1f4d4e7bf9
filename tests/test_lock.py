"""lock.py: one run per plan step; live holders refuse, dead ones are taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from gitflow_agents.lock import StepLockedError, hold, read_lock, step_lock_path


def _write(path: Path, pid: int, started: float | None, host: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "runId": "other",
        "pid": pid,
        "host": host or socket.gethostname(),
        "pidStarted": started,
        "at": 0,
    }
    path.write_text(json.dumps(data))


def test_hold_creates_and_removes_the_lock(tmp_path: Path) -> None:
    path = step_lock_path(tmp_path, "flows", "plan", 3)
    assert path == tmp_path / "flows" / "plan" / "locks" / "step-03.lock"
    with hold(path, "run-1") as info:
        assert info.pid == os.getpid()
        held = read_lock(path)
        assert held is not None and held.run_id == "run-1" and held.started is not None
        with pytest.raises(StepLockedError, match="run-1"), hold(path, "run-2"):
            pass
    assert not path.exists()


def test_a_live_process_holds(tmp_path: Path) -> None:
    path = tmp_path / "step.lock"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        _write(path, child.pid, psutil.Process(child.pid).create_time())
        with pytest.raises(StepLockedError, match=f"pid {child.pid}"), hold(path, "mine"):
            pass
        assert read_lock(path).run_id == "other"  # type: ignore[union-attr]
    finally:
        child.kill()
        child.wait()


def test_a_dead_process_lock_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "step.lock"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    _write(path, child.pid, 1.0)
    with hold(path, "mine"):
        assert read_lock(path).run_id == "mine"  # type: ignore[union-attr]
    assert not path.exists()


def test_a_reused_pid_does_not_hold(tmp_path: Path) -> None:
    """Our own pid, but a start time from long ago: a different process had it."""
    path = tmp_path / "step.lock"
    _write(path, os.getpid(), 12345.0)
    with hold(path, "mine"):
        assert read_lock(path).run_id == "mine"  # type: ignore[union-attr]


def test_an_unreadable_lock_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "step.lock"
    path.write_text("{not json")
    with hold(path, "mine"):
        pass
    assert not path.exists()


def test_another_hosts_lock_is_respected(tmp_path: Path) -> None:
    path = tmp_path / "step.lock"
    _write(path, 1, None, host="some-other-host")
    with pytest.raises(StepLockedError), hold(path, "mine"):
        pass


def test_a_lock_taken_over_meanwhile_is_not_removed(tmp_path: Path) -> None:
    """Two takers judged the same lock stale; the first already replaced it with its own. The
    second, removing what it judged stale, must not remove the first one's live lock."""
    from gitflow_agents.lock import _take_over

    path = tmp_path / "step.lock"
    _write(path, 999_999_999, 1.0)
    judged_stale = path.read_bytes()
    with hold(path, "first"):  # the first taker's lock, live
        _take_over(path, judged_stale)  # the second taker, late
        assert read_lock(path).run_id == "first"  # type: ignore[union-attr]
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []  # no stale copy or temp file left


def test_a_lock_file_is_never_seen_without_its_holder(tmp_path: Path) -> None:
    """The lock is complete the moment it exists: a concurrent taker never reads it empty and
    takes it for an unreadable (stale) one."""
    path = tmp_path / "step.lock"
    with hold(path, "mine"):
        assert read_lock(path) is not None
        with pytest.raises(StepLockedError, match="mine"), hold(path, "other"):
            pass
