"""``/agent fix``: the fixer on the PR's own branch, pushed, and the new head reviewed.

From a writer, on a PR whose branch is in this repository: review the head, run the base
branch's fixer on it (``fixer.py``), push its commit to the PR's branch (never forced), review
the new head in the same job (a push made with ``GITHUB_TOKEN`` starts no workflow run), publish
that review and reply to the comment (``fix_reply.py``); docs/github.md, "Fix on request
(`/agent fix`)".
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from gitflow_agents import render
from gitflow_agents.base.errors import ExitCode, GitflowError, GitHubError, UsageError
from gitflow_agents.base.redact import redact_text
from gitflow_agents.findings import GateResult, Review
from gitflow_agents.git import queries as git
from gitflow_agents.github.action import comment
from gitflow_agents.github.action.checkout import review_pull
from gitflow_agents.github.action.fix_reply import (
    FIX_MARKER,
    HEADS,
    FixRequest,
    fix_reply,
    post_reply,
    reply_head,
    rerun_line,
)
from gitflow_agents.github.action.fixer import FixerFailed, FixRun, review_report, run_fixer
from gitflow_agents.github.action.publish import (
    Publisher,
    Reviewed,
    failed_row,
    failed_to_start,
    finish,
    outcome_label,
    publish_failed,
    report_unfinished,
    result_files,
    usage_outputs,
)
from gitflow_agents.github.action.runner import (
    PREFIX,
    Options,
    RunnerEnv,
    append_summary,
    notice,
    write_outputs,
)
from gitflow_agents.github.action.status import failure_reason
from gitflow_agents.github.api.client import Client, PullRequest
from gitflow_agents.render.markdown import escape
from gitflow_agents.runs.spend import Spend

_PUSH_FORBIDDEN = re.compile(r"\b403\b|permission to .* denied|not allowed to push", re.I)


@dataclass(frozen=True)
class FixOutcome:
    """What ``/agent fix`` did, and the review to publish for it."""

    result: str
    """``pushed``, ``nothing-to-fix``, ``no-changes``, ``fixer-failed``, ``branch-moved`` or
    ``push-refused`` (the ``fix-result`` output)."""
    message: str
    review: Review
    """The review to publish: of the new head after a push, else of the head the fixer saw."""
    gate: GateResult
    rows: tuple[comment.RunRow, ...]
    before: Review | None = None
    """The review the fixer worked from, when its fix was pushed."""
    fix_sha: str | None = None
    exit_code: int | None = None
    """None: the published review's exit code (``fail-on``)."""
    publish: bool = True
    """False when the branch moved on: the review is no longer about the PR's head."""


@dataclass
class FixProgress:
    """How far ``_fix`` got, kept as it goes: when a step raises (a review stopped by its
    budget or rate limited…), the error path still knows the rows of the steps that ended, the
    fix commit and whether it is on the PR's branch, and so tells what was done and spent."""

    step: str = "review"
    """``review`` (of the PR's head), ``fix`` (the fixer and its push) or ``re-review`` (of the
    pushed head): the step that is running."""
    started: float = field(default_factory=time.monotonic)
    """When that step started: the row of a review that ends in an error has its time."""
    rows: list[comment.RunRow] = field(default_factory=list)
    """The run-history rows of the steps that ended."""
    fix_sha: str | None = None
    pushed: str = ""
    """What was pushed (the ``pushed`` outcome's message); "" while nothing was."""

    def next(self, step: str, row: comment.RunRow) -> None:
        """``row`` ended its step; ``step`` starts now."""
        self.rows.append(row)
        self.step, self.started = step, time.monotonic()


_FIXER_EXIT = {"budget": ExitCode.BUDGET, "rate_limited": ExitCode.RATE_LIMITED}
"""The exit code of a fixer that did not complete, by its agent run's outcome: a budget or a
model API that refused it longer than the wait has its own code, as for any command; else 3."""


def _refusal(branch: str, pushed: git.PushResult) -> str:
    """Why the remote refused a push: the branch moved on, or a hint and git's own words."""
    if pushed.moved:
        return f"{branch} moved on (someone pushed to it)"
    hint = (
        "the job's token may not push to the repository: give the job that runs /agent fix "
        "`permissions: contents: write` (and keep actions/checkout's persisted credentials)"
        if _PUSH_FORBIDDEN.search(pushed.detail)
        else "the remote refused the push (a protected branch or a server-side hook?)"
    )
    return f"{hint} ({pushed.detail})"


def _fetch_branch(root: Path, sha: str, branch: str) -> None:
    """Make sure commit ``sha`` (the tip of ``branch`` on origin) is in the checkout."""
    with contextlib.suppress(UsageError):
        git.rev_parse(root, sha)
        return
    git.fetch_ref(root, f"refs/heads/{branch}")
    git.rev_parse(root, sha)  # UsageError naming the commit when it is still not there


def _fix_row(
    root: Path,
    options: Options,
    pull: PullRequest,
    outcome: str,
    run: FixRun | None,
    started: float,
    spend: Spend,
) -> comment.RunRow:
    """The fixer's row of the run history: its changes, its time, what it spent."""
    stats = git.numstat(root, git.DiffSpec(pull.head_sha, run.sha)) if run and run.sha else {}
    return comment.RunRow(
        flow="fix",
        agent=options.fixer,
        outcome=outcome,
        step=f"PR #{pull.number}",
        iterations=1,
        files_changed=len(stats),
        insertions=sum(a or 0 for a, _ in stats.values()),
        deletions=sum(d or 0 for _, d in stats.values()),
        duration_s=run.duration_s if run else time.monotonic() - started,
        **comment.usage_fields(spend),
    )


def fix_and_publish(
    env: RunnerEnv,
    client: Client,
    pull: PullRequest,
    options: Options,
    run_id: str,
    asked: FixRequest,
) -> int:
    """``/agent fix`` from a writer (``asked``): review the PR's head, run the fixer on it, push
    the fix to the PR's branch (never forced), review the new head in this same job (a push
    made with ``GITHUB_TOKEN`` starts no workflow run) and publish that; reply to the
    comment."""
    publisher = Publisher(client, env.repository, pull, env.run_url)
    if pull.is_fork:
        where = pull.head_repo or "a fork that was deleted"
        why = (
            f"/agent fix pushes its commit to the pull request's branch, and PR #{pull.number} "
            f"comes from {where}: this workflow's token cannot push there. Ask the author to "
            "apply the review's findings, or run `gitflow-agents flow fix` on a copy of the "
            "branch yourself."
        )
        return _not_run(env, publisher, options, run_id, asked, "refused", why, ExitCode.OK)
    root = git.repo_root(env.workspace)
    branch = git.check_branch_name(root, pull.head_ref)
    tip = git.remote_branch_sha(root, branch)
    if tip != pull.head_sha:
        why = (
            f"the branch {branch} is at {(tip or 'nothing')[:12]} on origin, not at the PR's "
            f"head {pull.head_sha[:12]}: it moved on since (a new push gets its own review). "
            "Nothing was changed; comment /agent fix again to fix the new head."
        )
        return _not_run(env, publisher, options, run_id, asked, "branch-moved", why, ExitCode.USAGE)

    probe = git.push_branch(root, pull.head_sha, branch, dry_run=True)
    if not probe.ok and not probe.moved:  # a token that may not push: do not run the fixer
        why = f"cannot push to {branch}, so the fixer was not run: {_refusal(branch, probe)}"
        return _not_run(
            env, publisher, options, run_id, asked, "push-refused", why, ExitCode.GITHUB
        )

    try:
        publisher.pending()
    except GitHubError as exc:  # GitHub failed before anything ran: the outputs all the same
        step = f"PR #{pull.number}"
        extra = {"fix-result": "error", "fix-sha": ""}
        failed_to_start(env, publisher, exc, run_id, options.agent, step, extra)
        raise
    progress = FixProgress()
    try:
        outcome = _fix(env, publisher, options, root, branch, progress)
    except Exception as exc:
        _publish_error(env, publisher, exc, progress, options, run_id, asked)
        raise
    return _publish_fix(env, publisher, outcome, options, run_id, asked)


def _publish_error(
    env: RunnerEnv,
    publisher: Publisher,
    exc: Exception,
    progress: FixProgress,
    options: Options,
    run_id: str,
    asked: FixRequest,
) -> None:
    """``/agent fix`` ended in ``exc`` (the caller raises it on: its exit code stands) after
    ``progress``. The head (the pushed one, once the fix is on the branch) gets the error
    status, and the summary comment says its review did not complete, with every row so far
    (the first review's, the fixer's, and the failed step's when its agent ran: what it
    spent); the reply, the job summary and an annotation say what was done (a pushed fix
    stays pushed) and why the run stopped; the outputs sum what the rows know was spent."""
    publisher.failed(exc)
    pull, rows = publisher.pull, list(progress.rows)
    if isinstance(exc, GitflowError) and exc.spent is not None:
        took = time.monotonic() - progress.started
        row = failed_row(exc, options.agent, f"PR #{pull.number}", took)
        # a fixer that did not complete is an outcome (``fixer-failed``), not an error: one
        # that raises all the same has its row as the fixer's
        if progress.step == "fix":
            row = dataclasses.replace(row, flow="fix", agent=options.fixer)
        rows.append(row)
    comment_id = publish_failed(publisher, exc, rows, options)
    why = redact_text(failure_reason(exc))
    if progress.pushed:
        what = "⚠️ fix pushed, its review did not complete"
        message = (
            f"{progress.pushed} The review of the new head {pull.head_sha[:12]} did not "
            f"complete, so it is not approved: {why}"
        )
    elif progress.step == "review":
        what = "❌ the review did not complete"
        message = (
            f"the review of {pull.head_sha[:12]} did not complete: {why}. The fixer was not "
            "run; nothing was pushed."
        )
    else:
        what = "❌ did not complete"
        message = f"the fix did not complete: {why}. Nothing was pushed."
    run_link = f"\n\n[workflow run]({publisher.target_url})" if publisher.target_url else ""
    reply = reply_head(asked.commenter, what) + escape(message) + run_link + "\n"
    # the job summary: the reply, then what the summary comment says (did not complete, why,
    # and the run history: every row so far, with what each spent)
    lead = [reply.removeprefix(FIX_MARKER).strip("\n")]
    report_unfinished(env, pull.head_sha, exc, rows, lead=lead, annotation=f"/agent fix: {message}")
    outputs = {
        "review-result": "error",
        "fix-result": "pushed" if progress.pushed else "error",
        "fix-sha": progress.fix_sha or "",
        "run-id": run_id,
        "head-sha": pull.head_sha,
        "inline-posted": "0",
        "comment-id": "" if comment_id is None else str(comment_id),
    }
    write_outputs(env.output, {**outputs, **(usage_outputs(rows) if rows else {})})
    rerun = rerun_line(env.run_attempt, what, message)
    post_reply(publisher, reply, asked, options.comment_author, rerun)


def _not_run(
    env: RunnerEnv,
    publisher: Publisher,
    options: Options,
    run_id: str,
    asked: FixRequest,
    result: str,
    why: str,
    code: ExitCode,
) -> int:
    """``/agent fix`` stopped before anything ran: reply, notice, job summary, outputs. No
    status is touched (nothing about the head changed)."""
    post_reply(
        publisher,
        reply_head(asked.commenter, "not run") + escape(why),
        asked,
        options.comment_author,
        rerun_line(env.run_attempt, "not run", why),
    )
    append_summary(env.step_summary, f"### {PREFIX}: /agent fix not run\n\n{escape(why)}")
    if code == ExitCode.OK:
        notice("notice", f"nothing to do: {why}")
    else:
        notice("error", f"/agent fix: {why}")
    outputs = {"review-result": "skipped", "fix-result": result, "run-id": run_id, "reason": why}
    write_outputs(env.output, outputs)
    return code


def _fix(
    env: RunnerEnv,
    publisher: Publisher,
    options: Options,
    root: Path,
    branch: str,
    progress: FixProgress,
) -> FixOutcome:
    """Review → fixer → push → review of the new head, kept in ``progress`` as it goes. After
    the push ``publisher`` writes to the new head (its ``pull`` is switched), so a failure
    from then on marks the new head."""
    pull, scratch = publisher.pull, env.temp / PREFIX
    _fetch_branch(root, pull.head_sha, branch)
    progress.started = time.monotonic()
    first = review_pull(env.workspace, pull, options, scratch)
    before, gate_before, row_before = first
    if gate_before.approved:
        return FixOutcome(
            "nothing-to-fix",
            f"the review of {pull.head_sha[:12]} approves it: nothing to fix, nothing pushed.",
            before,
            gate_before,
            (row_before,),
        )
    progress.next("fix", row_before)
    started = progress.started
    try:
        run = run_fixer(root, pull, review_report(before, gate_before), options, scratch)
    except FixerFailed as exc:
        status, reason = exc.run.status, exc.run.reason or ""
        why = reason if reason.startswith(f"{status}:") else f"{status}: {reason}"
        return FixOutcome(
            "fixer-failed",
            f"the fixer {options.fixer} did not complete ({why}); nothing was pushed.",
            before,
            gate_before,
            # its row's outcome is the agent run's own (``budget``, ``failed``, ``stuck``…), as
            # a step pull request's run history shows it (docs/configuration.md, "budget")
            (row_before, _fix_row(root, options, pull, status, None, started, exc.spend)),
            exit_code=_FIXER_EXIT.get(status, ExitCode.AGENT_FAILED),
        )
    if run.sha is None:
        return FixOutcome(
            "no-changes",
            f"the fixer {options.fixer} completed without changing anything; nothing was pushed.",
            before,
            gate_before,
            (row_before, _fix_row(root, options, pull, "no changes", run, started, run.spend)),
        )
    return _push_and_review(env, publisher, options, root, branch, first, run, progress)


def _push_and_review(
    env: RunnerEnv,
    publisher: Publisher,
    options: Options,
    root: Path,
    branch: str,
    first: tuple[Review, GateResult, comment.RunRow],
    run: FixRun,
    progress: FixProgress,
) -> FixOutcome:
    """Push the fix commit (never forced); once it is on the branch, the previous head gets its
    own review's final status and the new head is reviewed in this job."""
    assert run.sha is not None
    pull, scratch, started = publisher.pull, env.temp / PREFIX, progress.started
    before, gate_before, row_before = first
    progress.fix_sha = run.sha
    pushed = git.push_branch(root, run.sha, branch)
    if not pushed.ok:
        result = "branch-moved" if pushed.moved else "push-refused"
        reason = _refusal(branch, pushed)
        message = (
            f"{reason} while the fixer worked, so the fix {run.sha[:12]} was not "
            "pushed: nothing is ever force-pushed. Comment /agent fix again to fix the new head."
            if pushed.moved
            else f"the fix {run.sha[:12]} was not pushed to {branch}: {reason}"
        )
        return FixOutcome(
            result,
            message,
            before,
            gate_before,
            (row_before, _fix_row(root, options, pull, result, run, started, run.spend)),
            fix_sha=run.sha,
            exit_code=ExitCode.USAGE if pushed.moved else ExitCode.GITHUB,
            publish=not pushed.moved,
        )
    fix_row = _fix_row(root, options, pull, "pushed", run, started, run.spend)
    progress.pushed = (
        f"pushed {run.sha[:12]} to {branch}: the changes of the fixer agent "
        f"{options.fixer} (run {run.run_id})."
    )
    progress.next("re-review", fix_row)
    old_head = pull.head_sha
    publisher.final(before, gate_before, "set the final status of the previous head")
    # Pushes made with GITHUB_TOKEN start no workflow run: the new head is reviewed right here.
    publisher.replaced.add(old_head)
    publisher.pull = dataclasses.replace(pull, head_sha=run.sha)
    publisher.pending()
    after, gate_after, row_after = review_pull(env.workspace, publisher.pull, options, scratch)
    return FixOutcome(
        "pushed",
        progress.pushed,
        after,
        gate_after,
        (row_before, fix_row, row_after),
        before=before,
        fix_sha=run.sha,
    )


def _publish_fix(
    env: RunnerEnv,
    publisher: Publisher,
    outcome: FixOutcome,
    options: Options,
    run_id: str,
    asked: FixRequest,
) -> int:
    """Publish the outcome's review (sticky comment, inline findings, status), then reply."""
    extra = {"fix-result": outcome.result, "fix-sha": outcome.fix_sha or ""}
    reply = fix_reply(outcome, asked.commenter, publisher.target_url)
    append_summary(env.step_summary, reply.removeprefix(FIX_MARKER))
    ok = outcome.result in ("pushed", "nothing-to-fix")
    notice("notice" if ok else "error", f"/agent fix: {outcome.message}")
    review_, gate_, rows = outcome.review, outcome.gate, outcome.rows
    files = result_files(env, run_id, review_, gate_, rows)
    if outcome.publish:
        sys.stdout.write(render.render(review_, gate_, "annotations"))
        sys.stdout.flush()
        reviewed = Reviewed(review_, gate_, rows, files)
        code = finish(env, publisher, reviewed, options, run_id, extra)
    else:
        # The branch moved on: this review is about a commit that is no longer the PR's head,
        # so only its own status is set (no longer pending); the summary stays the new head's.
        publisher.final(review_, gate_)
        write_outputs(
            env.output,
            {
                "review-result": outcome_label(review_, gate_),
                **files,
                **extra,
                "run-id": run_id,
                "head-sha": publisher.pull.head_sha,
                "findings-count": str(len(review_.findings)),
            },
        )
        code = ExitCode.USAGE
    post_reply(publisher, reply, asked, options.comment_author, _rerun(env, outcome))
    return outcome.exit_code if outcome.exit_code is not None else code


def _rerun(env: RunnerEnv, outcome: FixOutcome) -> str | None:
    """The line a re-run adds to a reply that records an earlier attempt's pushed fix."""
    what = HEADS.get(outcome.result, outcome.result)
    detail = outcome.message
    if outcome.result == "nothing-to-fix":  # the head it reviewed is the fixed one, likely
        detail = f"the review of {(outcome.review.reviewed_sha or '')[:12]} approves it."
    return rerun_line(env.run_attempt, what, detail)
