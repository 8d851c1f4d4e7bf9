"""The reviewer's verdict: the ``REVIEW_RESULT:`` marker grammar, and which lines of a markdown
report do not count because markdown shows them as code or not at all (docs/protocol.md,
Review verdict; docs/findings.md, The verdict marker)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitflow_agents.base.markdown import block_tokens
from gitflow_agents.findings.model import Overall

VERDICT_RE = re.compile(r"^\s*REVIEW_RESULT:\s*(APPROVED|REVISE|CHANGES_REQUESTED)\s*$")
"""The one accepted marker: alone on its line, outside fenced code, upper case."""

_VERDICTS = {
    "APPROVED": Overall.APPROVE,
    "REVISE": Overall.REVISE,
    "CHANGES_REQUESTED": Overall.REVISE,
}
# Markdown decoration a reviewer may wrap around the marker: emphasis, quotes, list bullets,
# headings, inline code. A decorated marker is reported (helpfully) but never counted.
_DECORATION = re.compile(r"^[\s>*_`#+\-~]*(?:\d+[.)]\s*)?[\s*_`]*")
_NEAR_MISS = re.compile(r"^review[_ ]result\b", re.IGNORECASE)
_STRICT_CORE = re.compile(r"^REVIEW_RESULT:\s*(APPROVED|REVISE|CHANGES_REQUESTED)[\s*_`.!]*$")


@dataclass(frozen=True)
class VerdictResult:
    """The verdict a report states, the 1-based line it stands on, and why (always filled)."""

    verdict: Overall | None
    line: int | None
    reason: str


def fenced_lines(text: str) -> frozenset[int]:
    """1-based numbers of every line that belongs to a fenced code block (fences included).

    Uses markdown-it's CommonMark block parser, so ``` and ~~~ fences of any length, fences
    inside lists and block quotes, and unclosed fences (which run to the end) are all handled
    the way GitHub renders them.
    """
    lines: set[int] = set()
    for token in block_tokens(text):
        if token.type == "fence" and token.map:
            start, end = token.map
            lines.update(range(start + 1, end + 1))
    return frozenset(lines)


# HTML blocks whose content markdown does not show as text: script/style (hidden), pre and
# textarea (shown as code), processing instructions, declarations, CDATA. Comments inside any
# HTML block or paragraph are found separately (``_comment_spans``).
_RAW_HTML_BLOCK = re.compile(r"\s{0,3}<(script|pre|style|textarea)(?=[\s>]|$)", re.IGNORECASE)
_HIDDEN_HTML_BLOCK = re.compile(r"\s{0,3}<(?:\?|![A-Za-z]|!\[CDATA\[)")


def _comment_spans(content: str, open_ended: bool) -> list[tuple[int, int]]:
    """(start, end) offsets of the HTML comments in ``content``, in order (CommonMark 0.31:
    ``<!-->`` and ``<!--->`` are complete comments too). ``open_ended``: an unclosed comment
    runs to the end (as in an HTML block). One pass: once no ``-->`` follows, none is searched
    for again (a regex would rescan the rest for every ``<!--``)."""
    spans: list[tuple[int, int]] = []
    pos, closes = 0, True
    while (start := content.find("<!--", pos)) != -1:
        after = start + 4
        if content.startswith(">", after):
            end = after + 1
        elif content.startswith("->", after):
            end = after + 2
        else:
            close = content.find("-->", after) if closes else -1
            if close == -1:
                closes = False
                if open_ended:
                    spans.append((start, len(content)))
                    break
                pos = after
                continue
            end = close + 3
        spans.append((start, end))
        pos = end
    return spans


def _comment_lines(content: str, first: int, open_ended: bool) -> dict[int, str]:
    """1-based report lines whose whole visible text lies inside an HTML comment of ``content``
    (a block's content, its line k being report line ``first + k``)."""
    spans = _comment_spans(content, open_ended)
    if not spans:
        return {}
    hidden: dict[int, str] = {}
    offset = 0
    current = 0  # spans and lines both go forward: one sweep
    for k, line in enumerate(content.split("\n")):
        start = offset + len(line) - len(line.lstrip())
        end = offset + len(line.rstrip())
        offset += len(line) + 1
        while current < len(spans) and spans[current][1] < end:
            current += 1
        if end > start and current < len(spans):
            span_start, span_end = spans[current]
            if span_start <= start and end <= span_end:
                hidden[first + k] = "an HTML comment"
    return hidden


def hidden_lines(text: str) -> dict[int, str]:
    """1-based numbers of the lines markdown shows as code or does not show at all, each with
    what holds it: ``a fenced code block`` (fences included), ``an indented code block``,
    ``an HTML comment`` (in a paragraph or an HTML block, also multi-line), ``an HTML <pre>
    block`` (script, style, textarea likewise) or ``an HTML block`` (``<?…?>``, ``<!X…>``,
    CDATA).

    markdown-it's CommonMark block parser decides, as GitHub renders: fences of any length,
    inside lists and block quotes, unclosed ones running to the end; four-space indentation
    after a paragraph line continues the paragraph (not code). The visible text of a ``<div>``
    or ``<details>`` block is not hidden. A report that is nothing but one indented code block
    is not hidden either: there is no prose for it to be an example in.
    """
    hidden: dict[int, str] = {}
    tokens = block_tokens(text)
    # prose[i]: non-blank lines before line i (0-based), so "is there text outside this block"
    # is one subtraction, not a scan of the whole report per block
    prose = [0]
    for line in split_lines(text):
        prose.append(prose[-1] + bool(line.strip()))
    for token in tokens:
        if not token.map:
            continue
        start, end = token.map
        what = ""
        if token.type == "fence":
            what = "a fenced code block"
        elif token.type == "code_block":
            outside = prose[-1] - (prose[min(end, len(prose) - 1)] - prose[start]) > 0
            what = "an indented code block" if outside else ""
        elif token.type == "html_block":
            raw = _RAW_HTML_BLOCK.match(token.content)
            if raw:
                what = f"an HTML <{raw.group(1).lower()}> block"
            elif _HIDDEN_HTML_BLOCK.match(token.content):
                what = "an HTML block"
            else:
                hidden.update(_comment_lines(token.content, start + 1, open_ended=True))
        elif token.type == "inline" and "<!--" in token.content:
            hidden.update(_comment_lines(token.content, start + 1, open_ended=False))
        if what:
            hidden.update(dict.fromkeys(range(start + 1, end + 1), what))
    return hidden


def split_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


_MARKER = re.compile(r"REVIEW_RESULT:\s*(?:APPROVED|REVISE|CHANGES_REQUESTED)\b")


def _hidden_marker(text: str) -> tuple[int, str] | None:
    """The first line whose marker is hidden although the line is no marker line of its own
    (``parse_verdict``'s candidates): one inside an HTML comment that shares its line
    (``<!-- REVIEW_RESULT: APPROVED -->``, ``Done. <!-- … -->``), or inside code or a hidden
    HTML block with other text before it; with what holds it, as ``hidden_lines`` names it.
    None when no marker is hidden (the reason then says nothing more)."""
    if "REVIEW_RESULT" not in text:
        return None
    found: dict[int, str] = {}
    for token in block_tokens(text):
        if not token.map or token.type not in ("html_block", "inline"):
            continue
        content = token.content
        for start, end in _comment_spans(content, open_ended=token.type == "html_block"):
            marker = _MARKER.search(content, start, end)
            if marker:
                found[token.map[0] + 1 + content.count("\n", 0, marker.start())] = "an HTML comment"
    hidden = hidden_lines(text)  # what holds a hidden line says it best (a <pre> block's comment)
    for number, line in enumerate(split_lines(text), start=1):
        if number in hidden and _MARKER.search(line):
            found[number] = hidden[number]
    return min(found.items(), default=None)


def parse_verdict(text: str) -> VerdictResult:
    """Find the reviewer's verdict: the last ``REVIEW_RESULT:`` marker outside code and hidden
    HTML (``hidden_lines``).

    Fail-closed: no marker, or a last marker that is decorated (``**REVIEW_RESULT: APPROVED**``),
    lower case or followed by other text, is no verdict; the reason says what was found where.
    """
    candidates = []
    for number, line in enumerate(split_lines(text), start=1):
        if "review" not in line.lower():  # cheap test first: most lines are not markers
            continue
        strict = VERDICT_RE.match(line)
        near = strict is None and _NEAR_MISS.match(_DECORATION.sub("", line, count=1))
        if strict or near:
            candidates.append((number, line, strict))
    # which lines are hidden only matters when there is a marker (markdown costs time)
    hidden = hidden_lines(text) if candidates else {}
    last: tuple[int, Overall | None, str] | None = None  # (line, verdict, near-miss text)
    first_hidden: int | None = None
    for number, line, strict in candidates:
        if number in hidden:
            first_hidden = first_hidden or number
            continue
        last = (number, _VERDICTS[strict.group(1)], "") if strict else (number, None, line.strip())
    if last is None:
        reason = "no REVIEW_RESULT line"
        where = (first_hidden, hidden[first_hidden]) if first_hidden else _hidden_marker(text)
        if where is not None:
            reason += f" (the marker on line {where[0]} is inside {where[1]}, which does not count)"
        return VerdictResult(None, None, reason)
    number, verdict, found = last
    if verdict is not None:
        marker = "APPROVED" if verdict is Overall.APPROVE else "REVISE"
        return VerdictResult(verdict, number, f"REVIEW_RESULT: {marker} on line {number}")
    core = _DECORATION.sub("", found, count=1)
    if _STRICT_CORE.match(core):
        why = "the marker must stand alone on its line"
    else:
        why = (
            "expected exactly `REVIEW_RESULT: APPROVED` or `REVIEW_RESULT: REVISE` "
            "alone on its line"
        )
    return VerdictResult(None, number, f"found `{found}` on line {number}: {why}")
