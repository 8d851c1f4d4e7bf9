"""The scenarios every CLI goes through (test_e2e_<cli>.py call them with their own setup).

- implement: the CLI writes greeting.py and its report and renames it (aider: completes by exit);
  the file, the outcome, result.json (seed-001 shape) and the git statistics are asserted;
- review: REVISE (the real gate refuses), a fix run, then APPROVED (the gate passes);
- prompt: the assembled seed-000 prompt with the step's plan context reached the model;
- faults: stall / 401 / closed connection end failed, stuck or timeout within the timeout, with
  the reason recorded and no process of the tree left.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gitflow_agents.findings import Severity, gate, parse_review

from .conftest import (
    GREETING_V1,
    GREETING_V2,
    PLAN_MARKER,
    AgentRun,
    Project,
    fix_script,
    implement_script,
    review_script,
    validate_result,
)
from .model_standin import Fault, Recorded, Standin, Step

# Where a CLI's request carries the system prompt: Recorded.system_text (the API's system field)
# or Recorded.all_text (CLIs that send it as context, e.g. aider's --read file in a user message).
PromptWhere = Callable[[Recorded], str]


def describe(run: AgentRun) -> str:
    """What to print when an assertion fails: the outcome and the tail of the agent's output."""
    log = run.run.worker_log.read_text(errors="replace") if run.run.worker_log.exists() else ""
    return (
        f"outcome={run.outcome.status!r} reason={run.outcome.reason!r} exit={run.outcome.exit_code}"
        f"\nargv={list(run.spec.argv)}\n--- worker.log (tail) ---\n{log[-3000:]}"
    )


def assert_clean(run: AgentRun) -> None:
    assert run.leftover == [], f"processes left behind: {run.leftover}\n{describe(run)}"
    assert not run.outcome.leftover_pids, describe(run)


# Script factories: (repo root, agent id) -> steps; review: (root, agent id, verdict, sha).
ImplementScript = Callable[[Path, str], list[Step]]
ReviewScript = Callable[[Path, str, str, str], list[Step]]


def implement(
    project: Project,
    standin: Standin,
    *,
    completes_by_exit: bool = False,
    script: ImplementScript = implement_script,
) -> AgentRun:
    agent_id = "step-01-builder"
    standin.load(script(project.root, agent_id))
    run = project.run("builder", agent_id)
    assert not standin.errors, standin.errors
    assert run.outcome.status == "succeeded", describe(run)
    assert_clean(run)
    assert (project.root / "greeting.py").read_text() == GREETING_V1, describe(run)
    if completes_by_exit:
        assert run.spec.completes_by_exit
        assert "exited 0" in run.outcome.reason, describe(run)
    else:
        assert run.outcome.report_path == run.agent_dir / "report.complete.md", describe(run)
        assert run.outcome.report_path.read_text().startswith("# Step 1 status: Completed")
        assert run.outcome.signal_at is not None
    # The run record: seed-001 implement shape, the outcome beside it, events as they happened.
    validate_result("implement", run.result)
    assert run.result["status"] == "succeeded"
    assert run.result["changedFiles"] == ["greeting.py"], (
        f"the CLI left other files in the repo: {run.result['changedFiles']}"
    )
    assert run.result["run"]["outcome"] == "succeeded"
    kinds = [event["type"] for event in run.events]
    assert kinds[0] == "agent:start" and kinds[-1] == "agent:complete", kinds
    # The chain's git statistics: commit the step and count its lines.
    head = project.commit_all("step 1: greeting")
    assert project.numstat(project.base_sha, head) == {"greeting.py": (2, 0)}
    # Every conversation request reached the stand-in, and the CLI's reply was parsed.
    assert len(standin.main_requests()) >= len(standin.script)
    return run


def prompt_reached_model(run: AgentRun, standin: Standin, where: PromptWhere) -> None:
    """Distinctive lines of the assembled prompt, incl. the step's plan context, reached the model."""
    first = standin.main_requests()[0]
    text = where(first)
    expected = [
        "# Multi-Agent Flow Protocol",
        f"- Agent: {run.agent_dir.name}",
        "- Step: 1",
        f"{PLAN_MARKER}-STEP-1",  # the plan context of step 1, fenced in the assignment
        "Write `greeting.py` with a `greet(name)` function",
        f"flows/e2e/agents/{run.agent_dir.name}/report.md",
    ]
    for line in expected:
        assert line in run.prompt, f"the assembled prompt lacks {line!r}"
        assert line in text, f"{line!r} did not reach the model; it got:\n{text[:3000]}"


def review_gate(
    project: Project,
    standin: Standin,
    *,
    completes_by_exit: bool = False,
    review: ReviewScript = review_script,
    fix: ImplementScript = fix_script,
) -> None:
    """REVISE drives the real gate to refuse; a fixer run; APPROVED drives it to pass."""
    head = project.commit_all("step 1: greeting") if project.changed_files() else ""
    if not head:
        (project.root / "greeting.py").write_text(GREETING_V1)
        head = project.commit_all("step 1: greeting")

    def run_review(agent_id: str, verdict: str, sha: str) -> AgentRun:
        standin.load(review(project.root, agent_id, verdict, sha))
        run = project.run("reviewer", agent_id, after=("step-01-builder",))
        assert run.outcome.status == "succeeded", describe(run)
        assert_clean(run)
        validate_result("review", run.result)
        return run

    first = run_review("step-01-reviewer", "REVISE", head)
    text = _review_text(first, completes_by_exit)
    verdict = gate(parse_review(text, reviewed_sha=head), threshold=Severity.ERROR, head_sha=head)
    assert not verdict.approved
    assert verdict.exit_code == 1
    assert any("REVISE" in reason for reason in verdict.reasons), verdict.reasons
    assert first.result["overall"] == "revise"
    assert first.result["findings"][0]["file"] == "greeting.py"

    standin.load(fix(project.root, "step-01-fixer"))
    fix = project.run("fixer", "step-01-fixer", after=("step-01-reviewer",))
    assert fix.outcome.status == "succeeded", describe(fix)
    assert_clean(fix)
    assert (project.root / "greeting.py").read_text() == GREETING_V2, describe(fix)
    fixed = project.commit_all("step 1: fix greeting")
    assert project.numstat(head, fixed) == {"greeting.py": (2, 2)}

    second = run_review("step-01-reviewer-2", "APPROVED", fixed)
    text = _review_text(second, completes_by_exit)
    verdict = gate(parse_review(text, reviewed_sha=fixed), threshold=Severity.ERROR, head_sha=fixed)
    assert verdict.approved, verdict.reasons
    assert verdict.exit_code == 0
    assert second.result["overall"] == "approve"


def _review_text(run: AgentRun, completes_by_exit: bool) -> str:
    if completes_by_exit:
        # A CLI that cannot rename: the verdict is in its reply (stdout) or the report it wrote.
        report = run.agent_dir / "report.md"
        return report.read_text() if report.exists() else (run.outcome.stdout or "")
    assert run.outcome.report_path is not None, describe(run)
    return run.outcome.report_path.read_text()


FAULT_STATES = ("failed", "stuck", "timeout")


def fault(
    project: Project,
    standin: Standin,
    kind: Fault,
    *,
    # Above the silent start-up of the CLIs (Gemini, Aider: up to ~6 s under `-n 2`; opencode
    # needs more, see its test): the CLI's own CPU is not activity (docs/supervisor.md).
    stuck_timeout: float = 10.0,
    timeout: float = 20.0,
    script: ImplementScript = implement_script,
) -> AgentRun:
    """The stand-in misbehaves on every conversation request; the run must end, recorded, clean."""
    agent_id = f"step-01-builder-{kind}"
    standin.load(script(project.root, agent_id))
    standin.fault = kind
    try:
        run = project.run("builder", agent_id, stuck_timeout=stuck_timeout, timeout=timeout)
    finally:
        standin.fault = None
    assert run.outcome.status in FAULT_STATES, describe(run)
    # Within its timeout (+ the kill grace and the exit sweep).
    assert run.wall < timeout + 8, describe(run)
    assert run.outcome.reason, describe(run)
    assert run.result["status"] == "failed"
    assert run.result["run"]["reason"] == run.outcome.reason
    assert_clean(run)
    assert not (project.root / "greeting.py").exists()
    assert standin.main_requests(), "the CLI never reached the stand-in"
    return run
