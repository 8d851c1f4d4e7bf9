"""The git statistics the tool computed (``git/stats.py``) as the implementation report's
``## Modified files`` section: a per-file table, the totals and the commit list, put where the
report's ``GIT_STATS_MARKER`` line is.

File names come from the change (an agent chose them): each is shown as it is, one table row
whatever it holds (docs/security.md, "Agent text is inert").
"""

from __future__ import annotations

from pathlib import Path

from gitflow_agents.base.fsutil import (
    MAX_REPORT_CHARS,
    irregular,
    read_agent_text,
    write_text_atomic,
)
from gitflow_agents.git.stats import GIT_STATS_MARKER, GitStats, summary

from . import visible
from .markdown import code

_STATUS_WORD = {"A": "new", "D": "deleted", "R": "renamed", "C": "copied", "T": "type changed"}


def _count(value: int | None) -> str:
    return "bin" if value is None else str(value)


def path_cell(path: str) -> str:
    """A file name in a table cell, faithfully: its control characters written out (``\\x0a``;
    a line break would end the row), in a code span its backticks cannot close, its pipes
    escaped (GFM splits a row at ``|`` before it reads code spans, and unescapes ``\\|`` in them)."""
    return code(visible(path)).replace("|", "\\|")


def render_markdown(stats: GitStats) -> str:
    """The ``## Modified files`` body: a per-file table, totals and the commit list."""
    head = stats.head_sha[:12] if stats.head_sha else "work tree"
    lines = [f"Computed by gitflow-agents: `{stats.base_sha[:12]}..{head}` ({summary(stats)}).", ""]
    if stats.against:
        lines[-1:-1] = [f"The merge's conflict resolution only, counted against {stats.against}."]
    if stats.files:
        lines += ["| File | + | - | |", "|---|---:|---:|---|"]
        for f in stats.files:
            note = _STATUS_WORD.get(f.status, "")
            if f.old_path:
                note = f"{note} from {path_cell(f.old_path)}"
            if f.binary:
                note = f"{note}, binary".lstrip(", ")
            if f.gitlink:  # its commit is what changed, not a file's lines
                note = f"{note}, nested repository (gitlink)".lstrip(", ")
            lines.append(
                f"| {path_cell(f.path)} | {_count(f.added)} | {_count(f.deleted)} | {note} |"
            )
        n = len(stats.files)
        total = f"{n} file{'s' if n != 1 else ''}"
        lines.append(f"| **{total}** | **{stats.added}** | **{stats.deleted}** | |")
    else:
        lines.append("No files changed.")
    if stats.commits:
        lines += ["", "Commits:", ""]
        lines += [f"- `{c.sha[:12]}` {c.subject}" for c in stats.commits]
    return "\n".join(lines)


def fill_report(text: str, stats: GitStats) -> str:
    """Replace the ``GIT_STATS_MARKER`` line of a report with the statistics.

    Without the marker, the statistics replace the body of a ``## Modified files`` section (what
    an agent pasted there is not trusted), else they are appended as that section.
    """
    body = render_markdown(stats)
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.strip() == GIT_STATS_MARKER:
            lines[index] = body
            return "\n".join(lines)
    for index, line in enumerate(lines):
        if line.strip().lower() == "## modified files":
            end = index + 1
            while end < len(lines) and not lines[end].startswith("#"):
                end += 1
            tail = lines[end:]
            return "\n".join([*lines[: index + 1], "", body, "", *tail]).rstrip("\n") + "\n"
    return text.rstrip("\n") + "\n\n## Modified files\n\n" + body + "\n"


def fill_report_file(path: Path, stats: GitStats) -> None:
    """``fill_report`` on a file, written atomically."""
    if irregular(path) is not None:  # an agent's symlink or FIFO: neither read nor written
        return
    text = read_agent_text(path, MAX_REPORT_CHARS)
    if len(text) > MAX_REPORT_CHARS:  # not read whole: rewriting it would cut it
        return
    write_text_atomic(path, fill_report(text, stats))
