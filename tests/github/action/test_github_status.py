"""The merge gate as a commit status on the head commit: green only for an approval."""

from __future__ import annotations

import pytest

from gitflow_agents.findings import Finding, Overall, Review, Severity, gate
from gitflow_agents.github.action import status
from tests.github_standin import GitHubStandIn, client_for, gh

__all__ = ["gh"]

SHA = "c" * 40


def _states(gh: GitHubStandIn) -> list[tuple[str, str]]:
    return [(s["state"], s["context"]) for s in gh.statuses_for(SHA)]


def test_pending_then_success_for_an_approved_review(gh: GitHubStandIn) -> None:
    client = client_for(gh)
    review = Review(overall=Overall.APPROVE, reviewed_sha=SHA)
    status.set_pending(client, gh.full_name, SHA)
    status.set_final(
        client, gh.full_name, SHA, review, gate(review, threshold=Severity.ERROR, head_sha=SHA)
    )
    assert _states(gh) == [("pending", status.CONTEXT), ("success", status.CONTEXT)]


@pytest.mark.parametrize(
    "review",
    [
        Review(overall=Overall.REVISE, reviewed_sha=SHA),
        Review(overall=None, reason="no REVIEW_RESULT line", reviewed_sha=SHA),
        Review(overall=Overall.APPROVE, reviewed_sha="d" * 40),  # about another commit
        Review(
            overall=Overall.APPROVE,
            reviewed_sha=SHA,
            findings=(Finding(Severity.ERROR, "boom", file="a.py", line=1),),
        ),
    ],
    ids=["revise", "no-verdict", "other-commit", "error-finding"],
)
def test_anything_but_approval_is_failure(gh: GitHubStandIn, review: Review) -> None:
    client = client_for(gh)
    status.set_final(
        client, gh.full_name, SHA, review, gate(review, threshold=Severity.ERROR, head_sha=SHA)
    )
    ((state, _),) = _states(gh)
    assert state == "failure"
    assert gh.statuses_for(SHA)[0]["description"].startswith("Not approved")


def test_error_state_and_long_descriptions_are_clipped(gh: GitHubStandIn) -> None:
    status.set_error(client_for(gh), gh.full_name, SHA, "agent crashed: " + "x" * 300)
    (made,) = gh.statuses_for(SHA)
    assert made["state"] == "error"
    assert len(made["description"]) == status.MAX_DESCRIPTION
    with pytest.raises(ValueError, match="unknown commit status state"):
        status.set_status(client_for(gh), gh.full_name, SHA, "green", "x")
