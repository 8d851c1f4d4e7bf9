"""Where a step's state lives: the target branch, the run records, the step branch.

One source of truth for "is this step done": the plan **as committed on the target branch**,
whatever branch the user has checked out and whatever their copy of the plan says. Only a plan
that is not committed on the target (a new, untracked plan) is read from the user's copy, the one
place it exists. Failures are never written into a plan: they live in the run records and the
history, and the work of a failed attempt stays on the step branch for the next run to resume
(docs/chains.md, The state model).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from gitflow_agents.base.atomic import real_path
from gitflow_agents.base.errors import GitflowError, PlanError
from gitflow_agents.chain.context import Context
from gitflow_agents.git import moves
from gitflow_agents.git import queries as git
from gitflow_agents.plan import parse_plan_text
from gitflow_agents.plan.model import DONE as DONE


def plan_in_repo(ctx: Context) -> str | None:
    """The plan's path relative to the repository (None when it lies outside)."""
    assert ctx.plan is not None
    try:
        return real_path(ctx.plan.path).relative_to(real_path(ctx.root)).as_posix()
    except ValueError:
        return None


def committed_status(ctx: Context, ref: str, step: int) -> str | None:
    """The step's status in the plan as ``ref`` has it committed; None when the plan is not
    committed there. A committed plan that lacks the step (or no longer parses) says ''."""
    assert ctx.plan is not None
    rel = plan_in_repo(ctx)
    text = git.show_file(ctx.root, ref, rel) if rel is not None else None
    if text is None:
        return None
    try:
        return parse_plan_text(text, ctx.plan.path, ctx.config.spec_plan).step(step).status
    except PlanError:
        return ""


def target_tip(ctx: Context, *, fetch: bool = True) -> str | None:
    """The target's commit, None when there is no such branch. With ``ctx.target_remote`` it is
    fetched from that remote first (unless ``fetch`` is off), so "done" and "moved on" are read
    as the remote has them."""
    if fetch:
        fetch_target(ctx)
    return git.branch_tip(ctx.root, ctx.target_rev)


def fetch_target(ctx: Context) -> bool:
    """Fetch the target from ``ctx.target_remote`` into its remote-tracking ref: whether git
    succeeded (True when there is no remote to fetch from)."""
    if ctx.target_remote is None:
        return True
    refspec = f"+refs/heads/{ctx.target}:{ctx.target_rev}"
    return git.fetch_ref(ctx.root, refspec, ctx.target_remote)


def done_where(ctx: Context, step: int) -> str | None:
    """Where the step is recorded done ("on main (specs/x.md)"), None when it is not: the
    target's committed plan decides; the user's copy only for a plan the target does not have."""
    assert ctx.plan is not None
    status = committed_status(ctx, ctx.target_rev, step)
    if status is not None:
        if not status.startswith(DONE):
            return None
        where = ctx.target if ctx.target_remote is None else f"{ctx.target_remote}/{ctx.target}"
        return f"on {where} ({plan_in_repo(ctx)} as committed there)"
    if ctx.plan.step(step).status.startswith(DONE):
        shown = plan_in_repo(ctx) or str(ctx.plan.path)
        return f"in {shown} (not committed on {ctx.target})"
    return None


def where_it_went(root: Path, target: str, path: Path, exc: PlanError) -> PlanError:
    """``exc`` for the plan at ``path`` that is not there, saying which commit of the branch
    ``target`` moved or deleted it (a step may move its own plan: docs/chains.md, "The state
    model"); ``exc`` itself for any other problem, or when the target's history does not
    say."""
    if os.path.lexists(path):
        return exc
    try:
        rel = real_path(path).relative_to(real_path(root)).as_posix()
        gone = moves.gone_in(root, f"refs/heads/{target}", rel)
    except (GitflowError, ValueError):
        return exc
    if gone is None:
        return exc
    return PlanError(f"{exc.detail}; {gone.says(target)}", path=exc.path, line=exc.line)


def run_again(ctx: Context, step: int) -> str:
    """The command that runs ``step`` of the plan again as this run did (the options it
    repeats: ``Context.again``), quoted for a POSIX shell."""
    assert ctx.plan is not None
    plan = plan_in_repo(ctx) or str(ctx.plan.path)
    return shlex.join(["gitflow-agents", "run", plan, "--step", str(step), *ctx.again])
