"""Shared fixtures: real git in temp dirs, a fixed author, and no writes to the real $HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).resolve().parent / "fakes"
DATA = Path(__file__).resolve().parent / "data"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point $HOME (and XDG dirs) at a fresh folder so no test writes to the real one."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    for key in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GITHUB_ACTIONS", "CI"):
        monkeypatch.delenv(key, raising=False)
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )
    return home


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return stdout (tests only; the package goes through git.py)."""
    out = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return out.stdout


@pytest.fixture
def repo(tmp_path: Path, isolated_home: Path) -> Iterator[Path]:
    """A git repository with one commit on ``main``."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# demo\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    yield path


class CliResult(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def _pythonpath() -> str:
    """The checkout first, so the CLI runs from any cwd even when the package is not installed."""
    existing = os.environ.get("PYTHONPATH")
    return str(ROOT) if not existing else os.pathsep.join((str(ROOT), existing))


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> CliResult:
    """Run ``gitflow-agents`` as a real subprocess (``python -m gitflow_agents``)."""
    proc = subprocess.run(
        [sys.executable, "-m", "gitflow_agents", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": _pythonpath(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)
