"""The supervised attempts of one agent run: slots, and waiting out rate limits.

An agent whose adapter has a ``max_parallel`` takes a slot (``runs/slots.py``) for as long as
its process runs, waiting for one as ``waiting for a <adapter> slot``. An agent that ends
``rate_limited`` (its CLI said 429, 529 overloaded or a usage limit: ``agents/limits.py``)
waits: until the reset time its CLI named, else an exponential backoff with jitter, at most
``defaults.rate_limit_wait_secs`` in all; then it **continues its session** when its CLI can
resume (Claude, Codex, Gemini, opencode, Auggie: the same ``--resume`` as ``send``), else it is
started again. The wait is in ``status.json`` (state ``waiting``, ``waitingUntil``) and the
events (``agent:waiting``). docs/supervisor.md, "Rate limits".
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitflow_agents.agent_run.launch import prepare
from gitflow_agents.runs.slots import SlotWaitCanceled, hold_slot, slots_folder
from gitflow_agents.supervisor import Launch, Outcome, supervise
from gitflow_agents.supervisor.outcome import ParsedOutput, update_status

if TYPE_CHECKING:
    from gitflow_agents.agent_run.run import AgentRunner

#: The message of a continued session after a rate limit (the system prompt is the same).
CONTINUE_TASK = (
    "The model API stopped you for a while (a rate limit); it has passed. Continue your task "
    "where you left off, without redoing what is done. Your task: {task}"
)
BACKOFF_FIRST = 30.0  # seconds: the CLI has already retried a few times on its own
BACKOFF_MAX = 600.0
TICK = 0.1  # the longest sleep while waiting: bounds how late a cancel is seen


class Waits:
    """How long a run still may wait for rate limits, and how long the next wait is."""

    def __init__(self, total: float, jitter: Callable[[], float] = random.random) -> None:
        self.total = float(total)
        self.spent = 0.0
        self.count = 0
        self._jitter = jitter

    def next(self, resets_at: float | None, now: float) -> float | None:
        """Seconds to wait before the next attempt; None when the run may not wait that long:
        the total is spent, or the reset the CLI named is beyond it (waiting part of the way
        would only be refused again)."""
        left = self.total - self.spent
        if left <= 0:
            return None
        if resets_at is not None and resets_at > now:
            delay = resets_at - now
            if delay > left:
                return None
        else:  # full backoff, halved at most by the jitter, so parallel agents spread out
            backoff = min(BACKOFF_FIRST * 2**self.count, BACKOFF_MAX)
            delay = min(backoff * (0.5 + self._jitter() / 2), left)
        self.count += 1
        self.spent += delay
        return delay


def supervise_attempts(run: AgentRunner, cancel: threading.Event | None) -> Outcome:
    """Run the prepared agent to its Outcome, waiting out rate limits as the config allows."""
    assert run.launch is not None
    config = run.job.config
    waits = Waits(config.rate_limit_wait_secs)
    launch = run.launch.launch
    earlier: list[ParsedOutput] = []
    while True:
        outcome = _attempt(run, launch, cancel)
        limit = outcome.output.rate_limit if outcome.output is not None else None
        if outcome.status != "rate_limited":
            break
        delay = waits.next(limit.resets_at if limit else None, time.time())
        if delay is None:
            outcome = dataclasses.replace(outcome, reason=_gave_up(outcome.reason, waits))
            update_status(run.paths.run_dir, reason=outcome.reason)
            break
        if outcome.output is not None:
            earlier.append(outcome.output)
        launch, resumes = _next_launch(run, outcome)
        if not _wait(run, delay, outcome.reason, waits.count, resumes, cancel):
            outcome = _canceled(run, "canceled while waiting out a rate limit")
            break
    return _with_earlier_usage(outcome, earlier)


def _attempt(run: AgentRunner, launch: Launch, cancel: threading.Event | None) -> Outcome:
    """One supervised process of the run, in a slot of its adapter when it has a limit."""
    job = run.job
    agent = job.config.agent(job.agent)

    def supervised() -> Outcome:
        return supervise(
            launch,
            run.files,
            job.limits,
            hub=run.hub,
            run_dir=run.paths.run_dir,
            cancel=cancel,
            secrets=job.secrets,
        )

    if agent.max_parallel is None:
        return supervised()
    why = f"waiting for a {agent.adapter} slot (max_parallel {agent.max_parallel})"

    def waiting() -> None:
        update_status(run.paths.run_dir, state="queued", reason=why)
        run.emit("agent:waiting", {"agent": job.agent_id, "reason": why, "slot": agent.adapter})

    try:
        with hold_slot(
            slots_folder(job.root, job.config.flow_dir),
            agent.adapter,
            agent.max_parallel,
            run_id=run.run_id,
            waiting=waiting,
            canceled=lambda: _canceled_now(run, cancel),
        ):
            return supervised()
    except SlotWaitCanceled:
        return _canceled(run, f"canceled while {why}")


def _next_launch(run: AgentRunner, outcome: Outcome) -> tuple[Launch, bool]:
    """The launch of the next attempt: the same session continued where the CLI can resume
    and said which, else the same launch again; and whether it continues the session."""
    prepared, job = run.launch, run.job
    assert prepared is not None
    session = outcome.output.session_id if outcome.output is not None else None
    if not (prepared.adapter.resumes and session and run.prompt_path is not None):
        return prepared.launch, False
    first_task = job.resume.message if job.resume is not None else "the one in your system prompt"
    again = prepare(
        job.config,
        job.agent,
        run.files,
        agent_id=job.agent_id,
        workdir=run.workdir,
        prompt_path=run.prompt_path,
        prompt_text=job.prompt_text,
        task=CONTINUE_TASK.format(task=job.task or first_task),
        env=job.env,
        resume_session_id=session,
    )
    return again.launch, True


def _wait(
    run: AgentRunner,
    delay: float,
    reason: str,
    count: int,
    resumes: bool,
    cancel: threading.Event | None,
) -> bool:
    """Wait ``delay`` seconds, on record; False when the run is canceled meanwhile."""
    until = time.time() + delay
    then = "continue its session" if resumes else "start again"
    why = f"{reason}; waiting until {time.strftime('%H:%M:%S', time.localtime(until))} to {then}"
    update_status(run.paths.run_dir, state="waiting", waitingUntil=until, reason=why)
    data: dict[str, Any] = {
        "agent": run.job.agent_id,
        "reason": why,
        "until": until,
        "seconds": round(delay, 3),
        "attempt": count,
        "resumes": resumes,
    }
    run.emit("agent:waiting", data)
    while (left := until - time.time()) > 0:
        if _canceled_now(run, cancel):
            return False
        time.sleep(min(TICK, left))
    update_status(run.paths.run_dir, waitingUntil=None)
    return not _canceled_now(run, cancel)


def _canceled_now(run: AgentRunner, cancel: threading.Event | None) -> bool:
    return (cancel is not None and cancel.is_set()) or run.paths.cancel.exists()


def _canceled(run: AgentRunner, reason: str) -> Outcome:
    """The Outcome of a run canceled while no process of it ran, on record."""
    now = time.time()
    update_status(run.paths.run_dir, state="canceled", reason=reason, ended=now)
    return Outcome(
        status="canceled",
        reason=reason,
        report_path=None,
        exit_code=None,
        started=now,
        ended=now,
        duration=0.0,
        last_activity=now,
        pid=None,
        watcher="none",
    )


def _gave_up(reason: str, waits: Waits) -> str:
    waited = f"after waiting {waits.spent:.0f}s" if waits.count else "without waiting"
    return f"{reason} (gave up {waited}; defaults.rate_limit_wait_secs is {waits.total:g})"


def _with_earlier_usage(outcome: Outcome, earlier: list[ParsedOutput]) -> Outcome:
    """The Outcome with the tokens and cost of the earlier attempts added to its own: the run
    spent them all (known parts are added; a part its CLI did not state adds nothing)."""
    last = outcome.output
    if not earlier or last is None or not dataclasses.is_dataclass(last):
        return outcome
    parts = [*earlier, last]
    totals: dict[str, Any] = {}
    for name in ("input_tokens", "output_tokens", "cached_tokens", "cost_usd"):
        known = [value for part in parts if (value := getattr(part, name)) is not None]
        totals[name] = sum(known) if known else None
    merged = dataclasses.replace(last, **totals)
    return dataclasses.replace(outcome, output=merged)
