"""The stand-in's review threads: replies (REST) and ``reviewThreads`` / ``resolveReviewThread``
(GraphQL, executed by ``tests/standin_graphql.py`` against GitHub's schema).

A thread is a top-level review comment and the replies to it (``in_reply_to_id``), oldest
first, as GitHub groups them; its node id is ``PRRT_<top-level comment id>``. GitHub's rules
kept here: a reply goes to a top-level comment only ("Replies to replies are not supported",
the REST description), a read-only token gets 403, and ``resolveReviewThread`` is refused with
GraphQL's ``FORBIDDEN`` ("Resource not accessible by integration", HTTP 200) for an App's token
without the permission (``Token.resolve_threads`` False, or a read-only token), and with
``INSUFFICIENT_SCOPES`` for a personal token without the scope; an unknown thread id is
``NOT_FOUND``. ``reviewThreads`` paginates with opaque cursors (``first`` up to 100), as GitHub's
connections do; a thread's ``comments`` connection gives ``totalCount`` and its first ``first``.
"""

from __future__ import annotations

import base64
from typing import Any

from tests.github_standin import (
    GitHubStandIn,
    Request,
    Token,
    _body_text,
    _pull,
    _write,
    not_found,
    route,
    validation_failed,
)
from tests.standin_graphql import Refused
from tests.standin_pull_list import pull_requests

FORBIDDEN = "Resource not accessible by integration"


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _index(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        return int(base64.b64decode(cursor).decode().rsplit(":", 1)[1]) + 1
    except (ValueError, IndexError):
        raise Refused(
            f"`{cursor}` does not appear to be a valid cursor.", "INVALID_CURSOR"
        ) from None


def threads_of(s: GitHubStandIn, number: int) -> list[list[dict[str, Any]]]:
    """The threads of pull request ``number``: each its comments, top-level one first."""
    url = f"{s.repo_url}/pulls/{number}"
    comments = sorted(
        (c for c in s.state.review_comments.values() if c["pull_request_url"] == url),
        key=lambda c: int(c["id"]),
    )
    threads: dict[int, list[dict[str, Any]]] = {}
    for comment in comments:
        root = comment.get("in_reply_to_id") or comment["id"]
        threads.setdefault(int(root), []).append(comment)
    return list(threads.values())


def _connection(items: list[Any], first: int | None, after: str | None) -> tuple[list[Any], int]:
    if first is not None and not 1 <= first <= 100:
        raise Refused(
            f"Requesting {first} records on the connection exceeds the `first` limit of 100 "
            "records.",
            "EXCESSIVE_PAGINATION",
        )
    start = _index(after)
    return items[start : start + (first or 100)], start


def _thread_node(s: GitHubStandIn, comments: list[dict[str, Any]]) -> dict[str, Any]:
    root = int(comments[0]["id"])

    def page(info: Any, first: int | None = None, after: str | None = None, **_: Any) -> Any:
        shown, _start = _connection(comments, first, after)
        return {
            "totalCount": len(comments),
            "nodes": [{"fullDatabaseId": str(c["id"])} for c in shown],
        }

    return {"id": f"PRRT_{root}", "isResolved": root in s.state.resolved_threads, "comments": page}


def repository(s: GitHubStandIn, owner: str, name: str, **_: Any) -> dict[str, Any] | None:
    """``Query.repository``: the stand-in's one repository, its pull requests' threads."""
    if f"{owner}/{name}" != s.full_name:
        return None

    def pull_request(info: Any, number: int) -> dict[str, Any] | None:
        if number not in s.state.pulls:
            return None
        threads = threads_of(s, number)

        def review_threads(
            info: Any, first: int | None = None, after: str | None = None, **_: Any
        ) -> dict[str, Any]:
            shown, start = _connection(threads, first, after)
            end = start + len(shown)
            return {
                "pageInfo": {
                    "hasNextPage": end < len(threads),
                    "endCursor": _cursor(end - 1) if shown else None,
                },
                "nodes": [_thread_node(s, t) for t in shown],
            }

        return {"reviewThreads": review_threads}

    return {"pullRequest": pull_request, "pullRequests": pull_requests(s)}


def resolve_review_thread(s: GitHubStandIn, given: dict[str, Any], token: Token) -> dict[str, Any]:
    """``Mutation.resolveReviewThread``: the thread, now resolved; GitHub's refusals."""
    node = str(given.get("threadId") or "")
    root = int(node.removeprefix("PRRT_")) if node.removeprefix("PRRT_").isdigit() else 0
    comment = s.state.review_comments.get(root)
    if not node.startswith("PRRT_") or comment is None or comment.get("in_reply_to_id"):
        raise Refused(f"Could not resolve to a node with the global id of '{node}'", "NOT_FOUND")
    if not token.can_write or not token.resolve_threads:
        if token.app is None:  # a personal token: its scopes are what it lacks
            raise Refused(
                "Your token has not been granted the required scopes to execute this query. The "
                "'resolveReviewThread' field requires one of the following scopes: ['repo'].",
                "INSUFFICIENT_SCOPES",
            )
        raise Refused(FORBIDDEN, "FORBIDDEN")
    s.state.resolved_threads.add(root)
    return {"thread": {"id": node, "isResolved": True}}


@route("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies")
def create_reply(s: GitHubStandIn, req: Request) -> tuple[int, Any]:
    pull = _pull(s, req)
    _write(req)
    parent = s.state.review_comments.get(int(req.params["comment_id"]))
    if parent is None or parent["pull_request_url"] != f"{s.repo_url}/pulls/{pull.number}":
        raise not_found()
    if parent.get("in_reply_to_id"):
        raise validation_failed("Replies to replies are not supported")
    spec = {"path": parent["path"], "line": parent.get("line"), "body": _body_text(req)}
    comment = s._review_comment_json(
        pull, int(parent["pull_request_review_id"]), req.token.login, spec, parent["commit_id"]
    )
    comment["in_reply_to_id"] = int(parent["id"])
    s.state.review_comments[int(comment["id"])] = comment
    return 201, comment


def human_reply(s: GitHubStandIn, comment_id: int, body: str, login: str = "alice") -> int:
    """A reply by a person in the thread of ``comment_id`` (stored as GitHub stores one)."""
    parent = s.state.review_comments[comment_id]
    number = int(parent["pull_request_url"].rsplit("/", 1)[1])
    spec = {"path": parent["path"], "line": parent.get("line"), "body": body}
    comment = s._review_comment_json(
        s.state.pulls[number],
        int(parent["pull_request_review_id"]),
        login,
        spec,
        parent["commit_id"],
    )
    comment["in_reply_to_id"] = comment_id
    s.state.review_comments[int(comment["id"])] = comment
    return int(comment["id"])
