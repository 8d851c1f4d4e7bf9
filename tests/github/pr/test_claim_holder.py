"""``claim.json`` names its holder as the lease on origin does (workflow run id and attempt,
repository, host, pid), so that a re-run of this checkout taking over its own lost claim and
the lease agree (issue 22): the lease is rewritten as the re-run's and renewed; a lease that
names another holder (it took the claim over as free) keeps the claim theirs; an older
``claim.json`` that names only its pid is still taken over."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from gitflow_agents.git import lease as git_lease
from gitflow_agents.github.pr import lease as leases
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.step_pr import (
    BRANCH,
    env,
    kill_9_between_the_push_and_the_pull_request,
    lease_on_origin,
    origin_sha,
    run_pr,
    setup_repo,
)

__all__ = ["env", "gh"]


def claim_files(repo: Path) -> list[Path]:
    return sorted((repo / "flows" / "feature" / "runs").glob("*/claim.json"))


def test_the_claim_record_names_its_holder_and_a_takeover_makes_the_lease_its_own(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_RUN_ID", "901")
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "1")
    repo = setup_repo(tmp_path, gh)
    pushed = kill_9_between_the_push_and_the_pull_request(repo, gh, env)
    [lost] = [json.loads(path.read_text()) for path in claim_files(repo)]
    held = lease_on_origin(gh)
    for key in ("runId", "runAttempt", "repository", "host", "pid"):
        assert lost[key] == held[key], key
    assert (lost["runId"], lost["runAttempt"], lost["host"]) == (901, 1, socket.gethostname())
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "2")  # GitHub's re-run of the job
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0 and "taking over" in out.stdout, out.stdout + out.stderr
    [pull] = gh.state.pulls.values()
    lease = lease_on_origin(gh)
    assert (lease["pid"], lease["runAttempt"], lease["pull"]) == (os.getpid(), 2, pull.number)
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == pushed


def test_a_lost_claim_whose_lease_another_holder_took_is_not_taken_over(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    pushed = kill_9_between_the_push_and_the_pull_request(repo, gh, env)
    found = git_lease.read_lease(repo, BRANCH)
    assert found is not None
    assert leases.take(repo, BRANCH, {"host": "there", "pid": 2}, found.sha, {}) is not None
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "already started" in out.stdout and "taking over" not in out.stdout
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == pushed and gh.state.pulls == {}
    assert lease_on_origin(gh)["host"] == "there"


def test_an_older_claim_record_naming_only_its_pid_is_still_taken_over(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    kill_9_between_the_push_and_the_pull_request(repo, gh, env)
    [path] = claim_files(repo)
    record = json.loads(path.read_text())
    for key in ("host", "repository", "runId", "runAttempt"):
        record.pop(key, None)
    path.write_text(json.dumps(record))
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0 and "taking over" in out.stdout, out.stdout + out.stderr
    assert len(gh.state.pulls) == 1 and lease_on_origin(gh)["pid"] == os.getpid()
