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
