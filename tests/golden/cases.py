"""The golden prompt cases: one fixture project, fixed inputs, a fixed timestamp.

``python -m tests.golden.regen`` rewrites the golden files from these cases;
``tests/prompt/test_prompt.py`` fails with a unified diff when a rendered prompt differs from its file.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gitflow_agents.assets import load_manifest
from gitflow_agents.commands.prompt import format_segments
from gitflow_agents.config import load_flow_config
from gitflow_agents.plan import parse_plan
from gitflow_agents.prompt import AssembledPrompt, PromptRequest, assemble_prompt

GOLDEN_DIR = Path(__file__).resolve().parent
PROJECT = GOLDEN_DIR / "project"
PLAN = PROJECT / "specs" / "feature.md"
FIXED_TIME = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Case:
    name: str
    agent: str
    plan: bool = False
    step: int | None = None
    task: str | None = None
    after: tuple[str, ...] = ()
    preamble: str | None = None
    flow_name: str | None = None


CASES: tuple[Case, ...] = (
    # builder: frontmatter hoisted; one writable file (its template resolved), one readable file
    # that exists, one readable file that does not (filtered out); plan step with a ```` fence.
    Case("plan_step", "builder", plan=True, step=2),
    Case("after_single", "reviewer", plan=True, step=2, after=("step-02-builder",)),
    Case(
        "after_multiple",
        "fixer",
        step=2,
        flow_name="feature",
        task="Fix every point the reviewers raised.",
        after=("web-reviewer", "backend-reviewer", "supabase-reviewer"),
    ),
    Case(
        "raw_task",
        "reviewer",
        task="Review the README for typos.\nKeep {braces}, {step} and [agent-filled] text as written.",
    ),
    Case(
        "preamble",
        "reviewer",
        plan=True,
        step=1,
        preamble="It is now your job to review the changes for this plan-step:",
    ),
    Case("frontmatter", "builder", task="Add a --shout flag to the greet command."),
    Case("agents_flow", "planner", task="Plan a farewell command."),
    Case("plan_and_task", "builder", plan=True, step=3, task="Also mention the --shout flag."),
    # The Reply Format worded for another CLI (gemini) and role (research); and left out
    # for an agent whose config says structured_reply: false.
    Case("researcher_gemini", "researcher", task="Which CLI flag parsers support subcommands?"),
    Case("no_reply_format", "scripted", task="Add a --shout flag to the greet command."),
)


def render(case: Case) -> AssembledPrompt:
    config = load_flow_config(PROJECT)
    plan = parse_plan(PLAN, config.spec_plan) if case.plan else None
    return assemble_prompt(
        PromptRequest(
            root=PROJECT,
            config=config,
            agent=case.agent,
            flow_name=case.flow_name,
            step=case.step,
            plan=plan,
            task=case.task,
            after=case.after,
            preamble=case.preamble,
            timestamp=FIXED_TIME,
            manifest=load_manifest(PROJECT),
        )
    )


def golden_files(case: Case) -> dict[Path, str]:
    """The golden files of one case and what they must contain."""
    prompt = render(case)
    return {
        GOLDEN_DIR / f"{case.name}.md": prompt.text,
        GOLDEN_DIR / f"{case.name}.segments.txt": format_segments(prompt.segments),
    }
