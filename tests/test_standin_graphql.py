"""The stand-in's GraphQL endpoint: queries validated against GitHub's schema, GitHub's errors.

PyGithub's ``PullRequest.enable_automerge`` is what the product sends (through
``Client.enable_automerge``); these tests pin that the stand-in would catch a query GitHub
would refuse, and answers the refusals GitHub gives, as GitHub gives them (HTTP 200, ``errors``).
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from gitflow_agents.errors import GitHubError
from tests.github_standin import GitHubStandIn, client_for, gh, graphql_path, simple_pull
from tests.standin_graphql import validate

__all__ = ["gh"]

ENABLE = (
    "mutation Mutation($input: EnablePullRequestAutoMergeInput!) { "
    "enablePullRequestAutoMerge(input: $input) { actor { login } clientMutationId } }"
)


def post(gh: GitHubStandIn, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    url = f"http://127.0.0.1:{gh.port}{graphql_path(gh.prefix)}"
    request = urllib.request.Request(
        url,
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Authorization": "token tok-write", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as answer:
        data: dict[str, Any] = json.loads(answer.read())
    return data


def test_the_graphql_url_of_an_enterprise_base_is_beside_it() -> None:
    assert graphql_path("/api/v3") == "/api/graphql"
    assert graphql_path("") == "/graphql"


def test_pygithubs_mutation_is_valid_and_a_wrong_one_is_not() -> None:
    variables = {"input": {"pullRequestId": "PR_1", "mergeMethod": "SQUASH"}}
    assert validate(ENABLE, variables) == []
    bad_enum = {"input": {"pullRequestId": "PR_1", "mergeMethod": "FAST_FORWARD"}}
    assert any("FAST_FORWARD" in p for p in validate(ENABLE, bad_enum))
    assert any("pullRequestId" in p for p in validate(ENABLE, {"input": {}}))
    wrong_field = ENABLE.replace("clientMutationId", "mergedAt")
    assert any("mergedAt" in p for p in validate(wrong_field, variables))


def test_an_invalid_query_is_a_violation_and_an_error_answer(gh: GitHubStandIn) -> None:
    answer = post(gh, ENABLE, {"input": {"mergeMethod": "SQUASH"}})
    assert answer["errors"] and "data" not in answer
    assert gh.violations
    gh.violations.clear()  # expected here: the fixture would fail the test on them


def test_enable_automerge_through_pygithub(gh: GitHubStandIn) -> None:
    pull = simple_pull(gh)
    client_for(gh).enable_automerge(gh.full_name, 7, method="squash", expected_head=pull.head_sha)
    assert pull.auto_merge == {"merge_method": "squash", "enabled_by": "gitflow-bot"}


@pytest.mark.parametrize(
    ("arrange", "message"),
    [
        (
            lambda gh, pull: setattr(gh.state, "allow_auto_merge", False),
            "Auto merge is not allowed",
        ),
        (lambda gh, pull: setattr(pull, "head_sha", "c" * 40), "Head branch was modified"),
        (lambda gh, pull: setattr(pull, "draft", True), "Can't enable auto-merge"),
        (lambda gh, pull: setattr(pull, "state", "closed"), "Pull request is closed"),
        (
            lambda gh, pull: gh.state.statuses.append(
                {"sha": pull.head_sha, "context": "gitflow-agents/review", "state": "success"}
            ),
            "Pull request is in clean status",
        ),
    ],
)
def test_githubs_refusals_reach_the_caller_as_exit_4_errors(
    gh: GitHubStandIn, arrange: Any, message: str
) -> None:
    pull = simple_pull(gh)
    expected = pull.head_sha
    arrange(gh, pull)
    with pytest.raises(GitHubError, match=message) as caught:
        client_for(gh).enable_automerge(gh.full_name, 7, method="merge", expected_head=expected)
    assert caught.value.exit_code == 4
    assert pull.auto_merge is None
