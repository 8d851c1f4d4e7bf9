"""The live view of ``run PLAN --all --jobs N``: one row per plan step that runs at the same
time as others (step, agent, phase, elapsed, last output line, tokens/cost so far).

``StepsChannel`` is an event channel (``runs/events.py``): it reads the events the chain and
the supervisor already emit (``harness:start`` / ``phase:start`` with a ``step``, an agent's
``task:start``, ``agent:start|output|complete|failed``, the step's ``harness:complete``). On a
terminal outside CI it redraws one rich table in place; otherwise (CI, a pipe) it prints one
plain line per state change of a step: its phase, its agent starting or ending, its outcome.
Every text an agent wrote is masked (``base/redact.py``) before it is shown.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from gitflow_agents.base.color import rich_settings, use_color
from gitflow_agents.base.redact import redact_text
from gitflow_agents.runs.events import Event, usage_line
from gitflow_agents.runs.spend import Spend, run_spend

COLUMNS = ("step", "agent", "phase", "elapsed", "last output", "tokens/cost")
_STEP_AGENT = re.compile(r"^step-(\d+)-")
_LAST_CHARS = 60


@dataclass
class StepRow:
    """What the view knows about one step."""

    step: int
    started: float
    phase: str = "starting"
    agent: str = ""
    agent_state: str = ""
    last: str = ""
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None
    cost_estimated: bool = False  # some of the cost is the price table's (its CLI said none)
    usage_partial: bool = False  # some figure is what an agent streamed before it stopped: ≥
    outcome: str = ""  # set once the step ended
    ended: float | None = None

    def usage(self) -> str:
        return usage_line(
            self.tokens_in,
            self.tokens_out,
            self.cost,
            estimated=self.cost_estimated,
            partial=self.usage_partial,
        )

    def elapsed(self, now: float) -> str:
        seconds = max(0, int((self.ended if self.ended is not None else now) - self.started))
        minutes, sec = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours}:{minutes:02d}:{sec:02d}" if hours else f"{minutes:02d}:{sec:02d}"


def _set_spend(row: StepRow, spend: Spend) -> None:
    """``row``'s figures as ``spend`` (a step's, as its record sums them) says them."""
    row.tokens_in, row.tokens_out, row.cost = (
        spend.input_tokens,
        spend.output_tokens,
        spend.cost_usd,
    )
    row.cost_estimated = spend.cost_estimated
    row.usage_partial = spend.tokens_partial or spend.cost_partial


def last_line(text: str, limit: int = _LAST_CHARS) -> str:
    """The last non-empty line of ``text``, masked, cut to its last ``limit`` characters
    without the word the cut splits (it may be the rest of a secret)."""
    lines = [line.strip() for line in redact_text(text).splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    if len(line) <= limit:
        return line
    tail = line[-limit:]
    return "…" + (tail.split(" ", 1)[1] if " " in tail else "")


def _step_of(event: Event, run_steps: Mapping[str, int]) -> int | None:
    """The plan step an event belongs to: its ``step``, its agent id ``step-NN-…``, or the
    step run its ``runID`` names."""
    data = event.data
    step = data.get("step")
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    for key in ("agent", "node"):
        match = _STEP_AGENT.match(str(data.get(key) or ""))
        if match:
            return int(match.group(1))
    return run_steps.get(str(data.get("runID") or ""))


class StepsChannel:
    """The live view (see the module doc) on ``stream``; ``is_tty`` False: plain lines."""

    name = "steps"

    def __init__(
        self,
        stream: IO[str],
        *,
        is_tty: bool,
        redirect_stdout: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.is_tty, self._clock = stream, is_tty, clock
        self.rows: dict[int, StepRow] = {}
        self._run_steps: dict[str, int] = {}  # a step run's id -> its step
        self._lock = threading.Lock()
        self._redirect = redirect_stdout
        self._live: Live | None = None
        self._closed = False

    def _start(self) -> None:
        """The table appears with the first step (a run that stops before any step starts,
        an agent CLI missing, leaves the terminal as it was)."""
        console = Console(
            file=self.stream, force_terminal=True, **rich_settings(use_color(self.stream))
        )
        self._live = Live(
            console=console,
            get_renderable=self.table,
            refresh_per_second=4,
            redirect_stdout=self._redirect,
            redirect_stderr=False,
        )
        self._live.start()

    def handle(self, event: Event) -> None:
        with self._lock:
            step = _step_of(event, self._run_steps)
            if step is None:
                return
            line = self._update(step, event)
        if self.is_tty and self._live is None and not self._closed:
            self._start()
        if line and not self.is_tty:
            self.stream.write(line + "\n")
            self.stream.flush()

    def _update(self, step: int, event: Event) -> str:
        """Apply ``event`` to its step's row; the plain line it is worth ('' for none)."""
        kind, data, now = event.type, event.data, self._clock()
        row = self.rows.get(step)
        if row is None or (kind == "harness:start" and row.outcome):
            row = self.rows[step] = StepRow(step, now)
        if kind == "harness:start":
            self._run_steps[str(data.get("runID") or "")] = step
            return f"step {step}: started"
        if kind == "phase:start" and "step" in data:
            row.phase = str(data.get("phase") or "")
            return f"step {step}: {row.phase}"
        if kind == "task:start":
            row.agent, row.agent_state = str(data.get("node") or ""), "queued"
            return ""
        if kind == "agent:start":
            row.agent, row.agent_state = str(data.get("agent") or row.agent), "running"
            return f"step {step}: {row.phase}: {row.agent} running"
        if kind == "agent:output":
            text = last_line(str(data.get("tail") or ""))
            row.last = text or row.last
            return ""
        if kind == "agent:waiting":  # a rate limit waited out, a max_parallel slot
            row.agent, row.agent_state = str(data.get("agent") or row.agent), "waiting"
            why = " ".join(redact_text(str(data.get("reason") or "")).split())  # may quote the CLI
            row.last = why or row.last
            return f"step {step}: {row.phase}: {row.agent} waiting: {why}"
        if kind in ("agent:complete", "agent:failed"):
            return self._agent_end(row, data)
        if kind == "harness:complete":
            row.outcome, row.ended = str(data.get("outcome") or "ended"), now
            spend = data.get("spend")
            if isinstance(spend, Mapping):  # the record's sum: the events' and its lost runs'
                _set_spend(row, run_spend(spend))
            row.phase, row.agent_state = row.outcome, ""
            usage = f" {row.usage()}" if row.usage() else ""
            return f"step {step}: {row.outcome} after {row.elapsed(now)}{usage}"
        return ""

    def _agent_end(self, row: StepRow, data: Mapping[str, Any]) -> str:
        row.agent = str(data.get("agent") or row.agent)
        row.agent_state = str(data.get("status") or "ended")
        for name in ("input_tokens", "output_tokens"):
            value = data.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                field = "tokens_in" if name == "input_tokens" else "tokens_out"
                setattr(row, field, (getattr(row, field) or 0) + value)
        cost = data.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            row.cost = (row.cost or 0.0) + float(cost)
            row.cost_estimated = row.cost_estimated or data.get("cost_estimated") is True
        row.usage_partial = row.usage_partial or data.get("usage_partial") is True
        usage = f" ({row.usage()})" if row.usage() else ""
        return f"step {row.step}: {row.phase}: {row.agent} {row.agent_state}{usage}"

    def table(self) -> Table:
        """The table as it stands (rich's refresh thread calls this four times a second)."""
        table = Table(box=None, show_header=True, pad_edge=False)
        for column in COLUMNS:
            table.add_column(column)
        now = self._clock()
        with self._lock:
            for row in sorted(self.rows.values(), key=lambda r: r.step):
                agent = f"{row.agent} ({row.agent_state})" if row.agent_state else row.agent
                table.add_row(
                    str(row.step), agent, row.phase, row.elapsed(now), row.last, row.usage()
                )
        return table

    def close(self) -> None:
        self._closed = True
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None
