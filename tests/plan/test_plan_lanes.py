"""Conflict-aware waves: ``plan matrix --ready`` does not start two steps whose ``Touches:``
footprints overlap, counts started steps as occupying theirs, and caps the steps in flight at
``--max-parallel N`` (docs/spec-plans.md, Waves); ``run --all --pr`` reads the same answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli, CliResult, git, init_repo
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.chain import call
from tests.helpers.pipeline import checkout, implemented, seed_origin
from tests.helpers.step_pr import env

__all__ = ["env", "gh"]

PLAN = "specs/lanes.md"
BODIES = {
    1: "Depends on: none\n\nThe schema.",
    2: "Depends on: 1\nTouches: src/api/**, docs/api.md\n\nThe API.",
    3: "Depends on: 1\nTouches: `src/api/v2.py`\n\nThe second API.",
    4: "Depends on: 1\nTouches: web/**\n\nThe frontend.",
    5: "Depends on: 1\n\nNo footprint declared.",
    6: "Depends on: 1\nTouches: docs\n\nThe guide.",
}


def plan_text(done: set[int]) -> str:
    steps = "".join(
        f"### Status: {'✅' if n in done else ''} | Step {n}: step {n}\n\n{body}\n\n"
        for n, body in BODIES.items()
    )
    return f"# Plan: lanes\n\n## Implementation Steps\n\n{steps}"


def commit_plan(clone: Path, done: set[int]) -> None:
    (clone / "specs").mkdir(exist_ok=True)
    (clone / PLAN).write_text(plan_text(done), encoding="utf-8")
    git(clone, "add", PLAN)
    git(clone, "commit", "-q", "-m", f"done: {sorted(done)}")


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin whose main has the plan with step 1 done: steps 2-6 could all start."""
    seed = init_repo(tmp_path / "seed")
    commit_plan(seed, {1})
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


@pytest.fixture
def runner(origin: Path, tmp_path: Path) -> Path:
    git(tmp_path, "clone", "-q", str(origin), str(tmp_path / "runner"))
    return tmp_path / "runner"


def claim(runner: Path, step: int) -> None:
    """Another runner's claim: the step branch on origin."""
    git(runner, "push", "-q", "origin", f"origin/main:refs/heads/agents/lanes/step-{step}")


def ready(cli_run: Cli, cwd: Path, *args: str) -> CliResult:
    return cli_run.main("plan", "matrix", PLAN, "--ready", *args, cwd=cwd)


def steps(result: CliResult) -> list[int]:
    assert result.returncode == 0, result.stderr
    return [entry["step"] for entry in json.loads(result.stdout)["include"]]


def test_the_later_of_two_overlapping_steps_waits(cli_run: Cli, runner: Path) -> None:
    result = ready(cli_run, runner)
    # 3 touches a file under 2's src/api/**; 6's docs holds 2's docs/api.md; 4 and 5 are apart
    assert steps(result) == [2, 4, 5]
    assert "held back: 3, 6" in result.stderr
    lines = result.stderr.splitlines()
    assert "plan matrix --ready: waiting: 3 (touches src/api/v2.py like 2: src/api/**)" in lines
    assert "plan matrix --ready: waiting: 6 (touches docs like 2: docs/api.md)" in lines


def test_a_started_step_occupies_its_footprint(cli_run: Cli, runner: Path) -> None:
    claim(runner, 3)
    result = ready(cli_run, runner)
    assert steps(result) == [4, 5, 6]
    assert (
        "plan matrix --ready: waiting: 2 (touches src/api/** like 3 (started): src/api/v2.py)"
        in (result.stderr.splitlines())
    )


def test_max_parallel_caps_the_steps_in_flight(cli_run: Cli, runner: Path) -> None:
    result = ready(cli_run, runner, "--max-parallel", "2")
    assert steps(result) == [2, 4]
    assert "plan matrix --ready: waiting: 5 (--max-parallel 2: 2, 4 in flight)" in (
        result.stderr.splitlines()
    )
    claim(runner, 2)
    assert steps(ready(cli_run, runner, "--max-parallel", "2")) == [4]  # 2 is in flight
    claim(runner, 4)
    assert steps(ready(cli_run, runner, "--max-parallel", "2")) == []
    assert steps(ready(cli_run, runner, "--max-parallel", "3")) == [5]


def test_the_answer_is_the_same_on_a_second_run(cli_run: Cli, runner: Path) -> None:
    first = ready(cli_run, runner, "--max-parallel", "2")
    assert ready(cli_run, runner, "--max-parallel", "2") == first


def test_a_plan_without_touches_lines_runs_its_waves_as_before(cli_run: Cli, runner: Path) -> None:
    text = (runner / PLAN).read_text(encoding="utf-8")
    kept = "".join(line for line in text.splitlines(True) if not line.startswith("Touches:"))
    (runner / PLAN).write_text(kept, encoding="utf-8")
    git(runner, "commit", "-q", "-am", "no footprints")
    git(runner, "push", "-q", "origin", "HEAD:main")
    assert steps(ready(cli_run, runner)) == [2, 3, 4, 5, 6]


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_max_parallel_must_be_a_positive_integer(cli_run: Cli, runner: Path, value: str) -> None:
    result = ready(cli_run, runner, "--max-parallel", value)
    assert result.returncode == 2 and result.stdout == ""
    assert "--max-parallel" in result.stderr and "Traceback" not in result.stderr


def test_max_parallel_goes_with_ready_and_with_all_pr(cli_run: Cli, runner: Path) -> None:
    result = cli_run.main("plan", "matrix", PLAN, "--max-parallel", "2", cwd=runner)
    assert (result.returncode, result.stderr) == (
        2,
        "gitflow-agents: error: plan matrix: --max-parallel goes with --ready\n",
    )
    for extra in ((), ("--pr",), ("--all",)):
        step = () if "--all" in extra else ("--step", "2")
        result = cli_run.main("run", PLAN, *step, *extra, "--max-parallel", "2", cwd=runner)
        assert result.returncode == 2, result
        assert "--max-parallel goes with --all --pr" in result.stderr


def test_run_all_pr_starts_at_most_max_parallel_steps(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str]
) -> None:
    """``run --all --pr --max-parallel 1`` (the pipeline's plan, step 1 done: 2 and 3 ready)
    opens step 2's pull request only and says why 3 waits; run again, 2 is in flight, so
    nothing starts."""
    seed_origin(tmp_path, gh, done=frozenset({1}))
    runner = checkout(tmp_path, "runner")
    out = call(runner, "run", "specs/feature.md", "--quiet", "--pr", "--all", "--max-parallel", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert (
        "ready: 2; done: 1; started (branch on origin): -; waiting: 4; held back: 3" in out.stdout
    )
    assert "waiting: 3 (--max-parallel 1: 2 in flight)" in out.stdout.splitlines()
    assert implemented(tmp_path) == ["2"]
    assert [p.head_ref for p in gh.state.pulls.values()] == ["agents/feature/step-2"]
    again = call(
        runner, "run", "specs/feature.md", "--quiet", "--pr", "--all", "--max-parallel", "1"
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "waiting: 3 (--max-parallel 1: 2 in flight)" in again.stdout.splitlines()
    assert implemented(tmp_path) == ["2"]
