"""A step run's record, typed: the ``chain`` key of its ``result.json`` (docs/protocol.md, Run
records), written from these values and read back into the same values.

``chain/record.py`` writes ``StepChain.to_json()``; ``runs/history.py`` (``history``, a step
run's chart) and ``github/pr/history.py`` (the step's pull request) read ``StepChain.from_json``.
One shape both ways, the keys as earlier versions wrote them (camelCase: docs/decisions.md,
"CLI conventions"), so records of older runs read back unchanged. Reading is lenient: a record
is a file an agent can write into, so a field of the wrong type reads as absent and an entry
that does not read (a broken finding) is left out, never a crash (``runs/fields.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from gitflow_agents.base.camel import camel_json
from gitflow_agents.findings.model import (
    Overall,
    Review,
    accepted_from_dict,
    finding_from_dict,
)
from gitflow_agents.git.merge import MergeResult
from gitflow_agents.runs.fields import integer, mapping, strings, text

T = TypeVar("T")


def _objects(data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """The objects of the list ``data[key]`` (other items dropped)."""
    value = data.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


@dataclass(frozen=True)
class AgentEntry:
    """One agent attempt of a step run (``chain.agents[]``; also added to that agent run's own
    ``run`` key)."""

    agent: str  # the agent's name in .flow/
    agent_id: str
    kind: str  # implement | review | fix | research
    run_id: str
    status: str  # the supervisor's outcome status
    reason: str
    reused: bool
    start_sha: str
    end_sha: str
    report: str | None
    duration_ms: int | None
    attempt: int = 1
    left_out: tuple[str, ...] = ()  # nested repositories its commit left out (none: no key)

    def to_json(self) -> dict[str, Any]:
        data = camel_json(self, run_id="runID")  # result.json's spelling (seed 001)
        if not self.left_out:
            del data["leftOut"]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgentEntry:
        return cls(
            agent=text(data, "agent") or "",
            agent_id=text(data, "agentId") or "",
            kind=text(data, "kind") or "",
            run_id=text(data, "runID") or "",
            status=text(data, "status") or "",
            reason=text(data, "reason") or "",
            reused=data.get("reused") is True,
            start_sha=text(data, "startSha") or "",
            end_sha=text(data, "endSha") or "",
            report=text(data, "report"),
            duration_ms=integer(data, "durationMs"),
            attempt=integer(data, "attempt") or 1,
            left_out=tuple(strings(data, "leftOut")),
        )


@dataclass(frozen=True)
class ReviewerEntry:
    """One reviewer's review in a round (``chain.rounds[].reviewers[]``): its verdict, why
    there is none, its findings and the findings it accepted."""

    agent_id: str
    review: Review

    def to_json(self) -> dict[str, Any]:
        review = self.review
        return {
            "agentId": self.agent_id,
            "overall": review.overall.value if review.overall else None,
            "reason": review.reason,
            "findings": [f.to_dict() for f in review.findings],
            "accepted": [a.to_dict() for a in review.accepted],
            **({"kind": review.kind, "kindReason": review.kind_reason} if review.kind else {}),
        }

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], reviewed_sha: str | None, base_sha: str | None
    ) -> ReviewerEntry:
        said = data.get("overall")
        overall = Overall(said) if said in ("approve", "revise") else None
        review = Review(
            overall,
            findings=_readable(data.get("findings"), finding_from_dict, "finding"),
            reviewed_sha=reviewed_sha,
            base_sha=base_sha,
            reason=text(data, "reason") or "",
            accepted=_readable(data.get("accepted"), accepted_from_dict, "accepted"),
            kind=_kind(data),
            kind_reason=(text(data, "kindReason") or "") if _kind(data) else "",
        )
        return cls(text(data, "agentId") or "", review)


def _kind(data: Mapping[str, Any]) -> str:
    """A recorded review kind: ``incremental`` or ``full``; "" for anything else."""
    kind = data.get("kind")
    return kind if kind in ("incremental", "full") else ""


def _readable(items: Any, read: Callable[[Any, str], T], what: str) -> tuple[T, ...]:
    """The items of a list that ``read`` accepts (a broken one is left out, as reading is
    lenient); anything but a list reads as none."""
    found: list[T] = []
    for index, item in enumerate(items if isinstance(items, list) else []):
        try:
            found.append(read(item, f"{what} {index}"))
        except ValueError:
            continue
    return tuple(found)


@dataclass(frozen=True)
class RoundEntry:
    """One review round (``chain.rounds[]``): the commit reviewed, the gate's verdict and
    reasons, each reviewer's review."""

    iteration: int | None  # None: a single review flow
    reviewed_sha: str
    approved: bool
    reasons: tuple[str, ...]
    reviewers: tuple[ReviewerEntry, ...]
    kind: str = ""  # "incremental": a reviewer reviewed only the fix commits; else "full"

    def to_json(self) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "reviewedSha": self.reviewed_sha,
            "approved": self.approved,
            "reasons": list(self.reasons),
            "reviewers": [r.to_json() for r in self.reviewers],
            **({"kind": self.kind} if self.kind else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], base_sha: str | None) -> RoundEntry:
        reviewed = text(data, "reviewedSha") or ""
        return cls(
            iteration=integer(data, "iteration"),
            reviewed_sha=reviewed,
            approved=data.get("approved") is True,
            reasons=tuple(strings(data, "reasons")),
            reviewers=tuple(
                ReviewerEntry.from_json(item, reviewed or None, base_sha)
                for item in _objects(data, "reviewers")
            ),
            kind=_kind(data),
        )


@dataclass(frozen=True)
class PullRef:
    """The pull request ``run --pr`` opened for the step (``chain.pullRequest``)."""

    number: int
    url: str

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "url": self.url}


@dataclass(frozen=True)
class SetupEntry:
    """``chain.setup`` in a step run (result.json ``chain.setup``): the command, whether it ran
    in this run (false: the work tree was already set up with it), its exit code (None: it
    did not end, a timeout) and its output's file in the run folder (None when it did not run)."""

    command: str
    ran: bool
    exit_code: int | None
    log: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "ran": self.ran,
            "exitCode": self.exit_code,
            "log": self.log,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SetupEntry:
        return cls(
            command=text(data, "command") or "",
            ran=data.get("ran") is True,
            exit_code=integer(data, "exitCode"),
            log=text(data, "log"),
        )


@dataclass(frozen=True)
class StepChain:
    """The ``chain`` key of a step run's result.json."""

    outcome: str  # chain.record.StepOutcome; any string when read back
    exit_code: int
    reason: str
    step: int | None
    plan: str | None
    branch: str | None
    target: str
    base_sha: str | None
    head_sha: str | None
    iterations: int
    fixes: int
    max_iterations: int
    reviewers: tuple[str, ...]
    merged: MergeResult | None
    agents: tuple[AgentEntry, ...]
    rounds: tuple[RoundEntry, ...]
    notices: tuple[str, ...]
    pull_request: PullRef | None = None  # added once ``run --pr`` opened it
    setup: SetupEntry | None = None  # chain.setup, when configured

    def to_json(self) -> dict[str, Any]:
        merged = self.merged
        data: dict[str, Any] = {
            "outcome": self.outcome,
            "exitCode": self.exit_code,
            "reason": self.reason,
            "step": self.step,
            "plan": self.plan,
            "branch": self.branch,
            "target": self.target,
            "baseSha": self.base_sha,
            "headSha": self.head_sha,
            "iterations": self.iterations,
            "fixes": self.fixes,
            "maxIterations": self.max_iterations,
            "reviewers": list(self.reviewers),
            "merged": (
                {"sha": merged.sha, "previous": merged.previous, "kind": merged.kind}
                if merged
                else None
            ),
            "agents": [a.to_json() for a in self.agents],
            "rounds": [r.to_json() for r in self.rounds],
            "notices": list(self.notices),
        }
        if self.pull_request is not None:
            data["pullRequest"] = self.pull_request.to_json()
        if self.setup is not None:
            data["setup"] = self.setup.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepChain:
        base = text(data, "baseSha")
        merged = mapping(data, "merged")
        pull = mapping(data, "pullRequest")
        number, url = integer(pull, "number"), text(pull, "url")
        return cls(
            outcome=text(data, "outcome") or "",
            exit_code=integer(data, "exitCode") or 0,
            reason=text(data, "reason") or "",
            step=integer(data, "step"),
            plan=text(data, "plan"),
            branch=text(data, "branch"),
            target=text(data, "target") or "",
            base_sha=base,
            head_sha=text(data, "headSha"),
            iterations=integer(data, "iterations") or 0,
            fixes=integer(data, "fixes") or 0,
            max_iterations=integer(data, "maxIterations") or 0,
            reviewers=tuple(strings(data, "reviewers")),
            merged=(
                MergeResult(
                    text(merged, "sha") or "",
                    text(merged, "previous") or "",
                    text(merged, "kind") or "",
                )
                if merged
                else None
            ),
            agents=tuple(AgentEntry.from_json(item) for item in _objects(data, "agents")),
            rounds=tuple(RoundEntry.from_json(item, base) for item in _objects(data, "rounds")),
            notices=tuple(strings(data, "notices")),
            pull_request=PullRef(number, url) if number is not None and url else None,
            setup=SetupEntry.from_json(mapping(data, "setup")) if mapping(data, "setup") else None,
        )


def step_chain(result: Mapping[str, Any]) -> StepChain | None:
    """The ``chain`` key of ``result`` (a result.json's data) read back; None for an agent
    run's record (no ``chain`` object)."""
    chain = result.get("chain")
    return StepChain.from_json(chain) if isinstance(chain, dict) else None
