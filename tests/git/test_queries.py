"""``merged_tree``: the tree a merge would write, without a work tree; None on conflicts, a
git too old for it named.
``branch_tip``: a branch named in full, exactly, or None."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.git import queries as g
from gitflow_agents.git.version import GitTooOld
from tests.conftest import git
from tests.helpers.old_git import git_refusing


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


def test_a_git_before_2_38_is_no_conflict_but_named(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    side = _commit(repo, "side", base, "side.txt", "side\n")
    git_refusing("--write-tree", tmp_path, monkeypatch, version="2.30.2")
    with pytest.raises(GitTooOld, match=r"needs git 2\.38 or newer .*; this is git 2\.30\.2"):
        g.merged_tree(repo, base, side)


def test_branch_tip_reads_the_ref_named_in_full_and_nothing_else(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    side = _commit(repo, "side", base, "side.txt", "side\n")
    git(repo, "update-ref", "refs/remotes/origin/main", base)
    assert g.branch_tip(repo, "refs/heads/side") == side
    assert g.branch_tip(repo, "refs/remotes/origin/main") == base
    assert g.branch_tip(repo, "refs/remotes/origin/gone") is None
    git(repo, "branch", "refs/remotes/origin/gone", side)  # a branch whose NAME looks like it
    assert g.branch_tip(repo, "refs/remotes/origin/gone") is None  # no guessing: rev-parse would
    assert g.branch_tip(repo, "side") is None  # a short name is not a ref named in full
