"""The open pull requests into a branch with the newest state of one status context on each
head, in one GraphQL request per 100 (``open_pulls``), and the REST reads it saves otherwise.

REST needs one ``GET /pulls`` per 100 and then one ``GET /commits/{sha}/statuses`` per pull
request; a plan of 20 open step pull requests paid 21 reads for every update of its plan comment
(benchmarks/tend_requests.py). GraphQL's ``Status.context(name:)`` is the newest status of that
context on the commit, what ``commits.newest_state`` reads. The head is the head branch's tip
(``headRef.target``); its state counts only while that is ``headRefOid`` (a push between the
two is asked again through REST). The armed auto-merge's method (``autoMergeRequest``, REST's
``auto_merge``) is read with them: ``plan tend --auto-merge`` arms a green pull request that has
none without a read of its own. A token whose GraphQL request fails or is refused (an error
answer, a 403) gets the REST reads instead, so nothing works less than before: ``HeadStates``
asks REST for every head GraphQL did not answer. The query is sent exactly as written here (it
is in tests/data/github-graphql/operations.graphql, against which the stand-in's schema was
trimmed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitflow_agents.base.errors import GitHubError
from gitflow_agents.github.api.commits import newest_state
from gitflow_agents.github.api.threads import graphql_nodes
from gitflow_agents.github.api.values import PullRequest

if TYPE_CHECKING:
    from gitflow_agents.github.api.client import Client

OPEN_PULLS_QUERY = (
    "query OpenPullRequests($owner: String!, $name: String!, $base: String!, "
    "$context: String!, $cursor: String) { repository(owner: $owner, name: $name) "
    "{ pullRequests(first: 100, after: $cursor, states: [OPEN], baseRefName: $base, "
    "orderBy: {field: CREATED_AT, direction: DESC}) { pageInfo { hasNextPage endCursor } "
    "nodes { number title url isDraft headRefName headRefOid baseRefName baseRefOid "
    "author { login } headRepository { nameWithOwner } autoMergeRequest { mergeMethod } "
    "labels(first: 100) { nodes { name } } headRef { target { oid ... on Commit "
    "{ status { context(name: $context) { state } } } } } } } } }"
)


class HeadStates:
    """The newest state of status context ``context`` per head commit: those the bulk read
    answered (None: no such status), the others asked through REST once each."""

    def __init__(
        self, client: Client, repo: str, context: str, known: dict[str, str | None]
    ) -> None:
        self._client, self._repo, self._context = client, repo, context
        self._known = dict(known)

    def state(self, sha: str) -> str | None:
        if sha not in self._known:
            self._known[sha] = newest_state(self._client, self._repo, sha, self._context)
        return self._known[sha]


def open_pulls(
    client: Client, repo: str, base: str, context: str
) -> tuple[list[PullRequest], HeadStates]:
    """The open pull requests into ``base``, newest first, and the newest state of ``context``
    on their heads: GraphQL, else REST (module doc)."""
    try:
        pulls, known = _graphql(client, repo, base, context)
    except GitHubError:  # no GraphQL for this token, or GitHub's error there: REST as before
        return client.pulls.open_into(repo, base), HeadStates(client, repo, context, {})
    return pulls, HeadStates(client, repo, context, known)


def _graphql(
    client: Client, repo: str, base: str, context: str
) -> tuple[list[PullRequest], dict[str, str | None]]:
    owner, name = repo.split("/", 1)

    def pull_requests(data: Any) -> dict[str, Any]:
        found = ((data or {}).get("repository") or {}).get("pullRequests")
        if not isinstance(found, dict):
            raise GitHubError(f"GitHub GraphQL: no repository {repo}")
        return found

    variables = {"owner": owner, "name": name, "base": base, "context": context}
    what = f"open pull requests into {base}"
    pulls: list[PullRequest] = []
    known: dict[str, str | None] = {}
    for node in graphql_nodes(client, what, OPEN_PULLS_QUERY, variables, pull_requests):
        pull, state = _pull(node, repo)
        pulls.append(pull)
        if state != _UNKNOWN:
            known[pull.head_sha] = state
    return pulls, known


_UNKNOWN = "unknown"  # the head branch's tip is not the pull request's head (a push between)


def _pull(node: dict[str, Any], repo: str) -> tuple[PullRequest, str | None]:
    """A pull request node as our value, and its head's state (``_UNKNOWN`` when unread)."""
    head_repo = (node.get("headRepository") or {}).get("nameWithOwner")
    labels = (node.get("labels") or {}).get("nodes") or []
    armed = (node.get("autoMergeRequest") or {}).get("mergeMethod")
    pull = PullRequest(
        number=int(node["number"]),
        title=str(node.get("title") or ""),
        author=str((node.get("author") or {}).get("login") or ""),
        head_sha=str(node["headRefOid"]),
        base_sha=str(node.get("baseRefOid") or ""),
        head_ref=str(node["headRefName"]),
        base_ref=str(node.get("baseRefName") or ""),
        head_repo=str(head_repo) if head_repo else None,
        base_repo=repo,
        draft=bool(node.get("isDraft")),
        html_url=str(node.get("url") or ""),
        labels=tuple(str(label["name"]) for label in labels if isinstance(label, dict)),
        auto_merge=str(armed).lower() if armed else None,
    )
    target = (node.get("headRef") or {}).get("target") or {}
    if target.get("oid") != pull.head_sha:
        return pull, _UNKNOWN
    context = (target.get("status") or {}).get("context")
    state = context.get("state") if isinstance(context, dict) else None
    return pull, state.lower() if isinstance(state, str) else None
