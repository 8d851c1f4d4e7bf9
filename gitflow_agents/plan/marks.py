"""Where a step's status lives when its header sits right under another step's header (docs/
spec-plans.md, "Status marks that merge").

Git merges line by line and takes two changed lines that touch as one conflict: steps 2 and 3
whose headers are adjacent (step 2's body is empty) conflict when each one's branch writes ✅
into its own header. So a *stacked* step, whose header line directly follows another step's
header (or that header's mark line), gets its status on a line of its own right under its
header, ``Status: ✅`` (the *mark line*), and its header is left alone: the changes of two
branches are then a line apart, and git merges them in either order, for any number of
adjacent headers. A step reads its status from its mark line when it is stacked or its header
has none; every other step from its header, as before.
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


def stacked(scan: Scan, header: Header, heads: frozenset[int] | None = None) -> bool:
    """Whether ``header`` sits directly under another step's header, or under the mark line of
    one (where a sibling's merged mark put it). ``heads``: the header indexes, when known."""
    if heads is None:
        heads = frozenset(h.index for h in scan.headers)
    above = header.index - 1
    if above in heads:
        return True
    return above - 1 in heads and MARK_LINE.match(strip_eol(scan.lines[above])) is not None


def read_status(
    scan: Scan, header: Header, header_status: str, heads: frozenset[int] | None = None
) -> str:
    """The step's status: its mark line's when it has one and its header says nothing or is
    stacked; else its header's (a body line ``Status: …`` under a header that has a status of
    its own is the body's)."""
    index = mark_index(scan, header)
    if index is None or (header_status and not stacked(scan, header, heads)):
        return header_status
    return mark_value(scan, index)


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
