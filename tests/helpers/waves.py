"""The four-step plan of waves (1; 2 and 3 after 1; 4 after both) and its text with some steps done (`plan_text`)."""

from __future__ import annotations

PLAN = "specs/feature.md"


BODIES = {
    1: "Create the schema.",
    2: "**Depends on:** 1\n\nThe API.",
    3: "Depends on: 1\n\nThe frontend.",
    4: "Depends on: 2, 3\n\nThe docs.",
}


def plan_text(done: frozenset[int] | set[int] = frozenset()) -> str:
    """Steps 2 and 3 wait only for 1, step 4 for both; the steps in ``done`` are ✅."""
    steps = "".join(
        f"### Status: {'✅' if n in done else ''} | Step {n}: step {n}\n\n{body}\n\n"
        for n, body in BODIES.items()
    )
    return f"# Plan: feature\n\n## Implementation Steps\n\n{steps}"
