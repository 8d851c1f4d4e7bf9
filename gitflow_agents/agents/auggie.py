"""Augment's Auggie CLI (``auggie --print --output-format json``), checked against 0.36."""

from __future__ import annotations

from gitflow_agents.agents import base, output
from gitflow_agents.agents.base import AgentOutput, Cli, Invocation, LaunchSpec
from gitflow_agents.agents.limits import rate_limit

OPTIONS = ("max_turns", "permissions", "retry_timeout")
# AUGMENT_SESSION_AUTH (the `auggie token print` JSON), or AUGMENT_API_TOKEN + AUGMENT_API_URL.
ENV_NAMES = (
    "AUGMENT_SESSION_AUTH",
    "AUGMENT_API_TOKEN",
    "AUGMENT_API_URL",
    "AUGMENT_DISABLE_AUTO_UPDATE",
)
QUIET_DEFAULTS = {"AUGMENT_DISABLE_AUTO_UPDATE": "1"}


class AuggieAdapter:
    cli = Cli("auggie", install="npm install -g @augmentcode/auggie", resumes=True, options=OPTIONS)

    def launch(self, invocation: Invocation) -> LaunchSpec:
        base.check_invocation(invocation, self.cli)
        # The task goes right after --print so no flag can take it as its value.
        argv = [
            base.executable(invocation, self.cli.program),
            "--print",
            invocation.task,
            "--output-format",
            "json",
            # Auggie assembles its system prompt server-side; a rules file is how a client adds
            # instructions to it.
            "--rules",
            str(invocation.system_prompt_path),
            "--workspace-root",
            str(invocation.workdir),
            # Its cache dir (default ~/.augment) holds sessions and settings: one per agent.
            "--augment-cache-dir",
            str(invocation.config_dir),
        ]
        max_turns = base.opt_int(invocation, "max_turns")
        if max_turns is not None:
            argv += ["--max-turns", str(max_turns)]
        retry = base.opt_number(invocation, "retry_timeout")
        if retry is not None:
            argv += ["--retry-timeout", f"{retry:g}"]
        for rule in base.opt_str_list(invocation, "permissions"):
            argv += ["--permission", rule]
        if invocation.model:
            argv += ["--model", invocation.model]
        if invocation.resume_session_id:
            argv += ["--resume", invocation.resume_session_id]
        argv += base.opt_str_list(invocation, "extra_args")
        env = base.allowed_env(invocation, ENV_NAMES, defaults=QUIET_DEFAULTS)
        return LaunchSpec(argv=tuple(argv), env=env, cwd=invocation.workdir, cpu_activity="tools")

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        result = output.json_object(stdout)
        if result is None or result.get("type") != "result":
            results = [obj for obj in output.json_lines(stdout) if obj.get("type") == "result"]
            result = results[-1] if results else None
        if result is None:
            return output.unparsed(stdout, stderr, "Auggie result JSON")
        is_error = result.get("is_error") is True
        reply = output.as_str(result.get("result"))
        error = None
        if is_error:
            error = reply or output.as_str(result.get("subtype")) or "is_error: true"
        return AgentOutput(
            session_id=output.as_str(result.get("session_id")),
            input_tokens=None,  # Auggie's JSON carries no token usage or cost
            output_tokens=None,
            cost_usd=None,
            is_error=is_error,
            error=error,
            reply=reply,
            rate_limit=rate_limit(error, stderr),
        )
