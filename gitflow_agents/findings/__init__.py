"""Findings, verdicts and the review gate.

``model`` holds the values (``Finding``, ``Review``, ``Severity``) and their JSON shape,
``verdict`` the ``REVIEW_RESULT:`` grammar and which report lines do not count, ``report``
reads a reviewer's report into a ``Review``, and ``gate`` decides whether a review approves a
commit (and merges several reviewers' reviews). Contracts: docs/protocol.md, Review verdict and
Findings; details: docs/findings.md.
"""

from __future__ import annotations

from gitflow_agents.base.lazy import lazy_names
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.findings.gate import (
    GateResult,
    count_by_severity,
    describe_counts,
    gate,
    merge_reviews,
)
from gitflow_agents.findings.model import (
    ACCEPTED_BY,
    Accepted,
    FileLines,
    Finding,
    LineLookup,
    Overall,
    Review,
    Severity,
    fill_fingerprints,
    finding_from_dict,
    fingerprint,
    review_from_dict,
    suggestion_replacement,
)

if TYPE_CHECKING:
    from gitflow_agents.findings.report import FindingsError, parse_review
    from gitflow_agents.findings.verdict import (
        VERDICT_RE,
        VerdictResult,
        fenced_lines,
        hidden_lines,
        parse_verdict,
    )

# Reading an agent's report (``report``, ``verdict`` and the reply grammar they use) is imported
# when one of its names is first asked for: the builtin reviewer never needs it, and it was a
# tenth of a small review's imports (issue 20).
_LAZY = {
    "FindingsError": "report",
    "parse_review": "report",
    "VERDICT_RE": "verdict",
    "VerdictResult": "verdict",
    "fenced_lines": "verdict",
    "hidden_lines": "verdict",
    "parse_verdict": "verdict",
}


__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "ACCEPTED_BY",
    "VERDICT_RE",
    "Accepted",
    "FileLines",
    "Finding",
    "FindingsError",
    "GateResult",
    "LineLookup",
    "Overall",
    "Review",
    "Severity",
    "VerdictResult",
    "count_by_severity",
    "describe_counts",
    "fenced_lines",
    "fill_fingerprints",
    "finding_from_dict",
    "fingerprint",
    "gate",
    "hidden_lines",
    "merge_reviews",
    "parse_review",
    "parse_verdict",
    "review_from_dict",
    "suggestion_replacement",
]
