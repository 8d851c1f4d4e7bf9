"""The stand-in's ``repository.pullRequests`` (GraphQL, executed by ``tests/standin_graphql.py``
against GitHub's schema): the pull requests of the repository, filtered by ``states`` and
``baseRefName``, ordered by ``orderBy`` (``CREATED_AT``: by number, as the stand-in opens them),
paginated with opaque cursors (``first`` up to 100), each with the fields
``gitflow_agents/github/api/open_pulls.py`` selects: its armed auto-merge (``autoMergeRequest``,
null while none is), its head branch's tip (``headRef.target``,
a ``Commit``; null when the branch is gone) and on it ``status.context(name:)``, the newest
status of that context (null when none; ``status`` null when the commit has no status at all),
as GitHub's combined status has it. A head branch that is gone closes its pull request
(``standin_pulls.refresh``), so an open one always has its ``headRef``.
"""

from __future__ import annotations

from typing import Any

from tests.github_standin import GitHubStandIn, Pull


def pull_requests(s: GitHubStandIn) -> Any:
    """The resolver of ``Repository.pullRequests``."""
    from tests.standin_pulls import refresh
    from tests.standin_threads import _connection, _cursor

    def resolve(
        info: Any,
        first: int | None = None,
        after: str | None = None,
        states: list[str] | None = None,
        baseRefName: str | None = None,  # GitHub's argument name
        orderBy: dict[str, str] | None = None,  # GitHub's argument name
        **_: Any,
    ) -> dict[str, Any]:
        pulls = []
        for pull in s.state.pulls.values():
            if pull.live:
                refresh(s, pull)
            state = "MERGED" if pull.merged else pull.state.upper()
            if states and state not in states:
                continue
            if baseRefName is not None and pull.base_ref != baseRefName:
                continue
            pulls.append(pull)
        newest_first = (orderBy or {}).get("direction") == "DESC"
        pulls.sort(key=lambda p: -p.number if newest_first else p.number)
        shown, start = _connection(pulls, first, after)
        end = start + len(shown)
        return {
            "pageInfo": {
                "hasNextPage": end < len(pulls),
                "endCursor": _cursor(end - 1) if shown else None,
            },
            "nodes": [_node(s, pull) for pull in shown],
        }

    return resolve


def _node(s: GitHubStandIn, pull: Pull) -> dict[str, Any]:
    author = s.user(pull.author)
    head_repo = pull.head_repo or s.full_name
    return {
        "number": pull.number,
        "title": pull.title,
        "url": f"https://github.example/{s.full_name}/pull/{pull.number}",
        "isDraft": pull.draft,
        "headRefName": pull.head_ref,
        "headRefOid": pull.head_sha,
        "baseRefName": pull.base_ref,
        "baseRefOid": pull.base_sha,
        "author": {
            "__typename": "Bot" if author.get("type") == "Bot" else "User",
            "login": author["login"],
        },
        "headRepository": {"nameWithOwner": head_repo},
        "autoMergeRequest": _auto_merge(pull),
        "labels": lambda info, **_: {"nodes": [{"name": name} for name in pull.labels]},
        "headRef": {"target": {"__typename": "Commit", "oid": pull.head_sha, **_status(s, pull)}},
    }


def _auto_merge(pull: Pull) -> dict[str, Any] | None:
    """``autoMergeRequest``: null while none is armed (REST's ``auto_merge`` null), else its
    method as GitHub's ``PullRequestMergeMethod`` enum names it."""
    method = (pull.auto_merge or {}).get("merge_method")
    return {"mergeMethod": str(method).upper()} if method else None


def _status(s: GitHubStandIn, pull: Pull) -> dict[str, Any]:
    found = s.statuses_for(pull.head_sha)
    if not found:
        return {"status": None}

    def context(info: Any, name: str) -> dict[str, Any] | None:
        newest = [entry for entry in found if entry["context"] == name]
        return {"state": newest[-1]["state"].upper()} if newest else None

    return {"status": {"context": context}}
