"""``gitflow-agents cancel RUN_ID``: kill an agent's whole process tree; the run ends canceled.

A live supervisor is asked first (the file ``<run dir>/cancel``): it kills the tree and records
the run itself. When it does not answer within ``--wait`` seconds (or is gone), the tree
recorded in ``status.json`` (pid, process group, the run's environment marker) is killed here
and the run is marked canceled.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from gitflow_agents.errors import UsageError


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.config import find_project_root, load_flow_config
    from gitflow_agents.runs import find_run, read_json, write_text_atomic

    root = find_project_root(Path.cwd())
    config = load_flow_config(root)
    paths = find_run(root, config.flow_dir, args.run_id)
    if paths is None:
        raise UsageError(f"cancel: no run {args.run_id!r} under {config.flow_dir}/*/runs/")
    status = read_json(paths.status) or {}
    if status.get("state") not in (None, "queued", "running", "killing"):
        print(f"run {paths.run_dir.name} already ended: {status.get('state')}")
        return 0
    write_text_atomic(paths.cancel, f"{time.time():.3f} canceled by user\n")
    deadline = time.monotonic() + float(args.wait)
    while time.monotonic() < deadline and _supervisor_alive(status):
        state = (read_json(paths.status) or {}).get("state")
        if state not in ("queued", "running", "killing"):
            print(f"canceled run {paths.run_dir.name} ({state})")
            return 0
        time.sleep(0.05)
    # Read again: what the supervisor recorded after we first looked (the agent's pid, or its
    # tree marker when it died right after starting the agent) must not be missed.
    status = read_json(paths.status) or status
    left = _kill_recorded_tree(status)
    _mark_canceled(paths, status)
    note = f"; processes left: {list(left)}" if left else ""
    print(f"canceled run {paths.run_dir.name} (killed its process tree{note})")
    return 0


def _supervisor_alive(status: dict[str, Any]) -> bool:
    from gitflow_agents.liveness import process_alive

    return process_alive(status.get("supervisor_pid"), status.get("supervisor_create_time"))


def _kill_recorded_tree(status: dict[str, Any]) -> tuple[int, ...]:
    from gitflow_agents.liveness import process_alive
    from gitflow_agents.supervisor import kill_tree

    pid, pgid, created = status.get("pid"), status.get("pgid"), status.get("create_time")
    # the recorded start time is required: a bare pid may by now name another process
    leader_ok = isinstance(created, (int, float)) and process_alive(pid, created)
    token = status.get("tree_token")
    started = status.get("started")
    return kill_tree(
        pid if leader_ok else None,
        # the group id is only trusted while its leader is the process we started
        pgid=pgid if leader_ok and isinstance(pgid, int) else None,
        # every process of the run carries the marker, also those that left the group (setsid)
        # or were started before the pid was recorded
        token=token if isinstance(token, str) else None,
        grace=3.0,
        # processes older than the run cannot be part of it: their environment is not read
        since=float(started) if isinstance(started, (int, float)) else None,
    )


def _mark_canceled(paths: Any, status: dict[str, Any]) -> None:
    from gitflow_agents.runs import flow_result, read_json, write_json_atomic, write_result

    now = time.time()
    current = read_json(paths.status) or dict(status)
    current.update(state="canceled", reason="canceled by user", ended=now)
    write_json_atomic(paths.status, current)
    if read_json(paths.result) is None:
        kind = str(current.get("kind") or "implement")
        result = flow_result(kind, "canceled")
        result["run"] = {
            "runID": paths.run_dir.name,
            "flow": current.get("flow"),
            "agent": current.get("agent"),
            "outcome": "canceled",
            "reason": "canceled by user (supervisor gone)",
            "endedAt": now,
        }
        write_result(paths, result)
