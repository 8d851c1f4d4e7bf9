"""SARIF 2.1.0 for GitHub code scanning (and any SARIF viewer).

- One run; ``tool.driver`` names gitflow-agents, its version, and one rule per rule id used
  (findings without a rule share the rule ``review``).
- Each finding with a file is a ``result``: ``level`` from the severity (error/warning/note),
  ``physicalLocation`` with the file as a percent-encoded relative URI (``artifact_uri``) and
  ``region.startLine``/``endLine``, and our fingerprint in
  ``partialFingerprints`` so code scanning keeps one alert per finding across pushes.
  A file-level finding (no line) is placed on line 1: GitHub rejects a whole upload when
  one result lacks a usable location.
- Findings without a file are not results (GitHub would reject the file); they are
  ``toolExecutionNotifications`` of the run's invocation, as are the files not reviewed.
- An accepted finding (docs/review.md, "Accepting a finding") is a result too, with SARIF's
  ``suppressions``: ``inSource`` for a marker on its line, ``external`` for a ``.flow/``
  setting or the baseline, ``status`` ``accepted``, the justification saying which: SARIF's
  own property for a result someone accepted. One without a file is a notification saying it
  was accepted.
- The verdict, the gate's decision and the commits go in the run's property bag.
- A review whose reviewer did not complete (``Review.outcome``: a budget stopped it, it failed,
  timed out, was canceled, a rate limit outlasted the wait) is a run with no results whose
  invocation is ``executionSuccessful: false``, its first notification an error saying why,
  and ``outcome`` in the property bag: a log that says nothing was found would read as a clean
  review.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..findings import Accepted, Finding, GateResult, Review
from . import TOOL_NAME, is_approved, message_with_suggestion, verdict_line

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
DEFAULT_RULE = "review"
FINGERPRINT_KEY = "gitflowAgentsFingerprint/v1"


def _rule_id(finding: Finding) -> str:
    return finding.rule or DEFAULT_RULE


def artifact_uri(path: str) -> str:
    """A repository path as ``artifactLocation.uri``: a relative URI reference (SARIF 2.1.0
    §3.10.2 requires RFC 3986), which code scanning resolves against the repository's root.
    Every byte but letters, digits, ``-._~`` and ``/`` is percent-encoded, UTF-8 first: a
    space as ``%20``, ``#`` (a fragment) as ``%23``, ``?`` as ``%3F``, ``%`` as ``%25``, a
    ``:`` that would read as a scheme as ``%3A``; decoding the URI gives the path back."""
    return quote(path, safe="/")


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    assert finding.file
    region: dict[str, int] = {"startLine": finding.line or 1}
    if finding.line is not None and finding.end_line is not None:
        region["endLine"] = finding.end_line
    result: dict[str, Any] = {
        "ruleId": _rule_id(finding),
        "ruleIndex": rule_index,
        "level": finding.severity.sarif_level,
        "message": {"text": message_with_suggestion(finding)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(finding.file)},
                    "region": region,
                }
            }
        ],
    }
    if finding.fingerprint:
        result["partialFingerprints"] = {FINGERPRINT_KEY: finding.fingerprint}
    if finding.line is None:
        result["properties"] = {"fileLevel": True}
    return result


def _suppressed(accepted: Accepted, rule_index: int) -> dict[str, Any]:
    result = _result(accepted.finding, rule_index)
    kind = "inSource" if accepted.by == "marker" else "external"
    result["suppressions"] = [{"kind": kind, "status": "accepted", "justification": accepted.why}]
    return result


def _notifications(review: Review) -> list[dict[str, Any]]:
    """Why the review did not complete (an error, first), findings (and accepted ones) without
    a file, and the files not reviewed: no result can hold them, so they are notifications of
    the run's invocation."""
    notifications: list[dict[str, Any]] = []
    if review.outcome:
        notifications.append(
            {"level": "error", "message": {"text": review.reason or review.outcome}}
        )
    notifications += [
        {
            "level": f.severity.sarif_level,
            "message": {"text": message_with_suggestion(f)},
            **({"descriptor": {"id": f.rule}} if f.rule else {}),
        }
        for f in review.findings
        if not f.file
    ]
    notifications += [
        {
            "level": "note",
            "message": {"text": f"accepted ({a.why}): {message_with_suggestion(a.finding)}"},
            **({"descriptor": {"id": a.finding.rule}} if a.finding.rule else {}),
        }
        for a in review.accepted
        if not a.finding.file
    ]
    notifications += [
        {
            "level": "note",
            "message": {"text": f"not reviewed: {path}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(path)}}}],
        }
        for path in review.unreviewed_files
    ]
    return notifications


def to_sarif(review: Review, gate: GateResult | None = None) -> dict[str, Any]:
    located = [f for f in review.findings if f.file]
    accepted = [a for a in review.accepted if a.finding.file]
    every = [*located, *(a.finding for a in accepted)]
    rule_ids = list(dict.fromkeys(_rule_id(f) for f in every))
    rules = []
    for rule_id in rule_ids:
        first = next(f for f in every if _rule_id(f) == rule_id)
        description = "A finding of the reviewer" if rule_id == DEFAULT_RULE else f"Rule {rule_id}"
        rules.append(
            {
                "id": rule_id,
                "name": rule_id,
                "shortDescription": {"text": description},
                "defaultConfiguration": {"level": first.severity.sarif_level},
            }
        )
    results = [_result(f, rule_ids.index(_rule_id(f))) for f in located]
    results += [_suppressed(a, rule_ids.index(_rule_id(a.finding))) for a in accepted]
    notifications = _notifications(review)
    invocation: dict[str, Any] = {"executionSuccessful": not review.outcome}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    properties: dict[str, Any] = {
        "overall": review.overall.value if review.overall else None,
        "approved": is_approved(review, gate),
        "verdict": verdict_line(review, gate),
        "summary": review.summary,
        "reviewedSha": review.reviewed_sha,
        "baseSha": review.base_sha,
        "accepted": len(review.accepted) or None,
        "excludedFiles": review.excluded_files or None,
        "outcome": review.outcome or None,
    }
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "invocations": [invocation],
                "results": results,
                "columnKind": "unicodeCodePoints",
                "properties": {k: v for k, v in properties.items() if v not in (None, "")},
            }
        ],
    }


def render(review: Review, gate: GateResult | None = None) -> str:
    return json.dumps(to_sarif(review, gate), indent=2, ensure_ascii=False) + "\n"
