"""The event hub (docs/protocol.md, "Events"): lifecycle events fanned out to channels attached at creation.

Event names are the seed's: ``harness:start|complete``, ``phase:start|complete``,
``task:start|complete|failed``, ``agent:start|output|tool|complete|failed`` and
``session:message|reply`` (the turn ``send`` starts). Every event carries its type, an ISO-8601
UTC timestamp, the ``run_id`` of the agent invocation it belongs to (a fresh one per invocation)
and a data mapping.

Channels are interfaces to a run (the ``events.jsonl`` writer, the console, later the GitHub
comment). A channel that raises never breaks the run: the error is logged once per channel and the
event still reaches every other channel.

The hub also knows the agents running under it (``attach``, by the supervisor) and routes what
the control channel (``runs/control.py``) receives to them: ``send`` a message, ``abort`` one
agent (issue 26).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Protocol

from gitflow_agents.base.camel import camel_json
from gitflow_agents.base.jsondata import JsonProblem, loads
from gitflow_agents.base.redact import redact_text
from gitflow_agents.runs.live import LiveTable
from gitflow_agents.runs.spend import run_spend

EVENT_TYPES = frozenset(
    {
        "harness:start",
        "harness:complete",
        "phase:start",
        "phase:complete",
        "task:start",
        "task:complete",
        "task:failed",
        "agent:start",
        "agent:output",
        "agent:tool",
        "agent:complete",
        "agent:failed",
        "agent:reply",
        "agent:waiting",  # for a slot of its adapter, or out a rate limit (agent_run/attempts.py)
        "session:message",
        "session:reply",
    }
)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Event:
    type: str
    timestamp: str
    run_id: str | None
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return camel_json(self)


def check_event_type(event_type: str) -> None:
    """Raise ValueError for a name outside the protocol's list (``agent:tool:<name>`` is allowed)."""
    if event_type in EVENT_TYPES or event_type.startswith("agent:tool:"):
        return
    raise ValueError(f"unknown event type {event_type!r}")


class Channel(Protocol):
    """Receives every event of the hub it is attached to, in emission order."""

    name: str

    def handle(self, event: Event) -> None: ...

    def close(self) -> None: ...


Subscriber = Callable[[Event], None]


class Session(Protocol):
    """A running agent as the hub reaches it (the supervisor's, ``supervisor/run.py``)."""

    def deliver(
        self, text: str, event: str = "session:message", message_id: str | None = None
    ) -> str | None:
        """Give ``text`` to the agent now (recorded as ``event``: ``session:message`` or, from
        ``reply``, ``session:reply``, with ``message_id`` when the sender gave one): None when
        delivered, else why it cannot take input mid-run (then it is queued for its next turn:
        ``runs/control.py``)."""
        ...

    def abort(self, reason: str) -> None:
        """Stop this agent (its process tree) only; its run ends canceled."""
        ...


class Endpoint(Protocol):
    """Where an orchestrator listens for ``send`` and ``cancel`` (``runs/control.Control``)."""

    def listen(self, run_id: str, run_dir: Path) -> Callable[[], None]:
        """Start listening for the agent run ``run_id`` (in its folder); returns the stop."""
        ...


class NoSession(LookupError):
    """The hub has no running agent of that run id (not started yet, or ended)."""


class EventHub:
    """Emits events to the channels given at creation and to subscribers.

    Thread-safe: the supervisor's output readers emit from their own threads. Delivery happens
    under one lock, so every channel sees the same total order.
    """

    def __init__(self, channels: Sequence[Channel] = (), *, run_id: str | None = None) -> None:
        self.run_id = run_id
        self.events: list[Event] = []
        self._channels = tuple(channels)
        self._subscribers: list[tuple[str, str | None, Subscriber]] = []
        self._broken: set[int] = set()
        self._lock = threading.RLock()
        self._closed = False
        self.endpoint: Endpoint | None = None  # the control channel (runs/control.py), if any
        self._sessions: dict[str, Session] = {}

    # --- the running agents: send and abort (the control channel's requests) ---------------

    def attach(self, run_id: str, session: Session, run_dir: Path) -> Callable[[], None]:
        """``session`` is the running agent of ``run_id`` until the returned detach is called;
        with an endpoint, the orchestrator listens for it meanwhile."""
        with self._lock:
            self._sessions[run_id] = session
        stops = [self.endpoint.listen(run_id, run_dir)] if self.endpoint is not None else []

        def detach() -> None:
            with self._lock:
                if self._sessions.get(run_id) is session:
                    del self._sessions[run_id]
                stop = stops.pop() if stops else None
            if stop is not None:  # once
                stop()

        return detach

    def send(
        self,
        run_id: str,
        text: str,
        event: str = "session:message",
        message_id: str | None = None,
    ) -> str | None:
        """Deliver ``text`` to the running agent ``run_id`` (recorded as ``event``, with the
        sender's ``message_id``): None when delivered now, else why its CLI cannot take input
        mid-run. NoSession when no such agent runs here."""
        return self._session(run_id).deliver(text, event, message_id)

    def abort(self, run_id: str, reason: str) -> None:
        """Stop the running agent ``run_id`` only. NoSession when no such agent runs here."""
        self._session(run_id).abort(reason)

    def _session(self, run_id: str) -> Session:
        with self._lock:
            session = self._sessions.get(run_id)
        if session is None:
            raise NoSession(run_id)
        return session

    def subscribe(
        self, event_type: str, callback: Subscriber, *, run_id: str | None = None
    ) -> Callable[[], None]:
        """Call ``callback`` for events of ``event_type`` ("*" for all), optionally one run's.

        Returns the function that unsubscribes.
        """
        entry = (event_type, run_id, callback)
        with self._lock:
            self._subscribers.append(entry)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._subscribers:
                    self._subscribers.remove(entry)

        return unsubscribe

    def emit(
        self, event_type: str, data: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> Event:
        check_event_type(event_type)
        event = Event(
            type=event_type,
            timestamp=_now_iso(),
            run_id=run_id if run_id is not None else self.run_id,
            data=dict(data or {}),
        )
        with self._lock:
            self.events.append(event)
            for channel in self._channels:
                self._deliver(channel, event)
            for wanted, wanted_run, callback in list(self._subscribers):
                if wanted not in ("*", event.type):
                    continue
                if wanted_run is not None and wanted_run != event.run_id:
                    continue
                self._deliver_callback(callback, event)
        return event

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for channel in self._channels:
                try:
                    channel.close()
                except Exception as exc:
                    self._log_once(channel, exc)

    def _deliver(self, channel: Channel, event: Event) -> None:
        try:
            channel.handle(event)
        except Exception as exc:
            self._log_once(channel, exc)

    def _deliver_callback(self, callback: Subscriber, event: Event) -> None:
        try:
            callback(event)
        except Exception as exc:
            self._log_once(callback, exc)

    def _log_once(self, source: object, exc: Exception) -> None:
        key = id(source)
        if key in self._broken:
            return
        self._broken.add(key)
        name = getattr(source, "name", None) or getattr(source, "__name__", repr(source))
        print(
            f"gitflow-agents: warning: event channel {name} failed: {exc!r} (further errors hidden)",
            file=sys.stderr,
        )


class MemoryChannel:
    """Keeps events in a list (tests, and the run result's ``events``)."""

    name = "memory"

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.closed = False

    def handle(self, event: Event) -> None:
        self.events.append(event)

    def close(self) -> None:
        self.closed = True

    def types(self) -> list[str]:
        return [event.type for event in self.events]


class JsonlChannel:
    """Appends one JSON object a line to ``path`` and flushes after every event."""

    name = "jsonl"

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("a", encoding="utf-8")

    def handle(self, event: Event) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(event.to_json(), ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The events of an ``events.jsonl`` file (a torn last line, from a killed writer, is skipped)."""
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(loads(line))
        except JsonProblem:  # torn, or not ours: skipped
            continue
    return events


@dataclass
class _AgentLine:
    agent: str
    state: str
    started: float
    last_activity: float
    detail: str = ""
    tokens: str = ""
    run_id: str | None = None  # the run its last start began (its attempts share it)


def _fmt_elapsed(seconds: float) -> str:
    seconds = max(0, int(seconds))
    minutes, sec = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d}" if hours else f"{minutes:02d}:{sec:02d}"


def _tokens(data: Mapping[str, Any]) -> str:
    """What the end line of an agent run says it spent: the run's figures as its record will
    have them (``run_usage``: an attempt after a rate limit's wait, whose own figures are a
    part of the run's), else the event's own (a run of one attempt: the same)."""
    run = data.get("run_usage")
    if isinstance(run, Mapping):
        spend = run_spend(run)
        return usage_line(
            spend.input_tokens,
            spend.output_tokens,
            spend.cost_usd,
            estimated=spend.cost_estimated,
            partial=spend.tokens_partial,
            cost_partial=spend.cost_partial,
        )
    cost = data.get("cost_usd")
    return usage_line(
        data.get("input_tokens"),
        data.get("output_tokens"),
        float(cost) if cost is not None else None,
        estimated=bool(data.get("cost_estimated")),
        partial=data.get("usage_partial") is True,
    )


def usage_line(
    tokens_in: object,
    tokens_out: object,
    cost: float | None,
    *,
    estimated: bool,
    partial: bool,
    cost_partial: bool | None = None,
) -> str:
    """``tokens 1,200/45 $0.0123`` as the console's lines say an agent's (or a step's) usage
    (the counts grouped as ``history`` and ``status`` show them):
    ``?`` for a count not known (never 0), ``est.`` for a cost from the price table (its CLI
    stated none), ``≥`` for figures streamed before it stopped (a lower bound: ``partial``,
    the cost's own mark ``cost_partial`` when a record tells them apart); "" for none."""
    parts = []
    at_least = "≥ " if partial else ""
    if tokens_in is not None or tokens_out is not None:
        shown = [
            "?" if n is None else f"{n:,}" if isinstance(n, int) else str(n)
            for n in (tokens_in, tokens_out)
        ]
        parts.append(f"tokens {at_least}{shown[0]}/{shown[1]}")
    if cost is not None:
        cost_at_least = at_least if cost_partial is None else "≥ " * cost_partial
        parts.append(f"{cost_at_least}${cost:.4f}" + (" est." if estimated else ""))
    return " ".join(parts)


def _agent_text(text: str, limit: int | None = None) -> str:
    """Text an agent wrote, for the console (a CI job's log is public): secrets masked as in
    every output (``gitflow_agents.base.redact``); cut to its last ``limit`` characters, without the
    word the cut splits (it may be the rest of a secret)."""
    text = redact_text(text)
    if limit is None or len(text) <= limit:
        return text
    tail = text[-limit:]
    return "…" + (tail.split(" ", 1)[1] if " " in tail else "")


class ConsoleChannel:
    """A live line per agent: state, elapsed time, last activity, tokens/cost when known.

    With ``is_tty`` and rich importable, a table redraws in place (``runs/live.py``). Otherwise
    (CI, pipes) it prints plain lines: one on start, one on the end, and a progress line at most
    every ``progress_every`` seconds per agent while output arrives.
    """

    name = "console"

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        is_tty: bool | None = None,
        progress_every: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.is_tty = self.stream.isatty() if is_tty is None else is_tty
        self.progress_every = progress_every
        self._clock = clock
        self._lines: dict[str, _AgentLine] = {}
        self._printed: dict[str, float] = {}
        self._live: LiveTable | None = None
        if self.is_tty:
            self._live = self._start_live()

    def _start_live(self) -> LiveTable | None:
        return LiveTable(self.stream)

    def handle(self, event: Event) -> None:
        kind = event.type
        if not kind.startswith("agent:"):
            if not self.is_tty and kind in ("harness:complete", "task:failed"):
                self._print(f"{kind} {_summary(event.data)}".rstrip())
            return
        key = str(event.data.get("agent") or event.run_id or "agent")
        now = self._clock()
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = _AgentLine(key, "starting", now, now)
        if kind == "agent:start":
            if event.run_id is None or event.run_id != line.run_id:  # not an attempt after a
                line.started = now  # rate limit's wait: its time runs from the first start
            line.state, line.last_activity, line.run_id = "running", now, event.run_id
            line.detail = f"pid {event.data.get('pid', '?')}"
            if not self.is_tty:
                self._print(f"{key}: running ({line.detail}, run {event.run_id})")
                self._printed[key] = now
        elif kind in ("agent:output", "agent:tool"):
            line.last_activity = now
            text = str(event.data.get("tail") or event.data.get("tool") or "").strip()
            if text:
                line.detail = _agent_text(text, limit=80)
            if not self.is_tty and now - self._printed.get(key, 0.0) >= self.progress_every:
                self._print(self._plain(line, now))
                self._printed[key] = now
        elif kind in ("agent:complete", "agent:failed"):
            line.state = str(event.data.get("status") or kind.split(":")[1])
            line.detail = _agent_text(str(event.data.get("reason") or ""))
            line.tokens = _tokens(event.data)
            if not self.is_tty:
                self._print(self._plain(line, now))
        elif kind == "agent:waiting":
            line.state, line.detail = "waiting", _agent_text(str(event.data.get("reason") or ""))
            if not self.is_tty:
                self._print(self._plain(line, now))
        elif kind == "agent:reply":
            # The live table shows what the agent said; plain output leaves it to the command.
            questions = list(event.data.get("questions") or ())
            if event.data.get("status") == "needs_input" and questions:
                more = f" (+{len(questions) - 1})" if len(questions) > 1 else ""
                line.detail = _agent_text(f"needs input: {questions[0]}{more}")
            elif event.data.get("summary"):
                line.detail = _agent_text(str(event.data["summary"]))
        if self._live is not None:
            self._live.show(self._rows(now))

    def _plain(self, line: _AgentLine, now: float) -> str:
        text = (
            f"{line.agent}: {line.state} {_fmt_elapsed(now - line.started)}"
            f" (last activity {_fmt_elapsed(now - line.last_activity)} ago)"
        )
        if line.tokens:
            text += f" {line.tokens}"
        if line.detail:
            text += f" - {line.detail}"
        return text

    def _rows(self, now: float) -> list[tuple[str, ...]]:
        return [
            (
                line.agent,
                line.state,
                _fmt_elapsed(now - line.started),
                f"{_fmt_elapsed(now - line.last_activity)} ago",
                line.tokens,
                line.detail[-60:],
            )
            for line in self._lines.values()
        ]

    def _print(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._live is not None:
            self._live.show(self._rows(self._clock()))
            self._live.stop()
            self._live = None


def _summary(data: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in data.items() if isinstance(v, (str, int, float)))
