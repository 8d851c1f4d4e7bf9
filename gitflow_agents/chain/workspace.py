"""Where a chain's agents work: the step branch in a work tree of the tool's own.

Agents run in a work tree of the step branch (``git.tool_worktree_root``: the user cache), so
the user's own work tree and uncommitted changes are never touched. The run artifacts stay in the
user's ``<flow_dir>/`` (a symlink from the step work tree points there); ``info/exclude`` keeps
them out of commits and statistics. Read-only flows (review, research) get a detached scratch
work tree that is removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from gitflow_agents.base.atomic import real_path
from gitflow_agents.base.errors import UsageError
from gitflow_agents.chain.context import ChainSettings, Context
from gitflow_agents.chain.state import target_tip
from gitflow_agents.git import queries as git
from gitflow_agents.plan.model import format_branch
from gitflow_agents.runs import lost, new_run_id, runs_root
from gitflow_agents.runs.lock import StepLockedError


@dataclass(frozen=True)
class Workspace:
    worktree: Path
    branch: str | None  # None: detached (review / research of an arbitrary commit)
    base_sha: str  # merge-base with the target: what statistics and reviews compare against


def reset_unless_clean(ws: Workspace, sha: str) -> None:
    """Reset the work tree to ``sha`` and drop untracked files (``git.discard_changes``) unless
    it is already clean at ``sha``: what a crashed attempt left never reaches the next agent."""
    head, dirty = git.head_and_dirty(ws.worktree, nested=False)  # git clean keeps those
    if head != sha or dirty:
        git.discard_changes(ws.worktree, sha)


def clean_leftovers(ws: Workspace, sha: str) -> None:
    """``reset_unless_clean`` for a review of ``sha``, except that a clean HEAD past ``sha`` on
    the branch stays where it is: the later work of an earlier run of the step (the fix that
    followed this review, which a resumed run reuses) is not rewritten; only what is left
    uncommitted goes. A reviewer that runs gets the work tree at ``sha`` (``_Attempt``)."""
    head, dirty = git.head_and_dirty(ws.worktree, nested=False)
    if head is not None and head != sha and git.is_ancestor(ws.worktree, sha, head):
        sha = head  # the later work stays; what is left uncommitted goes
    if head != sha or dirty:
        git.discard_changes(ws.worktree, sha)


def branch_name(settings: ChainSettings, plan: str, step: int) -> str:
    return format_branch(settings.branch_pattern, plan, step)


def worktree_path(root: Path, flow: str, name: str) -> Path:
    """The work tree ``name`` of ``flow`` (``_tree_path``, from a root alone)."""
    return git.tool_worktree_root(root) / flow / name


def _tree_path(ctx: Context, name: str) -> Path:
    """``worktree_path`` of the run's flow, without a git call after the run's first."""
    return ctx.tool_root() / ctx.flow / name


def refuse_foreign_checkout(ctx: Context, name: str) -> None:
    """UsageError when branch ``name`` is checked out in a work tree gitflow-agents did not
    create (the user's own, or a worktree the user made): the tool resets and cleans the work
    tree it runs agents in, so it works on a branch only in a work tree of its own."""
    _refuse_foreign(ctx, name, git.worktree_of_branch(ctx.root, name))


def _refuse_foreign(ctx: Context, name: str, tree: Path | None) -> None:
    """``refuse_foreign_checkout`` with the work tree ``name`` is checked out in, read."""
    if tree is None or git.is_under_tool_root(ctx.tool_root(), tree):
        return
    raise UsageError(
        f"branch {name} is checked out in the work tree {tree}: gitflow-agents runs agents only "
        "in work trees of its own and never resets yours; switch that work tree to another "
        f"branch (`git -C {tree} switch {ctx.target}`, uncommitted changes stay with you) or "
        "remove it, then run again"
    )


def _link_flow_dir(ctx: Context, worktree: Path) -> None:
    """``<worktree>/<flow_dir>`` → the user's flow dir, so agents' relative report paths land
    in one place; both spellings are excluded (a symlink is not a directory to git)."""
    flow_dir = ctx.exclude[0]
    ctx.exclude_flow_dir()
    real = ctx.root / flow_dir
    real.mkdir(parents=True, exist_ok=True)
    link = worktree / flow_dir
    if not link.is_symlink() and not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(real_path(real), target_is_directory=True)


def step_workspace(ctx: Context, step: int, ended: list[Lost] | None = None) -> Workspace:
    """The step branch (``branch_pattern``) in its own work tree; ``ended``: gets the lost runs
    that worked in it, ended before it is taken over (``take_over``)."""
    assert ctx.plan is not None
    name = branch_name(ctx.settings, ctx.plan.name, step)
    advance = ctx.settings.force  # a landed step runs again from the target's tip
    return branch_workspace(ctx, name, f"step-{step:02d}", ended, advance=advance)


def missing_target(ctx: Context) -> str:
    """Why there is no target branch, and the two ways to name the right one (``init`` writes
    ``default_branch: main``; a repository made by ``git init`` may be on ``master``)."""
    current = git.current_branch(ctx.root)
    here = f" (this checkout is on {current!r})" if current and current != ctx.target else ""
    return (
        f"target branch {ctx.target!r} does not exist{here}: give --target BRANCH, or set "
        "chain.target or default_branch in .flow/base.yaml"
    )


def branch_workspace(
    ctx: Context,
    name: str,
    key: str | None = None,
    ended: list[Lost] | None = None,
    *,
    advance: bool = False,
) -> Workspace:
    """Branch ``name`` (created at the target's tip when new) checked out in a work tree of its
    own (an existing one is reused); ``key`` names the work tree folder; ``ended``: see
    ``step_workspace``. ``advance`` (``--force``): a branch whose tip is on the target already
    (a landed step: nothing of its own) is moved up to the target's tip, a fast-forward, so the
    step runs again on what the target holds now."""
    git.check_branch_name(ctx.root, name)
    target_sha = target_tip(ctx)
    if target_sha is None:
        raise UsageError(missing_target(ctx))
    known = git.worktree_of_branch(ctx.root, name)
    _refuse_foreign(ctx, name, known)  # before anything is created or reset
    tree = known or _tree_path(ctx, key or name.replace("/", "-"))
    take_over(ctx, tree, ended)  # before anything is created or reset: one agent in a tree
    if known is not None and not (known / ".git").exists():  # git knows it, its folder is gone
        git.remove_tool_worktree(ctx.root, known, base=ctx.tool_root())  # (the cache cleared)
        known = None
    if git.branch_sha(ctx.root, name) is None:
        git.create_branch(ctx.root, name, target_sha)
    if known is None:
        if os.path.lexists(tree):  # left over from a crash: git no longer knows it
            git.remove_tool_worktree(ctx.root, tree, base=ctx.tool_root())
        git.add_worktree(ctx.root, tree, name)
    tip = git.branch_sha(ctx.root, name)
    if advance and tip not in (None, target_sha) and git.is_ancestor(ctx.root, tip, target_sha):
        git.set_branch(ctx.root, name, target_sha)  # moves its (the tool's own) work tree too
    _link_flow_dir(ctx, tree)
    return Workspace(tree, name, git.merge_base(ctx.root, ctx.target_rev, name))


class Lost(NamedTuple):
    """A lost run ``take_over`` ended: its run id, and its status.json as it found it."""

    run_id: str
    status: dict[str, Any]


def take_over(ctx: Context, tree: Path, ended: list[Lost] | None = None) -> None:
    """Kill the whole process tree of every lost run (its supervisor died: an orchestrator
    killed with ``kill -9``) whose agent works in ``tree``, and say so in ``ctx.notices``;
    each one ended goes to ``ended`` (the step run taking the tree over lists it: what it
    spent counts in the step's and the plan's sums), after those `cancel` or `gc` ended before.
    StepLockedError (exit 2), touching nothing, when a lost run's processes survive the kill."""
    runs = runs_root(ctx.root, ctx.config.flow_dir, ctx.flow)
    if ended is not None:  # read before the runs below are ended: they would be among them
        ended.extend(Lost(p.run_dir.name, status) for p, status in lost.ended_lost_in(runs, tree))
    for paths, status in lost.lost_in(runs, tree):
        run_id, agent = paths.run_dir.name, status.get("agent") or "an agent"
        alive = lost.tree_pids(status)  # before the kill: whether it still worked
        left = lost.kill_recorded_tree(status, grace=ctx.settings.kill_grace)
        if left:
            raise StepLockedError(
                f"the lost run {run_id} ({agent}) still has processes in {tree} that could not "
                f"be killed ({', '.join(map(str, left))}); stop them with "
                f"`gitflow-agents cancel {run_id}`, then run again"
            )
        lost.mark_ended(
            paths, status, "lost (its supervisor died); killed by a new run of its step", ctx.config
        )
        if ended is not None:
            ended.append(Lost(run_id, status))
        ctx.notices.append(_taken_over(run_id, agent, tree, bool(alive)))


def _taken_over(run_id: str, agent: str, tree: Path, alive: bool) -> str:
    """The note of a lost run ``take_over`` ended: its processes still ran (``alive``) and were
    killed, or its agent had ended already (it may even have completed: its supervisor died
    before the work was committed and the run recorded, so nothing of it can be reused, and the
    agent runs again; docs/chains.md, "Resuming")."""
    lost_run = f"run {run_id} ({agent}) was lost (its supervisor died)"
    if alive:
        return (
            f"{lost_run} and still worked in {tree}: its process tree was killed before this "
            "run took the work tree over"
        )
    return (
        f"{lost_run} after its agent had ended in {tree}, before its work was committed and "
        "recorded: nothing was left to kill, and the agent runs again"
    )


@contextlib.contextmanager
def scratch_workspace(ctx: Context, ref: str, base: str) -> Iterator[Workspace]:
    """A detached work tree at ``ref`` for read-only flows (review, research), removed after."""
    sha = git.rev_parse(ctx.root, ref)
    tree = _tree_path(ctx, f"scratch-{new_run_id()[:13]}")
    git.add_worktree(ctx.root, tree, sha, detach=True)
    try:
        _link_flow_dir(ctx, tree)
        yield Workspace(tree, None, git.rev_parse(ctx.root, base))
    finally:
        git.remove_tool_worktree(ctx.root, tree, base=ctx.tool_root())
