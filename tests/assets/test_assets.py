"""`.agents-flow/` prompt assets, one test per rule, on real files in tmp_path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gitflow_agents.assets import (
    AgentIncludes,
    ManifestError,
    PromptAssetManifest,
    PromptSegment,
    errors_for_agent,
    load_manifest,
    package_agent_prompt,
    require_runnable,
)
from gitflow_agents.base.errors import ConfigError


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / ".agents-flow" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def agent_file(
    agent_id: str = "planner",
    *,
    kind: str = "plan",
    extra: str = "",
    body: str = "You plan the work.",
    name: str | None = None,
) -> str:
    return (
        f"---\nname: {name or agent_id.title()}\ndescription: The {agent_id}\n"
        f"agentId: {agent_id}\noutput:\n  kind: {kind}\n{extra}---\n\n{body}\n"
    )


def instruction_file(name: str, body: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: About {name}\n{extra}---\n{body}\n"


def skill_file(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: Skill {name}\n---\n{body}\n"


def codes(manifest: PromptAssetManifest) -> list[str]:
    return [error.code for error in manifest.errors]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A complete, valid .agents-flow/ tree."""
    write(tmp_path, "global-system-prompt.md", "You work in the acme repository.\n")
    write(
        tmp_path,
        "instructions/plan.instructions.md",
        instruction_file("plan-format", "Plans are lists."),
    )
    write(
        tmp_path, "instructions/style.instructions.md", instruction_file("code-style", "Use ruff.")
    )
    write(tmp_path, "skills/codebase-search/SKILL.md", skill_file("Search", "Search with rg."))
    write(tmp_path, "skills/testing/SKILL.md", skill_file("Testing", "Run pytest."))
    write(
        tmp_path,
        "agents/planner.agent.md",
        agent_file(
            "planner",
            extra=(
                "includes:\n  instructions: [plan-format, code-style]\n"
                "  skills: [codebase-search, testing]\n"
            ),
        ),
    )
    return tmp_path


# --- scanning and the manifest ------------------------------------------------------------------


def test_absent_agents_flow_gives_empty_manifest(tmp_path: Path) -> None:
    assert load_manifest(tmp_path) == PromptAssetManifest()


def test_scan_builds_manifest_keyed_by_id_name_and_folder(project: Path) -> None:
    manifest = load_manifest(project)
    assert manifest.errors == ()
    assert manifest.global_system_prompt == "You work in the acme repository."
    assert list(manifest.agents) == ["planner"]
    assert sorted(manifest.instructions) == ["code-style", "plan-format"]  # by name, not file
    assert sorted(manifest.skills) == ["codebase-search", "testing"]  # by folder name
    planner = manifest.agents["planner"]
    assert planner.source_path == "agents/planner.agent.md"
    assert planner.body == "You plan the work."
    assert planner.includes == AgentIncludes(
        instructions=("plan-format", "code-style"), skills=("codebase-search", "testing")
    )
    plan = manifest.instructions["plan-format"]
    assert (plan.filename, plan.source_path, plan.content) == (
        "plan.instructions.md",
        "instructions/plan.instructions.md",
        "Plans are lists.",
    )
    search = manifest.skills["codebase-search"]
    assert (search.name, search.source_path) == ("Search", "skills/codebase-search/SKILL.md")


def test_files_outside_the_convention_are_ignored(project: Path) -> None:
    write(project, "agents/README.md", "# notes\n")
    write(project, "instructions/notes.md", "# notes\n")
    write(project, "other/x.agent.md", agent_file("other"))
    (project / ".agents-flow/skills/.cache").mkdir()
    manifest = load_manifest(project)
    assert manifest.errors == ()
    assert list(manifest.agents) == ["planner"]


def test_global_system_prompt_is_taken_whole_without_frontmatter(tmp_path: Path) -> None:
    write(tmp_path, "global-system-prompt.md", "---\nnot: parsed\n---\nBaseline.\n")
    assert load_manifest(tmp_path).global_system_prompt == "---\nnot: parsed\n---\nBaseline."


def test_agent_defaults(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", agent_file("a", kind="text"))
    agent = load_manifest(tmp_path).agents["a"]
    assert agent.adapter_kind == "pi-mono"
    assert agent.turn_mode == "normal"
    assert agent.tools == ()
    assert agent.user_invocable is False
    assert agent.includes == AgentIncludes(instructions=(), skills=(), global_system_prompt=True)
    assert (agent.model, agent.temperature, agent.argument_hint) == (None, None, None)


def test_agent_optional_fields_are_read(tmp_path: Path) -> None:
    extra = (
        "adapterKind: claude\nmodel: deepseek-v4-flash\ntemperature: 0.3\nturnMode: evaluate\n"
        "tools: [read, grep]\nuserInvocable: true\nargumentHint: <path>\n"
        "includes:\n  globalSystemPrompt: false\n"
    )
    write(tmp_path, "agents/a.agent.md", agent_file("a", kind="score", extra=extra))
    manifest = load_manifest(tmp_path)
    assert manifest.errors == ()
    agent = manifest.agents["a"]
    assert (agent.adapter_kind, agent.model, agent.temperature) == (
        "claude",
        "deepseek-v4-flash",
        0.3,
    )
    assert (agent.turn_mode, agent.tools, agent.user_invocable) == (
        "evaluate",
        ("read", "grep"),
        True,
    )
    assert agent.argument_hint == "<path>"
    assert agent.includes.global_system_prompt is False


def test_output_kind_accepts_the_literal_dotted_key(tmp_path: Path) -> None:
    text = "---\nname: A\ndescription: d\nagentId: a\noutput.kind: score\n---\nbody\n"
    write(tmp_path, "agents/a.agent.md", text)
    manifest = load_manifest(tmp_path)
    assert manifest.errors == ()
    assert manifest.agents["a"].output_kind == "score"


@pytest.mark.parametrize(
    ("extra", "key", "line"),
    [
        ("temperature: 2.5\n", "temperature", 7),
        ("temperature: -1\n", "temperature", 7),
        ("temperature: hot\n", "temperature", 7),
        ("turnMode: fast\n", "turnMode", 7),
        ("tools: read\n", "tools", 7),
        ("userInvocable: yes please\n", "userInvocable", 7),
        ("adapterKind: 3\n", "adapterKind", 7),
        ("includes: [a]\n", "includes", 7),
        ("includes:\n  instruction: [a]\n", "includes.instruction", 8),
        ("includes:\n  globalSystemPrompt: maybe\n", "includes.globalSystemPrompt", 8),
    ],
)
def test_invalid_field_is_invalid_frontmatter_at_its_line(
    tmp_path: Path, extra: str, key: str, line: int
) -> None:
    write(tmp_path, "agents/a.agent.md", agent_file("a", extra=extra))
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["invalid_frontmatter"]
    error = manifest.errors[0]
    assert (error.source_path, error.agent_id, error.line) == ("agents/a.agent.md", "a", line)
    assert error.message.startswith(f".agents-flow/agents/a.agent.md:{line}: {key}: ")


def test_temperature_bounds_are_inclusive(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", agent_file("a", extra="temperature: 2\n"))
    write(tmp_path, "agents/b.agent.md", agent_file("b", extra="temperature: 0\n"))
    manifest = load_manifest(tmp_path)
    assert manifest.errors == ()
    assert (manifest.agents["a"].temperature, manifest.agents["b"].temperature) == (2.0, 0.0)


@pytest.mark.parametrize("missing", ["name", "description", "agentId"])
def test_required_agent_fields(tmp_path: Path, missing: str) -> None:
    lines = [line for line in agent_file("a").splitlines() if not line.startswith(f"{missing}:")]
    write(tmp_path, "agents/a.agent.md", "\n".join(lines) + "\n")
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["invalid_frontmatter"]
    assert f"required key {missing!r} is missing" in manifest.errors[0].message
    assert manifest.errors[0].message.startswith(".agents-flow/agents/a.agent.md:1: ")


def test_required_output_kind(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", "---\nname: A\ndescription: d\nagentId: a\n---\nbody\n")
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["invalid_frontmatter"]
    assert "'output.kind' is missing" in manifest.errors[0].message
    assert manifest.errors[0].agent_id == "a"


def test_output_kind_outside_mvp_kinds_is_rejected(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", agent_file("a", kind="json"))
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["invalid_frontmatter"]
    assert manifest.errors[0].message == (
        ".agents-flow/agents/a.agent.md:6: output.kind: must be one of text, plan, score; got 'json'"
    )


def test_output_kind_given_twice_differently_is_rejected(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", agent_file("a", kind="plan", extra="output.kind: text\n"))
    assert codes(load_manifest(tmp_path)) == ["invalid_frontmatter"]


def test_required_instruction_and_skill_fields(tmp_path: Path) -> None:
    write(tmp_path, "instructions/a.instructions.md", "---\nname: a\n---\nbody\n")
    write(tmp_path, "skills/s/SKILL.md", "---\ndescription: d\n---\nbody\n")
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["invalid_frontmatter", "invalid_frontmatter"]
    messages = sorted(error.message for error in manifest.errors)
    assert messages == [
        ".agents-flow/instructions/a.instructions.md:1: required key 'description' is missing",
        ".agents-flow/skills/s/SKILL.md:1: required key 'name' is missing",
    ]


def test_instruction_apply_to_is_parsed(tmp_path: Path) -> None:
    write(
        tmp_path,
        "instructions/a.instructions.md",
        instruction_file("a", "x", "applyTo: '**/*.py'\n"),
    )
    assert load_manifest(tmp_path).instructions["a"].apply_to == "**/*.py"


def test_malformed_yaml_is_invalid_frontmatter_with_file_line(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", "---\nname: A\nagentId: a\ndescription: a: b\n---\nbody\n")
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["invalid_frontmatter"]
    error = manifest.errors[0]
    assert error.line == 4
    assert error.message.startswith(".agents-flow/agents/a.agent.md:4: invalid YAML in frontmatter")
    # The agentId line is still readable, so the error belongs to agent "a".
    assert error.agent_id == "a"
    with pytest.raises(ConfigError, match=r"agent 'a' has 1 manifest error .*\n  - .*invalid YAML"):
        require_runnable("a", manifest)


def test_unclosed_and_list_frontmatter_are_invalid_frontmatter(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", "---\nname: A\nagentId: a\n")
    write(tmp_path, "instructions/b.instructions.md", "---\n- one\n- two\n---\nbody\n")
    write(tmp_path, "skills/c/SKILL.md", "no frontmatter at all\n")
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["invalid_frontmatter"] * 3
    by_path = {error.source_path: error for error in manifest.errors}
    assert by_path["agents/a.agent.md"].line == 1
    assert "never closed" in by_path["agents/a.agent.md"].message
    assert by_path["instructions/b.instructions.md"].line == 2
    assert "not a list" in by_path["instructions/b.instructions.md"].message
    assert "missing frontmatter" in by_path["skills/c/SKILL.md"].message


def test_crlf_and_bom_asset_files_load(tmp_path: Path) -> None:
    text = agent_file("a", body="line one\nline two").replace("\n", "\r\n")
    write(tmp_path, "agents/a.agent.md", b"\xef\xbb\xbf" + text.encode())
    manifest = load_manifest(tmp_path)
    assert manifest.errors == ()
    assert manifest.agents["a"].body == "line one\nline two"


def test_duplicate_agent_id(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", agent_file("same", body="first"))
    write(tmp_path, "agents/b.agent.md", agent_file("same", body="second"))
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["duplicate_agent_id"]
    error = manifest.errors[0]
    assert (error.source_path, error.agent_id, error.line) == ("agents/b.agent.md", "same", 4)
    assert ".agents-flow/agents/a.agent.md" in error.message
    assert manifest.agents["same"].body == "first"
    with pytest.raises(ConfigError, match="agent 'same' has 1 manifest error"):
        package_agent_prompt("same", manifest)


def test_duplicate_instruction_name(tmp_path: Path) -> None:
    write(tmp_path, "instructions/a.instructions.md", instruction_file("fmt", "first"))
    write(tmp_path, "instructions/b.instructions.md", instruction_file("fmt", "second"))
    write(
        tmp_path, "agents/x.agent.md", agent_file("x", extra="includes:\n  instructions: [fmt]\n")
    )
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["duplicate_instruction_name"]
    error = manifest.errors[0]
    assert (error.source_path, error.line) == ("instructions/b.instructions.md", 2)
    assert ".agents-flow/instructions/a.instructions.md" in error.message
    # The agent including the ambiguous name is blocked by it.
    assert errors_for_agent(manifest, "x") == (error,)


def test_missing_include_instruction_by_name_not_filename(tmp_path: Path) -> None:
    write(tmp_path, "instructions/plan.instructions.md", instruction_file("plan-format", "x"))
    write(
        tmp_path,
        "agents/a.agent.md",
        agent_file("a", extra="includes:\n  instructions:\n    - plan\n"),
    )
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["missing_include"]
    error = manifest.errors[0]
    assert (error.agent_id, error.source_path, error.line) == ("a", "agents/a.agent.md", 9)
    assert "no instruction named 'plan'" in error.message
    assert "is named 'plan-format'" in error.message


def test_missing_include_skill_by_folder_name(tmp_path: Path) -> None:
    write(tmp_path, "skills/search/SKILL.md", skill_file("Codebase search", "x"))
    write(
        tmp_path,
        "agents/a.agent.md",
        agent_file("a", extra="includes:\n  skills: [Codebase search]\n"),
    )
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["missing_include"]
    assert "no skill folder 'Codebase search'" in manifest.errors[0].message
    assert "known: search" in manifest.errors[0].message


def test_file_read_error_for_undecodable_bytes(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", b"---\nname: caf\xe9\n---\n")
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["file_read_error"]
    error = manifest.errors[0]
    assert (error.source_path, error.line) == ("agents/a.agent.md", 2)
    assert "not valid UTF-8" in error.message


@pytest.mark.skipif(
    sys.platform == "win32" or (hasattr(os, "geteuid") and os.geteuid() == 0),
    reason="permissions do not stop root",
)
def test_file_read_error_for_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "instructions/a.instructions.md", instruction_file("a", "x"))
    path.chmod(0)
    try:
        manifest = load_manifest(tmp_path)
    finally:
        path.chmod(0o644)
    assert codes(manifest) == ["file_read_error"]
    assert "cannot read file" in manifest.errors[0].message


def test_file_read_error_for_a_folder_or_dangling_link_named_like_an_asset(tmp_path: Path) -> None:
    (tmp_path / ".agents-flow/agents/dir.agent.md").mkdir(parents=True)
    (tmp_path / ".agents-flow/agents/link.agent.md").symlink_to("nowhere")
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["file_read_error", "file_read_error"]
    assert [e.source_path for e in manifest.errors] == [
        "agents/dir.agent.md",
        "agents/link.agent.md",
    ]
    assert all("cannot read file" in e.message for e in manifest.errors)


def test_a_skill_link_that_leads_nowhere_is_a_file_read_error_naming_it(tmp_path: Path) -> None:
    """It was skipped as "not a folder": ``plan lint`` said nothing and an agent including it
    heard only "no skill folder". Now, as a dangling link named like any asset, it is one
    ``file_read_error`` naming the link (the agent including it refuses with it); a plain file
    and a hidden link there are still ignored."""
    write(tmp_path, "agents/planner.agent.md", agent_file(extra="includes:\n  skills: [search]\n"))
    write(tmp_path, "skills/README.md", "Skills live in folders.\n")
    skills = tmp_path / ".agents-flow/skills"
    (skills / "search").symlink_to("../../shared/search")
    (skills / "loop").symlink_to("loop")
    (skills / ".hidden").symlink_to("nowhere")
    manifest = load_manifest(tmp_path)
    assert [(e.code, e.source_path) for e in manifest.errors] == [
        ("file_read_error", "skills/loop"),
        ("file_read_error", "skills/search"),
        ("missing_include", "agents/planner.agent.md"),
    ]
    assert [str(e) for e in manifest.errors[:2]] == [
        ".agents-flow/skills/loop: cannot read skill folder: is a symlink loop [file_read_error]",
        ".agents-flow/skills/search: cannot read skill folder: is a dangling symlink (to "
        "../../shared/search, which does not exist) [file_read_error]",
    ]
    with pytest.raises(ConfigError) as refused:
        require_runnable("planner", manifest)
    assert ".agents-flow/skills/search: cannot read skill folder" in str(refused.value)
    assert "skills/loop" not in str(refused.value)  # not one of its includes


def test_a_skill_md_link_that_leads_nowhere_is_named_as_one(tmp_path: Path) -> None:
    """A folder's ``SKILL.md`` linking to a file that is gone said "skill folder has no
    SKILL.md" (the file is there: a link to nothing); a looping one likewise."""
    (tmp_path / ".agents-flow/skills/search").mkdir(parents=True)
    (tmp_path / ".agents-flow/skills/search/SKILL.md").symlink_to("../../../docs/gone.md")
    (tmp_path / ".agents-flow/skills/loop").mkdir()
    (tmp_path / ".agents-flow/skills/loop/SKILL.md").symlink_to("SKILL.md")
    manifest = load_manifest(tmp_path)
    assert [str(e) for e in manifest.errors] == [
        ".agents-flow/skills/loop/SKILL.md: cannot read file: is a symlink loop [file_read_error]",
        ".agents-flow/skills/search/SKILL.md: cannot read file: is a dangling symlink (to "
        "../../../docs/gone.md, which does not exist) [file_read_error]",
    ]


def test_a_file_a_symlink_leads_outside_the_project_is_never_read(tmp_path: Path) -> None:
    root = tmp_path / "project"
    secret = tmp_path / "secret"
    secret.write_text("SECRET_TOKEN=hunter2\n", encoding="utf-8")
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text(skill_file("s", "hunter2"), encoding="utf-8")
    write(root, "agents/planner.agent.md", agent_file("planner"))
    (root / ".agents-flow/global-system-prompt.md").symlink_to(secret)
    (root / ".agents-flow/instructions").mkdir()
    (root / ".agents-flow/instructions/i.instructions.md").symlink_to(secret)
    (root / ".agents-flow/skills").mkdir()
    (root / ".agents-flow/skills/s").symlink_to(skill)
    (root / ".agents-flow/agents/other.agent.md").symlink_to(secret)
    manifest = load_manifest(root)
    assert "hunter2" not in repr(manifest)
    assert [(e.code, e.source_path) for e in manifest.errors] == [
        ("file_read_error", "global-system-prompt.md"),
        ("file_read_error", "instructions/i.instructions.md"),
        ("file_read_error", "skills/s/SKILL.md"),
        ("file_read_error", "agents/other.agent.md"),
    ]
    assert str(manifest.errors[0]) == (
        f".agents-flow/global-system-prompt.md: cannot read file: leads outside the project "
        f"root (to {secret.resolve()}); the file must be inside the project root "
        "[file_read_error]"
    )
    # the agent that takes the global prompt does not run without it
    with pytest.raises(ConfigError, match=r"global-system-prompt\.md: cannot read file"):
        require_runnable("planner", manifest)
    # an agent file that is not read is named when its agent is asked for
    with pytest.raises(ConfigError, match=r"other\.agent\.md: cannot read file: leads outside"):
        require_runnable("other", manifest)


def test_an_agents_flow_folder_linked_outside_the_project_is_not_read(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, "agents/planner.agent.md", agent_file("planner"))
    (tmp_path / "project").mkdir()
    (tmp_path / "project/.agents-flow").symlink_to(elsewhere / ".agents-flow")
    manifest = load_manifest(tmp_path / "project")
    assert manifest.agents == {}
    assert [(e.code, e.source_path) for e in manifest.errors] == [("file_read_error", None)]
    assert manifest.errors[0].message.startswith(".agents-flow: leads outside the project root")


def test_a_symlink_inside_the_project_is_read(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/baseline.md").write_text("Shared baseline.\n", encoding="utf-8")
    write(tmp_path, "agents/planner.agent.md", agent_file("planner"))
    (tmp_path / ".agents-flow/global-system-prompt.md").symlink_to("../docs/baseline.md")
    manifest = load_manifest(tmp_path)
    assert manifest.errors == ()
    assert manifest.global_system_prompt == "Shared baseline."


def test_file_read_error_for_skill_folder_without_skill_md(tmp_path: Path) -> None:
    (tmp_path / ".agents-flow/skills/empty").mkdir(parents=True)
    manifest = load_manifest(tmp_path)
    assert codes(manifest) == ["file_read_error"]
    assert manifest.errors[0].source_path == "skills/empty/SKILL.md"


def test_errors_are_collected_not_raised(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", agent_file("a", kind="nope", extra="temperature: 9\n"))
    write(tmp_path, "agents/b.agent.md", b"\xff")
    write(tmp_path, "instructions/i.instructions.md", "---\nname: [\n---\n")
    manifest = load_manifest(tmp_path)
    assert sorted(codes(manifest)) == [
        "file_read_error",
        "invalid_frontmatter",
        "invalid_frontmatter",
        "invalid_frontmatter",
    ]
    assert str(manifest.errors[0]).endswith("[invalid_frontmatter]")


# --- assembly -----------------------------------------------------------------------------------


def test_layers_in_order_with_attribution(project: Path) -> None:
    package = package_agent_prompt("planner", load_manifest(project))
    assert [(s.scope, s.label, s.source_path) for s in package.segments] == [
        ("global-system-prompt", "Global system prompt", "global-system-prompt.md"),
        ("instruction", "plan-format", "instructions/plan.instructions.md"),
        ("instruction", "code-style", "instructions/style.instructions.md"),
        ("skill", "Search", "skills/codebase-search/SKILL.md"),
        ("skill", "Testing", "skills/testing/SKILL.md"),
        ("agent-body", "Planner", "agents/planner.agent.md"),
    ]
    assert package.segments[1] == PromptSegment(
        "instruction", "plan-format", "instructions/plan.instructions.md", "Plans are lists."
    )
    assert package.prompt == (
        "You work in the acme repository.\n\nPlans are lists.\n\nUse ruff.\n\nSearch with rg.\n\n"
        "Run pytest.\n\nYou plan the work."
    )
    assert package.prompt == "\n\n".join(s.content for s in package.segments)


def test_include_order_follows_the_frontmatter(project: Path) -> None:
    write(
        project,
        "agents/planner.agent.md",
        agent_file("planner", extra="includes:\n  instructions: [code-style, plan-format]\n"),
    )
    package = package_agent_prompt("planner", load_manifest(project))
    assert [s.label for s in package.segments if s.scope == "instruction"] == [
        "code-style",
        "plan-format",
    ]


def test_instructions_and_skills_appear_once_per_assembly(project: Path) -> None:
    extra = (
        "includes:\n  instructions: [plan-format, code-style, plan-format]\n"
        "  skills: [testing, testing]\n"
    )
    write(project, "agents/planner.agent.md", agent_file("planner", extra=extra))
    write(project, "agents/other.agent.md", agent_file("other", extra=extra))
    manifest = load_manifest(project)
    for agent_id in ("planner", "other"):  # de-duplicated per assembly, not across agents
        package = package_agent_prompt(agent_id, manifest)
        assert [s.label for s in package.segments if s.scope in ("instruction", "skill")] == [
            "plan-format",
            "code-style",
            "Testing",
        ]
        assert package.prompt.count("Plans are lists.") == 1


def test_global_system_prompt_false_drops_the_layer(project: Path) -> None:
    write(
        project,
        "agents/solo.agent.md",
        agent_file("solo", extra="includes:\n  globalSystemPrompt: false\n"),
    )
    package = package_agent_prompt("solo", load_manifest(project))
    assert [s.scope for s in package.segments] == ["agent-body"]
    assert "acme" not in package.prompt


def test_absent_global_file_and_empty_layers_add_no_segment(tmp_path: Path) -> None:
    write(tmp_path, "agents/a.agent.md", agent_file("a"))
    package = package_agent_prompt("a", load_manifest(tmp_path))
    assert [s.scope for s in package.segments] == ["agent-body"]
    assert package.prompt == "You plan the work."
    write(tmp_path, "global-system-prompt.md", "  \n")
    write(tmp_path, "skills/blank/SKILL.md", skill_file("Blank", ""))
    write(tmp_path, "agents/a.agent.md", agent_file("a", extra="includes:\n  skills: [blank]\n"))
    manifest = load_manifest(tmp_path)
    assert manifest.errors == ()
    package = package_agent_prompt("a", manifest)
    assert [s.scope for s in package.segments] == ["agent-body"]
    assert package.prompt == "You plan the work."


def test_package_agent_prompt_refuses_missing_or_erroneous_agent(project: Path) -> None:
    write(project, "agents/bad.agent.md", agent_file("bad", extra="includes:\n  skills: [nope]\n"))
    manifest = load_manifest(project)
    with pytest.raises(ConfigError, match="no agent with agentId 'nobody'"):
        package_agent_prompt("nobody", manifest)
    with pytest.raises(
        ConfigError, match=r"agent 'bad' has 1 manifest error (?s:.)*no skill folder"
    ):
        package_agent_prompt("bad", manifest)
    assert errors_for_agent(manifest, "planner") == ()


def test_errors_of_an_included_asset_block_the_agent(project: Path) -> None:
    write(project, "instructions/style.instructions.md", "---\nname: code-style\n---\nUse ruff.\n")
    manifest = load_manifest(project)
    assert codes(manifest) == ["invalid_frontmatter"]
    with pytest.raises(ConfigError, match=r"instructions/style\.instructions\.md:1: required key"):
        package_agent_prompt("planner", manifest)
    with pytest.raises(ConfigError, match=r"instructions/style\.instructions\.md:1: required key"):
        require_runnable("planner", manifest)


# --- running: the gate -------------------------------------------------------------------------


def test_agent_with_manifest_errors_refuses_to_run_listing_every_error(tmp_path: Path) -> None:
    extra = "temperature: 7\nincludes:\n  instructions: [ghost]\n  skills: [phantom]\n"
    write(tmp_path, "agents/a.agent.md", agent_file("a", extra=extra))
    manifest = load_manifest(tmp_path)
    assert len(manifest.errors) == 3
    with pytest.raises(ConfigError) as info:
        require_runnable("a", manifest)
    message = str(info.value)
    assert message.startswith(
        ".agents-flow/agents/a.agent.md: agent 'a' has 3 manifest errors and refuses to run:"
    )
    for error in manifest.errors:
        assert f"\n  - {error}" in message


def test_require_runnable_returns_the_agent_and_names_unknown_ones(project: Path) -> None:
    manifest = load_manifest(project)
    assert require_runnable("planner", manifest) is manifest.agents["planner"]
    with pytest.raises(ConfigError, match=r"no agent with agentId 'ghost' .*known: planner"):
        require_runnable("ghost", manifest)


def test_package_agent_prompt_raises_instead_of_none(project: Path) -> None:
    manifest = load_manifest(project)
    assert package_agent_prompt("planner", manifest).segments[-1].scope == "agent-body"
    with pytest.raises(ConfigError):
        package_agent_prompt("ghost", manifest)


def test_manifest_error_str_names_the_code() -> None:
    error = ManifestError(
        "missing_include", ".agents-flow/agents/a.agent.md:3: oops", "agents/a.agent.md"
    )
    assert str(error) == ".agents-flow/agents/a.agent.md:3: oops [missing_include]"
