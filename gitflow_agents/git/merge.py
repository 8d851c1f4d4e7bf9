"""Landing a step: advance the local target branch to include a commit, never forced
(``merge_into``): a fast-forward, or a merge commit written without a work tree (``git
merge-tree``), and a checked-out target's work tree moved with it. Re-exported by ``queries``."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from gitflow_agents.base.errors import GitError, UsageError
from gitflow_agents.git.cmd import failure as _fail
from gitflow_agents.git.cmd import run_git
from gitflow_agents.git.queries import is_ancestor
from gitflow_agents.git.version import MERGE_TREE, require
from gitflow_agents.git.worktree import branch_sha, worktree_of_branch


class MergeResult(NamedTuple):
    sha: str  # the target's new tip
    previous: str  # the target's tip before
    kind: str  # "fast-forward" or "merge-commit"


def merge_into(root: Path, target: str, source_sha: str, *, mode: str, message: str) -> MergeResult:
    """Advance local branch ``target`` to include ``source_sha``.

    ``mode`` "ff": fast-forward only (GitError when ``target`` has moved on); "merge": always a
    merge commit (GitError on conflicts). The new tip is computed without any work tree (``git
    merge-tree``); when ``target`` is checked out somewhere, that work tree is fast-forwarded
    with ``git merge --ff-only``, which refuses rather than overwrite uncommitted changes. Never
    a forced update: the ref moves only from the tip it was read at.
    """
    previous = branch_sha(root, target)
    if previous is None:
        raise GitError(f"target branch {target} does not exist")
    if mode == "ff":
        if not is_ancestor(root, previous, source_sha):
            raise GitError(
                f"cannot fast-forward {target}: it has moved on since the step branch was "
                "created (use merge mode 'merge')"
            )
        new, kind = source_sha, "fast-forward"
    elif mode == "merge":
        result = run_git(root, "merge-tree", "--write-tree", previous, source_sha, check=False)
        if result.returncode == 1:  # git's answer for a merge that conflicts
            raise GitError(f"merging into {target} would conflict: {result.stdout.strip()}")
        if result.returncode != 0:
            require(
                root, MERGE_TREE, f"landing on {target} with a merge commit (merge mode 'merge')"
            )
            raise _fail(result, f"cannot merge {source_sha[:12]} into {target}")
        tree = result.stdout.split()[0]
        new = run_git(
            root,
            "commit-tree",
            tree,
            "-p",
            previous,
            "-p",
            source_sha,
            "-F",
            "-",
            input=message.rstrip("\n") + "\n",
        ).stdout.strip()
        kind = "merge-commit"
    else:
        raise UsageError(f"unknown merge mode {mode!r} (expected ff or merge)")
    checked_out = worktree_of_branch(root, target)
    if checked_out is not None:
        result = run_git(checked_out, "merge", "--ff-only", "--quiet", new, check=False)
        if result.returncode != 0:
            detail = " ".join(line.strip() for line in result.stderr.splitlines()[:4])
            raise GitError(f"cannot update {target} in {checked_out}: {detail}")
    else:
        result = run_git(
            root,
            "update-ref",
            "-m",
            f"gitflow-agents: {kind}",
            f"refs/heads/{target}",
            new,
            previous,
            check=False,
        )
        if result.returncode != 0:
            raise _fail(result, f"cannot update {target}")
    return MergeResult(new, previous, kind)


_SCRATCH_IDENTITY = {
    f"GIT_{who}_{what}": value
    for who in ("AUTHOR", "COMMITTER")
    for what, value in (("NAME", "gitflow-agents"), ("EMAIL", "gitflow-agents@localhost"))
}
"""For a commit object nothing references (a checkout without ``user.name`` can write it)."""


class Unreplayable(NamedTuple):
    """A merge commit a replay of its branch's other commits would not reproduce."""

    sha: str
    why: str  # "conflict": its parents conflict; "edited": they merge cleanly, to another tree


def unreplayable_merges(root: Path, base: str, head: str) -> tuple[Unreplayable, ...]:
    """The merge commits of ``base..head`` (newest first) whose tree is not the clean automatic
    merge of their parents (``git merge-tree``, the ``ort`` merge ``git merge`` makes): one whose
    parents conflict holds a resolution, and one whose parents merge cleanly but whose tree
    differs was edited by hand after merging (an "evil merge"). GitHub's rebase-merge replays
    only the non-merge commits, and refuses a branch where that gives another result than a
    regular merge ("This branch cannot be rebased safely"): both kinds, since neither the
    resolution nor the edits are in a commit it replays. An octopus merge is merged parent by
    parent."""
    out = run_git(
        root, "log", "--merges", "--no-color", "--format=%H %T %P", f"{base}..{head}", "--"
    ).stdout
    found = []
    for line in out.splitlines():
        sha, tree, first, *others = line.split()
        clean = _clean_merge_tree(root, first, others)
        if clean is None:
            found.append(Unreplayable(sha, "conflict"))
        elif clean != tree:
            found.append(Unreplayable(sha, "edited"))
    return tuple(found)


def _clean_merge_tree(root: Path, first: str, others: list[str]) -> str | None:
    """The tree of merging ``others`` into ``first`` one by one, or None when one conflicts.
    The in-between commits of an octopus are written as loose objects, never referenced."""
    ours, tree = first, ""
    for index, theirs in enumerate(others):
        result = run_git(
            root, "merge-tree", "--write-tree", "--no-messages", ours, theirs, check=False
        )
        if result.returncode == 1:
            return None
        if result.returncode != 0:
            require(root, MERGE_TREE, "checking that a rebase would reproduce its merge commits")
            raise _fail(result, f"cannot merge {theirs[:12]} into {ours[:12]}")
        tree = result.stdout.split()[0]
        if index + 1 < len(others):
            ours = run_git(
                root,
                "commit-tree",
                tree,
                "-p",
                ours,
                "-p",
                theirs,
                "-m",
                "octopus step",
                extra_env=_SCRATCH_IDENTITY,
            ).stdout.strip()
    return tree
