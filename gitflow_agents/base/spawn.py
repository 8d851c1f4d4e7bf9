"""Starting git without ``subprocess``: ``os.posix_spawn``, pipes from ``os.pipe``, both output
pipes read to their end through ``select.poll`` (no deadlock, whichever fills first), the exit
code from ``os.waitpid``.

Every git process goes through here (``git/cmd.py``, ``git/blobs.py``); everything else runs
through ``proc.py``'s ``subprocess``. Importing ``subprocess`` (with ``threading``,
``selectors``, ``locale`` and ``signal``) cost a small review about 3 ms of its start-up, more
than the target leaves (issue 20; docs/decisions.md, "git agent-review and hooks" item 25).

What a caller sees is what ``proc.run`` gives: a child in its own session, stdin closed unless
there is input, text decoded as UTF-8 with undecodable bytes replaced and line ends made
``\\n`` (``subprocess``' text mode; ``as_written`` keeps them, for a patch or a file), SIGPIPE and SIGXFSZ at their defaults in the child
(``restore_signals``), the same errors. Unlike ``subprocess`` the program is found on the
``PATH`` of the environment given without a process per directory, and a descriptor the parent
itself inherited as inheritable stays open in the child (Python opens its own non-inheritable).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # ``signal`` builds three enums on import (~0.3 ms)
import contextlib
import os
import select
import time
from collections.abc import Mapping, Sequence

from gitflow_agents.base.errors import GitflowError
from gitflow_agents.base.records import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import IO

SIGKILL: int = _signal.SIGKILL
# what ``subprocess`` resets in its children (``restore_signals``): Python ignores SIGPIPE
_RESTORED: tuple[int, ...] = tuple(
    getattr(_signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(_signal, name)
)
_CHUNK = 65536


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


def kill_group(pid: int, sig: int = SIGKILL) -> None:
    """Signal the process group led by ``pid`` (started in a session of its own)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def text(data: bytes, *, as_written: bool = False) -> str:
    """What ``subprocess``' text mode makes of ``data``: UTF-8, undecodable bytes replaced,
    ``\\r\\n`` and ``\\r`` read as ``\\n``; ``as_written``: every line end kept as it is
    (for a file's content or a diff, whose lines git ends at ``\\n`` alone: a ``\\r`` inside
    a line is part of it)."""
    decoded = data.decode("utf-8", errors="replace")
    if as_written or "\r" not in decoded:
        return decoded
    return decoded.replace("\r\n", "\n").replace("\r", "\n")


def _program(name: str, env: Mapping[str, str]) -> str:
    """The file ``name`` starts: itself when it holds a ``/``, else the first executable file
    of that name on ``env``'s PATH (as ``subprocess`` finds it); GitflowError when none."""
    if "/" in name:
        return name
    for folder in os.get_exec_path(env):  # os.path: no pathlib on a small review's path
        path = os.path.join(folder, name)  # noqa: PTH118
        if os.access(path, os.X_OK) and not os.path.isdir(path):  # noqa: PTH112
            return path
    raise GitflowError(f"command not found: {name}")


def _spawn(argv: tuple[str, ...], env: Mapping[str, str], fds: Sequence[int | None]) -> int:
    """Start ``argv`` in a session of its own, ``fds`` as its stdin, stdout and stderr (None:
    /dev/null); its pid."""
    actions: list[tuple[int, int, int] | tuple[int, int, str, int, int]] = []
    for target, fd in enumerate(fds):
        if fd is None:
            actions.append((os.POSIX_SPAWN_OPEN, target, os.devnull, os.O_RDWR, 0))
        else:
            actions.append((os.POSIX_SPAWN_DUP2, fd, target))
    try:
        return os.posix_spawn(
            _program(argv[0], env),
            argv,
            env,
            file_actions=actions,
            setsid=True,
            setsigdef=_RESTORED,
        )
    except FileNotFoundError as exc:
        raise GitflowError(f"command not found: {argv[0]}") from exc


def _exit_code(pid: int, flags: int = 0) -> int | None:
    """``pid``'s exit code as ``subprocess`` gives it (``-N`` for signal N); None while it
    runs (``flags`` WNOHANG). 0 when someone else already reaped it, as ``subprocess`` says."""
    try:
        found, status = os.waitpid(pid, flags)
    except ChildProcessError:
        return 0
    return None if found == 0 else os.waitstatus_to_exitcode(status)


class Running:
    """A command ``begin`` started; ``result`` gives its Result once (as ``proc.run`` would)."""

    def __init__(
        self,
        argv: tuple[str, ...],
        env: Mapping[str, str],
        input: str | None,
        as_written: bool = False,
    ) -> None:
        self.argv = argv
        self._as_written = as_written
        self.returncode: int | None = None
        out, into_out = os.pipe()
        err, into_err = os.pipe()
        from_in: int | None = None
        self._in: int | None = None
        if input is not None:
            from_in, self._in = os.pipe()
        ends = (out, into_out, err, into_err, from_in, self._in)
        try:
            self.pid = _spawn(argv, env, (from_in, into_out, into_err))
        except BaseException:
            for fd in ends:
                if fd is not None:
                    os.close(fd)
            raise
        for fd in (from_in, into_out, into_err):  # the child's ends: only the child holds them
            if fd is not None:
                os.close(fd)
        self._out, self._err = out, err
        self._open = [fd for fd in (out, err, self._in) if fd is not None]  # ours, to close
        self._input = memoryview((input or "").encode("utf-8", errors="replace"))
        if self._in is not None:
            os.set_blocking(self._in, False)

    def result(self, *, timeout: float | None = None, check: bool = True) -> Result:
        """Wait for the command (``timeout`` seconds from now at most: then its whole process
        group is killed and TimeoutExpired raised); CalledProcessError when ``check`` and it
        exited non-zero."""
        try:
            out, err = self._communicate(None if timeout is None else time.monotonic() + timeout)
        except TimeoutError:
            self.stop()
            raise TimeoutExpired(self.argv, timeout or 0) from None
        except BaseException:
            self.stop()
            raise
        self.returncode = _exit_code(self.pid)
        stdout = text(out, as_written=self._as_written)
        result = Result(self.argv, self.returncode or 0, stdout, text(err))
        if check and result.returncode != 0:
            raise CalledProcessError(result)
        return result

    def stop(self) -> None:
        """End the command when its result is not wanted (its process group killed, its pipes
        closed); nothing when it has already been read."""
        if self.returncode is None:
            kill_group(self.pid)
            self._close()
            self.returncode = _exit_code(self.pid)

    def _close(self) -> None:
        for fd in self._open:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._open, self._in = [], None

    def _communicate(self, deadline: float | None) -> tuple[bytes, bytes]:
        """Write the input and read both outputs to their end, whichever is ready first;
        TimeoutError at ``deadline``."""
        poller = select.poll()
        chunks: dict[int, list[bytes]] = {self._out: [], self._err: []}
        for fd in chunks:
            poller.register(fd, select.POLLIN)
        if self._in is not None:
            if self._input:
                poller.register(self._in, select.POLLOUT)
            else:
                self._close_input()
        open_fds = len(chunks) + (self._in is not None)
        while open_fds:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic()) * 1000
            ready = poller.poll(wait)
            if not ready and deadline is not None:
                raise TimeoutError
            for fd, _events in ready:
                if fd == self._in:
                    if not self._write_some():
                        poller.unregister(fd)
                        self._close_input()
                        open_fds -= 1
                    continue
                data = os.read(fd, _CHUNK)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    open_fds -= 1
        out, err = (b"".join(chunks[fd]) for fd in (self._out, self._err))
        self._close()
        return out, err

    def _write_some(self) -> bool:
        """Write what the pipe takes of the input; False once it is all written (or the
        command closed its input: what it did not read is not wanted, as in ``subprocess``)."""
        assert self._in is not None
        try:
            written = os.write(self._in, self._input[:_CHUNK])
        except BlockingIOError:
            return True
        except BrokenPipeError:
            return False
        self._input = self._input[written:]
        return bool(self._input)

    def _close_input(self) -> None:
        if self._in is not None:
            self._open.remove(self._in)
            with contextlib.suppress(OSError):
                os.close(self._in)
            self._in = None


def begin(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    input: str | None = None,
    as_written: bool = False,
) -> Running:
    """Start ``argv`` and return at once: ``Running.result`` waits for it (what ``proc.run``
    gives, in two halves and without a working directory: git takes ``-C``); ``as_written``:
    its stdout's line ends kept as they are (``text``)."""
    return Running(tuple(str(a) for a in argv), env, input, as_written)


def run(
    argv: Sequence[str], *, env: Mapping[str, str], input: str | None = None, check: bool = True
) -> Result:
    """``begin`` then ``result``."""
    return begin(argv, env=env, input=input).result(check=check)


class Helper:
    """A long-lived helper ``start`` began (``git cat-file --batch``): binary ``stdin`` and
    ``stdout``, its ``pid``; ``finish`` ends it."""

    def __init__(self, argv: tuple[str, ...], env: Mapping[str, str], stderr: IO[bytes]) -> None:
        into_child, to_child = os.pipe()
        from_child, out_of_child = os.pipe()
        try:
            self.pid = _spawn(argv, env, (into_child, out_of_child, stderr.fileno()))
        except BaseException:
            for fd in (to_child, from_child):
                os.close(fd)
            raise
        finally:
            os.close(into_child)
            os.close(out_of_child)
        self.stdin: IO[bytes] = os.fdopen(to_child, "wb")
        self.stdout: IO[bytes] = os.fdopen(from_child, "rb")
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code once it has exited; TimeoutError when it runs ``timeout`` seconds on."""
        if self.returncode is None:
            if timeout is not None and not _exited_within(self.pid, timeout):
                raise TimeoutError
            self.returncode = _exit_code(self.pid)
        return self.returncode or 0


def _exited_within(pid: int, timeout: float) -> bool:
    """Whether ``pid`` (a child not yet reaped) exits within ``timeout`` seconds: woken by its
    pidfd where there is one, else looked at every few milliseconds."""
    with contextlib.suppress(AttributeError, OSError):  # no pidfd: not Linux 5.3+
        fd = os.pidfd_open(pid)
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        finally:
            os.close(fd)
    deadline = time.monotonic() + timeout
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)
    return True


def scratch_file() -> IO[bytes]:
    """An unnamed file for a helper's stderr: a memfd where there is one, else a file of the
    temporary folder (``TMPDIR``, else ``/tmp``) removed as soon as it is open; no import of
    tempfile (shutil, random, the compressors: a small review's start-up, issue 20)."""
    with contextlib.suppress(AttributeError, OSError):  # no memfd: not Linux, or a sandbox
        return os.fdopen(os.memfd_create("gitflow-agents-stderr"), "w+b")
    folder = os.environ.get("TMPDIR") or "/tmp"
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        path = os.path.join(folder, f"gitflow-agents-stderr.{os.urandom(6).hex()}")  # noqa: PTH118
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, flags, 0o600)
            os.unlink(path)  # noqa: PTH108
            return os.fdopen(fd, "w+b")
    raise FileExistsError(f"{folder}: no free name for a temporary file")


def start(argv: Sequence[str], *, env: Mapping[str, str], stderr: IO[bytes]) -> Helper:
    """Start a long-lived helper that talks over binary pipes on stdin and stdout, in a session
    of its own like ``begin``; its stderr goes to ``stderr`` (a file). End it with ``finish``."""
    return Helper(tuple(str(a) for a in argv), env, stderr)


def finish(child: Helper, timeout: float = 5.0) -> int:
    """Close ``child``'s stdin (the end of its input) and wait for it; its whole process group
    is killed when it has not exited within ``timeout`` seconds. Its exit code."""
    for stream in (child.stdin, child.stdout):
        with contextlib.suppress(OSError):
            stream.close()
    try:
        return child.wait(timeout)
    except TimeoutError:
        kill_group(child.pid)
        return child.wait()
