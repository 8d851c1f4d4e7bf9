"""Usage read from a CLI's output as it streams (``agents/meter.py``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from gitflow_agents.agents.base import AgentOutput
from gitflow_agents.agents.claude import ClaudeAdapter
from gitflow_agents.agents.codex import CodexAdapter
from gitflow_agents.agents.meter import (
    METERS,
    REMEMBERED,
    ClaudeStreamMeter,
    EventsMeter,
    meter_for,
    streamed_usage,
)
from gitflow_agents.agents.output import since

DATA = Path(__file__).resolve().parent.parent / "data" / "agent-output"


def test_claude_stream_meter_counts_each_message_once_and_takes_the_result_totals() -> None:
    meter = ClaudeStreamMeter()
    usage = {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}
    meter.feed({"type": "assistant", "message": {"id": "a", "usage": usage}})
    usage = {**usage, "output_tokens": 7}  # the same message again, a later content block
    meter.feed({"type": "assistant", "message": {"id": "a", "usage": usage}})
    assert (meter.reading().input_tokens, meter.reading().output_tokens) == (105, 7)
    meter.feed({"type": "result", "usage": {"input_tokens": 200}, "total_cost_usd": 0.5})
    assert (meter.reading().input_tokens, meter.reading().cost_usd) == (200, 0.5)


def test_codex_turns_are_summed_as_its_parser_sums_them() -> None:
    meter = meter_for("codex")
    assert meter is not None
    usage = {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 10}
    meter.feed({"type": "item.completed", "item": {"type": "agent_message", "text": "hi"}})
    meter.feed({"type": "turn.completed", "usage": usage})
    meter.feed({"type": "turn.completed", "usage": usage})
    reading = meter.reading()
    assert (reading.input_tokens, reading.cached_tokens, reading.output_tokens) == (200, 80, 20)


def test_opencode_steps_carry_tokens_and_cost() -> None:
    meter = meter_for("opencode")
    assert meter is not None
    part = {"tokens": {"input": 10, "output": 5, "cache": {"read": 2}}, "cost": 0.25}
    meter.feed({"type": "step_finish", "sessionID": "s", "part": part})
    reading = meter.reading()
    assert (reading.input_tokens, reading.output_tokens, reading.cost_usd) == (12, 5, 0.25)


def test_only_clis_that_stream_usage_have_a_meter() -> None:
    assert set(METERS) == {"claude", "command", "codex", "opencode"}
    assert meter_for("gemini") is None and meter_for("aider") is None


def test_claude_lines_read_fast_count_as_the_parsed_events_do() -> None:
    """The raw-line path (id, model and usage only) agrees with parsing the whole event, for
    compact and spaced JSON, a repeated message (its usage only grows: the larger figures
    count), and content that quotes a usage object."""
    events = [
        {"type": "system", "subtype": "init", "model": "claude-sonnet-4-5"},
        {
            "type": "assistant",
            "message": {
                "id": "msg_1",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": 'see "usage": {"input_tokens": 999}'}],
                "usage": {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 10,
                    "cache_read_input_tokens": 100,
                    "cache_creation": {"ephemeral_5m_input_tokens": 10},
                    "output_tokens": 1,
                },
            },
        },
        {
            "type": "assistant",
            "message": {"id": "msg_1", "usage": {"input_tokens": 3, "output_tokens": 9}},
        },
        {
            "type": "assistant",
            "message": {"id": "msg_2", "usage": {"input_tokens": 5, "output_tokens": 2}},
        },
    ]
    for separators in ((",", ":"), (", ", ": ")):
        fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
        for event in events:
            line = b"\n" + json.dumps(event, separators=separators).encode()
            fast.feed_block(line, 0, len(line))
            parsed.feed(event)
        assert fast.reading() == parsed.reading()
        assert (fast.reading().input_tokens, fast.reading().output_tokens) == (118, 11)
        assert fast.model == "claude-sonnet-4-5"


def test_claude_partial_messages_give_the_output_as_the_api_counts_it() -> None:
    """With --include-partial-messages the API's message_delta says the output so far; the
    assistant event that follows repeats the start's figures and changes nothing."""
    meter = ClaudeStreamMeter()
    start = {
        "id": "msg_9",
        "model": "claude-sonnet-4-5",
        "usage": {"input_tokens": 120, "output_tokens": 1},
    }
    meter.feed({"type": "stream_event", "event": {"type": "message_start", "message": start}})
    delta = {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 30}}
    meter.feed({"type": "stream_event", "event": delta})
    meter.feed({"type": "assistant", "message": start})
    reading = meter.reading()
    assert (reading.input_tokens, reading.output_tokens, reading.model) == (
        120,
        30,
        "claude-sonnet-4-5",
    )


def _claude_line(key: str, usage: dict[str, int], content: str = '[{"type": "text"}]') -> bytes:
    """An assistant line as Claude Code prints it (compact, its message's keys in the API's
    order); ``content`` goes in as raw text."""
    head = f'{{"type":"assistant","message":{{"id":"{key}","type":"message","role":"assistant"'
    rest = f',"model":"{MODEL}","content":{content},"usage":{json.dumps(usage)}}}}}'
    return (head + rest).encode()


MODEL = "claude-sonnet-4-5"


def _block(*lines: bytes) -> tuple[bytes, int, int]:
    data = b"\n" + b"\n".join(lines)
    return data, 0, len(data)


def test_claude_assistant_lines_are_read_from_their_head_and_usage_alone() -> None:
    """The content of an assistant line is never parsed: a line whose content is no JSON at
    all still counts, from its id, model and usage object."""
    meter = ClaudeStreamMeter()
    meter.feed_block(*_block(_claude_line("m1", {"input_tokens": 4, "output_tokens": 2}, "[{")))
    assert (meter.reading().input_tokens, meter.reading().output_tokens) == (4, 2)
    assert meter.model == MODEL


def test_claude_block_reads_every_kind_of_line_in_order_as_the_parsed_events() -> None:
    """One block with what a real stream mixes: new messages, a message repeated in the same
    block and in a later one (its largest figures count, once), the partial messages' stream
    events between them, a user line with a usage key (ignored, as the parser ignores user
    events), an event whose type is not its first key, and no final result yet."""
    usage = {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 1}
    start = {"id": "m3", "model": MODEL, "usage": {"input_tokens": 50, "output_tokens": 1}}
    events: list[dict[str, object]] = [
        {"type": "system", "subtype": "init", "model": "other-model"},
        {"type": "stream_event", "event": {"type": "message_start", "message": start}},
        {"type": "stream_event", "event": {"type": "message_delta", "usage": {"output_tokens": 9}}},
        {"type": "user", "message": {"content": [], "usage": {"input_tokens": 1000}}},
        {
            "message": {"id": "m4", "usage": {"input_tokens": 7, "output_tokens": 7}},
            "type": "assistant",
        },
    ]
    lines = [
        _claude_line("m1", usage),
        _claude_line("m1", {**usage, "output_tokens": 5}),
        _claude_line("m2", usage),
        *(json.dumps(event).encode() for event in events),
        _claude_line("m3", {"input_tokens": 50, "output_tokens": 1}),
    ]
    fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
    fast.feed_block(*_block(*lines[:3]))
    fast.feed_block(*_block(*lines[3:]))
    fast.feed_block(*_block(_claude_line("m2", {**usage, "output_tokens": 4})))  # a later block
    for line in [*lines, _claude_line("m2", {**usage, "output_tokens": 4})]:
        parsed.feed(json.loads(line))
    assert fast.reading() == parsed.reading()
    # m1 103+5, m2 103+4, m3 50+9 (the delta's figure), m4 7+7; the user line's 1000 is not usage
    assert (fast.reading().input_tokens, fast.reading().output_tokens) == (263, 25)
    assert fast.reading().cached_tokens == 200  # m1's and m2's cache reads, each once
    assert fast.model == MODEL


def test_claude_lines_as_the_api_shapes_them_are_read_fast_in_either_usage_order() -> None:
    """The message's model before its id (the API's own order), its usage with the nested
    cache_creation object and keys after the counts, and a usage object in another key order:
    each read from its head and usage alone (its content is no JSON), with the same counts."""
    api = (
        '{"input_tokens":2,"cache_creation_input_tokens":17286,"cache_read_input_tokens":10,'
        '"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":17286},'
        '"output_tokens":3,"service_tier":"standard","inference_geo":"not_available"}'
    )
    other = '{"output_tokens":3,"cache_read_input_tokens":10,"input_tokens":2,"cache_creation_input_tokens":17286}'
    for usage in (api, other):
        line = (
            f'{{"type":"assistant","message":{{"model":"{MODEL}","id":"msg_1","type":"message",'
            f'"role":"assistant","content":[{{,"usage":{usage},"context_management":null}},'
            '"parent_tool_use_id":null,"session_id":"s","uuid":"u"}'
        ).encode()
        meter = ClaudeStreamMeter()
        meter.feed_block(*_block(line))
        meter.feed_block(*_block(line, line))  # the same message's next content blocks
        assert (meter.reading().input_tokens, meter.reading().output_tokens) == (17298, 3)
        assert meter.reading().cached_tokens == 10  # priced at the cache's price
        assert meter.model == MODEL


class _CountingCodex(CodexAdapter):
    """Codex's parser, counting the event lines it is given to read."""

    def __init__(self) -> None:
        super().__init__()
        self.lines_read = 0

    def parse_output(self, stdout: str, stderr: str) -> AgentOutput:
        self.lines_read += len(stdout.splitlines())
        return super().parse_output(stdout, stderr)


def test_events_meter_reads_each_event_once_however_many_turns() -> None:
    """Each new turn is read alone and added to the totals: a run of n turns costs n event
    parses, not 1 + 2 + ... + n (the kept events re-read on each new one)."""
    adapter = _CountingCodex()
    meter = EventsMeter(adapter, ("turn.completed",))
    for turn in range(50):
        usage = {"input_tokens": 100 + turn, "cached_input_tokens": 40, "output_tokens": 10}
        meter.feed({"type": "turn.completed", "usage": usage})
    reading = meter.reading()
    assert adapter.lines_read == 50
    assert (reading.input_tokens, reading.cached_tokens, reading.output_tokens) == (
        sum(range(100, 150)),
        2000,
        500,
    )


def test_events_meter_sums_opencode_costs_and_keeps_unknown_cost_unknown() -> None:
    meter = meter_for("opencode")
    assert meter is not None
    meter.feed({"type": "step_finish", "part": {"tokens": {"input": 1, "output": 2}}})
    assert meter.reading().cost_usd is None  # never said: unknown, not 0
    for cost in (0.25, 0.5):
        part = {"tokens": {"input": 1, "output": 2, "reasoning": 1}, "cost": cost}
        meter.feed({"type": "step_finish", "part": part})
    reading = meter.reading()
    assert (reading.input_tokens, reading.output_tokens, reading.cost_usd) == (3, 8, 0.75)


def test_claude_model_named_in_an_assistant_lines_content_is_not_the_runs_model() -> None:
    """The model is read from the message's own keys (before its id, or after its id, type and
    role), never from a ``model`` key its content carries (a tool's input)."""
    meter = ClaudeStreamMeter()
    usage = {"input_tokens": 4, "output_tokens": 2}
    meter.feed_block(*_block(_claude_line("m1", usage)))
    content = '[{"type":"tool_use","name":"Task","input":{"model":"other-model"}}]'
    line = (
        '{"type":"assistant","message":{"id":"m2","type":"message","role":"assistant",'
        f'"content":{content},"usage":{json.dumps(usage)}}}}}'
    ).encode()
    meter.feed_block(*_block(line))
    assert meter.model == MODEL
    assert (meter.reading().input_tokens, meter.reading().output_tokens) == (8, 4)


def test_claude_model_is_read_from_a_runs_last_line_not_a_later_line_naming_its_id() -> None:
    """The model of a run of assistant lines is read from the head of its last line, found by
    its message id: a later line of the block that names the same id (a user line's tool result,
    with a model key of its own) is passed over, whatever it names."""
    usage = {"input_tokens": 4, "output_tokens": 2}
    first = (
        f'{{"type":"assistant","message":{{"model":"{MODEL}","id":"m1","type":"message",'
        f'"role":"assistant","content":[],"usage":{json.dumps(usage)}}}}}'
    ).encode()
    result = {"type": "tool_result", "tool_use_id": "m1", "model": "other-model", "id": "m1"}
    user = json.dumps({"type": "user", "message": {"content": [result]}}).encode()
    fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
    fast.feed_block(*_block(first, user, user))
    for line in (first, user, user):
        parsed.feed(json.loads(line))
    assert fast.model == parsed.model == MODEL
    assert fast.reading() == parsed.reading()


def test_claude_model_after_the_usage_is_read_while_the_runs_model_is_unknown() -> None:
    """An assistant line whose message names its model after its usage (valid JSON, another key
    order) is read as the parsed event is: its model is the run's, so a USD budget can price it;
    once a model is known, a later line's model comes from its head only."""
    usage = {"input_tokens": 4, "output_tokens": 2}

    def line(key: str, model: str) -> bytes:
        message = {"id": key, "usage": usage, "model": model}
        return json.dumps({"type": "assistant", "message": message}).encode()

    fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
    fast.feed_block(*_block(line("m1", MODEL)))
    parsed.feed(json.loads(line("m1", MODEL)))
    assert fast.model == parsed.model == MODEL
    assert fast.reading() == parsed.reading()
    # a message_start event's message likewise
    message = {"id": "m2", "usage": usage, "model": MODEL}
    start = {"type": "stream_event", "event": {"type": "message_start", "message": message}}
    started = ClaudeStreamMeter()
    started.feed_block(*_block(json.dumps(start).encode()))
    assert started.model == MODEL
    # a model known, no line is parsed for one: a later model after the usage is not read
    fast.feed_block(*_block(line("m3", "claude-haiku-4-5")))
    assert fast.model == MODEL and fast.reading().input_tokens == 8


def test_claude_message_repeated_in_one_block_keeps_its_largest_figures_once() -> None:
    """A message's lines in one block, its larger figures first: the largest count, once,
    beside the block's new messages (which are then counted one by one too)."""
    usage = {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 9}
    fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
    lines = [
        _claude_line("m1", usage),
        _claude_line("m2", usage),
        _claude_line("m1", {**usage, "output_tokens": 2}),
    ]
    fast.feed_block(*_block(*lines))
    fast.feed_block(*_block(_claude_line("m3", usage)))  # a later block, all new again
    for line in [*lines, _claude_line("m3", usage)]:
        parsed.feed(json.loads(line))
    assert fast.reading() == parsed.reading()
    assert (fast.reading().input_tokens, fast.reading().output_tokens) == (309, 27)


def test_claude_meter_remembers_the_latest_messages_and_counts_a_forgotten_one_again() -> None:
    """A message printed again within ``REMEMBERED`` others counts once; one coming back after
    twice as many is counted again, over and never under (a budget stops early, not late);
    and however long the run, the meter holds at most twice ``REMEMBERED`` messages. The same
    by blocks and by parsed events."""
    usage = {"input_tokens": 1, "output_tokens": 1}
    later = 2 * REMEMBERED + 300
    lines = [_claude_line(f"m{n}", usage) for n in range(later)]
    lines += [_claude_line("m0", usage), _claude_line(f"m{later - 5}", usage)]
    fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
    for start in range(0, len(lines), 100):
        fast.feed_block(*_block(*lines[start : start + 100]))
        assert len(fast.messages) <= 2 * REMEMBERED
    for line in lines:
        parsed.feed(json.loads(line))
        assert len(parsed.messages) <= 2 * REMEMBERED
    for meter in (fast, parsed):  # m0 again: counted twice; the recent one: once
        assert (meter.reading().input_tokens, meter.reading().output_tokens) == (
            later + 1,
            later + 1,
        )


def test_claude_messages_without_an_id_are_each_counted() -> None:
    """Messages without an id are each their own, however many were forgotten before them."""
    meter = ClaudeStreamMeter()
    usage = {"input_tokens": 2, "output_tokens": 1}
    for _ in range(2 * REMEMBERED + 3):
        meter.feed({"type": "assistant", "message": {"usage": usage}})
    assert meter.reading().input_tokens == 2 * (2 * REMEMBERED + 3)


def _mixed_stream(seed: int, count: int, *, events: bool = True) -> list[bytes]:
    """``count`` lines of stream-json as a long Claude run mixes them: new messages (the model,
    which changes now and then, before the id or after it; compact or spaced), messages repeated
    a while later with other figures (parallel sub-agents), partial-message stream events
    (``message_start``, ``message_delta`` with the output or every count, content block deltas
    whose text quotes a usage object and an id), user
    lines whose tool results name a message id, a model and a usage object, and system lines;
    without ``events``, no line but the assistant lines mentions usage where the meter reads."""
    pick = random.Random(seed)
    lines: list[bytes] = []
    model = "claude-sonnet-4-5"
    for number in range(count):
        kind = pick.choice(
            ("new", "new", "new", "repeat", "stream", "delta", "block", "user", "system")
        )
        kind = "new" if kind in ("stream", "delta", "block") and not events else kind
        key = f"msg_{pick.randrange(max(number, 1))}" if kind == "repeat" else f"msg_{number}"
        if pick.random() < 0.05:
            model = pick.choice(("claude-sonnet-4-5", "claude-opus-4-1"))
        usage = {
            "input_tokens": pick.randrange(10),
            "cache_creation_input_tokens": pick.randrange(5000),
            "cache_read_input_tokens": pick.randrange(90000),
            "output_tokens": pick.randrange(1, 900),
        }
        message: dict[str, object] = {"id": key, "type": "message", "role": "assistant"}
        if pick.random() < 0.5:  # the API's order (Claude Code's), else after the id
            message = {"model": model, **message}
        else:
            message = {**message, "model": model}
        event: dict[str, object]
        if kind in ("new", "repeat"):
            event = {"type": "assistant", "message": {**message, "content": [], "usage": usage}}
        elif kind == "stream":
            start = {"type": "message_start", "message": {**message, "usage": usage}}
            event = {"type": "stream_event", "event": start, "api_message_id": key}
        elif kind == "delta":  # the output so far, and with newer APIs the input again
            counts = {"output_tokens": usage["output_tokens"]}
            if pick.random() < 0.5:
                counts = {**usage, **counts}
            delta = {"type": "message_delta", "delta": {"stop_reason": None}, "usage": counts}
            event = {"type": "stream_event", "event": delta, "api_message_id": key}
        elif kind == "block":  # a content block's text, naming what the meter reads
            text = {"type": "text_delta", "text": f'"usage": {json.dumps(usage)} {key}'}
            block = {"type": "content_block_delta", "index": 0, "delta": text}
            event = {"type": "stream_event", "event": block, "api_message_id": key}
        elif kind == "user":
            result = {"id": key, "model": "other-model", "usage": usage}
            event = {"type": "user", "message": {"content": []}, "tool_use_result": result}
        else:
            event = {"type": "system", "subtype": "init", "model": "other-model"}
        separators = pick.choice(((",", ":"), (", ", ": ")))
        lines.append(json.dumps(event, separators=separators).encode())
    return lines


def test_claude_blocks_of_any_size_count_as_parsing_every_event() -> None:
    """A long mixed stream cut into blocks anywhere between lines (several batches of kept
    assistant lines, from many small blocks or a few large ones, readings in between) reads as
    parsing each event: the same counts, once each, and the same model, at every reading and
    after the final result."""
    for seed in range(4):
        # blocks of a few lines or of many; with no event between them, assistant lines from
        # many blocks are kept until a batch is full
        longest, events = ((4, True), (120, True), (4, False), (120, False))[seed]
        lines = _mixed_stream(seed, 1500, events=events)
        data = b"\n" + b"\n".join(lines)
        newlines = [at for at in range(len(data)) if data[at] == 10] + [len(data)]
        fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
        pick, done = random.Random(seed), 0
        while done < len(lines):
            upto = min(len(lines), done + pick.randrange(1, longest))
            fast.feed_block(data, newlines[done], newlines[upto])
            for line in lines[done:upto]:
                parsed.feed(json.loads(line))
            done = upto
            if pick.random() < 0.05:
                assert fast.reading() == parsed.reading()
        assert fast.reading() == parsed.reading() and fast.model == parsed.model
        assert fast.reading().input_tokens is not None
        result = {"type": "result", "usage": {"input_tokens": 7, "output_tokens": 1}}
        line = b"\n" + json.dumps(result).encode()
        fast.feed_block(line, 0, len(line))
        parsed.feed(result)
        assert fast.reading() == parsed.reading()


def test_claude_codes_own_partial_message_stream_sums_to_its_result_read_in_any_blocks() -> None:
    """Claude Code's stream-json with partial messages, as the real CLI printed it (tests/data):
    each API call's ``message_start``, its content block's events, its ``assistant`` line (the
    start's usage, output 0) and its ``message_delta`` (the output). Cut into blocks anywhere
    between lines, the meter's reading before the result is the result's own totals, the same
    as parsing every event, and the model is the one the messages name."""
    lines = (DATA / "claude-stream-partial-messages.jsonl").read_bytes().splitlines()
    *events, result = lines
    totals = json.loads(result)["usage"]
    for size in (1, 2, 3, 7, len(events)):
        fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
        for start in range(0, len(events), size):
            fast.feed_block(*_block(*events[start : start + size]))
        for line in events:
            parsed.feed(json.loads(line))
        reading = fast.reading()
        assert reading == parsed.reading()
        assert (reading.input_tokens, reading.output_tokens, fast.model) == (
            totals["input_tokens"],
            totals["output_tokens"],
            "claude-sonnet-4-5",
        )
        fast.feed_block(*_block(result))
        assert fast.reading().cost_usd == json.loads(result)["total_cost_usd"]
    first = next(n for n, line in enumerate(events) if b'"message_start"' in line)
    early = ClaudeStreamMeter()  # the first call's start alone: its model already prices it
    early.feed_block(*_block(*events[: first + 1]))
    assert (early.model, early.reading().input_tokens) == ("claude-sonnet-4-5", 120)


def _event_line(event: dict[str, object], named: str | None) -> bytes:
    line: dict[str, object] = {"type": "stream_event", "event": event, "session_id": "s"}
    if named is not None:
        line["api_message_id"] = named
    return json.dumps(line, separators=(",", ":")).encode()


def test_a_delta_counts_for_the_message_it_names_when_a_sub_agents_starts_between() -> None:
    """A sub-agent's message starting between another message's start and its delta: the
    delta counts for the message its ``api_message_id`` names (Claude Code 2.1), by blocks and
    parsed alike; without the id it goes to the last start, the only guess left."""

    def start(key: str, tokens_in: int) -> dict[str, object]:
        usage = {"input_tokens": tokens_in, "output_tokens": 1}
        return {"type": "message_start", "message": {"id": key, "usage": usage}}

    def delta(tokens_out: int) -> dict[str, object]:
        return {"type": "message_delta", "delta": {}, "usage": {"output_tokens": tokens_out}}

    for named, expected in ((True, (150, 320)), (False, (150, 301))):
        events = [
            (start("main", 100), "main"),
            (start("sub", 50), "sub"),
            (delta(300), "main"),
            (delta(20), "sub"),
        ]
        lines = [_event_line(event, key if named else None) for event, key in events]
        fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
        fast.feed_block(*_block(*lines))
        for line in lines:
            parsed.feed(json.loads(line))
        for meter in (fast, parsed):
            reading = meter.reading()
            assert (reading.input_tokens, reading.output_tokens) == expected


def test_keys_after_a_usage_object_that_look_like_it_are_not_read_as_it() -> None:
    """The usage object read is the last ``"usage":`` key of a line, and a delta's message the
    one its ``"api_message_id":`` key names, however many keys after them share their letters
    (``message_usage``, ``usage_note``, ``last_api_message_id``, values with ``g`` and ``_``):
    by blocks as parsed."""
    tail = {
        "message_usage": {"input_tokens": 900, "output_tokens": 900},
        "usage_note": "g_usage_g",
        "last_api_message_id": "other",
    }
    first = {"id": "m1", "usage": {"input_tokens": 40, "output_tokens": 1}}
    second = {"id": "m2", "usage": {"input_tokens": 10, "output_tokens": 50}}  # a sub-agent's
    lines = [
        *(
            json.dumps(
                {"type": "stream_event", "event": {"type": "message_start", "message": m}, **tail},
                separators=(",", ":"),
            ).encode()
            for m in (first, second)
        ),
        json.dumps(
            {"type": "assistant", "message": {**first, **tail}, "session_id": "s", **tail},
            separators=(",", ":"),
        ).encode(),
        _event_line({"type": "message_delta", "usage": {"output_tokens": 30}, **tail}, "m1"),
        _event_line({"type": "message_delta", "usage": {"output_tokens": 35}, **tail}, None)[:-1]
        + b',"api_message_id":"m1","usage_tag":"g"}',
    ]
    fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
    fast.feed_block(*_block(*lines))
    for line in lines:
        parsed.feed(json.loads(line))
    for meter in (fast, parsed):  # m1 40 in, 35 out (its deltas'); m2 10 and 50
        reading = meter.reading()
        assert (reading.input_tokens, reading.output_tokens) == (50, 85)


def test_a_turn_after_a_result_counts_on_top_of_the_results_totals() -> None:
    """With stream-json input Claude Code ends each turn with a result, and a message sent
    meanwhile starts another turn: its messages count on top of the result (their cost from
    the price table: none is said) until the next result, read line by line or parsed. A
    result's tokens are its turn's own and its cost the process's running total (Claude Code
    2.1.330), so the next turn's result adds its tokens to the first's and states the cost."""

    def message(key: str) -> dict[str, object]:
        usage = {"input_tokens": 1000, "output_tokens": 200}
        return {"type": "assistant", "message": {"id": key, "model": MODEL, "usage": usage}}

    def result(calls: int, cost: float) -> dict[str, object]:
        usage = {"input_tokens": 1000 * calls, "output_tokens": 200 * calls}
        return {"type": "result", "usage": usage, "total_cost_usd": cost}

    turns = [message("msg_1"), message("msg_2"), result(2, 0.012), message("msg_3")]
    fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
    for event in turns:
        fast.feed_block(*_block(json.dumps(event).encode()))
        parsed.feed(event)
    for meter in (fast, parsed):
        reading = meter.reading()
        assert (reading.input_tokens, reading.output_tokens) == (3000, 600)
        assert reading.cost_usd is None and reading.model == MODEL
        meter.feed(result(1, 0.018))  # the next turn's end: its own tokens, the running cost
        reading = meter.reading()
        assert (reading.input_tokens, reading.output_tokens, reading.cost_usd) == (3000, 600, 0.018)
        meter.feed(message("msg_4"))  # a third turn: on top of both results
        assert (meter.reading().input_tokens, meter.reading().cost_usd) == (4000, None)


def test_claude_codes_own_two_turns_in_one_process_count_both() -> None:
    """Claude Code 2.1.330 with a message sent while it ran (tests/data, recorded): two turns,
    two results, each result's usage its turn's own (240/60, then 480/120) and its cost the
    running total. Whole or cut off after any line, the reading never goes back: the first
    turn's tokens stay counted through the second turn and after its result (720/180, the
    second result's ``modelUsage``, and its $0.00486)."""
    lines = (DATA / "claude-stream-two-turns.jsonl").read_bytes().splitlines()
    results = [json.loads(line) for line in lines if b'"type":"result"' in line]
    assert [r["usage"]["input_tokens"] for r in results] == [240, 480]
    [totals] = results[-1]["modelUsage"].values()
    readings = []
    meter = ClaudeStreamMeter()
    for line in lines:
        meter.feed_block(*_block(line))
        readings.append(meter.reading())
    tokens = [(r.input_tokens or 0) + (r.output_tokens or 0) for r in readings]
    assert tokens == sorted(tokens)  # never less than before
    last = readings[-1]
    assert (last.input_tokens, last.output_tokens) == (
        totals["inputTokens"],
        totals["outputTokens"],
    )
    assert last.cost_usd == results[-1]["total_cost_usd"] and last.model == "claude-sonnet-4-5"
    whole = ClaudeStreamMeter()
    whole.feed_block(*_block(*lines))
    assert whole.reading() == last


def test_since_takes_off_what_the_session_used_before_where_both_are_known() -> None:
    now = AgentOutput(input_tokens=600, output_tokens=150, cached_tokens=None, cost_usd=0.9)
    before = AgentOutput(input_tokens=480, output_tokens=None, cached_tokens=7, cost_usd=1.0)
    assert since(now, before) == AgentOutput(
        input_tokens=120, output_tokens=150, cached_tokens=None, cost_usd=0.0
    )  # an earlier figure unknown: kept (an over-count); never below 0


def test_cache_reads_are_counted_apart_so_a_budget_prices_them_as_the_cache() -> None:
    """Most of a Claude run's input is read from the prompt cache, at a tenth of the input
    price: the reading says how much (``cached_tokens``), in every way the meter reads usage
    (lines read fast, new or repeated; parsed events; a turn after a result), so a USD budget
    does not price them as fresh input."""
    usage = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 5000,
        "output_tokens": 50,
    }
    lines = [_claude_line(f"m{n}", usage) for n in range(4)]
    fast, repeated, parsed = ClaudeStreamMeter(), ClaudeStreamMeter(), ClaudeStreamMeter()
    fast.feed_block(*_block(*lines))
    repeated.feed_block(*_block(*lines, *lines))  # each message twice: counted once
    for line in lines:
        parsed.feed(json.loads(line))
    for meter in (fast, repeated, parsed):
        reading = meter.reading()
        assert (reading.input_tokens, reading.cached_tokens, reading.output_tokens) == (
            21200,
            20000,
            200,
        )
    turn = {key: 4 * count for key, count in usage.items()}  # the first turn's: its 4 calls
    fast.feed({"type": "result", "usage": turn})
    fast.feed_block(*_block(_claude_line("m9", usage)))  # the next turn's call
    assert fast.reading().cached_tokens == 25000


def test_a_result_that_leaves_out_a_call_its_turn_streamed_counts_the_stream() -> None:
    """Claude Code stopped by its own ``--max-budget-usd`` (2.1.330) ends with a result whose
    ``usage`` leaves out the last call (its cost counts it): the turn's tokens are what its
    messages streamed where that is more, by blocks and parsed alike, and the next turn's
    result adds to them."""
    call = {"input_tokens": 120, "output_tokens": 30}
    lines = [_claude_line(f"m{n}", call) for n in range(7)]
    short = {"type": "result", "usage": {"input_tokens": 720, "output_tokens": 180}}
    fast, parsed = ClaudeStreamMeter(), ClaudeStreamMeter()
    fast.feed_block(*_block(*lines, json.dumps(short).encode()))
    for line in lines:
        parsed.feed(json.loads(line))
    parsed.feed(short)
    for meter in (fast, parsed):
        reading = meter.reading()
        assert (reading.input_tokens, reading.output_tokens) == (840, 210)
        # a later turn's own result, as Claude Code gives it: added, not replaced
        meter.feed({"type": "result", "usage": {"input_tokens": 100, "output_tokens": 10}})
        assert (meter.reading().input_tokens, meter.reading().output_tokens) == (940, 220)


def test_a_stream_stopped_before_its_result_is_read_for_what_its_messages_said() -> None:
    """Claude Code's stream-json ended before its `result` (canceled, timed out): the parser
    alone knows no usage; with ``streamed_usage`` the messages' usage, marked a lower bound.
    The output kept is a tail: a first line cut in its middle is passed over, a `result` wins,
    and a stream that says no usage stays unknown."""
    parse = streamed_usage(ClaudeAdapter().parse_output, "claude")

    def message(n: int) -> str:
        usage = {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5}
        body = {"id": f"m{n}", "model": "claude-sonnet-4-5", "usage": usage, "content": []}
        return json.dumps({"type": "assistant", "message": body})

    stream = "".join(message(n) + "\n" for n in range(3))
    assert ClaudeAdapter().parse_output(stream, "").input_tokens is None
    read = parse(stream, "")
    assert (read.input_tokens, read.output_tokens, read.cached_tokens) == (300, 15, 270)
    assert read.model == "claude-sonnet-4-5" and read.usage_partial is True
    cut = message(9)[40:] + "\n" + stream  # a tail: the first line lost its start
    assert parse(cut, "").input_tokens == 300
    result = {"type": "result", "usage": {"input_tokens": 7, "output_tokens": 1}}
    done = parse(stream + json.dumps(result) + "\n", "")
    assert (done.input_tokens, done.usage_partial) == (7, False)
    quiet = parse(json.dumps({"type": "system", "subtype": "init"}) + "\n", "")
    assert (quiet.input_tokens, quiet.usage_partial) == (None, False)


def test_a_count_that_is_no_whole_number_or_absurd_is_unknown_in_the_stream() -> None:
    """`1e308` was read as 1 token (its first digit), 10**30 digits summed as a count."""
    for text in ("1e308", "1000.7", "1" + "0" * 30):
        meter = ClaudeStreamMeter()
        line = (
            '{"type":"assistant","message":{"id":"m1","usage":{"output_tokens":5,'
            f'"input_tokens":{text}}}}}}}\n'
        )
        data = b"\n" + line.encode()
        meter.feed_block(data, 0, len(data))
        assert meter.reading().input_tokens is None, text
        assert meter.reading().output_tokens == 5
