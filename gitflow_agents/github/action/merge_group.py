"""A merge queue's group, reviewed, its verdict the ``gitflow-agents/review`` status of the
group's head commit, so that status can be a required check of a merge queue.

A ``merge_group`` event has no pull request, so nothing is posted as a comment or an inline
review: the verdict is the commit status on ``merge_group.head_sha`` (``pending`` first, then
``success`` / ``failure`` / ``error``, by the rules of ``status.py``) and the optional check
run; the findings go to the annotations, the job summary, the result files and the outputs, as
for a pull request. The posting job of the two-job split (``post-findings``) sets the status
from an earlier job's findings file, gated again against the group's head. docs/github.md,
"Merge queue".
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NoReturn

from gitflow_agents.base.errors import GitHubError, InputError
from gitflow_agents.findings import GateResult, Review
from gitflow_agents.findings import gate as gate_review
from gitflow_agents.github.action import comment, reuse, status
from gitflow_agents.github.action.checkout import review_group
from gitflow_agents.github.action.publish import (
    Reviewed,
    agent_questions,
    conclude,
    failed_row,
    failed_to_start,
    failing_publish,
    fit_summary,
    load_findings,
    report_unfinished,
    result_files,
    result_outputs,
    reviewed_here,
    summary_room,
    unfinished_outputs,
    usage_outputs,
)
from gitflow_agents.github.action.runner import (
    PREFIX,
    Options,
    RunnerEnv,
    notice,
    write_outputs,
)
from gitflow_agents.github.action.status import StatusWriter, set_status
from gitflow_agents.github.api.client import Client
from gitflow_agents.github.api.identity import Identity
from gitflow_agents.github.api.values import MergeGroup
from gitflow_agents.reviewer.target import exit_code


class GroupWriter(StatusWriter):
    """The gate of a merge group's head commit."""

    where = "repository's commit statuses"

    def __init__(self, client: Client, repo: str, group: MergeGroup, target_url: str | None):
        super().__init__(client, repo, target_url)
        self.group = group
        self.reused: reuse.Reused | None = None
        """The approval the group reuses (its final status says so)."""

    @property
    def sha(self) -> str:
        return self.group.head_sha

    def final(self, result: Review, gate: GateResult, what: str = "set the final status") -> None:
        reused = self.reused
        if reused is None or not gate.approved:
            super().final(result, gate, what)
            return
        self.attempt(
            what,
            lambda: set_status(
                self.client,
                self.repo,
                self.sha,
                "success",
                reused.description,
                target_url=self.target_url,
            ),
            status=True,
        )


def no_pull_request(group: MergeGroup) -> str:
    return (
        f"This is the {group.label}: it has no pull request, so the verdict is the "
        f"`{status.CONTEXT}` status of {group.head_sha[:12]} (no summary comment, no inline "
        "review); every finding is here and in the annotations."
    )


def review_group_and_publish(
    env: RunnerEnv, client: Client, group: MergeGroup, options: Options, run_id: str
) -> int:
    """Review ``base_sha..head_sha`` of the group and set the head's status: pending first,
    then the verdict; ``error`` when the review itself breaks."""
    writer = GroupWriter(client, env.repository, group, env.run_url)
    if group.base_sha == group.head_sha:
        nothing_to_review(env, writer, run_id)
    if options.post_findings is not None:
        return post_group_findings(env, writer, options, run_id)
    try:
        writer.pending()
        found = (
            reuse.reusable(
                env.workspace,
                client,
                env.repository,
                group,
                Identity(client, options.comment_author),
            )
            if writer.degraded is None
            else "the status could not be set"
        )
    except GitHubError as exc:  # GitHub failed before the review: the outputs all the same
        failed_to_start(env, writer, exc, run_id, options.agent, group.label)
        raise
    if isinstance(found, reuse.Reused):
        return reuse_approval(env, writer, found, options, run_id)
    notices = [f"Reviewed in full, no approval reused: {found}."]
    started = time.monotonic()
    try:
        result, gate, row = review_group(env.workspace, group, options, env.temp / PREFIX)
    except Exception as exc:
        writer.failed(exc)
        # no pull request, so no summary comment: the job summary says what one would
        failed = failed_row(exc, options.agent, group.label, time.monotonic() - started)
        report_unfinished(env, group.head_sha, exc, [failed], notices)
        outputs = {"review-result": "error", "run-id": run_id, "head-sha": group.head_sha}
        write_outputs(env.output, {**outputs, **unfinished_outputs(exc, options.agent)})
        raise
    reviewed = reviewed_here(env, run_id, result, gate, [row])
    return finish_group(env, writer, reviewed, options, run_id, notices)


def reuse_approval(
    env: RunnerEnv, writer: GroupWriter, reused: reuse.Reused, options: Options, run_id: str
) -> int:
    """The group's head approved by the approval it reuses: no agent runs, the status and the
    summary say whose approval it is."""
    group = writer.group
    writer.reused = reused
    result = reused.review(group)
    gate = gate_review(result, threshold=options.threshold, head_sha=group.head_sha)
    row = comment.RunRow(
        flow="review",
        agent=f"reused #{reused.number}",
        outcome="approved" if gate.approved else "not-approved",
        step=group.label,
        tokens=0,
        input_tokens=0,
        output_tokens=0,
        cost_usd=0.0,
    )
    files = result_files(env, run_id, result, gate, [row])
    notice("notice", reused.description)
    notes = [f"{reused.description} (its tree merged onto the base is this group's tree)."]
    return finish_group(env, writer, Reviewed(result, gate, [row], files), options, run_id, notes)


def nothing_to_review(env: RunnerEnv, writer: GroupWriter, run_id: str) -> NoReturn:
    """A group whose base is its head holds no change: a review of it would pass with nothing
    read, so it is never green. The head gets an ``error`` status saying why (a merge queue
    takes the group out; GitHub itself never builds such a group), and InputError names the
    payload's key (exit 2)."""
    why = "the merge group's base and head are the same commit: nothing to review"
    writer.error(why)
    head = writer.group.head_sha
    write_outputs(env.output, {"review-result": "error", "run-id": run_id, "head-sha": head})
    raise InputError(why, path=env.event_path, key="merge_group.base_sha")


def post_group_findings(env: RunnerEnv, writer: GroupWriter, options: Options, run_id: str) -> int:
    """The posting job of the two-job split for a merge group: the findings file of the review
    job, gated again against the group's head and this job's threshold."""
    assert options.post_findings is not None
    head = writer.group.head_sha
    try:
        result, rows = load_findings(options.post_findings)
    except InputError:
        writer.error("no usable findings file from the review job")
        write_outputs(env.output, {"review-result": "error", "run-id": run_id, "head-sha": head})
        raise
    if result.reviewed_sha != head:
        reviewed = (result.reviewed_sha or "no commit")[:12]
        notice(
            "warning",
            f"{options.post_findings} is a review of {reviewed}, not of the merge group's head "
            f"{head[:12]}: it is posted, but it cannot approve this commit",
        )
    gate = gate_review(result, threshold=options.threshold, head_sha=head)
    files = {"findings-file": str(options.post_findings)}
    return finish_group(env, writer, Reviewed(result, gate, rows, files), options, run_id)


def finish_group(
    env: RunnerEnv,
    writer: GroupWriter,
    reviewed: Reviewed,
    options: Options,
    run_id: str,
    extra: Sequence[str] = (),
) -> int:
    """The final status (and the optional check run), the step summary (with the ``extra``
    notices) and the outputs; the exit code for ``options.fail_on``."""
    result, gate, rows, files = reviewed
    group = writer.group
    outputs = {**result_outputs(result, gate, group.head_sha, run_id, files), **usage_outputs(rows)}
    room = summary_room(env.step_summary)
    notices = [no_pull_request(group), *extra]

    def summary() -> str:
        body = comment.summary_body(
            result, gate, rows=rows, questions=agent_questions(result), notices=notices, limit=None
        )
        return fit_summary(body.removeprefix(comment.MARKER), room)

    with failing_publish(env, writer, outputs, summary):
        writer.final(result, gate)
    check_run_id = writer.check_run(result, gate) if options.check_run else None
    if writer.degraded:
        notices.append(f"The status was not set: {writer.degraded}")
    code = exit_code(result, gate.approved, gate.exit_code, options.fail_on)
    return conclude(env, writer, outputs, summary(), code, check_run_id=check_run_id)
