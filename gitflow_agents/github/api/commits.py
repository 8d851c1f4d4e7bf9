"""Reads about commits that landed: a commit's newest status of a context, the pull requests a
commit belongs to, and a pull request's commits with their trees.

What the landed check of a push to the target needs (``github/action/landed.py``): one request
each, 100 items a page (a pull request's commits are read page by page; GitHub lists 250 at
most). Part of the GitHub boundary: it calls GitHub through the client's transport (``_call``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitflow_agents.github.api.client import Client

PER_PAGE = 100


@dataclass(frozen=True)
class CommitPull:
    """A pull request as ``GET /commits/{sha}/pulls`` lists it."""

    number: int
    head_sha: str
    merged: bool
    html_url: str


@dataclass(frozen=True)
class TreeCommit:
    sha: str
    tree: str


def _get(client: Client, path: str) -> Any:
    return client._call(f"GET {path.split('?')[0]}", lambda: client._json("GET", path))


def newest_state(client: Client, repo: str, sha: str, context: str) -> str | None:
    """The state of the newest status of ``context`` on ``sha`` (GitHub lists newest first);
    None when there is none."""
    found = _get(client, f"/repos/{repo}/commits/{sha}/statuses?per_page={PER_PAGE}")
    for status in found if isinstance(found, list) else []:
        if isinstance(status, dict) and status.get("context") == context:
            state = status.get("state")
            return state if isinstance(state, str) else None
    return None


@dataclass(frozen=True)
class CommitStatus:
    state: str
    description: str
    creator: str
    """The login that set it."""


def newest_status(client: Client, repo: str, sha: str, context: str) -> CommitStatus | None:
    """The newest status of ``context`` on ``sha``, with who set it; None when there is none."""
    found = _get(client, f"/repos/{repo}/commits/{sha}/statuses?per_page={PER_PAGE}")
    for status in found if isinstance(found, list) else []:
        if isinstance(status, dict) and status.get("context") == context:
            creator = status.get("creator") if isinstance(status.get("creator"), dict) else {}
            return CommitStatus(
                str(status.get("state") or ""),
                str(status.get("description") or ""),
                str((creator or {}).get("login") or ""),
            )
    return None


def pulls_of_commit(client: Client, repo: str, sha: str) -> list[CommitPull]:
    """The pull requests ``sha`` is the merge commit or a commit of."""
    found = _get(client, f"/repos/{repo}/commits/{sha}/pulls?per_page={PER_PAGE}")
    pulls = []
    for pull in found if isinstance(found, list) else []:
        head = pull.get("head") if isinstance(pull, dict) else None
        if not isinstance(head, dict) or not isinstance(pull.get("number"), int):
            continue
        pulls.append(
            CommitPull(
                number=pull["number"],
                head_sha=str(head.get("sha") or ""),
                merged=bool(pull.get("merged_at") or pull.get("merged")),
                html_url=str(pull.get("html_url") or ""),
            )
        )
    return pulls


def pull_trees(client: Client, repo: str, number: int) -> list[TreeCommit]:
    """Every commit of pull request ``number`` with its tree, oldest first."""
    commits: list[TreeCommit] = []
    page = 1
    while True:
        path = f"/repos/{repo}/pulls/{number}/commits?per_page={PER_PAGE}&page={page}"
        found = _get(client, path)
        items = found if isinstance(found, list) else []
        for item in items:
            tree = ((item.get("commit") or {}).get("tree") or {}).get("sha")
            if isinstance(item.get("sha"), str) and isinstance(tree, str):
                commits.append(TreeCommit(item["sha"], tree))
        if len(items) < PER_PAGE:
            return commits
        page += 1
