"""Markdown for a PR comment or the job's step summary, and the escaping every markdown surface
uses for untrusted text.

A verdict heading, the counts and commits, why it is not approved, the reviewer's summary,
findings grouped by severity in ``<details>`` (errors open), the accepted findings (closed, with
how each was accepted), and the files not reviewed.
Reviewer text is untrusted and rendered inert (docs/security.md, "Agent text is inert"):
``escape`` for prose (HTML escaped, @mentions and images defused, no line can open a block),
``one_line`` where a line break would leave its line or table cell, ``code`` for inline code,
``fence`` for code blocks with a fence the content cannot close.
"""

from __future__ import annotations

import html
import re

from ..findings import Finding, GateResult, Review, Severity, describe_counts
from ..findings.settings import excluded_note
from . import (
    TOOL_NAME,
    accepted_counts,
    by_severity,
    is_approved,
    location,
    verdict_label,
    verdict_reasons,
    visible,
)

TITLES = {Severity.ERROR: "Errors", Severity.WARN: "Warnings", Severity.INFO: "Info"}
ICONS = {Severity.ERROR: "🔴", Severity.WARN: "🟡", Severity.INFO: "🔵"}
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_LINE_END = re.compile(r"\r\n|\r|\n")  # CommonMark's line endings
# A line starting with one of these could open a block: a fence, heading, list item, thematic
# break, setext underline, table row or link reference definition. (``<`` and ``>`` are
# already entities by then.)
_BLOCK_START = re.compile(r"[#+*=_|\[~`-]")
_ORDERED_ITEM = re.compile(r"(\d{1,9})([.)])")
_FENCE = re.compile(r"\s*(`{3,}|~{3,})([^\n]*)\n(.*?)\n?[ \t]*\1[`~]*\s*", re.DOTALL)
_INFO_WORD = re.compile(r"[A-Za-z0-9_+.#-]{1,40}")
_BACKTICKS = re.compile(r"`+")


def lines_of(text: str) -> list[str]:
    """``text`` split at markdown's line endings (``\\n``, ``\\r\\n``, ``\\r``)."""
    return _LINE_END.split(text)


def _inert_line(line: str) -> str:
    line = line.lstrip(" \t")
    if _BLOCK_START.match(line):
        return "\\" + line
    ordered = _ORDERED_ITEM.match(line)
    if ordered:
        return f"{ordered.group(1)}\\{line[ordered.end(1) :]}"
    return line


def escape(text: str) -> str:
    """Untrusted text made inert: HTML escaped (no tags, comments or entities), backslashes
    and backticks escaped (no code span of its own, which could pair with a backtick run of
    ours and turn the rest of the line into raw HTML), @mentions broken with a zero-width
    space, image syntax defused, and every line (at ``\\n``) kept from opening a block:
    leading blanks dropped, a backslash before a character that could start a fence, heading,
    list, table row or link definition. Safe at the start of a line, in a paragraph, a list
    item (indent the lines that follow) or a block quote (``> `` each)."""
    text = (
        html.escape(visible(text, "\t\r\n"), quote=False).replace("\\", "\\\\").replace("`", "\\`")
    )
    text = _MENTION.sub("@\u200b", text).replace("![", "!\\[")
    return "\n".join(_inert_line(line) for line in lines_of(text))


def one_line(text: str) -> str:
    """``escape`` on one line: line breaks become spaces (a heading, a list item's first line,
    a table cell)."""
    return escape(" ".join(part.strip() for part in lines_of(text)).strip())


def list_item(text: str, bullet: str = "- ") -> str:
    """``text`` escaped as one list item, its further lines indented under the bullet."""
    return bullet + escape(text).replace("\n", "\n" + " " * len(bullet))


def _longest_backticks(text: str) -> int:
    """The longest run of backticks in ``text``: a fence one longer cannot be closed by it."""
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it holds; line breaks become spaces
    (a code span cannot span a blank line, and would not close). A blank is added inside each
    end where CommonMark takes one off: beside a backtick, and where the text starts and ends
    with a space (`` ` x ` `` shows ``x``)."""
    text = visible(" ".join(lines_of(text)))
    fence = "`" * (_longest_backticks(text) + 1)
    spaced = text.startswith(" ") and text.endswith(" ") and text.strip(" ") != ""
    pad = " " if text.startswith("`") or text.endswith("`") or spaced else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fence(content: str, info: str = "") -> list[str]:
    """``content`` as a fenced code block (its lines): backticks one longer than any run in it,
    so no line of the content can close it; ``info`` reduced to one safe word."""
    marker = "`" * max(3, _longest_backticks(content) + 1)
    word = _INFO_WORD.match(info.strip())
    body = lines_of(content) if content else []  # an empty suggestion deletes the lines
    return [marker + (word.group(0) if word else ""), *body, marker]


_MAX_PARSED_SUGGESTION = 100_000


def suggestion_block(suggestion: str) -> tuple[str, str] | None:
    """(info string, content) of a suggestion written as a code block (``fence`` it again to
    show it: a ``suggestion`` block stays one, for GitHub's one-click fix); None for prose. A
    suggestion that starts with a fence but is not exactly one closed block is all content."""
    text = suggestion.strip("\r\n")
    if not text.lstrip().startswith(("```", "~~~")):
        return None
    match = _FENCE.fullmatch(text) if len(text) <= _MAX_PARSED_SUGGESTION else None
    if match is None:
        return "", text
    return match.group(2), match.group(3)


def _item(finding: Finding) -> list[str]:
    where = location(finding)
    head = f"- {code(where)} " if where else "- "
    message, *more = escape(finding.message).split("\n")
    rule = f" ({code(finding.rule)})" if finding.rule else ""
    out = [f"{head}{message}{rule}", *(f"  {line}" for line in more)]
    if finding.suggestion:
        block = suggestion_block(finding.suggestion)
        if block is not None:
            lines = ["", *fence(block[1], block[0])]
        else:
            lines = escape(f"Suggestion: {finding.suggestion}").split("\n")
        out += [f"  {line}" if line else "" for line in lines]
    return out


def _accepted(review: Review) -> list[str]:
    """The accepted findings, closed: they never gate, but nothing is dropped silently."""
    if not review.accepted:
        return []
    out = ["<details>", f"<summary>☑️ Accepted ({len(review.accepted)})</summary>", ""]
    for accepted in review.accepted:
        item = _item(accepted.finding)
        item[0] += f" — accepted: {one_line(accepted.why)}"
        out += item
    return [*out, "", "</details>", ""]


def render(review: Review, gate: GateResult | None = None) -> str:
    approved = is_approved(review, gate)
    icon = "✅" if approved else "❌"
    out = [f"### {icon} {TOOL_NAME} review: {verdict_label(review, gate)}", ""]
    facts = [] if review.outcome else [describe_counts(review.findings)]  # nothing to count
    if review.accepted:
        facts.append(accepted_counts(review))
    if review.excluded_files:
        facts.append(excluded_note(review.excluded_files))
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
        out += [*(list_item(reason) for reason in reasons), ""]
    if review.summary:
        summary = escape(review.summary.rstrip("\r\n")).split("\n")
        out += [*(f"> {line}".rstrip() for line in summary), ""]
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
    out += _accepted(review)
    if review.unreviewed_files:
        files = ", ".join(code(path) for path in review.unreviewed_files)
        out += [f"**Files not reviewed** ({len(review.unreviewed_files)}): {files}", ""]
    return "\n".join(out)
