"""stats.py: totals, the one-line summary, the statistics of a range and of a work tree."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.git import stats
from gitflow_agents.git.diffparse import Commit, FileStat
from tests.conftest import git

STATS = stats.GitStats(
    base_sha="a" * 40,
    head_sha="b" * 40,
    files=(
        FileStat("src/new.py", "A", None, 10, 0),
        FileStat("README.md", "M", None, 2, 1),
        FileStat("logo.png", "A", None, None, None),
        FileStat("docs/new.md", "R", "docs/old.md", 0, 0),
    ),
    commits=(Commit("c" * 40, "[plan] Step 1: Add"), Commit("d" * 40, "[plan] Step 1 (fix 1)")),
)


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
