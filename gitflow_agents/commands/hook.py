"""``gitflow-agents hook gate``: the fast pre-push gate.

Refuses a push unless the pushed commit (``PRE_COMMIT_TO_REF``, else the given REV, else HEAD)
carries a recorded approval for exactly that commit. No agent, no network, two git calls (resolve the commit, read its note).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gitflow_agents import git
from gitflow_agents.errors import ExitCode, UsageError


def gate(rev: str | None) -> int:
    from gitflow_agents.reviewer import approval_status

    # git finds the repository from any subdirectory: skip the separate root lookup (speed).
    root = Path.cwd()
    target = rev or os.environ.get("PRE_COMMIT_TO_REF") or "HEAD"
    try:
        sha = git.rev_parse(root, target)
    except UsageError:
        git.repo_root(root)  # the clearer error when this is not a repository at all
        raise
    approved, reason = approval_status(root, sha)
    if approved:
        print(f"agent-review-gate: {reason}")
        return ExitCode.OK
    print(f"agent-review-gate: push refused: {reason}", file=sys.stderr)
    return ExitCode.REVISE


def run(args: argparse.Namespace) -> int:
    return gate(args.rev)
