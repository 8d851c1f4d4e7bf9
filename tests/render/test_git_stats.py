"""render/git_stats.py: the ``## Modified files`` table, filling the report marker; a file name
stays one intact, faithful table cell whatever it holds."""

from __future__ import annotations

from markdown_it import MarkdownIt

from gitflow_agents.git.diffparse import FileStat
from gitflow_agents.git.stats import GIT_STATS_MARKER, GitStats
from gitflow_agents.render import git_stats
from gitflow_agents.render.git_stats import render_markdown
from tests.helpers.git_stats import STATS


def test_markdown_table() -> None:
    text = render_markdown(STATS)
    assert "`aaaaaaaaaaaa..bbbbbbbbbbbb`" in text
    assert "| `src/new.py` | 10 | 0 | new |" in text
    assert "| `logo.png` | bin | bin | new, binary |" in text
    assert "| `docs/new.md` | 0 | 0 | renamed from `docs/old.md` |" in text
    assert "| **4 files** | **12** | **1** | |" in text
    assert "- `cccccccccccc` [plan] Step 1: Add" in text
    empty = GitStats("a" * 40, "a" * 40, ())
    assert "No files changed." in render_markdown(empty)


def test_fill_report_replaces_the_marker_only() -> None:
    report = f"# Step 1\n\n## Modified files\n\n{GIT_STATS_MARKER}\n\n## Notes\n\nok\n"
    filled = git_stats.fill_report(report, STATS)
    assert GIT_STATS_MARKER not in filled
    assert filled.startswith("# Step 1\n\n## Modified files\n\nComputed by gitflow-agents")
    assert filled.endswith("## Notes\n\nok\n")
    assert git_stats.fill_report(filled, STATS) == filled  # idempotent: no marker left


def test_fill_report_replaces_what_an_agent_pasted() -> None:
    report = (
        "# Step 1\n\n## Modified files\n\n README.md | 2 +-\n flows/log | 9 +++\n\n## Notes\n\nok\n"
    )
    filled = git_stats.fill_report(report, STATS)
    assert "flows/log" not in filled and "| `src/new.py` |" in filled
    assert filled.endswith("## Notes\n\nok\n")


def test_fill_report_appends_a_section_when_missing() -> None:
    filled = git_stats.fill_report("# Step 1\n\ndone\n", STATS)
    assert filled.startswith("# Step 1\n\ndone\n\n## Modified files\n\nComputed by")


def test_a_gitlink_is_named_as_a_nested_repository() -> None:
    nested = GitStats(
        "a" * 40,
        "b" * 40,
        (FileStat("vendor-lib", "A", None, 1, 0, gitlink=True), FileStat("x", "M", None, 1, 1)),
    )
    text = render_markdown(nested)
    assert "| `vendor-lib` | 1 | 0 | new, nested repository (gitlink) |" in text
    assert "| `x` | 1 | 1 |  |" in text
    assert "No files changed." not in text


def _table_rows(text: str) -> list[list[str]]:
    """Each table row's cells as GitHub's table extension reads them (inline source)."""
    rows: list[list[str]] = []
    row: list[str] | None = None
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close" and row is not None:
            rows.append(row)
            row = None
    return rows


def _code_text(cell: str) -> str:
    """The text a code span cell shows (markdown-it renders it)."""
    html = MarkdownIt("commonmark").renderInline(cell)
    assert html.startswith("<code>") and html.endswith("</code>"), html
    return html.removeprefix("<code>").removesuffix("</code>")


def test_unusual_file_names_keep_one_intact_row_each() -> None:
    """A ``|`` would split the cell, a line break the row, a backtick would end the code span."""
    names = (
        "a|b.md",
        "c`d.md",
        "new\nline.md",
        "`edge`",
        "tab\there\x1b[8m.md",
        "back\\|slash",
        " spaced ",
    )
    files = tuple(FileStat(name, "A", None, 1, 0) for name in names)
    renamed = FileStat("x.md", "R", "old|`na\nme`.md", 0, 0)
    text = render_markdown(GitStats("a" * 40, "b" * 40, (*files, renamed)))
    rows = _table_rows(text)
    assert [len(row) for row in rows] == [4] * (len(names) + 3)  # header, files, total
    shown = [_code_text(row[0]) for row in rows[1:-2]]
    assert shown == [
        "a|b.md",
        "c`d.md",
        "new\\x0aline.md",
        "`edge`",
        "tab\there\\x1b[8m.md",
        "back\\|slash",
        " spaced ",
    ]
    note = rows[-2][3]
    assert note.startswith("renamed from ")
    assert _code_text(note.removeprefix("renamed from ")) == "old|`na\\x0ame`.md"
