"""Step dependencies: a step's ``Depends on: 1, 3`` (or ``none``) line, the previous step when it
has none, and what is wrong with the graph: unknown steps, a step waiting for itself, cycles
(docs/spec-plans.md, Dependencies)."""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from gitflow_agents.base.errors import PlanError
from gitflow_agents.plan.model import Plan, Problem, shown_path
from gitflow_agents.plan.scan import (
    DEPENDS_LINE,
    DIGITS,
    Scan,
    number_problem,
    step_number,
    step_values,
    strip_eol,
)

_FORM = "write `Depends on: 1, 3` or `Depends on: none`"


class BadDepends(ValueError):
    """A ``Depends on:`` line that does not say which steps (the message says why)."""


def parse_depends(line: str) -> tuple[int, ...]:
    """The step numbers a ``Depends on:`` line names (``none``: no step), in its order;
    BadDepends for anything else (``two``, ``1,,3``, ``1, 1``, ``none, 2``, nothing)."""
    match = DEPENDS_LINE.match(line)
    if match is None:
        raise BadDepends(f"not a 'Depends on:' line; {_FORM}")
    value = match.group("value").strip().strip("*_").strip()
    value = value.removesuffix(".").rstrip()
    if value.lower() == "none":
        return ()
    if not value:
        raise BadDepends(f"'Depends on:' names no step; {_FORM}")
    numbers: list[int] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            raise BadDepends(f"'Depends on: {value}' has an empty entry; {_FORM}")
        if not DIGITS.fullmatch(item):
            raise BadDepends(f"'Depends on:' {item!r} is not a step number; {_FORM}")
        number = step_number(item)
        if number is None:
            raise BadDepends(number_problem(item, "'Depends on:'"))
        if number in numbers:
            raise BadDepends(f"'Depends on:' names step {number} twice")
        numbers.append(number)
    return tuple(numbers)


@dataclass(frozen=True)
class Node:
    """One step in the dependency graph."""

    number: int
    line: int  # 1-based line of the step's header
    depends_on: tuple[int, ...]  # resolved: the declared steps, else the previous step
    depends_line: int | None  # 1-based line of its ``Depends on:`` line; None: none


def read_dependencies(scan: Scan) -> tuple[list[Node | None], list[tuple[int, str]]]:
    """For each step header of ``scan`` (None where its number is not an integer), its
    resolved dependencies; and every problem of the ``Depends on:`` lines as (line, message),
    in line order. A step with a malformed line waits for nothing in the graph (the line is
    reported); a second line in one step is reported and ignored."""
    nodes: list[Node | None] = []
    problems: list[tuple[int, str]] = []
    previous: int | None = None
    for position, header in enumerate(scan.headers):
        number_text = step_values(header)[1]
        end = (
            scan.headers[position + 1].index
            if position + 1 < len(scan.headers)
            else len(scan.lines)
        )
        found = list(
            scan.depends[bisect_right(scan.depends, header.index) : bisect_left(scan.depends, end)]
        )
        number = step_number(number_text)
        if number is None:
            nodes.append(None)
            continue
        declared: tuple[int, ...] | None = None
        for index in found[1:]:
            problems.append(
                (
                    index + 1,
                    f"step {number} has a second 'Depends on:' line (the first is line "
                    f"{found[0] + 1}); list every step on one line",
                )
            )
        if found:
            try:
                declared = parse_depends(strip_eol(scan.lines[found[0]]))
            except BadDepends as exc:
                problems.append((found[0] + 1, str(exc)))
                declared = ()
        if declared is None:
            declared = () if previous is None or previous == number else (previous,)
        line = found[0] + 1 if found else None
        nodes.append(Node(number, header.index + 1, declared, line))
        previous = number
    return nodes, sorted(problems)


def graph_problems(nodes: Iterable[Node]) -> list[tuple[int, str]]:
    """Unknown steps, steps that depend on themselves and cycles, each as (line, message) at
    the ``Depends on:`` line (else the step's header), in line order. Each cycle is named once
    ("dependency cycle: 2 → 3 → 2"), from its lowest step. A step number defined twice counts
    once (its first definition; ``plan lint`` reports the duplicate)."""
    graph: dict[int, Node] = {}
    for node in nodes:
        graph.setdefault(node.number, node)
    problems: list[tuple[int, str]] = []
    for node in graph.values():
        where = node.depends_line or node.line
        for dep in node.depends_on:
            if dep == node.number:
                problems.append((where, f"step {node.number} depends on itself"))
            elif dep not in graph:
                problems.append(
                    (
                        where,
                        f"step {node.number} depends on step {dep}, which the plan does not have",
                    )
                )
    edges = {
        n: tuple(d for d in node.depends_on if d in graph and d != n) for n, node in graph.items()
    }
    for component in _cycles(edges):
        start = min(component)
        cycle = _shortest_cycle(start, edges, component)
        text = " → ".join(str(n) for n in cycle)
        message = f"dependency cycle: {text}"
        if len(component) > len(cycle) - 1:
            listed = ", ".join(str(n) for n in sorted(component))
            message += f" (steps {listed} all wait for each other)"
        message += "; no step of it can ever start"
        node = graph[start]
        problems.append((node.depends_line or node.line, message))
    return sorted(problems)


def _cycles(edges: dict[int, tuple[int, ...]]) -> list[set[int]]:
    """The strongly connected components of more than one step (Tarjan, without recursion:
    a plan may have thousands of steps)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    found: list[set[int]] = []
    for root in edges:
        if root in index:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = edges[node]
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component: set[int] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _shortest_cycle(start: int, edges: dict[int, tuple[int, ...]], within: set[int]) -> list[int]:
    """The shortest path ``start → … → start`` inside one strongly connected component."""
    came_from: dict[int, int] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(edges[node]):
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if target in within and target not in came_from:
                came_from[target] = node
                queue.append(target)
    raise AssertionError(f"step {start} is in a cycle but no path leads back to it")


def plan_problems(plan: Plan) -> list[Problem]:
    """The problems that keep a parsed plan's steps from being ordered (its ``Depends on:``
    lines already parse): a step number defined twice (which one ``Depends on: 2`` means, which
    one a ✅ marks, is anyone's guess), then the graph's."""
    shown = shown_path(plan.path)
    problems = duplicates(plan)
    nodes = (Node(s.number, s.line, s.depends_on, s.depends_line) for s in plan.steps)
    problems += (Problem(shown, line, message) for line, message in graph_problems(nodes))
    return problems


def duplicates(plan: Plan) -> list[Problem]:
    """Each step whose number an earlier step of the plan has: no command can tell which one
    ``--step N`` means (``plan matrix`` refuses them too: each would be a job that fails)."""
    shown = shown_path(plan.path)
    first: dict[int, int] = {}
    problems: list[Problem] = []
    for step in plan.steps:
        if step.number in first:
            message = duplicate_step(step.number, first[step.number], step.line)
            problems.append(Problem(shown, step.line, message))
        first.setdefault(step.number, step.line)
    return problems


def duplicate_step(number: int, first: int, line: int) -> str:
    """What ``plan lint`` and ``run --all`` say of step ``number`` defined again at ``line``."""
    return f"duplicate step {number}: lines {first} and {line}"


def checked_order(plan: Plan) -> list[int]:
    """``run --all``'s order (``run_order``); a plan whose dependencies cannot be met (an
    unknown step, a cycle) is a PlanError naming each problem: before anything runs, and for
    ``--jobs`` again whenever the plan, edited meanwhile, is read again."""
    problems = plan_problems(plan)
    if problems:
        raise PlanError("; ".join(str(problem) for problem in problems))
    return run_order(plan)


def run_order(plan: Plan) -> list[int]:
    """The plan's step numbers in an order that runs every step after the steps it depends on:
    the file's order where that already holds (a plan without ``Depends on:`` lines keeps it),
    else each step as early in the file as its dependencies allow. Call it on a plan without
    graph problems (``plan_problems`` empty): steps in a cycle are left out."""
    position = {step.number: index for index, step in enumerate(plan.steps)}
    waiting = {step.number: set(step.depends_on) & position.keys() for step in plan.steps}
    needed_by: dict[int, list[int]] = {number: [] for number in position}
    for number, deps in waiting.items():
        for dep in deps:
            needed_by[dep].append(number)
    ready = [(position[n], n) for n, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, number = heapq.heappop(ready)
        order.append(number)
        for later in needed_by[number]:
            waiting[later].discard(number)
            if not waiting[later]:
                heapq.heappush(ready, (position[later], later))
    return order
