"""``run --pr`` re-run after its own run was lost: the claim is taken over, never someone else's.

Real processes (the orchestrator killed with ``kill -9`` while its implementer works), fake
agents, a local bare origin with real pushes, and the GitHub stand-in, as in tests/github/pr/test_step_pr.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import git, running_agent, wait_until
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.chain import results
from tests.helpers.step_pr import (
    BRANCH,
    FAKE,
    env,
    implementer_runs,
    kill_9_between_the_push_and_the_pull_request,
    lease_on_origin,
    origin_sha,
    paid,
    run_pr,
    setup_repo,
    statuses,
)

__all__ = ["env", "gh"]


def gated_implementer(tmp_path: Path) -> tuple[list[str], Path]:
    """An implementer that, the first time it runs, waits until ``go`` exists (the test kills
    its orchestrator meanwhile); every later run edits at once."""
    go, first = tmp_path / "go", tmp_path / "first-run"
    script = tmp_path / "gated.py"
    script.write_text(
        "import os, sys, time\n"
        f"go, first = {str(go)!r}, {str(first)!r}\n"
        "if not os.path.exists(first):\n"
        "    open(first, 'w').close()\n"
        "    while not os.path.exists(go):\n"
        "        time.sleep(0.05)\n"
        f"os.execv(sys.executable, [sys.executable, {str(FAKE)!r}, 'implementer', 'edit'])\n"
    )
    return [sys.executable, str(script)], go


def claims(repo: Path) -> list[dict[str, object]]:
    found = sorted((repo / "flows" / "feature" / "runs").glob("*/claim.json"))
    return [{**json.loads(p.read_text()), "runId": p.parent.name} for p in found]


@pytest.fixture
def orchestrator(env: dict[str, str]) -> Iterator[Callable[[Path], subprocess.Popen[bytes]]]:
    """Start ``run --pr --step 1`` as a real process; whatever it leaves is killed after."""
    started: list[subprocess.Popen[bytes]] = []

    def start(repo: Path) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitflow_agents", "run", "specs/feature.md", "--quiet",
             "--kill-grace", "0.2", "--pr", "--step", "1"],
            cwd=repo, env={**os.environ, **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.communicate(timeout=30)


def _kill_mid_implementer(
    repo: Path, start: Callable[[Path], subprocess.Popen[bytes]]
) -> psutil.Process:
    """Start the run, wait for its implementer, ``kill -9`` the orchestrator alone (its
    implementer keeps running); the implementer's process."""
    proc = start(repo)
    wait_until(lambda: running_agent(repo) is not None, 60)
    lost = running_agent(repo)
    assert lost is not None
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    agent = psutil.Process(int(lost["pid"]))  # type: ignore[call-overload]
    assert agent.is_running()
    return agent


def _gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_kill_9_mid_implementer_then_the_same_command_takes_its_claim_over(
    tmp_path: Path, gh: GitHubStandIn, orchestrator: Callable[[Path], subprocess.Popen[bytes]]
) -> None:
    implementer, _go = gated_implementer(tmp_path)
    repo = setup_repo(tmp_path, gh, implementer=implementer)
    main = origin_sha(gh, "refs/heads/main")
    agent = _kill_mid_implementer(repo, orchestrator)
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == main  # the claim is left on origin
    [lost] = claims(repo)
    assert lost["state"] == "claimed" and lost["claimedSha"] == main
    again = run_pr(repo, "--step", "1")  # no --force
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"taking over {BRANCH} on origin" in again.stdout
    assert f"lost run {lost['runId']}" in again.stdout
    assert "process tree was killed" in again.stdout  # the lost implementer (issue 11's rule)
    wait_until(lambda: _gone(agent), 10)
    # the step completed: one pull request, built on the claim (a fast-forward, never forced)
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None and main is not None
    assert git(repo, "merge-base", "--is-ancestor", main, head) == ""
    [pull] = gh.state.pulls.values()
    assert pull.head_sha == head and statuses(gh, head)[-1] == "success"
    assert len(gh.requests("POST", "/pulls$")) == 1
    assert implementer_runs(repo) >= 1
    old, new = claims(repo)
    assert old["state"] == "taken-over" and old["by"] == new["runId"]
    assert new["state"] == "done" and new["takenOverFrom"] == lost["runId"]
    assert (repo / "flows/feature/runs" / str(new["runId"]) / "result.json").exists()
    # the second time: the step's run ended, so it is started, not taken over again
    writes = len(gh.writes())
    third = run_pr(repo, "--step", "1")
    assert third.returncode == 0 and f"step 1 already started: branch {BRANCH}" in third.stdout
    assert "taking over" not in third.stdout and len(gh.writes()) == writes


def test_a_live_run_of_this_checkout_is_never_taken_over(
    tmp_path: Path, gh: GitHubStandIn, orchestrator: Callable[[Path], subprocess.Popen[bytes]]
) -> None:
    implementer, go = gated_implementer(tmp_path)
    repo = setup_repo(tmp_path, gh, implementer=implementer)
    first = orchestrator(repo)
    wait_until(lambda: running_agent(repo) is not None, 60)
    second = run_pr(repo, "--step", "1")
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"step 1 already started: run {claims(repo)[0]['runId']}" in second.stdout
    assert "of this checkout is running it" in second.stdout
    forced = run_pr(repo, "--step", "1", "--force")  # --force cannot continue a live run
    assert forced.returncode == 2 and "is running it" in forced.stderr
    go.touch()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out.decode() + err.decode()
    assert len(gh.state.pulls) == 1 and len(claims(repo)) == 1
    assert implementer_runs(repo) == 1


def test_a_lost_claim_someone_else_pushed_to_is_not_taken_over(
    tmp_path: Path, gh: GitHubStandIn, orchestrator: Callable[[Path], subprocess.Popen[bytes]]
) -> None:
    """Decision (docs/github.md): exit 0, "already started", and a note saying why."""
    implementer, _go = gated_implementer(tmp_path)
    repo = setup_repo(tmp_path, gh, implementer=implementer)
    agent = _kill_mid_implementer(repo, orchestrator)
    try:
        other = tmp_path / "other"
        git(tmp_path, "clone", "-q", "-b", BRANCH, str(tmp_path / "origin.git"), str(other))
        (other / "theirs.txt").write_text("theirs\n")
        git(other, "add", "theirs.txt")
        git(other, "commit", "-q", "-m", "theirs")
        git(other, "push", "-q", "origin", BRANCH)
        theirs = origin_sha(gh, f"refs/heads/{BRANCH}")
        again = run_pr(repo, "--step", "1")
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"step 1 already started: branch {BRANCH}" in again.stdout
        assert (
            "a commit that run did not push (someone else pushed): not taken over" in again.stdout
        )
        assert origin_sha(gh, f"refs/heads/{BRANCH}") == theirs and gh.state.pulls == {}
        [kept] = claims(repo)  # the refused run leaves no record (nothing ran)
        assert kept["state"] == "claimed"  # the lost run's, untouched
    finally:
        agent.kill()


def _dead_pid() -> tuple[int, float]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    created = psutil.Process(proc.pid).create_time()
    proc.wait()
    return proc.pid, created


def _plant_claim(repo: Path, state: str, sha: str) -> str:
    """A claim record as a run killed at that point leaves it (its process gone)."""
    run_id = "01900000-0000-7000-8000-00000000dead"  # a UUIDv7 older than any run
    run_dir = repo / "flows" / "feature" / "runs" / run_id
    run_dir.mkdir(parents=True)
    pid, created = _dead_pid()
    record = {
        "plan": str((repo / "specs" / "feature.md").resolve()),
        "step": 1,
        "branch": BRANCH,
        "remote": "origin",
        "claimedSha": sha,
        "created": True,
        "pushed": [],
        "pid": pid,
        "pidStarted": created,
        "state": state,
    }
    (run_dir / "claim.json").write_text(json.dumps(record))
    return run_id


def test_killed_between_the_record_and_the_claim_push_a_re_run_claims_normally(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    main = origin_sha(gh, "refs/heads/main")
    assert main is not None
    planted = _plant_claim(repo, "claiming", main)
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "taking over" not in out.stdout and len(gh.state.pulls) == 1
    old, new = claims(repo)
    assert old["runId"] == planted and old["state"] == "superseded"
    assert new["state"] == "done"


def test_killed_while_claiming_an_existing_branch_is_not_taken_over(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """The push of a ``claiming`` record was never confirmed: the branch at that commit may be
    another runner's claim (made at the same target commit), so it is not taken."""
    repo = setup_repo(tmp_path, gh)
    main = origin_sha(gh, "refs/heads/main")
    assert main is not None
    git(repo, "push", "-q", "origin", f"{main}:refs/heads/{BRANCH}")  # another runner's claim
    _plant_claim(repo, "claiming", main)
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "step 1 already started" in out.stdout
    assert "stopped while claiming it" in out.stdout and "not taken over" in out.stdout
    assert implementer_runs(repo) == 0 and gh.state.pulls == {}
    assert [c["state"] for c in claims(repo)] == ["claiming"]


def test_kill_9_between_the_push_and_the_pull_request_then_the_re_run_publishes_it(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    repo = setup_repo(tmp_path, gh)
    pushed = kill_9_between_the_push_and_the_pull_request(repo, gh, env)
    [lost] = claims(repo)
    assert lost["state"] == "pushing" and lost["pushed"] == [pushed]
    runs = implementer_runs(repo)
    out = run_pr(repo, "--step", "1")  # no --force
    assert out.returncode == 0, out.stdout + out.stderr
    assert "taking over" in out.stdout
    assert origin_sha(gh, f"refs/heads/{BRANCH}") == pushed  # the pushed mark is kept
    assert implementer_runs(repo) == runs  # the approved work is reused, not run again
    [pull] = gh.state.pulls.values()
    assert pull.head_sha == pushed and statuses(gh, pushed)[-1] == "success"


def test_a_run_killed_before_its_pull_request_leaves_a_re_run_counting_its_spend_once(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Killed with ``kill -9`` after its push, before its pull request: the lease records no
    spend yet. The re-run takes the lost run's claim over, reviews the pushed head again and
    publishes it: the lease then records what both runs spent, each once (the lost run's
    implementer and reviewer, the re-run's reviewer: $0.01 each)."""
    agents = {
        "implementer": paid("implementer", "edit"),
        "reviewer_argv": paid("reviewer", "approve"),
    }
    repo = setup_repo(tmp_path, gh, **agents)
    kill_9_between_the_push_and_the_pull_request(repo, gh, env)
    assert "spend" not in lease_on_origin(gh)
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0 and "taking over" in out.stdout, out.stdout + out.stderr
    spent = lease_on_origin(gh)["spend"]
    assert (spent["costUsd"], spent["inputTokens"], spent["outputTokens"]) == (0.03, 3000, 600)
    assert run_pr(repo, "--step", "1").returncode == 0  # started: left as it is
    assert lease_on_origin(gh)["spend"] == spent


HOLD_THE_WORK_PUSH = """#!/bin/sh
while read old new ref; do
  if [ "$ref" = "refs/heads/{branch}" ] && [ "$old" != "{zero}" ]; then
    touch "{gate}"
    while [ ! -e "{release}" ]; do sleep 0.05; done
    exit 1
  fi
done
exit 0
"""


def test_a_run_killed_during_its_push_leaves_a_re_run_counting_what_it_reuses_once(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Killed with ``kill -9`` while it pushed its finished work (its record written, its
    implementer and reviewer done: $0.01 each): the re-run in the same checkout takes the lost
    run's claim over, adding what the lost run's record says it spent, and reuses both agents;
    the lease records $0.02, not the reused agents a second time through the re-run's record."""
    agents = {
        "implementer": paid("implementer", "edit"),
        "reviewer_argv": paid("reviewer", "approve"),
    }
    repo = setup_repo(tmp_path, gh, **agents)
    assert gh.state.origin is not None
    gate, release = tmp_path / "gate", tmp_path / "release"
    hook = gh.state.origin / "hooks" / "pre-receive"
    hook.write_text(
        HOLD_THE_WORK_PUSH.format(branch=BRANCH, zero="0" * 40, gate=gate, release=release)
    )
    hook.chmod(0o755)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "run", "specs/feature.md", "--quiet", "--pr",
         "--step", "1"],
        cwd=repo, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_until(gate.exists, timeout=120)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        release.touch()
    hook.unlink()
    out = run_pr(repo, "--step", "1")
    assert out.returncode == 0 and "taking over" in out.stdout, out.stdout + out.stderr
    agents_run = [a for r in results(repo) for a in r["chain"]["agents"]]
    assert [a["reused"] for a in agents_run] == [False, False, True, True]
    spent = lease_on_origin(gh)["spend"]
    assert (spent["costUsd"], spent["inputTokens"], spent["outputTokens"]) == (0.02, 2000, 400)
