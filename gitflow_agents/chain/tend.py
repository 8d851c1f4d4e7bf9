"""Tending a step branch that is already pushed: the target merged in, the head reviewed.

``plan tend`` (``github/pr/tend.py``) runs this for an open step pull request whose branch is
behind its target or whose head no review approved (a human pushed): no implementer; the step
branch is at ``head`` (the pull request's head, set by the caller), the target is merged into it
when it moved on (``integrate``: the chain's "target moved" round, a conflict goes to the fixer),
and one review round reviews the result, its approval note recorded on exactly that commit. The
lander marks the step ✅ (normally already there: nothing to commit). No fix round follows a
rejection: the pull request stays red for ``/agent fix`` or a human, as a rejected step's does.
The record is a step run's (result.json, history line), written in a ``finally``, so the pull
request's sticky comment draws it. docs/github.md, "Tending open step pull requests".
"""

from __future__ import annotations

from gitflow_agents.base.errors import ExitCode
from gitflow_agents.chain.agents import lost_runs
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.integrate import integrate
from gitflow_agents.chain.lander import BranchLander
from gitflow_agents.chain.loop import record_ending, review_budget
from gitflow_agents.chain.record import ChainResult, StepOutcome, StepRecord
from gitflow_agents.chain.review import record_note, review_round
from gitflow_agents.chain.workspace import (
    Lost,
    branch_name,
    refuse_foreign_checkout,
    reset_unless_clean,
    step_workspace,
)
from gitflow_agents.runs import lock


def tend_step(ctx: Context, step: int, lander: BranchLander, head: str) -> ChainResult:
    """Merge the target into the step branch at ``head`` when it moved on, then review (see the
    module doc): approved 0, rejected 1, an agent failed 3 (a budget 5, rate limited 6, as a
    step run's), an unresolved conflict 2 (the record's
    ``failedWhat`` is ``merge conflict``). StepLockedError when a run (of any checkout of the
    repository) holds the step."""
    assert ctx.plan is not None
    ctx.notices.clear()
    rec = StepRecord(ctx, step, lander.run_id)
    ctx.chain_run = rec.run_id
    refuse_foreign_checkout(ctx, branch_name(ctx.settings, ctx.plan.name, step))
    held = (ctx.root, ctx.common_dir(), ctx.config.flow_dir, ctx.flow, step, rec.run_id)
    with lock.hold_step(*held):
        try:
            ctx.hub.emit("harness:start", {"flow": ctx.flow, "step": step, "runID": rec.run_id})
            rec.finish(*_tend(ctx, rec, step, lander, head))
        except BaseException as exc:  # as a step run's: ``loop.record_ending``
            if not record_ending(ctx, rec, exc):
                raise
        finally:
            result = rec.write()
    return result


def _tend(
    ctx: Context, rec: StepRecord, step: int, lander: BranchLander, head: str
) -> tuple[StepOutcome, int, str]:
    ended: list[Lost] = []  # lost runs in its work tree, killed first: the record lists them
    ws = rec.ws = step_workspace(ctx, step, ended)
    rec.agents.extend(lost_runs(ended))
    reset_unless_clean(ws, head)
    ws, reviewed, after = integrate(ctx, rec, ws, head, step=step, iteration=1, after=())
    rec.ws = ws
    with review_budget(ctx):  # held to `budget.review` as a step run's rounds are
        review = rec.add_round(
            review_round(ctx, ws, iteration=1, step=step, after=after, head=reviewed, final=True)
        )
    record_note(ctx, ws, review)
    if review.gate.approved:
        lander.approved(ctx, rec, ws, step, review)
        return "approved", int(ExitCode.OK), f"approved {reviewed[:12]}"
    lander.rejected(ctx, rec, ws, step, review)
    reasons = "; ".join(review.gate.reasons)
    return "rejected", int(ExitCode.REVISE), f"not approved: {reasons}"
