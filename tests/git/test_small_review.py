"""A small commit through ``git agent-review``: how many git processes it takes (issue 20:
start-up and git processes are most of a small review), and the queries that keep it few."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitflow_agents.base.errors import UsageError
from gitflow_agents.git import diffparse
from gitflow_agents.git import queries as g
from tests.conftest import ROOT, git
from tests.helpers.files import commit_files
from tests.helpers.review import review_in_child


def test_a_commit_and_its_parents_in_one_query(repo: Path) -> None:
    root = g.head_sha(repo)
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    head = g.head_sha(repo)
    assert g.commit_and_parents(repo, "HEAD") == (head, (root,))
    assert g.commit_and_parents(repo, "HEAD~1") == (root, ())
    git(repo, "checkout", "-q", "-b", "side", root)
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "b")
    side = g.head_sha(repo)
    git(repo, "merge", "-q", "--no-edit", head)
    assert g.commit_and_parents(repo, "HEAD") == (g.head_sha(repo), (side, head))
    for bad in ("nope", "HEAD~9", "HEAD^{tree}", "HEAD:a.txt", "a.txt", "^HEAD", "", "-p"):
        with pytest.raises(UsageError, match="unknown revision"):
            g.commit_and_parents(repo, bad)


def _git_calls(argv: list[str], cwd: Path, trace: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GIT_TRACE": str(trace)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return [line for line in trace.read_text().splitlines() if "trace: built-in: git" in line]


def test_a_small_commit_takes_three_git_processes(repo: Path, tmp_path: Path) -> None:
    """the top of the work tree with the commit and its parent, the diff (its records and its
    patch from one ``git diff``), the sizes and the contents (one ``cat-file
    --batch-command``)."""
    (repo / "a.py").write_text("x = 1\n")
    (repo / "b.json").write_text("{}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    (repo / "sub").mkdir()
    argv = ["gitflow_agents.git_agent_review", "HEAD", "--no-note"]
    calls = _git_calls(argv, repo / "sub", tmp_path / "t")
    assert len(calls) == 3, calls


def test_the_hook_on_staged_changes_takes_three_git_processes(repo: Path, tmp_path: Path) -> None:
    """the top of the work tree with HEAD, the diff, the contents."""
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    calls = _git_calls(["gitflow_agents", "review", "--hook"], repo, tmp_path / "t")
    assert len(calls) == 3, calls
    # as pre-commit runs it, with the staged files: the same diff tells them from --all-files
    calls = _git_calls(["gitflow_agents", "review", "--hook", "a.py"], repo, tmp_path / "f")
    assert len(calls) == 3, calls


def test_the_top_with_a_commit_or_head_in_one_query(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``root_and_commit`` / ``root_and_head`` agree with the separate queries, from any
    folder of the work tree (the top as the string git printed: no pathlib on a small
    review's path); None where those must say what is wrong."""
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    head = g.head_sha(repo)
    assert g.root_and_commit("HEAD") == (str(g.repo_root()), head, ())
    assert g.root_and_head() == (str(g.repo_root()), head)
    for bad in ("nope", "HEAD~9", "HEAD^{tree}", "HEAD:README.md", "^HEAD", "", "-p"):
        assert g.root_and_commit(bad) is None, bad
    fresh = tmp_path / "fresh"
    git(tmp_path, "init", "-q", str(fresh))
    monkeypatch.chdir(fresh)
    assert g.root_and_head() == (str(fresh.resolve()), None)
    assert g.root_and_commit("HEAD") is None
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert g.root_and_head() is None and g.root_and_commit("HEAD") is None


def test_one_diff_process_gives_records_and_patch(repo: Path) -> None:
    """``split_patch``: the records end where the patch starts, also when the patch holds
    only headers (a binary file), and a change-free diff is empty."""
    base = g.head_sha(repo)
    assert g.diff(repo, g.DiffSpec(base, base)) == ()
    (repo / "blob.bin").write_bytes(b"\x00\x00\x01")
    (repo / "text.txt").write_text("one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")
    changes = {c.path: c for c in g.diff(repo, g.DiffSpec(base, g.head_sha(repo)))}
    assert changes["blob.bin"].binary and changes["blob.bin"].added_lines == ()
    assert [a.text for a in changes["text.txt"].added_lines] == ["one"]
    records, patch = diffparse.split_patch(":100644 100644 a b M\0x\0" + "1\t0\tx\0\0diff --git")
    assert (records, patch) == (":100644 100644 a b M\0x\0" + "1\t0\tx\0", "diff --git")
    assert diffparse.split_patch("") == ("", "")


def test_a_diff_asked_early_answers_as_diff_and_ends_unread(repo: Path) -> None:
    """``AskedDiff`` (``git agent-review`` starts the diff before it imports the reviewer) reads
    the same changes as ``diff``; closed unread, its git is ended, none left behind."""
    import psutil

    base = g.head_sha(repo)
    head = commit_files(repo, {"a.py": "x = 1\n", "b.txt": "two\nlines\n"})
    spec = g.DiffSpec(base, head, one_commit=True)
    with g.AskedDiff(repo, spec) as asked:
        assert asked.changes() == g.diff(repo, spec)
        assert asked.changes() is asked.changes()  # read once
    with g.AskedDiff(repo, spec):
        assert [p.name() for p in psutil.Process().children()] == ["git"]
    assert psutil.Process().children() == []


# what ``subprocess`` imports with it: ~3 ms of a small review's start-up (issue 20)
SUBPROCESS = ("subprocess", "_posixsubprocess", "threading", "selectors", "locale", "signal")
# and ``typing`` (base/records.py) and ``pathlib`` with what it imports: ~3 ms each
NOT_IMPORTED = (*SUBPROCESS, "typing", "pathlib", "urllib.parse", "ipaddress")


@pytest.mark.parametrize(
    ("call", "files", "exit"),
    [
        ("main(['HEAD', '--no-note'])", {"a.py": "x = 1\n"}, 0),
        ("main(['HEAD'])", {"a.py": "import pdb\n", "b.py": "x = (\n"}, 1),  # and its note
        ("gitflow_agents_main(['review', '--hook'])", {"a.py": "x = (\n"}, 1),
        ("gitflow_agents_main(['review', '--hook'])", {"a.py": "x = 1\n"}, 0),
        ("gitflow_agents_main(['review', '--hook', 'a.py'])", {"a.py": "x = (\n"}, 1),
    ],
)
def test_a_small_review_imports_no_subprocess(
    repo: Path, call: str, files: dict[str, str], exit: int
) -> None:
    """Its git processes are started by ``base/spawn.py`` (``os.posix_spawn``), with and
    without findings, as ``git agent-review REV`` and as the hook; nor does it import
    ``typing`` or ``pathlib``."""
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    if call.startswith("main"):
        git(repo, "commit", "-q", "-m", "change")
    done = review_in_child(repo, call, NOT_IMPORTED)
    assert ("REVISE" if exit else "APPROVED") in done.stdout, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"{exit} []"
    if call == "main(['HEAD'])":  # the note was written through spawn too, its text as input
        assert '"verdict": "revise"' in git(repo, "notes", f"--ref={g.NOTES_REF}", "show", "HEAD")
