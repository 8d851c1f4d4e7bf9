"""Exactly one summary comment and one live review per head, whatever GitHub's transport did.

``gitflow-agents action`` end to end (runner-shaped, like tests/github/action/test_github_action.py) against a
stand-in that fails the way GitHub does: a write stored behind a 502, 429 without
``Retry-After``, a GitHub App's installation token, a re-run of an old workflow run, duplicates
left by an earlier version, and more findings than a comment can hold.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitflow_agents.findings import Finding, Overall, Review, Severity, gate
from gitflow_agents.github.action import review
from gitflow_agents.github.action.comment import IN_FINDINGS_FILE, IN_JOB_SUMMARY, MARKER
from gitflow_agents.github.action.publish import fit_summary, write_result_files
from gitflow_agents.github.api.client import InlineComment
from tests.conftest import git
from tests.github_standin import APP_SLUG, APP_TOKEN, GitHubStandIn, Pull, client_for, gh
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

__all__ = ["gh", "runner"]

STILL_BROKEN = BROKEN + "\n\ndef more():\n    return 2\n"


def push(gh: GitHubStandIn, repo: Path, pull: Pull, files: dict[str, str]) -> str:
    """Commit ``files`` on the PR's branch; the stand-in's PR now has that head. Its sha."""
    git(repo, "checkout", "-q", "feature")
    for name, text in files.items():
        (repo / name).write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", "more work")
    pull.head_sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    pull.files = pr_files(repo, pull.base_sha, pull.head_sha)
    return pull.head_sha


def summaries(gh: GitHubStandIn) -> list[dict[str, object]]:
    return [c for c in gh.comments_on(7) if str(c["body"]).startswith(MARKER)]


def live_reviews(gh: GitHubStandIn) -> list[int]:
    """Reviews that still hold an inline comment."""
    return sorted({int(c["pull_request_review_id"]) for c in gh.state.review_comments.values()})


# ---------------------------------------------------------------------------------------------
# Stored behind a 502
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["review", "comment"])
def test_a_write_stored_behind_a_502_stays_one_after_the_run_and_the_next_push(
    runner: Runner, gh: GitHubStandIn, repo: Path, what: str
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    path = r"/pulls/7/reviews$" if what == "review" else r"/issues/7/comments$"
    gh.fail("POST", path, 502, store=True)
    first = runner.run("pull_request", pr_event(gh, pull))
    assert first.returncode == 1, first.stderr
    assert [r.status for r in gh.requests("POST", path)] == [502]  # found, not posted again
    assert len(summaries(gh)) == 1 and len(gh.state.reviews) == 1
    inline = len(gh.state.review_comments)

    push(gh, repo, pull, {"fine.py": FINE})
    second = runner.run("pull_request", pr_event(gh, pull, action="synchronize"))
    assert second.returncode == 1, second.stderr
    assert len(summaries(gh)) == 1 and len(gh.state.reviews) == 1
    assert len(gh.state.review_comments) == inline
    assert runner.outputs()["inline-posted"] == "0"


def test_duplicates_left_by_an_earlier_run_are_removed_on_the_next(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """An older version retried blindly: two reviews with the same comments, two summaries."""
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    assert runner.run("pull_request", pr_event(gh, pull)).returncode == 1
    (first_review,) = gh.state.reviews
    bot = client_for(gh, "tok-actions")
    again = [
        InlineComment(str(c["path"]), int(c["line"]), str(c["body"]))
        for c in gh.state.review_comments.values()
    ]
    twin = bot.create_review(gh.full_name, 7, pull.head_sha, "twin", again)
    bot.create_issue_comment(gh.full_name, 7, str(summaries(gh)[0]["body"]))
    assert len(summaries(gh)) == 2 and live_reviews(gh) == [first_review, twin]

    result = runner.run("pull_request", pr_event(gh, pull, action="synchronize"))
    assert result.returncode == 1, result.stderr
    assert len(summaries(gh)) == 1
    assert live_reviews(gh) == [first_review]
    assert gh.state.reviews[twin]["body"] == review.EMPTIED_REVIEW
    assert runner.outputs()["inline-posted"] == "0"


def test_a_summary_another_run_created_at_the_same_moment_is_the_one_kept(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """Two runs of one fresh pull request without a ``concurrency`` group: the other run's
    create lands between our look (none yet) and our create. Ours is read again after it is
    made, found the later, and deleted; the other run's, the oldest, carries our summary."""
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    racer = f"{MARKER}\nthe other run's summary\n"
    theirs: list[int] = []

    def other_run_creates() -> None:
        made = gh.add_issue_comment(7, "github-actions[bot]", racer, app="github-actions")
        theirs.append(int(made["id"]))

    gh.before.append(("POST", re.compile(r"/issues/7/comments$"), other_run_creates))
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 1, result.stderr
    (kept,) = summaries(gh)
    assert kept["id"] == theirs[0] and "broken.py" in str(kept["body"])
    assert runner.outputs()["comment-id"] == str(theirs[0])
    (deleted,) = gh.requests("DELETE", "/issues/comments/")
    assert deleted.status == 204 and int(deleted.path.rsplit("/", 1)[1]) > theirs[0]


def test_a_duplicate_someone_replied_to_is_kept(gh: GitHubStandIn) -> None:
    from tests.github_standin import simple_pull

    simple_pull(gh)
    bot = client_for(gh, "tok-actions")
    finding = Finding(Severity.ERROR, "bad", "app.py", 2).with_fingerprint()
    comment = InlineComment("app.py", 2, review.comment_body(finding))
    bot.create_review(gh.full_name, 7, "a" * 40, "one", [comment])
    bot.create_review(gh.full_name, 7, "a" * 40, "two", [comment])
    twin = max(gh.state.review_comments)
    gh.state.review_comments[twin + 1000] = {
        **gh.state.review_comments[twin],
        "id": twin + 1000,
        "in_reply_to_id": twin,
        "body": "I disagree",
        "user": gh.user("alice"),
    }
    outcome = review.post_inline(
        bot, gh.full_name, 7, "a" * 40, [finding], [], login="github-actions[bot]"
    )
    assert outcome.removed_duplicates == 0 and twin in gh.state.review_comments


# ---------------------------------------------------------------------------------------------
# Identity without configuration
# ---------------------------------------------------------------------------------------------


def test_a_github_app_token_edits_its_own_comment_in_place(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    assert runner.run("pull_request", pr_event(gh, pull), APP_TOKEN).returncode == 1
    (summary,) = summaries(gh)
    assert summary["user"]["login"] == f"{APP_SLUG}[bot]"  # type: ignore[index]
    assert summary["performed_via_github_app"]["slug"] == APP_SLUG  # type: ignore[index]

    push(gh, repo, pull, {"broken.py": STILL_BROKEN})
    second = runner.run("pull_request", pr_event(gh, pull, action="synchronize"), APP_TOKEN)
    assert second.returncode == 1, second.stderr
    assert [c["id"] for c in summaries(gh)] == [summary["id"]]  # edited in place
    assert len(gh.state.reviews) == 1 and runner.outputs()["inline-posted"] == "0"
    assert gh.requests("GET", "/user$") == []  # an installation token is never sent there
    assert len(gh.requests("PATCH", rf"/issues/comments/{summary['id']}$")) == 1


def test_the_posting_job_with_an_app_token_recognises_its_app(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """No write comes before the summary: the App's marked comment tells who we are."""
    pull = add_pull(gh, repo, {"fine.py": FINE})
    assert runner.run("pull_request", pr_event(gh, pull), APP_TOKEN).returncode == 0
    (summary,) = summaries(gh)
    findings = tmp_path / "runner" / "gitflow-agents" / "4242-1" / "findings.json"
    for _ in range(2):
        posted = runner.run(
            "pull_request", pr_event(gh, pull), APP_TOKEN, "--post-findings", str(findings)
        )
        assert posted.returncode == 0, posted.stderr
    assert [c["id"] for c in summaries(gh)] == [summary["id"]]


def test_identity_that_cannot_be_learned_stops_before_any_write(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    gh.add_issue_comment(
        7, "github-actions[bot]", f"{MARKER}\nfrom a workflow", app="github-actions"
    )
    gh.add_issue_comment(7, "other-app[bot]", f"{MARKER}\nfrom an App", app="other-app")
    result = Review(Overall.APPROVE, reviewed_sha=pull.head_sha)
    findings, _ = write_result_files(
        tmp_path / "out", result, gate(result, threshold=Severity.ERROR, head_sha=pull.head_sha)
    )
    before = len(gh.writes())
    posted = runner.run(
        "pull_request", pr_event(gh, pull), APP_TOKEN, "--post-findings", str(findings)
    )
    assert posted.returncode == 2
    assert "set the action's comment-author input" in posted.stderr
    assert "github-actions[bot], other-app[bot]" in posted.stderr
    assert len(gh.writes()) == before
    configured = runner.run(
        "pull_request",
        pr_event(gh, pull),
        APP_TOKEN,
        "--post-findings",
        str(findings),
        "--comment-author",
        "other-app[bot]",
    )
    assert configured.returncode == 0, configured.stderr
    assert len(summaries(gh)) == 2  # the other App's comment was edited, none added


def test_a_comment_author_the_token_does_not_write_as_is_named_and_posts_nothing_twice(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """``github-actions`` (what the UI shows) while GITHUB_TOKEN writes as
    ``github-actions[bot]``: the pending status tells the run who it is, which wins, with one
    warning a run, so re-runs edit the summary and post no second review."""
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    for _ in range(3):
        result = runner.run(
            "pull_request", pr_event(gh, pull), "tok-actions", "--comment-author", "github-actions"
        )
        assert result.returncode == 1, result.stderr
        warned = [
            line
            for line in result.stdout.splitlines()
            if line.startswith("::warning") and "comment-author is github-actions," in line
        ]
        assert len(warned) == 1, result.stdout
        assert "writes as github-actions[bot]" in warned[0]
    assert len(summaries(gh)) == 1
    assert len(gh.state.reviews) == 1 and len(gh.state.review_comments) == 1


@pytest.mark.parametrize("value", [" ", "github actions"])
def test_a_comment_author_that_cannot_be_a_login_stops_before_any_write(
    runner: Runner, gh: GitHubStandIn, repo: Path, value: str
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    result = runner.run(
        "pull_request", pr_event(gh, pull), "tok-actions", "--comment-author", value
    )
    assert result.returncode == 2
    assert f"the comment-author input {value!r} is not a GitHub login" in result.stderr
    assert "Traceback" not in result.stderr
    assert gh.writes() == []


def test_a_comment_author_with_spaces_around_it_is_the_login(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    for _ in range(2):
        result = runner.run(
            "pull_request",
            pr_event(gh, pull),
            "tok-actions",
            "--comment-author",
            " github-actions[bot]\n",
        )
        assert result.returncode == 1, result.stderr
        assert "::warning" not in result.stdout
    assert len(summaries(gh)) == 1 and len(gh.state.reviews) == 1


# ---------------------------------------------------------------------------------------------
# Rate limits end to end
# ---------------------------------------------------------------------------------------------


def test_429_without_retry_after_is_retried_and_the_run_succeeds(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    gh.secondary_rate_limit("POST", r"/issues/7/comments$", status=429, retry_after=None)
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 1, result.stderr
    assert [r.status for r in gh.requests("POST", r"/issues/7/comments$")] == [429, 201]
    assert len(summaries(gh)) == 1 and states(gh, pull.head_sha) == ["pending", "failure"]


# ---------------------------------------------------------------------------------------------
# The newest head wins
# ---------------------------------------------------------------------------------------------


def test_a_rerun_for_an_older_head_keeps_the_newer_verdict(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    old_event = pr_event(gh, pull)
    old_head = pull.head_sha
    assert runner.run("pull_request", old_event).returncode == 1
    new_head = push(gh, repo, pull, {"broken.py": FINE})
    assert runner.run("pull_request", pr_event(gh, pull, action="synchronize")).returncode == 0
    (summary,) = summaries(gh)
    assert "APPROVED" in str(summary["body"])
    reviews = len(gh.state.reviews)

    rerun = runner.run("pull_request", old_event)  # "Re-run jobs" on the first workflow run
    assert rerun.returncode == 1, rerun.stderr  # its own verdict: that commit is broken
    (after,) = summaries(gh)
    body = str(after["body"])
    assert after["id"] == summary["id"]
    assert "APPROVED" in body and "REVISE" not in body  # the newest head's verdict stays
    assert body.count(f"· {old_head[:12]}") == 1  # the old run's row joined the history
    assert f"head {new_head[:12]}" in body
    assert len(gh.state.reviews) == reviews  # nothing inline about an outdated commit
    assert states(gh, new_head) == ["pending", "success"]  # the PR's gate is untouched
    assert states(gh, old_head)[-1] == "failure"  # the old commit's own verdict
    assert "no longer the head of PR #7" in rerun.stdout
    assert "no longer the head of PR #7" in runner.summary.read_text()


# ---------------------------------------------------------------------------------------------
# Every finding somewhere true
# ---------------------------------------------------------------------------------------------


def test_250_findings_are_all_in_the_job_summary(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    many = tuple(
        Finding(Severity.WARN, f"finding number {i:03d}: " + "why " * 70, "fine.py", 1)
        for i in range(250)
    )
    result = Review(Overall.REVISE, findings=many, reviewed_sha=pull.head_sha)
    findings, _ = write_result_files(
        tmp_path / "out", result, gate(result, threshold=Severity.ERROR, head_sha=pull.head_sha)
    )
    posted = runner.run(
        "pull_request", pr_event(gh, pull), "tok-actions", "--post-findings", str(findings)
    )
    assert posted.returncode == 1, posted.stderr
    (summary,) = summaries(gh)
    body = str(summary["body"])
    assert "Cut to stay under GitHub's 65,536-character comment limit" in body
    assert IN_JOB_SUMMARY in body
    step = runner.summary.read_text()
    assert all(f"finding number {i:03d}" in step for i in range(250))
    assert "Cut to stay under" not in step
    assert len(json.loads(findings.read_text())["findings"]) == 250


def test_a_job_summary_over_githubs_limit_names_the_findings_file() -> None:
    full = "### x\n\n" + "\n".join(f"- finding {i}: {'x' * 90}" for i in range(20000)) + "\n"
    cut = fit_summary(full, 1024 * 1024 - 4096)
    assert len(cut.encode()) <= 1024 * 1024 - 4096 < len(full.encode())
    assert "GitHub's 1,024 KiB job summary limit" in cut and IN_FINDINGS_FILE in cut
    assert fit_summary("short\n", 100) == "short\n"
