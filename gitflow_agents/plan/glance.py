"""Each step's state for the plan at a glance (``plan show --format mermaid``): done, running,
red, ready or waiting, read from the plan and what is known of the runs (docs/spec-plans.md,
"The plan at a glance")."""

from __future__ import annotations

from collections.abc import Collection

from gitflow_agents.plan.model import DONE, Plan

RED = "\u274c"
"""A status starting with it is red: the step failed or was rejected."""


def step_states(plan: Plan, running: Collection[int] = ()) -> dict[int, tuple[str, str]]:
    """For each step number, (state, detail): ``done`` when its status starts with ✅,
    ``running`` when it is in ``running``, ``red`` when its status starts with ❌, else
    ``ready`` when every step it depends on is done and ``waiting`` (for those that are not)."""
    done = {s.number for s in plan.steps if s.status.startswith(DONE)}
    states: dict[int, tuple[str, str]] = {}
    for step in plan.steps:
        if step.number in states:
            continue  # a number defined twice counts once (plan lint reports it)
        if step.number in done:
            states[step.number] = ("done", "done")
        elif step.number in running:
            states[step.number] = ("running", "running")
        elif step.status.startswith(RED):
            states[step.number] = ("red", f"red: {step.status}")
        else:
            waiting = [d for d in step.depends_on if d not in done]
            if waiting:
                states[step.number] = ("waiting", f"waiting for {', '.join(map(str, waiting))}")
            else:
                states[step.number] = ("ready", "ready")
    return states
