"""liveness.py: a pid is alive only while it runs and is the process that was recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gitflow_agents.runs.liveness import process_alive, run_alive, start_id, start_time
from gitflow_agents.runs.lock import StepLockedError, hold, read_lock
from gitflow_agents.runs.lost import is_lost
from tests.conftest import running_agent, wait_until
from tests.helpers import control as live

LINUX = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux's /proc")

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(SLEEP)
    yield proc
    proc.kill()
    proc.wait()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_running_process_is_alive_by_pid_and_by_its_start_time() -> None:
    me = os.getpid()
    assert process_alive(me)
    assert process_alive(me, start_time(me))
    assert start_time(me) == psutil.Process(me).create_time()


def test_a_reused_pid_is_not_the_recorded_process() -> None:
    assert not process_alive(os.getpid(), 12345.0)


def test_dead_missing_and_odd_pids_are_not_alive() -> None:
    assert not process_alive(_dead_pid())
    assert start_time(_dead_pid()) is None
    for odd in (None, "123", 0, -1, True, 1.5):
        assert not process_alive(odd)


def test_a_zombie_is_not_alive() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.01)
        assert not process_alive(proc.pid)
    finally:
        proc.wait()


def test_a_run_is_alive_while_its_supervisor_runs() -> None:
    me = os.getpid()
    assert run_alive({"supervisor_pid": me, "supervisor_create_time": start_time(me)})
    assert not run_alive({"supervisor_pid": me, "supervisor_create_time": 12345.0})


def test_a_run_is_alive_while_its_agent_runs(sleeper: subprocess.Popen[bytes]) -> None:
    status = {"supervisor_pid": _dead_pid(), "pid": sleeper.pid}
    assert run_alive({**status, "create_time": start_time(sleeper.pid)})
    assert not run_alive({**status, "create_time": 12345.0})


def test_a_run_whose_agent_pid_is_not_on_record_is_found_by_its_marker(tmp_path: Path) -> None:
    """The supervisor died between starting the agent and recording its pid: the tree marker
    (on record before the agent started) still shows the agent alive."""
    token = f"run-{tmp_path.name}:0123456789abcdef"
    started = time.time()
    status = {"supervisor_pid": _dead_pid(), "pid": None, "tree_token": token, "started": started}
    assert not run_alive(status)
    agent = subprocess.Popen(SLEEP, env={**os.environ, "GITFLOW_AGENTS_TREE": token})
    try:
        assert run_alive(status)
    finally:
        agent.kill()
        agent.wait()
    assert not run_alive(status)
    # a recorded pid decides: a dead agent is not revived by a marker elsewhere
    assert not run_alive({**status, "pid": agent.pid})


@LINUX
def test_a_start_id_names_a_process_start_by_its_boot_and_ticks(
    sleeper: subprocess.Popen[bytes],
) -> None:
    mine = start_id(os.getpid())
    assert mine is not None and mine == start_id(os.getpid())
    boot, ticks = mine.rsplit(":", 1)
    assert boot and int(ticks) > 0
    assert start_id(sleeper.pid) not in (None, mine)
    assert start_id(_dead_pid()) is None


@LINUX
def test_a_step_of_the_wall_clock_leaves_a_live_process_alive() -> None:
    """psutil's create_time moves with the clock (it adds the boot time, read from it): a
    start time read before a 5 s step was off by more than SAME_START, and a running run
    was shown lost, refused by `send`, and its step's lock taken by a second run."""
    me = os.getpid()
    before_the_step = start_time(me) - 5  # type: ignore[operator]
    assert process_alive(me, before_the_step, start_id(me))
    assert not process_alive(me, before_the_step)  # without a start id: as before
    assert not process_alive(me, start_time(me), "another-boot:1")  # the start id decides
    assert process_alive(me, start_time(me), 12345)  # not a start id: the time decides


@LINUX
def test_a_supervised_run_stays_alive_across_a_clock_step(repo: Path) -> None:
    """The supervisor records its own start id and its agent's; the shifted start times of
    the tester's repro (what a +5 s step does to the comparison) leave the run live."""
    project = live.write_project(repo)
    with live.spawned() as procs:
        procs.append(live.start_spawn(project, "plain"))
        wait_until(lambda: running_agent(project, "f"), 60)
        status = running_agent(project, "f")
        assert status is not None
        assert status["supervisor_start_id"] == start_id(status["supervisor_pid"])  # type: ignore[arg-type]
        assert status["start_id"] == start_id(status["pid"])  # type: ignore[arg-type]
        stepped = {**status}
        for key in ("supervisor_create_time", "create_time"):
            stepped[key] = status[key] - 5  # type: ignore[operator]
        assert not is_lost(stepped) and run_alive(stepped)
        assert is_lost({**stepped, "supervisor_start_id": None})  # a record of before: as before
        procs[0].terminate()  # the supervisor ends its agent's tree
        procs[0].communicate(timeout=60)


@LINUX
def test_a_step_lock_stays_held_across_a_clock_step(tmp_path: Path) -> None:
    path = tmp_path / "step.lock"
    with hold(path, "first"):
        held = read_lock(path)
        assert held is not None and held.started_id == start_id(os.getpid())
        record = json.loads(path.read_text())
        record["pidStarted"] -= 5
        path.write_text(json.dumps(record))
        with pytest.raises(StepLockedError, match="held by run first"), hold(path, "second"):
            pass
