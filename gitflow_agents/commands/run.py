"""``gitflow-agents run PLAN --step N | --all``: implement → review → (fix → review)* → merge.

With ``--pr`` each step becomes a pull request instead of a merge (``github/step_pr.py``).

Exit codes (docs/chains.md): 0 every step approved and merged (with ``--pr``: pushed, its pull
request ready; or already done on the target, or started by another run), 1 a step was not
approved (revise at the limit, missing or decorated verdict, findings at the
threshold, an agent that changed nothing), 2 usage / config / git error (merge refused, an
unresolved conflict with the target), 3 an agent failed / got stuck / timed out, 4 GitHub
failed (``--pr``: a push refused, the API failing after its retries, GitHub unusable before the
claim, auto-merge refused), 5 a budget ran out (an agent stopped at the limit, or a step not
started: docs/configuration.md, "budget"), 130 interrupted. With ``--all --jobs N`` several
steps run at once (``chain/parallel.py``) and the exit code is the worst of theirs:
130 > 70 > 2 > 5 > 4 > 6 > 3 > 1 > 0.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gitflow_agents.base.errors import ExitCode, PlanError, UsageError
from gitflow_agents.commands.options import (
    add_agent_run_arguments,
    add_layer_arguments,
    positive_int,
)

if TYPE_CHECKING:
    from gitflow_agents.chain import ChainResult, ChainSettings, Context
    from gitflow_agents.chain.parallel import Remaining
    from gitflow_agents.config import FlowConfig
    from gitflow_agents.config.budget import Scope
    from gitflow_agents.github.pr.outputs import StepOutputs
    from gitflow_agents.runs.events import EventHub


def add_chain_arguments(p: argparse.ArgumentParser) -> None:
    """Options shared by ``run`` and ``flow``: agents, limits, target, merge, timeouts, output.

    The chain options default to the config's ``chain:`` section (docs/configuration.md)."""
    p.add_argument("--implementer", help="implementer agent (default: chain.implementer, builder)")
    p.add_argument(
        "--reviewers",
        help="reviewer agent(s), comma separated; they run in parallel "
        "(default: chain.reviewers, reviewer)",
    )
    p.add_argument("--fixer", help="fixer agent (default: chain.fixer, fixer)")
    p.add_argument(
        "--max-iterations",
        type=positive_int,
        help="review rounds before the step fails (default: chain.max_iterations, 3); "
        "the last action is a review",
    )
    p.add_argument(
        "--target", help="branch to merge into (default: chain.target, else default_branch)"
    )
    p.add_argument(
        "--branch-pattern",
        help="step branch name; {plan_name} (or {plan}), {step}, {step2} (zero-padded) are "
        "filled in (default: chain.branch_pattern, agents/{plan_name}/step-{step})",
    )
    p.add_argument(
        "--merge",
        choices=("ff", "merge"),
        help="ff: fast-forward only; merge: always a merge commit; never forced "
        "(default: chain.merge, ff)",
    )
    p.add_argument(
        "--severity-threshold",
        choices=("error", "warn", "info"),
        help="findings at or above this block the merge (default: chain.severity_threshold, error)",
    )
    add_layer_arguments(p)
    add_agent_run_arguments(p, "print each step's result.json", show_kill_grace=False)


def run(args: argparse.Namespace) -> int:
    if bool(getattr(args, "pr", False)):
        from gitflow_agents.github.pr.outputs import step_outputs

        # in GitHub Actions, how the steps ended and what they spent, as step outputs too,
        # however the command ends (an error before any step included)
        with step_outputs(os.environ) as outputs:
            return _run(args, outputs)
    return _run(args, None)


def _run(args: argparse.Namespace, outputs: StepOutputs | None) -> int:
    from gitflow_agents.agent_run.launch import sigterm_as_interrupt
    from gitflow_agents.agents.installed import check_agents
    from gitflow_agents.chain import run_step
    from gitflow_agents.chain.parallel import Remaining, run_parallel
    from gitflow_agents.plan.deps import checked_order

    if (args.step is None) == (not args.all):
        raise UsageError("run: give --step N or --all")
    pr = outputs is not None
    if not pr and (getattr(args, "auto_merge", None) or getattr(args, "draft", False)):
        raise UsageError("--auto-merge and --draft go with --pr")
    plan_issue = getattr(args, "plan_issue", None)
    if plan_issue is not None and not pr:
        raise UsageError("--plan-issue goes with --pr")
    max_parallel = getattr(args, "max_parallel", None)
    if max_parallel is not None and not (pr and args.all):
        raise UsageError("--max-parallel goes with --all --pr")
    if getattr(args, "jobs", None) is not None and (pr or not args.all):
        raise UsageError("--jobs goes with --all (with --pr: --max-parallel)")
    try:
        ctx = open_context(args, plan_path=Path(args.plan))
    except PlanError as exc:
        raise where_it_went(args, exc) from None
    assert ctx.plan is not None
    ctx.again = again_options(args)
    if args.all:  # --pr: the wave ready on origin, decided in run_steps
        steps = [] if pr else checked_order(ctx.plan)
    else:
        ctx.plan.step(args.step)  # PlanError for an unknown step, before anything runs
        steps = [args.step]
    settings = ctx.settings  # every chain agent's program, not only after the implementer's work
    check_agents(
        ctx.config, (settings.implementer, *settings.reviewers, settings.fixer), cwd=ctx.root
    )
    code = int(ExitCode.OK)
    if outputs is not None:  # --all --pr: the steps ready now, as origin has them (docs/github.md)
        from gitflow_agents.github.pr.step import PrOptions, run_steps

        options = PrOptions(
            args.auto_merge, bool(args.draft), bool(args.force), max_parallel, plan_issue
        )
        told = outputs

        def reported(result: ChainResult) -> None:
            report(result, as_json=args.json)
            told.ran(result)

        assert ctx.budget is not None
        budget = ctx.budget.scope("plan")
        with sigterm_as_interrupt(), contextlib.closing(ctx.hub), budget:
            wave = None if args.all else steps
            return run_steps(ctx, wave, options, reported, outputs=outputs)
    jobs = jobs_of(args, ctx.config)
    assert ctx.budget is not None
    # --json: stdout is the stream of JSON documents alone; the lines around them go to stderr
    lines = sys.stderr if args.json else sys.stdout
    if jobs > 1:  # several steps at once, each in its own work tree (chain/parallel.py)
        with sigterm_as_interrupt(), contextlib.closing(ctx.hub), ctx.budget.scope("plan"):
            code = run_parallel(
                ctx,
                steps,
                jobs,
                lambda r: report(r, as_json=args.json),
                lambda line: print(line, file=lines),
            )
        _collect_garbage(ctx, lines)
        return code
    remaining = Remaining(ctx.plan, steps)
    with sigterm_as_interrupt(), contextlib.closing(ctx.hub), ctx.budget.scope("plan"):
        while remaining.steps:
            picked = _next_step(args, ctx, remaining, lines) if args.all else (ctx, args.step)
            if picked is None:  # each step left waits for one that is no step of this run
                code = int(ExitCode.USAGE)
                break
            fresh, number = picked
            spent = ctx.budget.holds_back(*ctx.adapters)  # spent by the steps before
            if spent is not None:
                print(f"step {number} not started: {spent}", file=lines)
                return int(ExitCode.BUDGET)
            remaining.start(number)
            try:
                result = run_step(fresh, number)
            except KeyboardInterrupt as exc:  # the step's record says canceled: its line too
                ended = getattr(exc, "step_result", None)
                if ended is not None:
                    report(ended, as_json=args.json)
                raise
            report(result, as_json=args.json)
            code = result.exit_code
            if code != ExitCode.OK:
                break
    _collect_garbage(ctx, lines)
    return code


def _next_step(
    args: argparse.Namespace, ctx: Context, remaining: Remaining, lines: TextIO
) -> tuple[Context, int] | None:
    """The step ``run --all`` runs next, one at a time, and ``ctx`` with the plan read again to
    run it with: the one ``--jobs N`` would start (``chain/parallel.py``, the same re-planning
    rule), the earliest in the plan's order; None, after a line naming them, when every step
    left waits for a step that is no step of this run."""
    from gitflow_agents.chain import DONE
    from gitflow_agents.chain.parallel import next_steps

    try:  # statuses change, steps go, dependencies change; a step may even move the plan
        fresh = remaining.reread(ctx, lambda line: print(line, file=lines))
    except PlanError as exc:
        raise where_it_went(args, exc) from None
    start = next_steps(fresh, remaining.steps, [], 1)[0]
    if not start:
        waiting = ", ".join(map(str, remaining.steps))
        print(
            f"not started (what they depend on is not {DONE} on {ctx.target}): {waiting}",
            file=lines,
        )
        return None
    return fresh, min(start, key=remaining.steps.index)


def where_it_went(args: argparse.Namespace, exc: PlanError) -> PlanError:
    """``exc`` for a plan that is not there, saying which commit of the target moved or
    deleted it (``chain.state.where_it_went``), before the run's Context exists; ``exc``
    itself for any other problem, or when the target's history does not say."""
    from gitflow_agents.base.errors import GitflowError
    from gitflow_agents.chain.state import where_it_went as where
    from gitflow_agents.config import load_flow_config, repository_project

    path = Path(args.plan).absolute()
    if os.path.lexists(path):
        return exc
    try:
        root = repository_project(Path.cwd())
        config = load_flow_config(root, args.flow_type, args.variant)
        target = settings_from(args, config).target or config.default_branch
    except GitflowError:
        return exc
    return where(root, target, path, exc)


def _collect_garbage(ctx: Context, lines: TextIO) -> None:
    """``chain.gc`` at the end of a run: old work trees of the tool's own go (chain/gc.py); what
    it did, as a note on ``lines``."""
    from gitflow_agents.base.errors import GitflowError
    from gitflow_agents.base.units import bytes_text
    from gitflow_agents.chain.gc import apply_policy

    try:
        gone = apply_policy(
            ctx.root,
            ctx.config.flow_dir,
            ctx.target,
            ctx.config.chain.gc,
            ctx.settings.kill_grace,
            ctx.settings.branch_pattern,
        )
    except GitflowError as exc:
        print(f"  note: chain.gc: {exc}", file=lines)
        return
    if gone:
        size = sum(verdict.tree.size for verdict in gone)  # 0: not measured (no size limit)
        freed = f", {bytes_text(size)}" if size else ""
        print(
            f"  note: chain.gc removed {len(gone)} old work tree(s){freed} (gitflow-agents gc)",
            file=lines,
        )


# the options a step run again must repeat to be the same run (``Context.run_again``): its
# agents, its limits and gate (a reused review is judged again), its branch, target and merge,
# its layers; not timeouts, budgets or output, which change nothing a finished agent did
_AGAIN = (
    "implementer",
    "reviewers",
    "fixer",
    "max_iterations",
    "severity_threshold",
    "target",
    "branch_pattern",
    "merge",
    "flow_type",
    "variant",
)


def again_options(args: argparse.Namespace) -> tuple[str, ...]:
    """The options of ``args`` a "run the step again" command repeats, as argv (those given)."""
    argv: list[str] = []
    for name in _AGAIN:
        value = getattr(args, name, None)
        if value is not None:
            argv += ["--" + name.replace("_", "-"), str(value)]
    if getattr(args, "force", False):
        argv.append("--force")
    return tuple(argv)


def jobs_of(args: argparse.Namespace, config: FlowConfig) -> int:
    """How many steps ``run --all`` runs at once: ``--jobs``, else ``chain.jobs``; always 1
    for ``--step`` and ``--pr`` (``--pr`` caps with ``--max-parallel``)."""
    if not getattr(args, "all", False) or getattr(args, "pr", False):
        return 1
    jobs = getattr(args, "jobs", None)
    return int(jobs if jobs is not None else config.chain.jobs)


def settings_from(args: argparse.Namespace, config: FlowConfig | None = None) -> ChainSettings:
    """The chain settings: each command-line option, else the config's ``chain:`` value, else
    the built-in default. UsageError for bad option values."""
    from gitflow_agents.chain import ChainSettings
    from gitflow_agents.config import ChainConfig, branch_pattern_problem
    from gitflow_agents.findings import Severity

    defaults = config.chain if config is not None else ChainConfig()

    def option(name: str, default: Any) -> Any:
        value = getattr(args, name, None)
        return default if value is None else value

    max_iterations = option("max_iterations", defaults.max_iterations)
    reviewers = defaults.reviewers
    if getattr(args, "reviewers", None) is not None:
        reviewers = tuple(r.strip() for r in args.reviewers.split(",") if r.strip())
        if not reviewers or len(set(reviewers)) != len(reviewers):
            raise UsageError(f"--reviewers: give distinct agent names, got {args.reviewers!r}")
    pattern = option("branch_pattern", defaults.branch_pattern)
    problem = branch_pattern_problem(pattern)
    if problem is not None:
        raise UsageError(f"--branch-pattern {pattern!r}: {problem}")
    return ChainSettings(
        implementer=option("implementer", defaults.implementer),
        reviewers=reviewers,
        fixer=option("fixer", defaults.fixer),
        max_iterations=max_iterations,
        target=option("target", defaults.target),
        branch_pattern=pattern,
        merge=option("merge", defaults.merge),
        threshold=Severity(option("severity_threshold", defaults.severity_threshold)),
        stuck_timeout=getattr(args, "stuck_timeout", None),
        timeout=getattr(args, "timeout", None),
        kill_grace=option("kill_grace", ChainSettings.kill_grace),
        force=bool(getattr(args, "force", False)),
    )


def open_context(
    args: argparse.Namespace,
    *,
    plan_path: Path | None,
    flow: str | None = None,
    check_agents: bool = True,
    budget_scope: Scope = "step",
) -> Context:
    """Project root, config, plan, settings, the event hub (events.jsonl per agent run;
    live console lines on stderr unless --quiet) and the budgets (the options set
    ``budget_scope``: ``run``'s a step run, ``flow``'s its agent run or its review)."""
    from gitflow_agents.chain import Context
    from gitflow_agents.commands.budget import ledger_from
    from gitflow_agents.config import load_flow_config, repository_project
    from gitflow_agents.git import queries as git
    from gitflow_agents.plan import parse_plan

    root = repository_project(Path.cwd())
    config = load_flow_config(root, args.flow_type, args.variant)
    plan = parse_plan(plan_path.absolute(), config.spec_plan) if plan_path else None
    if plan_path is not None:
        refuse_plan_leading_out(plan_path)
    refuse_flow_name(flow, plan_path)
    settings = settings_from(args, config)
    if check_agents:
        for name in (settings.implementer, *settings.reviewers, settings.fixer):
            config.agent(name)  # ConfigError naming the known agents, before anything runs
    name = flow or (plan.name if plan is not None else "flow")
    ledger = ledger_from(args, config, budget_scope)
    ctx = Context(root, config, plan, name, settings, _hub(args, config), budget=ledger)
    ctx.exclude_flow_dir()  # run --pr's claim and plan tend's lease are written before a step
    ctx.commit_identity = git.commit_identity(root, git.LOCAL_NAME, git.LOCAL_EMAIL)
    return ctx


def refuse_flow_name(flow: str | None, plan_path: Path | None) -> None:
    """UsageError or PlanError (exit 2) for a flow name that cannot be a folder under flows/ and
    part of a step branch, before any branch, work tree or record is made: ``--flow``, else
    the plan's file name (``plan lint`` reports that too)."""
    from gitflow_agents.plan.model import plan_name_problem, shown_path
    from gitflow_agents.prompt.paths import check_name

    if flow is not None:
        check_name(flow, "flow name")
    elif plan_path is not None:
        problem = plan_name_problem(plan_path)
        if problem is not None:
            raise PlanError(problem, path=shown_path(plan_path))


def refuse_plan_leading_out(plan_path: Path) -> None:
    """UnsafeWriteError (exit 2) for a plan inside a repository that a symlink leads out of it,
    before anything runs: a step that lands writes its ✅ into the plan, and the tool never
    writes through such a link (docs/spec-plans.md; docs/security.md, "Writes"). The plan's
    real path, outside the repository, is one it takes."""
    from gitflow_agents.base.atomic import safe_target
    from gitflow_agents.base.errors import UnsafeWriteError

    try:
        safe_target(plan_path.absolute())
    except UnsafeWriteError:
        real = os.path.realpath(plan_path)
        raise UnsafeWriteError(
            f"{plan_path}: a symlink leads this plan out of the repository (to {real}); a "
            "step that lands writes its ✅ into the plan, never through such a link: run the "
            f"plan at its real path ({real}), or move it into the repository"
        ) from None


def _hub(args: argparse.Namespace, config: FlowConfig) -> EventHub:
    """The run's event hub: live console lines per agent, or with ``--jobs N`` the live view
    of the steps (``render/steps.py``); nothing on the console with ``--quiet``. It listens for
    ``send`` and ``cancel`` to its running agents (``runs/control.py``)."""
    from gitflow_agents.agent_run.launch import event_hub
    from gitflow_agents.runs.control import listening

    if jobs_of(args, config) > 1:
        from gitflow_agents.chain.parallel import steps_hub

        return listening(steps_hub(quiet=args.quiet))
    return listening(event_hub(None, quiet=args.quiet))


def report(result: ChainResult, *, as_json: bool) -> None:
    """One line per step on stdout (or the full result.json with --json)."""
    from gitflow_agents.chain import dumps
    from gitflow_agents.git import stats

    if as_json:
        print(dumps(result))
        return
    mark = {"approved": "✅", "skipped": "✅", "canceled": "⏹"}.get(result.outcome, "❌")
    line = f"{mark} step {result.step}: {result.outcome} - {result.reason}"
    if result.stats is not None:
        line += f" [{stats.summary(result.stats)}]"
    print(line)
    for notice in result.notices:
        print(f"  note: {notice}")
    if result.merged is not None:
        print(f"  merged ({result.merged.kind}) -> {result.merged.sha[:12]}")
    if result.result_path is not None:
        print(f"  run {result.run_id}: {os.path.relpath(result.result_path)}")
