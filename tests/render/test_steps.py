"""The live view of ``run --all --jobs N`` (render/steps.py): plain lines off a terminal, one
table redrawn in place on one, every agent text masked."""

from __future__ import annotations

import io
from collections.abc import Iterator

from gitflow_agents.render.steps import StepsChannel, last_line
from gitflow_agents.runs.events import ConsoleChannel, EventHub

TOKEN = "ghp_" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6"


def ticking() -> Iterator[float]:
    now = 100.0
    while True:
        yield now
        now += 1.0


def drive(hub: EventHub) -> None:
    """Two steps: 2 implements, talks (a token in its output) and lands; 3 fails."""
    hub.emit("harness:start", {"flow": "feature", "step": 2, "runID": "run-2"})
    hub.emit("harness:start", {"flow": "feature", "step": 3, "runID": "run-3"})
    hub.emit("phase:start", {"phase": "implement", "step": 2})
    hub.emit("task:start", {"node": "step-02-builder", "kind": "implement", "step": 2})
    hub.emit("agent:start", {"agent": "step-02-builder", "pid": 11})
    hub.emit("agent:output", {"agent": "step-02-builder", "tail": f"first\nusing {TOKEN} now\n"})
    hub.emit("phase:start", {"phase": "prepare"})  # an agent run's own phase: no step
    hub.emit(
        "agent:complete",
        {"agent": "step-02-builder", "status": "succeeded", "input_tokens": 10,
         "output_tokens": 4, "cost_usd": 0.5},
    )  # fmt: skip
    hub.emit(
        "agent:complete",
        {"agent": "step-02-reviewer-1", "status": "succeeded", "input_tokens": 5, "cost_usd": 0.25},
    )
    hub.emit("agent:failed", {"agent": "step-03-builder", "status": "failed"})
    hub.emit("harness:complete", {"outcome": "approved", "runID": "run-2"})
    hub.emit("harness:complete", {"outcome": "failed", "runID": "run-3"})


def test_plain_lines_name_each_state_change_once_with_the_usage_so_far() -> None:
    out = io.StringIO()
    clock = ticking()
    hub = EventHub([StepsChannel(out, is_tty=False, clock=lambda: next(clock))])
    drive(hub)
    hub.close()
    lines = out.getvalue().splitlines()
    assert lines[:5] == [
        "step 2: started",
        "step 3: started",
        "step 2: implement",
        "step 2: implement: step-02-builder running",
        "step 2: implement: step-02-builder succeeded (tokens 10/4 $0.5000)",
    ]
    assert "step 2: implement: step-02-reviewer-1 succeeded (tokens 15/4 $0.7500)" in lines
    assert lines[-2].startswith("step 2: approved after 00:") and "tokens 15/4 $0.7500" in lines[-2]
    assert lines[-1].startswith("step 3: failed after")
    assert not any("prepare" in line for line in lines)
    assert TOKEN not in out.getvalue()


def test_a_cost_the_price_table_estimated_is_said_so() -> None:
    """One agent's cost is its CLI's, the next one's the price table's: the step's sum says
    ``est.`` from then on, as `history` does."""
    out = io.StringIO()
    clock = ticking()
    hub = EventHub([StepsChannel(out, is_tty=False, clock=lambda: next(clock))])
    hub.emit("harness:start", {"flow": "feature", "step": 2, "runID": "run-2"})
    hub.emit("phase:start", {"phase": "implement", "step": 2})
    for agent, estimated in (("step-02-builder", False), ("step-02-reviewer-1", True)):
        hub.emit("task:start", {"node": agent, "kind": "implement", "step": 2})
        data = {"agent": agent, "status": "succeeded", "input_tokens": 1, "cost_usd": 0.5}
        hub.emit("agent:complete", {**data, "cost_estimated": estimated})
    hub.close()
    lines = out.getvalue().splitlines()
    assert "step 2: implement: step-02-builder succeeded (tokens 1/? $0.5000)" in lines
    assert "step 2: implement: step-02-reviewer-1 succeeded (tokens 2/? $1.0000 est.)" in lines


def test_figures_an_agent_streamed_before_it_stopped_are_a_lower_bound() -> None:
    """An agent canceled (or rate limited) before its CLI's totals: its end event's figures
    are what it streamed (``usage_partial``), so the step's sum is at least that (`≥`), as
    `history` and the console's end line say."""
    out = io.StringIO()
    clock = ticking()
    hub = EventHub([StepsChannel(out, is_tty=False, clock=lambda: next(clock))])
    hub.emit("harness:start", {"flow": "feature", "step": 2, "runID": "run-2"})
    hub.emit("phase:start", {"phase": "implement", "step": 2})
    hub.emit("task:start", {"node": "step-02-builder", "kind": "implement", "step": 2})
    data = {"agent": "step-02-builder", "status": "canceled", "input_tokens": 100}
    hub.emit("agent:failed", {**data, "output_tokens": 20, "cost_usd": 0.5, "usage_partial": True})
    hub.close()
    line = "step 2: implement: step-02-builder canceled (tokens ≥ 100/20 ≥ $0.5000)"
    assert line in out.getvalue().splitlines()


def test_a_steps_end_line_says_its_records_sum_its_lost_runs_too() -> None:
    """A step run again after a kill lists the lost agent run, whose spend its record counts
    but which sent no event: its end line says the record's sum (``harness:complete``'s
    ``spend``), not the events' alone."""
    out = io.StringIO()
    clock = ticking()
    hub = EventHub([StepsChannel(out, is_tty=False, clock=lambda: next(clock))])
    hub.emit("harness:start", {"flow": "feature", "step": 2, "runID": "run-2"})
    data = {"agent": "step-02-builder", "status": "succeeded", "input_tokens": 7000}
    hub.emit("agent:complete", {**data, "output_tokens": 800, "cost_usd": 0.033})
    spend = {"inputTokens": 16000, "outputTokens": 2000, "costUsd": 0.078, "costEstimated": True}
    spend |= {"tokensPartial": True, "costPartial": True}
    hub.emit("harness:complete", {"outcome": "approved", "runID": "run-2", "spend": spend})
    hub.close()
    last = out.getvalue().splitlines()[-1]
    assert last.endswith("tokens ≥ 16,000/2,000 ≥ $0.0780 est."), last


def test_the_consoles_end_line_times_a_continued_run_from_its_first_start() -> None:
    """An attempt after a rate limit's wait is the same run (its id): its end line's time runs
    from the run's first start, as its record's duration does, not from the last attempt's;
    another run of the same agent starts its own time."""
    out = io.StringIO()
    clock = iter([100.0, 130.0, 160.0, 170.0, 200.0, 205.0])
    hub = EventHub([ConsoleChannel(out, is_tty=False, clock=lambda: next(clock))], run_id="r1")
    hub.emit("agent:start", {"agent": "cx", "pid": 1})
    hub.emit("agent:waiting", {"agent": "cx", "reason": "rate limited", "attempt": 1})
    hub.emit("agent:start", {"agent": "cx", "pid": 2})
    hub.emit("agent:complete", {"agent": "cx", "status": "succeeded"})
    hub.run_id = "r2"  # the same agent run again: its own time
    hub.emit("agent:start", {"agent": "cx", "pid": 3})
    hub.emit("agent:complete", {"agent": "cx", "status": "succeeded"})
    hub.close()
    ends = [line for line in out.getvalue().splitlines() if "succeeded" in line]
    assert ends[0].startswith("cx: succeeded 01:10 "), ends
    assert ends[1].startswith("cx: succeeded 00:05 "), ends


def test_the_consoles_end_line_marks_a_lower_bound() -> None:
    out = io.StringIO()
    hub = EventHub([ConsoleChannel(out, is_tty=False)], run_id="r")
    data = {"agent": "cx", "status": "canceled", "input_tokens": 900, "output_tokens": 10}
    hub.emit("agent:failed", {**data, "cost_usd": 0.25, "usage_partial": True})
    hub.close()
    assert out.getvalue().rstrip().endswith("tokens ≥ 900/10 ≥ $0.2500")


def test_the_consoles_end_line_marks_the_runs_figures_as_its_record_does() -> None:
    """The run's figures (``run_usage``, its record's keys) mark tokens and cost apart, as
    `history` does: a token count some attempt did not know is a lower bound, a cost every
    attempt stated is not."""
    out = io.StringIO()
    hub = EventHub([ConsoleChannel(out, is_tty=False)], run_id="r")
    run = {"inputTokens": 900, "outputTokens": 10, "tokensPartial": True, "costUsd": 0.25}
    hub.emit("agent:complete", {"agent": "cx", "status": "succeeded", "run_usage": run})
    hub.close()
    assert out.getvalue().rstrip().endswith("tokens ≥ 900/10 $0.2500")


def test_a_continued_runs_end_line_says_the_runs_figures_the_steps_view_each_attempts() -> None:
    """A run continued after a rate limit: its last attempt's end event has its own figures
    and the run's as its record will say them (``run_usage``: the first attempt's too, a lower
    bound since it stopped at the 429). The console's end line says the run's; the steps view,
    which adds each attempt's own figures, counts the first attempt once."""
    console, steps = io.StringIO(), io.StringIO()
    clock = ticking()
    hub = EventHub(
        [
            ConsoleChannel(console, is_tty=False),
            StepsChannel(steps, is_tty=False, clock=lambda: next(clock)),
        ],
        run_id="r",
    )
    hub.emit("harness:start", {"flow": "feature", "step": 2, "runID": "run-2"})
    first = {"agent": "step-02-builder", "status": "rate_limited", "input_tokens": 2000}
    hub.emit(
        "agent:failed", {**first, "output_tokens": 200, "cost_usd": 0.01, "usage_partial": True}
    )
    run = {"inputTokens": 3000, "outputTokens": 300, "tokensPartial": True}
    run |= {"costUsd": 0.03, "costPartial": True}
    last = {"agent": "step-02-builder", "status": "succeeded", "input_tokens": 1000}
    hub.emit("agent:complete", {**last, "output_tokens": 100, "cost_usd": 0.02, "run_usage": run})
    hub.close()
    assert console.getvalue().splitlines()[-1].endswith("tokens ≥ 3,000/300 ≥ $0.0300")
    assert steps.getvalue().splitlines()[-1].endswith("(tokens ≥ 3,000/300 ≥ $0.0300)")


def test_a_wait_for_a_rate_limit_or_a_slot_is_a_line_and_the_rows_state() -> None:
    """`run --all --jobs N`: an agent waiting out a rate limit, or for a `max_parallel` slot,
    says so (its reason, masked: it may quote the CLI), then runs again."""
    out = io.StringIO()
    clock = ticking()
    channel = StepsChannel(out, is_tty=False, clock=lambda: next(clock))
    hub = EventHub([channel])
    hub.emit("harness:start", {"flow": "feature", "step": 1, "runID": "run-1"})
    hub.emit("phase:start", {"phase": "implement", "step": 1})
    hub.emit("task:start", {"node": "step-01-builder", "kind": "implement", "step": 1})
    slot = "waiting for a claude slot (max_parallel 2)"
    hub.emit("agent:waiting", {"agent": "step-01-builder", "reason": slot, "slot": "claude"})
    assert channel.rows[1].agent_state == "waiting"
    hub.emit("agent:start", {"agent": "step-01-builder", "pid": 1})
    limited = f"rate limited: 429 for {TOKEN}; waiting until 12:00:00 to continue its session"
    hub.emit("agent:waiting", {"agent": "step-01-builder", "reason": limited, "until": 1.0})
    hub.close()
    lines = out.getvalue().splitlines()
    assert f"step 1: implement: step-01-builder waiting: {slot}" in lines
    assert "step 1: implement: step-01-builder running" in lines
    waited = [line for line in lines if "rate limited: 429" in line]
    assert len(waited) == 1 and "waiting until 12:00:00" in waited[0]
    assert TOKEN not in out.getvalue()


def test_the_table_on_a_terminal_shows_every_step_with_its_last_output_masked() -> None:
    out = io.StringIO()
    channel = StepsChannel(out, is_tty=True)
    hub = EventHub([channel])
    drive(hub)
    table = channel.table()
    assert [column.header for column in table.columns] == [
        "step", "agent", "phase", "elapsed", "last output", "tokens/cost",
    ]  # fmt: skip
    assert list(table.columns[0].cells) == ["2", "3"]
    assert list(table.columns[2].cells) == ["approved", "failed"]
    assert list(table.columns[1].cells) == [
        "step-02-reviewer-1", "step-03-builder",
    ]  # fmt: skip
    last = next(iter(table.columns[4].cells))
    assert last.startswith("using ") and TOKEN not in last
    hub.close()
    drawn = out.getvalue()
    assert "step-03-builder" in drawn and TOKEN not in drawn
    assert "step 2: started" not in drawn  # no plain lines on a terminal


def test_the_last_line_is_cut_without_the_word_the_cut_splits() -> None:
    assert last_line("a\n\nlast words here\n\n") == "last words here"
    cut = last_line("x" * 10 + " tail end", limit=12)
    assert cut == "…tail end"
    assert last_line("") == ""


def test_a_run_that_stops_before_any_step_leaves_the_terminal_as_it_was() -> None:
    out = io.StringIO()
    hub = EventHub([StepsChannel(out, is_tty=True)])
    hub.emit("phase:start", {"phase": "prepare"})  # not a step's
    hub.close()
    assert out.getvalue() == ""
