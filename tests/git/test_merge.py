"""``git/merge.py``: which merge commits of a branch a rebase would not reproduce
(``unreplayable_merges``): one that resolves a conflict, and one that merged cleanly and was
then edited by hand (an "evil merge"); an untouched clean merge, octopus included, is none. A
git before 2.38 (no ``merge-tree --write-tree``) is named, never taken for a conflict."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.base.errors import GitError
from gitflow_agents.git.merge import Unreplayable, merge_into, unreplayable_merges
from gitflow_agents.git.version import GitTooOld
from tests.conftest import git
from tests.helpers.old_git import git_refusing


def _commit(repo: Path, start: str, files: dict[str, str]) -> str:
    git(repo, "checkout", "-q", "--detach", start)
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return git(repo, "rev-parse", "HEAD").strip()


def _merge(repo: Path, ours: str, *theirs: str, edits: dict[str, str] | None = None) -> str:
    """``theirs`` merged into ``ours`` (``-X ours`` where they conflict), then ``edits`` written
    into the merge commit by hand (``--amend``)."""
    git(repo, "checkout", "-q", "--detach", ours)
    git(repo, "merge", "-q", "--no-edit", "-X", "ours", *theirs)
    if edits:
        for name, text in edits.items():
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--amend", "--no-edit")
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_merge_that_resolves_a_conflict_is_named(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    branch = _commit(repo, base, {"README.md": "# ours\n"})
    clean = _merge(repo, branch, _commit(repo, base, {"OTHER.md": "other\n"}))
    target = _commit(repo, base, {"README.md": "# theirs\n"})
    resolved = _merge(repo, clean, target)
    assert unreplayable_merges(repo, base, clean) == ()
    assert unreplayable_merges(repo, base, resolved) == (Unreplayable(resolved, "conflict"),)
    assert unreplayable_merges(repo, target, resolved) == (Unreplayable(resolved, "conflict"),)


def test_a_clean_merge_edited_by_hand_is_named_and_an_untouched_one_is_not(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    branch = _commit(repo, base, {"README.md": "# ours\n"})
    target = _commit(repo, base, {"OTHER.md": "other\n"})
    untouched = _merge(repo, branch, target)
    evil = _merge(repo, branch, target, edits={"SNEAKY.md": "never reviewed alone\n"})
    after = _commit(repo, evil, {"README.md": "# later\n"})
    assert unreplayable_merges(repo, target, untouched) == ()
    assert unreplayable_merges(repo, target, after) == (Unreplayable(evil, "edited"),)
    assert git(repo, "status", "--porcelain") == ""  # no work tree or index touched


def test_an_octopus_merge_is_checked_parent_by_parent(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    one = _commit(repo, base, {"ONE.md": "1\n"})
    two = _commit(repo, base, {"TWO.md": "2\n"})
    three = _commit(repo, base, {"THREE.md": "3\n"})
    octopus = _merge(repo, one, two, three)
    edited = _merge(repo, one, two, three, edits={"ONE.md": "changed in the merge\n"})
    assert unreplayable_merges(repo, base, octopus) == ()
    assert unreplayable_merges(repo, base, edited) == (Unreplayable(edited, "edited"),)


OLD_GIT = (
    "git 2.38 or newer (`git merge-tree --write-tree`); this is git 2.34.1: install a newer git"
)


def test_a_git_before_2_38_is_named_by_the_rebase_check(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    branch = _commit(repo, base, {"README.md": "# ours\n"})
    merged = _merge(repo, branch, _commit(repo, base, {"OTHER.md": "other\n"}))
    old = git_refusing("--write-tree", tmp_path, monkeypatch, version="2.34.1")
    with pytest.raises(GitTooOld) as refused:
        unreplayable_merges(repo, base, merged)
    assert str(refused.value) == (
        "checking that a rebase would reproduce its merge commits needs "
        + OLD_GIT
        + ' (README, "Requirements")'
    )
    assert refused.value.exit_code == 2
    assert (old / "git.log").read_text() == "refused\n"


def test_landing_with_a_merge_commit_on_a_git_before_2_38_says_so_and_moves_nothing(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    step = _commit(repo, base, {"STEP.md": "step\n"})
    moved = _commit(repo, base, {"MAIN.md": "main\n"})
    git(repo, "update-ref", "refs/heads/main", moved)
    git_refusing("--write-tree", tmp_path, monkeypatch, version="2.34.1")
    with pytest.raises(GitTooOld) as refused:
        merge_into(repo, "main", step, mode="merge", message="m")
    assert str(refused.value).startswith(
        "landing on main with a merge commit (merge mode 'merge') needs " + OLD_GIT
    )
    assert git(repo, "rev-parse", "main").strip() == moved


def test_a_merge_git_refuses_for_another_reason_is_not_called_a_conflict(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed git is new enough: its refusal is reported as git's failure, as before for
    every other git call (it said "would conflict" for any refusal)."""
    base = git(repo, "rev-parse", "HEAD").strip()
    step = _commit(repo, base, {"STEP.md": "step\n"})
    git(repo, "update-ref", "refs/heads/main", _commit(repo, base, {"MAIN.md": "main\n"}))
    git_refusing("--write-tree", tmp_path, monkeypatch)  # the installed git's own version
    with pytest.raises(GitError) as refused:
        merge_into(repo, "main", step, mode="merge", message="m")
    assert not isinstance(refused.value, GitTooOld)
    assert str(refused.value) == f"cannot merge {step[:12]} into main: git exited 129"
