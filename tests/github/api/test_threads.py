"""Review threads through GraphQL: every page read, the operations sent are the ones the schema
subset was trimmed for, refusals translated, a reply never posted twice."""

from __future__ import annotations

import pytest
from graphql import parse, print_ast

from gitflow_agents.base.errors import GitHubError
from gitflow_agents.github.api.retry import GitHubForbidden
from gitflow_agents.github.api.threads import reply, resolve_thread, review_threads
from tests.conftest import DATA
from tests.github_standin import GitHubStandIn, Token, client_for, gh, simple_pull
from tests.standin_threads import human_reply

__all__ = ["gh"]

REPO = "octo/demo"
OPERATIONS = DATA / "github-graphql" / "operations.graphql"


def _comments(gh: GitHubStandIn, count: int) -> list[int]:
    """``count`` top-level review comments of ours on PR 7, as a review stores them."""
    pull = simple_pull(gh)
    ids = []
    for n in range(count):
        spec = {"path": "app.py", "line": 2, "body": f"finding {n}"}
        made = gh._review_comment_json(pull, 1, "gitflow-bot", spec, pull.head_sha)
        gh.state.review_comments[int(made["id"])] = made
        ids.append(int(made["id"]))
    return ids


def test_more_than_a_hundred_threads_are_all_read(gh: GitHubStandIn) -> None:
    ids = _comments(gh, 130)
    human_reply(gh, ids[120], "why?")
    threads = review_threads(client_for(gh), REPO, 7)
    assert [t.comment_ids[0] for t in threads] == ids
    assert len(threads[120].comment_ids) == 2 and threads[120].complete
    queries = gh.requests("POST", "graphql$")
    assert [r.body["variables"]["cursor"] is None for r in queries] == [True, False]


def test_what_is_sent_is_an_operation_the_schema_subset_was_trimmed_for(gh: GitHubStandIn) -> None:
    ids = _comments(gh, 1)
    client = client_for(gh)
    (thread,) = review_threads(client, REPO, 7)
    resolve_thread(client, thread.id)
    assert gh.state.resolved_threads == {ids[0]}
    assert review_threads(client, REPO, 7)[0].resolved
    operations = [print_ast(d) for d in parse(OPERATIONS.read_text(encoding="utf-8")).definitions]
    for sent in gh.requests("POST", "graphql$"):
        assert print_ast(parse(sent.body["query"])) in operations


@pytest.mark.parametrize("app", [None, "github-actions"])  # INSUFFICIENT_SCOPES, FORBIDDEN
def test_a_token_without_the_permission_is_forbidden_and_an_unknown_thread_an_error(
    gh: GitHubStandIn, app: str | None
) -> None:
    _comments(gh, 1)
    gh.add_token("tok-noresolve", Token("gitflow-bot", resolve_threads=False, app=app))
    (thread,) = review_threads(client_for(gh), REPO, 7)
    with pytest.raises(GitHubForbidden):
        resolve_thread(client_for(gh, "tok-noresolve"), thread.id)
    with pytest.raises(GitHubError) as error:
        resolve_thread(client_for(gh), "PRRT_999999")
    assert not isinstance(error.value, GitHubForbidden)
    assert gh.state.resolved_threads == set()


def test_a_reply_github_stored_behind_a_502_is_not_posted_again(gh: GitHubStandIn) -> None:
    ids = _comments(gh, 1)
    gh.fail("POST", r"/replies$", 502, store=True)
    made = reply(client_for(gh), REPO, 7, ids[0], "fixed")
    replies = [c for c in gh.state.review_comments.values() if c.get("in_reply_to_id")]
    assert [int(c["id"]) for c in replies] == [made]
    assert replies[0]["in_reply_to_id"] == ids[0]


def test_a_thread_with_more_comments_than_one_page_says_it_is_incomplete(
    gh: GitHubStandIn,
) -> None:
    ids = _comments(gh, 1)
    for n in range(100):
        human_reply(gh, ids[0], f"reply {n}", login="gitflow-bot")
    (thread,) = review_threads(client_for(gh), REPO, 7)
    assert len(thread.comment_ids) == 100 and not thread.complete
