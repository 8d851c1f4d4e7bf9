"""The agent's output and exit, as the supervisor sees them while it waits.

``Output`` reads stdout and stderr into ``worker.log`` (bounded: its head and tail, ``Log``) and
memory (the last 8 MiB of each, raw, for the adapter's ``parse_output``) as they arrive (each
chunk is activity) and emits rate-limited ``agent:output`` events. What reaches ``worker.log``
and the events is masked line by line as it streams (``redact_stream.LineMasker``: the secret
rules and the exact values the run knows; docs/security.md, "Secrets in review output").
``exit_notifier`` gives an fd the supervisor's select wakes on when the agent exits.

Nothing that fails in the reader stops it: an agent whose pipe is no longer drained blocks on
its next write and would hang until the stuck timeout. What reads the output along
(``on_stdout``: the budget's meter, the live input's turn ends) is let go when it raises, and
the failure is said once through ``on_error``; the output is still read to the end.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitflow_agents.base.redact_stream import LineMasker

OUTPUT_EVENT_EVERY = 0.5
CAPTURE_LIMIT = 8 * 1024 * 1024  # bytes of stdout / stderr kept in memory for parse_output
LOG_HEAD = 8 * 1024 * 1024
"""worker.log gets the first LOG_HEAD bytes of output as they come ..."""
LOG_TAIL = 8 * 1024 * 1024
"""... and the last LOG_TAIL bytes when the run ends; what lies between is dropped, and a line
in the log says how much (docs/supervisor.md, "Run folder")."""


class Tail:
    """The last ``limit`` bytes appended, kept as chunks: trimming never moves the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.dropped = 0  # bytes that fell off the front

    def append(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        while self.size - len(self.chunks[0]) >= self.limit:
            first = self.chunks.popleft()
            self.size -= len(first)
            self.dropped += len(first)

    def value(self) -> bytes:
        data = b"".join(self.chunks)
        return data[-self.limit :] if len(data) > self.limit else data

    def cut(self) -> int:
        """Bytes dropped in all, counting the part of the first chunk :meth:`value` leaves out."""
        return self.dropped + max(0, self.size - self.limit)


class Log:
    """``worker.log``: the output as it comes up to :data:`LOG_HEAD` bytes, then (at
    :meth:`close`) a line saying how much was dropped and the last :data:`LOG_TAIL` bytes."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("ab")
        self._written = 0
        self._tail: Tail | None = None

    def write(self, chunk: bytes) -> None:
        if self._tail is None:
            head = chunk[: LOG_HEAD - self._written]
            if head:
                self._file.write(head)
                self._file.flush()
                self._written += len(head)
            chunk = chunk[len(head) :]
            if not chunk:
                return
            self._file.write(
                f"\n[gitflow-agents: worker.log holds the first {LOG_HEAD:,} bytes of output; "
                f"the last {LOG_TAIL:,} follow when the run ends]\n".encode()
            )
            self._file.flush()
            self._tail = Tail(LOG_TAIL)
        self._tail.append(chunk)

    def close(self) -> None:
        if self._tail is not None:
            dropped = self._tail.cut()
            if dropped:
                self._file.write(
                    f"[gitflow-agents: {dropped:,} bytes of output dropped here]\n".encode()
                )
            self._file.write(self._tail.value())
        self._file.close()


@dataclass
class Activity:
    """Last activity (monotonic and wall clock), shared with the output reader threads."""

    at: float = field(default_factory=time.monotonic)
    wall: float = field(default_factory=time.time)
    kind: str = "start"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def touch(self, kind: str) -> None:
        with self.lock:
            self.at, self.wall, self.kind = time.monotonic(), time.time(), kind


class Output:
    """Reads stdout and stderr into worker.log (masked) and memory (raw); emits rate-limited
    agent:output events whose ``tail`` is the last masked line. ``secrets``: exact values to
    mask besides the pattern rules (a reviewed diff's)."""

    def __init__(
        self,
        log_path: Path,
        activity: Activity,
        emit: Callable[[dict[str, Any]], None],
        secrets: Iterable[str] = (),
        *,
        on_stdout: Callable[[bytes], None] | None = None,
        on_error: Callable[[str, Exception], None] | None = None,
    ) -> None:
        self._log = Log(log_path)
        self._on_stdout = on_stdout  # each raw stdout chunk, as read (a budget's usage meter)
        self._on_error = on_error  # (what failed, the exception), once per what
        self._failed: set[str] = set()
        known = frozenset(secrets)
        self._maskers = {"stdout": LineMasker(known), "stderr": LineMasker(known)}
        self._lock = threading.Lock()
        self._activity = activity
        self._emit = emit
        self.captured = {"stdout": Tail(CAPTURE_LIMIT), "stderr": Tail(CAPTURE_LIMIT)}
        self._pending = 0
        self._tail = ""
        self._stream = "stdout"
        self._emitted_at = 0.0
        self.stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, fds: Mapping[str, int]) -> None:
        """Read every stream (name -> fd) in one thread until each reaches EOF."""
        thread = threading.Thread(target=self._read, args=(dict(fds),), daemon=True)
        thread.start()
        self._threads.append(thread)

    def _read(self, fds: dict[str, int]) -> None:
        names = {fd: name for name, fd in fds.items()}
        while names:
            try:
                ready, _, _ = select.select(list(names), [], [], 0.2)
            except (OSError, ValueError):
                return
            if not ready:
                if self.stop.is_set():
                    return
                continue
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                if chunk:
                    try:
                        self._on_chunk(names[fd], chunk)
                    except Exception as exc:  # a bug: the pipe is drained all the same
                        self._failure("copying its output", exc)
                else:
                    del names[fd]

    def _on_chunk(self, name: str, chunk: bytes) -> None:
        self._activity.touch("output")
        if self._on_stdout is not None and name == "stdout":
            try:
                self._on_stdout(chunk)
            except Exception as exc:  # a bug in what reads along: it reads no more
                self._on_stdout = None
                self._failure("reading its output along", exc)
        with self._lock:
            self.captured[name].append(chunk)
            self._write_masked(self._maskers[name].feed(chunk))
            self._pending += len(chunk)
            self._stream = name
        self.flush_due()

    def _failure(self, what: str, exc: Exception) -> None:
        """Say through ``on_error`` that ``what`` failed, the first time it does; whatever that
        raises in turn (a closed stderr) is dropped, so the reader reads on."""
        if what in self._failed or self._on_error is None:
            return
        self._failed.add(what)
        with contextlib.suppress(Exception):
            self._on_error(what, exc)

    def flush_due(self) -> None:
        """Emit the output held back by the rate limit once its time has come: after each
        chunk, and from the supervisor's loop each turn, so a line the agent printed right
        after the last event, then nothing more, is not kept from a live view until the agent
        prints again."""
        with self._lock:
            now = time.monotonic()
            if not self._pending or now - self._emitted_at < OUTPUT_EVENT_EVERY:
                return
            data = self._take(now)
        self._emit(data)

    def _write_masked(self, masked: bytes) -> None:
        """Masked output into worker.log; its last line is the next event's ``tail``."""
        if not masked:
            return
        self._log.write(masked)
        tail = _last_line(masked)
        if tail:
            self._tail = tail[-200:]

    def _take(self, now: float) -> dict[str, Any]:
        data = {"stream": self._stream, "bytes": self._pending, "tail": self._tail}
        self._pending, self._emitted_at = 0, now
        return data

    def finish(self, wait: float) -> None:
        """Wait for EOF up to ``wait`` seconds, stop the readers, flush the last output event."""
        deadline = time.monotonic() + wait
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.stop.set()
        for thread in self._threads:
            thread.join(1.0)
        with self._lock:
            for masker in self._maskers.values():  # the last lines, without their newline
                self._write_masked(masker.flush())
            data = self._take(time.monotonic()) if self._pending else None
            self._log.close()
        if data is not None:
            self._emit(data)

    def done(self) -> bool:
        return not any(thread.is_alive() for thread in self._threads)

    def text(self, name: str) -> str:
        with self._lock:
            return self.captured[name].value().decode("utf-8", "replace")


def _last_line(data: bytes) -> str:
    """The last line of ``data`` with something to show, its unprintable characters (``\r``
    and other line separators among them) dropped; "" when there is none. Only the lines from
    the end back to that one are filtered, not the whole of ``data``."""
    for line in reversed(data.decode("utf-8", "replace").split("\n")):
        shown = "".join(ch for ch in line if ch == "\t" or ch.isprintable())
        if shown.strip():
            return shown
    return ""


def exit_notifier(proc: subprocess.Popen[bytes]) -> tuple[int, int | None]:
    """An fd that becomes readable when ``proc`` exits, for the supervisor's select: a pidfd
    (Linux >= 5.3; no thread), else the read end of a pipe that a waiter thread writes to.
    Returns (fd, write end of the pipe or None)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        # The child is not reaped before we poll it, so this works even if it already exited.
        with contextlib.suppress(OSError):
            return int(pidfd_open(proc.pid)), None
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def wait_exit() -> None:
        proc.wait()
        with contextlib.suppress(OSError):
            os.write(wake_w, b"x")

    threading.Thread(target=wait_exit, daemon=True).start()
    return wake_r, wake_w
