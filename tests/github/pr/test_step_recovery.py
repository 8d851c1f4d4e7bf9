"""Recovery from any runner (issue 22, item 5): ``kill -9`` of ``run --step 1 --pr`` at each
phase, then the same command on a FRESH clone (a GitHub re-run never gets the killed checkout
back): the step finishes, its work is implemented once, no wave stalls with exit 0.

Real git (a bare origin, real pushes, hooks in it that hold a push), the killed run as a real
process group, the GitHub stand-in (its requests held to kill the run there, its workflow runs
answering for the re-run attempt), fake agents (tests/fakes/fake_flow_agent).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitflow_agents.findings import Severity
from gitflow_agents.github.pr.publish import StepPull, publish_step
from tests.conftest import git, running_agent, wait_until
from tests.github.pr.test_step_pr_takeover import gated_implementer
from tests.github_standin import GitHubStandIn, client_for, gh
from tests.helpers.chain import call
from tests.helpers.opened_step import Opened, prepared, restore
from tests.helpers.step_pr import (
    BRANCH,
    env,
    implementer_runs,
    independent_steps_runner,
    origin_sha,
    plan_status,
    run_pr,
    setup_repo,
    standin_env,
    statuses,
)
from tests.standin_pulls import play_auto_merge

__all__ = ["env", "gh"]

RUN_ID = 77
TITLE = "[feature] Step 1: Add the module"
HOOK = """#!/bin/sh
# hold a push of a ref matching the pattern (with updates_only: not one creating it) until
# "go" exists; a pre-receive hook then refuses it (the connection was cut before it landed)
while read old new ref; do
  case "$ref" in
    {pattern})
      if [ -z "{updates_only}" ] || [ "$old" != "0000000000000000000000000000000000000000" ]; then
        touch "$GIT_DIR/held"
        while [ ! -e "$GIT_DIR/go" ]; do sleep 0.05; done
        {then}
      fi;;
  esac
done
"""


def hold_push(gh: GitHubStandIn, hook: str, pattern: str, *, updates_only: bool = False) -> Path:
    """Install ``hook`` in origin, holding pushes of refs matching ``pattern``: pre-receive,
    before the push lands (then refused); post-receive, after it landed. The file that says
    one arrived."""
    assert gh.state.origin is not None
    path = gh.state.origin / "hooks" / hook
    refuse = "exit 1" if hook == "pre-receive" else ":"
    only = "1" if updates_only else ""
    path.write_text(HOOK.format(pattern=pattern, updates_only=only, then=refuse))
    path.chmod(0o755)
    return gh.state.origin / "held"


def release_pushes(gh: GitHubStandIn) -> None:
    assert gh.state.origin is not None
    for hook in ("pre-receive", "post-receive"):
        (gh.state.origin / "hooks" / hook).unlink(missing_ok=True)
    (gh.state.origin / "go").touch()


@pytest.fixture
def attempt(
    gh: GitHubStandIn, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Callable[[int], dict[str, str]]:
    """Be attempt N of workflow run 77: the stand-in's Actions API says so, and the
    environment (of this process and of the processes it starts) names it."""

    def be(number: int) -> dict[str, str]:
        gh.state.workflow_runs[RUN_ID] = {"status": "in_progress", "run_attempt": number}
        values = {"GITHUB_RUN_ID": str(RUN_ID), "GITHUB_RUN_ATTEMPT": str(number)}
        for key, value in values.items():
            monkeypatch.setenv(key, value)
        return {**env, **values}

    return be


@pytest.fixture
def killed() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)


def start(repo: Path, environ: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "run", "specs/feature.md", "--quiet",
         "--kill-grace", "0.2", "--pr", "--step", "1", "--auto-merge", "squash", *args],
        cwd=repo, env={**os.environ, **environ},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


def kill_9(proc: subprocess.Popen[bytes], arrived: Callable[[], bool]) -> None:
    """Once ``arrived`` holds, ``kill -9`` the run's whole process group."""

    def there() -> bool:
        assert proc.poll() is None, proc.communicate(timeout=5)
        return arrived()

    wait_until(there, 120)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def implementations(gh: GitHubStandIn, ref: str) -> int:
    """The implementer's commits (the step's title as subject) that ``ref`` on origin holds."""
    assert gh.state.origin is not None
    subjects = git(gh.state.origin, "log", "--format=%s", f"main..{ref}").splitlines()
    return subjects.count(TITLE)


def finished(gh: GitHubStandIn, out_text: str) -> None:
    """The step is finished: one open pull request at the branch's tip, green, auto-merge on;
    GitHub then merges it and step 1 is ✅ on main, its work in main once."""
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None
    [pull] = gh.state.pulls.values()
    assert pull.state == "open" and pull.head_sha == head, out_text
    assert statuses(gh, head)[-1] == "success" and pull.auto_merge is not None, out_text
    assert implementations(gh, f"refs/heads/{BRANCH}") == 1
    [event] = play_auto_merge(gh)
    main = event["after"]
    assert gh.state.origin is not None
    assert plan_status(git(gh.state.origin, "show", f"{main}:specs/feature.md"), 1) == "✅"


PHASES = (
    "claim",
    "claim-landed",
    "agents",
    "push",
    "pull-request",
    "pending",
    "auto-merge",
    "final-status",
)


@pytest.mark.parametrize("phase", PHASES)
def test_kill_9_at_each_phase_then_the_same_command_on_a_fresh_clone_finishes_it(
    phase: str,
    tmp_path: Path,
    gh: GitHubStandIn,
    attempt: Callable[[int], dict[str, str]],
    killed: list[subprocess.Popen[bytes]],
) -> None:
    implementer, go = gated_implementer(tmp_path)
    first = setup_repo(tmp_path, gh, name="runner-1", implementer=implementer)
    if phase != "agents":
        go.touch()  # only the "agents" phase keeps its implementer waiting
    held = None
    arrived: Callable[[], bool]
    if phase == "claim":  # the claim's push, held before it lands
        flag = hold_push(gh, "pre-receive", "refs/gitflow-agents/claims/*")
        arrived = flag.exists
    elif phase == "claim-landed":  # the claim's push landed; the runner still waits on it
        flag = hold_push(gh, "post-receive", "refs/gitflow-agents/claims/*")
        arrived = flag.exists
    elif phase == "agents":
        arrived = lambda: running_agent(first) is not None  # noqa: E731
    elif phase == "push":  # the work's push has landed; the runner still waits on it
        flag = hold_push(gh, "post-receive", f"refs/heads/{BRANCH}", updates_only=True)
        arrived = flag.exists
    else:
        path = {
            "pull-request": ("POST", r"/pulls$"),
            "pending": ("POST", r"/statuses/"),
            "auto-merge": ("GET", r"/pulls/\d+$"),
            "final-status": ("POST", r"/issues/\d+/comments$"),
        }[phase]
        held = gh.hold(*path)
        arrived = held.arrived.is_set
    proc = start(first, attempt(1))
    killed.append(proc)
    try:
        kill_9(proc, arrived)
    finally:
        release_pushes(gh)
        if held is not None:
            held.release()
        go.touch()  # a lost implementer still waiting finishes in the dead checkout
    # the same command, a re-run attempt, on a fresh clone
    attempt(2)
    fresh = setup_repo(tmp_path, gh, name="runner-2")
    out = run_pr(fresh, "--step", "1", "--auto-merge", "squash")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "already started" not in out.stdout, text
    if phase in ("push", "pull-request", "pending", "auto-merge", "final-status"):
        assert implementer_runs(fresh) == 0, text  # its pushed work is reviewed, not redone
        assert "holds finished work" in out.stdout
    # the same command once more: the step is started (its run finished), nothing is written
    writes = len(gh.writes())
    third = run_pr(
        setup_repo(tmp_path, gh, name="runner-3"), "--step", "1", "--auto-merge", "squash"
    )
    assert third.returncode == 0 and "already started" in third.stdout, third.stdout
    assert len(gh.writes()) == writes
    finished(gh, text)


@pytest.fixture(scope="module")
def killed_asking_for_the_pull_request(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Opened]:
    """``run --step 1 --pr`` (attempt 1 of workflow run 77) ``kill -9``-ed while it asks
    GitHub for the pull request: its work pushed, no pull request. Made once per module (the
    tests re-run it on fresh clones, so origin and the stand-in's state are what they need)."""

    def build(root: Path, server: GitHubStandIn) -> None:
        server.state.workflow_runs[RUN_ID] = {"status": "in_progress", "run_attempt": 1}
        environ = {**standin_env(server), "GITHUB_RUN_ID": str(RUN_ID), "GITHUB_RUN_ATTEMPT": "1"}
        held = server.hold("POST", r"/pulls$")
        proc = start(setup_repo(root, server), environ)
        try:
            kill_9(proc, held.arrived.is_set)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
            held.release()
        assert origin_sha(server, f"refs/heads/{BRANCH}") is not None and not server.state.pulls

    yield from prepared(tmp_path_factory.mktemp("killed"), build)


def test_a_target_moved_after_the_push_is_merged_into_the_step_branch(
    tmp_path: Path,
    gh: GitHubStandIn,
    attempt: Callable[[int], dict[str, str]],
    killed_asking_for_the_pull_request: Opened,
) -> None:
    """Not exit 4 "someone else pushed": origin's step branch holds only what the lost run
    pushed, so the target is merged into it and the result pushed as a fast-forward."""
    restore(killed_asking_for_the_pull_request, tmp_path, gh)
    pushed = origin_sha(gh, f"refs/heads/{BRANCH}")
    human = setup_repo(tmp_path, gh, name="human")
    (human / "NOTES.md").write_text("an unrelated change\n")
    git(human, "add", "NOTES.md")
    git(human, "commit", "-q", "-m", "unrelated")
    git(human, "push", "-q", "origin", "main")
    attempt(2)
    fresh = setup_repo(tmp_path, gh, name="runner-2")
    out = run_pr(fresh, "--step", "1", "--auto-merge", "squash")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None and pushed is not None
    assert git(fresh, "merge-base", "--is-ancestor", pushed, head) == ""  # a fast-forward
    assert git(fresh, "merge-base", "--is-ancestor", "origin/main", head) == ""
    assert implementer_runs(fresh) == 0
    finished(gh, text)


def test_force_after_the_runner_died_post_push_reviews_the_pushed_work(
    tmp_path: Path,
    gh: GitHubStandIn,
    attempt: Callable[[int], dict[str, str]],
    killed_asking_for_the_pull_request: Opened,
) -> None:
    """``--force`` on a branch holding finished work does not re-implement it (which ended
    ``empty``, exit 1): the work is reviewed and published."""
    restore(killed_asking_for_the_pull_request, tmp_path, gh)
    attempt(1)  # the same attempt as the lost run's
    gh.state.workflow_runs[RUN_ID] = {"status": "in_progress", "run_attempt": 1}  # alive
    fresh = setup_repo(tmp_path, gh, name="runner-2")
    out = run_pr(fresh, "--step", "1", "--auto-merge", "squash", "--force")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert implementer_runs(fresh) == 0 and "holds finished work" in out.stdout
    finished(gh, text)


def test_a_pull_request_a_human_closed_is_reopened_by_the_re_run(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Decision (docs/github.md, "Recovery"): the branch still exists, so the closed pull
    request is reopened (its conversation kept), not replaced; nothing is implemented again.
    Before, the step stayed "already started" (exit 0) for good."""
    repo = setup_repo(tmp_path, gh, name="runner-1")
    assert run_pr(repo, "--step", "1", "--auto-merge", "squash").returncode == 0
    [pull] = gh.state.pulls.values()
    pull.state = "closed"  # a human closed it (auto-merge goes with it, as on GitHub)
    pull.auto_merge = None
    fresh = setup_repo(tmp_path, gh, name="runner-2")
    out = run_pr(fresh, "--step", "1", "--auto-merge", "squash")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert f"its pull request #{pull.number} was closed without merging" in out.stdout
    assert implementer_runs(fresh) == 0
    finished(gh, text)  # the same pull request, open again


def test_the_waves_take_up_a_pull_request_a_human_closed_and_tend_says_so(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Issue 24: only a hand-typed ``run --step N --pr`` reopened it; ``plan matrix --ready``
    gave ``{"include": []}``, ``run --all --pr`` called the step started and ``plan tend``
    counted it nowhere, all exit 0, so the waves stalled for good. The waves now ask GitHub
    about a published step's pull request (``lease.finishable``): the step is ready, ``--all``
    reopens it as ``--step`` does, and tend says it waits; the second time nothing is done."""
    repo = independent_steps_runner(tmp_path, gh)  # steps 1 and 2 ready in one wave
    assert run_pr(repo, "--all", "--auto-merge", "squash").returncode == 0
    pull, other = sorted(gh.state.pulls.values(), key=lambda p: p.head_ref)
    assert pull.head_ref == BRANCH and other.state == "open"
    pull.state = "closed"  # a human closed it (auto-merge goes with it, as on GitHub)
    pull.auto_merge = None
    fresh = setup_repo(tmp_path, gh, name="runner-2")
    ready = call(fresh, "plan", "matrix", "--ready", "specs/feature.md")
    assert ready.returncode == 0, ready.stderr
    assert [row["step"] for row in json.loads(ready.stdout)["include"]] == [1]
    assert f"free: 1 (its pull request #{pull.number} was closed without merging" in ready.stderr
    tended = call(fresh, "plan", "tend", "specs/feature.md", "--quiet", "--kill-grace", "0.2")
    assert tended.returncode == 0, tended.stdout + tended.stderr
    assert f"step 1: PR #{pull.number} was closed without merging: waits" in tended.stdout
    assert "plan tend: 1 green, 1 waiting, 0 red" in tended.stdout and pull.state == "closed"
    out = run_pr(fresh, "--all", "--auto-merge", "squash")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert f"step 1: taking over {BRANCH} on origin" in out.stdout
    assert out.stdout.splitlines()[-1] == "not started (already started, branch on origin): 2"
    assert pull.state == "open" and pull.auto_merge is not None and len(gh.state.pulls) == 2
    assert implementer_runs(fresh) == 0
    again = run_pr(fresh, "--all", "--auto-merge", "squash")  # the second time: nothing
    assert again.returncode == 0 and "taking over" not in again.stdout, again.stdout
    assert again.stdout.splitlines()[-1] == "not started (already started, branch on origin): 1, 2"
    ready = call(fresh, "plan", "matrix", "--ready", "specs/feature.md")
    assert json.loads(ready.stdout)["include"] == [] and "free:" not in ready.stderr
    tended = call(fresh, "plan", "tend", "specs/feature.md", "--quiet", "--kill-grace", "0.2")
    assert "plan tend: 2 green, 0 waiting, 0 red" in tended.stdout, tended.stdout
    assert len(gh.state.pulls) == 2 and implementer_runs(fresh) == 0


def test_pending_is_never_written_over_a_final_status_of_the_same_head(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """A repeated or late publish of a head that has its verdict writes the verdict again,
    never ``pending`` over it (before: pending, then the verdict again)."""
    repo = setup_repo(tmp_path, gh)
    assert run_pr(repo, "--step", "1").returncode == 0
    head = origin_sha(gh, f"refs/heads/{BRANCH}")
    assert head is not None and statuses(gh, head) == ["pending", "success"]
    [result_path] = [
        path
        for path in (repo / "flows" / "feature" / "runs").glob("*/result.json")
        if json.loads(path.read_text()).get("run", {}).get("kind") == "chain"
    ]
    spec = StepPull(gh.full_name, BRANCH, "main", TITLE, "the step", False, None)
    record = json.loads(result_path.read_text())
    publish_step(
        client_for(gh), spec, record, result_path.parent,
        head=head, approved=True, threshold=Severity.ERROR,
    )  # fmt: skip
    assert statuses(gh, head) == ["pending", "success", "success"]


def test_dependencies_are_read_from_origins_target_not_the_runners_copy(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Origin's plan says step 2 depends on nothing; the runner's copy, older, makes it wait
    for step 1 (the previous step). Origin decides: step 2 runs."""
    runner = setup_repo(tmp_path, gh, name="runner")
    human = setup_repo(tmp_path, gh, name="human")
    plan = human / "specs" / "feature.md"
    plan.write_text(plan.read_text().replace("Polish it.", "Depends on: none\n\nPolish it."))
    git(human, "commit", "-qam", "step 2 depends on nothing")
    git(human, "push", "-q", "origin", "main")
    out = run_pr(runner, "--step", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert origin_sha(gh, "refs/heads/agents/feature/step-2") is not None
    # and the other way round: origin's plan makes a step wait that the runner's copy does not
    plan.write_text(plan.read_text().replace("Depends on: none", "Depends on: 1"))
    git(human, "commit", "-qam", "step 2 depends on 1")
    git(human, "push", "-q", "origin", "main")
    stale = setup_repo(tmp_path, gh, name="stale")
    copy = stale / "specs" / "feature.md"
    copy.write_text(copy.read_text().replace("Depends on: 1", "Depends on: none"))
    waits = run_pr(stale, "--step", "2")
    assert waits.returncode == 2, waits.stdout + waits.stderr
    assert "step 2 waits for step 1" in waits.stderr
