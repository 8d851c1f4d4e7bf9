"""git.py additions: statistics with untracked/binary/renamed files, commits, worktrees, merges."""

from __future__ import annotations

import os
import shutil
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
    trailers = {"Gitflow-Agents-Run": "r-1"}
    sha = git.commit_work(repo, base, "step 1", trailers=trailers, exclude=("flows",)).sha
    assert sha is not None
    (repo / "more.txt").write_text("m\n")
    second = git.commit_work(repo, sha, "step 1 (fix)", exclude=("flows",)).sha
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
    assert git.commit_work(repo, second, "nothing", exclude=("flows",)) == (None, ())


def _commit_everything(repo: Path, message: str) -> str:
    """``git add -A`` and commit, as a user (or an agent) would: a nested repository becomes a
    gitlink."""
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", message)
    return run_git(repo, "rev-parse", "HEAD").strip()


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
    added = _commit_everything(repo, "vendor it")
    assert run_git(repo, "ls-tree", added, "vendor-lib").startswith("160000 commit ")
    [stat] = diff_stats(repo, base, added)
    assert (stat.path, stat.status, stat.added, stat.deleted) == ("vendor-lib", "A", 1, 0)
    assert stat.gitlink and not stat.binary
    _nested_repo(repo / "vendor-lib", "two\n")
    moved = _commit_everything(repo, "bump it")
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
    committed = _commit_everything(repo, "vendor it")
    (repo / "vendor-lib" / "lib.py").write_text("edited, not committed\n")
    (repo / "vendor-lib" / "untracked.py").write_text("x\n")
    assert diff_stats(repo, committed, exclude=("flows",)) == ()


def _gitlinks(repo: Path, rev: str) -> list[str]:
    out = run_git(repo, "ls-tree", "-r", rev)
    return [line.split("\t", 1)[1] for line in out.splitlines() if line.startswith("160000 ")]


def test_commit_work_leaves_out_a_nested_repository_and_keeps_it_on_disk(repo: Path) -> None:
    """A nested repository no ``.gitmodules`` registers is not staged (``git add -A`` would
    record a gitlink with no URL): the rest is committed, the folder stays as it was, and the
    result names it; a second one without a commit (``git init`` alone, which makes
    ``git add -A`` fail) too."""
    base = _base(repo)
    _nested_repo(repo / "vendor lib", "one\n")
    run_git(repo, "init", "-q", str(repo / "scratch"))
    (repo / "new.py").write_text("x = 1\n")
    committed = git.commit_work(repo, base, "work", exclude=("flows",))
    assert committed.left_out == ("scratch", "vendor lib") and committed.sha is not None
    assert run_git(repo, "ls-tree", "-r", "--name-only", committed.sha).split() == [
        "README.md",
        "docs/old.md",
        "keep.txt",
        "new.py",
    ]
    assert (repo / "vendor lib" / "lib.py").read_text() == "one\n"
    assert (repo / "scratch" / ".git").is_dir()
    assert run_git(repo, "diff", "--cached", "--name-only") == ""
    # nothing else to commit: the same answer again, no commit
    assert git.commit_work(repo, committed.sha, "again") == (None, ("scratch", "vendor lib"))
    assert git.head_and_dirty(repo, nested=False) == (committed.sha, ())
    assert set(git.head_and_dirty(repo)[1]) == {"scratch/", "vendor lib/"}


def test_commit_work_with_only_a_nested_repository_commits_nothing(repo: Path) -> None:
    base = _base(repo)
    _nested_repo(repo / "vendor-lib", "one\n")
    assert git.commit_work(repo, base, "vendor it") == (None, ("vendor-lib",))
    assert run_git(repo, "rev-parse", "HEAD").strip() == base


def test_commit_work_takes_a_gitlink_the_agent_committed_out_again(repo: Path) -> None:
    """A gitlink the agent committed itself since it started (new, or moved to another commit)
    is put back as the start has it by the commit; when its commits held nothing else, the
    branch goes back to the start (the files stay)."""
    base = _base(repo)
    _nested_repo(repo / "vendor-lib", "one\n")
    (repo / "new.py").write_text("x = 1\n")
    own = _commit_everything(repo, "agent's own")
    assert _gitlinks(repo, own) == ["vendor-lib"]
    committed = git.commit_work(repo, base, "step 1")
    assert committed.left_out == ("vendor-lib",) and committed.sha is not None
    assert run_git(repo, "rev-parse", f"{committed.sha}^").strip() == own
    assert _gitlinks(repo, committed.sha) == []
    assert "new.py" in run_git(repo, "ls-tree", "--name-only", committed.sha).split()
    assert (repo / "vendor-lib" / "lib.py").is_file()
    # only gitlinks in its own commit (vendor-lib, still there, too): back to where it
    # started, the folders kept
    _nested_repo(repo / "other", "two\n")
    _commit_everything(repo, "agent's own, gitlinks alone")
    start = committed.sha
    assert git.commit_work(repo, start, "step 1 (fix)") == (None, ("other", "vendor-lib"))
    assert run_git(repo, "rev-parse", "HEAD").strip() == start
    assert (repo / "other" / "lib.py").is_file() and (repo / "vendor-lib" / "lib.py").is_file()


def test_commit_work_commits_a_submodule_gitmodules_registers(repo: Path, tmp_path: Path) -> None:
    """``git submodule add``: registered in the staged ``.gitmodules``, committed as before;
    moved to another commit later, committed again."""
    base = _base(repo)
    source = tmp_path / "lib-source"
    _nested_repo(source, "one\n")
    run_git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "lib")
    committed = git.commit_work(repo, base, "add the submodule")
    assert committed.left_out == () and committed.sha is not None
    assert _gitlinks(repo, committed.sha) == ["lib"]
    assert "path = lib" in run_git(repo, "show", f"{committed.sha}:.gitmodules")
    _nested_repo(repo / "lib", "two\n")  # a new commit in the submodule
    moved = git.commit_work(repo, committed.sha, "bump it")
    assert moved.left_out == () and moved.sha is not None
    [stat] = diff_stats(repo, committed.sha, moved.sha)
    assert (stat.path, stat.status, stat.gitlink) == ("lib", "M", True)


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


def test_commit_work_keeps_a_gitlink_a_merge_in_progress_brings(repo: Path) -> None:
    """The target merged into a step branch (a conflict an agent resolves) may bring a gitlink
    the target has (an earlier version committed nested repositories): the merge's other side,
    not the agent's, so the commit completing the merge keeps it as the target has it."""
    base = _base(repo)
    run_git(repo, "checkout", "-q", "-b", "step")
    (repo / "step.txt").write_text("step\n")
    start = _commit_everything(repo, "the step")
    run_git(repo, "checkout", "-q", "main")
    _nested_repo(repo / "vendor-lib", "one\n")
    target = _commit_everything(repo, "a gitlink landed on the target")
    shutil.rmtree(repo / "vendor-lib")
    run_git(repo, "checkout", "-q", "step")
    run_git(repo, "merge", "-q", "--no-commit", "--no-ff", target)
    committed = git.commit_work(repo, start, "merge the target")
    assert committed.left_out == () and committed.sha is not None
    assert _gitlinks(repo, committed.sha) == ["vendor-lib"] == _gitlinks(repo, target)
    assert run_git(repo, "rev-parse", f"{committed.sha}^2").strip() == target != base
