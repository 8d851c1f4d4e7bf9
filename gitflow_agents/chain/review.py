"""One review round: every reviewer on one commit, at the same time, then the gate.

A round approves only when every reviewer approves and the gate passes: verdict APPROVED, no
finding at or above the threshold, about exactly the reviewed commit (docs/findings.md, The gate;
docs/protocol.md, Review verdict). Reviewers must leave the work tree as they found it. The
verdict is recorded as a git note on the reviewed commit, which the gate hook reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gitflow_agents.chain import increment
from gitflow_agents.chain.agents import AgentRun, Job, agent_id_for, run_together
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.resume import agent_files, discard
from gitflow_agents.chain.state import plan_in_repo
from gitflow_agents.chain.workspace import Workspace, clean_leftovers, reset_unless_clean
from gitflow_agents.findings import (
    Accepted,
    Finding,
    GateResult,
    Review,
    gate,
    merge_reviews,
)
from gitflow_agents.findings.redact import redact_review
from gitflow_agents.git import queries as git
from gitflow_agents.reviewer import approval_status, empty_range, record_review, reviewed_nothing
from gitflow_agents.reviewer.builtin import diff_secrets
from gitflow_agents.reviewer.incremental import FULL, INCREMENTAL, Scope
from gitflow_agents.runs.schema import ReviewerEntry, RoundEntry

REVIEW_SCOPE = """\
It is now your job to review the changes for this plan-step: commit {head} on branch {branch},
compared with {base} (the merge-base with {target}); see them with `git diff {base} {head}`.
Do not change, stage or commit any file.

"""

REVIEW_VERDICT = """\
Your verdict is read by a program. End your report with exactly one of these lines, alone on its
line (no bold, no quotes, not inside a code block):

REVIEW_RESULT: APPROVED
REVIEW_RESULT: REVISE

Include exactly one fenced ```json block: {{"overall": "approve" | "revise", "summary": "...",
"findings": [{{"severity": "error" | "warn" | "info", "file": "...", "line": 1, "message": "..."}}],
"reviewed_sha": "{head}"}}. The verdict line and "overall" must agree. Findings of severity
{threshold} or above block the merge."""

REVIEW_PREAMBLE = REVIEW_SCOPE + REVIEW_VERDICT


@dataclass(frozen=True)
class ReviewRound:
    iteration: int | None  # None: a single review flow
    reviewed_sha: str
    agents: tuple[AgentRun, ...]
    reviews: tuple[Review, ...]
    gate: GateResult
    carried: tuple[Finding, ...] = ()  # open from an earlier round, in no report of this one

    @property
    def accepted(self) -> tuple[Accepted, ...]:
        """The findings the round's builtin reviewers accepted (docs/chains.md, "Accepting a
        finding"): counted, never part of the gate."""
        return merge_reviews(self.reviews).accepted if self.reviews else ()

    @property
    def kind(self) -> str:
        """``incremental`` when a reviewer reviewed only the fix commits, else ``full``
        ("" when no reviewer ran); each reviewer's own kind is on its review."""
        if not self.reviews:
            return ""
        return INCREMENTAL if any(r.kind == INCREMENTAL for r in self.reviews) else FULL

    def entry(self) -> RoundEntry:
        """The round as the step run's record holds it (``runs/schema.py``)."""
        return RoundEntry(
            iteration=self.iteration,
            reviewed_sha=self.reviewed_sha,
            approved=self.gate.approved,
            reasons=self.gate.reasons,
            reviewers=tuple(
                ReviewerEntry(run.agent_id, review)
                for run, review in zip(self.agents, self.reviews, strict=True)
            ),
            kind=self.kind,
        )


def review_round(
    ctx: Context,
    ws: Workspace,
    *,
    iteration: int | None,
    step: int | None,
    after: Sequence[str],
    reviewers: Sequence[str] | None = None,
    head: str | None = None,
    task: str | None = None,
    focus_paths: Sequence[str] = (),
    final: bool = False,
    previous: ReviewRound | None = None,
    whole: Scope = increment.FIRST_ROUND,
) -> ReviewRound:
    """Every reviewer on ``head`` (default: the work tree's HEAD), concurrently (separate
    processes sharing the one work tree), then the gate. ``final`` (the run's last round): a
    reviewer whose earlier review of ``head`` is reused and does not approve is asked again,
    since reusing it could only end the run as the earlier one ended (docs/chains.md,
    Resuming). ``previous``: the round of this step run a fix followed; an agent reviewer then
    reviews the fix commits (``chain/increment.py``) unless a full review is due. Without it
    every reviewer reviews the step ``whole``, the scope saying why."""
    head = head or git.head_sha(ws.worktree)
    empty = empty_range(ctx.root, ws.base_sha, head)
    if empty is not None:  # never run reviewers on no change (nor on a reverse one), never approve
        why = f"nothing to review between {ws.base_sha[:12]} and {head[:12]} ({empty})"
        return ReviewRound(iteration, head, (), (), GateResult(False, 1, (why,)))
    if ws.branch is not None:  # a crashed attempt's leftovers; an earlier run's fix is kept
        clean_leftovers(ws, head)
    names = tuple(reviewers or ctx.settings.reviewers)
    if task is None and (step is None or ctx.plan is None):
        task = f"Review the changes from {ws.base_sha} to {head}."
    _gather_secrets(ctx, ws, head)
    before = (previous.reviewed_sha, previous.agents, previous.reviews) if previous else None
    scopes = increment.scopes(ctx, ws.base_sha, head, names, before, whole)
    template = Job("", "", "review", head, step=step, after=tuple(after), task=task)
    jobs, full_jobs = _jobs(ctx, ws, template, names, scopes, iteration, focus_paths)

    def own(run: AgentRun) -> Review:
        return _focus(_read_review(ctx, run), focus_paths)

    def read(run: AgentRun, index: int) -> Review:
        return increment.whole_step(own(run), scopes[index])

    current = list(jobs)  # each reviewer's job as it last ran
    runs = run_together(ctx, ws, jobs)
    reviews = [read(run, index) for index, run in enumerate(runs)]
    threshold = ctx.settings.threshold

    # an approving incremental reviewer whose verdict only carried findings block reviews the
    # whole step: a fix may well be elsewhere than the lines a finding names (docs/chains.md)
    def widen(indices: Sequence[int]) -> None:
        stale = [
            index
            for index in indices
            if increment.carried_block(reviews[index], own(runs[index]), threshold)
        ]
        for index in stale:
            scopes[index], current[index] = increment.full_again(), full_jobs[index]
        _rerun(ctx, ws, [current[i] for i in stale], stale, runs, reviews, read, keep=True)

    widen(range(len(runs)))
    verdict = _verdict(ctx, runs, reviews, head)
    again: list[int] = []
    if final and not verdict.approved:
        again = [
            index
            for index, (run, review) in enumerate(zip(runs, reviews, strict=True))
            if run.reused
            and (run.discarded or not gate(review, threshold=threshold, head_sha=head).approved)
        ]
    if again:
        redo = [replace(current[i], reuse=False) for i in again]
        _rerun(ctx, ws, redo, again, runs, reviews, read)
        widen(again)  # asked again incrementally: a carried finding may want the whole step
        verdict = _verdict(ctx, runs, reviews, head)
    if all(run.reused for run in runs):  # no reviewer ran: the work tree is as it was
        untouched = ""
        if verdict.approved and ws.branch is not None:
            # what lands is exactly the approved commit (or its mark a refused merge left)
            reset_unless_clean(ws, _approved_mark(ctx, ws, head) or head)
    else:  # the reviewers that ran had the work tree at ``head`` (``_Attempt``)
        untouched = _untouched(ws, head)
        if untouched:
            _discard(ctx, runs, untouched)
    verdict = _refused(verdict, [r for r in (untouched, _markers(ctx, ws, head)) if r])
    carried = (
        f for run, r in zip(runs, reviews, strict=True) for f in increment.carried(r, own(run))
    )
    return ReviewRound(iteration, head, tuple(runs), tuple(reviews), verdict, tuple(carried))


def _approved_mark(ctx: Context, ws: Workspace, head: str) -> str | None:
    """The work tree's HEAD when it is the commit that marked the approved ``head`` done
    (``land.mark_done``: its one parent ``head``, its only change the plan's status, the
    approval carried to it), which an earlier run left when git refused its merge (a dirty
    checkout of the target): it lands as it is, so the command that run printed merges the
    very commit it named. None for anything else."""
    tip = git.head_sha(ws.worktree)
    rel = plan_in_repo(ctx)
    if tip == head or rel is None or git.parents(ctx.root, tip) != (head,):
        return None
    if not approval_status(ctx.root, tip)[0]:
        return None
    changed = {change.path for change in git.diff(ctx.root, git.DiffSpec(head, tip))}
    return tip if changed == {rel} else None


def _rerun(
    ctx: Context,
    ws: Workspace,
    jobs: Sequence[Job],
    indices: Sequence[int],
    runs: list[AgentRun],
    reviews: list[Review],
    read: Callable[[AgentRun, int], Review],
    *,
    keep: bool = False,
) -> None:
    """Run ``jobs`` for the reviewers at ``indices`` of ``runs`` / ``reviews`` and put their
    runs and reviews in place; ``keep``: the runs replaced stay in the record as earlier
    attempts (an incremental review followed by the whole-step one)."""
    if not jobs:
        return
    for index, run in zip(indices, run_together(ctx, ws, jobs), strict=True):
        if keep:
            run = replace(run, earlier=(*runs[index].attempts(), *run.earlier))
        runs[index], reviews[index] = run, read(run, index)


def _jobs(
    ctx: Context,
    ws: Workspace,
    template: Job,
    names: Sequence[str],
    scopes: Sequence[Scope],
    iteration: int | None,
    focus_paths: Sequence[str],
) -> tuple[list[Job], list[Job]]:
    """Each reviewer's job (the preamble of its scope: the whole step, or the fix commits)
    and the job of its whole-step review (``increment.full_again``)."""
    head = template.start_sha
    fields = {
        "head": head,
        "branch": ws.branch or "(detached)",
        "base": ws.base_sha,
        "target": ctx.target,
        "threshold": ctx.settings.threshold.value,
    }
    whole = REVIEW_PREAMBLE.format(**fields)
    verdict = REVIEW_VERDICT.format(**fields)
    focus = ""
    if focus_paths:
        focus = "\n\nFocus on these paths: " + ", ".join(f"`{p}`" for p in focus_paths) + "."
    jobs, full_jobs = [], []
    for name, scope in zip(names, scopes, strict=True):
        agent_id = agent_id_for(name, template.step, iteration)
        preamble = whole
        if scope.since is not None:
            preamble = increment.preamble(scope, head, fields["branch"], ws.base_sha, verdict)
        jobs.append(replace(template, agent=name, agent_id=agent_id, preamble=preamble + focus))
        full_jobs.append(replace(jobs[-1], agent_id=f"{agent_id}-full", preamble=whole + focus))
    return jobs, full_jobs


def _verdict(
    ctx: Context, runs: Sequence[AgentRun], reviews: Sequence[Review], head: str
) -> GateResult:
    """The gate over all reviews, not approved while a reused review is one its round
    discarded (``_discard``), as it was then; with several reviewers the reasons name the
    reviewer that asked for changes ("security: the reviewer asks for changes ...")."""
    discarded = [f"{run.agent_id} (reused): {run.discarded}" for run in runs if run.discarded]
    return _refused(_gated(ctx, runs, reviews, head), discarded)


def _refused(verdict: GateResult, reasons: Sequence[str]) -> GateResult:
    """``verdict``, not approved for ``reasons`` as well when there are any."""
    if not reasons:
        return verdict
    return GateResult(False, 1, (*verdict.reasons, *reasons), verdict.threshold)


def _gated(
    ctx: Context, runs: Sequence[AgentRun], reviews: Sequence[Review], head: str
) -> GateResult:
    """The gate over the reviews themselves (``_verdict``)."""
    threshold = ctx.settings.threshold
    if len(reviews) == 1:
        return gate(reviews[0], threshold=threshold, head_sha=head)
    verdict = gate(merge_reviews(reviews), threshold=threshold, head_sha=head)
    if verdict.approved:
        return verdict
    named = tuple(
        f"{run.agent}: {reason}"
        for run, review in zip(runs, reviews, strict=True)
        for reason in gate(review, threshold=threshold, head_sha=head).reasons
    )
    return verdict._replace(reasons=named or verdict.reasons)


def _markers(ctx: Context, ws: Workspace, head: str) -> str:
    """Conflict markers the change adds (a conflicted merge resolved badly): never approved."""
    found = git.conflict_markers(ctx.root, ws.base_sha, head)
    if not found:
        return ""
    return f"conflict markers left in {', '.join(found[:5])}"


def _gather_secrets(ctx: Context, ws: Workspace, head: str) -> None:
    """Add the exact values of the secrets ``base..head`` adds to ``ctx.secrets``, found as
    ``git agent-review`` finds them (``reviewer.builtin.diff_secrets``): the reviewers about to
    run, the fixer after them and the step's record mask them (docs/security.md, "Secrets in
    review output"). Kept for the whole run: a value a fix removes may still be quoted."""
    ctx.secrets |= diff_secrets(ws.worktree, git.DiffSpec(ws.base_sha, head))


def _read_review(ctx: Context, run: AgentRun) -> Review:
    """The reviewer's Review as its run read it (once: ``chain/agents.py``; the builtin
    reviewer's as it built it, with the findings it accepted), its texts masked (``redact``)
    like every review's, with the step's secret values: it reaches the run record, the fixer's
    prompt and, through ``/agent fix`` and ``run --pr``, GitHub."""
    review = run.review if run.review is not None else Review(None, reason="no review was read")
    return redact_review(review, ctx.secrets)


def _focus(review: Review, paths: Sequence[str]) -> Review:
    """Only findings inside ``paths`` (and those about no file) count; none given: all count."""
    if not paths:
        return review
    prefixes = tuple(p.strip("/") for p in paths)

    def inside(file: str | None) -> bool:
        return file is None or any(file == p or file.startswith(p + "/") for p in prefixes)

    return review._replace(findings=tuple(f for f in review.findings if inside(f.file)))


def _untouched(ws: Workspace, head: str) -> str:
    """Reviewers must not change the work tree: '' when they did not, else why not approved
    (changes are discarded so the next agent starts from the reviewed commit)."""
    # a nested repository is never committed (git.commit_work): not a change to the review's
    # work, and discarding keeps it (an implementer's or fixer's left out, one a reviewer cloned)
    now, dirty = git.head_and_dirty(ws.worktree, nested=False)
    moved = now != head
    if not moved and not dirty:
        return ""
    git.discard_changes(ws.worktree, head)
    if moved:
        return "a reviewer committed during the review; the commit was dropped"
    return f"a reviewer changed files during the review ({', '.join(dirty[:5])}); discarded"


def _discard(ctx: Context, runs: Sequence[AgentRun], why: str) -> None:
    """The reviews of the round's reviewers that ran are discarded (``_untouched``; which of
    them changed the work tree cannot be told): their stored meta says so (``resume.discard``),
    so a re-run that reuses one does not approve with it, and in the run's last round asks its
    reviewer again, as it does a reused review that does not approve."""
    for run in runs:
        if not run.reused:
            discard(agent_files(ctx, run.agent, run.agent_id)[0], why)


def record_note(ctx: Context, ws: Workspace, review: ReviewRound) -> None:
    """The git note on the reviewed commit: verdict, reviewed commit and tree (the hook reads it).
    None when nothing was reviewed (no reviewer ran: the reviewed commit is the base or already
    contained in it, ``review_round``): no note on a commit the chain did not produce."""
    if not review.agents or reviewed_nothing(ws.base_sha, review.reviewed_sha):
        return

    record_review(
        ctx.root,
        reviewed_sha=review.reviewed_sha,
        base_sha=ws.base_sha,
        approved=review.gate.approved,
        agent=",".join(run.agent for run in review.agents),
        threshold=ctx.settings.threshold.value,
    )
