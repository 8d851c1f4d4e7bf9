"""Failing like GitHub fails: stored writes behind a 502, rate limits, and the true counts.

Every test drives the real ``Client`` against the stand-in. Waits are recorded, not slept
(``client_for(..., sleeps=[])``), so the tests are fast and no load can break them.
"""

from __future__ import annotations

import random
import time

import pytest

from gitflow_agents.base.errors import ExitCode, GitHubError
from gitflow_agents.github.api import retry
from gitflow_agents.github.api.client import InlineComment
from tests.github_standin import GitHubStandIn, client_for, gh, simple_pull

__all__ = ["gh"]

SHA = "a" * 40


# ---------------------------------------------------------------------------------------------
# A write GitHub stored although it answered 502/504: looked for, never posted twice
# ---------------------------------------------------------------------------------------------


def test_a_comment_stored_behind_a_502_is_found_not_posted_again(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.fail("POST", r"/issues/7/comments$", 502, store=True)
    made = client_for(gh, sleeps=[]).create_issue_comment(gh.full_name, 7, "hello")
    (stored,) = gh.comments_on(7)
    assert made.id == stored["id"] and made.body == "hello"
    assert len(gh.requests("POST", r"/issues/7/comments$")) == 1  # looked, found, done
    assert len(gh.requests("GET", r"/issues/7/comments$")) == 1


def test_a_comment_not_stored_behind_a_502_is_posted_once_more(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.fail("POST", r"/issues/7/comments$", 504)
    client_for(gh, sleeps=[]).create_issue_comment(gh.full_name, 7, "hello")
    assert [c["body"] for c in gh.comments_on(7)] == ["hello"]
    assert [r.status for r in gh.requests("POST", r"/issues/7/comments$")] == [504, 201]


def test_an_identical_comment_by_someone_else_does_not_count_as_ours(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    client = client_for(gh, sleeps=[])
    client.create_issue_comment(gh.full_name, 7, "first")  # the client now knows who it is
    gh.add_issue_comment(7, "mallory", "hello")
    gh.fail("POST", r"/issues/7/comments$", 502)
    client.create_issue_comment(gh.full_name, 7, "hello")
    assert [c["user"]["login"] for c in gh.comments_on(7)] == [
        "gitflow-bot",
        "mallory",
        "gitflow-bot",
    ]


def test_a_review_stored_behind_a_502_is_found_not_posted_again(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.fail("POST", r"/pulls/7/reviews$", 502, store=True)
    comments = [InlineComment("app.py", 2, "one"), InlineComment("app.py", 23, "two")]
    review_id = client_for(gh, sleeps=[]).create_review(gh.full_name, 7, SHA, "b", comments)
    assert list(gh.state.reviews) == [review_id]
    assert len(gh.state.review_comments) == 2
    assert len(gh.requests("POST", r"/pulls/7/reviews$")) == 1


def test_a_single_review_comment_stored_behind_a_504_is_found(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.fail("POST", r"/pulls/7/comments$", 504, store=True)
    made = client_for(gh, sleeps=[]).create_review_comment(
        gh.full_name, 7, SHA, InlineComment("app.py", 3, "alone", start_line=2)
    )
    assert list(gh.state.review_comments) == [made]
    assert len(gh.requests("POST", r"/pulls/7/comments$")) == 1


def test_a_check_run_stored_behind_a_502_is_found(gh: GitHubStandIn) -> None:
    gh.fail("POST", r"/check-runs$", 502, store=True)
    made = client_for(gh, "tok-actions", sleeps=[]).create_check_run(
        gh.full_name,
        SHA,
        name="gitflow-agents/findings",
        conclusion="success",
        output={"title": "t", "summary": "all good", "annotations": []},
    )
    assert list(gh.state.check_runs) == [made]
    assert len(gh.requests("POST", r"/check-runs$")) == 1
    assert gh.requests("GET", rf"/commits/{SHA}/check-runs$")[0].query["check_name"] == [
        "gitflow-agents/findings"
    ]


def test_a_status_is_simply_set_again(gh: GitHubStandIn) -> None:
    """A second status of the same context replaces the first: no need to look first."""
    gh.fail("POST", r"/statuses/", 502, store=True)
    client_for(gh, sleeps=[]).create_status(
        gh.full_name, SHA, state="pending", context="c", description="d"
    )
    assert [s["state"] for s in gh.statuses_for(SHA)] == ["pending", "pending"]
    assert gh.requests("GET") == []


def test_a_write_that_cannot_be_checked_is_not_retried_blindly(gh: GitHubStandIn) -> None:
    """When looking fails too, the write is not repeated: the run stops (exit 4)."""
    simple_pull(gh)
    gh.fail("POST", r"/issues/7/comments$", 502, store=True)
    gh.fail("GET", r"/issues/7/comments$", 401, times=5, message="Bad credentials")
    with pytest.raises(GitHubError, match="GET /repos/octo/demo/issues/7/comments: HTTP 401"):
        client_for(gh, sleeps=[]).create_issue_comment(gh.full_name, 7, "hello")
    assert len(gh.comments_on(7)) == 1
    assert len(gh.requests("POST", r"/issues/7/comments$")) == 1


def test_without_a_way_to_look_a_create_is_never_repeated() -> None:
    calls: list[int] = []

    def create() -> int:
        calls.append(1)
        raise retry.Transient("HTTP 502: Bad Gateway", maybe_stored=True)

    policy = retry.Policy(retries=4, backoff=0)
    with pytest.raises(GitHubError, match=r"HTTP 502.*not retried: GitHub may have stored it"):
        retry.attempt("POST /x", create, policy, creates=True)
    assert calls == [1]


# ---------------------------------------------------------------------------------------------
# Rate limits, as GitHub documents them
# ---------------------------------------------------------------------------------------------


def test_429_without_retry_after_waits_and_succeeds(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.secondary_rate_limit("POST", r"/issues/7/comments$", status=429, retry_after=None)
    sleeps: list[float] = []
    client_for(gh, sleeps=sleeps, max_wait=2).create_issue_comment(gh.full_name, 7, "hello")
    assert [r.status for r in gh.requests("POST", r"/issues/7/comments$")] == [429, 201]
    assert len(gh.comments_on(7)) == 1
    # "wait at least a minute", capped by max_wait, plus at most 10 % jitter
    assert len(sleeps) == 1 and 2 <= sleeps[0] <= 2.2
    assert gh.requests("GET") == []  # a refused request stored nothing: no need to look


def test_secondary_limits_without_retry_after_back_off_exponentially() -> None:
    policy = retry.Policy(max_wait=1000, rng=random.Random(7))
    limited = retry.RateLimited("HTTP 403: secondary", primary=False)
    waits = [retry.rate_wait(limited, tries, policy)[0] for tries in (1, 2, 3)]
    assert waits == [60.0, 120.0, 240.0]


def test_429_with_retry_after_waits_that_long(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.secondary_rate_limit("GET", r"/pulls/7$", status=429, retry_after=1)
    sleeps: list[float] = []
    client_for(gh, sleeps=sleeps).pulls.get(gh.full_name, 7)
    assert len(sleeps) == 1 and 1 <= sleeps[0] <= 1.1


def test_a_retry_after_longer_than_max_wait_stops_at_once(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.secondary_rate_limit("GET", r"/pulls/7$", retry_after=600, times=5)
    sleeps: list[float] = []
    with pytest.raises(GitHubError) as caught:
        client_for(gh, sleeps=sleeps, max_wait=60).pulls.get(gh.full_name, 7)
    assert "Retry-After: 600 s, longer than the 60 s a wait may take" in str(caught.value)
    assert "not retried" in str(caught.value)
    assert sleeps == [] and len(gh.requests("GET", r"/pulls/7$")) == 1


def test_a_primary_limit_that_resets_soon_is_waited_for(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.primary_rate_limit("GET", r"/pulls/7$", reset=int(time.time()) + 3)
    sleeps: list[float] = []
    client_for(gh, sleeps=sleeps, max_wait=10).pulls.get(gh.full_name, 7)
    assert len(sleeps) == 1 and 2 <= sleeps[0] <= 10
    assert [r.status for r in gh.requests("GET", r"/pulls/7$")] == [403, 200]


def test_a_primary_limit_that_resets_late_exits_4_naming_the_reset_time(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    reset = int(time.time()) + 3600
    gh.primary_rate_limit("POST", r"/issues/7/comments$", reset=reset, status=429, times=5)
    sleeps: list[float] = []
    with pytest.raises(GitHubError) as caught:
        client_for(gh, sleeps=sleeps).create_issue_comment(gh.full_name, 7, "hello")
    message = str(caught.value)
    assert caught.value.exit_code == ExitCode.GITHUB
    assert "primary rate limit" in message and "API rate limit exceeded" in message
    assert time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(reset)) in message
    assert "(the limit resets at" in message and "not retried)" in message
    assert sleeps == [] and len(gh.requests("POST")) == 1


def test_waits_stop_when_the_run_has_no_waiting_time_left(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.secondary_rate_limit("GET", r"/pulls/7$", retry_after=2, times=5)
    sleeps: list[float] = []
    with pytest.raises(GitHubError) as caught:
        client_for(gh, sleeps=sleeps, retries=4, max_wait=10, budget=3).pulls.get(gh.full_name, 7)
    assert "Retry-After: 2 s, more than the 1 s of waiting this run has left" in str(caught.value)
    assert str(caught.value).endswith("after 1 retry)")
    assert len(sleeps) == 1  # 2 s (+ jitter) waited; 2 s more would pass the 3 s budget


def test_the_message_counts_the_tries_that_were_made(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.fail("GET", r"/pulls/7$", 503, times=10, message="Service Unavailable")
    with pytest.raises(GitHubError) as three:
        client_for(gh, retries=2, sleeps=[]).pulls.get(gh.full_name, 7)
    assert str(three.value).endswith("HTTP 503: Service Unavailable (after 2 retries)")
    with pytest.raises(GitHubError) as one:
        client_for(gh, retries=1, sleeps=[]).pulls.get(gh.full_name, 7)
    assert str(one.value).endswith("(after 1 retry)")
    with pytest.raises(GitHubError) as none:
        client_for(gh, retries=0, sleeps=[]).pulls.get(gh.full_name, 7)
    assert str(none.value).endswith("(not retried)")
    assert len(gh.requests("GET", r"/pulls/7$")) == 3 + 2 + 1


def test_waits_are_capped_and_jittered_by_at_most_a_tenth() -> None:
    waits: list[float] = []
    failures = iter([retry.Transient("HTTP 502: x", maybe_stored=False)] * 5)

    def call() -> str:
        error = next(failures, None)
        if error is not None:
            raise error
        return "ok"

    lines: list[str] = []
    policy = retry.Policy(retries=5, backoff=1, max_wait=3, sleep=waits.append, log=lines.append)
    assert retry.attempt("GET /x", call, policy) == "ok"
    assert lines[0].startswith("gitflow-agents: GET /x: HTTP 502: x; try 2 of 6 in 1.")
    assert len(lines) == 5 and "try 6 of 6" in lines[-1]
    nominal = [1, 2, 3, 3, 3]
    assert all(n <= w <= n * 1.1 for n, w in zip(nominal, waits, strict=True)), waits
    assert policy.waited == pytest.approx(sum(waits))
