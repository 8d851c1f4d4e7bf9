"""``plan matrix --ready``: the steps that can start now, read from origin (a local bare
repository; every change to it is a real ``git push`` from another clone) (docs/spec-plans.md,
Waves)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli, CliResult, git, init_repo
from tests.helpers.waves import PLAN, plan_text


def commit_plan(clone: Path, done: set[int], message: str = "plan") -> str:
    (clone / "specs").mkdir(exist_ok=True)
    (clone / PLAN).write_text(plan_text(done), encoding="utf-8")
    git(clone, "add", PLAN)
    git(clone, "commit", "-q", "-m", message)
    return git(clone, "rev-parse", "HEAD").strip()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin whose main has the plan, nothing done."""
    seed = init_repo(tmp_path / "seed")
    commit_plan(seed, set())
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


def clone(origin: Path, path: Path) -> Path:
    git(path.parent, "clone", "-q", str(origin), str(path))
    return path


@pytest.fixture
def runner(origin: Path, tmp_path: Path) -> Path:
    """The checkout ``plan matrix --ready`` runs in (a workflow's actions/checkout)."""
    return clone(origin, tmp_path / "runner")


@pytest.fixture
def other(origin: Path, tmp_path: Path) -> Path:
    """Everyone else who pushes to origin: merged PRs, claimed step branches."""
    return clone(origin, tmp_path / "other")


def ready(cli_run: Cli, cwd: Path, *args: str) -> CliResult:
    return cli_run.main("plan", "matrix", PLAN, "--ready", *args, cwd=cwd)


def steps(result: CliResult) -> list[int]:
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1  # one line for $GITHUB_OUTPUT
    return [entry["step"] for entry in json.loads(result.stdout)["include"]]


def merge_on_origin(other: Path, done: set[int]) -> None:
    """What merging the step PRs does to the target: the plan there has ``done`` ✅."""
    git(other, "pull", "-q", "--ff-only")
    commit_plan(other, done, f"steps {sorted(done)} done")
    git(other, "push", "-q", "origin", "HEAD:main")


def claim_on_origin(other: Path, step: int, done: set[int] | None = None) -> None:
    """What `run --pr` does first: the step branch on origin (with ``done`` ✅ on it)."""
    branch = f"agents/feature/step-{step}"
    git(other, "switch", "-q", "-c", branch, "origin/main")
    if done is not None:
        commit_plan(other, done, f"step {step} done on its branch")
    git(other, "push", "-q", "origin", f"{branch}:refs/heads/{branch}")
    git(other, "switch", "-q", "main")


# --- the waves -------------------------------------------------------------------------------


def test_a_fresh_plan_starts_with_step_1_only(cli_run: Cli, runner: Path) -> None:
    result = ready(cli_run, runner)
    assert json.loads(result.stdout) == {
        "include": [{"step": 1, "title": "step 1", "status": ""}]  # the shape plan matrix has
    }
    assert "ready: 1; done: -; started (branch on origin): -; waiting: 2, 3, 4" in result.stderr


def test_step_1_done_on_origin_makes_2_and_3_ready(cli_run: Cli, runner: Path, other: Path) -> None:
    merge_on_origin(other, {1})
    git(runner, "pull", "-q", "--ff-only")
    assert steps(ready(cli_run, runner)) == [2, 3]


def test_the_last_wave_and_then_nothing(cli_run: Cli, runner: Path, other: Path) -> None:
    merge_on_origin(other, {1, 2, 3})
    assert steps(ready(cli_run, runner)) == [4]
    merge_on_origin(other, {1, 2, 3, 4})
    result = ready(cli_run, runner)
    assert result.stdout == '{"include": []}\n' and result.returncode == 0


def test_a_step_branch_on_origin_is_the_lock(cli_run: Cli, runner: Path, other: Path) -> None:
    merge_on_origin(other, {1})
    claim_on_origin(other, 2)
    result = ready(cli_run, runner)
    assert steps(result) == [3]
    assert "started (branch on origin): 2" in result.stderr


def test_when_every_ready_step_is_claimed_the_matrix_is_empty(
    cli_run: Cli, runner: Path, other: Path
) -> None:
    claim_on_origin(other, 1)
    result = ready(cli_run, runner)
    assert result.returncode == 0 and json.loads(result.stdout) == {"include": []}


def test_a_local_done_mark_that_was_not_pushed_is_not_done(cli_run: Cli, runner: Path) -> None:
    commit_plan(runner, {1, 2, 3}, "marked locally, never pushed")
    assert steps(ready(cli_run, runner)) == [1]


def test_a_stale_local_target_loses_to_origin(cli_run: Cli, runner: Path, other: Path) -> None:
    merge_on_origin(other, {1})
    # the runner's main, its origin/main and its copy of the plan all say nothing is done
    assert "✅" not in (runner / PLAN).read_text()
    assert steps(ready(cli_run, runner)) == [2, 3]


def test_local_and_stale_remote_tracking_step_branches_are_no_lock(
    cli_run: Cli, runner: Path, other: Path
) -> None:
    """Only the branches origin has now count: a local branch, or a remote-tracking ref of a
    branch origin has deleted since (a merged PR's head), is left behind by someone else."""
    merge_on_origin(other, {1})
    git(runner, "branch", "agents/feature/step-2")
    claim_on_origin(other, 3)
    git(runner, "fetch", "-q", "origin")
    git(other, "push", "-q", "origin", "--delete", "agents/feature/step-3")
    assert git(runner, "branch", "-r").count("agents/feature/step-3") == 1
    assert steps(ready(cli_run, runner)) == [2, 3]


def test_a_dependency_done_only_on_its_step_branch_is_not_done(
    cli_run: Cli, runner: Path, other: Path
) -> None:
    claim_on_origin(other, 1, done={1})  # approved, PR open, not merged yet
    result = ready(cli_run, runner)
    assert steps(result) == []
    assert "started (branch on origin): 1; waiting: 2, 3, 4" in result.stderr


def test_running_it_twice_gives_the_same_answer_and_changes_nothing_local(
    cli_run: Cli, runner: Path, other: Path
) -> None:
    merge_on_origin(other, {1})
    claim_on_origin(other, 3)
    before = (git(runner, "rev-parse", "main"), git(runner, "status", "--porcelain"))
    first, second = ready(cli_run, runner), ready(cli_run, runner)
    assert first == second and steps(first) == [2]
    assert (git(runner, "rev-parse", "main"), git(runner, "status", "--porcelain")) == before


def test_a_shallow_checkout_works(cli_run: Cli, origin: Path, other: Path, tmp_path: Path) -> None:
    """actions/checkout fetches one commit by default."""
    merge_on_origin(other, {1})
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    merge_on_origin(other, {1, 2})
    assert steps(ready(cli_run, shallow)) == [3]


# --- where the target and the branch names come from ------------------------------------------


def test_target_and_branch_pattern_as_run_reads_them(
    cli_run: Cli, runner: Path, other: Path
) -> None:
    git(other, "push", "-q", "origin", "main:develop")
    merge_on_origin(other, {1})  # main only; develop still has nothing done
    assert steps(ready(cli_run, runner, "--target", "develop")) == [1]
    (runner / ".flow").mkdir()
    (runner / ".flow" / "base.yaml").write_text(
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
        "chain:\n  target: develop\n  branch_pattern: 'work/{plan}/s{step2}'\n"
    )
    assert steps(ready(cli_run, runner)) == [1]
    assert steps(ready(cli_run, runner, "--target", "main")) == [2, 3]
    git(other, "push", "-q", "origin", "main:refs/heads/work/feature/s02")
    assert steps(ready(cli_run, runner, "--target", "main")) == [3]
    pattern = ("--branch-pattern", "agents/{plan_name}/step-{step}")
    assert steps(ready(cli_run, runner, "--target", "main", *pattern)) == [2, 3]


def test_a_plan_not_committed_on_origin_has_nothing_done(
    cli_run: Cli, runner: Path, tmp_path: Path
) -> None:
    (runner / "specs" / "new.md").write_text(plan_text({1}), encoding="utf-8")
    result = cli_run.main("plan", "matrix", "specs/new.md", "--ready", cwd=runner)
    assert steps(result) == [1]
    assert "not committed on origin/main: nothing is done" in result.stderr


# --- errors: one line, exit 2 ----------------------------------------------------------------


def one_line_error(result: CliResult, *expected: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    for text in expected:
        assert text in result.stderr


def test_no_origin(cli_run: Cli, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "alone")
    commit_plan(repo, set())
    one_line_error(ready(cli_run, repo), "cannot list the branches of origin", "'origin'")


def test_unreachable_origin(cli_run: Cli, runner: Path, tmp_path: Path) -> None:
    git(runner, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    one_line_error(ready(cli_run, runner), "cannot list the branches of origin", "gone.git")


def test_origin_without_the_target(cli_run: Cli, runner: Path) -> None:
    one_line_error(ready(cli_run, runner, "--target", "release"), "origin has no branch release")


def test_a_cycle_on_origin_is_a_plan_error(cli_run: Cli, runner: Path, other: Path) -> None:
    git(other, "pull", "-q")
    text = plan_text().replace("Create the schema.", "Depends on: 4")
    (other / PLAN).write_text(text, encoding="utf-8")
    git(other, "commit", "-q", "-am", "a cycle")
    git(other, "push", "-q", "origin", "HEAD:main")
    one_line_error(
        ready(cli_run, runner), f"{PLAN}:7: dependency cycle: 1 → 4 → 2 → 1", "plan lint"
    )


def test_a_plan_that_does_not_parse_on_origin(cli_run: Cli, runner: Path, other: Path) -> None:
    git(other, "pull", "-q")
    (other / PLAN).write_text(plan_text().replace("Depends on: 1\n", "Depends on: one\n"))
    git(other, "commit", "-q", "-am", "broken")
    git(other, "push", "-q", "origin", "HEAD:main")
    one_line_error(ready(cli_run, runner), "'one' is not a step number", "as origin/main has it")


def test_target_without_ready_is_a_usage_error(cli_run: Cli, runner: Path) -> None:
    result = cli_run.main("plan", "matrix", PLAN, "--target", "main", cwd=runner)
    one_line_error(result, "--target goes with --ready")


def test_a_plan_outside_the_repository(cli_run: Cli, runner: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(plan_text())
    result = cli_run.main("plan", "matrix", str(outside), "--ready", cwd=runner)
    one_line_error(result, "outside the repository")


def test_a_step_merged_while_origin_is_read_is_not_started_again(
    cli_run: Cli, runner: Path, other: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the read order closes: step 1's PR merges and its branch is deleted between
    the two reads of origin. Branches are listed first, the target read after, so step 1 is
    either still locked by its branch or already ✅ — never ready a second time."""
    from gitflow_agents.git import queries as g

    claim_on_origin(other, 1, done={1})
    list_heads = g.remote_heads

    def then_merge(root: Path, remote: str = "origin") -> dict[str, str]:
        heads = list_heads(root, remote)
        merge_on_origin(other, {1})
        git(other, "push", "-q", "origin", "--delete", "agents/feature/step-1")
        return heads

    monkeypatch.setattr(g, "remote_heads", then_merge)
    result = ready(cli_run, runner)
    assert steps(result) == [2, 3]
    assert "done: 1;" in result.stderr
