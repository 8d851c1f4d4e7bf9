"""``gitflow-agents action``: what the composite GitHub Action runs.

Reads the runner environment (``GITHUB_EVENT_PATH``, ``GITHUB_EVENT_NAME``,
``GITHUB_REPOSITORY``, ``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``GITHUB_TOKEN``,
``GITHUB_API_URL``…), decides what the event asks for, runs the same review as
``git agent-review`` on the pull request's head commit, and publishes it: commit status
``pending`` first, then one batched inline review, the sticky summary comment, and the final
status; annotations and the step summary always. A token that may not write (fork PRs get a
read-only ``GITHUB_TOKEN``) degrades to annotations + step summary with a notice, never a crash.

``/agent fix`` (``fix_and_publish``) from a writer, on a PR whose branch is in this repository:
review the head, run the base branch's fixer on it, push its commit to the PR's branch (never
forced), review the new head in the same job and reply to the comment; docs/github.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gitflow_agents import git
from gitflow_agents.errors import (
    ExitCode,
    GitError,
    GitflowError,
    GitHubError,
    InputError,
    UsageError,
)
from gitflow_agents.findings import (
    Finding,
    GateResult,
    Overall,
    Review,
    Severity,
    count_by_severity,
)
from gitflow_agents.github import checks, comment, review, status
from gitflow_agents.github.client import (
    ACTIONS_BOT_LOGIN,
    Client,
    GitHubForbidden,
    PullFile,
    PullRequest,
    connect,
    settings_from_env,
)

REVIEW_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
PREFIX = "gitflow-agents"
T = TypeVar("T")


# ---------------------------------------------------------------------------------------------
# The runner environment
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunnerEnv:
    event_name: str
    event_path: Path
    repository: str
    workspace: Path
    output: Path | None = None
    step_summary: Path | None = None
    server_url: str = "https://github.com"
    run_id: str | None = None
    run_attempt: str | None = None
    temp: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))

    @property
    def run_url(self) -> str | None:
        if not self.run_id:
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"


def read_runner_env(environ: Mapping[str, str]) -> RunnerEnv:
    """The ``GITHUB_*`` variables the runner sets; UsageError naming any that is missing."""
    missing = [
        name
        for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY")
        if not environ.get(name)
    ]
    if missing:
        raise UsageError(
            f"not running in GitHub Actions: {', '.join(missing)} not set "
            "(run `git agent-review` locally instead)"
        )
    repository = environ["GITHUB_REPOSITORY"]
    if repository.count("/") != 1 or not all(repository.split("/")):
        raise UsageError(f"GITHUB_REPOSITORY: expected owner/name, got {repository!r}")

    def path(name: str) -> Path | None:
        value = environ.get(name)
        return Path(value) if value else None

    return RunnerEnv(
        event_name=environ["GITHUB_EVENT_NAME"],
        event_path=Path(environ["GITHUB_EVENT_PATH"]),
        repository=repository,
        workspace=Path(environ.get("GITHUB_WORKSPACE") or Path.cwd()),
        output=path("GITHUB_OUTPUT"),
        step_summary=path("GITHUB_STEP_SUMMARY"),
        server_url=(environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
        run_id=environ.get("GITHUB_RUN_ID") or None,
        run_attempt=environ.get("GITHUB_RUN_ATTEMPT") or None,
        temp=Path(environ.get("RUNNER_TEMP") or tempfile.gettempdir()),
    )


def _read_json(path: Path, what: str) -> Any:
    """The JSON in ``path``; InputError naming the file (and line) when unreadable or invalid."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror}", path=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} is not valid JSON: {exc.msg} (column {exc.colno})",
            path=path,
            line=exc.lineno,
        ) from None


def load_event(path: Path) -> dict[str, Any]:
    """The webhook payload; InputError naming the file when it is missing or not a JSON object."""
    data = _read_json(path, "event payload")
    if not isinstance(data, dict):
        raise InputError(
            f"event payload: expected a JSON object, got {type(data).__name__}", path=path
        )
    return data


# ---------------------------------------------------------------------------------------------
# What the event asks for
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    agent: str = "builtin"
    threshold: Severity = Severity.ERROR
    fail_on: str = "revise"
    max_inline: int = review.MAX_INLINE
    max_file_size: int = 1024 * 1024
    review_drafts: bool = False
    allow_bots: bool = False
    comment_author: str | None = None
    """Login our comments are written as, when the token cannot say (``GET /user``)."""
    check_run: bool = False
    """Also create a check run with the findings as annotations (skipped when the token may not)."""
    post_findings: Path | None = None
    """Post this findings JSON (from an earlier review job) instead of reviewing."""
    fixer: str = "fixer"
    """The ``.flow/`` agent ``/agent fix`` runs (defined by the base commit's configuration)."""


@dataclass(frozen=True)
class Trigger:
    kind: str
    """``review``, ``fix`` or ``skip``."""
    reason: str = ""
    number: int | None = None
    pull: PullRequest | None = None
    commenter: str | None = None


def _get(data: Any, dotted: str, path: Path, kind: type[T], prefix: str = "") -> T:
    """``data[a][b]`` for ``dotted`` = ``a.b``; InputError naming file and key when it is missing
    or of the wrong type (``prefix`` says where ``data`` sits in the payload)."""
    node = data
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            raise InputError("missing in the event payload", path=path, key=prefix + dotted)
        node = node[key]
    if not isinstance(node, kind) or (kind is int and isinstance(node, bool)):
        raise InputError(
            f"expected {kind.__name__} in the event payload, got {type(node).__name__}",
            path=path,
            key=prefix + dotted,
        )
    return node


def pull_from_event(event: Mapping[str, Any], path: Path) -> PullRequest:
    pr = _get(event, "pull_request", path, dict)
    head_repo = pr.get("head", {}).get("repo") if isinstance(pr.get("head"), dict) else None
    return PullRequest(
        number=_get(pr, "number", path, int, "pull_request."),
        title=str(pr.get("title") or ""),
        author=str((pr.get("user") or {}).get("login") or ""),
        head_sha=_get(pr, "head.sha", path, str, "pull_request."),
        base_sha=_get(pr, "base.sha", path, str, "pull_request."),
        head_ref=str(pr.get("head", {}).get("ref") or ""),
        base_ref=str(pr.get("base", {}).get("ref") or ""),
        head_repo=head_repo.get("full_name") if isinstance(head_repo, dict) else None,
        base_repo=_get(pr, "base.repo.full_name", path, str, "pull_request."),
        draft=bool(pr.get("draft")),
        html_url=str(pr.get("html_url") or ""),
    )


def _is_bot(user: Any) -> bool:
    if not isinstance(user, dict):
        return False
    return user.get("type") == "Bot" or str(user.get("login", "")).endswith("[bot]")


def parse_command(body: str) -> str | None:
    """``review`` / ``fix`` / any word from a comment whose first non-empty line is
    ``/agent <word>``; None for every other comment."""
    for line in body.splitlines():
        words = line.strip().split()
        if not words:
            continue
        if words[0] == "/agent" and len(words) > 1:
            return words[1].lower()
        return None
    return None


def decide(event_name: str, event: Mapping[str, Any], path: Path, options: Options) -> Trigger:
    """What to do for this event (pure: no network)."""
    if event_name in ("pull_request", "pull_request_target"):
        action = str(event.get("action") or "")
        if action not in REVIEW_ACTIONS:
            return Trigger("skip", f"pull_request action {action!r} does not start a review")
        pull = pull_from_event(event, path)
        if pull.draft and not options.review_drafts:
            return Trigger("skip", f"PR #{pull.number} is a draft (set review-drafts to review)")
        if _is_bot(event.get("sender")) and not options.allow_bots:
            return Trigger("skip", "the event was sent by a bot (set allow-bots to review)")
        return Trigger("review", number=pull.number, pull=pull)
    if event_name == "issue_comment":
        if event.get("action") != "created":
            return Trigger("skip", "only new comments are commands")
        issue = _get(event, "issue", path, dict)
        if not issue.get("pull_request"):
            return Trigger("skip", "the comment is on an issue, not a pull request")
        body = str((event.get("comment") or {}).get("body") or "")
        command = parse_command(body)
        if command is None:
            return Trigger("skip", "the comment is not an /agent command")
        user = _get(event, "comment.user", path, dict)
        if _is_bot(user) and not options.allow_bots:
            return Trigger("skip", "the comment was written by a bot (set allow-bots to obey bots)")
        number = _get(issue, "number", path, int, "issue.")
        login = _get(event, "comment.user.login", path, str)
        if command not in ("review", "fix"):
            return Trigger("skip", f"unknown command /agent {command} (known: review, fix)")
        return Trigger(command, number=number, commenter=login)
    return Trigger("skip", f"event {event_name!r} is not handled (pull_request, issue_comment)")


# ---------------------------------------------------------------------------------------------
# Runner file commands and workflow commands
# ---------------------------------------------------------------------------------------------


def write_outputs(path: Path | None, values: Mapping[str, str]) -> None:
    """Append ``name<<DELIM`` … ``DELIM`` blocks (a random delimiter: no value can end one)."""
    if path is None:
        return
    chunks = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{secrets.token_hex(12)}"
        chunks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(chunks))


def append_summary(path: Path | None, markdown: str) -> None:
    if path is None:
        return
    with path.open("a", encoding="utf-8") as handle:
        handle.write(markdown.rstrip("\n") + "\n\n")


def notice(kind: str, message: str) -> None:
    """A workflow command on stdout (``notice``, ``warning``, ``error``)."""
    from gitflow_agents.render.annotations import command

    print(command(kind, message, title=PREFIX), flush=True)


# ---------------------------------------------------------------------------------------------
# Publishing, with the read-only degrade
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# The review itself (same path as git agent-review)
# ---------------------------------------------------------------------------------------------


def _ensure_commit(root: Path, sha: str, number: int) -> None:
    """The PR head must be in the checkout; fetch ``refs/pull/N/head`` once if it is not
    (objects only: nothing from the PR is checked out or run)."""
    try:
        git.rev_parse(root, sha)
        return
    except UsageError:
        pass
    git.run_git(
        root, "fetch", "--no-tags", "--quiet", "origin", f"+refs/pull/{number}/head", check=False
    )
    try:
        git.rev_parse(root, sha)
    except UsageError:
        raise UsageError(
            f"commit {sha[:12]} of PR #{number} is not in the checkout at {root}: "
            "use actions/checkout with fetch-depth: 0"
        ) from None


@contextlib.contextmanager
def base_checkout(root: Path, sha: str, temp: Path) -> Iterator[Path]:
    """A detached work tree of ``sha`` (the PR's base commit) under ``temp``, removed afterwards.

    Configuration, plans and agent definitions are read from here, never from the PR's own
    files: a pull request that edits ``.flow/`` cannot choose or weaken its own reviewer."""
    temp.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="base-config-", dir=temp))
    path.rmdir()  # `git worktree add` creates it
    git.add_worktree(root, path, sha, detach=True)
    try:
        yield path
    finally:
        git.remove_worktree(root, path)


def review_pull(
    workspace: Path, pull: PullRequest, options: Options, temp: Path | None = None
) -> tuple[Review, GateResult, comment.RunRow]:
    """Review the PR's head against its merge-base with the base commit. A configured agent
    (``options.agent`` other than ``builtin``) is defined by the base commit's ``.flow/``."""
    from gitflow_agents.commands.review import Target, review_target

    root = git.repo_root(workspace)
    _ensure_commit(root, pull.head_sha, pull.number)
    _ensure_commit(root, pull.base_sha, pull.number)
    base = git.merge_base(root, pull.base_sha, pull.head_sha)
    target = Target(base, pull.head_sha, f"PR #{pull.number}")
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        config_root = None
        if options.agent != "builtin":  # the builtin reviewer reads no configuration at all
            scratch = temp if temp is not None else Path(tempfile.gettempdir())
            config_root = stack.enter_context(base_checkout(root, pull.base_sha, scratch))
        result, gate = review_target(
            root,
            target,
            agent=options.agent,
            threshold=options.threshold,
            max_file_size=options.max_file_size,
            config_root=config_root,
        )
    stats = git.numstat(root, target.spec)
    run = result.run if isinstance(result.run, dict) else {}
    row = comment.RunRow(
        flow="review",
        agent=options.agent,
        outcome=outcome_label(result, gate),
        step=f"PR #{pull.number}",
        iterations=1,
        files_changed=len(stats),
        insertions=sum(a or 0 for a, _ in stats.values()),
        deletions=sum(d or 0 for _, d in stats.values()),
        duration_s=time.monotonic() - started,
        tokens=_int_or_none(run.get("tokens")),
        cost_usd=_float_or_none(run.get("cost_usd")),
    )
    return result, gate, row


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float_or_none(value: Any) -> float | None:
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
    section is ignored: the posting job gates again with its own threshold. Its texts are
    masked again (``redact``): the file comes from another job."""
    from gitflow_agents.findings import review_from_dict
    from gitflow_agents.redact import redact_review

    data = _read_json(path, "findings file")
    try:
        result = redact_review(review_from_dict(data))
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
        iterations=_int_or_none(data.get("iterations")),
        files_changed=_int_or_none(data.get("files_changed")),
        insertions=_int_or_none(data.get("insertions")),
        deletions=_int_or_none(data.get("deletions")),
        duration_s=_float_or_none(data.get("duration_s")),
        tokens=_int_or_none(data.get("tokens")),
        cost_usd=_float_or_none(data.get("cost_usd")),
    )


# ---------------------------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------------------------


def run_id_for(env: RunnerEnv) -> str:
    if env.run_id:
        return f"{env.run_id}-{env.run_attempt or '1'}"
    return f"local-{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


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
    pull = trigger.pull or client.pull(env.repository, trigger.number)
    if trigger.kind == "fix":
        if options.post_findings is not None:
            return skipped(env, run_id, "the posting job (post-findings) does not run /agent fix")
        return fix_and_publish(env, client, pull, options, run_id, trigger.commenter or "")
    if pull.draft and not options.review_drafts and trigger.commenter is None:
        return skipped(env, run_id, f"PR #{pull.number} is a draft")
    if options.post_findings is not None:
        return post_findings(env, client, pull, options, run_id)
    return review_and_publish(env, client, pull, options, run_id)


def review_and_publish(
    env: RunnerEnv, client: Client, pull: PullRequest, options: Options, run_id: str
) -> int:
    """Review the PR and publish: pending status, inline review, summary, final status."""
    from gitflow_agents import render

    publisher = Publisher(client, env.repository, pull, env.run_url)
    publisher.pending()
    try:
        result, gate, row = review_pull(env.workspace, pull, options, env.temp / PREFIX)
    except Exception as exc:
        why = exc.message if isinstance(exc, GitflowError) else f"crashed: {type(exc).__name__}"
        publisher.error(why)
        write_outputs(env.output, {"review-result": "error", "run-id": run_id})
        raise

    findings_file, sarif_file = write_result_files(env.temp / PREFIX / run_id, result, gate, [row])
    sys.stdout.write(render.render(result, gate, "annotations"))
    sys.stdout.flush()
    files = {"findings-file": str(findings_file), "sarif-file": str(sarif_file)}
    return finish(env, publisher, result, gate, [row], options, run_id, files)


def post_findings(
    env: RunnerEnv, client: Client, pull: PullRequest, options: Options, run_id: str
) -> int:
    """The posting job of the two-job split: publish a findings file an earlier job (with a
    read-only token) produced. No review runs and no pending status is set; the verdict is
    gated again here, against this PR's head commit and this job's threshold."""
    from gitflow_agents.findings import gate as gate_review

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
    return finish(env, publisher, result, gate, rows, options, run_id, files)


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


# ---------------------------------------------------------------------------------------------
# /agent fix: the fixer on the PR's own branch, pushed, and the new head reviewed in this job
# ---------------------------------------------------------------------------------------------

FIX_FLOW = "github-fix"
FIX_MARKER = "<!-- gitflow-agents:fix-reply -->"
FIX_PREAMBLE = """\
A maintainer asked for a fix of pull request #{number} (branch {branch}, head commit {head}).
Read the review report listed under "Previous Agent Reports" and fix what its findings ask for,
nothing more. Leave your changes uncommitted in the work tree: gitflow-agents commits them,
pushes the commit to the pull request's branch and reviews it again."""
FIX_TASK = "Fix the findings of the review of pull request #{number} (head commit {head})."
REPLY_LIST_LIMIT = 20
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
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


@dataclass(frozen=True)
class PushResult:
    ok: bool
    moved: bool
    """Refused because the branch is no longer where the push expects it (not a fast-forward)."""
    reason: str
    """Why it was refused (empty when it was not)."""


def remote_branch_sha(root: Path, branch: str, remote: str = "origin") -> str | None:
    """The tip of ``branch`` on ``remote`` (``git ls-remote``), None when it has no such branch."""
    result = git.run_git(root, "ls-remote", "--heads", remote, f"refs/heads/{branch}", check=False)
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()
        raise GitError(
            f"cannot read branch {branch} from {remote}: "
            + (detail[-1] if detail else f"git exited {result.returncode}")
        )
    for line in result.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            return sha
    return None


def _fetch_branch(root: Path, sha: str, branch: str, remote: str = "origin") -> None:
    """Make sure commit ``sha`` (the tip of ``branch``) is in the checkout."""
    with contextlib.suppress(UsageError):
        git.rev_parse(root, sha)
        return
    git.run_git(root, "fetch", "--no-tags", "--quiet", remote, f"refs/heads/{branch}", check=False)
    git.rev_parse(root, sha)  # UsageError naming the commit when it is still not there


def push_branch(
    root: Path, sha: str, branch: str, remote: str = "origin", *, dry_run: bool = False
) -> PushResult:
    """``git push REMOTE SHA:refs/heads/BRANCH``: a normal push, never forced. Git itself
    refuses it when the branch moved on meanwhile (not a fast-forward); a token that may not
    push (HTTP 403), a protected branch or a hook refuse it on the server's side.
    ``dry_run``: only ask (over HTTPS GitHub already refuses a token that may not push)."""
    flags = ("--porcelain", "--dry-run") if dry_run else ("--porcelain",)
    result = git.run_git(root, "push", *flags, remote, f"{sha}:refs/heads/{branch}", check=False)
    if result.returncode == 0:
        return PushResult(True, False, "")
    if "[rejected]" in result.stdout:
        return PushResult(False, True, f"{branch} moved on (someone pushed to it)")
    lines = [
        line.strip()
        for line in (result.stderr + "\n" + result.stdout).splitlines()
        if line.strip() and line.strip() not in ("Done",) and not line.startswith("To ")
    ]
    detail = "; ".join(lines[-3:]) or f"git exited {result.returncode}"
    hint = (
        "the job's token may not push to the repository: give the job that runs /agent fix "
        "`permissions: contents: write` (and keep actions/checkout's persisted credentials)"
        if _PUSH_FORBIDDEN.search(detail)
        else "the remote refused the push (a protected branch or a server-side hook?)"
    )
    return PushResult(False, False, f"{hint} ({detail})")


@contextlib.contextmanager
def commit_identity(root: Path) -> Iterator[None]:
    """Git's identity for the fix commit: the repository's or the environment's when there is
    one, else ``github-actions[bot]`` (a fresh runner has none, and git refuses to commit)."""
    known = all(
        git.run_git(root, "var", name, check=False).returncode == 0
        for name in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
    )
    if known:
        yield
        return
    defaults = {
        "GIT_AUTHOR_NAME": ACTIONS_BOT_LOGIN,
        "GIT_AUTHOR_EMAIL": "41898282+github-actions[bot]@users.noreply.github.com",
    }
    defaults["GIT_COMMITTER_NAME"] = defaults["GIT_AUTHOR_NAME"]
    defaults["GIT_COMMITTER_EMAIL"] = defaults["GIT_AUTHOR_EMAIL"]
    saved = {name: os.environ.get(name) for name in defaults}
    os.environ.update({k: v for k, v in defaults.items() if not os.environ.get(k)})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def review_report(result: Review, gate: GateResult) -> str:
    """The review as the fixer reads it: the markdown summary and the findings as JSON."""
    from gitflow_agents import render

    return (
        render.render(result, gate, "markdown").rstrip("\n")
        + "\n\n## Findings (JSON)\n\n```json\n"
        + render.render(result, gate, "json").rstrip("\n")
        + "\n```\n"
    )


def _share_flow_dir(link: Path, real: Path) -> None:
    """``link`` → ``real`` (the workspace's run-artifact folder), unless ``link`` exists."""
    real.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink() and not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(real.resolve(), target_is_directory=True)


@dataclass(frozen=True)
class FixRun:
    sha: str | None
    """The fix commit; None when the fixer changed nothing."""
    run_id: str
    agent_id: str
    duration_s: float


def run_fixer(root: Path, pull: PullRequest, report: str, options: Options, temp: Path) -> FixRun:
    """The configured fixer (``options.fixer``, defined by the base commit's ``.flow/``) in a
    work tree of the PR's head on a throw-away branch, with ``report`` (the review) as its
    ``--after`` context; its changes committed with the run's trailers. Nothing is pushed.
    AgentFailed when the fixer does not complete; ConfigError for an unknown fixer."""
    from gitflow_agents import chain
    from gitflow_agents.config import load_flow_config
    from gitflow_agents.events import ConsoleChannel, EventHub
    from gitflow_agents.prompt import agent_dir
    from gitflow_agents.runs import write_text_atomic

    with contextlib.ExitStack() as stack:
        config_root = stack.enter_context(base_checkout(root, pull.base_sha, temp))
        config = load_flow_config(config_root)
        workflow = config.completion_workflow_for(options.fixer)  # ConfigError if unknown
        flow_dir = config.flow_dir.strip("/")
        # Run artifacts land in the workspace's flow dir, whichever work tree writes them.
        git.ensure_info_exclude(root, (f"/{flow_dir}/", f"/{flow_dir}"))
        _share_flow_dir(config_root / flow_dir, root / flow_dir)
        review_id = f"pr-{pull.number}-review"
        review_file = agent_dir(config_root, flow_dir, FIX_FLOW, review_id)
        review_file.mkdir(parents=True, exist_ok=True)
        write_text_atomic(review_file / workflow.success_filename, report)

        branch = f"gitflow-agents/fix-pr-{pull.number}-{secrets.token_hex(4)}"
        tree = Path(tempfile.mkdtemp(prefix="fix-", dir=temp))
        tree.rmdir()  # `git worktree add` creates it
        git.create_branch(root, branch, pull.head_sha)
        stack.callback(git.delete_branch, root, branch)
        git.add_worktree(root, tree, branch)
        stack.callback(git.remove_worktree, root, tree)
        _share_flow_dir(tree / flow_dir, root / flow_dir)

        hub = EventHub([ConsoleChannel(sys.stderr, is_tty=False)])
        stack.callback(hub.close)
        settings = chain.ChainSettings(fixer=options.fixer, threshold=options.threshold)
        ctx = chain.Context(
            root=config_root, config=config, plan=None, flow=FIX_FLOW, settings=settings, hub=hub
        )
        ws = chain.Workspace(
            worktree=tree,
            branch=branch,
            base_sha=git.merge_base(root, pull.base_sha, pull.head_sha),
        )
        agent_id = f"pr-{pull.number}-{options.fixer}"
        facts = {"number": pull.number, "branch": pull.head_ref, "head": pull.head_sha}
        run = chain.run_agent(
            ctx,
            ws,
            agent=options.fixer,
            agent_id=agent_id,
            kind="fix",
            start_sha=pull.head_sha,
            after=(review_id,),
            preamble=FIX_PREAMBLE.format(**facts),
            task=FIX_TASK.format(**facts),
            commit_message=f"Fix review findings of PR #{pull.number}",
        )
    sha = run.end_sha if run.end_sha != pull.head_sha else None
    return FixRun(sha, run.run_id, agent_id, run.duration)


def _fix_row(
    root: Path,
    options: Options,
    pull: PullRequest,
    outcome: str,
    run: FixRun | None,
    started: float,
) -> comment.RunRow:
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
    )


def fix_and_publish(
    env: RunnerEnv,
    client: Client,
    pull: PullRequest,
    options: Options,
    run_id: str,
    commenter: str,
) -> int:
    """``/agent fix`` from a writer: review the PR's head, run the fixer on it, push the fix to
    the PR's branch (never forced), review the new head in this same job (a push made with
    ``GITHUB_TOKEN`` starts no workflow run) and publish that; reply to the comment."""
    publisher = Publisher(client, env.repository, pull, env.run_url)
    if pull.is_fork:
        where = pull.head_repo or "a fork that was deleted"
        why = (
            f"/agent fix pushes its commit to the pull request's branch, and PR #{pull.number} "
            f"comes from {where}: this workflow's token cannot push there. Ask the author to "
            "apply the review's findings, or run `gitflow-agents flow fix` on a copy of the "
            "branch yourself."
        )
        return _not_run(env, publisher, run_id, commenter, "refused", why, ExitCode.OK)
    root = git.repo_root(env.workspace)
    branch = git.check_branch_name(root, pull.head_ref)
    tip = remote_branch_sha(root, branch)
    if tip != pull.head_sha:
        why = (
            f"the branch {branch} is at {(tip or 'nothing')[:12]} on origin, not at the PR's "
            f"head {pull.head_sha[:12]}: it moved on since (a new push gets its own review). "
            "Nothing was changed; comment /agent fix again to fix the new head."
        )
        return _not_run(env, publisher, run_id, commenter, "branch-moved", why, ExitCode.USAGE)

    probe = push_branch(root, pull.head_sha, branch, dry_run=True)
    if not probe.ok and not probe.moved:  # a token that may not push: do not run the fixer
        why = f"cannot push to {branch}, so the fixer was not run: {probe.reason}"
        return _not_run(env, publisher, run_id, commenter, "push-refused", why, ExitCode.GITHUB)

    publisher.pending()
    try:
        outcome = _fix(env, publisher, options, root, branch)
    except Exception as exc:
        why = exc.message if isinstance(exc, GitflowError) else f"crashed: {type(exc).__name__}"
        publisher.error(why)
        write_outputs(
            env.output, {"review-result": "error", "fix-result": "error", "run-id": run_id}
        )
        raise
    return _publish_fix(env, publisher, outcome, options, run_id, commenter)


def _not_run(
    env: RunnerEnv,
    publisher: Publisher,
    run_id: str,
    commenter: str,
    result: str,
    why: str,
    code: ExitCode,
) -> int:
    """``/agent fix`` stopped before anything ran: reply, notice, job summary, outputs. No
    status is touched (nothing about the head changed)."""
    from gitflow_agents.render.markdown import escape

    _post_reply(publisher, _reply_head(commenter, "not run") + escape(why))
    append_summary(env.step_summary, f"### {PREFIX}: /agent fix not run\n\n{escape(why)}")
    if code == ExitCode.OK:
        notice("notice", f"nothing to do: {why}")
    else:
        notice("error", f"/agent fix: {why}")
    outputs = {"review-result": "skipped", "fix-result": result, "run-id": run_id, "reason": why}
    write_outputs(env.output, outputs)
    return code


def _fix(
    env: RunnerEnv, publisher: Publisher, options: Options, root: Path, branch: str
) -> FixOutcome:
    """Review → fixer → push → review of the new head. After the push ``publisher`` writes to
    the new head (its ``pull`` is switched), so a failure from then on marks the new head."""
    from gitflow_agents.chain import AgentFailed

    pull, scratch = publisher.pull, env.temp / PREFIX
    _fetch_branch(root, pull.head_sha, branch)
    before, gate_before, row_before = review_pull(env.workspace, pull, options, scratch)
    if gate_before.approved:
        return FixOutcome(
            "nothing-to-fix",
            f"the review of {pull.head_sha[:12]} approves it: nothing to fix, nothing pushed.",
            before,
            gate_before,
            (row_before,),
        )
    started = time.monotonic()
    try:
        with commit_identity(root):
            run = run_fixer(root, pull, review_report(before, gate_before), options, scratch)
    except AgentFailed as exc:
        return FixOutcome(
            "fixer-failed",
            f"the fixer {options.fixer} did not complete ({exc.run.status}: {exc.run.reason}); "
            "nothing was pushed.",
            before,
            gate_before,
            (row_before, _fix_row(root, options, pull, "failed", None, started)),
            exit_code=ExitCode.AGENT_FAILED,
        )
    if run.sha is None:
        return FixOutcome(
            "no-changes",
            f"the fixer {options.fixer} completed without changing anything; nothing was pushed.",
            before,
            gate_before,
            (row_before, _fix_row(root, options, pull, "no changes", run, started)),
        )
    pushed = push_branch(root, run.sha, branch)
    if not pushed.ok:
        result = "branch-moved" if pushed.moved else "push-refused"
        message = (
            f"{pushed.reason} while the fixer worked, so the fix {run.sha[:12]} was not "
            "pushed: nothing is ever force-pushed. Comment /agent fix again to fix the new head."
            if pushed.moved
            else f"the fix {run.sha[:12]} was not pushed to {branch}: {pushed.reason}"
        )
        return FixOutcome(
            result,
            message,
            before,
            gate_before,
            (row_before, _fix_row(root, options, pull, result, run, started)),
            fix_sha=run.sha,
            exit_code=ExitCode.USAGE if pushed.moved else ExitCode.GITHUB,
            publish=not pushed.moved,
        )
    fix_row = _fix_row(root, options, pull, "pushed", run, started)
    old_head = pull.head_sha
    publisher.attempt(
        "set the final status of the previous head",
        lambda: status.set_final(
            publisher.client,
            publisher.repo,
            old_head,
            before,
            gate_before,
            target_url=publisher.target_url,
        ),
    )
    # Pushes made with GITHUB_TOKEN start no workflow run: the new head is reviewed right here.
    publisher.pull = dataclasses.replace(pull, head_sha=run.sha)
    publisher.pending()
    after, gate_after, row_after = review_pull(env.workspace, publisher.pull, options, scratch)
    return FixOutcome(
        "pushed",
        f"pushed {run.sha[:12]} to {branch}: the changes of the fixer agent "
        f"{options.fixer} (run {run.run_id}).",
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
    commenter: str,
) -> int:
    """Publish the outcome's review (sticky comment, inline findings, status), then reply."""
    from gitflow_agents import render

    extra = {"fix-result": outcome.result, "fix-sha": outcome.fix_sha or ""}
    reply = fix_reply(outcome, commenter, publisher.target_url)
    append_summary(env.step_summary, reply.removeprefix(FIX_MARKER))
    ok = outcome.result in ("pushed", "nothing-to-fix")
    notice("notice" if ok else "error", f"/agent fix: {outcome.message}")
    review_, gate_, rows = outcome.review, outcome.gate, outcome.rows
    findings_file, sarif_file = write_result_files(env.temp / PREFIX / run_id, review_, gate_, rows)
    files = {"findings-file": str(findings_file), "sarif-file": str(sarif_file)}
    if outcome.publish:
        sys.stdout.write(render.render(review_, gate_, "annotations"))
        sys.stdout.flush()
        code = finish(env, publisher, review_, gate_, rows, options, run_id, files, extra)
    else:
        # The branch moved on: this review is about a commit that is no longer the PR's head,
        # so only its own status is set (no longer pending); the summary stays the new head's.
        publisher.attempt(
            "set the final status",
            lambda: status.set_final(
                publisher.client,
                publisher.repo,
                publisher.pull.head_sha,
                review_,
                gate_,
                target_url=publisher.target_url,
            ),
        )
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
    _post_reply(publisher, reply)
    return outcome.exit_code if outcome.exit_code is not None else code


def _reply_head(commenter: str, what: str) -> str:
    who = f"@{commenter}" if _LOGIN.fullmatch(commenter) else "a maintainer"
    return f"{FIX_MARKER}\n**gitflow-agents** · `/agent fix` asked by {who}: {what}\n\n"


def _finding_lines(findings: Sequence[Finding]) -> list[str]:
    from gitflow_agents.render import location
    from gitflow_agents.render.markdown import code, escape

    lines = []
    for finding in findings[:REPLY_LIST_LIMIT]:
        where = location(finding)
        message = escape(finding.message.splitlines()[0] if finding.message else "")
        lines.append(f"- {finding.severity.value} {code(where) + ' ' if where else ''}{message}")
    if len(findings) > REPLY_LIST_LIMIT:
        lines.append(f"- … and {len(findings) - REPLY_LIST_LIMIT} more")
    return lines


def fix_reply(outcome: FixOutcome, commenter: str, run_url: str | None) -> str:
    """The answer to the ``/agent fix`` comment: what happened, which findings the fix removed
    (by fingerprint: in the review before, gone from the review after) and what is still open."""
    from gitflow_agents import render
    from gitflow_agents.render.markdown import escape

    heads = {
        "pushed": "✅ fix pushed",
        "nothing-to-fix": "✅ nothing to fix",
        "no-changes": "⚠️ no changes",
        "fixer-failed": "❌ the fixer failed",
        "branch-moved": "⚠️ not pushed: the branch moved",
        "push-refused": "❌ not pushed",
    }
    parts = [
        _reply_head(commenter, heads.get(outcome.result, outcome.result)) + escape(outcome.message)
    ]
    if outcome.before is not None:
        remaining = {f.fingerprint for f in outcome.review.findings}
        fixed = [f for f in outcome.before.findings if f.fingerprint not in remaining]
        if fixed:
            parts.append(
                f"**Fixed** ({len(fixed)} of {len(outcome.before.findings)} findings of the "
                f"review before):\n\n" + "\n".join(_finding_lines(fixed))
            )
        verdict = render.verdict_label(outcome.review, outcome.gate)
        reviewed = (outcome.review.reviewed_sha or "")[:12]
        parts.append(f"The new head `{reviewed}` was reviewed in the same run: **{verdict}**.")
    if outcome.review.findings and outcome.result != "nothing-to-fix":
        label = "Still open" if outcome.before is not None else "Findings of the review"
        parts.append(
            f"**{label}** ({len(outcome.review.findings)}):\n\n"
            + "\n".join(_finding_lines(outcome.review.findings))
        )
    if run_url:
        parts.append(f"[workflow run]({run_url})")
    return "\n\n".join(parts) + "\n"


def _post_reply(publisher: Publisher, body: str) -> None:
    """The reply comment: never fails the run (the result is already published)."""
    try:
        publisher.attempt(
            "reply to /agent fix",
            lambda: publisher.client.create_issue_comment(
                publisher.repo, publisher.pull.number, comment.cap(body)
            ),
        )
    except GitHubError as exc:
        notice("warning", f"could not reply to /agent fix: {exc}")
