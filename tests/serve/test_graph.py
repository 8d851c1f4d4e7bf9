"""The plan graph's layout: columns by depth, edges, cycles, the cap."""

from __future__ import annotations

from gitflow_agents.render.mermaid import MAX_PLAN_STEPS, PlanNode
from gitflow_agents.serve.graph import NODE_WIDTH, layout


def _node(number: int, *deps: int, state: str = "waiting") -> PlanNode:
    return PlanNode(number, f"title {number}", state, "detail", depends_on=deps)


def test_steps_sit_one_column_past_their_deepest_dependency() -> None:
    shown = layout([_node(1), _node(2, 1), _node(3, 1), _node(4, 2, 3), _node(5)])
    x = {box.number: box.x for box in shown.boxes}
    column = {number: (value - 10) // (NODE_WIDTH + 60) for number, value in x.items()}
    assert column == {1: 0, 2: 1, 3: 1, 4: 2, 5: 0}
    assert len(shown.edges) == 4
    assert shown.width >= 3 * NODE_WIDTH and shown.hidden == 0


def test_a_cycle_and_an_unknown_dependency_do_not_hang_or_crash() -> None:
    shown = layout([_node(1, 2), _node(2, 1), _node(3, 99)])
    assert sorted(box.number for box in shown.boxes) == [1, 2, 3]


def test_states_map_to_classes_and_long_titles_are_cut() -> None:
    long = PlanNode(1, "x" * 100, "bogus", "d", depends_on=())
    (box,) = layout([long]).boxes
    assert box.state == "waiting" and box.title.endswith("…") and len(box.title) <= 34
    assert box.full_title == "Step 1: " + "x" * 100


def test_steps_past_the_cap_are_counted_not_drawn() -> None:
    shown = layout([_node(n) for n in range(1, MAX_PLAN_STEPS + 6)])
    assert len(shown.boxes) == MAX_PLAN_STEPS and shown.hidden == 5
