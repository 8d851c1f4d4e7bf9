"""``merged_tree``: the tree a merge would write, without a work tree; None on conflicts."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.git import queries as g
from tests.conftest import git


def _commit(repo: Path, branch: str, start: str, name: str, text: str) -> str:
    git(repo, "checkout", "-q", "-b", branch, start)
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", branch)
    return git(repo, "rev-parse", "HEAD").strip()


def test_merged_tree_is_the_tree_a_merge_commit_gets(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    side = _commit(repo, "side", base, "side.txt", "side\n")
    ahead = _commit(repo, "ahead", base, "ahead.txt", "ahead\n")
    git(repo, "merge", "-q", "--no-ff", "side", "-m", "merge")
    assert g.merged_tree(repo, ahead, side) == g.tree_sha(repo, "HEAD")
    assert g.merged_tree(repo, base, side) == g.tree_sha(repo, side)  # a fast-forward's tree
    assert g.merged_tree(repo, base, side) != g.tree_sha(repo, "HEAD")


def test_a_conflict_is_none(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    one = _commit(repo, "one", base, "same.txt", "one\n")
    two = _commit(repo, "two", base, "same.txt", "two\n")
    assert g.merged_tree(repo, one, two) is None
