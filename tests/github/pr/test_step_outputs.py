"""The step outputs of ``run --pr`` in GitHub Actions (action.yml's ``mode: run``) beyond one
step that ran: several steps (``--all --pr``), an error before any step, a step that waits.
One step that ran is in tests/github/pr/test_step_pr.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.base.errors import GitHubError, InputError
from gitflow_agents.github.pr.outputs import StepOutputs
from tests.conftest import git
from tests.github.pr.test_step_footprint import plan_with_touches
from tests.github.pr.test_step_pr import STEP_1, action_run
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import read_outputs
from tests.helpers.step_pr import env, independent_steps_runner, paid, run_pr, setup_repo

__all__ = ["env", "gh"]

NOTHING_SPENT = {"cost-usd": "0", "input-tokens": "0", "output-tokens": "0"}


@pytest.fixture
def github_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runner's ``GITHUB_OUTPUT`` for the commands this test runs in this process."""
    path = tmp_path / "github_output"
    path.touch()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(path))
    return path


def outputs_of(path: Path) -> dict[str, str]:
    """The outputs the last command wrote (the file emptied for the next)."""
    found = read_outputs(path.read_text())
    path.write_text("")
    return found


def spent(outputs: dict[str, str]) -> dict[str, str]:
    return {key: outputs[key] for key in NOTHING_SPENT}


def test_all_steps_give_the_worst_outcome_the_last_pull_request_and_their_sum(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], github_output: Path
) -> None:
    """Steps 1 and 2 are ready together. First run: step 1 approved (its agents say $0.02,
    2,400 tokens), step 2 not started (the plan's budget is spent): ``budget``, step 1's pull
    request. Second run, with the budget fresh: step 2 alone runs, approved."""
    setup_repo(tmp_path, gh, "seed", implementer=paid("implementer", "edit"),
               reviewer_argv=paid("reviewer", "approve"))  # fmt: skip
    repo = independent_steps_runner(tmp_path, gh)
    config = repo / ".flow" / "base.yaml"
    config.write_text(config.read_text() + "budget:\n  plan: {usd: 0.02}\n")
    out = run_pr(repo, "--all")
    assert out.returncode == 5, out.stdout + out.stderr
    first = outputs_of(github_output)
    [pull] = gh.state.pulls.values()
    assert first["step-result"] == "budget" and first["run-id"]
    assert (first["pull-request"], first["head-sha"]) == (str(pull.number), pull.head_sha)
    assert spent(first) == {"cost-usd": "0.02", "input-tokens": "2000", "output-tokens": "400"}
    assert "github-error" not in first

    again = run_pr(repo, "--all")
    assert again.returncode == 0, again.stdout + again.stderr
    second = outputs_of(github_output)
    newest = max(gh.state.pulls.values(), key=lambda p: p.number)
    assert second["step-result"] == "approved" and second["run-id"] != first["run-id"]
    assert (second["pull-request"], second["head-sha"]) == (str(newest.number), newest.head_sha)
    assert spent(second) == {"cost-usd": "0.02", "input-tokens": "2000", "output-tokens": "400"}


def test_all_steps_spend_is_their_sum(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], github_output: Path
) -> None:
    setup_repo(tmp_path, gh, "seed", implementer=paid("implementer", "edit"),
               reviewer_argv=paid("reviewer", "approve"))  # fmt: skip
    repo = independent_steps_runner(tmp_path, gh)
    out = run_pr(repo, "--all")
    assert out.returncode == 0, out.stdout + out.stderr
    outputs = outputs_of(github_output)
    assert len(gh.state.pulls) == 2 and outputs["step-result"] == "approved"
    assert outputs["pull-request"] == str(max(gh.state.pulls))
    assert spent(outputs) == {"cost-usd": "0.04", "input-tokens": "4000", "output-tokens": "800"}


def test_all_steps_with_none_ready_say_so_with_an_empty_step_result(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], github_output: Path
) -> None:
    repo = setup_repo(tmp_path, gh)
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/agents/feature/step-1")  # started
    out = run_pr(repo, "--all")
    assert out.returncode == 0, out.stdout + out.stderr
    outputs = outputs_of(github_output)
    assert (outputs["step-result"], outputs["pull-request"], outputs["run-id"]) == ("", "", "")
    assert spent(outputs) == NOTHING_SPENT


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--step", "1"), "specs/missing.md"),
        (("--all",), "specs/missing.md"),
    ],
)
def test_a_plan_that_does_not_open_still_sets_step_result(
    tmp_path: Path,
    gh: GitHubStandIn,
    env: dict[str, str],
    github_output: Path,
    args: tuple[str, ...],
    says: str,
) -> None:
    from tests.helpers.chain import call

    repo = setup_repo(tmp_path, gh)
    out = call(repo, "run", "specs/missing.md", "--quiet", "--pr", *args)
    assert out.returncode == 2 and says in out.stderr, out.stdout + out.stderr
    outputs = outputs_of(github_output)
    assert outputs["step-result"] == "error"
    assert (outputs["run-id"], outputs["pull-request"], outputs["head-sha"]) == ("", "", "")
    assert spent(outputs) == NOTHING_SPENT and "github-error" not in outputs


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        ({"plan": "specs/missing.md"}, "specs/missing.md"),
        ({"step": "9"}, "step 9"),
    ],
)
def test_the_actions_mode_run_sets_step_result_when_run_stops_before_any_step(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], inputs: dict[str, str], says: str
) -> None:
    """action.yml's script as a runner runs it: ``run`` refuses the plan or the step (exit 2)
    before any claim; the outputs still say ``error``, that nothing was opened or pushed, and
    that nothing was spent."""
    repo = setup_repo(tmp_path, gh)
    proc, outputs = action_run(tmp_path, repo, env, {**STEP_1, **inputs})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert says in proc.stderr
    assert outputs["step-result"] == "error" and outputs["pull-request"] == ""
    assert spent(outputs) == NOTHING_SPENT
    assert gh.state.pulls == {}


def test_a_step_that_waits_for_a_started_steps_footprint_says_waiting(
    tmp_path: Path, gh: GitHubStandIn, env: dict[str, str], github_output: Path
) -> None:
    repo = plan_with_touches(tmp_path, gh)
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/agents/feature/step-1")  # started
    out = run_pr(repo, "--step", "2")
    assert out.returncode == 0 and "step 2 waits" in out.stdout, out.stdout + out.stderr
    outputs = outputs_of(github_output)
    assert (outputs["step-result"], outputs["pull-request"]) == ("waiting", "")
    assert spent(outputs) == NOTHING_SPENT


def test_the_worst_outcome_wins_and_an_error_ends_the_step_taken_on_last() -> None:
    """No git, no GitHub: the outputs of what the steps told (``StepOutputs.values``)."""
    outputs = StepOutputs()
    outputs.begin(1).outcome = "skipped"
    outputs.begin(2).outcome = "started"
    assert outputs.values(None)["step-result"] == "started"
    assert spent(outputs.values(None)) == NOTHING_SPENT  # no step run began
    outputs.begin(3).head = "c" * 40
    failed = outputs.values(GitHubError("the API failed"))
    assert (failed["step-result"], failed["github-error"]) == ("error", "the API failed")
    assert (failed["head-sha"], failed["pull-request"]) == ("c" * 40, "")
    outputs.step.started = True  # its agents may have spent something: unknown, never 0
    stopped = outputs.values(KeyboardInterrupt())
    assert stopped["step-result"] == "canceled"
    assert spent(stopped) == {"cost-usd": "", "input-tokens": "", "output-tokens": ""}
    assert StepOutputs().values(InputError("bad plan"))["step-result"] == "error"
    assert StepOutputs().values(None)["step-result"] == ""
