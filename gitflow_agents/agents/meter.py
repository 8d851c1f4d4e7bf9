"""Usage read from an agent CLI's output while it runs, line by line, for budgets.

A :class:`Meter` is fed each JSON line the CLI prints on stdout and says what the run has used
so far (an ``AgentOutput`` with the usage fields). Only CLIs that print their usage as they go
have one (``METERS``): Claude Code with ``--output-format stream-json --include-partial-messages``
(each API call's ``message_start`` and ``message_delta`` carry its usage as the API streams it,
its ``assistant`` messages repeat the start's; the final ``result`` has the totals and the cost), Codex
``exec --json`` (``turn.completed``), opencode ``run --format json`` (``step_finish``), and the
generic ``command`` adapter when its program prints Claude-style stream-json. Every other CLI
reports its usage only when it ends: a budget can refuse to start it, not stop it mid-run
(docs/configuration.md, "budget").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from gitflow_agents.agents.base import Adapter, AgentOutput
from gitflow_agents.agents.codex import CodexAdapter
from gitflow_agents.agents.opencode import OpencodeAdapter
from gitflow_agents.agents.output import add_optional, as_dict, as_float, as_int, as_str

# What a line must contain to be worth parsing: the meter reads a 200 MB stream (benchmarks/).
USAGE_MARK = b'"usage"'
TOKENS_MARK = b'"tokens"'


# Claude Code's assistant line as it prints it: type, then the message, its id first; the usage
# object (flat, or with one level of nesting) is the message's last key before the line's end.
_CLAUDE_ASSISTANT = re.compile(rb'\{"type":\s*"assistant",\s*"message":\s*\{"id":\s*"([^"\\]*)"')
_MODEL = re.compile(rb'"model":\s*"([^"\\]*)"')
_USAGE = re.compile(rb'"usage":\s*(\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})')
_COUNT = re.compile(
    rb'"(input_tokens|cache_creation_input_tokens|cache_read_input_tokens|output_tokens)":\s*(\d+)'
)


class Meter(Protocol):
    """The usage of one run so far, from its streamed output: ``feed_line`` takes a raw line
    when it can read it faster than a JSON parse of the whole line (True: done), else the
    line's JSON object goes to ``feed``."""

    def feed_line(self, line: bytes) -> bool: ...

    def feed(self, event: Mapping[str, Any]) -> None: ...

    def reading(self) -> AgentOutput: ...


class ClaudeStreamMeter:
    """Claude Code's ``stream-json``: an ``assistant`` event per content block, each with its
    API message's usage (the same message id repeats: the last one counts), and a final
    ``result`` with the run's totals and its cost, which replace the sum."""

    def __init__(self) -> None:
        self.messages: dict[str, tuple[int | None, int | None]] = {}
        self.total: tuple[int | None, int | None] = (None, None)  # the messages' sum, kept up
        self.model: str | None = None
        self.result: AgentOutput | None = None
        self.current: str | None = None  # the message the API is streaming now

    def _count(self, key: str, tokens_in: int | None, tokens_out: int | None) -> None:
        """Message ``key``'s usage. A message's usage only grows as it streams (its start, its
        deltas, then each content block repeating the start's figures): the largest counts."""
        old_in, old_out = self.messages.get(key, (None, None))
        tokens_in, tokens_out = _larger(old_in, tokens_in), _larger(old_out, tokens_out)
        self.messages[key] = (tokens_in, tokens_out)
        total_in, total_out = self.total
        if old_in is not None and total_in is not None:
            total_in -= old_in
        if old_out is not None and total_out is not None:
            total_out -= old_out
        self.total = (add_optional(total_in, tokens_in), add_optional(total_out, tokens_out))

    def feed_line(self, line: bytes) -> bool:
        """An ``assistant`` line read without parsing its content (the bulk of the stream):
        its id, model and usage object only. False for any other line, or one not shaped as
        Claude Code prints it (then it is parsed whole)."""
        head = _CLAUDE_ASSISTANT.match(line)
        if head is None:
            return False
        usage_at = line.rfind(b'"usage"')
        usage = _USAGE.match(line, usage_at) if usage_at > head.end() else None
        if usage is None:
            return False
        numbers = {key: int(value) for key, value in _COUNT.findall(usage.group(1))}
        model = _MODEL.search(line, head.end())
        if model is not None and model.start() < usage_at:
            self.model = model.group(1).decode("utf-8", "replace") or self.model
        key = head.group(1).decode("utf-8", "replace") or f"#{len(self.messages)}"
        tokens_in = None
        for name in (b"input_tokens", b"cache_creation_input_tokens", b"cache_read_input_tokens"):
            tokens_in = add_optional(tokens_in, numbers.get(name))
        self._count(key, tokens_in, numbers.get(b"output_tokens"))
        return True

    def feed(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "assistant":
            message = as_dict(event.get("message"))
            usage = as_dict(message.get("usage"))
            if not usage:
                return
            key = as_str(message.get("id")) or f"#{len(self.messages)}"
            self._count(key, _claude_input(usage), as_int(usage.get("output_tokens")))
            self.model = as_str(message.get("model")) or self.model
        elif kind == "stream_event":  # --include-partial-messages: the API's own stream
            self._stream_event(as_dict(event.get("event")))
        elif kind == "result":
            usage = as_dict(event.get("usage"))
            self.result = AgentOutput(
                input_tokens=_claude_input(usage),
                output_tokens=as_int(usage.get("output_tokens")),
                cached_tokens=as_int(usage.get("cache_read_input_tokens")),
                cost_usd=as_float(event.get("total_cost_usd", event.get("cost_usd"))),
                model=self.model,
            )

    def _stream_event(self, event: Mapping[str, Any]) -> None:
        """``message_start`` (the message's id, model and input) and ``message_delta`` (its
        output so far, as the API counts it), the figures Claude's ``assistant`` events lag."""
        kind = event.get("type")
        if kind == "message_start":
            message = as_dict(event.get("message"))
            self.current = as_str(message.get("id")) or f"#{len(self.messages)}"
            self.model = as_str(message.get("model")) or self.model
            usage = as_dict(message.get("usage"))
            self._count(self.current, _claude_input(usage), as_int(usage.get("output_tokens")))
        elif kind == "message_delta" and self.current is not None:
            usage = as_dict(event.get("usage"))
            self._count(self.current, _claude_input(usage), as_int(usage.get("output_tokens")))

    def reading(self) -> AgentOutput:
        if self.result is not None:
            return self.result
        tokens_in, tokens_out = self.total
        return AgentOutput(input_tokens=tokens_in, output_tokens=tokens_out, model=self.model)


def _larger(old: int | None, new: int | None) -> int | None:
    if old is None or new is None:
        return new if old is None else old
    return max(old, new)


def _claude_input(usage: Mapping[str, Any]) -> int | None:
    """Every input token of a Claude usage object (cache reads and writes included)."""
    total: int | None = None
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        total = add_optional(total, as_int(usage.get(key)))
    return total


class EventsMeter:
    """A CLI whose ``parse_output`` sums usage events (Codex ``turn.completed``, opencode
    ``step_finish``): the events of those types seen so far, read by that same parser."""

    def __init__(self, adapter: Adapter, kinds: tuple[str, ...]) -> None:
        self.adapter, self.kinds = adapter, kinds
        self.lines: list[str] = []
        self.last = AgentOutput()

    def feed_line(self, line: bytes) -> bool:
        return False

    def feed(self, event: Mapping[str, Any]) -> None:
        if event.get("type") in self.kinds:
            self.lines.append(json.dumps(event))
            self.last = self.adapter.parse_output("\n".join(self.lines), "")

    def reading(self) -> AgentOutput:
        return self.last


METERS: Mapping[str, Callable[[], Meter]] = {
    "claude": ClaudeStreamMeter,
    "command": ClaudeStreamMeter,
    "codex": lambda: EventsMeter(CodexAdapter(), ("turn.completed",)),
    "opencode": lambda: EventsMeter(OpencodeAdapter(), ("step_finish",)),
}
"""Adapters whose CLI streams its usage, and how to read it (the others: none)."""


def meter_for(adapter: str) -> Meter | None:
    """A fresh meter for a run of ``adapter``, None when its CLI does not stream usage."""
    make = METERS.get(adapter)
    return make() if make is not None else None


__all__ = ["METERS", "TOKENS_MARK", "USAGE_MARK", "ClaudeStreamMeter", "EventsMeter", "Meter"]
