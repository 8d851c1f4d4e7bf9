"""gitflow_agents.git.queries against real repositories in temp dirs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gitflow_agents.base import spawn
from gitflow_agents.base.errors import GitError, UsageError
from gitflow_agents.git import cmd as gitcmd
from gitflow_agents.git import queries as g
from tests.conftest import git


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_repo_root_from_subdirectory(repo: Path) -> None:
    sub = repo / "a" / "b"
    sub.mkdir(parents=True)
    assert g.repo_root(sub) == repo.resolve()


def test_repo_root_outside_a_repository(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a git repository"):
        g.repo_root(tmp_path)


def test_inherited_git_dir_is_scrubbed(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    # As git exports them to hooks: relative to a directory we are not in.
    monkeypatch.setenv("GIT_DIR", ".git")
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert g.repo_root(repo) == repo.resolve()
    assert "GIT_DIR" not in g.git_env()
    assert g.head_sha(repo) == git(repo, "rev-parse", "HEAD").strip()


def test_rev_parse_and_unknown_revision(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    assert g.rev_parse(repo, "main") == head
    assert g.head_sha(repo) == head
    with pytest.raises(UsageError, match="unknown revision: nope"):
        g.rev_parse(repo, "nope")
    with pytest.raises(UsageError, match="unknown revision"):
        g.rev_parse(repo, "--all")


def test_head_of_an_empty_repository(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    assert not g.has_head(tmp_path)
    with pytest.raises(UsageError, match="no commit yet"):
        g.head_sha(tmp_path)


def test_default_branch_prefers_remote_head(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    found = g.default_branch(clone)
    assert found.ref == "origin/main"
    assert "refs/remotes/origin/HEAD" in found.note
    assert "fell back" not in found.note


def test_default_branch_falls_back_to_main_then_master(repo: Path) -> None:
    found = g.default_branch(repo)
    assert found.ref == "main"
    assert found.note == (
        "default branch main (refs/remotes/origin/HEAD is not set; "
        "main is the first of origin/main, main, origin/master, master that exists)"
    )
    git(repo, "branch", "-m", "main", "master")
    assert g.default_branch(repo).ref == "master"
    git(repo, "branch", "-m", "master", "trunk")
    with pytest.raises(UsageError, match="cannot find the default branch"):
        g.default_branch(repo)


def test_merge_base_and_parents(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "f.txt").write_text("f\n")
    head = commit_all(repo, "feature")
    git(repo, "checkout", "-q", "main")
    (repo / "m.txt").write_text("m\n")
    commit_all(repo, "main moves on")
    assert g.merge_base(repo, "main", "feature") == base
    assert g.parents(repo, head) == (base,)
    assert g.parents(repo, base) == ()


def test_diff_statuses_numstat_renames_and_binary(repo: Path) -> None:
    (repo / "keep.py").write_text("a = 1\nb = 2\nc = 3\n")
    (repo / "old name.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    (repo / "gone.txt").write_text("bye\n")
    base = commit_all(repo, "base")
    (repo / "keep.py").write_text("a = 1\nb = 22\nc = 3\nd = 4\n")
    git(repo, "mv", "old name.txt", "new näme.txt")
    (repo / "gone.txt").unlink()
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    (repo / "tail.txt").write_text("no newline at end")
    head = commit_all(repo, "change")

    changes = {c.path: c for c in g.diff(repo, g.DiffSpec(base, head))}
    assert set(changes) == {"keep.py", "new näme.txt", "gone.txt", "blob.bin", "tail.txt"}

    keep = changes["keep.py"]
    assert (keep.status, keep.added, keep.deleted) == ("M", 2, 1)
    assert [(a.number, a.text) for a in keep.added_lines] == [(2, "b = 22"), (4, "d = 4")]
    assert not keep.no_final_newline

    renamed = changes["new näme.txt"]
    assert (renamed.status, renamed.old_path, renamed.added) == ("R", "old name.txt", 0)
    assert changes["gone.txt"].status == "D"

    binary = changes["blob.bin"]
    assert binary.binary and binary.added is None and binary.added_lines == ()

    tail = changes["tail.txt"]
    assert tail.no_final_newline
    assert [(a.number, a.text) for a in tail.added_lines] == [(1, "no newline at end")]


def test_staged_diff_and_index_contents(repo: Path) -> None:
    (repo / "README.md").write_text("# demo\nstaged line\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("# demo\nstaged line\nunstaged line\n")
    base = g.head_sha(repo)
    changes = g.diff(repo, g.DiffSpec(base, None))
    assert [(c.path, [a.text for a in c.added_lines]) for c in changes] == [
        ("README.md", ["staged line"])
    ]
    with g.BlobReader(repo) as blobs:
        assert blobs.text(g.object_name(None, "README.md")) == "# demo\nstaged line\n"
        assert blobs.text(g.object_name(base, "README.md")) == "# demo\n"
        assert blobs.text(g.object_name(base, "missing.txt")) is None
    names = [g.object_name(None, "README.md"), g.object_name(None, "missing.txt")]
    assert g.object_sizes(repo, names) == [19, None]


def test_root_commit_against_the_empty_tree(repo: Path) -> None:
    head = g.head_sha(repo)
    changes = g.diff(repo, g.DiffSpec(g.empty_tree(repo), head))
    assert [(c.path, c.status) for c in changes] == [("README.md", "A")]


def test_quoted_paths_in_patch_headers(repo: Path) -> None:
    base = g.head_sha(repo)
    (repo / 'we"ird\tname.txt').write_text("x\n")
    head = commit_all(repo, "odd name")
    changes = g.diff(repo, g.DiffSpec(base, head))
    assert [(c.path, len(c.added_lines)) for c in changes] == [('we"ird\tname.txt', 1)]


def test_notes_round_trip(repo: Path) -> None:
    head = g.head_sha(repo)
    assert g.read_note(repo, head) is None
    g.write_note(repo, head, '{"a": 1}\n')
    g.write_note(repo, head, '{"a": 2}\n')  # replaces
    assert g.read_note(repo, head) == '{"a": 2}\n'
    assert g.NOTES_REF in git(repo, "for-each-ref", "refs/notes/")
    # the default notes ref is untouched
    assert git(repo, "notes", "list") == ""


def test_a_note_git_cannot_write_for_a_stale_lock_names_the_lock_file(repo: Path) -> None:
    """git says which file blocks it (``Unable to create '…/gitflow-agents.lock': File
    exists``) and then five lines of advice: the error kept only the last, "remove the file
    manually to continue.", without the file."""
    lock = Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / "refs/notes"
    lock.mkdir(parents=True, exist_ok=True)
    (lock / "gitflow-agents.lock").touch()
    head = g.head_sha(repo)
    with pytest.raises(GitError) as raised:
        g.write_note(repo, head, "x\n")
    message = str(raised.value)
    assert message.startswith(f"cannot write note on {head[:12]}: ")
    assert f"{lock / 'gitflow-agents.lock'} exists" in message
    assert "remove the file" in message and "\n" not in message
    (lock / "gitflow-agents.lock").unlink()
    g.write_note(repo, head, "x\n")
    assert g.read_note(repo, head) == "x\n"


def test_a_git_failure_repeats_what_git_said_on_one_line_without_its_hints() -> None:
    """git often says why on the lines before its last (``error: gpg failed to sign the data``
    before ``fatal: failed to write commit object``): every line is kept, but its hints, and
    a long list is cut in the middle."""
    stderr = "error: gpg failed to sign the data\nhint: advice\n\nfatal: failed to write\n"
    failed = spawn.Result(("git",), 128, "", stderr)
    message = str(gitcmd.failure(failed, "cannot commit"))
    assert message == "cannot commit: error: gpg failed to sign the data; fatal: failed to write"
    many = "".join(f"\tfile{n}\n" for n in range(100)) + "Aborting\n"
    lines = gitcmd.said(many)
    assert len(lines) == gitcmd.SAID_LINES and lines[-2:] == ["… 94 more lines", "Aborting"]
    assert str(gitcmd.failure(spawn.Result(("git",), 1, "", ""), "x")) == "x: git exited 1"


def test_current_branch_and_detached_head(repo: Path) -> None:
    assert g.current_branch(repo) == "main"
    git(repo, "checkout", "-q", "--detach")
    assert g.current_branch(repo) is None


def test_is_one_commit_only_when_the_patch_is_the_net_diff(repo: Path) -> None:
    root_commit = g.head_sha(repo)
    assert g.is_one_commit(repo, g.empty_tree(repo), root_commit)  # a root commit
    (repo / "a.txt").write_text("a\n")
    first = commit_all(repo, "first")
    assert g.is_one_commit(repo, root_commit, first)
    (repo / "b.txt").write_text("b\n")
    second = commit_all(repo, "second")
    assert not g.is_one_commit(repo, root_commit, second)  # two commits
    assert not g.is_one_commit(repo, g.empty_tree(repo), second)
    git(repo, "checkout", "-q", "-b", "side", root_commit)
    (repo / "c.txt").write_text("c\n")
    side = commit_all(repo, "side")
    # one commit in first..side, but its parent is not first: its patch is not the net diff
    assert not g.is_one_commit(repo, first, side)


def test_every_name_queries_re_exports_is_there_when_asked_for() -> None:
    """``queries`` imports ``worktree`` and ``remote`` only when one of their names is first
    used (a review needs neither, issue 20); every name it declares for type checkers resolves,
    to the object its module defines, and nothing else does."""
    import ast
    import importlib

    from gitflow_agents.git import queries

    tree = ast.parse(Path(queries.__file__).read_text(encoding="utf-8"))
    declared = [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module in {"gitflow_agents.git.remote", "gitflow_agents.git.worktree"}
        for alias in node.names
    ]
    assert len(declared) > 30
    for module, name in declared:
        assert getattr(queries, name) is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError):
        queries.no_such_query  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError):
        queries._fail_of_worktree  # type: ignore[attr-defined]  # noqa: B018


def test_notes_written_from_several_threads_at_once_all_stay(repo: Path) -> None:
    """Steps that run at once (run --all --jobs N) record their reviews at once: git refuses a
    notes commit whose ref moved under it, so the writes of one process take turns."""
    shas = []
    for index in range(12):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"c{index}")
        shas.append(g.head_sha(repo))
    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(lambda sha: g.write_note(repo, sha, f"note {sha}\n"), shas))
    assert [g.read_note(repo, sha) for sha in shas] == [f"note {sha}\n" for sha in shas]
