"""A plan's steps read (``parse_plan``) and one step's status written back in place
(``set_step_status``), every other byte of the file kept."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.errors import PlanError
from gitflow_agents.fsutil import write_bytes_atomic
from gitflow_agents.plan.model import Plan, SpecPlanConfig, Step
from gitflow_agents.plan.scan import (
    DIGITS,
    no_steps_message,
    number_is,
    read,
    scan_text,
    step_values,
    strip_eol,
)

_DEFAULTS = SpecPlanConfig()


def parse_plan(path: Path, config: SpecPlanConfig = _DEFAULTS) -> Plan:
    """Parse a spec plan. PlanError if it cannot be read, has no steps or a non-integer number."""
    scan = scan_text(read(path).text, config)
    if not scan.headers:
        raise PlanError(no_steps_message(config), path=path)
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


def set_step_status(
    path: Path,
    number: int,
    status: str,
    config: SpecPlanConfig = _DEFAULTS,
) -> None:
    """Rewrite the status group of one step header; every other byte of the file stays the same.

    The new status replaces exactly the text captured by group 1 (nothing around it), so with the
    default pattern ``✅ -> ''`` gives ``### Status:  | Step N: ...`` (two spaces, which the
    pattern still matches) and ``'' -> ✅`` gives ``### Status: ✅ | Step N: ...`` again.
    The file is replaced atomically (temp file in the same directory + os.replace).
    """
    if "\n" in status or "\r" in status:
        raise PlanError(f"a status cannot contain a line break: {status!r}", path=path)
    source = read(path)
    scan = scan_text(source.text, config)
    regex = config.step_regex
    found = [h for h in scan.headers if number_is(h, number)]
    if not found:
        numbers = ", ".join(step_values(h)[1] for h in scan.headers) or "none"
        raise PlanError(f"no step {number} (steps: {numbers})", path=path)
    if len(found) > 1:
        where = ", ".join(str(h.index + 1) for h in found)
        raise PlanError(f"step {number} is defined {len(found)} times (lines {where})", path=path)
    header = found[0]
    old_line = scan.lines[header.index]
    body = strip_eol(old_line)
    start, end = header.match.span(1)
    if start < 0:
        raise PlanError(
            "the status group of step_header_pattern did not match anything on this header",
            path=path,
            line=header.index + 1,
        )
    new_body = body[:start] + status + body[end:]
    check = regex.search(new_body)
    if check is None or check.group(1) != status or check.group(2) != header.match.group(2):
        raise PlanError(
            f"cannot write status {status!r}: the header would no longer match "
            f"step_header_pattern {config.step_header_pattern!r}",
            path=path,
            line=header.index + 1,
        )
    if new_body == body:
        return
    lines = list(scan.lines)
    lines[header.index] = new_body + old_line[len(body) :]
    write_bytes_atomic(path, source.bom + "".join(lines).encode("utf-8"))
