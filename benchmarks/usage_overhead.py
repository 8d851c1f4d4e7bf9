"""What usage tracking costs the supervisor on a long streamed agent output (issue 23).

Usage: python benchmarks/usage_overhead.py [--mb N] [--runs N] [--partial-messages]

A fake agent streams N MB (default 200) of stream-JSON lines as Claude Code's
``--output-format stream-json`` prints them, each line one of a recorded run's
(tests/data/agent-output/claude-stream-partial-messages.jsonl, Claude Code 2.1.330) with its
turn's ids and figures: the ``system`` init line, per API call its ``assistant`` line carrying the
call's ``usage`` and the tool result, and the final ``result`` line with the run's usage and
``total_cost_usd``. With ``--partial-messages``, as it prints them with
``--include-partial-messages`` (what a run with a budget prints: docs/configuration.md,
"budget"), in the recording's order: each call's ``message_start``, its content block's start,
40 text deltas, its ``assistant`` line (the start's usage, output 0), the block's stop, its
``message_delta`` (the output) and ``message_stop``, then the tool result: about four times as
many lines a byte. It runs under ``supervise()`` (the supervisor's whole path: reading the
pipes, masking into ``worker.log``, the 8 MiB tail kept for the parser, the events) in one of
four ways, ``--runs`` times each, each round starting with another of them:

- ``usage on``: the Claude adapter's own ``parse_output``, i.e. what a real run does;
- ``budget watch``: the same, with a budget that is never reached watching the stream as it
  arrives (``runs/budget.Watch``: every usage line read, the limit checked each loop turn);
- ``usage off``: a parser that ignores the output (no usage read), the baseline;
- ``no parser``: no parser at all, for reference.

Printed: the supervisor process's CPU seconds (user + system of this process, i.e. the
supervisor's threads, not the agent's) and wall seconds, medians, and the overhead of each over
``usage off``; then ``budget watch`` over ``usage off`` round by round (the two run minutes
apart at most, so the machine's load drifts less between them than between two medians); then
the parser alone on the tail the supervisor hands it, and the budget's
watch alone on the whole stream (the meter's own cost, without the supervisor's other work around
it, which makes it dearer there). Target: overhead <= 5 % of the supervisor's time without usage
tracking. A measurement, not an assertion.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitflow_agents.agents.base import AgentOutput, LaunchSpec  # noqa: E402
from gitflow_agents.agents.claude import ClaudeAdapter  # noqa: E402
from gitflow_agents.agents.prices import shipped_prices  # noqa: E402
from gitflow_agents.config.budget import Budgets, Cap  # noqa: E402
from gitflow_agents.runs.budget import Ledger  # noqa: E402
from gitflow_agents.runs.events import EventHub  # noqa: E402
from gitflow_agents.supervisor import Launch, Limits, ReportFiles, supervise  # noqa: E402
from gitflow_agents.supervisor.output import CAPTURE_LIMIT  # noqa: E402

MB = 1_000_000
Parser = Callable[[str, str], AgentOutput]
# The fake agent: copies the prepared stream to stdout in 64 KiB writes, as a CLI's buffered
# stdout does, then exits 0 (the spec completes by exit, so no report rename is needed).
STREAMER = (
    "import shutil, sys\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    shutil.copyfileobj(f, sys.stdout.buffer, 65536)\n"
)


# The recorded stream a budgeted Claude Code 2.1 run printed (tests/data/agent-output/README.md):
# each line of the benchmark's stream is one of its lines with the turn's ids and figures, so the
# bytes are Claude Code's own (compact JSON; each stream event's session_id,
# parent_tool_use_id, uuid and api_message_id; the assistant line's context_management and
# timestamp), not a shape of ours.
RECORDED = ROOT / "tests" / "data" / "agent-output" / "claude-stream-partial-messages.jsonl"
TEXT = "Looking at src/module.py to see how the parser is called. " * 8
DELTA = "Looking at src/module.py to see how "


def _recorded() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """The recording's first line (``system`` init), the lines of its first API call (its
    ``message_start`` up to the tool result that follows it) and its last line (``result``)."""
    lines = [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]
    first = next(i for i, line in enumerate(lines) if _kind(line) == "message_start")
    last = next(i for i in range(first, len(lines)) if lines[i]["type"] == "user")
    return lines[0], lines[first : last + 1], lines[-1]


def _kind(line: dict[str, Any]) -> str:
    """A line's type, a stream event's own."""
    return line["event"]["type"] if line["type"] == "stream_event" else line["type"]


def _usage(turn: int) -> dict[str, int]:
    return {
        "input_tokens": 3 + turn % 7,
        "cache_creation_input_tokens": 1200 + turn % 300,
        "cache_read_input_tokens": 18000 + turn,
        "output_tokens": 150 + turn % 400,
    }


def _call(template: list[dict[str, Any]], turn: int, *, partial: bool, rnd: random.Random) -> str:
    """One API call's lines as Claude Code prints them, the recorded call's with this turn's
    message id, usage, a text block of 40 deltas and a 360-byte tool result; without
    ``partial``, only its ``assistant`` line (with the call's whole usage) and the tool result."""
    message, tool = f"msg_{turn:024d}", f"toolu_{turn:024d}"
    usage = _usage(turn)
    start = {**usage, "output_tokens": 0}  # the start's usage, which the assistant line repeats
    out = []
    for recorded in template:
        line = copy.deepcopy(recorded)
        kind = _kind(line)
        if "uuid" in line:
            line["uuid"] = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
        if "api_message_id" in line:
            line["api_message_id"] = message
        if kind == "message_start":
            line["event"]["message"].update(id=message, usage=start)
        elif kind == "content_block_start":
            line["event"]["content_block"] = {"type": "text", "text": ""}
        elif kind == "content_block_delta":
            line["event"]["delta"] = {"type": "text_delta", "text": DELTA}
            for _ in range(39 if partial else 0):
                out.append(_dumps(line))
                line["uuid"] = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
        elif kind == "assistant":
            content = [{"type": "text", "text": TEXT}]
            line["message"].update(id=message, content=content, usage=start if partial else usage)
        elif kind == "message_delta":
            line["event"]["usage"] = {"output_tokens": usage["output_tokens"]}
        elif kind == "user":
            line["message"]["content"][0].update(tool_use_id=tool, content="x = 1\n" * 60)
        if partial or kind in ("assistant", "user"):
            out.append(_dumps(line))
    return "\n".join(out)


def _dumps(line: dict[str, Any]) -> str:
    return json.dumps(line, separators=(",", ":"))


def write_stream(path: Path, size: int, *, partial: bool = False) -> int:
    """Write about ``size`` bytes of stream-JSON to ``path`` (with ``partial``, each call's
    partial-message events too); the number of assistant turns."""
    init, template, result = _recorded()
    rnd = random.Random(1)
    written, turn = 0, 0
    with path.open("w", encoding="utf-8") as out:
        written += out.write(_dumps(init) + "\n")
        while written < size:
            written += out.write(_call(template, turn, partial=partial, rnd=rnd) + "\n")
            turn += 1
        result.update(total_cost_usd=12.34, usage=_usage(turn))
        out.write(_dumps(result) + "\n")
    return turn


def ignore_usage(stdout: str, stderr: str) -> AgentOutput:
    """The baseline parser: reads nothing."""
    return AgentOutput()


def one_run(
    base: Path, stream: Path, parser: Parser | None, *, budget: bool = False
) -> tuple[float, float, AgentOutput]:
    work = Path(tempfile.mkdtemp(dir=base))
    agent_dir = work / "agent"
    agent_dir.mkdir()
    spec = LaunchSpec(
        argv=(sys.executable, "-c", STREAMER, str(stream)),
        env=dict(os.environ),
        cwd=work,
        completes_by_exit=True,
    )
    seen: list[AgentOutput] = []

    def parse(stdout: str, stderr: str) -> AgentOutput:
        assert parser is not None
        seen.append(parser(stdout, stderr))
        return seen[-1]

    ledger = Ledger(Budgets(agent=Cap(usd=1e9, tokens=10**15)), shipped_prices())
    watch = ledger.watch("claude", None) if budget else None
    before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    outcome = supervise(
        Launch(
            spec,
            parse_output=parse if parser is not None else None,
            watch=(work,),
            budget=watch,
        ),
        ReportFiles.named(agent_dir, "report.md", ".complete.md", ".failed.md"),
        Limits(stuck_timeout=120, timeout=600, kill_grace=1.0),
        hub=EventHub(),
        run_dir=work / "run",
    )
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if outcome.status != "succeeded":
        raise SystemExit(f"the fake agent's run ended {outcome.status}: {outcome.reason}")
    shutil.rmtree(work)
    return cpu, wall, seen[-1] if seen else AgentOutput()


def parser_alone(stream: Path, runs: int) -> tuple[float, int]:
    """Median CPU seconds of the Claude parser on the tail the supervisor keeps, and its size."""
    with stream.open("rb") as f:
        f.seek(max(0, stream.stat().st_size - CAPTURE_LIMIT))
        tail = f.read().decode("utf-8", "replace")
    times = []
    for _ in range(runs):
        start = time.process_time()
        ClaudeAdapter().parse_output(tail, "")
        times.append(time.process_time() - start)
    return statistics.median(times), len(tail)


def watch_alone(stream: Path, runs: int) -> float:
    """Median CPU seconds of a budget's watch fed the whole stream in 64 KiB chunks, as the
    supervisor's reader hands it over, read at the end (what the loop's checks add is left out)."""
    times = []
    for _ in range(runs):
        watch = Ledger(Budgets(agent=Cap(usd=1e9, tokens=10**15)), shipped_prices()).watch(
            "claude", None
        )
        assert watch is not None
        spent = 0.0
        with stream.open("rb") as f:
            while chunk := f.read(65536):  # not timed: the supervisor's os.read
                start = time.process_time()
                watch.feed(chunk)
                spent += time.process_time() - start
        start = time.process_time()
        if watch.spend().input_tokens is None:
            raise SystemExit("the budget watch read no usage from the stream")
        times.append(spent + time.process_time() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="MB of agent output (default 200)")
    parser.add_argument("--runs", type=int, default=3, help="runs per variant (default 3)")
    parser.add_argument(
        "--partial-messages",
        action="store_true",
        help="the stream Claude Code prints with --include-partial-messages (with a budget)",
    )
    args = parser.parse_args()
    variants: dict[str, Parser | None] = {
        "usage on": ClaudeAdapter().parse_output,
        "budget watch": ClaudeAdapter().parse_output,
        "usage off": ignore_usage,
        "no parser": None,
    }
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    wall: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        stream = base / "stream.jsonl"
        turns = write_stream(stream, args.mb * MB, partial=args.partial_messages)
        size = stream.stat().st_size
        kind = "with partial messages" if args.partial_messages else "without partial messages"
        print(f"{size / MB:,.0f} MB of stream-json {kind}, {turns:,} assistant turns with usage\n")
        names = list(variants)
        for round_ in range(args.runs):
            # each round starts with another variant, so no variant always runs after the same one
            turn = round_ % len(names)
            for name in names[turn:] + names[:turn]:
                parse = variants[name]
                seconds, elapsed, read = one_run(base, stream, parse, budget=name == "budget watch")
                cpu[name].append(seconds)
                wall[name].append(elapsed)
                if name == "usage on" and read.output_tokens is None:
                    raise SystemExit("the Claude parser read no usage from the stream")
        alone, tail = parser_alone(stream, args.runs)
        watched = watch_alone(stream, args.runs)
    _table(cpu, wall, size)
    off = statistics.median(cpu["usage off"])
    # each round runs the four back to back: a round's own difference leaves out the load's drift
    rounds = zip(cpu["budget watch"], cpu["usage off"], strict=True)
    paired = [(watched - base) / base for watched, base in rounds]
    print(
        f"\nbudget watch vs usage off, round by round: median {statistics.median(paired):+.1%} "
        f"(rounds {', '.join(f'{one:+.1%}' for one in paired)})"
    )
    print(
        f"the Claude parser alone on the {tail / MB:,.1f} MB tail the supervisor keeps: "
        f"{alone * 1000:,.0f} ms CPU, {alone / off:.1%} of the supervisor's CPU without it"
    )
    print(
        f"the budget watch alone on the whole stream in 64 KiB chunks: {watched * 1000:,.0f} ms "
        f"CPU, {watched / off:.1%} of the supervisor's CPU without it"
    )
    return 0


def _table(cpu: dict[str, list[float]], wall: dict[str, list[float]], size: int) -> None:
    base_cpu = statistics.median(cpu["usage off"])
    base_wall = statistics.median(wall["usage off"])
    header = ("variant", "supervisor CPU s", "wall s", "MB/s (wall)", "CPU vs off", "wall vs off")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name in cpu:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        row = (
            name,
            f"{c:.2f}",
            f"{w:.2f}",
            f"{size / MB / w:,.0f}",
            f"{(c - base_cpu) / base_cpu:+.1%}",
            f"{(w - base_wall) / base_wall:+.1%}",
        )
        print(" | ".join(row))


if __name__ == "__main__":
    raise SystemExit(main())
