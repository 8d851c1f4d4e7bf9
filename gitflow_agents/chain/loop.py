"""Implement → review → (fix → review)* → merge: one plan step on its own branch and work tree.

``run_step`` reads top to bottom: a step already done on the target is skipped; the implementer
works, then up to ``max_iterations`` review rounds, each on the step branch with the target
merged in when it moved on (a round that approved while the target moved on is reviewed again
without counting, once per plan step at most: steps that run at once land one by one); between
rounds the fixer gets every review report (``--after``).
The last action is always a review, and an agent that changed nothing ends the step (nothing to
review). Approved: the step is marked ✅ on the step branch, the branch is merged into the target
(fast-forward or a merge commit, never forced) and a git note records the verdict; with
``run --pr`` the ending is its lander's instead (``chain/lander.py``: the branch is marked
and left for a pull request). Anything else: nothing is merged and no plan is edited; the run record and the history say what
happened. The loop ends by returning an ``Ending`` or raising; the run record is written in a
``finally`` so a crash still leaves evidence (docs/chains.md, The state model).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import NamedTuple

from gitflow_agents.base.errors import BudgetError, ExitCode, GitError, interrupted_by
from gitflow_agents.chain.agents import (
    TRAILER_RUN,
    AgentFailed,
    AgentRun,
    Job,
    agent_id_for,
    lost_runs,
    nested_repositories,
    run_agent,
)
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.increment import FIRST_ROUND, after_landing
from gitflow_agents.chain.integrate import integrate, moved_on
from gitflow_agents.chain.land import carry_to_merges, finish_landed, remove_landed_tree
from gitflow_agents.chain.lander import Lander, MergeLander
from gitflow_agents.chain.ready import SetupFailed, make_ready
from gitflow_agents.chain.record import ChainResult, StepOutcome, StepRecord, record_landing
from gitflow_agents.chain.resume import fix_start, implement_start, landed_branch
from gitflow_agents.chain.review import ReviewRound, record_note, review_round
from gitflow_agents.chain.state import DONE, done_where
from gitflow_agents.chain.workspace import (
    Lost,
    Workspace,
    branch_name,
    refuse_foreign_checkout,
    reset_unless_clean,
    step_workspace,
)
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer.agent import open_finding_line
from gitflow_agents.runs import lock

FIX_PREAMBLE = """\
The review of this plan-step asked for changes. Read every report listed under "Previous Agent
Reports" and fix what they ask for, nothing more. Leave your changes uncommitted in the work tree:
gitflow-agents commits them and the step is reviewed again."""


class Ending(NamedTuple):
    """How the loop ended, when it did not raise."""

    outcome: StepOutcome
    exit_code: int
    reason: str


def run_step(ctx: Context, step: int, lander: Lander | None = None) -> ChainResult:
    """Implement → review → (fix → review)* for one plan step; merge when approved (what
    the end does with the branch is ``lander``'s: default ``MergeLander``).

    Returns the typed outcome (approved 0, rejected or nothing to review 1, agent failed 3,
    merge failed 2, skipped 0 when the step is done on the target and ``settings.force`` is
    off); other errors propagate after the run record is written. StepLockedError when the
    step is busy.
    """
    assert ctx.plan is not None
    ctx.notices.clear()
    ctx.exclude_flow_dir()  # before its lock and record, which a refusal still writes
    lander = lander or MergeLander()
    rec = StepRecord(ctx, step, lander.run_id)
    ctx.chain_run = rec.run_id
    done = done_where(ctx, step)
    if done is not None and not ctx.settings.force:
        finished = _finish_done(ctx, rec, step) if _lands_here(ctx, lander) else ""
        reason = f"step {step} is already {DONE} {done}{finished}; --force runs it again"
        rec.finish("skipped", int(ExitCode.OK), reason)
        return rec.result()
    refuse_foreign_checkout(ctx, branch_name(ctx.settings, ctx.plan.name, step))  # touch nothing
    with lock.hold_step(*_step_locks(ctx, step), rec.run_id):
        found = landed_branch(ctx, step) if _lands_here(ctx, lander) else None
        if found is not None:  # its merge landed, its ✅ did not come: finish, run no agent
            rec.finish("skipped", int(ExitCode.OK), finish_landed(ctx, step, found))
            _record_landing(ctx, step, found.tip)
            return rec.result()
        with _step_budget(ctx):
            try:
                ctx.hub.emit("harness:start", {"flow": ctx.flow, "step": step, "runID": rec.run_id})
                start = _implement(ctx, rec, step, lander)  # then the rounds, at the same depth
                ending = start if isinstance(start, Ending) else _rounds(ctx, rec, lander, start)
                rec.finish(*ending)
            except BaseException as exc:
                if not record_ending(ctx, rec, exc):
                    raise
            finally:
                result = rec.write()
                unwinding = sys.exc_info()[1]
                if isinstance(unwinding, KeyboardInterrupt):  # the caller reports it, then exits
                    unwinding.step_result = result  # type: ignore[attr-defined]
    return result


def _step_locks(ctx: Context, step: int) -> tuple[Path, Path, str, str, int]:
    """Where the step's locks are (``lock.hold_step``, ``lock.step_holder``)."""
    return ctx.root, ctx.common_dir(), ctx.config.flow_dir, ctx.flow, step


def _finish_done(ctx: Context, rec: StepRecord, step: int) -> str:
    """For a step ✅ on the target, what a run killed after its merge left of its landing:
    the approval of a merge commit (``carry_to_merges``, a note), the step's work tree,
    removed under the step's lock (``remove_landed_tree``), and that run's record
    (``_record_landing``), when its work is on the target (``landed_branch``) and no live
    run holds the step. What the reason adds: '' when no work tree was left."""
    carried = carry_to_merges(ctx, step)
    if carried is not None:
        ctx.notices.append(carried)
    found = landed_branch(ctx, step)
    if found is None or lock.step_holder(*_step_locks(ctx, step)) is not None:
        return ""  # nothing of its own left, or the tree of a live run (--force)
    with lock.hold_step(*_step_locks(ctx, step), rec.run_id):
        removed = remove_landed_tree(ctx, found)
        _record_landing(ctx, step, found.tip)
    if not removed:
        return ""
    return ", and its work tree is removed now (the run that merged it ended before)"


def _record_landing(ctx: Context, step: int, tip: str) -> None:
    """The record of the run that merged the step's branch (at ``tip``) and was killed before
    it wrote it, written now from what it kept (``record.record_landing``), with a note."""
    written = record_landing(ctx, step, tip)
    if written is not None:
        ctx.notices.append(written)


def _lands_here(ctx: Context, lander: Lander) -> bool:
    """Whether a step whose work is on the target already is finished here instead of run
    again (``finish_landed``): a run that merges (not ``run --pr``'s), and not ``--force``,
    which runs a landed step again from the target's tip."""
    return isinstance(lander, MergeLander) and not ctx.settings.force


def record_ending(ctx: Context, rec: StepRecord, exc: BaseException) -> bool:
    """Record in ``rec`` how a step run that raised ``exc`` ended (``run_step``, and
    ``chain/tend.py``'s tend of a pushed branch). True: the ending is the step's outcome (an
    agent failed, a budget, ``chain.setup``, the merge); False: the caller re-raises (Ctrl-C,
    a bug), the record saying so."""
    if isinstance(exc, AgentFailed):
        for run in exc.wave:  # the failed agent's and those that ran beside it
            rec.agents.extend(run.attempts())
        if exc.run.status == "canceled" and ctx.cancel.is_set():  # Ctrl-C in another thread
            rec.finish("canceled", int(ExitCode.INTERRUPTED), ctx.cancel.reason)
        elif exc.run.status == "canceled":  # `gitflow-agents cancel` of this agent alone
            why = f"{exc.run.agent_id} canceled ({exc.run.reason}); run again to continue"
            rec.finish("canceled", int(ExitCode.INTERRUPTED), why)
        elif exc.run.status == "budget":  # stopped at a limit; its work is on the branch
            # refused once its slot was granted: as a spent budget that started no agent
            rec.failed_what = "budget" if exc.run.refused else exc.run.kind
            rec.finish("budget", int(ExitCode.BUDGET), exc.run.reason)
        else:
            rec.failed_what = exc.run.kind
            rec.finish("failed", int(exc.exit_code), str(exc))  # 3, or 6: rate limited
    elif isinstance(exc, BudgetError):  # a spent budget: the next agent was not started
        rec.failed_what = "budget"
        rec.finish("budget", int(ExitCode.BUDGET), str(exc))
    elif isinstance(exc, SetupFailed):  # chain.setup failed in the step's work tree
        rec.setup, rec.failed_what = exc.entry, "setup"
        rec.finish("failed", int(exc.exit_code), str(exc))
    elif isinstance(exc, GitError):  # the merge (conflict, target moved, dirty checkout)
        rec.finish("failed", int(exc.exit_code), str(exc))
    elif isinstance(exc, KeyboardInterrupt):
        for run in getattr(exc, "wave", ()):  # the agents it interrupted: what they spent
            rec.agents.extend(run.attempts())
        if rec.merged is not None:  # Ctrl-C once the merge landed: the step is approved
            rec.finish("approved", int(ExitCode.OK), _interrupted_landed(rec))
        else:
            why = f"interrupted ({interrupted_by(exc)})"
            rec.finish("canceled", int(ExitCode.INTERRUPTED), why)
        return False
    else:
        code = getattr(exc, "exit_code", ExitCode.USAGE)
        rec.finish("failed", int(code), f"{type(exc).__name__}: {exc}")
        return False
    return True


def _interrupted_landed(rec: StepRecord) -> str:
    """The reason of a step run interrupted after its merge landed (``land``): approved."""
    assert rec.merged is not None
    review = f" in review {len(rec.rounds)}" if rec.rounds else ""
    return (
        f"approved{review}; interrupted after its merge landed ({rec.merged.kind} -> "
        f"{rec.merged.sha[:12]})"
    )


class Start(NamedTuple):
    """Where the review rounds of a step begin: its work tree, the head to review, and the
    agents whose reports the reviewers read."""

    ws: Workspace
    step: int
    head: str
    after: tuple[str, ...]


def _implement(ctx: Context, rec: StepRecord, step: int, lander: Lander) -> Start | Ending:
    """The step's work tree made ready and its implementer run; or, when the branch already
    holds finished work (a continued ``--pr`` branch), that work as the head to review."""
    assert ctx.plan is not None
    settings = ctx.settings
    ended: list[Lost] = []  # lost runs in its work tree, killed first: the record lists them
    ws = rec.ws = step_workspace(ctx, step, ended)
    rec.agents.extend(lost_runs(ended))
    rec.setup = make_ready(ctx, ws, rec.run_dir)  # chain.copy_ignored, chain.setup
    if lander.implemented is not None:  # the branch holds finished work: review it
        reset_unless_clean(ws, lander.implemented)
        return Start(ws, step, lander.implemented, ())
    kept = _users_work(ctx, ws)
    if kept is not None:  # commits of the user's found nowhere else: never reset away
        reset_unless_clean(ws, kept)
        return Start(ws, step, kept, ())
    builder_id = agent_id_for(settings.implementer, step)
    ctx.hub.emit("phase:start", {"phase": "implement", "step": step})
    builder = rec.add(
        run_agent(
            ctx,
            ws,
            Job(
                agent=settings.implementer,
                kind="implement",
                step=step,
                agent_id=builder_id,
                commit_message=_title(ctx, step),
                start_sha=implement_start(
                    ctx,
                    ws,
                    step,
                    settings.implementer,
                    builder_id,
                    on_branch=lander.build_on_branch,
                ),
            ),
        )
    )
    if builder.end_sha == builder.start_sha:
        return _nothing(rec, builder)
    return Start(ws, step, builder.end_sha, (builder.agent_id,))


def _users_work(ctx: Context, ws: Workspace) -> str | None:
    """The step branch's tip when the branch holds commits gitflow-agents did not make (no
    ``TRAILER_RUN``) that are on neither the target nor a remote (what ``gc`` keeps a work tree
    for): a branch the user made under the step's name, a fix committed in the step's work tree
    after a rejection. Resuming would reset the branch to where an agent started, and those
    commits would survive only in the reflog; instead the branch is the step's work as it
    stands, reviewed from the first round (the implementer does not run), as ``run --pr``
    reviews a branch it continues. A note names the commits. None: nothing of the user's."""
    assert ws.branch is not None
    found = git.unpublished_foreign(ctx.root, ws.branch, ctx.target, TRAILER_RUN)
    tip = git.branch_sha(ctx.root, ws.branch)
    if not found or tip is None:
        return None
    many = "commit" if len(found) == 1 else "commits"
    shown = "; ".join(found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
    ctx.notices.append(
        f"{ws.branch} holds {len(found)} {many} gitflow-agents did not make, on neither "
        f"{ctx.target} nor a remote ({shown}): kept, and the branch at {tip[:12]} is reviewed "
        "as the step's work (the implementer does not run)"
    )
    return tip


def _title(ctx: Context, step: int) -> str:
    assert ctx.plan is not None
    return f"[{ctx.plan.name}] Step {step}: {ctx.plan.step(step).title}"


def _rounds(ctx: Context, rec: StepRecord, lander: Lander, start: Start) -> Ending:
    """Review rounds from ``start``, each followed by the fixer while the review asks for
    changes: the last action is always a review."""
    assert ctx.plan is not None
    settings = ctx.settings
    ws, step, head, after_ids = start
    title = _title(ctx, step)
    # a round that approved while the target moved on is reviewed again after the merge without
    # counting towards max_iterations, up to once per plan step (each landing moves it once)
    iteration, counted, moved_rounds = 0, 0, len(ctx.plan.steps)
    fixed: ReviewRound | None = None  # the round a fix followed: the next reviews the fix
    whole = FIRST_ROUND  # why a round that follows no fix is reviewed whole
    while counted < settings.max_iterations:
        iteration += 1
        ctx.hub.emit("phase:start", {"phase": f"review-{iteration}", "step": step})
        ws, head, after_ids = integrate(
            ctx, rec, ws, head, step=step, iteration=iteration, after=after_ids
        )
        rec.ws = ws
        final = counted + 1 == settings.max_iterations
        with review_budget(ctx):
            review = rec.add_round(
                review_round(
                    ctx,
                    ws,
                    iteration=iteration,
                    step=step,
                    after=after_ids,
                    head=head,
                    final=final,
                    previous=fixed,
                    whole=whole,
                )
            )
        record_note(ctx, ws, review)
        if review.gate.approved:
            if _land_unless_moved(ctx, rec, ws, step, review, lander):
                return Ending("approved", int(ExitCode.OK), f"approved in review {iteration}")
            if moved_rounds > 0:
                moved_rounds -= 1
            else:
                counted += 1
            fixed, whole = None, after_landing(ctx, iteration)  # merged in: a new base
            continue  # the target moved on during the review: merge it in, review again
        counted += 1
        if counted == settings.max_iterations:
            break
        ctx.hub.emit("phase:start", {"phase": f"fix-{iteration}", "step": step})
        fix = rec.add(run_agent(ctx, ws, _fix_job(ctx, ws, step, iteration, head, review, title)))
        if fix.end_sha == head:
            return _nothing(rec, fix)
        head, after_ids, fixed = fix.end_sha, (fix.agent_id,), review
    ending = _not_approved(ctx, rec)
    if ending.outcome == "rejected":
        lander.rejected(ctx, rec, ws, step, rec.rounds[-1])
    return ending


def _land_unless_moved(
    ctx: Context, rec: StepRecord, ws: Workspace, step: int, review: ReviewRound, lander: Lander
) -> bool:
    """Land the approved ``review`` unless the target moved on during it (False: it is merged
    in and reviewed again). ``ctx.landing`` is held from the check to the merge, so steps that
    run at once (``chain/parallel.py``) land one at a time, each on a tree its review saw."""
    with ctx.landing:
        if moved_on(ctx, review.reviewed_sha) is not None:
            return False
        ctx.hub.emit("phase:start", {"phase": "land", "step": step})
        lander.approved(ctx, rec, ws, step, review)
        return True


def _fix_job(
    ctx: Context,
    ws: Workspace,
    step: int,
    iteration: int,
    head: str,
    review: ReviewRound,
    title: str,
) -> Job:
    """The fixer's job after a round that did not approve: every reviewer's report; from
    ``head``, or the work a budget stopped it in before (``resume.fix_start``)."""
    fixer = ctx.settings.fixer
    agent_id = agent_id_for(fixer, step, iteration)
    carried = [open_finding_line(f) for f in review.carried]
    preamble = FIX_PREAMBLE
    if carried:  # open from an earlier round, so in no report of this one
        preamble += "\n\nStill open from an earlier review (not repeated in the reports):\n"
        preamble += "\n".join(carried)
    return Job(
        agent=fixer,
        kind="fix",
        step=step,
        agent_id=agent_id,
        start_sha=fix_start(ctx, ws, fixer, agent_id, head),
        preamble=preamble,
        after=tuple(run.agent_id for run in review.agents),
        commit_message=f"{title} (fix {iteration})",
    )


def _step_budget(ctx: Context) -> contextlib.AbstractContextManager[None]:
    """The step run's budget scope, open while the step runs (none without a ledger)."""
    return ctx.budget.scope("step") if ctx.budget is not None else contextlib.nullcontext()


def review_budget(ctx: Context) -> contextlib.AbstractContextManager[None]:
    """A review round's budget scope (the ``review`` entry of ``budget:``): a step run's
    rounds, and the round of a tend (``chain/tend.py``)."""
    return ctx.budget.scope("review") if ctx.budget is not None else contextlib.nullcontext()


def _nothing(rec: StepRecord, run: AgentRun) -> Ending:
    """An implementer or fixer that completed without changing anything: nothing (new) to
    review, so no reviewer runs and no note is written."""
    rec.failed_what = "nothing to review"
    what = "the step" if run.kind == "implement" else "what the review asked for"
    if run.left_out:  # its only work was nested repositories, left out of its commit
        what += f" except {nested_repositories(run.left_out)}, left out of the commit"
    return Ending(
        "empty",
        int(ExitCode.REVISE),
        f"{run.agent_id} completed without changing anything for {what}: nothing to review, "
        "no approval recorded",
    )


def _not_approved(ctx: Context, rec: StepRecord) -> Ending:
    last = rec.rounds[-1]
    if last.gate.approved:  # approved, but the target moved on again during the last review
        rec.failed_what = "target moved"
        return Ending(
            "failed",
            int(ExitCode.USAGE),
            f"approved in review {len(rec.rounds)}, but {ctx.target} moved on again during "
            "it; run the step again to merge it in and review that (the work is kept on "
            f"{last.reviewed_sha[:12]})",
        )
    reasons = "; ".join(last.gate.reasons)
    return Ending(
        "rejected",
        int(ExitCode.REVISE),
        f"not approved after {len(rec.rounds)} review(s): {reasons}",
    )
