"""``git/worktree.py``: what merging one commit into another would conflict in, without a
work tree (``merge_conflicts``, which ``plan tend`` names on a conflicting pull request)."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.git.worktree import merge_conflicts
from tests.conftest import git


def _commit(repo: Path, start: str, files: dict[str, str]) -> str:
    git(repo, "checkout", "-q", "--detach", start)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_clean_merge_has_no_conflicts_and_a_conflicting_one_names_each_path_once(
    repo: Path,
) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    ours = _commit(repo, base, {"README.md": "# ours\n", "src/a b.py": "A = 1\n"})
    theirs = _commit(repo, base, {"README.md": "# theirs\n", "src/a b.py": "A = 2\n"})
    elsewhere = _commit(repo, base, {"OTHER.md": "other\n"})
    assert merge_conflicts(repo, ours, elsewhere) == ()
    assert merge_conflicts(repo, ours, theirs) == ("README.md", "src/a b.py")
    assert git(repo, "status", "--porcelain") == ""  # no work tree or index touched


def test_work_trees_added_and_removed_from_many_threads_at_once_all_succeed(
    repo: Path, tmp_path: Path
) -> None:
    """``git worktree add`` reads every other tree's admin folder; one being created by another
    thread made it fail ("failed to read .git/worktrees/…/commondir") under run --jobs N."""
    from concurrent.futures import ThreadPoolExecutor

    from gitflow_agents.git.worktree import add_worktree, remove_worktree, worktrees

    paths = [tmp_path / "trees" / f"step-{n:02}" for n in range(12)]
    for _ in range(2):
        with ThreadPoolExecutor(max_workers=12) as pool:
            list(pool.map(lambda p: add_worktree(repo, p, "HEAD", detach=True), paths))
        assert {path.resolve() for path in paths} <= {path.resolve() for path in worktrees(repo)}
        assert all((path / "README.md").is_file() for path in paths)
        with ThreadPoolExecutor(max_workers=12) as pool:
            list(pool.map(lambda p: remove_worktree(repo, p), paths))
        assert not any(path.exists() for path in paths)
