"""A Review with every text in it masked: the single step between a reviewer's report and any
output.

``redact_review`` puts every text of a Review (an agent reviewer's above all: messages,
suggestions, rules, summary, reasons, run data) through the secret rules of
``base/redact.py``, and masks the exact values of the secrets the reviewed diff adds wherever
they are quoted, before anything is printed, written or posted (docs/security.md, "Secrets in
review output"). A finding's location stays readable: only the secret in a path is masked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gitflow_agents.base.redact import MIN_EXACT_LENGTH, mask, redact_data, redact_text
from gitflow_agents.base.secret_rules import token_hits
from gitflow_agents.findings.model import Finding, Review


def _redact_location(path: str, secrets: frozenset[str]) -> str:
    """A file path with the secrets in it masked, but never the location itself: a value that
    is the path, or whole ``/``-separated parts of it, stays (a flagged value that names a file
    is no reason to hide where a finding is)."""
    for value in sorted({s for s in secrets if len(s) >= MIN_EXACT_LENGTH}, key=len, reverse=True):
        position = path.find(value)
        while position >= 0:
            end = position + len(value)
            aligned = (position == 0 or path[position - 1] == "/") and (
                end == len(path) or path[end] == "/"
            )
            if aligned:
                position = path.find(value, end)
                continue
            path = path[:position] + mask(value) + path[end:]
            position = path.find(value, position + len(mask(value)))
    for _, token in token_hits(path):
        path = path.replace(token, mask(token))
    return path


def _redact_optional(text: str | None, secrets: frozenset[str]) -> str | None:
    return None if text is None else redact_text(text, secrets)


def redact_finding(finding: Finding, secrets: Iterable[str] = ()) -> Finding:
    """``finding`` with its texts (message, suggestion, rule, file) redacted."""
    known = frozenset(secrets)
    return dataclasses.replace(
        finding,
        message=redact_text(finding.message, known),
        suggestion=_redact_optional(finding.suggestion, known),
        rule=_redact_optional(finding.rule, known),
        file=None if finding.file is None else _redact_location(finding.file, known),
    )


def redact_review(review: Review, secrets: Iterable[str] = ()) -> Review:
    """``review`` with every text in it redacted (``redact_text``): the single step between a
    reviewer's report and any output. ``secrets``: the exact values the reviewed diff adds."""
    known = frozenset(secrets)
    run = redact_data(dict(review.run), known)
    return dataclasses.replace(
        review,
        summary=redact_text(review.summary, known),
        findings=tuple(redact_finding(f, known) for f in review.findings),
        accepted=tuple(
            dataclasses.replace(
                a, finding=redact_finding(a.finding, known), why=redact_text(a.why, known)
            )
            for a in review.accepted
        ),
        reviewed_sha=_redact_optional(review.reviewed_sha, known),
        base_sha=_redact_optional(review.base_sha, known),
        unreviewed_files=tuple(_redact_location(path, known) for path in review.unreviewed_files),
        run=run if isinstance(run, dict) else {},
        reason=redact_text(review.reason, known),
    )
