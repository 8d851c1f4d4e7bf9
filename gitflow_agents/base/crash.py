"""What an unexpected exception (a bug) leaves behind: one line on stderr, the traceback in a
crash log, and exit code 70 (``ExitCode.INTERNAL``), never 0 or 1 (which callers read as
"approved" and "revise").

The log is ``$XDG_CACHE_HOME/gitflow-agents/crash.log`` (``~/.cache/...`` when unset or
relative: ``base/xdg.py``), rewritten
by every crash, like pre-commit's ``pre-commit.log``: the version, Python, the command line and
the traceback, ready to paste into a bug report.
"""

from __future__ import annotations

import platform
import sys
import time
import traceback
from pathlib import Path

from gitflow_agents import __version__
from gitflow_agents.base.errors import ExitCode
from gitflow_agents.base.xdg import cache_dir


def crash_log_path() -> Path:
    return cache_dir() / "crash.log"


def report(exc: BaseException, prog: str) -> int:
    """Write the crash log, print one line naming it; the internal-error exit code."""
    text = _text(exc, prog)
    where = _write(text)
    # the log cannot be written: the traceback goes to stderr instead
    hint = f"the traceback is in {where}" if where is not None else "the traceback follows"
    print(
        f"{prog}: internal error (a bug in gitflow-agents): {summary(exc)}; {hint}",
        file=sys.stderr,
    )
    if where is None:
        sys.stderr.write(text)
    return int(ExitCode.INTERNAL)


def log(exc: BaseException, prog: str) -> Path | None:
    """Write the crash log of a bug the command survives (a thread that carries on without
    the part that failed, and says so in a warning of its own); None when it cannot be
    written."""
    return _write(_text(exc, prog))


def summary(exc: BaseException) -> str:
    """``RuntimeError: a bug``: the exception's type and the first line of its message."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__


def _text(exc: BaseException, prog: str) -> str:
    return (
        f"{prog} {__version__} crashed at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
        f"python: {sys.version.split()[0]} ({platform.platform()})\n"
        f"command: {' '.join(sys.argv)}\n"
        f"cwd: {_cwd()}\n\n"
        + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    )


def _cwd() -> str:
    try:
        return str(Path.cwd())
    except OSError:
        return "(removed)"


def _write(text: str) -> Path | None:
    path = crash_log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="backslashreplace")
    except OSError:
        return None
    return path
