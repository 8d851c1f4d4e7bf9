"""stats.py: totals, the one-line summary, the markdown table, filling the report marker."""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.git import stats
from gitflow_agents.git.diffparse import Commit, FileStat
from gitflow_agents.git.stats import GIT_STATS_MARKER
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


def test_markdown_table() -> None:
    text = stats.render_markdown(STATS)
    assert "`aaaaaaaaaaaa..bbbbbbbbbbbb`" in text
    assert "| `src/new.py` | 10 | 0 | new |" in text
    assert "| `logo.png` | bin | bin | new, binary |" in text
    assert "| `docs/new.md` | 0 | 0 | renamed from `docs/old.md` |" in text
    assert "| **4 files** | **12** | **1** | |" in text
    assert "- `cccccccccccc` [plan] Step 1: Add" in text
    empty = stats.GitStats("a" * 40, "a" * 40, ())
    assert "No files changed." in stats.render_markdown(empty)


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
    text = stats.render_markdown(nested)
    assert "| `vendor-lib` | 1 | 0 | new, nested repository (gitlink) |" in text
    assert "| `x` | 1 | 1 |  |" in text
    assert "No files changed." not in text


def test_fill_report_replaces_the_marker_only() -> None:
    report = f"# Step 1\n\n## Modified files\n\n{GIT_STATS_MARKER}\n\n## Notes\n\nok\n"
    filled = stats.fill_report(report, STATS)
    assert GIT_STATS_MARKER not in filled
    assert filled.startswith("# Step 1\n\n## Modified files\n\nComputed by gitflow-agents")
    assert filled.endswith("## Notes\n\nok\n")
    assert stats.fill_report(filled, STATS) == filled  # idempotent: no marker left


def test_fill_report_replaces_what_an_agent_pasted() -> None:
    report = (
        "# Step 1\n\n## Modified files\n\n README.md | 2 +-\n flows/log | 9 +++\n\n## Notes\n\nok\n"
    )
    filled = stats.fill_report(report, STATS)
    assert "flows/log" not in filled and "| `src/new.py` |" in filled
    assert filled.endswith("## Notes\n\nok\n")


def test_fill_report_appends_a_section_when_missing() -> None:
    filled = stats.fill_report("# Step 1\n\ndone\n", STATS)
    assert filled.startswith("# Step 1\n\ndone\n\n## Modified files\n\nComputed by")


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
