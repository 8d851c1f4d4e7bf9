"""Bringing a target that moved on into the step branch, before a review.

When someone lands a commit on the target while a step runs, the step branch no longer
fast-forwards. Before every review round the target is therefore **merged into the step
branch** (a merge, not a rebase: the agents' commits keep their shas, so their trailers, notes
and resume records stay true, and nothing is ever rewritten or forced). The reviewers then review
that merge commit, and the approval is bound to the exact commit that lands. When the merge
conflicts, the fixer gets the conflicted files and resolves them in the step's work tree (the
tool commits the merge); a fixer that fails ends the step with the branch kept, and a resolution
that leaves conflict markers is not approved (docs/chains.md, A target that moved on).
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from gitflow_agents.base.errors import GitError
from gitflow_agents.chain.agents import TRAILER_RUN, Job, agent_id_for, run_agent
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.record import StepRecord
from gitflow_agents.chain.state import target_tip
from gitflow_agents.chain.workspace import Workspace, reset_unless_clean
from gitflow_agents.git import queries as git

CONFLICT_PREAMBLE = """\
gitflow-agents merged {target} (now at {target_sha}) into this plan-step's branch {branch}, because
{target} moved on while the step was running, and the merge conflicts in:

{files}

Resolve every conflict in those files: keep what this step needs and what {target} added, and
remove every conflict marker. Change nothing else. Leave the result uncommitted in the work tree:
gitflow-agents completes the merge commit and the step is reviewed again."""


class Integrated(NamedTuple):
    ws: Workspace  # its base is the target's tip now
    head: str  # the commit to review: ``head`` itself, or the merge of the target into it
    after: tuple[str, ...]  # the reports the next agent gets (the conflict fixer's, if one ran)


def moved_on(ctx: Context, head: str) -> str | None:
    """The target's tip when ``head`` does not contain it (the target moved on), else None."""
    tip = target_tip(ctx)
    if tip is None:
        raise GitError(f"target branch {ctx.target} does not exist any more")
    return None if git.is_ancestor(ctx.root, tip, head) else tip


def integrate(
    ctx: Context,
    rec: StepRecord,
    ws: Workspace,
    head: str,
    *,
    step: int,
    iteration: int,
    after: tuple[str, ...],
) -> Integrated:
    """``head`` with the target merged in, when the target moved on (see the module doc)."""
    target_sha = moved_on(ctx, head)
    if target_sha is None:
        return Integrated(ws, head, after)
    assert ws.branch is not None
    message = f"Merge {ctx.target} into {ws.branch}"
    tip = git.branch_sha(ctx.root, ws.branch) or head
    merged = git.find_merge(ctx.root, tip, head, target_sha)  # an earlier run's, when resuming
    if merged is None:
        reset_unless_clean(ws, head)
        result = git.merge_in_worktree(
            ws.worktree,
            target_sha,
            message,
            trailers={TRAILER_RUN: rec.run_id},
            identity=ctx.commit_identity,
        )
        merged = result.sha
        if merged is None:
            merged, after = _resolve(
                ctx, rec, ws, head, target_sha, result.conflicts, step, iteration
            )
    ctx.notices.append(
        f"{ctx.target} moved on to {target_sha[:12]} while the step ran: merged into "
        f"{ws.branch} as {merged[:12]}, which review {iteration} reviews"
    )
    base = git.merge_base(ctx.root, ctx.target_rev, merged)
    rec.integrated = merged  # the step's work now ends here, reviewed or not (record._head)
    return Integrated(replace(ws, base_sha=base), merged, after)


def _resolve(
    ctx: Context,
    rec: StepRecord,
    ws: Workspace,
    head: str,
    target_sha: str,
    conflicts: tuple[str, ...],
    step: int,
    iteration: int,
) -> tuple[str, tuple[str, ...]]:
    """The fixer resolves the conflicted merge; the merge commit and the fixer's id."""
    assert ctx.plan is not None and ws.branch is not None
    settings = ctx.settings
    preamble = CONFLICT_PREAMBLE.format(
        target=ctx.target,
        target_sha=target_sha[:12],
        branch=ws.branch,
        files="\n".join(f"- `{path}`" for path in conflicts),
    )
    fix = rec.add(
        run_agent(
            ctx,
            ws,
            Job(
                agent=settings.fixer,
                kind="fix",
                step=step,
                agent_id=f"{agent_id_for(settings.fixer, step, iteration)}-merge",
                start_sha=head,
                preamble=preamble,
                resolve_merge=True,
                commit_message=f"Merge {ctx.target} into {ws.branch} (conflicts resolved)",
            ),
        )
    )
    if fix.end_sha == head or not git.is_ancestor(ctx.root, target_sha, fix.end_sha):
        rec.failed_what = "merge conflict"
        raise GitError(
            f"{ctx.target} moved on and merging it into {ws.branch} conflicts in "
            f"{', '.join(conflicts)}; the fixer did not complete the merge. The branch is kept: "
            f"resolve it there (`git -C {ws.worktree} merge {ctx.target}`, then commit), "
            "then run the step again"
        )
    return fix.end_sha, (fix.agent_id,)
