"""The one subprocess helper: argv lists, no shell, own process group, timeout, typed result."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from subprocess import Popen
from typing import IO, NamedTuple

from gitflow_agents.base.errors import GitflowError


class Result(NamedTuple):
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class CalledProcessError(GitflowError):
    """A command exited non-zero; the message shows command, code, stdout and stderr."""

    def __init__(self, result: Result) -> None:
        self.result = result
        super().__init__(
            f"command failed (exit {result.returncode}): {' '.join(result.argv)}\n"
            f"stdout: {_tail(result.stdout)}\nstderr: {_tail(result.stderr)}"
        )


class TimeoutExpired(GitflowError):
    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        self.argv = tuple(argv)
        super().__init__(f"command timed out after {timeout:g}s: {' '.join(argv)}")


def _tail(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal the process group led by ``pid`` (started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


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
    running = begin(argv, cwd=cwd, env=env, input=input, merge_stderr=merge_stderr)
    return running.result(timeout=timeout, check=check)


def begin(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    merge_stderr: bool = False,
) -> Running:
    """Start what ``run`` runs and return at once: ``Running.result`` waits for it. Meanwhile
    the caller does other work (a small review imports its modules while git answers its
    first question, issue 20)."""
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
    return Running(argv, child, input)


class Running:
    """A command ``begin`` started; ``result`` gives its Result once (as ``run`` would)."""

    def __init__(self, argv: tuple[str, ...], child: Popen[str], input: str | None) -> None:
        self.argv, self._child, self._input = argv, child, input

    def result(self, *, timeout: float | None = None, check: bool = True) -> Result:
        """Wait for the command (``timeout`` seconds from now at most: then its whole process
        group is killed and TimeoutExpired raised); CalledProcessError when ``check`` and it
        exited non-zero."""
        argv, child = self.argv, self._child
        try:
            stdout, stderr = child.communicate(input=self._input, timeout=timeout)
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

    def stop(self) -> None:
        """End the command when its result is not wanted (its process group killed, its pipes
        drained); nothing when it has already been read."""
        if self._child.returncode is None:
            kill_group(self._child.pid)
            self._child.communicate()


def start(argv: Sequence[str], *, env: Mapping[str, str], stderr: IO[bytes]) -> Popen[bytes]:
    """Start a long-lived helper that talks over binary pipes on stdin and stdout (``git
    cat-file --batch``), in its own session like ``run``; ``stderr`` goes to ``stderr``. End it
    with ``finish``."""
    argv = tuple(str(a) for a in argv)
    try:
        return subprocess.Popen(  # noqa: S603 - argv list, never a shell
            argv,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise GitflowError(f"command not found: {argv[0]}") from exc


def finish(child: Popen[bytes], timeout: float = 5.0) -> int:
    """Close ``child``'s stdin (the end of its input) and wait for it; its whole process group
    is killed when it has not exited within ``timeout`` seconds. Its exit code."""
    for stream in (child.stdin, child.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    _until_exit(child.pid, timeout)
    try:
        return child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(child.pid)
        return child.wait()


def _until_exit(pid: int, timeout: float) -> None:
    """Block until ``pid`` exits (at most ``timeout`` seconds) on a pidfd, where there is one:
    ``Popen.wait`` with a timeout polls, sleeping 0.5 ms and more between looks, which was
    a millisecond at the end of every small review (issue 20). Elsewhere ``wait`` polls."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or already reaped
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
