"""Any executable as an agent: argv from config, placeholders filled per argument, never a shell.

```yaml
agents:
  my-agent:
    adapter: command
    command: ["my-agent", "--prompt-file", "{system_prompt_file}", "{task}"]
```

Each argument has ``{system_prompt_file}``, ``{task}``, ``{model}``, ``{agent_dir}``,
``{workdir}``, ``{config_dir}`` and ``{agent_id}`` replaced; other braces are left as they are.
The values are inserted into one argument each and are never split or interpreted by a shell,
so a task containing spaces or quotes stays a single argument.
"""

from __future__ import annotations

import re
import shlex

from gitflow_agents.agents import base, output
from gitflow_agents.agents.base import (
    CPU_ACTIVITY,
    AgentOutput,
    Cli,
    CpuActivity,
    Invocation,
    LaunchSpec,
)
from gitflow_agents.agents.limits import rate_limit
from gitflow_agents.base.errors import ConfigError

OPTIONS = ("command", "completes_by_exit", "cpu_activity")
PLACEHOLDERS = (
    "system_prompt_file",
    "task",
    "model",
    "agent_dir",
    "workdir",
    "config_dir",
    "agent_id",
)
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


class CommandAdapter:
    # a program of the user's own: the first word of the configured command
    cli = Cli("command", install="", resumes=False, options=OPTIONS, program_name="")

    def launch(self, invocation: Invocation) -> LaunchSpec:
        base.check_invocation(invocation, self.cli)
        template = _command(invocation)
        values = {
            "system_prompt_file": str(invocation.system_prompt_path),
            "task": invocation.task,
            "model": invocation.model,
            "agent_dir": str(invocation.agent_dir),
            "workdir": str(invocation.workdir),
            "config_dir": str(invocation.config_dir),
            "agent_id": invocation.agent_id,
        }

        def fill(match: re.Match[str]) -> str:
            value = values[match[1]]
            if value is None:
                raise ConfigError(
                    "the command uses {model} but the agent has no model configured",
                    key=f"agents.{invocation.agent_id}.command",
                )
            return value

        argv = [_PLACEHOLDER.sub(fill, arg) for arg in template]
        program = base.opt_str(invocation, "executable")
        if program:
            argv[0] = program
        argv += base.opt_str_list(invocation, "extra_args")
        return LaunchSpec(
            argv=tuple(argv),
            env=base.allowed_env(invocation),
            cwd=invocation.workdir,
            completes_by_exit=base.opt_bool(invocation, "completes_by_exit", False),
            cpu_activity=_cpu_activity(invocation),
        )

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        """A JSON result in a Claude-like shape is read when present; otherwise stdout is the reply."""
        data = output.json_object(stdout)
        if data is None:
            # a program of unknown shape: only its stderr can say it was rate limited
            return AgentOutput(reply=stdout.strip() or None, rate_limit=rate_limit(stderr))
        usage = output.as_dict(data.get("usage"))
        is_error = data.get("is_error") is True
        reply = output.as_str(data.get("result")) or output.as_str(data.get("response"))
        input_tokens: int | None = None
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            input_tokens = output.add_optional(input_tokens, output.as_int(usage.get(key)))
        return AgentOutput(
            session_id=output.as_str(data.get("session_id")),
            input_tokens=input_tokens,
            output_tokens=output.as_int(usage.get("output_tokens")),
            cost_usd=output.as_float(data.get("total_cost_usd", data.get("cost_usd"))),
            cached_tokens=output.as_int(usage.get("cache_read_input_tokens")),
            # the result's own, else (Claude-style stream-json) the stream's last message's
            model=output.as_str(data.get("model")) or output.stream_model(stdout),
            is_error=is_error,
            error=(reply or "is_error: true") if is_error else None,
            reply=reply if reply is not None else stdout.strip() or None,
            rate_limit=rate_limit(reply if is_error else None, stderr),
        )


def _cpu_activity(invocation: Invocation) -> CpuActivity:
    """``tree`` (default: any process's CPU is activity) or ``tools`` (not the program's own)."""
    value = base.opt_str(invocation, "cpu_activity", "tree", choices=CPU_ACTIVITY)
    return "tools" if value == "tools" else "tree"


def _command(invocation: Invocation) -> tuple[str, ...]:
    """The argv template: AgentConfig.command, else ``options.command`` (list or string)."""
    key = f"agents.{invocation.agent_id}.command"
    raw: object = invocation.command
    if not raw:
        raw = invocation.options.get("command")
    if not raw:
        raise ConfigError("the command adapter needs a command (argv list or string)", key=key)
    if isinstance(raw, str):
        try:
            raw = shlex.split(raw)
        except ValueError as exc:
            raise ConfigError(f"cannot split the command: {exc}", key=key) from None
    if not isinstance(raw, (list, tuple)) or not all(isinstance(arg, str) for arg in raw):
        raise ConfigError("expected a list of strings (or one string) for the command", key=key)
    if not raw:
        raise ConfigError("the command is empty", key=key)
    return tuple(raw)
