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
from gitflow_agents.base.errors import ExitCode, GitflowError
from gitflow_agents.base.records import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    # what a command's ``run`` gets: the parser's reading, or ``plain_args``' of an everyday form
    Args = argparse.Namespace | SimpleNamespace


def dispatch(args: Args, prog: str = "gitflow-agents") -> int:
    """Run the command module named by ``args.module``; map errors to exit codes (README, "Exit
    codes"): an unexpected exception is an internal error (70), its traceback in the crash log."""
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
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except BrokenPipeError:
        # Output piped into `head` and closed early: not an error worth a traceback.
        sys.stderr.close()
        return ExitCode.OK
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


def describe_os_error(exc: OSError) -> str:
    """``path: reason`` for a filesystem error (``No such file or directory``, ``Not a directory``…)."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    return f"{exc.filename}: {reason}"
