"""The GitHub boundary: the only module that imports PyGithub.

Everything else in ``gitflow_agents.github`` talks to GitHub through ``Client``, whose methods
take and return small frozen values, so the rest of the package never sees a PyGithub object.

Reliability is ours, not urllib3's: PyGithub is built with no transport retries, every failed
attempt is translated here (``_translated``) and ``retry.attempt`` decides whether and when to
try again, by GitHub's documented rules (docs/github.md, "Reliability"). A write that creates
something is never repeated blindly: after a 5xx or a broken connection the ``create_*`` method
first looks whether GitHub stored it anyway (``find``) and returns what it found. What still
fails becomes a ``GitHubError`` (exit 4) naming the request and the true number of tries; a
403/404 on a write (read-only token, fork PR) is ``GitHubForbidden`` so the action can degrade
instead of crashing, and a 422 is ``GitHubRejected`` so the caller can fall back.

Pull requests (get, find, open, update, files, labels, auto-merge) are the client's
``pulls`` (``pulls.Pulls``), which calls GitHub through this client.

Who the token writes as (``writer``) is learned from what GitHub answers to our own creations;
docs/github.md, "Who we are".
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException

from gitflow_agents import __version__
from gitflow_agents.base.errors import GitHubError
from gitflow_agents.github.api import retry
from gitflow_agents.github.api.pulls import Pulls
from gitflow_agents.github.api.retry import GitHubForbidden, GitHubRejected
from gitflow_agents.github.api.settings import DEFAULT_API_URL, Settings, settings_from_env
from gitflow_agents.github.api.values import Comment, InlineComment, PullFile, PullRequest

__all__ = [
    "ACTIONS_BOT_LOGIN",
    "DEFAULT_API_URL",
    "Client",
    "Comment",
    "GitHubForbidden",
    "GitHubRejected",
    "InlineComment",
    "PullFile",
    "PullRequest",
    "Settings",
    "connect",
    "from_env",
    "settings_from_env",
]

T = TypeVar("T")
PER_PAGE = 100
"""GitHub's largest page for every list we read (its default is 30)."""
ACTIONS_BOT_LOGIN = "github-actions[bot]"
"""Author of everything the Actions ``GITHUB_TOKEN`` writes (it cannot read ``GET /user``)."""


# ---------------------------------------------------------------------------------------------
# One attempt's failure, in our terms
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
def _translated(what: str) -> Iterator[None]:
    """One attempt's PyGithub/requests failure as our error (``retry`` reads its kind)."""
    try:
        yield
    except GithubException as exc:
        limited = retry.classify(exc.status, exc.headers or {}, _message(exc))
        if limited is not None:
            raise limited from None
        message = f"HTTP {exc.status}: {_message(exc)}"
        if exc.status in (403, 404):
            raise GitHubForbidden(f"GitHub API: {what}: {message}", exc.status) from None
        if exc.status == 422:
            raise GitHubRejected(f"GitHub API: {what}: {message}") from None
        if exc.status >= 500:
            raise retry.Transient(message, maybe_stored=True) from None
        raise GitHubError(f"GitHub API: {what}: {message}") from None
    except requests.exceptions.RequestException as exc:
        # A connection that was never made stored nothing; anything later may have.
        stored = not isinstance(exc, requests.exceptions.ConnectTimeout)
        raise retry.Transient(f"{type(exc).__name__}: {exc}", maybe_stored=stored) from None
    except ValueError as exc:
        # An answer that cannot be read: PyGithub parses every answer's rate-limit headers as
        # numbers (a proxy's ``x-ratelimit-reset: soon`` raises), JSON that is not JSON.
        raise GitHubError(f"GitHub API: {what}: an answer that could not be read ({exc})") from None


def _comment(data: Mapping[str, Any]) -> Comment:
    """An issue or review comment from GitHub's JSON (read as JSON: PyGithub would fetch each
    comment again for a field GitHub leaves out, such as ``in_reply_to_id``)."""
    user = data.get("user") or {}
    app = data.get("performed_via_github_app") or {}
    return Comment(
        int(data["id"]),
        str(user.get("login") or ""),
        str(data.get("body") or ""),
        data.get("path"),
        data.get("line"),
        bot=user.get("type") == "Bot",
        app=app.get("slug"),
        review_id=data.get("pull_request_review_id"),
        reply_to=data.get("in_reply_to_id"),
        commit=data.get("original_commit_id"),
    )


def _next_page(headers: Mapping[str, Any]) -> str | None:
    links = str(headers.get("link") or headers.get("Link") or "")
    for part in links.split(","):
        if 'rel="next"' in part:
            return part.split(";")[0].strip().strip("<>")
    return None


# ---------------------------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------------------------


class Client:
    """One authenticated connection to one GitHub (github.com or Enterprise)."""

    def __init__(self, settings: Settings, *, policy: retry.Policy | None = None) -> None:
        self.settings = settings
        self.policy = policy or retry.Policy(
            retries=settings.retries,
            backoff=settings.backoff,
            max_wait=settings.max_wait,
            budget=settings.wait_budget,
        )
        self.pulls = Pulls(self)
        """Pull requests: get, find, open, update, files, labels, auto-merge (``pulls.py``)."""
        self.writer: str | None = None
        """The login our writes appear under, once GitHub showed it (see ``_learn``)."""
        self.told_writer: str | None = None
        """The writer ``Identity`` warned differs from ``comment-author`` (one warning a run)."""
        self._user: str | None = None
        self._user_asked = False
        self._github = Github(
            auth=Auth.Token(settings.token),
            base_url=settings.api_url,
            timeout=int(max(1, settings.timeout)),
            retry=0,  # no transport retries: ``retry.attempt`` decides, and reconciles writes
            per_page=PER_PAGE,
            seconds_between_requests=None,
            seconds_between_writes=settings.seconds_between_writes,
            user_agent=f"gitflow-agents/{__version__}",
            lazy=True,
        )

    def _call(
        self,
        what: str,
        call: Callable[[], T],
        *,
        find: Callable[[], T | None] | None = None,
        creates: bool = False,
    ) -> T:
        def once() -> T:
            with _translated(what):
                return call()

        return retry.attempt(what, once, self.policy, find=find, creates=creates)

    def _repo(self, repo: str) -> Any:
        return self._github.get_repo(repo)

    def _json(self, verb: str, path: str, data: dict[str, Any] | None = None) -> Any:
        """One request by path (below the API URL); GitHub's JSON answer."""
        _, answer = self._github.requester.requestJsonAndCheck(
            verb, path, input=dict(data) if data is not None else None
        )
        return answer

    def _list(self, path: str) -> list[Comment]:
        """Every comment of a list endpoint, ``PER_PAGE`` at a time, following ``Link``."""
        found: list[Comment] = []
        url: str | None = path
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        while url is not None:
            headers, data = self._github.requester.requestJsonAndCheck("GET", url, params)
            found += [_comment(item) for item in data or []]
            url, params = _next_page(headers), None
        return found

    def _learn(self, login: str | None) -> None:
        """Something we created came back with its author: that is who this token writes as."""
        if login and self.writer is None:
            self.writer = login

    # -- identity and permissions --------------------------------------------------------------

    def login(self) -> str | None:
        """The token's user from ``GET /user``, asked once; None for an installation token
        (``GITHUB_TOKEN`` or a GitHub App's, which gets 403 there and is not even asked when it
        looks like one, ``ghs_``)."""
        if self.settings.token.startswith("ghs_") or self._user_asked:
            return self._user
        try:
            self._user = self._call("GET /user", lambda: str(self._github.get_user().login))
        except GitHubForbidden:
            self._user = None
        self._user_asked = True
        return self._user

    def check_repository(self, repo: str) -> None:
        """``GET /repos/{repo}``: the token is good and may read ``repo`` on this API. Raises
        GitHubError (exit 4) naming GitHub's answer: a bad token (401), a repository it does
        not know or the token may not see (404), an API that cannot be reached."""
        path = f"/repos/{repo}"
        self._call(f"GET {path}", lambda: self._json("GET", path))

    def permission(self, repo: str, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none`` (``maintain`` reads as write)."""
        return self._call(
            f"GET /repos/{repo}/collaborators/{login}/permission",
            lambda: str(self._repo(repo).get_collaborator_permission(login)),
        )

    # -- conversation comments ------------------------------------------------------------------

    def issue_comments(self, repo: str, number: int) -> list[Comment]:
        return self._call(
            f"GET /repos/{repo}/issues/{number}/comments",
            lambda: self._list(f"/repos/{repo}/issues/{number}/comments"),
        )

    def create_issue_comment(self, repo: str, number: int, body: str) -> Comment:
        """A new comment. After an answer that may hide a stored write, a comment of ours with
        exactly this body is looked for before the comment is posted again."""

        def create() -> Comment:
            return _comment(
                self._json("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
            )

        def find() -> Comment | None:
            return next(
                (
                    c
                    for c in self.issue_comments(repo, number)
                    if c.body == body and self.writer in (None, c.author)
                ),
                None,
            )

        made = self._call(
            f"POST /repos/{repo}/issues/{number}/comments", create, find=find, creates=True
        )
        self._learn(made.author)
        return made

    def edit_issue_comment(self, repo: str, number: int, comment_id: int, body: str) -> None:
        self._call(
            f"PATCH /repos/{repo}/issues/comments/{comment_id}",
            lambda: self._repo(repo).get_issue(number).get_comment(comment_id).edit(body),
        )

    def delete_issue_comment(self, repo: str, number: int, comment_id: int) -> None:
        """Delete; a comment already gone (404, e.g. a retried delete that had worked) is fine."""
        with contextlib.suppress(_Gone):
            self._call(
                f"DELETE /repos/{repo}/issues/comments/{comment_id}",
                _gone_ok(
                    lambda: self._repo(repo).get_issue(number).get_comment(comment_id).delete()
                ),
            )

    # -- reviews ----------------------------------------------------------------------------------

    def review_comments(self, repo: str, number: int) -> list[Comment]:
        return self._call(
            f"GET /repos/{repo}/pulls/{number}/comments",
            lambda: self._list(f"/repos/{repo}/pulls/{number}/comments"),
        )

    def _find_inline(
        self, repo: str, number: int, comments: Sequence[InlineComment]
    ) -> Comment | None:
        """One of ``comments`` as GitHub stored it (same place, same body), if it is there."""
        wanted = {(c.path, c.line, c.body) for c in comments}
        return next(
            (
                c
                for c in self.review_comments(repo, number)
                if (c.path, c.line, c.body) in wanted and self.writer in (None, c.author)
            ),
            None,
        )

    def create_review(
        self, repo: str, number: int, commit_sha: str, body: str, comments: Sequence[InlineComment]
    ) -> int:
        """One review with every comment in it (event COMMENT); its id. A review is stored
        whole or not at all, so after an answer that may hide a stored write, finding one of
        its comments means it is there."""

        def create() -> tuple[int, str | None]:
            made = self._json(
                "POST",
                f"/repos/{repo}/pulls/{number}/reviews",
                {
                    "commit_id": commit_sha,
                    "body": body,
                    "event": "COMMENT",
                    "comments": [c.to_api() for c in comments],
                },
            )
            return int(made["id"]), (made.get("user") or {}).get("login")

        def find() -> tuple[int, str | None] | None:
            found = self._find_inline(repo, number, comments)
            return (found.review_id or 0, found.author) if found is not None else None

        review_id, author = self._call(
            f"POST /repos/{repo}/pulls/{number}/reviews", create, find=find, creates=True
        )
        self._learn(author)
        return review_id

    def create_review_comment(
        self, repo: str, number: int, commit_sha: str, comment: InlineComment
    ) -> int:
        """One inline comment on its own (the fallback when a batched review is refused)."""

        def create() -> Comment:
            data = {"commit_id": commit_sha, **comment.to_api()}
            return _comment(self._json("POST", f"/repos/{repo}/pulls/{number}/comments", data))

        made = self._call(
            f"POST /repos/{repo}/pulls/{number}/comments",
            create,
            find=lambda: self._find_inline(repo, number, [comment]),
            creates=True,
        )
        self._learn(made.author)
        return made.id

    def delete_review_comment(self, repo: str, comment_id: int) -> None:
        """Delete one review comment (a duplicate); one already gone is fine."""
        with contextlib.suppress(_Gone):
            self._call(
                f"DELETE /repos/{repo}/pulls/comments/{comment_id}",
                _gone_ok(
                    lambda: self._json("DELETE", f"/repos/{repo}/pulls/comments/{comment_id}")
                ),
            )

    def edit_review(self, repo: str, number: int, review_id: int, body: str) -> None:
        """Replace a submitted review's body (``PUT``; a review itself cannot be deleted)."""
        self._call(
            f"PUT /repos/{repo}/pulls/{number}/reviews/{review_id}",
            lambda: self._json(
                "PUT", f"/repos/{repo}/pulls/{number}/reviews/{review_id}", {"body": body}
            ),
        )

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
        """Set a commit status. Repeating it is harmless (the newest status of a context is
        the one that counts), so it is retried like a read."""

        def create() -> str | None:
            extra = {"target_url": target_url} if target_url else {}
            made = (
                self._repo(repo)
                .get_commit(sha)
                .create_status(state=state, description=description, context=context, **extra)
            )
            return made.creator.login if made.creator is not None else None

        self._learn(self._call(f"POST /repos/{repo}/statuses/{sha[:12]}", create))

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
        ``checks: write``, such as the workflow's ``GITHUB_TOKEN``). After an answer that may
        hide a stored write, a check run of that name and summary on the commit counts."""

        def create() -> int:
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

        def find() -> int | None:
            runs = self._call(
                f"GET /repos/{repo}/commits/{head_sha[:12]}/check-runs",
                lambda: list(self._repo(repo).get_commit(head_sha).get_check_runs(check_name=name)),
            )
            summary = output.get("summary")
            return next((int(r.id) for r in runs if r.output.summary == summary), None)

        return self._call(f"POST /repos/{repo}/check-runs", create, find=find, creates=True)


class _Gone(Exception):
    """A 404 on a delete: the object is not there (any more)."""


def _gone_ok(call: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            call()
        except GithubException as exc:
            if exc.status == 404:
                raise _Gone from None
            raise

    return run


def connect(settings: Settings) -> Client:
    return Client(settings)


def from_env(environ: Mapping[str, str] | None = None, token: str | None = None) -> Client:
    """A client configured from the environment (see ``settings_from_env``)."""
    return Client(settings_from_env(os.environ if environ is None else environ, token))
