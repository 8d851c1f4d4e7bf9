"""The Reply Format section of the system prompt, per CLI and role, turned off by config."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gitflow_agents.base.errors import ConfigError
from gitflow_agents.config import flow_config_schema, load_flow_config
from gitflow_agents.findings.reply import (
    BUILDER_STYLE,
    CLI_CUSTOMIZATIONS,
    GENERIC_CUSTOMIZATION,
    RESPONSE_PROTOCOL,
    ReplyStatus,
    parse_reply,
    reply_instructions,
    role_style,
)
from gitflow_agents.prompt import PromptRequest, assemble_prompt

SEED_PROTOCOL_LINES = (
    "IMPORTANT: Structure your response using these XML tags for clear communication:",
    "Provide a 1-2 sentence summary of what you accomplished or attempted.",
    "List any new files you created (full paths, one per line):\n/path/to/new_file.py",
    "- Do you want me to add tests for Y?",
    "<STATUS>\nOne of: completed | needs_input | failed\n</STATUS>",
)


def project(tmp_path: Path, agents: str) -> Path:
    flow = tmp_path / ".flow"
    flow.mkdir(parents=True)
    (flow / "base.yaml").write_text(
        'completion_workflow:\n  template: "Rename {report_file} to {success_file}."\n'
        "agents:\n" + textwrap.indent(textwrap.dedent(agents), "  "),
        encoding="utf-8",
    )
    return tmp_path


def prompt_text(root: Path, agent: str) -> str:
    config = load_flow_config(root)
    return assemble_prompt(PromptRequest(root=root, config=config, agent=agent, task="Do it.")).text


def test_seed_wording_per_cli() -> None:
    # The three customisations seed 004 spells out, verbatim.
    assert reply_instructions("claude", "builder").startswith(
        "You are Claude Code working in an orchestrated environment.\n\n"
        "Use Write, Edit, Read, and Bash tools as needed.\n\n"
    )
    assert reply_instructions("auggie", "builder").startswith(
        "You are Auggie working in headless --print mode within an orchestration system.\n\n"
        "You can create and modify files using your built-in capabilities.\n\n"
    )
    assert reply_instructions("gemini", "builder").startswith(
        "You are Gemini CLI working in --prompt mode within an orchestration system.\n\n"
        "Use your available tools to complete the task effectively.\n\n"
    )
    # Every other adapter has its own wording; unknown ones (and .agents-flow agents) the generic.
    for adapter in ("codex", "opencode", "aider"):
        assert CLI_CUSTOMIZATIONS[adapter].prefix in reply_instructions(adapter, "builder")
    assert reply_instructions("command", "builder").startswith(GENERIC_CUSTOMIZATION.prefix)
    assert reply_instructions(None, "builder").startswith(GENERIC_CUSTOMIZATION.prefix)
    text = reply_instructions("claude", "builder")
    assert RESPONSE_PROTOCOL.strip() in text
    for line in SEED_PROTOCOL_LINES:
        assert line in text


@pytest.mark.parametrize(
    ("agent_type", "name", "expect"),
    [
        ("reviewer", "reviewer", "You review; you do not change code."),
        ("code-review", "x", "You review; you do not change code."),
        ("planner", "planner", "You plan."),
        ("researcher", "scout", "You research."),
        ("builder", "builder", BUILDER_STYLE),
        ("fixer", "fixer", BUILDER_STYLE),
        ("custom", "web-reviewer", "You review; you do not change code."),  # type says nothing
        ("preview-builder", "x", BUILDER_STYLE),  # "review" inside a word is not the role
    ],
)
def test_role_styles(agent_type: str, name: str, expect: str) -> None:
    assert role_style(agent_type, name).startswith(expect)
    assert role_style(agent_type, name) in reply_instructions("claude", agent_type, name)


def test_reply_format_section_sits_after_output_requirements(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        """\
        reviewer:
          adapter: gemini
          system_prompt: You review.
        """,
    )
    text = prompt_text(root, "reviewer")
    order = [
        text.index(heading)
        for heading in ("## Output Requirements", "## Reply Format", "## Agent Definition")
    ]
    assert order == sorted(order)
    section = text[order[1] : order[2]]
    assert "You are Gemini CLI working in --prompt mode" in section
    assert "You review; you do not change code." in section
    assert RESPONSE_PROTOCOL.strip() in section
    segments = assemble_prompt(
        PromptRequest(root=root, config=load_flow_config(root), agent="reviewer", task="x")
    ).segments
    reply = [s for s in segments if s.scope == "reply-format"]
    assert len(reply) == 1 and reply[0].content.startswith("## Reply Format\n")


def test_structured_reply_false_leaves_the_section_out(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        """\
        quiet:
          adapter: claude
          structured_reply: false
        chatty:
          adapter: claude
        """,
    )
    config = load_flow_config(root)
    assert config.agent("quiet").structured_reply is False
    assert config.agent("chatty").structured_reply is True
    assert "## Reply Format" not in prompt_text(root, "quiet")
    assert "<SUMMARY>" not in prompt_text(root, "quiet")
    assert "## Reply Format" in prompt_text(root, "chatty")


def test_structured_reply_must_be_a_boolean(tmp_path: Path) -> None:
    root = project(tmp_path, "quiet:\n  structured_reply: 'no'\n")
    with pytest.raises(ConfigError) as info:
        load_flow_config(root)
    assert str(info.value) == (
        ".flow/base.yaml:5: agents.quiet.structured_reply: expected true or false, got a string"
    )


def test_structured_reply_in_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(flow_config_schema())
    base = {"completion_workflow": {"template": "x"}}
    assert not list(validator.iter_errors({**base, "agents": {"a": {"structured_reply": False}}}))
    assert list(validator.iter_errors({**base, "agents": {"a": {"structured_reply": "no"}}}))


def test_echoed_template_examples_are_not_taken_as_facts() -> None:
    reply = parse_reply(RESPONSE_PROTOCOL)
    assert reply.summary == ""
    assert reply.files_created == () and reply.files_modified == ()
    assert reply.actions == () and reply.questions == ()
    assert reply.status is None
    # ...but the agent's own lines next to them are kept.
    mixed = parse_reply(
        "<FILES_CREATED>\n/path/to/new_file.py\n/src/app.py\n</FILES_CREATED>\n"
        "<STATUS>needs_input</STATUS>"
    )
    assert mixed.files_created == ("/src/app.py",)
    assert mixed.status is ReplyStatus.NEEDS_INPUT


def test_console_live_line_shows_tokens_cost_and_the_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    monkeypatch.setenv("COLUMNS", "200")  # one table row per agent, unwrapped
    from gitflow_agents.runs.events import ConsoleChannel, EventHub

    out = io.StringIO()
    console = ConsoleChannel(out, is_tty=True)
    hub = EventHub([console], run_id="r")
    hub.emit("agent:start", {"agent": "painter", "pid": 7})
    hub.emit(
        "agent:failed",
        {
            "agent": "painter",
            "status": "failed",
            "reason": "renamed to report.failed.md",
            "input_tokens": 10,
            "output_tokens": 5,
            "cost_usd": 0.25,
        },
    )
    hub.emit(
        "agent:reply",
        {"agent": "painter", "status": "needs_input", "questions": ["Which colour?", "Dark?"]},
    )
    hub.close()
    text = out.getvalue()
    assert "tokens 10/5 $0.2500" in text
    assert "needs input: Which colour? (+1)" in text


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        ("<SUMMARY>Done.</SUMMARY><STATUS>completed</STATUS>", "succeeded"),
        ("<QUESTIONS>- Which file?</QUESTIONS><STATUS>needs_input</STATUS>", "failed"),
        ("<STATUS>failed</STATUS>", "failed"),
        ("All done, I think.", "succeeded"),  # no tags: the heuristics never fail a run
    ],
)
def test_completes_by_exit_agent_is_judged_by_its_reply_status(
    tmp_path: Path, reply: str, status: str
) -> None:
    import sys

    from gitflow_agents.agents.base import LaunchSpec
    from gitflow_agents.runs.events import EventHub
    from gitflow_agents.supervisor import Launch, Limits, ReportFiles, supervise

    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    spec = LaunchSpec(
        argv=(sys.executable, "-c", f"print({reply!r})"),
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        completes_by_exit=True,
    )
    outcome = supervise(
        Launch(spec),
        ReportFiles.named(agent_dir, "report.md", ".complete.md", ".failed.md"),
        Limits(stuck_timeout=20, timeout=30, kill_grace=1.0),
        hub=EventHub(),
        run_dir=tmp_path / "run",
    )
    assert outcome.status == status, outcome.reason
    if status == "failed":
        assert "its reply's <STATUS> is" in outcome.reason
