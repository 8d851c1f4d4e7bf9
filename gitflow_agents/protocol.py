"""The structured XML reply protocol (seed 004): parse an agent's reply, and show it.

An agent is asked to end its reply with these sections (exact tag names from the seed)::

    <SUMMARY>1-2 sentences</SUMMARY>
    <ACTIONS>- one action per line</ACTIONS>
    <FILES_CREATED>one path per line</FILES_CREATED>
    <FILES_MODIFIED>one path per line</FILES_MODIFIED>
    <QUESTIONS>- one question per line</QUESTIONS>
    <STATUS>completed | needs_input | failed</STATUS>

Agents are sloppy: they wrap the tags in prose or in a ```xml fence, forget a closing tag, quote
the template back, or skip the tags entirely. The parser is a tolerant scanner (never an XML
parser that raises on the first stray ``<``); when no tag is found it falls back to the seed's
heuristics and says so (``structured=False``).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

TAGS = ("SUMMARY", "ACTIONS", "FILES_CREATED", "FILES_MODIFIED", "QUESTIONS", "STATUS")


class ReplyStatus(str, enum.Enum):
    COMPLETED = "completed"
    NEEDS_INPUT = "needs_input"
    FAILED = "failed"


_STATUS_WORDS = {
    ReplyStatus.COMPLETED: {"completed", "complete", "done", "success", "succeeded", "ok"},
    ReplyStatus.NEEDS_INPUT: {"needs_input", "needs input", "needs-input", "needsinput", "blocked"},
    ReplyStatus.FAILED: {"failed", "fail", "failure", "error", "errored"},
}

RESPONSE_PROTOCOL = """\
IMPORTANT: Structure your response using these XML tags for clear communication:

<SUMMARY>
Provide a 1-2 sentence summary of what you accomplished or attempted.
</SUMMARY>

<ACTIONS>
List each major action you took (one per line):
- Created file: filename.ext
- Modified file: filename.ext
- Ran command: command_name
- Analyzed: what_you_analyzed
</ACTIONS>

<FILES_CREATED>
List any new files you created (full paths, one per line).
</FILES_CREATED>

<FILES_MODIFIED>
List any existing files you modified (full paths, one per line).
</FILES_MODIFIED>

<QUESTIONS>
List any questions or clarifications needed (one per line).
</QUESTIONS>

<STATUS>
One of: completed | needs_input | failed
</STATUS>
"""
"""The instruction block an agent's prompt carries (seed 004 wording, example paths removed)."""


@dataclass(frozen=True)
class AgentReply:
    """One parsed reply. ``structured`` is True when at least one protocol tag was found;
    otherwise every field is a heuristic guess. ``warnings`` say what was odd (unknown status,
    unclosed tag) without ever failing the parse."""

    summary: str = ""
    actions: tuple[str, ...] = ()
    files_created: tuple[str, ...] = ()
    files_modified: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    status: ReplyStatus | None = None
    structured: bool = False
    warnings: tuple[str, ...] = ()
    raw: str = ""


_TAG_RE = re.compile(r"<\s*(/?)\s*(" + "|".join(TAGS) + r")\s*>", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_EMPTY_ITEMS = {"", "none", "n/a", "na", "(none)", "-", "nothing", "no questions", "none."}


def _sections(text: str) -> tuple[dict[str, str], list[str]]:
    """Last occurrence of each tag's content. A tag left open ends at the next tag or EOF."""
    found: dict[str, str] = {}
    warnings: list[str] = []
    matches = list(_TAG_RE.finditer(text))
    for index, match in enumerate(matches):
        if match.group(1):  # a closing tag: consumed by its opener
            continue
        name = match.group(2).upper()
        start = match.end()
        end = len(text)
        closed = False
        for later in matches[index + 1 :]:
            if later.group(2).upper() == name and later.group(1):
                end, closed = later.start(), True
                break
            if not later.group(1):  # another section opens: this one was left open
                end = later.start()
                break
        if not closed:
            warnings.append(f"<{name}> is not closed")
        found[name] = _strip_fence_residue(text[start:end])
    return found, warnings


def _strip_fence_residue(content: str) -> str:
    # A tag left open before a closing ``` fence drags the fence line in: drop it.
    lines = [line for line in content.strip().splitlines() if not line.strip().startswith("```")]
    return "\n".join(lines).strip()


def _items(content: str) -> tuple[str, ...]:
    items = []
    for line in content.splitlines():
        item = _BULLET.sub("", line).strip()
        if item.lower() not in _EMPTY_ITEMS:
            items.append(item)
    return tuple(items)


def parse_status(text: str) -> ReplyStatus | None:
    """``completed`` / ``needs_input`` / ``failed`` in their common spellings, else None."""
    key = re.sub(r"[\s*`_.]+", " ", text.strip().lower()).strip()
    for status, words in _STATUS_WORDS.items():
        if key in words or key.replace(" ", "_") in words:
            return status
    return None


def parse_reply(text: str) -> AgentReply:
    """Parse an agent's reply; never raises. Tags win; without any, the seed's fallback runs."""
    sections, warnings = _sections(text)
    if not sections:
        return _fallback(text)
    status: ReplyStatus | None = None
    if "STATUS" in sections:
        status = parse_status(sections["STATUS"])
        if status is None:
            warnings.append(
                f"unknown <STATUS> {sections['STATUS']!r} (expected completed, needs_input or failed)"
            )
    else:
        warnings.append("no <STATUS> tag")
    return AgentReply(
        summary=" ".join(sections.get("SUMMARY", "").split()),
        actions=_items(sections.get("ACTIONS", "")),
        files_created=_items(sections.get("FILES_CREATED", "")),
        files_modified=_items(sections.get("FILES_MODIFIED", "")),
        questions=_items(sections.get("QUESTIONS", "")),
        status=status,
        structured=True,
        warnings=tuple(warnings),
        raw=text,
    )


# --- heuristic fallback (seed: "Fallback parsing for unstructured output") -------------------

_CREATED = re.compile(
    r"(?:created(?:\s+(?:a|the))?(?:\s+new)?(?:\s+file:?)?|saved (?:this|it) as|wrote(?: to)?|"
    r"new file:?)\s+`?([\w./\\-]+\.\w+)`?",
    re.IGNORECASE,
)
_MODIFIED = re.compile(
    r"(?:modified|updated|edited|changed)(?:\s+the)?(?:\s+file:?)?\s+`?([\w./\\-]+\.\w+)`?",
    re.IGNORECASE,
)
_ACTION = re.compile(
    r"^\s*(?:[-*•]\s*)?((?:created|modified|updated|ran|ran command|analyzed|added|removed|"
    r"fixed|implemented|wrote)\b.*)$",
    re.IGNORECASE,
)
_FAILURE = re.compile(r"\b(failed|unable to|could not|couldn't|cannot|can't)\b", re.IGNORECASE)


def _fallback(text: str) -> AgentReply:
    from .findings import fenced_lines

    fenced = fenced_lines(text)
    prose = [
        line
        for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1)
        if number not in fenced
    ]
    paragraphs = [p.strip() for p in "\n".join(prose).split("\n\n") if p.strip()]
    summary = " ".join(paragraphs[0].split()) if paragraphs else ""
    if len(summary) > 300:
        summary = summary[:297].rstrip() + "..."
    joined = "\n".join(prose)
    created = tuple(dict.fromkeys(m.group(1) for m in _CREATED.finditer(joined)))
    modified = tuple(
        dict.fromkeys(m.group(1) for m in _MODIFIED.finditer(joined) if m.group(1) not in created)
    )
    actions = tuple(m.group(1).strip() for line in prose if (m := _ACTION.match(line)))
    questions = tuple(_BULLET.sub("", line).strip() for line in prose if line.strip().endswith("?"))
    if not text.strip():
        status: ReplyStatus | None = ReplyStatus.FAILED
    elif questions:
        status = ReplyStatus.NEEDS_INPUT
    elif paragraphs and _FAILURE.search(paragraphs[-1]):
        status = ReplyStatus.FAILED
    else:
        status = ReplyStatus.COMPLETED
    return AgentReply(
        summary=summary,
        actions=actions,
        files_created=created,
        files_modified=modified,
        questions=questions,
        status=status,
        structured=False,
        warnings=("no protocol tags found; fields are guessed from the text",),
        raw=text,
    )


# --- display ------------------------------------------------------------------------------

_ICONS = {
    ReplyStatus.COMPLETED: "✅",
    ReplyStatus.NEEDS_INPUT: "❓",
    ReplyStatus.FAILED: "❌",
    None: "⚠️",
}


def format_reply(reply: AgentReply, *, icons: bool = True) -> str:
    """The seed's display: status line, summary, then each non-empty list, indented."""
    status = reply.status.value if reply.status else "unknown"
    head = f"{_ICONS[reply.status]} Status: {status}" if icons else f"Status: {status}"
    lines = [head]
    if reply.summary:
        lines.append(f"Summary: {reply.summary}")
    bullet, created, modified, question = ("•", "📄", "✏️", "❓") if icons else ("-", "+", "~", "?")
    sections = (
        ("Actions Taken", reply.actions, bullet),
        ("Files Created", reply.files_created, created),
        ("Files Modified", reply.files_modified, modified),
        ("Questions", reply.questions, question),
    )
    for title, items, mark in sections:
        if items:
            lines += ["", f"{title}:", *(f"  {mark} {item}" for item in items)]
    if not reply.structured:
        lines += ["", "(unstructured reply: fields guessed from the text)"]
    return "\n".join(lines) + "\n"
