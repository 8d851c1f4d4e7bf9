"""A plan's steps read (``parse_plan``, ``parse_plan_text``) and one step's status written back
in place (``set_step_status``): the line keeps its own spacing, every other byte of the file is
kept."""

from __future__ import annotations

import re
from pathlib import Path

from gitflow_agents.base.errors import PlanError
from gitflow_agents.base.fsutil import write_bytes_atomic
from gitflow_agents.plan.deps import read_dependencies
from gitflow_agents.plan.marks import read_status, stacked, write_mark
from gitflow_agents.plan.model import Plan, SpecPlanConfig, Step, shown_path, yaml_pattern
from gitflow_agents.plan.scan import (
    Header,
    Scan,
    near_miss_message,
    no_steps_message,
    number_is,
    number_problem,
    read,
    scan_text,
    step_values,
    strip_eol,
    unseen_step,
)
from gitflow_agents.plan.touches import read_touches

_DEFAULTS = SpecPlanConfig()


def parse_plan(path: Path, config: SpecPlanConfig = _DEFAULTS) -> Plan:
    """Parse a spec plan. PlanError if it cannot be read, has no steps or a non-integer number."""
    return parse_plan_text(read(path).text, path, config)


def parse_plan_text(text: str, path: Path, config: SpecPlanConfig = _DEFAULTS) -> Plan:
    """Parse the text of a plan (``path`` names it in the Plan and in errors: a plan read from
    a commit is parsed as the file it is there). PlanError as :func:`parse_plan`."""
    scan = scan_text(text, config)
    if not scan.headers:
        raise PlanError(no_steps_message(config, scan), path=shown_path(path))
    unseen = unseen_step(scan, config)
    if unseen is not None:
        message = near_miss_message(scan, unseen, config)
        raise PlanError(message, path=shown_path(path), line=unseen + 1)
    normalized = [strip_eol(line) + "\n" for line in scan.lines]
    if scan.lines and not scan.lines[-1].endswith(("\n", "\r")):
        normalized[-1] = normalized[-1][:-1]
    nodes, problems = read_dependencies(scan)
    footprints, touch_problems = read_touches(scan)
    problems = sorted(problems + touch_problems)
    if problems:
        line, message = problems[0]
        raise PlanError(message, path=shown_path(path), line=line)
    first = scan.headers[0].index
    heads = frozenset(h.index for h in scan.headers)
    overview_end = first if scan.marker is None else min(scan.marker, first)
    steps = []
    for position, (header, node, (touches, touches_line)) in enumerate(
        zip(scan.headers, nodes, footprints, strict=True)
    ):
        status, number, title = step_values(header)
        status = read_status(scan, header, status, heads)  # "Status marks that merge"
        if node is None:
            raise PlanError(number_problem(number), path=shown_path(path), line=header.index + 1)
        end = (
            scan.headers[position + 1].index
            if position + 1 < len(scan.headers)
            else len(normalized)
        )
        steps.append(
            Step(
                number=node.number,
                title=title,
                status=status,
                line=header.index + 1,
                header=strip_eol(scan.lines[header.index]),
                content="".join(normalized[header.index : end]),
                depends_on=node.depends_on,
                depends_line=node.depends_line,
                touches=touches,
                touches_line=touches_line,
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
    """Rewrite the status of one step header; every other byte of the file stays the same.

    The status text inside group 1 is replaced and the line keeps its own spacing: with the
    default pattern ``✅ -> ''`` gives ``### Status:  | Step N: ...`` (the space before ``|``
    stays), ``'' -> ✅`` gives ``### Status: ✅ | Step N: ...`` from the two-space and from the
    one-space form (``### Status: | Step N``: a space is added after the status, as the line
    has one before it). When that would not match the pattern, exactly the captured text is
    replaced (``[ ] -> [x]``). A step whose header directly follows another step's header
    gets its status on a mark line under its header instead (``plan/marks.py``), so sibling
    branches' marks merge. The file is replaced atomically (temp file + os.replace).
    """
    if "\n" in status or "\r" in status:
        raise PlanError(f"a status cannot contain a line break: {status!r}", path=shown_path(path))
    source = read(path)
    scan = scan_text(source.text, config)
    found = [h for h in scan.headers if number_is(h, number)]
    if not found:
        numbers = ", ".join(step_values(h)[1] for h in scan.headers) or "none"
        raise PlanError(f"no step {number} (steps: {numbers})", path=shown_path(path))
    if len(found) > 1:
        where = ", ".join(str(h.index + 1) for h in found)
        raise PlanError(
            f"step {number} is defined {len(found)} times (lines {where})", path=shown_path(path)
        )
    header = found[0]
    if stacked(scan, header):
        changed = write_mark(scan, header, status, step_values(header)[0])
        if changed is not None:
            write_bytes_atomic(path, source.bom + "".join(changed).encode("utf-8"))
        return
    old_line = scan.lines[header.index]
    body = strip_eol(old_line)
    try:
        new_body = header_with_status(scan, header, status, config)
    except ValueError as exc:
        raise PlanError(str(exc), path=shown_path(path), line=header.index + 1) from None
    if new_body == body:
        return
    lines = list(scan.lines)
    lines[header.index] = new_body + old_line[len(body) :]
    write_bytes_atomic(path, source.bom + "".join(lines).encode("utf-8"))


def header_with_status(scan: Scan, header: Header, status: str, config: SpecPlanConfig) -> str:
    """The line of ``header`` (a step whose status is on its header: not stacked) with
    ``status`` as its status, its line ending left off; ValueError saying why when the pattern
    cannot take it there: its status group matched nothing on the line, or the line would no
    longer match (a status group like ``([ x])`` cannot hold ✅). ``set_step_status`` refuses
    that, naming the header's line; ``plan lint`` reports it before a step lands unmarked."""
    if header.match.span(1)[0] < 0:
        raise ValueError(
            "the status group of step_header_pattern did not match anything on this header"
        )
    body = strip_eol(scan.lines[header.index])
    new_body = _rewrite_header(body, header.match, status, config.step_regex)
    if new_body is None:
        raise ValueError(
            f"cannot write status {status!r}: the header would no longer match "
            f"step_header_pattern {yaml_pattern(config.step_header_pattern)}"
        )
    return new_body


def _rewrite_header(
    body: str, match: re.Match[str], status: str, regex: re.Pattern[str]
) -> str | None:
    """``body`` with ``status`` as its status, spacing kept (see ``set_step_status``); None
    when no candidate still matches ``regex`` with the same step number."""
    start, end = match.span(1)
    group = body[start:end]
    if group.strip():  # replace the status itself, not the spaces around it in the group
        start, end = (
            start + len(group) - len(group.lstrip()),
            end - len(group) + len(group.rstrip()),
        )
    else:
        end = start
    candidates = [body[:start] + status + body[end:]]
    if status and not group.strip() and body[end : end + 1] not in ("", " ", "\t"):
        candidates.insert(0, body[:start] + status + " " + body[end:])  # "Status: | Step"
    candidates.append(body[: match.start(1)] + status + body[match.end(1) :])
    for candidate in candidates:
        check = regex.search(candidate)
        if (
            check is not None
            and (check.group(1) or "").strip() == status.strip()
            and check.group(2) == match.group(2)
        ):
            return candidate
    return None
