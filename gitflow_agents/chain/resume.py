"""What an earlier attempt of a chain agent left behind: reuse it, or set it aside.

Running a step again resumes it: an agent whose ``report.complete.md`` exists and whose stored
meta (``chain.json`` in its agent folder) says it started from the same commit is reused instead
of run again. Otherwise the earlier attempt's reports move to ``previous/`` so the supervisor
starts from a clean slate, and nothing is lost.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gitflow_agents.agent_run.launch import signal_files
from gitflow_agents.base.fsutil import write_json_atomic
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.state import target_tip
from gitflow_agents.chain.workspace import Workspace
from gitflow_agents.git import queries as git
from gitflow_agents.prompt import agent_dir
from gitflow_agents.runs import read_json

META_FILE = "chain.json"


def agent_files(ctx: Context, agent: str, agent_id: str) -> tuple[Path, Path, Path, Path]:
    """The agent folder and its report, success and failure files."""
    folder = agent_dir(ctx.root, ctx.config.flow_dir, ctx.flow, agent_id)
    return (folder, *signal_files(ctx.config, agent, folder))


def completed_meta(
    folder: Path, success: Path, start_sha: str, root: Path
) -> dict[str, Any] | None:
    """The stored meta of a completed agent that started from ``start_sha``, else None."""
    meta = read_json(folder / META_FILE)
    if meta is None or not success.exists() or meta.get("startSha") != start_sha:
        return None
    end = meta.get("endSha")
    if not isinstance(end, str) or not git.is_ancestor(root, start_sha, end):
        return None
    return meta


def write_meta(folder: Path, *, run_id: str, kind: str, start_sha: str, end_sha: str) -> None:
    """Record that the agent completed: from which commit it started, at which it ended."""
    write_json_atomic(
        folder / META_FILE,
        {"runID": run_id, "kind": kind, "startSha": start_sha, "endSha": end_sha},
    )


def set_aside(folder: Path, paths: Sequence[Path]) -> None:
    """Move an earlier attempt's reports to ``previous/`` (the supervisor wants a clean slate)."""
    stale = [p for p in paths if p.exists()]
    if not stale:
        return
    previous = folder / "previous"
    previous.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for path in stale:
        path.rename(previous / f"{stamp}-{os.getpid()}-{path.name}")
    (folder / META_FILE).unlink(missing_ok=True)


def implement_start(ctx: Context, ws: Workspace, agent: str, agent_id: str) -> str:
    """The commit the implementer starts from: the step's base (with ``ctx.build_on_branch``:
    the step branch's tip, a branch continued from the remote), or, when the step branch still
    holds the commit of an implementer that completed earlier (and has not landed on the
    target), the commit that one started from, so it is reused even after the target was
    merged into the branch (which moves the branch's merge-base with the target)."""
    assert ws.branch is not None
    folder, _report, success, _failure = agent_files(ctx, agent, agent_id)
    meta = read_json(folder / META_FILE)
    tip = git.branch_sha(ctx.root, ws.branch)
    fresh = tip if ctx.build_on_branch and tip is not None else ws.base_sha
    if meta is None or not success.exists():
        return fresh
    start, end = meta.get("startSha"), meta.get("endSha")
    target = target_tip(ctx, fetch=False)
    if not (isinstance(start, str) and isinstance(end, str) and tip and target):
        return fresh
    if start == end or not git.is_ancestor(ctx.root, end, tip):
        return fresh
    if git.is_ancestor(ctx.root, end, target):  # landed already: a forced run starts afresh
        return fresh
    return start
