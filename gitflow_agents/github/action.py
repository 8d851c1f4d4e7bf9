"""``gitflow-agents action``: what the composite GitHub Action runs.

Reads the runner environment (``GITHUB_EVENT_PATH``, ``GITHUB_EVENT_NAME``,
``GITHUB_REPOSITORY``, ``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``GITHUB_TOKEN``,
``GITHUB_API_URL``…), decides what the event asks for, runs the same review as
``git agent-review`` on the pull request's head commit, and publishes it: commit status
``pending`` first, then one batched inline review, the sticky summary comment, and the final
status; annotations and the step summary always. A token that may not write (fork PRs get a
read-only ``GITHUB_TOKEN``) degrades to annotations + step summary with a notice, never a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gitflow_agents import git
from gitflow_agents.errors import ExitCode, GitflowError, GitHubError, InputError, UsageError
from gitflow_agents.findings import GateResult, Overall, Review, Severity, count_by_severity
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


def load_event(path: Path) -> dict[str, Any]:
    """The webhook payload; InputError naming the file when it is missing or not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the event payload: {exc.strerror}", path=path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"event payload is not valid JSON: {exc.msg} (column {exc.colno})",
            path=path,
            line=exc.lineno,
        ) from None
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
    section is ignored: the posting job gates again with its own threshold."""
    from gitflow_agents.findings import review_from_dict

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the findings file: {exc.strerror}", path=path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"findings file is not valid JSON: {exc.msg} (column {exc.colno})",
            path=path,
            line=exc.lineno,
        ) from None
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
    if trigger.kind == "fix":
        return skipped(
            env,
            run_id,
            "/agent fix runs the implement/review/fix chain, which this version of the action "
            "does not run yet; use /agent review",
        )
    pull = trigger.pull or client.pull(env.repository, trigger.number)
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
) -> int:
    """Publish (inline review, summary comment, final status, optional check run), write the
    step summary and the outputs; the exit code for ``options.fail_on``."""
    from gitflow_agents.commands.review import exit_code

    pull = publisher.pull
    login = options.comment_author or publisher.client.login() or ACTIONS_BOT_LOGIN
    counts = count_by_severity(result.findings)
    outputs = {
        "review-result": outcome_label(result, gate),
        **files,
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
