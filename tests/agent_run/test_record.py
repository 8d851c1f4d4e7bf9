"""``agent_run/record.py``: the state a run starts from and the files it changed."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.agent_run.record import changed_files, start_state, worktree_state
from tests.conftest import git


def test_a_clean_work_tree_starts_from_head_with_nothing_changed(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    assert start_state(repo) == (head, {})


def test_a_dirty_work_tree_starts_with_its_files_and_only_the_agents_count(repo: Path) -> None:
    """A file dirty before the run (and untouched by it) is not the run's change; one it
    edits, creates or restores is."""
    (repo / "notes.txt").write_text("the user's, untracked\n")
    (repo / "README.md").write_text("the user's uncommitted edit\n")
    (repo / "keep.txt").write_text("untracked, restored below\n")
    head, before = start_state(repo)
    assert head == git(repo, "rev-parse", "HEAD").strip()
    assert before == worktree_state(repo, head)
    assert sorted(before) == ["README.md", "keep.txt", "notes.txt"]
    (repo / "new.txt").write_text("the agent's\n")
    (repo / "notes.txt").write_text("the agent changed it, and its size\n")
    (repo / "keep.txt").unlink()
    assert changed_files(repo, head, before, set()) == ["keep.txt", "new.txt", "notes.txt"]


def test_outside_a_repository_of_its_own_there_is_no_start_commit(
    repo: Path, tmp_path: Path
) -> None:
    inner = repo / "project"
    inner.mkdir()
    (inner / "file.txt").write_text("x\n")
    assert start_state(inner) == (None, {})
    empty = tmp_path / "fresh"
    git(tmp_path, "init", "-q", str(empty))
    (empty / "a.txt").write_text("a\n")
    assert start_state(empty) == (None, {})
