"""Where a step's status lives when its header sits right under another step's header (docs/
spec-plans.md, "Status marks that merge").

Git merges line by line and takes two changed lines that touch as one conflict: steps 2 and 3
whose headers are adjacent (step 2's body is empty) conflict when each one's branch writes ✅
into its own header. So the status of a step whose header line directly follows another step's
header is written on a line of its own right under its header, ``Status: ✅`` (the *mark
line*), and that header is left alone: the changes of two such branches are then a line apart,
and git merges them in either order, for any number of adjacent headers. Any step whose header
is followed by a mark line reads its status from it; every other step from its header, as
before.
"""

from __future__ import annotations

import re

from gitflow_agents.plan.scan import Header, Scan, strip_eol

MARK_LINE = re.compile(r"^Status:(?:[ \t]+(?P<value>.*?))?[ \t]*$")


def mark_index(scan: Scan, header: Header) -> int | None:
    """The index of ``header``'s mark line, None when the line under it is no mark line."""
    index = header.index + 1
    if index < len(scan.lines) and MARK_LINE.match(strip_eol(scan.lines[index])):
        return index
    return None


def mark_value(scan: Scan, index: int) -> str:
    match = MARK_LINE.match(strip_eol(scan.lines[index]))
    assert match is not None
    return (match.group("value") or "").strip()


def uses_mark_line(scan: Scan, header: Header) -> bool:
    """Whether ``header``'s status is written on its mark line: it has one, or the line above
    it is another step's header."""
    if mark_index(scan, header) is not None:
        return True
    return any(other.index == header.index - 1 for other in scan.headers)


def write_mark(scan: Scan, header: Header, status: str, header_status: str) -> list[str] | None:
    """The plan's lines with ``status`` on ``header``'s mark line (added under the header, with
    its line ending); an empty status removes the line when the header's own status is empty
    too (so ✅ then "" gives the original bytes back). None: nothing changes."""
    lines = list(scan.lines)
    index = mark_index(scan, header)
    old_header = lines[header.index]
    eol = old_header[len(strip_eol(old_header)) :] or "\n"
    if not status and not header_status:
        if index is None:
            return None
        del lines[index]
        return lines
    text = f"Status: {status}" if status else "Status:"
    if index is None:
        if not old_header.endswith(("\n", "\r")):  # the last line of the file
            lines[header.index] = old_header + eol
            eol = ""
        lines.insert(header.index + 1, text + eol)
        return lines
    old = lines[index]
    if strip_eol(old) == text:
        return None
    lines[index] = text + old[len(strip_eol(old)) :]
    return lines
