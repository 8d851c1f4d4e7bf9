"""``gitflow-agents cancel RUN_ID``: stop one agent's whole process tree; the run ends canceled.

Its orchestrator is asked first, through its control channel (``runs/control.py``), else through
the file ``<run dir>/cancel`` its supervisor watches: it kills that agent's tree only and records
the run itself (in a chain, the step records the agent ``canceled``: docs/chains.md). When it
does not answer within ``--wait`` seconds (or is gone), the tree recorded in ``status.json``
(pid, process group, the run's environment marker) is killed here and the run marked canceled.
The id of a step run in progress (``run``'s, named by its step's lock) cancels each agent it
runs now (``runs/control.cancel_step_run``).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.config import load_flow_config, project_root
    from gitflow_agents.runs.control import cancel_run

    root = project_root(Path.cwd())
    config = load_flow_config(root)
    print(
        cancel_run(
            root, args.run_id, flow_dir=config.flow_dir, wait=float(args.wait), config=config
        )
    )
    return 0
