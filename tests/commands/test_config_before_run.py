"""A `.flow/` problem that ``run`` would only meet later (an adapter's option, an agent file's
frontmatter, ``flow_dir``, ``chain.branch_pattern``) is one ``file:line: key: message`` line,
exit 2, before any agent runs and before the step's branch or work tree is made; ``plan lint``
reports it too."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gitflow_agents.base.errors import ExitCode
from tests.conftest import git
from tests.helpers.chain import call, configure


def _insert_under(repo: Path, anchor: str, lines: str) -> int:
    """``lines`` put into .flow/base.yaml right after the line ``anchor``; the 1-based line
    number of the first of them."""
    path = repo / ".flow" / "base.yaml"
    text = path.read_text().splitlines(keepends=True)
    index = text.index(anchor + "\n") + 1
    path.write_text("".join([*text[:index], lines, *text[index:]]))
    return index + 1


def _bad_reviewer_option(repo: Path) -> tuple[str, str]:
    line = _insert_under(repo, "  reviewer:", "    options: {bogus: 1}\n")
    return (
        f".flow/base.yaml:{line}",
        "agents.reviewer.options.bogus: unknown option for the command adapter",
    )


def _bad_reviewer_option_type(repo: Path) -> tuple[str, str]:
    line = _insert_under(repo, "  reviewer:", "    options:\n      completes_by_exit: 7\n")
    return (
        f".flow/base.yaml:{line + 1}",
        "agents.reviewer.options.completes_by_exit: expected true or false",
    )


def _flow_dir_outside(repo: Path) -> tuple[str, str]:
    path = repo / ".flow" / "base.yaml"
    path.write_text(path.read_text().replace("flow_dir: flows\n", "flow_dir: ../escape\n", 1))
    return ".flow/base.yaml:1", "flow_dir: '../escape': give a folder inside the project"


def _branch_pattern_git_refuses(repo: Path) -> tuple[str, str]:
    line = _insert_under(repo, "default_branch: main", "chain:\n  branch_pattern: 'a b/{step}'\n")
    return (
        f".flow/base.yaml:{line + 1}",
        "chain.branch_pattern: 'a b/1' (step 1 of plan 'plan') is not a valid branch name: "
        "contains a space",
    )


def _agent_file_frontmatter(repo: Path) -> tuple[str, str]:
    (repo / ".flow" / "agents").mkdir()
    (repo / ".flow" / "agents" / "builder.md").write_text("---\n- not\n- a mapping\n---\nBuild.\n")
    _insert_under(repo, "  builder:", "    system_prompt: '@.flow/agents/builder.md'\n")
    return (
        ".flow/agents/builder.md:2",
        "agents.builder.system_prompt: frontmatter must be a YAML mapping",
    )


CASES = {
    "reviewer-option": _bad_reviewer_option,
    "reviewer-option-type": _bad_reviewer_option_type,
    "flow-dir-outside": _flow_dir_outside,
    "branch-pattern": _branch_pattern_git_refuses,
    "agent-file-frontmatter": _agent_file_frontmatter,
}


@pytest.mark.parametrize("case", list(CASES))
def test_run_refuses_it_before_anything_runs_or_is_made(repo: Path, case: str) -> None:
    configure(repo)
    where, said = CASES[case](repo)
    before = (git(repo, "branch", "--list"), git(repo, "worktree", "list"))
    result = call(repo, "run", "specs/feature.md", "--step", "1", "--quiet")
    assert result.returncode == ExitCode.USAGE, result
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"gitflow-agents: error: {where}: {said}"), line
    assert (git(repo, "branch", "--list"), git(repo, "worktree", "list")) == before
    assert not (repo / "flows").exists()  # no agent ran: no run folder
    assert not (repo.parent / "escape").exists()


@pytest.mark.parametrize("case", list(CASES))
def test_plan_lint_reports_it_with_file_and_line(repo: Path, case: str) -> None:
    configure(repo)
    where, said = CASES[case](repo)
    result = call(repo, "plan", "lint", "specs/feature.md")
    assert result.returncode == ExitCode.USAGE, result
    assert any(line.startswith(f"{where}: {said}") for line in result.stdout.splitlines()), result
    assert result.stderr == "1 problem (1 plan checked)\n"


def test_a_branch_pattern_option_git_would_refuse_is_a_usage_error_before_anything(
    repo: Path,
) -> None:
    configure(repo)
    before = (git(repo, "branch", "--list"), git(repo, "worktree", "list"))
    result = call(repo, "run", "specs/feature.md", "--step", "1", "--branch-pattern", "a b/{step}")
    assert result.returncode == ExitCode.USAGE, result
    assert result.stderr == (
        "gitflow-agents: error: --branch-pattern 'a b/{step}': 'a b/1' (step 1 of plan 'plan') "
        "is not a valid branch name: contains a space\n"
    )
    assert (git(repo, "branch", "--list"), git(repo, "worktree", "list")) == before
    assert not (repo / "flows").exists()


def test_a_model_a_flow_type_layer_gives_is_not_asked_of_commands_without_it(repo: Path) -> None:
    """An agent whose ``{model}`` a `.flow/<flow-type>/` layer fills is valid config: commands
    without that layer (``status``, a flow of another agent) work; the agent itself, run
    without the layer, is refused when it launches (exit 2, its command named), with it runs.
    Loading refused every command of such a project, ``cancel`` and ``status`` included."""
    configure(repo)
    command = f"[{json.dumps(sys.executable)}, '-c', 'pass', '--model={{model}}']"
    _insert_under(repo, "agents:", f"  modelled:\n    adapter: command\n    command: {command}\n")
    (repo / ".flow" / "fast").mkdir()
    (repo / ".flow" / "fast" / "base.yaml").write_text("agents:\n  modelled:\n    model: m1\n")
    assert call(repo, "status").returncode == 0
    assert call(repo, "plan", "lint", "specs/feature.md").returncode == 0
    refused = call(repo, "spawn", "modelled", "--task", "x", "--quiet")
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    assert "agents.modelled.command: the command uses {model}" in refused.stderr
