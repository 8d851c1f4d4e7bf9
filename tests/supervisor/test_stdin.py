"""A live agent's stdin (supervisor/stdin.py): the task first, each message one line, closed when
the CLI ends a turn having taken every message written (so it exits as with stdin closed)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import IO, Any

import pytest

from gitflow_agents.agents.base import LiveInput
from gitflow_agents.agents.claude import ends_turn, took_message, user_line
from gitflow_agents.supervisor.stdin import AgentInput, AgentSession

RESULT = b'{"type":"result","result":"ok"}\n'
TOOK = b'{"type":"user","message":{"role":"user","content":"x"},"isReplay":true}\n'
TOOL = b'{"type":"user","message":{"role":"user","content":[{"type":"tool_result"}]}}\n'


@pytest.fixture
def pipe() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    r, w = os.pipe()
    with os.fdopen(r, "rb") as reader, os.fdopen(w, "wb") as writer:
        yield reader, writer


def messages(reader: IO[bytes]) -> list[str]:
    """What the CLI read, up to the close of its stdin."""
    return [json.loads(line)["message"]["content"] for line in reader.read().splitlines()]


def test_stdin_closes_at_a_turn_end_with_every_message_taken(
    pipe: tuple[IO[bytes], IO[bytes]],
) -> None:
    reader, writer = pipe
    live = AgentInput(LiveInput("the task", user_line, ends_turn, took_message), writer)
    live.start()
    live.feed(TOOK + TOOL)  # the task taken; a tool result is no message of ours
    assert live.write("a message")
    live.feed(b'{"type":"assistant"}\n{"type":"res')  # a line split over two reads
    live.feed(b'ult","result":"turn 1"}\n')
    assert not live.closed  # the turn ended before it took the message: it starts the next
    live.feed(TOOK)
    assert not live.closed
    live.feed(RESULT)
    assert live.closed and not live.write("too late")
    assert messages(reader) == ["the task", "a message"]


def test_a_message_taken_mid_turn_joins_that_turn(pipe: tuple[IO[bytes], IO[bytes]]) -> None:
    reader, writer = pipe
    live = AgentInput(LiveInput("the task", user_line, ends_turn, took_message), writer)
    live.start()
    live.feed(TOOK)
    assert live.write("also this")
    live.feed(TOOL + TOOK + RESULT)  # Claude Code 2.1: one result for both
    assert live.closed
    assert messages(reader) == ["the task", "also this"]


def test_a_write_to_a_cli_that_exited_is_refused(pipe: tuple[IO[bytes], IO[bytes]]) -> None:
    reader, writer = pipe
    live = AgentInput(LiveInput("the task", user_line, ends_turn, took_message), writer)
    live.start()
    reader.close()  # the CLI is gone
    assert not live.write("hello?") and live.closed


def test_the_session_delivers_only_to_a_live_cli(pipe: tuple[IO[bytes], IO[bytes]]) -> None:
    reader, writer = pipe
    emitted: list[tuple[str, dict[str, Any]]] = []
    secret = "hunter2-is-my-password"
    closed = AgentSession(
        "codex", lambda kind, data: emitted.append((kind, dict(data))), frozenset()
    )
    closed.start(None, None)
    assert closed.deliver("hi") == "codex cannot take input mid-run"
    session = AgentSession(
        "claude", lambda kind, data: emitted.append((kind, dict(data))), frozenset({secret})
    )
    session.start(LiveInput("the task", user_line, ends_turn, took_message), writer)
    assert session.deliver(f"use {secret}") is None
    [(kind, data)] = emitted
    assert kind == "session:message" and data["delivery"] == "now"
    assert data["content"].startswith("use ") and secret not in data["content"]  # masked
    session.feed(TOOK + TOOK + RESULT)
    assert session.deliver("late") == "claude has ended its last turn"
    assert messages(reader) == ["the task", f"use {secret}"]
    session.abort("canceled by gitflow-agents cancel")
    assert session.aborted == "canceled by gitflow-agents cancel"
