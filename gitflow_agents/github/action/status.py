"""The merge gate as a commit status: ``gitflow-agents/review`` on the reviewed head commit.

``pending`` when a run starts; at the end ``success`` only for an approved review of exactly
that commit, ``failure`` for every other review outcome, ``error`` when the run itself broke
(agent crash, timeout, configuration error). A branch protection rule requiring this context
therefore never sees green for anything but an approval.

``StatusWriter`` writes the gate of one commit (this status, the optional check run) until GitHub
refuses the token, then only notes what it could not do; ``publish.Publisher`` (a pull request's
head) and ``merge_group.GroupWriter`` (a merge group's head) are the two kinds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeVar

from gitflow_agents.base.errors import GitflowError, GitHubError, interrupted_by
from gitflow_agents.findings import GateResult, Review
from gitflow_agents.github.action import checks
from gitflow_agents.github.action.runner import PREFIX, notice
from gitflow_agents.github.api.client import Client, GitHubForbidden
from gitflow_agents.render import counts as counts_of

T = TypeVar("T")
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


def failure_reason(exc: BaseException) -> str:
    """Why a run that raised ``exc`` did not complete: our own error's message, only the type
    of any other (its text was never meant for a status or a comment)."""
    if isinstance(exc, KeyboardInterrupt):  # a cancelled job (SIGTERM), Ctrl-C
        return f"interrupted ({interrupted_by(exc)})"
    return exc.message if isinstance(exc, GitflowError) else f"crashed: {type(exc).__name__}"


class StatusWriter(ABC):
    """Writes the gate of one commit (``sha``: its status, the optional check run) until GitHub
    says the token may not; from then on it only notes what it could not do (the degrade path
    for fork PRs and read-only tokens). A token refused a comment or a review but not a status
    (``statuses: write`` without ``pull-requests: write``) still sets the statuses: a
    ``pending`` one set is always resolved."""

    where = "pull request"
    """What the warning of the degrade path says the token may not write to."""

    def __init__(self, client: Client, repo: str, target_url: str | None):
        self.client = client
        self.repo = repo
        self.target_url = target_url
        self.degraded: str | None = None
        """Why the token may not write (GitHub's first refusal); None while it may."""
        self.statuses_refused = False
        """GitHub refused a status write: no write of any kind is tried after it."""
        self.writes = 0
        self.inline_posted = 0
        """Inline comments this run posted (the ``inline-posted`` output), as far as it got."""
        self.comment_id: int | None = None
        """The summary comment this run wrote (the ``comment-id`` output), once written."""
        self.check_run_id: int | None = None
        """The check run this run created (the ``check-run-id`` output), once created."""

    @property
    @abstractmethod
    def sha(self) -> str:
        """The commit whose gate this writes."""

    def attempt(self, what: str, call: Callable[[], T], *, status: bool = False) -> T | None:
        """``call()``, a write (``what``), unless GitHub refused the token before: a refused
        status stops every write, any other refused write every write but the statuses
        (``status``: this is one)."""
        if self.statuses_refused or (self.degraded is not None and not status):
            return None
        try:
            result = call()
        except GitHubForbidden as exc:
            self.degraded = self.degraded or str(exc)
            self.statuses_refused = status
            notice(
                "warning",
                f"cannot {what}: the token may not write to this {self.where} (a fork PR or a "
                "read-only GITHUB_TOKEN); results are in the annotations and the job summary. "
                f"({exc})",
            )
            return None
        self.writes += 1
        return result

    def pending(self) -> None:
        self.attempt(
            "set the pending status",
            lambda: set_pending(self.client, self.repo, self.sha, target_url=self.target_url),
            status=True,
        )

    def final(self, result: Review, gate: GateResult, what: str = "set the final status") -> None:
        """The verdict's status of ``sha`` (``set_final``)."""
        self.attempt(
            what,
            lambda: set_final(
                self.client, self.repo, self.sha, result, gate, target_url=self.target_url
            ),
            status=True,
        )

    def error(self, why: str) -> None:
        """Best effort: the run is already failing, a second failure must not hide the first."""
        try:
            self.attempt(
                "set the error status",
                lambda: set_error(
                    self.client, self.repo, self.sha, why, target_url=self.target_url
                ),
                status=True,
            )
        except GitHubError as exc:
            notice("warning", f"could not set the error status: {exc}")

    def failed(self, exc: Exception) -> None:
        """The error status for a run that raised ``exc`` (``failure_reason``)."""
        self.error(failure_reason(exc))

    def check_run(self, result: Review, gate: GateResult) -> int | None:
        """The optional check run. Never fails the run and never switches to degraded mode:
        a token without ``checks: write`` (403) just means no check run."""
        if self.degraded is not None:
            return None
        try:
            made = checks.create(
                self.client,
                self.repo,
                self.sha,
                result,
                gate,
                details_url=self.target_url,
            )
        except GitHubForbidden as exc:
            print(f"{PREFIX}: no check run: the token may not create one ({exc})", flush=True)
            return None
        except GitHubError as exc:
            notice("warning", f"the optional check run was not created: {exc}")
            return None
        self.writes += 1
        self.check_run_id = made
        return made
