"""Which steps ``run PLAN --pr`` may start, as origin has them (docs/github.md, "Plan steps as
pull requests", "Which steps"): ``--all`` is the wave ``plan matrix --ready`` prints; ``--step
N`` is refused while a step it depends on is not ✅ on origin's target, unless ``--force``.
"""

from __future__ import annotations

from collections.abc import Callable

from gitflow_agents.base.errors import UsageError
from gitflow_agents.chain import Context
from gitflow_agents.chain.state import done_where
from gitflow_agents.plan.model import DONE
from gitflow_agents.plan.waves import ready_steps

REMOTE = "origin"


def startable(
    ctx: Context,
    steps: list[int] | None,
    force: bool,
    max_parallel: int | None = None,
    free: Callable[[str], str | None] | None = None,
) -> list[int]:
    """``steps`` checked against origin's target: None is the wave ready now, as ``plan matrix
    --ready`` has it (printed as one summary line); a step waiting for a step that is not ✅
    there is a UsageError unless ``force``. Only ``--all`` needs the whole plan's dependencies right
    (no cycle, no unknown step), as ``--ready`` does; ``--step N`` looks at its own."""
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
        return [step.number for step in wave.ready]
    chosen = []
    for number in steps:
        if force or done_where(ctx, number) is not None:
            chosen.append(number)
            continue
        waiting = [d for d in ctx.plan.step(number).depends_on if done_where(ctx, d) is None]
        if waiting:
            raise UsageError(
                f"step {number} waits for step{'s' if len(waiting) > 1 else ''} "
                f"{', '.join(map(str, waiting))}, not {DONE} on {REMOTE}/{ctx.target}: its "
                "pull request would build on work that is not merged; --force runs it anyway"
            )
        chosen.append(number)
    return chosen
