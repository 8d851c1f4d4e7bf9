"""A Review with every text in it masked: the single step between a reviewer's report and any
output.

``redact_review`` puts every text of a Review (an agent reviewer's above all: messages,
suggestions, rules, summary, reasons, run data) through the secret rules of
``base/redact.py``, and masks the exact values of the secrets the reviewed diff adds wherever
they are quoted, before anything is printed, written or posted (docs/security.md, "Secrets in
review output"). Values are masked, never locations: a finding's file and the files not
reviewed stay as written, as fields and where a text names them.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitflow_agents.base.redact import redact_data, redact_text
from gitflow_agents.findings.model import Finding, Review


def _redact_optional(
    text: str | None, secrets: frozenset[str], keep: tuple[str, ...] = ()
) -> str | None:
    return None if text is None else redact_text(text, secrets, keep=keep)


def redact_finding(finding: Finding, secrets: Iterable[str] = ()) -> Finding:
    """``finding`` with its texts (message, suggestion, rule) redacted; its file is a location,
    kept as it is, also where its message or suggestion names it."""
    known = frozenset(secrets)
    keep = () if finding.file is None else (finding.file,)
    return finding._replace(
        message=redact_text(finding.message, known, keep=keep),
        suggestion=_redact_optional(finding.suggestion, known, keep),
        rule=_redact_optional(finding.rule, known),
    )


def redact_review(review: Review, secrets: Iterable[str] = ()) -> Review:
    """``review`` with every text in it redacted (``redact_text``): the single step between a
    reviewer's report and any output. ``secrets``: the exact values the reviewed diff adds.
    Locations are kept: the findings' files and the files not reviewed, as fields and where a
    text names them."""
    known = frozenset(secrets)
    files = {f.file for f in review.findings if f.file is not None}
    files.update(a.finding.file for a in review.accepted if a.finding.file is not None)
    keep = tuple(sorted(files.union(review.unreviewed_files), key=len, reverse=True))
    run = redact_data(dict(review.run), known, keep=keep)
    return review._replace(
        summary=redact_text(review.summary, known, keep=keep),
        findings=tuple(redact_finding(f, known) for f in review.findings),
        accepted=tuple(
            a._replace(finding=redact_finding(a.finding, known), why=redact_text(a.why, known))
            for a in review.accepted
        ),
        reviewed_sha=_redact_optional(review.reviewed_sha, known),
        base_sha=_redact_optional(review.base_sha, known),
        run=run if isinstance(run, dict) else {},
        reason=redact_text(review.reason, known, keep=keep),
        outcome=redact_text(review.outcome, known),
    )
