"""Claude Code (``claude -p``), checked against 2.1.x (docs/agents.md)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gitflow_agents.agents import base, output
from gitflow_agents.agents.base import AgentOutput, Cli, Invocation, LaunchSpec, LiveInput
from gitflow_agents.agents.limits import RateLimit, rate_limit
from gitflow_agents.base.atomic import real_path

PERMISSION_MODES = ("acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan")
OPTIONS = (
    "max_turns",
    "permission_mode",
    "allowed_tools",
    "disallowed_tools",
    "max_budget_usd",
    "system_prompt_mode",
)
# Claude Code talks to Anthropic (directly, or through Bedrock/Vertex when switched on; their
# cloud credentials are the user's to name with allow_env). Auth (API key, bearer token,
# subscription token), endpoint, models, the Bedrock/Vertex switches and retry/timeout knobs.
ENV_NAMES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
    "CLAUDE_CODE_SKIP_VERTEX_AUTH",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "CLOUD_ML_REGION",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
    "CLAUDE_CODE_MAX_RETRIES",
    "CLAUDE_CODE_API_KEY_HELPER_TTL_MS",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "API_TIMEOUT_MS",
    "IS_SANDBOX",
    "DISABLE_TELEMETRY",
    "DISABLE_AUTOUPDATER",
    "MAX_THINKING_TOKENS",
)
STREAM_USAGE = ("stream-json", "--verbose", "--include-partial-messages")
# User messages as JSON lines on stdin while it runs (needs stream-json output, and --verbose);
# each message it takes is echoed on stdout (isReplay), so the supervisor knows when all are in
LIVE_INPUT = ("--input-format", "stream-json", "--replay-user-messages")
QUIET_DEFAULTS = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
}


class ClaudeAdapter:
    cli = Cli(
        "claude",
        install="npm install -g @anthropic-ai/claude-code",
        resumes=True,
        options=OPTIONS,
        # after --resume its result's total_cost_usd (and modelUsage) are the session's so far,
        # its usage the process's own: each turn's (Claude Code 2.1.330, docs/agents.md)
        cost_totals=True,
    )

    def launch(self, invocation: Invocation) -> LaunchSpec:
        base.check_invocation(invocation, self.cli)
        mode = base.opt_str(
            invocation, "system_prompt_mode", "append", choices=("append", "replace")
        )
        prompt_flag = "--append-system-prompt-file" if mode == "append" else "--system-prompt-file"
        permission = base.opt_str(
            invocation, "permission_mode", "acceptEdits", choices=PERMISSION_MODES
        )
        # The task goes right after -p: --allowedTools/--disallowedTools take several values
        # and would swallow a trailing positional prompt.
        argv = [
            base.executable(invocation, self.cli.program),
            "-p",
            # with a control channel the task is the first stream-json line on stdin instead
            *(LIVE_INPUT if invocation.live_input else (invocation.task,)),
            "--output-format",
            # stream-json with the API's own events (usage as each call streams, read by
            # agents/meter.py) when a budget applies
            *_output_format(invocation),
            prompt_flag,
            str(invocation.system_prompt_path),
            "--permission-mode",
            str(permission),
        ]
        if not base.is_within(invocation.agent_dir, invocation.workdir):
            # The report folder is outside the work tree (a chain's step work tree reaches the
            # user's flows/ through a symlink). Claude resolves symlinks and edits, writes and
            # moves files only inside its working directories: add the real folder.
            argv += ["--add-dir", str(real_path(invocation.agent_dir))]
        max_turns = base.opt_int(invocation, "max_turns")
        if max_turns is not None:
            argv += ["--max-turns", str(max_turns)]
        budget = _least(base.opt_number(invocation, "max_budget_usd"), invocation.budget_usd)
        if budget is not None:
            argv += ["--max-budget-usd", f"{budget:g}"]
        if invocation.model:
            argv += ["--model", invocation.model]
        for option, flag in (
            ("allowed_tools", "--allowedTools"),
            ("disallowed_tools", "--disallowedTools"),
        ):
            tools = _tool_list(invocation, option)
            if tools:
                argv += [flag, *tools]
        if invocation.resume_session_id:
            argv += ["--resume", invocation.resume_session_id]
        argv += base.opt_str_list(invocation, "extra_args")
        env = base.allowed_env(
            invocation,
            ENV_NAMES,
            defaults=QUIET_DEFAULTS,
            # Moves both ~/.claude/ and ~/.claude.json: concurrent runs sharing them corrupt them.
            fixed={"CLAUDE_CONFIG_DIR": str(invocation.config_dir)},
        )
        live = (
            LiveInput(invocation.task, user_line, ends_turn, took_message)
            if invocation.live_input
            else None
        )
        return LaunchSpec(
            argv=tuple(argv),
            env=env,
            cwd=invocation.workdir,
            cpu_activity="tools",
            live_input=live,
        )

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        results = _results(stdout)
        if not results:
            unparsed = output.unparsed(stdout, stderr, "Claude result JSON")
            # stopped before its result (a budget, a timeout): its stream's lines name the
            # session, which `send` can continue
            return dataclasses.replace(unparsed, session_id=_stream_session(stdout))
        result = results[-1]
        input_tokens, output_tokens, cached_tokens = _tokens(results)
        # `subtype` stays "success" on API errors; only `is_error` is trustworthy.
        is_error = result.get("is_error") is True
        reply = output.as_str(result.get("result"))
        error = None
        if is_error:
            detail = reply or output.as_str(result.get("terminal_reason")) or "is_error: true"
            subtype = output.as_str(result.get("subtype"))
            error = f"{subtype}: {detail}" if subtype and subtype != "success" else detail
        return AgentOutput(
            session_id=output.as_str(result.get("session_id")),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=output.as_float(result.get("total_cost_usd")),
            cached_tokens=cached_tokens,
            # the model that cost most, else (a result without modelUsage) the stream's last
            model=output.main_model(output.as_dict(result.get("modelUsage")), "costUSD")
            or output.stream_model(stdout),
            is_error=is_error,
            error=error,
            reply=reply,
            rate_limit=rate_limit(error, stderr) or _api_limit(result, error),
        )


def _output_format(invocation: Invocation) -> tuple[str, ...]:
    """``--output-format``'s value(s): stream-json for a budget's meter or for live input (which
    Claude Code allows only with stream-json output), else one JSON result."""
    if invocation.stream_usage:
        return STREAM_USAGE
    return ("stream-json", "--verbose") if invocation.live_input else ("json",)


def user_line(text: str) -> bytes:
    """One user message as Claude Code's stream-json input takes it: one JSON line."""
    message = {"type": "user", "message": {"role": "user", "content": text}}
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


def ends_turn(line: bytes) -> bool:
    """The stream-json line that ends a turn: its ``result`` object."""
    if b'"result"' not in line:
        return False
    whole = output.json_object(line.decode("utf-8", errors="replace"))
    return whole is not None and whole.get("type") == "result"


def took_message(line: bytes) -> bool:
    """The echo of a user message it took from stdin (``--replay-user-messages``)."""
    if b'"isReplay"' not in line:
        return False
    whole = output.json_object(line.decode("utf-8", errors="replace"))
    return whole is not None and whole.get("type") == "user" and whole.get("isReplay") is True


def _least(*values: float | None) -> float | None:
    """The smallest of the known values (Claude's own cap: the option or the budget left)."""
    known = [value for value in values if value is not None]
    return min(known) if known else None


def _tool_list(invocation: Invocation, option: str) -> tuple[str, ...]:
    """Tool rules, one argument each; a single string is one rule list as Claude parses it."""
    value = invocation.options.get(option)
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    return base.opt_str_list(invocation, option)


def _stream_session(stdout: str, lines: int = 200) -> str | None:
    """The session id of a stream-json output, as its last event line that states one (its
    top-level ``session_id``: never a tool's output that names one) gives it; of the last
    ``lines`` lines, for a run cut short."""
    for line in output.last_lines(stdout, lines):  # from the end, the tail not split whole
        event = output.json_object(line) if line.startswith("{") else None
        session = output.as_str(event.get("session_id")) if event is not None else None
        if session:
            return session
    return None


def _results(stdout: str) -> list[dict[str, Any]]:
    """The ``result`` objects of the output, in order: the one of ``--output-format json``, or
    one per turn of stream-json (with stream-json input a run goes on after a turn's result
    when a message came meanwhile). Only the lines that mention a result are parsed."""
    lines = "\n".join(output.lines_with(stdout, '"result"'))
    results = [obj for obj in output.json_lines(lines) if obj.get("type") == "result"]
    if results:
        return results
    whole = output.json_object(stdout)  # pretty-printed, say
    return [whole] if whole is not None and whole.get("type") == "result" else []


def _tokens(results: list[dict[str, Any]]) -> tuple[int | None, int | None, int | None]:
    """The input, output and cache-read tokens of a run's results, summed: each result's
    ``usage`` is its own turn's (Claude Code 2.1.330: ``model_usage_since_last_result``; its
    ``total_cost_usd`` and ``modelUsage`` are running totals). Claude Code sends most of the
    prompt from the cache: its reads and writes count as input too."""
    tokens_in = tokens_out = cached = None
    for result in results:
        usage = output.as_dict(result.get("usage"))
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            tokens_in = output.add_optional(tokens_in, output.as_int(usage.get(key)))
        tokens_out = output.add_optional(tokens_out, output.as_int(usage.get("output_tokens")))
        cached = output.add_optional(cached, output.as_int(usage.get("cache_read_input_tokens")))
    return output.in_range(tokens_in), output.in_range(tokens_out), output.in_range(cached)


def _api_limit(result: dict[str, Any], error: str | None) -> RateLimit | None:
    """Claude Code 2.1 states the API's answer beside its message: ``api_error_status`` 429 or
    529, ``api_error_type`` rate_limit_error or overloaded_error (the message is the API's own
    text, which need not say "rate limit")."""
    status = output.as_int(result.get("api_error_status"))
    kind = output.as_str(result.get("api_error_type"))
    if status in (429, 529) or kind in ("rate_limit_error", "overloaded_error"):
        return RateLimit(error or f"API error {status or kind}", None)
    return None
