"""Config, plans and agent definitions come from the PR's base commit, not from the PR.

A configured reviewer (a fake agent executable from tests/fakes/, ``command`` adapter) is
defined in the base branch's ``.flow/base.yaml``. The pull request edits that file to swap the
reviewer for one that always approves, or adds an agent of its own: neither may change how the
PR itself is reviewed. The workspace is checked out at the PR head, as a ``pull_request`` run's
checkout carries the PR's files.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import Runner, add_pull, flow_config, pr_event, runner, states
from tests.helpers.flow_config import budgeted_gate, command_agents

__all__ = ["gh", "runner"]

CALC = "def f(x):\n    return 1 / 0\n"


def base_with_reviewer(repo: Path, mode: str) -> None:
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(flow_config(mode))
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the reviewer")


def test_a_pr_that_swaps_its_reviewer_is_still_reviewed_by_the_base_one(
    runner: Runner, gh: GitHubStandIn, repo: Path, tmp_path: Path
) -> None:
    base_with_reviewer(repo, "revise")
    pull = add_pull(
        gh, repo, {"calc.py": CALC, ".flow/base.yaml": flow_config("approve")}
    )  # the PR makes `gate` approve everything
    git(repo, "checkout", "-q", "feature")  # the checkout holds the PR's .flow/
    log = tmp_path / "reviewer.log"
    env_extra = {"FAKE_REVIEWER_LOG": str(log)}
    result = runner.run_with(env_extra, "pull_request", pr_event(gh, pull), "--agent", "gate")
    assert result.returncode == 1, result.stderr
    assert log.read_text() == "revise\n"  # the base's reviewer ran, the PR's never did
    outputs = runner.outputs()
    assert outputs["review-result"] == "revise"
    findings = json.loads(Path(outputs["findings-file"]).read_text())["findings"]
    assert [(f["file"], f["line"], f["rule"]) for f in findings] == [("calc.py", 2, "zero")]
    assert states(gh, pull.head_sha) == ["pending", "failure"]
    # The temporary checkout of the base commit is gone again.
    assert git(repo, "worktree", "list").count("\n") == 1
    # The run records stay in the workspace, out of git.
    assert (repo / "flows" / "review").is_dir()


def test_the_same_reviewer_approves_when_the_base_says_so(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """The control: with an approving reviewer in the base, the same PR is approved (so the
    test above fails if the base config were ignored in favour of the built-in defaults)."""
    base_with_reviewer(repo, "approve")
    pull = add_pull(gh, repo, {"calc.py": CALC, ".flow/base.yaml": flow_config("revise")})
    git(repo, "checkout", "-q", "feature")
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "gate")
    assert result.returncode == 0, result.stderr
    assert runner.outputs()["review-result"] == "approved"
    assert states(gh, pull.head_sha) == ["pending", "success"]


def test_an_agent_the_pr_adds_does_not_exist_for_its_review(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    base_with_reviewer(repo, "revise")
    pull = add_pull(
        gh, repo, {"calc.py": CALC, ".flow/base.yaml": flow_config("revise", "lenient")}
    )
    git(repo, "checkout", "-q", "feature")
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "lenient")
    assert result.returncode == 2, result.stderr
    assert "no agent 'lenient'" in result.stderr and "Traceback" not in result.stderr
    assert states(gh, pull.head_sha) == ["pending", "error"]  # never green
    assert runner.outputs()["review-result"] == "error"


def test_a_pr_that_excludes_every_path_is_still_reviewed(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """``review.exclude`` comes from the base commit like every review setting: a PR that
    adds ``exclude: ["**"]`` is reviewed as the base says, and the base's own exclusions
    apply (issue 25, item 2)."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text("review:\n  exclude: ['*_pb2.py']\n")
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "exclude generated code")
    pull = add_pull(
        gh,
        repo,
        {
            "calc.py": "def f(:\n",
            "out_pb2.py": "def g(:\n",
            ".flow/base.yaml": "review:\n  exclude: ['**']\n",
        },
    )
    git(repo, "checkout", "-q", "feature")
    result = runner.run("pull_request", pr_event(gh, pull))
    assert result.returncode == 1, result.stderr
    data = json.loads(Path(runner.outputs()["findings-file"]).read_text())
    assert [f["file"] for f in data["findings"]] == ["calc.py"]
    assert data["excludedFiles"] == 1
    assert states(gh, pull.head_sha) == ["pending", "failure"]


def test_an_agent_reviewer_stopped_by_its_budget_says_what_it_spent_in_the_outputs(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """Exit 5, review-result error, and the tokens it spent before the stop in the outputs
    (its cost unknown: it names no model), never empty as if it had spent nothing known."""
    budgeted_gate(repo, "budget:\n  agent: {tokens: 2500}\n")
    pull = add_pull(gh, repo, {"calc.py": CALC})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "gate")
    assert result.returncode == 5, result.stdout + result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "error"
    assert int(outputs["input-tokens"]) >= 2500 and outputs["output-tokens"] == "0"
    assert outputs["cost-usd"] == "" and outputs["cost-estimated"] == "false"


def test_an_agent_reviewer_a_spent_budget_never_started_spent_a_known_nothing(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """A limit of 0 starts no reviewer: exit 5, and what it spent is a known nothing (0, $0)
    in the outputs and the summary comment's row, not unknown."""
    budgeted_gate(repo, "budget:\n  review: {usd: 0}\n")
    pull = add_pull(gh, repo, {"calc.py": CALC})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "gate")
    assert result.returncode == 5, result.stdout + result.stderr
    outputs = runner.outputs()
    assert (outputs["input-tokens"], outputs["output-tokens"], outputs["cost-usd"]) == (
        "0",
        "0",
        "0",
    )
    (body,) = [str(c["body"]) for c in gh.comments_on(pull.number)]
    row = next(line for line in body.splitlines() if "| budget |" in line)
    assert row.endswith("| 0 | $0.00 |"), row


def test_a_configured_agent_that_is_the_builtin_reviewer_reviews_as_builtin(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """``agent: reviewer`` where the base's ``.flow/`` makes ``reviewer`` the builtin adapter
    (as ``init --example`` does): the builtin review (its findings, no CLI), not exit 2 for an
    adapter no CLI has; its spend is the builtin's known 0."""
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        command_agents({}) + "  reviewer:\n    adapter: builtin\n"
    )
    git(repo, "add", ".flow")
    git(repo, "commit", "-q", "-m", "configure the reviewer")
    pull = add_pull(gh, repo, {"broken.py": "def broken(:\n    pass\n"})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--agent", "reviewer")
    assert result.returncode == 1, result.stdout + result.stderr
    outputs = runner.outputs()
    assert outputs["review-result"] == "revise" and outputs["errors"] == "1"
    assert (outputs["input-tokens"], outputs["cost-usd"]) == ("0", "0")
