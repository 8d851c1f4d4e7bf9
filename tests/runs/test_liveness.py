"""liveness.py: a pid is alive only while it runs and is the process that was recorded."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gitflow_agents.runs.liveness import process_alive, run_alive, start_time

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
