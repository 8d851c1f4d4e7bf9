"""Where a file went: the commit that moved or deleted it, and its new path after a rename.

A plan step may move or delete the plan it runs from (``git mv specs/p.md docs/p.md``): the
landing says so instead of writing ✅ into a file that is gone (``chain/land.py``), and ``run``
names the commit and the new path when the plan it is given is no longer there.
"""

from __future__ import annotations

import functools

from gitflow_agents.base.records import TYPE_CHECKING, NamedTuple
from gitflow_agents.git.cmd import run_git
from gitflow_agents.git.queries import DIFF_FLAGS, literal_pathspecs, show_file

if TYPE_CHECKING:
    from _typeshed import StrPath


class Gone(NamedTuple):
    """The commit that took a file away, and where the file went."""

    sha: str
    subject: str
    moved_to: str | None  # its new path when git sees a rename; None: deleted

    def says(self, rev: str) -> str:
        """``main's commit 0d9d3647f7c0 ([p] Step 1: One) moved it to docs/p.md``."""
        what = f"moved it to {self.moved_to}" if self.moved_to else "deleted it"
        return f"{rev}'s commit {self.sha[:12]} ({self.subject}) {what}"


def renamed_to(root: StrPath, base: str, head: str, path: str) -> str | None:
    """Where ``head`` has the file ``path`` of ``base`` when git sees it renamed (``-M``);
    None when it was deleted, or is not renamed."""
    out = run_git(root, "diff", *DIFF_FLAGS, "--name-status", "-z", base, head, "--").stdout
    fields = out.split("\0")
    index = 0
    while index + 1 < len(fields):
        status = fields[index]
        if status[:1] in ("R", "C"):  # a status, then the old and the new path
            if status[:1] == "R" and fields[index + 1] == path:
                return fields[index + 2]
            index += 3
        else:
            index += 2
    return None


def gone_in(root: StrPath, rev: str, path: str) -> Gone | None:
    """The newest commit in ``rev``'s history that removed ``path`` (moved or deleted it); None
    when ``rev`` has the file, or no commit of its history ever removed it."""
    if show_file(root, rev, path) is not None:
        return None
    log = run_git(
        root,
        "log",
        "-1",
        "-z",
        "--diff-filter=D",
        "--format=%H%x00%s",
        rev,
        "--",
        *literal_pathspecs((path,)),
        check=False,
    )
    sha, _, subject = log.stdout.strip("\0\n").partition("\0")
    if log.returncode != 0 or not sha:
        return None
    return Gone(sha, subject.strip(), renamed_to(root, f"{sha}^", sha, path))


def former_paths(root: StrPath, sha: str, path: str) -> tuple[str, ...]:
    """The paths the file ``path`` had before it was renamed, newest first, as git follows it
    through the history of commit ``sha`` (``git log --follow``: exact and similar renames);
    () when it never was renamed, or ``sha`` does not have it. A commit's history never
    changes: the answer is kept."""
    return _former_paths(str(root), sha, path)


@functools.lru_cache(maxsize=64)
def _former_paths(root: str, sha: str, path: str) -> tuple[str, ...]:
    log = run_git(
        root,
        "log",
        "--follow",
        "-M",
        "--diff-filter=R",
        "--name-status",
        "--format=",
        "-z",
        sha,
        "--",
        *literal_pathspecs((path,)),
        check=False,
    )
    if log.returncode != 0:
        return ()
    fields = [field.lstrip("\n") for field in log.stdout.split("\0")]
    found: list[str] = []
    index = 0
    while index + 2 < len(fields):
        status, old = fields[index], fields[index + 1]
        if status[:1] not in ("R", "C"):  # a status of two fields, none with --diff-filter=R
            index += 2
            continue
        if status[:1] == "R" and old not in found:
            found.append(old)
        index += 3
    return tuple(found)
