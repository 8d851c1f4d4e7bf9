"""git.py's remote helpers (fetch, ls-remote, push) and the commit identity, on real git.

``origin`` is a local bare repository; a second clone plays everyone else who pushes to it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitflow_agents.base.errors import GitError, UsageError
from gitflow_agents.git import queries as g
from tests.conftest import git


def commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"write {name}")
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def origin(repo: Path, tmp_path: Path) -> Path:
    """A bare ``origin`` of ``repo`` with ``main`` and ``feature`` (one commit ahead)."""
    git(repo, "branch", "feature")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    return bare


@pytest.fixture
def other(origin: Path, tmp_path: Path) -> Path:
    """Someone else's clone of ``origin``."""
    path = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(origin), str(path))
    return path


def test_fetch_ref_brings_a_commit_only_the_remote_has(
    repo: Path, origin: Path, other: Path
) -> None:
    sha = commit(other, "pr.txt", "from the pull request\n")
    git(other, "push", "-q", "origin", f"{sha}:refs/pull/7/head")
    with pytest.raises(UsageError):
        g.rev_parse(repo, sha)
    assert g.fetch_ref(repo, "+refs/pull/7/head") is True
    assert g.rev_parse(repo, sha) == sha
    assert not g.ref_exists(repo, "refs/pull/7/head")  # objects only: no ref appears


def test_fetch_ref_of_a_missing_ref_is_false_not_an_error(repo: Path, origin: Path) -> None:
    assert g.fetch_ref(repo, "refs/heads/no-such-branch") is False
    assert g.fetch_ref(repo, "refs/heads/main", remote="no-such-remote") is False


def test_remote_branch_sha_reads_the_remote_not_the_local_branch(
    repo: Path, origin: Path, other: Path
) -> None:
    local = git(repo, "rev-parse", "feature").strip()
    assert g.remote_branch_sha(repo, "feature") == local
    git(other, "checkout", "-q", "feature")
    moved = commit(other, "more.txt", "more\n")
    git(other, "push", "-q", "origin", "feature")
    assert g.remote_branch_sha(repo, "feature") == moved != local
    assert g.remote_branch_sha(repo, "no-such-branch") is None


def test_remote_branch_sha_names_branch_and_remote_when_unreadable(
    repo: Path, origin: Path, tmp_path: Path
) -> None:
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    with pytest.raises(GitError, match=r"^cannot read branch feature from origin: \S"):
        g.remote_branch_sha(repo, "feature")


def test_push_branch_fast_forwards_and_dry_run_changes_nothing(repo: Path, origin: Path) -> None:
    git(repo, "checkout", "-q", "feature")
    sha = commit(repo, "fix.txt", "fixed\n")
    probe = g.push_branch(repo, sha, "feature", dry_run=True)
    assert (probe.ok, probe.moved, probe.detail) == (True, False, "")
    assert git(origin, "rev-parse", "feature").strip() != sha
    pushed = g.push_branch(repo, sha, "feature")
    assert (pushed.ok, pushed.moved) == (True, False)
    assert git(origin, "rev-parse", "feature").strip() == sha


def test_push_branch_never_forces_over_a_branch_that_moved(
    repo: Path, origin: Path, other: Path
) -> None:
    git(other, "checkout", "-q", "feature")
    theirs = commit(other, "theirs.txt", "theirs\n")
    git(other, "push", "-q", "origin", "feature")
    git(repo, "checkout", "-q", "feature")
    ours = commit(repo, "ours.txt", "ours\n")
    for dry_run in (True, False):
        refused = g.push_branch(repo, ours, "feature", dry_run=dry_run)
        assert (refused.ok, refused.moved) == (False, True)
        assert git(origin, "rev-parse", "feature").strip() == theirs


def test_push_branch_refused_by_the_server_says_what_it_said(repo: Path, origin: Path) -> None:
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'Permission to owner/demo.git denied.' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = git(origin, "rev-parse", "feature").strip()
    git(repo, "checkout", "-q", "feature")
    sha = commit(repo, "fix.txt", "fixed\n")
    refused = g.push_branch(repo, sha, "feature")
    assert (refused.ok, refused.moved) == (False, False)
    assert "Permission to owner/demo.git denied." in refused.detail
    assert git(origin, "rev-parse", "feature").strip() == before


def test_push_branch_to_a_missing_remote_is_refused_with_gits_words(
    repo: Path, origin: Path, tmp_path: Path
) -> None:
    git(repo, "remote", "set-url", "--push", "origin", str(tmp_path / "gone.git"))
    refused = g.push_branch(repo, git(repo, "rev-parse", "HEAD").strip(), "feature", dry_run=True)
    assert (refused.ok, refused.moved) == (False, False)
    assert "Could not read from remote repository" in refused.detail


BOT = ("github-actions[bot]", "bot@users.noreply.github.com")
IDENTITY_VARS = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")


def test_commit_identity_is_empty_when_git_knows_one(repo: Path) -> None:
    assert os.environ["GIT_AUTHOR_NAME"] == "Test Author"  # conftest's identity
    assert g.commit_identity(repo, *BOT) == {}


def test_commit_identity_without_one_returns_an_environment_and_changes_none(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (*IDENTITY_VARS, "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    git(repo, "config", "user.useConfigOnly", "true")  # no guessing from the host name
    before = dict(os.environ)
    identity = g.commit_identity(repo, *BOT)
    assert identity == {
        "GIT_AUTHOR_NAME": BOT[0],
        "GIT_AUTHOR_EMAIL": BOT[1],
        "GIT_COMMITTER_NAME": BOT[0],
        "GIT_COMMITTER_EMAIL": BOT[1],
    }
    assert dict(os.environ) == before
    refused = subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "anonymous"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and "email" in refused.stderr  # git refuses without one
    for name, value in identity.items():  # what it returns is enough for a commit
        monkeypatch.setenv(name, value)
    (repo / "README.md").write_text("# changed\n")
    sha = g.commit_paths(repo, ["README.md"], "with the bot's identity")
    assert sha is not None
    author = git(repo, "log", "-1", "--format=%an <%ae> / %cn <%ce>", sha).strip()
    assert author == f"{BOT[0]} <{BOT[1]}> / {BOT[0]} <{BOT[1]}>"


def test_commit_identity_keeps_what_the_environment_already_sets(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (*IDENTITY_VARS, "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "A Human")
    git(repo, "config", "user.useConfigOnly", "true")
    identity = g.commit_identity(repo, *BOT)
    assert "GIT_AUTHOR_NAME" not in identity
    assert identity["GIT_AUTHOR_EMAIL"] == BOT[1] and identity["GIT_COMMITTER_NAME"] == BOT[0]
