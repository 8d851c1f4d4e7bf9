"""The optional check run: created with annotations when the token may, skipped when not.

A check run is an extra on top of the ``gitflow-agents/review`` status: a 403 (a personal token,
or no ``checks: write``) or a failing Checks API never changes the job's exit code, never
switches the run to degraded mode and never hides the status.
"""

from __future__ import annotations

import re
from pathlib import Path

from gitflow_agents.findings import Finding, GateResult, Overall, Review, Severity
from gitflow_agents.github.action import checks
from tests.github_standin import GitHubStandIn, gh
from tests.helpers.action_runner import BROKEN, FINE, Runner, add_pull, pr_event, runner, states

__all__ = ["gh", "runner"]


def test_check_run_with_annotations(runner: Runner, gh: GitHubStandIn, repo: Path) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--check-run")
    assert result.returncode == 1, result.stderr
    (run,) = gh.state.check_runs.values()
    assert run["name"] == checks.NAME and run["head_sha"] == pull.head_sha
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    notes = run["output"]["annotations"]
    assert notes and all(n["path"] == "broken.py" for n in notes)
    assert {n["annotation_level"] for n in notes} <= {"failure", "warning", "notice"}
    outputs = runner.outputs()
    assert outputs["check-run-id"] == str(next(iter(gh.state.check_runs)))
    assert outputs["github-writes"] == "5"  # pending, review, comment, status, check run
    assert states(gh, pull.head_sha) == ["pending", "failure"]


def test_approved_check_run_is_success(runner: Runner, gh: GitHubStandIn, repo: Path) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--check-run")
    assert result.returncode == 0, result.stderr
    ((_, run),) = gh.state.check_runs.items()
    assert run["conclusion"] == "success" and run["output"]["annotations"] == []


def test_a_token_that_may_not_create_check_runs_skips_it_silently(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    """tok-write is a personal token: GitHub answers 403 to check runs for it."""
    pull = add_pull(gh, repo, {"fine.py": FINE})
    result = runner.run("pull_request", pr_event(gh, pull), "tok-write", "--check-run")
    assert result.returncode == 0, result.stderr  # never red because of the check run
    assert gh.requests("POST", r"/check-runs$")[0].status == 403
    assert gh.state.check_runs == {}
    assert not re.search(r"^::(warning|error)", result.stdout, re.M)
    assert "no check run" in result.stdout
    outputs = runner.outputs()
    assert outputs["check-run-id"] == "" and outputs["degraded"] == "false"
    assert states(gh, pull.head_sha) == ["pending", "success"]


def test_a_failing_checks_api_is_a_warning_not_a_failure(
    runner: Runner, gh: GitHubStandIn, repo: Path
) -> None:
    pull = add_pull(gh, repo, {"fine.py": FINE})
    gh.fail("POST", r"/check-runs$", 502, times=100)
    result = runner.run("pull_request", pr_event(gh, pull), "tok-actions", "--check-run")
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"^::warning title=gitflow-agents::the optional check run", result.stdout, re.M
    )
    assert states(gh, pull.head_sha) == ["pending", "success"]


def test_no_check_run_unless_asked(runner: Runner, gh: GitHubStandIn, repo: Path) -> None:
    pull = add_pull(gh, repo, {"broken.py": BROKEN})
    runner.run("pull_request", pr_event(gh, pull))
    assert gh.requests("POST", r"/check-runs$") == []


def test_annotations_are_capped_at_50_most_severe_first() -> None:
    placed = [
        Finding(Severity.INFO if i % 2 else Severity.ERROR, f"m{i}", "a.py", i + 1, rule="r")
        for i in range(120)
    ]
    findings = (*placed, Finding(Severity.ERROR, "no place"))
    review = Review(Overall.REVISE, findings=findings)
    gate = GateResult(approved=False, exit_code=1, reasons=("asks for changes",))
    out = checks.output(review, gate)
    assert len(out["annotations"]) == 50
    assert all(a["annotation_level"] == "failure" for a in out["annotations"])
    assert "70 more findings are not annotated" in out["summary"]
    assert out["title"] == "gitflow-agents: not approved"
    assert "- asks for changes" in out["summary"]
