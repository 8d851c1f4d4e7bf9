"""OpenAI Codex CLI (``codex exec --json``), checked against 0.169 (docs/agents.md)."""

from __future__ import annotations

import re
from typing import Any

from gitflow_agents.agents import base, output
from gitflow_agents.agents.base import AgentOutput, Cli, Invocation, LaunchSpec
from gitflow_agents.agents.limits import rate_limit
from gitflow_agents.base.errors import ConfigError

SANDBOXES = ("read-only", "workspace-write", "danger-full-access", "bypass")
OPTIONS = ("sandbox", "provider", "config", "system_prompt_mode")
# The built-in OpenAI provider's variables. A custom provider (options.provider) gets its
# env_key instead; another built-in provider chosen with options.config.model_provider (e.g.
# "oss") gets none of them.
OPENAI_ENV_NAMES = ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_ORGANIZATION", "OPENAI_PROJECT")
PROVIDER_ID = "gitflow"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class CodexAdapter:
    cli = Cli(
        "codex",
        install="npm install -g @openai/codex",
        resumes=True,
        options=OPTIONS,
        session_totals=True,  # `exec resume`'s turn.completed counts the turns before it
    )

    def launch(self, invocation: Invocation) -> LaunchSpec:
        base.check_invocation(invocation, self.cli)
        sandbox = base.opt_str(invocation, "sandbox", "workspace-write", choices=SANDBOXES)
        mode = base.opt_str(
            invocation, "system_prompt_mode", "developer", choices=("developer", "replace")
        )
        argv = [
            base.executable(invocation, self.cli.program),
            "exec",
            "--json",
            "--skip-git-repo-check",
        ]
        if sandbox == "bypass":
            argv.append("--dangerously-bypass-approvals-and-sandbox")
        else:
            argv += ["--sandbox", str(sandbox)]
        if sandbox == "workspace-write" and not base.is_within(
            invocation.agent_dir, invocation.workdir
        ):
            # The agent must be able to rename its report even when it works in a worktree.
            argv += ["--add-dir", str(invocation.agent_dir)]
        if invocation.model:
            argv += ["-m", invocation.model]
        provider = base.opt_mapping(invocation, "provider")
        config = base.opt_mapping(invocation, "config")
        provider_env: tuple[str, ...] = ()
        if provider:
            argv += _provider_overrides(invocation, provider)
            env_key = provider.get("env_key")
            provider_env = (env_key,) if isinstance(env_key, str) else ()
        elif config.get("model_provider", "openai") == "openai":
            provider_env = OPENAI_ENV_NAMES
        for key, value in config.items():
            argv += ["-c", f"{key}={_toml_value(invocation, 'config', value)}"]
        argv += base.opt_str_list(invocation, "extra_args")
        if invocation.resume_session_id:
            argv += ["resume", invocation.resume_session_id]
        argv.append(invocation.task)

        # The system prompt goes into the private CODEX_HOME/config.toml rather than a `-c`
        # argument: an assembled prompt can exceed the 128 KiB limit of one argv string.
        key = "developer_instructions" if mode == "developer" else "model_instructions_file"
        value = (
            invocation.system_prompt if mode == "developer" else str(invocation.system_prompt_path)
        )
        base.write_config_file(
            invocation.config_dir / "config.toml",
            "# Written by gitflow-agents for this agent on every run.\n"
            "check_for_update_on_startup = false\n"
            f"{key} = {_toml_string(value)}\n",
        )
        env = base.allowed_env(
            invocation,
            provider_env,
            fixed={"CODEX_HOME": str(invocation.config_dir)},
        )
        return LaunchSpec(argv=tuple(argv), env=env, cwd=invocation.workdir, cpu_activity="tools")

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        session_id = None
        input_tokens: int | None = None
        output_tokens: int | None = None
        cached_tokens: int | None = None
        reply = None
        failed: str | None = None
        last_error: str | None = None
        seen = False
        for event in output.json_lines(stdout):
            kind = event.get("type")
            if not isinstance(kind, str):
                continue
            seen = True
            if kind == "thread.started":
                session_id = output.as_str(event.get("thread_id")) or session_id
            elif kind == "turn.completed":
                usage = output.as_dict(event.get("usage"))
                input_tokens = output.add_optional(
                    input_tokens, output.as_int(usage.get("input_tokens"))
                )
                output_tokens = output.add_optional(
                    output_tokens, output.as_int(usage.get("output_tokens"))
                )
                # a part of input_tokens (OpenAI counts cached input inside the input)
                cached = output.as_int(usage.get("cached_input_tokens"))
                cached_tokens = output.add_optional(cached_tokens, cached)
                failed = None
            elif kind == "turn.failed":
                failed = (
                    output.as_str(output.as_dict(event.get("error")).get("message"))
                    or "turn failed"
                )
            elif kind == "error":
                last_error = output.as_str(event.get("message")) or last_error
            elif kind == "item.completed":
                item = output.as_dict(event.get("item"))
                if item.get("type") == "agent_message":
                    reply = output.as_str(item.get("text")) or reply
        if not seen:
            return output.unparsed(stdout, stderr, "Codex JSON events")
        # Error *items* (e.g. "Model metadata not found") are warnings; a failed turn is not.
        return AgentOutput(
            session_id=session_id,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=None,  # Codex reports no cost (nor the model): a price table estimates it
            cached_tokens=cached_tokens,
            is_error=failed is not None,
            error=failed or (last_error if reply is None else None),
            reply=reply,
            # "exceeded retry limit, last status: 429 Too Many Requests" (an error event, then
            # turn.failed), "You've hit your usage limit … try again in …"
            rate_limit=rate_limit(failed, last_error, stderr),
        )


def _provider_overrides(invocation: Invocation, provider: dict[str, Any]) -> list[str]:
    """``-c`` overrides defining a custom model provider (Codex ignores OPENAI_BASE_URL)."""
    if not isinstance(provider.get("base_url"), str):
        raise ConfigError(
            "a custom provider needs base_url (e.g. http://127.0.0.1:8080/v1)",
            key=f"agents.{invocation.agent_id}.options.provider.base_url",
        )
    fields = {"name": PROVIDER_ID, "wire_api": "responses", **provider}
    argv = ["-c", f"model_provider={_toml_string(PROVIDER_ID)}"]
    for key, value in fields.items():
        if not _BARE_KEY.match(key):
            raise ConfigError(
                f"invalid provider key {key!r}",
                key=f"agents.{invocation.agent_id}.options.provider",
            )
        argv += [
            "-c",
            f"model_providers.{PROVIDER_ID}.{key}={_toml_value(invocation, 'provider', value)}",
        ]
    return argv


def _toml_value(invocation: Invocation, option: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(invocation, option, item) for item in value) + "]"
    raise ConfigError(
        f"expected strings, numbers, booleans or lists, got {value!r}",
        key=f"agents.{invocation.agent_id}.options.{option}",
    )


_TOML_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\b": "\\b",
    "\f": "\\f",
}


def _toml_string(text: str) -> str:
    """A TOML basic string (control characters escaped as the spec requires)."""
    out = []
    for char in text:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif 0xD800 <= ord(char) <= 0xDFFF:  # a lone surrogate cannot be written as UTF-8
            out.append("\\ufffd")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
