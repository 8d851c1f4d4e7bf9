"""Incremental review through the real Claude Code CLI (issue 25): the reviewer's task for the
second push names only the commits since the last reviewed head, and what the model is sent to
read (the stand-in's count of the conversation's tokens: the task, the diff the CLI ran, the
report it wrote; not the CLI's own reminders, the same for every run) is at most 30 % of a full
review of the same head."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.findings import Finding, Severity
from gitflow_agents.reviewer.agent import _review_task
from gitflow_agents.reviewer.incremental import Earlier, Prior, Scope, decide
from gitflow_agents.supervisor import ReportFiles
from tests.helpers.incremental import line_of, module

from .conftest import FLOW, Project, git, review_report
from .model_standin import Say, Shell, Standin, Step, Write
from .projects import claude_project
from .scenarios import assert_clean, describe

pytestmark = pytest.mark.e2e


def commit(project: Project, fixed: int, message: str) -> str:
    (project.root / "calc.py").write_text(module(fixed))
    git(project.root, "add", "calc.py")
    git(project.root, "commit", "-q", "-m", message)
    return git(project.root, "rev-parse", "HEAD").strip()


def review_tokens(
    project: Project, standin: Standin, agent_id: str, base: str, head: str, scope: Scope | None
) -> int:
    """One review run of ``base..head`` (``scope``: incremental) by the real CLI: it runs the
    diff command its task names, writes an approving report and renames it. The stand-in's
    token count of the conversation's last request (which holds all of it)."""
    agent_dir = project.root / "flows" / FLOW / "agents" / agent_id
    files = ReportFiles.named(agent_dir, "report.md", ".complete.md", ".failed.md")
    task = _review_task(base, head, files, increment=scope)
    command = next(line.strip() for line in task.splitlines() if line.startswith("    git diff"))
    script: list[Step] = [
        Shell(command),
        Write(str(files.report), review_report("APPROVED", head)),
        Shell(f"mv {files.report} {files.success}"),
        Say("Review done.\n\nREVIEW_RESULT: APPROVED"),
    ]
    before = len(standin.main_requests())
    standin.load(script)
    run = project.run("reviewer", agent_id, task=task)
    assert not standin.errors, standin.errors
    assert run.outcome.status == "succeeded", describe(run)
    assert_clean(run)
    last = standin.main_requests()[before:][-1]
    assert "scale_0" in last.all_text()  # the diff's output reached the model
    return last.conversation_tokens()


def test_claude_reads_under_30_percent_for_the_second_push(
    tmp_path: Path, standin: Standin
) -> None:
    project = claude_project(tmp_path, standin)
    base = project.base_sha
    git(project.root, "checkout", "-q", "-b", "feature")
    first = commit(project, 0, "push 1: the calculator")
    second = commit(project, 1, "push 2: fix scale_0")
    open_finding = Finding(Severity.WARN, "large", "calc.py", line_of(599), rule="big")
    prior = Prior(first, base, "reviewer", (open_finding.with_fingerprint(),))
    scope = decide(project.root, base, second, "reviewer", Earlier(prior))
    assert scope.kind == "incremental" and scope.new_files == ("calc.py",)
    full = review_tokens(project, standin, "review-full", base, second, None)
    step = review_tokens(project, standin, "review-incremental", base, second, scope)
    assert step <= 0.3 * full, (step, full)
