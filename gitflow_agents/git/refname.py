"""Git's rules for a branch name, as ``git check-ref-format --branch`` applies them
(git-check-ref-format(1)), read without a git process: loading ``.flow/`` checks
``chain.branch_pattern`` with them, and a test holds them to git's own answers. The run itself
still asks git (``worktree.check_branch_name``)."""

from __future__ import annotations

import re

# control characters, space, ~ ^ : (rule 4), ? * [ (rule 5), \ (rule 10)
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def branch_name_problem(name: str) -> str | None:
    """Why git refuses ``name`` as a branch name (``refs/heads/<name>``), or None when it takes
    it."""
    if not name:
        return "empty"
    if name.startswith("-"):
        return "starts with '-'"
    if name == "HEAD":
        return "HEAD is not a branch name"
    bad = _FORBIDDEN.search(name)
    if bad is not None:
        char = bad[0]
        return "contains a space" if char == " " else f"contains {char!r}"
    for sequence in ("..", "@{"):
        if sequence in name:
            return f"contains {sequence!r}"
    parts = name.split("/")
    if "" in parts:
        return "an empty part (a '/' at either end or two in a row)"
    if any(part.startswith(".") for part in parts):
        return "a part starts with '.'"
    if any(part.endswith(".lock") for part in parts):
        return "a part ends with '.lock'"
    if name.endswith("."):
        return "ends with '.'"
    return None
