"""The stand-in's GraphQL endpoint: every query validated against GitHub's own schema.

``POST /graphql`` (``/api/graphql`` beside an Enterprise-style ``/api/v3``, where PyGithub's
``Requester.graphql_url`` sends it) parses the query and validates it, with its variables,
against ``tests/data/github-graphql/schema.subset.graphql`` (npm ``@octokit/graphql-schema``
15.26.1, trimmed) using graphql-core; a violation is recorded in ``server.violations`` (the
``gh`` fixture fails the test) and answered as GitHub answers an invalid query. The one mutation
implemented is ``enablePullRequestAutoMerge``, with GitHub's refusals (HTTP 200 with
``errors``, as GitHub answers GraphQL): auto-merge not allowed in the repository, a head that is
not ``expectedHeadOid`` ("Head branch was modified", GitHub's wording for a moved head), a draft,
a pull request already mergeable ("clean status": GitHub merges nothing automatically then),
a closed one, and a read-only token.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from tests.github_standin import GitHubStandIn

SCHEMA_PATH = Path(__file__).parent / "data" / "github-graphql" / "schema.subset.graphql"


@functools.cache
def schema() -> Any:
    """GitHub's schema, built once per process. ``assume_valid``: the schema is GitHub's and
    breaks one rule graphql-core adds (an implementation field deprecated where its interface's
    is not); what is validated is every query against it."""
    from graphql import build_ast_schema, parse

    document = parse(SCHEMA_PATH.read_text(encoding="utf-8"), no_location=True)
    return build_ast_schema(document, assume_valid=True)


def _error(message: str, kind: str = "UNPROCESSABLE", path: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"type": kind, "message": message, "locations": []}
    if path is not None:
        error["path"] = [path]
    return error


def validate(query: str, variables: dict[str, Any]) -> list[str]:
    """Problems of ``query`` with ``variables`` against the schema ([] when it is valid)."""
    from graphql import GraphQLError, parse
    from graphql import validate as validate_query
    from graphql.execution.values import get_variable_values
    from graphql.language import OperationDefinitionNode

    try:
        document = parse(query)
    except GraphQLError as exc:
        return [exc.message]
    problems = [e.message for e in validate_query(schema(), document)]
    if problems:
        return problems
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            coerced = get_variable_values(
                schema(), definition.variable_definitions or [], variables or {}
            )
            if isinstance(coerced, list):
                problems += [e.message for e in coerced]
    return problems


def handle(s: GitHubStandIn, raw: bytes, authorization: str) -> tuple[int, Any]:
    """One GraphQL request: (HTTP status, body)."""
    token = s.state.tokens.get(authorization.split(" ", 1)[1] if " " in authorization else "")
    if token is None:
        return 401, {
            "message": "Bad credentials",
            "documentation_url": "https://docs.github.com/graphql",
        }
    try:
        request = json.loads(raw or b"{}")
    except json.JSONDecodeError:
        return 400, {"message": "Problems parsing JSON"}
    query, variables = str(request.get("query") or ""), request.get("variables") or {}
    problems = validate(query, variables)
    if problems:
        s.violations.append(f"GraphQL query invalid against GitHub's schema: {problems}")
        return 200, {"errors": [_error(p, "INVALID") for p in problems]}
    if "enablePullRequestAutoMerge" not in query:
        s.violations.append(f"GraphQL operation the stand-in does not implement: {query[:80]}")
        return 200, {"errors": [_error("not implemented by the stand-in")]}
    return 200, _enable_auto_merge(s, variables.get("input") or {}, token)


def _enable_auto_merge(s: GitHubStandIn, given: dict[str, Any], token: Any) -> dict[str, Any]:
    from tests.standin_pulls import checks_pass, refresh

    name = "enablePullRequestAutoMerge"

    def refused(message: str, kind: str = "UNPROCESSABLE") -> dict[str, Any]:
        return {"data": {name: None}, "errors": [_error(message, kind, name)]}

    node = str(given.get("pullRequestId") or "")
    number = int(node.removeprefix("PR_")) if node.startswith("PR_") and node[3:].isdigit() else 0
    pull = s.state.pulls.get(number)
    if pull is None:
        return refused(f"Could not resolve to a node with the global id of '{node}'", "NOT_FOUND")
    if not token.can_write:
        return refused(
            f"{token.login} does not have permission to enable auto-merge on this pull request.",
            "FORBIDDEN",
        )
    if pull.live:
        refresh(s, pull)
    if not s.state.allow_auto_merge:
        return refused("Pull request Auto merge is not allowed for this repository")
    if pull.state != "open":
        return refused("Pull request is closed")
    expected = given.get("expectedHeadOid")
    if expected is not None and expected != pull.head_sha:
        return refused("Head branch was modified. Review and try the merge again.")
    if pull.draft:
        return refused("Can't enable auto-merge for this pull request.")
    if checks_pass(s, pull.head_sha):
        return refused("Pull request is in clean status")
    method = str(given.get("mergeMethod") or "MERGE").lower()
    pull.auto_merge = {"merge_method": method, "enabled_by": token.login}
    actor = s.user(token.login)
    return {
        "data": {
            name: {
                "actor": {
                    "avatarUrl": "https://github.example/avatar.png",
                    "login": actor["login"],
                    "resourcePath": f"/{actor['login']}",
                    "url": actor["html_url"],
                },
                "clientMutationId": given.get("clientMutationId"),
            }
        }
    }
