"""``supervisor/output.py``: the rate-limited ``agent:output`` events. A line printed right after
an event, followed by silence, reaches the events when its time comes (the supervisor's loop asks
``flush_due``), not only when the agent prints again (the live view showed a stale last line)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gitflow_agents.supervisor import output
from gitflow_agents.supervisor.output import Activity, Output


def _until(condition: Any) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_held_back_output_is_emitted_once_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]  # output.py's monotonic clock, moved by hand
    fake = SimpleNamespace(monotonic=lambda: clock[0], time=time.time, sleep=time.sleep)
    monkeypatch.setattr(output, "time", fake)
    events: list[dict[str, Any]] = []
    out = Output(tmp_path / "worker.log", Activity(), events.append)
    read_fd, write_fd = os.pipe()
    out.start({"stdout": read_fd})
    os.write(write_fd, b"first\n")
    _until(lambda: events)  # the first chunk of a run is emitted at once
    os.write(write_fd, b"second\n")
    _until(lambda: out.captured["stdout"].value() == b"first\nsecond\n")
    out.flush_due()
    assert [e["tail"] for e in events] == ["first"]  # held back: not due yet
    clock[0] += output.OUTPUT_EVENT_EVERY
    out.flush_due()
    assert [e["tail"] for e in events] == ["first", "second"]
    clock[0] += output.OUTPUT_EVENT_EVERY
    out.flush_due()  # nothing new: no event
    assert len(events) == 2
    os.close(write_fd)
    out.finish(5.0)
    assert len(events) == 2 and (tmp_path / "worker.log").read_bytes() == b"first\nsecond\n"


def test_what_raises_in_the_reader_is_said_once_and_the_pipe_is_drained(tmp_path: Path) -> None:
    """A reader thread that died on an exception left the agent blocked on a full pipe: what
    reads along (``on_stdout``) is let go at its first failure, an ``agent:output`` emit that
    raises is dropped, each said once through ``on_error``, and the output is read to the end."""
    fed: list[bytes] = []
    failed: list[tuple[str, str]] = []

    def along(chunk: bytes) -> None:
        fed.append(chunk)
        raise NameError("name 'usage' is not defined")

    emitted: list[dict[str, Any]] = []

    def emit(data: dict[str, Any]) -> None:  # the first event: the reader's, on the first chunk
        emitted.append(data)
        if len(emitted) == 1:
            raise RuntimeError("a channel's bug")

    out = Output(
        tmp_path / "worker.log",
        Activity(),
        emit,
        on_stdout=along,
        on_error=lambda what, exc: failed.append((what, str(exc))),
    )
    read_fd, write_fd = os.pipe()
    out.start({"stdout": read_fd})
    data = b"".join(b"%07d\n" % n for n in range(200_000))  # 1.6 MB: many pipes full
    written = 0
    while written < len(data):  # blocks on a full pipe unless the reader drains it
        written += os.write(write_fd, data[written : written + 65536])
    os.close(write_fd)
    out.finish(30.0)
    assert out.captured["stdout"].value() == data
    assert (tmp_path / "worker.log").read_bytes() == data
    assert len(fed) == 1
    assert failed == [
        ("reading its output along", "name 'usage' is not defined"),
        ("copying its output", "a channel's bug"),
    ]
