"""Usage read from an agent CLI's output while it runs, line by line, for budgets.

A :class:`Meter` is fed each JSON line the CLI prints on stdout and says what the run has used
so far (an ``AgentOutput`` with the usage fields). Only CLIs that print their usage as they go
have one (``METERS``): Claude Code with ``--output-format stream-json`` (each API call's
``assistant`` message carries its usage; the final ``result`` the totals and the cost), Codex
``exec --json`` (``turn.completed``), opencode ``run --format json`` (``step_finish``), and the
generic ``command`` adapter when its program prints Claude-style stream-json. Every other CLI
reports its usage only when it ends: a budget can refuse to start it, not stop it mid-run
(docs/configuration.md, "budget").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from gitflow_agents.agents.base import (
    Adapter,
    AgentOutput,
    add_optional,
    as_dict,
    as_float,
    as_int,
    as_str,
)
from gitflow_agents.agents.codex import CodexAdapter
from gitflow_agents.agents.opencode import OpencodeAdapter

# What a line must contain to be worth parsing: the meter reads a 200 MB stream (benchmarks/).
USAGE_MARK = b'"usage"'
TOKENS_MARK = b'"tokens"'


class Meter(Protocol):
    """The usage of one run so far, from its streamed output."""

    def feed(self, event: Mapping[str, Any]) -> None: ...

    def reading(self) -> AgentOutput: ...


class ClaudeStreamMeter:
    """Claude Code's ``stream-json``: an ``assistant`` event per content block, each with its
    API message's usage (the same message id repeats: the last one counts), and a final
    ``result`` with the run's totals and its cost, which replace the sum."""

    def __init__(self) -> None:
        self.messages: dict[str, tuple[int | None, int | None]] = {}
        self.model: str | None = None
        self.result: AgentOutput | None = None

    def feed(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "assistant":
            message = as_dict(event.get("message"))
            usage = as_dict(message.get("usage"))
            if not usage:
                return
            key = as_str(message.get("id")) or f"#{len(self.messages)}"
            self.messages[key] = (_claude_input(usage), as_int(usage.get("output_tokens")))
            self.model = as_str(message.get("model")) or self.model
        elif kind == "result":
            usage = as_dict(event.get("usage"))
            self.result = AgentOutput(
                input_tokens=_claude_input(usage),
                output_tokens=as_int(usage.get("output_tokens")),
                cached_tokens=as_int(usage.get("cache_read_input_tokens")),
                cost_usd=as_float(event.get("total_cost_usd", event.get("cost_usd"))),
                model=self.model,
            )

    def reading(self) -> AgentOutput:
        if self.result is not None:
            return self.result
        tokens_in: int | None = None
        tokens_out: int | None = None
        for used_in, used_out in self.messages.values():
            tokens_in = add_optional(tokens_in, used_in)
            tokens_out = add_optional(tokens_out, used_out)
        return AgentOutput(input_tokens=tokens_in, output_tokens=tokens_out, model=self.model)


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
