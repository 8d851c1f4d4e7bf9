"""Is this process, this run still alive? One answer for locks, ``status`` and ``cancel``.

A pid alone does not name a process: pids are reused. A record that keeps a pid also keeps its
start time (psutil's ``create_time``), and the pid counts as alive only while it runs (a zombie
does not) and started at that time. A run is alive while its supervisor or any process of its
agent's tree is (docs/supervisor.md, "Killing a process tree").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psutil

from gitflow_agents.runs.tree import marker_alive

# Two readings of one process's start time can differ: psutil adds the boot time, which moves
# when the wall clock is stepped. A pid reused within a second of its last owner's start is
# beyond what pid allocation produces (it cycles through the whole pid space first).
SAME_START = 1.0


def start_time(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds), None when it is gone or unreadable."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def process_alive(pid: object, started: object = None) -> bool:
    """True while process ``pid`` runs and, when ``started`` (its recorded start time) is a
    number, is that same process and not a later one that was given the pid."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        if isinstance(started, (int, float)) and not isinstance(started, bool):
            return abs(proc.create_time() - started) < SAME_START
    except psutil.NoSuchProcess:  # ZombieProcess included
        return False
    except psutil.AccessDenied:  # another user's process: it exists, and that is all we know
        return True
    return True


def run_alive(status: Mapping[str, Any]) -> bool:
    """Whether anyone can still finish the run whose ``status.json`` is ``status``: its
    supervisor, or its agent; while the agent's pid is not on record yet (the supervisor writes
    it right after starting the agent), any process carrying the run's tree marker."""
    if process_alive(status.get("supervisor_pid"), status.get("supervisor_create_time")):
        return True
    pid = status.get("pid")
    if isinstance(pid, int):
        return process_alive(pid, status.get("create_time"))
    token, since = status.get("tree_token"), status.get("started")
    if not isinstance(token, str):
        return False

    return marker_alive(token, float(since) if isinstance(since, (int, float)) else None)
