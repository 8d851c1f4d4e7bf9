"""What an earlier attempt of a chain agent left behind: reuse it, or set it aside.

Running a step again resumes it: an agent whose ``report.complete.md`` exists and whose stored
meta (``chain.json`` in its agent folder) says it started from the same commit is reused instead
of run again. Otherwise the earlier attempt's reports move to ``previous/`` so the supervisor
starts from a clean slate, and nothing is lost. An implementer whose commit is on the target
already has landed: a forced run starts afresh, and a step whose branch landed without its ✅
(``landed_branch``) is finished instead of run again (``chain/land.py``'s ``finish_landed``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from gitflow_agents.agent_run.launch import report_files
from gitflow_agents.base.fsutil import write_json_atomic
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.state import plan_in_repo, target_tip
from gitflow_agents.chain.workspace import Workspace, branch_name
from gitflow_agents.git import moves
from gitflow_agents.git import queries as git
from gitflow_agents.prompt import agent_dir, default_agent_id
from gitflow_agents.runs import read_json
from gitflow_agents.runs.fields import strings, text

META_FILE = "chain.json"
# on the commit of an agent's work when a budget stopped it: a re-run continues from it
TRAILER_STOPPED = "Gitflow-Agents-Stopped"
TRAILER_AGENT = "Gitflow-Agents-Agent"  # on every agent's commit: its agent id


class AgentMeta(NamedTuple):
    """An agent that completed, as ``chain.json`` in its folder records it: its run, and the
    commits it started from and ended at."""

    run_id: str
    kind: str
    start_sha: str
    end_sha: str
    left_out: tuple[str, ...] = ()  # nested repositories its commit left out
    # a review its round discarded (a reviewer changed the work tree): why, said again on reuse
    discarded: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "runID": self.run_id,
            "kind": self.kind,
            "startSha": self.start_sha,
            "endSha": self.end_sha,
        }
        if self.left_out:
            data["leftOut"] = list(self.left_out)
        if self.discarded:
            data["discarded"] = self.discarded
        return data


def stopped_at(ctx: Context, tip: str, agent_id: str | None = None) -> bool:
    """Whether the step branch ends in the work of an agent a budget stopped (its commit's
    trailer; ``agent_id``: of that agent), not yet on the target."""
    trailers = git.commit_trailers(ctx.root, tip)
    if trailers.get(TRAILER_STOPPED) != "budget":
        return False
    if agent_id is not None and trailers.get(TRAILER_AGENT) != agent_id:
        return False
    target = target_tip(ctx, fetch=False)
    return target is None or not git.is_ancestor(ctx.root, tip, target)


def read_meta(folder: Path) -> AgentMeta | None:
    """The agent's stored meta; None when there is none or its commits do not read (an agent
    can write into its own folder)."""
    data = read_json(folder / META_FILE)
    if data is None:
        return None
    start, end = text(data, "startSha"), text(data, "endSha")
    if start is None or end is None:
        return None
    left_out = tuple(strings(data, "leftOut"))
    discarded = text(data, "discarded") or ""
    return AgentMeta(
        text(data, "runID") or "", text(data, "kind") or "", start, end, left_out, discarded
    )


def agent_files(ctx: Context, agent: str, agent_id: str) -> tuple[Path, Path, Path, Path]:
    """The agent folder and its report, success and failure files."""
    folder = agent_dir(ctx.root, ctx.config.flow_dir, ctx.flow, agent_id)
    return (folder, *report_files(ctx.config, agent, folder))


def completed_meta(folder: Path, success: Path, start_sha: str, root: Path) -> AgentMeta | None:
    """The stored meta of a completed agent that started from ``start_sha``, else None."""
    meta = read_meta(folder)
    if meta is None or not success.exists() or meta.start_sha != start_sha:
        return None
    if not git.is_ancestor(root, start_sha, meta.end_sha):
        return None
    return meta


def write_meta(
    folder: Path,
    *,
    run_id: str,
    kind: str,
    start_sha: str,
    end_sha: str,
    left_out: tuple[str, ...] = (),
) -> None:
    """Record that the agent completed: from which commit it started, at which it ended (and
    the nested repositories its commit left out)."""
    meta = AgentMeta(run_id, kind, start_sha, end_sha, left_out)
    write_json_atomic(folder / META_FILE, meta.to_json())


def discard(folder: Path, reason: str) -> None:
    """Record that the review of the completed agent in ``folder`` was discarded, and why (its
    round found the work tree changed, ``chain/review.py``): a re-run that reuses it says so
    again instead of counting its verdict, since the change it made is gone and no check of
    the work tree could find it any more."""
    meta = read_meta(folder)
    if meta is not None:
        write_json_atomic(folder / META_FILE, meta._replace(discarded=reason).to_json())


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


def implement_start(
    ctx: Context, ws: Workspace, step: int, agent: str, agent_id: str, *, on_branch: bool = False
) -> str:
    """The commit the implementer starts from: the step's base (with ``on_branch``:
    the step branch's tip, a branch continued from the remote), the branch's tip when it ends
    in the work of an agent a budget stopped (``TRAILER_STOPPED``), or, when the step branch still
    holds the commit of an implementer that completed earlier (and has not landed on the
    target), the commit that one started from, so it is reused even after the target was
    merged into the branch (which moves the branch's merge-base with the target), unless that
    one implemented a step of another title (``another_step``: the plan renumbered its steps)."""
    assert ws.branch is not None
    tip = git.branch_sha(ctx.root, ws.branch)
    fresh = tip if on_branch and tip is not None else ws.base_sha
    if tip is not None and stopped_at(ctx, tip, agent_id):
        return tip  # the work a budget stopped is kept: the re-run continues it
    meta = _implemented(ctx, agent, agent_id, tip)
    if meta is not None and (other := another_step(ctx, meta, step)) is not None:
        ctx.notices.append(
            f"{ws.branch} holds the work of another step {step} ({other!r}, commit "
            f"{meta.end_sha[:12]}; the plan renumbered its steps since): not reused, the "
            "implementer starts afresh"
        )
        folder, *reports = agent_files(ctx, agent, agent_id)
        set_aside(folder, reports)  # its report is the other step's: never reused for this one
        meta = None
    target = target_tip(ctx, fetch=False)
    if meta is None or target is None:
        return fresh
    if landed(ctx, meta.end_sha, target):  # a forced run starts afresh
        return fresh
    return meta.start_sha


def fix_start(ctx: Context, ws: Workspace, agent: str, agent_id: str, head: str) -> str:
    """The commit the fixer ``agent_id`` of a round that reviewed ``head`` starts from:
    ``head``, or, when a budget stopped this fixer in an earlier run, its work (committed on
    the step branch), which it continues as a stopped implementer does: the branch's tip while
    that is the stopped commit, and once the fixer that continued it completed, the commit it
    started from (its ``chain.json``), so that one is reused."""
    assert ws.branch is not None
    tip = git.branch_sha(ctx.root, ws.branch)
    if tip is None:
        return head
    meta = read_meta(agent_files(ctx, agent, agent_id)[0])
    for start in (tip, meta.start_sha if meta is not None else None):
        if start is not None and start != head and _stopped_from(ctx, start, head, tip, agent_id):
            return start
    return head


def _stopped_from(ctx: Context, sha: str, head: str, tip: str, agent_id: str) -> bool:
    """Whether ``sha`` is the work of ``agent_id`` a budget stopped, made on top of ``head``,
    on the step branch (at ``tip``)."""
    if not stopped_at(ctx, sha, agent_id):
        return False
    return git.is_ancestor(ctx.root, head, sha) and git.is_ancestor(ctx.root, sha, tip)


class Landed(NamedTuple):
    """A step branch whose work is on the target already (``landed_branch``)."""

    branch: str
    tip: str


def landed_branch(ctx: Context, step: int) -> Landed | None:
    """The step branch, and its tip, when the step's work is on the target already: the
    branch holds the commit of an implementer of the step that completed (its
    ``chain.json``), and its tip is on the target. What a run killed between its merge and its
    ✅ leaves (the ✅ of a plan the target does not have goes into the user's copy after the
    merge), and a step that moved or deleted its plan (the merge brought no ✅ with it). The
    branch and the records go by the plan's name (its file's stem) when the step ran: looked
    for under the plan's name, then under each name the target's history renamed the plan
    from (a step that moved it to a new file name). None: the step's work has not landed, or
    no branch holds it."""
    assert ctx.plan is not None
    target = target_tip(ctx, fetch=False)
    if target is None:
        return None
    for name in _plan_names(ctx, target):
        branch = branch_name(ctx.settings, name, step)
        tip = git.branch_sha(ctx.root, branch)
        if tip is None or not landed(ctx, tip, target):
            continue
        if _step_implemented(ctx, ctx.flow if name == ctx.plan.name else name, step, tip):
            return Landed(branch, tip)
    return None


def _plan_names(ctx: Context, target: str) -> Iterator[str]:
    """The plan's name, then, only when asked for, the names it had before the history of
    ``target`` renamed it (newest first; a move that kept the file's name changes nothing)."""
    assert ctx.plan is not None
    yield ctx.plan.name
    rel = plan_in_repo(ctx)
    if rel is None:
        return
    said = {ctx.plan.name}
    for path in moves.former_paths(ctx.root, target, rel):
        name = PurePosixPath(path).stem
        if name not in said:
            said.add(name)
            yield name


def _step_implemented(ctx: Context, flow: str, step: int, tip: str) -> bool:
    """Whether the step branch (at ``tip``) holds the commit of any implementer of ``step``
    that completed with a change: every agent folder ``step-NN-…`` of the flow ``flow`` (the
    plan's name when the step ran) whose ``chain.json`` (written
    once its agent completed) says it implemented, whichever agent that was. Not only the
    implementer named now: a step landed by ``--implementer other`` would otherwise run again,
    and land twice; nor only configured ones (its report's name would need its agent's
    config)."""
    prefix = default_agent_id("", step)
    folders = agent_dir(ctx.root, ctx.config.flow_dir, flow, prefix).parent
    for folder in sorted(folders.glob(f"{prefix}*")):
        meta = read_meta(folder)
        if meta is None or meta.kind != "implement" or not _changed_into(ctx, meta, tip):
            continue
        if another_step(ctx, meta, step) is None:  # not a step the plan renumbered since
            return True
    return False


def another_step(ctx: Context, meta: AgentMeta, step: int) -> str | None:
    """The title of the step the implementer of ``meta`` implemented, when step ``step`` of the
    plan has another title now: the plan dropped or moved a step and renumbered the rest, and
    the records and branch of the old step ``step`` are another step's work. Read from the
    subject of the commit the chain made of its work (``[plan] Step N: <title>``, a budget's
    stop noted after it); None when it is the same title, or no such commit says (an agent that
    committed all of its work itself: taken as the step's, as before)."""
    assert ctx.plan is not None
    title = ctx.plan.step(step).title
    said = re.compile(rf"\[[^\]\n]*\] Step {step}: (.*?)(?: \(stopped: budget\))?")
    for commit in git.commits_between(ctx.root, meta.start_sha, meta.end_sha):
        found = said.fullmatch(commit.subject)
        if found is not None:
            return None if found[1] == title.strip() else found[1]
    return None


def landed(ctx: Context, sha: str, target: str) -> bool:
    """Whether commit ``sha`` is on the target (at ``target``): landed already."""
    return git.is_ancestor(ctx.root, sha, target)


def _implemented(ctx: Context, agent: str, agent_id: str, tip: str | None) -> AgentMeta | None:
    """The stored meta of the implementer ``agent_id`` when it completed with a change whose
    commit the step branch (at ``tip``) holds; else None."""
    folder, _report, success, _failure = agent_files(ctx, agent, agent_id)
    meta = read_meta(folder)
    if tip is None or meta is None or not success.exists():
        return None
    return meta if _changed_into(ctx, meta, tip) else None


def _changed_into(ctx: Context, meta: AgentMeta, tip: str) -> bool:
    """Whether the agent of ``meta`` changed something, and the branch at ``tip`` holds it."""
    return meta.start_sha != meta.end_sha and git.is_ancestor(ctx.root, meta.end_sha, tip)
