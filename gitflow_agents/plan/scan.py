"""Reading a plan file (UTF-8, byte order mark kept, binary, FIFOs and huge files refused) and scanning its lines for
step headers, the end marker, and what lint reports (stray step lines, unclosed fences).

markdown-it tokens decide what is a heading and what is code, so a step-looking line inside a
fenced or indented code block is never a step.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.base.errors import PlanError
from gitflow_agents.base.fsutil import ReadRefused, read_limited
from gitflow_agents.base.markdown import block_tokens
from gitflow_agents.plan.model import (
    DEFAULT_STEP_PATTERN,
    LEGACY_STEP_PATTERN,
    SpecPlanConfig,
    shown_path,
    yaml_pattern,
)

# markdown-it splits lines on \n after turning \r\n and \r into \n; split the same way so its
# token line numbers index this list (str.splitlines would also split on \f, \x1c, \u2028 ...).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
DIGITS = re.compile(r"[0-9]+")
MAX_STEP_DIGITS = 15
"""A step number has at most this many digits: every such number is exact in a JSON reader that
uses doubles (GitHub's ``fromJSON`` reads ``plan matrix``), and far below Python's 4,300-digit
limit on turning a string into an int."""
MAX_PLAN_BYTES = 16 * 1024 * 1024
"""A plan larger than this is refused (docs/security.md, "Bounds")."""
_CLOSING_HASHES = re.compile(r"(?:^|\s+)#+\s*$")
DEPENDS_LINE = re.compile(
    r"^[ \t]{0,3}(?:[-*+][ \t]+)?[*_]{0,2}depends[ \t]+on[*_]{0,2}[ \t]*:[*_]{0,2}(?P<value>.*)$",
    re.IGNORECASE,
)
"""A step's ``Depends on: 1, 3`` line (a list bullet and ``**emphasis**`` allowed); what follows
the colon is read by ``deps.parse_depends`` (docs/spec-plans.md, Dependencies)."""
TOUCHES_LINE = re.compile(
    r"^[ \t]{0,3}(?:[-*+][ \t]+)?(?P<open>\*\*|__|\*|_)?touches(?P<shut>\*\*|__|\*|_)?[ \t]*:"
    r"(?P<value>.*)$",
    re.IGNORECASE,
)
"""A step's ``Touches: src/api/**, docs/api.md`` line, written like ``Depends on:``; what
follows the colon is read by ``touches.parse_touches`` (docs/spec-plans.md, Touches). The
emphasis is captured, not skipped: a glob may itself start or end with ``*``."""


@dataclass(frozen=True)
class Source:
    bom: bytes  # b"" or the UTF-8 byte order mark, kept when writing back
    text: str  # decoded text without the BOM, original line endings


@dataclass(frozen=True)
class Header:
    index: int  # 0-based line index
    match: re.Match[str]


@dataclass(frozen=True)
class Scan:
    lines: tuple[str, ...]  # with original line endings
    headers: tuple[Header, ...]  # step headers, in file order
    marker: int | None  # 0-based index of the end marker line
    unclosed_fences: tuple[tuple[int, str], ...]  # (index, fence markup) of fences open at EOF
    stray: tuple[int, ...]  # non-heading lines outside code that match the step pattern
    near_misses: tuple[int, ...]  # headings that look like default-pattern steps but do not match
    depends: tuple[int, ...]  # lines outside code that look like "Depends on: ..."
    touches: tuple[int, ...] = ()  # lines outside code that look like "Touches: ..."


def read(path: Path) -> Source:
    """Read a plan as UTF-8 text; PlanError (with the line where known) if that is not possible."""
    try:
        data = read_limited(path, MAX_PLAN_BYTES)
    except FileNotFoundError:
        raise PlanError("no such file", path=shown_path(path)) from None
    except IsADirectoryError:
        raise PlanError("is a directory, not a plan file", path=shown_path(path)) from None
    except ReadRefused as exc:
        reason = exc.reason.replace("not a file", "not a plan file")
        raise PlanError(reason, path=shown_path(path)) from None
    except OSError as exc:
        raise PlanError(f"cannot read: {exc.strerror or exc}", path=shown_path(path)) from None
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    body = data[len(bom) :]
    if b"\0" in body:
        line = line_of(body, body.index(b"\0"))
        raise PlanError(
            "binary file (contains NUL bytes), not a markdown plan",
            path=shown_path(path),
            line=line,
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_of(body, exc.start)
        raise PlanError(
            f"not valid UTF-8 (byte 0x{body[exc.start]:02x}); plans must be UTF-8",
            path=shown_path(path),
            line=line,
        ) from None
    return Source(bom, text)


def line_of(data: bytes, offset: int) -> int:
    """1-based line of a byte offset, counting \r\n, \r and \n as markdown does."""
    return len(re.findall(rb"\r\n|\r|\n", data[:offset])) + 1


def strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def _is_marker(line: str, marker: str) -> bool:
    text, marker = line.strip(), marker.strip()
    if not marker or not text.startswith(marker):
        return False
    rest = text[len(marker) :]
    return not rest or not (rest[0].isalnum() or rest[0] == "_")


def _closes_fence(line: str, markup: str) -> bool:
    text = strip_eol(line).lstrip(" \t>")
    run = len(text) - len(text.lstrip(markup[0]))
    return run >= len(markup) and not text[run:].strip()


def scan_text(text: str, config: SpecPlanConfig) -> Scan:
    """The step headers, end marker and lint findings of a plan's ``text``."""
    regex = config.step_regex
    lines = tuple(_LINE.findall(text))
    tokens = block_tokens(text)
    code: set[int] = set()
    headings: set[int] = set()
    unclosed: list[tuple[int, str]] = []
    for token in tokens:
        if token.map is None:
            continue
        start, end = token.map
        if token.type in ("fence", "code_block"):
            code.update(range(start, end))
            if (
                token.type == "fence"
                and end >= len(lines)
                and (end - 1 == start or not _closes_fence(lines[end - 1], token.markup))
            ):
                unclosed.append((start, token.markup))
        elif token.type == "heading_open":
            headings.add(start)

    headers: list[Header] = []
    stray: list[int] = []
    near: list[int] = []
    depends: list[int] = []
    touches: list[int] = []
    marker = None
    default_pattern = config.step_header_pattern in (DEFAULT_STEP_PATTERN, LEGACY_STEP_PATTERN)
    for index, raw in enumerate(lines):
        if index in code:
            continue
        line = strip_eol(raw)
        match = regex.search(line)
        if match and index in headings:
            headers.append(Header(index, match))
        elif match:
            stray.append(index)
        elif marker is None and _is_marker(line, config.top_level_end_marker):
            marker = index
        elif default_pattern and index in headings and line.startswith("### Status"):
            near.append(index)
        elif DEPENDS_LINE.match(line):
            depends.append(index)
        elif TOUCHES_LINE.match(line):
            touches.append(index)
    return Scan(
        lines,
        tuple(headers),
        marker,
        tuple(unclosed),
        tuple(stray),
        tuple(near),
        tuple(depends),
        tuple(touches),
    )


def step_values(header: Header) -> tuple[str, str, str]:
    status, number, title = (header.match.group(i) or "" for i in (1, 2, 3))
    # A closed ATX heading ("### ... | Step 2: Title ##") renders without its closing #s.
    return status.strip(), number.strip(), _CLOSING_HASHES.sub("", title).strip()


def step_number(text: str) -> int | None:
    """``text`` as a step number: digits only, at most ``MAX_STEP_DIGITS``; else None
    (``number_problem`` says why)."""
    if DIGITS.fullmatch(text) is None or len(text) > MAX_STEP_DIGITS:
        return None
    return int(text)


def number_problem(text: str, what: str = "step number") -> str:
    """Why ``text`` is not a step number (``step_number`` gave None), quoting at most 20 of its
    characters."""
    shown = repr(text if len(text) <= 20 else text[:20] + "…")
    if DIGITS.fullmatch(text) is None:
        return f"{what} {shown} is not an integer"
    return f"{what} {shown} has {len(text):,} digits; a step number has at most {MAX_STEP_DIGITS}"


def number_is(header: Header, number: int) -> bool:
    return step_number(step_values(header)[1]) == number


def no_steps_message(config: SpecPlanConfig, scan: Scan | None = None) -> str:
    """Why a plan has no steps, naming the pattern used (as written in YAML) and, from ``scan``,
    the first heading that looks like a step."""
    text = (
        f"no step headers found (step_header_pattern: {yaml_pattern(config.step_header_pattern)}"
        "; steps must be markdown headings outside code blocks)"
    )
    if scan is not None and scan.near_misses:
        index = scan.near_misses[0]
        text += f"; line {index + 1} looks like a step header but does not match" + near_miss_hint(
            strip_eol(scan.lines[index]), config
        )
    return text


def near_miss_message(scan: Scan, index: int, config: SpecPlanConfig) -> str:
    """What ``plan lint``, ``run`` and ``prompt`` say about the heading on line ``index`` that
    looks like a step but does not match the pattern."""
    return "heading looks like a step but does not match step_header_pattern" + near_miss_hint(
        strip_eol(scan.lines[index]), config
    )


def unseen_step(scan: Scan, config: SpecPlanConfig) -> int | None:
    """The first heading that is a step but for the one-space empty status its pattern (the
    default of gitflow-agents 0.1) cannot take, else None. A plan with one is refused by every
    command that reads it: ``run --all`` would leave that step out without a word."""
    for index in scan.near_misses:
        if near_miss_hint(strip_eol(scan.lines[index]), config):
            return index
    return None


def near_miss_hint(line: str, config: SpecPlanConfig) -> str:
    """Why a ``### Status`` heading is no step: the one-space empty status under a pattern that
    needs two (the default of gitflow-agents 0.1), else nothing to add."""
    if config.step_regex.search(line.replace("Status: |", "Status:  |", 1)):
        return (
            " (this step_header_pattern needs two spaces for an empty status, "
            "'### Status:  | Step N: ...'; the default pattern also accepts one: "
            f"step_header_pattern: {yaml_pattern(DEFAULT_STEP_PATTERN)})"
        )
    return ""
