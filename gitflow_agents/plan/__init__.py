"""Spec plans: parse overview and steps, lint them, update a step's status in place.

A plan is markdown. Its steps are the markdown headings (outside code blocks) whose source line
matches ``spec_plan.step_header_pattern``; its overview is the text before the
``top_level_end_marker`` line. markdown-it tokens decide what is a heading and what is code,
so a step-looking line inside a fenced or indented code block is never a step.

``model`` holds the values and the pattern, ``scan`` reads a file and finds its headers,
``deps`` reads a step's ``Depends on:`` line and checks the graph, ``steps`` parses a plan and
writes a step's status, ``lint`` reports every problem. ``waves`` (which steps can start now, as
origin has it) runs git, so it is imported only by ``plan matrix --ready``.
"""

from __future__ import annotations

from gitflow_agents.plan.lint import lint_plan
from gitflow_agents.plan.model import (
    DEFAULT_END_MARKER,
    DEFAULT_STEP_PATTERN,
    LEGACY_STEP_PATTERN,
    Plan,
    Problem,
    SpecPlanConfig,
    Step,
    compile_step_pattern,
    yaml_pattern,
)
from gitflow_agents.plan.steps import parse_plan, parse_plan_text, set_step_status

__all__ = [
    "DEFAULT_END_MARKER",
    "DEFAULT_STEP_PATTERN",
    "LEGACY_STEP_PATTERN",
    "Plan",
    "Problem",
    "SpecPlanConfig",
    "Step",
    "compile_step_pattern",
    "lint_plan",
    "parse_plan",
    "parse_plan_text",
    "set_step_status",
    "yaml_pattern",
]
