"""The git processes of ``run --pr`` and ``plan tend`` (issue 21, item 7: the product asks git
once what one command needs once). Counted by a ``git`` first in ``PATH``
(tests/helpers/git_calls.py): the identity (``git var``) is asked once per command, origin's URL
once, the step branch and its lease in one ``ls-remote``, origin's target is not fetched again
for the claim right after ``on_origin`` fetched it, and a fetched head is read from its
remote-tracking ref, not asked of origin again. Bounds, not exact counts: the chain's own calls
may only go down."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import git
from tests.github.pr.test_tend import land_on_main, tend
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.git_calls import count_git, fetches_of, git_calls
from tests.helpers.opened_step import Opened, opened_step, restore
from tests.helpers.step_pr import BRANCH, env, origin_sha, run_pr, setup_repo, statuses

__all__ = ["env", "gh", "opened_step"]

BOT = "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>"


def test_run_pr_asks_git_once_what_it_needs_once(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = setup_repo(tmp_path, gh)
    log = count_git(tmp_path, monkeypatch)
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    calls = git_calls(log, outside=tmp_path / "origin.git")
    commands = Counter(args[0] for args in calls)
    assert commands["var"] == 2, calls  # GIT_AUTHOR_IDENT, GIT_COMMITTER_IDENT: once each
    assert commands["remote"] == 1 and commands["ls-remote"] == 1, calls
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None  # git knew the identity: the commits are the runner's own
    assert git(repo, "log", "-1", "--format=%an|%cn", head).strip() == "Test Author|Test Committer"
    # on_origin's, the claim's second look, the chain's (its work tree, then moved-on twice)
    assert fetches_of(calls, "refs/heads/main") <= 5, calls
    # the same command again: the step is started, read with one ls-remote
    since = len(log.read_text().splitlines())
    again = run_pr(setup_repo(tmp_path, gh, name="again"), "--step", "1")
    assert again.returncode == 0 and "already started" in again.stdout, again.stdout
    calls = git_calls(log, since, outside=tmp_path / "origin.git")
    assert Counter(args[0] for args in calls)["ls-remote"] == 1, calls


def test_a_runner_without_a_git_identity_commits_as_the_actions_bot(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh runner knows no git identity: the step's commits are github-actions[bot]'s
    (``on_origin`` no longer asks git again; ``open_context`` asked)."""
    repo = setup_repo(tmp_path, gh)
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GIT_COMMITTER_EMAIL")
    git(repo, "config", "user.useConfigOnly", "true")  # no guessing from the host name
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None
    who = git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", head).strip()
    assert who == f"{BOT}|{BOT}"


def test_a_tend_asks_origin_for_each_branch_once(
    tmp_path: Path,
    gh: GitHubStandIn,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    opened_step: Opened,
) -> None:
    """A behind pull request tended: origin's branches listed once, the lease once; the head,
    fetched before and again under the lease, read from its remote-tracking ref each time."""
    repo = restore(opened_step, tmp_path, gh)
    land_on_main(tmp_path, "teammate", "OTHER.md", "landed meanwhile\n")
    log = count_git(tmp_path, monkeypatch)
    out = tend(repo, "--auto-merge", "squash")
    assert out.returncode == 0 and "tending it" in out.stdout, out.stdout + out.stderr
    calls = git_calls(log, outside=tmp_path / "origin.git")
    commands = Counter(args[0] for args in calls)
    assert commands["var"] == 2 and commands["ls-remote"] == 2, calls
    assert fetches_of(calls, f"refs/heads/{BRANCH}") == 2, calls
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None and statuses(gh, head)[-1] == "success"
