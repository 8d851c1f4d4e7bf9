"""Landing an approved step: mark it ✅ on the step branch, merge into the target, carry the note.

The step's status is set in the plan *inside the step work tree* and committed on the step
branch, so the merge brings the target's committed plan to ✅ (the one place a step's state is
read from: ``chain/state.py``). The approval note is carried to every commit that lands whose
tree is the approved one (the mark commit, a merge commit), so the target's new tip passes the
gate hook. A refused merge names what blocked it and what to do next; nothing is forced.
Once the merge landed the step is approved: a ✅ that cannot be written (the step moved or
deleted the plan, the user's copy of an uncommitted plan is gone) is a note, never a failure;
a run killed before it wrote ✅ is finished by the next (``finish_landed``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from gitflow_agents.base.errors import GitError, PlanError
from gitflow_agents.chain.agents import TRAILER_RUN, nested_repositories
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.record import StepRecord, keep_landing
from gitflow_agents.chain.resume import Landed
from gitflow_agents.chain.review import ReviewRound
from gitflow_agents.chain.state import (
    DONE,
    committed_status,
    plan_in_repo,
    run_again,
    target_tip,
)
from gitflow_agents.chain.workspace import Workspace, branch_name, take_over
from gitflow_agents.git import moves
from gitflow_agents.git import queries as git
from gitflow_agents.plan import set_step_status
from gitflow_agents.plan.model import shown_path
from gitflow_agents.reviewer import read_review_note, record_review


def land(
    ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound, title: str
) -> None:
    """Mark the step ✅ and merge the step branch into the target; GitError when git refuses
    (then ✅ stays committed on the step branch). The step work tree goes; the branch stays."""
    tip = mark_done(ctx, rec, ws, step, review)
    before = git.branch_sha(ctx.root, ctx.target)  # what merge_into moves from
    if before is not None:  # killed after the merge, the next run writes the record from it
        keep_landing(rec, before, tip)
    try:
        rec.merged = git.merge_into(
            ctx.root,
            ctx.target,
            tip,
            mode=ctx.settings.merge,
            message=f"Merge {ws.branch}: {title}",
        )
    except GitError as exc:
        rec.failed_what = "merge refused"
        raise GitError(_refused(ctx, ws, step, review, tip, exc)) from None
    except KeyboardInterrupt:  # Ctrl-C while git ran (a slow post-merge hook, after the move)
        rec.merged = _landed_anyway(ctx, tip, before)
        if rec.merged is not None:  # the step landed: approved; its landing is finished
            _after_merge(ctx, ws, step, review, rec.merged, tip)
        raise
    _after_merge(ctx, ws, step, review, rec.merged, tip)


def _after_merge(
    ctx: Context, ws: Workspace, step: int, review: ReviewRound, merged: git.MergeResult, tip: str
) -> None:
    """What ``land`` does once its merge landed: the note carried to a merge commit, the ✅ of
    a plan the step branch does not hold, the step's work tree removed."""
    if merged.sha != tip and git.tree_sha(ctx.root, merged.sha) == git.tree_sha(ctx.root, tip):
        carry_note(ctx, ws, review, merged.sha, MERGE_HAS_TREE)
    if plan_in_tree(ctx, ws) is None:  # not on the step branch: no ✅ came with the merge
        _unmarked_plan(ctx, step, merged.previous, tip)
    remove_step_worktree(ctx, ws)


def _landed_anyway(ctx: Context, tip: str, before: str | None) -> git.MergeResult | None:
    """The merge of ``tip`` into the target as it stands after an interrupted ``merge_into``:
    the target moved from ``before`` to a commit that holds ``tip`` (git had moved it when the
    interrupt came: a post-merge hook runs after that); None when it did not land."""
    now = git.branch_sha(ctx.root, ctx.target)
    if before is None or now is None or now == before or not git.is_ancestor(ctx.root, tip, now):
        return None
    return git.MergeResult(now, before, "fast-forward" if now == tip else "merge-commit")


MERGE_HAS_TREE = "this merge commit has its tree"


def carry_to_merges(ctx: Context, step: int, branch: str | None = None) -> str | None:
    """``carry_to_merge`` for ``step``'s branch (``branch``: the one it landed from, when not
    the plan's own) when its tip is on the target (a step found done or landed): one line
    saying what was carried, None when nothing was missing."""
    assert ctx.plan is not None
    branch = branch or branch_name(ctx.settings, ctx.plan.name, step)
    tip = git.branch_sha(ctx.root, branch)
    target = target_tip(ctx, fetch=False)
    if tip is None or target is None or tip == target or not git.is_ancestor(ctx.root, tip, target):
        return None
    with ctx.landing:  # as a landing writes notes: one step at a time
        return carry_to_merge(ctx, tip, target)


def carry_to_merge(ctx: Context, tip: str, target: str) -> str | None:
    """The approval of a landed step branch's tip (``tip``) carried to the merge commit on the
    target (at ``target``) that merged it with exactly its tree, when a run killed between its
    merge (``--merge merge``) and ``carry_note`` left that commit without one: the target's tip
    would fail the pre-push gate for ever, and a re-run finds the step done. What was carried,
    as a line; None when nothing was missing."""
    approved = read_review_note(ctx.root, tip)
    if approved is None or approved.verdict != "approved":
        return None
    tree = git.tree_sha(ctx.root, tip)
    for merge in git.merges_of(ctx.root, tip, target):
        if read_review_note(ctx.root, merge) is None and git.tree_sha(ctx.root, merge) == tree:
            reviewers = approved.agent.partition(" (")[0]
            _approve(
                ctx, merge, approved.base_sha, reviewers, tip, MERGE_HAS_TREE, approved.threshold
            )
            return (
                f"the approval of {tip[:12]} carried to its merge commit {merge[:12]} on "
                f"{ctx.target} (the run that merged it ended before)"
            )
    return None


def finish_landed(ctx: Context, step: int, found: Landed) -> str:
    """What ``land`` does after its merge, for a step whose work is on the target already
    while its plan does not say ✅ (``found``: ``resume.landed_branch``): a plan the target
    does not have gets its ✅ in the user's copy, and the step's work tree goes (a lost run in
    it killed first). Nothing is merged and no agent runs. Returns why the step is skipped."""
    assert ctx.plan is not None
    remove_landed_tree(ctx, found)
    landed = f"step {step}'s work is on {ctx.target} already ({found.branch} at {found.tip[:12]})"
    carried = carry_to_merges(ctx, step, found.branch)
    if carried is not None:
        ctx.notices.append(carried)
    if committed_status(ctx, ctx.target_rev, step) is not None:  # the target's plan decides
        unmarked = f"{plan_in_repo(ctx)} as committed there does not mark it {DONE}"
        return f"{landed}, but {unmarked}; --force runs it again"
    with ctx.landing:  # as a landing writes the user's copy: one step at a time
        why = set_users_copy(ctx, step)
    if why is not None:
        ctx.notices.append(why)
        return f"{landed}: the run that merged it ended before its {DONE}"
    return (
        f"{landed}: its {DONE} written into {shown_path(ctx.plan.path)} now (the run that "
        "merged it ended before)"
    )


def remove_landed_tree(ctx: Context, found: Landed) -> bool:
    """What a landing does last, for a step whose branch is on the target (``found``:
    ``resume.landed_branch``): the step's work tree goes (``remove_step_worktree``), a lost
    run in it killed first (StepLockedError when its processes survive). Whether it went:
    False when the branch is checked out in no work tree of the tool's, or the tree is kept."""
    tree = git.worktree_of_branch(ctx.root, found.branch)
    if tree is None or not git.is_under_tool_root(ctx.tool_root(), tree):
        return False
    take_over(ctx, tree)
    return remove_step_worktree(ctx, Workspace(tree, found.branch, found.tip))


def remove_step_worktree(ctx: Context, ws: Workspace) -> bool:
    """The landed step's work tree, and the per-plan folder of the work-tree cache if empty.
    A work tree holding a nested repository an agent left (never committed:
    ``git.commit_work``) is kept instead, with a note: it would go with the tree. Whether
    it went."""
    nested = git.untracked_repositories(ws.worktree)
    if nested:
        ctx.notices.append(
            f"the step's work tree {ws.worktree} is kept: it holds "
            f"{nested_repositories(nested)}, left out of the commit (`gitflow-agents gc --force` "
            "removes it)"
        )
        return False
    git.remove_tool_worktree(ctx.root, ws.worktree, base=ctx.tool_root())
    with contextlib.suppress(OSError):
        ws.worktree.parent.rmdir()
    return True


def plan_in_tree(ctx: Context, ws: Workspace) -> Path | None:
    """The plan's path inside the step work tree (it is the committed plan there), or None when
    the plan lies outside the repository or is not on the branch."""
    rel = plan_in_repo(ctx)
    if rel is None:
        return None
    path = ws.worktree / rel
    return path if path.is_file() and not path.is_symlink() else None


def mark_done(ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound) -> str:
    """Set the step's status to ✅ in the plan *inside the step work tree* and commit it on the
    step branch (the run's trailer), so the merge takes it to the target and, by the
    fast-forward, to the user's checkout of the target. When ``review`` approved, its approval
    note is carried to that commit, whose only change is the status line, so the pushed tip
    passes the gate hook; a rejected step's mark (``--pr``: merging its pull request once it
    is fixed marks the step done) carries none.

    A plan on the branch that cannot take the ✅ (it lacks the step, its ``step_header_pattern``
    cannot hold ✅) is left alone, and a note says why: the step lands unmarked all the same.

    Returns the step branch's new tip: the reviewed commit when the plan is not on the branch
    or cannot take the ✅; the work tree's HEAD when it already says ✅ (the reviewed commit, or
    the mark an earlier run's refused merge left, which ``review_round`` keeps)."""
    assert ctx.plan is not None
    plan = plan_in_tree(ctx, ws)
    if plan is None:
        return review.reviewed_sha
    rel = plan.relative_to(ws.worktree).as_posix()
    unwritten = _write_done(ctx, plan, rel, step)
    if unwritten is not None:  # the step lands unmarked: say so, leave the plan alone
        ctx.notices.append(unwritten)
        git.discard_changes(ws.worktree, review.reviewed_sha)
        return review.reviewed_sha
    sha = git.commit_paths(
        ws.worktree,
        (rel,),
        f"[{ctx.plan.name}] Mark step {step} done",
        trailers={TRAILER_RUN: rec.run_id},
        identity=ctx.commit_identity,
    )
    if sha is None:  # says ✅ already: the reviewed commit, or the mark a refused merge left
        return git.head_sha(ws.worktree)
    if review.gate.approved:
        carry_note(ctx, ws, review, sha, f"this commit only marks step {step} {DONE} in {rel}")
    return sha


def carry_note(ctx: Context, ws: Workspace, review: ReviewRound, sha: str, why: str) -> None:
    """The round's approval, recorded on ``sha`` (a commit that adds nothing to review)."""
    reviewers = ",".join(run.agent for run in review.agents)
    threshold = ctx.settings.threshold.value
    _approve(ctx, sha, ws.base_sha, reviewers, review.reviewed_sha, why, threshold)


def _approve(
    ctx: Context, sha: str, base: str, reviewers: str, approved: str, why: str, threshold: str
) -> None:
    """An approval of ``sha`` carried from ``approved`` (``why``: what makes it the same)."""
    agent = f"{reviewers} (approved {approved[:12]}; {why})"
    record_review(
        ctx.root, reviewed_sha=sha, base_sha=base, approved=True, agent=agent, threshold=threshold
    )


def _refused(
    ctx: Context, ws: Workspace, step: int, review: ReviewRound, tip: str, exc: GitError
) -> str:
    """Why the merge was refused, the files in the way, and the command to run next."""
    assert ctx.plan is not None
    text = f"approved in review {review.iteration}, but the merge was refused: {exc}"
    if tip != review.reviewed_sha:
        text += f"; {DONE} stays committed on {ws.branch} ({tip[:12]})"
    checkout = git.worktree_of_branch(ctx.root, ctx.target)
    target = git.branch_sha(ctx.root, ctx.target)
    blocking: list[str] = []
    if checkout is not None and target is not None:
        changes = git.diff(ctx.root, git.DiffSpec(target, tip))
        changed = {path for change in changes for path in (change.path, change.old_path) if path}
        blocking = [p for p in git.dirty_paths(checkout) if p in changed]
    again = f"`{run_again(ctx, step)}`"
    if blocking:
        text += (
            f". Your uncommitted changes to {', '.join(blocking)} in {checkout} (where "
            f"{ctx.target} is checked out) would be overwritten: stash them, then run {again} "
            "again; the approved work is merged without running the agents again (committed "
            f"instead, they move {ctx.target} on: the step is reviewed again with them merged in)"
        )
    else:
        text += f". Run {again} again once that is out of the way; the approved work is reused"
    return text


def _unmarked_plan(ctx: Context, step: int, before: str, tip: str) -> None:
    """After the merge of a step branch that does not hold the plan: a plan the target did not
    have either (not committed) gets its ✅ in the user's copy, its only place; one the target
    had was moved or deleted by the step, and is left alone. Either way the step has landed:
    what kept its ✅ from being written is a note (``ctx.notices``), never a failure."""
    rel = plan_in_repo(ctx)
    gone = None if rel is None or git.show_file(ctx.root, before, rel) is None else rel
    if gone is not None:  # the target had it: the merged work moved or deleted it
        moved = moves.renamed_to(ctx.root, before, tip, gone)
        why = f"the step moved it to {moved}" if moved else "the step deleted it"
        ctx.notices.append(f"step {step} is not marked {DONE} in {gone}: {why}")
        return
    unwritten = set_users_copy(ctx, step)
    if unwritten is not None:
        ctx.notices.append(unwritten)


def set_users_copy(ctx: Context, step: int) -> str | None:
    """✅ into the user's copy of a plan the target does not have (its one place); None when
    written, else a line saying why it could not be (the copy was deleted or no longer has the
    step): the step landed all the same."""
    assert ctx.plan is not None
    return _write_done(ctx, ctx.plan.path, shown_path(ctx.plan.path), step)


def _write_done(ctx: Context, path: Path, shown: str, step: int) -> str | None:
    """✅ written for ``step`` into the plan at ``path``; None when written, else a line saying
    why it could not be (``shown``: the plan as the line names it, with the header's line when
    the plan refused the status: a ``step_header_pattern`` whose status group cannot hold it)."""
    try:
        set_step_status(path, step, DONE, ctx.config.spec_plan)
    except PlanError as exc:
        where, why = (shown if exc.line is None else f"{shown}:{exc.line}"), exc.detail
    except OSError as exc:
        where, why = shown, exc.strerror or type(exc).__name__
    else:
        return None
    return f"step {step} is not marked {DONE} in {where}: {why}"
