"""``gitflow-agents plan show|lint``: outputs, exit codes, config layers (in-process; one real
process for the exit status a pre-commit hook sees)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT, Cli, CliResult, run_cli

PLANS = DATA / "plans"
Run = Callable[..., CliResult]

COMPLETION = "completion_workflow:\n  template: 'Write {report_file}, then rename it.'\n"
CUSTOM_SPEC_PLAN = (
    "spec_plan:\n"
    "  top_level_end_marker: '<!-- steps -->'\n"
    "  step_header_pattern: '^## \\[(.?)\\] (\\d+)\\. (.+)$'\n"
)


@pytest.fixture
def cli(cli_run: Cli) -> Run:
    """``gitflow-agents`` in-process, from inside a project folder."""
    return cli_run.main


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder (with .git, no .flow/) holding copies of the sample plans."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    shutil.copytree(PLANS, root / "specs")
    return root


def test_show_table(project: Path, cli: Run) -> None:
    result = cli("plan", "show", "specs/feature.md", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "Plan: Feature Implementation  (specs/feature.md, 3 steps)\n"
        "\n"
        "STEP  STATUS  LINE  DEPENDS ON  TOUCHES  TITLE\n"
        "   1  ✅        12  -           -        Create database schema\n"
        "   2  ❌        16  1           -        Implement API endpoints\n"
        "   3  ❌        25  2           -        Add frontend components\n"
    )
    assert result.stderr == ""


def test_show_json(project: Path, cli: Run) -> None:
    result = cli("plan", "show", "specs/feature.md", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["path"] == "specs/feature.md"
    assert data["name"] == "feature"
    assert data["overview"].startswith("# Plan: Feature Implementation\n")
    assert data["steps"] == [
        {
            "number": 1,
            "title": "Create database schema",
            "status": "✅",
            "line": 12,
            "dependsOn": [],
            "touches": [],
        },
        {
            "number": 2,
            "title": "Implement API endpoints",
            "status": "❌",
            "line": 16,
            "dependsOn": [1],
            "touches": [],
        },
        {
            "number": 3,
            "title": "Add frontend components",
            "status": "❌",
            "line": 25,
            "dependsOn": [2],
            "touches": [],
        },
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "gitflow-agents: error: specs/missing.md: no such file\n"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "gitflow-agents: error: specs/missing.md:3: binary file"),
        ("Grüße".encode("latin-1"), "gitflow-agents: error: specs/missing.md:1: not valid UTF-8"),
        (b"# no steps\n", "gitflow-agents: error: specs/missing.md: no step headers found"),
    ],
)
def test_show_bad_plan_is_one_line_exit_2(
    project: Path, content: bytes | None, expected: str, cli: Run
) -> None:
    if content is not None:
        (project / "specs" / "missing.md").write_bytes(content)
    result = cli("plan", "show", "specs/missing.md", cwd=project)
    assert result.returncode == 2
    assert result.stderr.startswith(expected)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_lint_clean_exit_0(project: Path, cli: Run) -> None:
    result = cli("plan", "lint", "specs/feature.md", "specs/fences.md", cwd=project)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == "no problems (2 plans checked)\n"


def test_lint_problems_exit_2(project: Path, cli: Run) -> None:
    result = cli(
        "plan", "lint", "specs/feature.md", "specs/broken.md", "specs/gone.md", cwd=project
    )
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert lines[0].startswith("specs/broken.md: end marker '## Implementation Steps' not found")
    assert "specs/broken.md:7: duplicate step 3: lines 5 and 7" in lines
    assert "specs/broken.md:13: missing steps 4-5 (gap after step 3)" in lines
    assert lines[-1] == "specs/gone.md: no such file"
    assert len(lines) == 8
    assert result.stderr == "8 problems (3 plans checked)\n"


def test_lint_binary_file_no_traceback(project: Path, cli: Run) -> None:
    (project / "specs" / "logo.md").write_bytes(bytes(range(256)))
    result = cli("plan", "lint", "specs/logo.md", cwd=project)
    assert result.returncode == 2
    assert result.stdout.startswith("specs/logo.md:1: binary file")
    assert "Traceback" not in result.stderr


def test_custom_spec_plan_from_flow_base_yaml(project: Path, cli: Run) -> None:
    (project / ".flow").mkdir()
    (project / ".flow" / "base.yaml").write_text(COMPLETION + CUSTOM_SPEC_PLAN)
    clean = cli("plan", "lint", "specs/custom.md", cwd=project)
    assert (clean.returncode, clean.stdout) == (0, ""), clean.stderr
    shown = cli("plan", "show", "specs/custom.md", "--json", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert [s["status"] for s in json.loads(shown.stdout)["steps"]] == ["x", ""]
    # The default-format plan has no steps under the custom pattern.
    other = cli("plan", "lint", "specs/feature.md", cwd=project)
    assert other.returncode == 2
    assert "no step headers found (step_header_pattern: '^## \\[(.?)\\]" in other.stdout


def test_flow_type_layer(project: Path, cli: Run) -> None:
    (project / ".flow" / "implement").mkdir(parents=True)
    (project / ".flow" / "base.yaml").write_text(COMPLETION)
    (project / ".flow" / "implement" / "base.yaml").write_text(CUSTOM_SPEC_PLAN)
    assert cli("plan", "lint", "specs/custom.md", cwd=project).returncode == 2
    layered = cli("plan", "lint", "specs/custom.md", "--flow-type", "implement", cwd=project)
    assert layered.returncode == 0, layered.stdout + layered.stderr


def test_bad_pattern_in_config(project: Path, cli: Run) -> None:
    (project / ".flow").mkdir()
    (project / ".flow" / "base.yaml").write_text(
        COMPLETION + "spec_plan:\n  step_header_pattern: '^### Step (\\d+): (.+)$'\n"
    )
    show = cli("plan", "show", "specs/feature.md", cwd=project)
    assert show.returncode == 2
    assert "has 2 capture groups; it must have exactly 3" in show.stderr
    assert ".flow/base.yaml" in show.stderr and "Traceback" not in show.stderr
    # lint reports the config as a problem and still checks the plan with the defaults.
    lint = cli("plan", "lint", "specs/feature.md", cwd=project)
    assert lint.returncode == 2
    (line,) = lint.stdout.splitlines()
    assert line.startswith(".flow/base.yaml")
    assert "step_header_pattern" in line and "has 2 capture groups" in line
    assert lint.stderr == "1 problem (1 plan checked)\n"


def test_lint_reports_agents_flow_manifest_errors(project: Path, cli: Run) -> None:
    agents = project / ".agents-flow" / "agents"
    agents.mkdir(parents=True)
    (agents / "bad.agent.md").write_text("---\nagentId: [unclosed\n---\nbody\n")
    result = cli("plan", "lint", "specs/feature.md", cwd=project)
    assert result.returncode == 2
    (line,) = result.stdout.splitlines()
    assert line.startswith(".agents-flow/agents/bad.agent.md:")
    assert line.endswith("[invalid_frontmatter]")


def test_lint_needs_a_plan_argument(project: Path, cli: Run) -> None:
    result = cli("plan", "lint", cwd=project)
    assert result.returncode == 2
    assert "the following arguments are required: plans" in result.stderr


def test_lint_problems_exit_2_from_a_real_process(project: Path) -> None:
    """The exit status a pre-commit hook (``plan-lint``) sees, from the console entry point."""
    result = run_cli("plan", "lint", "specs/broken.md", cwd=project, env={"PYTHONPATH": str(ROOT)})
    assert result.returncode == 2
    assert "specs/broken.md:7: duplicate step 3: lines 5 and 7" in result.stdout.splitlines()


def test_lint_reports_every_config_problem_of_every_layer(project: Path, cli: Run) -> None:
    """Issue 11: ``plan lint`` names every ``.flow/`` problem with its file:line, not just the
    first; other commands still stop at the first (docs/configuration.md)."""
    (project / ".flow" / "implement").mkdir(parents=True)
    (project / ".flow" / "base.yaml").write_text(
        COMPLETION
        + "flow_dir: [a, list]\n"  # line 3
        + "defaults:\n  stuck_timeout_secs: soon\n  max_wait_secs: -1\n"  # lines 5, 6
        + "agents:\n  builder:\n    adapter: command\n    modle: x\n"  # line 10
        + "    allow_env: [PATH, 7]\n"  # line 11
    )
    (project / ".flow" / "implement" / "base.yaml").write_text("chain:\n  reviewers: [a\n")
    args = ("plan", "lint", "specs/feature.md", "specs/broken.md", "--flow-type", "implement")
    result = cli(*args, cwd=project)
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert lines[:5] == [
        ".flow/base.yaml:3: flow_dir: expected a string, got a list",
        ".flow/base.yaml:5: defaults.stuck_timeout_secs: expected a whole number of seconds, "
        "got a string",
        ".flow/base.yaml:6: defaults.max_wait_secs: must be at least 1, got -1",
        ".flow/base.yaml:10: agents.builder.modle: unknown key (did you mean 'model'?)",
        ".flow/base.yaml:11: agents.builder.allow_env[1]: expected a string, got an integer",
    ]
    # a syntax error in the parser's words (libyaml's or PyYAML's own): file and line are ours
    assert lines[5].startswith(".flow/implement/base.yaml:3: invalid YAML: ")
    # the plans are still checked (with the default spec_plan settings)
    assert any(line.startswith("specs/broken.md:7: duplicate step 3") for line in lines[6:])
    assert cli(*args, cwd=project).stdout == result.stdout  # the second run: the same
    show = cli("plan", "show", "specs/feature.md", "--flow-type", "implement", cwd=project)
    assert show.returncode == 2
    assert show.stderr.count("\n") == 1 and ".flow/base.yaml:3: flow_dir:" in show.stderr


def test_lint_reports_every_rule_across_keys(project: Path, cli: Run) -> None:
    """When every key fits, the rules across keys are each reported too (an agent without a
    command, a chain naming an unknown agent, a bad step pattern, a missing @file)."""
    (project / ".flow").mkdir()
    (project / ".flow" / "base.yaml").write_text(
        "completion_workflow:\n  template: '@missing.md'\n"  # line 2
        "spec_plan:\n  step_header_pattern: '^### (.+)$'\n"  # line 4
        "agents:\n  builder:\n    adapter: command\n"  # line 6
        "  other:\n    adapter: claude\n    command: [x]\n"  # line 10
        "chain:\n  fixer: nobody\n"  # line 12
    )
    result = cli("plan", "lint", "specs/feature.md", cwd=project)
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == [
        ".flow/base.yaml:4",
        ".flow/base.yaml:6",
        ".flow/base.yaml:10",
        ".flow/base.yaml:2",
        ".flow/base.yaml:12",
    ], lines
    assert "has 1 capture group" in lines[0]
    assert "agents.builder.command: required when adapter is 'command'" in lines[1]
    assert "agents.other.command: only the 'command' adapter runs a command" in lines[2]
    assert "completion_workflow.template: file not found: missing.md" in lines[3]
    assert "chain.fixer: no agent 'nobody' under agents:" in lines[4]
    assert result.stderr == "5 problems (1 plan checked)\n"


_HUGE = "9" * 5000  # over Python's 4,300-digit limit on int("…")


@pytest.mark.parametrize(
    ("plan", "line", "said"),
    [
        (f"# P\n\n### Status: | Step {_HUGE}: huge\n\nDo it.\n", 3, "step number '9999"),
        (
            f"# P\n\n### Status: | Step 1: one\n\nDepends on: 2, {_HUGE}\n\n"
            "### Status: | Step 2: two\n\nDepends on: none\n",
            5,
            "'Depends on:' '9999",
        ),
        (
            "# P\n\n### Status: | Step 1234567890123456: long\n\nDo it.\n",
            3,
            "step number '1234567890123456' has 16 digits; a step number has at most 15",
        ),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ("plan", "show", "specs/huge.md"),
        ("plan", "show", "--json", "specs/huge.md"),
        ("plan", "lint", "specs/huge.md"),
        ("plan", "matrix", "specs/huge.md"),
        ("plan", "matrix", "--pending-only", "specs/huge.md"),
        ("prompt", "--agent", "builder", "--plan", "specs/huge.md", "--step", "1"),
        ("run", "specs/huge.md", "--step", "1"),
        ("run", "specs/huge.md", "--all"),
    ],
)
def test_a_step_number_too_long_is_a_plan_error_with_file_and_line_in_every_command(
    tmp_path: Path, cli: Run, plan: str, line: int, said: str, command: tuple[str, ...]
) -> None:
    from tests.conftest import init_repo

    repo = init_repo(tmp_path / "repo")
    (repo / "specs").mkdir()
    (repo / "specs" / "huge.md").write_text(plan)
    result = cli(*command, cwd=repo)
    assert result.returncode == 2, result.stderr + result.stdout
    out = result.stdout + result.stderr
    assert f"huge.md:{line}: {said}" in out
    assert "Traceback" not in out and "internal error" not in out
    assert _HUGE not in out  # the number is shortened in the message


def test_a_step_number_of_15_digits_is_a_step(project: Path, cli: Run) -> None:
    """The most digits a step number may have; exact in plan matrix's JSON for any reader."""
    (project / "specs" / "wide.md").write_text(
        "# P\n\n### Status: | Step 999999999999999: wide\n\nDepends on: none\n"
    )
    result = cli("plan", "matrix", "specs/wide.md", cwd=project)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["include"][0]["step"] == 999999999999999


@pytest.mark.parametrize(
    "command",
    [
        ("plan", "lint", "specs/old.md"),
        ("plan", "show", "specs/old.md"),
        ("prompt", "--agent", "builder", "--plan", "specs/old.md", "--step", "1"),
        ("run", "specs/old.md", "--step", "2"),
        ("run", "specs/old.md", "--all"),
    ],
)
def test_the_pattern_of_0_1_and_a_one_space_step_give_the_hint_in_every_command(
    tmp_path: Path, cli: Run, command: tuple[str, ...]
) -> None:
    """A step written with one space under the 0.1 default pattern is no step; with step 1
    done, ``run --all`` left steps 2 and 3 out and exited 0. Every command that reads the plan
    names the line and the pattern to paste (docs/spec-plans.md, Format)."""
    from gitflow_agents.plan import DEFAULT_STEP_PATTERN, LEGACY_STEP_PATTERN, yaml_pattern
    from tests.conftest import init_repo

    repo = init_repo(tmp_path / "repo")
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        f"{COMPLETION}spec_plan:\n  step_header_pattern: {yaml_pattern(LEGACY_STEP_PATTERN)}\n"
    )
    (repo / "specs").mkdir()
    (repo / "specs" / "old.md").write_text(
        "# P\n\n## Implementation Steps\n\n### Status: ✅ | Step 1: one\n\n"
        "### Status: | Step 2: two\n\n### Status: | Step 3: three\n"
    )
    result = cli(*command, cwd=repo)
    assert result.returncode == 2, result.stderr + result.stdout
    out = result.stdout + result.stderr
    assert "specs/old.md:7: heading looks like a step but does not match" in out
    assert f"step_header_pattern: {yaml_pattern(DEFAULT_STEP_PATTERN)})" in out
    assert "Traceback" not in out


def test_lint_reports_a_copy_ignored_entry_git_tracks_as_run_does(tmp_path: Path, cli: Run) -> None:
    """``run`` refuses a ``chain.copy_ignored`` entry git tracks (``.flow/base.yaml:N``); lint
    said "no problems" (docs/configuration.md: lint reports every config problem)."""
    from tests.conftest import git, init_repo

    repo = init_repo(tmp_path / "repo")
    (repo / "specs").mkdir()
    shutil.copy(PLANS / "feature.md", repo / "specs" / "feature.md")
    (repo / ".flow").mkdir()
    (repo / ".flow" / "base.yaml").write_text(
        f"{COMPLETION}chain:\n  copy_ignored:\n    - .env\n    - README.md\n    - specs\n"
    )
    git(repo, "add", "specs")
    git(repo, "commit", "-qm", "plan")
    result = cli("plan", "lint", "specs/feature.md", cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        ".flow/base.yaml:6: chain.copy_ignored: 'README.md': git tracks README.md, and "
        "copy_ignored copies only files git ignores (every work tree has the tracked ones "
        "already); take it off the list",
        ".flow/base.yaml:7: chain.copy_ignored: 'specs': git tracks specs/feature.md, and "
        "copy_ignored copies only files git ignores (every work tree has the tracked ones "
        "already); take it off the list",
    ]
    assert result.stderr == "2 problems (1 plan checked)\n"
