"""Flow config: layering, merge rules, validation messages (file:line: key: message), defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitflow_agents.base.errors import ConfigError, ExitCode
from gitflow_agents.base.resources import templates_dir
from gitflow_agents.config import (
    TEMPLATE_VARIABLES,
    ChainConfig,
    FlowConfig,
    builtin_flow_dir,
    config_problems,
    find_project_root,
    load_flow_config,
    scaffold_files,
)
from gitflow_agents.git.stats import GIT_STATS_MARKER
from gitflow_agents.plan import SpecPlanConfig
from tests.conftest import Cli, git
from tests.helpers.chain import RUN_ARGS, configure
from tests.helpers.config_files import MINIMAL, load_error, write

# ---------------------------------------------------------------------------------- defaults


def test_minimal_config_gets_the_documented_defaults(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL)
    config = load_flow_config(tmp_path)
    assert config.root == tmp_path
    assert config.sources == (tmp_path / ".flow/base.yaml",)
    assert not config.built_in
    assert config.flow_dir == "flows"
    assert config.default_branch == "main"
    assert config.specs_folder == "specs"
    assert config.stuck_timeout_secs == 1200
    assert config.max_wait_secs == 3600
    assert config.stuck_retry_grace_secs == 30
    assert config.spec_plan == SpecPlanConfig()
    assert config.chain == ChainConfig()
    assert config.chain.branch_pattern == "agents/{plan_name}/step-{step}"
    assert (config.chain.max_iterations, config.chain.merge) == (3, "ff")
    assert config.spec_plan.top_level_end_marker == "## Implementation Steps"
    assert config.spec_plan.step_header_pattern == r"^### Status: ([^|]*?) ?\| Step (\d+): (.+)$"
    workflow = config.completion_workflow
    assert workflow.template == "Rename {report_file} to {success_file}."
    assert workflow.template_source == "inline"
    assert workflow.report_filename == "report.md"
    assert workflow.success_filename == "report.complete.md"
    assert workflow.failed_filename == "report.failed.md"
    assert dict(config.agents) == {}
    assert dict(config.shared_files) == {}


def test_no_flow_dir_uses_the_shipped_defaults(tmp_path: Path) -> None:
    config = load_flow_config(tmp_path)
    assert config.built_in
    assert config.sources == (builtin_flow_dir() / "base.yaml",)
    assert sorted(config.agents) == ["builder", "fixer", "planner", "researcher", "reviewer"]
    shipped = builtin_flow_dir() / "completion-workflow-template.md"
    assert config.completion_workflow.template == shipped.read_text(encoding="utf-8")
    assert (
        config.completion_workflow.template_source
        == "built-in:flow/completion-workflow-template.md"
    )
    builder = config.agent("builder")
    assert builder.system_prompt.startswith("---\n")  # frontmatter kept for hoisting
    assert builder.system_prompt_source == "built-in:flow/agents/builder.md"
    assert config.agent("reviewer").completion_template is not None
    assert "REVIEW_RESULT: APPROVED" in config.completion_workflow_for("reviewer").template


def test_unknown_agent_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_flow_config(tmp_path).agent("nope")
    assert "no agent 'nope'" in str(info.value)
    assert "builder, fixer, planner, researcher, reviewer" in str(info.value)
    assert info.value.exit_code == ExitCode.USAGE


def test_full_agent_and_shared_file(tmp_path: Path) -> None:
    write(tmp_path, "prompts/sec.md", "---\nname: sec\n---\nBe strict.\n")
    write(
        tmp_path,
        ".flow/base.yaml",
        """\
        completion_workflow:
          template: inline text, {report_file}
          report: {filename: progress.md, success_suffix: .done.md, failure_suffix: .bad.md}
        agents:
          sec-review:
            type: reviewer
            adapter: codex
            model: gpt-5
            system_prompt: "@prompts/sec.md"
            description: Security reviewer
            options: {sandbox: read-only, extra_args: [--x]}
            allow_env: [OPENAI_API_KEY]
          lint:
            adapter: command
            command: "my-linter --strict 'a b'"
        shared_files:
          log:
            path: "{flow_dir}/{flow_name}/log.md"
            info: The log
            writable: true
            write_template: "## {step}"
            agents: [reviewer]
        """,
    )
    config = load_flow_config(tmp_path)
    agent = config.agent("sec-review")
    assert agent.name == "sec-review"
    assert agent.type == "reviewer"
    assert agent.adapter == "codex"
    assert agent.model == "gpt-5"
    assert agent.system_prompt == "---\nname: sec\n---\nBe strict.\n"
    assert agent.system_prompt_source == "prompts/sec.md"
    assert agent.description == "Security reviewer"
    assert agent.command is None
    assert agent.allow_env == ("OPENAI_API_KEY",)
    assert dict(agent.options) == {
        "sandbox": "read-only",
        "extra_args": ["--x"],
        "allow_env": ["OPENAI_API_KEY"],
    }
    lint = config.agent("lint")
    assert lint.type == "lint"  # defaults to the name
    assert lint.command == ("my-linter", "--strict", "a b")
    assert lint.system_prompt == ""
    assert lint.model is None
    log = config.shared_files["log"]
    assert log.path == "{flow_dir}/{flow_name}/log.md"
    assert (log.info, log.writable, log.write_template, log.agents) == (
        "The log",
        True,
        "## {step}",
        ("reviewer",),
    )
    assert log.source == ".flow/base.yaml:17"
    workflow = config.completion_workflow
    assert (workflow.success_filename, workflow.failed_filename) == (
        "progress.done.md",
        "progress.bad.md",
    )


def test_at_at_escapes_a_literal_at(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", 'completion_workflow:\n  template: "@@team {report_file}"\n')
    assert load_flow_config(tmp_path).completion_workflow.template == "@team {report_file}"


def test_defaults_section_and_spec_plan(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL
        + """\
defaults: {stuck_timeout_secs: 60, max_wait_secs: 600, stuck_retry_grace_secs: 0}
spec_plan:
  top_level_end_marker: "## Steps"
  step_header_pattern: '^## (\\S*) Step (\\d+) - (.+)$'
flow_dir: runs
default_branch: trunk
""",
    )
    config = load_flow_config(tmp_path)
    assert (config.stuck_timeout_secs, config.max_wait_secs, config.stuck_retry_grace_secs) == (
        60,
        600,
        0,
    )
    assert config.spec_plan.top_level_end_marker == "## Steps"
    assert config.spec_plan.step_regex.match("## ✅ Step 2 - Title")
    assert (config.flow_dir, config.default_branch) == ("runs", "trunk")


# ---------------------------------------------------------------------------------- layering


def test_layers_merge_scalars_mappings_and_lists(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        """\
        flow_dir: flows
        completion_workflow:
          template: base template {report_file}
          report: {filename: report.md}
        agents:
          builder:
            model: sonnet
            description: base builder
            options: {cpu_activity: tools, env: {X: '1'}}
            allow_env: [A]
            adapter: command
            command: [one, two]
        shared_files:
          log: {path: log.md, agents: [builder]}
        """,
    )
    write(
        tmp_path,
        ".flow/implement/base.yaml",
        """\
        flow_dir: impl-flows
        agents:
          builder:
            model: opus
            options: {completes_by_exit: true, env: {Y: '2'}}
            allow_env: [B, A]
            command: [three]
          reviewer: {description: added}
        shared_files:
          log: {agents: [fixer]}
        """,
    )
    write(
        tmp_path,
        ".flow/implement/fast.yaml",
        """\
        completion_workflow: {report: {success_suffix: .ok.md}}
        agents:
          builder: {model: null}
        """,
    )
    base = load_flow_config(tmp_path)
    assert base.flow_dir == "flows"
    assert sorted(base.agents) == ["builder"]

    layered = load_flow_config(tmp_path, "implement")
    assert layered.sources == (
        tmp_path / ".flow/base.yaml",
        tmp_path / ".flow/implement/base.yaml",
    )
    assert layered.flow_type == "implement"
    assert layered.flow_dir == "impl-flows"  # scalar replaced
    builder = layered.agent("builder")
    assert builder.model == "opus"
    assert builder.description == "base builder"  # mapping merged: kept from base
    assert dict(builder.options) == {
        "cpu_activity": "tools",
        "completes_by_exit": True,
        "env": {"X": "1", "Y": "2"},  # mappings merged
        "allow_env": ["A", "B"],
    }
    assert builder.allow_env == ("A", "B")  # lists concatenated, duplicates dropped
    assert builder.command == ("three",)  # an argv is replaced whole
    assert layered.agent("reviewer").description == "added"
    assert layered.shared_files["log"].agents == ("builder", "fixer")
    assert layered.shared_files["log"].path == "log.md"
    assert layered.shared_files["log"].source == ".flow/implement/base.yaml:10"

    variant = load_flow_config(tmp_path, "implement", "fast")
    assert variant.variant == "fast"
    assert len(variant.sources) == 3
    assert variant.agent("builder").model is None  # null replaces
    assert variant.completion_workflow.success_filename == "report.ok.md"
    assert variant.completion_workflow.template == "base template {report_file}"


CHAIN_AGENTS = "agents:\n  make: {}\n  check: {}\n  sec: {}\n  mend: {}\n"


def test_chain_section_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL
        + CHAIN_AGENTS
        + "chain:\n  implementer: make\n  reviewers: [check, sec]\n  fixer: mend\n"
        + "  max_iterations: 5\n  target: develop\n  branch_pattern: 'ai/{plan}/{step2}'\n"
        + "  merge: merge\n  severity_threshold: warn\n  jobs: 4\n",
    )
    assert load_flow_config(tmp_path).chain == ChainConfig(
        implementer="make",
        reviewers=("check", "sec"),
        fixer="mend",
        max_iterations=5,
        jobs=4,
        target="develop",
        branch_pattern="ai/{plan}/{step2}",
        merge="merge",
        severity_threshold="warn",
    )


def test_chain_section_layers_add_reviewers_and_replace_scalars(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL + CHAIN_AGENTS + "chain:\n  reviewers: [check]\n  max_iterations: 2\n",
    )
    write(tmp_path, ".flow/strict/base.yaml", "chain:\n  reviewers: [sec]\n  merge: merge\n")
    chain = load_flow_config(tmp_path, "strict").chain
    assert chain.reviewers == ("check", "sec")
    assert (chain.max_iterations, chain.merge, chain.implementer) == (2, "merge", "builder")
    assert load_flow_config(tmp_path).chain.reviewers == ("check",)


def test_chain_agents_may_come_from_a_later_layer(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL + "chain:\n  fixer: mend\n")
    write(tmp_path, ".flow/x/base.yaml", "agents:\n  mend: {}\n")
    assert load_flow_config(tmp_path, "x").chain.fixer == "mend"
    assert load_error(tmp_path).startswith(".flow/base.yaml:4: chain.fixer: no agent 'mend'")


def test_missing_flow_type_layer_is_optional(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL)
    config = load_flow_config(tmp_path, "review")
    assert config.sources == (tmp_path / ".flow/base.yaml",)


def test_missing_variant_is_an_error_listing_variants(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL)
    write(tmp_path, ".flow/implement/base.yaml", "flow_dir: x\n")
    write(tmp_path, ".flow/implement/fast.yaml", "flow_dir: y\n")
    message = load_error(tmp_path, "implement", "slow")
    assert message == (
        "variant file .flow/implement/slow.yaml not found; variants of 'implement': fast"
    )


def test_variant_needs_flow_type(tmp_path: Path) -> None:
    assert "needs a flow type" in load_error(tmp_path, None, "fast")


def test_flow_type_must_be_a_plain_name(tmp_path: Path) -> None:
    assert "invalid flow type '../x'" in load_error(tmp_path, "../x")


def test_layer_without_base_still_needs_a_template(tmp_path: Path) -> None:
    write(tmp_path, ".flow/plan/base.yaml", "flow_dir: plans\n")
    assert load_error(tmp_path, "plan").startswith(
        ".flow/plan/base.yaml: completion_workflow.template: required"
    )
    # Without the flow type no project file is read: the shipped defaults apply.
    assert load_flow_config(tmp_path).built_in


REVIEW_ONLY = """\
# yaml-language-server: $schema=flow-config.schema.json
review:
  exclude: [tests/fixtures/]
  rules:
    todo: {enabled: false}
"""


def test_a_base_holding_only_review_keeps_the_shipped_chain_defaults(tmp_path: Path) -> None:
    # The builtin reviewer's settings alone must not break plan, prompt and run (decisions
    # "Flow configuration" 14): the shipped layers apply, the review section is the user's.
    base = write(tmp_path, ".flow/base.yaml", REVIEW_ONLY)
    config = load_flow_config(tmp_path)
    assert config.built_in
    assert config.sources == (builtin_flow_dir() / "base.yaml", base)
    assert sorted(config.agents) == ["builder", "fixer", "planner", "researcher", "reviewer"]
    shipped = builtin_flow_dir() / "completion-workflow-template.md"
    assert config.completion_workflow.template == shipped.read_text(encoding="utf-8")
    assert [g.glob for g in config.review.exclude] == ["tests/fixtures/"]
    assert config.review.exclude[0].source == ".flow/base.yaml:3"
    assert not config.review.rules["todo"].enabled
    assert load_flow_config(tmp_path, "review").sources[-1] == base


def test_a_review_only_base_is_still_checked_with_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", "review:\n  exlude: [a]\n")
    assert load_error(tmp_path).startswith(".flow/base.yaml:2: review.exlude")
    assert [str(p) for p in config_problems(tmp_path)] == [load_error(tmp_path)]


@pytest.mark.parametrize(
    "text", ["review:\n  exclude: [a]\nflow_dir: plans\n", "", "# only a comment\n"]
)
def test_a_base_with_more_than_review_is_a_chain_layer(tmp_path: Path, text: str) -> None:
    write(tmp_path, ".flow/base.yaml", text)
    assert load_error(tmp_path).startswith(
        ".flow/base.yaml: completion_workflow.template: required"
    )


def test_a_review_only_base_beside_a_flow_type_layer_needs_the_template(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", REVIEW_ONLY)
    write(tmp_path, ".flow/plan/base.yaml", "flow_dir: plans\n")
    assert "completion_workflow.template: required" in load_error(tmp_path, "plan")
    assert load_flow_config(tmp_path).built_in  # without the flow type: only the review layer


def test_plan_and_prompt_work_with_a_review_only_base(repo: Path, cli_run: Cli) -> None:
    write(repo, ".flow/base.yaml", REVIEW_ONLY)
    write(repo, "specs/a.md", "# A\n\n## Implementation Steps\n\n### Status: | Step 1: Do\n")
    for argv in (("plan", "lint", "specs/a.md"), ("plan", "show", "specs/a.md")):
        result = cli_run.main(*argv, cwd=repo)
        assert result.returncode == 0, result.stderr + result.stdout
    result = cli_run.main(
        "prompt", "--agent", "builder", "--plan", "specs/a.md", "--step", "1", cwd=repo
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert "## Output Requirements" in result.stdout


def test_shipped_flow_type_layers_are_not_invented(tmp_path: Path) -> None:
    assert "variant file .flow/implement/x.yaml not found" in load_error(tmp_path, "implement", "x")


# ---------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            MINIMAL + "agents:\n  builder:\n    model:\n      - a\n      - b\n",
            ".flow/base.yaml:5: agents.builder.model: expected a string, got a list",
        ),
        (
            MINIMAL + "agents:\n  builder:\n    modle: x\n",
            ".flow/base.yaml:5: agents.builder.modle: unknown key (did you mean 'model'?)",
        ),
        (
            MINIMAL + "colour: red\n",
            ".flow/base.yaml:3: colour: unknown key (known keys: flow_dir, default_branch, "
            "specs_folder, defaults, spec_plan, completion_workflow, agents, shared_files, chain, "
            "review, prices, budget)",
        ),
        (
            MINIMAL + "agent_interface: opencode\n",
            ".flow/base.yaml:3: agent_interface: unknown key "
            "(choose the agent CLI per agent with agents.<name>.adapter)",
        ),
        (
            MINIMAL + "stuck_timeout_secs: 10\n",
            ".flow/base.yaml:3: stuck_timeout_secs: unknown key (put it under defaults:)",
        ),
        (
            MINIMAL + "defaults:\n  stuck_timeout_secs: soon\n",
            ".flow/base.yaml:4: defaults.stuck_timeout_secs: expected a whole number of seconds,"
            " got a string",
        ),
        (
            MINIMAL + "defaults:\n  max_wait_secs: 0\n",
            ".flow/base.yaml:4: defaults.max_wait_secs: must be at least 1, got 0",
        ),
        (
            MINIMAL + "defaults:\n  max_wait_secs: true\n",
            ".flow/base.yaml:4: defaults.max_wait_secs: expected a whole number of seconds,"
            " got a boolean",
        ),
        (
            MINIMAL + "agents:\n  builder:\n    adapter: copilot\n",
            ".flow/base.yaml:5: agents.builder.adapter: expected one of claude, codex, gemini, "
            "aider, auggie, opencode, command, patch, builtin, got 'copilot'",
        ),
        (
            MINIMAL + "agents:\n  builder:\n    adapter: command\n",
            ".flow/base.yaml:4: agents.builder.command: required when adapter is 'command'",
        ),
        (
            MINIMAL + "agents:\n  builder:\n    command: [x]\n",
            ".flow/base.yaml:5: agents.builder.command: only the 'command' adapter runs a "
            "command (this agent uses 'claude'); to change that CLI's executable use "
            "options.executable",
        ),
        (
            MINIMAL + 'agents:\n  b:\n    adapter: command\n    command: "x \'y"\n',
            '.flow/base.yaml:6: agents.b.command: cannot split "x \'y": No closing quotation',
        ),
        (
            MINIMAL + "agents:\n  builder:\n    allow_env: [OK, not-a-name]\n",
            ".flow/base.yaml:5: agents.builder.allow_env[1]: 'not-a-name' is not an "
            "environment variable name",
        ),
        (
            MINIMAL + "agents:\n  my agent: {}\n",
            ".flow/base.yaml:4: agents.my agent: invalid name: use letters, digits, '.', '_' "
            "and '-' (starting with a letter or digit)",
        ),
        (
            MINIMAL + "agents: [builder]\n",
            ".flow/base.yaml:3: agents: expected a mapping of names, got a list",
        ),
        (
            MINIMAL + "agents:\n  builder:\n    options: [a]\n",
            ".flow/base.yaml:5: agents.builder.options: expected a mapping, got a list",
        ),
        (
            MINIMAL + "agents:\n  builder:\n    system_prompt: ''\n",
            ".flow/base.yaml:5: agents.builder.system_prompt: must not be empty",
        ),
        (
            MINIMAL + "shared_files:\n  log:\n    writable: yes please\n",
            ".flow/base.yaml:5: shared_files.log.writable: expected true or false, got a string",
        ),
        (
            MINIMAL + "shared_files:\n  log:\n    info: x\n",
            ".flow/base.yaml:4: shared_files.log.path: required",
        ),
        (
            MINIMAL + "shared_files:\n  log:\n    path: '{flow_dir}/{flowname}.md'\n",
            ".flow/base.yaml:5: shared_files.log.path: unknown variable {flowname}; known: "
            + ", ".join(f"{{{name}}}" for name in TEMPLATE_VARIABLES),
        ),
        (
            MINIMAL + "spec_plan:\n  step_header_pattern: '^### Step (\\d+): (.+)$'\n",
            ".flow/base.yaml:4: spec_plan.step_header_pattern: pattern '^### Step (\\d+): (.+)$'"
            " has 2 capture groups; it must have exactly 3 (status, number, title)",
        ),
        (
            MINIMAL + "spec_plan:\n  step_header_pattern: '^(a)(b)(c'\n",
            ".flow/base.yaml:4: spec_plan.step_header_pattern: invalid regular expression "
            "'^(a)(b)(c': missing ), unterminated subpattern at position 7",
        ),
        (
            MINIMAL + "chain:\n  max_iterations: 0\n",
            ".flow/base.yaml:4: chain.max_iterations: must be at least 1, got 0",
        ),
        (
            MINIMAL + "chain:\n  jobs: 0\n",
            ".flow/base.yaml:4: chain.jobs: must be at least 1, got 0",
        ),
        (
            MINIMAL + "chain:\n  max_iterations: two\n",
            ".flow/base.yaml:4: chain.max_iterations: expected a whole number, got a string",
        ),
        (
            MINIMAL + "chain:\n  merge: rebase\n",
            ".flow/base.yaml:4: chain.merge: expected one of ff, merge, got 'rebase'",
        ),
        (
            MINIMAL + "chain:\n  severity_threshold: fatal\n",
            ".flow/base.yaml:4: chain.severity_threshold: expected one of error, warn, info, "
            "got 'fatal'",
        ),
        (
            MINIMAL + "chain:\n  reviewers: reviewer\n",
            ".flow/base.yaml:4: chain.reviewers: expected a list of strings, got a string",
        ),
        (
            MINIMAL + "chain:\n  reviewers: []\n",
            ".flow/base.yaml:4: chain.reviewers: name at least one reviewer",
        ),
        (
            MINIMAL + "agents:\n  a: {}\nchain:\n  reviewers:\n    - a\n    - a\n",
            ".flow/base.yaml:8: chain.reviewers[1]: 'a' is listed twice",
        ),
        (
            MINIMAL + "agents:\n  a: {}\nchain:\n  reviewers:\n    - a\n    - securty\n",
            ".flow/base.yaml:8: chain.reviewers[1]: no agent 'securty' under agents:; known "
            "agents: a",
        ),
        (
            MINIMAL + "chain:\n  implementer: builder\n",
            ".flow/base.yaml:4: chain.implementer: no agent 'builder' under agents:; known "
            "agents: none",
        ),
        (
            MINIMAL + "chain:\n  fixer: ''\n",
            ".flow/base.yaml:4: chain.fixer: must not be empty",
        ),
        (
            MINIMAL + "chain:\n  branch_pattern: 'agents/{plan_name}/{stp}'\n",
            ".flow/base.yaml:4: chain.branch_pattern: unknown placeholder {stp}; known: "
            "{plan_name}, {plan}, {step}, {step2}",
        ),
        (
            MINIMAL + "chain:\n  branch_pattern: 'agents/{plan_name}'\n",
            ".flow/base.yaml:4: chain.branch_pattern: must contain {step} or {step2} (every "
            "step gets a branch of its own)",
        ),
        (
            MINIMAL + "chain:\n  branch_pattern: 'agents/{step'\n",
            ".flow/base.yaml:4: chain.branch_pattern: not a valid pattern: expected '}' before "
            "end of string",
        ),
        (
            MINIMAL + "chain:\n  target: 7\n",
            ".flow/base.yaml:4: chain.target: expected a string, got an integer",
        ),
        (
            MINIMAL + "chain:\n  reviewer: [a]\n",
            ".flow/base.yaml:4: chain.reviewer: unknown key (did you mean 'reviewers'?)",
        ),
        (
            MINIMAL + "completion_workflow:\n  template: again\n",
            ".flow/base.yaml:3: completion_workflow: duplicate key (first defined on line 1)",
        ),
        (
            MINIMAL + "defaults: &x\n  loop: [*x]\n",
            ".flow/base.yaml:4: invalid YAML: recursive YAML alias *x (an anchor that contains "
            "itself)",
        ),
        (
            "completion_workflow:\n  template: x\n  report:\n    filename: out/report.md\n",
            ".flow/base.yaml:4: completion_workflow.report.filename: must be a file name, not a "
            "path",
        ),
        (
            "completion_workflow:\n  template: x\n  report:\n    failure_suffix: .complete.md\n",
            ".flow/base.yaml:4: completion_workflow.report: report, success and failure files "
            "must differ, got 'report.md', 'report.complete.md', 'report.complete.md'",
        ),
        (
            "flow_dir: flows\ncompletion_workflow:\n  template: Write a short report.\n",
            ".flow/base.yaml:3: completion_workflow.template: uses none of {report_file}, "
            "{success_file}, {failed_file}: the agent would not know which file to write its "
            "report to and rename",
        ),
        (
            MINIMAL + "agents:\n  b:\n    adapter: claude\n    completion_template: Be brief.\n",
            ".flow/base.yaml:6: agents.b.completion_template: uses none of {report_file}, "
            "{success_file}, {failed_file}: the agent would not know which file to write its "
            "report to and rename",
        ),
        (
            "completion_workflow:\n  template: null\n",
            ".flow/base.yaml:2: completion_workflow.template: expected a string, got null",
        ),
        (
            "flow_dir: flows\n",
            ".flow/base.yaml: completion_workflow.template: required: the text agents get to "
            'report and signal completion, e.g. "@.flow/templates/completion-workflow-template.md"'
            " (gitflow-agents init writes it)",
        ),
        (
            "",
            ".flow/base.yaml: completion_workflow.template: required: the text agents get to "
            'report and signal completion, e.g. "@.flow/templates/completion-workflow-template.md"'
            " (gitflow-agents init writes it)",
        ),
        (
            "# only a comment\n",
            ".flow/base.yaml: completion_workflow.template: required: the text agents get to "
            'report and signal completion, e.g. "@.flow/templates/completion-workflow-template.md"'
            " (gitflow-agents init writes it)",
        ),
        (
            "- a\n- b\n",
            ".flow/base.yaml:1: expected a mapping of settings at the top level, got a list",
        ),
        (
            "just text\n",
            ".flow/base.yaml:1: expected a mapping of settings at the top level, got a string",
        ),
        (
            "agents:\n\tbuilder: x\n",
            ".flow/base.yaml:2: invalid YAML: a tab character where YAML allows none (indent with "
            "spaces)",
        ),
        (
            "a: 1\n---\nb: 2\n",
            ".flow/base.yaml:2: invalid YAML: expected a single document in the stream but found"
            " another document",
        ),
        (
            "1: x\n",
            ".flow/base.yaml:1: keys must be strings, got an integer 1",
        ),
        (  # a list (or a mapping) as a key: its kind, not an empty value standing for it
            "prices:\n  ? [a, b]\n  : {input: 1, output: 2}\n",
            ".flow/base.yaml:2: prices: keys must be strings, got a list",
        ),
    ],
)
def test_validation_errors_name_file_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    write(tmp_path, ".flow/base.yaml", text)
    assert load_error(tmp_path) == expected


def test_a_completion_template_file_naming_no_report_file_is_refused(tmp_path: Path) -> None:
    """The check reads the ``@file``'s text, and names the file as well as the key's line."""
    write(tmp_path, ".flow/t.md", "Write a report.\n{step}\n")
    write(tmp_path, ".flow/base.yaml", "\ncompletion_workflow:\n  template: '@.flow/t.md'\n")
    assert load_error(tmp_path) == (
        ".flow/base.yaml:3: completion_workflow.template: .flow/t.md uses none of {report_file}, "
        "{success_file}, {failed_file}: the agent would not know which file to write its report "
        "to and rename"
    )


def test_a_syntax_error_names_file_and_line_in_the_parsers_words(tmp_path: Path) -> None:
    """libyaml and PyYAML's own parser word syntax errors differently: one line, file and line."""
    write(tmp_path, ".flow/base.yaml", "agents:\n  builder: {model: x\nflow_dir: y\n")
    error = load_error(tmp_path)
    assert error.startswith(".flow/base.yaml:3: invalid YAML: ")
    assert "\n" not in error


def test_errors_in_later_layers_name_that_layer(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL)
    write(tmp_path, ".flow/review/strict.yaml", "\nagents:\n  reviewer:\n    model: [x]\n")
    assert load_error(tmp_path, "review", "strict") == (
        ".flow/review/strict.yaml:4: agents.reviewer.model: expected a string, got a list"
    )


def test_missing_at_file(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL + "agents:\n  builder:\n    system_prompt: '@.flow/agents/builder.md'\n",
    )
    assert load_error(tmp_path) == (
        ".flow/base.yaml:5: agents.builder.system_prompt: file not found: "
        ".flow/agents/builder.md (paths after '@' are relative to the project root)"
    )


def test_missing_completion_template_file(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", "\ncompletion_workflow:\n  template: '@nope.md'\n")
    assert load_error(tmp_path) == (
        ".flow/base.yaml:3: completion_workflow.template: file not found: nope.md "
        "(paths after '@' are relative to the project root)"
    )


def test_missing_write_template_file(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL + "shared_files:\n  log:\n    path: x.md\n    write_template: '@t.md'\n",
    )
    assert load_error(tmp_path) == (
        ".flow/base.yaml:6: shared_files.log.write_template: file not found: t.md "
        "(paths after '@' are relative to the project root)"
    )


def test_at_file_outside_the_project_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(tmp_path, "secret.md", "secret")
    write(root, ".flow/base.yaml", "completion_workflow:\n  template: '@../secret.md'\n")
    assert load_error(root) == (
        ".flow/base.yaml:2: completion_workflow.template: @../secret.md: the file must be "
        "inside the project root"
    )


def test_at_directory_and_bad_encoding(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    write(tmp_path, ".flow/base.yaml", "completion_workflow:\n  template: '@dir'\n")
    assert load_error(tmp_path).endswith(
        "completion_workflow.template: dir: is a directory, not a file"
    )
    (tmp_path / "latin.md").write_bytes(b"caf\xe9")
    write(tmp_path, ".flow/base.yaml", "completion_workflow:\n  template: '@latin.md'\n")
    assert load_error(tmp_path) == (
        ".flow/base.yaml:2: completion_workflow.template: latin.md: not valid UTF-8 "
        "(byte 0xe9 at offset 3)"
    )


def test_config_file_not_utf8(tmp_path: Path) -> None:
    (tmp_path / ".flow").mkdir()
    (tmp_path / ".flow/base.yaml").write_bytes(b"flow_dir: caf\xe9\n")
    assert load_error(tmp_path) == ".flow/base.yaml:1: not valid UTF-8 (byte 0xe9 at offset 13)"


def test_yaml_merge_keys_and_anchors_work(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL
        + """\
agents:
  builder: &common
    model: sonnet
    description: shared
  fixer:
    <<: *common
    description: own
""",
    )
    config = load_flow_config(tmp_path)
    assert config.agent("fixer").model == "sonnet"
    assert config.agent("fixer").description == "own"


def test_yaml_tags_do_not_crash(tmp_path: Path) -> None:
    write(
        tmp_path, ".flow/base.yaml", "completion_workflow:\n  template: !!python/name:os.system\n"
    )
    message = load_error(tmp_path)
    assert message == (
        ".flow/base.yaml:2: invalid YAML: unsupported tag !!python/name:os.system (only plain values)"
    )


def test_cli_reports_config_errors_on_one_line(repo: Path, cli_run: Cli) -> None:
    write(repo, ".flow/base.yaml", MINIMAL + "agents:\n  builder:\n    model: [a]\n")
    write(repo, "specs/p.md", "# P\n\n## Implementation Steps\n\n### Status: ❌ | Step 1: A\n\nx\n")
    result = cli_run.main(
        "prompt", "--agent", "builder", "--plan", "specs/p.md", "--step", "1", cwd=repo
    )
    assert result.returncode == ExitCode.USAGE
    assert result.stderr.strip().endswith(
        ".flow/base.yaml:5: agents.builder.model: expected a string, got a list"
    )
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------- adapter options

_COMMAND_KNOWN = "allow_env, command, completes_by_exit, cpu_activity, env, executable, extra_args"


@pytest.mark.parametrize(
    ("agents", "expected"),
    [
        (
            "  rev:\n    adapter: command\n    command: [x]\n    options:\n      bogus: 1\n",
            f".flow/base.yaml:8: agents.rev.options.bogus: unknown option for the command "
            f"adapter; known: {_COMMAND_KNOWN}",
        ),
        (
            "  b:\n    options: {permission_mode: 7}\n",
            ".flow/base.yaml:5: agents.b.options.permission_mode: expected a non-empty string, "
            "got 7",
        ),
        (
            "  b:\n    adapter: claude\n    options:\n      permission_mode: always\n",
            ".flow/base.yaml:7: agents.b.options.permission_mode: expected one of acceptEdits, "
            "auto, bypassPermissions, default, dontAsk, plan, got 'always'",
        ),
        (
            "  b:\n    options:\n      max_turns: ten\n",
            ".flow/base.yaml:6: agents.b.options.max_turns: expected an integer >= 1, got 'ten'",
        ),
        (
            "  b:\n    adapter: codex\n    options:\n      max_turns: 3\n",
            ".flow/base.yaml:7: agents.b.options.max_turns: unknown option for the codex adapter; "
            "known: allow_env, config, env, executable, extra_args, provider, sandbox, "
            "system_prompt_mode",
        ),
        (
            "  b:\n    adapter: auggie\n    options:\n      retry_timeout: -1\n",
            ".flow/base.yaml:7: agents.b.options.retry_timeout: expected a positive number, got -1",
        ),
        (
            "  b:\n    adapter: aider\n    options:\n      env: [X]\n",
            ".flow/base.yaml:7: agents.b.options.env: expected a mapping, got ['X']",
        ),
        (
            "  b:\n    adapter: patch\n    options: {sandbox: none}\n",
            ".flow/base.yaml:6: agents.b.options.sandbox: unknown option for the patch adapter; "
            "known: allow_env, env, executable, extra_args",
        ),
    ],
    ids=[
        "unknown",
        "not-a-string",
        "not-a-choice",
        "not-an-integer",
        "another-clis-option",
        "not-positive",
        "env-not-a-mapping",
        "patch-has-none",
    ],
)
def test_adapter_options_are_checked_when_the_config_is_loaded(
    tmp_path: Path, agents: str, expected: str
) -> None:
    """Each agent's options go through its adapter's own checks when the config is loaded, not
    when the agent is launched (a reviewer's unknown option stopped a run after the implementer
    had worked, named by the run's agent id, ``agents.step-01-rev-1.options.bogus``, with no
    file or line): the config key, file and line, for every command."""
    write(tmp_path, ".flow/base.yaml", MINIMAL + "agents:\n" + agents)
    assert load_error(tmp_path) == expected


def test_an_option_of_a_later_layer_is_named_at_its_line_there(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL + "agents:\n  reviewer:\n    model: sonnet\n")
    write(
        tmp_path,
        ".flow/review/strict.yaml",
        "agents:\n  reviewer:\n    options:\n      max_turns: 0\n",
    )
    assert load_flow_config(tmp_path).agent("reviewer").model == "sonnet"
    assert load_error(tmp_path, "review", "strict") == (
        ".flow/review/strict.yaml:4: agents.reviewer.options.max_turns: expected an integer "
        ">= 1, got 0"
    )


def test_every_unknown_option_of_every_agent_is_a_problem(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL
        + "agents:\n"  # line 3
        + "  a:\n    options:\n      max_turn: 3\n      permision_mode: plan\n"  # lines 6, 7
        + "  b:\n    adapter: gemini\n    options: {skip_trust: 'no'}\n"  # line 10
        + "  c:\n    options: {max_turns: 40, permission_mode: plan}\n",  # fine
    )
    assert [str(problem) for problem in config_problems(tmp_path)] == [
        ".flow/base.yaml:6: agents.a.options.max_turn: unknown option for the claude adapter; "
        "known: allow_env, allowed_tools, disallowed_tools, env, executable, extra_args, "
        "max_budget_usd, max_turns, permission_mode, system_prompt_mode",
        ".flow/base.yaml:7: agents.a.options.permision_mode: unknown option for the claude "
        "adapter; known: allow_env, allowed_tools, disallowed_tools, env, executable, extra_args, "
        "max_budget_usd, max_turns, permission_mode, system_prompt_mode",
        ".flow/base.yaml:10: agents.b.options.skip_trust: expected true or false, got 'no'",
    ]


def test_the_adapters_good_options_still_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL
        + "agents:\n"
        + "  a:\n    allow_env: [AWS_PROFILE]\n    options:\n"
        + "      max_turns: 40\n      permission_mode: plan\n      env: {X: 1}\n"
        + "      allowed_tools: [Read, Edit]\n      max_budget_usd: 2.5\n"
        + "  b:\n    adapter: codex\n    options: {sandbox: read-only, config: {x: 1}}\n"
        + "  c:\n    adapter: command\n    model: m\n    command: [x, '{model}']\n"
        + "    options: {cpu_activity: tools, completes_by_exit: true}\n"
        + "  d:\n    adapter: builtin\n",
    )
    config = load_flow_config(tmp_path)
    assert config.agent("a").options["max_turns"] == 40
    assert config.agent("a").options["allow_env"] == ["AWS_PROFILE"]
    assert config_problems(tmp_path) == []


# ------------------------------------------------------------- flow_dir and branch_pattern


@pytest.mark.parametrize(
    "value",
    [
        "../escape",
        "flows/../../x",
        "/tmp/flows",
        "~/flows",
        ".",
        "./",
        "flows/..",
        ".git",
        ".git/flows",
    ],
)
def test_flow_dir_must_be_a_folder_inside_the_project(tmp_path: Path, value: str) -> None:
    """``flow_dir: ../escape`` passed, and ``run`` wrote its records outside the repository,
    then failed on a raw git error (git refused the path) after running the implementer."""
    write(tmp_path, ".flow/base.yaml", MINIMAL + f"flow_dir: {value!r}\n")
    assert load_error(tmp_path) == (
        f".flow/base.yaml:3: flow_dir: {value!r}: give a folder inside the project, relative "
        "to its root, outside .git, without '..' (e.g. flows)"
    )


@pytest.mark.parametrize(("value", "meant"), [("build/../flows", "flows"), ("a/../b/c", "b/c")])
def test_a_flow_dir_with_dots_that_stays_inside_is_named_as_meant(
    tmp_path: Path, value: str, meant: str
) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL + f"flow_dir: {value!r}\n")
    assert load_error(tmp_path).endswith(f"without '..' (e.g. {meant})")


@pytest.mark.parametrize("value", ["flows", "build/flows", "./flows", "flows/", ".runs"])
def test_flow_dir_may_be_any_folder_inside_the_project(tmp_path: Path, value: str) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL + f"flow_dir: {value!r}\n")
    assert load_flow_config(tmp_path).flow_dir == value


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        (
            "a b/{step}",
            "'a b/1' (step 1 of plan 'plan') is not a valid branch name: contains a space",
        ),
        (
            "agents/{plan}/{step}.lock",
            "'agents/plan/1.lock' (step 1 of plan 'plan') is not a "
            "valid branch name: a part ends with '.lock'",
        ),
        (
            "agents/..{step}",
            "'agents/..1' (step 1 of plan 'plan') is not a valid branch name: contains '..'",
        ),
        ("-{step}", "'-1' (step 1 of plan 'plan') is not a valid branch name: starts with '-'"),
        (
            "agents/{step}/",
            "'agents/1/' (step 1 of plan 'plan') is not a valid branch name: an "
            "empty part (a '/' at either end or two in a row)",
        ),
        ("x~{step2}", "'x~01' (step 1 of plan 'plan') is not a valid branch name: contains '~'"),
    ],
)
def test_a_branch_pattern_git_would_refuse_is_a_config_error(
    tmp_path: Path, pattern: str, said: str
) -> None:
    """As ``git check-ref-format --branch`` sees the branch of a sample step; ``run`` said only
    ``invalid branch name: 'a b/2'``, with no file, line or key, and plan lint nothing."""
    write(tmp_path, ".flow/base.yaml", MINIMAL + f"chain:\n  branch_pattern: {pattern!r}\n")
    assert load_error(tmp_path) == f".flow/base.yaml:4: chain.branch_pattern: {said}"


# ------------------------------------------------------------- an agent file's frontmatter

_IMPL = MINIMAL + "agents:\n  impl:\n    system_prompt: '@.flow/agents/impl.md'\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "---\n- a\n- b\n---\nYou implement.\n",
            ".flow/agents/impl.md:2: agents.impl.system_prompt: frontmatter must be a YAML "
            "mapping of 'key: value' lines, not a list",
        ),
        (
            "---\nname: impl\nYou implement.\n",
            ".flow/agents/impl.md:1: agents.impl.system_prompt: frontmatter opened with '---' is "
            "never closed (add a '---' line after the YAML)",
        ),
    ],
)
def test_an_agent_files_frontmatter_is_checked_when_the_config_is_loaded(
    tmp_path: Path, text: str, expected: str
) -> None:
    """The frontmatter of the file an agent's ``system_prompt`` names is read when the config
    is: ``plan lint`` passed a broken one that ``run`` refused only after making the step's
    branch (docs/configuration.md, agents.<name>)."""
    write(tmp_path, ".flow/base.yaml", _IMPL)
    write(tmp_path, ".flow/agents/impl.md", text)
    assert load_error(tmp_path) == expected
    assert [str(problem) for problem in config_problems(tmp_path)] == [expected]


def test_invalid_yaml_in_an_agent_files_frontmatter_names_the_file_and_line(
    tmp_path: Path,
) -> None:
    write(tmp_path, ".flow/base.yaml", _IMPL)
    write(tmp_path, ".flow/agents/impl.md", "---\nname: impl\nmodel: [unclosed\n---\nBody.\n")
    error = load_error(tmp_path)
    # the parser's own words follow (libyaml's or PyYAML's): not checked here
    assert error.startswith(".flow/agents/impl.md:"), error
    assert ": agents.impl.system_prompt: invalid YAML in frontmatter: " in error
    assert "\n" not in error


def test_an_inline_system_prompts_frontmatter_is_named_at_its_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL + 'agents:\n  impl:\n    system_prompt: "---\\n- a\\n---\\nBody."\n',
    )
    assert load_error(tmp_path) == (
        ".flow/base.yaml:5: agents.impl.system_prompt: frontmatter must be a YAML mapping of "
        "'key: value' lines, not a list (line 2 of its text)"
    )


def test_a_good_frontmatter_still_loads(tmp_path: Path) -> None:
    write(tmp_path, ".flow/base.yaml", _IMPL)
    write(tmp_path, ".flow/agents/impl.md", "---\nname: impl\ntools: [Read]\n---\nBody.\n")
    assert load_flow_config(tmp_path).agent("impl").system_prompt.startswith("---\nname: impl")


# ---------------------------------------------------------------------------------- root


def test_find_project_root(tmp_path: Path) -> None:
    (tmp_path / "a/.git").mkdir(parents=True)
    (tmp_path / "a/b/.flow").mkdir(parents=True)
    (tmp_path / "a/b/c/d").mkdir(parents=True)
    (tmp_path / "a/x").mkdir()
    assert find_project_root(tmp_path / "a/b/c/d") == tmp_path / "a/b"  # nearest wins
    assert find_project_root(tmp_path / "a/b") == tmp_path / "a/b"
    assert find_project_root(tmp_path / "a/x") == tmp_path / "a"
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt/.git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    assert find_project_root(tmp_path / "wt") == tmp_path / "wt"


def test_find_project_root_falls_back_to_start(tmp_path: Path) -> None:
    start = tmp_path / "nowhere"
    start.mkdir()
    root = find_project_root(start)
    # No .flow or .git on the way up inside tmp_path: the start itself (or a real ancestor
    # repository above the temp dir, which tests cannot control).
    assert root == start or (root / ".git").exists() or (root / ".flow").is_dir()


# ---------------------------------------------------------------------------------- shipped


def test_shipped_templates_are_found_through_resources() -> None:
    shipped = templates_dir() / "flow"
    assert builtin_flow_dir() == shipped
    names = {file.dest for file in scaffold_files()}
    assert {
        ".flow/base.yaml",
        ".flow/flow-config.schema.json",
        ".flow/templates/completion-workflow-template.md",
        ".flow/templates/implementation-completion-workflow-template.md",
        ".flow/templates/planning-completion-workflow-template.md",
        ".flow/templates/research-completion-workflow-template.md",
        ".flow/templates/review-completion-workflow-template.md",
        ".flow/templates/implementation-log-template.md",
        ".flow/templates/completion-workflow-simple.md",
        ".flow/agents/builder.md",
        ".flow/agents/reviewer.md",
        ".flow/agents/fixer.md",
        ".flow/agents/planner.md",
        ".flow/agents/researcher.md",
        "specs/example-plan.md",
    } == names
    generated = [file.dest for file in scaffold_files() if file.source is None]
    assert generated == [".flow/flow-config.schema.json"]  # the JSON Schema, from the shape
    for file in scaffold_files():
        assert file.source is None or file.source.is_file()


def _shipped(name: str) -> str:
    return (builtin_flow_dir() / name).read_text(encoding="utf-8")


def test_shipped_templates_use_only_seed_variables() -> None:
    import re

    for path in builtin_flow_dir().rglob("*.md"):
        used = set(re.findall(r"\{([a-z_]+)\}", path.read_text(encoding="utf-8")))
        assert used <= set(TEMPLATE_VARIABLES), (path, used - set(TEMPLATE_VARIABLES))


def test_every_completion_template_states_the_rename_protocol() -> None:
    for name in (
        "completion-workflow-template.md",
        "implementation-completion-workflow-template.md",
        "planning-completion-workflow-template.md",
        "research-completion-workflow-template.md",
        "review-completion-workflow-template.md",
        "completion-workflow-simple.md",
    ):
        text = _shipped(name)
        for variable in ("{report_file}", "{success_file}", "{failed_file}"):
            assert variable in text, (name, variable)


def test_implementation_template_leaves_git_stats_to_the_tool() -> None:
    text = _shipped("implementation-completion-workflow-template.md")
    assert "# Step {step} status: [Completed | Partially completed | Failed]" in text
    for heading in ("## Summary", "## Deferred responsibilities", "## Notes"):
        assert heading in text
    assert f"## Modified files\n\n{GIT_STATS_MARKER}\n" in text
    assert "git diff --numstat" in text
    assert "Do NOT run `git diff --stat`" in text
    assert "{git_stats}" not in text
    assert "git" not in _shipped("planning-completion-workflow-template.md").lower()


def test_review_template_states_the_exact_verdict_and_findings_shape() -> None:
    import re

    text = _shipped("review-completion-workflow-template.md")
    assert "`REVIEW_RESULT: APPROVED`" in text
    assert "`REVIEW_RESULT: REVISE`" in text
    assert "the last one counts" in text
    assert "not inside a code block" in text
    assert "```json" in text
    for key in ("overall", "summary", "findings", "severity", "file", "line", "end_line"):
        assert f'"{key}"' in text
    for key in ("message", "suggestion", "rule"):
        assert f'"{key}"' in text
    assert "must agree" in text.lower()
    # The skeleton's verdict line is a placeholder, never a verdict a parser would accept.
    verdict = re.compile(r"^\s*REVIEW_RESULT:\s*(APPROVED|REVISE)\s*$", re.MULTILINE)
    assert not verdict.search(text)


def test_research_template_asks_for_the_sources_as_links_result_json_reads() -> None:
    from gitflow_agents.runs import flow_result

    text = _shipped("research-completion-workflow-template.md")
    for heading in ("## Summary", "## Findings", "## Sources"):
        assert heading in text
    report = "## Summary\n\nYes.\n\n## Sources\n\n- [Git worktrees](https://git-scm.com/docs/git-worktree)\n"
    result = flow_result("research", "succeeded", report_text=report)
    assert result["sources"] == [
        {"title": "Git worktrees", "url": "https://git-scm.com/docs/git-worktree"}
    ]
    assert "[Title](https://" in text  # the form the template shows is the form that is read


def test_example_plan_parses_with_three_steps() -> None:
    from gitflow_agents.plan import parse_plan

    plan = parse_plan(builtin_flow_dir() / "specs/example-plan.md")
    assert [step.number for step in plan.steps] == [1, 2, 3]
    assert "## Prerequisites" in plan.overview
    assert "Step 99" in plan.overview  # the header-looking line in the fence is not a step


# ---------------------------------------------------------------------------------- values


def test_flow_config_is_frozen(tmp_path: Path) -> None:
    import dataclasses

    config: FlowConfig = load_flow_config(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.flow_dir = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.agents["x"] = config.agent("builder")  # type: ignore[index]


def test_built_in_sources_are_labelled(tmp_path: Path) -> None:
    config = load_flow_config(tmp_path)
    assert config.shared_files["implementation_log"].source.startswith("built-in:flow/base.yaml:")


def test_a_folder_named_like_a_layer_is_an_error(tmp_path: Path) -> None:
    (tmp_path / ".flow" / "base.yaml").mkdir(parents=True)
    assert load_error(tmp_path) == ".flow/base.yaml: is a directory, not a file"


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        (
            "../shared/flow.yml",
            "is a dangling symlink (to ../shared/flow.yml, which does not exist)",
        ),
        ("base.yaml", "is a symlink loop"),
    ],
)
def test_a_dangling_or_looping_layer_link_is_an_error(
    tmp_path: Path, target: str, reason: str
) -> None:
    """Not silently skipped: the shipped defaults would stand in for the project's layer."""
    (tmp_path / ".flow").mkdir()
    (tmp_path / ".flow" / "base.yaml").symlink_to(target)
    assert load_error(tmp_path) == f".flow/base.yaml: {reason}"
    assert [str(p) for p in config_problems(tmp_path)] == [f".flow/base.yaml: {reason}"]


def test_a_layer_a_symlink_leads_outside_the_project_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(tmp_path, "shared.yaml", MINIMAL)
    (root / ".flow" / "x").mkdir(parents=True)
    (root / ".flow" / "x" / "base.yaml").symlink_to(tmp_path / "shared.yaml")
    expected = (
        f".flow/x/base.yaml: leads outside the project root (to {tmp_path.resolve()}"
        "/shared.yaml); the file must be inside the project root"
    )
    with pytest.raises(ConfigError) as caught:
        load_flow_config(root, "x")
    assert str(caught.value) == expected
    assert [str(p) for p in config_problems(root, "x")] == [expected]
    write(root, "shared/flow.yaml", MINIMAL)  # a link that stays inside is followed
    (root / ".flow" / "x" / "base.yaml").unlink()
    (root / ".flow" / "x" / "base.yaml").symlink_to("../../shared/flow.yaml")
    assert load_flow_config(root, "x").sources[-1] == root / ".flow" / "x" / "base.yaml"


def test_chain_work_tree_keys(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".flow/base.yaml",
        MINIMAL
        + "chain:\n  setup: uv sync && echo done\n  copy_ignored: [.env, 'config/*.local', .env]\n"
        + "  gc: {older_than: 36h, max_size: 1.5GB}\n",
    )
    write(tmp_path, ".flow/x/base.yaml", "chain:\n  setup: [npm, ci]\n  gc: {older_than: null}\n")
    chain = load_flow_config(tmp_path).chain
    assert chain.setup == "uv sync && echo done"  # a string: run through the shell
    assert chain.copy_ignored == (".env", "config/*.local")
    assert (chain.gc.older_than, chain.gc.max_size) == (36 * 3600, 1_500_000_000)
    layered = load_flow_config(tmp_path, "x").chain
    assert layered.setup == ("npm", "ci")  # replaced whole, never concatenated
    assert (layered.gc.older_than, layered.gc.max_size) == (None, 1_500_000_000)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  gc: {older_than: soon}\n", ".flow/base.yaml:4: chain.gc.older_than: expected a whole"),
        ("  gc: {max_size: lots}\n", ".flow/base.yaml:4: chain.gc.max_size: expected a number"),
        ("  copy_ignored: [../x]\n", ".flow/base.yaml:4: chain.copy_ignored[0]: '../x': must"),
        ("  copy_ignored: [/etc/x]\n", ".flow/base.yaml:4: chain.copy_ignored[0]: '/etc/x': give"),
        ("  setup: []\n", ".flow/base.yaml:4: chain.setup: expected a non-empty list"),
        (  # a float overflow was exit 70 in plan lint and run
            "  gc: {max_size: 1" + "0" * 400 + "GB}\n",
            ".flow/base.yaml:4: chain.gc.max_size: expected a number with B, KB, MB, GB, TB (or "
            "KiB, MiB, GiB, TiB), at most 1000TB",
        ),
        (
            "  gc: {older_than: 1" + "0" * 400 + "d}\n",
            ".flow/base.yaml:4: chain.gc.older_than: expected a whole number with s, m, h, d or "
            "w, at most 3650d",
        ),
    ],
)
def test_chain_work_tree_keys_errors_name_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL + "chain:\n" + text)
    assert load_error(tmp_path).startswith(message)


# ---------------------------------------------------------------------------------- numbers

_HUGE = "1" + "0" * 400  # a whole number too large for a float
_NUMBER_KEYS = [
    ("defaults:\n  stuck_timeout_secs: {}\n", "defaults.stuck_timeout_secs"),
    ("defaults:\n  max_wait_secs: {}\n", "defaults.max_wait_secs"),
    ("defaults:\n  stuck_retry_grace_secs: {}\n", "defaults.stuck_retry_grace_secs"),
    ("defaults:\n  rate_limit_wait_secs: {}\n", "defaults.rate_limit_wait_secs"),
    ("chain:\n  max_iterations: {}\n", "chain.max_iterations"),
    ("chain:\n  jobs: {}\n", "chain.jobs"),
    ("agents:\n  b:\n    max_parallel: {}\n", "agents.b.max_parallel"),
    ("budget:\n  plan: {{tokens: {}}}\n", "budget.plan.tokens"),
    ("budget:\n  review: {{usd: {}}}\n", "budget.review.usd"),
    ("prices:\n  m1:\n    input: {}\n", "prices.m1.input"),
    ("prices:\n  m1:\n    cached: {}\n", "prices.m1.cached"),
]


@pytest.mark.parametrize(("text", "key"), _NUMBER_KEYS)
@pytest.mark.parametrize("value", [_HUGE, f"-{_HUGE}", "1.0e+400", ".inf", "-.inf", ".nan"])
def test_an_absurd_number_is_one_line_naming_the_file_line_and_key(
    tmp_path: Path, text: str, key: str, value: str
) -> None:
    """A number too large for a float was exit 70 (``math.isfinite`` of a 400-digit int; a
    ``defaults:`` limit passed and ``run`` crashed converting it): every key that takes a
    number has an upper bound and names the value shortened."""
    write(tmp_path, ".flow/base.yaml", MINIMAL + text.format(value))
    error = load_error(tmp_path)
    line = len(MINIMAL.splitlines()) + text.count("\n")
    assert error.startswith(f".flow/base.yaml:{line}: {key}: "), error
    assert "\n" not in error and len(error) < 160, error


def test_an_absurd_number_stops_run_and_the_hook_before_they_start(
    repo: Path, cli_run: Cli
) -> None:
    """``run`` created the step branch and a failed run record, then exit 70; ``plan lint``
    passed; the pre-commit hook (``git agent-review``) was exit 70 for a budget it does not
    even use."""
    configure(repo)
    base = repo / ".flow" / "base.yaml"
    text = base.read_text()
    base.write_text(text.replace("max_wait_secs: 30", f"max_wait_secs: {_HUGE}"))
    for args in ((*RUN_ARGS, "--step", "1"), ("plan", "lint", "specs/feature.md")):
        result = cli_run.main(*args, cwd=repo)
        assert result.returncode == ExitCode.USAGE, result
        said = result.stdout + result.stderr
        assert ".flow/base.yaml:5: defaults.max_wait_secs: must be at most" in said, result
    assert git(repo, "branch", "--list", "agents/*") == ""
    assert not (repo / "flows").exists()
    base.write_text(text + f"budget:\n  plan: {{usd: {_HUGE}}}\n")
    (repo / "README.md").write_text("changed\n")
    git(repo, "add", "README.md")
    hook = cli_run.review("--staged", "--no-note", cwd=repo)
    assert hook.returncode == ExitCode.USAGE, hook
    line = len(text.splitlines()) + 2
    assert f".flow/base.yaml:{line}: budget.plan.usd: must be at most" in hook.stderr


@pytest.mark.parametrize(
    ("text", "key", "maximum"),
    [
        ("defaults:\n  max_wait_secs: {}\n", "defaults.max_wait_secs", 365 * 86400),
        ("chain:\n  jobs: {}\n", "chain.jobs", 10**15),
        ("budget:\n  plan: {{tokens: {}}}\n", "budget.plan.tokens", 10**15),
        ("budget:\n  plan: {{usd: {}}}\n", "budget.plan.usd", 10**9),
    ],
)
def test_a_number_may_be_its_keys_maximum_and_no_more(
    tmp_path: Path, text: str, key: str, maximum: int
) -> None:
    write(tmp_path, ".flow/base.yaml", MINIMAL + text.format(maximum))
    load_flow_config(tmp_path)
    write(tmp_path, ".flow/base.yaml", MINIMAL + text.format(maximum + 1))
    line = len(MINIMAL.splitlines()) + text.count("\n")
    expected = f".flow/base.yaml:{line}: {key}: must be at most {maximum}, got {maximum + 1}"
    assert load_error(tmp_path) == expected
