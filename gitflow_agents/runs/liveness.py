"""Is this process, this run still alive? One answer for locks, ``status`` and ``cancel``.

A pid alone does not name a process: pids are reused. A record that keeps a pid also keeps its
start: on Linux its *start id* (:func:`start_id`: the boot and the clock ticks since it at which
the process started, which a step of the wall clock does not move), and its start time
(psutil's ``create_time``, epoch seconds, which moves with the clock: psutil adds the boot time,
read again from the wall clock). The pid counts as alive only while it runs (a zombie does not)
and started then: by the start id when the record has one and the process's can be read, else
by the start time within ``SAME_START`` (records of older versions, other platforms). A run is
alive while its supervisor or any process of its agent's tree is (docs/supervisor.md, "Killing
a process tree").
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from gitflow_agents.runs.tree import marker_alive

# Two readings of one process's start time can differ: psutil adds the boot time, which moves
# when the wall clock is stepped (so a record with a start id is compared by that). A pid
# reused within a second of its last owner's start is beyond what pid allocation produces (it
# cycles through the whole pid space first).
SAME_START = 1.0


def start_time(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds), None when it is gone or unreadable."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


@functools.cache
def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def start_id(pid: int) -> str | None:
    """``<boot id>:<start ticks>`` of process ``pid`` (Linux: ``/proc/PID/stat``'s field 22,
    clock ticks from boot to its start): names its start whatever the wall clock does since.
    None where there is no such file (other platforms) or it cannot be read."""
    boot = _boot_id()
    if boot is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        # the command name (field 2, in parentheses) may hold spaces and ")": split after it
        ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None
    return f"{boot}:{ticks}"


def process_alive(pid: object, started: object = None, started_id: object = None) -> bool:
    """True while process ``pid`` runs and is that same process, not a later one that was given
    the pid: by ``started_id`` (its recorded :func:`start_id`) when it is one and the process's
    can be read, else by ``started`` (its recorded start time) when it is a number."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        now = start_id(pid) if isinstance(started_id, str) else None
        if now is not None:
            return now == started_id
        if isinstance(started, (int, float)) and not isinstance(started, bool):
            return abs(proc.create_time() - started) < SAME_START
    except psutil.NoSuchProcess:  # ZombieProcess included
        return False
    except psutil.AccessDenied:  # another user's process: it exists, and that is all we know
        return True
    return True


def supervisor_alive(status: Mapping[str, Any]) -> bool:
    """Whether the process that supervises the run whose ``status.json`` is ``status`` lives."""
    return process_alive(
        status.get("supervisor_pid"),
        status.get("supervisor_create_time"),
        status.get("supervisor_start_id"),
    )


def run_alive(status: Mapping[str, Any]) -> bool:
    """Whether anyone can still finish the run whose ``status.json`` is ``status``: its
    supervisor, or its agent; while the agent's pid is not on record yet (the supervisor writes
    it right after starting the agent), any process carrying the run's tree marker."""
    if supervisor_alive(status):
        return True
    pid = status.get("pid")
    if isinstance(pid, int):
        return process_alive(pid, status.get("create_time"), status.get("start_id"))
    token, since = status.get("tree_token"), status.get("started")
    if not isinstance(token, str):
        return False

    return marker_alive(token, float(since) if isinstance(since, (int, float)) else None)
