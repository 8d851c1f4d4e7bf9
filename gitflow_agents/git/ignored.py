"""Which files of a checkout git ignores, and which it tracks, among those a list of paths and
globs names (``chain.copy_ignored``). Globs are git's pathspec globs (``:(glob)``): ``*`` and
``?`` within a folder, ``**`` across folders; a folder names everything under it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gitflow_agents.git.cmd import run_git


def _pathspecs(patterns: Sequence[str]) -> tuple[str, ...]:
    return tuple(f":(glob){pattern}" for pattern in patterns)


def _listed(root: Path, *args: str) -> tuple[str, ...]:
    out = run_git(root, "ls-files", "-z", *args, check=False).stdout
    return tuple(name for name in out.split("\0") if name)


def ignored_files(root: Path, patterns: Sequence[str]) -> tuple[str, ...]:
    """Untracked files under ``root`` that git ignores and ``patterns`` name (relative paths)."""
    if not patterns:
        return ()
    return _listed(root, "--others", "--ignored", "--exclude-standard", "--", *_pathspecs(patterns))


def tracked_files(root: Path, patterns: Sequence[str]) -> tuple[str, ...]:
    """Files git tracks under ``root`` that ``patterns`` name (relative paths)."""
    if not patterns:
        return ()
    return _listed(root, "--cached", "--", *_pathspecs(patterns))
