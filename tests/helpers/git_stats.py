"""A sample of git statistics (two commits, an added, a changed, a binary and a renamed file),
for the statistics' tests and their markdown's."""

from __future__ import annotations

from gitflow_agents.git.diffparse import Commit, FileStat
from gitflow_agents.git.stats import GitStats

STATS = GitStats(
    base_sha="a" * 40,
    head_sha="b" * 40,
    files=(
        FileStat("src/new.py", "A", None, 10, 0),
        FileStat("README.md", "M", None, 2, 1),
        FileStat("logo.png", "A", None, None, None),
        FileStat("docs/new.md", "R", "docs/old.md", 0, 0),
    ),
    commits=(Commit("c" * 40, "[plan] Step 1: Add"), Commit("d" * 40, "[plan] Step 1 (fix 1)")),
)
