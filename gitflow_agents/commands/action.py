"""``gitflow-agents action``: the GitHub Action's entry point (see gitflow_agents/github/action/run.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gitflow_agents.findings import Severity


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.agent_run.launch import sigterm_as_interrupt
    from gitflow_agents.github.action.run import run_action
    from gitflow_agents.github.action.runner import Options, comment_author

    options = Options(
        agent=args.agent,
        threshold=Severity.parse(args.severity_threshold),
        fail_on=args.fail_on,
        max_inline=args.max_inline,
        max_file_size=args.max_file_size,
        review_drafts=args.review_drafts,
        allow_bots=args.allow_bots,
        comment_author=comment_author(args.comment_author),
        check_run=args.check_run,
        post_findings=Path(args.post_findings) if args.post_findings else None,
        fixer=args.fixer,
    )
    with sigterm_as_interrupt():  # a cancelled job: the Ctrl-C path (outputs, then exit 130)
        return run_action(os.environ, options)
