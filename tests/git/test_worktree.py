"""``git/worktree.py``: what merging one commit into another would conflict in, without a
work tree (``merge_conflicts``, which ``plan tend`` names on a conflicting pull request); what a
work tree holds beyond its commit (``dirty_paths``, ``head_and_dirty``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitflow_agents.git.version import GitTooOld
from gitflow_agents.git.worktree import dirty_paths, head_and_dirty, merge_conflicts, worktrees
from tests.conftest import git
from tests.helpers.old_git import git_refusing


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


def test_a_git_before_2_38_cannot_list_conflicts_and_says_so(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    ours = _commit(repo, base, {"README.md": "# ours\n"})
    theirs = _commit(repo, base, {"README.md": "# theirs\n"})
    git_refusing("--write-tree", tmp_path, monkeypatch, version="2.37.3")
    with pytest.raises(GitTooOld, match=r"needs git 2\.38 or newer .*; this is git 2\.37\.3"):
        merge_conflicts(repo, ours, theirs)


def test_a_git_before_2_36_cannot_list_work_trees_safely_and_says_so(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``worktree list -z`` a path holding a line feed reads as two fields: refused,
    naming both versions, rather than read wrongly or answered with git's usage text."""
    old = git_refusing("-z", tmp_path, monkeypatch, within="worktree", version="2.34.1")
    with pytest.raises(GitTooOld) as refused:
        worktrees(repo)
    assert str(refused.value) == (
        "finding the work trees of the repository needs git 2.36 or newer (`git worktree list "
        '--porcelain -z`); this is git 2.34.1: install a newer git (README, "Requirements")'
    )
    assert (old / "git.log").read_text() == "refused\n"


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


def test_dirty_paths_name_each_changed_renamed_unmerged_and_untracked_path_once(
    repo: Path,
) -> None:
    """Every kind of entry ``git status`` prints, paths with spaces: the new name of a staged
    rename (not its old one), an unmerged path, untracked files; HEAD from the same call."""
    (repo / "old name.md").write_text("a\nb\nc\nd\n")
    (repo / "both.md").write_text("base\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert head_and_dirty(repo) == (head, ())
    theirs = _commit(repo, head, {"both.md": "theirs\n"})
    git(repo, "checkout", "-q", "-B", "main", head)
    (repo / "both.md").write_text("ours\n")
    git(repo, "commit", "-q", "-am", "ours")
    ours = git(repo, "rev-parse", "HEAD").strip()
    merge = subprocess.run(["git", "-C", str(repo), "merge", "-q", theirs], capture_output=True)
    assert merge.returncode == 1  # a conflict in both.md, left in progress
    git(repo, "mv", "old name.md", "new name.md")
    (repo / "README.md").write_text("edited\n")
    (repo / "sub dir").mkdir()
    (repo / "sub dir" / "new file.txt").write_text("x\n")
    expected = ("README.md", "both.md", "new name.md", "sub dir/new file.txt")
    assert sorted(dirty_paths(repo)) == list(expected)
    head_now, dirty = head_and_dirty(repo)
    assert (head_now, sorted(dirty)) == (ours, list(expected))


def test_head_and_dirty_before_the_first_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a\n")
    assert head_and_dirty(tmp_path) == (None, ("a.txt",))
