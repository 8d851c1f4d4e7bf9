"""A real chain (implement → review → merge) through ``launch.py`` with the real Claude and Codex.

The other e2e files build the Invocation and call ``supervise()`` themselves; here
``chain.run_step`` does everything from a ``.flow/`` config whose agents name ``adapter: claude``
or ``adapter: codex``: the step work tree, ``launch.prepare`` / ``AgentRunner.run``, the commit,
the git statistics in the implementer's report and ``result.json``, the gate, the ✅ and the merge.
The stand-in gets each agent's script when the chain announces the agent (``task:start``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitflow_agents.chain import ChainSettings, Context, run_step, worktree_path
from gitflow_agents.config import load_flow_config
from gitflow_agents.git import queries as gitmod
from gitflow_agents.git.stats import GIT_STATS_MARKER
from gitflow_agents.plan import parse_plan
from gitflow_agents.runs import read_json
from gitflow_agents.runs.control import listening
from gitflow_agents.runs.events import Event, EventHub, MemoryChannel

from ..conftest import git
from .conftest import FLOW, GREETING_V1, PLAN_MARKER, Project, review_script
from .model_standin import Say, Shell, Standin, Step, Write
from .projects import claude_project, codex_project

pytestmark = pytest.mark.e2e

PROJECTS: dict[str, Callable[[Path, Standin], Project]] = {
    "claude": claude_project,
    "codex": codex_project,
}
BUILDER, REVIEWER = "step-01-builder", "step-01-reviewer-1"


def builder_script(worktree: Path) -> list[Step]:
    """Write greeting.py in the step work tree and a report with the git-statistics marker."""
    report = worktree / "flows" / FLOW / "agents" / BUILDER / "report.md"
    return [
        Write(str(worktree / "greeting.py"), GREETING_V1),
        Write(
            str(report),
            f"# Step 1 status: Completed\n\nAdded greeting.py.\n\n## Modified files\n\n"
            f"{GIT_STATS_MARKER}\n",
        ),
        Shell(f"mv {report} {report.with_name('report.complete.md')}"),
        Say("<SUMMARY>Added greeting.py</SUMMARY>\n<STATUS>completed</STATUS>"),
    ]


def configure(project: Project, extra: dict[str, Any]) -> None:
    """.flow/base.yaml: builder, reviewer and fixer on the CLI under test, at the stand-in."""
    agent = {
        "adapter": project.adapter,
        "model": project.model,
        "options": {"executable": str(project.executable), **project.options, **extra},
    }
    config = {
        "flow_dir": "flows",
        "default_branch": "main",
        "completion_workflow": {
            "template": "Write {report_file}; rename it to {success_file} when done, or to "
            f"{{failed_file}}. Under ## Modified files write the line {GIT_STATS_MARKER}"
        },
        "agents": {"builder": agent, "reviewer": agent, "fixer": agent},
    }
    (project.root / ".flow").mkdir()
    (project.root / ".flow" / "base.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with (project.root / ".git" / "info" / "exclude").open("a", encoding="utf-8") as handle:
        handle.write("/.flow/\n")


# Claude Code 2.1.330 in its default mode here (acceptEdits) refuses every Write and Bash under a
# `.git/` directory and outside its working directories. So step work trees live outside `.git/`
# (git.tool_worktree_root) and the adapter adds the real report folder with --add-dir (the work
# tree reaches flows/ through a symlink). Both modes must work.
BYPASS = {"permission_mode": "bypassPermissions"}
CASES = [
    pytest.param("claude", BYPASS, id="claude-bypassPermissions"),
    pytest.param("claude", {}, id="claude-acceptEdits"),
    pytest.param("codex", {}, id="codex"),
]


@pytest.mark.parametrize(("adapter", "extra"), CASES)
def test_chain_implement_review_merge(
    tmp_path: Path, standin: Standin, adapter: str, extra: dict[str, Any]
) -> None:
    project = PROJECTS[adapter](tmp_path, standin)
    root = project.root
    configure(project, extra)
    env = dict(project.env)
    if extra.get("permission_mode") == "bypassPermissions":
        env["IS_SANDBOX"] = "1"  # as root Claude bypasses permissions only with this (not "yes")
    config = load_flow_config(root)
    plan = parse_plan(root / "specs" / "greeting.md", config.spec_plan)
    worktree = worktree_path(root, FLOW, "step-01")
    memory = MemoryChannel()
    hub = listening(EventHub([memory]))  # as `run` makes it: Claude takes input mid-run
    first_request: dict[str, int] = {}  # agent id -> index of its first model call

    def on_start(event: Event) -> None:
        # Each agent's conversation: loaded when the chain starts it (the CLI is not up yet).
        node = event.data.get("node")
        first_request[str(node)] = len(standin.main_requests())
        if node == BUILDER:
            standin.load(builder_script(worktree))
        elif node == REVIEWER:
            head = gitmod.head_sha(worktree)
            standin.load(review_script(worktree, REVIEWER, "APPROVED", head))

    hub.subscribe("task:start", on_start)
    settings = ChainSettings(stuck_timeout=30.0, timeout=60.0, kill_grace=2.0)
    ctx = Context(root, config, plan, FLOW, settings, hub, env=env)
    try:
        result = run_step(ctx, 1)
    finally:
        hub.close()

    agents_dir = root / "flows" / FLOW / "agents"
    record: dict[str, Any] = (read_json(result.result_path) if result.result_path else None) or {}
    assert not standin.errors, standin.errors
    assert result.outcome == "approved", (result.reason, record.get("chain"))
    assert result.exit_code == 0
    chain = record["chain"]
    assert [a["kind"] for a in chain["agents"]] == ["implement", "review"]
    assert [a["status"] for a in chain["agents"]] == ["succeeded", "succeeded"]

    # Merged: the file and the plan's ✅ are committed on the target branch.
    assert result.merged is not None and git(root, "rev-parse", "main").strip() == result.merged.sha
    assert git(root, "show", "main:greeting.py") == GREETING_V1
    committed_plan = git(root, "show", "main:specs/greeting.md")
    step1 = next(ln for ln in committed_plan.splitlines() if "Step 1:" in ln)
    step2 = next(ln for ln in committed_plan.splitlines() if "Step 2:" in ln)
    assert step1.startswith("### Status: ✅") and step2.startswith("### Status: ❌")

    # The tool filled the implementer's report: the marker became a table naming the file.
    report = (agents_dir / BUILDER / "report.complete.md").read_text(encoding="utf-8")
    assert GIT_STATS_MARKER not in report
    assert "| `greeting.py` | 2 | 0 | new |" in report, report

    # result.json of the chain and of the implementer carry the tool's statistics.
    assert [f["path"] for f in record["gitStats"]["files"]] == ["greeting.py"]
    assert record["gitStats"]["files"][0]["status"] == "A"
    builder_run = next(a for a in chain["agents"] if a["kind"] == "implement")
    builder_result = read_json(
        root / "flows" / FLOW / "runs" / builder_run["runID"] / "result.json"
    )
    assert builder_result is not None
    assert [f["path"] for f in builder_result["gitStats"]["files"]] == ["greeting.py"]

    # The system prompt launch.py wrote reached the model, with the plan step's text.
    requests = standin.main_requests()
    builder_first = requests[first_request[BUILDER]]
    reviewer_first = requests[first_request[REVIEWER]]
    for line in (f"{PLAN_MARKER}-STEP-1", "Write `greeting.py` with a `greet(name)` function"):
        assert line in builder_first.system_text(), builder_first.system_text()[:3000]
    assert "REVIEW_RESULT: APPROVED" in reviewer_first.system_text()
    assert f"- Agent: {REVIEWER}" in reviewer_first.system_text()
