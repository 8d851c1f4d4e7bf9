"""git.py additions: statistics with untracked/binary/renamed files, commits, worktrees, merges."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitflow_agents.base.errors import GitError, UsageError
from gitflow_agents.git import queries as git
from gitflow_agents.git.stats import diff_stats
from tests.conftest import git as run_git


def _base(repo: Path) -> str:
    (repo / "docs").mkdir()
    (repo / "docs" / "old.md").write_text("one\ntwo\nthree\nfour\n")
    (repo / "keep.txt").write_text("a\nb\n")
    run_git(repo, "add", ".")
    run_git(repo, "commit", "-q", "-m", "base")
    return run_git(repo, "rev-parse", "HEAD").strip()


def _change_worktree(repo: Path) -> None:
    (repo / "new.py").write_text("x = 1\ny = 2\n")  # untracked
    (repo / "logo.png").write_bytes(b"\x89PNG\x00\x01\x02binary")  # untracked binary
    (repo / "docs" / "old.md").rename(repo / "docs" / "new.md")  # rename, not staged
    (repo / "keep.txt").write_text("a\nB\nc\n")
    (repo / "flows" / "f" / "runs").mkdir(parents=True)
    (repo / "flows" / "f" / "runs" / "worker.log").write_text("log\n" * 50)


def test_work_tree_stats_include_untracked_binary_and_renames_and_exclude_flows(
    repo: Path,
) -> None:
    base = _base(repo)
    _change_worktree(repo)
    index_before = (repo / ".git" / "index").read_bytes()
    stats = {s.path: s for s in diff_stats(repo, base, exclude=("flows",))}
    assert set(stats) == {"new.py", "logo.png", "docs/new.md", "keep.txt"}
    assert (stats["new.py"].status, stats["new.py"].added, stats["new.py"].deleted) == ("A", 2, 0)
    assert stats["logo.png"].binary and stats["logo.png"].status == "A"
    assert stats["docs/new.md"].status == "R" and stats["docs/new.md"].old_path == "docs/old.md"
    assert (stats["keep.txt"].added, stats["keep.txt"].deleted) == (2, 1)
    # the real index is untouched: nothing staged, untracked files still untracked
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert run_git(repo, "diff", "--cached", "--name-only") == ""
    assert "?? new.py" in run_git(repo, "status", "--porcelain").splitlines()


def _loose_objects(repo: Path) -> int:
    counts = dict(line.split(": ") for line in run_git(repo, "count-objects", "-v").splitlines())
    return int(counts["count"])


def test_work_tree_stats_write_no_objects_and_see_staged_and_deleted_files(repo: Path) -> None:
    base = _base(repo)
    _change_worktree(repo)
    (repo / "staged.txt").write_text("s\n")
    run_git(repo, "add", "staged.txt")
    run_git(repo, "rm", "-q", "--cached", "keep.txt")  # staged deletion, file kept on disk
    (repo / "flowsy").mkdir()
    (repo / "flowsy" / "kept.txt").write_text("not the flow dir\n")
    objects = _loose_objects(repo)
    stats = {s.path: s for s in diff_stats(repo, base, exclude=("flows",))}
    # intent-to-add hashes no file into the object store (at most git's empty blob, which every
    # intent-to-add entry names); staging would have written new.py, logo.png, keep.txt, ...
    assert _loose_objects(repo) - objects <= 1
    assert stats["staged.txt"].status == "A" and stats["flowsy/kept.txt"].status == "A"
    assert (stats["keep.txt"].added, stats["keep.txt"].deleted) == (2, 1)  # on disk: changed
    assert not any(p.startswith("flows/") for p in stats)


def test_without_exclude_the_artifacts_would_count(repo: Path) -> None:
    base = _base(repo)
    _change_worktree(repo)
    paths = {s.path for s in diff_stats(repo, base)}
    assert "flows/f/runs/worker.log" in paths


def test_range_stats_and_commits_between(repo: Path) -> None:
    base = _base(repo)
    _change_worktree(repo)
    sha = git.commit_all(repo, "step 1", trailers={"Gitflow-Agents-Run": "r-1"}, exclude=("flows",))
    assert sha is not None
    (repo / "more.txt").write_text("m\n")
    second = git.commit_all(repo, "step 1 (fix)", exclude=("flows",))
    assert second is not None
    commits = git.commits_between(repo, base, second)
    assert [c.subject for c in commits] == ["step 1", "step 1 (fix)"]
    assert [c.sha for c in commits] == [sha, second]
    stats = {s.path: s for s in diff_stats(repo, base, second, exclude=("flows",))}
    assert set(stats) == {"new.py", "logo.png", "docs/new.md", "keep.txt", "more.txt"}
    assert stats["docs/new.md"].status == "R"
    # the artifact was never committed; the trailer was
    assert "flows/f/runs/worker.log" not in run_git(repo, "ls-tree", "-r", "--name-only", second)
    assert git.commit_trailers(repo, sha) == {"Gitflow-Agents-Run": "r-1"}
    assert git.commit_all(repo, "nothing", exclude=("flows",)) is None


def _nested_repo(path: Path, text: str) -> None:
    """A git repository of its own at ``path`` (an agent cloned a dependency there), with one
    more commit holding ``text``."""
    if not (path / ".git").exists():
        path.mkdir()
        run_git(path, "init", "-q")
    (path / "lib.py").write_text(text)
    run_git(path, "add", "lib.py")
    run_git(path, "commit", "-q", "-m", text)


def test_a_nested_repository_committed_as_a_gitlink_counts_as_one_file(repo: Path) -> None:
    """``git add -A`` commits a nested repository as a gitlink (mode 160000); the statistics
    count it as git's ``--numstat`` does (+1 added, +1 -1 moved on, -1 removed), flagged."""
    base = _base(repo)
    _nested_repo(repo / "vendor-lib", "one\n")
    added = git.commit_all(repo, "vendor it", exclude=("flows",))
    assert added is not None
    assert run_git(repo, "ls-tree", added, "vendor-lib").startswith("160000 commit ")
    [stat] = diff_stats(repo, base, added)
    assert (stat.path, stat.status, stat.added, stat.deleted) == ("vendor-lib", "A", 1, 0)
    assert stat.gitlink and not stat.binary
    _nested_repo(repo / "vendor-lib", "two\n")
    moved = git.commit_all(repo, "bump it", exclude=("flows",))
    assert moved is not None
    [stat] = diff_stats(repo, added, moved)
    assert (stat.path, stat.status, stat.added, stat.deleted, stat.gitlink) == (
        "vendor-lib",
        "M",
        1,
        1,
        True,
    )
    run_git(repo, "rm", "-q", "--cached", "vendor-lib")
    run_git(repo, "commit", "-q", "-m", "drop it")
    removed = run_git(repo, "rev-parse", "HEAD").strip()
    [stat] = diff_stats(repo, moved, removed)
    assert (stat.path, stat.status, stat.added, stat.deleted, stat.gitlink) == (
        "vendor-lib",
        "D",
        0,
        1,
        True,
    )
    assert not any(s.gitlink for s in diff_stats(repo, base, moved) if s.path != "vendor-lib")


def test_work_tree_stats_count_a_new_nested_repository_but_not_its_uncommitted_edits(
    repo: Path,
) -> None:
    """What ``git add -A`` would commit: a new nested repository is a new gitlink; edits inside
    a committed one, which no commit of the outer repository records, are no change."""
    base = _base(repo)
    _nested_repo(repo / "vendor-lib", "one\n")
    [stat] = diff_stats(repo, base, exclude=("flows",))
    assert (stat.path, stat.status, stat.added, stat.gitlink) == ("vendor-lib", "A", 1, True)
    committed = git.commit_all(repo, "vendor it", exclude=("flows",))
    assert committed is not None
    (repo / "vendor-lib" / "lib.py").write_text("edited, not committed\n")
    (repo / "vendor-lib" / "untracked.py").write_text("x\n")
    assert diff_stats(repo, committed, exclude=("flows",)) == ()


def test_ensure_info_exclude_is_idempotent(repo: Path) -> None:
    git.ensure_info_exclude(repo, ("/flows/", "/flows"))
    git.ensure_info_exclude(repo, ("/flows/", "/flows"))
    lines = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert lines.count("/flows/") == 1 and lines.count("/flows") == 1
    assert git.git_common_dir(repo) == (repo / ".git").resolve()


def test_worktree_branch_helpers(repo: Path) -> None:
    start = git.head_sha(repo)
    git.create_branch(repo, "agents/p/step-1", start)
    assert git.branch_sha(repo, "agents/p/step-1") == start
    assert git.branch_sha(repo, "nope") is None
    tree = git.tool_worktree_root(repo) / "p" / "step-01"
    # outside .git/ (agent CLIs protect it) and outside the user's work tree; per repository
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "gitflow-agents" / "worktrees"
    assert tree.is_relative_to(cache) and not tree.is_relative_to(repo)
    assert tree.parent.parent.name.startswith("repo-")
    git.add_worktree(repo, tree, "agents/p/step-1")
    assert git.worktree_of_branch(repo, "agents/p/step-1") == tree.resolve()
    assert git.worktree_of_branch(repo, "main") == repo.resolve()
    assert git.is_tool_worktree(repo, tree) and not git.is_tool_worktree(repo, repo)
    (tree / "scratch.txt").write_text("x\n")
    assert git.dirty_paths(tree) == ("scratch.txt",)
    git.discard_changes(tree, start)
    assert git.dirty_paths(tree) == ()
    git.remove_tool_worktree(repo, tree)
    assert not tree.exists() and git.worktree_of_branch(repo, "agents/p/step-1") is None


def test_destructive_helpers_refuse_work_trees_the_tool_did_not_create(
    repo: Path, tmp_path: Path
) -> None:
    start = git.head_sha(repo)
    mine = tmp_path / "my-tree"
    run_git(repo, "worktree", "add", "-q", "-b", "mine", str(mine))
    inside = git.tool_worktree_root(repo) / "f" / "not-a-tree"
    inside.mkdir(parents=True)
    for tree in (repo, mine):
        (tree / "notes.txt").write_text("untracked, mine\n")
        (tree / "README.md").write_text("my uncommitted edit\n")
        with pytest.raises(UsageError, match="refusing to reset and clean"):
            git.discard_changes(tree, start)
        assert (tree / "notes.txt").read_text() == "untracked, mine\n"
        assert (tree / "README.md").read_text() == "my uncommitted edit\n"
    # a subdirectory of the user's tree, or a folder under the root that is no work tree
    (repo / "sub").mkdir()
    for path in (repo / "sub", inside):
        with pytest.raises(UsageError, match="refusing to reset and clean"):
            git.discard_changes(path, start)
    assert (repo / "notes.txt").exists()
    with pytest.raises(UsageError, match="refusing to remove"):
        git.remove_tool_worktree(repo, mine)
    assert (mine / "notes.txt").exists() and git.worktree_of_branch(repo, "mine") == mine.resolve()
    with pytest.raises(UsageError, match="invalid branch name"):
        git.check_branch_name(repo, "bad..name")


def _branch_with_commit(repo: Path, name: str, file: str) -> str:
    run_git(repo, "switch", "-q", "-c", name)
    (repo / file).write_text(f"{file}\n")
    run_git(repo, "add", file)
    run_git(repo, "commit", "-q", "-m", f"add {file}")
    sha = run_git(repo, "rev-parse", "HEAD").strip()
    run_git(repo, "switch", "-q", "main")
    return sha


def test_merge_fast_forward_updates_the_checked_out_target(repo: Path) -> None:
    sha = _branch_with_commit(repo, "step", "a.txt")
    (repo / "mine.txt").write_text("uncommitted\n")
    result = git.merge_into(repo, "main", sha, mode="ff", message="m")
    assert result.kind == "fast-forward" and result.sha == sha
    assert (repo / "a.txt").exists() and (repo / "mine.txt").read_text() == "uncommitted\n"
    assert run_git(repo, "status", "--porcelain").splitlines() == ["?? mine.txt"]


def test_merge_ff_refuses_when_the_target_moved_and_merge_commit_works(repo: Path) -> None:
    sha = _branch_with_commit(repo, "step", "a.txt")
    (repo / "b.txt").write_text("b\n")
    run_git(repo, "add", "b.txt")
    run_git(repo, "commit", "-q", "-m", "main moved")
    moved = run_git(repo, "rev-parse", "main").strip()
    with pytest.raises(GitError, match="cannot fast-forward main"):
        git.merge_into(repo, "main", sha, mode="ff", message="m")
    assert run_git(repo, "rev-parse", "main").strip() == moved
    run_git(repo, "switch", "-q", "--detach")  # target not checked out anywhere
    result = git.merge_into(repo, "main", sha, mode="merge", message="Merge step")
    assert result.kind == "merge-commit" and result.previous == moved
    parents = run_git(repo, "rev-list", "--parents", "-n", "1", "main").split()[1:]
    assert parents == [moved, sha]
    assert run_git(repo, "log", "-1", "--format=%s", "main").strip() == "Merge step"


def test_merge_conflict_is_refused_without_touching_anything(repo: Path) -> None:
    run_git(repo, "switch", "-q", "-c", "step")
    (repo / "README.md").write_text("theirs\n")
    run_git(repo, "commit", "-q", "-am", "theirs")
    sha = run_git(repo, "rev-parse", "HEAD").strip()
    run_git(repo, "switch", "-q", "main")
    (repo / "README.md").write_text("ours\n")
    run_git(repo, "commit", "-q", "-am", "ours")
    before = run_git(repo, "rev-parse", "main").strip()
    with pytest.raises(GitError, match="conflict"):
        git.merge_into(repo, "main", sha, mode="merge", message="m")
    assert run_git(repo, "rev-parse", "main").strip() == before
    assert run_git(repo, "status", "--porcelain") == ""
