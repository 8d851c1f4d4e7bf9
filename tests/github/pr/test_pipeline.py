"""The self-driving pipeline of docs/github.md, "Plans on GitHub": waves of step pull requests.

Everything real but GitHub's servers: the checkouts' ``origin`` is a local bare repository
(every push a real ``git push``), the step runs are ``gitflow-agents run --pr`` (real processes
where they race), the implementer is a fake agent that writes one file per step and counts its
own runs, and GitHub is the stand-in, driven by real PyGithub, which merges a pull request with
real git once its ``gitflow-agents/review`` status is green (``play_auto_merge``) and records
the ``push`` event of each merge, held to GitHub's webhook schema (tests/github_events.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import git
from tests.github_events import ZERO_SHA, workflow_dispatch_event, write_event
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.chain import call
from tests.helpers.pipeline import checkout, implemented, ready, run_step, seed_origin
from tests.helpers.step_pr import env, origin_sha, plan_status, statuses
from tests.helpers.waves import BODIES, PLAN
from tests.standin_pulls import play_auto_merge

__all__ = ["env", "gh"]


def start_step(tmp_path: Path, name: str, step: int, env: dict[str, str]) -> subprocess.Popen[str]:
    """A ``step`` job as its own process, in its own checkout (a runner of a matrix)."""
    from tests.conftest import _pythonpath

    return subprocess.Popen(
        [sys.executable, "-m", "gitflow_agents", "run", PLAN, "--quiet", "--pr", "--step",
         str(step), "--auto-merge", "squash"],
        cwd=checkout(tmp_path, name), env={**os.environ, **env, "PYTHONPATH": _pythonpath()},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def is_ancestor(repo: Path, older: str | None, newer: str) -> bool:
    assert older is not None
    proc = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", older, newer])
    return proc.returncode == 0


def merge_wave(tmp_path: Path, gh: GitHubStandIn, count: int) -> str:
    """GitHub merges what is green; each merge's ``push`` event (validated as the runner gets
    it); the sha the last one left on main."""
    events = play_auto_merge(gh)
    assert len(events) == count
    for n, event in enumerate(events):
        write_event(tmp_path / f"push-{len(gh.state.push_events)}-{n}.json", "push", event)
        assert event["ref"] == "refs/heads/main" and event["before"] != ZERO_SHA
    after: str = events[-1]["after"]
    assert origin_sha(gh, "refs/heads/main") == after
    return after


def test_a_plan_runs_in_waves_of_pull_requests_each_step_once(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    origin = seed_origin(tmp_path, gh)
    seed_main = origin_sha(gh, "refs/heads/main")
    # Wave 1, started by hand (workflow_dispatch).
    write_event(
        tmp_path / "dispatch.json", "workflow_dispatch", workflow_dispatch_event(gh.full_name)
    )
    assert ready(tmp_path, "ready-1") == [1]
    out = run_step(tmp_path, "step-1", 1, "--auto-merge", "squash")
    assert out.returncode == 0, out.stdout + out.stderr
    after = merge_wave(tmp_path, gh, 1)
    # Wave 2, started by the merge's push: two dispatches of the same wave race.
    first, second = ready(tmp_path, "ready-2a", after), ready(tmp_path, "ready-2b", after)
    assert first == second == [2, 3]
    jobs = [
        (step, start_step(tmp_path, f"step-{step}-{dispatch}", step, env))
        for dispatch in "ab"
        for step in first
    ]
    outputs = {(step, n): job.communicate(timeout=300) for n, (step, job) in enumerate(jobs)}
    for (_, n), (stdout, stderr) in outputs.items():
        assert jobs[n][1].returncode == 0, stdout + stderr
    for step in (2, 3):
        said = [out for (s, _), (out, _) in outputs.items() if s == step]
        assert sum("already started" in out for out in said) == 1, said
    assert implemented(tmp_path) == ["1", "2", "3"]
    assert ready(tmp_path, "ready-2c") == []  # 2 and 3 started, 4 waits for them
    after = merge_wave(tmp_path, gh, 2)
    # The second merge went into a main that had moved on (the first one): a real 3-way merge.
    early, late = sorted(
        (p for p in gh.state.pulls.values() if p.number > 1), key=lambda p: p.number
    )
    assert not is_ancestor(origin, early.merge_commit_sha, late.head_sha)
    # Wave 3.
    assert ready(tmp_path, "ready-3", after) == [4]
    out = run_step(tmp_path, "step-4", 4, "--auto-merge", "squash")
    assert out.returncode == 0, out.stdout + out.stderr
    after = merge_wave(tmp_path, gh, 1)
    assert ready(tmp_path, "ready-4", after) == []
    # Every step once, through its own pull request, merged with the approval of its head.
    assert implemented(tmp_path) == ["1", "2", "3", "4"]
    assert len(gh.state.pulls) == 4
    assert len(gh.requests("POST", "/pulls$")) == 4
    for pull in gh.state.pulls.values():
        assert pull.merged, pull.head_ref
        assert statuses(gh, pull.head_sha)[-1] == "success"
    plan = git(origin, "show", f"main:{PLAN}")
    assert [plan_status(plan, n) for n in BODIES] == ["✅"] * 4
    files = git(origin, "ls-tree", "--name-only", "main", "src/").split()
    assert files == [f"src/step_{n}.py" for n in BODIES]
    subjects = git(origin, "log", "--format=%s", f"{seed_main}..main").splitlines()
    merged = [re.fullmatch(r"\[feature\] Step (\d): step \1 \(#\d\)", s) for s in subjects]
    assert sorted(m.group(1) for m in merged if m) == ["1", "2", "3", "4"], subjects
    assert len(subjects) == 4  # nothing reached main but the four squash merges
    assert git(origin, "for-each-ref", "refs/heads/agents/") == ""


BRANCH_1 = "agents/feature/step-1"
HOOK = """\
#!/bin/sh
# The pull request of step 1 merges (and its branch goes) just before this claim re-creates it.
while read -r old new ref; do
  if [ "$ref" = "refs/heads/{branch}" ] && [ "$old" = "{zero}" ]; then
    git update-ref refs/heads/main {merged} {before} || true
  fi
done
"""


def test_a_late_run_whose_claim_follows_the_merge_gives_it_back_and_runs_no_agent(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """A runner read main before step 1's pull request merged and claims the step after its
    branch was deleted: the claim succeeds (the branch is re-created), the target read again
    says ✅, the claim is released, no agent runs and GitHub sees no write."""
    origin = seed_origin(tmp_path, gh)
    before = origin_sha(gh, "refs/heads/main")
    assert run_step(tmp_path, "step-1", 1, "--auto-merge", "squash").returncode == 0
    merged = merge_wave(tmp_path, gh, 1)
    assert origin_sha(gh, f"refs/heads/{BRANCH_1}") is None
    git(origin, "update-ref", "refs/heads/main", str(before), merged)  # as the late run saw it
    hook = origin / "hooks" / "post-receive"
    hook.write_text(HOOK.format(branch=BRANCH_1, zero=ZERO_SHA, merged=merged, before=before))
    hook.chmod(0o755)
    writes = len(gh.writes())
    late = checkout(tmp_path, "late")
    out = call(late, "run", PLAN, "--quiet", "--pr", "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "step 1 already done on main: ✅ on origin/main" in out.stdout
    assert f"the claim of {BRANCH_1} on origin was released" in out.stdout
    assert origin_sha(gh, "refs/heads/main") == merged
    assert origin_sha(gh, f"refs/heads/{BRANCH_1}") is None
    assert implemented(tmp_path) == ["1"] and len(gh.writes()) == writes
    # no run record: nothing ran (the claim's record, written before its push, is removed
    # with the claim; only the empty folder of the step's claim lock is left)
    assert [p for p in (late / "flows").rglob("*") if not p.is_dir()] == []
    # The second time: done before the claim, so nothing is claimed at all.
    again = call(late, "run", PLAN, "--quiet", "--pr", "--step", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "step 1: skipped - step 1 is already ✅ on origin/main" in again.stdout
    assert "claim" not in again.stdout
    assert origin_sha(gh, f"refs/heads/{BRANCH_1}") is None
    assert implemented(tmp_path) == ["1"] and len(gh.writes()) == writes


def test_a_step_waiting_for_unmerged_steps_is_refused_unless_forced(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    seed_origin(tmp_path, gh, done=frozenset({1}))
    runner = checkout(tmp_path, "runner")
    out = call(runner, "run", PLAN, "--quiet", "--pr", "--step", "4")
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1
    assert "step 4 waits for steps 2, 3, not ✅ on origin/main" in out.stderr
    assert "--force runs it anyway" in out.stderr
    assert git(tmp_path / "origin.git", "for-each-ref", "refs/heads/agents/") == ""
    assert implemented(tmp_path) == [] and gh.writes() == []
    # Step 2 approved and its pull request open is not "done": 4 still waits for it.
    assert call(runner, "run", PLAN, "--quiet", "--pr", "--step", "2").returncode == 0
    out = call(runner, "run", PLAN, "--quiet", "--pr", "--step", "4")
    assert out.returncode == 2 and "step 4 waits for steps 2, 3" in out.stderr
    forced = call(runner, "run", PLAN, "--quiet", "--pr", "--step", "4", "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert implemented(tmp_path) == ["2", "4"]
    assert sorted(p.head_ref for p in gh.state.pulls.values()) == [
        "agents/feature/step-2",
        "agents/feature/step-4",
    ]


def test_all_with_pr_runs_the_wave_ready_now_and_nothing_after_it(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """Step 1 is done: ``--all --pr`` opens the pull requests of 2 and 3, in order, and leaves
    4 (it waits for them to merge); run again, it finds nothing ready and does nothing."""
    seed_origin(tmp_path, gh, done=frozenset({1}))
    runner = checkout(tmp_path, "runner")
    out = call(runner, "run", PLAN, "--quiet", "--pr", "--all")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ready: 2, 3; done: 1; started (branch on origin): -; waiting: 4" in out.stdout
    assert implemented(tmp_path) == ["2", "3"]
    pulls = sorted(gh.state.pulls.values(), key=lambda p: p.number)
    assert [p.head_ref for p in pulls] == ["agents/feature/step-2", "agents/feature/step-3"]
    assert [statuses(gh, p.head_sha)[-1] for p in pulls] == ["success", "success"]
    writes = len(gh.writes())
    again = call(runner, "run", PLAN, "--quiet", "--pr", "--all")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "ready: -; done: 1; started (branch on origin): 2, 3; waiting: 4" in again.stdout
    assert implemented(tmp_path) == ["2", "3"] and len(gh.writes()) == writes


def test_a_claim_left_behind_by_a_kill_after_the_merge_blocks_nothing(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """A late run killed between its claim and the release leaves step 1's branch at an old
    main while step 1 is ✅ there: the next wave still starts, and step 1 is not run again."""
    origin = seed_origin(tmp_path, gh, done=frozenset({1}))
    git(origin, "update-ref", f"refs/heads/{BRANCH_1}", "main")  # the claim, left behind
    assert ready(tmp_path, "ready") == [2, 3]
    runner = checkout(tmp_path, "runner")
    out = call(runner, "run", PLAN, "--quiet", "--pr", "--step", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "step 1: skipped - step 1 is already ✅ on origin/main" in out.stdout
    assert implemented(tmp_path) == [] and gh.writes() == []
    assert origin_sha(gh, f"refs/heads/{BRANCH_1}") is not None  # not ours to delete
