"""Publishing a review to the pull request, and the result files a job leaves behind.

``Publisher`` writes (statuses, the batched inline review, the sticky summary comment, the
optional check run) until GitHub refuses the token; from then on it only notes what it could not
do: fork PRs get a read-only ``GITHUB_TOKEN``, and the results still reach the annotations and
the job summary. ``finish`` publishes and writes the step summary and outputs; the result files
(``findings.json``, ``findings.sarif``) carry a review from a read-only job to a posting job.
docs/github.md, "Fork pull requests" and "The two-job split".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gitflow_agents.errors import GitHubError, InputError
from gitflow_agents.findings import GateResult, Overall, Review, Severity, count_by_severity
from gitflow_agents.github import checks, comment, review, status
from gitflow_agents.github.client import (
    ACTIONS_BOT_LOGIN,
    Client,
    GitHubForbidden,
    PullFile,
    PullRequest,
)
from gitflow_agents.github.runner import (
    PREFIX,
    Options,
    RunnerEnv,
    append_summary,
    notice,
    read_json,
    write_outputs,
)

T = TypeVar("T")


class Publisher:
    """Writes to the pull request until GitHub says the token may not; from then on it only
    notes what it could not do (the degrade path for fork PRs and read-only tokens)."""

    def __init__(self, client: Client, repo: str, pull: PullRequest, target_url: str | None):
        self.client = client
        self.repo = repo
        self.pull = pull
        self.target_url = target_url
        self.degraded: str | None = None
        self.writes = 0

    def attempt(self, what: str, call: Callable[[], T]) -> T | None:
        if self.degraded is not None:
            return None
        try:
            result = call()
        except GitHubForbidden as exc:
            self.degraded = str(exc)
            notice(
                "warning",
                f"cannot {what}: the token may not write to this pull request (a fork PR or a "
                "read-only GITHUB_TOKEN); results are in the annotations and the job summary. "
                f"({exc})",
            )
            return None
        self.writes += 1
        return result

    def pending(self) -> None:
        self.attempt(
            "set the pending status",
            lambda: status.set_pending(
                self.client, self.repo, self.pull.head_sha, target_url=self.target_url
            ),
        )

    def error(self, why: str) -> None:
        """Best effort: the run is already failing, a second failure must not hide the first."""
        try:
            self.attempt(
                "set the error status",
                lambda: status.set_error(
                    self.client, self.repo, self.pull.head_sha, why, target_url=self.target_url
                ),
            )
        except GitHubError as exc:
            notice("warning", f"could not set the error status: {exc}")

    def check_run(self, result: Review, gate: GateResult) -> int | None:
        """The optional check run. Never fails the run and never switches to degraded mode:
        a token without ``checks: write`` (403) just means no check run."""
        if self.degraded is not None:
            return None
        try:
            made = checks.create(
                self.client,
                self.repo,
                self.pull.head_sha,
                result,
                gate,
                details_url=self.target_url,
            )
        except GitHubForbidden as exc:
            print(f"{PREFIX}: no check run: the token may not create one ({exc})", flush=True)
            return None
        except GitHubError as exc:
            notice("warning", f"the optional check run was not created: {exc}")
            return None
        self.writes += 1
        return made


@dataclass(frozen=True)
class Published:
    inline: review.InlineOutcome
    sticky: comment.StickyResult | None
    degraded: str | None
    check_run_id: int | None = None


def _files(client: Client, repo: str, number: int) -> list[PullFile]:
    try:
        return client.pull_files(repo, number)
    except GitHubForbidden:
        return []


def publish(
    publisher: Publisher,
    result: Review,
    gate: GateResult,
    *,
    login: str,
    rows: Sequence[comment.RunRow],
    options: Options,
) -> Published:
    pull, client, repo = publisher.pull, publisher.client, publisher.repo
    inline = review.InlineOutcome(summary_only=result.findings)
    if publisher.degraded is None:
        files = _files(client, repo, pull.number)
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
    body = comment.summary_body(
        result,
        gate,
        rows=rows,
        questions=_questions(result),
        inline_note=inline_note(inline),
        footer=footer(pull, publisher.target_url),
    )
    sticky = publisher.attempt(
        "update the summary comment",
        lambda: comment.upsert_summary(client, repo, pull.number, body, login=login),
    )
    publisher.attempt(
        "set the final status",
        lambda: status.set_final(
            client, repo, pull.head_sha, result, gate, target_url=publisher.target_url
        ),
    )
    check_run_id = publisher.check_run(result, gate) if options.check_run else None
    return Published(inline, sticky, publisher.degraded, check_run_id)


def inline_note(inline: review.InlineOutcome) -> str:
    parts = []
    if inline.posted:
        parts.append(f"{len(inline.posted)} posted inline now")
    if inline.already:
        parts.append(f"{len(inline.already)} already inline from an earlier run")
    if inline.summary_only:
        parts.append(
            f"{len(inline.summary_only)} listed here only (outside the diff or over the cap)"
        )
    text = f"**Inline:** {'; '.join(parts)}." if parts else ""
    if inline.refused:
        from gitflow_agents.render.markdown import escape

        reasons = "\n".join(f"- {escape(r)}" for r in inline.refused)
        text += (
            f"\n\n<details><summary>GitHub refused some inline comments; they are listed "
            f"above</summary>\n\n{reasons}\n\n</details>"
        )
    return text


def footer(pull: PullRequest, run_url: str | None) -> str:
    text = f"gitflow-agents · head {pull.head_sha[:12]}"
    return text + (f" · [workflow run]({run_url})" if run_url else "")


def _questions(result: Review) -> list[str]:
    raw = result.run.get("questions") if isinstance(result.run, dict) else None
    return [str(q) for q in raw] if isinstance(raw, list) else []


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def float_or_none(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def outcome_label(result: Review, gate: GateResult) -> str:
    if gate.approved:
        return "approved"
    return "revise" if result.overall is Overall.REVISE else "not-approved"


def write_result_files(
    directory: Path, result: Review, gate: GateResult, rows: Sequence[comment.RunRow] = ()
) -> tuple[Path, Path]:
    """``findings.json`` (the JSON renderer's output, plus ``run_history``: the rows of the
    run-history table, so a posting job can show them) and ``findings.sarif``."""
    from gitflow_agents import render
    from gitflow_agents.fsutil import write_text_atomic as write_atomic

    directory.mkdir(parents=True, exist_ok=True)
    findings_file = directory / "findings.json"
    sarif_file = directory / "findings.sarif"
    data = json.loads(render.render(result, gate, "json"))
    data["run_history"] = [dataclasses.asdict(row) for row in rows]
    write_atomic(findings_file, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    write_atomic(sarif_file, render.render(result, gate, "sarif"))
    return findings_file, sarif_file


def load_findings(path: Path) -> tuple[Review, list[comment.RunRow]]:
    """A findings file written by ``write_result_files`` (by an earlier job): the review and
    its run-history rows. InputError naming the file and key when it is unusable. Its ``gate``
    section is ignored: the posting job gates again with its own threshold."""
    from gitflow_agents.findings import review_from_dict

    data = read_json(path, "findings file")
    try:
        result = review_from_dict(data)
    except ValueError as exc:
        raise InputError(f"not a findings file: {exc}", path=path) from None
    raw_rows = data.get("run_history")
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
        iterations=int_or_none(data.get("iterations")),
        files_changed=int_or_none(data.get("files_changed")),
        insertions=int_or_none(data.get("insertions")),
        deletions=int_or_none(data.get("deletions")),
        duration_s=float_or_none(data.get("duration_s")),
        tokens=int_or_none(data.get("tokens")),
        cost_usd=float_or_none(data.get("cost_usd")),
    )


def finish(
    env: RunnerEnv,
    publisher: Publisher,
    result: Review,
    gate: GateResult,
    rows: Sequence[comment.RunRow],
    options: Options,
    run_id: str,
    files: Mapping[str, str],
    extra: Mapping[str, str] | None = None,
) -> int:
    """Publish (inline review, summary comment, final status, optional check run), write the
    step summary and the outputs (``extra`` added to them); the exit code for
    ``options.fail_on``."""
    from gitflow_agents.commands.review import exit_code

    pull = publisher.pull
    login = options.comment_author or publisher.client.login() or ACTIONS_BOT_LOGIN
    counts = count_by_severity(result.findings)
    outputs = {
        "review-result": outcome_label(result, gate),
        **files,
        **(extra or {}),
        "run-id": run_id,
        "head-sha": pull.head_sha,
        "findings-count": str(len(result.findings)),
        "errors": str(counts[Severity.ERROR]),
        "warnings": str(counts[Severity.WARN]),
        "infos": str(counts[Severity.INFO]),
    }
    try:
        published = publish(publisher, result, gate, login=login, rows=rows, options=options)
    except GitHubError as exc:
        # Failing after retries: the status must not stay green-able; say so and exit 4.
        publisher.error("GitHub API failure while publishing")
        append_summary(
            env.step_summary,
            comment.summary_body(result, gate, rows=rows).removeprefix(comment.MARKER),
        )
        write_outputs(env.output, {**outputs, "github-error": str(exc)})
        raise
    notices = (
        [f"Not posted to the pull request: {published.degraded}"] if published.degraded else []
    )
    append_summary(
        env.step_summary,
        comment.summary_body(
            result,
            gate,
            rows=rows,
            questions=_questions(result),
            inline_note=inline_note(published.inline),
            notices=notices,
        ).removeprefix(comment.MARKER),
    )
    outputs.update(
        {
            "inline-posted": str(len(published.inline.posted)),
            "comment-id": str(published.sticky.comment_id) if published.sticky else "",
            "check-run-id": str(published.check_run_id or ""),
            "degraded": "true" if published.degraded else "false",
            "github-writes": str(publisher.writes),
        }
    )
    write_outputs(env.output, outputs)
    return exit_code(result, gate.approved, gate.exit_code, options.fail_on)
