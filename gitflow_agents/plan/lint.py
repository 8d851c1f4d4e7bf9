"""``lint_plan``: every problem in a plan at once, each with its line where there is one
(docs/spec-plans.md, plan lint)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from gitflow_agents.base.errors import PlanError
from gitflow_agents.plan.deps import duplicate_step, graph_problems, read_dependencies
from gitflow_agents.plan.marks import stacked
from gitflow_agents.plan.model import DONE, Problem, SpecPlanConfig, plan_name_problem, shown_path
from gitflow_agents.plan.scan import (
    Header,
    Scan,
    near_miss_message,
    no_steps_message,
    number_problem,
    read,
    scan_text,
    step_number,
    step_values,
)
from gitflow_agents.plan.steps import header_with_status
from gitflow_agents.plan.touches import read_touches

_DEFAULTS = SpecPlanConfig()


def lint_plan(path: Path, config: SpecPlanConfig = _DEFAULTS) -> list[Problem]:
    """Every problem in a plan, in line order (problems without a line first)."""
    shown = shown_path(path)
    try:
        source = read(path)
    except PlanError as exc:
        return [Problem(shown, exc.line, exc.detail)]
    scan = scan_text(source.text, config)
    problems = list(_lint_scan(shown, scan, config))
    named = plan_name_problem(path)
    if named is not None:
        problems.append(Problem(shown, None, named))
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
        yield Problem(path, index + 1, near_miss_message(scan, index, config))
    if not scan.headers:
        yield Problem(path, None, no_steps_message(config))
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
    heads = frozenset(h.index for h in scan.headers)
    for header in scan.headers:
        line = header.index + 1
        _, number_text, title = step_values(header)
        if not title:
            yield Problem(path, line, "step has an empty title")
        unmarkable = _unmarkable(scan, header, heads, config)
        if unmarkable is not None:
            yield Problem(path, line, unmarkable)
        number = step_number(number_text)
        if number is None:
            yield Problem(path, line, number_problem(number_text))
            continue
        if number in seen:
            yield Problem(path, line, duplicate_step(number, seen[number], line))
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
    yield from _lint_dependencies(path, scan)
    yield from _lint_touches(path, scan)


def _unmarkable(
    scan: Scan, header: Header, heads: frozenset[int], config: SpecPlanConfig
) -> str | None:
    """Why ``run`` could not mark this step ✅ on its header (``set_step_status`` would refuse:
    a status group that cannot hold ✅, such as ``([ x])``), so a step that lands would stay
    unmarked; None when it can. A stacked step takes its status on a mark line instead."""
    if stacked(scan, header, heads):
        return None
    try:
        header_with_status(scan, header, DONE, config)
    except ValueError as exc:
        return f"{exc}; a step that lands is never marked {DONE} here"
    return None


def _lint_dependencies(path: str, scan: Scan) -> Iterator[Problem]:
    """``Depends on:`` lines that do not parse or belong to no step; unknown steps, steps
    waiting for themselves, cycles (docs/spec-plans.md, Dependencies)."""
    first = scan.headers[0].index
    for index in scan.depends:
        if index < first:
            yield Problem(
                path, index + 1, "'Depends on:' line before the first step belongs to no step"
            )
    nodes, problems = read_dependencies(scan)
    problems += graph_problems(node for node in nodes if node is not None)
    for line, message in problems:
        yield Problem(path, line, message)


def _lint_touches(path: str, scan: Scan) -> Iterator[Problem]:
    """``Touches:`` lines that do not parse (an empty list, an invalid glob), a second one in
    a step, one before the first step (docs/spec-plans.md, Touches)."""
    first = scan.headers[0].index
    for index in scan.touches:
        if index < first:
            yield Problem(
                path, index + 1, "'Touches:' line before the first step belongs to no step"
            )
    for line, message in read_touches(scan)[1]:
        yield Problem(path, line, message)


def _range(low: int, high: int) -> str:
    return f"step {low}" if low == high else f"steps {low}-{high}"
