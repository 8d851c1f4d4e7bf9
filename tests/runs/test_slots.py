"""Slots (``runs/slots.py``): at most ``max_parallel`` agents of one adapter at once, across
processes; a slot held by a process killed with SIGKILL is free again (the kernel drops the
flock); a waiting run is told once and can be canceled. Concurrency is counted from an
append-only log of enter/leave lines, never from timings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitflow_agents.base.errors import UsageError
from gitflow_agents.runs.slots import SlotWaitCanceled, hold_slot, holders

# A holder stays inside for ``hold`` seconds; with ``total`` (> 0) it leaves as soon as ``limit``
# holders are inside at once, or ``total`` have entered (the last ones have nobody to wait for):
# a hand-off read from the log, so every slot is seen full without a fixed sleep. Waiters look
# every 10 ms instead of ``slots.POLL`` (how often is no part of what is checked here).
HOLDER = """
import os, sys, time
from pathlib import Path
from gitflow_agents.runs import slots
from gitflow_agents.runs.slots import hold_slot
slots.POLL = 0.01
folder, log, limit, name = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
hold, total = float(sys.argv[5]), int(sys.argv[6])
def handed_off():
    lines = log.read_text().splitlines()
    inside = sum(1 if line[0] == "+" else -1 for line in lines)
    return inside >= limit or sum(1 for line in lines if line[0] == "+") >= total
with hold_slot(folder, "claude", limit, run_id=name):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"+ {name}\\n".encode())
    end = time.monotonic() + hold
    while time.monotonic() < end and not (total and handed_off()):
        time.sleep(0.01)
    os.write(fd, f"- {name}\\n".encode())
    os.close(fd)
"""


def _most_at_once(log: Path) -> int:
    running = most = 0
    for line in log.read_text().splitlines():
        running += 1 if line.startswith("+") else -1
        most = max(most, running)
    return most


def _holder(
    folder: Path, log: Path, limit: int, name: str, hold: float, total: int = 0
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, *map(str, (folder, log, limit, name, hold, total))],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def test_eight_processes_under_a_limit_of_two_never_run_three(tmp_path: Path) -> None:
    folder, log = tmp_path / "slots", tmp_path / "log"
    procs = [_holder(folder, log, 2, f"r{i}", 60, total=8) for i in range(8)]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    assert log.read_text().count("+") == 8
    assert _most_at_once(log) == 2
    assert holders(folder, "claude", 2) == 0


def test_a_slot_of_a_run_killed_with_sigkill_is_free_again(tmp_path: Path) -> None:
    folder, log = tmp_path / "slots", tmp_path / "log"
    proc = _holder(folder, log, 1, "victim", 600)
    deadline = time.monotonic() + 30
    while not (log.exists() and log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert holders(folder, "claude", 1) == 1
    waited: list[str] = []
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    with hold_slot(folder, "claude", 1, run_id="next", waiting=lambda: waited.append("w")) as slot:
        assert slot == 0
        assert holders(folder, "claude", 1) == 1
    assert holders(folder, "claude", 1) == 0
    assert (folder / "claude-0.lock").exists()  # never removed: a remover could let two in


def test_a_waiting_run_is_told_once_and_can_be_canceled(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    told: list[str] = []
    looks = 0

    def canceled() -> bool:
        nonlocal looks
        looks += 1
        return looks >= 3

    second = hold_slot(
        folder, "codex", 1, run_id="second", waiting=lambda: told.append("w"), canceled=canceled
    )
    with hold_slot(folder, "codex", 1, run_id="first"), pytest.raises(SlotWaitCanceled), second:
        pytest.fail("the slot is taken")
    assert told == ["w"]
    with hold_slot(folder, "codex", 1, run_id="third") as slot:  # released by the first
        assert slot == 0


def test_adapters_have_their_own_slots_and_a_larger_limit_takes_the_next(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    with (
        hold_slot(folder, "claude", 1, run_id="a"),
        hold_slot(folder, "codex", 1, run_id="b"),
        hold_slot(folder, "claude", 2, run_id="c") as slot,
    ):
        assert slot == 1
    assert '"runId": "c"' in (folder / "claude-1.lock").read_text()


def test_a_symlink_planted_as_a_slot_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    folder.mkdir()
    (folder / "claude-0.lock").symlink_to(tmp_path / "elsewhere")
    with (
        pytest.raises(UsageError, match=r"claude-0\.lock"),
        hold_slot(folder, "claude", 1, run_id="a"),
    ):
        pass
    assert not (tmp_path / "elsewhere").exists()
