"""The adapter contract: what the supervisor gives an adapter, and what it gets back.

An adapter turns one :class:`Invocation` into a :class:`LaunchSpec` (argv, env, cwd) for one agent
CLI, and turns that CLI's stdout/stderr into an :class:`AgentOutput` (session id, tokens, cost,
reply, error). It never starts a process: the supervisor does, always with stdin closed and in its
own process group. ``launch`` may create files inside ``invocation.config_dir`` (the agent's private
config directory, e.g. a settings file a CLI needs) and nowhere else.

The helpers below are shared by every adapter: the environment allow-list, option validation with
clear ``ConfigError`` messages, and forgiving JSON / JSON Lines parsing (agent output is untrusted:
parsing never raises).
"""

from __future__ import annotations

import json
import math
import os
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from gitflow_agents.agents.limits import RateLimit, rate_limit
from gitflow_agents.base.errors import ConfigError, UsageError


@dataclass(frozen=True)
class Invocation:
    """One agent run, as the supervisor hands it to an adapter."""

    agent_id: str
    agent_dir: Path  # flows/<flow>/agents/<agent-id>/ (system_prompt.md, report.md live here)
    workdir: Path  # the git work tree the agent edits (the process cwd)
    system_prompt_path: Path  # the assembled system prompt, already written to disk
    system_prompt: str  # the same text, for CLIs that only take it inline
    task: str  # the short user message ("Follow your system prompt; your report is ...")
    model: str | None
    options: Mapping[str, Any]  # AgentConfig.options, validated by the adapter
    config_dir: Path  # per-agent isolated config dir (CLAUDE_CONFIG_DIR, CODEX_HOME, ...)
    # The environment the agent may draw from: normally the parent's os.environ. Every adapter
    # passes on ONLY its allow-list of it (see ``allowed_env``), so a secret that is not on the
    # list never reaches the agent; the supervisor then adds PRODUCT_ENV_NAMES itself.
    env: Mapping[str, str]
    # AgentConfig.command, for the generic ``command`` adapter (ignored by the others).
    command: tuple[str, ...] | None = None
    # Continue this CLI session instead of starting a new one (session mode: send/reply).
    # Adapters whose CLI cannot resume raise UsageError.
    resume_session_id: str | None = None
    budget_usd: float | None = None  # a budget's USD left, for a CLI's own budget flag
    stream_usage: bool = False  # print usage as it goes, where the CLI can (agents/meter.py)


CpuActivity = Literal["tree", "tools"]
CPU_ACTIVITY: tuple[CpuActivity, ...] = ("tree", "tools")


@dataclass(frozen=True)
class LaunchSpec:
    """What to start: the supervisor runs ``argv`` in ``cwd`` with exactly ``env``, stdin closed."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    # True for CLIs that cannot rename a report (aider): process exit (plus the structured reply
    # in its output) is the completion signal instead of report.md -> report.complete.md.
    completes_by_exit: bool = False
    # Which CPU use counts as activity (docs/supervisor.md, "Activity and stuck detection"):
    # "tree": every process of the agent's tree (a program of unknown shape, e.g. the generic
    # command adapter: a wrapper script's compiler writes to the same stdout as the script);
    # "tools": only what the CLI started (shells, compilers, test runners), not the CLI's own
    # processes, i.e. those whose stdout is the run's stdout pipe (opencode 1.18 burns a core
    # while it waits on a stalled model stream). The agent-CLI adapters use "tools".
    cpu_activity: CpuActivity = "tree"


@dataclass(frozen=True)
class AgentOutput:
    """What an agent CLI said about its run. Fields the CLI did not report are None.

    ``is_error`` is the CLI's own statement that the run failed (read from its output, never from
    the exit code alone). ``error`` is a short human note: the CLI's error message, or why the
    output could not be parsed (then ``is_error`` is False: unparseable is not proof of failure;
    the report and the repository are the truth).

    Usage is comparable across CLIs (docs/decisions.md, "Spend"): ``input_tokens`` counts every
    input token (cache reads and writes included), ``cached_tokens`` the part of them read from
    the provider's cache, ``output_tokens`` every output token (reasoning included);
    ``cost_usd`` only as the CLI states it; ``model`` the model the CLI says it used.
    ``rate_limit``: the CLI's error said the model API refused for a while (agents/limits.py).
    """

    session_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cached_tokens: int | None = None
    model: str | None = None
    is_error: bool = False
    error: str | None = None
    reply: str | None = None
    rate_limit: RateLimit | None = None


class Adapter(Protocol):
    """One agent CLI. Implementations are stateless; one instance serves every run."""

    name: str
    # The executable's usual name ("" for the command adapter: its command names it), and the
    # command that installs it, named when it is missing (docs/agents.md, "Installing the CLIs").
    program: str
    install: str
    # Whether its CLI can continue a session (``Invocation.resume_session_id``); ``send`` asks
    # this before a turn exists, and ``launch`` raises the same refusal (``resume_refused``).
    resumes: bool

    def launch(self, invocation: Invocation) -> LaunchSpec: ...

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput: ...


# --------------------------------------------------------------------------------------------
# Environment allow-list

# Passed to every agent when present in Invocation.env. Anything else must be named by the
# adapter (its auth and endpoint variables) or by the user (options.allow_env). No prefix passes
# wholesale: every name is listed (docs/security.md, "Agent environments").
LOCALE_ENV_NAMES: tuple[str, ...] = (
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_ADDRESS",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_NAME",
    "LC_PAPER",
    "LC_TELEPHONE",
)
# What gitflow-agents itself sets for an agent (runs/, supervisor/): its run id, run and agent
# folders, and the marker that finds the agent's processes. No other GITFLOW_AGENTS_* variable of
# the parent (GitHub retry knobs, anything a user names so) reaches an agent.
PRODUCT_ENV_NAMES: tuple[str, ...] = (
    "GITFLOW_AGENTS_RUN_ID",
    "GITFLOW_AGENTS_RUN_DIR",
    "GITFLOW_AGENTS_AGENT_DIR",
    "GITFLOW_AGENTS_TREE",
)
BASE_ENV_NAMES: frozenset[str] = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "TMPDIR",
        "COLORTERM",
        "NO_COLOR",
        # TLS and proxies: corporate networks need them to reach any model API.
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        # Git identity and config isolation for commits the agent makes. GIT_DIR, GIT_INDEX_FILE
        # and GIT_WORK_TREE are deliberately absent: inherited from a hook they would point the
        # agent's git at the wrong repository.
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_GLOBAL",
        "GIT_SSH_COMMAND",
        "SSH_AUTH_SOCK",
        *LOCALE_ENV_NAMES,
        *PRODUCT_ENV_NAMES,
    }
)

# Options every adapter accepts (see docs/agents.md).
COMMON_OPTIONS: tuple[str, ...] = ("executable", "extra_args", "allow_env", "env")


def allowed_env(
    invocation: Invocation,
    cli_names: Iterable[str] = (),
    *,
    defaults: Mapping[str, str] | None = None,
    fixed: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for the agent process, built in four layers (later wins):

    1. the allow-listed part of ``invocation.env``: BASE_ENV_NAMES, the adapter's
       ``cli_names`` (its auth and endpoint variables for the configured provider) and the
       user's ``options.allow_env`` names, each an exact name; nothing else passes;
    2. ``defaults`` the adapter sets unless the parent already has them (quiet/offline knobs);
    3. ``fixed`` values the adapter needs (its config dir);
    4. ``options.env`` from the user's config, so every one of them can be overridden there.
    """
    names = set(BASE_ENV_NAMES) | set(cli_names) | set(opt_str_list(invocation, "allow_env"))
    env = {key: value for key, value in invocation.env.items() if key in names}
    for key, value in (defaults or {}).items():
        env.setdefault(key, value)
    env.update(fixed or {})
    env.update(opt_str_map(invocation, "env"))
    return env


# --------------------------------------------------------------------------------------------
# Options from config (AgentConfig.options): validated with one clear line each


def _option_error(invocation: Invocation, key: str, message: str) -> ConfigError:
    return ConfigError(message, key=f"agents.{invocation.agent_id}.options.{key}")


def check_options(invocation: Invocation, adapter: str, known: Iterable[str]) -> None:
    """ConfigError for an option the adapter does not know, listing the ones it does."""
    allowed = sorted({*COMMON_OPTIONS, *known})
    for key in invocation.options:
        if key not in allowed:
            raise _option_error(
                invocation,
                str(key),
                f"unknown option for the {adapter} adapter; known: {', '.join(allowed)}",
            )


def opt_str(
    invocation: Invocation,
    key: str,
    default: str | None = None,
    *,
    choices: Sequence[str] | None = None,
) -> str | None:
    value = invocation.options.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or not value:
        raise _option_error(invocation, key, f"expected a non-empty string, got {value!r}")
    if choices is not None and value not in choices:
        raise _option_error(invocation, key, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def opt_int(
    invocation: Invocation, key: str, default: int | None = None, *, minimum: int = 1
) -> int | None:
    value = invocation.options.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _option_error(invocation, key, f"expected an integer >= {minimum}, got {value!r}")
    return value


def opt_number(invocation: Invocation, key: str) -> float | None:
    value = invocation.options.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise _option_error(invocation, key, f"expected a positive number, got {value!r}")
    return float(value)


def opt_bool(invocation: Invocation, key: str, default: bool) -> bool:
    value = invocation.options.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _option_error(invocation, key, f"expected true or false, got {value!r}")
    return value


def opt_str_list(invocation: Invocation, key: str) -> tuple[str, ...]:
    """A list of strings; a single string is split like a shell would (no shell runs)."""
    value = invocation.options.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise _option_error(invocation, key, f"cannot split {value!r}: {exc}") from None
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise _option_error(invocation, key, f"expected a list of strings, got {value!r}")


def opt_str_map(invocation: Invocation, key: str) -> dict[str, str]:
    """A mapping of string keys to scalar values (numbers and booleans become strings)."""
    value = invocation.options.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _option_error(invocation, key, f"expected a mapping, got {value!r}")
    result: dict[str, str] = {}
    for name, item in value.items():
        if not isinstance(name, str) or not isinstance(item, (str, int, float, bool)):
            raise _option_error(
                invocation, key, f"expected string keys and scalar values, got {name!r}: {item!r}"
            )
        result[name] = _scalar_text(item)
    return result


def opt_mapping(invocation: Invocation, key: str) -> dict[str, Any]:
    """A mapping passed through as data (e.g. a config fragment for a CLI)."""
    value = invocation.options.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _option_error(invocation, key, f"expected a mapping, got {value!r}")
    return dict(value)


def _scalar_text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def executable(invocation: Invocation, default: str) -> str:
    """``options.executable`` (a path or name, e.g. a pinned install) or the CLI's usual name."""
    return opt_str(invocation, "executable", default) or default


def cannot_resume(adapter: str) -> str:
    """The refusal for a CLI that cannot continue a session (``Adapter.resumes`` False)."""
    return f"the {adapter} adapter cannot resume a session (its CLI has no resume mode)"


def resume_refused(adapter: str) -> None:
    """Raise the clear refusal for a CLI that cannot continue a session."""
    raise UsageError(cannot_resume(adapter))


def deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` laid over it; nested mappings merge, everything else is replaced."""
    merged = dict(base)
    for key, value in extra.items():
        old = merged.get(key)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            merged[key] = deep_merge(old, value)
        else:
            merged[key] = value
    return merged


def write_config_file(path: Path, text: str) -> None:
    """Write a CLI's config file inside the agent's config dir atomically (temp + replace)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def is_within(path: Path, root: Path) -> bool:
    """True if ``path`` is ``root`` or below it (after resolving symlinks)."""
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# Forgiving parsing of agent output (never raises)


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object that is ``text``, or else the last line of it that is a JSON object,
    or else a pretty-printed object that ends it.

    CLIs print warnings before their JSON; a truncated or garbage output gives None.
    """
    stripped = text.strip()
    if not stripped:
        return None
    whole = _loads(stripped)
    if isinstance(whole, dict):
        return whole
    for line in reversed(stripped.splitlines()):  # from the end: a stream-json run's last
        line = line.strip()  # line is its result; the 8 MiB before it are not parsed
        found = _loads(line) if line.startswith("{") else None
        if isinstance(found, dict):
            return found
    return _trailing_object(stripped)


def _trailing_object(text: str, tries: int = 20) -> dict[str, Any] | None:
    """A pretty-printed JSON object that ends ``text``, from a line starting with ``{``
    (Gemini CLI prints its error so on stderr, after its log lines and a stack trace)."""
    at = len(text)
    for _ in range(tries):
        at = text.rfind("\n{", 0, at)
        if at < 0:
            return None
        found = _loads(text[at + 1 :])
        if isinstance(found, dict):
            return found
    return None


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """Every line of ``text`` that is a JSON object; other lines are skipped."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        obj = _loads(line)
        if isinstance(obj, dict):
            yield obj


def as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def as_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def add_optional(total: int | None, value: int | None) -> int | None:
    """Sum that stays None until some value is known."""
    if value is None:
        return total
    return value if total is None else total + value


def main_model(models: Mapping[str, Any], weight: str = "total") -> str | None:
    """The model that did most of a run: ``models`` maps each model name a CLI reports to its
    numbers; the one whose ``weight`` is largest (a CLI may use a small model for side tasks)."""
    best: str | None = None
    best_weight = -1.0
    for name, numbers in models.items():
        value = as_float(as_dict(numbers).get(weight))
        if isinstance(name, str) and name and (value or 0.0) > best_weight:
            best, best_weight = name, value or 0.0
    return best


def last_line(text: str, limit: int = 300) -> str | None:
    """The last non-empty line of ``text``, shortened: a one-line note for ``AgentOutput.error``."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return None


def unparsed(stdout: str, stderr: str, what: str) -> AgentOutput:
    """The output of a run whose CLI printed nothing we understand."""
    detail = last_line(stderr) or last_line(stdout)
    note = f"no {what} in the output" + (f"; last line: {detail}" if detail else "")
    # a CLI that gave up on a rate limit may say so only on stderr, in its own words
    return AgentOutput(error=note, rate_limit=rate_limit(stderr))


__all__ = [
    "BASE_ENV_NAMES",
    "COMMON_OPTIONS",
    "LOCALE_ENV_NAMES",
    "PRODUCT_ENV_NAMES",
    "Adapter",
    "AgentOutput",
    "Invocation",
    "LaunchSpec",
    "add_optional",
    "allowed_env",
    "as_dict",
    "as_float",
    "as_int",
    "as_str",
    "cannot_resume",
    "check_options",
    "deep_merge",
    "executable",
    "is_within",
    "json_lines",
    "json_object",
    "last_line",
    "main_model",
    "opt_bool",
    "opt_int",
    "opt_mapping",
    "opt_number",
    "opt_str",
    "opt_str_list",
    "opt_str_map",
    "resume_refused",
    "unparsed",
    "write_config_file",
]
