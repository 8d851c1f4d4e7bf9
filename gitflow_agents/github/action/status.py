"""The merge gate as a commit status: ``gitflow-agents/review`` on the reviewed head commit.

``pending`` when a run starts; at the end ``success`` only for an approved review of exactly
that commit, ``failure`` for every other review outcome, ``error`` when the run itself broke
(agent crash, timeout, configuration error). A branch protection rule requiring this context
therefore never sees green for anything but an approval.
"""

from __future__ import annotations

from gitflow_agents.findings import GateResult, Review
from gitflow_agents.github.api.client import Client
from gitflow_agents.render import counts as counts_of

CONTEXT = "gitflow-agents/review"
MAX_DESCRIPTION = 140
"""GitHub refuses longer status descriptions."""


def clip(text: str, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def final_state(gate: GateResult) -> str:
    return "success" if gate.approved else "failure"


def final_description(review: Review, gate: GateResult) -> str:
    counts = counts_of(review)
    if gate.approved:
        return clip(f"Approved: {counts}")
    reason = gate.reasons[0] if gate.reasons else "not approved"
    return clip(f"Not approved: {counts}; {reason}")


def set_status(
    client: Client,
    repo: str,
    sha: str,
    state: str,
    description: str,
    *,
    target_url: str | None = None,
    context: str = CONTEXT,
) -> None:
    if state not in ("pending", "success", "failure", "error"):
        raise ValueError(f"unknown commit status state {state!r}")
    client.create_status(
        repo,
        sha,
        state=state,
        context=context,
        description=clip(description),
        target_url=target_url,
    )


def set_pending(client: Client, repo: str, sha: str, *, target_url: str | None = None) -> None:
    set_status(client, repo, sha, "pending", "Review running", target_url=target_url)


def set_final(
    client: Client,
    repo: str,
    sha: str,
    review: Review,
    gate: GateResult,
    *,
    target_url: str | None = None,
) -> None:
    set_status(
        client,
        repo,
        sha,
        final_state(gate),
        final_description(review, gate),
        target_url=target_url,
    )


def set_error(
    client: Client, repo: str, sha: str, why: str, *, target_url: str | None = None
) -> None:
    set_status(client, repo, sha, "error", f"Review did not complete: {why}", target_url=target_url)
