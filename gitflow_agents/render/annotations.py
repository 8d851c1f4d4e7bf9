"""GitHub Actions workflow commands: ``::error file=…,line=…,endLine=…,title=…::message``.

Escaping follows the runner's rules (actions/toolkit ``escapeData`` / ``escapeProperty``):
``%``, CR and LF in messages; additionally ``:`` and ``,`` in property values. The last line
states the verdict (``::notice`` when approved, ``::error`` otherwise). GitHub shows at most
10 errors and 10 warnings per step, so the most severe findings come first.
"""

from __future__ import annotations

from ..findings import Finding, GateResult, Review, Severity
from . import TOOL_NAME, is_approved, message_with_suggestion, verdict_line, visible

COMMANDS = {Severity.ERROR: "error", Severity.WARN: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """The runner's escaping of a message (``%``, CR, LF), after every other control character
    is written out (``visible``: ``\\x1b``), which the log would pass to the terminal."""
    return visible(text, "\t\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: str | int | None) -> str:
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in properties.items()
        if value is not None
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def annotation(finding: Finding) -> str:
    end = finding.end_line if finding.end_line not in (None, finding.line) else None
    return command(
        COMMANDS[finding.severity],
        message_with_suggestion(finding),
        file=finding.file,
        line=finding.line if finding.file else None,
        endLine=end if finding.file else None,
        title=f"{TOOL_NAME}: {finding.rule}" if finding.rule else TOOL_NAME,
    )


def render(review: Review, gate: GateResult | None = None) -> str:
    ordered = sorted(review.findings, key=lambda f: -f.severity.rank)
    lines = [annotation(f) for f in ordered]
    verdict = "notice" if is_approved(review, gate) else "error"
    lines.append(command(verdict, verdict_line(review, gate), title=f"{TOOL_NAME} review"))
    return "\n".join(lines) + "\n"
