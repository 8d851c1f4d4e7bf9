"""The runs ``history`` shows, read back from every ``<flow_dir>/<flow>/runs/<runID>/result.json``,
oldest first: a row each, and a step run's Mermaid chart (``history --format mermaid`` and the
sticky comment ``run --pr`` keeps on the step's pull request draw the same one).

Step runs show one row each; the agent runs inside them only with ``agents=True``. Single flows
(``flow ...``, ``spawn``) show one row per agent run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


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

    def to_json(self) -> dict[str, Any]:
        """The row as ``history --json`` prints it (camelCase keys, as every JSON output)."""
        return {
            "runId": self.run_id,
            "flow": self.flow,
            "what": self.what,
            "kind": self.kind,
            "outcome": self.outcome,
            "iterations": self.iterations,
            "git": self.git,
            "durationSeconds": self.duration_s,
            "finished": self.finished,
            "historyLine": self.history_line,
        }


def rows(
    root: Path,
    flow_dir: str,
    flow: str | None = None,
    *,
    agents: bool = False,
    skipped: list[str] | None = None,
) -> list[HistoryRow]:
    """One row per run ``history`` shows, oldest first, its texts masked again by the secret
    rules (the records were masked when written, but an agent can write into its run folder)."""
    from gitflow_agents.base.redact import redact_data
    from gitflow_agents.runs.fields import mapping

    return [
        HistoryRow(**redact_data(asdict(_row(run_dir, data, mapping(data, "run")))))
        for run_dir, data in records(root, flow_dir, flow, agents=agents, skipped=skipped)
    ]


def records(
    root: Path,
    flow_dir: str,
    flow: str | None = None,
    *,
    agents: bool = False,
    skipped: list[str] | None = None,
) -> list[tuple[Path, dict[str, Any]]]:
    """(run folder, result.json data) of every run ``history`` shows, oldest first. A run with
    no result.json yet (still running, or killed) is left out; one whose result.json cannot be
    read is too, and a line saying which and why goes to ``skipped``."""
    from gitflow_agents.base.jsondata import JsonProblem
    from gitflow_agents.config.values import display as shown_path
    from gitflow_agents.runs import iter_runs, load_record, record_problem
    from gitflow_agents.runs.fields import mapping

    found = []
    for paths in iter_runs(root, flow_dir, flow):
        try:
            data = load_record(paths.result)
        except FileNotFoundError:
            continue
        except (OSError, JsonProblem) as exc:
            if skipped is not None:
                where = shown_path(root, paths.result)
                skipped.append(f"skipped run {paths.run_dir.name}: {where}: {record_problem(exc)}")
            continue
        if mapping(data, "run").get("chainRunID") and not agents:
            continue
        found.append((paths.run_dir, data))
    return found


_RUN_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,63}")


def agent_results(run_dir: Path, data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The result.json of each agent run a step run lists (``chain.agents[].runID``), read
    from the step run's sibling run folders, by run id: where ``step_flowchart`` finds tokens
    and cost. A run id that is not a plain name (an agent can write into run folders) is
    skipped, so nothing outside the runs folder is read."""
    from gitflow_agents.render.mermaid import MAX_AGENTS
    from gitflow_agents.runs import RunPaths, read_json
    from gitflow_agents.runs.schema import step_chain

    chain = step_chain(data)
    found: dict[str, dict[str, Any]] = {}
    for entry in (chain.agents if chain is not None else ())[:MAX_AGENTS]:
        run_id = entry.run_id
        if not _RUN_ID.fullmatch(run_id) or run_id in found:
            continue
        result = read_json(RunPaths(run_dir.parent / run_id).result)
        if result is not None:
            found[run_id] = result
    return found


def step_chart(run_dir: Path, data: Mapping[str, Any]) -> str:
    """The one Mermaid chart of a step run (its result.json ``data``, in ``run_dir``): what
    ``history --format mermaid`` shows and what its pull request's sticky comment holds, the
    same end node (the outcome, and ``PR #n`` once ``run --pr`` recorded its pull request)."""
    from gitflow_agents.render.mermaid import step_flowchart

    return step_flowchart(data, agent_results=agent_results(run_dir, data))


def mermaid(found: list[tuple[Path, dict[str, Any]]]) -> str:
    """Markdown: per run a heading line and its flowchart in a ```` ```mermaid ```` block."""
    from gitflow_agents.render.mermaid import fence_chart, single_run_flowchart
    from gitflow_agents.runs.fields import mapping

    out: list[str] = []
    for run_dir, data in found:
        row = _row(run_dir, data, mapping(data, "run"))
        chart = step_chart(run_dir, data) if row.kind == "chain" else single_run_flowchart(data)
        title = f"{row.what} · {row.flow} · {row.outcome} · run {row.run_id}"
        out += [f"### {_heading(title)}", "", fence_chart(chart)]
    return "\n".join(out)


def _row(run_dir: Path, data: dict[str, Any], run: dict[str, Any]) -> HistoryRow:
    """One row; fields of the wrong type (an agent can write into its run folder) read as
    absent (gitflow_agents/runs/fields.py)."""
    from gitflow_agents.runs.fields import mapping, number, scalar
    from gitflow_agents.runs.schema import step_chain

    chain = step_chain(data)
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
            what=f"step {chain.step}",
            kind="chain",
            outcome=chain.outcome or str(scalar(data, "status") or "?"),
            iterations=chain.iterations,
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


def _count(n: int, noun: str) -> str:
    """``1 commit``, ``2 commits``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _heading(title: str) -> str:
    """``title`` (it holds agent and flow names) inert on a markdown heading line."""
    from gitflow_agents.render.markdown import one_line

    return one_line(title)
