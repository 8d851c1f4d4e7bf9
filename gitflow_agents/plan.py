"""Spec plans: parse overview and steps, and lint them (``plan_status`` writes a step's status).

A plan is markdown. Its steps are the markdown headings (outside code blocks) whose source line
matches ``spec_plan.step_header_pattern``; its overview is the text before the
``top_level_end_marker`` line. markdown-it tokens decide what is a heading and what is code,
so a step-looking line inside a fenced or indented code block is never a step.
"""

from __future__ import annotations

import codecs
import functools
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.errors import ConfigError, PlanError

DEFAULT_END_MARKER = "## Implementation Steps"
DEFAULT_STEP_PATTERN = r"^### Status: ([^|]*?) ?\| Step (\d+): (.+)$"
# The default of gitflow-agents 0.1: an empty status needed two spaces (``### Status:  | Step 2: ...``).
# Projects whose ``.flow/base.yaml`` still names it get a hint for the one-space form.
LEGACY_STEP_PATTERN = r"^### Status: ([^|]*) \| Step (\d+): (.+)$"

# markdown-it splits lines on \n after turning \r\n and \r into \n; split the same way so its
# token line numbers index this list (str.splitlines would also split on \f, \x1c, \u2028 ...).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
DIGITS = re.compile(r"[0-9]+")
_CLOSING_HASHES = re.compile(r"(?:^|\s+)#+\s*$")


def yaml_pattern(pattern: str) -> str:
    """``pattern`` as it is written in a YAML file: single-quoted, backslashes as they are (a
    Python repr doubles them, which breaks when pasted into ``.flow/base.yaml``)."""
    return "'" + pattern.replace("'", "''") + "'"


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


def compile_step_pattern(
    pattern: str,
    *,
    path: str | None = None,
    line: int | None = None,
    key: str = "spec_plan.step_header_pattern",
) -> re.Pattern[str]:
    """Compile a step header pattern; ConfigError unless it compiles and has exactly 3 groups."""
    try:
        regex = _compile(pattern)
    except re.error as exc:
        raise ConfigError(
            f"invalid regular expression {yaml_pattern(pattern)}: {exc}",
            path=path,
            line=line,
            key=key,
        ) from None
    if regex.groups != 3:
        raise ConfigError(
            f"pattern {yaml_pattern(pattern)} has {regex.groups} capture group"
            f"{'' if regex.groups == 1 else 's'}; it must have exactly 3 (status, number, title)",
            path=path,
            line=line,
            key=key,
        )
    return regex


@dataclass(frozen=True)
class SpecPlanConfig:
    """The ``spec_plan`` section of the flow config."""

    top_level_end_marker: str = DEFAULT_END_MARKER
    step_header_pattern: str = DEFAULT_STEP_PATTERN

    @property
    def step_regex(self) -> re.Pattern[str]:
        return compile_step_pattern(self.step_header_pattern)


@dataclass(frozen=True)
class Step:
    number: int
    title: str
    status: str
    line: int  # 1-based line of the header
    header: str  # the header line, without its line ending
    content: str  # header line + body up to the next step header or EOF (\n line endings)


@dataclass(frozen=True)
class Plan:
    path: Path
    name: str  # file stem
    overview: str  # text before the end marker (or before the first step), \n line endings
    steps: tuple[Step, ...]

    @property
    def title(self) -> str:
        """The first ATX heading of the overview without its ``#``s, else the plan's name."""
        for line in self.overview.split("\n"):
            match = re.match(r" {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$", line)
            if match and match.group(1):
                return match.group(1)
        return self.name

    def step(self, number: int) -> Step:
        found = [s for s in self.steps if s.number == number]
        if len(found) == 1:
            return found[0]
        if found:
            lines = ", ".join(str(s.line) for s in found)
            raise PlanError(
                f"step {number} is defined {len(found)} times (lines {lines})", path=self.path
            )
        available = ", ".join(str(s.number) for s in self.steps) or "none"
        raise PlanError(f"no step {number} (steps: {available})", path=self.path)

    def assignment_context(self, number: int) -> str:
        """The plan text an agent gets for one step (seed 000), not fenced; ends with a newline."""
        current = self.step(number)
        headers = "\n".join(f"- Step {s.number}: {s.title}" for s in self.steps)
        parts = [
            self.overview.strip("\n").rstrip(),
            f"## Implementation Steps (headers only)\n\n{headers}",
            f"## Current Step: Step {number}",
            current.content.strip("\n").rstrip(),
        ]
        return "\n\n".join(part for part in parts if part) + "\n"


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


# ---------------------------------------------------------------------------------------------
# Reading and scanning


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


def read_source(path: Path) -> Source:
    """Read a plan as UTF-8 text; PlanError (with the line where known) if that is not possible."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise PlanError("no such file", path=path) from None
    except IsADirectoryError:
        raise PlanError("is a directory, not a plan file", path=path) from None
    except OSError as exc:
        raise PlanError(f"cannot read: {exc.strerror or exc}", path=path) from None
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    body = data[len(bom) :]
    if b"\0" in body:
        line = _line_of(body, body.index(b"\0"))
        raise PlanError(
            "binary file (contains NUL bytes), not a markdown plan", path=path, line=line
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_of(body, exc.start)
        raise PlanError(
            f"not valid UTF-8 (byte 0x{body[exc.start]:02x}); plans must be UTF-8",
            path=path,
            line=line,
        ) from None
    return Source(bom, text)


def _line_of(data: bytes, offset: int) -> int:
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


def scan_source(text: str, config: SpecPlanConfig) -> Scan:
    from gitflow_agents.markdown import block_tokens

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
    return Scan(lines, tuple(headers), marker, tuple(unclosed), tuple(stray), tuple(near))


def step_values(header: Header) -> tuple[str, str, str]:
    status, number, title = (header.match.group(i) or "" for i in (1, 2, 3))
    # A closed ATX heading ("### ... | Step 2: Title ##") renders without its closing #s.
    return status.strip(), number.strip(), _CLOSING_HASHES.sub("", title).strip()


# ---------------------------------------------------------------------------------------------
# Public operations


def parse_plan(path: Path, config: SpecPlanConfig = SpecPlanConfig()) -> Plan:
    """Parse a spec plan. PlanError if it cannot be read, has no steps or a non-integer number."""
    return parse_plan_text(read_source(path).text, path, config)


def parse_plan_text(text: str, path: Path, config: SpecPlanConfig = SpecPlanConfig()) -> Plan:
    """Parse the text of a plan (``path`` names it in the Plan and in errors: a plan read from
    a commit is parsed as the file it is there). PlanError as :func:`parse_plan`."""
    scan = scan_source(text, config)
    if not scan.headers:
        raise PlanError(_no_steps_message(config, scan), path=path)
    normalized = [strip_eol(line) + "\n" for line in scan.lines]
    if scan.lines and not scan.lines[-1].endswith(("\n", "\r")):
        normalized[-1] = normalized[-1][:-1]
    first = scan.headers[0].index
    overview_end = first if scan.marker is None else min(scan.marker, first)
    steps = []
    for position, header in enumerate(scan.headers):
        status, number, title = step_values(header)
        if not DIGITS.fullmatch(number):
            raise PlanError(
                f"step number {number!r} is not an integer", path=path, line=header.index + 1
            )
        end = (
            scan.headers[position + 1].index
            if position + 1 < len(scan.headers)
            else len(normalized)
        )
        steps.append(
            Step(
                number=int(number),
                title=title,
                status=status,
                line=header.index + 1,
                header=strip_eol(scan.lines[header.index]),
                content="".join(normalized[header.index : end]),
            )
        )
    return Plan(
        path=path,
        name=path.stem,
        overview="".join(normalized[:overview_end]),
        steps=tuple(steps),
    )


def _no_steps_message(config: SpecPlanConfig, scan: Scan | None = None) -> str:
    text = (
        f"no step headers found (step_header_pattern: {yaml_pattern(config.step_header_pattern)}"
        "; steps must be markdown headings outside code blocks)"
    )
    if scan is not None and scan.near_misses:
        index = scan.near_misses[0]
        text += f"; line {index + 1} looks like a step header but does not match" + _near_miss_hint(
            strip_eol(scan.lines[index]), config
        )
    return text


def _near_miss_hint(line: str, config: SpecPlanConfig) -> str:
    """Why a ``### Status`` heading is no step: the one-space empty status under the pattern
    that needs two (the default of gitflow-agents 0.1), else nothing to add."""
    if config.step_regex.search(line.replace("Status: |", "Status:  |", 1)):
        return (
            " (this step_header_pattern needs two spaces for an empty status, "
            "'### Status:  | Step N: ...'; the default pattern also accepts one: "
            f"step_header_pattern: {yaml_pattern(DEFAULT_STEP_PATTERN)})"
        )
    return ""


def lint_plan(path: Path, config: SpecPlanConfig = SpecPlanConfig()) -> list[Problem]:
    """Every problem in a plan, in line order (problems without a line first)."""
    shown = str(path)
    try:
        source = read_source(path)
    except PlanError as exc:
        return [Problem(shown, exc.line, exc.detail)]
    scan = scan_source(source.text, config)
    problems = list(_lint_scan(shown, scan, config))
    return sorted(problems, key=lambda p: p.line or 0)


def _lint_scan(path: str, scan: Scan, config: SpecPlanConfig) -> Iterator[Problem]:
    for index, markup in scan.unclosed_fences:
        yield Problem(
            path,
            index + 1,
            f"code fence {markup} is never closed; everything after it is code, "
            "so no step header after this line is seen",
        )
    for index in scan.stray:
        yield Problem(
            path, index + 1, "matches step_header_pattern but is not a markdown heading; not a step"
        )
    for index in scan.near_misses:
        hint = _near_miss_hint(strip_eol(scan.lines[index]), config)
        yield Problem(
            path,
            index + 1,
            f"heading looks like a step but does not match step_header_pattern{hint}",
        )
    if not scan.headers:
        yield Problem(path, None, _no_steps_message(config, None))
        return
    marker = config.top_level_end_marker
    first = scan.headers[0].index
    if scan.marker is None:
        yield Problem(
            path,
            None,
            f"end marker {marker!r} not found; the overview is everything before the first step",
        )
    elif scan.marker > first:
        yield Problem(
            path,
            scan.marker + 1,
            f"end marker {marker!r} comes after the first step (line {first + 1})",
        )
    seen: dict[int, int] = {}  # step number -> line of its first header
    previous: tuple[int, int] | None = None  # (number, line) of the previous numbered step
    for header in scan.headers:
        line = header.index + 1
        _, number_text, title = step_values(header)
        if not title:
            yield Problem(path, line, "step has an empty title")
        if not DIGITS.fullmatch(number_text):
            yield Problem(path, line, f"step number {number_text!r} is not an integer")
            continue
        number = int(number_text)
        if number in seen:
            yield Problem(
                path,
                line,
                f"duplicate step {number}: lines {seen[number]} and {line}",
            )
        else:
            seen[number] = line
        if previous is not None and number < previous[0]:
            yield Problem(
                path,
                line,
                f"step {number} comes after step {previous[0]} (line {previous[1]}); "
                "steps must be in ascending order",
            )
        previous = (number, line)
    numbers = sorted(seen)
    if numbers and numbers[0] > 1:
        yield Problem(
            path,
            seen[numbers[0]],
            f"missing {_range(1, numbers[0] - 1)}: plan starts at step {numbers[0]}",
        )
    for low, high in itertools.pairwise(numbers):
        if high > low + 1:
            yield Problem(
                path, seen[high], f"missing {_range(low + 1, high - 1)} (gap after step {low})"
            )


def _range(low: int, high: int) -> str:
    return f"step {low}" if low == high else f"steps {low}-{high}"
