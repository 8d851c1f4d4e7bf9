"""A spec plan of steps with the given bodies (`plan_text`)."""

from __future__ import annotations


def plan_text(*bodies: str) -> str:
    """A plan whose step N (from 1) has ``bodies[N-1]`` as its body."""
    steps = "".join(
        f"### Status: | Step {number}: step {number}\n\n{body}\n\n"
        for number, body in enumerate(bodies, 1)
    )
    return f"# Plan\n\n## Implementation Steps\n\n{steps}"
