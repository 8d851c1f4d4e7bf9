"""``run --all --pr`` re-run after its own run was lost: a step it finds started on origin is
taken over when the claim is this checkout's lost one (the test ``run --step N --pr`` applies),
and left alone, named in the run's last line, when another run holds it.

Real processes (the orchestrator killed with ``kill -9`` while it asks for step 1's pull
request), fake agents, a local bare origin with real pushes, and the GitHub stand-in, as in
tests/github/pr/test_step_pr_takeover.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from gitflow_agents.git import lease as git_lease
from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.step_pr import (
    BRANCH,
    env,
    implementer_runs,
    independent_steps_runner,
    kill_9_between_the_push_and_the_pull_request,
    origin_sha,
    run_pr,
    statuses,
)

__all__ = ["env", "gh"]

STEP_2 = "agents/feature/step-2"


def claims(repo: Path) -> list[dict[str, object]]:
    found = sorted((repo / "flows" / "feature" / "runs").glob("*/claim.json"))
    return [{**json.loads(p.read_text()), "runId": p.parent.name} for p in found]


def pulls_by_branch(gh: GitHubStandIn) -> dict[str, str]:
    return {pull.head_ref: pull.head_sha for pull in gh.state.pulls.values()}


def test_run_all_killed_before_a_pull_request_takes_its_own_lost_claim_over(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """docs/github.md, "Taking over a lost claim": the same command on the same checkout takes
    the claim over, without --force; for ``--all`` as for ``--step``."""
    repo = independent_steps_runner(tmp_path, gh)  # steps 1 and 2 ready in one wave
    pushed = kill_9_between_the_push_and_the_pull_request(repo, gh, env, "--all")
    assert origin_sha(gh, f"refs/heads/{STEP_2}") is None  # killed before step 2
    [lost] = claims(repo)
    assert lost["state"] == "pushing" and lost["pushed"] == [pushed]
    runs = implementer_runs(repo)
    out = run_pr(repo, "--all")  # the same command, no --force
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ready: 1, 2;" in out.stdout and "started (branch on origin): -;" in out.stdout
    assert f"free: 1 (the lost run {lost['runId']} of this checkout" in out.stdout
    assert f"step 1: taking over {BRANCH} on origin" in out.stdout
    assert f"from the lost run {lost['runId']} of this checkout" in out.stdout
    # step 1's pushed work is published as it was (reviewed, not implemented again), then step 2
    assert pulls_by_branch(gh) == {BRANCH: pushed, STEP_2: origin_sha(gh, f"refs/heads/{STEP_2}")}
    assert statuses(gh, pushed)[-1] == "success"
    assert implementer_runs(repo) == runs + 1  # step 2's implementer only
    assert "not started" not in out.stdout
    old, new, _step_2 = claims(repo)
    assert old["state"] == "taken-over" and old["by"] == new["runId"]
    assert new["state"] == "done" and new["takenOverFrom"] == lost["runId"]
    # the third time: both steps' runs ended, so they are started, left as they are
    writes = len(gh.writes())
    third = run_pr(repo, "--all")
    assert third.returncode == 0, third.stdout + third.stderr
    assert "started (branch on origin): 1, 2;" in third.stdout
    assert "taking over" not in third.stdout and len(gh.writes()) == writes
    assert third.stdout.splitlines()[-1] == "not started (already started, branch on origin): 1, 2"


def test_run_all_leaves_a_step_another_runner_holds_and_says_so(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Another runner's live claim of step 1 (its lease fresh, no record of it here): ``--all``
    runs step 2 and names step 1 as not started in its last line; exit 0, as for any started
    step (docs/github.md, "Exit codes")."""
    repo = independent_steps_runner(tmp_path, gh)
    main = git(repo, "rev-parse", "origin/main").strip()
    git(repo, "push", "-q", "origin", f"{main}:refs/heads/{BRANCH}")
    holder = {"host": "elsewhere", "pid": 4242, "claimedSha": main}
    assert git_lease.push_lease(repo, BRANCH, holder, "")[0] is not None
    out = run_pr(repo, "--all")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ready: 2;" in out.stdout and "started (branch on origin): 1;" in out.stdout
    assert list(pulls_by_branch(gh)) == [STEP_2]
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == main  # left to its holder
    assert out.stdout.splitlines()[-1] == "not started (already started, branch on origin): 1"


def test_run_all_leaves_its_lost_claim_another_runner_took_over(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Killed before step 1's pull request; meanwhile another runner took the claim over (its
    lease names that runner now): the claim is theirs, so ``--all`` leaves step 1 alone, as
    ``--step 1`` does."""
    repo = independent_steps_runner(tmp_path, gh)
    pushed = kill_9_between_the_push_and_the_pull_request(repo, gh, env, "--all")
    found = git_lease.read_lease(repo, BRANCH)
    assert found is not None
    theirs = {"host": "elsewhere", "pid": 4242, "claimedSha": pushed}
    assert git_lease.push_lease(repo, BRANCH, theirs, found.sha)[0] is not None
    out = run_pr(repo, "--all")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "started (branch on origin): 1;" in out.stdout and "taking over" not in out.stdout
    assert list(pulls_by_branch(gh)) == [STEP_2]
    assert out.stdout.splitlines()[-1] == "not started (already started, branch on origin): 1"
    step_1 = run_pr(repo, "--step", "1")  # --step agrees
    assert step_1.returncode == 0 and "step 1 already started" in step_1.stdout
    assert "taking over" not in step_1.stdout
