"""The terminal view: findings grouped by file, severity colours, a one-line verdict.

``color=False`` (``--color never``, ``NO_COLOR``, not a terminal: the caller decides with
``gitflow_agents.base.color.use_color``) gives plain text with no escape codes at all.
``color=True`` gives the same text with ANSI colours, plain SGR codes around each styled
segment (rich drew them before, the same codes at ~20 ms of import on every review in a
terminal: issue 20); stripping the codes gives back the plain text exactly.
"""

from __future__ import annotations

from ..findings import GateResult, Review, Severity
from . import is_approved, location, sorted_by_file, verdict_line, visible

Segment = tuple[str, str]  # (text, style); style "" = unstyled
Line = list[Segment]

STYLES = {
    Severity.ERROR: "bold red",
    Severity.WARN: "yellow",
    Severity.INFO: "cyan",
}
_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def lines(review: Review, gate: GateResult | None) -> list[Line]:
    """The view as styled segments (shared by the plain and the coloured output)."""
    out: list[Line] = []
    if review.summary:
        out += [[(text, "")] for text in review.summary.splitlines()] + [[]]
    for file, findings in sorted_by_file(review.findings):
        out.append([(file or "(no file)", "bold")])
        locs = [_loc(f.line, f.end_line) for f in findings]
        width = max(len(loc) for loc in locs)
        pad = " " * (2 + width + 2 + 5 + 2)
        for loc, finding in zip(locs, findings, strict=True):
            message, *more = finding.message.splitlines() or [""]
            line: Line = [
                (f"  {loc:<{width}}  ", "dim"),
                (f"{finding.severity.value:<5}", STYLES[finding.severity]),
                (f"  {message}", ""),
            ]
            if finding.rule:
                line.append((f"  [{finding.rule}]", "dim"))
            out.append(line)
            out += [[(pad + text, "")] for text in more]
            if finding.suggestion:
                first, *rest = finding.suggestion.splitlines() or [""]
                out.append([(pad + "suggestion: ", "dim"), (first, "")])
                out += [[(pad + "  " + text, "")] for text in rest]
        out.append([])
    if review.unreviewed_files:
        out.append([("not reviewed: ", "dim"), (", ".join(review.unreviewed_files), "")])
    for accepted in review.accepted:
        where = location(accepted.finding) or "(no file)"
        rule = f" [{accepted.finding.rule}]" if accepted.finding.rule else ""
        out.append([(f"accepted: {where}{rule}: {accepted.why}", "dim")])
    style = "bold green" if is_approved(review, gate) else "bold red"
    out.append([(verdict_line(review, gate), style)])
    return out


def _loc(line: int | None, end: int | None) -> str:
    if line is None:
        return "-"
    return f"{line}-{end}" if end is not None and end != line else str(line)


def render(review: Review, gate: GateResult | None = None, *, color: bool = False) -> str:
    """The view, each segment's control characters written out (``visible``: the text of the
    change and of the reviewer cannot drive the terminal; a view's line holds no line break)."""
    view = [[(visible(text), style) for text, style in line] for line in lines(review, gate)]
    if not color:
        return "".join("".join(text for text, _ in line) + "\n" for line in view)
    return "".join(_render_sgr(line) + "\n" for line in view)


def _render_sgr(line: Line) -> str:
    parts = []
    for text, style in line:
        codes = ";".join(_SGR[word] for word in style.split())
        parts.append(f"\x1b[{codes}m{text}\x1b[0m" if codes else text)
    return "".join(parts)
