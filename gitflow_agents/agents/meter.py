"""Usage read from an agent CLI's output while it runs, for budgets.

A :class:`Meter` is fed the complete lines of each chunk the CLI prints on stdout, reads the
ones that carry usage and says what the run has used so far (an ``AgentOutput`` with the usage
fields). Only CLIs that print their usage as they go
have one (``METERS``): Claude Code with ``--output-format stream-json --include-partial-messages``
(each API call's ``message_start`` and ``message_delta`` carry its usage as the API streams it,
its ``assistant`` messages repeat the start's; the final ``result`` has the totals and the cost), Codex
``exec --json`` (``turn.completed``), opencode ``run --format json`` (``step_finish``), and the
generic ``command`` adapter when its program prints Claude-style stream-json. Every other CLI
reports its usage only when it ends: a budget can refuse to start it, not stop it mid-run
(docs/configuration.md, "budget").
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from itertools import islice
from operator import itemgetter
from typing import Any, Protocol, TypeVar

from gitflow_agents.agents.base import Adapter, AgentOutput
from gitflow_agents.agents.codex import CodexAdapter
from gitflow_agents.agents.opencode import OpencodeAdapter
from gitflow_agents.agents.output import (
    add_optional,
    as_dict,
    as_float,
    as_int,
    as_str,
    event_model,
    in_range,
    less,
)

# What a line must contain to be worth parsing: the meter reads a 200 MB stream (benchmarks/).
USAGE_MARK = b'"usage"'
TOKENS_MARK = b'"tokens"'
_MARKS = re.compile(re.escape(USAGE_MARK) + b"|" + re.escape(TOKENS_MARK))

# A usage object in the Anthropic API's key order, as Claude Code prints it: its four counts are
# read by the search itself; one in another order is read afterwards (``_counts``).
_API_USAGE = (
    rb'\{"input_tokens":\s*(\d+),\s*"cache_creation_input_tokens":\s*(\d+),'
    rb'\s*"cache_read_input_tokens":\s*(\d+),(?:\s*"cache_creation":\s*\{[^{}\n]*\},|)'
    rb'\s*"output_tokens":\s*(\d+)'
)
_ANY_USAGE = rb"\{[^{}\n]*(?:\{[^{}\n]*\}[^{}\n]*)*\}"
# A ``message_delta``'s usage as Claude Code prints it: its output so far, read by the search.
_OUTPUT_USAGE = rb'\{"output_tokens":\s*(\d+)\}'
# An ``assistant`` line as Claude Code prints it starts with its type, then the message, whose
# model (the API's order) or id comes first; a ``message_start`` stream event (with
# ``--include-partial-messages``) has the same message after its event's type.
_MESSAGE = (
    rb'\{"type":\s*"(?:assistant|stream_event",\s*"event":\s*\{"type":\s*"message_(start))",'
    rb'\s*"message":\s*\{'
)
# A content block's stream event (most of the lines with partial messages), compact as Claude
# Code prints it or spaced as Python's json.dumps does: passed over by comparing its first bytes,
# which costs the search less than its general check of a line's type (any spacing) after it.
_BLOCK_EVENT = rb'\{"type":"stream_event","event":\{"type":"content_block_'
_BLOCK_EVENTS = _BLOCK_EVENT + b"|" + _BLOCK_EVENT.replace(b":", b": ").replace(b",", b", ")
_MODEL = rb'"model":\s*"([^"\\\n]*)"'
_ID = rb'"id":\s*"([^"\\\n]+)"'
# what may follow a message's id, its model read (the API's order: its type and role come first)
_AFTER_ID = rb'(?:,\s*"type":\s*"message",\s*"role":\s*"assistant"|)(?:,\s*' + _MODEL + rb"|)"
# One search over a block of Claude Code's stream-json finds the lines the meter reads. A line
# whose first key is a ``type`` the meter ignores (``user``, ``system``, ...: most of the bytes),
# or a stream event that carries no usage (``content_block_delta`` and the like: most of the
# lines with partial messages), is skipped at its first bytes. An ``assistant`` line or a
# ``message_start`` event gives its message id and its usage object (the last one on the line)
# without its content being read, a ``message_delta`` event its usage (its output read by the
# search when that is all the object holds, as Claude Code prints it; the message is the one
# its ``api_message_id`` names, else the one the last ``message_start`` began); a message's
# model is read where its head names it, before or right after its id (the last one's model is
# the run's). Any other line that mentions usage is
# taken whole, to be parsed as JSON (``result``, a line of another shape). Optional parts are
# written as ``(?:x|)``, which the regular-expression engine tries faster than ``(?:x)?``. The
# last ``"usage":`` of a line (and a delta's ``"api_message_id":``) is found going back from the
# line's end to each ``g`` (``_``) with the rest checked behind it: the engine tries every place
# it goes back to, and the keys after a usage object have many quotes but few of those letters.
# The lines the meter ignores, checked only on a line the search did not read as a message's: a
# stream event other than a message's start or delta, a line whose type is none of
# ``assistant``, ``stream_event`` and ``result``.
_IGNORED = (
    rb'\{"type":\s*"(?:stream_event",\s*"event":\s*\{"type":\s*"(?!message_(?:start|delta)")'
    rb'|(?!assistant"|stream_event"|result"))'
)
_CLAUDE_LINES = re.compile(
    b"".join(
        (
            rb"\n(?!" + _BLOCK_EVENTS + rb")",
            rb'(?:\{"type":\s*"(?:assistant|stream_event",\s*"event":\s*\{"type":\s*"message_',
            rb'(?:(start)|(delta)"))',  # the line's type read once, a message's or a delta's
            rb'(?(2)|",\s*"message":\s*\{(?:' + _MODEL + rb",\s*|)" + _ID + _AFTER_ID + rb")",
            rb'[^\n]*g(?<="usag)e":\s*(' + _API_USAGE + rb"|" + _OUTPUT_USAGE + rb"|" + _ANY_USAGE,
            rb")",
            rb'(?(2)(?:[^\n]*_(?<="api_)message_id":\s*"([^"\\\n]+)"|))',  # a delta's message
            rb"|(?!" + _IGNORED + rb')([^\n]*"usage"[^\n]*))',
        )
    )
)
# A message's head, matched at its line's start: its model before its id, its id, and its
# model right after its id or its type and role (never one its content names: a tool's input).
_HEAD = re.compile(
    b"".join(
        (
            _MESSAGE.replace(b"(start)", b"start"),
            rb"(?:" + _MODEL + rb",\s*|)",
            _ID,
            _AFTER_ID,
        )
    )
)
# A found line's groups: ``message_start`` (empty: not one), ``message_delta`` (empty: not one),
# its message's model named before its id, its id (empty: a ``message_delta``), its model named
# after it (the API's order), the usage object, its four counts (in
# the API's order), the output of a usage object that has only that (a delta's), a delta's
# ``api_message_id`` (Claude Code 2.1 writes it on stream events), and the line to parse as
# JSON (empty: one of the three read here).
_MODEL_BEFORE, _KEY, _MODEL_AFTER, _GROUP_LINE = 2, 3, 4, 12
_LINE = itemgetter(_GROUP_LINE)
# a count's digits, not the start of another number (``1e308``, ``1000.7``: no count)
_WHOLE = rb"(\d+)(?![\d.eE])"
_INPUT = re.compile(
    rb'"(?:input_tokens|cache_creation_input_tokens|cache_read_input_tokens)":\s*' + _WHOLE
)
_OUTPUT = re.compile(rb'"output_tokens":\s*' + _WHOLE)
_CACHED = re.compile(rb'"cache_read_input_tokens":\s*' + _WHOLE)

# How many message lines the meter keeps before counting them together (a few chunks of a
# dense stream; a reading counts them at once): one count per chunk cost more (benchmarks/).
_BATCH = 256
# How many messages the meter remembers (each one's usage, so that a message printed again
# counts once): when it holds twice as many, the older half is forgotten. A message repeats
# while it streams (its content blocks, its partial-message events; subagents' messages
# interleave with it), so one coming back after 4,096 others is counted again: over, never
# under, a budget stops early rather than late; and a stream of hours keeps its memory bounded
# (a 200 MB stream had 139,000 messages), which is also faster (benchmarks/usage_overhead.py).
REMEMBERED = 4096

# a message's input tokens (cache reads and writes included), output tokens, and the part
# of its input read from the cache (priced at the cache's price: agents/prices.estimate)
Counts = tuple[int | None, int | None, int | None]
_NONE: Counts = (None, None, None)
_Found = tuple[bytes, ...]  # the groups of one line _CLAUDE_LINES found
_Parsed = TypeVar("_Parsed")  # what an adapter's parse_output gives


class Meter(Protocol):
    """The usage of one run so far, from its streamed output. ``feed_block`` takes complete
    lines of stdout, ``data[start:end]`` where ``data[start]`` is the newline before the first
    of them (so a block is searched where it lies, never copied); what it parses as JSON goes
    to ``feed``."""

    def feed_block(self, data: bytes, start: int, end: int) -> None: ...

    def feed(self, event: Mapping[str, Any]) -> None: ...

    def reading(self) -> AgentOutput: ...

    def after_totals(self) -> bool:
        """Whether the reading counts usage that streamed after the CLI's last final totals
        (a turn it was stopped in), which an output parsed from those totals misses."""
        ...


def feed_json(meter: Meter, line: bytes) -> None:
    """``line`` parsed as JSON to ``meter.feed`` when it is an object (else nothing)."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return
    if isinstance(event, dict):
        meter.feed(event)


def feed_json_lines(meter: Meter, data: bytes, start: int, end: int) -> None:
    """Each line of the block (``Meter.feed_block``) that mentions usage or tokens, parsed."""
    at = start
    while (hit := _MARKS.search(data, at, end)) is not None:
        begin = data.rfind(b"\n", start, hit.start()) + 1
        stop = data.find(b"\n", hit.end(), end)
        stop = end if stop < 0 else stop
        feed_json(meter, data[begin:stop])
        at = stop + 1


class ClaudeStreamMeter:
    """Claude Code's ``stream-json``: an ``assistant`` event per content block, each with its
    API message's usage (the same message id repeats: the last one counts), and a ``result``
    at the end of each turn, which replaces the sum. With stream-json input a run can take a
    message after a turn's result and go on in another turn: that turn's messages count on top
    of the results until its own ``result``, whose tokens are that turn's alone (Claude Code
    2.1.330: its ``model_usage_since_last_result``) and whose cost is the process's running
    total, so the results' tokens add up and the last one's cost stands."""

    def __init__(self) -> None:
        # each message's counts, or its raw usage object while it has not repeated (read then)
        self.messages: dict[bytes, Counts | bytes] = {}
        self.total: Counts = _NONE  # the messages' sum, kept up
        self._model: str | None = None
        self.result: AgentOutput | None = None  # the results' tokens, the last one's cost
        self.before_result: Counts = _NONE  # the messages' sum when it came
        self.current: bytes | None = None  # the message the API is streaming now
        self._rows: list[_Found] = []  # message lines found, not counted yet
        self._unnamed = 0  # messages without an id so far

    @property
    def model(self) -> str | None:
        """The model the CLI uses now, as the stream names it (None until it does)."""
        self._flush()
        return self._model

    def _count(self, key: bytes, counts: Counts) -> None:
        """Message ``key``'s usage. A message's usage only grows as it streams (its start, its
        deltas, then each content block repeating the start's figures): the largest counts.
        The message is remembered as the latest (``REMEMBERED``)."""
        old = self.messages.pop(key, _NONE)
        old_counts = _counts(old) if isinstance(old, bytes) else old
        counts = _largest(old_counts, counts)
        self.messages[key] = counts
        total_in, total_out, total_cached = self.total
        old_in, old_out, old_cached = old_counts
        self.total = (
            total_in - old_in if old_in is not None and total_in is not None else total_in,
            total_out - old_out if old_out is not None and total_out is not None else total_out,
            total_cached - old_cached
            if old_cached is not None and total_cached is not None
            else total_cached,
        )
        self._add(counts)

    def _add(self, counts: Counts) -> None:
        total_in, total_out, total_cached = self.total
        self.total = (
            add_optional(total_in, counts[0]),
            add_optional(total_out, counts[1]),
            add_optional(total_cached, counts[2]),
        )

    def feed_block(self, data: bytes, start: int, end: int) -> None:
        """The block's lines in order: message lines (``assistant``, ``message_start``,
        ``message_delta``) kept to be counted together, up to ``_BATCH`` of them or until
        anything reads the meter (the model is read from the last one of each block at once);
        any other line with usage parsed as JSON in its place (the lines before it counted
        first)."""
        found = _CLAUDE_LINES.findall(data, start, end)
        if not found:
            return
        if not any(map(_LINE, found)):  # the bulk of a stream: message lines only
            self._keep(found, data, start, end)
        else:
            at = 0
            for index, row in enumerate(found):
                if row[_GROUP_LINE]:
                    self._keep(found[at:index], data, start, end)
                    feed_json(self, row[_GROUP_LINE])  # which counts the kept lines first
                    at = index + 1
            self._keep(found[at:], data, start, end)
        if len(self._rows) >= _BATCH:
            self._flush()

    def _keep(self, rows: list[_Found], data: bytes, start: int, end: int) -> None:
        """``rows``, message lines of the block, kept to be counted; the model is the one the
        last of them with a message names (if it names one: its head, as the search read it;
        while the run's model is unknown, else its line parsed, ``_read_model``)."""
        if rows:
            self._rows += rows
            last = (
                rows[-1] if rows[-1][_KEY] else next((r for r in reversed(rows) if r[_KEY]), None)
            )
            if last is None:
                return
            model = last[_MODEL_BEFORE] or last[_MODEL_AFTER]
            if model:
                self._model = model.decode("utf-8", "replace")
            elif self._model is None:
                self._read_model(data, start, end, last[_KEY])

    def _flush(self) -> None:
        """Count the message lines kept."""
        rows = self._rows
        if rows:
            self._rows = []
            self._messages(rows)
            self._forget()

    def _forget(self) -> None:
        """The older half of the messages remembered forgotten, once there are twice
        ``REMEMBERED`` of them."""
        messages = self.messages
        if len(messages) > 2 * REMEMBERED:
            self.messages = dict(islice(messages.items(), len(messages) - REMEMBERED, None))

    def _messages(self, found: list[_Found]) -> None:
        """Message lines, as found. ``assistant`` lines of messages new to the run, each once
        (the bulk of a stream without partial messages), are summed together, from the counts
        the search read or else from one search of their usage objects joined. Otherwise (a
        message seen before or repeating among them: its content blocks, its partial-message
        events) each message's largest counts among the lines go through ``_count`` once, a
        ``message_start`` making its message the one a ``message_delta`` counts for (as
        ``_stream_event``): the largest counts, so the order they are counted in changes
        nothing."""
        starts, _, _, keys, _, usages, inputs, creations, reads, outputs, *_ = zip(
            *found, strict=True
        )
        messages = self.messages
        if not any(starts) and all(keys) and messages.keys().isdisjoint(keys):
            known = len(messages)
            messages.update(zip(keys, usages, strict=True))
            if len(messages) - known == len(keys):  # each new, and once in the run
                if all(outputs):  # every usage object in the API's order: counted by the search
                    # (float reads digits faster than int; sums of token counts stay exact)
                    cached = int(sum(map(float, reads)))
                    counts: Counts = (
                        int(sum(map(float, inputs + creations))) + cached,
                        int(sum(map(float, outputs))),
                        cached,
                    )
                else:
                    counts = _counts(b"".join(usages))
                self._add(counts)
                return
            for key in keys:  # a message repeated in the run: each line counted in turn
                messages.pop(key, None)
        largest: dict[bytes, Counts] = {}  # each message's largest counts in these lines
        read_as: dict[bytes, bytes] = {}  # each message's last usage object read among them
        current = self.current
        for start, _, _, key, _, usage, tokens, creation, read, output, only, named, _ in found:
            if start:
                current = key
            elif not key:  # a message_delta: of the message it names, else the one streaming
                if not named and current is None:
                    continue
                key = named or current
            seen = largest.get(key)
            if only:  # its output alone, read by the search (a delta's): the rest as it was
                out = int(only)
                if seen is None:
                    largest[key] = (None, out, None)
                elif seen[1] is None or out > seen[1]:
                    largest[key] = (seen[0], out, seen[2])
                continue
            if read_as.get(key) == usage:  # as its line before (its assistant line, its start)
                continue
            read_as[key] = usage
            if output:  # in the API's order: the counts the search read
                cached = int(read)
                counts = (int(tokens) + int(creation) + cached, int(output), cached)
            else:
                counts = _counts(usage)
            largest[key] = counts if seen is None else _largest(seen, counts)
        self.current = current
        for key, most in largest.items():  # then once each, as _count
            if key in messages:
                self._count(key, most)
            else:  # new to the run (most are, with partial messages): nothing to take off
                messages[key] = most
                self._add(most)

    def _read_model(self, data: bytes, start: int, end: int, key: bytes) -> None:
        """The model of the last ``assistant`` line or ``message_start`` of message ``key`` in
        the block, whose head names none (a message whose keys come in another order: its model
        after its usage), its line parsed as JSON; the line is found from the block's end by
        its head (``_HEAD``: a later line naming the id, a ``message_delta``'s
        ``api_message_id`` or a tool result, is passed over). Only while the run's model is
        unknown (``_keep``)."""
        quoted, stop = b'"' + key + b'"', end
        while (at := data.rfind(quoted, start, stop)) >= 0:
            stop = data.rfind(b"\n", start, at)
            if stop < 0:
                return
            head = _HEAD.match(data, stop + 1)
            if head is not None and head[2] == key:
                self._model = _message_model(data, stop + 1, end)
                return

    def feed(self, event: Mapping[str, Any]) -> None:
        self._flush()  # the lines before this event first
        kind = event.get("type")
        if kind == "assistant":
            message = as_dict(event.get("message"))
            usage = as_dict(message.get("usage"))
            if not usage:
                return
            self._count(self._key(message), _usage_counts(usage))
            self._model = as_str(message.get("model")) or self._model
            self._forget()
        elif kind == "stream_event":  # --include-partial-messages: the API's own stream
            named = as_str(event.get("api_message_id"))
            self._stream_event(as_dict(event.get("event")), named.encode() if named else None)
            self._forget()
        elif kind == "result":
            # what the turn's messages streamed: its result may say less (a stop at Claude
            # Code's own --max-budget-usd leaves the last call out of its usage, 2.1.330)
            total, before = self.total, self.before_result
            streamed = (
                less(total[0], before[0]),
                less(total[1], before[1]),
                less(total[2], before[2]),
            )
            self.before_result = total
            self.result = _turn_ended(self.result, event, self._model, streamed)

    def _key(self, message: Mapping[str, Any]) -> bytes:
        """A message's id, the key its usage is counted under (a numbered one without)."""
        name = as_str(message.get("id"))
        if name:
            return name.encode()
        self._unnamed += 1
        return f"#{self._unnamed}".encode()

    def _stream_event(self, event: Mapping[str, Any], named: bytes | None) -> None:
        """``message_start`` (the message's id, model and input) and ``message_delta`` (its
        output so far, as the API counts it), the figures Claude's ``assistant`` events lag. A
        delta counts for the message its ``api_message_id`` names (``named``), else for the last
        start's: a sub-agent's message may start between another message's start and its delta."""
        kind = event.get("type")
        if kind == "message_start":
            message = as_dict(event.get("message"))
            self.current = self._key(message)
            self._model = as_str(message.get("model")) or self._model
            usage = as_dict(message.get("usage"))
            self._count(self.current, _usage_counts(usage))
        elif kind == "message_delta":
            key = named or self.current
            if key is not None:
                usage = as_dict(event.get("usage"))
                self._count(key, _usage_counts(usage))

    def after_totals(self) -> bool:
        """Whether usage streamed after the last ``result`` (a turn it had not ended when it
        was stopped): an output parsed from its results misses that turn."""
        self._flush()
        return self.result is not None and self.total != self.before_result

    def reading(self) -> AgentOutput:
        self._flush()
        tokens_in, tokens_out, cached = self.total
        result = self.result
        if result is not None:
            if self.total == self.before_result:
                return result
            # A turn after the result (a message sent while it ran: Claude Code with stream-json
            # input ends each turn with a result): its messages on top of the results' tokens,
            # the cost left to the price table.
            old_in, old_out, old_cached = self.before_result
            tokens_in = add_optional(result.input_tokens, less(tokens_in, old_in))
            tokens_out = add_optional(result.output_tokens, less(tokens_out, old_out))
            cached = add_optional(result.cached_tokens, less(cached, old_cached))
        return AgentOutput(  # an absurd count (digits an agent printed) is no count
            input_tokens=in_range(tokens_in),
            output_tokens=in_range(tokens_out),
            cached_tokens=in_range(cached),
            model=self._model,
        )


def _turn_ended(
    earlier: AgentOutput | None,
    event: Mapping[str, Any],
    model: str | None,
    streamed: Counts = _NONE,
) -> AgentOutput:
    """The figures of the results so far once ``event``, the ``result`` that ends a turn, came
    after ``earlier`` (the results before it, None: none): its tokens, the turn's own (or what
    the turn's messages ``streamed``, where that is more), added to theirs (a count one of them
    left unknown stays what the others say); its cost, the running total, in place of theirs."""
    usage = as_dict(event.get("usage"))
    turn = _largest(
        (
            _usage_counts(usage)[0],
            as_int(usage.get("output_tokens")),
            as_int(usage.get("cache_read_input_tokens")),
        ),
        streamed,
    )
    if earlier is not None:
        turn = (
            add_optional(earlier.input_tokens, turn[0]),
            add_optional(earlier.output_tokens, turn[1]),
            add_optional(earlier.cached_tokens, turn[2]),
        )
    return AgentOutput(  # an absurd sum (digits an agent printed) is no count
        input_tokens=in_range(turn[0]),
        output_tokens=in_range(turn[1]),
        cached_tokens=in_range(turn[2]),
        cost_usd=as_float(event.get("total_cost_usd", event.get("cost_usd"))),
        model=model,
    )


def _message_model(data: bytes, begin: int, end: int) -> str | None:
    """The ``message.model`` of the ``assistant`` line or ``message_start`` event that starts
    at ``data[begin]`` (it ends at the next newline before ``end``), parsed as JSON; None when
    it names none or is no JSON."""
    stop = data.find(b"\n", begin, end)
    try:
        return event_model(json.loads(data[begin : end if stop < 0 else stop]))
    except (ValueError, RecursionError):
        return None


def _counts(usage: bytes) -> Counts:
    """The input (cache reads and writes included), output and cache-read tokens of raw usage
    objects."""
    found_in, found_out = _INPUT.findall(usage), _OUTPUT.findall(usage)
    found_cached = _CACHED.findall(usage)
    return (
        sum(map(int, found_in)) if found_in else None,
        sum(map(int, found_out)) if found_out else None,
        sum(map(int, found_cached)) if found_cached else None,
    )


def _larger(old: int | None, new: int | None) -> int | None:
    if old is None or new is None:
        return new if old is None else old
    return max(old, new)


def _largest(old: Counts, new: Counts) -> Counts:
    """Each of the counts, the larger of the two (a known one over an unknown one)."""
    return (_larger(old[0], new[0]), _larger(old[1], new[1]), _larger(old[2], new[2]))


def _usage_counts(usage: Mapping[str, Any]) -> Counts:
    """A parsed Claude usage object's counts: every input token (cache reads and writes
    included), the output, the cache reads."""
    total: int | None = None
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        total = add_optional(total, as_int(usage.get(key)))
    cached = as_int(usage.get("cache_read_input_tokens"))
    return total, as_int(usage.get("output_tokens")), cached


class EventsMeter:
    """A CLI whose ``parse_output`` sums usage events (Codex ``turn.completed``, opencode
    ``step_finish``): each event of those types read once by that same parser, alone, and its
    figures added to the running totals (the parser sums them the same way)."""

    def __init__(self, adapter: Adapter, kinds: tuple[str, ...]) -> None:
        self.adapter, self.kinds = adapter, kinds
        self.last = AgentOutput()

    def feed_block(self, data: bytes, start: int, end: int) -> None:
        feed_json_lines(self, data, start, end)

    def feed(self, event: Mapping[str, Any]) -> None:
        if event.get("type") not in self.kinds:
            return
        step, last = self.adapter.parse_output(json.dumps(event), ""), self.last
        cost = last.cost_usd if step.cost_usd is None else (last.cost_usd or 0.0) + step.cost_usd
        self.last = AgentOutput(
            input_tokens=add_optional(last.input_tokens, step.input_tokens),
            output_tokens=add_optional(last.output_tokens, step.output_tokens),
            cached_tokens=add_optional(last.cached_tokens, step.cached_tokens),
            cost_usd=cost,
            model=step.model or last.model,
        )

    def reading(self) -> AgentOutput:
        return self.last

    def after_totals(self) -> bool:
        """Never: the parser sums the same events, all of them."""
        return False


METERS: Mapping[str, Callable[[], Meter]] = {
    "claude": ClaudeStreamMeter,
    "command": ClaudeStreamMeter,
    "codex": lambda: EventsMeter(CodexAdapter(), ("turn.completed",)),
    "opencode": lambda: EventsMeter(OpencodeAdapter(), ("step_finish",)),
}
"""Adapters whose CLI streams its usage, and how to read it (the others: none)."""


AT_TURN_END: frozenset[str] = frozenset({"codex"})
"""Adapters whose CLI says its usage only when a turn ends: ``codex exec`` is one turn, its
tool calls and API calls inside it, so a budget can stop it between turns, not within one."""

FREE: frozenset[str] = frozenset({"builtin", "patch"})
"""Adapters that run no model (the offline reviewer, the patch implementer): they spend
nothing, so a budget has nothing to read or warn of."""


def meter_for(adapter: str) -> Meter | None:
    """A fresh meter for a run of ``adapter``, None when its CLI does not stream usage."""
    make = METERS.get(adapter)
    return make() if make is not None else None


def streamed_usage(
    parse: Callable[[str, str], _Parsed], adapter: str
) -> Callable[[str, str], _Parsed]:
    """``parse`` (``adapter``'s ``parse_output``, whose CLI streams its usage), taking what the
    output's usage lines said when ``parse`` found no usage: a run stopped before its final
    totals (canceled, timed out, its CLI killed) spent what its messages said at least, so the
    figures are marked a lower bound (``usage_partial``). Under a budget the watch does this
    as the output streams (``runs/budget.Watch.fill``)."""

    def parse_output(stdout: str, stderr: str) -> _Parsed:
        parsed = parse(stdout, stderr)
        if not isinstance(parsed, AgentOutput) or _said(parsed):
            return parsed
        # the output kept is a tail: a first line cut in the middle is no line to read
        text = stdout if stdout.startswith("{") else stdout.partition("\n")[2]
        reading = streamed_reading(adapter, text.encode("utf-8", "replace"))
        if reading is None:
            return parsed
        return dataclasses.replace(
            parsed,
            input_tokens=reading.input_tokens,
            output_tokens=reading.output_tokens,
            cached_tokens=reading.cached_tokens,
            cost_usd=reading.cost_usd,
            model=parsed.model or reading.model,
            usage_partial=True,
        )

    return parse_output


def streamed_reading(adapter: str, output: bytes) -> AgentOutput | None:
    """What the usage lines of ``output`` (complete lines of an ``adapter`` run's output, read
    as its budget's watch reads them) say the run spent; None when its CLI streams no usage or
    they say nothing. Also what a lost run's ``worker.log`` is read for (``runs/lost``)."""
    meter = meter_for(adapter)
    if meter is None:
        return None
    data = b"\n" + output
    meter.feed_block(data, 0, len(data))
    reading = meter.reading()
    return reading if _said(reading) else None


def _said(output: AgentOutput) -> bool:
    """Whether ``output`` says anything of the run's usage."""
    return any(v is not None for v in (output.input_tokens, output.output_tokens, output.cost_usd))


__all__ = [
    "AT_TURN_END",
    "FREE",
    "METERS",
    "REMEMBERED",
    "TOKENS_MARK",
    "USAGE_MARK",
    "ClaudeStreamMeter",
    "EventsMeter",
    "Meter",
    "feed_json",
    "feed_json_lines",
    "meter_for",
    "streamed_reading",
    "streamed_usage",
]
