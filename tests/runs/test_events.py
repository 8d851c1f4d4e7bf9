"""The event hub: seed-002 names, channel order, broken channels, session mode, console lines."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitflow_agents.runs.events import (
    ConsoleChannel,
    Event,
    EventHub,
    JsonlChannel,
    MemoryChannel,
    NoSession,
    read_jsonl,
)


class Exploding:
    name = "exploding"

    def __init__(self) -> None:
        self.calls = 0

    def handle(self, event: Event) -> None:
        self.calls += 1
        raise RuntimeError("boom")

    def close(self) -> None:
        raise RuntimeError("boom on close")


def test_lifecycle_events_reach_channels_in_order(tmp_path: Path) -> None:
    memory = MemoryChannel()
    hub = EventHub([memory, JsonlChannel(tmp_path / "events.jsonl")], run_id="r1")
    for kind in ("harness:start", "phase:start", "task:start", "agent:start", "agent:tool"):
        hub.emit(kind, {"n": 1})
    hub.emit("agent:tool:bash", {"command": "ls"})
    for kind in ("agent:complete", "task:complete", "phase:complete", "harness:complete"):
        hub.emit(kind)
    hub.close()
    lines = read_jsonl(tmp_path / "events.jsonl")
    assert [e["type"] for e in lines] == memory.types() == [e.type for e in hub.events]
    assert lines[0] == {
        "type": "harness:start",
        "timestamp": lines[0]["timestamp"],
        "runId": "r1",
        "data": {"n": 1},
    }
    assert lines[0]["timestamp"].endswith("Z")
    assert memory.closed


def test_jsonl_is_flushed_as_it_happens(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    hub = EventHub([JsonlChannel(path)])
    hub.emit("agent:start", {"pid": 1}, run_id="x")
    # readable before close: a killed orchestrator still leaves its events
    assert json.loads(path.read_text().splitlines()[0])["runId"] == "x"
    hub.close()


def test_unknown_event_type_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown event type"):
        EventHub().emit("agent:exploded")


def test_broken_channel_does_not_break_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    bad, memory = Exploding(), MemoryChannel()
    hub = EventHub([bad, memory])
    hub.emit("task:start")
    hub.emit("task:failed", {"reason": "x"})
    hub.close()
    assert memory.types() == ["task:start", "task:failed"]
    assert bad.calls == 2
    err = capsys.readouterr().err
    assert err.count("event channel exploding failed") == 1


def test_subscribe_by_type_and_run() -> None:
    hub = EventHub(run_id="flow")
    seen: list[str] = []
    unsubscribe = hub.subscribe(
        "session:message", lambda e: seen.append(e.data["content"]), run_id="agent-run-2"
    )
    hub.emit("session:message", {"content": "not for me"}, run_id="agent-run-1")
    hub.emit("session:reply", {"content": "another type"}, run_id="agent-run-2")
    hub.emit("session:message", {"content": "continue"}, run_id="agent-run-2")
    unsubscribe()
    hub.emit("session:message", {"content": "after unsubscribe"}, run_id="agent-run-2")
    assert seen == ["continue"]


class OneAtATime(MemoryChannel):
    """Counts deliveries that overlap: ``handle`` gives up the interpreter halfway (as a file
    write does), so a second thread would enter it unless the hub delivers one event at a time."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.overlaps = 0

    def handle(self, event: Event) -> None:
        self.inside += 1
        self.overlaps += self.inside > 1
        time.sleep(0)  # yield to the other threads
        super().handle(event)
        self.inside -= 1


def test_emit_from_threads_delivers_one_event_at_a_time_in_the_record_order() -> None:
    first, second = OneAtATime(), OneAtATime()
    hub = EventHub([first, second])
    start = threading.Barrier(4)

    def burst(thread: int) -> None:
        start.wait()
        for n in range(200):
            hub.emit("agent:output", {"thread": thread, "n": n})

    threads = [threading.Thread(target=burst, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (first.overlaps, second.overlaps) == (0, 0)
    assert len(hub.events) == 800
    assert first.events == second.events == hub.events


def test_console_plain_lines_when_not_a_tty() -> None:
    clock = iter(float(t) for t in [0, 5, 40, 41, 75])
    out = io.StringIO()
    console = ConsoleChannel(out, is_tty=False, progress_every=30, clock=lambda: next(clock))
    hub = EventHub([console], run_id="r")
    hub.emit("agent:start", {"agent": "builder", "pid": 42})
    hub.emit("agent:output", {"agent": "builder", "tail": "too soon"})  # t=5: no line
    hub.emit("agent:output", {"agent": "builder", "tail": "compiling"})  # t=40: progress line
    hub.emit("agent:output", {"agent": "builder", "tail": "x"})  # t=41: rate-limited
    hub.emit(
        "agent:complete",
        {
            "agent": "builder",
            "status": "succeeded",
            "input_tokens": 100,
            "output_tokens": 20,
            "cost_usd": 0.5,
        },
    )
    hub.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "builder: running (pid 42, run r)"
    assert lines[1] == "builder: running 00:40 (last activity 00:00 ago) - compiling"
    assert lines[2].startswith("builder: succeeded 01:15")
    assert "tokens 100/20 $0.5000" in lines[2]
    assert len(lines) == 3
    assert "\x1b[" not in out.getvalue()


def test_console_rich_when_tty() -> None:
    out = io.StringIO()
    console = ConsoleChannel(out, is_tty=True)
    hub = EventHub([console], run_id="r")
    hub.emit("agent:start", {"agent": "reviewer", "pid": 7})
    hub.emit("agent:failed", {"agent": "reviewer", "status": "stuck", "reason": "no activity"})
    hub.close()
    text = out.getvalue()
    assert "reviewer" in text and "stuck" in text
    assert "\x1b[" in text  # drawn by rich.live


class Agent:
    """A running agent as the hub reaches it (the supervisor's AgentSession in production)."""

    def __init__(self, takes_input: bool) -> None:
        self.takes_input, self.got, self.aborted = takes_input, [], None

    def deliver(
        self, text: str, event: str = "session:message", message_id: str | None = None
    ) -> str | None:
        if not self.takes_input:
            return "it cannot take input mid-run"
        self.got.append(text)
        return None

    def abort(self, reason: str) -> None:
        self.aborted = reason


class Endpoint:
    def __init__(self) -> None:
        self.listening: list[str] = []

    def listen(self, run_id: str, run_dir: Path) -> Callable[[], None]:
        self.listening.append(run_id)
        return lambda: self.listening.remove(run_id)


def test_the_hub_routes_send_and_abort_to_the_agent_it_names(tmp_path: Path) -> None:
    hub, endpoint = EventHub(), Endpoint()
    hub.endpoint = endpoint
    live, deaf = Agent(takes_input=True), Agent(takes_input=False)
    detach_live = hub.attach("r1", live, tmp_path)
    detach_deaf = hub.attach("r2", deaf, tmp_path)
    assert endpoint.listening == ["r1", "r2"]
    assert hub.send("r1", "hello") is None and live.got == ["hello"]
    assert hub.send("r2", "hello") == "it cannot take input mid-run"
    hub.abort("r2", "canceled by gitflow-agents cancel")
    assert deaf.aborted == "canceled by gitflow-agents cancel" and live.aborted is None
    detach_deaf()
    assert endpoint.listening == ["r1"]
    with pytest.raises(NoSession):
        hub.send("r2", "anyone?")
    detach_live()
    detach_live()  # a second detach changes nothing
    assert endpoint.listening == []
    with pytest.raises(NoSession):
        hub.abort("r1", "late")
