"""The GitHub boundary: the only module that imports PyGithub.

Everything else in ``gitflow_agents.github`` talks to GitHub through ``Client``, whose methods
take and return small frozen values, so the rest of the package never sees a PyGithub object.

Reliability is PyGithub's own: its ``GithubRetry`` (a ``urllib3.Retry``) retries 5xx and
secondary rate limits, honouring ``Retry-After`` (capped by ``retry_after_max``) and waiting
``secondary_rate_wait`` when GitHub says "secondary rate limit" without the header. What still
fails after the bounded retries becomes a ``GitHubError`` (exit 4) naming the request; a 403/404
on a write (read-only token, fork PR) is ``GitHubForbidden`` so the action can degrade instead
of crashing, and a 422 is ``GitHubRejected`` so the caller can fall back.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import github
import requests
from github import Auth, Github, GithubException, GithubRetry

from gitflow_agents import __version__
from gitflow_agents.errors import GitHubError, UsageError

DEFAULT_API_URL = "https://api.github.com"
ACTIONS_BOT_LOGIN = "github-actions[bot]"
"""Author of everything the Actions ``GITHUB_TOKEN`` writes (it cannot read ``GET /user``)."""


class GitHubForbidden(GitHubError):
    """403/404 on a request the token is not allowed to make (read-only token, fork PR)."""


class GitHubRejected(GitHubError):
    """422: GitHub refused the content (a line outside the diff, a body too long)."""


@dataclass(frozen=True)
class Settings:
    """How to reach GitHub. ``retries`` bounds every request; waits are in seconds."""

    token: str
    api_url: str = DEFAULT_API_URL
    timeout: float = 15.0
    retries: int = 4
    backoff: float = 1.0
    """urllib3 ``backoff_factor``: waits backoff * 2**(n-1) between 5xx retries."""
    max_wait: float = 60.0
    """Cap for a single wait (``Retry-After``, secondary rate limit, backoff)."""
    seconds_between_writes: float | None = 1.0
    """GitHub asks integrations to space content-creating requests (PyGithub's throttle)."""


def settings_from_env(environ: Mapping[str, str], token: str | None = None) -> Settings:
    """Token from ``token`` (an input), else ``GITHUB_TOKEN`` / ``GH_TOKEN``; API URL from
    ``GITHUB_API_URL`` (GitHub Enterprise: ``https://host/api/v3``). Retry and timeout knobs
    from ``GITFLOW_AGENTS_GITHUB_{TIMEOUT,RETRIES,BACKOFF,MAX_WAIT,WRITE_DELAY}``."""
    token = token or environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN") or ""
    if not token:
        raise UsageError(
            "no GitHub token: pass the action's github-token input or set GITHUB_TOKEN"
        )

    def number(name: str, default: float) -> float:
        raw = environ.get(f"GITFLOW_AGENTS_GITHUB_{name}", "").strip()
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise UsageError(
                f"GITFLOW_AGENTS_GITHUB_{name}: expected a number, got {raw!r}"
            ) from None
        if value < 0:
            raise UsageError(f"GITFLOW_AGENTS_GITHUB_{name}: must not be negative")
        return value

    delay = number("WRITE_DELAY", 1.0)
    return Settings(
        token=token,
        api_url=(environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
        timeout=number("TIMEOUT", 15.0),
        retries=int(number("RETRIES", 4)),
        backoff=number("BACKOFF", 1.0),
        max_wait=number("MAX_WAIT", 60.0),
        seconds_between_writes=delay or None,
    )


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str
    author: str
    head_sha: str
    base_sha: str
    head_ref: str
    base_ref: str
    head_repo: str | None
    """``owner/name`` of the head repository (None when the fork was deleted)."""
    base_repo: str
    draft: bool
    html_url: str

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo


@dataclass(frozen=True)
class PullFile:
    filename: str
    status: str
    patch: str | None
    """The unified diff hunks; None for binary files and diffs GitHub found too large."""


@dataclass(frozen=True)
class Comment:
    """An issue (conversation) comment or a pull request review comment."""

    id: int
    author: str
    body: str
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class InlineComment:
    """One comment of a review: on ``line`` (or ``start_line``..``line``) of the new file."""

    path: str
    line: int
    body: str
    start_line: int | None = None

    def to_api(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "line": self.line, "side": "RIGHT"}
        if self.start_line is not None and self.start_line < self.line:
            data.update(start_line=self.start_line, start_side="RIGHT")
        data["body"] = self.body
        return data


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict):
        text = str(data.get("message") or "")
        details = [
            str(e.get("message") or e.get("code") or e) if isinstance(e, dict) else str(e)
            for e in data.get("errors") or []
        ]
        return "; ".join(filter(None, [text, *details])) or str(exc.status)
    return str(data or exc.status)


@contextlib.contextmanager
def _translated(what: str, retries: int) -> Iterator[None]:
    """Turn PyGithub/requests failures into our errors, naming the request."""
    try:
        yield
    except GithubException as exc:
        message = f"GitHub API: {what}: HTTP {exc.status}: {_message(exc)}"
        if exc.status in (403, 404) and not _is_rate_limit(exc):
            raise GitHubForbidden(message) from None
        if exc.status == 422:
            raise GitHubRejected(message) from None
        if exc.status >= 500 or _is_rate_limit(exc):
            message += f" (after {retries} retries)"
        raise GitHubError(message) from None
    except requests.exceptions.RetryError as exc:
        raise GitHubError(
            f"GitHub API: {what}: still failing after {retries} retries: {exc}"
        ) from None
    except requests.exceptions.RequestException as exc:
        raise GitHubError(
            f"GitHub API: {what}: {type(exc).__name__}: {exc} (after {retries} retries)"
        ) from None


def _is_rate_limit(exc: GithubException) -> bool:
    if isinstance(exc, github.RateLimitExceededException):
        return True
    headers = exc.headers or {}
    if any(key.lower() == "retry-after" for key in headers):
        return True
    return "rate limit" in _message(exc).lower()


# ---------------------------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------------------------


def make_retry(settings: Settings) -> GithubRetry:
    """PyGithub's retry policy, bounded: ``settings.retries`` attempts, every wait capped.

    PATCH is added to the retried methods (editing the sticky comment is idempotent);
    ``raise_on_status=False`` hands the last response to PyGithub when retries run out, so the
    error names GitHub's status and message rather than urllib3's.
    """
    return GithubRetry(
        total=settings.retries,
        backoff_factor=settings.backoff,
        backoff_max=settings.max_wait,
        retry_after_max=int(settings.max_wait),
        secondary_rate_wait=settings.max_wait,
        max_rate_limit_wait=settings.max_wait,
        allowed_methods=frozenset({"GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"}),
        raise_on_status=False,
    )


class Client:
    """One authenticated connection to one GitHub (github.com or Enterprise)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._github = Github(
            auth=Auth.Token(settings.token),
            base_url=settings.api_url,
            timeout=int(max(1, settings.timeout)),
            retry=make_retry(settings),
            seconds_between_requests=None,
            seconds_between_writes=settings.seconds_between_writes,
            user_agent=f"gitflow-agents/{__version__}",
            lazy=True,
        )

    def _call(self, what: str) -> contextlib.AbstractContextManager[None]:
        return _translated(what, self.settings.retries)

    def _repo(self, repo: str) -> Any:
        return self._github.get_repo(repo)

    # -- identity and permissions --------------------------------------------------------------

    def login(self) -> str | None:
        """The login our token writes as; None when the token may not ask (``GITHUB_TOKEN``
        gets 403 on ``GET /user``: the caller then uses ``ACTIONS_BOT_LOGIN``)."""
        if self.settings.token.startswith("ghs_"):
            return None  # an installation token (GITHUB_TOKEN, GitHub App): no user to ask for
        try:
            with self._call("GET /user"):
                return str(self._github.get_user().login)
        except GitHubForbidden:
            return None

    def permission(self, repo: str, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none`` (``maintain`` reads as write)."""
        with self._call(f"GET /repos/{repo}/collaborators/{login}/permission"):
            return str(self._repo(repo).get_collaborator_permission(login))

    # -- pull requests ---------------------------------------------------------------------------

    def pull(self, repo: str, number: int) -> PullRequest:
        with self._call(f"GET /repos/{repo}/pulls/{number}"):
            pr = self._repo(repo).get_pull(number)
            head_repo = pr.head.repo.full_name if pr.head.repo is not None else None
            return PullRequest(
                number=pr.number,
                title=pr.title or "",
                author=pr.user.login if pr.user is not None else "",
                head_sha=pr.head.sha,
                base_sha=pr.base.sha,
                head_ref=pr.head.ref,
                base_ref=pr.base.ref,
                head_repo=head_repo,
                base_repo=pr.base.repo.full_name,
                draft=bool(pr.draft),
                html_url=pr.html_url or "",
            )

    def pull_files(self, repo: str, number: int) -> list[PullFile]:
        with self._call(f"GET /repos/{repo}/pulls/{number}/files"):
            pr = self._repo(repo).get_pull(number)
            return [PullFile(f.filename, f.status, f.patch) for f in pr.get_files()]

    # -- conversation comments ------------------------------------------------------------------

    def issue_comments(self, repo: str, number: int) -> list[Comment]:
        with self._call(f"GET /repos/{repo}/issues/{number}/comments"):
            issue = self._repo(repo).get_issue(number)
            return [
                Comment(c.id, c.user.login if c.user else "", c.body or "")
                for c in issue.get_comments()
            ]

    def create_issue_comment(self, repo: str, number: int, body: str) -> Comment:
        with self._call(f"POST /repos/{repo}/issues/{number}/comments"):
            made = self._repo(repo).get_issue(number).create_comment(body)
            return Comment(made.id, made.user.login if made.user else "", made.body or "")

    def edit_issue_comment(self, repo: str, number: int, comment_id: int, body: str) -> None:
        with self._call(f"PATCH /repos/{repo}/issues/comments/{comment_id}"):
            self._repo(repo).get_issue(number).get_comment(comment_id).edit(body)

    def delete_issue_comment(self, repo: str, number: int, comment_id: int) -> None:
        with self._call(f"DELETE /repos/{repo}/issues/comments/{comment_id}"):
            self._repo(repo).get_issue(number).get_comment(comment_id).delete()

    # -- reviews ----------------------------------------------------------------------------------

    def review_comments(self, repo: str, number: int) -> list[Comment]:
        with self._call(f"GET /repos/{repo}/pulls/{number}/comments"):
            pr = self._repo(repo).get_pull(number)
            return [
                Comment(c.id, c.user.login if c.user else "", c.body or "", c.path, c.line)
                for c in pr.get_review_comments()
            ]

    def create_review(
        self, repo: str, number: int, commit_sha: str, body: str, comments: Sequence[InlineComment]
    ) -> int:
        """One review with every comment in it (event COMMENT); its id."""
        with self._call(f"POST /repos/{repo}/pulls/{number}/reviews"):
            pr = self._repo(repo).get_pull(number)
            commit = self._repo(repo).get_commit(commit_sha)
            made = pr.create_review(
                commit=commit,
                body=body,
                event="COMMENT",
                comments=[c.to_api() for c in comments],
            )
            return int(made.id)

    def create_review_comment(
        self, repo: str, number: int, commit_sha: str, comment: InlineComment
    ) -> int:
        """One inline comment on its own (the fallback when a batched review is refused)."""
        with self._call(f"POST /repos/{repo}/pulls/{number}/comments"):
            pr = self._repo(repo).get_pull(number)
            made = pr.create_review_comment(
                body=comment.body,
                commit=commit_sha,
                path=comment.path,
                line=comment.line,
                side="RIGHT",
                **(
                    {"start_line": comment.start_line, "start_side": "RIGHT"}
                    if comment.start_line is not None and comment.start_line < comment.line
                    else {}
                ),
            )
            return int(made.id)

    # -- statuses ---------------------------------------------------------------------------------

    def create_status(
        self,
        repo: str,
        sha: str,
        *,
        state: str,
        context: str,
        description: str,
        target_url: str | None = None,
    ) -> None:
        with self._call(f"POST /repos/{repo}/statuses/{sha[:12]}"):
            extra = {"target_url": target_url} if target_url else {}
            self._repo(repo).get_commit(sha).create_status(
                state=state, description=description, context=context, **extra
            )

    # -- check runs -----------------------------------------------------------------------------

    def create_check_run(
        self,
        repo: str,
        head_sha: str,
        *,
        name: str,
        conclusion: str,
        output: Mapping[str, Any],
        details_url: str | None = None,
    ) -> int:
        """A completed check run on ``head_sha``; its id (needs a GitHub App token with
        ``checks: write``, such as the workflow's ``GITHUB_TOKEN``)."""
        with self._call(f"POST /repos/{repo}/check-runs"):
            extra = {"details_url": details_url} if details_url else {}
            made = self._repo(repo).create_check_run(
                name=name,
                head_sha=head_sha,
                status="completed",
                conclusion=conclusion,
                output=dict(output),
                **extra,
            )
            return int(made.id)


def connect(settings: Settings) -> Client:
    return Client(settings)


def from_env(environ: Mapping[str, str] | None = None, token: str | None = None) -> Client:
    """A client configured from the environment (see ``settings_from_env``)."""
    return Client(settings_from_env(os.environ if environ is None else environ, token))
