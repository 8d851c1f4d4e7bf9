"""Lines as git counts them: ``\\n`` alone ends a line. A lone ``\\r``, a form feed, U+0085,
U+2028 or U+2029 inside a line is part of it, in the diff the review reads, in the lines its
findings' fingerprints are taken from and in the line numbers its syntax rules report."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.git import queries as g
from gitflow_agents.git.diffparse import parse_added_lines
from tests.conftest import Cli, git
from tests.helpers.builtin import locations, review
from tests.helpers.files import commit_files
from tests.helpers.review import run

__all__ = ["run"]  # a fixture

AWS_KEY = "AKIA" + "Z7Q2XK4M9PLR3VBN"
# one line to git (and valid Python: Python ends a line at the \r); the key after the \r
HIDDEN = f'x = 1\rKEY = "{AWS_KEY}"\n'


# --- the diff: a lone \r does not end an added line ---------------------------------------------


def test_an_added_line_holding_a_lone_cr_is_one_line() -> None:
    patch = (
        "diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ -0,0 +1,3 @@\n"
        "+x = 1\rKEY = 2\n+crlf\r\n+last\r\n\\ No newline at end of file\n"
    )
    lines, no_newline = parse_added_lines(patch)["c.py"]
    assert [(a.number, a.text) for a in lines] == [(1, "x = 1\rKEY = 2"), (2, "crlf"), (3, "last")]
    assert no_newline


def test_a_secret_after_a_lone_cr_is_found_in_a_commit(repo: Path, run: Cli) -> None:
    """The tester's case: the review read the diff with \\r as a line end, so the key became a
    line without the ``+`` and was dropped: APPROVED, exit 0."""
    commit_files(repo, {"cfg.py": HIDDEN}, "key")
    result = run.review("HEAD", "--no-note", cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "cfg.py\n  1  error  AWS access key" in result.stdout


def test_a_secret_after_a_lone_cr_is_found_in_the_staged_change(repo: Path, run: Cli) -> None:
    (repo / "cfg.py").write_bytes(HIDDEN.encode())
    git(repo, "add", "cfg.py")
    result = run.main("review", "--hook", "cfg.py", cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "aws-access-key" in result.stdout


def test_a_secret_after_a_lone_cr_in_the_range_s_history_is_found(repo: Path, run: Cli) -> None:
    """A commit of the range adds the key, a later one takes it out: the history scan reads
    each commit's patch the same way."""
    git(repo, "checkout", "-q", "-b", "feat")
    commit_files(repo, {"cfg.py": HIDDEN}, "key")
    commit_files(repo, {"cfg.py": "x = 1\n"}, "no key")
    result = run.review("main..feat", "--no-note", cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "aws-access-key" in result.stdout


def test_conflict_markers_name_only_the_reports_of_git(repo: Path) -> None:
    """``git diff --check`` shows the line of a whitespace problem: a lone \\r in it made a
    line of its own, read as another file's conflict marker."""
    base = git(repo, "rev-parse", "HEAD").strip()
    files = {
        "n.txt": "x\rfake.txt:1: leftover conflict marker \n",  # trailing whitespace
        "m.txt": "a \n<<<<<<< ours\n\n",
    }
    head = commit_files(repo, files)
    assert g.conflict_markers(repo, base, head) == ("m.txt:2",)


# --- Python's line numbers: Python ends a line at a lone \r, git does not ------------------------


def test_python_findings_are_at_git_s_line(repo: Path) -> None:
    result = review(
        repo,
        {
            "dbg.py": "x = 1\rbreakpoint()\nimport pdb\r\n",
            "bad.py": "x = 1\r\ny = 2\rz = 3\rdef f(:\n    pass\n",
        },
    )
    assert sorted(locations(result)) == [
        ("debugger", "dbg.py", 1),
        ("debugger", "dbg.py", 2),
        ("python-syntax", "bad.py", 2),
    ]


@pytest.mark.parametrize("crlf", [False, True])
def test_crlf_files_keep_their_line_numbers_and_texts(repo: Path, crlf: bool) -> None:
    end = "\r\n" if crlf else "\n"
    source = end.join(["x = 1", "import pdb", "def f(:", ""])
    result = review(repo, {"a.py": source})
    assert sorted(locations(result)) == [("debugger", "a.py", 2), ("python-syntax", "a.py", 3)]
