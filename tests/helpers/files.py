"""Files in a test repository: committed in one step, or written as an executable script."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import NamedTuple

from tests.conftest import git


def write_files(root: Path, files: dict[str, str] | dict[str, str | bytes]) -> None:
    """Write ``files`` (name -> text or bytes) below ``root``, making folders as needed."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def commit_files(
    repo: Path,
    files: dict[str, str] | dict[str, str | bytes],
    message: str = "change",
    *,
    allow_empty: bool = False,
) -> str:
    """Write ``files``, stage everything and commit it; the new commit's sha."""
    write_files(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", *(["--allow-empty"] if allow_empty else []), "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def write_executable(path: Path, text: str) -> Path:
    """``text`` as an executable script at ``path`` (a fake agent, a git hook, a shim)."""
    path.write_text(text)
    path.chmod(0o755)
    return path


class Detached(NamedTuple):
    """A bare repository ``store`` with its work tree ``tree`` elsewhere (the layout of dotfiles
    managers: ``git --git-dir=store --work-tree=tree``), git cannot find it from the tree."""

    store: Path
    tree: Path

    @property
    def env(self) -> dict[str, str]:
        return {"GIT_DIR": str(self.store), "GIT_WORK_TREE": str(self.tree)}

    def commit(self, files: dict[str, str], message: str) -> None:
        """Write ``files`` into the tree and commit them through GIT_DIR / GIT_WORK_TREE."""
        write_files(self.tree, files)
        layout = {**os.environ, **self.env}
        for args in (("add", *files), ("commit", "-q", "-m", message)):
            subprocess.run(["git", *args], cwd=self.tree, env=layout, check=True)


def detached_repository(root: Path) -> Detached:
    """An empty ``Detached`` repository below ``root`` (``store.git`` and ``tree``)."""
    store, tree = root / "store.git", root / "tree"
    tree.mkdir()
    git(root, "init", "-q", "--bare", str(store))
    return Detached(store, tree)
