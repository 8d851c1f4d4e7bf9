"""Implement → review → (fix → review)* → merge: one plan step on its own branch and work tree.

``run_step`` reads top to bottom: the implementer works, then up to ``max_iterations`` review
rounds; between rounds the fixer gets every review report (``--after``). The last action is
always a review. Approved: the step is marked ✅ on the step branch, the branch is merged into
the target (fast-forward or a merge commit, never forced) and a git note records the verdict.
Anything else: ❌ and nothing merged. The loop ends by returning an ``Ending`` or raising; the
run record is written in a ``finally`` so a crash still leaves evidence (docs/chains.md).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import NamedTuple

from gitflow_agents import git, lock
from gitflow_agents.chain.agents import TRAILER_RUN, AgentFailed, agent_id_for, run_agent
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.record import ChainResult, Outcome, StepRecord
from gitflow_agents.chain.review import ReviewRound, record_note, review_round
from gitflow_agents.chain.workspace import (
    Workspace,
    branch_name,
    refuse_foreign_checkout,
    step_workspace,
)
from gitflow_agents.errors import ExitCode, GitError

DONE, FAILED = "✅", "❌"

FIX_PREAMBLE = """\
The review of this plan-step asked for changes. Read every report listed under "Previous Agent
Reports" and fix what they ask for, nothing more. Leave your changes uncommitted in the work tree:
gitflow-agents commits them and the step is reviewed again."""


class Ending(NamedTuple):
    """How the loop ended, when it did not raise."""

    outcome: Outcome
    exit_code: int
    reason: str


def run_step(ctx: Context, step: int) -> ChainResult:
    """Implement → review → (fix → review)* for one plan step; merge when approved.

    Returns the typed outcome (approved 0, rejected 1, agent failed 3, merge failed 2); other
    errors propagate after the run record is written. StepLockedError when the step is busy.
    """
    assert ctx.plan is not None
    rec = StepRecord(ctx, step)
    ctx.chain_run = rec.run_id
    if ctx.plan.step(step).status.strip().startswith(DONE):
        rec.finish("skipped", int(ExitCode.OK), f"step {step} is already {DONE}")
        return rec.result()
    refuse_foreign_checkout(ctx, branch_name(ctx.settings, ctx.plan.name, step))  # touch nothing
    lock_file = lock.step_lock_path(ctx.root, ctx.config.flow_dir, ctx.flow, step)
    with lock.hold(lock_file, rec.run_id):
        try:
            ctx.hub.emit("harness:start", {"flow": ctx.flow, "step": step, "runID": rec.run_id})
            rec.finish(*_loop(ctx, rec, step))
        except AgentFailed as exc:
            rec.agents.append(exc.run)
            rec.failed_what = exc.run.kind
            rec.finish("failed", int(ExitCode.AGENT_FAILED), str(exc))
            _set_status(ctx, step, FAILED)
        except GitError as exc:  # the merge (conflict, target moved, dirty checkout)
            rec.finish("failed", int(exc.exit_code), str(exc))
            _set_status(ctx, step, FAILED)
        except KeyboardInterrupt:
            rec.finish("canceled", int(ExitCode.INTERRUPTED), "interrupted")
            raise
        except Exception as exc:
            code = getattr(exc, "exit_code", ExitCode.USAGE)
            rec.finish("failed", int(code), f"{type(exc).__name__}: {exc}")
            raise
        finally:
            result = rec.write()
    return result


def _loop(ctx: Context, rec: StepRecord, step: int) -> Ending:
    """The loop itself: the last action is always a review."""
    assert ctx.plan is not None
    settings = ctx.settings
    ws = rec.ws = step_workspace(ctx, step)
    title = f"[{ctx.plan.name}] Step {step}: {ctx.plan.step(step).title}"
    builder = rec.add(
        run_agent(
            ctx, ws, agent=settings.implementer, kind="implement", step=step,
            agent_id=agent_id_for(settings.implementer, step),
            start_sha=ws.base_sha, commit_message=title,
        )
    )  # fmt: skip
    head, after = builder.end_sha, (builder.agent_id,)
    for iteration in range(1, settings.max_iterations + 1):
        ctx.hub.emit("phase:start", {"phase": f"review-{iteration}", "step": step})
        review = rec.add_round(
            review_round(ctx, ws, iteration=iteration, step=step, after=after, head=head)
        )
        record_note(ctx, ws, review)
        if review.gate.approved:
            _merge(ctx, rec, ws, step, review, iteration, title)
            return Ending("approved", int(ExitCode.OK), f"approved in review {iteration}")
        if iteration == settings.max_iterations:
            break
        fix = rec.add(
            run_agent(
                ctx, ws, agent=settings.fixer, kind="fix", step=step,
                agent_id=agent_id_for(settings.fixer, step, iteration),
                start_sha=head, preamble=FIX_PREAMBLE,
                after=[run.agent_id for run in review.agents],
                commit_message=f"{title} (fix {iteration})",
            )
        )  # fmt: skip
        head, after = fix.end_sha, (fix.agent_id,)
    _set_status(ctx, step, FAILED)
    reasons = "; ".join(rec.rounds[-1].gate.reasons)
    return Ending(
        "rejected",
        int(ExitCode.REVISE),
        f"not approved after {len(rec.rounds)} review(s): {reasons}",
    )


def _merge(
    ctx: Context,
    rec: StepRecord,
    ws: Workspace,
    step: int,
    review: ReviewRound,
    iteration: int,
    title: str,
) -> None:
    """Mark the step ✅ and merge the step branch into the target; GitError when git refuses
    (then ✅ stays committed on the step branch). The step work tree goes; the branch stays."""
    tip = _mark_done(ctx, rec, ws, step, review)
    try:
        rec.merged = git.merge_into(
            ctx.root, ctx.target, tip, mode=ctx.settings.merge,
            message=f"Merge {ws.branch}: {title}",
        )  # fmt: skip
    except GitError as exc:
        rec.failed_what = "merge refused"
        kept = f"; {DONE} stays committed on {ws.branch} ({tip[:12]})"
        raise GitError(
            f"approved in review {iteration}, but the merge was refused: {exc}"
            + (kept if tip != review.reviewed_sha else "")
        ) from None
    if tip == review.reviewed_sha:  # the plan is not on the branch (not committed)
        _set_status(ctx, step, DONE)
    git.remove_tool_worktree(ctx.root, ws.worktree)


def _plan_in_tree(ctx: Context, ws: Workspace) -> Path | None:
    """The plan's path inside the step work tree (it is the committed plan there), or None when
    the plan lies outside the repository or is not on the branch."""
    assert ctx.plan is not None
    try:
        rel = ctx.plan.path.resolve().relative_to(ctx.root.resolve())
    except ValueError:
        return None
    path = ws.worktree / rel
    return path if path.is_file() and not path.is_symlink() else None


def _mark_done(ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound) -> str:
    """On approval: set the step's status to ✅ in the plan *inside the step work tree* and
    commit it on the step branch (the run's trailer), so the merge takes it to the target and,
    by the fast-forward, to the user's checkout of the target. The approval note is carried to
    that commit, whose only change is the status line, so the pushed tip passes the gate hook.

    Returns the commit to merge: the reviewed one when the plan is not on the branch (then the
    user's copy gets the status, as before) or already says ✅."""
    from gitflow_agents.errors import PlanError
    from gitflow_agents.plan_status import set_step_status
    from gitflow_agents.reviewer import record_review

    assert ctx.plan is not None
    plan = _plan_in_tree(ctx, ws)
    if plan is None:
        return review.reviewed_sha
    try:
        set_step_status(plan, step, DONE, ctx.config.spec_plan)
    except (PlanError, OSError):  # the committed plan has no such step: leave it alone
        git.discard_changes(ws.worktree, review.reviewed_sha)
        return review.reviewed_sha
    rel = plan.relative_to(ws.worktree).as_posix()
    sha = git.commit_paths(
        ws.worktree, (rel,), f"[{ctx.plan.name}] Mark step {step} done",
        trailers={TRAILER_RUN: rec.run_id},
    )  # fmt: skip
    if sha is None:
        return review.reviewed_sha
    reviewers = ",".join(run.agent for run in review.agents)
    record_review(
        ctx.root,
        reviewed_sha=sha,
        base_sha=ws.base_sha,
        approved=True,
        agent=f"{reviewers} (approved {review.reviewed_sha[:12]}; this commit only marks "
        f"step {step} {DONE} in {rel})",
        threshold=ctx.settings.threshold.value,
    )
    return sha


def _set_status(ctx: Context, step: int, status: str) -> None:
    from gitflow_agents.plan_status import set_step_status

    assert ctx.plan is not None
    with contextlib.suppress(OSError):
        set_step_status(ctx.plan.path, step, status, ctx.config.spec_plan)
