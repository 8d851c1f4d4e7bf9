"""Error types and exit codes. One handler (``cli.dispatch``) maps them to a line on stderr."""

from __future__ import annotations

import enum

from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:  # pathlib costs milliseconds at start-up; only the annotation needs it
    from pathlib import Path


class ExitCode(enum.IntEnum):
    """Documented process exit codes (README, "Exit codes")."""

    OK = 0
    REVISE = 1
    USAGE = 2
    AGENT_FAILED = 3
    GITHUB = 4
    BUDGET = 5  # a budget (.flow/ budget:, --budget-usd / --budget-tokens) ran out
    RATE_LIMITED = 6  # the model API refused for longer than the configured wait
    NOT_CONFIRMED = 75  # EX_TEMPFAIL: `send`'s message taken, not answered in time; retry
    INTERNAL = 70  # EX_SOFTWARE: a bug in gitflow-agents (a traceback is in the crash log)
    INTERRUPTED = 130


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job canceled, ``timeout``, ``kill``), raised where Ctrl-C's interrupt is
    (``agent_run.launch.sigterm_as_interrupt``): the same path, its own name in the records."""


def interrupted_by(exc: BaseException) -> str:
    """What interrupted: ``SIGTERM`` for a :class:`Terminated`, else ``Ctrl-C``; an interrupt
    raised again in its place says what it replaced (``interrupted_by``)."""
    said = getattr(exc, "interrupted_by", None)
    if isinstance(said, str):
        return said
    return "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"


class TextProblem(Exception):
    """Why a text (JSON, YAML) cannot be read, and where in it when known: ``line`` and
    ``column``, counted as each subclass says."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class GitflowError(Exception):
    """Base of every error the user should see as one clear line, never a traceback."""

    exit_code: ExitCode = ExitCode.USAGE
    spent: dict[str, object] | None = None
    """The usage of the agent run that ended in this error (its run record's usage keys, as
    ``runs/spend.run_spend`` reads them), when one ran: what it cost, told even so; nothing
    (0, $0) for an error raised before any agent started, where that is known."""
    outcome: str | None = None
    """That agent run's outcome (``budget``, ``failed``, ``rate_limited``, ``stuck``…), when
    one ran: the run history shows it as it shows any agent run's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(GitflowError):
    """Bad command-line usage or a missing prerequisite the user can fix."""

    exit_code = ExitCode.USAGE


class InputError(GitflowError):
    """A user file is malformed: names the file, and the line and key where known.

    Renders as ``path:line: key: message`` with the parts that are known.
    """

    exit_code = ExitCode.USAGE

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.key = key
        self.detail = message
        super().__init__(format_location(self.path, line, key) + message)


class ConfigError(InputError):
    """A `.flow/` or `.agents-flow/` file is invalid."""


class PlanError(InputError):
    """A spec plan is malformed or does not have the step asked for."""


class TemplateError(InputError):
    """A Jinja or `{variable}` template cannot be rendered."""


class UnsafeWriteError(GitflowError):
    """A write would leave the repository through a symlink, or follow a symlink planted where
    the tool creates a file for an agent (docs/security.md, "Writes")."""

    exit_code = ExitCode.USAGE


class GitError(GitflowError):
    """A git command failed in a way the user has to look at."""

    exit_code = ExitCode.USAGE


class AgentError(GitflowError):
    """An agent failed, got stuck, or timed out."""

    exit_code = ExitCode.AGENT_FAILED


class RateLimitedError(AgentError):
    """An agent was refused by its model API (429, 529, a usage limit) for longer than the
    configured wait (``defaults.rate_limit_wait_secs``)."""

    exit_code = ExitCode.RATE_LIMITED


class BudgetError(GitflowError):
    """A budget is spent: an agent was not started, or was stopped at the limit."""

    exit_code = ExitCode.BUDGET


class GitHubError(GitflowError):
    """The GitHub API failed after retries."""

    exit_code = ExitCode.GITHUB


def format_location(path: str | None, line: int | None, key: str | None) -> str:
    """``path:line: key: `` prefix, omitting what is unknown (empty when nothing is)."""
    parts = []
    if path is not None:
        parts.append(path if line is None else f"{path}:{line}")
    if key:
        parts.append(key)
    return "".join(f"{part}: " for part in parts)
