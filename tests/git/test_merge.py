"""``git/merge.py``: which merge commits of a branch a rebase would not reproduce
(``unreplayable_merges``): one that resolves a conflict, and one that merged cleanly and was
then edited by hand (an "evil merge"); an untouched clean merge, octopus included, is none."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.git.merge import Unreplayable, unreplayable_merges
from tests.conftest import git


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
