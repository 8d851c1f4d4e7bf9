"""An agent's stdin while it runs: closed, or the pipe a CLI with live input reads messages from.

Most CLIs start with stdin closed (Codex and opencode wait forever on an open one). A CLI whose
launch has a ``LiveInput`` (Claude Code with ``--input-format stream-json``, only for a run with
a control channel) gets a pipe: its task is the first message, each message ``send`` delivers
is the next, and the pipe is closed once the CLI ends a turn having taken every message written
to it (Claude Code joins a message it takes mid-turn to that turn), or its report is renamed.
It then exits as a CLI with stdin closed does, so how a run ends is judged exactly as before.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gitflow_agents.base.redact import redact_text

if TYPE_CHECKING:
    from gitflow_agents.agents.base import LiveInput
    from gitflow_agents.runs.events import EventHub

Emit = Callable[[str, Mapping[str, Any]], None]

MAX_LINE = 1024 * 1024  # a stdout line longer than this is not a turn's end we need to see
STARTING = 10.0  # seconds a message waits for a live CLI that is being started


def stdin_of(live: LiveInput | None) -> int:
    """What ``Popen`` gets as stdin."""
    return subprocess.DEVNULL if live is None else subprocess.PIPE


class AgentInput:
    """The write end of a live agent's stdin; thread-safe (``send`` arrives on the control
    channel's threads, the turn ends on the output reader's, the close on the supervisor's)."""

    def __init__(self, live: LiveInput, pipe: IO[bytes]) -> None:
        self.live, self._pipe = live, pipe
        self._lock = threading.Lock()
        self._given = 0  # messages written (the task is the first)
        self._taken = 0  # messages the CLI said it took
        self._partial = b""
        self.closed = False

    def start(self) -> None:
        """The task, as the first message."""
        self.write(self.live.first)

    def write(self, text: str) -> bool:
        """Write one message; False when stdin is closed already (the agent has ended its last
        turn, or exited): the message cannot reach this run."""
        with self._lock:
            if self.closed:
                return False
            try:
                self._pipe.write(self.live.encode(text))
                self._pipe.flush()
            except (BrokenPipeError, OSError, ValueError):  # it exited meanwhile
                self._close()
                return False
            self._given += 1
            return True

    def feed(self, chunk: bytes) -> None:
        """Read a chunk of the CLI's stdout: the messages it took are counted, and stdin closes
        when it ends a turn having taken every message written (one written meanwhile starts
        a turn of its own)."""
        with self._lock:
            data = self._partial + chunk
            *lines, self._partial = data.split(b"\n")
            if len(self._partial) > MAX_LINE:
                self._partial = b""
            for line in lines:
                if self.live.taken(line):
                    self._taken += 1
                elif self.live.turn_end(line) and self._taken >= self._given:
                    self._close()

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError, ValueError):
            self._pipe.close()


class AgentSession:
    """One supervised agent as the event hub reaches it (``runs/events.Session``): ``send``
    writes to a live CLI's stdin, ``cancel`` asks the supervisor to stop this agent only."""

    def __init__(self, adapter: str, emit: Emit, secrets: frozenset[str]) -> None:
        self.adapter, self._emit, self._secrets = adapter or "its CLI", emit, secrets
        self.input: AgentInput | None = None
        self.aborted: str | None = None  # why it was canceled; the wait loop stops it
        self._detach: Callable[[], None] | None = None
        self._live = False  # its CLI takes input mid-run once started
        self._started = threading.Event()  # its CLI started (or never will)

    def start(self, live: LiveInput | None, pipe: IO[bytes] | None) -> None:
        """The CLI started: a live one gets its task as the first message."""
        if live is not None and pipe is not None:
            self.input = AgentInput(live, pipe)
            self.input.start()
        self._started.set()

    def join(self, hub: EventHub, run_id: str, run_dir: Path, *, live: bool) -> None:
        """Be the hub's running agent ``run_id`` (its control channel listens meanwhile);
        ``live``: its CLI will take input mid-run once it has started."""
        self._live = live
        self._detach = hub.attach(run_id, self, run_dir)

    def deliver(
        self, text: str, event: str = "session:message", message_id: str | None = None
    ) -> str | None:
        if self._live:  # listening since just before its CLI started: wait for that
            self._started.wait(STARTING)
        if self.input is None:
            if self._live:
                return f"{self.adapter} has not started"
            return f"{self.adapter} cannot take input mid-run"
        if not self.input.write(text):
            return f"{self.adapter} has ended its last turn"
        data = {"content": redact_text(text, self._secrets), "delivery": "now"}
        if message_id is not None:
            data["messageId"] = message_id  # what a repeated `send` looks for (runs/control.py)
        self._emit(event, data)
        return None

    def abort(self, reason: str) -> None:
        self.aborted = reason

    def feed(self, chunk: bytes) -> None:
        if self.input is not None:
            self.input.feed(chunk)

    def close_input(self) -> None:
        if self.input is not None:
            self.input.close()

    def leave(self) -> None:
        """The run ends: stdin closed, the hub (and its control channel) let go."""
        self._started.set()
        self.close_input()
        detach, self._detach = self._detach, None
        if detach is not None:
            detach()
