"""Threads that close themselves: a fixed finding's thread resolved through the stand-in's
GraphQL (validated against GitHub's schema), a human's thread left open, a reply where the token
may not resolve, and nothing done twice."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.findings import Finding, Overall, Review, Severity
from gitflow_agents.github.action.review import post_inline
from gitflow_agents.github.action.threads import close_fixed, threads_note
from gitflow_agents.github.api.client import Client
from tests.conftest import git
from tests.github_standin import GitHubStandIn, Token, client_for, gh, simple_pull
from tests.helpers.action_runner import (
    BROKEN,
    FINE,
    Runner,
    add_pull,
    pr_event,
    pr_files,
    runner,
    states,
)
from tests.standin_threads import human_reply

__all__ = ["gh", "runner"]

SHA = "a" * 40
REPO = "octo/demo"


def _finding(line: int, message: str) -> Finding:
    return Finding(Severity.ERROR, message, file="app.py", line=line).with_fingerprint()


FIRST, SECOND, THIRD = _finding(2, "first"), _finding(3, "second"), _finding(23, "third")


def _review(*findings: Finding, sha: str = SHA) -> Review:
    overall = Overall.REVISE if findings else Overall.APPROVE
    return Review(overall, findings=findings, reviewed_sha=sha)


def _posted(gh: GitHubStandIn, client: Client, *findings: Finding) -> dict[str, int]:
    """Post ``findings`` inline; message -> the id of its comment."""
    simple_pull(gh)
    files = client.pulls.files(REPO, 7)
    post_inline(client, REPO, 7, SHA, findings, files, login="gitflow-bot")
    return {
        f.message: next(
            int(c["id"]) for c in gh.state.review_comments.values() if f.fingerprint in c["body"]
        )
        for f in findings
    }


def _resolves(gh: GitHubStandIn) -> int:
    return sum("resolveReviewThread" in r.body["query"] for r in gh.requests("POST", "graphql$"))


def test_the_threads_of_fixed_findings_are_resolved_and_the_rest_stay(gh: GitHubStandIn) -> None:
    client = client_for(gh)
    ids = _posted(gh, client, FIRST, SECOND, THIRD)
    outcome = close_fixed(client, REPO, 7, SHA, _review(SECOND), login="gitflow-bot")
    assert (outcome.resolved, outcome.fixed, outcome.left_open) == (2, 2, 0)
    assert gh.state.resolved_threads == {ids["first"], ids["third"]}
    assert "**Fixed:** 2 findings" in threads_note(outcome)


def test_a_thread_a_human_replied_in_is_left_open(gh: GitHubStandIn) -> None:
    client = client_for(gh)
    ids = _posted(gh, client, FIRST, SECOND)
    human_reply(gh, ids["first"], "I disagree, see the spec")
    outcome = close_fixed(client, REPO, 7, SHA, _review(), login="gitflow-bot")
    assert gh.state.resolved_threads == {ids["second"]}
    assert (outcome.resolved, outcome.left_open) == (1, 1)
    assert "1 left open" in threads_note(outcome)


def test_a_rerun_resolves_nothing_twice(gh: GitHubStandIn) -> None:
    client = client_for(gh)
    _posted(gh, client, FIRST, SECOND)
    first = close_fixed(client, REPO, 7, SHA, _review(SECOND), login="gitflow-bot")
    assert _resolves(gh) == 1
    again = close_fixed(client, REPO, 7, SHA, _review(SECOND), login="gitflow-bot")
    assert _resolves(gh) == 1  # already resolved: left alone
    assert (again.resolved, again.closed) == (0, 1)
    assert threads_note(again) == threads_note(first)  # the sticky comment stays the same


def test_a_thread_someone_resolved_is_left_alone(gh: GitHubStandIn) -> None:
    client = client_for(gh)
    ids = _posted(gh, client, FIRST)
    gh.state.resolved_threads.add(ids["first"])
    outcome = close_fixed(client, REPO, 7, SHA, _review(), login="gitflow-bot")
    assert _resolves(gh) == 0 and outcome.closed == 1


def test_a_token_that_may_not_resolve_replies_fixed_once(gh: GitHubStandIn) -> None:
    gh.add_token("tok-noresolve", Token("gitflow-bot", checks=False, resolve_threads=False))
    client = client_for(gh, "tok-noresolve")
    ids = _posted(gh, client, FIRST, SECOND)
    outcome = close_fixed(client, REPO, 7, "c" * 40, _review(sha="c" * 40), login="gitflow-bot")
    assert gh.state.resolved_threads == set()
    assert (outcome.resolved, outcome.replied) == (0, 2) and outcome.refused
    replies = [c for c in gh.state.review_comments.values() if c.get("in_reply_to_id")]
    assert sorted(c["in_reply_to_id"] for c in replies) == sorted(ids.values())
    assert all("fixed in cccccccccccc" in c["body"] for c in replies)
    again = close_fixed(client, REPO, 7, "c" * 40, _review(sha="c" * 40), login="gitflow-bot")
    assert (again.replied, again.closed) == (0, 2)
    assert len([c for c in gh.state.review_comments.values() if c.get("in_reply_to_id")]) == 2


def test_nothing_is_closed_without_a_verdict_about_the_head(gh: GitHubStandIn) -> None:
    client = client_for(gh)
    _posted(gh, client, FIRST)
    no_verdict = Review(None, reviewed_sha=SHA, reason="no REVIEW_RESULT marker")
    assert close_fixed(client, REPO, 7, SHA, no_verdict, login="gitflow-bot").fixed == 0
    older = _review(sha="d" * 40)
    assert close_fixed(client, REPO, 7, SHA, older, login="gitflow-bot").fixed == 0
    unreviewed = _review()._replace(unreviewed_files=("app.py",))
    assert close_fixed(client, REPO, 7, SHA, unreviewed, login="gitflow-bot").fixed == 0
    assert _resolves(gh) == 0


def test_other_authors_threads_are_never_ours(gh: GitHubStandIn) -> None:
    other = client_for(gh, "tok-other")
    _posted(gh, other, FIRST)
    outcome = close_fixed(client_for(gh), REPO, 7, SHA, _review(), login="gitflow-bot")
    assert outcome.fixed == 0 and gh.state.resolved_threads == set()


def test_a_push_that_fixes_the_finding_resolves_its_thread_end_to_end(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """The Action on a PR, then on the push that fixes its finding: the finding's thread is
    resolved and the summary comment counts it; the same run again changes nothing."""
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    assert runner.run("pull_request", pr_event(gh, pull)).returncode == 1
    (inline,) = gh.state.review_comments.values()
    base = pull.base_sha
    git(repo, "checkout", "-q", "feature")
    (repo / "broken.py").write_text(FINE)
    git(repo, "commit", "-qam", "fix the syntax error")
    pull.head_sha = git(repo, "rev-parse", "HEAD").strip()
    pull.files = pr_files(repo, base, pull.head_sha)
    fixed = runner.run("pull_request", pr_event(gh, pull, action="synchronize"))
    assert fixed.returncode == 0, fixed.stderr
    assert gh.state.resolved_threads == {int(inline["id"])}
    (summary,) = gh.comments_on(7)
    assert "**Fixed:** 1 finding commented inline earlier no longer reported" in summary["body"]
    writes = len(gh.writes())
    again = runner.run("pull_request", pr_event(gh, pull, action="synchronize"))
    assert again.returncode == 0, again.stderr
    assert _resolves(gh) == 1  # the thread is resolved once
    assert [w.path for w in gh.writes()[writes:]] == [
        f"/repos/octo/demo/statuses/{pull.head_sha}"
    ] * 2  # pending and success: the summary comment is unchanged


NEW = "c" * 40


def _post_again(gh: GitHubStandIn, client: Client, sha: str, *findings: Finding) -> int:
    """Post ``findings`` inline on head ``sha`` of the same PR; how many comments went up."""
    gh.state.pulls[7].head_sha = sha
    files = client.pulls.files(REPO, 7)
    outcome = post_inline(client, REPO, 7, sha, findings, files, login="gitflow-bot")
    return len(outcome.posted)


def test_a_finding_back_after_its_fix_is_commented_again(gh: GitHubStandIn) -> None:
    """The thread we resolved as fixed carries nothing: the finding, reported again on a later
    head, gets a comment there; a re-run of that head posts nothing more and deletes nothing."""
    client = client_for(gh)
    ids = _posted(gh, client, FIRST, SECOND)
    close_fixed(client, REPO, 7, SHA, _review(SECOND), login="gitflow-bot")
    assert gh.state.resolved_threads == {ids["first"]}
    assert _post_again(gh, client, NEW, FIRST, SECOND) == 1  # SECOND's thread is open
    (again,) = [c for c in gh.state.review_comments.values() if c["commit_id"] == NEW]
    assert FIRST.fingerprint in again["body"]
    assert _post_again(gh, client, NEW, FIRST, SECOND) == 0
    assert len(gh.state.review_comments) == 3  # no comment taken for a duplicate


def test_a_thread_answered_fixed_carries_nothing_either(gh: GitHubStandIn) -> None:
    gh.add_token("tok-noresolve", Token("gitflow-bot", checks=False, resolve_threads=False))
    client = client_for(gh, "tok-noresolve")
    _posted(gh, client, FIRST)
    close_fixed(client, REPO, 7, SHA, _review(), login="gitflow-bot")
    assert _post_again(gh, client, NEW, FIRST) == 1


def test_a_resolved_thread_on_the_head_itself_still_carries(gh: GitHubStandIn) -> None:
    """Someone resolved the thread while the finding is still reported: a re-run of the same
    head posts no second comment (a later head does: resolving is not accepting)."""
    client = client_for(gh)
    ids = _posted(gh, client, FIRST)
    gh.state.resolved_threads.add(ids["first"])
    assert _post_again(gh, client, SHA, FIRST) == 0
    assert _post_again(gh, client, NEW, FIRST) == 1


def test_a_finding_back_after_its_fix_is_commented_again_end_to_end(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """Push 1 comments the syntax error, push 2 fixes it (its thread resolved), push 3 brings it
    back a few lines lower: a new inline comment on push 3's head."""
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    assert runner.run("pull_request", pr_event(gh, pull)).returncode == 1
    git(repo, "checkout", "-q", "feature")
    for text in (FINE, "import os\n\n" + BROKEN):
        (repo / "broken.py").write_text(text)
        git(repo, "commit", "-qam", "edit")
        pull.head_sha = git(repo, "rev-parse", "HEAD").strip()
        pull.files = pr_files(repo, pull.base_sha, pull.head_sha)
        runner.run("pull_request", pr_event(gh, pull, action="synchronize"))
    assert len(gh.state.resolved_threads) == 1
    assert runner.outputs()["inline-posted"] == "1"
    (back,) = [c for c in gh.state.review_comments.values() if c["commit_id"] == pull.head_sha]
    assert back["line"] == 7
    assert "**Inline:** 1 posted inline now." in gh.comments_on(7)[0]["body"]


def test_github_failing_on_the_threads_still_publishes_the_verdict(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    assert runner.run("pull_request", pr_event(gh, pull)).returncode == 1
    git(repo, "checkout", "-q", "feature")
    (repo / "broken.py").write_text(FINE)
    git(repo, "commit", "-qam", "fix the syntax error")
    pull.files = pr_files(repo, pull.base_sha, git(repo, "rev-parse", "HEAD").strip())
    pull.head_sha = git(repo, "rev-parse", "HEAD").strip()
    gh.fail("POST", "graphql$", 502, times=10)
    result = runner.run("pull_request", pr_event(gh, pull, action="synchronize"))
    assert result.returncode == 0, result.stderr
    assert "the threads of fixed findings were not closed" in result.stdout
    assert states(gh, pull.head_sha) == ["pending", "success"]
    assert "APPROVED" in gh.comments_on(7)[0]["body"] and gh.state.resolved_threads == set()


def test_a_thread_too_long_to_read_whole_is_left_open(gh: GitHubStandIn) -> None:
    """Over 100 comments: the ones not read might be a person's, so the thread stays open."""
    client = client_for(gh)
    ids = _posted(gh, client, FIRST)
    for n in range(100):
        human_reply(gh, ids["first"], f"note {n}", login="gitflow-bot")
    outcome = close_fixed(client, REPO, 7, SHA, _review(), login="gitflow-bot")
    assert (outcome.left_open, outcome.resolved) == (1, 0) and _resolves(gh) == 0
