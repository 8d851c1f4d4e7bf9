"""Markdown for a PR comment or the job's step summary.

A verdict heading, the counts and commits, why it is not approved, the reviewer's summary,
findings grouped by severity in ``<details>`` (errors open), and the files not reviewed.
Reviewer text is untrusted: HTML is escaped and @mentions are defused so a finding can neither
break the comment's layout nor ping people.
"""

from __future__ import annotations

import html
import re

from ..findings import Finding, GateResult, Review, Severity, describe_counts
from . import TOOL_NAME, by_severity, is_approved, location, verdict_label, verdict_reasons

TITLES = {Severity.ERROR: "Errors", Severity.WARN: "Warnings", Severity.INFO: "Info"}
ICONS = {Severity.ERROR: "🔴", Severity.WARN: "🟡", Severity.INFO: "🔵"}
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")


def escape(text: str) -> str:
    """Untrusted text made inert: HTML escaped, @mentions broken with a zero-width space."""
    return _MENTION.sub("@\u200b", html.escape(text, quote=False))


def code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _item(finding: Finding) -> list[str]:
    where = location(finding)
    head = f"- {code(where)} " if where else "- "
    message, *more = escape(finding.message).splitlines() or [""]
    rule = f" ({code(finding.rule)})" if finding.rule else ""
    out = [f"{head}{message}{rule}", *(f"  {line}" for line in more)]
    if finding.suggestion:
        suggestion = finding.suggestion
        if suggestion.lstrip().startswith(("```", "~~~")):
            out += ["", *(f"  {line}" for line in suggestion.splitlines())]
        else:
            first, *rest = escape(suggestion).splitlines() or [""]
            out += [f"  Suggestion: {first}", *(f"  {line}" for line in rest)]
    return out


def render(review: Review, gate: GateResult | None = None) -> str:
    approved = is_approved(review, gate)
    icon = "✅" if approved else "❌"
    out = [f"### {icon} {TOOL_NAME} review: {verdict_label(review, gate)}", ""]
    facts = [describe_counts(review.findings)]
    if review.reviewed_sha:
        commits = f"reviewed {code(review.reviewed_sha[:12])}"
        if review.base_sha:
            commits += f" against {code(review.base_sha[:12])}"
        facts.append(commits)
    if gate is not None:
        facts.append(f"threshold {code(gate.threshold.value)}")
    out += [" · ".join(facts), ""]
    reasons = verdict_reasons(review, gate)
    if reasons:
        out += [*(f"- {escape(reason)}" for reason in reasons), ""]
    if review.summary:
        out += [*(f"> {escape(line)}".rstrip() for line in review.summary.splitlines()), ""]
    for severity, findings in by_severity(review.findings).items():
        if not findings:
            continue
        opened = " open" if severity is Severity.ERROR else ""
        out += [
            f"<details{opened}>",
            f"<summary>{ICONS[severity]} {TITLES[severity]} ({len(findings)})</summary>",
            "",
        ]
        for finding in findings:
            out += _item(finding)
        out += ["", "</details>", ""]
    if review.unreviewed_files:
        files = ", ".join(code(path) for path in review.unreviewed_files)
        out += [f"**Files not reviewed** ({len(review.unreviewed_files)}): {files}", ""]
    return "\n".join(out)
