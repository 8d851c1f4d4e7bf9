"""Only reviewed trees land (issue 22, item 2): what guards the target, said before the first
merge, and GitHub's auto-merge leaving a behind pull request alone when the target is strict.

The rules and protection endpoints are the stand-in's (tests/standin_rules.py), validated against
GitHub's OpenAPI description like every other request.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.github.api.rules import branch_guard
from tests.conftest import git
from tests.github_standin import GitHubStandIn, client_for, gh
from tests.helpers.step_pr import env, origin_sha, run_pr, setup_repo, summaries
from tests.standin_pulls import play_auto_merge
from tests.standin_rules import MERGE_QUEUE_RULE, strict_rule

__all__ = ["env", "gh"]


def test_no_rule_and_unreadable_protection_is_unguarded_and_says_it_is_unknown(
    gh: GitHubStandIn,
) -> None:
    gh.state.protection["main"] = {"strict": True}
    gh.state.protection_readable = False  # a token without admin read sees a 404
    guard = branch_guard(client_for(gh), gh.full_name, "main")
    assert not guard.guarded and guard.unknown is not None and "404" in guard.unknown
    warning = guard.warning()
    assert warning is not None and "could not be read" in warning
    assert gh.requests("GET", "/protection/required_status_checks$")


@pytest.mark.parametrize(
    ("rules", "protection", "guarded"),
    [
        ([strict_rule(strict=True)], None, True),
        ([MERGE_QUEUE_RULE], None, True),
        ([strict_rule(strict=False)], None, False),
        ([], {"strict": True}, True),
        ([], {"strict": False}, False),
        ([strict_rule(strict=False)], {"strict": True}, True),
    ],
)
def test_a_strict_rule_a_merge_queue_or_strict_protection_guards_the_target(
    gh: GitHubStandIn,
    rules: list[dict[str, object]],
    protection: dict[str, bool] | None,
    guarded: bool,
) -> None:
    gh.state.branch_rules["main"] = rules
    if protection is not None:
        gh.state.protection["main"] = protection
    guard = branch_guard(client_for(gh), gh.full_name, "main")
    assert guard.guarded is guarded
    assert (guard.warning() is None) is guarded
    if not guarded and protection is not None:
        assert guard.unknown is None  # protection was read: not strict, not unknown


def test_a_ruleset_that_guards_needs_no_protection_request(gh: GitHubStandIn) -> None:
    gh.state.branch_rules["main"] = [MERGE_QUEUE_RULE]
    assert branch_guard(client_for(gh, "tok-read"), gh.full_name, "main").guarded
    assert not gh.requests("GET", "/protection/")


def test_run_pr_auto_merge_says_plainly_when_nothing_guards_the_target(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    out = run_pr(repo, "--step", "1", "--auto-merge", "squash")
    assert out.returncode == 0, out.stdout + out.stderr
    first = out.stdout.splitlines()
    warning = next(
        i for i, line in enumerate(first) if line.startswith("warning: nothing guards main")
    )
    pr_line = next(i for i, line in enumerate(first) if "PR #" in line)
    assert warning < pr_line  # said before the pull request (and so before the first merge)
    [pull] = gh.state.pulls.values()
    [summary] = summaries(gh, pull.number)
    assert "Auto-merge is on, but nothing guards main" in summary


def test_run_pr_auto_merge_on_a_strict_target_warns_of_nothing(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    gh.state.branch_rules["main"] = [strict_rule()]
    repo = setup_repo(tmp_path, gh)
    out = run_pr(repo, "--step", "1", "--auto-merge", "squash")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "auto-merge: main is guarded" in out.stdout and "warning: nothing" not in out.stdout
    [pull] = gh.state.pulls.values()
    [summary] = summaries(gh, pull.number)
    assert "nothing guards" not in summary


def test_without_auto_merge_the_rules_are_not_read(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert not gh.requests("GET", "/rules/branches/") and "nothing guards" not in out.stdout


def test_auto_merge_leaves_a_behind_pull_request_of_a_strict_target_unmerged(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    gh.state.branch_rules["main"] = [strict_rule()]
    repo = setup_repo(tmp_path, gh)
    assert run_pr(repo, "--step", "1", "--auto-merge", "squash").returncode == 0
    # a human commit lands on main meanwhile: the pull request is behind
    human = setup_repo(tmp_path, gh, name="human")
    (human / "unrelated.txt").write_text("a human's change\n")
    git(human, "add", "unrelated.txt")
    git(human, "commit", "-q", "-m", "unrelated")
    git(human, "push", "-q", "origin", "main")
    assert play_auto_merge(gh) == []
    [pull] = gh.state.pulls.values()
    assert pull.state == "open" and not pull.merged
    gh.state.branch_rules["main"] = []  # not strict: GitHub squashes it onto the new main
    [event] = play_auto_merge(gh)
    assert origin_sha(gh, "refs/heads/main") == event["after"] and pull.merged
