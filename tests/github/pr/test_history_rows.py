"""A step pull request's run history rows (``github/pr/history.history_rows``)."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.github.pr.history import history_rows
from tests.golden.mermaid_cases import lost_reviewer_result


def test_a_lost_reviewer_a_new_run_listed_shows_no_verdict_of_its_successor(tmp_path: Path) -> None:
    """The killed run's reviewer and the new run's share an agent id: only the new one's row
    carries the round's verdict (the lost one reviewed nothing: it said `canceled: approve`)."""
    rows = history_rows(lost_reviewer_result(), tmp_path)
    assert [row.outcome for row in rows[:3]] == ["canceled", "reused", "succeeded: approve"]
