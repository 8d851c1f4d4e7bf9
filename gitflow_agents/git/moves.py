"""Where a file went: its new path after a rename.

A plan step may move or delete the plan it runs from (``git mv specs/p.md docs/p.md``): the
landing says so instead of writing ✅ into a file that is gone (``chain/land.py``).
"""

from __future__ import annotations

from gitflow_agents.base.records import TYPE_CHECKING
from gitflow_agents.git.cmd import run_git
from gitflow_agents.git.queries import DIFF_FLAGS

if TYPE_CHECKING:
    from _typeshed import StrPath


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
