"""``gitflow-agents hook gate``: the fast pre-push gate.

Refuses a push unless the pushed commit (the given REV, else the one pre-commit names:
``PRE_COMMIT_TO_REF``, or ``PRE_COMMIT_LOCAL_BRANCH`` for a ref whose whole history is new to
the remote; else, outside a push, HEAD) carries a recorded approval for exactly that commit. A
push that names no pushed commit is refused, never taken for HEAD's. No agent, no network, one
git call (the commit and its note together); imports only ``gitcmd`` and the light ``reviewer``
package.

pre-commit tells its hooks about one pushed ref only (the first with new commits), so a push of
several refs is gated by its first. ``--pre-push REMOTE URL`` is the gate as git's own pre-push
hook, which git hands every pushed ref on stdin: each is gated.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gitflow_agents.base.errors import ExitCode, UsageError


def gate(rev: str | None) -> int:
    from gitflow_agents.git.cmd import pushed_commit

    # git finds the repository from any subdirectory: no separate root lookup (speed).
    return _judge(rev or pushed_commit(os.environ) or "HEAD")


def _judge(rev: str, label: str = "") -> int:
    """Whether commit ``rev`` carries its approval, said on one line (``label``: the pushed
    ref it is, when a push has several): OK, else REVISE."""
    from gitflow_agents.git.cmd import commit_note
    from gitflow_agents.reviewer import note_approval

    sha, note = commit_note(Path.cwd(), rev)
    approved, reason = note_approval(sha, note)
    said = f"{label}: {reason}" if label else reason
    if approved:
        print(f"agent-review-gate: {said}")
        return ExitCode.OK
    print(f"agent-review-gate: push refused: {said}", file=sys.stderr)
    return ExitCode.REVISE


def pushed_refs(lines: str) -> list[tuple[str, str]]:
    """(local ref, local object) of each ref git's pre-push hook is told is pushed
    (``<local ref> SP <local object> SP <remote ref> SP <remote object>``, one a line), the
    deletions left out (their local object is all zeros). UsageError for a line that is not
    one: what cannot be read is not let through."""
    pushed = []
    for line in lines.splitlines():
        if not line.strip():
            continue
        parts = line.rsplit(" ", 3)  # a local ref may be an expression with spaces in it
        if len(parts) != 4 or not all(parts) or not all(_is_object(p) for p in parts[1::2]):
            raise UsageError(f"pre-push: cannot read git's line {line!r}, so the push is refused")
        local_ref, local_object = parts[0], parts[1]
        if local_object.strip("0"):
            pushed.append((local_ref, local_object))
    return pushed


def _is_object(word: str) -> bool:
    return len(word) in (40, 64) and all(c in "0123456789abcdef" for c in word)


def gate_pushed(remote: str, lines: str) -> int:
    """Gate every ref of a push as git's own pre-push hook is told of them: each pushed commit
    that brings the remote a commit it lacks (as pre-commit decides what is new: not reachable
    from ``refs/remotes/<remote>/``) needs its approval, a ref to a blob or a tree is refused
    (``_no_commit_is_new``); one refused refuses the push."""
    from gitflow_agents.git.cmd import require_repository, run_git

    root = Path.cwd()
    code = ExitCode.OK
    for ref, pushed in pushed_refs(lines):
        argv = ("rev-list", "--max-count=1", pushed, "--not", f"--remotes={remote}", "--")
        new = run_git(root, *argv, check=False)
        if new.returncode != 0:
            require_repository(root)
            raise UsageError(f"pre-push: {ref}: unknown object {pushed}, so the push is refused")
        if new.stdout.strip():
            approved = _judge(pushed, ref) == ExitCode.OK
        else:
            approved = _no_commit_is_new(root, ref, pushed, remote)
        if not approved:
            code = ExitCode.REVISE
    return code


def _no_commit_is_new(root: Path, ref: str, pushed: str, remote: str) -> bool:
    """For a pushed ref that brings ``remote`` no commit it lacks: whether it passes. A commit
    (or a tag of one) does, saying so. A ref to a blob or a tree (``git tag keyblob $(git
    hash-object -w secret.txt)``, or a tag of one) is refused: git pushes that object, no
    review looks at one (reviews are of commits), and it passed as "nothing new"."""
    from gitflow_agents.git.cmd import run_git

    kind = run_git(root, "cat-file", "-t", f"{pushed}^{{}}", check=False).stdout.strip()
    if kind == "commit":
        print(f"agent-review-gate: {ref}: nothing new for {remote}")
        return True
    print(
        f"agent-review-gate: push refused: {ref} points at a {kind or 'object git cannot read'}, "
        "not a commit: no review looks at what it brings (reviews are of commits)",
        file=sys.stderr,
    )
    return False


def _stdin_text() -> str:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a stdin without bytes (a test's, an embedding's)
        return sys.stdin.read() if sys.stdin is not None else ""
    return str(stream.read().decode("utf-8", "surrogateescape"))


def run(args: argparse.Namespace) -> int:
    pre_push = getattr(args, "pre_push", None)
    if pre_push is None:
        return gate(args.rev)
    if args.rev:
        raise UsageError("give either a REV or --pre-push REMOTE URL, not both")
    return gate_pushed(pre_push[0], _stdin_text())
