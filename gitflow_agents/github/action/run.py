"""``gitflow-agents action``: what the composite GitHub Action runs.

Reads the runner environment (``runner.py``), decides what the event asks for (``event.py``),
runs the same review as ``git agent-review`` on the pull request's head commit
(``checkout.py``), and publishes it (``publish.py``): commit status ``pending`` first, then one
batched inline review, the sticky summary comment, and the final status; annotations and the
step summary always. A merge queue's group has no pull request: ``merge_group.py`` reviews it
and sets the status of its head commit. A push to a branch is checked by ``landed.py`` (the
tree it landed is one the tool approved). A token that may not write (fork PRs get a read-only ``GITHUB_TOKEN``)
degrades to annotations + step summary with a notice, never a crash. ``/agent fix`` runs in
``fix.py``. docs/github.md describes the action from the user's side.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from gitflow_agents.base.errors import ExitCode, GitHubError, InputError
from gitflow_agents.findings import Review
from gitflow_agents.findings import gate as gate_review
from gitflow_agents.github.action import comment
from gitflow_agents.github.action.checkout import earlier_review, review_pull
from gitflow_agents.github.action.event import decide, load_event
from gitflow_agents.github.action.fix import fix_and_publish
from gitflow_agents.github.action.fix_reply import FixRequest
from gitflow_agents.github.action.landed import check_landed
from gitflow_agents.github.action.merge_group import review_group_and_publish
from gitflow_agents.github.action.publish import (
    Publisher,
    Reviewed,
    failed_row,
    failed_to_start,
    finish,
    load_findings,
    publish_failed,
    report_interrupted,
    report_unfinished,
    reviewed_here,
    unfinished_outputs,
)
from gitflow_agents.github.action.runner import (
    PREFIX,
    Options,
    RunnerEnv,
    append_summary,
    notice,
    read_runner_env,
    run_id_for,
    write_outputs,
)
from gitflow_agents.github.api.client import (
    Client,
    GitHubForbidden,
    PullRequest,
    connect,
    settings_from_env,
)
from gitflow_agents.github.api.identity import Identity

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


def skipped(env: RunnerEnv, run_id: str, reason: str) -> int:
    notice("notice", f"nothing to do: {reason}")
    append_summary(env.step_summary, f"### {PREFIX}: skipped\n\n{reason}")
    write_outputs(env.output, {"review-result": "skipped", "run-id": run_id, "reason": reason})
    return ExitCode.OK


def run_action(environ: Mapping[str, str], options: Options) -> int:
    env = read_runner_env(environ)
    event = load_event(env.event_path)
    run_id = run_id_for(env)
    trigger = decide(env.event_name, event, env.event_path, options)
    if trigger.kind == "skip":
        return skipped(env, run_id, trigger.reason)

    client = connect(settings_from_env(environ))
    if trigger.group is not None:
        return review_group_and_publish(env, client, trigger.group, options, run_id)
    if trigger.landed is not None:
        return check_landed(env, client, trigger.landed, run_id)
    assert trigger.number is not None
    if trigger.commenter is not None:
        permission = client.permission(env.repository, trigger.commenter)
        if permission not in WRITE_PERMISSIONS:
            return skipped(
                env,
                run_id,
                f"@{trigger.commenter} asked for /agent {trigger.kind}, but only people with "
                f"write access to {env.repository} can run it (their access: {permission}). "
                "A maintainer can comment the same command.",
            )
    pull = trigger.pull or client.pulls.get(env.repository, trigger.number)
    if trigger.kind == "fix":
        if options.post_findings is not None:
            return skipped(env, run_id, "the posting job (post-findings) does not run /agent fix")
        asked = FixRequest(trigger.commenter or "", trigger.comment_id)
        return fix_and_publish(env, client, pull, options, run_id, asked)
    if pull.draft and not options.review_drafts and trigger.commenter is None:
        return skipped(env, run_id, f"PR #{pull.number} is a draft")
    if options.post_findings is not None:
        return post_findings(env, client, pull, options, run_id)
    return review_and_publish(env, client, pull, options, run_id, trigger.since)


def review_and_publish(
    env: RunnerEnv,
    client: Client,
    pull: PullRequest,
    options: Options,
    run_id: str,
    since: str = "",
) -> int:
    """Review the PR and publish: pending status, inline review, summary, final status. An
    agent reviewer builds on the review of ``since`` (a push's ``before``) that our summary
    comment records (``checkout.earlier_review``)."""
    publisher = Publisher(client, env.repository, pull, env.run_url)
    step = f"PR #{pull.number}"
    outputs = {"review-result": "error", "run-id": run_id, "head-sha": pull.head_sha}
    started = time.monotonic()
    try:
        try:
            publisher.pending()
            body = sticky_body(publisher, options)
        except GitHubError as exc:  # GitHub failed before the review: the outputs all the same
            failed_to_start(env, publisher, exc, run_id, options.agent, step)
            raise
        started = time.monotonic()
        try:
            earlier = earlier_review(body, since, options.agent)
            result, gate, row = review_pull(
                env.workspace, pull, options, env.temp / PREFIX, earlier
            )
        except Exception as exc:
            publisher.failed(exc)
            # the summary comment must not keep an earlier head's verdict: it says this one's
            # review did not complete, and what its agent spent
            failed = failed_row(exc, options.agent, step, time.monotonic() - started)
            comment_id = publish_failed(publisher, exc, [failed], options)
            report_unfinished(env, pull.head_sha, exc, [failed])
            failed_outputs = unfinished_outputs(exc, options.agent, comment_id)
            write_outputs(env.output, {**outputs, **failed_outputs})
            raise
    except KeyboardInterrupt as exc:  # a cancelled job: the summary and outputs, then 130
        took = time.monotonic() - started
        report_interrupted(env, pull.head_sha, exc, options.agent, step, took, outputs)
        raise

    reviewed = reviewed_here(env, run_id, result, gate, [row])
    state = review_state(result, options, body)
    return finish(env, publisher, reviewed, options, run_id, state=state)


def sticky_body(publisher: Publisher, options: Options) -> str | None:
    """Our summary comment's body, for the state it records; None when there is none, the
    reviewer is the builtin one (it never builds on a state), or the token may not read it."""
    if options.agent == "builtin" or publisher.degraded is not None:
        return None
    login = Identity(publisher.client, options.comment_author)
    pull = publisher.pull
    try:
        return comment.our_summary(publisher.client, publisher.repo, pull.number, login)
    except GitHubForbidden:
        return None


def review_state(result: Review, options: Options, body: str | None) -> str:
    """The summary comment's hidden record of ``result`` for the next review (none for the
    builtin reviewer, which always reviews the whole pull request)."""
    if options.agent == "builtin":
        return ""
    return comment.state_line(result, options.agent, comment.recorded_states(body or ""))


def post_findings(
    env: RunnerEnv, client: Client, pull: PullRequest, options: Options, run_id: str
) -> int:
    """The posting job of the two-job split: publish a findings file an earlier job (with a
    read-only token) produced. No review runs and no pending status is set; the verdict is
    gated again here, against this PR's head commit and this job's threshold."""
    assert options.post_findings is not None
    publisher = Publisher(client, env.repository, pull, env.run_url)
    try:
        result, rows = load_findings(options.post_findings)
    except InputError:
        publisher.error("no usable findings file from the review job")
        write_outputs(env.output, {"review-result": "error", "run-id": run_id})
        raise
    if result.reviewed_sha != pull.head_sha:
        reviewed = (result.reviewed_sha or "no commit")[:12]
        notice(
            "warning",
            f"{options.post_findings} is a review of {reviewed}, not of the PR head "
            f"{pull.head_sha[:12]}: it is posted, but it cannot approve this commit",
        )
    gate = gate_review(result, threshold=options.threshold, head_sha=pull.head_sha)
    files = {"findings-file": str(options.post_findings)}
    body = sticky_body(publisher, options)
    state = review_state(result, options, body)
    return finish(env, publisher, Reviewed(result, gate, rows, files), options, run_id, state=state)
