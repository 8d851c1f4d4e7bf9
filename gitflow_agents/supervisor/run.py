"""``supervise``: one agent run, started, waited on, and ended through one ``finish``.

The behaviour (what counts as activity, completion and a stuck agent) is described in the
package's docstring, ``gitflow_agents/supervisor/__init__.py``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from secrets import token_hex
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from gitflow_agents.agents.installed import find_program, missing_interpreter
from gitflow_agents.base import crash
from gitflow_agents.base.errors import interrupted_by
from gitflow_agents.base.fsutil import make_dirs, refuse_symlinks
from gitflow_agents.base.redact import redact_text
from gitflow_agents.runs import AGENT_DIR_ENV, RUN_DIR_ENV, RUN_ID_ENV, read_json, tree
from gitflow_agents.runs.liveness import start_id, start_time
from gitflow_agents.supervisor.outcome import (
    Outcome,
    ParsedOutput,
    ReportFiles,
    Stop,
    SupervisorInterrupted,
    Verdict,
    completion_event,
    interrupted,
    judge_ending,
    read_reply,
    refuse_irregular_report,
    stopped,
    update_status,
)
from gitflow_agents.supervisor.output import Activity, Output, exit_notifier
from gitflow_agents.supervisor.stdin import AgentSession, stdin_of
from gitflow_agents.supervisor.watch import Flag, Watcher, open_watcher

if TYPE_CHECKING:
    from gitflow_agents.agents.base import LaunchSpec
    from gitflow_agents.runs.events import EventHub

TICK = 0.1  # longest sleep of the main loop: bounds cancel latency when nothing else wakes it


@dataclass(frozen=True)
class Limits:
    """How long the agent may take, idle or in all, and how it is let go."""

    stuck_timeout: float  # idle this long: suspected stuck (then ``stuck_grace``)
    timeout: float | None  # in all; None: no hard timeout
    kill_grace: float = tree.KILL_GRACE  # SIGTERM to SIGKILL
    exit_grace: float = 10.0  # after the rename, for the CLI to exit on its own
    stuck_grace: float = 0.0  # after stuck_timeout idle: wait this long, re-check, then stuck
    cpu_busy_fraction: float = 0.1  # CPU share of the tree that counts as activity


class BudgetWatch(Protocol):
    """A budget's watch over the agent's streamed usage (``runs/budget.Watch``)."""

    def feed(self, chunk: bytes) -> None: ...

    def exceeded(self, *, completed: bool = False) -> str | None:
        """The budget message once a limit is reached (``completed``: the agent renamed its
        report, so only a limit it went over counts), else None."""
        ...

    def fill(self, parsed: ParsedOutput, *, at_limit: bool = False) -> ParsedOutput:
        """``parsed`` with the streamed usage where it has none (``at_limit``: the budget
        stopped the agent at it, else a lower bound)."""
        ...

    def spent(self) -> Mapping[str, Any]:
        """What the agent has spent so far, as its record's usage keys (``status``)."""
        ...


class Launch(NamedTuple):
    """What the supervisor starts and how it reads it: the adapter's LaunchSpec, its output
    parser (None: none), the work trees whose file events count as activity, and the run
    artefacts inside them that do not; ``budget``: the watch that stops it at a budget's
    limit (None: no budget, or usage its CLI does not stream)."""

    spec: LaunchSpec
    parse_output: Callable[[str, str], ParsedOutput] | None = None
    watch: tuple[Path, ...] = ()
    ignore: tuple[Path, ...] = ()
    budget: BudgetWatch | None = None
    adapter: str = ""  # its adapter's name, for what the run says of it (the control channel)
    # the cost of its parsed output and whether the price table estimated it (its CLI stated
    # none), for the event that ends the run (None: the CLI's own cost only)
    price: Callable[[ParsedOutput], tuple[float | None, bool]] | None = None
    # what its CLI's figures count again of the session it continues (``Cli.counted_before``:
    # a ``send`` turn, an attempt after a rate limit): taken off in the event that ends it, as
    # its record takes it off
    counted_before: ParsedOutput | None = None
    # an attempt after a rate limit's wait: the run's usage keys as its record will have them
    # were this attempt its last, from this attempt's own output (its earlier attempts' added)
    run_usage: Callable[[ParsedOutput | None], Mapping[str, Any]] | None = None
    # a CLI that says its usage only when it ends (no watch reads it as it runs): the budget
    # message when its parsed output puts it over a limit, so it ends `budget` as its event
    # says (None: no such budget)
    judge: Callable[[ParsedOutput], str | None] | None = None


def supervise(
    launch: Launch,
    files: ReportFiles,
    limits: Limits,
    *,
    hub: EventHub,
    run_dir: Path,
    cancel: threading.Event | None = None,
    secrets: Iterable[str] = (),
) -> Outcome:
    """Run ``launch`` to an Outcome; never hangs past the timeout (+ kill grace), never leaks a
    process. The agent reports in ``files`` (in its folder); the run is ``run_dir``'s (its name
    is the run id the events carry); ``cancel`` set: its tree is killed, the run ends canceled.

    ``completes_by_exit`` specs (CLIs that cannot rename a file): a rename still decides when it
    happens; otherwise exit 0 is success unless ``parse_output`` reports ``is_error``.
    ``parse_output`` (the adapter's) also runs for rename-completed agents, for tokens and cost.
    After the rename the agent gets ``limits.exit_grace`` seconds to exit on its own before it
    is killed. ``limits.stuck_grace`` (``defaults.stuck_retry_grace_secs``): an agent idle for
    ``stuck_timeout`` is only suspected stuck (``status.json``: ``stuck_suspected_at``); activity
    within the grace clears the suspicion, none makes it stuck (the caller may retry it:
    docs/chains.md). Work on ``status.json`` in ``run_dir``: pid, pgid, state and last activity
    are merged in. ``secrets``: exact values masked (besides the pattern rules) in everything
    the run writes or emits from the agent's output: ``worker.log``, ``agent:output`` and the
    reason.
    """
    if limits.stuck_timeout <= 0:
        raise ValueError("stuck_timeout must be positive")
    stale = [p for p in (files.success, files.failure) if p.exists()]
    if stale:
        raise ValueError(f"{stale[0]} exists before the run started; move it away first")
    # the agent writes its report where we tell it: a symlink planted there (or a folder link
    # out of the repository) would make it write elsewhere (docs/security.md, "Writes")
    refuse_symlinks(*files)
    make_dirs(files.folder)
    make_dirs(run_dir)
    watcher = open_watcher(
        files.folder,
        run_dir,
        launch.watch,
        launch.ignore,
        tree_every=min(max(limits.stuck_timeout / 4, 0.05), 1.0),
    )
    if limits.stuck_grace < 0:
        limits = replace(limits, stuck_grace=0.0)
    run = _Supervision(launch, files, run_dir, hub, watcher, limits, frozenset(secrets))
    if cancel is not None:
        run.cancel = cancel
    try:
        try:
            return run.finish(run.start() or run.wait())
        except KeyboardInterrupt as exc:
            raise SupervisorInterrupted(run.finish(interrupted(exc)), interrupted_by(exc)) from None
    finally:
        run.close()


class _Supervision:
    """One agent run: ``start``, ``wait``, then ``finish``, the one way every run ends."""

    def __init__(
        self,
        launch: Launch,
        files: ReportFiles,
        run_dir: Path,
        hub: EventHub,
        watcher: Watcher,
        limits: Limits,
        secrets: frozenset[str],
    ) -> None:
        self.spec, self.files, self.run_dir, self.hub = launch.spec, files, run_dir, hub
        self.run_id, self.watcher, self.limits = run_dir.name, watcher, limits
        self.parse_output, self.secrets = launch.parse_output, secrets
        self.budget, self.price, self.judge = launch.budget, launch.price, launch.judge
        self.counted_before, self.run_usage = launch.counted_before, launch.run_usage
        self.agent = files.report.parent.name
        self.cancel = threading.Event()
        self.activity = Activity()
        self.started_wall, self.started = time.time(), time.monotonic()
        self.output = Output(
            run_dir / "worker.log",
            self.activity,
            self._emit_output,
            secrets,
            on_stdout=self._on_stdout,
            on_error=self._reader_failed,
        )
        self.token = f"{self.run_id}:{token_hex(8)}"  # marks every process of this tree
        self.proc: subprocess.Popen[bytes] | None = None
        self.spawned_wall = self.started_wall
        self.known: dict[int, float] = {}  # pid -> create_time of descendants seen
        self.wake_r, self.wake_w = -1, -1  # the exit notifier's fds, once the agent runs
        self.cpu: tree.CpuSampler | None = None
        self.sample_every = min(max(limits.stuck_timeout / 4, 0.05), 30.0)
        self.cpu_at = self.status_at = 0.0
        self.suspected = False  # idle for stuck_timeout; stuck once the grace passes idle too
        # what `send` and `cancel` reach through the hub (supervisor/stdin.py)
        self.session = AgentSession(launch.adapter, self.emit, secrets)

    def _on_stdout(self, chunk: bytes) -> None:
        """Each stdout chunk, in the output reader's thread: to the budget's watch and the
        live input. A watch that raises is let go (``_reader_failed``); the live input still
        sees the chunk, so a live CLI's stdin is still closed when its turn ends."""
        budget = self.budget
        if budget is not None:
            try:
                budget.feed(chunk)
            except Exception as exc:  # a bug in the meter: the output is drained all the same
                self._reader_failed("its budget watch", exc)
        self.session.feed(chunk)

    def _reader_failed(self, what: str, exc: Exception) -> None:
        """Something in the output reader raised (``what``: the budget's watch, what reads the
        output along, the copying itself): the reader goes on draining the agent's pipe (an
        agent whose pipe fills blocks, and the run would hang until the stuck timeout), and
        this says so once, on stderr, with the traceback in the crash log. A watch that missed
        output reads short from then on, so unless only the copying failed the budget watch is
        let go for the rest of the run: the budget is not checked while it runs, only before
        the next agent starts (from what the run's record says it spent)."""
        lost = what != "copying its output" and self.budget is not None
        if lost:
            self.budget = None
        where = crash.log(exc, "gitflow-agents")
        hint = f"the traceback is in {where}" if where is not None else "no crash log written"
        said = [
            f"gitflow-agents: warning: agent {self.agent} (run {self.run_id}): {what} failed "
            f"(a bug in gitflow-agents: {crash.summary(exc)}; {hint})",
            "its output is still read to the end",
        ]
        if lost:
            said.append("its budget can no longer be checked while it runs")
        print("; ".join(said), file=sys.stderr)

    def emit(self, kind: str, data: Mapping[str, Any]) -> None:
        self.hub.emit(kind, {"agent": self.agent, **data}, run_id=self.run_id)

    def _emit_output(self, data: Mapping[str, Any]) -> None:
        self.emit("agent:output", data)

    # --- start ----------------------------------------------------------------------------

    def start(self) -> Stop | None:
        """Start the agent; a Stop (crashed) when it cannot be started."""
        spec = self.spec
        # a later attempt of the run (after a rate limit's wait): the run started with the first
        earlier = read_json(self.run_dir / "status.json") or {}
        started = earlier.get("started") if earlier.get("run_id") == self.run_id else None
        if not isinstance(started, (int, float)) or isinstance(started, bool):
            started = self.started_wall
        # The marker is on record before the first process exists: if this supervisor dies at
        # any moment after Popen (even before the pid is written), `cancel` still finds the
        # whole tree by it, including grandchildren that left the process group.
        update_status(
            self.run_dir,
            run_id=self.run_id,
            tree_token=self.token,
            agent=self.agent,
            agent_dir=str(self.files.report.parent),
            state="running",
            started=started,
            ended=None,  # an earlier attempt's end
            supervisor_pid=os.getpid(),
            supervisor_create_time=start_time(os.getpid()),
            supervisor_start_id=start_id(os.getpid()),
        )
        env = {
            **spec.env,
            RUN_ID_ENV: self.run_id,
            tree.TREE_ENV: self.token,
            RUN_DIR_ENV: str(self.run_dir),
            AGENT_DIR_ENV: str(self.files.report.parent),
        }
        # listening before the agent exists: the socket's path is ours before it could take it
        self.session.join(self.hub, self.run_id, self.run_dir, live=spec.live_input is not None)
        self.spawned_wall = time.time()
        command = spec.argv[0] if spec.argv else ""
        try:
            proc = subprocess.Popen(  # noqa: S603 - argv list from the adapter, never a shell
                list(spec.argv),
                cwd=spec.cwd,
                env=env,
                stdin=stdin_of(spec.live_input),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:  # nothing started: no agent:start (launch.prepare checked PATH)
            failed = Verdict("crashed", f"could not start {command or '?'}: {_why(exc, spec)}")
            return Stop("", failed, drain=0.0)
        self.proc = proc
        self._record_pid(proc)
        assert proc.stdout is not None and proc.stderr is not None
        # agent:start before the output reader exists, so no agent:output can precede it
        self.emit("agent:start", {"pid": proc.pid, "command": command, "cwd": str(spec.cwd)})
        self.session.start(spec.live_input, proc.stdin)
        self.output.start({"stdout": proc.stdout.fileno(), "stderr": proc.stderr.fileno()})
        wake_r, wake_w = exit_notifier(proc)
        self.wake_r, self.wake_w = wake_r, -1 if wake_w is None else wake_w
        cli_stdout = None
        if spec.cpu_activity == "tools":
            stdout_pipe = os.fstat(proc.stdout.fileno())
            cli_stdout = (stdout_pipe.st_dev, stdout_pipe.st_ino)
        self.cpu = tree.CpuSampler(proc.pid, self.known, cli_stdout)
        self.cpu_at = time.monotonic()
        return None

    def _record_pid(self, proc: subprocess.Popen[bytes]) -> None:
        """The agent's pid, group and start time go on record first thing after it starts:
        until then ``status`` and ``cancel`` know its tree only by the marker."""
        create_time = None
        root = tree.find_process(proc.pid)
        if root is not None:
            with contextlib.suppress(Exception):
                create_time = root.create_time()
        update_status(
            self.run_dir,
            pid=proc.pid,
            pgid=proc.pid,
            create_time=create_time,
            start_id=start_id(proc.pid),
            last_activity=self.activity.wall,
            last_activity_kind=self.activity.kind,
        )

    # --- wait -----------------------------------------------------------------------------

    def wait(self) -> Stop:
        """Wait until the agent renames its report, exits, or must be stopped."""
        while True:
            flags = self._sleep()
            self.output.flush_due()
            if self.files.renamed() is not None:
                signal_at = time.time()
                self.session.close_input()  # done: a live CLI exits as with stdin closed
                self._exit_grace()
                return Stop("report renamed; sweeping the process tree", signal_at=signal_at)
            stop = self._check(flags)
            if stop is not None:
                return stop

    def _sleep(self) -> set[Flag]:
        """Sleep until a watched file changes, the agent exits or the next deadline; the
        activity the watcher saw is counted."""
        limits, now = self.limits, time.monotonic()
        deadlines = [
            TICK,
            self.activity.at + limits.stuck_timeout + self._grace() - now,
            self.cpu_at + self.sample_every - now,
        ]
        if limits.timeout is not None:
            deadlines.append(self.started + limits.timeout - now)
        wake_r = self.wake_r
        flags = self.watcher.wait(max(0.0, min(deadlines)), wake_r)
        if self.wake_w >= 0:  # the waiter thread's pipe (a pidfd stays readable)
            with contextlib.suppress(OSError):
                os.read(wake_r, 64)
        for flag in flags & {"agent", "tree", "heartbeat"}:
            self.activity.touch({"agent": "report", "tree": "worktree"}.get(flag, flag))
        return flags

    def _check(self, flags: set[Flag]) -> Stop | None:
        """A Stop when the run must end now: canceled, exited, timed out or stuck."""
        proc, limits, now = self._running(), self.limits, time.monotonic()
        if "cancel" in flags or (self.run_dir / "cancel").exists():
            return stopped("canceled", "canceled by gitflow-agents cancel")
        if self.cancel.is_set():  # what set it may say why (chain/context.Cancel)
            return stopped("canceled", getattr(self.cancel, "reason", "canceled by request"))
        if self.session.aborted is not None:
            return stopped("canceled", self.session.aborted)
        budget = self.budget  # the reader lets it go when it fails (``_reader_failed``)
        over = budget.exceeded() if budget is not None else None
        if over is not None:  # before the exit: a CLI its own budget flag stopped ends "budget"
            return stopped("budget", over)
        if proc.poll() is not None:
            return Stop("agent exited; sweeping the process tree")
        if limits.timeout is not None and now - self.started >= limits.timeout:
            return stopped("timeout", f"hard timeout after {limits.timeout:g}s")
        if now - self.cpu_at >= self.sample_every:
            assert self.cpu is not None
            if self.cpu.sample() >= limits.cpu_busy_fraction * (now - self.cpu_at):
                self.activity.touch("cpu")
            self.cpu_at = now
        stop = self._stuck(now - self.activity.at)
        if stop is not None:
            return stop
        if now - self.status_at >= 1.0:
            self.status_at = now
            live = {"spent": budget.spent()} if budget is not None else {}
            update_status(
                self.run_dir,
                last_activity=self.activity.wall,
                last_activity_kind=self.activity.kind,
                **live,  # what a watched agent spent so far (``status`` shows it)
            )
        return None

    # --- stuck: idle for stuck_timeout, then the grace re-checked (stuck_retry_grace_secs) ---

    def _grace(self) -> float:
        """The grace the wait is in: the stuck deadline moves by it once the agent is suspected."""
        return self.limits.stuck_grace if self.suspected else 0.0

    def _stuck(self, idle: float) -> Stop | None:
        """Stuck once idle for ``stuck_timeout`` and then, re-checked, for the grace as well;
        activity within the grace clears the suspicion."""
        limits = self.limits
        if idle < limits.stuck_timeout:
            if self.suspected:
                self.suspected = False
                update_status(self.run_dir, stuck_suspected_at=None)
            return None
        if limits.stuck_grace > 0 and not self.suspected:
            self.suspected = True
            update_status(self.run_dir, stuck_suspected_at=time.time())
            return None
        if idle < limits.stuck_timeout + self._grace():
            return None
        grace = f", then {limits.stuck_grace:g}s grace" if limits.stuck_grace > 0 else ""
        why = (
            f"no activity for {idle:.1f}s (stuck_timeout {limits.stuck_timeout:g}s{grace});"
            f" last activity: {self.activity.kind}"
        )
        return stopped("stuck", why)

    def _exit_grace(self) -> None:
        """The report is renamed: give the CLI a moment to exit (its final JSON has the cost)."""
        proc, timeout = self._running(), self.limits.timeout
        grace_end = time.monotonic() + self.limits.exit_grace
        while proc.poll() is None and time.monotonic() < grace_end:
            if self.cancel.is_set():
                break
            if timeout is not None and time.monotonic() - self.started >= timeout:
                break
            self.watcher.wait(TICK, self.wake_r)

    def _running(self) -> subprocess.Popen[bytes]:
        if self.proc is None:
            raise RuntimeError("the agent was not started")
        return self.proc

    # --- finish ---------------------------------------------------------------------------

    def finish(self, stop: Stop) -> Outcome:
        """Every ending comes here: the tree is swept (so no ending can miss its leftovers),
        the output drained, the agent judged, the outcome emitted and put on record."""
        self.session.leave()
        leftover = self._sweep(stop.sweep)
        self.output.finish(stop.drain)
        budget = self.budget
        if stop.verdict is None and budget is not None:
            # it exited or renamed its report: its last usage lines may have come after the
            # loop's last check (the exit beating the reader), or after the rename (Claude Code
            # prints its result once the rename's tool call is done); judged on all of them: a
            # run over its budget ends `budget` however it ended (one that completed its
            # report at its limit exactly spent what it could: not over)
            completed = stop.signal_at is not None or any(
                path.exists() for path in (self.files.success, self.files.failure)
            )
            over = budget.exceeded(completed=completed)
            stop = stopped("budget", over) if over is not None else stop
        elif budget is not None and stop.verdict is not None and stop.verdict.status == "budget":
            stop = _restated(stop, stop.verdict, budget)
        code = self.proc.returncode if self.proc is not None else None
        verdict = refuse_irregular_report(
            self.files,
            stop.verdict
            or judge_ending(
                self.files,
                code,
                signal_at=stop.signal_at,
                completes_by_exit=self.spec.completes_by_exit,
            ),
        )
        stdout, stderr = self.output.text("stdout"), self.output.text("stderr")
        parse = self.parse_output if self.proc is not None else None
        by_exit = self.spec.completes_by_exit
        parsed, verdict = read_reply(parse, verdict, stdout, stderr, completes_by_exit=by_exit)
        if parsed is not None and budget is not None:  # stopped before its final totals
            parsed = budget.fill(parsed, at_limit=verdict.status == "budget")
        over = self.judge(parsed) if self.judge is not None and parsed is not None else None
        if over is not None and verdict.status in ("succeeded", "failed"):
            verdict = replace(verdict, status="budget", reason=over)  # only at its end
        note = f"; processes left behind: {list(leftover)}" if leftover else ""
        outcome = Outcome(
            status=verdict.status,
            # it may quote the agent (its CLI's error): events, status.json and the console
            reason=redact_text(verdict.reason + note, self.secrets),
            report_path=self.files.report_path(verdict.status),
            exit_code=code,
            started=self.started_wall,
            ended=time.time(),
            duration=time.monotonic() - self.started,
            last_activity=self.activity.wall,
            last_activity_kind=self.activity.kind,
            pid=self.proc.pid if self.proc is not None else None,
            signal_at=verdict.signal_at,
            stdout=stdout,
            stderr=stderr,
            output=parsed,
            leftover_pids=leftover,
            watcher=self.watcher.kind,
        )
        self._record(outcome)
        return outcome

    def _sweep(self, why: str) -> tuple[int, ...]:
        """Kill the agent's tree; the pids still alive after SIGKILL (none when not started)."""
        proc = self.proc
        if proc is None:
            return ()
        if proc.poll() is None:  # a sweep after a normal exit is not worth a status write
            update_status(self.run_dir, state="killing", reason=why)
        return tree.kill_tree(
            proc.pid,
            pgid=proc.pid,
            token=self.token,
            known=self.known,
            grace=self.limits.kill_grace,
            child=proc,
            since=self.spawned_wall,
        )

    def _record(self, outcome: Outcome) -> None:
        """agent:complete or agent:failed, and the final state in status.json."""
        data = completion_event(outcome, self.price, self.counted_before, self.run_usage)
        self.emit("agent:complete" if outcome.ok else "agent:failed", data)
        update_status(
            self.run_dir,
            state=outcome.status,
            reason=outcome.reason,
            ended=outcome.ended,
            last_activity=outcome.last_activity,
            last_activity_kind=outcome.last_activity_kind,
        )

    def close(self) -> None:
        """Release everything; a tree still running here (an unexpected error) is killed."""
        self.session.leave()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            self._sweep("supervisor error")
        self.output.stop.set()
        self.watcher.close()
        if proc is not None and self.output.done():
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        for fd in (self.wake_r, self.wake_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _restated(stop: Stop, verdict: Verdict, budget: BudgetWatch) -> Stop:
    """A run its watch stopped at a limit, its message said again with what it spent in the
    end: it streamed on until its tree was killed, and its record (the drained output's usage,
    ``BudgetWatch.fill``) counts that too, so the message states the same spend."""
    said = budget.exceeded()
    return stop if said is None else replace(stop, verdict=replace(verdict, reason=said))


def _why(exc: OSError, spec: LaunchSpec) -> str:
    """Why the agent's program did not start: a script that is there but whose ``#!``
    interpreter is not is named by that interpreter (the system says ENOENT of the script)."""
    if exc.errno == errno.ENOENT and spec.argv:
        found = find_program(spec.argv[0], env=spec.env, cwd=Path(spec.cwd))
        problem = missing_interpreter(found, env=spec.env, cwd=Path(spec.cwd)) if found else None
        if problem is not None:
            return problem
    return str(exc)
