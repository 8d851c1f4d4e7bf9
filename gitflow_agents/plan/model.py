"""A spec plan's values (``Plan``, ``Step``, ``Problem``), the ``spec_plan`` settings and the
step header pattern they use (docs/spec-plans.md)."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.base.errors import ConfigError, PlanError
from gitflow_agents.base.fsutil import SAFE_NAME_RULE, safe_name

DEFAULT_END_MARKER = "## Implementation Steps"
DEFAULT_STEP_PATTERN = r"^### Status: ([^|]*?) ?\| Step (\d+): (.+)$"
# The default of gitflow-agents 0.1: an empty status needed two spaces (``### Status:  | ...``).
# Projects whose ``.flow/base.yaml`` still names it get a hint for the one-space form.
LEGACY_STEP_PATTERN = r"^### Status: ([^|]*) \| Step (\d+): (.+)$"
DONE = "\u2705"
"""The status the chain writes for a merged step: a status starting with it is done."""


def plan_name_problem(path: Path) -> str | None:
    """Why the plan file ``path`` cannot name its runs (``flows/<name>/``) and step branches
    (``{plan_name}`` of ``chain.branch_pattern``): its name without ``.md`` is no safe name; None
    when it is one. ``plan lint`` reports it, ``run`` refuses it before anything is made."""
    if safe_name(path.stem):
        return None
    return (
        f"the plan's name {path.stem!r} (its file name) cannot name its run folder and step "
        f"branches: {SAFE_NAME_RULE}; rename the file"
    )


def shown_path(path: Path) -> str:
    """How every message names a plan (``plan lint``, ``run``, ``prompt``...): relative to its
    project, the nearest folder above it with ``.git`` or ``.flow`` (posix), so the same plan is
    ``specs/c.md:9`` from any directory; as given outside any project."""
    full = Path(os.path.abspath(path))  # noqa: PTH100 - ``..`` folded, symlinks kept as seen
    for folder in full.parents:
        if (folder / ".git").exists() or (folder / ".flow").is_dir():
            return full.relative_to(folder).as_posix()
    return str(path)


def yaml_pattern(pattern: str) -> str:
    """``pattern`` as it is written in a YAML file: single-quoted, backslashes as they are (a
    Python repr doubles them, which breaks when pasted into ``.flow/base.yaml``)."""
    return "'" + pattern.replace("'", "''") + "'"


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


def compile_step_pattern(
    pattern: str,
    *,
    path: str | None = None,
    line: int | None = None,
    key: str = "spec_plan.step_header_pattern",
) -> re.Pattern[str]:
    """Compile a step header pattern; ConfigError unless it compiles and has exactly 3 groups."""
    try:
        regex = _compile(pattern)
    except re.error as exc:
        raise ConfigError(
            f"invalid regular expression {yaml_pattern(pattern)}: {exc}",
            path=path,
            line=line,
            key=key,
        ) from None
    if regex.groups != 3:
        raise ConfigError(
            f"pattern {yaml_pattern(pattern)} has {regex.groups} capture group"
            f"{'' if regex.groups == 1 else 's'}; it must have exactly 3 (status, number, title)",
            path=path,
            line=line,
            key=key,
        )
    return regex


@dataclass(frozen=True)
class SpecPlanConfig:
    """The ``spec_plan`` section of the flow config."""

    top_level_end_marker: str = DEFAULT_END_MARKER
    step_header_pattern: str = DEFAULT_STEP_PATTERN

    @property
    def step_regex(self) -> re.Pattern[str]:
        return compile_step_pattern(self.step_header_pattern)


@dataclass(frozen=True)
class Step:
    number: int
    title: str
    status: str
    line: int  # 1-based line of the header
    header: str  # the header line, without its line ending
    content: str  # header line + body up to the next step header or EOF (\n line endings)
    # What the step waits for, resolved: its ``Depends on:`` line, else the previous step in
    # the file (the first step: nothing); docs/spec-plans.md, Dependencies.
    depends_on: tuple[int, ...]
    depends_line: int | None  # 1-based line of its ``Depends on:`` line; None: it has none
    # The globs of its ``Touches:`` line (docs/spec-plans.md, Touches); (): it declares none.
    touches: tuple[str, ...] = ()
    touches_line: int | None = None  # 1-based line of its ``Touches:`` line; None: it has none


@dataclass(frozen=True)
class Plan:
    path: Path
    name: str  # file stem
    overview: str  # text before the end marker (or before the first step), \n line endings
    steps: tuple[Step, ...]

    @property
    def title(self) -> str:
        """The first ATX heading of the overview without its ``#``s, else the plan's name."""
        for line in self.overview.split("\n"):
            match = re.match(r" {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$", line)
            if match and match.group(1):
                return match.group(1)
        return self.name

    def step(self, number: int) -> Step:
        found = [s for s in self.steps if s.number == number]
        if len(found) == 1:
            return found[0]
        if found:
            lines = ", ".join(str(s.line) for s in found)
            raise PlanError(
                f"step {number} is defined {len(found)} times (lines {lines})",
                path=shown_path(self.path),
            )
        available = ", ".join(str(s.number) for s in self.steps) or "none"
        raise PlanError(f"no step {number} (steps: {available})", path=shown_path(self.path))

    def assignment_context(self, number: int) -> str:
        """The plan text an agent gets for one step (docs/protocol.md, System prompt), not fenced;
        ends with a newline."""
        current = self.step(number)
        headers = "\n".join(f"- Step {s.number}: {s.title}" for s in self.steps)
        parts = [
            self.overview.strip("\n").rstrip(),
            f"## Implementation Steps (headers only)\n\n{headers}",
            f"## Current Step: Step {number}",
            current.content.strip("\n").rstrip(),
        ]
        return "\n\n".join(part for part in parts if part) + "\n"


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


# The placeholders a chain's step branch name may use ({plan} is short for {plan_name}; {step2}
# is the step number zero-padded to two digits).
BRANCH_PLACEHOLDERS: tuple[str, ...] = ("plan_name", "plan", "step", "step2")


def format_branch(pattern: str, plan_name: str, step: int) -> str:
    """The step branch ``pattern`` names for step ``step`` of plan ``plan_name``."""
    return pattern.format(plan_name=plan_name, plan=plan_name, step=step, step2=f"{step:02d}")
