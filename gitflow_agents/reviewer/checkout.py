"""An agent reviewer in the user's own checkout cannot move its branch (``git agent-review
--agent``): what HEAD names (the branch checked out, or a detached commit) and the index are
taken before the reviewer starts; a reviewer that committed (or checked out something else, or
staged changes) has that undone when it ends, and its review is not approved, as a chain's round is not when a
reviewer commits (docs/review.md, "Reviewing with a configured agent").

Only git's refs and index are put back: the files of the work tree are the user's, so what the
reviewer changed in them is left for the user to see (``git status``), never discarded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gitflow_agents.git.cmd import run_git
from gitflow_agents.git.queries import head_commit


@dataclass(frozen=True)
class _Head:
    ref: str | None  # the branch HEAD names (refs/heads/...), None when detached
    sha: str | None  # its commit; None before the first commit
    index: str | None  # the index as a tree; None when it cannot be written (a conflict)


class Guard:
    """What :func:`kept_head` found when the reviewer ended: ``undone`` says what it put back
    ("" when the reviewer moved nothing)."""

    undone = ""


@contextlib.contextmanager
def kept_head(root: Path) -> Iterator[Guard]:
    """Run the block (the reviewer) with HEAD, its branch and the index of ``root`` put back as
    they were when it ends, however it ends; the guard says what was undone."""
    before = _head(root)
    guard = Guard()
    try:
        yield guard
    finally:
        guard.undone = _put_back(root, before)


def _head(root: Path) -> _Head:
    ref = run_git(root, "symbolic-ref", "-q", "HEAD", check=False).stdout.strip() or None
    index = run_git(root, "write-tree", check=False)
    tree = index.stdout.strip() if index.returncode == 0 else None
    return _Head(ref, head_commit(root), tree or None)


def _put_back(root: Path, before: _Head) -> str:
    """Undo what moved HEAD since ``before``: the branch back at its commit (only if it is
    still where the reviewer left it), HEAD naming it again, the index as it was. What it did,
    as a gate reason; "" when nothing moved."""
    ref = run_git(root, "symbolic-ref", "-q", "HEAD", check=False).stdout.strip() or None
    now = head_commit(root)
    if (ref, now) == (before.ref, before.sha):
        return _put_back_index(root, before.index)
    if before.ref is not None:
        _reset_ref(root, before.ref, before.sha)
        if ref != before.ref:
            run_git(root, "symbolic-ref", "HEAD", before.ref, check=False)
    elif before.sha is not None:
        run_git(root, "update-ref", "--no-deref", "HEAD", before.sha, check=False)
    if before.index is not None:
        run_git(root, "read-tree", before.index, check=False)
    name = before.ref.removeprefix("refs/heads/") if before.ref else "HEAD"
    did = (
        f"committed ({name} moved to {(now or '')[:12]})"
        if ref == before.ref
        else f"checked out {(ref or '').removeprefix('refs/heads/') or (now or '')[:12]}"
    )
    return (
        f"the reviewer {did} during the review; undone: {name} is back at "
        f"{(before.sha or 'no commit')[:12]}, the index as it was (what it changed in files "
        "stays in the work tree: git status)"
    )


def _put_back_index(root: Path, tree: str | None) -> str:
    """The index back at ``tree`` when the reviewer staged something without committing (a
    ``git add`` before a commit that failed, e.g. one the hook refused inside an agent's run:
    docs/review.md, "pre-commit hooks"); what it did, as a gate reason; "" when the index is
    as it was. A commit hook's review would otherwise let git commit what the reviewer staged:
    git reads the index again after the pre-commit hook."""
    if tree is None:
        return ""
    now = run_git(root, "write-tree", check=False)
    if now.returncode == 0 and now.stdout.strip() == tree:
        return ""
    run_git(root, "read-tree", tree, check=False)
    return (
        "the reviewer staged changes during the review; undone: the index as it was (what it "
        "changed in files stays in the work tree: git status)"
    )


def _reset_ref(root: Path, ref: str, sha: str | None) -> None:
    """``ref`` back at ``sha`` (deleted when it had no commit), only from where it is now: a
    ref someone else moved meanwhile is left alone."""
    tip = run_git(root, "rev-parse", "-q", "--verify", ref, check=False).stdout.strip()
    if tip == (sha or ""):
        return
    if sha is None:
        run_git(root, "update-ref", "-d", ref, tip, check=False)
    else:
        run_git(root, "update-ref", ref, sha, *([tip] if tip else []), check=False)
