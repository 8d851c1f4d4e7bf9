"""The small frozen values the GitHub boundary (``client.py``) hands out and takes in.

No PyGithub object ever leaves ``client.py``; these do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    state: str = "open"
    """``open`` or ``closed`` (a merged pull request is closed and ``merged``)."""
    merged: bool = False
    body: str = ""
    labels: tuple[str, ...] = ()
    auto_merge: str | None = None
    """The method GitHub's auto-merge is armed with (``merge``, ``squash``, ``rebase``): REST's
    ``auto_merge`` (GraphQL's ``autoMergeRequest.mergeMethod`` in the list of open pull
    requests, ``api/open_pulls.py``); None when none is armed."""

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo


@dataclass(frozen=True)
class MergeGroup:
    """A merge queue's group (the ``merge_group`` of the webhook): ``head_sha`` is the commit
    the queue built on ``base_sha`` with every queued change; refs are full (``refs/heads/…``)."""

    head_sha: str
    base_sha: str
    head_ref: str
    base_ref: str

    @property
    def label(self) -> str:
        return f"merge group {self.base_ref.removeprefix('refs/heads/')} {self.head_sha[:12]}"


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
    bot: bool = False
    """Written by a bot account (``user.type == "Bot"``: a GitHub App, such as Actions)."""
    app: str | None = None
    """Slug of the GitHub App it was written through (``performed_via_github_app``)."""
    review_id: int | None = None
    """A review comment: the review it belongs to."""
    reply_to: int | None = None
    """A review comment: the comment it answers (``in_reply_to_id``)."""
    commit: str | None = None
    """A review comment: the commit it was made on (``original_commit_id``)."""


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
