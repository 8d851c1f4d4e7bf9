"""``diffparse.parse_hunk_ranges``: the ``-U0`` hunks per old path, as incremental review maps
an earlier review's finding lines through them (``reviewer/incremental.py``); the files a
commit shows as binary, and the line counts of a diff as text."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from gitflow_agents.git import queries
from gitflow_agents.git.diffparse import (
    AddedLine,
    parse_added_lines,
    parse_hunk_ranges,
    parse_line_counts,
    patch_lines,
)
from tests.conftest import git
from tests.helpers.files import commit_files


def test_ranges_per_old_path_with_counts_git_leaves_out() -> None:
    patch = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
        "@@ -3,0 +4,2 @@ def f():\n+x\n+y\n@@ -10 +12 @@\n-old\n+new\n"
        'diff --git "a/sp ace.py" "b/sp ace.py"\n--- "a/sp ace.py"\n+++ "b/sp ace.py"\n'
        "@@ -1,2 +0,0 @@\n-a\n-b\n"
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
        "@@ -0,0 +1 @@\n+z\n"
    )
    assert parse_hunk_ranges(patch) == {
        "a.py": ((3, 0, 4, 2), (10, 1, 12, 1)),
        "sp ace.py": ((1, 2, 0, 0),),
    }


def test_hunk_ranges_of_real_commits_restricted_to_paths(repo: Path) -> None:
    old = commit_files(repo, {"a.py": "1\n2\n3\n", "b.py": "b\n", "*.py": "glob\n"})
    new = commit_files(repo, {"a.py": "0\n1\n2\nthree\n", "b.py": "B\n", "*.py": "star\n"})
    hunks, renames = queries.hunk_ranges(repo, old, new, ["a.py", "*.py"])
    assert hunks == {"a.py": ((0, 0, 1, 1), (3, 1, 4, 1)), "*.py": ((1, 1, 1, 1),)}
    assert renames == {}
    assert queries.hunk_ranges(repo, old, new, []) == ({}, {})
    assert git(repo, "rev-parse", "HEAD").strip() == new


def test_hunk_ranges_name_the_renamed_files_among_the_paths(repo: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(20))
    old = commit_files(repo, {"old name.py": body, "keep.py": "k\n"})
    git(repo, "mv", "old name.py", "new name.py")
    (repo / "new name.py").write_text(body.replace("line 3\n", "line three\n"))
    git(repo, "commit", "-q", "-am", "rename")
    new = git(repo, "rev-parse", "HEAD").strip()
    hunks, renames = queries.hunk_ranges(repo, old, new, ["old name.py", "new name.py"])
    assert renames == {"old name.py": "new name.py"}
    assert hunks == {"old name.py": ((4, 1, 4, 1),)}  # only the changed line, by its old path
    alone = queries.hunk_ranges(repo, old, new, ["old name.py"])  # the new path not asked
    assert alone[1] == {}


def test_the_files_a_commit_shows_as_binary(repo: Path) -> None:
    """``parse_binary_files`` on ``git log -p``: the path from the ``diff --git`` line (spaces,
    quotes) or the rename's lines; a deleted file is left out (nothing is added)."""
    body = "".join(f"line {i}\n" for i in range(20))
    base = commit_files(repo, {"gone.txt": "x\n", "old name.txt": body})
    commit_files(
        repo, {".gitattributes": "* -diff\n", 'qu"ote.txt': "q\n", "sp ace.txt": "s\n"}, "add"
    )
    git(repo, "rm", "-q", "gone.txt")
    git(repo, "mv", "old name.txt", "new name.txt")
    (repo / "new name.txt").write_text(body + "more\n")
    head = commit_files(repo, {}, "move")
    first, second = queries.commit_patches(repo, base, head)
    assert first.binary == ((".gitattributes", None), ('qu"ote.txt', None), ("sp ace.txt", None))
    assert second.binary == (("new name.txt", "old name.txt"),)
    assert first.added == second.added == {}
    again = queries.commit_patches(repo, base, head, text=True, paths=["sp ace.txt"])
    assert [p.added for p in again] == [{"sp ace.txt": ((AddedLine(1, "s"),), False)}]


def test_line_counts_of_a_text_diff() -> None:
    patch = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
        "@@ -3,0 +4,2 @@\n+x\n+++y\n@@ -10 +12 @@\n---old\n+new\n"
        'diff --git "a/sp ace.py" "b/sp ace.py"\n--- "a/sp ace.py"\n+++ "b/sp ace.py"\n'
        "@@ -1,2 +0,0 @@\n-a\n-b\n"
    )
    assert parse_line_counts(patch) == {"a.py": (3, 1), "sp ace.py": (0, 2)}


@pytest.mark.parametrize(
    "text", ["", "\n", "a", "a\n", "\n\nab\n", "ab\ncd\r\nef", "x\ny\n\n\rz\n\n", "abc\n" * 7]
)
@pytest.mark.parametrize("part", [0, 1, 2, 3, 5, 1 << 20])
def test_patch_lines_are_the_lines_split_at_once(text: str, part: int) -> None:
    """Whatever the part size and wherever a line end falls in a part: ``str.split("\\n")``."""
    assert list(patch_lines(text, part)) == text.split("\n")


def test_a_whole_tree_s_patch_is_parsed_without_a_second_copy_of_its_lines(repo: Path) -> None:
    """The tester's case, smaller (repro-6: 78 MB of text reviewed from the empty tree took
    508 MB): ``parse_added_lines`` split the whole patch into lines at once, a list of every
    line (~2 times the patch) besides the added lines it keeps; now a part at a time. Measured
    as allocations: what the parse holds at its peak beyond what it returns and the patch."""
    line = "value_{0} = compute(item_{0}, other_{0})  # an ordinary line of text\n"
    commit_files(repo, {f"src/m{f}.txt": "".join(map(line.format, range(2000))) for f in range(40)})
    patch = git(repo, "diff", "-U0", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "HEAD")
    assert len(patch) > 4_000_000
    tracemalloc.start()
    try:
        added = parse_added_lines(patch)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(len(lines) for lines, _ in added.values()) >= 80_000
    assert peak - kept < len(patch) / 2  # the old split: ~2 times the patch; now ~1 MB
