"""``api/open_pulls.py``: the open pull requests into a branch and their heads' newest gate
status, one GraphQL request per 100 against the stand-in (which validates and executes it with
GitHub's schema), and the REST reads instead when GraphQL fails or is refused."""

from __future__ import annotations

import pytest
from graphql import parse, print_ast

from gitflow_agents.github.action.status import CONTEXT, set_status
from gitflow_agents.github.api.open_pulls import open_pulls
from tests.conftest import DATA
from tests.github_standin import GitHubStandIn, Pull, client_for, gh

__all__ = ["gh"]

REPO = "octo/demo"
OPERATIONS = DATA / "github-graphql" / "operations.graphql"


def _pulls(gh: GitHubStandIn, count: int) -> list[str]:
    """``count`` open pull requests into main (1 … count, each its own head), one closed and
    one into another branch; the heads of the open ones."""
    heads = []
    for number in range(1, count + 1):
        head = f"{number:040x}"
        labels = ["gitflow-agents: conflict"] if number == 2 else []
        gh.add_pull(Pull(number, head, "b" * 40, [], head_ref=f"step-{number}", labels=labels))
        heads.append(head)
    gh.add_pull(Pull(count + 1, "c" * 40, "b" * 40, [], head_ref="gone", state="closed"))
    gh.add_pull(Pull(count + 2, "d" * 40, "b" * 40, [], head_ref="other", base_ref="release"))
    return heads


def _states(gh: GitHubStandIn, heads: list[str]) -> None:
    """Head 1: pending then success (the newest counts); head 2: failure, and another
    context's success after it; head 3: another context only; the rest: none."""
    client = client_for(gh)
    set_status(client, REPO, heads[0], "pending", "Review running")
    set_status(client, REPO, heads[0], "success", "Approved")
    set_status(client, REPO, heads[1], "failure", "2 findings")
    set_status(client, REPO, heads[1], "success", "ok", context="ci/other")
    set_status(client, REPO, heads[2], "success", "ok", context="ci/other")


def _answers(
    gh: GitHubStandIn, count: int
) -> tuple[list[tuple[int, str, tuple[str, ...]]], list[str | None]]:
    heads = _pulls(gh, count)
    _states(gh, heads)
    gh.log.clear()
    pulls, states = open_pulls(client_for(gh), REPO, "main", CONTEXT)
    found = [(p.number, p.head_sha, p.labels) for p in pulls]
    return found, [states.state(head) for head in heads]


def test_a_hundred_and_thirty_pull_requests_and_their_states_in_two_requests(
    gh: GitHubStandIn,
) -> None:
    found, states = _answers(gh, 130)
    assert [number for number, _, _ in found] == list(range(130, 0, -1))  # newest first
    assert found[-2] == (2, f"{2:040x}", ("gitflow-agents: conflict",))
    assert states == ["success", "failure", None] + [None] * 127
    assert [(r.method, r.path) for r in gh.log] == [("POST", "/graphql")] * 2  # no REST read
    operations = [print_ast(d) for d in parse(OPERATIONS.read_text(encoding="utf-8")).definitions]
    for sent in gh.log:
        assert print_ast(parse(sent.body["query"])) in operations


@pytest.mark.parametrize("status", [403, 502])
def test_graphql_refused_or_failing_gives_the_same_answer_through_rest(
    gh: GitHubStandIn, status: int
) -> None:
    gh.fail("POST", "graphql$", status, times=10)
    found, states = _answers(gh, 3)
    assert [(number, labels) for number, _, labels in found] == [
        (3, ()),
        (2, ("gitflow-agents: conflict",)),
        (1, ()),
    ]
    assert states == ["success", "failure", None]
    rest = [r.path for r in gh.log if r.method == "GET"]
    assert rest[0] == f"/repos/{REPO}/pulls" and len(rest) == 1 + 3  # the list, each head


def test_a_state_is_read_once_per_head(gh: GitHubStandIn) -> None:
    gh.fail("POST", "graphql$", 403)
    heads = _pulls(gh, 1)
    _, states = open_pulls(client_for(gh), REPO, "main", CONTEXT)
    gh.log.clear()
    assert states.state(heads[0]) is None and states.state(heads[0]) is None
    assert len(gh.log) == 1
