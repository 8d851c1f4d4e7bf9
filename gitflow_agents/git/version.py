"""The git a command needs, asked only once git has refused a call (README, "Requirements").

A git older than a feature the tool uses does not say so: a git before 2.38 answers ``git
merge-tree --write-tree A B`` with ``fatal: unknown rev --write-tree`` (its old three-tree
mode takes the option for a revision), and one before 2.36 answers ``git worktree list -z``
with its usage text. So where a call fails in a way a conflict or a missing object does not
explain, ``require`` asks ``git version`` and, when the git found is older than the one the
feature needs, stops the command with one line naming both (:class:`GitTooOld`, exit 2 as a
missing git). Nothing is asked at start-up or on the everyday path: only a call that failed
pays the one extra git process.
"""

from __future__ import annotations

from gitflow_agents.base.errors import GitError
from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.git.cmd import run_git

if TYPE_CHECKING:
    from _typeshed import StrPath

MERGE_TREE = ("merge-tree --write-tree", (2, 38))
"""A merge computed without a work tree (``--name-only``, ``--no-messages`` and ``-z`` came with
it): landing with ``--merge merge``, the conflict listing of ``plan tend``, the rebase check of
``--auto-merge rebase``, a merge queue's reuse of an approval."""
WORKTREE_LIST = ("worktree list --porcelain -z", (2, 36))
"""Every work tree and its branch, NUL-separated: every command that makes or finds the tool's
work trees (``run``, ``flow implement|fix``, ``plan tend``, ``worktrees``, ``gc``, ``send`` to an
agent that worked in one)."""


class GitTooOld(GitError):
    """The installed git is older than a feature the command uses (exit 2, as a git that is
    not installed: the command cannot run here until it is upgraded)."""


def installed(root: StrPath) -> tuple[int, int, int] | None:
    """The version of the git the tool runs (``git version``: ``2.34.1``, ``2.39.5 (Apple
    Git-154)``, ``2.45.1.windows.1``); None when it does not say one."""
    result = run_git(root, "version", check=False)
    words = result.stdout.split() if result.returncode == 0 else []
    if words[:2] != ["git", "version"] or len(words) < 3:
        return None
    numbers = [part for part in words[2].split(".")[:3] if part.isdigit()]
    if len(numbers) < 2:
        return None
    return int(numbers[0]), int(numbers[1]), int(numbers[2]) if len(numbers) > 2 else 0


def require(root: StrPath, feature: tuple[str, tuple[int, int]], purpose: str) -> None:
    """Raise :class:`GitTooOld` when the git found is older than ``feature`` (``MERGE_TREE``,
    ``WORKTREE_LIST``) needs for ``purpose``; return when it is not (or says no version): the
    caller then reports git's own failure."""
    option, needed = feature
    found = installed(root)
    if found is None or found[:2] >= needed:
        return
    raise GitTooOld(
        f"{purpose} needs git {needed[0]}.{needed[1]} or newer (`git {option}`); this is git "
        f'{".".join(map(str, found))}: install a newer git (README, "Requirements")'
    )
