"""A chain step's run, read back from its ``result.json``, for the step's pull request.

The chain record (docs/protocol.md, Run records: ``chain`` and ``gitStats``) holds the agents,
rounds and verdicts; each agent's own ``result.json`` (under the same ``runs/`` folder) holds its
tokens, cost and the statistics of its commit. ``history_rows`` turns them into the sticky
comment's run-history rows (one per agent attempt, then the whole step), ``last_review`` into
the review and gate the comment, the inline review and the status are about.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitflow_agents.findings import (
    Accepted,
    Finding,
    GateResult,
    Overall,
    Review,
    Severity,
    finding_from_dict,
    merge_reviews,
)
from gitflow_agents.findings.model import accepted_from_dict
from gitflow_agents.github.action.comment import RunRow, float_or_none, int_or_none
from gitflow_agents.runs import read_json


def _agent_record(runs: Path, run_id: str) -> Mapping[str, Any]:
    if not run_id or "/" in run_id or run_id.startswith("."):
        return {}
    return read_json(runs / run_id / "result.json") or {}


def _verdicts(chain: Mapping[str, Any]) -> dict[str, str]:
    """agentId → "approve" / "revise (2 findings)" / "approve (1 accepted)" for every reviewer
    of every round."""
    found: dict[str, str] = {}
    for round_ in chain.get("rounds") or []:
        for reviewer in round_.get("reviewers") or []:
            findings = reviewer.get("findings") or []
            accepted = reviewer.get("accepted")
            verdict = str(reviewer.get("overall") or "no verdict")
            counted = []
            if findings:
                counted.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
            if isinstance(accepted, list) and accepted:
                counted.append(f"{len(accepted)} accepted")
            if counted:
                verdict += f" ({', '.join(counted)})"
            found[str(reviewer.get("agentId"))] = verdict
    return found


def _stats(data: Any) -> tuple[int | None, int | None, int | None]:
    if not isinstance(data, Mapping):
        return None, None, None
    files = data.get("filesChanged") or data.get("changedFiles")
    count = len(files) if isinstance(files, list) else int_or_none(files)
    return count, int_or_none(data.get("insertions")), int_or_none(data.get("deletions"))


def _seconds(milliseconds: Any) -> float | None:
    """A record's ``durationMs`` in seconds; None when it is not a whole number."""
    value = int_or_none(milliseconds)
    return value / 1000 if value is not None else None


def history_rows(result: Mapping[str, Any], runs: Path) -> list[RunRow]:
    """One row per agent attempt (its verdict for a reviewer), then one for the whole step."""
    chain = result.get("chain") or {}
    step = str(chain.get("step") or "—")
    verdicts = _verdicts(chain)
    rows: list[RunRow] = []
    total_tokens: int | None = None
    total_cost: float | None = None
    for agent in chain.get("agents") or []:
        record = _agent_record(runs, str(agent.get("runID") or ""))
        run = record.get("run") or {}
        tokens = [int_or_none(run.get(k)) for k in ("inputTokens", "outputTokens")]
        used = (
            sum(t for t in tokens if t is not None) if any(t is not None for t in tokens) else None
        )
        cost = float_or_none(run.get("costUsd"))
        if used is not None:
            total_tokens = (total_tokens or 0) + used
        if cost is not None:
            total_cost = (total_cost or 0.0) + cost
        files, plus, minus = _stats(record.get("gitStats"))
        outcome = "reused" if agent.get("reused") else str(agent.get("status") or "—")
        if agent.get("kind") == "review" and agent.get("agentId") in verdicts:
            outcome = f"{outcome}: {verdicts[str(agent['agentId'])]}"
        rows.append(
            RunRow(
                flow=str(agent.get("kind") or "—"),
                agent=str(agent.get("agentId") or agent.get("agent") or "—"),
                outcome=outcome,
                step=step,
                files_changed=files,
                insertions=plus,
                deletions=minus,
                duration_s=_seconds(agent.get("durationMs")),
                tokens=used,
                cost_usd=cost,
            )
        )
    files, plus, minus = _stats(result.get("gitStats"))
    rows.append(
        RunRow(
            flow="chain",
            agent=" → ".join(dict.fromkeys(str(a.get("agent")) for a in chain.get("agents") or []))
            or "—",
            outcome=str(chain.get("outcome") or "—"),
            step=step,
            iterations=int_or_none(chain.get("iterations")),
            files_changed=files,
            insertions=plus,
            deletions=minus,
            duration_s=_seconds((result.get("run") or {}).get("durationMs")),
            tokens=total_tokens,
            cost_usd=total_cost,
        )
    )
    return rows


def _accepted(items: Any) -> tuple[Accepted, ...]:
    """A reviewer's accepted findings as the record has them; an entry that does not read is
    left out (the record is an agent-writable file: a broken entry never fails the publish)."""
    found: list[Accepted] = []
    for index, item in enumerate(items if isinstance(items, list) else []):
        try:
            found.append(accepted_from_dict(item, f"accepted {index}"))
        except ValueError:
            continue
    return tuple(found)


def last_review(result: Mapping[str, Any], threshold: Severity) -> tuple[Review, GateResult]:
    """The last review round as one review (every reviewer's findings) and its gate."""
    chain = result.get("chain") or {}
    rounds = chain.get("rounds") or []
    if not rounds:
        reason = str(chain.get("reason") or "no review ran")
        return Review(None, reason=reason), GateResult(False, 1, (reason,), threshold)
    last = rounds[-1]
    reviewed = str(last.get("reviewedSha") or "") or None
    base = str(chain.get("baseSha") or "") or None
    reviews = []
    for reviewer in last.get("reviewers") or []:
        findings: list[Finding] = []
        for index, item in enumerate(reviewer.get("findings") or []):
            try:
                findings.append(finding_from_dict(item, f"finding {index}"))
            except ValueError:
                continue
        said = reviewer.get("overall")
        overall = None if said is None else Overall.APPROVE if said == "approve" else Overall.REVISE
        reviews.append(
            Review(
                overall,
                findings=tuple(findings),
                reviewed_sha=reviewed,
                base_sha=base,
                reason=str(reviewer.get("reason") or ""),
                accepted=_accepted(reviewer.get("accepted")),
            )
        )
    review = merge_reviews(reviews) if len(reviews) > 1 else (reviews or [Review(None)])[0]
    approved = bool(last.get("approved"))
    reasons = tuple(str(r) for r in last.get("reasons") or [])
    return review, GateResult(approved, 0 if approved else 1, reasons, threshold)
