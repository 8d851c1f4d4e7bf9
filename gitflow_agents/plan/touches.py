"""A step's footprint: its ``Touches: src/api/**, docs/api.md`` line, the globs on it checked,
and whether two footprints may overlap (docs/spec-plans.md, Touches).

A glob is a path relative to the repository root in gitignore's anchored style: ``*`` and
``?`` match within one path segment (never ``/``), ``[abc]`` one character of a set, ``**`` as
a whole segment any number of segments; a glob that matches a folder covers everything in it
(``docs`` covers ``docs/api.md``). Two globs *may overlap* when the literal text of one before
its first wildcard is a prefix of the other's (two globs without wildcards: when they are equal
or one is a folder holding the other). That test is conservative: it never says "apart" for two
globs some path matches both, and may say "overlap" for two that no path does (``src/*.py`` and
``src/x.md``); a step then waits for a wave it did not need to.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from gitflow_agents.plan.scan import TOUCHES_LINE, Scan, step_number, step_values, strip_eol

_FORM = "write `Touches: src/api/**, docs/api.md` (globs relative to the repository root)"
_WILDCARD = re.compile(r"[*?\[]")


class BadTouches(ValueError):
    """A ``Touches:`` line that does not list globs (the message says why)."""


def parse_touches(line: str) -> tuple[str, ...]:
    """The globs a ``Touches:`` line lists, in its order (a glob may be in backticks, a final
    ``.`` is dropped); BadTouches for an empty list, an empty entry or a glob ``glob_problem``
    refuses."""
    match = TOUCHES_LINE.match(line)
    if match is None:
        raise BadTouches(f"not a 'Touches:' line; {_FORM}")
    value = _unemphasized(match).removesuffix(".").rstrip()
    if not value:
        raise BadTouches(f"'Touches:' lists no glob; {_FORM}")
    globs: list[str] = []
    for item in (part.strip() for part in value.split(",")):
        glob = item[1:-1].strip() if len(item) > 1 and item[0] == item[-1] == "`" else item
        if not glob:
            raise BadTouches(f"'Touches: {value}' has an empty entry; {_FORM}")
        problem = glob_problem(glob)
        if problem is not None:
            raise BadTouches(f"'Touches:' glob {glob!r} {problem}")
        if glob not in globs:
            globs.append(glob)
    return tuple(globs)


def _unemphasized(match: re.Match[str]) -> str:
    """What follows the colon without the line's emphasis: ``**Touches**: x``, ``**Touches:**
    x`` and ``**Touches: x**`` all give ``x``; without emphasis before ``Touches`` nothing is
    stripped, so ``Touches: *.md`` keeps its ``*``."""
    value = match.group("value").strip()
    opening = match.group("open")
    if not opening or match.group("shut"):
        return value
    if value.startswith(opening):  # closed right after the colon
        return value[len(opening) :].strip()
    return value.removesuffix(opening).strip()


def glob_problem(glob: str) -> str | None:
    """Why ``glob`` is not a footprint glob (see the module doc), None when it is one."""
    if glob.startswith("/"):
        return "starts with '/'; globs are relative to the repository root"
    if "\\" in glob:
        return "holds a backslash; separate folders with '/'"
    for segment in glob.removesuffix("/").split("/"):
        if segment in ("", ".", ".."):
            return f"has an empty, '.' or '..' path segment; {_FORM}"
        if "**" in segment and segment != "**":
            return "uses '**' inside a path segment; '**' must be a whole segment (src/**/x.py)"
    try:
        glob_regex(glob)
    except re.error:
        return "is not a valid glob (a '[' set without its ']', or a range such as [z-a])"
    return None


def glob_regex(glob: str) -> re.Pattern[str]:
    """The paths ``glob`` matches (a folder it matches covers its contents): re.error for an
    unclosed ``[``."""
    parts: list[str] = []
    segments = glob.removesuffix("/").split("/")
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        parts.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(parts) + "(?:/.*)?", re.DOTALL)


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            negated = segment[index + 1 : index + 2] in ("!", "^")
            end = segment.find("]", index + (3 if negated else 2))  # "[]a]": "]" first is literal
            if end < 0:
                raise re.error("unclosed [")
            body = segment[index + 1 : end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            re.compile(out[-1])
            index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _literal(glob: str) -> str:
    """``glob`` up to its first wildcard."""
    match = _WILDCARD.search(glob)
    return glob if match is None else glob[: match.start()]


def globs_overlap(first: str, second: str) -> bool:
    """Whether some path may match both globs (conservative: see the module doc)."""
    a, b = first.removesuffix("/"), second.removesuffix("/")
    if _WILDCARD.search(a) is None and _WILDCARD.search(b) is None:
        return a == b or a.startswith(b + "/") or b.startswith(a + "/")
    left, right = _literal(a), _literal(b)
    return left.startswith(right) or right.startswith(left)


def overlap(first: Sequence[str], second: Sequence[str]) -> tuple[str, str] | None:
    """The first pair of globs (one of ``first``, one of ``second``) that may overlap."""
    for glob in first:
        for other in second:
            if globs_overlap(glob, other):
                return glob, other
    return None


def read_touches(
    scan: Scan,
) -> tuple[list[tuple[tuple[str, ...], int | None]], list[tuple[int, str]]]:
    """For each step header of ``scan``, its globs and the line of its ``Touches:`` line (none:
    ``((), None)``); and every problem of those lines as (line, message). A second line in one
    step is reported and ignored; a malformed line counts as no footprint."""
    found_per_step: list[tuple[tuple[str, ...], int | None]] = []
    problems: list[tuple[int, str]] = []
    for position, header in enumerate(scan.headers):
        end = (
            scan.headers[position + 1].index
            if position + 1 < len(scan.headers)
            else len(scan.lines)
        )
        found = scan.touches[
            bisect_right(scan.touches, header.index) : bisect_left(scan.touches, end)
        ]
        name = step_values(header)[1]
        label = f"step {step_number(name)}" if step_number(name) is not None else "this step"
        for index in found[1:]:
            problems.append(
                (
                    index + 1,
                    f"{label} has a second 'Touches:' line (the first is line {found[0] + 1}); "
                    "list every glob on one line",
                )
            )
        globs: tuple[str, ...] = ()
        if found:
            try:
                globs = parse_touches(strip_eol(scan.lines[found[0]]))
            except BadTouches as exc:
                problems.append((found[0] + 1, str(exc)))
        found_per_step.append((globs, found[0] + 1 if found else None))
    return found_per_step, sorted(problems)
