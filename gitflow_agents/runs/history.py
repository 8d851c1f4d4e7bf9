"""The runs ``history`` shows, read back from every ``<flow_dir>/<flow>/runs/<runID>/result.json``,
oldest first: a row each (their Mermaid charts: ``render/history.py``).

Step runs show one row each; the agent runs inside them only with ``agents=True``. Single flows
(``flow ...``, ``spawn``) show one row per agent run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitflow_agents.base.camel import camel_json
from gitflow_agents.base.jsondata import JsonProblem
from gitflow_agents.base.redact import redact_data
from gitflow_agents.runs import RunPaths, iter_runs, load_result, skipped_run
from gitflow_agents.runs.fields import mapping, number, scalar
from gitflow_agents.runs.lost import unlisted
from gitflow_agents.runs.schema import step_chain
from gitflow_agents.runs.spend import Spend, run_spend, step_spend, total


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
    spend: Spend = field(
        default_factory=Spend
    )  # an agent run's own; a step run's: the sum of its agent runs
    plan: str | None = None  # a step run's plan

    def to_json(self) -> dict[str, Any]:
        """The row as ``history --json`` prints it (camelCase keys, as every JSON output), its
        spend's keys last."""
        data = camel_json(self, duration_s="durationSeconds")
        del data["spend"]
        return {**data, **self.spend.to_json()}


def rows(runs: Iterable[tuple[Path, dict[str, Any]]]) -> list[HistoryRow]:
    """One row per record of :func:`records`, its texts masked again by the secret rules (the
    records were masked when written, but an agent can write into its run folder)."""
    found = []
    for run_dir, data in runs:
        shown = row(run_dir, data, mapping(data, "run"))
        masked = redact_data({**asdict(shown), "spend": None})
        found.append(HistoryRow(**{**masked, "spend": shown.spend}))
    return found


def plan_totals(found: Iterable[HistoryRow]) -> dict[str, tuple[int, Spend]]:
    """Per plan: how many of ``found`` are its step runs, and their summed spend."""
    by_plan: dict[str, list[Spend]] = {}
    for shown in found:
        if shown.kind == "chain" and shown.plan:
            by_plan.setdefault(shown.plan, []).append(shown.spend)
    return {plan: (len(parts), total(parts)) for plan, parts in by_plan.items()}


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
    read (``load_result``: a key shown of the wrong kind too) is too, and a line saying which
    and why goes to ``skipped``."""
    found = []
    listed: dict[Path, set[str]] = {}  # per runs folder: the agent runs its step runs list
    for paths in iter_runs(root, flow_dir, flow):
        try:
            data = load_result(paths.result)
        except FileNotFoundError:
            continue
        except (OSError, JsonProblem) as exc:
            if skipped is not None:
                skipped.append(skipped_run(root, paths, exc))
            continue
        if not agents and _inside_a_step_run(paths, mapping(data, "run"), listed):
            continue
        found.append((paths.run_dir, data))
    # oldest first across the flows (a run id begins with its creation time), not flow by flow:
    # the last rows are the latest runs
    found.sort(key=lambda item: item[0].name)
    return found


def _inside_a_step_run(
    paths: RunPaths, run: Mapping[str, Any], listed: dict[Path, set[str]]
) -> bool:
    """Whether an agent run is shown inside its step run's row: it names one (``chainRunID``;
    a running step run has no record yet). A lost agent run whose step run died with it is a
    row of its own until a new run of the step lists it (``lost.unlisted``; ``listed``, read
    once per runs folder): what it spent is shown once."""
    chain_run = run.get("chainRunID")
    return isinstance(chain_run, str) and bool(chain_run) and not unlisted(paths, run, listed)


def row(run_dir: Path, data: dict[str, Any], run: dict[str, Any]) -> HistoryRow:
    """One row; fields of the wrong type (an agent can write into its run folder) read as
    absent (gitflow_agents/runs/fields.py)."""
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
            spend=step_spend(run_dir, data),
            plan=chain.plan,
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
        spend=run_spend(run),
    )


def _count(n: int, noun: str) -> str:
    """``1 commit``, ``2 commits``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
