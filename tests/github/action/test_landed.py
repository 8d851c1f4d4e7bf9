"""A push to the target, checked by the action: the landed tree is one the tool approved, or the
pushed commit gets a failing ``gitflow-agents/landed`` status (issue 22, item 2).

Real ``run --step N --pr`` on a bare origin with the stand-in, GitHub's auto-merge played with
real git (tests/standin_pulls.py), then ``gitflow-agents action`` on the ``push`` event GitHub
sends for the merge, in a checkout of the pushed commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import git
from tests.github_events import push_event
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import Runner, read_outputs
from tests.helpers.step_pr import BRANCH, env, origin_sha, run_pr, setup_repo
from tests.standin_pulls import play_auto_merge

__all__ = ["env", "gh"]

LANDED = "gitflow-agents/landed"


def landed_states(gh: GitHubStandIn, sha: str) -> list[str]:
    return [s["state"] for s in gh.statuses_for(sha) if s["context"] == LANDED]


def check_push(tmp_path: Path, gh: GitHubStandIn, event: dict[str, Any]) -> Any:
    """``gitflow-agents action`` on ``event`` in a fresh checkout of origin's main."""
    assert gh.state.origin is not None
    workspace = tmp_path / f"push-{len(list(tmp_path.glob('push-*')))}"
    git(tmp_path, "clone", "-q", "--depth", "1", gh.state.origin.as_uri(), str(workspace))
    return Runner(tmp_path, gh, workspace).run("push", event, "tok-actions")


def human_commit(tmp_path: Path, gh: GitHubStandIn, name: str = "human") -> str:
    human = setup_repo(tmp_path, gh, name=name)
    (human / f"{name}.txt").write_text("a human's change\n")
    git(human, "add", f"{name}.txt")
    git(human, "commit", "-q", "-m", f"{name}'s change")
    git(human, "push", "-q", "origin", "main")
    return git(human, "rev-parse", "HEAD").strip()


def test_a_squash_of_an_up_to_date_approved_head_landed_as_approved(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    assert run_pr(repo, "--step", "1", "--auto-merge", "squash").returncode == 0
    [event] = play_auto_merge(gh)
    out = check_push(tmp_path, gh, event)
    assert out.returncode == 0, out.stdout + out.stderr
    assert landed_states(gh, event["after"]) == ["success"]
    # a second run of the same check is as safe: one more identical status
    assert check_push(tmp_path, gh, event).returncode == 0
    assert landed_states(gh, event["after"]) == ["success", "success"]


def test_a_behind_pull_request_squashed_onto_a_moved_target_is_flagged(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    assert run_pr(repo, "--step", "1", "--auto-merge", "squash").returncode == 0
    human_commit(tmp_path, gh)  # the pull request is now behind; nothing requires up to date
    [event] = play_auto_merge(gh)
    out = check_push(tmp_path, gh, event)
    assert out.returncode == 1, out.stdout + out.stderr
    assert landed_states(gh, event["after"]) == ["failure"]
    [status] = [s for s in gh.statuses_for(event["after"]) if s["context"] == LANDED]
    assert "#1" in status["description"]
    assert "unreviewed tree landed" in (tmp_path / "runner" / "step_summary.md").read_text()


def test_a_direct_push_without_a_pull_request_is_flagged(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    setup_repo(tmp_path, gh)
    before = origin_sha(gh, "refs/heads/main")
    assert before is not None
    after = human_commit(tmp_path, gh)
    event = push_event(gh.full_name, "refs/heads/main", before, after)
    assert check_push(tmp_path, gh, event).returncode == 1
    assert landed_states(gh, after) == ["failure"]


def test_an_approved_head_pushed_as_it_is_landed_as_approved(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    # a merge queue pushes its approved group as it is; so does a fast-forward of a head
    repo = setup_repo(tmp_path, gh)
    assert run_pr(repo, "--step", "1").returncode == 0
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    before = origin_sha(gh, "refs/heads/main")
    assert head is not None and before is not None
    git(repo, "push", "-q", "origin", f"{head}:refs/heads/main")
    event = push_event(gh.full_name, "refs/heads/main", before, head)
    assert check_push(tmp_path, gh, event).returncode == 0
    assert landed_states(gh, head) == ["success"]
    assert not gh.requests("GET", r"/commits/[0-9a-f]+/pulls$")  # the first read settled it


def test_a_pushed_commit_the_checkout_lacks_is_fetched_from_origin(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """The checkout was made before the push: the pushed commit is fetched (the fallback never
    ran: git's failure was not the error it caught), then judged."""
    setup_repo(tmp_path, gh)
    assert gh.state.origin is not None
    workspace = tmp_path / "early"
    git(tmp_path, "clone", "-q", "--depth", "1", gh.state.origin.as_uri(), str(workspace))
    before = origin_sha(gh, "refs/heads/main")
    assert before is not None
    after = human_commit(tmp_path, gh)
    runner = Runner(tmp_path, gh, workspace)
    out = runner.run("push", push_event(gh.full_name, "refs/heads/main", before, after))
    assert out.returncode == 1, out.stdout + out.stderr  # judged: a direct push, unreviewed
    assert landed_states(gh, after) == ["failure"]


def test_a_pushed_commit_nowhere_to_be_had_is_one_line_and_an_error_output(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    setup_repo(tmp_path, gh)
    assert gh.state.origin is not None
    workspace = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", gh.state.origin.as_uri(), str(workspace))
    before = origin_sha(gh, "refs/heads/main")
    assert before is not None
    missing = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"  # GitHub's example push's commit
    runner = Runner(tmp_path, gh, workspace)
    out = runner.run("push", push_event(gh.full_name, "refs/heads/main", before, missing))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "6113728f27ae is not in the checkout" in out.stderr and "rev-parse" not in out.stderr
    assert runner.outputs()["review-result"] == "error"
    assert landed_states(gh, missing) == []


def test_a_push_github_fails_still_writes_the_job_summary_and_every_output(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """GitHub failing after its retries on a read (the commit's pull requests) or refusing the
    status write (a token without ``statuses: write``): exit 4, and the outputs and the job
    summary say so, as for a pull request's run (docs/github.md, "Outputs")."""
    setup_repo(tmp_path, gh)
    before = origin_sha(gh, "refs/heads/main")
    assert before is not None
    after = human_commit(tmp_path, gh)
    event = push_event(gh.full_name, "refs/heads/main", before, after)
    summary = tmp_path / "runner" / "step_summary.md"
    for method, path, code in [
        ("GET", r"/commits/[0-9a-f]+/pulls$", 502),
        ("POST", r"/statuses/", 403),
    ]:
        gh.fail(method, path, code, times=5)
        out = check_push(tmp_path, gh, event)
        gh.faults.clear()
        assert out.returncode == 4, out.stdout + out.stderr
        outputs = read_outputs((tmp_path / "runner" / "output").read_text())
        assert outputs["review-result"] == "error"
        assert outputs["head-sha"] == after
        assert f"HTTP {code}" in outputs["github-error"]
        assert "the landed check did not complete" in summary.read_text()
        assert f"{after[:12]} was not judged" in summary.read_text()
    assert landed_states(gh, after) == []
