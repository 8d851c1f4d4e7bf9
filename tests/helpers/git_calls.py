"""The git processes a command starts, counted by a ``git`` first in ``PATH`` that appends its
arguments to a log (one line per process, the arguments tab-separated; only the first line of
an argument that spans lines) and then runs the real git."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

SHIM = """#!/bin/sh
printf '%s\\n' "$*" | head -n 1 | tr ' ' '\\t' >> '{log}'
exec '{git}' "$@"
"""


def count_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the counting ``git`` first in ``PATH`` (for this test); the log it writes to."""
    git = shutil.which("git")
    assert git is not None
    folder = tmp_path / "git-shim"
    folder.mkdir()
    log = tmp_path / "git-calls.log"
    (folder / "git").write_text(SHIM.format(log=log, git=git))
    (folder / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


def git_calls(log: Path, since: int = 0, *, outside: Path | None = None) -> list[list[str]]:
    """The git commands logged from line ``since`` on, git's own options (``--no-pager``,
    ``-c X``, ``-C DIR``) left out, and the calls in ``outside`` (``-C`` there: a bare origin
    the GitHub stand-in reads) too."""
    calls = []
    for line in log.read_text().splitlines()[since:] if log.exists() else []:
        args, where = line.split("\t"), ""
        while args and args[0] in ("--no-pager", "-c", "-C"):
            where = args[1] if args[0] == "-C" else where
            args = args[2:] if args[0] in ("-c", "-C") else args[1:]
        if outside is None or where != str(outside):
            calls.append(args)
    return calls


def fetches_of(calls: list[list[str]], ref: str) -> int:
    """How many of ``calls`` are fetches of ``ref`` (a refspec naming it)."""
    return sum(1 for args in calls if args[:1] == ["fetch"] and any(ref in a for a in args))
