"""The optional check run: the findings as annotations in the pull request's Files tab.

One ``POST /repos/{owner}/{repo}/check-runs``, created already completed, whose conclusion mirrors
the gate (``success`` only for an approval) and which carries at most ``MAX_ANNOTATIONS`` (the
Checks API's limit per request) of the most severe findings that have a file and a line. It is
an extra, never the merge gate (that is the ``gitflow-agents/review`` status): a token that may
not create check runs (no ``checks: write``, or a personal access token, which GitHub never
lets create one) gets a 403 and the check run is skipped without failing anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gitflow_agents.findings import Finding, GateResult, Review, Severity
from gitflow_agents.github.api.client import Client
from gitflow_agents.render import counts
from gitflow_agents.render.markdown import list_item

NAME = "gitflow-agents/findings"
MAX_ANNOTATIONS = 50
MAX_SUMMARY = 65535
LEVELS = {Severity.ERROR: "failure", Severity.WARN: "warning", Severity.INFO: "notice"}


def annotations_for(findings: Sequence[Finding]) -> tuple[list[dict[str, Any]], int]:
    """(the annotations, how many findings with a place did not fit), most severe first."""
    placed = [f for f in findings if f.file and f.line is not None]
    placed.sort(key=lambda f: -f.severity.rank)
    out = []
    for finding in placed[:MAX_ANNOTATIONS]:
        assert finding.file is not None and finding.line is not None
        item: dict[str, Any] = {
            "path": finding.file,
            "start_line": finding.line,
            "end_line": max(finding.end_line or finding.line, finding.line),
            "annotation_level": LEVELS[finding.severity],
            "message": finding.message[:60000],
        }
        if finding.rule:
            item["title"] = finding.rule[:255]
        out.append(item)
    return out, max(len(placed) - MAX_ANNOTATIONS, 0)


def output(review: Review, gate: GateResult) -> dict[str, Any]:
    """The check run's ``output``: title, a short summary, the annotations."""
    notes, left_out = annotations_for(review.findings)
    verdict = "Approved" if gate.approved else "Not approved"

    summary = f"**{verdict}**: {counts(review)}."
    if gate.reasons and not gate.approved:
        summary += "\n\n" + "\n".join(list_item(reason) for reason in gate.reasons)
    if left_out:
        summary += (
            f"\n\n{left_out} more findings are not annotated here (the Checks API takes "
            f"{MAX_ANNOTATIONS} per request); all of them are in the summary comment."
        )
    return {
        "title": f"gitflow-agents: {verdict.lower()}",
        "summary": summary[:MAX_SUMMARY],
        "annotations": notes,
    }


def create(
    client: Client,
    repo: str,
    head_sha: str,
    review: Review,
    gate: GateResult,
    *,
    details_url: str | None = None,
) -> int:
    """Create the completed check run; its id. GitHubForbidden when the token may not."""
    return client.create_check_run(
        repo,
        head_sha,
        name=NAME,
        conclusion="success" if gate.approved else "failure",
        output=output(review, gate),
        details_url=details_url,
    )
