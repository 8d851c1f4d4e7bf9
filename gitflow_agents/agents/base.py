"""The adapter contract: what the supervisor gives an adapter, and what it gets back.

An adapter turns one :class:`Invocation` into a :class:`LaunchSpec` (argv, env, cwd) for one agent
CLI, and turns that CLI's stdout/stderr into an :class:`AgentOutput` (session id, tokens, cost,
reply, error). It never starts a process: the supervisor does, in its own process group and with
stdin closed (or, for a CLI that takes messages mid-run, a pipe: :class:`LiveInput`). ``launch``
may create files inside ``invocation.config_dir`` (the agent's private config directory, e.g. a
settings file a CLI needs) and nowhere else.

The helpers below are shared by every adapter: the environment allow-list and option validation
with clear ``ConfigError`` messages. Reading a CLI's output is ``output.py``'s.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from gitflow_agents.agents.limits import RateLimit
from gitflow_agents.base.atomic import real_path
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
    # The run has a control channel (runs/control.py): a CLI that can take user messages on
    # stdin while it runs is launched to (LaunchSpec.live_input); the others as always.
    live_input: bool = False


@dataclass(frozen=True)
class LiveInput:
    """A CLI that takes user messages on stdin while it runs (Claude Code's stream-json input).

    The supervisor writes ``encode(first)`` when the CLI starts, ``encode(text)`` for each message
    ``send`` delivers, and closes stdin when the CLI ends a turn (``turn_end`` on a stdout line)
    having taken every message written (``taken``: its acknowledgement of one): the CLI then
    exits as it would with stdin closed. A message it took mid-turn joins that turn; one it had
    not taken yet when the turn ended starts the next.
    """

    first: str  # the task: the first user message
    encode: Callable[[str], bytes]  # one user message as the line written to stdin
    turn_end: Callable[[bytes], bool]  # a stdout line that ends a turn
    taken: Callable[[bytes], bool]  # a stdout line that acknowledges one message taken


CpuActivity = Literal["tree", "tools"]
CPU_ACTIVITY: tuple[CpuActivity, ...] = ("tree", "tools")


@dataclass(frozen=True)
class LaunchSpec:
    """What to start: the supervisor runs ``argv`` in ``cwd`` with exactly ``env``, stdin closed
    unless ``live_input``."""

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
    # None: stdin closed (every CLI but one launched with Invocation.live_input).
    live_input: LiveInput | None = None


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
    ``usage_partial``: the usage is what the CLI streamed before it stopped without its final
    totals (``agents/meter.streamed_usage``): a lower bound.
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
    usage_partial: bool = False


@dataclass(frozen=True)
class Cli:
    """What is known of an agent CLI before it runs: its adapter's ``name``; the command that
    ``install``s it, named when it is missing (docs/agents.md, "Installing the CLIs"; "": none);
    whether it ``resumes`` a session (``Invocation.resume_session_id``: ``send`` asks this before
    a turn exists, and ``check_invocation`` refuses the same); the ``options`` of its own,
    besides ``COMMON_OPTIONS``; ``program_name``, its executable's usual name when that is not
    ``name`` ("": none, e.g. the command adapter's command names it); ``session_totals``: its
    usage figures are its session's so far, so a resumed run's include the turns before it
    (Codex's ``turn.completed``); ``cost_totals``: its cost is (Claude Code's
    ``total_cost_usd`` after ``--resume``: its tokens are the process's own, each turn's)."""

    name: str
    install: str
    resumes: bool
    options: tuple[str, ...] = ()
    program_name: str | None = None
    session_totals: bool = False
    cost_totals: bool = False

    def counted_before(self, used: AgentOutput) -> AgentOutput | None:
        """The part of what a session ``used`` that a resumed run's figures count again (to be
        taken off them: ``output.since``): all of it (``session_totals``), its cost alone
        (``cost_totals``), or none."""
        if self.session_totals:
            return used
        return AgentOutput(cost_usd=used.cost_usd) if self.cost_totals else None

    @property
    def program(self) -> str:
        """The executable's usual name (``options.executable`` overrides it)."""
        return self.name if self.program_name is None else self.program_name


class Adapter(Protocol):
    """One agent CLI. Implementations are stateless; one instance serves every run."""

    cli: Cli

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
        # Where the pre-commit framework keeps its hook environments: an agent's own commit runs
        # the user's hooks, which would otherwise install them again elsewhere (a path, no secret)
        "PRE_COMMIT_HOME",
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


def unknown_options(cli: Cli, options: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(key, message) of each of ``options`` that ``cli`` does not know; the message lists the
    ones it does."""
    allowed = sorted({*COMMON_OPTIONS, *cli.options})
    for key in options:
        if key not in allowed:
            yield (
                str(key),
                f"unknown option for the {cli.name} adapter; known: {', '.join(allowed)}",
            )


def check_invocation(invocation: Invocation, cli: Cli) -> None:
    """What every adapter's ``launch`` checks first: ConfigError for an option ``cli`` does not
    know, listing the ones it does; UsageError for a resume it cannot do."""
    for key, message in unknown_options(cli, invocation.options):
        raise _option_error(invocation, key, message)
    if invocation.resume_session_id and not cli.resumes:
        raise UsageError(cannot_resume(cli.name))


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


OPTION_MAX = 10**9
"""The most a number among an adapter's options may be (``max_turns``, ``max_budget_usd``,
``retry_timeout``): far past any real use, and a 400-digit one made ``math.isfinite`` raise
(exit 70 in ``plan lint`` and every command that reads the configuration)."""


def opt_int(
    invocation: Invocation, key: str, default: int | None = None, *, minimum: int = 1
) -> int | None:
    value = invocation.options.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _option_error(
            invocation, key, f"expected an integer >= {minimum}, got {_clipped(value)}"
        )
    if value > OPTION_MAX:
        raise _option_error(invocation, key, f"must be at most {OPTION_MAX}, got {_clipped(value)}")
    return value


def opt_number(invocation: Invocation, key: str) -> float | None:
    value = invocation.options.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:  # nan
        raise _option_error(invocation, key, f"expected a positive number, got {_clipped(value)}")
    if value > OPTION_MAX:  # inf, or an int too large for a float: compared, never converted
        raise _option_error(invocation, key, f"must be at most {OPTION_MAX}, got {_clipped(value)}")
    return float(value)


def _clipped(value: object) -> str:
    """``repr(value)``, at most 20 characters of it (then "…")."""
    try:
        text = repr(value)
    except ValueError:  # an int over Python's 4,300-digit limit (the YAML reader refuses it)
        return "a number of over 4300 digits"
    return text if len(text) <= 20 else text[:20] + "…"


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
    """The refusal for a CLI that cannot continue a session (``Cli.resumes`` False)."""
    return f"the {adapter} adapter cannot resume a session (its CLI has no resume mode)"


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
        real_path(path).relative_to(real_path(root))
    except ValueError:
        return False
    return True


__all__ = [
    "BASE_ENV_NAMES",
    "COMMON_OPTIONS",
    "LOCALE_ENV_NAMES",
    "PRODUCT_ENV_NAMES",
    "Adapter",
    "AgentOutput",
    "Cli",
    "Invocation",
    "LaunchSpec",
    "allowed_env",
    "cannot_resume",
    "check_invocation",
    "deep_merge",
    "executable",
    "is_within",
    "opt_bool",
    "opt_int",
    "opt_mapping",
    "opt_number",
    "opt_str",
    "opt_str_list",
    "opt_str_map",
    "unknown_options",
    "write_config_file",
]
