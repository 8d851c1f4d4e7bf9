"""What the page shows, read from the run records: the runs of the repository, one run in
detail (its chain, its prompt by segment, its report and findings, its last output), a plan.

Every text comes out masked by the secret rules (an agent can write into its run folder) and
is escaped by the templates (Jinja autoescape); nothing here is HTML.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitflow_agents.base.errors import GitflowError
from gitflow_agents.base.fsutil import read_agent_text, real_path
from gitflow_agents.base.redact import redact_data, redact_text
from gitflow_agents.plan import SpecPlanConfig, parse_plan
from gitflow_agents.plan.glance import step_states
from gitflow_agents.prompt.paths import PROMPT_SEGMENTS_FILE
from gitflow_agents.render.history import step_chart
from gitflow_agents.render.mermaid import PlanNode, plan_flowchart, single_run_flowchart
from gitflow_agents.runs import RunPaths, find_run, iter_runs, read_json
from gitflow_agents.runs.fields import mapping, number, scalar, text
from gitflow_agents.runs.lock import steps_running
from gitflow_agents.runs.lost import (
    is_lost,
    lifetime,
    lost_reason,
    spent_before,
    status_written,
)
from gitflow_agents.runs.schema import step_chain
from gitflow_agents.runs.spend import run_spend, spend_text, step_spend
from gitflow_agents.runs.status import is_live
from gitflow_agents.serve.graph import Layout, layout
from gitflow_agents.serve.stream import shown_text, views_of

MAX_REPORT = 200_000
"""Characters of a report the page shows (the rest is cut, and it says so)."""
TAIL_BYTES = 64 * 1024
"""Bytes of the end of an events.jsonl read for a run's last lines of output."""
TAIL_LINES = 12
"""Lines of output a run shows."""


@dataclass(frozen=True)
class RunRow:
    """One run as the page's table shows it."""

    run_id: str
    flow: str
    agent: str
    kind: str
    state: str
    started: float | None
    ended: float | None
    tokens: str  # tokens in/out and cost, what is known of them
    last: str  # the last line of output, masked
    live: bool
    step: str = ""  # "step 2" for a step run
    plan: str | None = None


@dataclass(frozen=True)
class Segment:
    scope: str
    label: str
    source: str
    lines: int
    content: str


@dataclass(frozen=True)
class RunDetail:
    row: RunRow
    reason: str
    chart: str  # the run's Mermaid chart ("" while it has no result.json)
    agents: list[tuple[str, str, str]]  # a step run's agent runs: run id, agent, outcome
    segments: list[Segment]
    segments_note: str
    report: str
    report_path: str
    findings: list[dict[str, str]]
    output: list[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    plan: str = ""  # a step run's plan, as the page shows its path

    @property
    def is_step(self) -> bool:
        """A step run: its agents are runs of their own (prompt, report, send and cancel there)."""
        return self.row.kind == "chain"

    @property
    def offset(self) -> int:
        """Where the events the page was drawn with end: the stream's older ones are skipped."""
        return max((int(e["offset"]) for e in self.events), default=0)


def _tail_events(paths: RunPaths) -> list[dict[str, Any]]:
    """The events of the last :data:`TAIL_BYTES` of a run's events.jsonl, as the stream shows
    them (with their offsets)."""
    try:
        size = paths.events.stat().st_size
        fd = os.open(paths.events, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            start = max(0, size - TAIL_BYTES)
            handle.seek(start)
            chunk = handle.read(TAIL_BYTES)
    except OSError:
        return []
    if start > 0:  # the first line is cut: from the next one
        cut = chunk.find(b"\n") + 1
        chunk, start = chunk[cut:], start + cut
    return views_of(paths, chunk, start)


def _output_lines(events: list[dict[str, Any]]) -> list[str]:
    texts = [e["text"] for e in events if e["type"] in ("agent:output", "agent:tool") and e["text"]]
    lines = "\n".join(texts).splitlines()
    return lines[-TAIL_LINES:]


def run_row(paths: RunPaths, events: list[dict[str, Any]] | None = None) -> RunRow:
    """A run's row from its status.json, result.json and the end of its events."""
    status = read_json(paths.status) or {}
    result = read_json(paths.result) or {}
    run = mapping(result, "run")
    events = _tail_events(paths) if events is None else events
    chain = step_chain(result)
    state = text(status, "state") or ""
    live = is_live(state) or (not result and bool(events))
    if not state:
        state = "running" if live else str(scalar(result, "status") or "unknown")
    if chain is not None:
        state = chain.outcome or state
    for event in events:  # a chain's events say more than its missing status.json
        if event["state"] and not status:
            state = event["state"]
    if is_lost(status):  # nothing supervises it any more (as `status` says): it never ends
        state, live = "lost", False
    started = number(status, "started") or number(run, "startedAt")
    ended = None if is_live(status.get("state")) else number(status, "ended")  # as `status`
    ended = ended or number(run, "finishedAt") or number(run, "endedAt")
    spend = step_spend(paths.run_dir, result) if chain is not None else run_spend(run)
    if started is None and ended is not None and number(run, "durationMs") is not None:
        started = ended - (number(run, "durationMs") or 0) / 1000
    lived = _lost_lifetime(paths, status, run)
    if started is not None and lived is not None:  # a lost run's time ends at its last sign of
        ended = started + lived  # life, as `status` and its record time it, not when it ended
    tokens = next((e["tokens"] for e in reversed(events) if e["tokens"]), "")
    watched = mapping(status, "spent")  # a running agent's, as its budget's watch read it
    if not run and state == "lost":  # what `status` shows of it, the record `cancel` writes
        watched = spent_before(paths, status)
    if not run and watched:
        tokens = spend_text(run_spend(watched)) or tokens
    if run:
        tokens = spend_text(spend)
    output = _output_lines(events)
    agent = text(status, "agent") or text(run, "agentId") or text(run, "agent") or ""
    row = RunRow(
        run_id=paths.run_dir.name,
        flow=paths.run_dir.parent.parent.name,
        agent=agent,
        kind=text(status, "kind") or text(run, "kind") or ("chain" if chain else ""),
        state=state,
        started=started,
        ended=ended,
        tokens=tokens,
        last=output[-1] if output else "",
        live=live,
        step=f"step {chain.step}" if chain is not None and chain.step is not None else "",
        plan=chain.plan if chain is not None else None,
    )
    return RunRow(**redact_data(row.__dict__))


def _lost_lifetime(
    paths: RunPaths, status: Mapping[str, Any], run: Mapping[str, Any]
) -> float | None:
    """The seconds a lost run lived (``lost.lifetime``): while it is lost, from its status; once
    a record ended it, the record's duration; None for any other run."""
    if run.get("lost") is True:
        took = number(run, "durationMs")
        return took / 1000 if took is not None else None
    return lifetime(status, status_written(paths)) if not run and is_lost(status) else None


MAX_ROWS = 200
"""Runs the runs page draws (the newest); older ones are counted (``history`` lists them all)."""


def run_rows(root: Path, flow_dir: str, most: int = MAX_ROWS) -> tuple[list[RunRow], int]:
    """The newest ``most`` runs under ``<flow_dir>``, newest first, and how many older ones
    there are."""
    found = list(iter_runs(root, flow_dir))
    shown = found[-most:] if most > 0 else []
    return [run_row(paths) for paths in reversed(shown)], len(found) - len(shown)


def shown_plan(root: Path, plan: str) -> str:
    """A plan's path as the page shows it: relative to the repository when inside it."""
    path = _inside(root, plan)
    return path.relative_to(real_path(root)).as_posix() if path is not None else plan


def elapsed_text(row: RunRow, now: float | None = None) -> str:
    """``mm:ss`` (``h:mm:ss``) from start to end, or to now while it runs; "" when unknown."""
    if row.started is None:
        return ""
    end = row.ended if row.ended is not None else (now if now is not None else time.time())
    span = end - row.started
    if not math.isfinite(span):  # an agent-writable record's absurd times: unknown, no 500
        return ""
    seconds = max(0, int(span))
    minutes, sec = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d}" if hours else f"{minutes:02d}:{sec:02d}"


def _inside(root: Path, raw: object) -> Path | None:
    """``raw`` as a path inside ``root`` (symlinks resolved), else None: a record is
    agent-writable, so a path it names is not trusted to stay in the repository."""
    if not isinstance(raw, str) or not raw:
        return None
    path = Path(raw) if Path(raw).is_absolute() else root / raw
    try:
        resolved = real_path(path)
        resolved.relative_to(real_path(root))
    except (OSError, ValueError):
        return None
    # a symlink loop stops the resolving and keeps the rest as given, ".." included
    return None if ".." in resolved.parts else resolved


def _segments(root: Path, paths: RunPaths, status: dict[str, Any]) -> tuple[list[Segment], str]:
    """The run's system prompt by segment (recorded at its start), else the whole prompt as one
    segment and a note saying why."""
    recorded = read_json(paths.run_dir / PROMPT_SEGMENTS_FILE)
    items = recorded.get("segments") if recorded else None
    if isinstance(items, list):
        found = [
            Segment(
                scope=redact_text(str(item.get("scope", ""))),
                label=redact_text(str(item.get("label", ""))),
                source=redact_text(str(item.get("source", ""))),
                lines=int(item["lines"]) if isinstance(item.get("lines"), int) else 0,
                content=redact_text(str(item.get("content", ""))),
            )
            for item in items
            if isinstance(item, dict)
        ]
        return found, ""
    folder = _inside(root, status.get("agent_dir"))
    prompt = read_agent_text(folder / "system_prompt.md", MAX_REPORT) if folder else ""
    if not prompt:
        return [], "no system prompt recorded for this run"
    whole = Segment("whole", "system prompt", "system_prompt.md", len(prompt.splitlines()), "")
    note = "this run recorded no segments (it predates them): the agent's current prompt, whole"
    return [Segment(**{**whole.__dict__, "content": redact_text(prompt[:MAX_REPORT])})], note


def _report(root: Path, run: dict[str, Any]) -> tuple[str, str]:
    path = _inside(root, run.get("report"))
    if path is None:
        return "", ""
    report = read_agent_text(path, MAX_REPORT)
    if len(report) > MAX_REPORT:
        report = report[:MAX_REPORT] + f"\n… (cut at {MAX_REPORT:,} characters)"
    return redact_text(report), redact_text(str(path.relative_to(real_path(root))))


def _findings(result: dict[str, Any]) -> list[dict[str, str]]:
    items = result.get("findings")
    if not isinstance(items, list):
        return []
    found = []
    for item in items:
        if isinstance(item, dict):
            where = str(item.get("file") or "")
            if where and isinstance(item.get("line"), int):
                where += f":{item['line']}"
            found.append(
                {
                    "severity": str(item.get("severity") or ""),
                    "where": where,
                    "message": str(item.get("message") or ""),
                }
            )
    return redact_data(found)  # type: ignore[no-any-return]


def run_detail(root: Path, flow_dir: str, run_id: str) -> RunDetail | None:
    """One run for its page; None when there is no such run."""
    paths = find_run(root, flow_dir, run_id)
    if paths is None:
        return None
    status = read_json(paths.status) or {}
    result = read_json(paths.result) or {}
    run = mapping(result, "run")
    events = _tail_events(paths)
    row = run_row(paths, events)
    chain = step_chain(result)
    chart, agents = "", []
    if chain is not None:
        chart = step_chart(paths.run_dir, result)
        agents = [(a.run_id, f"{a.agent} ({a.kind})", a.status) for a in chain.agents]
    elif result:
        chart = single_run_flowchart(result)
    segments, note = _segments(root, paths, status)
    report, report_path = _report(root, run)
    reason = str(scalar(status, "reason") or scalar(run, "reason") or "")
    if is_lost(status):  # as `status` says it: what of it still runs, and how to stop that
        reason = lost_reason(paths.run_dir.name, status)[0]
    return RunDetail(
        row=row,
        reason=shown_text(reason),
        chart=redact_text(chart),
        agents=redact_data(agents),
        segments=segments,
        segments_note=note,
        report=report,
        report_path=report_path,
        findings=_findings(result),
        output=_output_lines(events),
        events=events[-50:],
        plan=shown_plan(root, row.plan) if row.plan else "",
    )


@dataclass(frozen=True)
class PlanView:
    path: str  # as asked
    title: str
    chart: str  # the Mermaid source, as ``plan show --format mermaid`` prints it
    layout: Layout | None
    problem: str  # why the plan cannot be shown, "" when it can


def plan_view(root: Path, flow_dir: str, raw: str, spec_plan: SpecPlanConfig) -> PlanView:
    """A plan file inside the repository: its steps coloured by state, as a graph and as the
    Mermaid chart of ``plan show --format mermaid``."""
    path = _inside(root, raw)
    if path is None or not path.is_file():
        return PlanView(raw, "", "", None, f"{raw!r}: not a plan file inside the repository")
    try:
        plan = parse_plan(path, spec_plan)
    except GitflowError as exc:
        return PlanView(raw, "", "", None, redact_text(str(exc)))
    states = step_states(plan, steps_running(root, flow_dir, plan))
    nodes = [
        PlanNode(s.number, s.title, *states[s.number], depends_on=s.depends_on) for s in plan.steps
    ]
    nodes = redact_data(nodes)
    return PlanView(raw, redact_text(plan.title), plan_flowchart(nodes), layout(nodes), "")
