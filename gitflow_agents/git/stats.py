"""Git statistics the tool computes itself (never the agent): per file and in total, against the
merge-base, with new untracked files, binary files and renames, run artifacts left out.

The value goes three places: the implementation report's ``## Modified files`` section (the
``GIT_STATS_MARKER`` line is replaced, ``render/git_stats.py``), ``result.json`` (``gitStats``)
and the history line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitflow_agents.base import spawn
from gitflow_agents.git import diffparse
from gitflow_agents.git import queries as git
from gitflow_agents.git.cmd import git_argv, git_env, run_git
from gitflow_agents.git.diffparse import Commit, FileStat
from gitflow_agents.git.queries import STATS_FLAGS


@contextlib.contextmanager
def _temporary_index(index: Path) -> Iterator[dict[str, str]]:
    """A copy of ``index`` in a temporary file; yields the git environment pointing at it."""
    fd, name = tempfile.mkstemp(prefix="gitflow-agents-index.")
    os.close(fd)
    path = Path(name)
    try:
        if index.exists():
            shutil.copyfile(index, path)
        else:
            path.unlink()
        yield {**git_env(), "GIT_INDEX_FILE": str(path)}
    finally:
        path.unlink(missing_ok=True)


def diff_stats(
    root: Path, base: str, head: str | None = None, *, exclude: Sequence[str] = ()
) -> tuple[FileStat, ...]:
    """Per-file statistics from ``base`` to ``head``, renames detected, binaries marked.

    With ``head`` None the work tree of ``root`` is compared, *including untracked files*
    (ignored ones excepted): in a throw-away copy of the index they are added as intent-to-add
    (``git add -N``: no blob is written), so ``git diff <base>`` against the work tree shows them
    as new; the real index is never touched. Paths under ``exclude`` (run artifacts) are left
    out. One git call for a range; three for the work tree (index path, ``add -N``, ``diff``).
    """
    specs = tuple(f":(exclude){e.strip('/')}" for e in exclude)
    # --no-abbrev: git need not look for the shortest unique id of every blob
    args = ("diff", *STATS_FLAGS, "--raw", "--no-abbrev", "--numstat", "-z", base)
    if head is not None:
        # porcelain diff, not diff-tree: diff-tree reads every file of the work tree that
        # matches a blob instead of the pack (3x slower on a packed 10,000-file change, 20 %
        # faster when the objects are loose; benchmarks/review_speed.py)
        out = run_git(root, *args, head, "--", *specs).stdout
    else:
        index = Path(run_git(root, "rev-parse", "--git-path", "index").stdout.strip())
        index = index if index.is_absolute() else root / index
        with _temporary_index(index) as env:
            git = git_argv(root)
            spawn.run((*git, "add", "--intent-to-add", "--", "."), env=env)
            out = spawn.run((*git, *args, "--", *specs), env=env).stdout
    return diffparse.keep_paths(diffparse.parse_raw_numstat(out), exclude)


# The line the implementation report carries under "## Modified files"; after the agent
# finishes, the tool replaces it with the git statistics it computed (never the agent).
GIT_STATS_MARKER = "<!-- gitflow-agents:git-stats -->"


@dataclass(frozen=True)
class GitStats:
    base_sha: str  # a merge resolution's (``resolution``): the tree of git's automatic merge
    head_sha: str | None  # None: the work tree (uncommitted and untracked files included)
    files: tuple[FileStat, ...]
    commits: tuple[Commit, ...] = ()
    against: str = ""  # what a merge resolution's figures are counted against (for its report)

    @property
    def added(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def deleted(self) -> int:
        return sum(f.deleted or 0 for f in self.files)

    @property
    def new_files(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files if f.status == "A")

    @property
    def changed_files(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files)

    def to_json(self) -> dict[str, Any]:
        return {
            "baseSha": self.base_sha,
            "headSha": self.head_sha,
            "filesChanged": len(self.files),
            "insertions": self.added,
            "deletions": self.deleted,
            "newFiles": list(self.new_files),
            "binaryFiles": [f.path for f in self.files if f.binary],
            "files": [
                {
                    "path": f.path,
                    "status": f.status,
                    "oldPath": f.old_path,
                    "added": f.added,
                    "deleted": f.deleted,
                    "binary": f.binary,
                    "gitlink": f.gitlink,
                }
                for f in self.files
            ],
            "commits": [{"sha": c.sha, "subject": c.subject} for c in self.commits],
        }


def compute(
    root: Path, base: str, head: str | None = None, *, exclude: tuple[str, ...] = ()
) -> GitStats:
    """Statistics of ``base``..``head`` (``head`` None: ``root``'s work tree incl. untracked files).

    ``exclude``: path prefixes left out (the flow directory with the run artifacts). For a range
    the commit list is read while the diff runs (two git processes at once, not one after the
    other): the whole costs about one ``git diff --numstat``.
    """
    if head is None:
        return GitStats(base, None, diff_stats(root, base, None, exclude=exclude))
    with ThreadPoolExecutor(max_workers=1) as pool:
        commits = pool.submit(git.commits_between, root, base, head)
        files = diff_stats(root, base, head, exclude=exclude)
        return GitStats(base, head, files, commits.result())


AUTOMATIC_MERGE = "git's automatic merge of its parents, conflict markers included"
BOTH_PARENTS = "its first parent, the files it changed against both parents only"


def compute_resolution(
    root: Path, start: str, head: str, *, exclude: tuple[str, ...] = ()
) -> GitStats:
    """A merge fixer's own work: what the merge commit ``head`` changed against git's automatic
    merge of its two parents, conflict markers included (the idea of ``git log
    --remerge-diff``): the resolution, not what the merged branch brought in.

    The automatic merge is ``git merge-tree --write-tree`` (git 2.38+: no work tree, no index;
    its tree object is ``base_sha``). A git without it gets the files the merge commit changed
    against both parents (a combined diff's, ``git diff -c``), counted against the first. ``head``
    no two-parent merge (the fixer did not complete it): ``compute(start, head)``.
    """
    parents = git.parents(root, head)
    if len(parents) != 2:
        return compute(root, start, head, exclude=exclude)
    first, second = parents
    commit = diffparse.parse_commits(
        run_git(root, "log", "-1", "-z", "--format=%H%x00%s", head, "--").stdout
    )
    merged = run_git(root, "merge-tree", "--write-tree", first, second, check=False)
    tree = merged.stdout.split("\n", 1)[0].strip()
    if merged.returncode in (0, 1) and tree:  # 1: it conflicts, as the fixer's merge did
        files = diff_stats(root, tree, head, exclude=exclude)
        return GitStats(tree, head, files, commit, AUTOMATIC_MERGE)
    theirs = {f.path for f in diff_stats(root, second, head, exclude=exclude)}
    files = tuple(f for f in diff_stats(root, first, head, exclude=exclude) if f.path in theirs)
    return GitStats(first, head, files, commit, BOTH_PARENTS)


def summary(stats: GitStats) -> str:
    """``3 files changed, +10 -2, 1 new, 1 binary, 2 commits`` (one line, for humans and history)."""
    n = len(stats.files)
    parts = [f"{n} file{'s' if n != 1 else ''} changed", f"+{stats.added} -{stats.deleted}"]
    new = len(stats.new_files)
    if new:
        parts.append(f"{new} new")
    binary = sum(1 for f in stats.files if f.binary)
    if binary:
        parts.append(f"{binary} binary")
    if stats.head_sha is not None:
        c = len(stats.commits)
        parts.append(f"{c} commit{'s' if c != 1 else ''}")
    return ", ".join(parts)
