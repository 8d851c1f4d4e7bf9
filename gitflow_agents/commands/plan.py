"""``gitflow-agents plan show|lint|matrix|tend``: inspect and validate spec plans, print a
plan's steps as a GitHub Actions job matrix, and tend its open step pull requests."""

from __future__ import annotations

import argparse
import json
import os
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from gitflow_agents.base.errors import ConfigError, ExitCode, PlanError, UsageError
from gitflow_agents.plan import Plan, Problem, SpecPlanConfig, Step, lint_plan, parse_plan
from gitflow_agents.plan.deps import duplicates
from gitflow_agents.plan.model import DONE as DONE


def run(args: argparse.Namespace) -> int:
    if args.plan_command == "show":
        fmt = _show_format(args)
        if fmt == "mermaid":
            return show_mermaid(Path(args.plan), args.flow_type)
        return show(Path(args.plan), _spec_plan_config(args.flow_type), as_json=fmt == "json")
    if args.plan_command == "matrix":
        if args.ready:
            return ready_matrix(args)
        for option in ("target", "branch_pattern", "max_parallel"):
            if getattr(args, option) is not None:
                flag = "--" + option.replace("_", "-")
                raise UsageError(f"plan matrix: {flag} goes with --ready")
        return matrix(
            Path(args.plan), _spec_plan_config(args.flow_type), pending_only=args.pending_only
        )
    if args.plan_command == "tend":
        return tend(args)
    return lint([Path(p) for p in args.plans], args.flow_type)


def tend(args: argparse.Namespace) -> int:
    """``plan tend PLAN``: every open step pull request of the plan kept mergeable and
    reviewed (``github/pr/tend.py``; docs/github.md, "Tending open step pull requests")."""
    import contextlib

    from gitflow_agents.agent_run.launch import sigterm_as_interrupt
    from gitflow_agents.agents.installed import check_agents
    from gitflow_agents.commands.run import open_context, report
    from gitflow_agents.github.pr.tend import TendOptions, tend_plan

    ctx = open_context(args, plan_path=Path(args.plan))
    settings = ctx.settings  # the agents a tend may run: the reviewers, and the fixer
    check_agents(ctx.config, (*settings.reviewers, settings.fixer), cwd=ctx.root)
    with sigterm_as_interrupt(), contextlib.closing(ctx.hub):
        options = TendOptions(args.auto_merge, args.plan_issue)
        return tend_plan(ctx, options, lambda r: report(r, as_json=args.json))


def _spec_plan_config(flow_type: str | None) -> SpecPlanConfig:
    from gitflow_agents.config import load_flow_config, project_root

    return load_flow_config(project_root(), flow_type).spec_plan


def show(path: Path, config: SpecPlanConfig, *, as_json: bool) -> int:
    plan = parse_plan(path, config)
    if as_json:
        json.dump(plan_to_json(plan), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(plan_table(plan))
    return ExitCode.OK


def _show_format(args: argparse.Namespace) -> str:
    """table, json or mermaid: ``--json`` is ``--format json``."""
    fmt: str | None = getattr(args, "format", None)
    if args.json and fmt not in (None, "json"):
        raise UsageError(f"plan show: --json and --format {fmt} ask for two formats; give one")
    return "json" if args.json else fmt or "table"


def show_mermaid(path: Path, flow_type: str | None) -> int:
    """The plan's dependency graph as a Mermaid flowchart in a ```` ```mermaid ```` block, each
    step coloured by its state (``plan.glance.step_states``); running: a live run of this
    checkout holds the step's lock."""
    from gitflow_agents.config import load_flow_config, project_root
    from gitflow_agents.plan.glance import step_states
    from gitflow_agents.render.mermaid import PlanNode, fence_chart, plan_flowchart
    from gitflow_agents.runs.lock import steps_running

    root = project_root()
    config = load_flow_config(root, flow_type)
    plan = parse_plan(path, config.spec_plan)
    states = step_states(plan, steps_running(root, config.flow_dir, plan))
    nodes = [
        PlanNode(s.number, s.title, *states[s.number], depends_on=s.depends_on) for s in plan.steps
    ]
    sys.stdout.write(fence_chart(plan_flowchart(nodes)))
    return ExitCode.OK


def plan_to_json(plan: Plan) -> dict[str, object]:
    return {
        "path": str(plan.path),
        "name": plan.name,
        "title": plan.title,
        "overview": plan.overview,
        "steps": [
            {
                "number": s.number,
                "title": s.title,
                "status": s.status,
                "line": s.line,
                "dependsOn": list(s.depends_on),
                "touches": list(s.touches),
            }
            for s in plan.steps
        ],
    }


def matrix(path: Path, config: SpecPlanConfig, *, pending_only: bool) -> int:
    """One line of JSON on stdout: ``{"include": [{"step": 1, "title": "..."}, ...]}``."""
    plan = parse_plan(path, config)
    twice = duplicates(plan)
    if twice:  # each would be a job whose `run --step N` fails
        first = twice[0]
        raise PlanError(first.message, path=first.path, line=first.line)
    sys.stdout.write(json.dumps(plan_matrix(plan, pending_only=pending_only), ensure_ascii=False))
    sys.stdout.write("\n")
    return ExitCode.OK


def plan_matrix(plan: Plan, *, pending_only: bool = False) -> dict[str, list[dict[str, object]]]:
    """The plan's steps as a GitHub Actions matrix for ``fromJSON()`` (``--pending-only``: the
    steps not yet done, i.e. whose status does not start with the done mark)."""
    steps = [s for s in plan.steps if not (pending_only and s.status.strip().startswith(DONE))]
    return steps_matrix(steps)


def steps_matrix(steps: Sequence[Step]) -> dict[str, list[dict[str, object]]]:
    return {"include": [{"step": s.number, "title": s.title, "status": s.status} for s in steps]}


def ready_matrix(args: argparse.Namespace) -> int:
    """``plan matrix --ready``: only the steps that can start now, as origin has it
    (docs/spec-plans.md, Waves); a one-line summary on stderr."""
    from gitflow_agents.commands.run import settings_from
    from gitflow_agents.config import load_flow_config, repository_project
    from gitflow_agents.github.pr.lease import claim_checker
    from gitflow_agents.plan.waves import ready_steps

    root = repository_project(Path.cwd())
    config = load_flow_config(root, args.flow_type)
    settings = settings_from(args, config)  # --target / --branch-pattern as `run` reads them
    wave = ready_steps(
        root,
        Path(args.plan).absolute(),
        config.spec_plan,
        target=settings.target or config.default_branch,
        branch_pattern=settings.branch_pattern,
        max_parallel=args.max_parallel,
        free=claim_checker(root, os.environ),  # a claim whose runner is gone is free
    )
    sys.stdout.write(json.dumps(steps_matrix(wave.ready), ensure_ascii=False))
    sys.stdout.write("\n")
    print(f"plan matrix --ready: {wave.summary()}", file=sys.stderr)
    for line in wave.held_lines():
        print(f"plan matrix --ready: {line}", file=sys.stderr)
    return ExitCode.OK


def plan_table(plan: Plan) -> str:
    """The plan's title, then one aligned row per step: number, status, line, the steps it
    depends on ("-": none), the globs it touches ("-": none declared), title."""
    header = ("STEP", "STATUS", "LINE", "DEPENDS ON", "TOUCHES", "TITLE")
    rows = [header] + [
        (str(s.number), s.status, str(s.line), _after(s), ", ".join(s.touches) or "-", s.title)
        for s in plan.steps
    ]
    widths = [max(display_width(row[i]) for row in rows) for i in range(5)]
    out = [f"{plan.title}  ({plan.path}, {len(plan.steps)} steps)", ""]
    for number, status, line, after, touches, title in rows:
        out.append(
            "  ".join(
                (
                    _pad(number, widths[0], right=number != "STEP"),
                    _pad(status, widths[1]),
                    _pad(line, widths[2], right=line != "LINE"),
                    _pad(after, widths[3]),
                    _pad(touches, widths[4]),
                    title,
                )
            ).rstrip()
        )
    return "\n".join(out) + "\n"


def _after(step: Step) -> str:
    return ",".join(str(n) for n in step.depends_on) or "-"


def _pad(text: str, width: int, *, right: bool = False) -> str:
    fill = " " * (width - display_width(text))
    return fill + text if right else text + fill


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide characters such as ✅ count as two."""
    width = 0
    for char in text:
        if unicodedata.combining(char) or char == "\ufe0f":
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def lint(paths: list[Path], flow_type: str | None) -> int:
    """Print every problem as ``path:line: message``; a count on stderr; exit 2 if any."""
    from gitflow_agents.config import config_problems, load_flow_config, project_root
    from gitflow_agents.config.where import tracked_copies

    root = project_root()
    # Every problem of every .flow/ layer, reported like plan problems; with any, the plans
    # are checked with the default spec_plan settings. Once it loads, what only git can tell
    # (a chain.copy_ignored entry git tracks, which run refuses).
    problems = config_problems(root, flow_type)
    config = SpecPlanConfig()
    if not problems:
        loaded = load_flow_config(root, flow_type)
        problems, config = tracked_copies(loaded, root), loaded.spec_plan
    lines = [str(Problem(e.path or ".flow", e.line, _config_message(e))) for e in problems]
    lines.extend(_manifest_problems(root))
    for path in paths:
        lines.extend(str(problem) for problem in lint_plan(path, config))
    for line in lines:
        print(line)
    files = f"{len(paths)} plan{'' if len(paths) == 1 else 's'}"
    if lines:
        count = f"{len(lines)} problem{'' if len(lines) == 1 else 's'}"
        print(f"{count} ({files} checked)", file=sys.stderr)
        return ExitCode.USAGE
    print(f"no problems ({files} checked)", file=sys.stderr)
    return ExitCode.OK


def _config_message(exc: ConfigError) -> str:
    return f"{exc.key}: {exc.detail}" if exc.key else exc.detail


def _manifest_problems(root: Path) -> list[str]:
    """``.agents-flow/`` manifest errors; each message already names its file and line."""
    from gitflow_agents.assets import load_manifest

    return [str(error) for error in load_manifest(root).errors]
