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

from gitflow_agents.base.errors import UsageError
from gitflow_agents.runs.status import is_live


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.base.fsutil import write_text_atomic
    from gitflow_agents.config import find_project_root, load_flow_config
    from gitflow_agents.runs import find_run, read_json
    from gitflow_agents.runs.lost import kill_recorded_tree, mark_ended

    root = find_project_root(Path.cwd())
    config = load_flow_config(root)
    paths = find_run(root, config.flow_dir, args.run_id)
    if paths is None:
        raise UsageError(f"cancel: no run {args.run_id!r} under {config.flow_dir}/*/runs/")
    status = read_json(paths.status) or {}
    if status.get("state") is not None and not is_live(status.get("state")):
        print(f"run {paths.run_dir.name} already ended: {status.get('state')}")
        return 0
    write_text_atomic(paths.cancel, f"{time.time():.3f} canceled by user\n")
    deadline = time.monotonic() + float(args.wait)
    while time.monotonic() < deadline and _supervisor_alive(status):
        state = (read_json(paths.status) or {}).get("state")
        if not is_live(state):
            print(f"canceled run {paths.run_dir.name} ({state})")
            return 0
        time.sleep(0.05)
    # Read again: what the supervisor recorded after we first looked (the agent's pid, or its
    # tree marker when it died right after starting the agent) must not be missed.
    status = read_json(paths.status) or status
    left = kill_recorded_tree(status)
    mark_ended(paths, status, "canceled by user")
    note = f"; processes left: {list(left)}" if left else ""
    print(f"canceled run {paths.run_dir.name} (killed its process tree{note})")
    return 0


def _supervisor_alive(status: dict[str, Any]) -> bool:
    from gitflow_agents.runs.liveness import process_alive

    return process_alive(status.get("supervisor_pid"), status.get("supervisor_create_time"))
