"""Pull requests as a ``Client`` gets, finds, opens, updates, lists the files of, labels and
auto-merges them.

``Pulls`` is the client's ``pulls`` (``client.pulls.create(...)``), part of the GitHub boundary
(PyGithub is imported in ``client.py`` only): it reaches GitHub through the client's transport
(``_call``: one attempt translated, retried by ``retry.py``) and hands out frozen values
(``PullRequest``, ``PullFile``). Opening a pull request is a write that creates something, so
it is reconciled like a comment: after an answer that may hide a stored write, or GitHub's 422
"A pull request already exists for owner:branch", the open pull request for that head is looked
up and returned, so a retried request never opens a second one.
Auto-merge is PyGithub's ``PullRequest.enable_automerge`` and ``disable_automerge`` (the GraphQL
mutations ``enablePullRequestAutoMerge`` and ``disablePullRequestAutoMerge``); whether it is
armed, and with which method, is the REST pull request's ``auto_merge`` (``PullRequest.auto_merge``);
docs/github.md, "Plan steps as pull requests".
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gitflow_agents.base.errors import GitHubError
from gitflow_agents.github.api.retry import GitHubForbidden, GitHubRejected
from gitflow_agents.github.api.values import PullFile, PullRequest

if TYPE_CHECKING:  # the client owns its Pulls (client.py imports this module)
    from gitflow_agents.github.api.client import Client

ALREADY_EXISTS = "a pull request already exists for"
"""GitHub's 422 when the head has an open pull request against that base (lower-cased)."""


def pull_value(pr: Any) -> PullRequest:
    """A PyGithub ``PullRequest`` as our frozen value."""
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
        state=pr.state or "open",
        merged=bool(pr.merged),
        body=pr.body or "",
        labels=tuple(label.name for label in pr.labels or ()),
        auto_merge=_armed_method(pr.auto_merge),
    )


def _armed_method(auto_merge: Any) -> str | None:
    """REST's ``auto_merge`` (null while none is armed) as its merge method, lower-cased."""
    if not isinstance(auto_merge, dict):
        return None
    return str(auto_merge.get("merge_method") or "merge").lower()


class Pulls:
    """The pull request calls of one ``Client`` (see the module doc)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def get(self, repo: str, number: int) -> PullRequest:
        client = self._client
        return client._call(
            f"GET /repos/{repo}/pulls/{number}",
            lambda: pull_value(client._repo(repo).get_pull(number)),
        )

    def for_head(
        self, repo: str, branch: str, *, base: str | None = None, state: str = "open"
    ) -> list[PullRequest]:
        """The pull requests whose head is ``branch`` of ``repo`` itself (not a fork's branch
        of that name), newest first; ``state``: open, closed or all."""
        client = self._client
        owner = repo.split("/", 1)[0]
        extra = {"base": base} if base else {}

        def get() -> list[PullRequest]:
            found = client._repo(repo).get_pulls(state=state, head=f"{owner}:{branch}", **extra)
            return [pull_value(pr) for pr in found]

        return client._call(f"GET /repos/{repo}/pulls?head={owner}:{branch}", get)

    def open_into(self, repo: str, base: str) -> list[PullRequest]:
        """The open pull requests into ``base``, newest first: one request per 100 (the plan
        at a glance reads every step's at once, ``github/pr/plan_comment.py``)."""
        client = self._client

        def get() -> list[PullRequest]:
            found = client._repo(repo).get_pulls(state="open", base=base)
            return [pull_value(pr) for pr in found]

        return client._call(f"GET /repos/{repo}/pulls?base={base}", get)

    def create(
        self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool = False
    ) -> PullRequest:
        """Open a pull request from ``head`` (a branch of ``repo``) into ``base``; the open one
        for that head when GitHub already has it (a retried request, a 422 "already exists")."""
        client = self._client

        def create() -> PullRequest:
            made = client._repo(repo).create_pull(
                base=base, head=head, title=title, body=body, draft=draft
            )
            return pull_value(made)

        def find() -> PullRequest | None:
            return next(iter(self.for_head(repo, head, base=base)), None)

        try:
            return client._call(f"POST /repos/{repo}/pulls", create, find=find, creates=True)
        except GitHubRejected as exc:
            found = find() if ALREADY_EXISTS in str(exc).lower() else None
            if found is None:
                raise
            return found

    def update(
        self, repo: str, number: int, *, title: str | None = None, body: str | None = None
    ) -> None:
        """Set the title and/or the body (only those given: a field a human is editing is not
        written back as we read it); repeating it is harmless."""
        fields = {k: v for k, v in (("title", title), ("body", body)) if v is not None}
        if not fields:
            return
        path = f"/repos/{repo}/pulls/{number}"
        self._client._call(f"PATCH {path}", lambda: self._client._json("PATCH", path, fields))

    def reopen(self, repo: str, number: int) -> None:
        """Reopen a closed (not merged) pull request; repeating it is harmless. GitHubError
        when GitHub refuses (its head branch is gone, or an open one has that head)."""
        path = f"/repos/{repo}/pulls/{number}"
        state = {"state": "open"}
        self._client._call(f"PATCH {path}", lambda: self._client._json("PATCH", path, state))

    def files(self, repo: str, number: int) -> list[PullFile]:
        """The files the pull request changes, each with its patch."""
        client = self._client

        def get() -> list[PullFile]:
            pr = client._repo(repo).get_pull(number)
            return [PullFile(f.filename, f.status, f.patch) for f in pr.get_files()]

        return client._call(f"GET /repos/{repo}/pulls/{number}/files", get)

    def add_label(self, repo: str, number: int, name: str) -> None:
        """Add label ``name`` (GitHub creates a missing one; adding it twice is harmless)."""
        path = f"/repos/{repo}/issues/{number}/labels"
        self._client._call(
            f"POST {path}", lambda: self._client._json("POST", path, {"labels": [name]})
        )

    def remove_label(self, repo: str, number: int, name: str) -> None:
        """Remove label ``name``; one that is not there (404) is fine."""
        path = f"/repos/{repo}/issues/{number}/labels/{quote(name, safe='')}"
        with contextlib.suppress(GitHubForbidden):  # 404: not labelled (any more)
            self._client._call(f"DELETE {path}", lambda: self._client._json("DELETE", path))

    def enable_automerge(self, repo: str, number: int, *, method: str, expected_head: str) -> None:
        """GitHub merges the pull request with ``method`` (merge, squash, rebase) once its
        required checks pass, and only while its head is ``expected_head``. GitHubError (exit 4)
        naming GitHub's reason when it refuses (auto-merge not allowed in the repository, a head
        that moved on, a draft)."""
        client = self._client
        client._call(
            f"POST graphql enablePullRequestAutoMerge #{number}",
            lambda: (
                client._repo(repo)
                .get_pull(number)
                .enable_automerge(merge_method=method.upper(), expected_head_oid=expected_head)
            ),
        )

    def disable_automerge(self, repo: str, number: int) -> None:
        """GitHub no longer merges the open pull request by itself: its armed auto-merge is
        disabled. Done when the pull request reads as open with none armed afterwards, however
        GitHub answered: after a 5xx (GitHub may have applied it) it is read before a retry, and
        a refusal met because none is armed any more ("Can't disable auto-merge for this pull
        request.", GitHub's answer to a retry of a call it had applied, or to one someone else
        made first) is fine. GitHubError (exit 4) while it stays armed, or once it merged."""
        client = self._client

        def disarmed() -> bool | None:
            pull = self.get(repo, number)
            return True if pull.auto_merge is None and pull.state == "open" else None

        def disable() -> bool:
            client._repo(repo).get_pull(number).disable_automerge()
            return True

        what = f"POST graphql disablePullRequestAutoMerge #{number}"
        try:
            client._call(what, disable, find=disarmed, creates=True)
        except GitHubError:
            if disarmed() is None:
                raise
