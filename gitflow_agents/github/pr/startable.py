"""Which steps ``run PLAN --pr`` may start, as origin has them (docs/github.md, "Plan steps as
pull requests", "Which steps"): ``--all`` is the wave ``plan matrix --ready`` prints; ``--step
N`` is refused while a step it depends on is not ✅ on origin's target, and waits (exit 0)
while its footprint (``Touches:``) overlaps that of a started step, in ``--ready``'s words;
``--force`` runs it either way. Dependencies and footprints are read from the plan as origin's
target has it committed (``plan_on_target``), as ``--ready`` reads them, never from this
runner's copy (which may be stale or edited).
"""

from __future__ import annotations

from collections.abc import Callable

from gitflow_agents.base.errors import PlanError, UsageError
from gitflow_agents.chain import Context
from gitflow_agents.chain.state import done_where, plan_in_repo
from gitflow_agents.git import queries as git
from gitflow_agents.plan import Plan, parse_plan_text
from gitflow_agents.plan.model import DONE, format_branch
from gitflow_agents.plan.touches import overlap
from gitflow_agents.plan.waves import ready_steps, spread

REMOTE = "origin"


def startable(
    ctx: Context,
    steps: list[int] | None,
    force: bool,
    max_parallel: int | None = None,
    free: Callable[[str], str | None] | None = None,
) -> tuple[list[int], tuple[int, ...]]:
    """``steps`` checked against origin's target, and the steps left to the runs that hold
    them: None is the wave ready now, as ``plan matrix --ready`` has it (printed as one summary
    line), and its started steps (their branch on origin, their claim not ``free``); a step
    waiting for a step that is not ✅ there is a UsageError unless ``force``, one whose
    footprint overlaps a started step's is left out with a ``waits`` line (none is left to
    another run). Only ``--all`` needs the whole plan's dependencies right (no cycle, no
    unknown step), as ``--ready`` does; ``--step N`` looks at its own."""
    assert ctx.plan is not None
    if steps is None:
        wave = ready_steps(
            ctx.root,
            ctx.plan.path,
            ctx.config.spec_plan,
            target=ctx.target,
            branch_pattern=ctx.settings.branch_pattern,
            remote=REMOTE,
            max_parallel=max_parallel,
            free=free,
        )
        print(f"ready on {wave.summary()}")
        for line in wave.held_lines():
            print(line)
        return [step.number for step in wave.ready], wave.started
    chosen = []
    plan = plan_on_target(ctx)
    for number in steps:
        if force or done_where(ctx, number) is not None:
            chosen.append(number)
            continue
        waiting = [d for d in plan.step(number).depends_on if done_where(ctx, d) is None]
        if waiting:
            raise UsageError(
                f"step {number} waits for step{'s' if len(waiting) > 1 else ''} "
                f"{', '.join(map(str, waiting))}, not {DONE} on {REMOTE}/{ctx.target}: its "
                "pull request would build on work that is not merged; --force runs it anyway"
            )
        why = footprint_wait(ctx, number, free, plan)
        if why is None:
            chosen.append(number)
        else:
            print(f"step {number} waits: {why}; --force runs it anyway")
    return chosen, ()


def plan_on_target(ctx: Context) -> Plan:
    """The plan as origin's target has it committed (``ctx.target_rev``, fetched by the
    caller); this runner's copy only when the target does not have the plan. PlanError, naming
    the plan file, when the committed plan does not parse."""
    assert ctx.plan is not None
    rel = plan_in_repo(ctx)
    text = git.show_file(ctx.root, ctx.target_rev, rel) if rel is not None else None
    if text is None:
        return ctx.plan
    try:
        return parse_plan_text(text, ctx.plan.path, ctx.config.spec_plan)
    except PlanError as exc:
        where = f"{exc.message} (the plan as committed on {ctx.target_rev})"
        raise PlanError(where, path=exc.path or ctx.plan.path, line=exc.line) from None


def footprint_wait(
    ctx: Context,
    number: int,
    free: Callable[[str], str | None] | None = None,
    plan: Plan | None = None,
) -> str | None:
    """Why step ``number`` waits for a started step (its branch on origin, not ✅ on the
    target, its claim not ``free``) whose footprint overlaps its own, in ``--ready``'s words
    (``touches src/api/** like 2 (started)``); None when none does. Origin is asked only
    for a step with a ``Touches:`` line and a sibling whose footprint overlaps it."""
    assert ctx.plan is not None
    plan = ctx.plan
    step = plan.step(number)
    others = [
        other
        for other in plan.steps
        if other.number != number and overlap(step.touches, other.touches) is not None
    ]
    if not others:
        return None
    heads = git.remote_heads(ctx.root, REMOTE)
    started = []
    for other in others:
        branch = format_branch(ctx.settings.branch_pattern, plan.name, other.number)
        if branch not in heads or done_where(ctx, other.number) is not None:
            continue
        if free is None or free(branch) is None:
            started.append(other.number)
    _, held = spread(plan, [step], started, None)
    return held[0][1] if held else None
