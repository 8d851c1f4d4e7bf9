"""``gitflow-agents hook gate``: the fast pre-push gate.

Refuses a push unless the pushed commit (the given REV, else the one pre-commit names:
``PRE_COMMIT_TO_REF``, or ``PRE_COMMIT_LOCAL_BRANCH`` for a ref whose whole history is new to the
remote; else, outside a push, HEAD) carries a recorded approval for exactly that commit. A push
that names no pushed commit is refused, never taken for HEAD's. No agent, no network, one git call (the
commit and its note together); imports only ``gitcmd`` and the light ``reviewer`` package.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gitflow_agents.base.errors import ExitCode


def gate(rev: str | None) -> int:
    from gitflow_agents.git.cmd import commit_note, pushed_commit
    from gitflow_agents.reviewer import note_approval

    # git finds the repository from any subdirectory: no separate root lookup (speed).
    target = rev or pushed_commit(os.environ) or "HEAD"
    sha, note = commit_note(Path.cwd(), target)
    approved, reason = note_approval(sha, note)
    if approved:
        print(f"agent-review-gate: {reason}")
        return ExitCode.OK
    print(f"agent-review-gate: push refused: {reason}", file=sys.stderr)
    return ExitCode.REVISE


def run(args: argparse.Namespace) -> int:
    return gate(args.rev)
