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

from gitflow_agents.findings import GateResult, Review, Severity, merge_reviews
from gitflow_agents.github.action.comment import RunRow, int_or_none, usage_fields
from gitflow_agents.runs import read_json
from gitflow_agents.runs.schema import StepChain, step_chain
from gitflow_agents.runs.spend import Spend, run_folder, run_spend, step_spend, total
from gitflow_agents.runs.status import listed_lost


def _agent_record(runs: Path, run_id: str) -> Mapping[str, Any]:
    if not run_id or "/" in run_id or run_id.startswith("."):
        return {}
    return read_json(runs / run_id / "result.json") or {}


def _verdicts(chain: StepChain) -> dict[str, str]:
    """agentId → "approve" / "revise (2 findings)" / "approve (1 accepted)" for every reviewer
    of every round."""
    found: dict[str, str] = {}
    for round_ in chain.rounds:
        for reviewer in round_.reviewers:
            review = reviewer.review
            verdict = review.overall.value if review.overall is not None else "no verdict"
            counted = []
            if review.findings:
                many = "s" if len(review.findings) != 1 else ""
                counted.append(f"{len(review.findings)} finding{many}")
            if review.accepted:
                counted.append(f"{len(review.accepted)} accepted")
            if counted:
                verdict += f" ({', '.join(counted)})"
            found[reviewer.agent_id] = verdict
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
    chain = step_chain(result) or StepChain.from_json({})
    step = str(chain.step or "—")
    verdicts = _verdicts(chain)
    rows: list[RunRow] = []
    spent: list[Spend] = []
    for agent in chain.agents:
        record = _agent_record(runs, agent.run_id)
        run = record.get("run") or {}
        spent.append(run_spend(run if isinstance(run, dict) else {}))
        files, plus, minus = _stats(record.get("gitStats"))
        outcome = "reused" if agent.reused else agent.status or "—"
        lost = listed_lost(agent.status, agent.reason)  # the round's verdict is its successor's
        if agent.kind == "review" and agent.agent_id in verdicts and not lost:
            outcome = f"{outcome}: {verdicts[agent.agent_id]}"
        rows.append(
            RunRow(
                flow=agent.kind or "—",
                agent=agent.agent_id or agent.agent or "—",
                outcome=outcome,
                step=step,
                files_changed=files,
                insertions=plus,
                deletions=minus,
                duration_s=agent.duration_ms / 1000 if agent.duration_ms is not None else None,
                **usage_fields(spent[-1]),
            )
        )
    files, plus, minus = _stats(result.get("gitStats"))
    rows.append(
        RunRow(
            flow="chain",
            agent=" → ".join(dict.fromkeys(a.agent for a in chain.agents)) or "—",
            outcome=chain.outcome or "—",
            step=step,
            iterations=chain.iterations,
            files_changed=files,
            insertions=plus,
            deletions=minus,
            duration_s=_seconds((result.get("run") or {}).get("durationMs")),
            **usage_fields(_step_spent(result, runs, spent)),
        )
    )
    return rows


def _step_spent(result: Mapping[str, Any], runs: Path, spent: list[Spend]) -> Spend:
    """The step run's own spend, as ``history`` counts it (``runs/spend.step_spend``: not the
    agents it reused from a step run before that recorded them, which that run's row counts);
    the sum of ``spent`` (its agents' rows) for a record that names no run folder."""
    run_id = (result.get("run") or {}).get("runID")
    return step_spend(runs / run_id, result) if run_folder(run_id) else total(spent)


def last_review(result: Mapping[str, Any], threshold: Severity) -> tuple[Review, GateResult]:
    """The last review round as one review (every reviewer's findings) and its gate."""
    chain = step_chain(result) or StepChain.from_json({})
    if not chain.rounds:
        reason = chain.reason or "no review ran"
        return Review(None, reason=reason), GateResult(False, 1, (reason,), threshold)
    last = chain.rounds[-1]
    reviews = [reviewer.review for reviewer in last.reviewers]
    review = merge_reviews(reviews) if len(reviews) > 1 else (reviews or [Review(None)])[0]
    approved = last.approved
    return review, GateResult(approved, 0 if approved else 1, last.reasons, threshold)
