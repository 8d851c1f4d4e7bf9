"""Running one command module and mapping its errors to exit codes (README, "Exit codes").

Apart from ``cli`` so that ``git agent-review``'s everyday forms run a review without importing
the parser of every command, or argparse (issue 20; docs/decisions.md, "git agent-review and
hooks" item 22).
"""

from __future__ import annotations

import importlib
import os
import sys

from gitflow_agents.base import color
from gitflow_agents.base.errors import BudgetError, ExitCode, GitflowError
from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace
    from typing import Any, TextIO

    # what a command's ``run`` gets: the parser's reading, or ``plain_args``' of an everyday form
    Args = argparse.Namespace | SimpleNamespace


def escape_unencodable() -> None:
    """Have ``sys.stdout`` and ``sys.stderr`` write a character their encoding cannot carry as
    a backslash escape (``\\u2705``) instead of failing. Under a locale that is not UTF-8
    (``LC_ALL=en_US.ISO-8859-1``, ``PYTHONIOENCODING=cp1252``) the first ``✅`` of a markdown
    review, or a path holding a character the locale lacks, raised UnicodeEncodeError: exit 70,
    and ``run`` exited 70 after it had merged the step. Every entry point calls this before it
    prints anything; files the commands write (``--output``, reports, records) are UTF-8
    whatever the locale. A stream without ``reconfigure`` (replaced in-process) is left as is."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def dispatch(args: Args, prog: str = "gitflow-agents") -> int:
    """Run the command module named by ``args.module``; map errors to exit codes (README, "Exit
    codes"): an unexpected exception is an internal error (70), its traceback in the crash log.
    Its output's reader may leave before it ends (``_Dropping``)."""
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Dropping(stdout), _Dropping(stderr)
    try:
        return _run(args, prog)
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _run(args: Args, prog: str) -> int:
    try:
        color.choose(getattr(args, "color", "auto"))
        if args.chdir:
            os.chdir(args.chdir)
        module = importlib.import_module(f"gitflow_agents.commands.{args.module}")
        return int(module.run(args))
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except GitflowError as exc:
        if isinstance(exc, BudgetError) and getattr(args, "json", False) is True:
            _not_started(exc)
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except BrokenPipeError:
        # Written to a closed pipe other than through sys.stdout or sys.stderr (which
        # _Dropping keeps): the command did not finish, so this is no success either.
        sys.stderr.close()
        return ExitCode.INTERNAL
    except OSError as exc:
        # A path the user controls is missing, is a file where a folder should be (or the
        # reverse), or is not writable: one line naming it, not a traceback.
        print(f"{prog}: error: {describe_os_error(exc)}", file=sys.stderr)
        return ExitCode.USAGE
    except Exception as exc:
        # A bug: exit 70 (never 1, which reads as "revise"), the traceback in the crash log.
        from gitflow_agents.base import crash

        return crash.report(exc, prog)
    finally:
        color.choose("auto")  # the choice was this command's (tests run many in one process)


class _Dropping:
    """``sys.stdout`` or ``sys.stderr`` for one command whose reader may go before it ends
    (``… | head -1``): from then on what is written is dropped (the stream is pointed at
    /dev/null, so the interpreter's last flush is quiet too), and the command runs to its end
    and exits with its own code. A review that asks for changes still exits 1 under
    ``set -o pipefail``: it exited 0 when the closed pipe ended it, so a gate read through a
    pipe let everything pass."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def _gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def describe_os_error(exc: OSError) -> str:
    """``path: reason`` for a filesystem error (``No such file or directory``, ``Not a directory``…)."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    return f"{exc.filename}: {reason}"


def _not_started(exc: BudgetError) -> None:
    """What ``--json`` prints on stdout for an agent a spent budget did not start (no run, no
    record: ``spawn``, ``send``, ``flow``): its outcome as a stopped run's (``status``) and why;
    the error line on stderr follows."""
    import json

    print(json.dumps({"status": "budget", "reason": str(exc)}, indent=2, ensure_ascii=False))
