"""The waves workflow end to end, with what real waves bring (issue 22, "Done when"): a 5-step
plan whose siblings edit the same line and a file one of them renames, a human's commit on the
target mid-wave, and a runner killed for good after its claim.

Driven as the waves workflow of docs/github.md drives it, each job the CLI's ``main`` in a fresh
clone of origin (a local bare repository, every push a real ``git push``; the runner that is
killed is a real process, its agents too): ``plan matrix --ready`` → ``run --step N --pr
--auto-merge squash`` for each ready step → ``plan tend --auto-merge squash`` → GitHub's
auto-merge (the stand-in, with a "require branches to be up to date" rule: a behind pull request
waits, as on GitHub), and again, until the plan is all ✅ on main or a number of rounds change
nothing. The agents are
tests/fakes/fake_flow_agent: the implementer's ``plan-step`` mode (each step's edit, a line per
completed run in a record file), the fixer's ``resolve-only`` mode (keeps both sides of a
conflict), an approving reviewer.

What counts as "reviewed and approved" for a commit on main (docs/github.md, "Only reviewed trees
land"): its tree is the tree of a commit whose newest ``gitflow-agents/review`` status, as the
stand-in recorded it, is ``success``. The human's commit is not landed by the tool and is
excepted; every other commit on main's first-parent line after the seed must pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, _pythonpath, cli_main, git, init_repo, wait_until
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import Runner
from tests.helpers.chain import FAKE
from tests.helpers.origin_commit import commit_on_origin
from tests.helpers.step_pr import env, flow_config, origin_sha, plan_status, summaries
from tests.standin_pulls import play_auto_merge
from tests.standin_rules import strict_rule

__all__ = ["env", "gh"]

PLAN = "specs/feature.md"
STEPS = {
    1: "Create the core module.",
    2: "Depends on: 1\n\nRaise the timeout to 20; move the guide to docs/manual.md.",
    3: "Depends on: 1\n\nRaise the timeout to 30.",
    4: "Depends on: 1\n\nAdd a line to the guide.",
    5: "Depends on: 2, 3, 4\n\nThe final module.",
}
SETTINGS = 'NAME = "demo"\nTIMEOUT = 10\nRETRIES = 3\n'
GUIDE = "".join(f"Guide line {n}: how to use the demo.\n" for n in range(1, 9)) + "The end.\n"
TTL = 1.5  # GITFLOW_AGENTS_CLAIM_TTL: the killed runner's claim is free this long after it died
IDLE_ROUNDS = 6  # rounds in a row that change nothing before the pipeline counts as stalled
ROUNDS = 20  # and at most this many rounds in all (a tend that re-reviews forever is no progress)
REVIEW = "gitflow-agents/review"
LANDED = "gitflow-agents/landed"
WARNING = "warning: nothing guards main against landing a tree no review saw"


def plan_text() -> str:
    steps = "".join(f"### Status: | Step {n}: step {n}\n\n{body}\n\n" for n, body in STEPS.items())
    return f"# Plan: feature\n\n## Implementation Steps\n\n{steps}"


def seed_origin(tmp_path: Path, gh: GitHubStandIn) -> str:
    """Origin's main: the plan, the agents, the files the steps edit; its sha."""
    log, hang = tmp_path / "agents.log", tmp_path / "hang-step"
    implementer = [sys.executable, str(FAKE), "implementer", "plan-step",
                   "--record", str(log), "--hang-step", str(hang)]  # fmt: skip
    fixer = [sys.executable, str(FAKE), "fixer", "resolve-only", "--record", str(log)]
    seed = init_repo(tmp_path / "seed")
    files = {
        ".flow/base.yaml": flow_config(implementer=implementer, fixer=fixer),
        PLAN: plan_text(),
        ".gitignore": "/flows/\n",
        "src/settings.py": SETTINGS,
        "docs/guide.md": GUIDE,
    }
    for name, text in files.items():
        (seed / name).parent.mkdir(parents=True, exist_ok=True)
        (seed / name).write_text(text)
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "plan, agents and the code")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    gh.state.origin = origin
    return git(origin, "rev-parse", "main").strip()


class Workflow:
    """The jobs of the waves workflow, each in a fresh clone of origin."""

    def __init__(self, tmp_path: Path, gh: GitHubStandIn) -> None:
        self.tmp_path, self.gh, self.jobs = tmp_path, gh, 0
        self.said: list[str] = []  # every job's output, for the failure message
        self.killed_at: float | None = None  # when the killed runner died (its lease's last word)

    def clone(self, name: str) -> Path:
        self.jobs += 1
        path = self.tmp_path / f"{self.jobs:02d}-{name}"
        git(self.tmp_path, "clone", "-q", str(self.tmp_path / "origin.git"), str(path))
        return path

    def job(self, name: str, *args: str) -> CliResult:
        out = cli_main(*args, cwd=self.clone(name))
        self.said.append(f"--- {name} (exit {out.returncode})\n{out.stdout}{out.stderr}")
        return out

    def ready(self) -> list[int]:
        """The steps the matrix starts now. The killed runner's claim is free by the round after
        its death, however fast or slow the jobs between ran (its lease is older than the TTL):
        the round that takes step 4 over is the round that tends step 3, and without the rule
        GitHub squashes the later of the two onto a main the other moved."""
        if self.killed_at is not None:
            time.sleep(max(0.0, self.killed_at + TTL + 0.1 - time.time()))
        out = self.job("ready", "plan", "matrix", PLAN, "--ready")
        assert out.returncode == 0, self.log()
        return [entry["step"] for entry in json.loads(out.stdout)["include"]]

    def step(self, number: int) -> CliResult:
        out = self.job(f"step-{number}", "run", PLAN, "--quiet", "--kill-grace", "0.2", "--pr",
                       "--step", str(number), "--auto-merge", "squash")  # fmt: skip
        assert out.returncode == 0, self.log()
        return out

    def tend(self) -> CliResult:
        out = self.job("tend", "plan", "tend", PLAN, "--quiet", "--kill-grace", "0.2",
                       "--auto-merge", "squash")  # fmt: skip
        assert out.returncode == 0, self.log()
        return out

    def killed_step(self, number: int) -> str:
        """``run --step N --pr`` on its own runner, ``kill -9`` once its implementer runs (after
        the claim): the runner is gone for good, its checkout never used again. The claim it
        left on origin (the step branch's sha)."""
        (self.tmp_path / "hang-step").write_text(str(number))
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitflow_agents", "run", PLAN, "--quiet", "--pr", "--step",
             str(number), "--auto-merge", "squash"],
            cwd=self.clone(f"step-{number}-killed"),
            env={**os.environ, "PYTHONPATH": _pythonpath()},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            wait_until(lambda: f"hang {number}" in records(self.tmp_path), 120)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            self.killed_at = time.time()
        branch = f"agents/feature/step-{number}"
        claim = origin_sha(self.gh, f"refs/heads/{branch}")
        assert claim is not None, self.log()
        assert all(p.head_ref != branch for p in self.gh.state.pulls.values())
        return claim

    def landed(self, event: dict[str, Any]) -> bool:
        """The ``landed`` job on a merge's push: ``gitflow-agents action`` in a checkout of the
        pushed commit; whether it found the landed tree approved (its exit code and status)."""
        checkout = self.clone("landed")
        git(checkout, "checkout", "-q", "--detach", event["after"])
        runner = Runner(self.tmp_path, self.gh, checkout)
        out = cli_main("action", cwd=checkout, env=runner.env("push", event, "tok-actions"))
        self.said.append(f"--- landed (exit {out.returncode})\n{out.stdout}{out.stderr}")
        [state] = [
            s["state"] for s in self.gh.statuses_for(event["after"]) if s["context"] == LANDED
        ]
        assert out.returncode == (0 if state == "success" else 1), self.log()
        return state == "success"

    def log(self) -> str:
        return "\n".join(self.said[-12:])


def records(tmp_path: Path) -> list[str]:
    log = tmp_path / "agents.log"
    return log.read_text().splitlines() if log.exists() else []


def human_commit(tmp_path: Path) -> str:
    """A teammate's unrelated commit pushed to main; its sha."""
    return commit_on_origin(
        tmp_path / "origin.git",
        "main",
        "HUMAN.md",
        "a teammate's unrelated change\n",
        "a teammate's change",
    )


def snapshot(gh: GitHubStandIn) -> tuple[object, ...]:
    """What a round may change: origin's branches, the pull requests, the statuses."""
    assert gh.state.origin is not None
    refs = git(gh.state.origin, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
    pulls = sorted((p.number, p.head_sha, p.state, p.merged) for p in gh.state.pulls.values())
    return refs, tuple(pulls), len(gh.state.statuses)


def all_done(gh: GitHubStandIn) -> bool:
    assert gh.state.origin is not None
    plan = git(gh.state.origin, "show", f"main:{PLAN}")
    return all(plan_status(plan, n) == "✅" for n in STEPS)


def approved_trees(gh: GitHubStandIn) -> dict[str, str]:
    """Tree → the commit whose newest ``gitflow-agents/review`` status is ``success``."""
    assert gh.state.origin is not None
    newest: dict[str, str] = {}
    for status in gh.state.statuses:
        if status["context"] == REVIEW:
            newest[status["sha"]] = status["state"]
    return {
        git(gh.state.origin, "rev-parse", f"{sha}^{{tree}}").strip(): sha
        for sha, state in newest.items()
        if state == "success"
    }


@pytest.mark.slow
@pytest.mark.parametrize("strict", [True, False], ids=["up-to-date-rule", "no-up-to-date-rule"])
def test_five_steps_finish_by_themselves_and_only_approved_trees_land(
    strict: bool,
    tmp_path: Path,
    gh: GitHubStandIn,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the up-to-date rule every commit the tool lands has an approved tree; without it
    the tool says so before the first merge, and its ``landed`` job flags what slipped by."""
    monkeypatch.setenv("GITFLOW_AGENTS_CLAIM_TTL", str(TTL))
    gh.state.branch_rules["main"] = [strict_rule(strict=strict)]
    seed = seed_origin(tmp_path, gh)
    flow = Workflow(tmp_path, gh)
    human = killed = ""
    idle = 0
    flagged: dict[str, bool] = {}  # landed commit → the landed job's verdict (approved?)
    for _ in range(ROUNDS):
        if all_done(gh):
            break
        before = snapshot(gh)
        for number in flow.ready():
            if number == 4 and not killed:
                killed = flow.killed_step(4)
                continue
            out = flow.step(number)
            guard = "auto-merge: main is guarded" if strict else WARNING
            assert guard in out.stdout, flow.log()  # the first one before GitHub merged anything
            if number == 2 and not human:  # mid-wave: step 2 is open, 3 and 4 not started
                human = human_commit(tmp_path)
                flow.tend()  # the workflow the human's push starts
        flow.tend()
        # GitHub merges what is green (and, with the rule, up to date); each merge a push,
        # and each push runs the landed job
        for event in play_auto_merge(gh):
            flagged[event["after"]] = flow.landed(event)
        if snapshot(gh) == before:
            idle += 1
            assert idle < IDLE_ROUNDS, f"no progress in {idle} rounds\n{flow.log()}"
            time.sleep(TTL / 2)  # the workflow's schedule, some time later
        else:
            idle = 0
    assert all_done(gh), f"not done after {ROUNDS} rounds\n{flow.log()}"
    assert human and killed
    taken = f"step 4: taking over agents/feature/step-4 on origin (at {killed[:12]})"
    assert any(taken in out for out in flow.said), flow.log()
    origin = tmp_path / "origin.git"
    # Every step implemented exactly once (the killed runner's never completed), plus the
    # fixer's rounds for the conflict of 2 and 3.
    done = records(tmp_path)
    assert sorted(r for r in done if r.startswith("implement")) == [
        f"implement {n}" for n in STEPS
    ], done
    assert [r for r in done if r.startswith("hang")] == ["hang 4"], done
    assert [r for r in done if r.startswith("fix")] == ["fix agents/feature/step-3"], done
    # Each step through one pull request, merged; no step branch left.
    pulls = sorted(gh.state.pulls.values(), key=lambda p: p.number)
    assert sorted(p.head_ref for p in pulls) == [f"agents/feature/step-{n}" for n in STEPS]
    assert all(p.merged for p in pulls)
    assert git(origin, "for-each-ref", "refs/heads/agents/") == ""
    # What landed: each step's work, the conflict resolved, the renamed file with step 4's line.
    main = origin_sha(gh, "refs/heads/main")
    assert main is not None
    settings = git(origin, "show", "main:src/settings.py")
    assert "TIMEOUT = 20" in settings and "TIMEOUT = 30" in settings and "<<<" not in settings
    assert "Step 4 was here." in git(origin, "show", "main:docs/manual.md")
    assert "docs/guide.md" not in git(origin, "ls-tree", "-r", "--name-only", "main")
    assert git(origin, "show", "main:HUMAN.md") == "a teammate's unrelated change\n"
    # Every commit that landed on main has a tree the tool reviewed and approved (with the
    # rule); the landed job's verdict on each says the same.
    approved = approved_trees(gh)
    landed = git(origin, "log", "--first-parent", "--format=%H %T %s", f"{seed}..main")
    commits = [line.split(" ", 2) for line in landed.splitlines()]
    assert [sha for sha, _, _ in commits].count(human) == 1
    by_tool = [(sha, tree, subject) for sha, tree, subject in commits if sha != human]
    assert len(by_tool) == len(STEPS) == len(gh.state.push_events) == len(flagged)
    assert {sha: tree in approved for sha, tree, _ in by_tool} == flagged
    unapproved = [f"{sha[:12]} {subject}" for sha, tree, subject in by_tool if tree not in approved]
    if strict:
        assert unapproved == [], flow.log()
    else:  # a sibling squashed onto a moved main as it was: the landed job flagged it
        assert unapproved != [], flow.log()
        for pull in pulls:  # and each pull request said what guards main: nothing
            [summary] = summaries(gh, pull.number)
            assert "Auto-merge is on, but nothing guards main" in summary
    # The next push's workflow (or the schedule) finds nothing to do and writes nothing.
    writes = len(gh.writes())
    assert flow.ready() == []
    assert "plan tend: no open step pull request" in flow.tend().stdout
    assert len(gh.writes()) == writes and origin_sha(gh, "refs/heads/main") == main
