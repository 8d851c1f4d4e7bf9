"""A git older than the one installed, as far as one option goes: a ``git`` first on PATH that
refuses ``option`` (exit 129, as git answers an unknown option) and runs the real git for
everything else; each refusal is a line ``refused`` in ``git.log`` beside it."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import pytest


def git_refusing(
    option: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    within: str | None = None,
    version: str | None = None,
) -> Path:
    """Put such a git first on PATH; the folder it is in (its log: ``git.log`` there).
    ``within``: ``option`` is refused only in a call that also names this word (``-z`` of
    ``worktree`` alone); ``version``: what ``git version`` answers (``2.34.1``), as that older
    git would (otherwise the installed git's own version)."""
    real = shutil.which("git")
    assert real is not None
    old = tmp_path / "old-git"
    old.mkdir()
    said = f"echo {shlex.quote(f'git version {version}')}; exit 0" if version else ":"
    (old / "git").write_text(
        "#!/bin/sh\n"
        f"hit=; seen={'' if within else '1'}; last=\n"
        'for a in "$@"; do\n'
        f'  [ "$a" = {shlex.quote(option)} ] && hit=1\n'
        f'  [ "$a" = {shlex.quote(within or "")} ] && seen=1\n'
        '  last="$a"\n'
        "done\n"
        f'[ "$last" = version ] && {{ {said}; }}\n'
        '[ -n "$hit" ] && [ -n "$seen" ] && { echo refused >> "$0.log"; exit 129; }\n'
        f'exec {shlex.quote(real)} "$@"\n'
    )
    (old / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{old}{os.pathsep}{os.environ['PATH']}")
    return old
