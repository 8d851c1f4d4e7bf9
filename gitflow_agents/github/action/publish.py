"""Publishing a review to the pull request, and the result files a job leaves behind.

``Publisher`` writes (statuses, the batched inline review, the sticky summary comment, the
optional check run) until GitHub refuses the token; from then on it only notes what it could not
do: fork PRs get a read-only ``GITHUB_TOKEN``, and the results still reach the annotations and
the job summary. ``finish`` publishes and writes the step summary and outputs; the result files
(``findings.json``, ``findings.sarif``) carry a review from a read-only job to a posting job.
docs/github.md, "Fork pull requests" and "The two-job split".

The newest head wins: just before publishing, the PR's head is read again. A run about an
older head (a re-run of an old workflow run) posts no inline review, only adds its row to the
run history of the summary comment (whose verdict stays the newer head's), and sets the
status of its own commit, which no merge gate of the PR looks at; docs/github.md, "The newest
head wins".
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from gitflow_agents import render
from gitflow_agents.base.camel import camel_json
from gitflow_agents.base.errors import BudgetError, GitflowError, GitHubError, InputError
from gitflow_agents.base.fsutil import write_text_atomic as write_atomic
from gitflow_agents.base.redact import redact_text
from gitflow_agents.findings import (
    GateResult,
    Overall,
    Review,
    Severity,
    count_by_severity,
    review_from_dict,
)
from gitflow_agents.findings.redact import redact_review
from gitflow_agents.github.action import comment, review, threads
from gitflow_agents.github.action.runner import (
    PREFIX,
    Options,
    RunnerEnv,
    append_summary,
    github_failed,
    notice,
    read_json,
    write_outputs,
)
from gitflow_agents.github.action.status import StatusWriter, failure_reason
from gitflow_agents.github.api.client import Client, Comment, GitHubForbidden, PullRequest
from gitflow_agents.github.api.identity import Identity
from gitflow_agents.github.pr.publish import clear_changes_label
from gitflow_agents.reviewer.target import exit_code
from gitflow_agents.runs.spend import NOTHING, Spend, run_spend

T = TypeVar("T")
STEP_SUMMARY_LIMIT = 1024 * 1024
"""GitHub drops a step's whole job summary when it is larger than this (bytes)."""


class Publisher(StatusWriter):
    """A pull request's writer: its head's gate, and (``publish``) its inline review and
    sticky summary comment."""

    def __init__(self, client: Client, repo: str, pull: PullRequest, target_url: str | None):
        super().__init__(client, repo, target_url)
        self.pull = pull
        self.replaced: set[str] = set()
        """Heads this run replaced by pushing (``/agent fix``): GitHub may still show them as
        the PR's head for a moment, and they are older than ours."""

    @property
    def sha(self) -> str:
        return self.pull.head_sha


@dataclass(frozen=True)
class Published:
    inline: review.InlineOutcome
    sticky: comment.StickyResult | None
    degraded: str | None
    check_run_id: int | None = None
    newer_head: str | None = None
    """The PR's head when it is no longer the reviewed commit (this run was about an older one)."""


def current_pull(publisher: Publisher) -> PullRequest | None:
    """The PR as GitHub has it now; None when the token may not read it (or write at all)."""
    if publisher.degraded is not None:
        return None
    try:
        return publisher.client.pulls.get(publisher.repo, publisher.pull.number)
    except GitHubForbidden:
        return None


def newer_head(publisher: Publisher, current: PullRequest | None) -> str | None:
    """The PR's head now (``current``), when it is another commit than the one this run is
    about (and not one this run replaced); None otherwise, and when it is not known."""
    if current is None:
        return None
    ours = publisher.pull.head_sha
    return None if current.head_sha in (ours, *publisher.replaced) else current.head_sha


def publish(
    publisher: Publisher,
    result: Review,
    gate: GateResult,
    *,
    login: str | Identity,
    rows: Sequence[comment.RunRow],
    options: Options,
    where: str = comment.IN_JOB_SUMMARY,
    state: str = "",
) -> Published:
    pull, client, repo = publisher.pull, publisher.client, publisher.repo
    current = current_pull(publisher)
    newer = newer_head(publisher, current)
    if isinstance(login, Identity) and publisher.degraded is None:
        login.settle(lambda: comment.marked_comments(client, repo, pull.number))
    inline = review.InlineOutcome(summary_only=result.findings)
    fixed_note = ""
    if publisher.degraded is None and newer is None:
        files = review.readable_files(client, repo, pull.number)
        posted = publisher.attempt(
            "post inline comments",
            lambda: review.post_inline(
                client,
                repo,
                pull.number,
                pull.head_sha,
                result.findings,
                files,
                login=login,
                max_inline=options.max_inline,
            ),
        )
        inline = posted or inline
        publisher.inline_posted = len(inline.posted)
        if publisher.degraded is None:
            fixed_note = close_threads(publisher, result, login, inline.seen)
    body = comment.summary_body(
        result,
        gate,
        rows=rows,
        questions=agent_questions(result),
        inline_note="\n\n".join(filter(None, [review.inline_note(inline), fixed_note])),
        notices=[superseded(pull, newer)] if newer else [],
        footer=comment.footer(pull, publisher.target_url),
        where=where,
        state=state,
    )

    sticky = publisher.attempt(
        "update the summary comment",
        lambda: write_summary(publisher, body, rows, newer=newer, login=login),
    )
    publisher.comment_id = sticky.comment_id if sticky else None
    publisher.final(result, gate)
    if gate.approved and newer is None and current is not None:
        publisher.attempt(
            "remove the changes-requested label", lambda: clear_changes_label(client, repo, current)
        )
    check_run_id = publisher.check_run(result, gate) if options.check_run else None
    return Published(inline, sticky, publisher.degraded, check_run_id, newer)


def write_summary(
    publisher: Publisher,
    body: str,
    rows: Sequence[comment.RunRow],
    *,
    newer: str | None,
    login: str | Identity,
) -> comment.StickyResult:
    """Our summary comment becomes ``body``; a run about an older head (the PR's is ``newer``)
    only adds its ``rows`` to the run history, each marked with the head it was about."""
    client, repo, pull = publisher.client, publisher.repo, publisher.pull
    if newer is None:
        return comment.upsert_summary(client, repo, pull.number, body, login=login)
    head = pull.head_sha[:12]
    old = [dataclasses.replace(r, step=f"{r.step or '—'} · {head}") for r in rows]
    return comment.add_history(client, repo, pull.number, old, login=login, body_if_none=body)


def failed_row(exc: BaseException, agent: str, step: str, duration_s: float) -> comment.RunRow:
    """The run-history row of a review that ended in ``exc``: the outcome of the agent run it
    stopped (``budget``, ``failed``, ``rate_limited``…) and what that run spent; ``budget``
    for a budget that let no agent start; ``error`` for anything else (nothing known spent)."""
    ours = exc if isinstance(exc, GitflowError) else None
    outcome = ours.outcome if ours is not None and ours.outcome else None
    if outcome is None and isinstance(exc, KeyboardInterrupt):
        outcome = "canceled"  # as the run record says of an interrupted agent
    outcome = outcome or ("budget" if isinstance(exc, BudgetError) else "error")
    spend = _spent_before(exc, agent)
    usage = comment.usage_fields(spend) if spend is not None else {}
    return comment.RunRow(
        "review", agent, outcome, step=step, iterations=1, duration_s=duration_s, **usage
    )


def _spent_before(exc: BaseException, agent: str) -> Spend | None:
    """What ``agent``, the reviewer of a review that ended in ``exc``, spent: what it said
    (``spent``; nothing when the review stopped before it started, ``checkout.before_agent``),
    or nothing at all, which is known (0, $0), when a spent budget started none or the
    reviewer is the builtin one (it calls no model); None when nothing is known."""
    if isinstance(exc, GitflowError) and exc.spent is not None:
        return run_spend(exc.spent)
    return NOTHING if isinstance(exc, BudgetError) or agent == "builtin" else None


def publish_failed(
    publisher: Publisher, exc: BaseException, rows: Sequence[comment.RunRow], options: Options
) -> int | None:
    """After the error status (``publisher.failed``): our summary comment says the review of
    the head did not complete (``comment.unfinished_body``: why, and ``rows``, what it spent),
    so it never keeps an earlier head's verdict (an approval) as if it were this head's; the
    hidden record of the earlier reviews stays, for the next, incremental review. A run about
    an older head only adds its rows, as any such run does. Best effort: the run is already
    failing, and a second failure must not hide the first. The summary comment's id (the
    ``comment-id`` output); None when it was not written."""
    pull, client, repo = publisher.pull, publisher.client, publisher.repo

    def write() -> comment.StickyResult:
        newer = newer_head(publisher, current_pull(publisher))
        login = Identity(client, options.comment_author)
        login.settle(lambda: comment.marked_comments(client, repo, pull.number))
        body = comment.unfinished_body(
            pull.head_sha,
            failure_reason(exc),
            rows=rows,
            footer=comment.footer(pull, publisher.target_url),
            state=comment.state_of(comment.our_summary(client, repo, pull.number, login)),
        )
        return write_summary(publisher, body, rows, newer=newer, login=login)

    try:
        sticky = publisher.attempt("update the summary comment", write)
    except GitflowError as error:
        notice("warning", f"the summary comment was not updated: {error}")
        return None
    return sticky.comment_id if sticky else None


def report_unfinished(
    env: RunnerEnv,
    sha: str,
    exc: BaseException,
    rows: Sequence[comment.RunRow],
    notices: Sequence[str] = (),
    *,
    lead: Sequence[str] = (),
    annotation: str | None = None,
) -> None:
    """A review of ``sha`` that ended in ``exc``, where a workflow run's page shows it: the
    job summary says it did not complete, why, and what it spent (``rows``; ``lead`` before,
    ``notices`` after), as the summary comment does, and an ``::error`` annotation says why
    (``annotation``: what a caller says instead, ``/agent fix``'s what was done). The error
    line on stderr alone is only in the step's log."""
    why = failure_reason(exc)
    body = comment.unfinished_body(sha, why, rows=rows).removeprefix(comment.MARKER)
    append_summary(env.step_summary, "\n\n".join([*lead, body.strip("\n"), *notices]))
    said = annotation or f"the review of {sha[:12]} did not complete: {redact_text(why)}"
    notice("error", said)


def unfinished_outputs(
    exc: BaseException, agent: str, comment_id: int | None = None
) -> dict[str, str]:
    """The outputs of a review that ended in ``exc`` besides ``review-result`` and the ids:
    what its agent spent (``failed_outputs``), no inline comment, and the summary comment
    that says it did not complete (``comment_id``; empty without one, as for a merge group)."""
    return {
        **failed_outputs(exc, agent),
        "inline-posted": "0",
        "comment-id": "" if comment_id is None else str(comment_id),
    }


def close_threads(
    publisher: Publisher,
    result: Review,
    login: str | Identity,
    comments: Sequence[Comment] | None,
) -> str:
    """Resolve the threads of fixed findings (``threads.close_fixed``; ``comments``: the review
    comments the inline step read); the summary comment's line about them. GitHub failing here
    (after its retries) only costs that line: the verdict is published all the same."""
    pull = publisher.pull
    try:
        closed = threads.close_fixed(
            publisher.client,
            publisher.repo,
            pull.number,
            pull.head_sha,
            result,
            login=login,
            comments=comments,
        )
    except GitHubError as exc:
        notice("warning", f"the threads of fixed findings were not closed: {exc}")
        return ""
    publisher.writes += closed.resolved + closed.replied
    return threads.threads_note(closed)


def superseded(pull: PullRequest, newer: str) -> str:
    return (
        f"This run reviewed {pull.head_sha[:12]}, which is no longer the head of PR "
        f"#{pull.number} (now {newer[:12]}): the summary comment keeps the newer head's "
        "verdict and only gained this run's row in its run history; no inline comments were "
        "posted."
    )


def agent_questions(result: Review) -> list[str]:
    raw = result.run.get("questions") if isinstance(result.run, dict) else None
    return [str(q) for q in raw] if isinstance(raw, list) else []


def outcome_label(result: Review, gate: GateResult) -> str:
    if gate.approved:
        return "approved"
    return "revise" if result.overall is Overall.REVISE else "not-approved"


def write_result_files(
    directory: Path, result: Review, gate: GateResult, rows: Sequence[comment.RunRow] = ()
) -> tuple[Path, Path]:
    """``findings.json`` (the JSON renderer's output, plus ``runHistory``: the rows of the
    run-history table, so a posting job can show them) and ``findings.sarif``."""
    directory.mkdir(parents=True, exist_ok=True)
    findings_file = directory / "findings.json"
    sarif_file = directory / "findings.sarif"
    data = json.loads(render.render(result, gate, "json"))
    data["runHistory"] = [camel_json(row, duration_s="durationSeconds") for row in rows]
    write_atomic(findings_file, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    write_atomic(sarif_file, render.render(result, gate, "sarif"))
    return findings_file, sarif_file


def result_files(
    env: RunnerEnv, run_id: str, result: Review, gate: GateResult, rows: Sequence[comment.RunRow]
) -> dict[str, str]:
    """``write_result_files`` in the job's folder for ``run_id``; the outputs naming them."""
    findings, sarif = write_result_files(env.temp / PREFIX / run_id, result, gate, rows)
    return {"findings-file": str(findings), "sarif-file": str(sarif)}


def load_findings(path: Path) -> tuple[Review, list[comment.RunRow]]:
    """A findings file written by ``write_result_files`` (by an earlier job): the review and
    its run-history rows. InputError naming the file and key when it is unusable. Its ``gate``
    section is ignored: the posting job gates again with its own threshold. Its texts are
    masked again (``redact``): the file comes from another job."""
    data = read_json(path, "findings file")
    try:
        result = redact_review(review_from_dict(data))
    except ValueError as exc:
        raise InputError(f"not a findings file: {exc}", path=path) from None
    raw_rows = data.get("runHistory")
    rows = (
        [_row(item) for item in raw_rows if isinstance(item, dict)]
        if isinstance(raw_rows, list)
        else []
    )
    return result, rows


def _row(data: Mapping[str, Any]) -> comment.RunRow:
    """A run-history row from JSON; values of the wrong type become unknown (the file comes
    from another job, so nothing in it is trusted to be well-formed)."""

    def text(key: str) -> str | None:
        value = data.get(key)
        return str(value) if isinstance(value, (str, int, float)) else None

    return comment.RunRow(
        flow=text("flow") or "review",
        agent=text("agent") or "—",
        outcome=text("outcome") or "—",
        step=text("step"),
        iterations=comment.int_or_none(data.get("iterations")),
        files_changed=comment.int_or_none(data.get("filesChanged")),
        insertions=comment.int_or_none(data.get("insertions")),
        deletions=comment.int_or_none(data.get("deletions")),
        duration_s=comment.float_or_none(data.get("durationSeconds")),
        tokens=comment.int_or_none(data.get("tokens")),
        cost_usd=comment.float_or_none(data.get("costUsd")),
        input_tokens=comment.int_or_none(data.get("inputTokens")),
        output_tokens=comment.int_or_none(data.get("outputTokens")),
        cost_estimated=data.get("costEstimated") is True,
        tokens_partial=data.get("tokensPartial") is True,
        cost_partial=data.get("costPartial") is True,
    )


def result_outputs(
    result: Review, gate: GateResult, sha: str, run_id: str, files: Mapping[str, str]
) -> dict[str, str]:
    """The step outputs every review run sets (docs/github.md, "Outputs"); ``files`` and other
    extras come after ``review-result``."""
    counts = count_by_severity(result.findings)
    return {
        "review-result": outcome_label(result, gate),
        **files,
        "run-id": run_id,
        "head-sha": sha,
        "findings-count": str(len(result.findings)),
        "errors": str(counts[Severity.ERROR]),
        "warnings": str(counts[Severity.WARN]),
        "infos": str(counts[Severity.INFO]),
    }


def usage_outputs(rows: Sequence[comment.RunRow]) -> dict[str, str]:
    """``cost-usd``, ``input-tokens``, ``output-tokens`` and ``cost-estimated`` of the review
    this run did (its rows): each value summed over the rows, empty when a row does not know
    it (an empty output is unknown, never 0; docs/github.md, "Outputs")."""

    def summed(values: list[Any]) -> Any:
        return sum(values) if values and all(v is not None for v in values) else None

    # a partial figure is a lower bound of what is unknown: unknown too
    cost = summed([None if row.cost_partial else row.cost_usd for row in rows])
    tokens_in = summed([None if row.tokens_partial else row.input_tokens for row in rows])
    tokens_out = summed([None if row.tokens_partial else row.output_tokens for row in rows])
    return {
        "cost-usd": "" if cost is None else f"{cost:.6f}".rstrip("0").rstrip("."),
        "input-tokens": "" if tokens_in is None else str(tokens_in),
        "output-tokens": "" if tokens_out is None else str(tokens_out),
        "cost-estimated": str(cost is not None and any(r.cost_estimated for r in rows)).lower(),
    }


def failed_outputs(exc: BaseException, agent: str) -> dict[str, str]:
    """The spend outputs of a review that ended in ``exc`` (``usage_outputs``) when an agent
    ran before it (a reviewer stopped by its budget, failed, rate limited: ``spent``), or none
    ran (0, $0: a spent budget started none, the review stopped before its agent started, the
    builtin reviewer), else none: what it cost is told even so."""
    return spend_outputs(_spent_before(exc, agent))


def spend_outputs(spend: Spend | None) -> dict[str, str]:
    """``usage_outputs`` of what one run (or a sum of runs: a step run's agents) spent; every
    value empty when ``spend`` is None (unknown, never 0)."""
    if spend is None:
        return {"cost-usd": "", "input-tokens": "", "output-tokens": "", "cost-estimated": "false"}
    return usage_outputs([comment.RunRow("run", "—", "—", **comment.usage_fields(spend))])


def summary_room(path: Path | None) -> int:
    """Bytes the job summary of this step can still take (0: there is no job summary)."""
    if path is None:
        return 0
    used = path.stat().st_size if path.exists() else 0
    return max(STEP_SUMMARY_LIMIT - used - 4096, 0)


def fit_summary(full: str, room: int) -> str:
    """``full`` when it fits ``room`` bytes, else cut to fit, saying where every finding is."""
    text, limit = full, len(full)
    while room > 0 and len(text.encode()) > room and limit > 0:
        limit = max(limit * room // max(len(text.encode()), 1) - 1000, 0)
        text = comment.cap(
            full,
            limit,
            where=comment.IN_FINDINGS_FILE,
            why=f"GitHub's {STEP_SUMMARY_LIMIT // 1024:,} KiB job summary limit",
        )
    return text


class Reviewed(NamedTuple):
    """A review to publish: the review, its gate, the run-history rows, and the outputs naming
    its result files."""

    result: Review
    gate: GateResult
    rows: Sequence[comment.RunRow]
    files: Mapping[str, str]


def reviewed_here(
    env: RunnerEnv, run_id: str, result: Review, gate: GateResult, rows: Sequence[comment.RunRow]
) -> Reviewed:
    """A review this job made: its result files written, its findings printed as workflow
    annotations."""
    files = result_files(env, run_id, result, gate, rows)
    sys.stdout.write(render.render(result, gate, "annotations"))
    sys.stdout.flush()
    return Reviewed(result, gate, rows, files)


def finish(
    env: RunnerEnv,
    publisher: Publisher,
    reviewed: Reviewed,
    options: Options,
    run_id: str,
    extra: Mapping[str, str] | None = None,
    state: str = "",
) -> int:
    """Publish (inline review, summary comment (``state``: its hidden line recording this
    review for the next, incremental one), final status, optional check run), write the
    step summary (every finding, when it fits GitHub's limit for it) and the outputs (``extra``
    added to them); the exit code for ``options.fail_on``."""
    result, gate, rows, files = reviewed
    pull = publisher.pull
    login = Identity(publisher.client, options.comment_author)
    outputs = result_outputs(result, gate, pull.head_sha, run_id, {**files, **(extra or {})})
    outputs.update(usage_outputs(rows))
    room = summary_room(env.step_summary)
    full = comment.summary_body(
        result, gate, rows=rows, questions=agent_questions(result), limit=None
    )
    fits = len(full.encode()) + 8192 <= room  # room for the notes added once published
    where = comment.IN_JOB_SUMMARY if fits else comment.IN_FINDINGS_FILE
    with failing_publish(
        env, publisher, outputs, lambda: fit_summary(full.removeprefix(comment.MARKER), room)
    ):
        published = publish(
            publisher,
            result,
            gate,
            login=login,
            rows=rows,
            options=options,
            where=where,
            state=state,
        )
    notices = []
    if published.degraded:
        notices.append(f"Not posted to the pull request: {published.degraded}")
    if published.newer_head:
        notices.append(superseded(pull, published.newer_head))
        notice("notice", superseded(pull, published.newer_head))
    summary = comment.summary_body(
        result,
        gate,
        rows=rows,
        questions=agent_questions(result),
        inline_note=review.inline_note(published.inline),
        notices=notices,
        limit=None,
    )
    return conclude(
        env,
        publisher,
        outputs,
        fit_summary(summary.removeprefix(comment.MARKER), room),
        exit_code(result, gate.approved, gate.exit_code, options.fail_on),
        inline_posted=len(published.inline.posted),
        comment_id=published.sticky.comment_id if published.sticky else None,
        check_run_id=published.check_run_id,
    )


@contextlib.contextmanager
def failing_publish(
    env: RunnerEnv, writer: StatusWriter, outputs: Mapping[str, str], summary: Callable[[], str]
) -> Iterator[None]:
    """Publishing that fails after GitHub's retries: the status must not stay green-able, so
    the commit gets the error status, the step summary (``summary()``) and the outputs are
    written, and the error goes on (exit 4). The outputs say what was published: the status is
    ``error``, so is ``review-result``; ``inline-posted`` and ``comment-id`` are what this run
    posted before GitHub failed; ``github-error`` says why."""
    try:
        yield
    except GitHubError as exc:
        writer.error("GitHub API failure while publishing")
        github_failed(env, exc, {**outputs, **published_outputs(writer)}, summary())
        raise
    except KeyboardInterrupt:  # a cancelled job: no more GitHub writes, the files all the same
        append_summary(env.step_summary, summary())
        write_outputs(
            env.output, {**outputs, "review-result": "error", **published_outputs(writer)}
        )
        raise


def report_interrupted(
    env: RunnerEnv,
    sha: str,
    exc: KeyboardInterrupt,
    agent: str,
    step: str,
    duration_s: float,
    outputs: Mapping[str, str],
) -> None:
    """Ctrl-C or SIGTERM (a cancelled job) before the review was published: no GitHub write
    (the runner kills the job seconds later; the status stays ``pending``, never green, and a
    re-run finishes), but the job summary and the outputs of any review that did not complete
    (``report_unfinished``, ``unfinished_outputs``; ``outputs``: ``review-result`` and the ids),
    written before the exit 130. What an interrupted agent spent is a lower bound at best, so
    the spend outputs are empty (unknown); the builtin reviewer's are 0 (it calls no model)."""
    row = failed_row(exc, agent, step, duration_s)
    report_unfinished(env, sha, exc, [row])
    write_outputs(env.output, {**outputs, **unfinished_outputs(exc, agent)})


def failed_to_start(
    env: RunnerEnv,
    writer: StatusWriter,
    exc: GitHubError,
    run_id: str,
    agent: str,
    step: str,
    extra: Mapping[str, str] | None = None,
) -> None:
    """GitHub failed (after its retries) before the review started: on the ``pending`` status,
    the run's first write, or a read before the review. Once ``pending`` was set, the error
    status is tried (best effort; before, the commit has no status of ours, and trying one
    more write GitHub just failed or refused would only wait longer), and the job summary and
    the outputs are written as for any run GitHub failed (``review-result`` ``error``,
    ``github-error``): no agent ran, so it spent nothing."""
    if writer.writes:
        writer.error("GitHub API failure before the review")
    row = comment.RunRow("review", agent, "error", step=step, **comment.usage_fields(NOTHING))
    report_unfinished(env, writer.sha, exc, [row])
    outputs = {"review-result": "error", **(extra or {}), "run-id": run_id, "head-sha": writer.sha}
    github_failed(env, exc, {**outputs, **usage_outputs([row]), **published_outputs(writer)})


def published_outputs(writer: StatusWriter) -> dict[str, str]:
    """The outputs saying what this run wrote to GitHub (as far as it got)."""
    return {
        "inline-posted": str(writer.inline_posted),
        "comment-id": "" if writer.comment_id is None else str(writer.comment_id),
        "check-run-id": str(writer.check_run_id or ""),
        "degraded": "true" if writer.degraded else "false",
        "github-writes": str(writer.writes),
    }


def conclude(
    env: RunnerEnv,
    writer: StatusWriter,
    outputs: dict[str, str],
    summary: str,
    code: int,
    *,
    check_run_id: int | None,
    inline_posted: int = 0,
    comment_id: int | None = None,
) -> int:
    """The end of a published run: the step summary, the outputs (``outputs`` and what was
    written), and ``code``, the exit code for ``options.fail_on``."""
    append_summary(env.step_summary, summary)
    outputs.update(
        {
            "inline-posted": str(inline_posted),
            "comment-id": "" if comment_id is None else str(comment_id),
            "check-run-id": str(check_run_id or ""),
            "degraded": "true" if writer.degraded else "false",
            "github-writes": str(writer.writes),
        }
    )
    write_outputs(env.output, outputs)
    return code
