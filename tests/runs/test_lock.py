"""lock.py: one run per plan step; live holders refuse, dead ones are taken over."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from gitflow_agents.base.errors import UsageError
from gitflow_agents.runs.lock import LockInfo, StepLockedError, hold, read_lock, step_lock_path


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


class _Interleaving:
    """Threads racing for one lock, each hold marked inside; taker B is held up at two points:
    right after it judged the stale lock (``holder_alive``) and, should it link anything after
    that, at the link. ``wait_for`` blocks until a condition on the state holds."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.inside: list[str] = []
        self.most = 0
        self.events: list[str] = []
        self.go: set[str] = set()

    def note(self, event: str) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def pause(self, event: str) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()
            assert self.cond.wait_for(lambda: event in self.go, HANG)

    def release(self, event: str) -> None:
        with self.cond:
            self.go.add(event)
            self.cond.notify_all()

    def wait_for(self, test: Callable[[], bool]) -> None:
        with self.cond:
            assert self.cond.wait_for(test, HANG)

    def enter(self, who: str) -> None:
        with self.cond:
            self.inside.append(who)
            self.most = max(self.most, len(self.inside))
            self.events.append(f"{who} holds")
            self.cond.notify_all()

    def leave(self, who: str) -> None:
        with self.cond:
            self.inside.remove(who)


HANG = 60.0  # seconds: a deadlock bound only


def test_a_taker_held_up_after_judging_a_lock_stale_lets_no_second_holder_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B judges the lock stale and is held up; A takes the lock meanwhile, if it can. When B goes
    on, it must not make room for D beside A (the earlier lock renamed A's lock aside to check it, and D
    created its own in that gap). Threads of one process: each opens the file itself, so their
    flocks exclude each other as separate processes' do."""
    import gitflow_agents.runs.lock as lock

    path = tmp_path / "step.lock"
    _write(path, 999_999_999, 1.0)  # stale: a dead holder's record ("other")
    run = _Interleaving()
    real_alive, real_link = lock.holder_alive, os.link

    def alive(info: LockInfo) -> bool:
        answer = real_alive(info)
        who = threading.current_thread().name
        if info.run_id == "other":
            run.note(f"{who} judged")
            if who == "B" and "B judged" not in run.events[:-1]:
                run.pause("B judged")
        return answer

    def link(src: object, dst: object) -> None:
        held_up = "B judged" in run.go and "B links" not in run.events
        if threading.current_thread().name == "B" and held_up:
            run.pause("B links")
        real_link(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(lock, "holder_alive", alive)
    monkeypatch.setattr(os, "link", link)
    outcome: dict[str, str] = {}

    def taker(who: str, stay: str | None) -> None:
        try:
            with hold(path, who):
                run.enter(who)
                if stay:
                    run.wait_for(lambda: stay in run.go)
                run.leave(who)
                outcome[who] = "held"
        except StepLockedError:
            outcome[who] = "refused"
        run.note(f"{who} done")

    threads = {
        "B": threading.Thread(target=taker, args=("B", "end"), name="B"),
        "A": threading.Thread(target=taker, args=("A", "end"), name="A"),
        "D": threading.Thread(target=taker, args=("D", None), name="D"),
    }
    threads["B"].start()
    run.wait_for(lambda: "B judged" in run.events)
    threads["A"].start()  # takes the stale lock over, or waits for B, judging again and again
    run.wait_for(lambda: "A holds" in run.events or run.events.count("A judged") >= 2)
    run.release("B judged")
    run.wait_for(lambda: "B links" in run.events or "B holds" in run.events)
    threads["D"].start()
    run.wait_for(lambda: "D done" in run.events)
    run.release("B links")
    run.release("end")
    for thread in threads.values():
        thread.join(HANG)
    assert run.most == 1, run.events
    assert outcome["D"] == "refused", run.events  # the lock was held all along
    assert not path.exists()


def test_a_lock_file_is_never_seen_without_its_holder(tmp_path: Path) -> None:
    """The lock is complete the moment it exists: a concurrent taker never reads it empty and
    takes it for an unreadable (stale) one."""
    path = tmp_path / "step.lock"
    with hold(path, "mine"):
        assert read_lock(path) is not None
        with pytest.raises(StepLockedError, match="mine"), hold(path, "other"):
            pass


HOLDER = """
import subprocess, sys, time
from pathlib import Path
from gitflow_agents.runs.lock import hold

with hold(Path(sys.argv[1]), "killed-run"):
    # an agent it started, given every descriptor it may: it must not inherit the lock
    agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], close_fds=False)
    print(agent.pid, flush=True)
    time.sleep(60)
"""


@pytest.mark.slow
def test_a_holder_killed_with_9_leaves_a_lock_the_next_run_takes(tmp_path: Path) -> None:
    """kill -9 leaves the file and its record; the kernel let go of the flock, and the agent the
    holder started (still running) does not hold it. The next run takes it, and so does the one
    after that."""
    path = tmp_path / "locks" / "step-01.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    )
    agent_pid = None
    try:
        assert holder.stdout is not None
        agent_pid = int(holder.stdout.readline())
        refused = pytest.raises(StepLockedError, match=f"killed-run \\(pid {holder.pid}\\)")
        with refused, hold(path, "too-early"):
            pass
        holder.kill()
        holder.wait()
        assert read_lock(path).run_id == "killed-run"  # type: ignore[union-attr]
        assert psutil.pid_exists(agent_pid)
        with hold(path, "rerun-1"):
            assert read_lock(path).run_id == "rerun-1"  # type: ignore[union-attr]
        assert not path.exists()
        with hold(path, "rerun-2"):
            assert read_lock(path).run_id == "rerun-2"  # type: ignore[union-attr]
        assert sorted(p.name for p in path.parent.iterdir()) == []  # no temp file left
    finally:
        holder.kill()
        holder.wait()
        if agent_pid is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(agent_pid).kill()


def test_an_older_versions_lock_of_a_live_run_is_respected_after_the_flock(tmp_path: Path) -> None:
    """Earlier versions took no flock: its live holder's record alone keeps the lock (and a dead one's is
    taken over: test_a_dead_process_lock_is_taken_over)."""
    path = tmp_path / "step.lock"
    _write(path, os.getpid(), psutil.Process().create_time())
    with pytest.raises(StepLockedError, match="held by run other"), hold(path, "mine"):
        pass
    assert read_lock(path).run_id == "other"  # type: ignore[union-attr]
    assert [p.name for p in tmp_path.iterdir()] == ["step.lock"]


@pytest.mark.parametrize("kind", ["folder", "dangling symlink"])
def test_what_cannot_be_a_lock_is_one_clear_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "step.lock"
    if kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "missing")
    with pytest.raises(UsageError, match=f"{path}: not a lock file"), hold(path, "mine"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step.lock"]
