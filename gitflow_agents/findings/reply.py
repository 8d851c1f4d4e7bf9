"""The structured XML reply protocol: parse an agent's reply, and show it.

An agent is asked to end its reply with these sections (docs/protocol.md, "Agent replies";
the tag names are kept exactly)::

    <SUMMARY>1-2 sentences</SUMMARY>
    <ACTIONS>- one action per line</ACTIONS>
    <FILES_CREATED>one path per line</FILES_CREATED>
    <FILES_MODIFIED>one path per line</FILES_MODIFIED>
    <QUESTIONS>- one question per line</QUESTIONS>
    <STATUS>completed | needs_input | failed</STATUS>

Agents are sloppy: they wrap the tags in prose or in a ```xml fence, forget a closing tag, quote
the template back, or skip the tags entirely. The parser is a tolerant scanner (never an XML
parser that raises on the first stray ``<``); when no tag is found it falls back to heuristics
and says so (``structured=False``). The wording per CLI and role is in docs/prompt.md, "Reply
Format".
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from gitflow_agents.findings.verdict import fenced_lines

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
List any new files you created (full paths, one per line):
/path/to/new_file.py
/path/to/another_file.js
</FILES_CREATED>

<FILES_MODIFIED>
List any existing files you modified (full paths, one per line):
/path/to/existing_file.py
/path/to/another_existing_file.js
</FILES_MODIFIED>

<QUESTIONS>
List any questions or clarifications needed (one per line):
- Should I implement feature X differently?
- Do you want me to add tests for Y?
</QUESTIONS>

<STATUS>
One of: completed | needs_input | failed
</STATUS>
"""
"""The instruction block, kept word for word as designed (without its ``USER REQUEST``
envelope: the assignment is its own section of the system prompt). Its example lines, echoed back by an agent,
are dropped by the parser (``TEMPLATE_LINES``)."""

#: The instruction and example lines of RESPONSE_PROTOCOL: an agent that copies the template
#: into its reply has not created ``/path/to/new_file.py``.
TEMPLATE_LINES = frozenset(
    line.strip()
    for line in RESPONSE_PROTOCOL.splitlines()[1:]
    if line.strip() and not line.lstrip().startswith("<")
)


@dataclass(frozen=True)
class ReplyCustomization:
    """The per-agent wording: who the agent is (``prefix``), how it works
    (``tools_hint``) and what its reply should stress (``style``)."""

    prefix: str
    tools_hint: str
    style: str = ""


#: Per agent CLI (the adapter name). Claude, Auggie and Gemini keep the designed text word for
#: word; the others are written the same way for their own headless mode.
CLI_CUSTOMIZATIONS: dict[str, ReplyCustomization] = {
    "claude": ReplyCustomization(
        "You are Claude Code working in an orchestrated environment.",
        "Use Write, Edit, Read, and Bash tools as needed.",
    ),
    "auggie": ReplyCustomization(
        "You are Auggie working in headless --print mode within an orchestration system.",
        "You can create and modify files using your built-in capabilities.",
    ),
    "gemini": ReplyCustomization(
        "You are Gemini CLI working in --prompt mode within an orchestration system.",
        "Use your available tools to complete the task effectively.",
    ),
    "codex": ReplyCustomization(
        "You are Codex working in non-interactive exec mode within an orchestration system.",
        "Use your shell and file-editing tools as needed; nobody can approve a command while "
        "you run.",
    ),
    "opencode": ReplyCustomization(
        "You are opencode working in `opencode run` mode within an orchestration system.",
        "Use your available tools to complete the task effectively.",
    ),
    "aider": ReplyCustomization(
        "You are Aider working in non-interactive --message mode within an orchestration system.",
        "Edit files with your edit format. You cannot rename files, so the <STATUS> of your "
        "reply is how the orchestrator knows whether you finished.",
    ),
}
GENERIC_CUSTOMIZATION = ReplyCustomization(
    "You are a coding agent working in an orchestrated environment, started without a terminal.",
    "Use your available tools to complete the task; nobody can answer a question while you run.",
)

#: Per agent role, matched as a word in the agent's type (then its name): (words, style).
ROLE_STYLES: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("review", "reviewer"),
        "You review; you do not change code. Leave <FILES_CREATED> and <FILES_MODIFIED> empty "
        "(your report is not listed there), list what you examined under <ACTIONS> as "
        '"Analyzed: ...", and answer <STATUS>completed</STATUS> once the review is written, '
        "whatever its verdict.",
    ),
    (
        ("plan", "planner", "architect"),
        "You plan. List the plan or spec files you wrote under <FILES_CREATED> / "
        "<FILES_MODIFIED>. Open design decisions go under <QUESTIONS>; use needs_input only "
        "when you cannot write the plan without an answer.",
    ),
    (
        ("research", "researcher"),
        'You research. List each source you read under <ACTIONS> as "Analyzed: <title> '
        '<url>"; files stay empty unless you were asked to write one.',
    ),
)
BUILDER_STYLE = (
    "List every file you created or changed (full paths) and every command you ran, tests "
    "included, under <ACTIONS>."
)

REPLY_PLACEMENT = (
    "End your final reply (the last message you print) with these tags, filled in. They tell "
    "the orchestrator what you did; they do not replace your report and its rename (Output "
    "Requirements above). If you stop because you need an answer, use needs_input and ask under "
    "<QUESTIONS>: the orchestrator can continue your session with the answer."
)


def customization(adapter: str | None, agent_type: str, agent_name: str = "") -> ReplyCustomization:
    """The reply customisation for an agent: its CLI's prefix and tools hint, its role's style."""
    base = CLI_CUSTOMIZATIONS.get(adapter or "", GENERIC_CUSTOMIZATION)
    return ReplyCustomization(base.prefix, base.tools_hint, role_style(agent_type, agent_name))


def role_style(agent_type: str, agent_name: str = "") -> str:
    """The style line of the first role whose word is in the type (then the name); else builder."""
    for text in (agent_type, agent_name):
        words = set(re.split(r"[^a-z]+", text.lower()))
        for role_words, style in ROLE_STYLES:
            if words.intersection(role_words):
                return style
    return BUILDER_STYLE


def reply_instructions(adapter: str | None, agent_type: str, agent_name: str = "") -> str:
    """The Reply Format text for one agent: prefix, tools hint, style, the protocol, placement.

    Joined by blank lines in that order (docs/prompt.md, "Reply Format"); the user request itself
    is not part of it (it is the prompt's Assignment section)."""
    custom = customization(adapter, agent_type, agent_name)
    parts = [custom.prefix, custom.tools_hint, custom.style, RESPONSE_PROTOCOL, REPLY_PLACEMENT]
    return "\n\n".join(part.strip() for part in parts if part.strip())


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
        for position in range(index + 1, len(matches)):  # no slice copy: linear, not quadratic
            later = matches[position]
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
        if item.lower() not in _EMPTY_ITEMS and line.strip() not in TEMPLATE_LINES:
            items.append(item)
    return tuple(items)


def parse_status(text: str) -> ReplyStatus | None:
    """``completed`` / ``needs_input`` / ``failed`` in their common spellings, else None."""
    key = re.sub(r"[\s*`_.]+", " ", text.strip().lower()).strip()
    for status, words in _STATUS_WORDS.items():
        if key in words or key.replace(" ", "_") in words:
            return status
    return None


MAX_REPLY_CHARS = 1024 * 1024
"""A reply longer than this is not read (docs/protocol.md, "Agent replies")."""


def parse_reply(text: str) -> AgentReply:
    """Parse an agent's reply; never raises, linear in its length. Tags win; without any, the
    heuristic fallback runs. A reply over :data:`MAX_REPLY_CHARS` is not read: unstructured,
    no status, a warning saying why."""
    if len(text) > MAX_REPLY_CHARS:
        return AgentReply(
            warnings=(
                f"the reply is {len(text):,} characters, over the {MAX_REPLY_CHARS:,} limit: "
                "not read",
            ),
        )
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
    summary = " ".join(sections.get("SUMMARY", "").split())
    return AgentReply(
        summary="" if summary in TEMPLATE_LINES else summary,
        actions=_items(sections.get("ACTIONS", "")),
        files_created=_items(sections.get("FILES_CREATED", "")),
        files_modified=_items(sections.get("FILES_MODIFIED", "")),
        questions=_items(sections.get("QUESTIONS", "")),
        status=status,
        structured=True,
        warnings=tuple(warnings),
        raw=text,
    )


# --- heuristic fallback for a reply without tags --------------------------------------------

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
    # A fenced code block needs a fence of 3+ backticks or tildes: without one in the text there
    # is nothing to skip, and the markdown parser (import and parse) is not needed.
    fenced: frozenset[int] = frozenset()
    if "```" in text or "~~~" in text:
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
    """The reply as shown to a user: status line, summary, then each non-empty list, indented."""
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
