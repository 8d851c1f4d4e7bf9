"""The arguments of ``gitflow-agents plan`` and its subcommands (``show``, ``lint``, ``matrix``,
``tend``), built only when ``plan`` is the command (cli.py)."""

from __future__ import annotations

import argparse

from gitflow_agents.commands.options import PLAN_ISSUE_HELP, positive_int


def add_plan_subcommands(p: argparse.ArgumentParser) -> None:
    """``plan show``, ``plan lint``, ``plan matrix`` and ``plan tend`` under ``p``."""
    plan_sub = p.add_subparsers(
        dest="plan_command", metavar="{show,lint,matrix,tend}", required=True
    )
    show = plan_sub.add_parser(
        "show", help="title and steps with their status (--json: also the overview)"
    )
    show.add_argument("plan", help="path to the spec plan (markdown)")
    show.add_argument("--json", action="store_true", help="print JSON instead of a table")
    formats = ("table", "json", "mermaid")
    show.add_argument("--format", choices=formats, help="mermaid: the steps' graph, by state")
    show.add_argument("--flow-type", help="config layer .flow/<flow-type>/ to read spec_plan from")
    lint = plan_sub.add_parser("lint", help="report every problem with file:line (exit 2 if any)")
    lint.add_argument("plans", nargs="+", help="spec plan files")
    lint.add_argument("--flow-type", help="config layer .flow/<flow-type>/ to read spec_plan from")
    matrix = plan_sub.add_parser("matrix", help="the steps as a GitHub Actions matrix (JSON)")
    matrix.add_argument("plan", help="path to the spec plan (markdown)")
    matrix.add_argument("--pending-only", action="store_true", help="leave out steps marked done")
    matrix.add_argument(
        "--ready",
        action="store_true",
        help="only the steps that can start now, as origin has it: not done on the target, "
        "no step branch on origin, every dependency done on the target",
    )
    matrix.add_argument(
        "--target",
        help="with --ready: the branch steps merge into (default: chain.target, else "
        "default_branch)",
    )
    matrix.add_argument(
        "--branch-pattern",
        help="with --ready: the step branch name (default: chain.branch_pattern, "
        "agents/{plan_name}/step-{step})",
    )
    cap = "at most N steps in flight (started ones count)"
    matrix.add_argument("--max-parallel", type=positive_int, metavar="N", help=f"--ready: {cap}")
    matrix.add_argument(
        "--flow-type", help="config layer .flow/<flow-type>/ to read spec_plan from"
    )
    _add_tend(plan_sub)


def _add_tend(plan_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tend = plan_sub.add_parser(
        "tend",
        help="keep the plan's open step pull requests mergeable and reviewed: merge the target "
        "into a behind one (the fixer resolves conflicts), review the new head, set its status",
    )
    tend.add_argument("plan", help="path to the spec plan (markdown)")
    tend.add_argument(
        "--auto-merge",
        choices=("squash", "merge", "rebase"),
        help="enable GitHub auto-merge again on each head the tend approved",
    )
    tend.add_argument("--plan-issue", type=positive_int, metavar="N", help=PLAN_ISSUE_HELP)
    from gitflow_agents.commands.run import add_chain_arguments

    add_chain_arguments(tend)
