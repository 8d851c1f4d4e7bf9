"""Which steps of a plan can start now, as ``origin`` has it (``plan matrix --ready``).

A step is ready when it is not ✅ in the plan committed on the target branch *as origin has
it*, no step branch for it exists on origin (the branch is the lock a running step holds), and
every step it depends on is ✅ there. The local clone's copy of the target, of the plan and of
the step branches never counts: two runners that look at the same origin get the same answer
(docs/spec-plans.md, Waves).

Origin is read in one order on purpose: first the list of its branches, then the target's
commit. A step whose branch was not there when the list was read and that is not ✅ on the
(later) target was neither running nor merged at that moment, so it is safe to start: a step
merged in between is ✅ on the target read afterwards.

Of the steps that could start, one whose footprint (``Touches:``) overlaps that of a started
step, or of a step earlier in the plan that starts in this wave, waits ("held"); so does every
step past ``max_parallel`` steps in flight (started ones count). docs/spec-plans.md, Waves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.base.atomic import real_path
from gitflow_agents.base.errors import GitError, PlanError, UsageError
from gitflow_agents.git import queries as git
from gitflow_agents.plan.deps import plan_problems
from gitflow_agents.plan.model import DONE, Plan, SpecPlanConfig, Step, format_branch
from gitflow_agents.plan.steps import parse_plan, parse_plan_text
from gitflow_agents.plan.touches import overlap


@dataclass(frozen=True)
class Wave:
    """The steps of a plan sorted by what origin says about them."""

    plan: Plan  # as committed on origin's target (else the user's copy: ``committed`` False)
    committed: bool
    remote: str
    target: str
    sha: str  # origin's target commit that was read
    ready: tuple[Step, ...]
    done: tuple[int, ...]
    started: tuple[int, ...]  # not done, and its step branch exists on origin
    waiting: tuple[int, ...]  # not done, not started, some dependency not done
    # could start but waits: (step, why), a footprint overlap or the --max-parallel cap
    held: tuple[tuple[int, str], ...] = ()
    # its branch is on origin, but its claim is free (its runner is gone): (step, why)
    freed: tuple[tuple[int, str], ...] = ()

    def summary(self) -> str:
        """One line for the log: where it looked and what it found."""
        parts = [f"{self.remote}/{self.target} at {self.sha[:12]}"]
        for label, numbers in (
            ("ready", tuple(s.number for s in self.ready)),
            ("done", self.done),
            (f"started (branch on {self.remote})", self.started),
            ("waiting", self.waiting),
            ("held back", tuple(number for number, _ in self.held)),
        ):
            parts.append(f"{label}: {', '.join(map(str, numbers)) or '-'}")
        line = "; ".join(parts)
        if not self.committed:
            line += f" (the plan is not committed on {self.remote}/{self.target}: nothing is done)"
        return line

    def held_lines(self) -> list[str]:
        """Why each held step waits: ``waiting: 3 (touches src/api/** like 2)``; and why a
        started step's claim is free: ``free: 4 (its workflow run 77 (attempt 1) has ended)``."""
        free = [f"free: {number} ({why})" for number, why in self.freed]
        return free + [f"waiting: {number} ({why})" for number, why in self.held]


def ready_steps(
    root: Path,
    plan_path: Path,
    config: SpecPlanConfig,
    *,
    target: str,
    branch_pattern: str,
    remote: str = "origin",
    max_parallel: int | None = None,
    free: Callable[[str], str | None] | None = None,
) -> Wave:
    """Read origin and sort the plan's steps (see the module docstring). GitError when origin
    cannot be read, UsageError when it has no ``target`` branch or the plan lies outside the
    repository, PlanError when the plan does not parse or its dependencies are wrong. The step
    branch is ``branch_pattern`` (``chain.branch_pattern``) filled in; ``max_parallel`` caps
    the steps in flight (started ones count). ``free`` says why the claim of a step branch
    on origin is free (its runner gone: ``github/pr/lease.py``), None while it holds: such a
    step is ready again."""
    rel = _relative(root, plan_path)
    heads = git.remote_heads(root, remote)  # the branch list first: see the module docstring
    if target not in heads:
        raise UsageError(
            f"{remote} has no branch {target} (the target: --target, chain.target, "
            "else default_branch)"
        )
    tracking = f"refs/remotes/{remote}/{target}"
    if not git.fetch_ref(root, f"+refs/heads/{target}:{tracking}", remote):
        raise GitError(f"cannot fetch {target} from {remote}")
    sha = git.rev_parse(root, tracking)
    plan, committed = _plan_on_target(root, plan_path, rel, sha, config, f"{remote}/{target}")
    problems = plan_problems(plan)
    if problems:
        first = problems[0]
        raise PlanError(
            f"{first.message} ({len(problems)} dependency problem"
            f"{'' if len(problems) == 1 else 's'}; `gitflow-agents plan lint` lists them)",
            path=plan_path,
            line=first.line,
        )
    done = {s.number for s in plan.steps if committed and s.status.strip().startswith(DONE)}
    ready: list[Step] = []
    started: list[int] = []
    waiting: list[int] = []
    freed: list[tuple[int, str]] = []
    for step in plan.steps:
        if step.number in done:
            continue
        branch = format_branch(branch_pattern, plan.name, step.number)
        why = free(branch) if free is not None and branch in heads else None
        if why is not None:
            freed.append((step.number, why))
        if branch in heads and why is None:
            started.append(step.number)
        elif all(dep in done for dep in step.depends_on):
            ready.append(step)
        else:
            waiting.append(step.number)
    chosen, held = spread(plan, ready, started, max_parallel)
    return Wave(
        plan,
        committed,
        remote,
        target,
        sha,
        tuple(chosen),
        tuple(sorted(done)),
        tuple(started),
        tuple(waiting),
        tuple(held),
        tuple(freed),
    )


def spread(
    plan: Plan, ready: list[Step], started: list[int], max_parallel: int | None
) -> tuple[list[Step], list[tuple[int, str]]]:
    """``ready`` (in plan order) split into the steps to start and those held back, with why:
    a footprint that overlaps one of a started step or of a step chosen before it, or the
    ``max_parallel`` cap on steps in flight (the started ones included)."""
    occupied = [(step, " (started)") for step in plan.steps if step.number in started]
    chosen: list[Step] = []
    held: list[tuple[int, str]] = []
    for step in ready:
        clash = next(
            (
                (other, how, pair)
                for other, how in occupied
                if (pair := overlap(step.touches, other.touches)) is not None
            ),
            None,
        )
        if clash is not None:
            other, how, (mine, theirs) = clash
            like = "" if mine == theirs else f": {theirs}"
            held.append((step.number, f"touches {mine} like {other.number}{how}{like}"))
        elif max_parallel is not None and len(occupied) >= max_parallel:
            busy = ", ".join(str(other.number) for other, _ in occupied)
            held.append((step.number, f"--max-parallel {max_parallel}: {busy} in flight"))
        else:
            chosen.append(step)
            occupied.append((step, ""))
    return chosen, held


def _relative(root: Path, plan_path: Path) -> str:
    with contextlib.suppress(ValueError):
        return real_path(plan_path).relative_to(real_path(root)).as_posix()
    raise UsageError(f"{plan_path}: the plan is outside the repository {root}")


def _plan_on_target(
    root: Path, path: Path, rel: str, sha: str, config: SpecPlanConfig, shown: str
) -> tuple[Plan, bool]:
    """The plan as commit ``sha`` has it, and True; the user's copy and False when the plan is
    not committed there."""
    text = git.show_file(root, sha, rel)
    if text is None:
        return parse_plan(path, config), False
    try:
        return parse_plan_text(text, path, config), True
    except PlanError as exc:
        raise PlanError(
            f"{exc.detail} (in the plan as {shown} has it, {sha[:12]})",
            path=exc.path,
            line=exc.line,
        ) from None
