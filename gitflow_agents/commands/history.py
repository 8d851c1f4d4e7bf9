"""``gitflow-agents history [--json]``: past runs with outcome, iterations, git stats, duration.

Read from every ``<flow_dir>/<flow>/runs/<runID>/result.json``, oldest first. Step runs of
``run`` show one row each; the agent runs inside them only with ``--agents``. Single flows
(``flow ...``, ``spawn``) show one row per agent run.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitflow_agents.errors import ExitCode


@dataclass(frozen=True)
class HistoryRow:
    run_id: str
    flow: str
    what: str  # "step 2" for a step run, else the agent id
    kind: str  # chain | implement | review | fix | research
    outcome: str
    iterations: int | None
    git: str  # stats summary, "" when there are none
    duration_s: float | None
    finished: str  # ISO date-time (UTC), "" when unknown
    history_line: str


def rows(
    root: Path, flow_dir: str, flow: str | None = None, *, agents: bool = False
) -> list[HistoryRow]:
    from gitflow_agents.record_fields import mapping
    from gitflow_agents.runs import iter_runs, read_json

    found = []
    for paths in iter_runs(root, flow_dir, flow):
        data = read_json(paths.result)
        if data is None:
            continue
        run = mapping(data, "run")
        if run.get("chainRunID") and not agents:
            continue
        found.append(_row(paths.run_dir, data, run))
    return found


def _row(run_dir: Path, data: dict[str, Any], run: dict[str, Any]) -> HistoryRow:
    """One row; fields of the wrong type (an agent can write into its run folder) read as
    absent (gitflow_agents/record_fields.py)."""
    from gitflow_agents.record_fields import integer, mapping, number, scalar

    chain = mapping(data, "chain") if isinstance(data.get("chain"), dict) else None
    stats = mapping(data, "gitStats")
    git = ""
    if stats:
        commits = stats.get("commits")
        git = (
            f"{_count(scalar(stats, 'filesChanged') or 0, 'file')}, "
            f"+{scalar(stats, 'insertions') or 0} -{scalar(stats, 'deletions') or 0}, "
            f"{_count(len(commits) if isinstance(commits, list) else 0, 'commit')}"
        )
    ms = number(run, "durationMs")
    finished = number(run, "finishedAt") or number(run, "endedAt")
    when = ""
    if finished is not None and 0 <= finished < 253402300800:  # before year 10000
        when = datetime.fromtimestamp(finished, timezone.utc).isoformat(timespec="seconds")
    flow = str(scalar(run, "flow") or run_dir.parent.parent.name)
    if chain is not None:
        return HistoryRow(
            run_id=run_dir.name,
            flow=flow,
            what=f"step {scalar(chain, 'step')}",
            kind="chain",
            outcome=str(scalar(chain, "outcome") or scalar(data, "status") or "?"),
            iterations=integer(chain, "iterations") or 0,
            git=git,
            duration_s=ms / 1000 if ms is not None else None,
            finished=when,
            history_line=str(scalar(run, "historyLine") or ""),
        )
    outcome = str(scalar(run, "status") or scalar(run, "outcome") or scalar(data, "status") or "?")
    if "overall" in data and outcome == "succeeded":
        outcome = f"{outcome} ({scalar(data, 'overall')})"
    return HistoryRow(
        run_id=run_dir.name,
        flow=flow,
        what=str(scalar(run, "agentId") or scalar(run, "agent") or "?"),
        kind=str(scalar(run, "kind") or "?"),
        outcome=outcome,
        iterations=None,
        git=git,
        duration_s=ms / 1000 if ms is not None else None,
        finished=when,
        history_line="",
    )


def run(args: argparse.Namespace) -> int:
    from gitflow_agents import git
    from gitflow_agents.config import load_flow_config

    root = git.repo_root(Path.cwd())
    config = load_flow_config(root)
    found = rows(root, config.flow_dir, args.flow_name, agents=args.agents)
    if args.json:
        json.dump([asdict(r) for r in found], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return int(ExitCode.OK)
    if not found:
        print(f"no runs under {config.flow_dir}/")
        return int(ExitCode.OK)
    header = ("RUN", "FLOW", "WHAT", "OUTCOME", "ITER", "GIT", "DURATION", "FINISHED")
    table = [header] + [
        (
            r.run_id[:13],
            r.flow,
            r.what,
            r.outcome,
            "" if r.iterations is None else str(r.iterations),
            r.git,
            "" if r.duration_s is None else f"{r.duration_s:.1f}s",
            r.finished,
        )
        for r in found
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return int(ExitCode.OK)


def _count(n: int, noun: str) -> str:
    """``1 commit``, ``2 commits``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
