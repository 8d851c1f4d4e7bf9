"""Following every run's ``events.jsonl`` as it grows: what the page's live stream sends.

A follower remembers how far it read each file. A run that is still live when the follower
starts (its ``status.json`` says a live state, or it has no ``result.json`` yet) is read from
its first event, so the page catches up with runs it opened in the middle of; a finished run
from its end (the page was drawn with it). A run folder that appears later is read from its
start. Only whole lines are read: a line still being written waits for the next poll.

Besides the events, the follower tells what a running agent has spent so far (``run:spent``):
the reading of its budget's watch that the supervisor writes into ``status.json`` each second,
which no event carries (an agent's output events have no usage; only the event that ends it
has its totals), and that a run nothing supervises any more is lost (``run:lost``), which
nothing it writes says: its supervisor died.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitflow_agents.base.jsondata import JsonProblem, loads
from gitflow_agents.base.redact import redact_text
from gitflow_agents.runs import RunPaths, iter_runs, read_json
from gitflow_agents.runs.fields import mapping, number, scalar, text
from gitflow_agents.runs.lost import is_lost, lifetime, lost_reason, status_written
from gitflow_agents.runs.schema import step_chain
from gitflow_agents.runs.spend import Spend, run_spend, spend_text, step_spend
from gitflow_agents.runs.status import is_live

MAX_TEXT = 400
"""Characters of an agent's output one event shows (its last ones)."""
MAX_READ = 1024 * 1024
"""Bytes of one events.jsonl one poll reads at most (the rest: the next polls)."""
LOST_EVERY = 2.0
"""Seconds a live run's status.json must stay as it was before the follower asks again whether
its supervisor still lives (a supervisor rewrites it each second while it watches its agent)."""


def shown_text(text: str, limit: int = MAX_TEXT) -> str:
    """Text an agent wrote, as the page shows it: secrets masked as in every output, cut to its
    last ``limit`` characters without the word the cut splits (it may be the rest of a secret)."""
    text = redact_text(text)
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    return "…" + (tail.split(" ", 1)[1] if " " in tail else "")


def tokens_text(data: Mapping[str, Any]) -> str:
    """``120/45 $0.0123`` from an event's usage (snake_case or camelCase keys), in the same form
    as a finished run's record shows (:func:`~gitflow_agents.runs.spend.spend_text`); "" when it
    says none."""
    tokens_in = data.get("input_tokens", data.get("inputTokens"))
    tokens_out = data.get("output_tokens", data.get("outputTokens"))
    cost = data.get("cost_usd", data.get("costUsd"))
    return spend_text(
        Spend(
            input_tokens=tokens_in if _is_int(tokens_in) else None,
            output_tokens=tokens_out if _is_int(tokens_out) else None,
            cost_usd=float(cost) if _is_int(cost) or isinstance(cost, float) else None,
            cost_estimated=data.get("cost_estimated", data.get("costEstimated")) is True,
            # an agent's end event: what it streamed before it stopped, a lower bound
            tokens_partial=data.get("usage_partial", data.get("tokensPartial")) is True,
            cost_partial=data.get("usage_partial", data.get("costPartial")) is True,
        )
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_STATE_OF = {
    "agent:start": "running",
    "agent:waiting": "waiting",
    "task:start": "queued",
}


def event_view(run_id: str, flow: str, event: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the page gets of one event: the run, its agent, the state it moves the run to (""
    when it does not), the time, a line of text (masked) and tokens/cost. None for a line that
    is no event."""
    kind = event.get("type")
    data = event.get("data")
    if not isinstance(kind, str) or not isinstance(data, dict):
        return None
    state = _STATE_OF.get(kind, "")
    text = ""
    if kind in ("agent:complete", "agent:failed"):
        state = str(data.get("status") or kind.split(":")[1])
        text = str(data.get("reason") or "")
    elif kind == "harness:complete":  # a step's outcome; an agent run's record's status is
        # not its state: agent:complete / agent:failed said how it ended (budget, stuck,
        # timeout: "failed" in the record), as status.json keeps it and the page is drawn with
        state = str(data.get("outcome") or "")
    elif kind in ("agent:output", "agent:tool"):
        text = str(data.get("tail") or data.get("tool") or "")
    elif kind in ("agent:waiting", "agent:start"):
        text = str(data.get("reason") or (f"pid {data['pid']}" if "pid" in data else ""))
    elif kind == "agent:reply":
        questions = data.get("questions")
        if data.get("status") == "needs_input" and isinstance(questions, list) and questions:
            text = f"needs input: {questions[0]}"
        else:
            text = str(data.get("summary") or "")
    elif kind == "phase:start":
        text = f"phase {data.get('phase', '')}"
    elif kind in ("session:message", "session:reply"):
        text = str(data.get("message") or data.get("summary") or "")
    agent = data.get("agent") or data.get("node") or ""
    # an attempt after a rate limit's wait: the run's figures so far, as `run:ended` brings them
    usage = data.get("run_usage")
    return {
        "run": run_id,
        "flow": flow,
        "type": kind,
        "agent": redact_text(str(agent)),
        "state": state,
        "at": str(event.get("timestamp") or ""),
        "text": shown_text(text.strip()),
        "tokens": tokens_text(usage if isinstance(usage, Mapping) else data),
    }


def views_of(paths: RunPaths, chunk: bytes, start: int) -> list[dict[str, Any]]:
    """The events of the whole lines of ``chunk`` (read at byte ``start`` of the run's
    events.jsonl) as :func:`event_view` shows them, each with ``offset``: the byte just past its
    line, so the page can tell an event it has from one it has not."""
    run_id, flow = paths.run_dir.name, paths.run_dir.parent.parent.name
    views = []
    position = 0
    while (end := chunk.find(b"\n", position)) >= 0:
        line, position = chunk[position:end], end + 1
        try:
            event = loads(line.decode("utf-8", errors="replace"))
        except JsonProblem:
            continue
        view = event_view(run_id, flow, event) if isinstance(event, dict) else None
        if view is not None:
            views.append({**view, "offset": start + position})
    return views


def ended_view(paths: RunPaths) -> dict[str, Any]:
    """A ``run:ended`` view once a run's result.json is written: how it ended (a step run's
    outcome), for a run whose events do not say it (a step run has no events of its own). An
    agent run's is how its agent ended (``run.outcome``: ``budget``, ``stuck``…, what its
    status.json says and the page is drawn with), not its record's coarser status (``failed``);
    its tokens are what its record says it spent, as a reload shows them."""
    result = read_json(paths.result) or {}
    run = mapping(result, "run")
    chain = step_chain(result)
    outcome = chain.outcome if chain is not None else text(run, "outcome")
    state = str(outcome or scalar(result, "status") or "")
    what = f"step {chain.step}" if chain is not None and chain.step is not None else ""
    # what the record says it spent, as a page drawn now shows it: every attempt's, a lower
    # bound marked (the events that ended its agent said each attempt's own)
    spend = step_spend(paths.run_dir, result) if chain is not None else run_spend(run)
    return {
        "run": paths.run_dir.name,
        "flow": paths.run_dir.parent.parent.name,
        "type": "run:ended",
        "agent": redact_text(str(scalar(run, "agentId") or "")),
        "state": redact_text(state),
        "at": "",
        "text": "",
        "tokens": spend_text(spend) if run else "",
        "offset": 0,
        "what": redact_text(what or str(scalar(run, "kind") or "")),
    }


def spent_view(paths: RunPaths, tokens: str) -> dict[str, Any]:
    """A ``run:spent`` view: what a running agent has spent so far (``tokens``, as
    :func:`~gitflow_agents.runs.spend.spend_text` shows it, the figures of ``status``)."""
    return {
        "run": paths.run_dir.name,
        "flow": paths.run_dir.parent.parent.name,
        "type": "run:spent",
        "agent": "",
        "state": "",
        "at": "",
        "text": "",
        "tokens": tokens,
        "offset": 0,
    }


def lost_view(paths: RunPaths, status: Mapping[str, Any]) -> dict[str, Any]:
    """A ``run:lost`` view: the run's supervisor died (``lost.is_lost``), so nothing will end
    it; with why, as ``status`` says it, and ``ended``: its last sign of life (epoch seconds,
    ``lost.lifetime``), where its time stops, as a page drawn now shows it."""
    started, lived = number(status, "started"), lifetime(status, status_written(paths))
    return {
        "run": paths.run_dir.name,
        "flow": paths.run_dir.parent.parent.name,
        "type": "run:lost",
        "agent": "",
        "state": "lost",
        "at": "",
        "text": shown_text(lost_reason(paths.run_dir.name, status)[0]),
        "tokens": "",
        "offset": 0,
        "ended": started + lived if started is not None and lived is not None else None,
    }


def run_is_live(paths: RunPaths) -> bool:
    """A live state in ``status.json``, or no ``result.json`` yet."""
    status = read_json(paths.status) or {}
    return is_live(status.get("state")) or not paths.result.exists()


@dataclass
class Follower:
    """Reads what was appended to the ``events.jsonl`` files under ``<root>/<flow_dir>``."""

    root: Path
    flow_dir: str
    offsets: dict[Path, int] = field(default_factory=dict)
    ended: set[Path] = field(default_factory=set)  # runs whose result.json was seen
    # a live run's spend: the status.json last read (inode, mtime, size), the text last sent,
    # the runs whose agent's attempt has ended (its event has the totals: no reading after it)
    status_seen: dict[Path, tuple[int, int, int]] = field(default_factory=dict)
    spent: dict[Path, str] = field(default_factory=dict)
    stopped: set[Path] = field(default_factory=set)
    # whether a run is lost: its status.json as last looked at and when (monotonic), the runs
    # found lost (said once)
    lost_checked: dict[Path, tuple[tuple[int, int, int], float]] = field(default_factory=dict)
    lost: set[Path] = field(default_factory=set)

    def start(self, *, replay: bool = True) -> None:
        """Remember where each run's events end; a live run's from their start (``replay``),
        else from their end too: only what happens from now on."""
        for paths in iter_runs(self.root, self.flow_dir):
            if paths.result.exists():
                self.ended.add(paths.run_dir)
            if not replay or not run_is_live(paths):
                try:
                    self.offsets[paths.events] = paths.events.stat().st_size
                except OSError:
                    self.offsets[paths.events] = 0

    def poll(self) -> list[dict[str, Any]]:
        """The events appended since the last poll, as :func:`event_view` shows them."""
        found: list[dict[str, Any]] = []
        for paths in iter_runs(self.root, self.flow_dir):
            views = self._read(paths)
            found.extend(views)
            if paths.run_dir in self.ended:
                continue
            if paths.result.exists():
                self.ended.add(paths.run_dir)
                found.append(ended_view(paths))
            else:
                found.extend(self._spent(paths, views))
                found.extend(self._lost(paths))
        return found

    def _lost(self, paths: RunPaths) -> list[dict[str, Any]]:
        """A ``run:lost`` view, once, when a run without a record is lost. Asked when the run is
        first seen (after the events it replays, which say it runs), then only once its
        status.json has stayed as it was for ``LOST_EVERY`` seconds, at most that often: a
        supervised run's changes each second, and asking means looking for processes."""
        run_dir = paths.run_dir
        if run_dir in self.lost:
            return []
        try:
            stat = paths.status.stat()
        except OSError:  # a step run's events before its status.json, or none at all
            return []
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        now = time.monotonic()
        last = self.lost_checked.get(run_dir)
        if last is not None and last[0] != seen:
            self.lost_checked[run_dir] = (seen, now)
            return []
        if last is not None and now - last[1] < LOST_EVERY:
            return []
        self.lost_checked[run_dir] = (seen, now)
        status = read_json(paths.status) or {}
        if not is_lost(status):
            return []
        self.lost.add(run_dir)
        return [lost_view(paths, status)]

    def _spent(self, paths: RunPaths, views: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A ``run:spent`` view when the spend a live run's status.json says changed since the
        last one sent. It is read after the run's events of this poll, and not once its agent
        has ended (until it waits out a rate limit, or an attempt after one starts): the
        supervisor writes its last reading before the event that ends the agent, whose totals
        the page must keep; the wait writes what the run's attempts spent so far before its
        event (``agent_run/attempts._wait``)."""
        run_dir = paths.run_dir
        for view in views:
            if view["type"] in ("agent:complete", "agent:failed"):
                self.stopped.add(run_dir)
            elif view["type"] in ("agent:start", "agent:waiting"):
                self.stopped.discard(run_dir)
        if run_dir in self.stopped:
            return []
        try:  # read again only once rewritten (each second while a watched agent runs)
            stat = paths.status.stat()
        except OSError:
            return []
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if self.status_seen.get(run_dir) == seen:
            return []
        self.status_seen[run_dir] = seen
        status = read_json(paths.status) or {}
        watched = mapping(status, "spent")
        tokens = spend_text(run_spend(watched)) if watched and is_live(status.get("state")) else ""
        if not tokens or tokens == self.spent.get(run_dir):
            return []
        self.spent[run_dir] = tokens
        return [spent_view(paths, tokens)]

    def _read(self, paths: RunPaths) -> list[dict[str, Any]]:
        path = paths.events
        offset = self.offsets.get(path, 0)
        try:
            if path.stat().st_size <= offset:
                return []
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO planted there: no hang
            with os.fdopen(fd, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read(MAX_READ)
        except OSError:
            return []
        end = chunk.rfind(b"\n")
        if end < 0:
            if len(chunk) >= MAX_READ:  # one line longer than a read: skipped
                self.offsets[path] = offset + len(chunk)
            return []
        self.offsets[path] = offset + end + 1
        return views_of(paths, chunk, offset)
