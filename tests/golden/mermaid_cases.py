"""Step runs' result.json data (the shape gitflow_agents/chain/record.py writes) whose Mermaid
flowcharts are pinned in tests/golden/mermaid/<name>.mmd (regenerate: ``python -m
tests.golden.regen``), and the hostile texts every label must keep inert.

tests/render/test_mermaid.py checks the charts against the golden files and their structure;
tests/render/test_mermaid_parse.py parses every one of them with Mermaid's own parser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

GOLDEN = Path(__file__).parent / "mermaid"


class Case(NamedTuple):
    result: dict[str, Any]
    agent_results: dict[str, dict[str, Any]]


def agent(
    kind: str,
    name: str,
    agent_id: str,
    run_id: str,
    ms: int,
    status: str = "succeeded",
    reason: str = "report.md renamed to report.complete.md",
    attempt: int = 1,
    reused: bool = False,
) -> dict[str, Any]:
    """One entry of ``chain.agents`` (``AgentRun.to_json``)."""
    return {
        "agent": name,
        "agentId": agent_id,
        "kind": kind,
        "runID": run_id,
        "status": status,
        "reason": reason,
        "reused": reused,
        "startSha": "a" * 40,
        "endSha": "b" * 40,
        "report": None,
        "durationMs": ms,
        "attempt": attempt,
    }


def reviewer(agent_id: str, overall: str | None, findings: int = 0) -> dict[str, Any]:
    return {
        "agentId": agent_id,
        "overall": overall,
        "reason": f"REVIEW_RESULT: {overall}",
        "findings": [
            {"severity": "error", "message": f"finding {n}", "file": "app.py", "line": n}
            for n in range(1, findings + 1)
        ],
    }


def review_round(iteration: int, approved: bool, *reviewers: dict[str, Any]) -> dict[str, Any]:
    return {
        "iteration": iteration,
        "reviewedSha": "c" * 40,
        "approved": approved,
        "reasons": [] if approved else ["the reviewer asks for changes"],
        "reviewers": list(reviewers),
    }


def step_result(
    outcome: str,
    reason: str,
    agents: list[dict[str, Any]],
    rounds: list[dict[str, Any]],
    *,
    merged: bool = False,
    duration_ms: int = 95_000,
) -> dict[str, Any]:
    return {
        "status": "succeeded" if outcome == "approved" else "failed",
        "chain": {
            "outcome": outcome,
            "exitCode": {"approved": 0, "rejected": 1}.get(outcome, 3),
            "reason": reason,
            "step": 2,
            "branch": "agents/feature/step-2",
            "target": "main",
            "iterations": len(rounds),
            "merged": {"sha": "d" * 40, "previous": "e" * 40, "kind": "fast-forward"}
            if merged
            else None,
            "agents": agents,
            "rounds": rounds,
        },
        "run": {"runID": "run-step", "flow": "feature", "kind": "chain", "durationMs": duration_ms},
    }


def lost_reviewer_result() -> dict[str, Any]:
    """A step run again after its first run was killed mid-review: the lost reviewer it lists
    (first, as it ran before it), its implementer reused, its own reviewer of the same agent
    id approving round 1."""
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
    return step_result("approved", "approved", agents, rounds)


def usage(tokens_in: int, tokens_out: int, cost: float) -> dict[str, Any]:
    """An agent run's own result.json, as far as the chart reads it."""
    return {"run": {"inputTokens": tokens_in, "outputTokens": tokens_out, "costUsd": cost}}


def estimated_usage(tokens_in: int, tokens_out: int, cost: float | None) -> dict[str, Any]:
    """An agent run whose CLI stated tokens but no cost: priced from the price table
    (``costEstimated``), or left without a cost (None: the model has no price)."""
    run: dict[str, Any] = {"inputTokens": tokens_in, "outputTokens": tokens_out}
    if cost is not None:
        run.update(costUsd=cost, costEstimated=True)
    return {"run": run}


def _revise_then_approve() -> Case:
    agents = [
        agent("implement", "builder", "step-02-builder", "run-1", 41_200),
        agent("review", "reviewer", "step-02-reviewer-1", "run-2", 12_400),
        agent("fix", "fixer", "step-02-fixer-1", "run-3", 20_100),
        agent("review", "reviewer", "step-02-reviewer-2", "run-4", 9_800),
    ]
    rounds = [
        review_round(1, False, reviewer("step-02-reviewer-1", "revise", 2)),
        review_round(2, True, reviewer("step-02-reviewer-2", "approve")),
    ]
    results = {
        "run-1": usage(12_000, 3_400, 0.21),
        "run-2": usage(8_000, 900, 0.05),
        "run-3": usage(9_500, 2_000, 0.12),
        # run-4: an adapter that reports no usage
    }
    return Case(
        step_result("approved", "approved in review 2", agents, rounds, merged=True), results
    )


def _parallel_reviewers() -> Case:
    agents = [
        agent("implement", "builder", "step-02-builder", "run-1", 30_000),
        agent("review", "reviewer", "step-02-reviewer-1", "run-2", 8_000),
        agent("review", "security", "step-02-security-1", "run-3", 9_000),
        agent("fix", "fixer", "step-02-fixer-1", "run-4", 15_000),
        agent("review", "reviewer", "step-02-reviewer-2", "run-5", 7_000),
        agent("review", "security", "step-02-security-2", "run-6", 6_000),
    ]
    rounds = [
        review_round(
            1,
            False,
            reviewer("step-02-reviewer-1", "approve"),
            reviewer("step-02-security-1", "revise", 1),
        ),
        review_round(
            2,
            True,
            reviewer("step-02-reviewer-2", "approve"),
            reviewer("step-02-security-2", "approve"),
        ),
    ]
    result = step_result("approved", "approved in review 2", agents, rounds)
    result["chain"]["pullRequest"] = {"number": 12, "url": "https://github.com/o/r/pull/12"}
    return Case(result, {})


def _stuck_retry_then_reviewer_crash() -> Case:
    agents = [
        agent(
            "implement",
            "builder",
            "step-02-builder",
            "run-1",
            600_000,
            "stuck",
            "no activity for 600 s",
        ),
        agent("implement", "builder", "step-02-builder", "run-2", 45_000, attempt=2),
        agent("review", "reviewer", "step-02-reviewer-1", "run-3", 1_000, "crashed", "exit code 1"),
    ]
    return Case(step_result("failed", "step-02-reviewer-1: crashed: exit code 1", agents, []), {})


def _rejected_at_the_limit() -> Case:
    agents = [
        agent("implement", "builder", "step-02-builder", "run-1", 20_000, reused=True),
        agent("review", "reviewer", "step-02-reviewer-1", "run-2", 10_000),
        agent(
            "fix",
            "fixer",
            "step-02-fixer-1",
            "run-3",
            10_000,
            "timeout",
            "max_wait_secs 1800 reached",
        ),
    ]
    rounds = [review_round(1, False, reviewer("step-02-reviewer-1", "revise", 1))]
    return Case(
        step_result("rejected", "not approved after 1 review(s): REVISE", agents, rounds), {}
    )


def _no_valid_verdict() -> Case:
    """Reviewers whose reports held no valid marker (``overall`` null): NOT APPROVED, alone in
    a round and beside an approving reviewer; the step rejected, its pull request named."""
    agents = [
        agent("implement", "builder", "step-02-builder", "run-1", 10_000),
        agent("review", "reviewer", "step-02-reviewer-1", "run-2", 5_000),
        agent("fix", "fixer", "step-02-fixer-1", "run-3", 8_000),
        agent("review", "reviewer", "step-02-reviewer-2", "run-4", 5_000),
        agent("review", "security", "step-02-security-2", "run-5", 4_000),
    ]
    rounds = [
        review_round(1, False, reviewer("step-02-reviewer-1", None)),
        review_round(
            2,
            False,
            reviewer("step-02-reviewer-2", None),
            reviewer("step-02-security-2", "approve"),
        ),
    ]
    result = step_result("rejected", "not approved after 2 review(s): no verdict", agents, rounds)
    result["chain"]["pullRequest"] = {"number": 3, "url": "https://github.com/o/r/pull/3"}
    return Case(result, {})


def _estimated_and_unknown_spend() -> Case:
    """Spend as the tables show it: a CLI's own cost, a cost estimated from the price table
    (``~``), tokens without a price (cost unknown), no usage at all (spend unknown); the total a
    lower bound (``≥``) that is partly estimated."""
    agents = [
        agent("implement", "builder", "step-02-builder", "run-1", 30_000),
        agent("review", "reviewer", "step-02-reviewer-1", "run-2", 10_000),
        agent("fix", "fixer", "step-02-fixer-1", "run-3", 20_000),
        agent("review", "reviewer", "step-02-reviewer-2", "run-4", 10_000),
    ]
    rounds = [
        review_round(1, False, reviewer("step-02-reviewer-1", "revise", 1)),
        review_round(2, True, reviewer("step-02-reviewer-2", "approve")),
    ]
    results = {
        "run-1": usage(10_000, 2_000, 0.30),
        "run-2": estimated_usage(6_000, 500, 0.04),
        "run-3": estimated_usage(4_000, 1_000, None),
    }
    return Case(step_result("approved", "approved in review 2", agents, rounds), results)


def _wrong_types() -> Case:
    """What an agent could leave in a record: every field of the wrong type reads as absent."""
    result: dict[str, Any] = {
        "chain": {
            "outcome": 7,
            "reason": ["x"],
            "merged": "yes",
            "agents": [
                5,
                None,
                {"kind": 3, "agent": {"a": 1}, "durationMs": "fast", "status": True},
            ],
            "rounds": "none",
        },
        "run": {"durationMs": float("nan")},
    }
    return Case(result, {"run-1": {"run": []}})


CASES: dict[str, Case] = {
    "revise_then_approve": _revise_then_approve(),
    "parallel_reviewers": _parallel_reviewers(),
    "stuck_retry_then_reviewer_crash": _stuck_retry_then_reviewer_crash(),
    "rejected_at_the_limit": _rejected_at_the_limit(),
    "no_valid_verdict": _no_valid_verdict(),
    "estimated_and_unknown_spend": _estimated_and_unknown_spend(),
    "wrong_types": _wrong_types(),
}

HOSTILE = (
    '"] --> evil["x"]\nclick n1 "javascript:alert(1)"\n```\n%%{init: {"securityLevel": "loose"}}%%'
    "\nclassDef x fill:#f00\nstyle n1 fill:#f00\n<img src=x onerror=alert(1)>|pipe|;#quot;`x`"
    "\r\nend\nsubgraph s\n\u202eRTL\u0000\ttab n2@{ shape: circle } &amp; [[link]] (paren) {brace}"
)
"""Text that would break out of a label, add a node, an edge, a click, a style or a directive,
or close the fence, if it were not inert."""


def hostile_case(value: str) -> Case:
    """``revise_then_approve`` and ``parallel_reviewers`` together, a stuck attempt and an agent
    of an unknown kind, with ``value`` in every agent name, id, status, reason and verdict, as
    that kind, as the outcome, its reason, the merge and the pull request's url (the same structure for
    any ``value`` but ``review`` and ``fix``, which are kinds the chart groups by)."""

    def ids(n: int) -> str:
        return f"{value}-{n}"

    agents = [
        agent("implement", value, ids(1), "run-1", 1_000, "stuck", value),
        agent("implement", value, ids(1), "run-2", 1_000, attempt=2, reason=value),
        agent("review", value, ids(2), "run-3", 1_000, reason=value),
        agent("review", value, ids(3), "run-4", 1_000, value, value),
        agent("fix", value, ids(4), "run-5", 1_000, reason=value),
        agent("review", value, ids(5), "run-6", 1_000, reason=value),
        agent(value, value, ids(6), "run-7", 1_000, reason=value),
    ]
    rounds = [
        review_round(1, False, reviewer(ids(2), value, 1), reviewer(ids(3), "revise")),
        review_round(2, False, reviewer(ids(5), value, 3)),
    ]
    result = step_result(value, value, agents, rounds)
    result["chain"]["merged"] = {"kind": value}
    result["chain"]["pullRequest"] = {"number": 7, "url": value}
    return Case(result, {"run-1": usage(1, 2, 0.5)})


def chart(case: Case) -> str:
    from gitflow_agents.render.mermaid import step_flowchart

    return step_flowchart(case.result, agent_results=case.agent_results)


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.mmd"


def mermaid_files() -> dict[Path, str]:
    """Each case's golden file and the chart it must hold."""
    return {golden_path(name): chart(case) for name, case in CASES.items()}
