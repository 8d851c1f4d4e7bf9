"""A git older than the one installed, as far as one option goes: a ``git`` first on PATH that
refuses ``option`` (exit 129, as git answers an unknown option) and runs the real git for
everything else; each refusal is a line ``refused`` in ``git.log`` beside it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def git_refusing(option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put such a git first on PATH; the folder it is in (its log: ``git.log`` there)."""
    real = shutil.which("git")
    assert real is not None
    old = tmp_path / "old-git"
    old.mkdir()
    (old / "git").write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do [ "$a" = {option} ] && {{ echo refused >> "$0.log"; exit 129; }}; done\n'
        f'exec {real} "$@"\n'
    )
    (old / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{old}{os.pathsep}{os.environ['PATH']}")
    return old
