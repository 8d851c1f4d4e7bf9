"""The stand-in's GraphQL endpoint: queries validated against GitHub's schema, GitHub's errors.

PyGithub's ``PullRequest.enable_automerge`` is what the product sends (through
``Client.enable_automerge``); these tests pin that the stand-in would catch a query GitHub
would refuse, and answers the refusals GitHub gives, as GitHub gives them (HTTP 200, ``errors``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from gitflow_agents.base.errors import GitHubError
from tests.conftest import DATA
from tests.github_standin import GitHubStandIn, client_for, gh, graphql_path, simple_pull
from tests.standin_graphql import validate

__all__ = ["gh"]

ENABLE = (
    "mutation Mutation($input: EnablePullRequestAutoMergeInput!) { "
    "enablePullRequestAutoMerge(input: $input) { actor { login } clientMutationId } }"
)

DISABLE = (
    "mutation Mutation($input: DisablePullRequestAutoMergeInput!) { "
    "disablePullRequestAutoMerge(input: $input) { actor { login } clientMutationId } }"
)


def post(
    gh: GitHubStandIn, query: str, variables: dict[str, Any], token: str = "tok-write"
) -> dict[str, Any]:
    url = f"http://127.0.0.1:{gh.port}{graphql_path(gh.prefix)}"
    request = urllib.request.Request(
        url,
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
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
    client_for(gh).pulls.enable_automerge(
        gh.full_name, 7, method="squash", expected_head=pull.head_sha
    )
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
        client_for(gh).pulls.enable_automerge(
            gh.full_name, 7, method="merge", expected_head=expected
        )
    assert caught.value.exit_code == 4
    assert pull.auto_merge is None


# --- every answer is the query executed against the schema --------------------------------------

OPERATIONS = DATA / "github-graphql" / "operations.graphql"


def test_what_the_product_sends_is_an_operation_the_subset_was_trimmed_for(
    gh: GitHubStandIn,
) -> None:
    """The subset keeps only what ``operations.graphql`` uses: the query PyGithub sends must be
    one of them (else run trim_schema.py again with it), and the subset must accept all."""
    from graphql import parse, print_ast
    from graphql import validate as validate_query
    from graphql.language import DocumentNode

    from tests.standin_graphql import schema

    pull = simple_pull(gh)
    client_for(gh).pulls.enable_automerge(
        gh.full_name, 7, method="merge", expected_head=pull.head_sha
    )
    client_for(gh).pulls.disable_automerge(gh.full_name, 7)
    sent = gh.requests("POST", "graphql$")
    assert len(sent) == 2
    operations = parse(OPERATIONS.read_text(encoding="utf-8"))
    for alone in operations.definitions:  # PyGithub names each of its mutations "Mutation"
        assert validate_query(schema(), DocumentNode(definitions=(alone,))) == []
    for request in sent:
        printed = print_ast(parse(request.body["query"]))
        assert printed in [print_ast(d) for d in operations.definitions]


def test_the_answer_has_exactly_the_selected_fields_and_the_actors_type(gh: GitHubStandIn) -> None:
    pull = simple_pull(gh)
    variables = {"input": {"pullRequestId": "PR_7", "expectedHeadOid": pull.head_sha}}
    answer = post(gh, ENABLE, variables)
    assert answer == {
        "data": {"enablePullRequestAutoMerge": {"actor": {"login": "gitflow-bot"},
                                                "clientMutationId": None}}
    }  # fmt: skip
    assert pull.auto_merge == {"merge_method": "merge", "enabled_by": "gitflow-bot"}  # default
    typed = ENABLE.replace(
        "actor { login }", "actor { __typename login ... on Bot { resourcePath } }"
    )
    pull.auto_merge = None
    answer = post(gh, typed, variables)
    assert answer["data"]["enablePullRequestAutoMerge"]["actor"] == {
        "__typename": "User",
        "login": "gitflow-bot",
    }
    assert not gh.violations  # asked of a Bot only: a User's answer has no resourcePath


def test_a_refusal_is_githubs_error_entry_beside_a_null(gh: GitHubStandIn) -> None:
    pull = simple_pull(gh, state="closed")
    answer = post(
        gh, ENABLE, {"input": {"pullRequestId": "PR_7", "expectedHeadOid": pull.head_sha}}
    )
    assert answer["data"] == {"enablePullRequestAutoMerge": None}
    [error] = answer["errors"]
    assert error["type"] == "UNPROCESSABLE" and error["path"] == ["enablePullRequestAutoMerge"]
    assert error["message"] == "Pull request Pull request is closed"
    assert error["locations"] and set(error["locations"][0]) == {"line", "column"}
    assert not gh.violations


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"actor": {"__typename": "User", "login": "x", "url": "u", "resourcePath": "/x"}},
         "non-nullable field User.avatarUrl"),
        ({"actor": {"__typename": "Team", "login": "x"}}, "Team"),
        ({"actor": {"login": "x", "avatarUrl": "a", "url": "u", "resourcePath": "/x"}},
         "Actor"),
        ({"clientMutationId": ["not", "a", "string"]}, "String cannot represent"),
    ],
)  # fmt: skip
def test_an_answer_the_schema_cannot_give_is_a_problem(payload: dict[str, Any], says: str) -> None:
    """The stand-in's own data is held to the schema: a missing non-null field, a type the
    interface does not have (or none), a value of the wrong type."""
    from tests.standin_graphql import execute

    query = ENABLE.replace("actor { login }", "actor { avatarUrl login resourcePath url }")
    variables = {"input": {"pullRequestId": "PR_1"}}
    _, problems = execute(query, variables, {"enablePullRequestAutoMerge": lambda input: payload})
    assert any(says in p for p in problems), problems


# --- disablePullRequestAutoMerge -------------------------------------------------------------


def test_disabling_clears_the_armed_auto_merge_and_the_rest_pull_shows_it(
    gh: GitHubStandIn,
) -> None:
    pull = simple_pull(gh, auto_merge={"merge_method": "rebase", "enabled_by": "gitflow-bot"})
    rest = client_for(gh)._json("GET", f"/repos/{gh.full_name}/pulls/7")
    assert rest["auto_merge"]["merge_method"] == "rebase"
    answer = post(gh, DISABLE, {"input": {"pullRequestId": "PR_7"}})
    assert answer == {
        "data": {"disablePullRequestAutoMerge": {"actor": {"login": "gitflow-bot"},
                                                 "clientMutationId": None}}
    }  # fmt: skip
    assert pull.auto_merge is None
    assert client_for(gh)._json("GET", f"/repos/{gh.full_name}/pulls/7")["auto_merge"] is None
    assert not gh.violations


@pytest.mark.parametrize(
    ("arrange", "token", "message", "kind"),
    [
        (lambda pull: None, "tok-write", "Can't disable auto-merge for this pull request.",
         "UNPROCESSABLE"),  # none armed: never, or disabled already
        (lambda pull: setattr(pull, "merged", True) or setattr(pull, "state", "closed"),
         "tok-write", "Can't disable auto-merge for this pull request.", "UNPROCESSABLE"),
        (lambda pull: None, "tok-read", "Resource not accessible by integration", "FORBIDDEN"),
    ],
)  # fmt: skip
def test_disabling_refusals_are_githubs_error_entries(
    gh: GitHubStandIn, arrange: Any, token: str, message: str, kind: str
) -> None:
    armed = token == "tok-read"
    pull = simple_pull(
        gh, auto_merge={"merge_method": "rebase", "enabled_by": "x"} if armed else None
    )
    arrange(pull)
    answer = post(gh, DISABLE, {"input": {"pullRequestId": "PR_7"}}, token)
    assert answer["data"] == {"disablePullRequestAutoMerge": None}
    [error] = answer["errors"]
    assert (error["message"], error["type"]) == (message, kind)
    assert error["path"] == ["disablePullRequestAutoMerge"]
    assert (pull.auto_merge is not None) == armed and not gh.violations


def test_a_graphql_fault_can_name_the_mutation_it_fails_and_store_it_first(
    gh: GitHubStandIn,
) -> None:
    """``fail("POST", "graphql/FIELD", store=True)``: GitHub applied that mutation and the
    answer was lost (a 502); other GraphQL requests are answered."""
    pull = simple_pull(gh)
    gh.fail("POST", "graphql/disablePullRequestAutoMerge", 502, store=True)
    variables = {"input": {"pullRequestId": "PR_7", "mergeMethod": "REBASE"}}
    assert "errors" not in post(gh, ENABLE, variables) and pull.auto_merge is not None
    with pytest.raises(urllib.error.HTTPError) as lost:
        post(gh, DISABLE, {"input": {"pullRequestId": "PR_7"}})
    assert lost.value.code == 502 and pull.auto_merge is None  # applied, then the 502


def test_disable_automerge_through_pygithub(gh: GitHubStandIn) -> None:
    simple_pull(gh, auto_merge={"merge_method": "rebase", "enabled_by": "gitflow-bot"})
    client = client_for(gh)
    assert client.pulls.get(gh.full_name, 7).auto_merge == "rebase"  # REST's auto_merge
    client.pulls.disable_automerge(gh.full_name, 7)
    assert client.pulls.get(gh.full_name, 7).auto_merge is None
    client.pulls.disable_automerge(gh.full_name, 7)  # none armed: GitHub refuses, and it is done
    assert len(gh.requests("POST", "graphql$")) == 2 and not gh.violations


def test_disable_automerge_applied_before_a_502_is_read_not_retried(gh: GitHubStandIn) -> None:
    pull = simple_pull(gh, auto_merge={"merge_method": "rebase", "enabled_by": "gitflow-bot"})
    gh.fail("POST", "graphql/disablePullRequestAutoMerge", 502, store=True)
    client_for(gh).pulls.disable_automerge(gh.full_name, 7)
    assert pull.auto_merge is None and len(gh.requests("POST", "graphql$")) == 1


def test_disable_automerge_github_refuses_while_it_stays_armed_is_exit_4(
    gh: GitHubStandIn,
) -> None:
    pull = simple_pull(gh, auto_merge={"merge_method": "rebase", "enabled_by": "gitflow-bot"})
    with pytest.raises(GitHubError, match="Resource not accessible") as caught:
        client_for(gh, token="tok-read").pulls.disable_automerge(gh.full_name, 7)
    assert caught.value.exit_code == 4 and pull.auto_merge is not None
    pull.auto_merge, pull.merged, pull.state = None, True, "closed"  # GitHub merged it first
    with pytest.raises(GitHubError, match="Can't disable auto-merge"):
        client_for(gh).pulls.disable_automerge(gh.full_name, 7)
