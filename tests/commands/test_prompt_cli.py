"""``gitflow-agents prompt`` end to end in a tmp project: in this process (``cli.main``, what the
console script calls), and as a real subprocess for one prompt and one error."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import Cli, run_cli

PLAN = "specs/example-plan.md"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repo after ``gitflow-agents init`` (shared read-only by the tests below)."""
    root = tmp_path_factory.mktemp("cli") / "project"
    root.mkdir()
    (root / ".git").mkdir()  # find_project_root only needs the marker
    result = run_cli("init", cwd=root)
    assert result.returncode == 0, result.stderr
    return root


def test_prints_the_prompt_for_a_plan_step(project: Path) -> None:
    result = run_cli("prompt", "--agent", "builder", "--plan", PLAN, "--step", "2", cwd=project)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("---\nname: builder\n")
    assert "- Flow: example-plan\n- Agent: step-02-builder\n- Type: builder\n" in out
    assert "flows/example-plan/agents/step-02-builder/report.md" in out
    assert "## Current Step: Step 2\n" in out
    assert "Previous Agent Reports" not in out
    assert result.stderr == ""


def completed(project: Path, tmp_path: Path, flow: str, *agents: str) -> Path:
    """A copy of ``project`` (the fixture stays read-only) where ``agents`` of ``flow`` left a
    completed report."""
    root = tmp_path / "project"
    shutil.copytree(project, root, symlinks=True)
    for agent in agents:
        folder = root / "flows" / flow / "agents" / agent
        folder.mkdir(parents=True)
        (folder / "report.complete.md").write_text("# Done\n")
    return root


def test_after_and_names_from_options(project: Path, tmp_path: Path, cli_run: Cli) -> None:
    project = completed(project, tmp_path, "demo", "step-02-builder", "step-02-fixer")
    result = cli_run.main(
        "prompt",
        "--agent=reviewer",
        f"--plan={PLAN}",
        "--step=2",
        "--after=step-02-builder, step-02-fixer",
        "--flow=demo",
        "--agent-name=rev-1",
        "--preamble=Review this step:",
        cwd=project,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "- Flow: demo\n- Agent: rev-1\n" in out
    assert "1. **step-02-builder**: `flows/demo/agents/step-02-builder/report.complete.md`\n" in out
    assert "2. **step-02-fixer**: `flows/demo/agents/step-02-fixer/report.complete.md`\n" in out
    assert re.search(r"\n## Your Assignment\n\nReview this step:\n\n`{3,}md\n# Plan: ", out)


def test_after_naming_an_agent_with_no_completed_report_is_refused(
    project: Path, tmp_path: Path, cli_run: Cli
) -> None:
    """A mistyped ``--after`` id: exit 2, one line naming it and the agents that have a report,
    rather than a prompt pointing the agent to a file that does not exist."""
    project = completed(project, tmp_path, "example-plan", "step-01-builder")
    result = cli_run.main(
        "prompt", "--agent", "reviewer", "--plan", PLAN, "--step", "1",
        "--after", "step-01-builder,step-01-buildr", cwd=project,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(
        "gitflow-agents: error: prompt --after step-01-buildr: no completed report at "
        "flows/example-plan/agents/step-01-buildr/report.complete.md "
        "(agents with one: step-01-builder; "
    )


def test_raw_task_from_text_and_file(project: Path, tmp_path: Path, cli_run: Cli) -> None:
    result = cli_run.main("prompt", "--agent", "planner", "--task", "Plan {x}.", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "- Flow: planner\n- Agent: planner\n" in result.stdout
    assert result.stdout.endswith("## Your Assignment\n\nPlan {x}.\n")
    task = tmp_path / "task.md"
    task.write_text("From a file.\n")
    result = cli_run.main("prompt", "--agent", "planner", "--task", f"@{task}", cwd=project)
    assert result.stdout.endswith("## Your Assignment\n\nFrom a file.\n")


def test_segments_table(project: Path, cli_run: Cli) -> None:
    result = cli_run.main(
        "prompt", "--agent", "builder", "--plan", PLAN, "--step", "1", "--segments", cwd=project
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["#", "SCOPE", "LABEL", "SOURCE", "LINES"]
    assert lines[1].split()[:2] == ["1", "frontmatter"]
    assert ".flow/agents/builder.md" in lines[1]
    assert any(
        ".flow/templates/implementation-completion-workflow-template.md" in line for line in lines
    )
    assert any("specs/example-plan.md" in line for line in lines)
    assert lines[-1].endswith(" lines")


def test_segments_json_add_up_to_the_prompt(project: Path, cli_run: Cli) -> None:
    args = ("prompt", "--agent", "builder", "--plan", PLAN, "--step", "1")
    both = json.loads(cli_run.main(*args, "--json", cwd=project).stdout)
    segments = json.loads(cli_run.main(*args, "--segments", "--json", cwd=project).stdout)
    assert "text" not in segments
    assert [s["scope"] for s in segments["segments"]] == [s["scope"] for s in both["segments"]]
    assert "".join(s["content"] for s in both["segments"]) == both["text"]
    assert both["segments"][0] == {
        "scope": "frontmatter",
        "label": "agent frontmatter (hoisted)",
        "source": ".flow/agents/builder.md",
        "lines": both["segments"][0]["content"].count("\n"),
        "content": both["segments"][0]["content"],
    }


def test_agents_flow_agent(project: Path, tmp_path: Path, cli_run: Cli) -> None:
    root = tmp_path / "p"
    (root / ".agents-flow" / "agents").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".agents-flow" / "global-system-prompt.md").write_text("Be precise.\n")
    (root / ".agents-flow" / "agents" / "scout.agent.md").write_text(
        "---\nname: Scout\ndescription: Looks around\nagentId: scout\noutput:\n  kind: text\n---\n"
        "You scout.\n"
    )
    result = cli_run.main("prompt", "--agent", "scout", "--task", "Look.", "--segments", cwd=root)
    assert result.returncode == 0, result.stderr
    assert "global-system-prompt" in result.stdout
    assert ".agents-flow/agents/scout.agent.md" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--agent", "nobody", "--task", "x"), "unknown agent 'nobody'; known agents: builder"),
        (("--agent", "builder", "--plan", PLAN, "--step", "9"), "no step 9 (steps: 1, 2, 3)"),
        (("--agent", "builder", "--plan", "specs/none.md", "--step", "1"), "none.md: no such file"),
        (("--agent", "builder", "--plan", PLAN), "--plan needs --step"),
        (("--agent", "builder"), "give --plan with --step, or --task"),
        (("--agent", "builder", "--task", "x", "--agent-name", "../up"), "invalid agent id"),
        (("--agent", "builder", "--task", "@missing.md"), "missing.md: no such file"),
        (("--agent", "builder", "--task", "x", "--after", ","), "--after: give one or more"),
    ],
)
def test_errors_are_one_line_exit_2(
    project: Path, args: tuple[str, ...], message: str, cli_run: Cli
) -> None:
    result = cli_run.main("prompt", *args, cwd=project)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("gitflow-agents: error: ")
    assert message in result.stderr


def test_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    (root / ".flow").mkdir(parents=True)
    (root / ".flow" / "base.yaml").write_text("agents: [not, a, mapping\n")
    result = run_cli("prompt", "--agent", "builder", "--task", "x", cwd=root)
    assert result.returncode == 2
    assert result.stderr.startswith("gitflow-agents: error: .flow/base.yaml:")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_a_plan_a_symlink_leads_out_of_the_project_is_never_read(
    tmp_path: Path, cli_run: Cli
) -> None:
    """Its step would go into the prompt (docs/security.md): ``prompt`` and ``spawn`` refuse it,
    exit 2, naming the link and where it leads, as ``run`` does; nothing of it is printed and no
    agent starts. A link that stays inside is read, and so is the plan named at its own path."""
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    assert cli_run.main("init", cwd=root).returncode == 0
    outside = tmp_path / "outside.md"
    outside.write_text("# Elsewhere\n\n### Status: | Step 1: Leak\nTOP SECRET\n")
    (root / "specs" / "link.md").symlink_to(outside)
    for command in (("prompt", "--agent", "builder"), ("spawn", "builder")):
        for plan, where in (("specs/link.md", root), ("link.md", root / "specs")):
            refused = cli_run.main(*command, "--plan", plan, "--step", "1", cwd=where)
            assert refused.returncode == 2, refused.stderr
            assert refused.stdout == "" and "SECRET" not in refused.stderr
            assert refused.stderr == (
                "gitflow-agents: error: specs/link.md: leads outside the project root "
                f"(to {outside.resolve()}); the file must be inside the project root\n"
            )
    assert not (root / "flows").exists()  # spawn started nothing
    (root / "specs" / "inside.md").symlink_to("example-plan.md")
    for plan in ("specs/inside.md", str(outside)):
        read = cli_run.main("prompt", "--agent", "builder", "--plan", plan, "--step", "1", cwd=root)
        assert read.returncode == 0, read.stderr
        assert "## Current Step: Step 1\n" in read.stdout
