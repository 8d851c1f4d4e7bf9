"""The one subprocess helper: argv lists, no shell, own process group, timeout, typed result.

git is started by ``spawn`` (``os.posix_spawn``, no ``subprocess`` import: issue 20), everything
else here."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from gitflow_agents.base.errors import GitflowError

# The values and errors are shared with ``spawn`` (which starts git without ``subprocess``).
from gitflow_agents.base.spawn import CalledProcessError as CalledProcessError
from gitflow_agents.base.spawn import Result as Result
from gitflow_agents.base.spawn import TimeoutExpired as TimeoutExpired
from gitflow_agents.base.spawn import kill_group as kill_group


def run(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
    check: bool = True,
    merge_stderr: bool = False,
) -> Result:
    """Run ``argv`` to completion and capture text output.

    The child gets its own session (so a timeout kills the whole tree) and stdin closed
    unless ``input`` is given. ``merge_stderr``: stderr goes to ``stdout`` as it comes, in
    order (``stderr`` is then empty).
    """
    argv = tuple(str(a) for a in argv)
    try:
        child = subprocess.Popen(  # noqa: S603 - argv list, never a shell
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise GitflowError(f"command not found: {argv[0]}") from exc
    try:
        stdout, stderr = child.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(child.pid)
        child.communicate()
        raise TimeoutExpired(argv, timeout or 0) from None
    except BaseException:
        kill_group(child.pid)
        child.wait()
        raise
    result = Result(argv, child.returncode, stdout, stderr or "")
    if check and result.returncode != 0:
        raise CalledProcessError(result)
    return result
