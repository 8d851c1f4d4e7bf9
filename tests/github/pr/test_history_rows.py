"""A step pull request's run history rows (``github/pr/history.history_rows``)."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.github.pr.history import history_rows
from tests.golden.mermaid_cases import agent, review_round, reviewer, step_result


def test_a_lost_reviewer_a_new_run_listed_shows_no_verdict_of_its_successor(tmp_path: Path) -> None:
    """The killed run's reviewer and the new run's share an agent id: only the new one's row
    carries the round's verdict (the lost one reviewed nothing: it said `canceled: approve`)."""
    lost = agent(
        "review", "reviewer", "step-02-reviewer-1", "run-0", 400, status="canceled",
        reason="lost (its supervisor died); killed by a new run of its step",
    )  # fmt: skip
    agents = [
        lost,
        agent("implement", "builder", "step-02-builder", "run-1", 1_000, reused=True),
        agent("review", "reviewer", "step-02-reviewer-1", "run-2", 1_000),
    ]
    rounds = [review_round(1, True, reviewer("step-02-reviewer-1", "approve"))]
    rows = history_rows(step_result("approved", "approved", agents, rounds), tmp_path)
    assert [row.outcome for row in rows[:3]] == ["canceled", "reused", "succeeded: approve"]
