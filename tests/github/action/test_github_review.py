"""Inline findings: only on diff lines, one batched review, fingerprints, 422 fallback."""

from __future__ import annotations

from gitflow_agents.findings import Finding, Severity
from gitflow_agents.github.action.review import (
    FP_MARKER,
    anchor,
    diff_map,
    hunks,
    plan_inline,
    post_inline,
)
from gitflow_agents.github.api.client import PullFile
from tests.github_standin import PATCH_A, GitHubStandIn, client_for, gh, simple_pull

__all__ = ["gh"]

SHA = "a" * 40


def _finding(
    line: int | None,
    message: str = "problem",
    *,
    end: int | None = None,
    file: str = "app.py",
    severity: Severity = Severity.ERROR,
) -> Finding:
    return Finding(severity, message, file=file, line=line, end_line=end).with_fingerprint()


def _files(gh: GitHubStandIn) -> list[PullFile]:
    return client_for(gh).pulls.files(gh.full_name, 7)


def test_hunks_are_the_new_side_lines_of_each_hunk() -> None:
    assert hunks(PATCH_A) == (frozenset({1, 2, 3, 4, 5}), frozenset({22, 23, 24}))
    patch = "@@ -1,3 +1,2 @@\n keep\n-gone\n-gone too\n+new\n\\ No newline at end of file"
    assert hunks(patch) == (frozenset({1, 2}),)
    assert hunks("@@ -0,0 +1 @@\n+only") == (frozenset({1}),)
    assert hunks(None) == ()


def test_anchor_needs_every_line_inside_one_hunk() -> None:
    diff = diff_map([PullFile("app.py", "modified", PATCH_A), PullFile("bin", "added", None)])
    assert anchor(_finding(3), diff) == (3, 3)
    assert anchor(_finding(2, end=5), diff) == (2, 5)
    assert anchor(_finding(4, end=22), diff) is None  # spans two hunks
    assert anchor(_finding(10), diff) is None  # between hunks
    assert anchor(_finding(1, file="bin"), diff) is None  # binary: no patch
    assert anchor(_finding(None), diff) is None
    assert anchor(_finding(3, file="other.py"), diff) is None


def test_plan_puts_the_most_severe_first_and_caps() -> None:
    diff = diff_map([PullFile("app.py", "modified", PATCH_A)])
    findings = [
        _finding(2, "a note", severity=Severity.INFO),
        _finding(3, "a bug"),
        _finding(23, "a warning", severity=Severity.WARN),
    ]
    new, already, rest = plan_inline(findings, diff, set(), max_inline=2)
    assert [f.message for f, _ in new] == ["a bug", "a warning"]
    assert [f.message for f in rest] == ["a note"]
    assert already == []


def test_only_diff_lines_go_inline_in_one_review(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    findings = [
        _finding(2, "in the first hunk"),
        _finding(23, "in the second hunk"),
        _finding(10, "between hunks"),
        _finding(None, "no line"),
    ]
    outcome = post_inline(
        client_for(gh), gh.full_name, 7, SHA, findings, _files(gh), login="gitflow-bot"
    )
    assert [f.message for f in outcome.posted] == ["in the first hunk", "in the second hunk"]
    assert [f.message for f in outcome.summary_only] == ["between hunks", "no line"]
    reviews = gh.requests("POST", r"/pulls/7/reviews$")
    assert len(reviews) == 1
    sent = reviews[0].body
    assert sent["event"] == "COMMENT" and sent["commit_id"] == SHA
    assert [(c["path"], c["line"], c["side"]) for c in sent["comments"]] == [
        ("app.py", 2, "RIGHT"),
        ("app.py", 23, "RIGHT"),
    ]
    assert all(
        FP_MARKER.format(f.fingerprint) in c["body"]
        for f, c in zip(outcome.posted, sent["comments"], strict=True)
    )


def test_multi_line_findings_use_start_line(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    post_inline(
        client_for(gh), gh.full_name, 7, SHA, [_finding(2, end=4)], _files(gh), login="gitflow-bot"
    )
    (comment,) = gh.requests("POST", r"/pulls/7/reviews$")[0].body["comments"]
    assert (comment["start_line"], comment["line"]) == (2, 4)


def test_a_rerun_posts_only_new_findings(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    client = client_for(gh)
    first = [_finding(2, "old one"), _finding(23, "old two")]
    post_inline(client, gh.full_name, 7, SHA, first, _files(gh), login="gitflow-bot")
    again = post_inline(client, gh.full_name, 7, SHA, first, _files(gh), login="gitflow-bot")
    assert again.posted == () and len(again.already) == 2
    assert len(gh.requests("POST", r"/pulls/7/reviews$")) == 1  # nothing new, no review at all
    more = post_inline(
        client, gh.full_name, 7, SHA, [*first, _finding(3, "new")], _files(gh), login="gitflow-bot"
    )
    assert [f.message for f in more.posted] == ["new"]
    assert len(gh.state.review_comments) == 3


def test_fingerprints_of_other_authors_do_not_count(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    finding = _finding(2)
    other = client_for(gh, "tok-other")
    post_inline(other, gh.full_name, 7, SHA, [finding], _files(gh), login="someone-else")
    ours = post_inline(
        client_for(gh), gh.full_name, 7, SHA, [finding], _files(gh), login="gitflow-bot"
    )
    assert len(ours.posted) == 1


def test_a_rejected_batch_loses_nothing(gh: GitHubStandIn) -> None:
    """GitHub refuses the whole review; the comments are retried one by one, and the one
    GitHub still refuses is handed back for the summary."""
    simple_pull(gh)
    gh.fail("POST", r"/pulls/7/reviews$", 422, message="Unprocessable Entity")
    gh.fail("POST", r"/pulls/7/comments$", 422, message="Line could not be resolved")
    findings = [_finding(2, "first"), _finding(3, "second"), _finding(23, "third")]
    outcome = post_inline(
        client_for(gh), gh.full_name, 7, SHA, findings, _files(gh), login="gitflow-bot"
    )
    assert [f.message for f in outcome.posted] == ["second", "third"]
    assert [f.message for f in outcome.summary_only] == ["first"]
    assert any("Line could not be resolved" in r for r in outcome.refused)
    assert {c["line"] for c in gh.state.review_comments.values()} == {3, 23}


def test_an_over_long_message_is_cut_not_refused(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    outcome = post_inline(
        client_for(gh),
        gh.full_name,
        7,
        SHA,
        [_finding(2, "y" * 70000)],
        _files(gh),
        login="gitflow-bot",
    )
    assert len(outcome.posted) == 1
    (comment,) = gh.state.review_comments.values()
    assert len(comment["body"]) < 10000 and "(cut;" in comment["body"]


def _eight() -> list[Finding]:
    """One finding on each of PATCH_A's eight new-side lines, all of one severity."""
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    lines = (1, 2, 3, 4, 5, 22, 23, 24)
    return [_finding(line, f"problem {word}") for line, word in zip(lines, words, strict=True)]


def test_the_findings_chosen_under_the_cap_do_not_depend_on_their_order() -> None:
    diff = diff_map([PullFile("app.py", "modified", PATCH_A)])
    chosen = [
        {f.fingerprint for f, _ in plan_inline(order, diff, set(), max_inline=5)[0]}
        for order in (_eight(), _eight()[::-1], _eight()[3:] + _eight()[:3])
    ]
    assert len(chosen[0]) == 5 and chosen[0] == chosen[1] == chosen[2]


def test_a_rerun_counts_what_it_posted_on_the_head_against_the_cap(gh: GitHubStandIn) -> None:
    """More findings than ``max_inline``: the first run posts ``max_inline`` of them; a re-run
    of the same head (its reviewer listing them in another order) posts no second review, the
    rest stay in the summary. A new head has a cap of its own."""
    simple_pull(gh)
    client = client_for(gh)

    def run(findings: list[Finding], head: str = SHA) -> tuple[int, int, int]:
        done = post_inline(
            client, gh.full_name, 7, head, findings, _files(gh), login="gitflow-bot", max_inline=5
        )
        return len(done.posted), len(done.already), len(done.summary_only)

    assert run(_eight()) == (5, 0, 3)
    assert run(_eight()[::-1]) == (0, 5, 3)
    assert run(_eight()) == (0, 5, 3)
    assert len(gh.requests("POST", r"/pulls/7/reviews$")) == 1
    assert len(gh.state.review_comments) == 5
    assert run(_eight(), "b" * 40) == (3, 5, 0)  # a new head: its own cap
    assert len(gh.state.review_comments) == 8
