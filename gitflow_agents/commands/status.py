"""``gitflow-agents status``: agents and runs with their state and last activity."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.config import find_project_root, load_flow_config

    root = find_project_root(Path.cwd())
    config = load_flow_config(root)
    rows = collect(root, config.flow_dir, args.flow)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        where = f"{config.flow_dir}/{args.flow}" if args.flow else f"{config.flow_dir}/"
        print(f"no runs under {where}")
        return 0
    print(format_table(rows))
    print(format_replies(rows))
    return 0


def collect(root: Path, flow_dir: str, flow: str | None = None) -> list[dict[str, Any]]:
    """One row per run (oldest first): status.json merged with result.json, liveness checked: a
    run nothing supervises any more is ``lost``, and its reason says whether processes of its
    tree still run and how to stop them."""
    from gitflow_agents.lost_runs import is_lost, tree_pids
    from gitflow_agents.runs import iter_runs, read_json

    rows = []
    for paths in iter_runs(root, flow_dir, flow):
        status = read_json(paths.status) or {}
        result = read_json(paths.result)
        state = str(status.get("state") or ("finished" if result else "unknown"))
        reason = status.get("reason")
        alive: tuple[int, ...] = ()
        if is_lost(status):  # nothing supervises it any more: nobody will finish it
            state, alive = "lost", tree_pids(status)
            reason = (
                f"processes alive — `gitflow-agents cancel {paths.run_dir.name}` "
                f"(pids {', '.join(map(str, alive))})"
                if alive
                else "neither supervisor nor agent alive"
            )
        row: dict[str, Any] = {
            "runId": paths.run_dir.name,
            "flow": status.get("flow") or paths.run_dir.parent.parent.name,
            "agent": status.get("agent"),
            "kind": status.get("kind"),
            "state": state,
            "reason": reason,
            "pid": status.get("pid"),
            "startedAt": status.get("started"),
            "endedAt": status.get("ended"),
            "lastActivityAt": status.get("last_activity"),
            "lastActivityKind": status.get("last_activity_kind"),
            "result": result.get("status") if result else None,
            "runDir": str(paths.run_dir),
        }
        if alive:
            row["processesAlive"] = list(alive)
        run = result.get("run", {}) if result else {}
        for key in ("input_tokens", "output_tokens", "cost_usd"):
            if run.get(key) is not None:
                row[key] = run[key]
        session_id = run.get("session_id") or status.get("session_id")
        if session_id:
            row["sessionId"] = session_id
        if isinstance(run.get("session"), dict):
            row["session"] = {k: run["session"].get(k) for k in ("root", "turn", "previousRunId")}
        if isinstance(run.get("replies"), dict):
            row["replies"] = run["replies"]
        reply = run.get("reply")
        if isinstance(reply, dict):
            row["replyStatus"] = reply.get("status")
            if reply.get("questions"):
                row["questions"] = reply["questions"]
        rows.append(row)
    return rows


def reply_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Agent replies over ``rows`` (docs/protocol.md, "Agent replies"): structured vs
    unstructured, and needs_input ones."""
    counts = {"structured": 0, "unstructured": 0, "needs_input": 0}
    for row in rows:
        replies = row.get("replies") or {}
        counts["structured"] += int(replies.get("structured") or 0)
        counts["unstructured"] += int(replies.get("unstructured") or 0)
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
        text += f"; needs input: {', '.join(w[:13] for w in waiting)} (gitflow-agents send)"
    return text


def _ago(epoch: Any, now: float) -> str:
    if not isinstance(epoch, (int, float)):
        return "-"
    seconds = max(0, int(now - epoch))
    if seconds < 120:
        return f"{seconds}s ago"
    if seconds < 7200:
        return f"{seconds // 60}m ago"
    return f"{seconds // 3600}h ago"


def _duration(row: dict[str, Any], now: float) -> str:
    start, end = row.get("startedAt"), row.get("endedAt")
    if not isinstance(start, (int, float)):
        return "-"
    seconds = int((end if isinstance(end, (int, float)) else now) - start)
    minutes, sec = divmod(max(0, seconds), 60)
    return f"{minutes}:{sec:02d}"


def format_table(rows: list[dict[str, Any]]) -> str:
    now = time.time()
    header = ("RUN", "FLOW", "AGENT", "STATE", "TIME", "LAST ACTIVITY", "REASON")
    table = [
        (
            row["runId"][:13],
            str(row["flow"] or "-"),
            str(row["agent"] or "-"),
            row["state"],
            _duration(row, now),
            f"{_ago(row['lastActivityAt'], now)} ({row['lastActivityKind'] or '-'})",
            str(row["reason"] or ""),
        )
        for row in rows
    ]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header) - 1)]
    lines = []
    for line in [header, *table]:
        cells = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, line[-1]]).rstrip())
    return "\n".join(lines)
