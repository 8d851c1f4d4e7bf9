"""``run PLAN --all --jobs N``: the plan's steps on this machine, up to N at once.

Each step runs the whole chain (``run_step``) in a thread of its own, in its own work tree and
branch; a step starts as soon as every step its ``Depends on:`` line names is ✅ on the target
(not when a wave ends), and a step whose ``Touches:`` footprint overlaps that of a running step
waits, the later one in plan order (``plan/waves.py``'s ``spread``, as ``plan matrix --ready``).
Landing is serial: ``Context.landing`` is held from "the target did not move since the review"
to the merge, so a step whose target moved is merged with the new target and reviewed again
(``chain/integrate.py``) before it lands. Threads, not processes: a chain mostly waits on its
agents' processes, and it keeps no process-wide state (no ``os.chdir``, signal handlers only in
the main thread); each step gets its own ``Context`` copy (notices, secrets, its step run id),
sharing the event hub, the cancel flag and the landing lock (docs/decisions.md, issue 24).

One Ctrl-C (or SIGTERM) sets the shared cancel flag: every supervisor kills its agent's process
tree, each step records ``canceled``, and the same command run again continues (done steps are
skipped, a step's branch and its completed agents are reused). After a step fails no new step
starts; the running ones finish. The plan is read again before each decision (``Remaining``,
also ``--jobs 1``'s rule): a step taken out of it meanwhile is dropped (``planned``), a changed
``Depends on:`` line is followed, and a plan that no longer parses starts nothing more. The
exit code is the worst of the steps' (``worst_exit``).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import NamedTuple

from gitflow_agents.base.errors import ExitCode, GitflowError, PlanError
from gitflow_agents.chain.context import Context
from gitflow_agents.chain.loop import run_step
from gitflow_agents.chain.record import ChainResult
from gitflow_agents.chain.resume import landed_branch
from gitflow_agents.chain.state import DONE, done_where, where_it_went
from gitflow_agents.plan import Plan, parse_plan
from gitflow_agents.plan.deps import checked_order
from gitflow_agents.plan.model import shown_path
from gitflow_agents.plan.waves import spread
from gitflow_agents.render.steps import StepsChannel
from gitflow_agents.runs.events import EventHub

WORST_FIRST: tuple[int, ...] = (
    ExitCode.INTERRUPTED,
    ExitCode.INTERNAL,
    ExitCode.USAGE,
    ExitCode.BUDGET,
    ExitCode.GITHUB,
    ExitCode.RATE_LIMITED,
    ExitCode.AGENT_FAILED,
    ExitCode.REVISE,
    ExitCode.OK,
)
"""The exit codes from worst to best: an interrupted run, a bug, what needs a person (a refused
merge, an unresolved conflict, a usage or config error; a spent budget), then GitHub, a model
API that kept refusing, an agent that failed, a step that was not approved, and success
(docs/chains.md, "Several steps at once")."""

_POLL = 0.2  # seconds: the main thread wakes this often, so Ctrl-C is seen at once


def worst_exit(codes: Iterable[int]) -> int:
    """The worst of ``codes`` in ``WORST_FIRST``'s order (an unknown code counts as a bug);
    0 for none."""
    rank = {int(code): index for index, code in enumerate(WORST_FIRST)}
    known = [code if code in rank else int(ExitCode.INTERNAL) for code in codes]
    return min(known, key=rank.__getitem__, default=int(ExitCode.OK))


def steps_hub(*, quiet: bool, tty: bool | None = None) -> EventHub:
    """The event hub of a ``--jobs N`` run: the live view of the steps on stderr, redrawn in
    place when stdout and stderr are a terminal outside CI, else plain lines (output piped to a
    file or a CI log gets a line per change); nothing with ``quiet``."""
    if quiet:
        return EventHub([])
    if tty is None:
        tty = sys.stderr.isatty() and sys.stdout.isatty() and not os.environ.get("CI")
    # the step lines printed on stdout go above the table, not through it
    return EventHub([StepsChannel(sys.stderr, is_tty=tty, redirect_stdout=tty)])


class Waiting(NamedTuple):
    step: int
    why: str

    @property
    def key(self) -> tuple[int, str]:
        """The step and what it waits for, the first word of ``why``: ``touches`` (a running
        step's footprint) or ``--jobs`` (the cap). Its line is printed once per kind, not per
        text: the steps in flight, or the one it overlaps, change while it waits."""
        return self.step, self.why.split(" ", 1)[0]


def next_steps(
    ctx: Context, pending: Sequence[int], running: Sequence[int], jobs: int
) -> tuple[list[int], list[Waiting]]:
    """The one place that decides which steps start now: of ``pending`` (in plan order), those
    already ✅ or whose work landed without its ✅ (``resume.landed_branch``; each is skipped at
    once, as a dependency it is done), and those whose dependencies are all ✅ on the target,
    whose footprint overlaps no running step's (nor one chosen before it), while fewer than
    ``jobs`` run; and the ready steps that wait, with why. A step whose dependencies are not
    done is neither (it waits for them silently)."""
    assert ctx.plan is not None
    plan = ctx.plan
    done: dict[int, bool] = {}

    def landed(number: int) -> bool:  # ✅, or its work on the target without its ✅
        if number not in done:
            done[number] = (
                done_where(ctx, number) is not None or landed_branch(ctx, number) is not None
            )
        return done[number]

    # already ✅ or landed (without --force): started at once, taking no job (``run_step``
    # skips it, finishing the landing of one whose ✅ did not come)
    skipped = [] if ctx.settings.force else [n for n in pending if landed(n)]
    ready = [
        plan.step(n)
        for n in pending
        if n not in skipped and all(landed(d) for d in plan.step(n).depends_on)
    ]
    chosen, held = spread(plan, ready, list(running), jobs)
    waits = [Waiting(number, why.replace("--max-parallel", "--jobs")) for number, why in held]
    return [*skipped, *(step.number for step in chosen)], waits


class Remaining:
    """The steps of a ``run --all`` not started yet, kept in step with the plan as it is edited
    while the run goes on: the one re-planning rule of ``--jobs 1`` and ``--jobs N``
    (docs/chains.md, "Several steps at once")."""

    def __init__(self, plan: Plan, steps: Sequence[int]) -> None:
        self.steps = list(steps)  # in the order the plan's dependencies give
        self.path = plan.path
        self._known = {step.number for step in plan.steps}  # the steps of the last read

    def reread(self, ctx: Context, say: Callable[[str], None]) -> Context:
        """``ctx`` with the plan read again, to decide with: a step it no longer has is
        dropped (``planned``), a step it has gained since the last read joins the run (one
        line each: ``--all`` is every step not yet ✅), and they are put in the order its
        ``Depends on:`` lines give now (``checked_order``: a dependency added meanwhile is
        waited for). GitflowError (PlanError) when it no longer parses or its dependencies
        can no longer be met."""
        fresh = replace(ctx, plan=parse_plan(self.path, ctx.config.spec_plan))
        assert fresh.plan is not None
        order = checked_order(fresh.plan)
        kept = set(planned(fresh.plan, self.steps, say))
        for added in (number for number in order if number not in self._known):
            say(f"step {added}: new in {shown_path(self.path)}, joins the run")
            kept.add(added)
        self._known = set(order)
        self.steps = [number for number in order if number in kept]
        return fresh

    def start(self, number: int) -> None:
        """``number`` started: no longer one to start."""
        self.steps.remove(number)


def planned(plan: Plan, steps: Sequence[int], say: Callable[[str], None]) -> list[int]:
    """The steps of ``steps`` that ``plan`` (read again: edited while the run goes on) still
    has, in their order; one line on ``say`` for each it no longer has. Such a step is not run
    and counts as no step of the run (no record, no exit code): the others go on, with
    ``--jobs 1`` as with more (docs/chains.md, "Several steps at once")."""
    numbers = {step.number for step in plan.steps}
    for gone in (number for number in steps if number not in numbers):
        say(f"step {gone}: no longer in {shown_path(plan.path)}, not run")
    return [number for number in steps if number in numbers]


class _Ended(NamedTuple):
    step: int
    result: ChainResult | None
    error: BaseException | None


def run_parallel(
    ctx: Context,
    steps: Sequence[int],
    jobs: int,
    report: Callable[[ChainResult], None],
    say: Callable[[str], None] = print,
) -> int:
    """Run ``steps`` (dependency order) up to ``jobs`` at once (see the module doc); each
    ended step is handed to ``report`` in this thread. Returns the worst exit code; raises
    KeyboardInterrupt once every step has stopped after a Ctrl-C, and the first unexpected
    error (a bug) once every other step has ended."""
    assert ctx.plan is not None
    ended: queue.Queue[_Ended] = queue.Queue()
    pending = Remaining(ctx.plan, steps)
    running: dict[int, threading.Thread] = {}
    codes: list[int] = []
    said: set[tuple[int, str]] = set()  # Waiting.key
    bug: BaseException | None = None
    interrupted = False
    stopped: str | None = None  # why no further step starts
    decide = True  # at the start and after a step ended: only a landing readies a step
    while True:
        try:
            if decide and stopped is None and not interrupted:
                decide = False
                budget = ctx.budget
                spent = budget.holds_back(*ctx.adapters) if budget is not None else None
                if spent is not None and pending.steps:  # the plan's budget: no step starts
                    say(f"no further step starts: {spent}")
                    codes.append(int(ExitCode.BUDGET))
                    stopped = "the plan's budget is spent"
                    continue
                try:
                    fresh = pending.reread(ctx, say)
                    start, waits = next_steps(fresh, pending.steps, list(running), jobs)
                except GitflowError as exc:  # the plan, edited meanwhile, no longer parses
                    if isinstance(exc, PlanError):  # or is gone: which commit took it, where
                        exc = where_it_went(ctx.root, ctx.target, pending.path, exc)
                    print(f"error: {exc}; no further step starts", file=sys.stderr)
                    codes.append(int(exc.exit_code))
                    stopped = "after the error above"
                    continue
                for wait in (w for w in waits if w.key not in said):
                    said.add(wait.key)
                    say(f"step {wait.step} waits: {wait.why}")
                for number in start:
                    pending.start(number)
                    running[number] = _start(fresh, number, ended)
            if not running:
                break
            try:
                end = ended.get(timeout=_POLL)
            except queue.Empty:
                _drop_silent(running, ended, codes)
                continue
            decide = True
            thread = running.pop(end.step, None)
            if thread is not None:
                thread.join()
            code = _code_of(end, report, say)
            codes.append(code)
            if end.error is not None and not isinstance(end.error, GitflowError):
                bug = bug or end.error
            if code != ExitCode.OK:
                stopped = stopped or "a step ended without landing"
        except KeyboardInterrupt as exc:
            interrupted = True
            ctx.cancel.set_for(exc)  # every supervisor kills its agent's process tree
    if pending.steps and stopped is None and not interrupted:  # waiting for a step not in the run
        stopped = f"what they depend on is not {DONE} on {ctx.target}"  # (one the run ended is not)
        codes.append(int(ExitCode.USAGE))
    if stopped is not None and pending.steps:
        say(f"not started ({stopped}): {', '.join(map(str, pending.steps))}")
    if interrupted:
        raise KeyboardInterrupt
    if bug is not None:
        raise bug
    return worst_exit(codes)


def _drop_silent(
    running: dict[int, threading.Thread], ended: queue.Queue[_Ended], codes: list[int]
) -> None:
    """Forget a step whose thread ended but whose end was never taken (a Ctrl-C between
    taking it and noting it): its record is written; it counts as interrupted. A thread puts
    its end before it ends, so with the queue empty a dead thread's end is gone."""
    dead = [step for step, thread in running.items() if not thread.is_alive()]
    if dead and ended.empty():
        for step in dead:
            del running[step]
            codes.append(int(ExitCode.INTERRUPTED))


def _start(ctx: Context, step: int, ended: queue.Queue[_Ended]) -> threading.Thread:
    """``run_step`` of ``step`` in a thread, on a Context of its own (fresh notices and
    secrets; the hub, cancel flag and landing lock shared)."""
    budget = ctx.budget.fork() if ctx.budget is not None else None  # its own step scope
    own = replace(ctx, notices=[], secrets=set(), protected=set(), chain_run=None, budget=budget)

    def work() -> None:
        try:
            ended.put(_Ended(step, run_step(own, step), None))
        except BaseException as exc:  # handed to the main thread, which decides
            ended.put(_Ended(step, None, exc))

    thread = threading.Thread(target=work, name=f"step-{step}")
    thread.start()
    return thread


def _code_of(end: _Ended, report: Callable[[ChainResult], None], say: Callable[[str], None]) -> int:
    """Report an ended step; its exit code."""
    if end.result is not None:
        report(end.result)
        return end.result.exit_code
    error = end.error
    if isinstance(error, KeyboardInterrupt):
        return int(ExitCode.INTERRUPTED)
    if isinstance(error, GitflowError):
        print(f"step {end.step}: error: {error}", file=sys.stderr)
        return int(error.exit_code)
    say(f"step {end.step}: internal error: {type(error).__name__}: {error}")
    return int(ExitCode.INTERNAL)
