"""opencode (``opencode run --format json``), checked against 1.18 (docs/agents.md)."""

from __future__ import annotations

import json
import re
from typing import Any

from gitflow_agents.agents import base, output, providers
from gitflow_agents.agents.base import AgentOutput, Cli, Invocation, LaunchSpec
from gitflow_agents.agents.limits import rate_limit

OPTIONS = ("agent", "config")
# opencode's own switches the parent may set (the quiet ones get defaults below).
ENV_NAMES = ("OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH")
# A custom provider in ``config`` names its key as "{env:NAME}": those names are passed too.
_ENV_REFERENCE = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
QUIET_DEFAULTS = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"}


class OpencodeAdapter:
    cli = Cli("opencode", install="npm install -g opencode-ai", resumes=True, options=OPTIONS)

    def launch(self, invocation: Invocation) -> LaunchSpec:
        base.check_invocation(invocation, self.cli)
        argv = [base.executable(invocation, self.cli.program), "run", "--format", "json"]
        if invocation.model:
            argv += ["-m", invocation.model]  # provider/model
        agent = base.opt_str(invocation, "agent")
        if agent:
            argv += ["--agent", agent]
        if invocation.resume_session_id:
            argv += ["--session", invocation.resume_session_id]
        argv += base.opt_str_list(invocation, "extra_args")
        argv.append(invocation.task)
        # opencode has no system-prompt flag; `instructions` files are added to its system prompt.
        # Edits and shell commands are allowed up front: `run` cannot ask anyone.
        config: dict[str, Any] = {
            "instructions": [str(invocation.system_prompt_path)],
            "permission": {"edit": "allow", "bash": "allow"},
            "autoupdate": False,
            "share": "disabled",
        }
        config = base.deep_merge(config, base.opt_mapping(invocation, "config"))
        state = invocation.config_dir
        env = base.allowed_env(
            invocation,
            (*ENV_NAMES, *provider_env(invocation, config)),
            defaults=QUIET_DEFAULTS,
            fixed={
                "OPENCODE_CONFIG_CONTENT": json.dumps(config),
                # opencode keeps config, auth, its SQLite db and caches in the XDG dirs: a private
                # set per agent (HOME stays, so git still finds the user's ~/.gitconfig).
                "XDG_CONFIG_HOME": str(state / "config"),
                "XDG_DATA_HOME": str(state / "data"),
                "XDG_CACHE_HOME": str(state / "cache"),
                "XDG_STATE_HOME": str(state / "state"),
            },
        )
        return LaunchSpec(argv=tuple(argv), env=env, cwd=invocation.workdir, cpu_activity="tools")

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        session_id = None
        input_tokens: int | None = None
        output_tokens: int | None = None
        cost: float | None = None
        unpriced = False  # a step that used tokens said it cost 0: the cost is unknown
        cached_tokens: int | None = None
        step_texts: list[str] = []
        reply = None
        error = None
        seen = False
        for event in output.json_lines(stdout):
            kind = event.get("type")
            if not isinstance(kind, str):
                continue
            seen = True
            session_id = output.as_str(event.get("sessionID")) or session_id
            part = output.as_dict(event.get("part"))
            if kind == "step_start":
                step_texts = []
            elif kind == "text":
                text = output.as_str(part.get("text"))
                if text:
                    step_texts.append(text)
                    reply = "\n".join(step_texts)
            elif kind == "step_finish":
                tokens = output.as_dict(part.get("tokens"))
                cache = output.as_dict(tokens.get("cache"))
                used = 0
                for value in (tokens.get("input"), cache.get("read"), cache.get("write")):
                    input_tokens = output.add_optional(input_tokens, output.as_int(value))
                    used += output.as_int(value) or 0
                for value in (tokens.get("output"), tokens.get("reasoning")):
                    output_tokens = output.add_optional(output_tokens, output.as_int(value))
                    used += output.as_int(value) or 0
                cached_tokens = output.add_optional(cached_tokens, output.as_int(cache.get("read")))
                step_cost = output.as_float(part.get("cost"))
                if step_cost == 0 and used > 0:  # a model opencode has no price for: not free
                    unpriced = True
                elif step_cost is not None:
                    cost = (cost or 0.0) + step_cost
            elif kind == "error":
                error = _error_message(event.get("error")) or "error"
        if not seen:
            return output.unparsed(stdout, stderr, "opencode JSON events")
        return AgentOutput(
            session_id=session_id,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=None if unpriced else cost,
            cached_tokens=cached_tokens,
            is_error=error is not None,
            error=error,
            reply=reply,
            rate_limit=rate_limit(error, stderr),
        )


def provider_env(invocation: Invocation, config: dict[str, Any]) -> tuple[str, ...]:
    """The variables of the one provider opencode will use: that of the configured model (the
    agent's ``model``, else ``model`` in ``config``), else the first provider whose key is set;
    plus every ``{env:NAME}`` the config refers to (docs/security.md, "Agent environments")."""
    configured = config.get("model")
    model = invocation.model or (configured if isinstance(configured, str) else None)
    names = providers.provider_env(
        providers.OPENCODE_PROVIDERS,
        providers.OPENCODE_DEFAULT_ORDER,
        model,
        providers.opencode_provider(model) if model else None,
        invocation.env,
    )
    return (*names, *dict.fromkeys(_ENV_REFERENCE.findall(json.dumps(config))))


def _error_message(error: object) -> str | None:
    if isinstance(error, str):
        return error or None
    data = output.as_dict(error)
    message = output.as_str(output.as_dict(data.get("data")).get("message")) or output.as_str(
        data.get("message")
    )
    name = output.as_str(data.get("name"))
    if name and message:
        return f"{name}: {message}"
    return message or name
