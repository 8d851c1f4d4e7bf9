"""stats.py: totals, the one-line summary, the statistics of a range and of a work tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitflow_agents.git import stats
from gitflow_agents.git.diffparse import FileStat
from tests.conftest import git
from tests.helpers.git_stats import STATS
from tests.helpers.old_git import git_refusing


def test_totals_and_json() -> None:
    assert (STATS.added, STATS.deleted) == (12, 1)
    assert STATS.new_files == ("src/new.py", "logo.png")
    data = STATS.to_json()
    assert data["filesChanged"] == 4 and data["insertions"] == 12 and data["deletions"] == 1
    assert data["binaryFiles"] == ["logo.png"]
    assert data["files"][3] == {
        "path": "docs/new.md",
        "status": "R",
        "oldPath": "docs/old.md",
        "added": 0,
        "deleted": 0,
        "binary": False,
        "gitlink": False,
    }
    assert [c["subject"] for c in data["commits"]] == [
        "[plan] Step 1: Add",
        "[plan] Step 1 (fix 1)",
    ]


def test_summary_line() -> None:
    assert stats.summary(STATS) == "4 files changed, +12 -1, 2 new, 1 binary, 2 commits"
    one = stats.GitStats("a" * 40, None, (FileStat("x", "M", None, 1, 1),))
    assert stats.summary(one) == "1 file changed, +1 -1"


def test_a_gitlink_is_a_changed_file_named_as_a_nested_repository() -> None:
    """A nested repository committed as a gitlink (mode 160000) counts as git counts it."""
    nested = stats.GitStats(
        "a" * 40,
        "b" * 40,
        (FileStat("vendor-lib", "A", None, 1, 0, gitlink=True), FileStat("x", "M", None, 1, 1)),
    )
    assert stats.summary(nested).startswith("2 files changed, +2 -1, 1 new")
    data = nested.to_json()
    assert data["filesChanged"] == 2 and data["newFiles"] == ["vendor-lib"]
    assert [f["gitlink"] for f in data["files"]] == [True, False]


def test_compute_on_a_real_repository(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "new.txt").write_text("n\n")
    (repo / "flows").mkdir()
    (repo / "flows" / "x.log").write_text("x\n")
    work = stats.compute(repo, base, exclude=("flows",))
    assert work.changed_files == ("new.txt",) and work.commits == () and work.head_sha is None
    git(repo, "add", "new.txt")
    git(repo, "commit", "-q", "-m", "add new")
    head = git(repo, "rev-parse", "HEAD").strip()
    committed = stats.compute(repo, base, head, exclude=("flows",))
    assert committed.new_files == ("new.txt",) and [c.subject for c in committed.commits] == [
        "add new"
    ]


def _conflicted_merge(repo: Path) -> tuple[str, str]:
    """``main`` (the step's side) merging ``other``, which changed ``a.txt`` the same place
    and added three files in two commits: the merge conflicts in ``a.txt``, and its
    resolution keeps both lines, removes the markers and adds one line. (start, merge)."""
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("theirs\n")
    git(repo, "commit", "-q", "-am", "theirs")
    for name in ("x.txt", "y.txt", "z.txt"):
        (repo / name).write_text(f"{name}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "dev: big change")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("mine\n")
    git(repo, "commit", "-q", "-am", "mine")
    start = git(repo, "rev-parse", "HEAD").strip()
    merged = subprocess.run(["git", "-C", str(repo), "merge", "-q", "other"], capture_output=True)
    assert merged.returncode == 1 and "<<<<<<<" in (repo / "a.txt").read_text()
    (repo / "a.txt").write_text("mine\ntheirs\nresolved\n")
    git(repo, "commit", "-q", "-am", "Merge other (conflicts resolved)")
    return start, git(repo, "rev-parse", "HEAD").strip()


def test_a_merge_resolution_counts_its_own_work_not_what_the_merge_brought(repo: Path) -> None:
    """Against git's automatic merge (``merge-tree --write-tree``): ``a.txt``'s three marker
    lines removed and one line written, not the other branch's commits and files."""
    start, merge = _conflicted_merge(repo)
    own = stats.compute_resolution(repo, start, merge)
    assert [(f.path, f.added, f.deleted) for f in own.files] == [("a.txt", 1, 3)]
    assert [c.sha for c in own.commits] == [merge] and own.head_sha == merge
    assert own.against == stats.AUTOMATIC_MERGE
    assert git(repo, "cat-file", "-t", own.base_sha).strip() == "tree"
    assert stats.summary(own) == "1 file changed, +1 -3, 1 commit"
    everything = stats.compute(repo, start, merge)  # what the first parent sees
    assert len(everything.files) == 4 and len(everything.commits) == 3


def test_a_merge_resolution_on_a_git_without_merge_tree_write_tree(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git before 2.38 refuses ``merge-tree --write-tree``: the files the merge changed against
    both parents, counted against the first."""
    start, merge = _conflicted_merge(repo)
    old = git_refusing("--write-tree", tmp_path, monkeypatch)
    own = stats.compute_resolution(repo, start, merge)
    assert (old / "git.log").read_text() == "refused\n"
    assert [(f.path, f.added, f.deleted) for f in own.files] == [("a.txt", 2, 0)]
    assert [c.sha for c in own.commits] == [merge]
    assert (own.base_sha, own.against) == (start, stats.BOTH_PARENTS)


def test_a_resolution_that_is_no_merge_is_counted_from_its_start(repo: Path) -> None:
    start = git(repo, "rev-parse", "HEAD").strip()
    (repo / "n.txt").write_text("n\n")
    git(repo, "add", "n.txt")
    git(repo, "commit", "-q", "-m", "not a merge")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert stats.compute_resolution(repo, start, head) == stats.compute(repo, start, head)
