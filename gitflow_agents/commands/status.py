"""``gitflow-agents status``: agents and runs with their state and last activity."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.runs import short_ids
from gitflow_agents.runs.spend import cost_text, run_spend, step_spend, tokens_text

if TYPE_CHECKING:
    from gitflow_agents.config.values import FlowConfig
    from gitflow_agents.runs.lock import LiveStep


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.config import load_flow_config, project_root

    root = project_root(Path.cwd())
    config = load_flow_config(root)
    skipped: list[str] = []  # runs whose result.json cannot be read: left out, named
    rows = collect(root, config.flow_dir, args.flow, config=config, skipped=skipped)
    try:
        return _show(root, config, args, rows)
    finally:  # after the output, so a table or JSON on stdout stays whole (as `history`)
        for line in skipped:
            print(f"gitflow-agents status: {line}", file=sys.stderr)


def _show(
    root: Path, config: FlowConfig, args: argparse.Namespace, rows: list[dict[str, Any]]
) -> int:
    """Print ``rows`` as the table (or ``--json``), then the cache's disk use."""
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        where = f"{config.flow_dir}/{args.flow}" if args.flow else f"{config.flow_dir}/"
        print(f"no runs under {where}")
        print_cache_usage(root)
        return 0
    print(format_table(rows))
    print(format_replies(rows))
    print_cache_usage(root)
    return 0


def print_cache_usage(root: Path) -> None:
    """The disk the repository's work-tree cache takes (``gitflow-agents worktrees`` lists it,
    ``gc`` empties it); nothing outside a git repository."""
    from gitflow_agents.base.errors import GitflowError
    from gitflow_agents.base.units import bytes_text
    from gitflow_agents.chain.trees import cache_usage

    try:
        count, size = cache_usage(root)
    except GitflowError:
        return
    many = "work tree" if count == 1 else "work trees"
    print(f"work-tree cache: {count} {many}, {bytes_text(size)} (gitflow-agents worktrees; gc)")


FIGURES = ("inputTokens", "outputTokens", "cachedTokens", "costUsd")
SPEND_KEYS = (*FIGURES, "costEstimated")


def collect(
    root: Path,
    flow_dir: str,
    flow: str | None = None,
    *,
    config: FlowConfig | None = None,
    skipped: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One row per run (oldest first): status.json merged with result.json, liveness checked: a
    run nothing supervises any more is ``lost``, and its reason says whether processes of its
    tree still run and how to stop them; what it spent is what the record `cancel` would write
    keeps (``lost.spent_before``, priced with ``config``). Fields of the wrong type (an agent can write anything
    into its run folder) read as absent; a run whose result.json cannot be read, or holds a key
    shown of the wrong kind (``runs.load_result``), is left out, as ``history`` leaves it out, and
    a line saying which and why goes to ``skipped``. Every text is masked again (the secret
    rules): the records were masked when written, but an agent can write into its run folder
    too."""
    from gitflow_agents.base.jsondata import JsonProblem
    from gitflow_agents.base.redact import redact_data
    from gitflow_agents.runs import iter_runs, load_result, read_json, runs_root, skipped_run
    from gitflow_agents.runs.fields import mapping, scalar, text
    from gitflow_agents.runs.lock import live_steps
    from gitflow_agents.runs.lost import (
        is_lost,
        lifetime,
        lost_reason,
        spent_before,
        status_written,
    )
    from gitflow_agents.runs.schema import step_chain
    from gitflow_agents.runs.status import is_live

    # a step run in progress has no record yet: its lock names it (``cancel`` takes its id)
    steps = {s.holder.run_id: s for s in live_steps(root, flow_dir) if flow in (None, s.flow)}
    rows = []
    for paths in iter_runs(root, flow_dir, flow):
        status = read_json(paths.status) or {}
        try:
            result: dict[str, Any] | None = load_result(paths.result)
        except FileNotFoundError:  # still running, or killed
            result = None
        except (OSError, JsonProblem) as exc:
            if skipped is not None:
                skipped.append(skipped_run(root, paths, exc))
            continue
        if not status and result is None and paths.run_dir.name in steps:
            rows.append(_live_step_row(steps.pop(paths.run_dir.name), paths.run_dir))
            continue
        state = text(status, "state") or ("finished" if result else "unknown")
        reason = scalar(status, "reason")
        alive: tuple[int, ...] = ()
        if is_lost(status):  # nothing supervises it any more: nobody will finish it
            state = "lost"
            reason, alive = lost_reason(paths.run_dir.name, status)
        row: dict[str, Any] = {
            "runId": paths.run_dir.name,
            "flow": text(status, "flow") or paths.run_dir.parent.parent.name,
            "agent": scalar(status, "agent"),
            "kind": scalar(status, "kind"),
            "state": state,
            "reason": reason,
            "pid": scalar(status, "pid"),
            "startedAt": scalar(status, "started"),
            # a live run has not ended (one waiting under an earlier release kept its attempt's end)
            "endedAt": None if is_live(status.get("state")) else scalar(status, "ended"),
            "lastActivityAt": scalar(status, "last_activity"),
            "lastActivityKind": scalar(status, "last_activity_kind"),
            "result": scalar(result, "status") if result else None,
            "runDir": str(paths.run_dir),
        }
        if alive:
            row["processesAlive"] = list(alive)
        lived = lifetime(status, status_written(paths)) if state == "lost" else None
        if lived is not None:  # to its last sign of life, as the record `cancel` writes times it
            row["durationMs"] = round(lived * 1000)
        run = mapping(result, "run") if result else {}
        if run.get("lost") is True:  # ended once its supervisor had died (``lost.mark_ended``)
            row["lost"] = True
        # a step run (a chain) has no usage of its own: what its agent runs spent, as `history`
        chain = step_chain(result) if result is not None else None
        step = chain is not None
        if chain is not None and not text(status, "state"):  # its ending, as `history` says
            row["state"], row["reason"] = chain.outcome or "finished", chain.reason or None
            row.update(_step_times(run))
        spent = step_spend(paths.run_dir, result).to_json() if result and step else run
        if result is None:  # running: what its budget's watch read so far (else nothing);
            # lost: what it spent before, a lower bound, as the record `cancel` writes keeps it
            lost = state == "lost"
            spent = spent_before(paths, status, config) if lost else mapping(status, "spent")
        for key in (*SPEND_KEYS, "tokensPartial", "costPartial"):
            if scalar(spent, key) is not None:
                row[key] = spent[key]
        session_id = scalar(run, "sessionId") or scalar(status, "session_id")
        if session_id:
            row["sessionId"] = session_id
        session = mapping(run, "session")
        if session:
            row["session"] = {k: scalar(session, k) for k in ("root", "turn", "previousRunId")}
        replies = mapping(run, "replies")
        if replies:
            row["replies"] = replies
        reply = mapping(run, "reply")
        if reply:
            row["replyStatus"] = scalar(reply, "status")
            if isinstance(reply.get("questions"), list) and reply["questions"]:
                row["questions"] = reply["questions"]
        rows.append(redact_data(row))
    if steps:  # each in its place: oldest first across the flows, as the folders are read
        rows += [
            _live_step_row(s, runs_root(root, flow_dir, s.flow) / run) for run, s in steps.items()
        ]
        rows.sort(key=lambda row: (row["runId"], Path(row["runDir"]).parent.parent.name))
    return rows


def _live_step_row(live: LiveStep, run_dir: Path) -> dict[str, Any]:
    """The row of a step run in progress, from its lock: running since it took the lock; what
    it spent is in its agents' rows until its record sums them."""
    return {
        "runId": live.holder.run_id,
        "flow": live.flow,
        "agent": None,
        "kind": None,
        "state": "running",
        "reason": f"step {live.step}",
        "pid": live.holder.pid,
        "startedAt": live.holder.at,
        "endedAt": None,
        "lastActivityAt": None,
        "lastActivityKind": None,
        "result": None,
        "runDir": str(run_dir),
    }


def _step_times(run: Mapping[str, Any]) -> dict[str, Any]:
    """A finished step run's times from its record (it keeps no status.json): its start and
    end, and its end as its last activity (``finished``); none that the record lacks."""
    from gitflow_agents.runs.fields import number

    ended, took = number(run, "finishedAt"), number(run, "durationMs")
    if ended is None or took is None or not 0 <= took < 1e12 or not -1e12 < ended < 1e12:
        return {}
    return {
        "startedAt": ended - took / 1000,
        "endedAt": ended,
        "lastActivityAt": ended,
        "lastActivityKind": "finished",
    }


def reply_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Agent replies over ``rows`` (docs/protocol.md, "Agent replies"): structured vs
    unstructured, and needs_input ones."""
    from gitflow_agents.runs.fields import integer

    counts = {"structured": 0, "unstructured": 0, "needs_input": 0}
    for row in rows:
        replies = row.get("replies") or {}
        counts["structured"] += max(0, integer(replies, "structured") or 0)
        counts["unstructured"] += max(0, integer(replies, "unstructured") or 0)
        counts["needs_input"] += row.get("replyStatus") == "needs_input"
    return counts


def format_replies(rows: list[dict[str, Any]]) -> str:
    counts = reply_counts(rows)
    total = counts["structured"] + counts["unstructured"]
    share = f" ({100 * counts['structured'] // total}% structured)" if total else ""
    text = (
        f"replies: {counts['structured']} structured, {counts['unstructured']} unstructured{share}"
    )
    if counts["needs_input"]:
        waiting = [r["runId"] for r in rows if r.get("replyStatus") == "needs_input"]
        text += f"; needs input: {', '.join(short_ids(waiting))} (gitflow-agents send)"
    return text


def _ago(epoch: Any, now: float) -> str:
    if not isinstance(epoch, (int, float)) or not -1e12 < epoch < 1e12:
        return "-"
    seconds = max(0, int(now - epoch))
    if seconds < 120:
        return f"{seconds}s ago"
    if seconds < 7200:
        return f"{seconds // 60}m ago"
    return f"{seconds // 3600}h ago"


def _duration(row: dict[str, Any], now: float) -> str:
    start, end = row.get("startedAt"), row.get("endedAt")
    if not isinstance(start, (int, float)) or not -1e12 < start < 1e12:
        return "-"
    # nothing runs it, or ran it until it was ended (as its record times it): its last sign of life
    lived = row.get("durationMs") if row.get("state") == "lost" else None
    if isinstance(lived, (int, float)) and 0 <= lived < 1e15:
        end = start + lived / 1000
    elif (row.get("state") == "lost" and end is None) or row.get("lost") is True:
        end = row.get("lastActivityAt")
    if not isinstance(end, (int, float)) or not -1e12 < end < 1e12:
        end = now
    seconds = int(end - start)
    minutes, sec = divmod(max(0, seconds), 60)
    return f"{minutes}:{sec:02d}"


def _spend(row: dict[str, Any]) -> tuple[str, str]:
    """Tokens and cost of a finished run (``unknown`` where its CLI did not say); of a running
    one what its budget's watch read so far; ``-`` while nothing is known."""
    if not row.get("result") and all(row.get(key) is None for key in FIGURES):
        return "-", "-"
    spend = run_spend(row)
    return tokens_text(spend), cost_text(spend)


def format_table(rows: list[dict[str, Any]]) -> str:
    now = time.time()
    header = ("RUN", "FLOW", "AGENT", "STATE", "TIME", "LAST ACTIVITY", "TOKENS", "COST", "REASON")
    table = [
        (
            short,
            str(row["flow"] or "-"),
            str(row["agent"] or "-"),
            row["state"],
            _duration(row, now),
            f"{_ago(row['lastActivityAt'], now)} ({row['lastActivityKind'] or '-'})",
            *_spend(row),
            str(row["reason"] or ""),
        )
        for row, short in zip(rows, short_ids([row["runId"] for row in rows]), strict=True)
    ]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header) - 1)]
    lines = []
    for line in [header, *table]:
        cells = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, line[-1]]).rstrip())
    return "\n".join(lines)
