"""Gemini CLI (``gemini -p … -o json``), checked against 0.61 (docs/agents.md)."""

from __future__ import annotations

import json
from typing import Any

from gitflow_agents.agents import base, output
from gitflow_agents.agents.base import AgentOutput, Cli, Invocation, LaunchSpec
from gitflow_agents.agents.limits import rate_limit

APPROVAL_MODES = ("default", "auto_edit", "yolo", "plan")
AUTH_TYPES = ("gemini-api-key", "vertex-ai", "oauth-personal", "compute-default-credentials")
OPTIONS = (
    "approval_mode",
    "skip_trust",
    "max_turns",
    "auth_type",
    "settings",
    "system_prompt_mode",
)
ENV_NAMES = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GEMINI_MODEL",
    "GEMINI_CLI_TRUST_WORKSPACE",
    "GEMINI_CLI_NO_RELAUNCH",
)


class GeminiAdapter:
    cli = Cli("gemini", install="npm install -g @google/gemini-cli", resumes=True, options=OPTIONS)

    def launch(self, invocation: Invocation) -> LaunchSpec:
        base.check_invocation(invocation, self.cli)
        approval = base.opt_str(invocation, "approval_mode", "yolo", choices=APPROVAL_MODES)
        mode = base.opt_str(
            invocation, "system_prompt_mode", "replace", choices=("replace", "context")
        )
        argv = [
            base.executable(invocation, self.cli.program),
            "-p",
            invocation.task,
            "-o",
            "json",
            "--approval-mode",
            str(approval),
        ]
        # In an untrusted folder YOLO is silently downgraded to "default", which can hang.
        if base.opt_bool(invocation, "skip_trust", True):
            argv.append("--skip-trust")
        if invocation.model:
            argv += ["-m", invocation.model]
        if invocation.resume_session_id:
            argv += ["--resume", invocation.resume_session_id]
        argv += base.opt_str_list(invocation, "extra_args")

        fixed = {"GEMINI_CLI_HOME": str(invocation.config_dir)}
        gemini_dir = invocation.config_dir / ".gemini"
        if mode == "replace":
            # Replaces Gemini's built-in system instruction (there is no append flag).
            fixed["GEMINI_SYSTEM_MD"] = str(invocation.system_prompt_path)
        else:
            # The private home's GEMINI.md is global context, sent alongside the task.
            base.write_config_file(gemini_dir / "GEMINI.md", invocation.system_prompt)
        env = base.allowed_env(invocation, ENV_NAMES, fixed=fixed)
        base.write_config_file(
            gemini_dir / "settings.json", json.dumps(_settings(invocation, env), indent=2) + "\n"
        )
        return LaunchSpec(argv=tuple(argv), env=env, cwd=invocation.workdir, cpu_activity="tools")

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        data = output.json_object(stdout)
        if data is None or not ({"response", "stats", "session_id", "error"} & data.keys()):
            # Errors (e.g. HTTP 401, exit code 145) are printed as JSON on stderr.
            data = output.json_object(stderr)
        if data is None:
            return output.unparsed(stdout, stderr, "Gemini JSON")
        input_tokens: int | None = None
        output_tokens: int | None = None
        cached_tokens: int | None = None
        models = output.as_dict(output.as_dict(data.get("stats")).get("models"))
        for model in models.values():
            tokens = output.as_dict(output.as_dict(model).get("tokens"))
            prompt = tokens.get("input", tokens.get("prompt"))
            input_tokens = output.add_optional(input_tokens, output.as_int(prompt))
            # thoughts are billed as output; cached is a part of the prompt
            for key in ("candidates", "thoughts"):
                output_tokens = output.add_optional(output_tokens, output.as_int(tokens.get(key)))
            cached_tokens = output.add_optional(cached_tokens, output.as_int(tokens.get("cached")))
        error = _error_message(data.get("error"))
        return AgentOutput(
            session_id=output.as_str(data.get("session_id")),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=None,  # Gemini CLI reports no cost: a price table estimates it
            cached_tokens=cached_tokens,
            model=output.main_model(
                {name: output.as_dict(m).get("tokens") for name, m in models.items()}
            ),
            is_error=error is not None,
            error=error,
            reply=output.as_str(data.get("response")),
            rate_limit=rate_limit(error, stderr),  # "Quota exceeded … retry in 27s" (code 429)
        )


def _settings(invocation: Invocation, env: dict[str, str]) -> dict[str, Any]:
    """settings.json for the private GEMINI_CLI_HOME (rewritten on every run)."""
    settings: dict[str, Any] = {}
    auth = base.opt_str(invocation, "auth_type", choices=AUTH_TYPES)
    if auth is None and env.get("GEMINI_API_KEY") and not env.get("GOOGLE_GENAI_USE_VERTEXAI"):
        # Pitfall in 0.61: GOOGLE_GEMINI_BASE_URL flips the detected auth type to "gateway",
        # which then fails ("Invalid auth method selected.", exit 41). Name it explicitly.
        auth = "gemini-api-key"
    if auth:
        settings["security"] = {"auth": {"selectedType": auth}}
    max_turns = base.opt_int(invocation, "max_turns")
    if max_turns is not None:
        settings["model"] = {"maxSessionTurns": max_turns}
    return base.deep_merge(settings, base.opt_mapping(invocation, "settings"))


def _error_message(error: object) -> str | None:
    if error is None:
        return None
    if isinstance(error, dict):
        message = output.as_str(error.get("message")) or output.as_str(error.get("type")) or "error"
        code = output.as_int(error.get("code"))
        return f"{message} (code {code})" if code is not None else message
    return output.as_str(error) or "error"
