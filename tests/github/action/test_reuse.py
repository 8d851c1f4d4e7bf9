"""Cheap merge-queue groups: a group that is one approved pull request merged onto its base
reuses that approval (no agent runs); anything else is reviewed as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git
from tests.github.action.test_github_base_config import base_with_reviewer
from tests.github_events import merge_group_event
from tests.github_standin import GitHubStandIn, Pull, client_for, gh
from tests.helpers.action_runner import FINE, Runner, pr_event, pr_files, states
from tests.helpers.old_git import git_refusing

__all__ = ["gh"]


def approved_pull(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, number: int, files: dict[str, str], log: Path
) -> Pull:
    """Pull request ``number`` (branch ``pr-N`` off main) reviewed and approved by the Action
    with the base's fake reviewer (it writes to ``log`` when it runs)."""
    base = git(repo, "rev-parse", "main").strip()
    git(repo, "checkout", "-q", "-b", f"pr-{number}", "main")
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", f"change {number}")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    pull = gh.add_pull(
        Pull(number, head, base, pr_files(repo, base, head), head_ref=f"pr-{number}")
    )
    (tmp_path / f"pr-{number}").mkdir()
    runner = Runner(tmp_path / f"pr-{number}", gh, repo)
    result = runner.run_with(
        {"FAKE_REVIEWER_LOG": str(log)}, "pull_request", pr_event(gh, pull), "--agent", "gate"
    )
    assert result.returncode == 0, result.stderr
    assert states(gh, head)[-1] == "success"
    return pull


def queue_group(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, numbers: list[int]
) -> tuple[Runner, dict[str, object]]:
    """The queue's group of pull requests ``numbers`` merged onto main in order (merge
    commits, as the merge method "merge" builds them), pushed to a bare origin that has every
    ``refs/pull/N/head``; the workspace a depth-1 clone of the group's head."""
    base = git(repo, "rev-parse", "main").strip()
    branch = f"gh-readonly-queue/main/pr-{numbers[-1]}-{base}"
    git(repo, "checkout", "-q", "-b", branch, "main")
    for number in numbers:
        git(repo, "merge", "-q", "--no-ff", f"pr-{number}", "-m", f"Merge pull request #{number}")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(origin))
    for number in numbers:
        git(origin, "update-ref", f"refs/pull/{number}/head", f"refs/heads/pr-{number}")
    workspace = tmp_path / "workspace"
    git(
        tmp_path, "clone", "-q", "--depth", "1", "--branch", branch, origin.as_uri(), str(workspace)
    )
    event = merge_group_event("octo/demo", head, base, head_ref=f"refs/heads/{branch}")
    gh.state.origin = origin  # GitHub knows only what reached origin
    return Runner(tmp_path, gh, workspace), event


def run_group(runner: Runner, event: dict[str, object], log: Path) -> int:
    result = runner.run_with(
        {"FAKE_REVIEWER_LOG": str(log)}, "merge_group", event, "--agent", "gate"
    )
    return result.returncode


def group_status(gh: GitHubStandIn, event: dict[str, object]) -> dict[str, object]:
    head = str(event["merge_group"]["head_sha"])  # type: ignore[index]
    return [s for s in gh.statuses_for(head) if s["context"] == "gitflow-agents/review"][-1]


def test_a_single_pr_group_reuses_its_approval_and_runs_no_agent(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    base_with_reviewer(repo, "approve")
    log = tmp_path / "reviewer.log"
    pull = approved_pull(gh, repo, tmp_path, 7, {"fine.py": FINE}, log)
    assert log.read_text() == "approve\n"
    log.unlink()
    runner, event = queue_group(gh, repo, tmp_path, [7])
    assert run_group(runner, event, log) == 0
    assert not log.exists()  # the agent reviewer never ran
    status = group_status(gh, event)
    assert status["state"] == "success"
    assert status["description"] == f"Approved: reuses the approval of #7 at {pull.head_sha[:12]}"
    outputs = runner.outputs()
    assert outputs["review-result"] == "approved" and outputs["input-tokens"] == "0"
    assert "reuses the approval of #7" in runner.summary.read_text()
    # The same run again: the same verdict, still no agent.
    assert run_group(runner, event, log) == 0 and not log.exists()


def test_a_group_with_a_second_pr_is_reviewed(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    base_with_reviewer(repo, "approve")
    log = tmp_path / "reviewer.log"
    approved_pull(gh, repo, tmp_path, 7, {"fine.py": FINE}, log)
    approved_pull(gh, repo, tmp_path, 8, {"other.py": FINE}, log)
    log.unlink()
    runner, event = queue_group(gh, repo, tmp_path, [7, 8])
    assert run_group(runner, event, log) == 0
    assert log.read_text() == "approve\n"  # reviewed by the agent, as before
    status = group_status(gh, event)
    assert status["state"] == "success" and "reuses" not in str(status["description"])
    summary = runner.summary.read_text()
    assert "no approval reused: the group's tree is not #8's approved head" in summary


def test_a_git_before_2_38_reviews_the_group_in_full_and_says_why(
    gh: GitHubStandIn, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group's merge cannot be computed (no ``merge-tree --write-tree``): not taken for a
    conflict or another pull request, and no failed job, but a review as before."""
    base_with_reviewer(repo, "approve")
    log = tmp_path / "reviewer.log"
    approved_pull(gh, repo, tmp_path, 7, {"fine.py": FINE}, log)
    log.unlink()
    runner, event = queue_group(gh, repo, tmp_path, [7])
    git_refusing("--write-tree", tmp_path, monkeypatch, version="2.34.1")
    assert run_group(runner, event, log) == 0
    assert log.read_text() == "approve\n"  # reviewed by the agent
    assert group_status(gh, event)["state"] == "success"
    summary = runner.summary.read_text()
    assert (
        "no approval reused: merging a pull request onto its base needs git 2.38 or newer"
    ) in summary
    assert "this is git 2.34.1: install a newer git" in summary


def test_an_approval_someone_else_set_is_not_reused(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """A ``success`` of our context written by another token proves nothing: reviewed."""
    base_with_reviewer(repo, "revise")
    log = tmp_path / "reviewer.log"
    pull = approved_pull_by_hand(gh, repo, 7)
    runner, event = queue_group(gh, repo, tmp_path, [7])
    assert run_group(runner, event, log) == 1
    assert log.read_text() == "revise\n"
    assert group_status(gh, event)["state"] == "failure"
    assert "#7 has no approval of ours" in runner.summary.read_text()
    assert pull.number == 7


def approved_pull_by_hand(gh: GitHubStandIn, repo: Path, number: int) -> Pull:
    """Pull request ``number`` whose head someone marked ``success`` with a personal token."""
    base = git(repo, "rev-parse", "main").strip()
    git(repo, "checkout", "-q", "-b", f"pr-{number}", "main")
    (repo / "fine.py").write_text(FINE)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "change")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    pull = gh.add_pull(
        Pull(number, head, base, pr_files(repo, base, head), head_ref=f"pr-{number}")
    )
    client_for(gh, "tok-other").create_status(
        "octo/demo", head, state="success", context="gitflow-agents/review", description="ok"
    )
    return pull


def test_a_pull_request_head_that_is_no_commit_id_is_never_reused(
    gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    """A head GitHub answers as ``"HEAD"`` (our approval on it) is refused before it reaches
    git, where it would name the checkout's own HEAD: the group is reviewed."""
    base_with_reviewer(repo, "revise")
    log = tmp_path / "reviewer.log"
    pull = approved_pull_by_hand(gh, repo, 7)
    client_for(gh, "tok-actions").create_status(
        "octo/demo", "HEAD", state="success", context="gitflow-agents/review", description="ok"
    )
    pull.head_sha = "HEAD"
    runner, event = queue_group(gh, repo, tmp_path, [7])
    assert run_group(runner, event, log) == 1
    assert log.read_text() == "revise\n"
    assert "#7 has no usable head commit id" in runner.summary.read_text()
