"""The supervised attempts of one agent run: slots, and waiting out rate limits.

An agent whose adapter has a ``max_parallel`` takes a slot (``runs/slots.py``) for as long as
its process runs, waiting for one as ``waiting for a <adapter> slot``; once it has one, and
before each attempt, its budget is asked again (a scope spent meanwhile starts no agent:
``Attempts.refused``). An agent that ends
``rate_limited`` (its CLI said 429, 529 overloaded or a usage limit: ``agents/limits.py``)
waits: until the reset time its CLI named, else an exponential backoff with jitter, at most
``defaults.rate_limit_wait_secs`` in all; then it **continues its session** when its CLI can
resume (Claude, Codex, Gemini, opencode, Auggie: the same ``--resume`` as ``send``), with the
messages ``send`` queued for it meanwhile (they are removed from its inbox once that attempt
ends, so the next turn does not send them again), else it is started again. The wait is in ``status.json`` (state ``waiting``, ``waitingUntil``; under a budget,
``spent``: what the attempts so far spent) and the events (``agent:waiting``).
docs/supervisor.md, "Rate limits".
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitflow_agents.agent_run.launch import prepare
from gitflow_agents.agent_run.record import attempts_usage
from gitflow_agents.agents.base import AgentOutput, Cli
from gitflow_agents.agents.meter import FREE
from gitflow_agents.agents.output import since
from gitflow_agents.agents.prices import usage_of
from gitflow_agents.base.errors import interrupted_by
from gitflow_agents.runs.budget import Watch, not_started
from gitflow_agents.runs.control import queued_messages
from gitflow_agents.runs.slots import SlotWaitCanceled, hold_slot, slots_folder
from gitflow_agents.runs.spend import total
from gitflow_agents.supervisor import Launch, Outcome, Status
from gitflow_agents.supervisor.outcome import ParsedOutput, SupervisorInterrupted, update_status

if TYPE_CHECKING:
    from gitflow_agents.agent_run.run import AgentRunner

#: The message of a continued session after a rate limit (the system prompt is the same).
CONTINUE_TASK = (
    "The model API stopped you for a while (a rate limit); it has passed. Continue your task "
    "where you left off, without redoing what is done. Your task: {task}"
)
#: What follows CONTINUE_TASK when messages were queued for the agent (``send``) meanwhile.
QUEUED_MESSAGES = "\n\nMessages sent to you meanwhile, oldest first:\n\n{messages}"
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


class Attempts:
    """The attempts of one supervised run, for :meth:`AgentRunner.run` to drive (``supervise``
    stays its own call, so an agent process starts no deeper below the chain's loop)::

        attempts = Attempts(run, cancel)
        for launch in attempts:  # the next one after a rate limit is waited out
            with attempts.slot() as free:  # a slot of the adapter (max_parallel), if any
                # not started: canceled while it waited, or a scope spent meanwhile
                held = attempts.refused(launch) if free else attempts.slot_canceled()
                attempts.ended(supervise(launch, ...) if held is None else held)
        outcome = attempts.outcome

    """

    def __init__(self, run: AgentRunner, cancel: threading.Event | None) -> None:
        self.run, self.cancel = run, cancel
        self.waits = Waits(run.job.config.rate_limit_wait_secs)
        self._outcomes: list[Outcome] = []
        # whether each attempt continued the session before it (the first: the run's, a send)
        self._resumed: list[bool] = [True]
        self._delivered: list[Path] = []  # queued messages the current attempt was given
        agent = run.job.config.agent(run.job.agent)
        self.adapter, self.max_parallel = agent.adapter, agent.max_parallel
        self._slot_wait = f"waiting for a {self.adapter} slot (max_parallel {self.max_parallel})"

    def __iter__(self) -> Iterator[Launch]:
        run = self.run
        assert run.launch is not None
        launch = run.launch.launch
        while True:
            yield launch
            outcome = self._outcomes[-1]
            if outcome.status != "rate_limited":
                return
            limit = outcome.output.rate_limit if outcome.output is not None else None
            delay = self.waits.next(limit.resets_at if limit else None, time.time())
            if delay is None:
                reason = _gave_up(outcome.reason, self.waits)
                self._outcomes[-1] = dataclasses.replace(outcome, reason=reason)
                update_status(run.paths.run_dir, reason=reason)
                return
            resumes = _resumes(run, outcome)
            own, used = self._own_outputs()
            before = used if resumes else None  # what its figures will count again
            done = tuple(output for output in own if output is not None)  # each attempt's own
            budget = launch.budget
            if isinstance(budget, Watch):  # it counts what the run spent so far (the wait too)
                budget = budget.next_attempt(done, before)
            spent = (  # the record's figures of the attempts so far when no watch reads them
                budget.spent()
                if isinstance(budget, Watch)
                else attempts_usage(done, run.facts.model, run.facts.prices)
            )
            try:
                waited = _wait(
                    run, delay, outcome.reason, self.waits.count, resumes, self.cancel, spent
                )
            except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the run's outcome rides on
                # it, as the supervisor's does (what the attempts spent, the run's time)
                why = f"interrupted ({interrupted_by(exc)}) while waiting out a rate limit"
                self._outcomes.append(_canceled(run, why))
                raise SupervisorInterrupted(self.outcome, interrupted_by(exc)) from None
            if not waited:
                self._outcomes.append(_canceled(run, "canceled while waiting out a rate limit"))
                return
            if not isinstance(budget, Watch):  # its next attempt runs unread: no figure shown
                update_status(run.paths.run_dir, spent=None)
            launch, self._delivered = _next_launch(run, outcome, resumes)
            self._resumed.append(resumes)
            # its end event takes off what it counts again and says the run's spend so far,
            # as the record will (the console's end line); its budget's watch counts it too
            usage = functools.partial(_run_usage, run, done)
            launch = launch._replace(counted_before=before, budget=budget, run_usage=usage)

    @contextlib.contextmanager
    def slot(self) -> Iterator[bool]:
        """Hold a slot of the adapter while the block runs the agent (none without
        ``max_parallel``); False: the run was canceled while it waited for one."""
        if self.max_parallel is None:
            yield True
            return
        run, why = self.run, self._slot_wait
        told: list[bool] = []

        def waiting() -> None:
            told.append(True)
            update_status(run.paths.run_dir, state="queued", reason=why)
            run.emit(
                "agent:waiting", {"agent": run.job.agent_id, "reason": why, "slot": self.adapter}
            )

        taking = hold_slot(
            slots_folder(run.job.root, run.job.config.flow_dir),
            self.adapter,
            self.max_parallel,
            run_id=run.run_id,
            run_dir=run.paths.run_dir,
            waiting=waiting,
            canceled=lambda: _canceled_now(run, self.cancel),
        )
        try:
            taking.__enter__()
        except SlotWaitCanceled:
            yield False
            return
        if told:  # the slot is ours: the reason no longer holds
            update_status(run.paths.run_dir, reason=None)
        try:
            yield True
        finally:
            taking.__exit__(None, None, None)

    def slot_canceled(self) -> Outcome:
        """The Outcome of a run canceled while it waited for a slot."""
        return _canceled(self.run, f"canceled while {self._slot_wait}")

    def refused(self, launch: Launch) -> Outcome | None:
        """The Outcome of an attempt a spent scope does not start, None while every scope it
        runs in has budget left. Asked right before its process would start, once its slot is
        granted: a scope the chain found with budget left before it prepared the agent may have
        been spent since, by the agent that held the slot, a parallel step or reviewer, or while
        the run waited out a rate limit. It ends as an agent refused before it started does
        (``Ledger.refuse``: that message, the outcome ``budget``, exit 5), having spent nothing
        in this attempt (``NOTHING_RAN``; the earlier attempts' figures are the run's). After
        attempts that ran, the message says that no further attempt started: they did."""
        why = self._spent(launch)
        if why is None:
            return None
        said = not_started(why, self.run.job.role, further=self.started)
        return _not_started(self.run, "budget", said)

    def _spent(self, launch: Launch) -> str | None:
        """The message of a spent scope the attempt of ``launch`` would run in (``Ledger.over``),
        None when there is none. The first attempt is asked as any agent about to start is
        (:meth:`Ledger.holds_back`); a later one with what the earlier attempts spent counted
        in every scope, its own too (as its watch counts them once it runs)."""
        ledger, watch = self.run.job.budget, launch.budget
        if ledger is None or self.adapter in FREE:
            return None
        me = watch if isinstance(watch, Watch) else None
        if len(self._outcomes) == 0:
            return ledger.over(me=me)
        if me is not None:  # its reading is the earlier attempts' until its process runs
            return me.exceeded()
        own, _ = self._own_outputs()
        model = self.run.facts.model
        return ledger.over(total(ledger.priced(out, model) for out in own if out is not None))

    def ended(self, outcome: Outcome) -> None:
        """An attempt's Outcome."""
        self._outcomes.append(outcome)
        for path in self._delivered:  # given to the continued session: not for its next turn
            path.unlink(missing_ok=True)
        self._delivered = []

    @property
    def started(self) -> bool:
        """Whether a process of the run started: not when each attempt ended before its
        process (canceled while it waited for a slot, refused by a spent budget)."""
        return any(outcome.output is not NOTHING_RAN for outcome in self._outcomes)

    @property
    def outcome(self) -> Outcome:
        """The run's Outcome: the last attempt's, from the first attempt's start (the waits
        between them are part of the run's duration), with the earlier attempts' outputs: the
        record prices each attempt's usage on its own and adds them up (``earlier_outputs``)."""
        own, _ = self._own_outputs()
        *earlier, last = self._outcomes
        if not earlier:
            return dataclasses.replace(last, output=own[-1])
        started = earlier[0].started
        outputs = tuple(output for output in own[:-1] if output is not None)
        return dataclasses.replace(
            last,
            started=started,
            duration=last.ended - started,
            output=own[-1],
            earlier_outputs=outputs,
        )

    def _own_outputs(self) -> tuple[list[ParsedOutput | None], AgentOutput | None]:
        """Each attempt's output with only its own figures, and what the session had used at
        the end of the last (as a next attempt continuing it would count it again). A CLI
        whose figures are its session's so far (``Cli.session_totals``: all of them; Claude
        Code's ``cost_totals``: its cost) counts, in an attempt that continued the session,
        what the session used before it: the session's before this run (``send``'s turn:
        ``AgentJob.session_before``) and the earlier attempts'; that part is taken off."""
        run = self.run
        assert run.launch is not None
        cli = run.launch.adapter.cli
        used = run.job.session_before
        own: list[ParsedOutput | None] = []
        for outcome, resumed in zip(self._outcomes, self._resumed, strict=False):
            if outcome.output is NOTHING_RAN:  # canceled before its process: nothing spent
                own.append(NOTHING_RAN)
                continue
            output, base = outcome.output, used if resumed else None
            mine = since(output, base) if output is not None and base is not None else output
            own.append(mine)
            used = _used_after(run, cli, base, output, mine)
        return own, used


def _used_after(
    run: AgentRunner,
    cli: Cli,
    base: AgentOutput | None,
    output: ParsedOutput | None,
    mine: ParsedOutput | None,
) -> AgentOutput | None:
    """What the session had used at the end of an attempt (``output`` as its CLI said it,
    ``mine`` its own part; ``base``: the session's before it), as a next attempt continuing
    it counts it again (``Cli.counted_before``): its last figures (``session_totals``), or
    the cost before it plus this attempt's, the stated one else the price table's estimate
    (``cost_totals``); None for a CLI that counts each process on its own."""
    if output is None or not isinstance(output, AgentOutput):
        return base
    if cli.session_totals:
        return cli.counted_before(output)
    if not cli.cost_totals:
        return None
    model = run.job.config.agent(run.job.agent).model
    cost = usage_of(mine, model, run.job.config.prices).cost_usd if mine is not None else None
    if cost is None:
        return base
    earlier = base.cost_usd if base is not None and base.cost_usd is not None else 0.0
    return AgentOutput(cost_usd=earlier + cost)


def _run_usage(
    run: AgentRunner, earlier: Sequence[ParsedOutput], own: ParsedOutput | None
) -> dict[str, Any]:
    """The run's usage keys as its record will have them (``record.attempts_usage``) were the
    attempt whose own output is ``own`` its last, after the attempts of ``earlier`` (their
    own outputs, as :attr:`Attempts.outcome` gives them to the record): what the event that
    ends the attempt says the run spent, so the console's end line says what ``history`` will
    (the attempt's own figures alone were a fraction of it)."""
    return attempts_usage([*earlier, own], run.facts.model, run.facts.prices)


def _resumes(run: AgentRunner, outcome: Outcome) -> bool:
    """Whether the next attempt continues the session (its CLI resumes and said which)."""
    session = outcome.output.session_id if outcome.output is not None else None
    assert run.launch is not None
    return bool(run.launch.adapter.cli.resumes and session and run.prompt_path is not None)


def _next_launch(run: AgentRunner, outcome: Outcome, resumes: bool) -> tuple[Launch, list[Path]]:
    """The launch of the next attempt: the same session continued (``resumes``), told the
    messages queued for it meanwhile, else the same launch again; and the queued messages'
    files it carries."""
    prepared, job = run.launch, run.job
    assert prepared is not None and outcome.output is not None
    if not resumes or run.prompt_path is None:
        return prepared.launch, []
    first_task = job.resume.message if job.resume is not None else "the one in your system prompt"
    task = CONTINUE_TASK.format(task=job.task or first_task)
    queued = queued_messages(run.paths.run_dir)
    if queued:
        task += QUEUED_MESSAGES.format(messages="\n\n".join(text for _, text in queued))
    again = prepare(
        job.config,
        job.agent,
        run.files,
        agent_id=job.agent_id,
        workdir=run.workdir,
        prompt_path=run.prompt_path,
        prompt_text=job.prompt_text,
        task=task,
        env=job.env,
        resume_session_id=outcome.output.session_id,
        budget=job.budget,
    )
    return again.launch, [path for path, _ in queued]


def wait_ends(until: float, delay: float) -> str:
    """When a wait ends, as a local time: ``19:55:59`` today, ``2026-11-29 19:55:59`` on
    another day (a usage limit that resets in days), ``N s from now`` past what the clock
    shows (a reset ages away)."""
    try:
        end, today = time.localtime(until), time.localtime()
        same_day = end[:3] == today[:3]
        return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", end)
    except (OverflowError, OSError, ValueError):
        return f"{delay:,.0f} s from now"


def _wait(
    run: AgentRunner,
    delay: float,
    reason: str,
    count: int,
    resumes: bool,
    cancel: threading.Event | None,
    spent: Mapping[str, Any] | None = None,
) -> bool:
    """Wait ``delay`` seconds, on record; False when the run is canceled meanwhile. ``spent``:
    what the run's attempts spent so far, as its budget's watch counts it (without a watch,
    as its record will): ``status`` shows it while the run waits, as it shows a running
    agent's."""
    until = time.time() + delay
    then = "continue its session" if resumes else "start again"
    shown = wait_ends(until, delay)
    why = f"{reason}; waiting until {shown} to {then}"
    # the attempt's end is not the run's: it goes on (``status``: no endedAt, its TIME from
    # the first attempt's start)
    live = {"spent": spent} if spent is not None else {}  # not the last attempt's last reading
    update_status(
        run.paths.run_dir, state="waiting", waitingUntil=until, reason=why, ended=None, **live
    )
    data: dict[str, Any] = {
        "agent": run.job.agent_id,
        "reason": why,
        "until": until,
        "seconds": round(delay, 3),
        "attempt": count,
        "resumes": resumes,
    }
    run.emit("agent:waiting", data)
    try:
        while (left := until - time.time()) > 0:
            if _canceled_now(run, cancel):
                return False
            time.sleep(min(TICK, left))
    except BaseException:  # Ctrl-C, SIGTERM: the run is no longer waiting
        update_status(run.paths.run_dir, waitingUntil=None)
        raise
    update_status(run.paths.run_dir, waitingUntil=None, reason=None)
    return not _canceled_now(run, cancel)


def _canceled_now(run: AgentRunner, cancel: threading.Event | None) -> bool:
    return (cancel is not None and cancel.is_set()) or run.paths.cancel.exists()


NOTHING_RAN = AgentOutput(input_tokens=0, output_tokens=0, cached_tokens=0, cost_usd=0.0)
"""What an attempt canceled before its process started used: nothing (known, not unknown:
no model was called, so its record and the budget count 0, and no warning says its usage is
unknown)."""


def _canceled(run: AgentRunner, reason: str) -> Outcome:
    """The Outcome of a run canceled while no process of it ran, on record."""
    return _not_started(run, "canceled", reason)


def _not_started(run: AgentRunner, status: Status, reason: str) -> Outcome:
    """The Outcome ``status`` of a run whose next process was not started (canceled before it,
    or refused by a spent budget), on record: its attempt spent nothing."""
    now = time.time()
    update_status(run.paths.run_dir, state=status, reason=reason, ended=now)
    return Outcome(
        status=status,
        reason=reason,
        report_path=None,
        exit_code=None,
        started=now,
        ended=now,
        duration=0.0,
        last_activity=now,
        pid=None,
        watcher="none",
        output=NOTHING_RAN,
    )


def _gave_up(reason: str, waits: Waits) -> str:
    waited = f"after waiting {waits.spent:.0f}s" if waits.count else "without waiting"
    return f"{reason} (gave up {waited}; defaults.rate_limit_wait_secs is {waits.total:g})"
