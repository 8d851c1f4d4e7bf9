"""Agent CLI adapters: the exact argv/env each builds, output parsing, and a real process per CLI."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gitflow_agents.agents import ADAPTERS, get_adapter
from gitflow_agents.agents.base import AgentOutput, Invocation
from gitflow_agents.base import proc
from gitflow_agents.base.errors import ConfigError, UsageError
from tests.helpers.adapters import SAMPLES, sample

SECRET = "GITFLOW_TEST_UNLISTED_SECRET"
# A variable with the product's prefix that gitflow-agents does not set for agents: no prefix
# passes wholesale (issue 12), so it must not reach any agent.
PRODUCT_SECRET = "GITFLOW_AGENTS_SECRET"
TASK = 'Follow your system prompt; your report is "report.md".'
CLI_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "OPENAI_API_KEY": "sk-openai-test",
    "GEMINI_API_KEY": "gemini-test",
    "AUGMENT_SESSION_AUTH": '{"accessToken":"t"}',
    "AIDER_DARK_MODE": "true",
    "OPENCODE_FAKE": "1",
}


def parent_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "GIT_AUTHOR_NAME": "Test Author",
        "PRE_COMMIT_HOME": "/cache/pre-commit",  # the user's hooks, run by an agent's commit
        SECRET: "must-not-leak",
        "AWS_SECRET_ACCESS_KEY": "must-not-leak",
        "GIT_DIR": "/somewhere/else/.git",  # inherited from a hook: must never reach an agent
        "GITFLOW_AGENTS_RUN_ID": "run-1",
        PRODUCT_SECRET: "must-not-leak",
        "GITFLOW_AGENTS_GITHUB_RETRIES": "9",
        **CLI_KEYS,
    }


def make_invocation(
    tmp_path: Path, agent_id: str = "step-01-builder", **changes: Any
) -> Invocation:
    workdir = tmp_path / "repo"
    agent_dir = workdir / "flows" / "demo" / "agents" / agent_id
    agent_dir.mkdir(parents=True, exist_ok=True)
    prompt = agent_dir / "system_prompt.md"
    prompt.write_text("# Agent\nYou are the builder.\n")
    invocation = Invocation(
        agent_id=agent_id,
        agent_dir=agent_dir,
        workdir=workdir,
        system_prompt_path=prompt,
        system_prompt=prompt.read_text(),
        task=TASK,
        model="model-x",
        options={},
        config_dir=tmp_path / "config" / agent_id,
        env=parent_env(tmp_path),
    )
    return replace(invocation, **changes)


def assert_scrubbed(env: dict[str, str] | Any, *allowed_keys: str) -> None:
    assert SECRET not in env
    assert PRODUCT_SECRET not in env and "GITFLOW_AGENTS_GITHUB_RETRIES" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert "GIT_DIR" not in env
    assert env["PATH"] == os.environ["PATH"]
    assert env["LANG"] == "C.UTF-8"
    assert env["GITFLOW_AGENTS_RUN_ID"] == "run-1"
    assert env["PRE_COMMIT_HOME"] == "/cache/pre-commit"
    for key in CLI_KEYS:
        assert (key in env) == (key in allowed_keys), key


# ---------------------------------------------------------------------------------------------
# Registry


def test_registry_has_every_cli() -> None:
    assert set(ADAPTERS) >= {"claude", "codex", "gemini", "aider", "auggie", "opencode", "command"}
    for name, adapter in ADAPTERS.items():
        assert adapter.cli.name == name
        assert get_adapter(name) is adapter


def test_unknown_adapter_lists_known_ones() -> None:
    with pytest.raises(UsageError) as info:
        get_adapter("clade")
    assert "'clade'" in str(info.value)
    assert "claude, codex" in str(info.value)


def test_config_and_schema_read_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registering a CLI in ADAPTERS is all config validation and the editor schema need."""
    from gitflow_agents.config import flow_config_schema, load_flow_config

    layer = tmp_path / ".flow" / "base.yaml"
    layer.parent.mkdir()
    layer.write_text(
        "completion_workflow:\n  template: 'Rename {report_file}.'\n"
        "agents:\n  builder:\n    adapter: mycli\n"
    )

    def schema_enum() -> list[str]:
        agent = flow_config_schema()["properties"]["agents"]["additionalProperties"]
        return list(agent["properties"]["adapter"]["enum"])

    with pytest.raises(ConfigError, match=r"expected one of claude, codex, .*, got 'mycli'"):
        load_flow_config(tmp_path)
    assert "mycli" not in schema_enum()

    monkeypatch.setitem(ADAPTERS, "mycli", ADAPTERS["patch"])
    assert load_flow_config(tmp_path).agent("builder").adapter == "mycli"
    assert schema_enum() == [*ADAPTERS, "builtin"]
    assert schema_enum()[-2:] == ["mycli", "builtin"]


def _literal_name_lists(source: str, names: set[str]) -> list[int]:
    """Lines of list/tuple/set/dict literals in ``source`` naming 3 or more of ``names``."""
    import ast
    import re

    if sum(bool(re.search(f"[\"']{name}[\"']", source)) for name in names) < 3:
        return []  # fewer than three quoted names: no such literal (and no parse needed)
    found = []
    for node in ast.walk(ast.parse(source)):
        items: list[ast.expr | None] = []
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = list(node.keys)
        strings = {i.value for i in items if isinstance(i, ast.Constant)} & names
        if len(strings) >= 3:
            found.append(node.lineno)
    return found


def test_the_registry_is_the_only_list_of_adapter_names() -> None:
    """Nothing else lists the adapters. The tables keyed by them are optional per-CLI data:
    the reply wording, where a CLI without an entry gets the generic text, and the usage
    meters of the CLIs that stream their usage (a CLI without one is not metered mid-run)."""
    from gitflow_agents.agents import adapter_names
    from gitflow_agents.agents.meter import METERS
    from gitflow_agents.findings.reply import CLI_CUSTOMIZATIONS
    from tests.conftest import ROOT

    names = set(adapter_names())
    package = ROOT / "gitflow_agents"
    registry = package / "agents" / "__init__.py"
    assert _literal_name_lists(registry.read_text(), names)  # the detector finds ADAPTERS
    lists = {
        path.relative_to(ROOT).as_posix(): lines
        for path in package.rglob("*.py")
        if path != registry and (lines := _literal_name_lists(path.read_text(), names))
    }
    assert set(lists) <= {"gitflow_agents/findings/reply.py", "gitflow_agents/agents/meter.py"}
    assert set(CLI_CUSTOMIZATIONS) <= set(ADAPTERS)
    assert set(METERS) <= set(ADAPTERS)
    for path in package.rglob("*.json"):  # no hand-written schema with its own enum
        text = path.read_text()
        assert sum(f'"{name}"' in text for name in names) < 3, path


# ---------------------------------------------------------------------------------------------
# launch(): exact argv and env per CLI


def test_claude_launch(tmp_path: Path) -> None:
    inv = make_invocation(
        tmp_path, options={"max_turns": 30, "allowed_tools": ["Bash(git *)", "Edit"]}
    )
    spec = get_adapter("claude").launch(inv)
    assert spec.argv == (
        "claude",
        "-p",
        TASK,
        "--output-format",
        "json",
        "--append-system-prompt-file",
        str(inv.system_prompt_path),
        "--permission-mode",
        "acceptEdits",
        "--max-turns",
        "30",
        "--model",
        "model-x",
        "--allowedTools",
        "Bash(git *)",
        "Edit",
    )
    assert spec.cwd == inv.workdir
    assert not spec.completes_by_exit
    assert spec.env["CLAUDE_CONFIG_DIR"] == str(inv.config_dir)
    assert spec.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert_scrubbed(spec.env, "ANTHROPIC_API_KEY")


@pytest.mark.parametrize(
    ("option", "left", "expected"),
    [
        (None, None, None),
        (0.5, None, "0.5"),
        (None, 0.2, "0.2"),
        (0.5, 0.2, "0.2"),
        (0.1, 0.2, "0.1"),
    ],
)
def test_claude_gets_the_budget_left_as_its_own_flag(
    tmp_path: Path, option: float | None, left: float | None, expected: str | None
) -> None:
    """``max_budget_usd`` keeps working; a budget's USD left caps it further, never raises it."""
    options = {"max_budget_usd": option} if option is not None else {}
    inv = make_invocation(tmp_path, options=options, budget_usd=left)
    argv = get_adapter("claude").launch(inv).argv
    given = argv[argv.index("--max-budget-usd") + 1] if "--max-budget-usd" in argv else None
    assert given == expected


def test_claude_streams_its_usage_when_a_budget_watches_it(tmp_path: Path) -> None:
    argv = get_adapter("claude").launch(make_invocation(tmp_path, stream_usage=True)).argv
    assert argv[3:7] == (
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
    )
    stream = "\n".join(
        [
            '{"type":"system","subtype":"init","session_id":"s1"}',
            '{"type":"assistant","message":{"id":"m","usage":{"input_tokens":3}}}',
            '{"type":"result","is_error":false,"result":"done","session_id":"s1",'
            '"usage":{"input_tokens":7,"output_tokens":2},"total_cost_usd":0.01}',
        ]
    )
    out = get_adapter("claude").parse_output(stream, "")
    assert (out.session_id, out.input_tokens, out.cost_usd, out.reply) == ("s1", 7, 0.01, "done")


def test_claude_takes_messages_on_stdin_when_its_run_has_a_control_channel(
    tmp_path: Path,
) -> None:
    claude = get_adapter("claude")
    assert claude.launch(make_invocation(tmp_path)).live_input is None  # stdin closed
    spec = claude.launch(make_invocation(tmp_path, live_input=True))
    assert spec.argv[1:8] == (
        "-p",
        "--input-format",
        "stream-json",
        "--replay-user-messages",
        "--output-format",
        "stream-json",
        "--verbose",
    )
    assert TASK not in spec.argv  # the task is the first message on stdin
    live = spec.live_input
    assert live is not None and live.first == TASK
    line = live.encode('say "hi"\nthen go')
    assert line.endswith(b"\n") and line.count(b"\n") == 1  # one stream-json line
    assert json.loads(line) == {
        "type": "user",
        "message": {"role": "user", "content": 'say "hi"\nthen go'},
    }
    assert live.turn_end(b'{"type":"result","subtype":"success","result":"x"}')
    assert not live.turn_end(b'{"type":"assistant","message":{"content":"result"}}')
    assert not live.turn_end(b"not json")
    assert live.taken(b'{"type":"user","message":{"content":"x"},"isReplay":true}')
    assert not live.taken(b'{"type":"user","message":{"content":[{"type":"tool_result"}]}}')
    budget = claude.launch(make_invocation(tmp_path, live_input=True, stream_usage=True))
    assert "--include-partial-messages" in budget.argv  # the budget's meter still streams


def test_claude_replace_mode_resume_and_env_override(tmp_path: Path) -> None:
    inv = make_invocation(
        tmp_path,
        model=None,
        resume_session_id="sess-1",
        options={
            "system_prompt_mode": "replace",
            "permission_mode": "bypassPermissions",
            "env": {"IS_SANDBOX": 1, "CLAUDE_CONFIG_DIR": "/shared/claude"},
            "extra_args": "--verbose --fallback-model haiku",
        },
    )
    spec = get_adapter("claude").launch(inv)
    assert "--system-prompt-file" in spec.argv
    assert "--append-system-prompt-file" not in spec.argv
    assert "--model" not in spec.argv
    assert spec.argv[spec.argv.index("--permission-mode") + 1] == "bypassPermissions"
    assert spec.argv[spec.argv.index("--resume") + 1] == "sess-1"
    assert spec.argv[-3:] == ("--verbose", "--fallback-model", "haiku")
    assert spec.env["IS_SANDBOX"] == "1"
    assert spec.env["CLAUDE_CONFIG_DIR"] == "/shared/claude"  # the user's override wins


def test_codex_launch(tmp_path: Path) -> None:
    inv = make_invocation(tmp_path)
    spec = get_adapter("codex").launch(inv)
    assert spec.argv == (
        "codex",
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        "-m",
        "model-x",
        TASK,
    )
    assert spec.env["CODEX_HOME"] == str(inv.config_dir)
    assert_scrubbed(spec.env, "OPENAI_API_KEY")
    config = (inv.config_dir / "config.toml").read_text()
    tomllib = pytest.importorskip("tomllib")
    parsed = tomllib.loads(config)
    assert parsed["developer_instructions"] == inv.system_prompt
    assert parsed["check_for_update_on_startup"] is False


def test_codex_provider_resume_and_worktree(tmp_path: Path) -> None:
    worktree = tmp_path / "worktree"
    inv = make_invocation(
        tmp_path,
        workdir=worktree,
        resume_session_id="0199a213-81c0",
        system_prompt='quotes " and \\ and\ttabs\x01 — ünïcode',
        options={
            "provider": {"base_url": "http://127.0.0.1:9/v1", "env_key": "MOCK_API_KEY"},
            "config": {"model_reasoning_effort": "low", "stream_max_retries": 0},
            "sandbox": "workspace-write",
        },
        env={**parent_env(tmp_path), "MOCK_API_KEY": "mock"},
    )
    spec = get_adapter("codex").launch(inv)
    argv = list(spec.argv)
    # The report lives outside the worktree: it must stay writable.
    assert argv[argv.index("--add-dir") + 1] == str(inv.agent_dir)
    pairs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"]
    assert pairs == [
        'model_provider="gitflow"',
        'model_providers.gitflow.name="gitflow"',
        'model_providers.gitflow.wire_api="responses"',
        'model_providers.gitflow.base_url="http://127.0.0.1:9/v1"',
        'model_providers.gitflow.env_key="MOCK_API_KEY"',
        'model_reasoning_effort="low"',
        "stream_max_retries=0",
    ]
    assert argv[-3:] == ["resume", "0199a213-81c0", TASK]
    assert spec.env["MOCK_API_KEY"] == "mock"  # the provider's env_key is allow-listed
    assert_scrubbed(spec.env)  # and OpenAI's key is not: the custom provider does not need it
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((inv.config_dir / "config.toml").read_text())
    assert config["developer_instructions"] == inv.system_prompt


def test_codex_provider_needs_base_url(tmp_path: Path) -> None:
    inv = make_invocation(tmp_path, options={"provider": {"env_key": "X"}})
    with pytest.raises(ConfigError, match=r"options\.provider\.base_url"):
        get_adapter("codex").launch(inv)


def test_gemini_launch(tmp_path: Path) -> None:
    inv = make_invocation(tmp_path, options={"max_turns": 40})
    spec = get_adapter("gemini").launch(inv)
    assert spec.argv == (
        "gemini",
        "-p",
        TASK,
        "-o",
        "json",
        "--approval-mode",
        "yolo",
        "--skip-trust",
        "-m",
        "model-x",
    )
    assert spec.env["GEMINI_CLI_HOME"] == str(inv.config_dir)
    assert spec.env["GEMINI_SYSTEM_MD"] == str(inv.system_prompt_path)
    assert_scrubbed(spec.env, "GEMINI_API_KEY")
    settings = json.loads((inv.config_dir / ".gemini" / "settings.json").read_text())
    assert settings == {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"maxSessionTurns": 40},
    }


def test_gemini_context_mode_and_settings_merge(tmp_path: Path) -> None:
    inv = make_invocation(
        tmp_path,
        options={
            "system_prompt_mode": "context",
            "approval_mode": "auto_edit",
            "skip_trust": False,
            "settings": {"security": {"auth": {"selectedType": "vertex-ai"}}, "ui": {"x": 1}},
        },
    )
    spec = get_adapter("gemini").launch(inv)
    assert "GEMINI_SYSTEM_MD" not in spec.env
    assert (inv.config_dir / ".gemini" / "GEMINI.md").read_text() == inv.system_prompt
    assert "--skip-trust" not in spec.argv
    assert spec.argv[spec.argv.index("--approval-mode") + 1] == "auto_edit"
    settings = json.loads((inv.config_dir / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "vertex-ai"
    assert settings["ui"] == {"x": 1}


def test_aider_launch(tmp_path: Path) -> None:
    inv = make_invocation(tmp_path, options={"edit_format": "diff", "files": ["src/a.py"]})
    spec = get_adapter("aider").launch(inv)
    assert spec.argv == (
        "aider",
        "--message",
        TASK,
        "--read",
        str(inv.system_prompt_path),
        "--yes-always",
        "--no-gitignore",
        "--no-check-update",
        "--analytics-disable",
        "--no-show-release-notes",
        "--no-show-model-warnings",
        "--no-pretty",
        "--no-fancy-input",
        "--no-auto-commits",
        "--chat-history-file",
        str(inv.config_dir / "chat.history.md"),
        "--input-history-file",
        str(inv.config_dir / "input.history"),
        "--map-tokens",
        "0",
        "--model",
        "model-x",
        "--edit-format",
        "diff",
        "src/a.py",
    )
    assert spec.completes_by_exit  # aider cannot rename its report
    assert spec.env["HOME"] == str(inv.config_dir)
    assert spec.env["GIT_CONFIG_GLOBAL"] == str(tmp_path / "home" / ".gitconfig")
    # "model-x" names no provider aider knows: no provider's key (issue 12: only the configured
    # provider's variables; AIDER_* no longer passes as a prefix).
    assert_scrubbed(spec.env)


def test_aider_repo_map_is_opt_in(tmp_path: Path) -> None:
    # Aider 0.86 keeps the repo map's cache in <repo>/.aider.tags.cache.v4/ (found end to end).
    inv = make_invocation(tmp_path, options={"repo_map": True})
    assert "--map-tokens" not in get_adapter("aider").launch(inv).argv


def test_aider_cannot_resume(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="aider adapter cannot resume"):
        get_adapter("aider").launch(make_invocation(tmp_path, resume_session_id="x"))


def test_auggie_launch(tmp_path: Path) -> None:
    inv = make_invocation(
        tmp_path, options={"max_turns": 5, "permissions": ["launch-process:deny"]}
    )
    spec = get_adapter("auggie").launch(inv)
    assert spec.argv == (
        "auggie",
        "--print",
        TASK,
        "--output-format",
        "json",
        "--rules",
        str(inv.system_prompt_path),
        "--workspace-root",
        str(inv.workdir),
        "--augment-cache-dir",
        str(inv.config_dir),
        "--max-turns",
        "5",
        "--permission",
        "launch-process:deny",
        "--model",
        "model-x",
    )
    assert_scrubbed(spec.env, "AUGMENT_SESSION_AUTH")


def test_opencode_launch(tmp_path: Path) -> None:
    inv = make_invocation(
        tmp_path,
        model="mock/mock-model",
        options={"config": {"permission": {"bash": "deny"}, "provider": {"mock": {}}}},
    )
    spec = get_adapter("opencode").launch(inv)
    assert spec.argv == ("opencode", "run", "--format", "json", "-m", "mock/mock-model", TASK)
    config = json.loads(spec.env["OPENCODE_CONFIG_CONTENT"])
    assert config["instructions"] == [str(inv.system_prompt_path)]
    assert config["permission"] == {"edit": "allow", "bash": "deny"}  # the user's merge wins
    assert config["provider"] == {"mock": {}}
    for xdg in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        assert spec.env[xdg].startswith(str(inv.config_dir))
    # "mock" is a custom provider: no listed provider's key, no OPENCODE_* prefix (issue 12).
    assert_scrubbed(spec.env)


# ---------------------------------------------------------------------------------------------
# Environment: exactly the configured provider's variables, named ones only (issue 12)

PROVIDER_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")


def provider_keys(env: dict[str, str] | Any) -> set[str]:
    return {key for key in PROVIDER_KEYS if key in env}


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("anthropic/claude-sonnet-4-5", {"ANTHROPIC_API_KEY"}),
        ("sonnet", {"ANTHROPIC_API_KEY"}),
        ("claude-3-5-haiku-20241022", {"ANTHROPIC_API_KEY"}),
        ("gpt-4o", {"OPENAI_API_KEY"}),
        ("openai/my-local-model", {"OPENAI_API_KEY"}),
        ("gemini/gemini-2.5-pro", {"GEMINI_API_KEY"}),
        ("flash", {"GEMINI_API_KEY"}),
        ("openrouter/anthropic/claude-sonnet-4", set()),  # its key is not in the parent env
        ("model-x", set()),  # no provider aider knows: allow_env names its variables
        (None, {"ANTHROPIC_API_KEY"}),  # aider's own default: the first key set, in its order
    ],
)
def test_aider_gets_only_its_models_provider(
    tmp_path: Path, model: str | None, expected: set[str]
) -> None:
    spec = get_adapter("aider").launch(make_invocation(tmp_path, model=model))
    assert provider_keys(spec.env) == expected
    assert "AIDER_DARK_MODE" not in spec.env  # no AIDER_* prefix
    assert_scrubbed(spec.env, *expected)


def test_aider_without_a_model_follows_aiders_own_key_order(tmp_path: Path) -> None:
    env = {k: v for k, v in parent_env(tmp_path).items() if k != "ANTHROPIC_API_KEY"}
    env["OPENROUTER_API_KEY"] = "sk-or"
    spec = get_adapter("aider").launch(make_invocation(tmp_path, model=None, env=env))
    assert spec.env["OPENROUTER_API_KEY"] == "sk-or"  # before OpenAI and Gemini in aider's order
    assert provider_keys(spec.env) == set()
    openai = {**env, "OPENAI_API_BASE": "http://127.0.0.1:9/v1"}
    del openai["OPENROUTER_API_KEY"]
    spec = get_adapter("aider").launch(make_invocation(tmp_path, model="4o", env=openai))
    assert spec.env["OPENAI_API_BASE"] == "http://127.0.0.1:9/v1"  # the provider's endpoint too
    assert provider_keys(spec.env) == {"OPENAI_API_KEY"}


@pytest.mark.parametrize(
    ("model", "config", "expected"),
    [
        ("anthropic/claude-sonnet-4-5", {}, {"ANTHROPIC_API_KEY"}),
        ("openai/gpt-5", {}, {"OPENAI_API_KEY"}),
        ("google/gemini-2.5-pro", {}, {"GEMINI_API_KEY"}),
        (None, {"model": "openai/gpt-5"}, {"OPENAI_API_KEY"}),  # the model set in its config
        (None, {}, {"ANTHROPIC_API_KEY"}),  # no model: the first provider whose key is set
    ],
)
def test_opencode_gets_only_its_models_provider(
    tmp_path: Path, model: str | None, config: dict[str, Any], expected: set[str]
) -> None:
    inv = make_invocation(tmp_path, model=model, options={"config": config})
    spec = get_adapter("opencode").launch(inv)
    assert provider_keys(spec.env) == expected
    assert "OPENCODE_FAKE" not in spec.env  # no OPENCODE_* prefix
    assert_scrubbed(spec.env, *expected)


def test_opencode_passes_the_variables_its_custom_provider_names(tmp_path: Path) -> None:
    provider = {"mock": {"options": {"baseURL": "http://127.0.0.1:9", "apiKey": "{env:MOCK_KEY}"}}}
    inv = make_invocation(
        tmp_path,
        model="mock/mock-model",
        options={"config": {"provider": provider}},
        env={**parent_env(tmp_path), "MOCK_KEY": "mock", "OTHER_KEY": "no"},
    )
    spec = get_adapter("opencode").launch(inv)
    assert spec.env["MOCK_KEY"] == "mock"
    assert "OTHER_KEY" not in spec.env
    assert_scrubbed(spec.env)


def test_codex_with_another_built_in_provider_gets_no_openai_key(tmp_path: Path) -> None:
    inv = make_invocation(tmp_path, options={"config": {"model_provider": "oss"}})
    assert_scrubbed(get_adapter("codex").launch(inv).env)


def test_allow_env_still_adds_any_name(tmp_path: Path) -> None:
    inv = make_invocation(
        tmp_path, model="anthropic/claude-sonnet-4-5", options={"allow_env": ["OPENAI_API_KEY"]}
    )
    spec = get_adapter("aider").launch(inv)
    assert provider_keys(spec.env) == {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}


def test_only_the_products_own_variables_pass(tmp_path: Path) -> None:
    from gitflow_agents import runs, supervisor
    from gitflow_agents.agents.base import PRODUCT_ENV_NAMES

    assert set(PRODUCT_ENV_NAMES) == {
        runs.RUN_ID_ENV,
        runs.RUN_DIR_ENV,
        runs.AGENT_DIR_ENV,
        supervisor.TREE_ENV,
    }
    env = {
        **parent_env(tmp_path),
        **{name: f"value of {name}" for name in PRODUCT_ENV_NAMES},
        "LC_MESSAGES": "C",
        "LC_SOMETHING_ELSE": "x",
    }
    for name in sorted(ADAPTERS):
        inv = make_invocation(tmp_path, env=env, command=("my-agent", "{task}"))
        spec = get_adapter(name).launch(inv)
        passed = {key for key in spec.env if key.startswith("GITFLOW_AGENTS_")}
        assert passed == set(PRODUCT_ENV_NAMES), name
        assert spec.env["LC_MESSAGES"] == "C" and "LC_SOMETHING_ELSE" not in spec.env, name


def test_security_page_lists_every_variable_an_agent_can_get() -> None:
    from gitflow_agents.agents import auggie, claude, codex, gemini, opencode, providers
    from gitflow_agents.agents.base import BASE_ENV_NAMES
    from tests.conftest import ROOT

    page = (ROOT / "docs" / "security.md").read_text()
    names = set(BASE_ENV_NAMES) | set(claude.ENV_NAMES) | set(codex.OPENAI_ENV_NAMES)
    names |= set(gemini.ENV_NAMES) | set(auggie.ENV_NAMES) | set(opencode.ENV_NAMES)
    for table in (providers.AIDER_PROVIDERS, providers.OPENCODE_PROVIDERS):
        names |= {name for provider in table.values() for name in provider.names}
    missing = sorted(name for name in names if f"`{name}`" not in page)
    assert not missing, missing


def test_command_substitutes_per_argument_without_a_shell(tmp_path: Path) -> None:
    inv = make_invocation(
        tmp_path,
        task="fix it; rm -rf / $(whoami) 'quoted'",
        command=(
            "my-agent",
            "--prompt={system_prompt_file}",
            "{task}",
            "--m",
            "{model}",
            "{other}",
        ),
    )
    spec = get_adapter("command").launch(inv)
    assert spec.argv == (
        "my-agent",
        f"--prompt={inv.system_prompt_path}",
        "fix it; rm -rf / $(whoami) 'quoted'",
        "--m",
        "model-x",
        "{other}",
    )
    assert_scrubbed(spec.env)
    assert not spec.completes_by_exit


def test_command_from_string_option(tmp_path: Path) -> None:
    inv = make_invocation(
        tmp_path,
        options={
            "command": "run-agent --dir '{agent_dir}' --cfg {config_dir}",
            "completes_by_exit": True,
            "allow_env": ["AWS_SECRET_ACCESS_KEY"],
        },
    )
    spec = get_adapter("command").launch(inv)
    assert spec.argv == ("run-agent", "--dir", str(inv.agent_dir), "--cfg", str(inv.config_dir))
    assert spec.completes_by_exit
    assert spec.env["AWS_SECRET_ACCESS_KEY"] == "must-not-leak"  # the user allowed it by name
    assert SECRET not in spec.env


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"command": None}, "needs a command"),
        ({"command": ("x", "{model}"), "model": None}, "uses {model}"),
        ({"command": None, "options": {"command": "x 'unclosed"}}, "cannot split"),
        ({"command": None, "options": {"command": [1, 2]}}, "list of strings"),
    ],
)
def test_command_errors(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        get_adapter("command").launch(make_invocation(tmp_path, **changes))
    assert "agents.step-01-builder.command" in str(info.value)


def test_each_agent_gets_its_own_config_dir(tmp_path: Path) -> None:
    variables = {
        "claude": "CLAUDE_CONFIG_DIR",
        "codex": "CODEX_HOME",
        "gemini": "GEMINI_CLI_HOME",
        "aider": "HOME",
        "opencode": "XDG_DATA_HOME",
    }
    for name, variable in variables.items():
        one = get_adapter(name).launch(make_invocation(tmp_path, "step-01-a"))
        two = get_adapter(name).launch(make_invocation(tmp_path, "step-02-b"))
        assert one.env[variable] != two.env[variable], name
        assert one.env[variable].startswith(str(tmp_path / "config" / "step-01-a"))
    auggie_one = get_adapter("auggie").launch(make_invocation(tmp_path, "step-01-a"))
    assert str(tmp_path / "config" / "step-01-a") in auggie_one.argv


def test_cli_adapters_count_only_their_tools_cpu(tmp_path: Path) -> None:
    # The CLI's own CPU is not activity (opencode burns a core waiting on a stalled stream);
    # a generic command is of unknown shape: its whole tree counts unless the user says otherwise.
    for name in ("claude", "codex", "gemini", "aider", "auggie", "opencode"):
        assert get_adapter(name).launch(make_invocation(tmp_path)).cpu_activity == "tools", name
    command = make_invocation(tmp_path, command=("my-agent", "{task}"))
    assert get_adapter("command").launch(command).cpu_activity == "tree"
    tools = replace(command, options={"cpu_activity": "tools"})
    assert get_adapter("command").launch(tools).cpu_activity == "tools"
    bad = replace(command, options={"cpu_activity": "cli"})
    with pytest.raises(ConfigError, match="expected one of tree, tools"):
        get_adapter("command").launch(bad)


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("claude", {"max_turn": 3}, "unknown option for the claude adapter; known: allow_env"),
        ("claude", {"max_turns": "ten"}, "expected an integer >= 1, got 'ten'"),
        ("claude", {"max_turns": True}, "expected an integer"),
        ("claude", {"permission_mode": "yes"}, "expected one of acceptEdits"),
        ("codex", {"sandbox": "none"}, "expected one of read-only"),
        ("gemini", {"skip_trust": "no"}, "expected true or false"),
        ("aider", {"files": "a.py b.py", "env": ["X"]}, "expected a mapping"),
        ("opencode", {"extra_args": 3}, "expected a list of strings"),
        ("auggie", {"retry_timeout": -1}, "expected a positive number"),
        # a number too large for a float was exit 70 (math.isfinite of the int), in plan lint too
        (
            "auggie",
            {"retry_timeout": 10**400},
            "must be at most 1000000000, got 10000000000000000000…",
        ),
        ("claude", {"max_budget_usd": 10**400}, "must be at most 1000000000, got 1"),
        ("claude", {"max_budget_usd": float("inf")}, "must be at most 1000000000, got inf"),
        ("claude", {"max_budget_usd": float("nan")}, "expected a positive number, got nan"),
        ("claude", {"max_turns": 10**400}, "must be at most 1000000000, got 1"),
        ("gemini", {"max_turns": 10**9 + 1}, "must be at most 1000000000, got 1000000001"),
    ],
)
def test_bad_options_are_config_errors(
    tmp_path: Path, name: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        get_adapter(name).launch(make_invocation(tmp_path, options=options))
    assert str(info.value).startswith("agents.step-01-builder.options.")


# ---------------------------------------------------------------------------------------------
# parse_output(): samples of each CLI's output


@pytest.mark.parametrize(
    ("adapter", "stdout", "stderr", "expected"),
    [
        (
            "claude",
            "claude-success.json",
            None,
            AgentOutput(
                session_id="5b1f3c0e-8d7a-4a52-9c61-2f0e4d9b7a11",
                input_tokens=18012,
                output_tokens=245,
                cost_usd=0.0123,
                cached_tokens=15000,
                model="claude-sonnet-4-5",
                is_error=False,
                error=None,
                reply="Done. <SUMMARY>Added hello.txt</SUMMARY>\n<STATUS>COMPLETE</STATUS>",
            ),
        ),
        (
            "claude",
            "claude-stream.jsonl",
            None,
            AgentOutput(
                session_id="aa11bb22-cc33-4d44-8e55-ff6677889900",
                input_tokens=100,
                output_tokens=20,
                cost_usd=0.002,
                reply="Wrote hello.txt",
            ),
        ),
        (
            "codex",
            "codex-success.jsonl",
            None,
            AgentOutput(
                session_id="0199a213-81c0-7800-8aa1-bbab2a035a53",
                input_tokens=24763,
                output_tokens=122,
                cached_tokens=24448,
                reply="Created f.txt.\n<STATUS>COMPLETE</STATUS>",
            ),
        ),
        (
            "gemini",
            "gemini-success.json",
            None,
            AgentOutput(
                session_id="3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9",
                input_tokens=8623,
                output_tokens=166 + 121,  # candidates and thoughts: both billed as output
                cached_tokens=0,
                model="gemini-2.5-flash",  # the model that did most of the run
                reply="I created hello.txt.\n<STATUS>COMPLETE</STATUS>",
            ),
        ),
        (
            "aider",
            "aider-success.txt",
            None,
            AgentOutput(
                input_tokens=2300,
                output_tokens=120,
                cost_usd=0.0071,
                reply=sample("aider-success.txt").strip(),
            ),
        ),
        (
            "auggie",
            "auggie-success.json",
            None,
            AgentOutput(
                session_id="b7c6d5e4-f3a2-4b1c-8d9e-0f1a2b3c4d5e",
                reply="Created hello.txt\n<STATUS>COMPLETE</STATUS>",
            ),
        ),
        (
            "opencode",
            "opencode-success.jsonl",
            None,
            AgentOutput(
                session_id="ses_494719016ffe85dkDMj0FPRbHK",
                input_tokens=2000,
                output_tokens=65,
                cost_usd=0.0015,
                cached_tokens=100,
                reply="Created hello.txt.\n<STATUS>COMPLETE</STATUS>",
            ),
        ),
    ],
)
def test_parse_success(
    adapter: str, stdout: str, stderr: str | None, expected: AgentOutput
) -> None:
    parsed = get_adapter(adapter).parse_output(sample(stdout), sample(stderr) if stderr else "")
    assert parsed.cost_usd == pytest.approx(expected.cost_usd)
    assert replace(parsed, cost_usd=None) == replace(expected, cost_usd=None)


@pytest.mark.parametrize(
    ("adapter", "stdout", "stderr", "error_part"),
    [
        ("claude", "claude-api-error.json", "", "API Error: 401"),
        ("claude", "claude-max-turns.json", "", "error_max_turns"),
        ("codex", "codex-turn-failed.jsonl", "", "401 Unauthorized"),
        ("gemini", "", "gemini-error-stderr.json", "(code 401)"),
        ("aider", "aider-auth-error.txt", "", "not able to authenticate you"),
        ("aider", "aider-empty-response.txt", "", "Empty response received from LLM"),
        ("auggie", "auggie-error.json", "", "503 Service Unavailable"),
        ("opencode", "opencode-error.jsonl", "", "APIError: Unauthorized"),
    ],
)
def test_parse_reported_errors(adapter: str, stdout: str, stderr: str, error_part: str) -> None:
    parsed = get_adapter(adapter).parse_output(
        sample(stdout) if stdout else "", sample(stderr) if stderr else ""
    )
    assert parsed.is_error is True
    assert parsed.error is not None and error_part in parsed.error


def test_claude_error_keeps_tokens_and_session() -> None:
    parsed = get_adapter("claude").parse_output(sample("claude-max-turns.json"), "")
    assert parsed.session_id == "7d6c5b4a-3f2e-4d1c-9b8a-7f6e5d4c3b2a"
    assert parsed.input_tokens == 42030
    assert parsed.cost_usd == pytest.approx(0.0456)


def test_claude_two_turns_in_one_process_count_both_turns_tokens() -> None:
    """Claude Code with stream-json input (a message sent while it ran, recorded from 2.1.330)
    ends each turn with a result whose usage is that turn's own and whose cost is the running
    total: the run's tokens are both results' (720/180, the last ``modelUsage``), its cost,
    reply and session the last result's."""
    stdout = sample("claude-stream-two-turns.jsonl")
    parsed = get_adapter("claude").parse_output(stdout, "")
    last = json.loads(stdout.splitlines()[-1])
    [totals] = last["modelUsage"].values()
    assert (parsed.input_tokens, parsed.output_tokens, parsed.cached_tokens) == (
        totals["inputTokens"],
        totals["outputTokens"],
        0,
    )
    assert parsed.cost_usd == last["total_cost_usd"] and parsed.reply == last["result"]
    assert parsed.session_id == last["session_id"] and parsed.model == "claude-sonnet-4-5"
    first = stdout[: stdout.index('"result_index":1')]
    first = first[: first.rindex("\n") + 1]  # the output as it stood in its second turn
    assert get_adapter("claude").parse_output(first, "").input_tokens == 240


def _stream(*lines: dict[str, Any]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


@pytest.mark.parametrize("name", ["claude", "command"])
def test_a_result_without_a_model_takes_the_streams_last_message_model(name: str) -> None:
    """A stream-json ``result`` with usage but no cost and no ``modelUsage``: the model is the
    one the last message named (not a model a tool's input names), so its cost can be
    estimated, as for the same stream stopped before its result."""
    usage = {"input_tokens": 1000, "output_tokens": 200}
    tool = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"model": "gpt-4o"}}
    stdout = _stream(
        {"type": "system", "subtype": "init", "model": "claude-opus-4-1"},
        {"type": "assistant", "message": {"id": "m1", "model": "claude-haiku-4-5"}},
        {
            "type": "assistant",
            "message": {"id": "m2", "usage": usage, "model": "claude-sonnet-4-5"},
        },
        {"type": "assistant", "message": {"id": "m3", "content": [tool], "usage": usage}},
        {"type": "user", "message": {"role": "user", "model": "x"}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "ok", "usage": usage},
    )
    parsed = get_adapter(name).parse_output(stdout, "")
    assert (parsed.input_tokens, parsed.cost_usd) == (1000, None)
    assert parsed.model == "claude-sonnet-4-5"
    # a result that names its models keeps its own
    model_usage = {"claude-opus-4-1": {"costUSD": 0.5}}
    named = stdout.replace(
        '"result": "ok"', f'"result": "ok", "modelUsage": {json.dumps(model_usage)}'
    )
    assert get_adapter("claude").parse_output(named, "").model == "claude-opus-4-1"


def test_aider_error_then_retry_success_is_not_an_error() -> None:
    text = sample("aider-auth-error.txt").replace("Check your API key.", "Retrying...")
    parsed = get_adapter("aider").parse_output(text + "\n" + sample("aider-success.txt"), "")
    assert parsed.is_error is False
    assert parsed.input_tokens == 2300


def test_aider_sums_several_reports_and_reads_k_and_m() -> None:
    text = (
        "Tokens: 950 sent, 12 received.\n"
        "Tokens: 12k sent, 1.1k cache write, 1.5k received. Cost: $0.02 message, $0.03 session.\n"
        "Tokens: 1.2M sent, 3 received. Cost: $1.10 message, $1.13 session.\n"
    )
    parsed = get_adapter("aider").parse_output(text, "")
    assert (parsed.input_tokens, parsed.output_tokens) == (950 + 12_000 + 1_200_000, 1515)
    assert parsed.cost_usd == pytest.approx(1.13)


GARBAGE = [
    "",
    "   \n",
    "Segmentation fault (core dumped)",
    '{"type":"result","is_error":fal',  # truncated
    "\x00\xff\ufffd binary \x1b[31m",
    "[" * 100_000,  # deep nesting must not blow the stack
    '{"type":"result","usage":"x","total_cost_usd":"NaN","session_id":5,"is_error":"yes"}',
    '{"type":"turn.completed","usage":[1]}\n{"type":"step_finish","part":"x"}\n{"type":7}',
    '{"stats":{"models":{"m":{"tokens":{"input":"many"}}}},"error":{"code":"x"}}',
    "null\n[]\n42\n",
]


@pytest.mark.parametrize("name", sorted(ADAPTERS))
@pytest.mark.parametrize("garbage", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_never_raises(name: str, garbage: str) -> None:
    parsed = get_adapter(name).parse_output(garbage, garbage[:50])
    assert isinstance(parsed, AgentOutput)
    assert parsed.input_tokens is None or isinstance(parsed.input_tokens, int)
    assert parsed.cost_usd is None or isinstance(parsed.cost_usd, float)
    assert parsed.session_id is None or isinstance(parsed.session_id, str)


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "auggie", "opencode"])
def test_unparseable_output_is_noted_not_failed(name: str) -> None:
    parsed = get_adapter(name).parse_output("Segmentation fault", "panic: out of memory")
    assert parsed.is_error is False  # not proof of failure: the report decides
    assert parsed.error is not None and "panic: out of memory" in parsed.error


def test_truncated_claude_json_is_unparsed() -> None:
    text = sample("claude-success.json")
    parsed = get_adapter("claude").parse_output(text[: len(text) // 2], "")
    assert parsed.session_id is None
    assert parsed.error is not None and parsed.error.startswith("no Claude result JSON")


# ---------------------------------------------------------------------------------------------
# A real process per CLI: a fake executable with the CLI's name records what reached it

FAKE = """#!{python}
import json, os, stat, sys
record = {{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}
try:
    st = os.fstat(0)
    null = os.stat(os.devnull)
    devnull = stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev
    record["stdin"] = "devnull" if devnull else "open"
    if devnull:
        record["stdin_data"] = sys.stdin.read()
except OSError:
    record["stdin"] = "closed"
with open({record!r}, "w") as handle:
    json.dump(record, handle)
with open({sample!r}) as handle:
    sys.stdout.write(handle.read())
"""

FAKE_SAMPLES = {
    "claude": ("claude-success.json", "5b1f3c0e-8d7a-4a52-9c61-2f0e4d9b7a11"),
    "codex": ("codex-success.jsonl", "0199a213-81c0-7800-8aa1-bbab2a035a53"),
    "gemini": ("gemini-success.json", "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9"),
    "aider": ("aider-success.txt", None),
    "auggie": ("auggie-success.json", "b7c6d5e4-f3a2-4b1c-8d9e-0f1a2b3c4d5e"),
    "opencode": ("opencode-success.jsonl", "ses_494719016ffe85dkDMj0FPRbHK"),
    "command": ("claude-success.json", "5b1f3c0e-8d7a-4a52-9c61-2f0e4d9b7a11"),
}


# What each fake is configured with, and which of CLI_KEYS must reach it (and nothing more).
FAKE_MODELS = {"aider": "anthropic/claude-sonnet-4-5", "opencode": "anthropic/claude-sonnet-4-5"}
FAKE_KEYS = {
    "claude": {"ANTHROPIC_API_KEY"},
    "codex": {"OPENAI_API_KEY"},
    "gemini": {"GEMINI_API_KEY"},
    "aider": {"ANTHROPIC_API_KEY"},
    "auggie": {"AUGMENT_SESSION_AUTH"},
    "opencode": {"ANTHROPIC_API_KEY"},
    "command": set(),
}


@pytest.mark.parametrize("name", sorted(FAKE_SAMPLES))
def test_real_process_gets_argv_env_and_closed_stdin(tmp_path: Path, name: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = "my-agent" if name == "command" else name
    record = tmp_path / "record.json"
    output, session = FAKE_SAMPLES[name]
    fake = bin_dir / program
    fake.write_text(
        FAKE.format(python=sys.executable, record=str(record), sample=str(SAMPLES / output))
    )
    fake.chmod(0o755)
    env = {**parent_env(tmp_path), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    inv = make_invocation(
        tmp_path,
        env=env,
        command=("my-agent", "--system", "{system_prompt_file}", "{task}"),
        model=FAKE_MODELS.get(name, "model-x"),
    )
    inv.workdir.mkdir(parents=True, exist_ok=True)
    adapter = get_adapter(name)
    spec = adapter.launch(inv)

    result = proc.run(spec.argv, cwd=spec.cwd, env=spec.env, timeout=60, check=False)

    assert result.returncode == 0, result.stderr
    seen = json.loads(record.read_text())
    assert seen["argv"] == list(spec.argv[1:])
    assert seen["cwd"] == str(inv.workdir)
    assert seen["stdin"] == "devnull" and seen["stdin_data"] == ""
    assert SECRET not in seen["env"] and "GIT_DIR" not in seen["env"]
    # Neither a foreign provider's key nor an arbitrary GITFLOW_AGENTS_* variable arrives.
    assert {key for key in CLI_KEYS if key in seen["env"]} == FAKE_KEYS[name]
    assert PRODUCT_SECRET not in seen["env"]
    # Exactly the adapter's env arrived (Python itself may only add LC_CTYPE).
    assert {k: seen["env"][k] for k in spec.env} == dict(spec.env)
    assert set(seen["env"]) - set(spec.env) <= {"LC_CTYPE"}
    parsed = adapter.parse_output(result.stdout, result.stderr)
    assert parsed.session_id == session
    assert parsed.is_error is False
    assert parsed.reply


def test_claude_adds_a_report_folder_outside_its_work_tree(tmp_path: Path) -> None:
    """A chain's step work tree reaches flows/ through a symlink; Claude resolves it and edits
    only inside its working directories (2.1.330, acceptEdits), so the real folder is added."""
    inside = make_invocation(tmp_path)
    assert "--add-dir" not in get_adapter("claude").launch(inside).argv

    real = tmp_path / "user-repo" / "flows" / "demo" / "agents" / "step-01-builder"
    real.mkdir(parents=True)
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    (worktree / "flows").symlink_to(tmp_path / "user-repo" / "flows")
    outside = replace(
        inside,
        workdir=worktree,
        agent_dir=worktree / "flows" / "demo" / "agents" / "step-01-builder",
    )
    argv = list(get_adapter("claude").launch(outside).argv)
    assert argv[argv.index("--add-dir") + 1] == str(real.resolve())


@pytest.mark.parametrize(
    ("usage", "cost"),
    [
        ({"input_tokens": -1000, "output_tokens": 200}, -5),  # negative: would shrink a sum
        ({"input_tokens": 10**30, "output_tokens": 200}, 1e300),  # absurd: no figure
        ({"input_tokens": float("inf"), "output_tokens": 200}, float("nan")),
    ],
)
@pytest.mark.parametrize("adapter", ["claude", "command"])
def test_a_figure_out_of_range_is_unknown_never_shown_or_summed(
    adapter: str, usage: dict[str, float], cost: float
) -> None:
    """A CLI (or a `command` agent) that prints a negative, absurd or non-finite count or
    cost: that figure is unknown (a negative cost let a step spend past its budget and showed
    `$-5.0000`; 10**30 tokens made a record the tool then refused to read back)."""
    line = json.dumps({"type": "result", "usage": usage, "total_cost_usd": cost})
    parsed = get_adapter(adapter).parse_output(line + "\n", "")
    assert isinstance(parsed, AgentOutput)
    assert (parsed.input_tokens, parsed.cost_usd) == (None, None)
    assert parsed.output_tokens == 200


_HUGE = "1" + "0" * 400


@pytest.mark.parametrize(
    ("line", "tokens"),
    [
        (f"Tokens: {_HUGE}k sent, 1 received. Cost: ${_HUGE}.0 message, ${_HUGE}.5 session.", None),
        ("Tokens: 12k sent, 3 received. Cost: $1.2.3 message, $1.2.3 session.", 12000),
    ],
)
def test_an_aider_figure_that_is_no_number_or_absurd_is_unknown(line: str, tokens: int) -> None:
    """Aider's rounded counts and cost were read with ``round(float())`` and ``float()``: a
    400-digit count was exit 70 (OverflowError), a cost ``1.2.3`` too (ValueError), and a
    400-digit cost was recorded as inf. Each is unknown now, as for the JSON CLIs."""
    parsed = get_adapter("aider").parse_output(line + "\n", "")
    assert (parsed.input_tokens, parsed.cost_usd) == (tokens, None)


def test_an_opencode_step_that_used_tokens_at_no_cost_has_an_unknown_cost() -> None:
    """opencode says `cost: 0` for a model it has no price for (a custom or local provider):
    with tokens used that is no price, not free, so the run's cost is unknown (the price table
    may estimate it; a USD budget says it cannot hold), never a known $0 that no budget
    reaches. A step that used nothing at $0 is just that."""

    def step(tokens: int, cost: float) -> str:
        part = {"tokens": {"input": tokens, "output": 0, "cache": {"read": 0}}, "cost": cost}
        return json.dumps({"type": "step_finish", "sessionID": "s", "part": part})

    parse = get_adapter("opencode").parse_output
    assert parse(step(120, 0) + "\n" + step(80, 0) + "\n", "").cost_usd is None
    assert parse(step(120, 0.002) + "\n", "").cost_usd == 0.002
    assert parse(step(0, 0) + "\n", "").cost_usd == 0.0


def test_lines_with_a_needle_are_found_without_splitting_the_rest() -> None:
    """``output.lines_with``: each line holding the needle once, in order, the first and an
    unterminated last line included; none when it is absent."""
    from gitflow_agents.agents.output import lines_with

    text = '{"type":"result","n":1}\nx\n{"a":"results"}\n\n{"type":"result","n":2} "result"'
    assert list(lines_with(text, '"result"')) == [
        '{"type":"result","n":1}',
        '{"type":"result","n":2} "result"',
    ]
    assert list(lines_with(text, "absent")) == []
