"""``gitflow-agents init`` (in-process): scaffolds .flow/, never overwrites without --force,
the result loads, and the JSON Schema it writes is the generated one."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gitflow_agents.config import (
    builtin_flow_dir,
    flow_config_schema,
    load_flow_config,
    scaffold_files,
)
from tests.conftest import Cli, git, run_cli

EXPECTED = [file.dest for file in scaffold_files()]


def test_init_writes_every_file_and_the_config_loads(repo: Path, cli_run: Cli) -> None:
    result = cli_run.main("init", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"write {dest}" for dest in EXPECTED]
    for file in scaffold_files():
        assert (repo / file.dest).read_bytes() == file.content()
    config = load_flow_config(repo)
    assert not config.built_in
    assert config.sources == (repo / ".flow/base.yaml",)
    assert sorted(config.agents) == ["builder", "fixer", "planner", "researcher", "reviewer"]
    assert config.completion_workflow.template_source == (
        ".flow/templates/completion-workflow-template.md"
    )
    assert config.agent("builder").system_prompt_source == ".flow/agents/builder.md"
    assert config.completion_workflow_for("reviewer").template_source == (
        ".flow/templates/review-completion-workflow-template.md"
    )
    # The same agents as the built-in defaults, so nothing changes for a user who runs init.
    assert load_flow_config(repo / "specs").agents.keys() == config.agents.keys()


def test_init_from_a_subdirectory_writes_at_the_project_root(repo: Path, cli_run: Cli) -> None:
    (repo / "src/pkg").mkdir(parents=True)
    result = cli_run.main("init", cwd=repo / "src/pkg")
    assert result.returncode == 0, result.stderr
    assert (repo / ".flow/base.yaml").is_file()
    assert not (repo / "src/pkg/.flow").exists()


def test_init_twice_skips_existing_files(repo: Path, cli_run: Cli) -> None:
    assert cli_run.main("init", cwd=repo).returncode == 0
    (repo / ".flow/base.yaml").write_text("# mine\n" + (repo / ".flow/base.yaml").read_text())
    (repo / ".flow/agents/fixer.md").unlink()
    result = cli_run.main("init", cwd=repo)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "write .flow/agents/fixer.md" in lines
    assert "skip .flow/base.yaml (exists)" in lines
    assert len(lines) == len(EXPECTED)
    assert sum(line.startswith("skip ") for line in lines) == len(EXPECTED) - 1
    assert (repo / ".flow/base.yaml").read_text().startswith("# mine\n")


def test_init_force_overwrites(repo: Path, cli_run: Cli) -> None:
    assert cli_run.main("init", cwd=repo).returncode == 0
    (repo / "specs/example-plan.md").write_text("changed\n")
    result = cli_run.main("init", "--force", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"write {dest}" for dest in EXPECTED]
    shipped = builtin_flow_dir() / "specs/example-plan.md"
    assert (repo / "specs/example-plan.md").read_bytes() == shipped.read_bytes()
    leftovers = [p for p in repo.rglob("*.tmp") if ".git" not in p.parts]
    assert leftovers == []


def test_init_keeps_an_existing_user_file_outside_flow(repo: Path, cli_run: Cli) -> None:
    (repo / "specs").mkdir()
    (repo / "specs/example-plan.md").write_text("my plan\n")
    result = cli_run.main("init", cwd=repo)
    assert "skip specs/example-plan.md (exists)" in result.stdout.splitlines()
    assert (repo / "specs/example-plan.md").read_text() == "my plan\n"


@pytest.mark.parametrize(
    ("obstacle", "force", "said"),
    [
        ("file:specs", False, "specs is a file; init needs a folder there"),
        ("file:.flow/agents", True, ".flow/agents is a file; init needs a folder there"),
        ("link:.flow", False, ".flow is a broken symbolic link; init needs a folder there"),
        ("folder:.flow/base.yaml", True, ".flow/base.yaml is a folder; init writes a file there"),
        ("folder:.flow/base.yaml", False, ".flow/base.yaml is a folder; init writes a file there"),
    ],
)
def test_init_names_what_is_in_the_way_and_writes_nothing(
    repo: Path, cli_run: Cli, obstacle: str, force: bool, said: str
) -> None:
    """It wrote part of the scaffold, then stopped with ``specs: File exists`` or a temp
    file's name (``.flow/.base.yaml.<hex>.tmp: Is a directory``)."""
    kind, name = obstacle.split(":")
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        path.write_text("mine\n")
    elif kind == "link":
        path.symlink_to(repo / "nowhere")
    else:
        path.mkdir()
    before = sorted(p.relative_to(repo) for p in repo.rglob("*") if ".git" not in p.parts)
    result = cli_run.main("init", *(["--force"] if force else []), cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == f"gitflow-agents: error: {said} (init wrote nothing)\n"
    assert result.stdout == ""
    after = sorted(p.relative_to(repo) for p in repo.rglob("*") if ".git" not in p.parts)
    assert after == before


@pytest.mark.parametrize(
    ("link", "points_to", "force"),
    [
        (".flow/base.yaml", "outside.yaml", True),  # --force would overwrite what lies outside
        (".flow/base.yaml", "missing.yaml", False),  # a new file, written through the link
        (".flow", "outside-flow", False),  # a folder on the way: named once, not per file
    ],
)
def test_init_names_a_symlink_leading_out_and_writes_nothing(
    repo: Path, cli_run: Cli, link: str, points_to: str, force: bool
) -> None:
    """It wrote (with --force: overwrote) the files before the link, then stopped on it: the
    user's agent definition was replaced and the scaffold left half-written."""
    (repo / ".flow/agents").mkdir(parents=True)
    (repo / ".flow/agents/builder.md").write_text("my builder\n")
    outside = repo.parent / points_to
    if points_to == "outside.yaml":
        outside.write_text("x: 1\n")
    elif points_to == "outside-flow":
        outside.mkdir()
        shutil.move(repo / ".flow/agents", outside / "agents")
        (repo / ".flow").rmdir()
    (repo / link).symlink_to(outside)
    before = _tree(repo, outside)
    result = cli_run.main("init", *(["--force"] if force else []), cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    real = os.path.realpath(outside)
    said = f"{link}: a symlink leads it out of the repository (to {real}); init never writes"
    assert result.stderr == (
        f"gitflow-agents: error: {said} through such a link (init wrote nothing)\n"
    )
    assert result.stdout == ""
    assert _tree(repo, outside) == before
    assert (repo / ".flow/agents/builder.md").read_text() == "my builder\n"
    if points_to == "outside.yaml":
        assert outside.read_text() == "x: 1\n"


def _tree(*folders: Path) -> list[Path]:
    """Every path under ``folders`` but a repository's ``.git``."""
    return sorted(p for folder in folders for p in folder.rglob("*") if ".git" not in p.parts)


@pytest.mark.parametrize("argv", [("init",), ("init", "--example"), ("status",)])
@pytest.mark.parametrize("inside", ["", "refs"])
def test_a_bare_repository_is_refused_and_nothing_written(
    repo: Path, cli_run: Cli, argv: tuple[str, ...], inside: str
) -> None:
    """``init`` wrote .flow/ and specs/ into the git directory and exited 0 (its "next:"
    command then refused the bare repository); ``status`` read a flows/ there. Both refuse it as
    ``run``, ``history`` and ``gc`` do: exit 2, naming it, nothing written."""
    bare = repo.parent / "mirror.git"
    git(repo.parent, "clone", "-q", "--bare", str(repo), str(bare))
    before = _tree(bare)
    result = cli_run.main(*argv, cwd=bare / inside)
    assert result.returncode == 2, result.stdout + result.stderr
    place = "is a bare repository" if not inside else f"is in the bare repository {bare}"
    assert result.stderr.startswith(
        f"gitflow-agents: error: {bare / inside if inside else bare} {place}: it has no work tree"
    ), result.stderr
    assert result.stdout == ""
    assert _tree(bare) == before


def test_init_in_a_directory_without_git(tmp_path: Path) -> None:
    """A real process: the command's exit status as a shell sees it."""
    result = run_cli("init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".flow/base.yaml").is_file()


def test_init_then_prompt_works(repo: Path, cli_run: Cli) -> None:
    assert cli_run.main("init", cwd=repo).returncode == 0
    result = cli_run.main(
        "prompt", "--agent", "builder", "--plan", "specs/example-plan.md", "--step", "2", cwd=repo
    )
    assert result.returncode == 0, result.stderr
    assert "## Your Identity" in result.stdout
    assert "Step 2: Add the greet command" in result.stdout


def test_scaffolded_files_validate_against_the_schema(repo: Path, cli_run: Cli) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    assert cli_run.main("init", cwd=repo).returncode == 0
    schema = json.loads((repo / ".flow/flow-config.schema.json").read_text(encoding="utf-8"))
    assert schema == flow_config_schema()
    validator = jsonschema.Draft202012Validator(schema)
    for path in (repo / ".flow").rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# yaml-language-server: $schema=")
        assert not list(validator.iter_errors(yaml.safe_load(text))), path


def test_init_example_plan_starts_with_every_step_pending(repo: Path, cli_run: Cli) -> None:
    """A fresh plan looks not started: no ❌ in `plan show` or the first prompt, and the chain's
    ✅ goes into the one-space empty status as `### Status: ✅ | Step N`."""
    from gitflow_agents.plan import parse_plan, set_step_status

    assert cli_run.main("init", cwd=repo).returncode == 0
    shown = cli_run.main("plan", "show", "specs/example-plan.md", "--json", cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert [step["status"] for step in json.loads(shown.stdout)["steps"]] == ["", "", ""]
    prompt = cli_run.main(
        "prompt", "--agent", "builder", "--plan", "specs/example-plan.md", "--step", "1", cwd=repo
    )
    assert prompt.returncode == 0, prompt.stderr
    assert "\u274c" not in prompt.stdout
    assert cli_run.main("plan", "lint", "specs/example-plan.md", cwd=repo).returncode == 0
    plan_path = repo / "specs/example-plan.md"
    set_step_status(plan_path, 2, "\u2705")
    assert "### Status: \u2705 | Step 2: Add the greet command\n" in plan_path.read_text("utf-8")
    assert [s.status for s in parse_plan(plan_path).steps] == ["", "\u2705", ""]


def test_scaffolded_planner_writes_headers_the_default_pattern_reads(
    repo: Path, cli_run: Cli
) -> None:
    """The header form the planner is told to write is a step with an empty status."""
    import re

    from gitflow_agents.plan import parse_plan_text

    assert cli_run.main("init", cwd=repo).returncode == 0
    planner = (repo / ".flow/agents/planner.md").read_text(encoding="utf-8")
    forms = re.findall(r"`(### Status:[^`]*)`", planner)
    assert forms, "the planner is shown the step header form"
    for form in forms:
        plan = parse_plan_text(f"# P\n\n## Implementation Steps\n\n{form}\n", repo / "p.md")
        assert [(s.number, s.status) for s in plan.steps] == [(1, "")]
