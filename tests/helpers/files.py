"""Files in a test repository: committed in one step, or written as an executable script."""

from __future__ import annotations

from pathlib import Path

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
