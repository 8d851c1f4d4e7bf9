"""``gitflow-agents heartbeat``: run by an agent to say "I am alive" for its own run.

The run is ``$GITFLOW_AGENTS_RUN_DIR`` (the supervisor sets it for every agent), else the latest
running run of the agent whose folder (``<flow_dir>/<flow>/agents/<id>/``) contains the cwd.
The heartbeat is the file ``<run dir>/heartbeat``; the supervisor sees it change and resets the
agent's stuck timer.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from gitflow_agents.base.errors import UsageError
from gitflow_agents.base.fsutil import write_text_atomic
from gitflow_agents.runs import RUN_DIR_ENV, RunPaths, iter_runs, read_status


def run(args: argparse.Namespace) -> int:
    env_dir = os.environ.get(RUN_DIR_ENV)
    paths = RunPaths(Path(env_dir)) if env_dir else _from_cwd(Path.cwd())
    if not paths.run_dir.is_dir():
        raise UsageError(f"heartbeat: run directory {paths.run_dir} does not exist")
    write_text_atomic(paths.heartbeat, f"{time.time():.3f} {args.message or ''}".rstrip() + "\n")
    return 0


def _from_cwd(cwd: Path) -> RunPaths:
    for here in (cwd, *cwd.parents):
        if here.parent.name == "agents":
            agent_id, flow_root = here.name, here.parent.parent
            runs = [
                paths
                for paths in iter_runs(flow_root.parent, "", flow_root.name)
                if (status := read_status(paths)) is not None
                and status.agent == agent_id
                and not status.finished
            ]
            if runs:
                return runs[-1]
    raise UsageError(
        "heartbeat: no running agent run found: set GITFLOW_AGENTS_RUN_DIR, or run it inside "
        "the agent's folder <flow_dir>/<flow>/agents/<agent-id>/"
    )
