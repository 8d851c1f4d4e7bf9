"""``prompt/apply_to.py``: ``.agents-flow`` instructions attached by their ``applyTo`` globs:
to a prompt built for changed paths when one matches, to a plan step's prompt when its
``Touches:`` globs may overlap, to nothing else; ``prompt --segments`` names the instruction,
its glob and its file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitflow_agents.assets import load_manifest
from gitflow_agents.config import load_flow_config
from gitflow_agents.prompt import PromptRequest, assemble_prompt
from gitflow_agents.prompt.apply_to import apply_to_globs
from tests.conftest import Cli, run_cli

PLAN = "specs/scoped.md"
FRONTEND = "FRONTEND RULES: hooks only."
DOCS = "DOCS RULES: one sentence a line."


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("apply") / "project"
    root.mkdir()
    (root / ".git").mkdir()
    assert run_cli("init", cwd=root).returncode == 0
    folder = root / ".agents-flow" / "instructions"
    folder.mkdir(parents=True)
    (folder / "frontend.instructions.md").write_text(
        f"---\nname: frontend\ndescription: x\napplyTo: 'frontend/**'\n---\n{FRONTEND}\n"
    )
    (folder / "docs.instructions.md").write_text(
        f"---\nname: docs\ndescription: x\napplyTo: 'guides/**, docs/**'\n---\n{DOCS}\n"
    )
    (folder / "always.instructions.md").write_text("---\nname: plain\ndescription: x\n---\nPLAIN\n")
    (root / PLAN).write_text(
        "# Scoped\n\n### Status: | Step 1: UI\n\nTouches: frontend/src/**\n\nBuild it.\n\n"
        "### Status: | Step 2: Docs\n\nTouches: docs/guide.md\n\nWrite it.\n\n"
        "### Status: | Step 3: Anything\n\nNo footprint.\n"
    )
    return root


def prompt_for(root: Path, changed: tuple[str, ...] | None) -> str:
    request = PromptRequest(
        root=root,
        config=load_flow_config(root),
        agent="reviewer",
        task="Review it.",
        manifest=load_manifest(root),
        changed=changed,
    )
    return assemble_prompt(request).text


def test_a_changed_path_under_the_glob_attaches_the_instruction(project: Path) -> None:
    text = prompt_for(project, ("frontend/App.tsx", "api/x.py"))
    assert FRONTEND in text and DOCS not in text and "PLAIN" not in text
    both = prompt_for(project, ("frontend/App.tsx", "docs/README.md"))
    assert FRONTEND in both and DOCS in both
    assert FRONTEND not in prompt_for(project, ("backend/frontend.py",))
    assert FRONTEND not in prompt_for(project, ())  # nothing changed
    assert FRONTEND not in prompt_for(project, None)  # not known: none attached


def test_a_plan_step_gets_those_its_touches_may_overlap(project: Path, cli_run: Cli) -> None:
    def segments(step: str) -> list[dict[str, str]]:
        args = ("prompt", "--agent", "builder", "--plan", PLAN, "--step", step)
        result = cli_run.main(*args, "--segments", "--json", cwd=project)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["segments"]  # type: ignore[no-any-return]

    ui = [s for s in segments("1") if s["scope"] == "instruction"]
    assert [(s["label"], s["source"]) for s in ui] == [
        ("frontend (applyTo frontend/**)", ".agents-flow/instructions/frontend.instructions.md")
    ]
    assert ui[0]["content"].startswith(FRONTEND)
    docs = [s["label"] for s in segments("2") if s["scope"] == "instruction"]
    assert docs == ["docs (applyTo docs/**)"]
    assert [s for s in segments("3") if s["scope"] == "instruction"] == []
    table = cli_run.main(
        "prompt", "--agent", "builder", "--plan", PLAN, "--step", "1", "--segments", cwd=project
    ).stdout
    assert "frontend (applyTo frontend/**)" in table
    assert ".agents-flow/instructions/frontend.instructions.md" in table


def test_apply_to_lists_globs_separated_by_commas() -> None:
    assert apply_to_globs("**/*.ts, **/*.tsx,") == ("**/*.ts", "**/*.tsx")
    assert apply_to_globs(" / ") == ()
