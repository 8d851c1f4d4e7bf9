"""Prompt assembly: golden files, every section and rule, errors."""

from __future__ import annotations

import difflib
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from gitflow_agents.assets import load_manifest
from gitflow_agents.base.errors import ConfigError, PlanError, TemplateError, UsageError
from gitflow_agents.base.resources import templates_dir
from gitflow_agents.config import TEMPLATE_VARIABLES, load_flow_config
from gitflow_agents.plan import parse_plan
from gitflow_agents.prompt import (
    SYSTEM_PROMPT_TEMPLATE,
    AssembledPrompt,
    PromptRequest,
    agent_dir,
    assemble_prompt,
    default_agent_id,
    fence,
    resolve_placeholders,
    write_system_prompt,
)
from tests.golden.cases import CASES, FIXED_TIME, PROJECT, Case, golden_files, render

SEED_HEADINGS = (
    "# Multi-Agent Flow Protocol",
    "## Your Identity",
    "## Shared Context Files",
    "### Writable Shared Files",
    "### Readable Shared Files",
    "## Previous Agent Reports",
    "## Output Requirements",
    "## Agent Definition",
    "## Your Assignment",
)

BASE_YAML = """\
completion_workflow:
  template: "@.flow/templates/completion.md"
agents:
  builder:
    type: builder
    description: Builds things
    system_prompt: "@.flow/agents/builder.md"
  reviewer:
    type: reviewer
    system_prompt: "Review it."
"""

PLAN = """\
# Plan: Demo

Overview with {braces} and {step} that must survive.

## Implementation Steps

### Status: ❌ | Step 1: First

Do the first thing.

### Status: ❌ | Step 2: Second

Body with a long fence:

``````text
`````
inner five
`````
``````
"""


# --------------------------------------------------------------------------- helpers


def make_project(
    tmp_path: Path,
    base_yaml: str = BASE_YAML,
    files: dict[str, str] | None = None,
) -> Path:
    """A project with `.flow/base.yaml`, a completion template, a builder agent and a plan."""
    root = tmp_path / "project"
    defaults = {
        ".flow/base.yaml": base_yaml,
        ".flow/templates/completion.md": "Write `{report_file}`; rename to `{success_file}` "
        "or `{failed_file}`.\n",
        ".flow/agents/builder.md": "You build.\n",
        "specs/demo.md": PLAN,
    }
    for rel, text in {**defaults, **(files or {})}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def assemble(root: Path, agent: str = "builder", **kwargs: object) -> AssembledPrompt:
    config = load_flow_config(root)
    if kwargs.pop("with_plan", False):
        kwargs["plan"] = parse_plan(root / "specs" / "demo.md", config.spec_plan)
    kwargs.setdefault("timestamp", FIXED_TIME)
    kwargs.setdefault("manifest", load_manifest(root))
    if "plan" not in kwargs and "task" not in kwargs:
        kwargs["task"] = "Do it."
    return assemble_prompt(PromptRequest(root=root, config=config, agent=agent, **kwargs))  # type: ignore[arg-type]


def section(text: str, heading: str) -> str:
    """The text of one ``## `` section (without its heading), up to the next ``## `` heading."""
    match = re.search(rf"^{re.escape(heading)}\n\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section {heading!r}"
    return match.group(1)


def assignment_of(text: str) -> str:
    """The last section, whole (the plan context inside it has ``## `` headings of its own)."""
    return text.split("\n## Your Assignment\n\n", 1)[1]


# --------------------------------------------------------------------------- golden files


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_golden(case: Case) -> None:
    for path, expected in golden_files(case).items():
        actual = path.read_text(encoding="utf-8") if path.exists() else ""
        if actual != expected:
            diff = "".join(
                difflib.unified_diff(
                    actual.splitlines(keepends=True),
                    expected.splitlines(keepends=True),
                    f"{path.name} (golden)",
                    f"{path.name} (rendered)",
                )
            )
            pytest.fail(
                f"{path.name} differs from the rendered prompt; if the change is intended run "
                f"`python -m tests.golden.regen`\n{diff}"
            )


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_segments_cover_the_whole_prompt_in_order(case: Case) -> None:
    prompt = render(case)
    assert "".join(segment.content for segment in prompt.segments) == prompt.text
    assert all(segment.content for segment in prompt.segments)


def test_section_order_and_headings_are_seed_000() -> None:
    text = render(CASES[0]).text  # plan_step: every section but the previous reports
    after = render(CASES[1]).text  # after_single has Previous Agent Reports
    for prompt, headings in (
        (text, [h for h in SEED_HEADINGS if "Previous" not in h]),
        (after, [h for h in SEED_HEADINGS if "Writable" not in h]),
    ):
        positions = [
            prompt.index(f"\n{h}\n") if not h.startswith("# ") else prompt.index(h)
            for h in headings
        ]
        assert positions == sorted(positions)
    assert (
        "\nYou are participating in a multi-agent workflow orchestrated by gitflow-agents.\n"
        in text
    )


# --------------------------------------------------------------------------- text helpers


def test_resolve_placeholders_known_only_single_pass() -> None:
    text = "{step} {unknown} [agent-filled] {{step}} { step } {step_title}"
    out = resolve_placeholders(text, {"step": "2", "step_title": "has {step} inside"})
    assert out == "2 {unknown} [agent-filled] {2} { step } has {step} inside"


def test_resolve_placeholders_never_formats() -> None:
    assert resolve_placeholders('{"a": 1} {0} {}', {"a": "x"}) == '{"a": 1} {0} {}'


@pytest.mark.parametrize(
    ("content", "marker"),
    [
        ("plain", "```"),
        ("a `tick` and ``two``", "```"),
        ("```python\nx\n```", "````"),
        ("````md\n```\n```\n````", "`````"),
        ("inline ``````` run", "````````"),
    ],
)
def test_fence_is_longer_than_any_backtick_run(content: str, marker: str) -> None:
    fenced = fence(content, "md")
    assert fenced.startswith(marker + "md\n")
    assert fenced.endswith("\n" + marker)
    assert not fenced.startswith(marker + "`")
    tokens = [t for t in MarkdownIt().parse(fenced) if t.type == "fence"]
    assert len(tokens) == 1
    assert tokens[0].content == content + "\n"


def test_default_agent_id() -> None:
    assert default_agent_id("builder", 2) == "step-02-builder"
    assert default_agent_id("builder", 12) == "step-12-builder"
    assert default_agent_id("builder", None) == "builder"


def test_agent_dir() -> None:
    assert agent_dir(Path("/r"), "flows", "f", "a") == Path("/r/flows/f/agents/a")


# --------------------------------------------------------------------------- sections


def test_frontmatter_is_hoisted_verbatim_and_removed_from_the_definition(tmp_path: Path) -> None:
    agent = "---\nname: builder\ntools: Read, Bash   # keep\nmodel: opus\n---\n\nYou build.\n"
    root = make_project(tmp_path, files={".flow/agents/builder.md": agent})
    text = assemble(root).text
    assert text.startswith(
        "---\nname: builder\ntools: Read, Bash   # keep\nmodel: opus\n---\n\n# Multi"
    )
    assert section(text, "## Agent Definition") == "You build.\n\n"
    assert text.count("tools: Read") == 1


def test_no_frontmatter_starts_with_the_protocol_heading(tmp_path: Path) -> None:
    text = assemble(make_project(tmp_path)).text
    assert text.startswith("# Multi-Agent Flow Protocol\n\n")


def test_identity_with_role_and_step(tmp_path: Path) -> None:
    text = assemble(make_project(tmp_path), with_plan=True, step=2, flow_name="f1").text
    assert section(text, "## Your Identity") == (
        "- Flow: f1\n- Agent: step-02-builder\n- Type: builder\n- Role: Builds things\n"
        "- Step: 2\n\n"
    )


def test_identity_without_role_or_step(tmp_path: Path) -> None:
    text = assemble(make_project(tmp_path), agent="reviewer", agent_id="rev-1").text
    assert section(text, "## Your Identity") == (
        "- Flow: reviewer\n- Agent: rev-1\n- Type: reviewer\n- Step: N/A\n\n"
    )


SHARED = """\
shared_files:
  log:
    path: "{flow_dir}/{flow_name}/log.md"
    info: "Log for {agent_name}"
    writable: true
    write_template: "## Step {step}: {step_title}\\n[agent-filled]\\n```\\ncode\\n```\\n"
  standards:
    path: "docs/{agent_type}-standards.md"
    info: Standards
  optional:
    path: docs/optional.md
    info: Optional
  reviewers_only:
    path: docs/builder-standards.md
    info: Only for reviewers
    agents: [reviewer]
"""


def test_shared_files_writable_resolved_and_readable_filtered(tmp_path: Path) -> None:
    root = make_project(
        tmp_path, BASE_YAML + SHARED, files={"docs/builder-standards.md": "rules\n"}
    )
    text = assemble(root, with_plan=True, step=1).text
    shared = text[text.index("## Shared Context Files") : text.index("## Output Requirements")]
    assert shared == (
        "## Shared Context Files\n\n"
        "### Writable Shared Files\n\n"
        "**IMPORTANT**: Before signaling completion, you MUST append to these files using the "
        "exact format shown.\n\n"
        "#### log\n\n"
        "**Path**: flows/demo/log.md\n"
        "**Info**: Log for step-01-builder\n"
        "**Template**:\n\n"
        "````md\n## Step 1: First\n[agent-filled]\n```\ncode\n```\n````\n\n"
        "### Readable Shared Files\n\n"
        "#### standards\n\n"
        "**Path**: docs/builder-standards.md\n"
        "**Info**: Standards\n\n"
    )
    # The missing optional file appears once it exists.
    (root / "docs" / "optional.md").write_text("x\n")
    assert (
        "#### optional\n\n**Path**: docs/optional.md\n"
        in assemble(root, with_plan=True, step=1).text
    )


def test_shared_files_agents_filter_and_empty_subsections(tmp_path: Path) -> None:
    root = make_project(
        tmp_path, BASE_YAML + SHARED, files={"docs/builder-standards.md": "rules\n"}
    )
    text = assemble(root, agent="reviewer").text
    # The reviewer sees reviewers_only; the log is writable for everyone here.
    assert "#### reviewers_only" in text
    only_readable = make_project(
        tmp_path / "b",
        BASE_YAML + "shared_files:\n  s:\n    path: README.md\n    info: readme\n",
        files={"README.md": "hi\n"},
    )
    text = assemble(only_readable).text
    assert "### Readable Shared Files" in text
    assert "### Writable Shared Files" not in text
    assert "**IMPORTANT**" not in text  # (the Reply Format has its own plain "IMPORTANT:")


def test_shared_context_section_omitted_when_empty(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        BASE_YAML + "shared_files:\n  s:\n    path: missing.md\n    info: not there\n",
    )
    text = assemble(root).text
    assert "Shared Context Files" not in text
    assert "## Your Identity" in text


def test_previous_reports_single(tmp_path: Path) -> None:
    text = assemble(make_project(tmp_path), after=("step-01-builder",), flow_name="my-flow").text
    assert section(text, "## Previous Agent Reports") == (
        "The previous agent (step-01-builder) completed their work.\n"
        "Their report is at: `flows/my-flow/agents/step-01-builder/report.complete.md`\n\n"
        "Read this report to understand what was done and use it as context for your task.\n\n"
    )


def test_previous_reports_multiple(tmp_path: Path) -> None:
    text = assemble(make_project(tmp_path), after=("a-1", "b-2"), flow_name="my-flow").text
    assert section(text, "## Previous Agent Reports") == (
        "Multiple agents have completed work that provides context for your task:\n\n"
        "1. **a-1**: `flows/my-flow/agents/a-1/report.complete.md`\n"
        "2. **b-2**: `flows/my-flow/agents/b-2/report.complete.md`\n\n"
        "Read ALL of these reports to understand the full context before starting your task.\n\n"
    )


def test_previous_reports_absent_without_after(tmp_path: Path) -> None:
    assert "Previous Agent Reports" not in assemble(make_project(tmp_path)).text


def test_previous_report_paths_follow_config(tmp_path: Path) -> None:
    yaml = BASE_YAML.replace(
        'completion_workflow:\n  template: "@.flow/templates/completion.md"\n',
        'flow_dir: runs\ncompletion_workflow:\n  template: "@.flow/templates/completion.md"\n'
        "  report:\n    filename: out.md\n    success_suffix: .done.md\n    failure_suffix: .bad.md\n",
    )
    text = assemble(make_project(tmp_path, yaml), after=("x",), flow_name="f").text
    assert "`runs/f/agents/x/out.done.md`" in text
    assert section(text, "## Output Requirements") == (
        "Write `runs/f/agents/builder/out.md`; rename to `runs/f/agents/builder/out.done.md` "
        "or `runs/f/agents/builder/out.bad.md`.\n\n"
    )


def test_every_seed_variable_is_resolved(tmp_path: Path) -> None:
    template = " ".join(f"{name}={{{name}}}" for name in TEMPLATE_VARIABLES) + " [keep] {other}\n"
    root = make_project(tmp_path, files={".flow/templates/completion.md": template})
    text = assemble(root, with_plan=True, step=2).text
    out = section(text, "## Output Requirements")
    assert out == (
        "flow_name=demo flow_dir=flows agent_name=step-02-builder agent_type=builder step=2 "
        "step_title=Second plan_name=demo specs_folder=specs "
        "timestamp=2026-01-02T03:04:05+00:00 "
        "report_file=flows/demo/agents/step-02-builder/report.md "
        "success_file=flows/demo/agents/step-02-builder/report.complete.md "
        "failed_file=flows/demo/agents/step-02-builder/report.failed.md [keep] {other}\n\n"
    )


def test_variables_without_a_value_are_not_applicable(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        files={".flow/templates/completion.md": "{step} {step_title} {plan_name}\n{failed_file}\n"},
    )
    out = section(assemble(root).text, "## Output Requirements")
    assert out.startswith("N/A N/A N/A\n")


def test_default_timestamp_is_now(tmp_path: Path) -> None:
    root = make_project(
        tmp_path, files={".flow/templates/completion.md": "at {timestamp} {report_file}\n"}
    )
    before = datetime.now(timezone.utc).replace(microsecond=0)
    out = section(assemble(root, timestamp=None).text, "## Output Requirements")
    stamp = datetime.fromisoformat(out.split()[1])
    assert before <= stamp <= datetime.now(timezone.utc)


def test_agent_definition_resolves_variables_and_keeps_braces(tmp_path: Path) -> None:
    root = make_project(
        tmp_path, files={".flow/agents/builder.md": "I am {agent_name}. Code: {'a': 1} {x}\n"}
    )
    text = assemble(root, agent_id="b1").text
    assert section(text, "## Agent Definition") == "I am b1. Code: {'a': 1} {x}\n\n"


def test_agent_definition_inline_with_config_source(tmp_path: Path) -> None:
    prompt = assemble(make_project(tmp_path), agent="reviewer")
    assert section(prompt.text, "## Agent Definition") == "Review it.\n\n"
    definition = [s for s in prompt.segments if s.scope == "agent-definition"]
    assert definition[0].source == "config:agents.reviewer.system_prompt"


# --------------------------------------------------------------------------- assignment


def test_plan_context_is_fenced_longer_than_any_inner_fence(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    config = load_flow_config(root)
    plan = parse_plan(root / "specs" / "demo.md", config.spec_plan)
    text = assemble(root, plan=plan, step=2).text
    assignment = assignment_of(text)
    assert assignment.startswith("```````md\n")  # the plan has a run of 6
    tokens = [t for t in MarkdownIt().parse(assignment) if t.type == "fence"]
    assert len(tokens) == 1
    assert tokens[0].info == "md"
    assert tokens[0].content == plan.assignment_context(2)


def test_braces_in_plan_text_survive(tmp_path: Path) -> None:
    text = assemble(make_project(tmp_path), with_plan=True, step=1).text
    assert "Overview with {braces} and {step} that must survive." in text


def test_raw_task_is_not_wrapped_or_resolved(tmp_path: Path) -> None:
    task = "Implement {step} with ```code``` and {{ jinja }} {% raw %}"
    text = assemble(make_project(tmp_path), task=task, step=3).text
    assert assignment_of(text) == task + "\n"


def test_preamble_comes_first(tmp_path: Path) -> None:
    text = assemble(
        make_project(tmp_path), with_plan=True, step=1, preamble="\nReview this step:\n\n"
    ).text
    assert assignment_of(text).startswith("Review this step:\n\n```md\n# Plan: Demo")


def test_plan_and_task_task_follows_the_plan(tmp_path: Path) -> None:
    text = assemble(make_project(tmp_path), with_plan=True, step=1, task="Extra note.").text
    assignment = assignment_of(text)
    assert assignment.startswith("```md\n")
    assert assignment.endswith("```\n\nExtra note.\n")


def test_crlf_in_inputs_is_normalised(tmp_path: Path) -> None:
    root = make_project(tmp_path, files={".flow/agents/builder.md": "line one\r\nline two\r\n"})
    text = assemble(root, task="a\r\nb").text
    assert "\r" not in text
    assert section(text, "## Agent Definition") == "line one\nline two\n\n"


# --------------------------------------------------------------------------- segments


def test_segment_sources(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        BASE_YAML + SHARED,
        files={
            "docs/builder-standards.md": "x\n",
            ".flow/agents/builder.md": "---\nname: b\n---\nYou build.\n",
        },
    )
    prompt = assemble(root, with_plan=True, step=1, after=("a",), preamble="P", task="T")
    found = [(s.scope, s.label, s.source) for s in prompt.segments]
    assert found == [
        ("frontmatter", "agent frontmatter (hoisted)", ".flow/agents/builder.md"),
        ("protocol", "Multi-Agent Flow Protocol", "built-in"),
        ("identity", "Your Identity", "built-in"),
        ("shared-files", "Shared Context Files", "built-in"),
        ("shared-files", "Writable Shared Files", "built-in"),
        ("shared-file", "log (writable)", "config:.flow/base.yaml:12:shared_files.log"),
        ("shared-files", "Readable Shared Files", "built-in"),
        ("shared-file", "standards (readable)", "config:.flow/base.yaml:17:shared_files.standards"),
        ("previous-reports", "Previous Agent Reports", "cli:--after"),
        ("completion-workflow", "Output Requirements", ".flow/templates/completion.md"),
        ("reply-format", "Reply Format (seed 004)", "built-in"),
        ("agent-definition", "Agent Definition", ".flow/agents/builder.md"),
        ("assignment", "Your Assignment", "built-in"),
        ("preamble", "assignment preamble", "cli:--preamble"),
        ("plan", "demo step 1", "specs/demo.md"),
        ("task", "task", "cli:--task"),
    ]
    assert "".join(s.content for s in prompt.segments) == prompt.text


# --------------------------------------------------------------------------- .agents-flow


AGENT_MD = """\
---
name: Helper
description: Helps
agentId: {agent_id}
output:
  kind: text
includes:
  instructions: [style]
---
Helper body for {{agent_name}}.
"""


def test_agents_flow_agent_layers_and_segments() -> None:
    prompt = render(next(case for case in CASES if case.name == "agents_flow"))
    scopes = [s.scope for s in prompt.segments]
    start = scopes.index("agent-definition")
    assert scopes[start : start + 5] == [
        "agent-definition",
        "global-system-prompt",
        "instruction",
        "skill",
        "agent-body",
    ]
    assert not prompt.text.startswith("---")  # asset frontmatter is metadata, never hoisted


def test_agents_flow_wins_over_flow_agent_with_same_name(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        files={
            ".agents-flow/agents/builder.agent.md": AGENT_MD.format(agent_id="builder"),
            ".agents-flow/instructions/style.instructions.md": "---\nname: style\n"
            "description: d\n---\nBe terse.\n",
        },
    )
    prompt = assemble(root, agent_id="x")
    assert section(prompt.text, "## Agent Definition") == "Be terse.\n\nHelper body for x.\n\n"
    assert "- Role: Helps\n" in prompt.text
    assert [s.source for s in prompt.segments if s.scope == "instruction"] == [
        ".agents-flow/instructions/style.instructions.md"
    ]


def test_agents_flow_agent_with_errors_refuses(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        files={".agents-flow/agents/helper.agent.md": AGENT_MD.format(agent_id="helper")},
    )
    with pytest.raises(ConfigError, match="refuses to run") as info:
        assemble(root, agent="helper")
    assert "style" in str(info.value)


# --------------------------------------------------------------------------- errors


def test_unknown_agent_lists_known_ones(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        files={
            ".agents-flow/agents/helper.agent.md": AGENT_MD.format(agent_id="helper").replace(
                "includes:\n  instructions: [style]\n", ""
            )
        },
    )
    with pytest.raises(ConfigError) as info:
        assemble(root, agent="nobody")
    assert str(info.value) == (
        "unknown agent 'nobody'; known agents: builder (.flow), reviewer (.flow), "
        "helper (.agents-flow)"
    )


def test_step_not_in_plan(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"no step 9 \(steps: 1, 2\)"):
        assemble(make_project(tmp_path), with_plan=True, step=9)


def test_nothing_to_assign(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    with pytest.raises(UsageError, match="nothing to assign"):
        assemble(root, with_plan=True)
    with pytest.raises(UsageError, match="task is empty"):
        assemble(root, task="  \n")


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "sp ace"])
def test_agent_id_and_flow_name_must_be_safe_directory_names(tmp_path: Path, bad: str) -> None:
    root = make_project(tmp_path)
    with pytest.raises(UsageError, match="invalid agent id"):
        assemble(root, agent_id=bad)
    with pytest.raises(UsageError, match="invalid flow name"):
        assemble(root, flow_name=bad)


def _template_dir(tmp_path: Path, old: str, new: str) -> Path:
    directory = tmp_path / "templates"
    directory.mkdir()
    source = (templates_dir() / SYSTEM_PROMPT_TEMPLATE).read_text()
    assert old in source
    (directory / SYSTEM_PROMPT_TEMPLATE).write_text(source.replace(old, new, 1))
    return directory


def test_strict_undefined_names_template_and_line(tmp_path: Path) -> None:
    directory = _template_dir(tmp_path, "- Flow: {{ flow_name }}", "- Flow: {{ flow_nmae }}")
    line = (directory / SYSTEM_PROMPT_TEMPLATE).read_text().splitlines().index(
        "- Flow: {{ flow_nmae }}"
    ) + 1
    with pytest.raises(TemplateError) as info:
        assemble(make_project(tmp_path), template_dir=directory)
    assert str(info.value) == (
        f"{directory / SYSTEM_PROMPT_TEMPLATE}:{line}: 'flow_nmae' is undefined"
    )


def test_template_syntax_error_names_template_and_line(tmp_path: Path) -> None:
    directory = _template_dir(tmp_path, "{% endblock %}", "{% endblok %}")
    with pytest.raises(
        TemplateError, match=rf"^{re.escape(str(directory))}/system_prompt\.md\.j2:\d+: "
    ):
        assemble(make_project(tmp_path), template_dir=directory)


def test_missing_template(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="not found"):
        assemble(make_project(tmp_path), template_dir=tmp_path)


def test_template_environment_is_reused_and_sees_edits(tmp_path: Path) -> None:
    """One Jinja environment per template dir (compiled once); an edited file is recompiled,
    and a broken one raises every time, not only the first."""
    from gitflow_agents.prompt import render as module

    directory = _template_dir(tmp_path, "- Flow: {{ flow_name }}", "- Flow: {{ flow_name }}!")
    root = make_project(tmp_path)
    assert "- Flow: " in assemble(root, template_dir=directory).text
    assert module.environment(directory) is module.environment(directory)
    template = directory / SYSTEM_PROMPT_TEMPLATE
    edited = template.read_text().replace("- Flow: {{ flow_name }}!", "- Flow: {{ flow_nmae }}")
    template.write_text(edited)
    os.utime(template, ns=(1, 1))  # a different mtime even on a coarse clock
    for _ in range(2):
        with pytest.raises(TemplateError, match="'flow_nmae' is undefined"):
            assemble(root, template_dir=directory)
    template.write_text(edited.replace("{{ flow_nmae }}", "{{ flow_name }} (edited)"))
    os.utime(template, ns=(2, 2))
    assert " (edited)" in assemble(root, template_dir=directory).text


def test_render_gives_the_plain_text_and_each_block_in_order(tmp_path: Path) -> None:
    """One render: the text is what Jinja renders for the template, and each block's text is
    cut out of it (nested blocks too; a block the layout never reaches, or a block tag inside a
    comment, has no text)."""
    import jinja2

    from gitflow_agents.prompt.render import render

    source = (
        "{% block outer %}Outer {{ value }}\n{% block inner %}Inner{% endblock %}\n"
        "{% endblock %}between\n{% if false %}{% block hidden %}H{% endblock %}{% endif %}"
        "{# not a block: {% block ghost %} #}"
        "{% block last %}Last {{ value | fenced }}{% endblock %}\n"
    )
    (tmp_path / SYSTEM_PROMPT_TEMPLATE).write_text(source)
    value = "{{ not jinja }} \x00 {% block x %}"
    text, blocks = render(tmp_path, {"value": value})
    plain = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    plain.filters["fenced"] = fence
    assert text == plain.from_string(source).render(value=value)
    assert blocks == [
        ("outer", f"Outer {value}\nInner"),  # trim_blocks ate the newline after the inner block
        ("inner", "Inner"),
        ("last", f"Last {fence(value)}"),
    ]


def test_custom_template_dir_attributes_text_to_it(tmp_path: Path) -> None:
    directory = tmp_path / "templates"
    shutil.copytree(templates_dir(), directory, ignore=shutil.ignore_patterns("flow"))
    prompt = assemble(make_project(tmp_path), template_dir=directory)
    assert prompt.segments[0].source.endswith("templates/system_prompt.md.j2")


# --------------------------------------------------------------------------- writing


def test_write_system_prompt_atomically(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    config = load_flow_config(root)
    path = write_system_prompt(root, config, "step-01-builder", "demo", "first\n")
    assert path == root / "flows" / "demo" / "agents" / "step-01-builder" / "system_prompt.md"
    assert path.read_text() == "first\n"
    write_system_prompt(root, config, "step-01-builder", "demo", "second {x}\n")
    assert path.read_text() == "second {x}\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["system_prompt.md"]
    with pytest.raises(UsageError):
        write_system_prompt(root, config, "../escape", "demo", "x")


def test_golden_project_is_untouched_by_rendering() -> None:
    render(CASES[0])
    assert not (PROJECT / "flows").exists()
