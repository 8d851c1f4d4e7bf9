"""A plan's dependency graph laid out for the page's SVG (the template draws it, escaping every
text): the same nodes, states and edges as ``plan show --format mermaid``
(``render.mermaid.plan_flowchart``), in columns by depth, left to right.

Drawn here rather than by Mermaid's JavaScript (docs/decisions.md, "A live view"): the page then
needs no script of 3 MB in the wheel, and the text of a step can never reach a renderer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitflow_agents.render.mermaid import MAX_PLAN_EDGES, MAX_PLAN_STEPS, PlanNode

NODE_WIDTH = 240
NODE_HEIGHT = 54
GAP_X = 60
GAP_Y = 18
MAX_TITLE = 34
"""Characters of ``Step N: title`` a box shows (the full text is its tooltip)."""


@dataclass(frozen=True)
class Box:
    number: int
    x: int
    y: int
    state: str  # done, running, red, ready, waiting: the CSS class
    title: str  # cut to MAX_TITLE
    full_title: str
    detail: str


@dataclass(frozen=True)
class Edge:
    x1: int
    y1: int
    x2: int
    y2: int


@dataclass(frozen=True)
class Layout:
    width: int
    height: int
    boxes: tuple[Box, ...]
    edges: tuple[Edge, ...]
    hidden: int  # steps not drawn (over MAX_PLAN_STEPS)
    node_width: int = NODE_WIDTH
    node_height: int = NODE_HEIGHT


def _depths(nodes: Sequence[PlanNode]) -> dict[int, int]:
    """Each step's column: 0 without drawn dependencies, else one past its deepest one (a
    cycle, which ``plan lint`` reports, is cut where it closes)."""
    by_number = {node.number: node for node in nodes}
    depth: dict[int, int] = {}
    for start in by_number:
        stack = [(start, iter(by_number[start].depends_on))]
        on_path = {start}
        while stack:
            number, deps = stack[-1]
            dep = next(deps, None)
            if dep is None:
                stack.pop()
                on_path.discard(number)
                known = [depth[d] + 1 for d in by_number[number].depends_on if d in depth]
                depth[number] = max(known, default=0)
            elif dep in by_number and dep not in depth and dep not in on_path:
                stack.append((dep, iter(by_number[dep].depends_on)))
                on_path.add(dep)
    return depth


def layout(steps: Sequence[PlanNode]) -> Layout:
    """Boxes in columns by depth (rows in plan order) and an edge from each step to every step
    that waits for it."""
    nodes = list(steps)[:MAX_PLAN_STEPS]
    depth = _depths(nodes)
    rows: dict[int, int] = {}
    boxes: dict[int, Box] = {}
    for node in nodes:
        if node.number in boxes:
            continue  # a number defined twice is drawn once (plan lint reports it)
        column = depth[node.number]
        row = rows.get(column, 0)
        rows[column] = row + 1
        full = f"Step {node.number}: {node.title}"
        title = full if len(full) <= MAX_TITLE else full[: MAX_TITLE - 1] + "…"
        boxes[node.number] = Box(
            node.number,
            x=10 + column * (NODE_WIDTH + GAP_X),
            y=10 + row * (NODE_HEIGHT + GAP_Y),
            state=node.state if node.state in ("done", "running", "red", "ready") else "waiting",
            title=title,
            full_title=full,
            detail=node.detail,
        )
    depends_on = {node.number: node.depends_on for node in reversed(nodes)}  # the first wins
    edges = [
        Edge(
            boxes[dep].x + NODE_WIDTH,
            boxes[dep].y + NODE_HEIGHT // 2,
            box.x,
            box.y + NODE_HEIGHT // 2,
        )
        for box in boxes.values()
        for dep in depends_on[box.number]
        if dep in boxes and dep != box.number
    ][:MAX_PLAN_EDGES]
    columns = max(depth.values(), default=0) + 1
    width = 20 + columns * NODE_WIDTH + (columns - 1) * GAP_X
    height = 20 + max(rows.values(), default=1) * (NODE_HEIGHT + GAP_Y)
    return Layout(width, height, tuple(boxes.values()), tuple(edges), len(steps) - len(nodes))
