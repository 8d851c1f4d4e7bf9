"""Aider (``aider --message``), checked against 0.86 (docs/agents.md).

Aider cannot rename a file, so it cannot signal completion by renaming its report: the run is
complete when the process exits (``completes_by_exit``), and its reply is read from stdout.
Its exit code is 0 even on authentication or connection failures, so errors are detected from
the text it prints.
"""

from __future__ import annotations

import re
from pathlib import Path

from gitflow_agents.agents import base, output, providers
from gitflow_agents.agents.base import AgentOutput, Cli, Invocation, LaunchSpec
from gitflow_agents.agents.limits import rate_limit

OPTIONS = ("auto_commits", "edit_format", "files", "repo_map")
# Flags that keep Aider non-interactive, quiet, and out of the user's files.
FIXED_FLAGS = (
    "--yes-always",
    "--no-gitignore",  # otherwise it adds ".aider*" to the repository's .gitignore
    "--no-check-update",
    "--analytics-disable",
    "--no-show-release-notes",
    "--no-show-model-warnings",
    "--no-pretty",
    "--no-fancy-input",
)

# Aider's own token report: "Tokens: 2.3k sent, 1.1k cache write, 120 received."
_TOKENS = re.compile(
    r"Tokens: (?P<sent>[\d.]+[kM]?) sent(?:, [\d.]+[kM]? cache (?:write|hit))*, "
    r"(?P<received>[\d.]+[kM]?) received\."
)
_CACHE_HIT = re.compile(r"(?P<hit>[\d.]+[kM]?) cache hit")
_COST = re.compile(r"Cost: \$(?P<message>[\d.]+) message, \$(?P<session>[\d.]+) session\.")
# What Aider prints when a model call finally fails (litellm exception names and Aider's own
# descriptions of them, aider/exceptions.py).
_ERROR = re.compile(
    r"litellm\.[A-Za-z]*Error"
    r"|The API provider is not able to authenticate you"
    r"|The API provider has rate limited you"
    r"|The API provider's servers are down or overloaded"
    r"|The API provider timed out"
    r"|The API provider has refused the request"
    # 0.86 after a stream cut off before any content (found end to end); it still exits 0.
    r"|Empty response received from LLM"
)


class AiderAdapter:
    cli = Cli("aider", install="pipx install aider-chat", resumes=False, options=OPTIONS)

    def launch(self, invocation: Invocation) -> LaunchSpec:
        base.check_invocation(invocation, self.cli)
        config = invocation.config_dir
        argv = [
            base.executable(invocation, self.cli.program),
            "--message",
            invocation.task,
            # Aider has no system-prompt flag: the prompt goes in as a read-only context file.
            "--read",
            str(invocation.system_prompt_path),
            *FIXED_FLAGS,
            "--auto-commits"
            if base.opt_bool(invocation, "auto_commits", False)
            else "--no-auto-commits",
            "--chat-history-file",
            str(config / "chat.history.md"),
            "--input-history-file",
            str(config / "input.history"),
        ]
        if not base.opt_bool(invocation, "repo_map", False):
            # The repo map keeps its cache in <repo>/.aider.tags.cache.v4/ (0.86: not movable),
            # which lands in git statistics and `git add -A`. Off unless asked for.
            argv += ["--map-tokens", "0"]
        if invocation.model:
            argv += ["--model", invocation.model]
        edit_format = base.opt_str(invocation, "edit_format")
        if edit_format:
            argv += ["--edit-format", edit_format]
        argv += base.opt_str_list(invocation, "extra_args")
        argv += base.opt_str_list(invocation, "files")
        # Aider has no config-dir switch: a private HOME keeps ~/.aider/ (caches, analytics) and
        # the user's ~/.aider.conf.yml / ~/.env out; git still finds the user's ~/.gitconfig.
        defaults = {}
        parent_home = invocation.env.get("HOME")
        if parent_home:
            defaults["GIT_CONFIG_GLOBAL"] = str(Path(parent_home) / ".gitconfig")
        env = base.allowed_env(
            invocation,
            provider_env(invocation),
            defaults=defaults,
            fixed={"HOME": str(config)},
        )
        return LaunchSpec(
            argv=tuple(argv),
            env=env,
            cwd=invocation.workdir,
            completes_by_exit=True,
            cpu_activity="tools",
        )

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        text = stdout + ("\n" + stderr if stderr else "")
        sent: int | None = None  # litellm's prompt tokens: cache reads and writes included
        received: int | None = None
        cached: int | None = None
        last_report = -1
        for match in _TOKENS.finditer(text):
            sent = output.add_optional(sent, _token_count(match["sent"]))
            hit = _CACHE_HIT.search(match[0])
            if hit is not None:
                cached = output.add_optional(cached, _token_count(hit["hit"]))
            count = _token_count(match["received"])
            received = output.add_optional(received, count)
            if count:  # "0 received" follows a failed call (e.g. an empty response)
                last_report = match.end()
        costs = list(_COST.finditer(text))
        cost = _cost(costs[-1]["session"]) if costs else None
        # A failure counts only if nothing succeeded after it (Aider retries transient errors);
        # a report of 0 tokens received is no success.
        errors = [m for m in _ERROR.finditer(text) if m.start() > last_report]
        error = None
        if errors:
            line_start = text.rfind("\n", 0, errors[-1].start()) + 1
            line_end = text.find("\n", errors[-1].start())
            error = output.last_line(text[line_start : line_end if line_end != -1 else len(text)])
        reply = stdout.strip() or None
        return AgentOutput(
            session_id=None,  # Aider has no session ids
            input_tokens=sent,
            output_tokens=received,
            cost_usd=cost,  # printed only when aider knows the model's price
            cached_tokens=cached,
            model=None,  # aider prints it only in its banner; the configured model is used
            is_error=error is not None,
            error=error,
            reply=reply,
            # its last failure line: "litellm.RateLimitError: …", "… has rate limited you"
            rate_limit=rate_limit(error),
        )


def provider_env(invocation: Invocation) -> tuple[str, ...]:
    """The variables of the one provider aider will use: the configured model's, else the one
    aider picks by itself (docs/security.md, "Agent environments")."""
    model = invocation.model
    return providers.provider_env(
        providers.AIDER_PROVIDERS,
        providers.AIDER_DEFAULT_ORDER,
        model,
        providers.aider_provider(model) if model else None,
        invocation.env,
    )


def _cost(text: str) -> float | None:
    """Aider's session cost ("0.03"), None when it is no cost ("1.2.3": exit 70; 400 digits:
    inf, recorded and summed) or out of ``output.as_float``'s range."""
    try:
        return output.as_float(float(text))
    except ValueError:
        return None


def _token_count(text: str) -> int | None:
    """Aider's rounded counts: "950", "2.3k", "12k", "1.2M"."""
    scale = {"k": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    number = text[:-1] if scale != 1 else text
    try:
        count = float(number) * scale  # inf for 400 digits: round() of it was exit 70
    except ValueError:
        return None
    return round(count) if count <= output.MAX_COUNT else None
