"""A workflow run as the Actions API reports it: whether the run that made a claim still lives.

``GET /repos/{owner}/{repo}/actions/runs/{run_id}`` (Actions read; the workflow's own token has
it): its ``status`` (``queued``, ``in_progress``, ``completed``, …) and ``run_attempt``, the
attempt running now. Part of the GitHub boundary: it calls GitHub through the client's
transport (``_call``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitflow_agents.github.api.retry import GitHubForbidden

if TYPE_CHECKING:
    from gitflow_agents.github.api.client import Client


@dataclass(frozen=True)
class WorkflowRun:
    run_id: int
    status: str
    attempt: int

    def ended(self, attempt: int) -> bool:
        """Attempt ``attempt`` of this run is over: the run completed, or a later attempt
        (a re-run) replaced it."""
        return self.status == "completed" or self.attempt > attempt


def workflow_run(client: Client, repo: str, run_id: int) -> WorkflowRun | None:
    """The run, or None when the token may not see it or it is gone (403/404): unknown."""
    path = f"/repos/{repo}/actions/runs/{run_id}"
    try:
        found = client._call(f"GET {path}", lambda: client._json("GET", path))
    except GitHubForbidden:
        return None
    attempt = found.get("run_attempt") if isinstance(found, dict) else None
    return WorkflowRun(
        run_id,
        str(found.get("status") or "") if isinstance(found, dict) else "",
        attempt if isinstance(attempt, int) else 1,
    )
