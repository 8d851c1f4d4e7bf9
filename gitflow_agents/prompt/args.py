"""The prompt-input options of ``prompt`` and ``spawn`` read into one PromptRequest.

Both commands take the same options (``cli._prompt_input_arguments``: ``--plan``, ``--step``,
``--task``, ``--after``, ``--preamble``, ``--agent-name``, ``--flow``...), and ``prompt`` prints
exactly the system prompt ``spawn`` would hand the agent, so both build it here.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gitflow_agents.assets import load_manifest
from gitflow_agents.base.bounded import inside_root, outside_root
from gitflow_agents.base.errors import PlanError, UsageError
from gitflow_agents.config import load_flow_config, project_root
from gitflow_agents.plan import parse_plan
from gitflow_agents.plan.model import shown_path
from gitflow_agents.prompt import PromptRequest
from gitflow_agents.prompt.agent import resolve_agent
from gitflow_agents.prompt.paths import check_after, check_name, default_flow_name


def prompt_request(args: argparse.Namespace, command: str, *, flow: str | None) -> PromptRequest:
    """The request ``args`` describe, for the project around the current directory.

    ``command`` prefixes the messages of bad input (exit 2); ``flow`` is the ``--flow`` value
    (its option's ``dest`` differs between the commands). Needs ``--task`` or ``--plan`` with
    ``--step``; ``--task @path`` reads the task from that file.
    """
    if args.plan is None and args.task is None:
        raise UsageError(f"{command}: give --plan with --step, or --task")
    if args.plan is not None and args.step is None and args.task is None:
        raise UsageError(f"{command}: --plan needs --step (or give --task)")
    root = project_root(Path.cwd())
    config = load_flow_config(root, args.flow_type, args.variant)
    plan = parse_plan(plan_path(root, args.plan), config.spec_plan) if args.plan else None
    request = PromptRequest(
        root=root,
        config=config,
        agent=args.agent,
        agent_id=args.agent_name,
        flow_name=flow,
        step=args.step,
        plan=plan,
        task=read_task(args.task),
        after=split_after(args.after),
        preamble=args.preamble,
        manifest=load_manifest(root),
    )
    if request.after:  # every report it is pointed to is there (the agent's own report name)
        check_after(
            root,
            config.flow_dir,
            check_name(default_flow_name(request), "flow name"),
            request.after,
            resolve_agent(request).workflow.success_filename,
            command,
        )
    return request


def plan_path(root: Path, given: str) -> Path:
    """The plan ``--plan`` names, absolute; PlanError (exit 2) for a plan inside the project
    that a symlink leads out of it: its text goes into the prompt, and what the tool reads from
    a project into a prompt must be the project's own (docs/security.md; ``run`` refuses such a
    plan too). A plan named by a path outside the project is the user's choice and is read."""
    path = Path(os.path.abspath(given))  # noqa: PTH100 - ``..`` folded, symlinks kept as seen
    if path.is_relative_to(root.absolute()) and inside_root(root, path) is None:
        raise PlanError(outside_root(path), path=shown_path(path))
    return path


def read_task(task: str | None) -> str | None:
    """``--task @path`` reads the task from a file (the Flow CLI ``@file`` convention)."""
    if task is None or not task.startswith("@"):
        return task
    path = Path(task[1:])
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--task: {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--task: {path}: cannot read: {exc}") from None


def split_after(after: str | None) -> tuple[str, ...]:
    """``--after a, b``: the agent ids, in order; UsageError when it names none."""
    if after is None:
        return ()
    names = tuple(name.strip() for name in after.split(",") if name.strip())
    if not names:
        raise UsageError("--after: give one or more agent ids, comma separated")
    return names
