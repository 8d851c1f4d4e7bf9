"""``gitflow-agents hook gate``: the fast pre-push gate.

Refuses a push unless the pushed commit (``PRE_COMMIT_TO_REF``, else the given REV, else HEAD)
carries a recorded approval for exactly that commit. No agent, no network, two git calls.
"""

from __future__ import annotations

import argparse
import os
import sys

from gitflow_agents import git
from gitflow_agents.errors import ExitCode


def gate(rev: str | None) -> int:
    from gitflow_agents.reviewer import approval_status

    root = git.repo_root()
    target = rev or os.environ.get("PRE_COMMIT_TO_REF") or "HEAD"
    sha = git.rev_parse(root, target)
    approved, reason = approval_status(root, sha)
    if approved:
        print(f"agent-review-gate: {reason}")
        return ExitCode.OK
    print(f"agent-review-gate: push refused: {reason}", file=sys.stderr)
    return ExitCode.REVISE


def run(args: argparse.Namespace) -> int:
    return gate(args.rev)
