"""Renderers: each a pure function of a Review (and the gate's decision) to text.

``render(review, gate, fmt)`` dispatches on ``fmt``, one of ``FORMATS``. A renderer module is
imported only when its format is asked for (start-up stays fast). Every format gets the review
through ``redact.redact_review`` once more (the review path already masked it; this pass keeps a
Review from anywhere else from printing a secret).
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Iterable

from gitflow_agents.base.redact import redact_text
from gitflow_agents.findings.redact import redact_review
from gitflow_agents.findings.settings import excluded_note

from ..findings import (
    ACCEPTED_BY,
    Finding,
    GateResult,
    Overall,
    Review,
    Severity,
    describe_counts,
)

FORMATS = ("terminal", "json", "sarif", "rdjsonl", "annotations", "markdown")
"""Every output format, in the order ``--format`` lists them."""

TOOL_NAME = "gitflow-agents"


def render(review: Review, gate: GateResult | None, fmt: str, *, color: bool = False) -> str:
    """``review`` in format ``fmt``; ValueError naming the formats for an unknown one.
    ``color`` only matters for ``terminal`` (ANSI colours via rich when True)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r} (choose from {', '.join(FORMATS)})")
    review, gate = redacted(review, gate)
    module = importlib.import_module(f"{__name__}.{fmt}")
    if fmt == "terminal":
        return str(module.render(review, gate, color=color))
    return str(module.render(review, gate))


def redacted(review: Review, gate: GateResult | None) -> tuple[Review, GateResult | None]:
    """``review`` and the gate's reasons (which quote the review's) with secrets masked."""
    if gate is not None:
        gate = gate._replace(reasons=tuple(redact_text(reason) for reason in gate.reasons))
    return redact_review(review), gate


def is_approved(review: Review, gate: GateResult | None) -> bool:
    """The gate's decision when there is one, else the reviewer's verdict alone."""
    return gate.approved if gate is not None else review.overall is Overall.APPROVE


def verdict_label(review: Review, gate: GateResult | None) -> str:
    """APPROVED, REVISE (the reviewer asks for changes), DID NOT COMPLETE (the reviewer gave no
    verdict: ``Review.outcome``) or NOT APPROVED (anything else)."""
    if review.outcome:
        return "DID NOT COMPLETE"
    if is_approved(review, gate):
        return "APPROVED"
    return "REVISE" if review.overall is Overall.REVISE else "NOT APPROVED"


def verdict_reasons(review: Review, gate: GateResult | None) -> tuple[str, ...]:
    """Why it is not approved (empty when approved)."""
    if is_approved(review, gate):
        return ()
    if gate is not None:
        return gate.reasons
    return (review.reason or "no verdict",)


def accepted_counts(review: Review) -> str:
    """``3 accepted (2 marker, 1 baseline)``; "" when none is (docs/review.md, "Accepting a
    finding")."""
    if not review.accepted:
        return ""
    counts = Counter(a.by for a in review.accepted)
    how = ", ".join(f"{counts[by]} {by}" for by in ACCEPTED_BY if counts[by])
    return f"{len(review.accepted)} accepted ({how})"


def counts(review: Review) -> str:
    """``1 error, 1 warn``; accepted findings counted after them (``no findings, 2 accepted
    (2 marker)``): never dropped silently."""
    excluded = excluded_note(review.excluded_files) if review.excluded_files else ""
    return ", ".join(
        filter(None, [describe_counts(review.findings), accepted_counts(review), excluded])
    )


def verdict_line(review: Review, gate: GateResult | None) -> str:
    """One line: ``APPROVED: 1 warn`` / ``REVISE: 1 error; <reasons>`` (``counts``);
    ``DID NOT COMPLETE: <why>`` with no counts (nothing was reviewed to count)."""
    parts = [] if review.outcome else [counts(review)]
    parts += verdict_reasons(review, gate)
    return f"{verdict_label(review, gate)}: " + "; ".join(parts)


_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))  # C0, DEL, C1 (0x9b: a one-byte CSI)
# Unicode's bidirectional controls: the embeddings, overrides and isolates reorder the text
# after them on screen ("Trojan Source", CVE-2021-42574: ``\u202e`` shows ``bad`` as ``dab``),
# the marks change how the text beside them is ordered; shown as GitHub flags them
BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _shown(keep: str) -> dict[int, str]:
    shown = {code: f"\\x{code:02x}" for code in _CONTROLS if chr(code) not in keep}
    return shown | {code: f"\\u{code:04x}" for code in BIDI_CONTROLS}


_SHOWN = {keep: _shown(keep) for keep in ("\t", "\t\n", "\t\r\n")}


def visible(text: str, keep: str = "\t") -> str:
    """``text`` with its control characters written out (``\\x1b``, ``\\x07``, ``\\x9b``) but
    those in ``keep`` (``"\\t"``, ``"\\t\\n"`` or ``"\\t\\r\\n"``: where a format lays out lines
    itself), and Unicode's bidirectional controls (``\\u202e``): text from the reviewed change or
    a reviewer (a TODO's words, a file name, a message) cannot drive the terminal it is printed
    on, as a committed ``\\x1b[8m`` (conceal: every later line, the verdict too, invisible) or
    ``\\x1b[2J`` (clear) would, nor show its words in another order than they have."""
    return text.translate(_SHOWN[keep])


def location(finding: Finding) -> str:
    """``path:12``, ``path:12-14``, ``path`` or ``""``."""
    if not finding.file:
        return ""
    if finding.line is None:
        return finding.file
    if finding.end_line is not None and finding.end_line != finding.line:
        return f"{finding.file}:{finding.line}-{finding.end_line}"
    return f"{finding.file}:{finding.line}"


def message_with_suggestion(finding: Finding) -> str:
    """The message, and the suggestion (if any) on following lines."""
    if not finding.suggestion:
        return finding.message
    return f"{finding.message}\n\nSuggestion: {finding.suggestion}"


def by_severity(findings: Iterable[Finding]) -> dict[Severity, list[Finding]]:
    """Findings grouped error → warn → info, each group in its original order."""
    groups: dict[Severity, list[Finding]] = {s: [] for s in Severity}
    for finding in findings:
        groups[finding.severity].append(finding)
    return groups


def sorted_by_file(findings: Iterable[Finding]) -> list[tuple[str | None, list[Finding]]]:
    """Findings grouped by file (sorted; findings without a file last), each group by line
    and then most severe first."""
    groups: dict[str | None, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.file, []).append(finding)
    order = sorted(groups, key=lambda file: (file is None, file or ""))
    return [
        (file, sorted(groups[file], key=lambda f: (f.line or 0, -f.severity.rank)))
        for file in order
    ]
