"""The stand-in's GraphQL endpoint: every query validated, every answer shaped, by GitHub's schema.

``POST /graphql`` (``/api/graphql`` beside an Enterprise-style ``/api/v3``, where PyGithub's
``Requester.graphql_url`` sends it) parses the query and validates it, with its variables,
against ``tests/data/github-graphql/schema.subset.graphql`` (npm ``@octokit/graphql-schema``
15.26.1, trimmed to what the product's operations use) with graphql-core; then it *executes*
the query against that schema, with resolvers that serve the stand-in's data, so the answer's
shape is the one GitHub's schema gives that query (only the fields it selects, an abstract type
resolved to a possible type) and an answer the schema cannot give (a null in a non-null field,
a value of the wrong type, a type the interface does not have) is a violation. A violation is
recorded in ``server.violations`` (the ``gh`` fixture fails the test); an invalid query is
answered as GitHub answers one. The review threads (``repository.pullRequest.reviewThreads`` and
the mutation ``resolveReviewThread``) are played by ``tests/standin_threads.py``, the open pull
requests with their heads' statuses (``repository.pullRequests``) by ``tests/standin_pull_list.py``. The other
mutations implemented are ``enablePullRequestAutoMerge``,
with GitHub's refusals (HTTP 200 with ``errors``, as GitHub answers GraphQL): auto-merge not
allowed in the repository, a head that is not ``expectedHeadOid``, a draft, a pull request
already mergeable ("clean status": GitHub merges nothing automatically then), a closed one, and a
read-only token; and ``disablePullRequestAutoMerge``, which clears the pull request's armed
auto-merge (REST ``auto_merge`` null again) and refuses a pull request with none armed (never
armed, disabled already, merged or closed) and a read-only token.
tests/data/github-graphql/README.md says which wordings are confirmed as GitHub's.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.github_standin import GitHubStandIn, Pull

SCHEMA_PATH = Path(__file__).parent / "data" / "github-graphql" / "schema.subset.graphql"


@functools.cache
def schema() -> Any:
    """GitHub's schema (the subset), built once per process: a few milliseconds. ``assume_valid``:
    the schema is GitHub's and breaks one rule graphql-core adds (an implementation field
    deprecated where its interface's is not); what is validated is every query against it."""
    from graphql import build_ast_schema, parse

    document = parse(SCHEMA_PATH.read_text(encoding="utf-8"), no_location=True)
    return build_ast_schema(document, assume_valid=True)


class Refused(Exception):
    """A mutation GitHub refuses: its message and GitHub's error ``type``."""

    def __init__(self, message: str, kind: str = "UNPROCESSABLE") -> None:
        super().__init__(message)
        self.kind = kind


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


def execute(
    query: str, variables: dict[str, Any], root: dict[str, Callable[..., Any]]
) -> tuple[dict[str, Any], list[str]]:
    """Run a valid ``query`` against the schema, each root field answered by ``root[name]``
    (called with its arguments as the schema coerced them): (the answer, as GitHub shapes it;
    what in it the schema refuses). A ``Refused`` raised by a resolver is GitHub's refusal: an
    ``errors`` entry (message, type, path, locations) beside the field's null, as GitHub sends
    it, and no problem."""
    from graphql import execute_sync, parse

    def resolve(field: Callable[..., Any]) -> Callable[..., Any]:
        return lambda info, **arguments: field(**arguments)

    result = execute_sync(
        schema(),
        parse(query),
        root_value={name: resolve(field) for name, field in root.items()},
        variable_values=variables,
    )
    answer: dict[str, Any] = {"data": result.data}
    problems, errors = [], []
    for error in result.errors or []:
        original = error.original_error
        if not isinstance(original, Refused):
            problems.append(f"{error.message} (at {error.path})")
            continue
        entry = _error(error.message, original.kind)
        entry["path"] = list(error.path or [])
        entry["locations"] = [
            {"line": loc.line, "column": loc.column} for loc in error.locations or []
        ]
        errors.append(entry)
    if errors:
        answer["errors"] = errors
    return answer, problems


def root_fields(raw: bytes) -> list[str]:
    """The root fields a GraphQL request's body asks ([] when it cannot be read)."""
    from graphql import GraphQLError

    try:
        return _root_fields(str(json.loads(raw or b"{}").get("query") or ""))
    except (GraphQLError, json.JSONDecodeError, AttributeError):
        return []


def _root_fields(query: str) -> list[str]:
    from graphql import parse
    from graphql.language import FieldNode, OperationDefinitionNode

    found = []
    for definition in parse(query).definitions:
        if isinstance(definition, OperationDefinitionNode):
            selections = definition.selection_set.selections
            found += [f.name.value for f in selections if isinstance(f, FieldNode)]
    return found


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
    from tests.standin_threads import repository, resolve_review_thread

    root = {
        "disablePullRequestAutoMerge": lambda input: _disable_auto_merge(s, input, token),
        "enablePullRequestAutoMerge": lambda input: _enable_auto_merge(s, input, token),
        "repository": lambda **given: repository(s, **given),
        "resolveReviewThread": lambda input: resolve_review_thread(s, input, token),
    }
    missing = [name for name in _root_fields(query) if name not in root]
    if missing:
        s.violations.append(f"GraphQL operation the stand-in does not implement: {missing}")
        return 200, {"errors": [_error("not implemented by the stand-in")]}
    answer, problems = execute(query, variables, root)
    if problems:
        s.violations.append(f"GraphQL answer GitHub's schema cannot give: {problems}")
    return 200, answer


def _enable_auto_merge(s: GitHubStandIn, given: dict[str, Any], token: Any) -> dict[str, Any]:
    """The mutation's payload (``_payload``), or ``Refused`` with GitHub's wording
    (tests/data/github-graphql/README.md)."""
    from tests.standin_pulls import checks_pass, refresh

    pull = _pull_of(s, given)
    if not token.can_write:
        raise Refused("Pull request User is not allowed to push to this repository")
    if pull.live:
        refresh(s, pull)
    if not s.state.allow_auto_merge:
        raise Refused("Auto merge is not allowed for this repository")
    if pull.state != "open":
        raise Refused("Pull request Pull request is closed")
    expected = given.get("expectedHeadOid")
    if expected is not None and expected != pull.head_sha:
        raise Refused("Head branch was modified. Review and try the merge again.")
    if pull.draft:
        raise Refused("Can't enable auto-merge for this pull request.")
    if checks_pass(s, pull.head_sha):
        raise Refused("Pull request Pull request is in clean status")
    method = str(given.get("mergeMethod") or "MERGE").lower()
    pull.auto_merge = {"merge_method": method, "enabled_by": token.login}
    return _payload(s, given, token)


def _disable_auto_merge(s: GitHubStandIn, given: dict[str, Any], token: Any) -> dict[str, Any]:
    """The pull request's auto-merge disarmed: the payload, as ``_enable_auto_merge``'s. GitHub
    answers ``Can't disable auto-merge for this pull request.`` for one with none armed (never
    armed, disabled already, merged: GitHub merged it meanwhile), and ``Resource not accessible
    by integration`` to a token that may not write (tests/data/github-graphql/README.md)."""
    from tests.standin_pulls import refresh

    pull = _pull_of(s, given)
    if not token.can_write:
        raise Refused("Resource not accessible by integration", "FORBIDDEN")
    if pull.live:
        refresh(s, pull)
    if pull.auto_merge is None or pull.state != "open":
        raise Refused("Can't disable auto-merge for this pull request.")
    pull.auto_merge = None
    return _payload(s, given, token)


def _pull_of(s: GitHubStandIn, given: dict[str, Any]) -> Pull:
    """The pull request a mutation's ``pullRequestId`` (``PR_<number>``) names, or GitHub's
    ``NOT_FOUND``."""
    node = str(given.get("pullRequestId") or "")
    number = int(node.removeprefix("PR_")) if node.startswith("PR_") and node[3:].isdigit() else 0
    pull = s.state.pulls.get(number)
    if pull is None:
        raise Refused(f"Could not resolve to a node with the global id of '{node}'", "NOT_FOUND")
    return pull


def _payload(s: GitHubStandIn, given: dict[str, Any], token: Any) -> dict[str, Any]:
    """An auto-merge mutation's payload (schema field names; ``__typename`` resolves
    ``Actor``)."""
    actor = s.user(token.login)
    return {
        "actor": {
            "__typename": "Bot" if actor.get("type") == "Bot" else "User",
            "avatarUrl": "https://github.example/avatar.png",
            "login": actor["login"],
            "resourcePath": f"/{actor['login']}",
            "url": actor["html_url"],
        },
        "clientMutationId": given.get("clientMutationId"),
    }
