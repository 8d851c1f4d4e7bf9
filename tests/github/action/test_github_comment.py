"""The sticky summary comment: found by marker AND author, edited in place, never duplicated."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from gitflow_agents.findings import Finding, Overall, Review, Severity, gate
from gitflow_agents.github.action.comment import (
    GITHUB_LIMIT,
    MARKER,
    RunRow,
    StickyResult,
    cap,
    run_history,
    summary_body,
    upsert_summary,
)
from tests.github_standin import GitHubStandIn, client_for, gh, simple_pull

__all__ = ["gh"]

SHA = "a" * 40


def _review(n: int = 1, message: str = "bad thing") -> Review:
    findings = tuple(
        Finding(Severity.ERROR, f"{message} {i}", file="app.py", line=i + 1).with_fingerprint()
        for i in range(n)
    )
    return Review(overall=Overall.REVISE, findings=findings, reviewed_sha=SHA)


def test_created_once_then_edited_in_place(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    client = client_for(gh)
    first = upsert_summary(
        client, gh.full_name, 7, summary_body(_review(1), None), login="gitflow-bot"
    )
    second = upsert_summary(
        client, gh.full_name, 7, summary_body(_review(2), None), login="gitflow-bot"
    )
    assert (first.action, second.action) == ("created", "updated")
    assert first.comment_id == second.comment_id
    comments = gh.comments_on(7)
    assert len(comments) == 1
    assert comments[0]["body"].startswith(MARKER) and "bad thing 1" in comments[0]["body"]
    assert len(gh.requests("POST", "/issues/7/comments")) == 1
    assert len(gh.requests("PATCH", f"/issues/comments/{first.comment_id}$")) == 1


def test_same_body_again_writes_nothing(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    client = client_for(gh)
    body = summary_body(_review(1), None)
    upsert_summary(client, gh.full_name, 7, body, login="gitflow-bot")
    writes = len(gh.writes())
    again = upsert_summary(client, gh.full_name, 7, body, login="gitflow-bot")
    assert again.action == "unchanged"
    assert len(gh.writes()) == writes


def test_a_rerun_that_only_took_another_time_writes_nothing(gh: GitHubStandIn) -> None:
    """The same event again: its run-history row differs only in its duration."""
    simple_pull(gh)
    client = client_for(gh)

    def body(seconds: float) -> str:
        row = RunRow(flow="review", agent="builtin", outcome="approved", duration_s=seconds)
        return summary_body(_review(1), None, rows=[row])

    upsert_summary(client, gh.full_name, 7, body(0.84), login="gitflow-bot")
    writes = len(gh.writes())
    assert upsert_summary(client, gh.full_name, 7, body(1.26), login="gitflow-bot").action == (
        "unchanged"
    )
    assert upsert_summary(client, gh.full_name, 7, body(75), login="gitflow-bot").action == (
        "unchanged"
    )
    assert len(gh.writes()) == writes and "0.8 s" in gh.comments_on(7)[0]["body"]
    changed = summary_body(_review(2), None, rows=[])
    assert upsert_summary(client, gh.full_name, 7, changed, login="gitflow-bot").action == (
        "updated"
    )


def test_a_comment_by_someone_else_with_our_marker_is_left_alone(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    quoted = gh.add_issue_comment(7, "mallory", f"{MARKER}\nlook, I am the bot")
    result = upsert_summary(
        client_for(gh), gh.full_name, 7, summary_body(_review(), None), login="gitflow-bot"
    )
    assert result.action == "created" and result.comment_id != quoted["id"]
    assert gh.state.issue_comments[quoted["id"]]["body"] == f"{MARKER}\nlook, I am the bot"
    assert [c["user"]["login"] for c in gh.comments_on(7)] == ["mallory", "gitflow-bot"]


def test_our_own_comment_without_the_marker_is_not_the_summary(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    gh.add_issue_comment(7, "gitflow-bot", "an unrelated note")
    result = upsert_summary(
        client_for(gh), gh.full_name, 7, summary_body(_review(), None), login="gitflow-bot"
    )
    assert result.action == "created"
    assert len(gh.comments_on(7)) == 2


def test_duplicates_left_by_an_earlier_run_are_folded_into_one(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    keep = gh.add_issue_comment(7, "gitflow-bot", f"{MARKER}\nold")
    gh.add_issue_comment(7, "gitflow-bot", f"{MARKER}\nold twin")
    result = upsert_summary(
        client_for(gh), gh.full_name, 7, summary_body(_review(), None), login="gitflow-bot"
    )
    assert (result.comment_id, result.action, result.removed_duplicates) == (
        keep["id"],
        "updated",
        1,
    )
    assert [c["id"] for c in gh.comments_on(7)] == [keep["id"]]


class Turns:
    """Two writers' comment requests let through one at a time, in the order of ``script``
    (``(writer, what)`` pairs; ``what``: list, create, delete, edit): each waits for its turn,
    makes its request, then hands on. Threads and events only, no sleeps."""

    def __init__(self, script: Sequence[tuple[str, str]]) -> None:
        self.script = list(script)
        self.turn = threading.Condition()
        self.stuck: list[str] = []

    @contextmanager
    def take(self, writer: str, what: str) -> Iterator[None]:
        with self.turn:
            if not self.turn.wait_for(lambda: self.script[:1] == [(writer, what)], timeout=30):
                self.stuck.append(f"{writer} {what} waited; next in the script: {self.script[:1]}")
        try:
            yield
        finally:
            with self.turn:
                if self.script[:1] == [(writer, what)]:
                    self.script.pop(0)
                self.turn.notify_all()


REQUESTS = {
    "issue_comments": "list",
    "create_issue_comment": "create",
    "delete_issue_comment": "delete",
    "edit_issue_comment": "edit",
}


class Writer:
    """A real client whose comment requests (``REQUESTS``) go through ``turns`` as ``name``."""

    def __init__(self, client: Any, name: str, turns: Turns) -> None:
        self.client, self.name, self.turns = client, name, turns

    def __getattr__(self, attr: str) -> Any:
        real = getattr(self.client, attr)
        what = REQUESTS.get(attr)
        if what is None:
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            with self.turns.take(self.name, what):
                return real(*args, **kwargs)

        return call


def _both(gh: GitHubStandIn, turns: Turns, bodies: dict[str, str]) -> dict[str, StickyResult]:
    """Writers A and B upsert at once, each on its own thread and client (one process each)."""
    results: dict[str, StickyResult] = {}

    def write(name: str) -> Callable[[], None]:
        def run() -> None:
            client = Writer(client_for(gh), name, turns)
            results[name] = upsert_summary(
                client, gh.full_name, 7, bodies[name], login="gitflow-bot"
            )

        return run

    threads = [threading.Thread(target=write(name)) for name in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not turns.stuck and not turns.script, (turns.stuck, turns.script)
    return results


def _timed(seconds: float) -> str:
    row = RunRow(flow="review", agent="builtin", outcome="revise", duration_s=seconds)
    return summary_body(_review(1), None, rows=[row])


A_THEN_B = [("A", "list"), ("B", "list"), ("A", "create"), ("B", "create")]


@pytest.mark.parametrize(
    ("script", "bodies", "b_action"),
    [
        # both see both comments, both delete B's (the second delete is a 404: fine), B's body
        # goes to the comment that stays
        (
            [*A_THEN_B, ("A", "list"), ("B", "list"), ("A", "delete"), ("B", "delete"),
             ("B", "edit")],
            {"A": summary_body(_review(1), None), "B": summary_body(_review(2), None)},
            "updated",
        ),
        # A reads again before B's create is stored: it sees its own alone; B deletes its own.
        # The same event twice (only the durations differ): B writes no edit
        (
            [("A", "list"), ("B", "list"), ("A", "create"), ("A", "list"), ("B", "create"),
             ("B", "list"), ("B", "delete")],
            {"A": _timed(0.8), "B": _timed(1.3)},
            "unchanged",
        ),
    ],
)  # fmt: skip
def test_two_runs_creating_the_summary_at_once_leave_the_oldest(
    gh: GitHubStandIn,
    script: list[tuple[str, str]],
    bodies: dict[str, str],
    b_action: str,
) -> None:
    """Two ``action`` runs of one fresh pull request without a ``concurrency`` group: both find
    no summary comment and both create one. Each reads the comments again after its create and
    keeps the oldest of ours, so one stays (A's, made first), never none, whoever deletes
    first."""
    simple_pull(gh)
    results = _both(gh, Turns(script), bodies)
    (kept,) = gh.comments_on(7)
    assert results["A"] == StickyResult(kept["id"], "created", results["A"].removed_duplicates)
    assert (results["B"].comment_id, results["B"].action) == (kept["id"], b_action)
    assert results["B"].removed_duplicates == 1
    assert kept["body"] == (bodies["B"] if b_action == "updated" else bodies["A"])
    deletes = gh.requests("DELETE", "/issues/comments/")
    assert {d.path.rsplit("/", 1)[1] for d in deletes} == {str(kept["id"] + 1)}  # B's
    assert [d.status for d in deletes] == ([204, 404] if b_action == "updated" else [204])


def test_an_enormous_review_is_cut_under_the_limit_and_says_so(gh: GitHubStandIn) -> None:
    simple_pull(gh)
    review = _review(3000, message="x" * 60)
    body = summary_body(review, gate(review, threshold=Severity.ERROR, head_sha=SHA))
    assert len(body) < GITHUB_LIMIT
    assert "Cut to stay under GitHub's 65,536-character comment limit" in body
    assert body.count("<details") == body.count("</details>")
    cut_note = body.rsplit("limit:**", 1)[1]
    assert "findings)" in cut_note  # says how many findings are not shown
    # GitHub (the stand-in) accepts it.
    upsert_summary(client_for(gh), gh.full_name, 7, body, login="gitflow-bot")
    assert gh.comments_on(7)[0]["body"] == body


def test_cap_leaves_short_bodies_alone_and_is_exact_at_the_limit() -> None:
    assert cap("short\n", limit=100) == "short\n"
    long = "\n".join(f"- finding {i}" for i in range(100))
    capped = cap(long, limit=200)
    assert capped.startswith("- finding 0\n")
    assert "Cut to stay under" in capped
    kept_part = capped.split("\n\n> ✂️")[0]
    assert len(kept_part) <= 200


def test_run_history_table() -> None:
    rows = [
        RunRow(
            flow="implement",
            agent="claude",
            outcome="complete",
            step="step 1",
            iterations=1,
            files_changed=3,
            insertions=40,
            deletions=2,
            duration_s=125.0,
            tokens=12345,
            cost_usd=0.4321,
        ),
        RunRow(flow="review", agent="codex|x", outcome="revise"),
        RunRow(flow="review", agent="codex", outcome="approved", tokens=900, cost_usd=0.011,
               cost_estimated=True),
    ]  # fmt: skip
    table = run_history(rows).splitlines()
    assert table[0].startswith("| step | flow | agent | outcome | iterations | git |")
    assert table[2] == (
        "| step 1 | implement | claude | complete | 1 | 3 files +40 −2 | 2 min 05 s | 12,345 | $0.43 |"
    )
    # usage a CLI did not state is "unknown", never 0; a price-table cost is marked "~"
    assert table[3] == "| — | review | codex\\|x | revise | — | — | — | unknown | unknown |"
    assert table[4].endswith("| 900 | ~$0.01 |")
    assert run_history([]) == ""
    body = summary_body(_review(), None, rows=rows, questions=["Which API version?"])
    assert "#### Run history" in body and "#### Questions from agents" in body
    assert "- Which API version?" in body
