"""A pull request's review threads, read and resolved through GitHub's GraphQL API, and a reply
posted to one through REST.

REST has no review threads: which comments form a thread, and whether it is resolved, is
GraphQL only (``PullRequest.reviewThreads``, ``resolveReviewThread``). A thread is read as its
node id, ``isResolved`` and the REST ids of its comments (``fullDatabaseId``, the same number
as a REST comment's ``id``), so who wrote each comment is judged from the REST comments the
caller already has: GraphQL names a bot ``github-actions`` where REST says
``github-actions[bot]``. The operations are sent exactly as written here (they are the ones in
tests/data/github-graphql/operations.graphql, against which the stand-in's schema was trimmed).

GraphQL answers HTTP 200 with ``errors`` when it refuses: ``FORBIDDEN`` (an integration token
without the permission) and ``INSUFFICIENT_SCOPES`` (a personal token without the scope) become
``GitHubForbidden`` so the caller can degrade; any other error is a ``GitHubError`` (exit 4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitflow_agents.base.errors import GitHubError
from gitflow_agents.github.api.retry import GitHubForbidden

if TYPE_CHECKING:  # the threads are read through a Client (client.py holds PyGithub)
    from gitflow_agents.github.api.client import Client

THREADS_QUERY = (
    "query ReviewThreads($owner: String!, $name: String!, $number: Int!, $cursor: String) "
    "{ repository(owner: $owner, name: $name) { pullRequest(number: $number) "
    "{ reviewThreads(first: 100, after: $cursor) { pageInfo { hasNextPage endCursor } "
    "nodes { id isResolved comments(first: 100) { totalCount nodes { fullDatabaseId } } } } } } }"
)
RESOLVE_MUTATION = (
    "mutation ResolveReviewThread($input: ResolveReviewThreadInput!) "
    "{ resolveReviewThread(input: $input) { thread { id isResolved } } }"
)
REFUSALS = ("FORBIDDEN", "INSUFFICIENT_SCOPES")
"""GraphQL error types that mean: this token may not do that."""
MAX_PAGES = 100
"""At most this many pages of 100 threads are read (10,000 threads)."""


@dataclass(frozen=True)
class ReviewThread:
    id: str
    """The thread's GraphQL node id (what ``resolveReviewThread`` takes)."""
    resolved: bool
    comment_ids: tuple[int, ...]
    """The REST ids of its comments, oldest first (the first one opened the thread)."""
    complete: bool
    """False when the thread has more comments than were read (over 100)."""


def graphql(client: Client, what: str, query: str, variables: dict[str, Any]) -> Any:
    """The ``data`` of one GraphQL request, retried like any other read; GitHub's refusal as
    ``GitHubForbidden`` (``REFUSALS``) or ``GitHubError``."""
    requester = client._github.requester

    def once() -> Any:
        _, answer = requester.requestJsonAndCheck(
            "POST", requester.graphql_url, input={"query": query, "variables": variables}
        )
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if errors:
            first = errors[0] if isinstance(errors[0], dict) else {}
            message = f"GitHub GraphQL: {what}: {first.get('type')}: {first.get('message')}"
            if first.get("type") in REFUSALS:
                raise GitHubForbidden(message)
            raise GitHubError(message)
        return answer.get("data") if isinstance(answer, dict) else None

    return client._call(f"POST graphql {what}", once)


def _thread(node: dict[str, Any]) -> ReviewThread:
    comments = node.get("comments") or {}
    ids = tuple(
        int(c["fullDatabaseId"])
        for c in comments.get("nodes") or []
        if c and str(c.get("fullDatabaseId") or "").isdigit()
    )
    return ReviewThread(
        id=str(node["id"]),
        resolved=bool(node.get("isResolved")),
        comment_ids=ids,
        complete=int(comments.get("totalCount") or 0) <= len(ids),
    )


def graphql_nodes(
    client: Client,
    what: str,
    query: str,
    variables: dict[str, Any],
    connection: Callable[[Any], dict[str, Any]],
) -> Iterator[dict[str, Any]]:
    """The nodes of the paged connection ``connection(data)`` picks from each answer to
    ``query`` (which takes ``$cursor``), 100 a page, following ``endCursor``, at most
    ``MAX_PAGES`` pages."""
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = connection(graphql(client, what, query, {**variables, "cursor": cursor}))
        yield from (node for node in page.get("nodes") or [] if isinstance(node, dict))
        info = page.get("pageInfo") or {}
        cursor = info.get("endCursor")
        if not info.get("hasNextPage") or not cursor:
            return


def review_threads(client: Client, repo: str, number: int) -> list[ReviewThread]:
    """Every review thread of pull request ``number``, 100 a page, following ``endCursor``."""
    owner, name = repo.split("/", 1)

    def threads(data: Any) -> dict[str, Any]:
        pull = ((data or {}).get("repository") or {}).get("pullRequest")
        if pull is None:
            raise GitHubError(f"GitHub GraphQL: reviewThreads: no pull request #{number} in {repo}")
        return pull["reviewThreads"]  # type: ignore[no-any-return]

    variables = {"owner": owner, "name": name, "number": number}
    what = f"reviewThreads #{number}"
    return [
        _thread(node) for node in graphql_nodes(client, what, THREADS_QUERY, variables, threads)
    ]


def resolve_thread(client: Client, thread_id: str) -> None:
    """Mark the thread resolved (resolving a resolved thread again changes nothing)."""
    graphql(client, "resolveReviewThread", RESOLVE_MUTATION, {"input": {"threadId": thread_id}})


def reply(client: Client, repo: str, number: int, comment_id: int, body: str) -> int:
    """A reply in the thread of review comment ``comment_id``; its id. After an answer that
    may hide a stored write, a reply with this body to that comment is looked for first."""
    path = f"/repos/{repo}/pulls/{number}/comments/{comment_id}/replies"

    def create() -> int:
        return int(client._json("POST", path, {"body": body})["id"])

    def find() -> int | None:
        return next(
            (
                c.id
                for c in client.review_comments(repo, number)
                if c.reply_to == comment_id and c.body == body
            ),
            None,
        )

    return client._call(f"POST {path}", create, find=find, creates=True)
