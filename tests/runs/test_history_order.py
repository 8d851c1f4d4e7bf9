"""The runs `history` shows, in the order they began (``runs/history.records``)."""

from __future__ import annotations

import json
from pathlib import Path

from gitflow_agents.runs.history import records


def test_runs_of_several_flows_are_shown_oldest_first_across_them(tmp_path: Path) -> None:
    """Runs of two flows begun in turn: `history` lists them in the order they began, not flow
    by flow, so its last rows are the latest runs (`history | tail`)."""
    began = [
        ("zeta", "01a21d00-0000-7000-8000-000000000001"),
        ("alpha", "01a21d00-0001-7000-8000-000000000002"),
        ("zeta", "01a21d00-0002-7000-8000-000000000003"),
    ]
    for flow, run_id in began:
        run_dir = tmp_path / "flows" / flow / "runs" / run_id
        run_dir.mkdir(parents=True)
        run = {"runID": run_id, "flow": flow, "kind": "research", "agent": "a"}
        (run_dir / "result.json").write_text(json.dumps({"status": "succeeded", "run": run}))
    shown = [run_dir.name for run_dir, _ in records(tmp_path, "flows")]
    assert shown == [run_id for _, run_id in began]
