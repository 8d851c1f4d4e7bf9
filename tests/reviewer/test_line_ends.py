"""Lines as git counts them: ``\\n`` alone ends a line. A lone ``\\r``, a form feed, U+0085,
U+2028 or U+2029 inside a line is part of it, in the diff the review reads, in the lines its
findings' fingerprints are taken from and in the line numbers its syntax rules report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitflow_agents.git import queries as g
from gitflow_agents.git.diffparse import git_lines, parse_added_lines
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


def test_a_file_s_lines_are_split_as_git_splits_them() -> None:
    text = "a\x0cb\x85c\u2028d\u2029e\x1cf\rg\r\nh\n\nlast\r"
    assert git_lines(text) == ["a\x0cb\x85c\u2028d\u2029e\x1cf\rg", "h", "", "last"]
    assert git_lines("") == [] and git_lines("\n") == [""] and git_lines("x") == ["x"]


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


# --- a finding's line: what its fingerprint, its marker and the baseline read --------------------

# each inside a line for git, a line end for str.splitlines
ODD_ENDS = {"form feed": "\x0c", "lone CR": "\r", "U+0085": "\x85", "U+2028": "\u2028"}
OTHER_KEY = "AKIA" + "QQ3RTT8WW5YY2ZZ4"


@pytest.mark.parametrize("odd", ODD_ENDS.values(), ids=ODD_ENDS.keys())
def test_a_baselined_key_replaced_below_an_odd_line_end_is_a_new_finding(
    repo: Path, run: Cli, odd: str
) -> None:
    """The tester's case: the fingerprint was taken from the line ``str.splitlines`` numbers
    4, the comment above the key, so another key on the baselined line kept the baselined
    fingerprint: "accepted (baseline)", exit 0."""

    def fixture(key: str) -> str:
        return f'"""Test fixtures."""\n{odd}x\n# fake key for the signer test\nKEY = "{key}"\n'

    commit_files(repo, {"fixtures.py": fixture(AWS_KEY)}, "fixtures")
    written = run.review("HEAD", "--write-baseline", cwd=repo)
    assert written.returncode == 0, written.stdout + written.stderr
    commit_files(repo, {}, "baseline")
    commit_files(repo, {"fixtures.py": fixture(OTHER_KEY)}, "real key")
    result = run.review("HEAD", "--no-note", cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "accepted" not in result.stdout


@pytest.mark.parametrize("odd", ODD_ENDS.values(), ids=ODD_ENDS.keys())
def test_two_keys_below_an_odd_line_end_have_two_fingerprints(
    repo: Path, run: Cli, odd: str
) -> None:
    """Both findings took their fingerprint from the line ``str.splitlines`` numbered as
    theirs: the same for both (SARIF's partialFingerprints collided)."""
    text = f"{odd}x\n# a test key\nA = '{AWS_KEY}'\n# a test key\nB = '{OTHER_KEY}'\n"
    commit_files(repo, {"keys.py": text})
    result = run.review("HEAD", "--no-note", "--format", "json", cwd=repo)
    found = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "aws-access-key"]
    assert [f["line"] for f in found] == [3, 5]
    assert len({f["fingerprint"] for f in found}) == 2


def test_a_rotated_key_body_below_an_odd_line_end_is_found(repo: Path) -> None:
    """``key_body_lines`` looks up from an added body line for its BEGIN line, in the file's
    lines as git numbers them: one line off, it read the BEGIN line's as a body line's."""
    body = "MIIEowIBAAKCAQEAx7Qm2ZkP9sLw3Rt" + "Hq8vN4cY1uJ6bW0eT5gK2dF9sA7lZ3x"
    old = f"\u2028\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body[::-1]}\n-----END RSA PRIVATE KEY-----\n"
    new = old.replace(body, body[5:] + body[:5])
    result = review(repo, {"id_rsa": new}, base_files={"id_rsa": old})
    assert locations(result) == [("private-key", "id_rsa", 3)]


# --- YAML: PyYAML ends a line at a lone \r, U+0085, U+2028 and U+2029 -----------------------------

YAML_ENDS = {"lone CR": "\r", "U+0085": "\x85", "U+2028": "\u2028", "U+2029": "\u2029"}


@pytest.mark.parametrize("odd", YAML_ENDS.values(), ids=YAML_ENDS.keys())
def test_yaml_findings_are_at_git_s_line(repo: Path, odd: str) -> None:
    """The tester's case: a duplicate key on line 3 was reported at line 5 "(first on line
    4)"; the line of a parse error and of a value PyYAML cannot build moved the same way."""
    greeting = f'greeting: "Hello{odd}World{odd}again"\n'
    files = {
        "dup.yaml": greeting + "name: a\nname: b\nother: 1\n",
        "bad.yaml": greeting + "list: [1, 2\nother: 1\n",
        "date.yaml": greeting + "day: 2024-13-45\n",
    }
    result = review(repo, files)
    found = {f.file: f for f in result.findings}
    assert {name: (f.rule, f.line) for name, f in found.items()} == {
        "dup.yaml": ("yaml-syntax", 3),
        "bad.yaml": ("yaml-syntax", 3),
        "date.yaml": ("yaml-syntax", 2),
    }
    assert found["dup.yaml"].message.endswith("(first on line 2)")
